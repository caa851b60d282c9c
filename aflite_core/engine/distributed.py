"""AFLite on a Dask cluster, sharded: each worker owns fixed shards of the row blocks and works only on them.

:class:`DaskBackend` plugs into the same loop as the local backend (``aflite(..., backend=client)``).

**What a worker owns.** The run's blocks are cut into a fixed number of *shards* (``LinearFamily.shards``,
16 by default; a function of the data and the family, never of the cluster). Each round the shards are dealt
to the current workers in contiguous ranges. A worker builds the Gram matrices of its own shards' blocks (from
the features: a memory-mapped ``.npy`` every machine sees, read row by row, or a copy scattered once per run),
subtracts its own shards' removed rows, forms its shards' partial sums of every partition's Gram matrix, and
predicts its own shards' rows with every model that held them out. Nothing a worker does is repeated by another.

**What crosses the network per round.** To each worker: the partitions' block membership (m × blocks
booleans), the rows removed in the previous round (indices), and the m fitted models (m · d · (C - 1) floats).
Between workers: the partial Gram sums, m · D(D + 1)/2 floats at most per worker (one triangle each, stored
folded, D = d + 1 + C; the *reduction*). Back to the driver: per-row counts of the worker's rows. Feature rows
never travel after the set-up.

**The reduction.** Partition j's Gram matrix is the sum over shards of that shard's partial sum, added along a
fixed balanced binary tree over the shard indices (:func:`aflite_core.engine.shards.tree_sum`), as the local backend
adds them. A worker sums the largest subtrees inside its range; the rest of the tree is added either where
each group of partitions is solved (``reduce="owner"``: every worker sends each group's owner its subtree
sums for that group) or as one task per tree node (``reduce="tree"``). Both evaluate the same tree, so the
result is bit-identical to the local backend's for any number of workers and either strategy.

**Families.** The ridge classifier (``model="ridge"``, and the default family where its rule picks ridge)
runs fully sharded as above. Where the default family fits logistic regression, its preconditioner (the
Gram matrix of the whole set) is sharded the same way, the scoring is sharded, and each group of partitions is
fitted by one task that gathers its own training rows (an L-BFGS iteration over m partitions has no
per-shard structure to exploit without making every iteration a cluster round trip; see
``benchmarks/README.md``). Exact random subsets (``block_rows=1``) and scikit-learn families run as one task per
partition group or per model, as before.

**Worker loss.** Every task is a pure function of its arguments and data any worker can rebuild (a shard is
built from the features and brought up to date by replaying the removals of earlier rounds in order), so a
task re-run on another worker computes the same bits, and a lost worker changes nothing but the wall time.

The tasks the workers run are in :mod:`aflite_core.engine.dask_tasks`; this module is the client side.
``dask.distributed`` is imported only here (``pip install "dask[distributed]"``).
"""

from __future__ import annotations

import itertools
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dask_tasks import (
    _add,
    _fit_group,
    _forget,
    _pick,
    _precond,
    _score_pieces,
    _score_shards,
    _shards_round,
    _sklearn_partition,
    _solve,
    _worker_counters,
)
from .dask_tasks import worker_pid as worker_pid  # re-exported: it lived here
from .models import LinearFamily
from .partitions import PartitionPlan, RoundScores, merge_pieces, open_session, scoring_pieces
from .shards import tree_cover
from .sklearn_family import SklearnFamily

__all__ = ["DaskBackend", "local_cluster"]

INSTALL_HINT = 'Dask is needed for backend="dask": pip install "dask[distributed]"'


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


