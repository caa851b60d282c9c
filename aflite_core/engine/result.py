"""The record of an AFLite run: :class:`AFLiteResult`, with exact save/load (Parquet + JSON, never pickle)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._utils import json_default
from .run_constants import STOP_REASONS

__all__ = ["EVAL_CATEGORIES", "STOP_REASONS", "AFLiteResult", "RoundProgress", "StepProgress"]


def _rows(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")


#: evaluation-row history categories (Figure 1 of the evaluation-set paper)
EVAL_CATEGORIES = ("removed in round 1", "removed later", "selected")


@dataclass(frozen=True)
class RoundProgress:
    """What the progress callback receives after every round.

    Attributes
    ----------
    round : int
        Round just completed (1-based).
    size : int
        Rows left in S after the round.
    removed : int
        Rows removed in this round.
    total_removed : int
        Rows removed so far.
    target_size : int
        The target size n.
    n_rows : int
        Rows at the start (N).
    qualified : int
        Rows with predictability ≥ τ in this round.
    eval_size : int or None
        Evaluation rows left, when an evaluation set is filtered.
    seconds : float
        Wall time of the round.
    """

    round: int
    size: int
    removed: int
    total_removed: int
    target_size: int
    n_rows: int
    qualified: int
    eval_size: int | None
    seconds: float

    @property
    def fraction_done(self) -> float:
        """Share of the way from N down to the target size, in [0, 1]."""
        span = max(self.n_rows - self.target_size, 1)
        return min(1.0, self.total_removed / span)


@dataclass(frozen=True)
class StepProgress:
    """What the step callback receives inside a round, after every group of fits and every prediction piece.

    Attributes
    ----------
    round : int
        The round in progress (1-based).
    phase : {"fit", "predict"}
        Fitting the m partition models, or predicting the held-out rows with them.
    done, total : int
        Steps of this phase finished so far, and in all (groups of partitions, or prediction pieces).
    seconds : float
        Wall time since the round started.
    """

    round: int
    phase: str
    done: int
    total: int
    seconds: float

    @property
    def fraction_of_round(self) -> float:
        """Rough share of the round done: fitting counts as the first half, predicting as the second."""
        part = self.done / self.total if self.total else 1.0
        return 0.5 * part if self.phase == "fit" else 0.5 + 0.5 * part


@dataclass(eq=False)
class AFLiteResult:
    """Everything an AFLite run did, per row and per round; nothing needs re-running to draw it.

    Row arrays are aligned with the rows of ``X`` given to :func:`aflite_core.aflite`; round arrays have one
    row per completed round (round r is row r-1).

    Attributes
    ----------
    params : dict
        Resolved parameters (``target_size``, ``train_size`` … as row counts), the model family's spec and
        the integer ``seed`` actually used.
    classes : tuple
        Class names; label codes index into it.
    y : ndarray of int32, shape (N,)
        Label code of every row.
    kept : ndarray of bool, shape (N,)
        True for rows in the filtered set.
    removed_round : ndarray of int32, shape (N,)
        Round in which the row was removed, -1 if kept.
    scores : ndarray of float32, shape (rounds, N), or None
        Predictability p(i) of every row in every round; NaN where not scored or already removed.
        ``None`` for ``strategy="greedy"`` (one round per removed row), which keeps only the compact columns.
    n_predictions : ndarray of uint16 (int32 if m > 65535), shape (rounds, N), or None
        Out-of-sample predictions each row received per round (0 where not scored).
    first_score, last_score, removal_score : ndarray of float32, shape (N,)
        Score in round 1, in the last round the row was scored, and in the round it was removed (NaN if kept).
    history : pandas.DataFrame
        One row per round: ``round, size_before, n_scored, n_qualified, n_removed, size_after,
        min_removed_score, mean_predictability`` (the representation-bias estimate R(Φ,S,M) of eq. 5 as the
        mean p over scored rows), ``mean_model_accuracy`` (held-out accuracy of the m models),
        ``eval_size_before, eval_removed, seconds``.
    stop_reason : str
        A key of :data:`STOP_REASONS`.
    provenance : dict
        Hashes of X and y, package versions, seed, creation time.
    ids : ndarray or None
        Row ids given by the user.
    eval_y, eval_kept, eval_removed_round, eval_scores, eval_first_score, eval_last_score, eval_removal_score
        The same for evaluation rows (``None`` without an evaluation set).
    eval_ids : ndarray or None
        Evaluation row ids.
    null_counts : ndarray of float64, shape (rounds, n_classes, 101), or None
        The null (``aflite(..., null_permutations=K)``, :mod:`aflite_core.engine.null`): in each round, the mean
        over K label permutations of the current set's rows of each class (by the permuted label they were
        scored with) whose p reaches τ = 0.00, 0.01, …, 1.00 (:data:`aflite_core.engine.null.TAU_GRID`). None: no
        null was computed (``null_message`` says so), e.g. a run saved by an older version.
    eval_null_counts : ndarray of float64, shape (rounds, n_classes, 101), or None
        The same for the remaining evaluation rows (by their own label), with an evaluation set.
    votes : ndarray of int16 (int32 if m ≥ 32768), shape (rounds, N, n_classes), or None
        The m models' votes: in each round, for every row, how many of the models that held it out predicted
        each class (zero where not scored or already removed). Counted while the round ran, never derived from
        the scores: ``votes.sum(axis=2) == n_predictions`` and ``votes[r, i, y[i]] / n_predictions[r, i]`` is
        ``scores[r, i]``. About 2 bytes × rounds × N × classes (135 MB at 550,000 rows, 41 rounds, 3 classes).
        None: not recorded (``votes_message`` says why): ``aflite(record_votes=False)``, ``strategy="greedy"``,
        the Dask backend, or a run saved by an older version.
    """

    params: dict
    classes: tuple
    y: NDArray[np.int32]
    kept: NDArray[np.bool_]
    removed_round: NDArray[np.int32]
    scores: NDArray[np.float32] | None
    n_predictions: NDArray | None
    first_score: NDArray[np.float32]
    last_score: NDArray[np.float32]
    removal_score: NDArray[np.float32]
    history: pd.DataFrame
    stop_reason: str
    provenance: dict = field(default_factory=dict)
    ids: NDArray | None = None
    eval_y: NDArray[np.int32] | None = None
    eval_kept: NDArray[np.bool_] | None = None
    eval_removed_round: NDArray[np.int32] | None = None
    eval_scores: NDArray[np.float32] | None = None
    eval_first_score: NDArray[np.float32] | None = None
    eval_last_score: NDArray[np.float32] | None = None
    eval_removal_score: NDArray[np.float32] | None = None
    eval_ids: NDArray | None = None
    null_counts: NDArray[np.float64] | None = None
    eval_null_counts: NDArray[np.float64] | None = None
    votes: NDArray | None = None

    # -- summaries ----------------------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        """N, the number of input rows."""
        return len(self.kept)

    @property
    def n_rounds(self) -> int:
        """Completed rounds."""
        return len(self.history)

    @property
    def n_kept(self) -> int:
        """Rows in the filtered set."""
        return int(self.kept.sum())

    @property
    def n_removed(self) -> int:
        """Rows removed."""
        return self.n_rows - self.n_kept

    @property
    def stopped(self) -> bool:
        """True when the run was stopped through the callback (a partial result)."""
        return self.stop_reason == "stopped_by_callback"

    @property
    def labels(self) -> NDArray:
        """Class name of every row."""
        return _names(self.classes, self.y)

    @property
    def representation_bias(self) -> pd.Series:
        """Per-round estimate of R(Φ, S, M) (eq. 5): mean predictability over the scored rows."""
        return self.history.set_index("round")["mean_predictability"]

    @property
    def stop_message(self) -> str:
        """The stop reason in words."""
        last = self.history.iloc[-1] if len(self.history) else None
        return STOP_REASONS[self.stop_reason].format(
            target=f"{int(self.params['target_size']):,}",
            round=int(last["round"]) if last is not None else 0,
            qualified=_rows(int(last["n_qualified"]) if last is not None else 0),
            tau=self.params["tau"],
            k=f"{int(self.params['slice_size']):,}",
            size=f"{self.n_kept:,}",
        )

    @property
    def eval_category(self) -> NDArray | None:
        """For evaluation rows: 'removed in round 1', 'removed later' or 'selected' (the history H)."""
        if self.eval_removed_round is None:
            return None
        cat = np.full(len(self.eval_removed_round), EVAL_CATEGORIES[2], dtype=object)
        cat[self.eval_removed_round == 1] = EVAL_CATEGORIES[0]
        cat[self.eval_removed_round > 1] = EVAL_CATEGORIES[1]
        return cat

    def summary(self) -> dict[str, Any]:
        """Headline numbers (what the CLI prints)."""
        out = {
            "kept": self.n_kept,
            "removed": self.n_removed,
            "rounds": self.n_rounds,
            "seconds": round(float(self.history["seconds"].sum()), 3) if len(self.history) else 0.0,
            "stop_reason": self.stop_reason,
        }
        if self.eval_kept is not None:
            out["eval_kept"] = int(self.eval_kept.sum())
            out["eval_removed"] = int((~self.eval_kept).sum())
        out["null"] = self.null_message
        return out

    def null_at(self, tau: float | None = None, round: int = 1, *, evaluation: bool = False) -> float | None:
        """Mean number of rows whose null p reaches ``tau`` (default the run's τ) in ``round``; None without a null.

        ``tau`` is rounded to the 0.01 grid the null is recorded on; ``evaluation=True`` counts the remaining
        evaluation rows (``eval_null_counts``) instead of the training rows.
        """
        counts = self.eval_null_counts if evaluation else self.null_counts
        if counts is None or not 1 <= round <= len(counts):
            return None
        tau = float(self.params["tau"]) if tau is None else float(tau)
        return float(counts[round - 1, :, int(round_half(tau * 100))].sum())

    @property
    def null_message(self) -> str:
        """One line on the null: how many rows chance would put at p ≥ τ in round 1, or that none was computed."""
        if self.null_counts is None:
            return "null not computed (run with null_permutations=K, CLI --null-permutations K, to compute it)"
        K = int(self.params.get("null_permutations", 0))
        tau = float(self.params["tau"])
        if not len(self.null_counts):
            return f"null of {K} label permutations: no round completed"
        expected = self.null_at(tau, 1)
        observed = int(self.history["n_qualified"].iloc[0])
        share = f"{expected / observed:.2f}" if observed else "n/a"
        return (
            f"under shuffled labels ({K} permutations) ~{expected:,.1f} rows would reach p ≥ τ = {tau:g} in round 1; "
            f"observed {observed:,} (chance share {share})"
        )

    @property
    def votes_message(self) -> str:
        """One line on the recorded votes: what they are, or that (and why) the run did not record them."""
        if self.votes is not None:
            return (
                f"votes recorded: {self.votes.shape[0]:,} rounds × {self.votes.shape[1]:,} rows × "
                f"{self.votes.shape[2]} classes ({self.votes.nbytes / 2**20:,.1f} MiB)"
            )
        why = (
            "strategy 'greedy' keeps no per-round record"
            if self.params.get("strategy") == "greedy"
            else ("run with record_votes=True on the local or torch backend, or saved by a version before run format 5")
        )
        return f"votes not recorded ({why})"

    def __repr__(self) -> str:
        return (
            f"AFLiteResult(kept={self.n_kept}/{self.n_rows}, rounds={self.n_rounds}, "
            f"stop_reason={self.stop_reason!r}, strategy={self.params.get('strategy')!r})"
        )

    # -- tables -------------------------------------------------------------------------------------------
    def to_frame(self, *, round_scores: bool = False) -> pd.DataFrame:
        """One row per example: id, label (class name), kept, removed_round and scores.

        Parameters
        ----------
        round_scores : bool, default=False
            Add one column ``p_round_<r>`` per round (not available for ``strategy="greedy"``).

        Returns
        -------
        pandas.DataFrame
            Indexed by row position.
        """
        df = pd.DataFrame(
            {
                "label": self.labels,
                "kept": self.kept,
                "removed_round": self.removed_round,
                "first_score": self.first_score,
                "last_score": self.last_score,
                "removal_score": self.removal_score,
            }
        )
        if self.ids is not None:
            df.insert(0, "id", self.ids)
        df.index.name = "row"
        if round_scores and self.scores is not None:
            extra = pd.DataFrame(self.scores.T, columns=[f"p_round_{r + 1}" for r in range(self.scores.shape[0])])
            df = pd.concat([df, extra.set_index(df.index)], axis=1)
        return df

    def eval_frame(self) -> pd.DataFrame | None:
        """One row per evaluation example: id, label, category, removed_round and scores."""
        if self.eval_kept is None:
            return None
        df = pd.DataFrame(
            {
                "label": _names(self.classes, self.eval_y),
                "category": self.eval_category,
                "kept": self.eval_kept,
                "removed_round": self.eval_removed_round,
                "first_score": self.eval_first_score,
                "last_score": self.eval_last_score,
                "removal_score": self.eval_removal_score,
            }
        )
        if self.eval_ids is not None:
            df.insert(0, "id", self.eval_ids)
        df.index.name = "row"
        return df

    # -- comparison ---------------------------------------------------------------------------------------
    def equals(self, other: AFLiteResult, *, timings: bool = False, null: bool = False) -> bool:
        """True when both runs made the same decisions and recorded the same arrays and tables.

        Parameters
        ----------
        other : AFLiteResult
        timings : bool, default=False
            Also compare the ``seconds`` column, the creation time and the thread count (``params["n_threads"]``:
            how many threads ran it, like the backend, is where a run ran, not what it decided; the arrays
            compared above are what a thread count could change). The backend a run used never counts.
        null : bool, default=False
            Also compare the null (``null_counts``, ``eval_null_counts`` and ``params["null_permutations"]``).
            By default a run with a null equals the same run without one: the null changes no decision.

        The recorded ``votes`` are compared when both runs recorded them (a run without them, e.g. on the Dask
        backend, equals the same run with them: recording changes no decision).
        """
        arrays = [
            "y", "kept", "removed_round", "scores", "n_predictions", "first_score", "last_score", "removal_score",
            "ids", "eval_y", "eval_kept", "eval_removed_round", "eval_scores", "eval_first_score",
            "eval_last_score", "eval_removal_score", "eval_ids",
        ]  # fmt: skip
        for name in arrays:
            a, b = getattr(self, name), getattr(other, name)
            if (a is None) != (b is None):
                return False
            if a is not None and not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=a.dtype.kind == "f"):
                return False
            if a is not None and np.asarray(a).dtype != np.asarray(b).dtype:
                return False
        if self.votes is not None and other.votes is not None:  # compared where both runs recorded them
            if self.votes.dtype != other.votes.dtype or not np.array_equal(self.votes, other.votes):
                return False
        if null:
            arrays_null = ("null_counts", "eval_null_counts")
            for name in arrays_null:
                a, b = getattr(self, name), getattr(other, name)
                if (a is None) != (b is None) or (a is not None and not np.array_equal(a, b)):
                    return False
        if self.classes != other.classes or self.stop_reason != other.stop_reason:
            return False
        cols = [c for c in self.history.columns if timings or c != "seconds"]
        if list(self.history.columns) != list(other.history.columns):
            return False
        if not self.history[cols].equals(other.history[cols]):
            return False
        how = (set() if timings else {"n_threads"}) | (set() if null else {"null_permutations"})
        mine = {k: v for k, v in self.params.items() if k not in how}
        theirs = {k: v for k, v in other.params.items() if k not in how}
        if json.dumps(mine, sort_keys=True, default=json_default) != json.dumps(
            theirs, sort_keys=True, default=json_default
        ):
            return False
        skip = {"backend"} if timings else {"created", "backend"}  # where it ran does not change a result
        prov_a = {k: v for k, v in self.provenance.items() if k not in skip}
        prov_b = {k: v for k, v in other.provenance.items() if k not in skip}
        return json.dumps(prov_a, sort_keys=True, default=json_default) == json.dumps(
            prov_b, sort_keys=True, default=json_default
        )

    # -- persistence --------------------------------------------------------------------------------------
    def save(self, directory: str | Path, *, table: Any = None, table_id_column: str | None = None) -> Path:
        """Write the run to ``directory`` as Parquet tables plus ``result.json`` (no pickle), crash-consistently.

        Files: ``result.json`` (parameters, classes, stop reason, provenance, and the size and sha256 of every
        file), ``rows.parquet``, ``history.parquet``, ``scores.parquet`` (per-round scores and prediction
        counts, one column per round) and, with an evaluation set, ``eval_rows.parquet`` /
        ``eval_scores.parquet``. The run is written into a hidden sibling folder and swapped in, so a reader
        sees the previous run, no run for a moment, or this one — never a mix (see
        :mod:`aflite_core.engine.run_record`).

        Parameters
        ----------
        directory : str or Path
            Created if missing. An existing folder must be empty or hold a run (which is replaced).
        table : DataFrame or path, optional
            The table the run's rows came from (texts, metadata), one row per run row in the run's order
            (:func:`aflite_core.engine.run_table.align_table` makes it), or a Parquet file of it: recorded as
            ``table.parquet`` (format version 3) and read back by :func:`aflite_core.load_run_table`.
        table_id_column : str, optional
            The table's column holding the run's ids (None: the table was matched row for row).

        Returns
        -------
        Path
            The directory.

        Raises
        ------
        ValueError
            When ``directory`` holds files that are not part of a run (nothing is written then).
        """
        from .run_record import save_run

        return save_run(self, directory, table=table, table_id_column=table_id_column)

    @classmethod
    def load(
        cls, directory: str | Path, *, max_rows: int | None = None, expected_rows: int | None = None
    ) -> AFLiteResult:
        """Read a run written by :meth:`save` (or by the CLI), after checking it in full.

        Parameters
        ----------
        directory : str or Path
            The run directory.
        max_rows : int, optional
            Refuse runs on more rows; checked before any table is read.
        expected_rows : int, optional
            Refuse runs on another number of rows (e.g. the dataset the run is opened for).

        Raises
        ------
        ValueError
            With one sentence when the directory does not hold a usable run: a missing or changed file
            (every file's size and sha256 are recorded), wrong shapes or dtypes, removals that disagree with
            the history, unknown parameters … Nothing is half-loaded.
        """
        from .run_loading import load_run

        return load_run(directory, cls, max_rows=max_rows, expected_rows=expected_rows)


def round_half(x: float) -> int:
    """``x`` rounded to the nearest integer, halves up (so τ = 0.125 → grid index 13, as people round)."""
    return int(np.floor(x + 0.5 + 1e-9))


def _names(classes: tuple, codes: NDArray | None) -> NDArray:
    arr = np.empty(len(classes), dtype=object)
    arr[:] = list(classes)
    return arr[codes]
