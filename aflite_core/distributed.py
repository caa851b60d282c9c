"""AFLite on a Dask cluster: each round's partition fits and held-out predictions run as Dask tasks.

:class:`DaskBackend` plugs into the same loop as the local backend (``aflite(..., backend=client)``):

* the features reach the workers once per run - read by each worker from a memory-mapped ``.npy`` on shared
  storage when X is one (``np.load(path, mmap_mode="r")``), otherwise scattered to every worker;
* per round only index arrays (the partitions' block membership, rows of each scoring piece, the rows
  removed in the previous round) travel to the workers, and only model weights and count arrays come back;
* every task is a pure function of its arguments plus data every worker can rebuild: the linear family's
  block Gram matrices are built on a worker from X and brought up to date by replaying the removals of all
  earlier rounds in order, so a task re-run on another (or a restarted) worker computes bit-identical
  numbers. A worker lost mid-round therefore changes nothing but the wall time;
* the fits use the same partition groups, and the scoring the same pieces, as the local backend, with one
  BLAS thread per task, so the same seed gives the same result as ``backend=None``.

``dask.distributed`` is imported only here (``pip install "dask[distributed]"``).
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._utils import blas_threads
from .models import LinearFamily, SklearnFamily
from .partitions import PartitionPlan, RoundScores, merge_pieces, run_pieces, scoring_pieces

__all__ = ["DaskBackend", "local_cluster"]

INSTALL_HINT = 'Dask is needed for backend="dask": pip install "dask[distributed]"'

#: per worker process: run key -> session state (rebuilt on demand, so losing it is harmless)
_SESSIONS: dict[str, dict] = {}
_SESSIONS_LOCK = threading.Lock()
_MEMMAPS: dict[tuple, np.ndarray] = {}


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - exercised only without dask installed
        raise ImportError(INSTALL_HINT) from exc
    return distributed


def local_cluster(n_workers: int = 2, **kwargs: Any):
    """A ``LocalCluster`` of ``n_workers`` single-threaded worker processes on 127.0.0.1 and its client.

    Returns
    -------
    (LocalCluster, Client)
        Close both when done (``client.close(); cluster.close()``).
    """
    distributed = _import_distributed()
    opts = dict(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
        env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    )
    opts.update(kwargs)
    import dask

    # Dask's nannies set MALLOC_TRIM_THRESHOLD_ in every worker; any explicit value switches off glibc's
    # dynamic mmap threshold, so each large temporary (a gathered block of rows, a score matrix) is mmapped
    # and page-faulted afresh: the scoring ran ~1.5x slower in a worker than in-process. Unset it for ours.
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        cluster = distributed.LocalCluster(**opts)
    return cluster, distributed.Client(cluster)


# -- what the workers run ------------------------------------------------------------------------------------
def _array(ref: Any) -> np.ndarray:
    """A feature matrix from its reference: an array (scattered) or ("memmap", path, dtype, shape, offset, order)."""
    if isinstance(ref, tuple) and ref and ref[0] == "memmap":
        key = tuple(ref)
        arr = _MEMMAPS.get(key)
        if arr is None:
            _, path, dtype, shape, offset, order = ref
            arr = np.memmap(path, dtype=np.dtype(dtype), mode="r", shape=tuple(shape), offset=offset, order=order)
            _MEMMAPS[key] = arr
        return arr
    return ref


def _session(key: str, spec: dict, x_ref: Any) -> dict:
    """Return this worker's session for run ``key`` (created on first use)."""
    with _SESSIONS_LOCK:
        entry = _SESSIONS.get(key)
        if entry is None:
            X = _array(x_ref)
            family = spec["family"]
            if isinstance(family, LinearFamily):  # its subclasses too (the logistic family): their own session
                session = family.session(
                    X,
                    spec["codes"],
                    spec["n_classes"],
                    train_size=spec["train_size"],
                    n_partitions=spec["n_partitions"],
                    rng=None,
                    layout=spec["layout"],
                )
            else:
                session = family.session(
                    X,
                    spec["codes"],
                    spec["n_classes"],
                    train_size=spec["train_size"],
                    n_partitions=spec["n_partitions"],
                    rng=None,
                )
            entry = {"session": session, "applied": 0, "lock": threading.Lock(), "prepared": False}
            _SESSIONS[key] = entry
        return entry