def _ranges(n_shards: int, n_workers: int) -> list[tuple[int, int]]:
    """Contiguous shard ranges of the workers (some empty when there are more workers than shards)."""
    return [((w * n_shards) // n_workers, ((w + 1) * n_shards) // n_workers) for w in range(n_workers)]


@dataclass
class DaskBackend:
    """Run each round on a ``dask.distributed`` cluster, every worker working on its own shards of the blocks.

    Parameters
    ----------
    client : dask.distributed.Client, optional
        The cluster to use (default: the current client, ``distributed.get_client()``).
    pieces_per_task : int, default=8
        Scoring pieces per task where rows are scored in chunks rather than by shard.
    reduce : {"owner", "tree"}, default="owner"
        How the shards' partial Gram sums are added up: at the worker that solves each partition group
        (``"owner"``) or one task per node of the shard tree (``"tree"``). Both give the same bits.
    transfer_stats : bool, default=False
        Record each worker's Dask transfer counters, CPU tallies and peak memory after every round (one extra
        round trip per round) in :attr:`stats`.
    workers : list of str, optional
        Addresses of the workers that own shards (default: every worker of the cluster, as it is each round).

    Attributes
    ----------
    stats : list of dict
        Per round: tasks submitted, bytes of arrays the driver sent and received, and with ``transfer_stats``
        the per-worker counters.
    """

    client: Any = None
    pieces_per_task: int = 8
    reduce: str = "owner"
    transfer_stats: bool = False
    workers: list | None = None
    stats: list = field(default_factory=list)

    def __post_init__(self) -> None:
        distributed = _import_distributed()
        if self.reduce not in ("owner", "tree"):
            raise ValueError(f"The 'reduce' parameter of DaskBackend must be 'owner' or 'tree'. Got {self.reduce!r}.")
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
    def open(
        self, X, codes, n_classes, family, *, train_size, n_partitions, rng, eval_X=None, eval_codes=None, groups=None
    ):
        """Draw the per-run randomness here (as the local backend does) and ship the data to the workers.

        With ``groups`` the driver's session draws blocks of whole groups (they travel to the workers in the
        layout) and exact-mode plans of whole groups (they travel as every plan does).
        """
        if not isinstance(family, (LinearFamily, SklearnFamily)):
            raise TypeError(f"backend='dask' supports LinearFamily and SklearnFamily, not {type(family).__name__}.")
        self.family = family
        self.n_partitions = n_partitions
        # the client-side session draws the same blocks as a local run, tracks block sizes and cuts the shards;
        # it never builds Gram matrices (the workers do, each for its own shards)
        self.local = open_session(
            family, X, codes, n_classes, train_size=train_size, n_partitions=n_partitions, rng=rng, groups=groups
        )
        self.mode = getattr(self.local, "mode", "exact")
        self.rows_per_block = int(getattr(self.local, "rows_per_block", 1))
        self.codes = codes
        self.eval_codes = eval_codes
        self.x_ref = self._ref(X)
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
        self.setup_bytes = (0 if isinstance(self.x_ref, tuple) else X.nbytes) + codes.nbytes

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

    def _submit(self, fn, *args, what: str, round_no: int, worker: str | None = None) -> Any:
        opts: dict = {"key": self._tag(what, round_no), "pure": False}
        if worker is not None:  # a preference: if that worker is gone, any other rebuilds what it needs
            opts.update(workers=[worker], allow_other_workers=True)
        return self.client.submit(fn, *args, **opts)

    def _tree(self, nodes: dict, node: tuple[int, int], round_no: int, where, root: str | None = None) -> Any:
        """Future of one node of the shard tree: a worker's subtree sum, or one task adding its two children.

        An inner node is added where its left child is (``where(shard)`` is that shard's worker), the root where
        ``root`` says (the worker that solves that partition group).
        """
        if node in nodes:
            return nodes[node]
        lo, hi = node
        mid = (lo + hi) // 2
        left, right = self._tree(nodes, (lo, mid), round_no, where), self._tree(nodes, (mid, hi), round_no, where)
        return self._submit(_add, self.key, left, right, what="reduce", round_no=round_no, worker=root or where(lo))

    def _score_linear(self, rows, plan, eval_rows, round_no) -> RoundScores:
        """One round of a linear family: the shards' Gram sums, the groups' fits, the scores, summed."""
        m = self.n_partitions
        S = self.local.n_shards
        step = self.local.fit_group  # the grouping a local run uses
        groups = [list(range(g0, min(g0 + step, m))) for g0 in range(0, m, step)]
        alive = sorted(self.client.nthreads())
        workers = [w for w in (self.workers or []) if w in alive] or alive
        ranges = _ranges(S, len(workers))
        owned = [(w, list(range(lo, hi)), tree_cover(lo, hi, (0, S))) for w, (lo, hi) in zip(workers, ranges)]
        owned = [o for o in owned if o[1]]
        owner_of = {s: w for w, shard_ids, _ in owned for s in shard_ids}
        # what the driver sends and the tasks it submits this round (each removal array travels once)
        tally = {"sent": _nbytes(self.removal_arrays[-1:]) if round_no > 1 else 0, "tasks": 0}
        totals, partials = self._shard_sums(plan.membership, groups, owned, round_no, tally)
        precond = None
        if self.local.uses_total:
            precond = self._preconditioner(totals, owner_of, workers, len(rows), round_no, tally)
        parts = self._fits(rows, plan.membership, groups, partials, owner_of, workers, precond, round_no, tally)
        results, received = self._scores(rows, plan, eval_rows, owned, parts, round_no, tally)
        record = {
            "round": round_no,
            "tasks": tally["tasks"],
            "bytes_sent": int(tally["sent"]),
            "bytes_received": int(received),
        }
        if self.transfer_stats:
            record["workers"] = self.worker_counters()
        self.stats.append(record)
        return merge_pieces(results, len(rows), m, None if eval_rows is None else len(eval_rows))

    def _shard_sums(self, membership, groups, owned, round_no, tally) -> tuple[dict, dict]:
        """Submit each worker's shards' round (Gram subtree sums) and pick each node's value where it is."""
        local = self.local
        grams = local.uses_stack
        totals, partials = {}, defaultdict(dict)
        if not (local.uses_stack or local.uses_total):
            return totals, partials
        for w, shard_ids, covers in owned:
            res = self._submit(
                _shards_round,
                self.key,
                self.spec_future,
                self.x_ref,
                round_no,
                shard_ids,
                covers,
                membership if grams else None,
                groups,
                self.removals,
                what="fit",
                round_no=round_no,
                worker=w,
            )
            tally["sent"] += membership.nbytes if grams else 0
            tally["tasks"] += 1
            for node in covers:  # picked where the result is (Dask would otherwise move all of it)
                if local.uses_total:
                    totals[node] = self._submit(_pick, res, "totals", node, what="pick", round_no=round_no, worker=w)
                if grams:
                    for u in range(len(groups)):
                        partials[u][node] = self._submit(
                            _pick, res, "grams", (node, u), what="pick", round_no=round_no, worker=w
                        )
        return totals, partials

    def _preconditioner(self, totals, owner_of, workers, n_rows, round_no, tally) -> Any:
        """Submit this round's preconditioner task, from the shards' totals."""
        S = self.local.n_shards
        values = totals
        if self.reduce == "tree":
            values = {(0, S): self._tree(totals, (0, S), round_no, owner_of.get)}
        precond = self._submit(  # one task per round, on each worker in turn (its result goes to every solver)
            _precond,
            self.key,
            self.spec_future,
            self.x_ref,
            values,
            S,
            n_rows,
            what="precond",
            worker=workers[round_no % len(workers)],
            round_no=round_no,
        )
        tally["tasks"] += 1
        return precond

    def _fits(self, rows, membership, groups, partials, owner_of, workers, precond, round_no, tally) -> list:
        """Submit each partition group's fit: a solve of its summed Gram matrices, or a fit on its gathered rows."""
        S = self.local.n_shards
        parts = []
        if self.local.uses_stack:
            for u, group in enumerate(groups):
                owner = workers[u % len(workers)]  # the groups' solves are spread over the workers
                values = partials[u]
                if self.reduce == "tree":
                    values = {(0, S): self._tree(partials[u], (0, S), round_no, owner_of.get, root=owner)}
                parts.append(
                    self._submit(
                        _solve,
                        self.key,
                        self.spec_future,
                        self.x_ref,
                        values,
                        S,
                        len(group),
                        precond,
                        what="solve",
                        round_no=round_no,
                        worker=owner,
                    )
                )
        else:
            exact = self.mode == "exact"
            rows_arg = rows if exact else np.empty(len(rows), dtype=np.int8)  # blocks mode needs only len(rows)
            for group in groups:
                parts.append(
                    self._submit(
                        _fit_group,
                        self.key,
                        self.spec_future,
                        self.x_ref,
                        round_no,
                        group,
                        membership,
                        rows_arg,
                        self.removals,
                        precond,
                        what="fit",
                        round_no=round_no,
                    )
                )
                tally["sent"] += membership.nbytes + (rows_arg.nbytes if exact else 0)
        tally["tasks"] += len(parts)
        return parts

    def _scores(self, rows, plan, eval_rows, owned, parts, round_no, tally) -> tuple[list[dict], int]:
        """Submit the scoring (by shard where the blocks are sharded, else in chunks of pieces) and gather it."""
        local = self.local
        sharded = local.uses_stack or local.uses_total
        membership = plan.membership
        pieces = scoring_pieces(local, rows, plan, eval_rows if self.eval_ref is not None else None)
        by_block = {}
        other = []
        for piece in pieces:
            if piece["kind"] == "block" and sharded:
                by_block[int(plan.block_of[piece["positions"][0]])] = piece
            else:
                other.append(piece)
        score_futures = []
        if by_block:
            for w, shard_ids, _ in owned:
                score_futures.append(
                    self._submit(
                        _score_shards,
                        self.key,
                        self.spec_future,
                        self.x_ref,
                        round_no,
                        shard_ids,
                        membership,
                        parts,
                        self.removals,
                        what="score",
                        round_no=round_no,
                        worker=w,
                    )
                )
                tally["sent"] += membership.nbytes
        chunks = [other[i : i + self.pieces_per_task] for i in range(0, len(other), self.pieces_per_task)]
        chunk_futures = [
            self._submit(
                _score_pieces,
                self.key,
                self.spec_future,
                self.x_ref,
                parts,
                chunk,
                self.eval_ref,
                self.eval_codes,
                what="score",
                round_no=round_no,
            )
            for chunk in chunks
        ]
        tally["sent"] += sum(_nbytes(c) for c in chunks)
        tally["tasks"] += len(score_futures) + len(chunk_futures)
        results = [r for part in self.client.gather(chunk_futures) for r in part]
        received = sum(_nbytes(r) for r in results)
        seen = 0
        for part in self.client.gather(score_futures):
            for b, n_rows_b, correct, model_correct in part:
                piece = by_block[b]
                if n_rows_b != len(piece["positions"]):
                    raise RuntimeError("A worker's view of its shard's rows is out of date.")
                seen += 1
                received += correct.nbytes + model_correct.nbytes
                results.append(
                    {
                        "kind": "block",
                        "positions": piece["positions"],
                        "models": piece["models"],
                        "correct": correct,
                        "n_pred": len(piece["models"]),
                        "model_correct": model_correct,
                        "model_total": n_rows_b,
                    }
                )
        if seen != len(by_block):
            raise RuntimeError("The workers scored other blocks than this round's.")
        return results, received

    def worker_counters(self) -> dict:
        """Per worker: Dask's transfer counters (bytes in from peers, bytes out), CPU tallies and peak RSS."""
        return self.client.run(_worker_counters, key=self.key)

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
            self.final_counters = self.worker_counters() if self.transfer_stats else None
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
