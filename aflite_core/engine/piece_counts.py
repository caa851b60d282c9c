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
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._jit import compile_nogil, numba_module

__all__ = ["BlockTarget", "available", "count_block", "warm"]


def _count(scores, n_classes, n_models, codes, rows, at, correct, model_correct, votes, n_pred):  # pragma: no cover
    # row i's counts go to correct[at[i]], votes[at[i]] (and n_pred[at[i]] = n_models when n_pred is not empty)
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
        out = at[i]
        correct[out] = right
        if n_pred.shape[0] > 0:
            n_pred[out] = n_models
        if votes.shape[0] > 0:
            if n_classes <= 8:  # a few classes: one vectorised count each
                for c in range(n_classes):
                    count = 0
                    for j in range(n_models):
                        count += 1 if pred[j] == c else 0
                    votes[out, c] = count
            else:
                for c in range(n_classes):
                    votes[out, c] = 0
                for j in range(n_models):
                    votes[out, pred[j]] += 1


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
    into: BlockTarget | None = None,
) -> tuple[NDArray[np.int32] | None, NDArray[np.int64], NDArray[np.int32] | None]:
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
    into : BlockTarget, optional
        Write the rows' counts straight into a round's arrays instead (positions ``into.positions``; the
        round's correct counts, numbers of predictions and votes): the pieces of a round cover disjoint positions,
        so the pool's threads write them at once, and the thread driving the run no longer scatters them after the
        round (1.3 s of a 20 s run on 16 cores at the SNLI shape).

    Returns
    -------
    correct : ndarray of int32, shape (len(rows),), or None
        Correct predictions per row (None with ``into``).
    model_correct : ndarray of int64, shape (n_models,)
        Correct predictions per model.
    votes : ndarray of int32, shape (len(rows), n_classes), or None
        Predictions per row and class (with ``with_votes``; None with ``into``).
    """
    run = _kernel()
    if run is None:
        raise RuntimeError("numba is not available")
    n_rows = len(rows)
    if n_classes < 2 or scores.ndim != 2 or scores.shape[0] != n_rows or scores.shape[1] % (n_classes - 1):
        raise ValueError(f"scores of shape {scores.shape} do not fit {n_rows} rows and {n_classes} classes")
    n_models = scores.shape[1] // (n_classes - 1)
    model_correct = np.zeros(n_models, dtype=np.int64)
    if into is None:
        at = np.arange(n_rows, dtype=np.intp)
        correct = np.empty(n_rows, dtype=np.int32)
        votes = np.zeros((n_rows if with_votes else 0, n_classes), dtype=np.int32)
        n_pred = np.zeros(0, dtype=np.int32)
    else:
        at, correct, n_pred = into.positions, into.correct, into.n_pred
        votes = into.votes if with_votes else np.zeros((0, n_classes), dtype=np.int32)
        into.check(n_rows, n_classes, with_votes)
    run(
        np.ascontiguousarray(scores, dtype=np.float32),
        int(n_classes),
        int(n_models),
        codes,
        np.asarray(rows, dtype=np.intp),
        at,
        correct,
        model_correct,
        votes,
        n_pred,
    )
    if into is not None:
        return None, model_correct, None
    return correct, model_correct, votes if with_votes else None


@dataclass(frozen=True)
class BlockTarget:
    """Where :func:`count_block` writes a block's counts: its positions in a round's arrays, and those arrays.

    ``correct`` and ``n_pred`` (n_rows,) int32, ``votes`` (n_rows, n_classes) int32 or None, all C-contiguous;
    ``positions`` (the block's rows' positions) intp, each below n_rows.
    """

    positions: NDArray[np.intp]
    correct: NDArray[np.int32]
    n_pred: NDArray[np.int32]
    votes: NDArray[np.int32] | None

    def check(self, n_rows: int, n_classes: int, with_votes: bool) -> None:
        """Raise ValueError unless the arrays can take a block of ``n_rows`` rows (no write out of bounds)."""
        pos = self.positions
        n = len(self.correct)
        ok = (
            pos.dtype == np.intp
            and pos.shape == (n_rows,)
            and self.correct.dtype == self.n_pred.dtype == np.int32
            and self.n_pred.shape == (n,)
            and (n_rows == 0 or (pos.min() >= 0 and pos.max() < n))
        )
        if with_votes:
            v = self.votes
            ok = ok and v is not None and v.dtype == np.int32 and v.shape == (n, n_classes) and v.flags.c_contiguous
        if not ok:
            raise ValueError("the block's positions or the round's arrays do not fit")