def _bring_up_to_date(entry: dict, removals: list[NDArray[np.intp]], need_stack: bool) -> None:
    """Build the Gram matrices (if needed) and replay the removals not yet applied, in round order."""
    session = entry["session"]
    if need_stack and not entry["prepared"]:
        # the stack must be built before any removal is applied (the same operations as the original run)
        if entry["applied"]:
            entry["session"] = session = _rebuild(session)
            entry["applied"] = 0
        session.prepare()
        entry["prepared"] = True
    for rows in removals[entry["applied"] :]:
        session.remove(rows)
    entry["applied"] = len(removals)


def _rebuild(session):
    return session.family.session(
        session.X,
        session.codes,
        session.n_classes,
        train_size=session.train_size,
        n_partitions=session.n_partitions,
        rng=None,
        layout=session.layout(),
    )


class _Seeds:
    """Stands in for the run's generator inside a task: hands out the seeds the client drew."""

    def __init__(self, seeds: NDArray[np.int64]) -> None:
        self.seeds = seeds

    def integers(self, *args: Any, **kwargs: Any) -> NDArray[np.int64]:
        return self.seeds


def _fit_group(
    key: str,
    spec: dict,
    x_ref: Any,
    round_no: int,
    group: list[int],
    membership: NDArray[np.bool_],
    rows: NDArray[np.intp],
    removals: list[NDArray[np.intp]],
) -> Any:
    """Task: fit the linear models of one partition group for round ``round_no`` (returns small weights)."""
    entry = _session(key, spec, x_ref)
    with entry["lock"], blas_threads(1):
        _bring_up_to_date(entry, removals[: round_no - 1], need_stack=True)
        plan = PartitionPlan(block_of=np.empty(0, dtype=np.int32), membership=membership)
        return entry["session"].fit(rows, plan, group, None)


def _score_pieces(
    key: str, spec: dict, x_ref: Any, fitted: Any, pieces: list[dict], eval_X_ref: Any, eval_codes: NDArray | None
) -> list[dict]:
    """Task: score some pieces with the round's fitted models (returns count arrays)."""
    entry = _session(key, spec, x_ref)
    with blas_threads(1):
        session = entry["session"]
        return run_pieces(
            session,
            fitted,
            pieces,
            session.X,
            session.codes,
            None if eval_X_ref is None else _array(eval_X_ref),
            eval_codes,
        )


def _sklearn_partition(
    key: str,
    spec: dict,
    x_ref: Any,
    j: int,
    seeds: NDArray[np.int64],
    plan: PartitionPlan,
    rows: NDArray[np.intp],
    pieces: list[dict],
    eval_X_ref: Any,
    eval_codes: NDArray | None,
) -> list[dict]:
    """Task: fit partition ``j``'s scikit-learn model and score its held-out rows piece by piece.

    Each piece is predicted exactly as the local backend predicts it (the same rows in the same call), so
    the counts are identical; only model ``j``'s column of each piece is used.
    """
    entry = _session(key, spec, x_ref)
    with blas_threads(1):
        session = entry["session"]
        models = session.fit(rows, plan, [j], _Seeds(seeds))
        out = []
        for piece in pieces:
            if piece["kind"] == "chunk":
                sub = dict(piece, heldout=piece["heldout"][:, [j]])
                res = run_pieces(session, models, [sub], session.X, session.codes)[0]
                res["partition"] = j
                out.append(res)
            else:
                eval_X = _array(eval_X_ref)
                res = run_pieces(session, models, [piece], session.X, session.codes, eval_X, eval_codes)[0]
                out.append(res)
        return out


# -- the backend (client side) -------------------------------------------------------------------------------
def _nbytes(obj: Any) -> int:
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    W = getattr(obj, "W", None)
    if W is not None:
        return W.nbytes + obj.b.nbytes
    return 64


