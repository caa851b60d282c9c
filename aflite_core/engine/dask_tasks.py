"""What the Dask workers run for :class:`~aflite_core.engine.distributed.DaskBackend`: the per-shard tasks.

Every task is a module-level function of its arguments and of per-worker-process state that any worker can
rebuild (a run's session, its shards brought up to date by replaying the removals in order), so a task re-run
on another worker computes the same bits. See :mod:`aflite_core.engine.distributed` for what a worker owns and
what crosses the network.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import defaultdict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._utils import blas_threads
from .models import LinearFamily, _LinearWeights
from .partitions import PartitionPlan, run_pieces
from .shards import tree_sum

#: per worker process: run key -> session state (rebuilt on demand, so losing it is harmless)
_SESSIONS: dict[str, dict] = {}
_SESSIONS_LOCK = threading.Lock()
_MEMMAPS: dict[tuple, np.ndarray] = {}
#: per worker process: run key -> {kind of work: CPU seconds of the task threads} (see ``transfer_stats``)
_CPU: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))


def _register_sizeof() -> None:
    """Let Dask count fitted models by their arrays' bytes (its transfer counters use ``sizeof``)."""
    try:
        from dask.sizeof import sizeof
    except ImportError:  # pragma: no cover - exercised only without dask installed
        return
    sizeof.register(_LinearWeights)(lambda w: int(w.W.nbytes + w.b.nbytes))


_register_sizeof()


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
    """Return this worker's session for run ``key`` (created on first use, without a pass over X)."""
    with _SESSIONS_LOCK:
        entry = _SESSIONS.get(key)
        if entry is None:
            X = _array(x_ref)
            family = spec["family"]
            kwargs = dict(train_size=spec["train_size"], n_partitions=spec["n_partitions"], rng=None)
            if isinstance(family, LinearFamily):  # its subclasses too (the logistic family): their own session
                kwargs["layout"] = spec["layout"]
            session = family.session(X, spec["codes"], spec["n_classes"], **kwargs)
            entry = {"session": session, "applied": 0, "lock": threading.Lock()}
            _SESSIONS[key] = entry
        return entry


@contextlib.contextmanager
def _cpu(key: str, kind: str):
    """Add the CPU time of this task's thread to this worker's tally for ``kind``."""
    t0 = time.thread_time()
    try:
        yield
    finally:
        _CPU[key][kind] += time.thread_time() - t0


def _forget_up_to(entry: dict, removals: list[NDArray[np.intp]], upto: int) -> None:
    """Replay the bookkeeping (block sizes, rows present) of removal rounds not yet seen, in order."""
    for rows in removals[entry["applied"] : upto]:
        entry["session"].forget(rows)
    entry["applied"] = max(entry["applied"], upto)


def _shard_up_to(session, index: int, removals: list[NDArray[np.intp]], upto: int):
    """Shard ``index`` built (if new) and with the removals of rounds 1..upto subtracted, in round order."""
    sh = session.shard(index)
    for rows in removals[sh.applied : upto]:
        session.remove_from_shard(sh, rows[session.shard_of_row[rows] == index])
    return sh


def _shards_round(
    key: str,
    spec: dict,
    x_ref: Any,
    round_no: int,
    shard_ids: list[int],
    covers: list[tuple[int, int]],
    membership: NDArray[np.bool_] | None,
    groups: list[list[int]],
    removals: list[NDArray[np.intp]],
) -> dict:
    """Task: bring this worker's shards up to date and return their subtree sums.

    For every tree node in ``covers`` (the largest subtrees of the shard tree inside this worker's range): the
    Gram matrix of its current rows (``"totals"``, when the fits need a preconditioner) and, with
    ``membership``, each partition group's partial Gram matrices over its blocks (``"grams"``).
    """
    entry = _session(key, spec, x_ref)
    with entry["lock"], blas_threads(1), _cpu(key, "gram"):
        session = entry["session"]
        for s in shard_ids:
            _shard_up_to(session, s, removals, round_no - 1)
        out: dict = {"totals": {}, "grams": {}}
        for node in covers:
            if session.uses_total:
                out["totals"][node] = session.node_total(node)
            if membership is not None:
                for u, group in enumerate(groups):
                    out["grams"][(node, u)] = session.node_grams(node, membership[group])
        return out


def _pick(result: dict, kind: str, k: Any) -> Any:
    """Task: one node's value from a :func:`_shards_round` result (runs where that result is)."""
    return result[kind][k]


def _add(key: str, a: NDArray, b: NDArray) -> NDArray:
    """Task: one inner node of the shard tree (``reduce="tree"``)."""
    with _cpu(key, "reduce"):
        return a + b


def _precond(key: str, spec: dict, x_ref: Any, values: dict, n_shards: int, n_rows: int):
    """Task: this round's preconditioner from the subtree totals (the rest of the tree added here)."""
    entry = _session(key, spec, x_ref)
    with blas_threads(1), _cpu(key, "solve"):
        total = tree_sum(values, 0, n_shards)
        return entry["session"].preconditioner_from_total(total, n_rows)


