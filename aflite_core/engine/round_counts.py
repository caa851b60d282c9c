"""A round's counts: :class:`RoundScores`, and the scoring pieces' counts added up into them.

Split from :mod:`aflite_core.engine.partitions` (which cuts a round into pieces and scores them) when the pieces
began to write their rows' counts into the round's arrays themselves (:meth:`_Merged.target`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import piece_counts

__all__ = ["RoundScores", "merge_pieces"]


@dataclass
class RoundScores:
    """What one round of m partition models found, as counts (additive across partition groups)."""

    correct: NDArray[np.int32]
    """Per position of S: correct out-of-sample predictions."""
    n_predictions: NDArray[np.int32]
    """Per position of S: number of models that held the row out (predicted it)."""
    model_correct: NDArray[np.int64]
    """Per partition model: correct predictions on its held-out rows."""
    model_total: NDArray[np.int64]
    """Per partition model: number of its held-out rows."""
    eval_correct: NDArray[np.int32] | None = None
    """Per remaining evaluation row: correct predictions among all m models."""
    votes: NDArray[np.int32] | None = None
    """Per position of S and class, shape (n_S, C): held-out predictions that went to that class (their sum over
    classes is ``n_predictions``, their gold-class column ``correct``); None when the round did not count them."""

    @property
    def predictability(self) -> NDArray[np.float32]:
        """p(i) = correct / predictions (Algorithm 1 line 11); NaN where a row got no prediction."""
        with np.errstate(invalid="ignore", divide="ignore"):
            p = self.correct / self.n_predictions.astype(np.float64)
        return p.astype(np.float32)

    @property
    def model_accuracy(self) -> NDArray[np.float64]:
        """Held-out accuracy of each partition model (NaN if it held out nothing)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.model_correct / self.model_total


def merge_pieces(results: list[dict], n_rows: int, n_partitions: int, n_eval: int | None) -> RoundScores:
    """Add up the pieces' counts into one :class:`RoundScores`."""
    merged = _Merged(n_rows, n_partitions, n_eval)
    for res in results:
        merged.add(res)
    return merged.scores()


class _Merged:
    """The pieces' counts added up (integer sums: any order gives the same counts).

    Block pieces cover disjoint positions, so their counts are kept as they come and written with one scatter
    per field at the end (a fancy-indexed update per block held the GIL for ~3 ms a round while the pool
    scored); row chunks and evaluation pieces are added as they come.
    """

    def __init__(self, n_rows: int, n_partitions: int, n_eval: int | None, n_classes: int = 0) -> None:
        self.n_partitions = n_partitions
        self.n_classes = n_classes  # for the votes of pieces that write their counts themselves
        self._lock = threading.Lock()
        self.scattered: list[dict] = []
        self.correct = np.zeros(n_rows, dtype=np.int32)
        self.n_pred = np.zeros(n_rows, dtype=np.int32)
        self.model_correct = np.zeros(n_partitions, dtype=np.int64)
        self.model_total = np.zeros(n_partitions, dtype=np.int64)
        self.eval_correct = None if n_eval is None else np.zeros(n_eval, dtype=np.int32)
        self.votes: NDArray[np.int32] | None = None
        self.with_votes: bool | None = None  # decided by the first row piece: all row pieces count votes or none
        self.blocks: list[dict] = []

    def target(self, positions: NDArray[np.intp], with_votes: bool) -> piece_counts.BlockTarget | None:
        """Where a block piece may write its rows' counts itself (None: it returns them, as Dask's pieces do).

        Only while every row piece so far counted votes as this one does (the votes are allocated here once).
        """
        with self._lock:
            if self.with_votes is None:
                self.with_votes = with_votes
                if with_votes:
                    self.votes = np.zeros((len(self.correct), self.n_classes), np.int32)
            if self.with_votes != with_votes or (with_votes and self.votes is None):
                return None
        pos = np.ascontiguousarray(positions, dtype=np.intp)
        return piece_counts.BlockTarget(pos, self.correct, self.n_pred, self.votes if with_votes else None)

    def add(self, res: dict) -> None:
        if res.get("scattered"):  # its rows' counts are in place already (see target)
            self.scattered.append(res)
            return
        if res["kind"] != "eval":
            has = res.get("votes") is not None
            if self.with_votes is None:
                self.with_votes = has
                if has:
                    self.votes = np.zeros((len(self.correct), res["votes"].shape[1]), np.int32)
            elif self.with_votes and not has:
                self.with_votes, self.votes = False, None
        if res["kind"] == "eval":
            self.eval_correct[res["start"] : res["start"] + len(res["eval_correct"])] = res["eval_correct"]
        elif res["kind"] == "block":
            self.blocks.append(res)
        else:
            if self.with_votes:
                self.votes[res["positions"]] += res["votes"]
            self.correct[res["positions"]] += res["correct"]
            self.n_pred[res["positions"]] += res["n_pred"]
            self.model_correct += res["model_correct"]
            self.model_total += res["model_total"]

    def scores(self) -> RoundScores:
        if self.scattered:  # only the models' counts are left to add up
            m = self.n_partitions
            models = np.concatenate([b["models"] for b in self.scattered])
            per_model = np.array([len(b["models"]) for b in self.scattered])
            # float64 weights hold these integer counts exactly (far below 2**53)
            self.model_correct += np.bincount(
                models, weights=np.concatenate([b["model_correct"] for b in self.scattered]), minlength=m
            ).astype(np.int64)
            self.model_total += np.bincount(
                models, weights=np.repeat([b["model_total"] for b in self.scattered], per_model), minlength=m
            ).astype(np.int64)
            self.scattered = []
        if self.blocks:
            blocks = self.blocks
            pos = np.concatenate([b["positions"] for b in blocks])
            sizes = np.array([len(b["positions"]) for b in blocks])
            self.correct[pos] = np.concatenate([b["correct"] for b in blocks])
            self.n_pred[pos] = np.repeat([b["n_pred"] for b in blocks], sizes)
            if self.with_votes:
                self.votes[pos] = np.concatenate([b["votes"] for b in blocks])
            models = np.concatenate([b["models"] for b in blocks])
            per_model = np.array([len(b["models"]) for b in blocks])
            m = self.n_partitions
            # float64 weights hold these integer counts exactly (far below 2**53)
            self.model_correct += np.bincount(
                models, weights=np.concatenate([b["model_correct"] for b in blocks]), minlength=m
            ).astype(np.int64)
            self.model_total += np.bincount(
                models, weights=np.repeat([b["model_total"] for b in blocks], per_model), minlength=m
            ).astype(np.int64)
            self.blocks = []
        votes = self.votes if self.with_votes else None
        return RoundScores(self.correct, self.n_pred, self.model_correct, self.model_total, self.eval_correct, votes)
