"""The AFLite loop (Algorithm 1) as a resumable run over a pluggable backend.

:func:`aflite_core.aflite` validates its arguments and hands them to :class:`Run`. A run keeps everything a
round changes (the current set S, the remaining evaluation rows R, per-row and per-round records, the random
generator) so it can write a checkpoint after every round and continue from one with a bit-identical result.
The per-round work - fit the m partition models and count correct out-of-sample predictions - goes through a
backend (:mod:`aflite_core.engine.local_backend`: ``LocalBackend`` in this process, the default;
``aflite_core.engine.distributed.DaskBackend`` on a cluster). Both run the same partition unit with the same
grouping and chunking, so they give identical results for the same seed.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._utils import data_hashes, versions
from ._parallel import Deferred, engine_threads
from .checkpoint import read_checkpoint, write_checkpoint
from .local_backend import LocalBackend
from .partitions import RoundInterrupted
from .result import AFLiteResult, RoundProgress, StepProgress
from .row_selection import row_priorities, select_rows
from .run_constants import HISTORY_COLUMNS, TIE_BREAKS

__all__ = ["HISTORY_COLUMNS", "TIE_BREAKS", "Run", "row_priorities", "select_rows"]


@dataclass
class RunConfig:
    """Resolved parameters of a run (counts, not fractions)."""

    target_size: int
    train_size: int
    slice_size: int
    n_partitions: int
    tau: float
    strategy: str
    seed: int
    n_threads: int | None


@dataclass
class Run:
    """One AFLite run: its state, the loop, checkpoints, and the final :class:`AFLiteResult`."""

    X: NDArray[np.float32]
    codes: NDArray[np.int32]
    classes: tuple
    config: RunConfig
    family: Any
    backend: Any = None
    callback: Callable[[RoundProgress], bool | None] | None = None
    on_step: Callable[[StepProgress], bool | None] | None = None
    eval_X: NDArray[np.float32] | None = None
    eval_codes: NDArray[np.int32] | None = None
    ids: NDArray | None = None
    eval_ids: NDArray | None = None
    checkpoint_dir: Path | None = None
    extra_state: dict = field(default_factory=dict)
    null_permutations: int = 0
    #: ``null_round(run, rows, plan, eval_rows, round_no) -> (train, eval)``: the round's null (given by
    #: :func:`aflite_core.aflite` as :func:`aflite_core.engine.null.round_null` when ``null_permutations`` > 0)
    null_round: Callable | None = None
    #: group code per row (int32) or None: partitions' training parts are then made of whole groups
    groups: NDArray[np.int32] | None = None
    #: record, per round, row and class, the held-out predictions that went to each class (``AFLiteResult.votes``;
    #: only with a per-round score matrix, and only on backends that count them - not the Dask backend)
    record_votes: bool = True
    #: how rows of equal score are ordered (:data:`TIE_BREAKS`): ``"position"`` (a fresh draw per position in S
    #: each round, the default) or ``"row"`` (a fresh key per row and round, keyed by the row, :func:`row_priorities`)
    tie_break: str = "position"

    def __post_init__(self) -> None:
        N = self.X.shape[0]
        cfg = self.config
        if self.tie_break not in TIE_BREAKS:
            raise ValueError(
                f"The 'tie_break' parameter of aflite must be a str among {list(TIE_BREAKS)}. "
                f"Got {self.tie_break!r} instead."
            )
        self._record_tie_break()
        self.backend = self.backend or LocalBackend()
        self.keep_matrix = cfg.strategy != "greedy"
        self.count_dtype = np.uint16 if cfg.n_partitions < 2**16 else np.int32
        self.record_votes = bool(self.record_votes) and self.keep_matrix
        self.vote_dtype = np.int16 if cfg.n_partitions < 2**15 else np.int32
        self.vote_rows: list[NDArray] = []
        if self.record_votes:
            self.backend.record_votes = True
        self.has_eval = self.eval_X is not None
        n_eval = len(self.eval_X) if self.has_eval else 0
        self.n_eval = n_eval
        self.removed_round = np.full(N, -1, dtype=np.int32)
        self.first_score = np.full(N, np.nan, dtype=np.float32)
        self.last_score = np.full(N, np.nan, dtype=np.float32)
        self.removal_score = np.full(N, np.nan, dtype=np.float32)
        self.score_rows: list[NDArray] = []
        self.count_rows: list[NDArray] = []
        self.eval_removed_round = np.full(n_eval, -1, dtype=np.int32)
        self.eval_first = np.full(n_eval, np.nan, dtype=np.float32)
        self.eval_last = np.full(n_eval, np.nan, dtype=np.float32)
        self.eval_removal = np.full(n_eval, np.nan, dtype=np.float32)
        self.eval_score_rows: list[NDArray] = []
        # per round: rows of each class whose null p reaches each τ of the 0.01 grid, summed over the permutations
        self.null_rows: list[NDArray] = []
        self.eval_null_rows: list[NDArray] = []
        self.history: list[dict] = []
        self.stop_reason = "target_size_reached"
        self.finished = False
        self.round = 0
        self.rng = np.random.default_rng(cfg.seed)
        # gigabytes of features take seconds to hash: a thread of their own does it beside the first rounds
        self._hashing = Deferred(
            lambda: data_hashes(self.X, self.codes, self.classes, self.eval_X, self.eval_codes, self.groups)
        )

    @property
    def hashes(self) -> dict:
        """sha256 of the features, labels (evaluation rows, groups): the run's provenance and fingerprint."""
        return self._hashing.result()

    def _record_tie_break(self) -> None:
        """Record the tie-break with the run (params, checkpoints); a record without one was a "position" run."""
        if not isinstance(self.extra_state.get("params"), dict):
            self.extra_state["params"] = {}
        self.extra_state["params"]["tie_break"] = self.tie_break

    # -- the current sets ----------------------------------------------------------------------------------
    @property
    def S(self) -> NDArray[np.intp]:
        """Sorted indices of the rows still in the set."""
        return np.flatnonzero(self.removed_round < 0)

    @property
    def R(self) -> NDArray[np.intp]:
        """Sorted indices of the evaluation rows still remaining."""
        return np.flatnonzero(self.eval_removed_round < 0)

    # -- the loop ------------------------------------------------------------------------------------------
    def open(self) -> None:
        """Bind the backend (first use of the random generator: the family's per-run draws)."""
        cfg = self.config
        if self.null_permutations and (self.null_round is None or type(self.backend).__name__ == "DaskBackend"):
            raise ValueError(
                f"The 'null_permutations' parameter of aflite is {self.null_permutations}, but the Dask backend "
                "does not compute the null; run it with the local backend (backend=None) or with null_permutations=0."
            )
        grouped = {} if self.groups is None else {"groups": self.groups}
        self.backend.open(
            self.X,
            self.codes,
            len(self.classes),
            self.family,
            train_size=cfg.train_size,
            n_partitions=cfg.n_partitions,
            rng=self.rng,
            eval_X=self.eval_X,
            eval_codes=self.eval_codes,
            **grouped,
        )

    def execute(self) -> AFLiteResult:
        """Run rounds until Algorithm 1 stops (or the callback asks to), then build the result."""
        cfg = self.config
        started = time.perf_counter()
        with engine_threads(cfg.n_threads):
            if self.round == 0:
                self.open()
            S = self.S
            while not self.finished and len(S) > cfg.target_size:  # Algorithm 1, line 2
                S = self._round(S, started)
            self.finished = True
        self.backend.close()
        return self.result()

    def _round(self, S: NDArray[np.intp], started: float) -> NDArray[np.intp]:
        cfg = self.config
        N = self.X.shape[0]
        self.round += 1
        rnd = self.round
        t0 = time.perf_counter()
        R = self.R
        plan = self.backend.draw_plan(S, self.rng)
        if self.on_step is not None:
            user_step = self.on_step

            def on_step(phase: str, done: int, total: int) -> bool | None:
                return user_step(StepProgress(rnd, phase, done, total, time.perf_counter() - t0))

            self.backend.on_step = on_step
        try:
            rs = self.backend.score(S, plan, self.rng, R if self.has_eval else None, rnd)
            if self.null_permutations:  # its own random stream: the run's generator never sees it
                null, eval_null = self.null_round(self, S, plan, R if self.has_eval else None, rnd)
        except RoundInterrupted:  # stopped inside the round: keep the rounds completed so far, as they were
            self.round -= 1
            self.stop_reason = "stopped_by_callback"
            self.finished = True
            return S
        finally:
            if self.on_step is not None:
                self.backend.on_step = None
        if self.null_permutations:
            self.null_rows.append(null)
            if eval_null is not None:
                self.eval_null_rows.append(eval_null)
        p = rs.predictability
        scored = rs.n_predictions > 0
        qualified = scored & (p >= cfg.tau)
        n_qualified = int(qualified.sum())
        k_eff = min(cfg.slice_size, len(S) - cfg.target_size)  # never below the target (documented deviation)
        priority = row_priorities(cfg.seed, N, rnd)[S] if self.tie_break == "row" else None
        pos = select_rows(p, qualified, k_eff, cfg.strategy, self.rng, priority)
        gone = S[pos]
        if rnd == 1:
            self.first_score[S] = p
        self.last_score[S[scored]] = p[scored]
        self.removed_round[gone] = rnd
        self.removal_score[gone] = p[pos]
        if self.keep_matrix:
            row = np.full(N, np.nan, dtype=np.float32)
            row[S] = np.where(scored, p, np.nan)
            self.score_rows.append(row)
            cnt = np.zeros(N, dtype=self.count_dtype)
            cnt[S] = rs.n_predictions
            self.count_rows.append(cnt)
        if self.record_votes:
            self._record_votes(S, rs.votes)
        eval_gone = np.empty(0, dtype=np.intp)
        if self.has_eval:
            pe = (rs.eval_correct / cfg.n_partitions).astype(np.float32)
            if rnd == 1:
                self.eval_first[R] = pe
            self.eval_last[R] = pe
            hit = pe >= cfg.tau  # every evaluation row with p ≥ τ leaves, no k limit (appendix Algorithm 1)
            eval_gone = R[hit]
            self.eval_removed_round[eval_gone] = rnd
            self.eval_removal[eval_gone] = pe[hit]
            if self.keep_matrix:
                erow = np.full(self.n_eval, np.nan, dtype=np.float32)
                erow[R] = pe
                self.eval_score_rows.append(erow)
        keep_pos = np.ones(len(S), dtype=bool)
        keep_pos[pos] = False
        size_before = len(S)
        S = S[keep_pos]
        self.backend.remove(gone, rnd)
        acc = rs.model_accuracy
        self.history.append(
            {
                "round": rnd,
                "size_before": size_before,
                "n_scored": int(scored.sum()),
                "n_qualified": n_qualified,
                "n_removed": len(pos),
                "size_after": len(S),
                "min_removed_score": float(p[pos].min()) if len(pos) else float("nan"),
                "max_score": float(np.nanmax(p)) if scored.any() else float("nan"),
                "mean_predictability": float(p[scored].mean()) if scored.any() else float("nan"),
                "mean_model_accuracy": float(np.nanmean(acc)) if np.isfinite(acc).any() else float("nan"),
                "eval_size_before": len(R) if self.has_eval else -1,
                "eval_removed": len(eval_gone) if self.has_eval else -1,
                "seconds": time.perf_counter() - t0,
            }
        )
        # stopping rules, Algorithm 1 lines 2 and 14
        natural_stop = len(S) <= cfg.target_size or n_qualified < cfg.slice_size
        if len(S) <= cfg.target_size:
            self.stop_reason = "target_size_reached"
        elif n_qualified < cfg.slice_size:
            self.stop_reason = "fewer_than_k_qualified"
        self.finished = natural_stop
        if self.checkpoint_dir is not None:
            self.write_checkpoint()
        if self.callback is not None:
            progress = RoundProgress(
                round=rnd,
                size=len(S),
                removed=len(pos),
                total_removed=N - len(S),
                target_size=cfg.target_size,
                n_rows=N,
                qualified=n_qualified,
                eval_size=int((self.eval_removed_round < 0).sum()) if self.has_eval else None,
                seconds=time.perf_counter() - started,
            )
            if self.callback(progress) is False and not natural_stop:
                self.stop_reason = "stopped_by_callback"
                self.finished = True
                if self.checkpoint_dir is not None:
                    self.write_checkpoint()
        return S

    def _record_votes(self, S: NDArray[np.intp], votes: NDArray | None) -> None:
        """Keep this round's per-class vote counts of the rows of S (zero for rows no longer in the set)."""
        if votes is None:  # the backend did not count them (e.g. Dask): the run records no votes
            self.record_votes, self.vote_rows = False, []
            return
        row = np.zeros((self.X.shape[0], len(self.classes)), dtype=self.vote_dtype)
        row[S] = votes
        self.vote_rows.append(row)

    # -- the result ----------------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """The resolved parameters recorded in the result."""
        cfg = self.config
        out = {
            "target_size": cfg.target_size,
            "train_size": cfg.train_size,
            "slice_size": cfg.slice_size,
            "n_partitions": cfg.n_partitions,
            "tau": cfg.tau,
            "strategy": cfg.strategy,
            "model": self.family.spec(),
            "seed": cfg.seed,
            "n_threads": cfg.n_threads,
            "n_rows": int(self.X.shape[0]),
            "n_features": int(self.X.shape[1]),
            "n_classes": len(self.classes),
            "n_eval": self.n_eval if self.has_eval else None,
            "partition_mode": getattr(self.backend, "mode", "exact"),
            "rows_per_block": int(getattr(self.backend, "rows_per_block", 1)),
        }
        out.update(self.extra_state.get("params", {}))
        return out

    def snapshot(self) -> Run:
        """A copy of the run as it stands, stopped: its :meth:`result` is the one a stop here would give.

        Take it only between two rounds' bookkeeping - in the per-round ``callback`` or in ``on_step`` - from the
        run's own thread: the arrays a round changes in place and the per-round lists are copied, the rest is
        shared (never changed after it is set). The copy's :meth:`result` may then be built in another thread
        while the run goes on (the app shows it at once when Stop is pressed during a long step).
        """
        frozen = copy.copy(self)
        for name in (
            "removed_round",
            "first_score",
            "last_score",
            "removal_score",
            "eval_removed_round",
            "eval_first",
            "eval_last",
            "eval_removal",
        ):
            setattr(frozen, name, getattr(self, name).copy())
        for name in ("score_rows", "count_rows", "eval_score_rows", "null_rows", "eval_null_rows", "vote_rows"):
            setattr(frozen, name, list(getattr(self, name)))
        frozen.history = list(self.history)
        frozen.stop_reason, frozen.finished = "stopped_by_callback", True
        return frozen

    def result(self) -> AFLiteResult:
        """The run so far as an :class:`AFLiteResult`."""
        N = self.X.shape[0]
        km = self.keep_matrix
        provenance = dict(self.hashes)
        provenance.update(
            {
                "versions": versions(),
                "seed": self.config.seed,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "ids_given": self.ids is not None,
                "backend": type(self.backend).__name__,
            }
        )
        return AFLiteResult(
            params=self.params(),
            classes=self.classes,
            y=self.codes,
            kept=self.removed_round < 0,
            removed_round=self.removed_round.copy(),
            scores=(np.vstack(self.score_rows) if self.score_rows else np.empty((0, N), np.float32)) if km else None,
            n_predictions=(np.vstack(self.count_rows) if self.count_rows else np.empty((0, N), self.count_dtype))
            if km
            else None,
            first_score=self.first_score.copy(),
            last_score=self.last_score.copy(),
            removal_score=self.removal_score.copy(),
            history=pd.DataFrame(self.history, columns=HISTORY_COLUMNS),
            stop_reason=self.stop_reason,
            provenance=provenance,
            ids=self.ids,
            eval_y=self.eval_codes if self.has_eval else None,
            eval_kept=(self.eval_removed_round < 0) if self.has_eval else None,
            eval_removed_round=self.eval_removed_round.copy() if self.has_eval else None,
            eval_scores=(
                (np.vstack(self.eval_score_rows) if self.eval_score_rows else np.empty((0, self.n_eval), np.float32))
                if km
                else None
            )
            if self.has_eval
            else None,
            eval_first_score=self.eval_first.copy() if self.has_eval else None,
            eval_last_score=self.eval_last.copy() if self.has_eval else None,
            eval_removal_score=self.eval_removal.copy() if self.has_eval else None,
            eval_ids=self.eval_ids,
            null_counts=self._null_mean(self.null_rows),
            eval_null_counts=self._null_mean(self.eval_null_rows) if self.has_eval else None,
            votes=self._votes(),
        )

    def _votes(self) -> NDArray | None:
        """The recorded votes, shape (rounds, N, C), or None when the run records none."""
        if not self.record_votes:
            return None
        if not self.vote_rows:
            return np.zeros((0, self.X.shape[0], len(self.classes)), dtype=self.vote_dtype)
        return np.stack(self.vote_rows)

    def _null_mean(self, rows: list[NDArray]) -> NDArray[np.float64] | None:
        """Mean null counts per round, class and τ (None when the run computes no null)."""
        if not self.null_permutations:
            return None
        shape = (len(rows), len(self.classes), 101)
        return np.asarray(rows, dtype=np.float64).reshape(shape) / self.null_permutations

    # -- checkpoints ---------------------------------------------------------------------------------------
    def fingerprint(self) -> dict[str, Any]:
        """What a checkpoint must match to be resumed by this run: data hashes, parameters, model family."""
        cfg = self.config
        return {
            "hashes": self.hashes,
            "config": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
            "model": self.family.spec(),
        }

    def write_checkpoint(self) -> None:
        """Write the state after the current round to ``checkpoint_dir`` (see :mod:`aflite_core.engine.checkpoint`)."""
        if self.null_permutations:  # the null's per-round sums travel in the checkpoint's JSON
            self.extra_state["null"] = {
                "train": [a.tolist() for a in self.null_rows],
                "eval": [a.tolist() for a in self.eval_null_rows],
            }
        write_checkpoint(self)

    def restore(self, checkpoint_dir: str | Path) -> None:
        """Continue from a checkpoint: check it, reload the state, re-open the backend and replay the removals.

        Raises
        ------
        ValueError
            When there is no checkpoint, it belongs to other data or parameters, or it is damaged or
            inconsistent (one sentence saying what).
        """
        cp = read_checkpoint(
            checkpoint_dir,
            n_rows=int(self.X.shape[0]),
            n_eval=self.n_eval if self.has_eval else None,
            keep_matrix=self.keep_matrix,
            count_dtype=self.count_dtype,
            fingerprint=self.fingerprint(),
            vote_shape=(len(self.classes), self.vote_dtype) if self.record_votes else None,
        )
        _check_same_device(self.extra_state, cp.extra, checkpoint_dir)
        _check_same_tie_break(self.tie_break, cp.extra, checkpoint_dir)
        self._restore_null(cp.extra, cp.round, checkpoint_dir)
        rng = np.random.default_rng(self.config.seed)
        try:
            rng.bit_generator.state = cp.rng_state
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(
                f"The checkpoint in '{checkpoint_dir}' is damaged or inconsistent (its random-generator "
                f"state is unusable: {type(exc).__name__}); it cannot be resumed."
            ) from None
        for name, values in cp.arrays.items():
            setattr(self, name, values.copy())
        self.score_rows, self.count_rows, self.eval_score_rows = cp.score_rows, cp.count_rows, cp.eval_score_rows
        if self.record_votes and cp.vote_rows is None:  # written without votes: the resumed run records none
            self.record_votes, self.backend.record_votes = False, False
        self.vote_rows = cp.vote_rows or [] if self.record_votes else []
        self.history = list(cp.history)
        self.stop_reason = cp.stop_reason
        self.extra_state = cp.extra
        self._record_tie_break()  # checked equal above (a checkpoint written before tie_break existed lacks it)
        # the same random draws as at the start, then the same removals in the same order
        with engine_threads(self.config.n_threads):
            self.rng = np.random.default_rng(self.config.seed)
            self.open()
            for r in range(1, cp.round + 1):
                self.backend.remove(np.flatnonzero(self.removed_round == r), r)
        self.rng.bit_generator.state = cp.rng_state
        self.round = cp.round
        # a run stopped on request continues; a run that stopped by Algorithm 1 stays finished
        self.finished = cp.finished and self.stop_reason != "stopped_by_callback"
        if not self.finished:
            self.stop_reason = "target_size_reached"

    def _restore_null(self, extra: dict, rounds: int, checkpoint_dir) -> None:
        """Take the null's per-round sums from a checkpoint written with the same ``null_permutations``."""
        params = extra.get("params", {}) if isinstance(extra, dict) else {}
        theirs = params.get("null_permutations", 0) if isinstance(params, dict) else 0
        if theirs != self.null_permutations:
            raise ValueError(
                f"The checkpoint in '{checkpoint_dir}' was written with null_permutations={theirs!r} and cannot be "
                f"resumed with null_permutations={self.null_permutations}; resume it with the same value."
            )
        if not self.null_permutations:
            return
        null = extra.get("null") if isinstance(extra.get("null"), dict) else {}
        shape = (len(self.classes), 101)
        try:
            train = [np.asarray(a, dtype=np.int64).reshape(shape) for a in null.get("train", [])]
            evals = [np.asarray(a, dtype=np.int64).reshape(shape) for a in null.get("eval", [])]
        except (TypeError, ValueError):
            train, evals = [], [None]
        if len(train) != rounds or len(evals) != (rounds if self.has_eval else 0):
            raise ValueError(
                f"The checkpoint in '{checkpoint_dir}' is damaged or inconsistent (its null counts do not cover "
                f"its {rounds} rounds); it cannot be resumed."
            )
        self.null_rows, self.eval_null_rows = train, evals


