"""The text setup's inputs: its representations (TF-IDF, sentence embeddings with progress) and its split.

:func:`~aflite_core.evalsets.text_adversary_setup` (in :mod:`.setups`) builds its adversaries with these.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .checks import _check_names

__all__ = ["SetupStopped"]


class SetupStopped(Exception):
    """:func:`text_adversary_setup` was asked to stop by its ``progress`` callback (no setup is returned)."""


#: rows embedded between two progress reports (about a second of MiniLM pairs on a busy core)
_EMBED_PIECE_ROWS = 96


def _sentence_views(
    frame: Any,
    views: Mapping[str, Sequence[str]],
    n_threads: int | None,
    progress: Callable[[Any], bool | None] | None,
) -> dict[str, NDArray[np.float32]]:
    """Sentence embeddings of each view (columns joined by " [SEP] ") with the shared model, reporting progress.

    ``progress`` receives :class:`aflite_core.data.embeddings.EmbeddingProgress` es; ``False`` raises
    :class:`SetupStopped` (between chunks of texts, or before the model is loaded).
    """
    from ..data.embeddings import (
        EmbeddingProgress,
        embedding_features,
        estimate_embedding_seconds,
        shared_sentence_model,
    )

    t0 = time.perf_counter()
    n = len(frame)
    total, done = n * len(views), [0]
    estimate = [0.0]

    def tell(stage: str, view: str, eta: float | None) -> None:
        if progress is not None:
            info = EmbeddingProgress(stage, view, done[0], total, time.perf_counter() - t0, eta)
            if progress(info) is False:
                raise SetupStopped("Stopped.")

    def loading() -> None:
        tell("load_model", "", None)

    model = shared_sentence_model(on_load=loading)
    out: dict[str, NDArray[np.float32]] = {}
    t_embed = time.perf_counter()
    for name, cols in views.items():
        if not estimate[0]:
            texts = frame[list(cols)].astype(str).agg(" [SEP] ".join, axis=1).tolist() if n else []
            estimate[0] = estimate_embedding_seconds(texts, model_loaded=True) * len(views)
        tell("embed", name, estimate[0] if not done[0] else None)
        parts = []
        for start in range(0, n, _EMBED_PIECE_ROWS):  # pieces of about a second each: a stop waits for one
            piece = frame.iloc[start : start + _EMBED_PIECE_ROWS]
            parts.append(embedding_features(piece, list(cols), model=model, n_threads=n_threads))
            done[0] += len(piece)
            rate = done[0] / max(time.perf_counter() - t_embed, 1e-9)
            tell("embed", name, (total - done[0]) / rate)
        dim = parts[0].shape[1] if parts else 384
        out[name] = np.concatenate(parts, axis=0) if parts else np.empty((0, dim), dtype=np.float32)
    tell("done", "", 0.0)
    return out


def _text_representations(
    dataset: Any,
    frame: Any,
    text_cols: list,
    pair: Any,
    *,
    func: str,
    representations: Any,
    tfidf: bool,
    embeddings: Any,
    n_components: int,
    tfidf_seed: int,
    n_threads: int | None,
    progress: Any,
) -> tuple[dict[str, NDArray[np.float32]], dict[str, str], list[str]]:
    """The text setup's representations: the dataset's own kept, TF-IDF views and sentence-embedding views added.

    Returns the matrices and their descriptions by name, and notes (an embedding step skipped).
    """
    keep = (
        tuple(dataset.representations)
        if representations is None
        else _check_names(representations, "representations", func, tuple(dataset.representations))
    )
    reps: dict[str, NDArray[np.float32]] = {k: dataset.representations[k] for k in keep}
    descs = {k: dataset.representation_descriptions.get(k, k) for k in keep}
    if tfidf:
        from ..data.features import tfidf_features

        if "tfidf" not in reps:
            reps["tfidf"] = tfidf_features(
                frame, columns=text_cols, n_components=n_components, random_state=tfidf_seed, n_threads=n_threads
            )
            descs["tfidf"] = f"TF-IDF + SVD of {' + '.join(text_cols)}"
        if pair and "tfidf_hypothesis" not in reps:
            reps["tfidf_hypothesis"] = tfidf_features(
                frame, columns=[pair[1]], n_components=n_components, random_state=tfidf_seed + 1, n_threads=n_threads
            )
            descs["tfidf_hypothesis"] = f"partial input: TF-IDF + SVD of {pair[1]} alone"
    notes = []
    if embeddings is not False:
        from ..data.embeddings import EMBEDDINGS_INSTALL_HINT

        views = {}
        if "embedding" not in reps:
            views["embedding"] = (text_cols, f"all-MiniLM-L6-v2 of {' [SEP] '.join(text_cols)}")
        if pair and "embedding_hypothesis" not in reps:
            views["embedding_hypothesis"] = ([pair[1]], f"partial input: all-MiniLM-L6-v2 of {pair[1]} alone")
        try:
            built = _sentence_views(frame, {k: cols for k, (cols, _) in views.items()}, n_threads, progress)
        except ImportError:
            if embeddings:
                raise ImportError(EMBEDDINGS_INSTALL_HINT) from None
            built = None
            notes.append("sentence embeddings skipped: optional packages not installed")
        for k, E in (built or {}).items():
            reps[k], descs[k] = E, views[k][1]
    return reps, descs, notes


def _text_split(
    dataset: Any, frame: Any, pair: Any, group_column: Any, eval_fraction: Any, split_seed: int, func: str
) -> tuple[Any, NDArray[np.intp], NDArray[np.intp]]:
    """The text setup's training / evaluation split: by group (e.g. premise) when there is one, else stratified.

    Returns the group column used (or None) and the sorted training and evaluation row positions.
    """
    group = (pair[0] if pair else None) if group_column == "auto" else group_column
    if group is not None and group not in frame.columns:
        raise ValueError(
            f"The 'group_column' parameter of {func} must be a column of the dataset {list(frame.columns)}. Got "
            f"{group!r} instead."
        )
    idx = np.arange(dataset.n_rows)
    if group is not None:
        from sklearn.model_selection import GroupShuffleSplit

        gss = GroupShuffleSplit(n_splits=1, test_size=float(eval_fraction), random_state=split_seed)
        tr, ev = next(gss.split(idx, groups=frame[group].astype(str).to_numpy()))
    else:
        from sklearn.model_selection import train_test_split

        tr, ev = train_test_split(idx, test_size=float(eval_fraction), stratify=dataset.y, random_state=split_seed)
    tr, ev = np.sort(tr), np.sort(ev)
    return group, tr, ev