@dataclass
class DaskBackend:
    """Run each round's partition fits and predictions as tasks on a ``dask.distributed`` cluster.

    Parameters
    ----------
    client : dask.distributed.Client, optional
        The cluster to use (default: the current client, ``distributed.get_client()``).
    pieces_per_task : int, default=8
        Scoring pieces (blocks of rows, or chunks) per task.

    Attributes
    ----------
    stats : list of dict
        Per round: tasks submitted and the bytes of arrays sent to and received from the workers.
    """

    client: Any = None
    pieces_per_task: int = 8
    stats: list = field(default_factory=list)

    def __post_init__(self) -> None:
        distributed = _import_distributed()
        if self.client is None:
            try:
                self.client = distributed.get_client()
            except ValueError:
                raise ValueError(
                    "backend='dask' needs a running dask.distributed Client (e.g. Client('tcp://host:8786')); "
                    "pass it as backend=client."
                ) from None
        self.key = "aflite-" + uuid.uuid4().hex[:12]
        self.removals: list = []
        self.removal_arrays: list = []
        self._counter = itertools.count()

    # -- Backend protocol --------------------------------------------------------------------------------------
    def open(self, X, codes, n_classes, family, *, train_size, n_partitions, rng, eval_X=None, eval_codes=None):
        """Draw the per-run randomness here (as the local backend does) and ship the data to the workers."""
        if not isinstance(family, (LinearFamily, SklearnFamily)):
            raise TypeError(f"backend='dask' supports LinearFamily and SklearnFamily, not {type(family).__name__}.")
        self.family = family
        self.n_partitions = n_partitions
        # the client-side session draws the same blocks as a local run and tracks block sizes; it never
        # builds Gram matrices (the workers do)
        self.local = family.session(X, codes, n_classes, train_size=train_size, n_partitions=n_partitions, rng=rng)
        self.mode = getattr(self.local, "mode", "exact")
        self.rows_per_block = int(getattr(self.local, "rows_per_block", 1))
        self.codes = codes
        self.eval_codes = eval_codes
        shipped = self._ref(X)
        self.x_ref = shipped
        self.spec = {
            "codes": codes,
            "n_classes": n_classes,
            "train_size": train_size,
            "n_partitions": n_partitions,
            "family": family,
            "layout": self.local.layout() if isinstance(family, LinearFamily) else None,
        }
        # Dask's Active Memory Manager would drop the broadcast copies again (ReduceReplicas); those copies are
        # what lets a task re-run on another worker when one is lost, so it pauses while this run is active
        self._amm_was_running = _amm_running(self.client)
        if self._amm_was_running:
            self.client.amm.stop()
        self.spec_future = self.client.scatter([self.spec], broadcast=True, hash=False)[0]
        self.eval_ref = None
        if eval_X is not None:
            self.eval_ref = self._ref(eval_X)
        self.setup_bytes = (0 if isinstance(shipped, tuple) else X.nbytes) + codes.nbytes

    def _ref(self, X: np.ndarray) -> Any:
        if isinstance(X, np.memmap) and getattr(X, "filename", None) and X.flags.c_contiguous:
            return ("memmap", str(X.filename), X.dtype.str, tuple(X.shape), int(X.offset), "C")
        return self.client.scatter([np.ascontiguousarray(X)], broadcast=True, hash=False)[0]

    def draw_plan(self, rows, rng) -> PartitionPlan:
        """The same plan a local run draws."""
        return self.local.draw_plan(rows, rng)

    def score(self, rows, plan, rng, eval_rows, round_no) -> RoundScores:
        """Fit and score one round as tasks; returns the summed counts."""
        if isinstance(self.family, LinearFamily):
            return self._score_linear(rows, plan, eval_rows, round_no)
        return self._score_sklearn(rows, plan, rng, eval_rows, round_no)

    def _tag(self, what: str, round_no: int) -> str:
        return f"aflite-{what}-r{round_no}-{self.key}-{next(self._counter)}"

    def _score_linear(self, rows, plan, eval_rows, round_no) -> RoundScores:
        m = self.n_partitions
        step = self.local.fit_group  # the grouping a local run uses
        groups = [list(range(g0, min(g0 + step, m))) for g0 in range(0, m, step)]
        exact = self.mode == "exact"
        membership = plan.membership
        rows_arg = rows if exact else np.empty(len(rows), dtype=np.int8)  # blocks mode needs only len(rows)
        sent = _nbytes(self.removal_arrays[-1:]) if round_no > 1 else 0  # each removal array travels once
        futures = [
            self.client.submit(
                _fit_group,
                self.key,
                self.spec_future,
                self.x_ref,
                round_no,
                g,
                membership,
                rows_arg,
                self.removals,
                key=self._tag("fit", round_no),
                pure=False,
            )
            for g in groups
        ]
        parts = self.client.gather(futures)
        fitted = _concat_weights(parts)
        received = sum(_nbytes(p) for p in parts)
        fitted_future = self.client.scatter(fitted, broadcast=True, hash=False)
        pieces = scoring_pieces(self.local, rows, plan, eval_rows if self.eval_ref is not None else None)
        chunks = [pieces[i : i + self.pieces_per_task] for i in range(0, len(pieces), self.pieces_per_task)]
        futures = [
            self.client.submit(
                _score_pieces,
                self.key,
                self.spec_future,
                self.x_ref,
                fitted_future,
                chunk,
                self.eval_ref,
                self.eval_codes,
                key=self._tag("score", round_no),
                pure=False,
            )
            for chunk in chunks
        ]
        results = [r for part in self.client.gather(futures) for r in part]
        sent += len(groups) * membership.nbytes + (rows_arg.nbytes if exact else 0) * len(groups)
        sent += _nbytes(fitted) + sum(_nbytes(c) for c in chunks)
        received += sum(_nbytes(r) for r in results)
        self.stats.append(
            {
                "round": round_no,
                "tasks": len(groups) + len(chunks),
                "bytes_sent": int(sent),
                "bytes_received": int(received),
            }
        )
        return merge_pieces(results, len(rows), m, None if eval_rows is None else len(eval_rows))

    def _score_sklearn(self, rows, plan, rng, eval_rows, round_no) -> RoundScores:
        m = self.n_partitions
        seeds = rng.integers(0, 2**31 - 1, size=m)  # the draw SklearnFamily's local fit makes
        pieces = scoring_pieces(self.local, rows, plan, eval_rows if self.eval_ref is not None else None)
        plan_future = self.client.scatter(plan, broadcast=True, hash=False)
        futures = [
            self.client.submit(
                _sklearn_partition,
                self.key,
                self.spec_future,
                self.x_ref,
                j,
                seeds,
                plan_future,
                rows,
                pieces,
                self.eval_ref,
                self.eval_codes,
                key=self._tag("partition", round_no),
                pure=False,
            )
            for j in range(m)
        ]
        per_model = self.client.gather(futures)
        n = len(rows)
        correct = np.zeros(n, dtype=np.int32)
        n_pred = np.zeros(n, dtype=np.int32)
        model_correct = np.zeros(m, dtype=np.int64)
        model_total = np.zeros(m, dtype=np.int64)
        eval_correct = None if eval_rows is None else np.zeros(len(eval_rows), dtype=np.int32)
        received = 0
        for j, results in enumerate(per_model):
            for res in results:
                received += _nbytes(res)
                if res["kind"] == "eval":
                    # local scoring predicts every model per chunk and sums; the per-model sums are equal
                    eval_correct[res["start"] : res["start"] + len(res["eval_correct"])] += res["eval_correct"]
                else:
                    correct[res["positions"]] += res["correct"]
                    n_pred[res["positions"]] += res["n_pred"]
                    model_correct[j] += res["model_correct"][0]
                    model_total[j] += res["model_total"][0]
        self.stats.append(
            {
                "round": round_no,
                "tasks": m,
                "bytes_sent": int(_nbytes(plan) + rows.nbytes + sum(_nbytes(p) for p in pieces)),
                "bytes_received": int(received),
            }
        )
        return RoundScores(correct, n_pred, model_correct, model_total, eval_correct)

    def remove(self, rows, round_no) -> None:
        """Record the removals (replayed by every worker before its next fit) and update block sizes."""
        self.local.remove(rows)
        arr = np.asarray(rows, dtype=np.int64)
        self.removal_arrays.append(arr)
        self.removals.append(self.client.scatter(arr, broadcast=True, hash=False))  # replicated: survives a lost worker

    def close(self) -> None:
        """Drop this run's sessions on the workers (they rebuild on demand if asked again)."""
        try:
            self.client.run(_forget, self.key)
            if getattr(self, "_amm_was_running", False):
                self.client.amm.start()
        except Exception:  # best effort: a closed cluster has nothing to forget
            pass


def _amm_running(client: Any) -> bool:
    try:
        return bool(client.amm.running())
    except Exception:  # older or restricted schedulers: nothing to pause
        return False


def _forget(key: str) -> None:
    with _SESSIONS_LOCK:
        _SESSIONS.pop(key, None)


def _concat_weights(parts: list) -> Any:
    from .models import _LinearWeights

    W = np.concatenate([p.W for p in parts], axis=2)
    b = np.concatenate([p.b for p in parts], axis=1)
    return _LinearWeights(W, b, parts[0].n_classes)


def worker_pid() -> int:
    """The process id of the worker running this (used by tests that stop a worker on purpose)."""
    return os.getpid()