def _solve(key: str, spec: dict, x_ref: Any, values: dict, n_shards: int, n_models: int, precond) -> _LinearWeights:
    """Task: add the rest of the shard tree for one partition group and solve its ridge systems."""
    entry = _session(key, spec, x_ref)
    session = entry["session"]
    with blas_threads(1):
        with _cpu(key, "reduce"):
            packed = tree_sum(values, 0, n_shards)  # folded triangles of the group's Gram matrices (shards.block_stack)
        with _cpu(key, "solve"):
            W, b = session.solve_grams(session.unpack_grams(packed.reshape(n_models, -1)), precond)
            return _LinearWeights(np.ascontiguousarray(W, dtype=np.float32), b.astype(np.float32), session.n_classes)


def _fit_group(
    key: str,
    spec: dict,
    x_ref: Any,
    round_no: int,
    group: list[int],
    membership: NDArray[np.bool_],
    rows: NDArray[np.intp],
    removals: list[NDArray[np.intp]],
    precond: Any = None,
) -> Any:
    """Task: fit one partition group that gathers its own training rows (logistic regression, exact subsets)."""
    entry = _session(key, spec, x_ref)
    with entry["lock"], blas_threads(1), _cpu(key, "fit"):
        _forget_up_to(entry, removals, round_no - 1)
        session = entry["session"]
        plan = PartitionPlan(block_of=np.empty(0, dtype=np.int32), membership=membership)
        if getattr(session, "solver", None) == "logistic":
            return session.fit(rows, plan, group, None, precond=precond)
        return session.fit(rows, plan, group, None)


def _weights(parts: list) -> _LinearWeights:
    W = np.concatenate([p.W for p in parts], axis=2)
    b = np.concatenate([p.b for p in parts], axis=1)
    return _LinearWeights(W, b, parts[0].n_classes)


def _score_shards(
    key: str,
    spec: dict,
    x_ref: Any,
    round_no: int,
    shard_ids: list[int],
    membership: NDArray[np.bool_],
    parts: list,
    removals: list[NDArray[np.intp]],
) -> list[tuple]:
    """Task: predict this worker's shards' rows, block by block, with the models that held each block out.

    Returns ``(block, n_rows, correct per row, correct per model)`` per block: the pieces the local backend
    scores (:func:`aflite_core.engine.partitions.scoring_pieces`), computed the same way.
    """
    entry = _session(key, spec, x_ref)
    with entry["lock"], blas_threads(1):
        session = entry["session"]
        with _cpu(key, "gram"):  # only does work on a worker that took over a lost worker's shards
            shards = [_shard_up_to(session, s, removals, round_no - 1) for s in shard_ids]
        with _cpu(key, "score"):
            fitted = _weights(parts)
            out = []
            for sh in shards:
                blocks = session.block_of_row[sh.rows]
                order = np.argsort(blocks, kind="stable")
                b0, b1 = sh.blocks
                cuts = np.cumsum(np.bincount(blocks - b0, minlength=b1 - b0))[:-1]
                for b, rows_b in zip(range(b0, b1), np.split(sh.rows[order], cuts)):
                    models = np.flatnonzero(~membership[:, b])
                    if len(rows_b) and len(models):
                        right = session.score_block(fitted, rows_b, models)
                        out.append(
                            (b, len(rows_b), right.sum(axis=1, dtype=np.int32), right.sum(axis=0, dtype=np.int64))
                        )
            return out


def _score_pieces(
    key: str, spec: dict, x_ref: Any, parts: list, pieces: list[dict], eval_X_ref: Any, eval_codes: NDArray | None
) -> list[dict]:
    """Task: score some pieces (row chunks, evaluation rows) with the round's fitted models (returns counts)."""
    entry = _session(key, spec, x_ref)
    with blas_threads(1), _cpu(key, "score"):
        session = entry["session"]
        return run_pieces(
            session,
            _weights(parts),
            pieces,
            session.X,
            session.codes,
            None if eval_X_ref is None else _array(eval_X_ref),
            eval_codes,
        )


class _Seeds:
    """Stands in for the run's generator inside a task: hands out the seeds the client drew."""

    def __init__(self, seeds: NDArray[np.int64]) -> None:
        self.seeds = seeds

    def integers(self, *args: Any, **kwargs: Any) -> NDArray[np.int64]:
        return self.seeds


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


def _worker_counters(dask_worker, key: str) -> dict:
    """Dask transfer counters of the worker running this, its CPU tallies for run ``key`` and peak memory."""
    import resource

    return {
        "transfer_in": int(sum(e["total"] for e in dask_worker.transfer_incoming_log)),
        "transfer_out": int(dask_worker.transfer_outgoing_bytes_total),
        "cpu": dict(_CPU.get(key, {})),
        "max_rss": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024,
        "pid": os.getpid(),
    }


def _forget(key: str) -> None:
    with _SESSIONS_LOCK:
        _SESSIONS.pop(key, None)
        _CPU.pop(key, None)


def worker_pid() -> int:
    """The process id of the worker running this (used by tests that stop a worker on purpose)."""
    return os.getpid()
