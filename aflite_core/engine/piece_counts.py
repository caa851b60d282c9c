"""A scoring piece's counts from its models' scores in one compiled call: the same integers, fewer calls.

A block of rows scored by the models that held it out (:func:`aflite_core.engine.partitions.scoring_pieces`)
needs, from the scores' matrix product: each model's predicted class (the largest score difference to class 0,
ties to the lower class), then per row the correct predictions and the votes per class, and per model its
correct predictions. With numpy that is about 20 calls on small arrays per block (~190 blocks a round at the
mid shape), each handing the GIL over twice, which held two threads to ~1.5× one. :func:`count_block` does it
in one numba call without the GIL. The results are integer counts of the same comparisons numpy makes
(``np.maximum`` propagates NaN and so does this), so they are equal, not close
(``tests/test_piece_counts.py``). Without numba the caller keeps its numpy path.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from ._jit import compile_nogil, numba_module

__all__ = ["available", "count_block", "warm"]


def _count(scores, n_classes, n_models, codes, rows, correct, model_correct, votes):  # pragma: no cover - compiled
    pred = np.empty(n_models, dtype=np.int32)
    best = np.empty(n_models, dtype=np.float32)
    nan = np.float32(np.nan)
    for i in range(scores.shape[0]):
        # each loop over the models is branch-free enough to vectorise
        for j in range(n_models):
            s0 = scores[i, j]
            pred[j] = 1 if s0 > 0 else 0
            best[j] = s0 if (s0 > 0 or s0 != s0) else np.float32(0.0)  # np.maximum(s0, 0): NaN stays NaN
        for c in range(2, n_classes):
            base = (c - 1) * n_models
            for j in range(n_models):
                sc = scores[i, base + j]
                b = best[j]
                if sc > b:
                    pred[j] = c
                best[j] = nan if (b != b or sc != sc) else (sc if sc > b else b)  # np.maximum(best, sc)
        code = codes[rows[i]]
        right = 0
        for j in range(n_models):
            hit = 1 if pred[j] == code else 0
            model_correct[j] += hit
            right += hit
        correct[i] = right
        if votes.shape[0] > 0:
            if n_classes <= 8:  # a few classes: one vectorised count each
                for c in range(n_classes):
                    count = 0
                    for j in range(n_models):
                        count += 1 if pred[j] == c else 0
                    votes[i, c] = count
            else:
                for j in range(n_models):
                    votes[i, pred[j]] += 1


@functools.cache
def _kernel():
    return compile_nogil(_count) if numba_module() is not None else None


#: class codes are int8 in the numpy path (``models._predict_codes``), which this one reproduces
MAX_CLASSES = 127


def available(n_classes: int = 2) -> bool:
    """True when the compiled counts can be used: numba importable and at most :data:`MAX_CLASSES` classes."""
    return n_classes <= MAX_CLASSES and _kernel() is not None


def warm(n_classes: int, codes: NDArray) -> None:
    """Compile (or load from numba's cache) the counts for these classes' codes now, if numba is there.

    The engine calls it beside the first round's shard building, so the first block does not wait for it.
    """
    if available(n_classes) and n_classes >= 2:
        count_block(np.zeros((1, n_classes - 1), dtype=np.float32), n_classes, codes[:1], np.zeros(1, np.intp), True)


def count_block(
    scores: NDArray[np.float32],
    n_classes: int,
    codes: NDArray,
    rows: NDArray[np.intp],
    with_votes: bool,
) -> tuple[NDArray[np.int32], NDArray[np.int64], NDArray[np.int32] | None]:
    """Counts of one block from its models' scores, without the GIL.

    Parameters
    ----------
    scores : ndarray of float32, shape (len(rows), (n_classes - 1) * n_models)
        Score differences to class 0, class-major (column ``(c - 1) * n_models + j``: class c, model j), as
        :meth:`aflite_core.engine.models._LinearSession.block_scores` returns them.
    n_classes : int
        Classes (2 or more).
    codes : ndarray of int
        Every row's label code; ``codes[rows]`` are the block's.
    rows : ndarray of int
        The block's rows.
    with_votes : bool
        Also count, per row, the predictions that went to each class.

    Returns
    -------
    correct : ndarray of int32, shape (len(rows),)
        Correct predictions per row.
    model_correct : ndarray of int64, shape (n_models,)
        Correct predictions per model.
    votes : ndarray of int32, shape (len(rows), n_classes), or None
        Predictions per row and class (with ``with_votes``).
    """
    run = _kernel()
    if run is None:
        raise RuntimeError("numba is not available")
    n_rows = len(rows)
    if n_classes < 2 or scores.ndim != 2 or scores.shape[0] != n_rows or scores.shape[1] % (n_classes - 1):
        raise ValueError(f"scores of shape {scores.shape} do not fit {n_rows} rows and {n_classes} classes")
    n_models = scores.shape[1] // (n_classes - 1)
    correct = np.empty(n_rows, dtype=np.int32)
    model_correct = np.zeros(n_models, dtype=np.int64)
    votes = np.zeros((n_rows if with_votes else 0, n_classes), dtype=np.int32)
    run(
        np.ascontiguousarray(scores, dtype=np.float32),
        int(n_classes),
        int(n_models),
        codes,
        np.asarray(rows, dtype=np.intp),
        correct,
        model_correct,
        votes,
    )
    return correct, model_correct, votes if with_votes else None