def _device_of(extra: dict) -> tuple[str, str]:
    """(device kind, precision) a run's recorded parameters name; the numpy engine records neither."""
    params = extra.get("params", {}) if isinstance(extra, dict) else {}
    device = str(params.get("device", "cpu"))
    return ("cuda" if device.startswith("cuda") else device), str(params.get("precision", "float32"))


def _check_same_device(mine: dict, theirs: dict, checkpoint_dir) -> None:
    """Refuse to resume a checkpoint written on another device (or precision): rounds would mix arithmetic."""
    here, there = _device_of(mine), _device_of(theirs)
    if here != there:
        raise ValueError(
            f"The checkpoint in '{checkpoint_dir}' was written with device={there[0]!r} (precision {there[1]!r}) "
            f"and cannot be resumed with device={here[0]!r} (precision {here[1]!r}); resume it on its own device."
        )


def _tie_break_of(params: Any) -> str:
    """The tie-break a run's recorded parameters name; a record or checkpoint written without one: ``"position"``."""
    value = params.get("tie_break", "position") if isinstance(params, dict) else "position"
    return value if value in TIE_BREAKS else str(value)


def _check_same_tie_break(mine: str, theirs: dict, checkpoint_dir) -> None:
    """Refuse to resume a checkpoint written with the other tie-break: its later rounds would order ties otherwise."""
    there = _tie_break_of(theirs.get("params", {}) if isinstance(theirs, dict) else {})
    if there != mine:
        raise ValueError(
            f"The checkpoint in '{checkpoint_dir}' was written with tie_break={there!r} and cannot be resumed with "
            f"tie_break={mine!r}; resume it with tie_break={there!r}."
        )
