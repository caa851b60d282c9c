"""The batched ridge model family M for AFLite (:class:`LinearFamily`) and its per-run session.

(The default family, batched logistic regression, is :class:`aflite_core.engine.logistic.LogisticFamily`, built on
:class:`LinearFamily`'s blocks and sessions.)

The paper's model family is "typically a linear classifier" (Algorithm 1, line 7). Public AFLite code fits
one scikit-learn ``LogisticRegression`` per partition in a Python loop. :class:`LinearFamily` instead fits all
m partition models of a round together:

* each model is a ridge-regularised least-squares classifier on one-hot labels with an unpenalised
  intercept (predict the class with the largest score). On the benchmark data its held-out predictions agree
  with logistic regression on ~97-98 % of rows (see ``benchmarks/README.md``);
* the statistics a model needs - ``[x, 1, onehot(y)]ᵀ[x, 1, onehot(y)]`` - are sums over rows, so they are
  computed once per *block* of rows and a partition's statistics are the sum over its blocks (one matrix
  product for a group of partitions). Blocks persist for the whole run: when rows are removed their
  contribution is subtracted (a rank-k downdate), so the Gram matrices are built once, not every round;
* the blocks are cut into a fixed number of *shards* (contiguous ranges of block ids, so random sets of rows;
  the count depends on the data and the family, never on where the run executes). A partition's Gram matrix
  is the sum of one partial product per shard, always added along the same balanced binary tree over the
  shard indices, column tile by column tile. Any grouping of shards - all of them in this process, or a few
  on each of any number of cluster workers (:mod:`aflite_core.engine.distributed`) - therefore gives the same bits;
* every held-out row is predicted by all m models in one matrix product.

Features are centred by their overall mean before the products (which leaves the fitted classifiers
unchanged, because the intercept is free, but keeps float32 sums well conditioned); X itself is never
copied, so a read-only memory-mapped X works.

The ridge systems are solved in :mod:`aflite_core.engine.ridge_solve`; any scikit-learn classifier as the family
is :class:`aflite_core.engine.sklearn_family.SklearnFamily`.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import gram_unfold, member_sums, piece_counts, tree_add
from ._blas import lower_inverse, warm_downdates
from ._jit import numba_module
from ._parallel import Deferred, background, map_ordered, n_workers
from .partitions import (
    PREDICT_CHUNK_BYTES,
    PartitionPlan,
    draw_block_plan,
    exact_plan,
    group_blocks,
    grouped_exact_plan,
    report_step,
)
from .ridge_solve import ridge_system, solve_ridge

# re-exported: the sharded machinery lived here before
from .shards import (  # noqa: F401
    DEFAULT_SHARDS,
    GRAM_CHUNK_BYTES,
    ShardedGrams,
    _Shard,
    shard_bounds,
    tree_cover,
    tree_sum,
)

__all__ = ["LinearFamily"]

#: a partition's training part is (about) this many blocks at the start of a run
BLOCKS_PER_PARTITION = 32
#: fewer blocks per partition than this and the family uses exact random subsets instead
MIN_BLOCKS_PER_PARTITION = 8
#: memory for the partition Gram matrices summed in one matrix product (fewer passes over the block Grams)
PARTITION_GROUP_BYTES = 512 * 2**20
#: the Gram sums of all m partitions (one triangle each, folded: see gram_folding.fold_grams) are formed in one pass
#: over the block stack when they fit this; above it, one pass per partition group (the same values). At the SNLI
#: shape (d = 1,024, m = 64) they take 135 MB: with the earlier 64 MB limit each round read the 846 MB block stack
#: from memory four times (~175 ms a pass on the 2-core VM, 29 s of a 124 s one-thread run)
ALL_PARTITIONS_BYTES = 192 * 2**20
#: threads from which the removals start the next round's preconditioner in a thread of its own (see
#: ``_LinearSession.remove``): on 16 cores it shortens each round; on the 2-core VM the extra thread made the mid
#: shape ~4 % slower on two threads (11.6-12.0 s against 11.1-11.3 s, three runs each, back to back)
EARLY_PRECONDITIONER_THREADS = 4
#: Gram matrices one solve piece takes when every partition's were summed in one pass: the pieces are solved in
#: parallel. A function of the shapes only (each system is solved by the same calls in any piece). At the SNLI shape
#: (D = 1,028) pieces of 4 partitions, 16 pieces for m = 64: in groups of 16 only 4 of 16 cores solved, for 8.3 s of
#: a 30.5 s run; at D ≤ 1,000 or so a piece is the whole group, as before
SOLVE_PIECE_BYTES = 20 * 2**20


def partition_group_size(n_partitions: int, D: int, preferred: int = 16) -> int:
    """Partitions fitted together: ``preferred``, fewer if their Grams exceed :data:`PARTITION_GROUP_BYTES`.

    A function of m, the system size and the family's setting only, so every backend groups partitions the
    same way (matrix products of different shapes can round differently).
    """
    return int(max(1, min(n_partitions, preferred, PARTITION_GROUP_BYTES // (4 * D * D))))


#: rows gathered at once when building or downdating Gram matrices
def _column_mean(X: NDArray[np.float32]) -> NDArray[np.float32]:
    """Column means of X: float64 sums of chunks of rows, added in chunk order (the chunks on the run's pool).

    Each chunk's sum is the same whichever thread computes it, so the mean's bits do not depend on the thread
    count; at the SNLI shape one thread took ~0.75 s of a 16-core run's ~21 s over X's 2 GB.
    """
    total = np.zeros(X.shape[1], dtype=np.float64)
    step = max(1, GRAM_CHUNK_BYTES // (4 * X.shape[1]))
    starts = range(0, X.shape[0], step)
    for part in map_ordered(lambda start: X[start : start + step].sum(axis=0, dtype=np.float64), starts):
        total += part
    return (total / X.shape[0]).astype(np.float32)


@dataclass(frozen=True)
class LinearFamily:
    """Fast linear classifier family: ridge least squares on one-hot labels, all m models batched.

    Parameters
    ----------
    alpha : float, default=1e-3
        Ridge strength relative to the average feature variance of the training part
        (``λ = alpha · trace(Σ) / d`` with Σ the centred Gram matrix), so the family behaves the same
        whatever the scale of the features. The intercept is never penalised.
    block_rows : int or None, default=None
        Rows per block. ``None`` picks ``ceil(t / 32)``, enlarged if the block Gram matrices would not fit
        the memory budget; 1 means exact random subsets (the paper's sampling, slower on large data).
    max_gram_bytes : int or None, default=None
        Memory budget for the cached block Gram matrices; ``None`` means the size of X (at least 256 MB).
    iterative : bool, default=True
        Solve the m ridge systems by batched preconditioned conjugate gradients (float32, relative residual
        1e-5; systems that do not converge are solved directly). False: direct Cholesky solves in float64.
    partition_group : int, default=16
        Partitions fitted together (one matrix product over the block Grams). Fixed, so every backend groups
        the same partitions and gets bit-identical models; smaller when Gram matrices are very large.
    shards : int or None, default=None
        Shards the blocks are cut into (``None``: :data:`DEFAULT_SHARDS`, fewer if there are fewer blocks). A
        Dask worker owns whole shards, so at most this many workers share the Gram work. Part of the run's
        arithmetic (partial sums are added shard by shard along a fixed tree): the same seed and shards give
        the same bits on any number of workers, another count of shards may differ in the last bits.

    Notes
    -----
    A partition's training part is a random union of blocks whose total size is within half a block of
    t; blocks are drawn once per run and shrink as rows are removed. Rows of one block are therefore
    always trained together; with 32 or more blocks per training part this does not change which rows
    are removed beyond the run-to-run noise of different seeds (``benchmarks/README.md``).
    """

    alpha: float = 1e-3
    block_rows: int | None = None
    max_gram_bytes: int | None = None
    iterative: bool = True
    partition_group: int = 16
    shards: int | None = None

    name = "linear"

    def spec(self) -> dict[str, Any]:
        """JSON-serialisable description of the family (recorded in results)."""
        params = {
            "alpha": self.alpha,
            "block_rows": self.block_rows,
            "max_gram_bytes": self.max_gram_bytes,
            "iterative": self.iterative,
            "partition_group": self.partition_group,
        }
        if self.shards is not None:  # recorded only when set, so the specs of earlier runs stay as they were
            params["shards"] = self.shards
        return {"family": "linear", "class": "aflite_core.models.LinearFamily", "params": params}

    def session(
        self,
        X,
        codes,
        n_classes: int,
        *,
        train_size: int,
        n_partitions: int,
        rng,
        layout: dict | None = None,
        groups: NDArray[np.int32] | None = None,
    ) -> _LinearSession:
        """Bind the family to one run's data (draws the persistent blocks from ``rng``, or takes ``layout``).

        ``groups``: a group code per row; blocks and training parts are then made of whole groups.
        """
        return _LinearSession(self, X, codes, n_classes, train_size, n_partitions, rng, layout=layout, groups=groups)


@dataclass
class _LinearWeights:
    """Fitted partition models as score *differences* to class 0, centring folded into the bias.

    For C classes only C-1 columns per model are needed to find the argmax (class 0 scores 0), and
    ``(x - μ)·w + b = x·w + (b - μ·w)`` lets X be used without a centred copy.
    """

    W: NDArray[np.float32]  # (d, C-1, p): w_c - w_0
    b: NDArray[np.float32]  # (C-1, p): (b_c - b_0) - μ·(w_c - w_0)
    n_classes: int

    def __post_init__(self) -> None:
        # C order, so that :meth:`select`'s flattened view is a view: the fits concatenate transposed pieces,
        # and a copy of all weights per scored block cost ~0.6 CPU s of a one-thread run at the mid shape
        self.W = np.ascontiguousarray(self.W)
        self.b = np.ascontiguousarray(self.b)

    @property
    def n_models(self) -> int:
        return int(self.W.shape[2])

    def select(self, models: NDArray[np.intp]) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Weights and biases of some models, flattened for one matrix product (columns: class-major).

        One ``np.take`` of whole columns of the flattened weights (about twice as fast as indexing the last
        axis and reshaping, which copies the same values in the same order).
        """
        d, k, p = self.W.shape
        cols = (np.arange(k, dtype=np.intp)[:, None] * p + np.asarray(models, dtype=np.intp)).ravel()
        return np.take(self.W.reshape(d, k * p), cols, axis=1), np.take(self.b.reshape(-1), cols)


#: rows of X gathered for one block's scores go into a buffer kept per thread while they fit this many bytes
GATHER_BUFFER_BYTES = 64 * 2**20
_GATHER = threading.local()


@functools.cache
def _compiled_gather() -> Callable | None:
    """The compiled, prefetching row gather (:mod:`._prefetch_kernels`), or None without numba (or if it fails)."""
    if numba_module() is None:
        return None
    try:
        from ._prefetch_kernels import gather

        probe = np.arange(6, dtype=np.float32).reshape(3, 2)
        out = np.empty((2, 2), dtype=np.float32)
        gather(probe, np.array([2, 0], dtype=np.intp), out)  # compiled (or loaded from numba's cache) here
        return gather if np.array_equal(out, probe[[2, 0]]) else None
    except Exception:  # pragma: no cover - an LLVM without the prefetch intrinsic: numpy's take instead
        return None


def gather_rows(X: NDArray, rows: NDArray[np.intp]) -> NDArray:
    """``X[rows]``, copied into this thread's reusable buffer (valid until the thread's next call).

    A fresh array per block costs page faults on every call (about half the gather's time at the mid shape).
    Rows of an in-memory C-ordered X are copied by a compiled loop that asks for the cache lines of the rows
    a few places ahead: a block's rows are scattered over X, and each 4 KB row (d = 1,024) is a new page the
    hardware prefetchers do not enter. At the SNLI shape on the 2-core VM a round's 400 blocks took 0.38 s
    this way against 0.66-0.71 s with ``np.take`` (0.46 s for the loop without the prefetches; a sequential copy
    of X takes 0.20 s). Values are copied, so the result is ``X[rows]``. Larger gathers get a fresh array.
    """
    n, d = len(rows), X.shape[1]
    if n * d * X.dtype.itemsize > GATHER_BUFFER_BYTES:
        return np.take(X, rows, axis=0)
    buf = getattr(_GATHER, "buf", None)
    if buf is None or buf.size < n * d or buf.dtype != X.dtype:
        size = n * d if buf is None or buf.dtype != X.dtype else max(n * d, 2 * buf.size)
        buf = _GATHER.buf = np.empty(min(size, GATHER_BUFFER_BYTES // X.dtype.itemsize), dtype=X.dtype)
    out = buf[: n * d].reshape(n, d)
    fast = _compiled_gather() if n and isinstance(X, np.ndarray) and X.ndim == 2 and X.flags.c_contiguous else None
    if fast is not None and rows.dtype == np.intp and 0 <= rows.min() and rows.max() < X.shape[0]:
        fast(np.asarray(X), rows, out)
    else:
        np.take(X, rows, axis=0, out=out)
    return out


def _predict_codes(scores: NDArray[np.float32], n_classes: int) -> NDArray[np.int8]:
    """Class codes from (rows, C-1, models) score differences to class 0; ties go to the lower class."""
    if n_classes == 2:
        return (scores[:, 0, :] > 0).view(np.int8)
    best = np.maximum(scores[:, 0, :], 0)
    idx = (scores[:, 0, :] > 0).view(np.int8).copy()
    for c in range(2, n_classes):
        sc = scores[:, c - 1, :]
        better = sc > best
        np.copyto(idx, np.int8(c), where=better)
        np.maximum(best, sc, out=best)
    return idx


class _LinearSession(ShardedGrams):
    """The linear family bound to one run: persistent blocks, their shards and the shards' Gram matrices."""

    def __init__(
        self,
        family: LinearFamily,
        X,
        codes,
        n_classes: int,
        train_size: int,
        n_partitions: int,
        rng,
        layout: dict | None = None,
        groups: NDArray[np.int32] | None = None,
    ) -> None:
        self.family = family
        self.groups = groups
        self.X = X
        self.codes = codes
        self.n_classes = n_classes
        self.train_size = train_size
        self.n_partitions = n_partitions
        n, d = X.shape
        self.d = d
        self.D = d + 1 + n_classes
        self.block_of_row: NDArray[np.int32] | None = None
        self.block_sizes: NDArray[np.int64] | None = None
        self.shards: dict[int, _Shard] = {}
        # (n_rows, preconditioner): the total Gram changes only in remove(), so the fits of one round share it
        self._precond_cache: tuple[int, NDArray[np.float32] | None] | None = None
        #: (rows, result function) of a preconditioner started by the removals, for the next fit
        self._precond_pending: tuple[int, Callable[[], NDArray[np.float32] | None]] | None = None
        if layout is not None:  # another process drew the blocks (a cluster worker): take them as they are
            self.mode, self.rows_per_block = layout["mode"], int(layout["rows_per_block"])
            self.mu = np.asarray(layout["mu"], dtype=np.float32) if layout.get("mu") is not None else _column_mean(X)
            if self.mode == "blocks":
                self.block_of_row = np.asarray(layout["block_of_row"], dtype=np.int32)
                self.block_sizes = np.bincount(self.block_of_row, minlength=int(layout["n_blocks"])).astype(np.int64)
            self._init_shards()
            return
        self.mu = _column_mean(X)
        self.mode, self.rows_per_block = self._choose_mode(n)
        if self.mode == "blocks":
            n_blocks = math.ceil(n / self.rows_per_block)
            if groups is not None:  # whole groups per block (fewer blocks when groups are large)
                block_of_row = group_blocks(groups, n_blocks, rng)
                n_blocks = int(block_of_row.max()) + 1
            else:
                perm = rng.permutation(n)
                block_of_row = np.empty(n, dtype=np.int32)
                block_of_row[perm] = (np.arange(n, dtype=np.int64) * n_blocks) // n
            self.block_of_row = block_of_row
            self.block_sizes = np.bincount(block_of_row, minlength=n_blocks).astype(np.int64)
        self._init_shards()

    def layout(self) -> dict:
        """The per-run block assignment and centring, to rebuild the same session elsewhere (see ``layout=``)."""
        return {
            "mode": self.mode,
            "rows_per_block": self.rows_per_block,
            "block_of_row": self.block_of_row,
            "n_blocks": 0 if self.block_sizes is None else len(self.block_sizes),
            "mu": self.mu,
        }

    # -- set-up -------------------------------------------------------------------------------------
    def _choose_mode(self, n: int) -> tuple[str, int]:
        fam = self.family
        t = self.train_size
        if fam.block_rows is not None:
            return ("exact", 1) if fam.block_rows <= 1 else ("blocks", int(fam.block_rows))
        rows = math.ceil(t / BLOCKS_PER_PARTITION)
        if rows < 2:
            return "exact", 1
        budget = fam.max_gram_bytes or max(256 * 2**20, self.X.nbytes)
        per_block = 4 * self.D * self.D
        n_blocks = math.ceil(n / rows)
        if n_blocks * per_block > budget:
            n_blocks = max(1, budget // per_block)
            rows = math.ceil(n / n_blocks)
        # blocks only pay off when summing block Grams is cheaper than building each partition's own
        if t / rows < MIN_BLOCKS_PER_PARTITION or math.ceil(n / rows) >= t:
            return "exact", 1
        return "blocks", rows

    def _take_pending(self, n_rows: int) -> Callable[[], NDArray[np.float32] | None] | None:
        """The result function of the preconditioner the removals started for ``n_rows`` rows, or None.

        Taken once; one started for another count is waited for and dropped (it must not write its cache entry
        while a later removal changes the totals it reads).
        """
        pending, self._precond_pending = self._precond_pending, None
        if pending is None:
            return None
        if pending[0] != n_rows:
            pending[1]()
            return None
        return pending[1]

    def _needs_preconditioner(self, n_rows: int) -> bool:
        """True when this round's preconditioner is still to be computed."""
        return self.family.iterative and (self._precond_cache is None or self._precond_cache[0] != n_rows)

    def _preconditioner(self, n_rows: int, total: NDArray[np.float64] | None = None) -> NDArray[np.float32] | None:
        """The PCG preconditioner of this round (see :func:`ridge_preconditioner`), cached per round.

        ``total``: the current set's Gram matrix when the caller has it (:meth:`_total` otherwise).
        """
        if not self.family.iterative:
            return None
        if self._precond_cache is not None and self._precond_cache[0] == n_rows:
            return self._precond_cache[1]
        M_inv = self.preconditioner_from_total(self._total() if total is None else total, n_rows)
        self._precond_cache = (n_rows, M_inv)
        return M_inv

    def preconditioner_from_total(self, total: NDArray[np.float64], n_rows: int) -> NDArray[np.float32] | None:
        """Inverse of the ridge system of the whole current set scaled to t rows (the PCG preconditioner).

        Stored explicitly so applying it is one matrix product (triangular solves with few right-hand
        sides run far below BLAS speed). None when the system is not positive definite.
        """
        scaled = (total * (self.train_size / max(n_rows, 1)))[None]
        A, *_ = ridge_system(scaled, self.d, self.family.alpha)
        try:
            L = np.linalg.cholesky(A[0])
        except np.linalg.LinAlgError:
            return None
        L_inv = lower_inverse(np.ascontiguousarray(L))  # scipy's solve_triangular(L, I), without the GIL
        return np.ascontiguousarray((L_inv.T @ L_inv).astype(np.float32))

    # -- FamilySession ------------------------------------------------------------------------------
    @property
    def fit_group(self) -> int:
        """Partitions fitted together (every backend groups them the same way)."""
        return partition_group_size(self.n_partitions, self.D, self.family.partition_group)

    @property
    def predict_chunk_rows(self) -> int:
        """Rows per prediction call."""
        # small chunks keep the (rows × d) slice and its (rows × m·C) scores in cache
        width = max(self.d, self.n_partitions * self.n_classes)
        return max(256, PREDICT_CHUNK_BYTES // (4 * width))

    def draw_plan(self, rows: NDArray[np.intp], rng) -> PartitionPlan:
        """Random unions of the persistent blocks (blocks mode) or exact random subsets (of whole groups)."""
        if self.mode == "exact":
            if self.groups is not None:
                return grouped_exact_plan(self.groups[rows], self.n_partitions, self.train_size, rng)
            return exact_plan(len(rows), self.n_partitions, self.train_size, rng)
        return draw_block_plan(self.block_sizes, self.block_of_row[rows], self.n_partitions, self.train_size, rng)

    def fit(self, rows: NDArray[np.intp], plan: PartitionPlan, partitions: Sequence[int], rng) -> _LinearWeights:
        """Solve the ridge systems of ``partitions`` (Gram matrices summed per group of partitions).

        Blocks mode sums every partition's Gram matrix in one pass over the block stack when they fit
        :data:`ALL_PARTITIONS_BYTES` (the products' entries are those of per-group passes), then solves the
        groups (then in pieces of :data:`SOLVE_PIECE_BYTES`); groups or pieces are solved in parallel on the run's
        thread pool, each system by the same calls as on one thread.
        """
        parts = np.asarray(list(partitions), dtype=np.intp)
        if self.mode == "blocks" and len(self.shards) < self.n_shards:
            self.prepare()
        # the round's preconditioner (LAPACK factorisations) runs beside the Gram sums' tiles; the shards' totals
        # it starts from are added first, in pieces on the pool
        precond_of = self._take_pending(len(rows))  # started by the last removals (see remove), or None
        if precond_of is None:
            total = self._total() if self.mode == "blocks" and self._needs_preconditioner(len(rows)) else None
            precond_of = background(lambda: self._preconditioner(len(rows), total) if self.mode == "blocks" else None)
        step = self.fit_group
        groups = [parts[g0 : g0 + step] for g0 in range(0, len(parts), step)]
        root = (0, self.n_shards)
        packed = None
        if self.mode == "blocks" and 4 * len(parts) * self.packed_size <= ALL_PARTITIONS_BYTES:
            packed = self.node_grams(root, plan.membership[parts], reuse=True)  # solved below, in this fit
        if packed is not None:  # every Gram matrix is summed: solve them in pieces, on every core
            step = int(max(1, min(step, SOLVE_PIECE_BYTES // (4 * self.D * self.D))))
            groups = [parts[g0 : g0 + step] for g0 in range(0, len(parts), step)]

        def solve(u: int):
            group = groups[u]
            if self.mode != "blocks":
                P = np.empty((len(group), self.D, self.D), dtype=np.float32)
                self._gram_of_groups([rows[plan.membership[j]] for j in group], P)
            elif packed is not None:
                P = self.unpack_grams(packed[u * step : u * step + len(group)])
            else:
                P = self.unpack_grams(self.node_grams(root, plan.membership[group]))
            # the systems are built (unfolded, centred) before the preconditioner is waited for: at 16 threads its
            # serial LAPACK calls outlast the Gram sums, and the pieces' first steps fill that wait
            return self.solve_grams(P, precond_of)

        solved = map_ordered(
            solve, range(len(groups)), report=lambda u, _: report_step(self, "fit", u * step, len(parts))
        )
        W = np.concatenate([w for w, _ in solved], axis=2).astype(np.float32)
        b = np.concatenate([bb for _, bb in solved], axis=1).astype(np.float32)
        return _LinearWeights(W, b, self.n_classes)

    def prepare(self) -> None:
        """Build every shard's Gram statistics now (:meth:`ShardedGrams.prepare`), loading the kernels beside them.

        numba is imported and the rounds' kernels loaded on the run's pool while the shards are built (the run's
        backend prepares its session as it opens it): on the thread driving the run, the import alone kept the pool
        idle for ~0.17 s of a 2-thread run at the mid shape (one thread: the same work, in turn).
        """
        if self.mode != "blocks" or len(self.shards) == self.n_shards:
            super().prepare()
            return
        warmed = background(self._warm_kernels)  # beside the shards' Gram matrices, on the run's pool
        super().prepare()
        warmed()

    def _warm_kernels(self) -> None:
        """Compile or load the numba kernels the rounds use (the tree's additions, the blocks' counts)."""
        member_sums.warm()
        warm_downdates()
        tree_add.warm(self.n_shards)
        piece_counts.warm(self.n_classes, self.codes)
        if gram_unfold.available():
            gram_unfold.unfold(np.zeros((1, 3, 1), dtype=np.float32), 2)
        _compiled_gather()

    def solve_grams(
        self, P: NDArray[np.float32], precond: NDArray[np.float32] | Callable[[], NDArray[np.float32] | None] | None
    ):
        """Weights (d, C-1, g) and biases (C-1, g) of g partitions from their Gram matrices ``P`` (overwritten).

        ``precond``: the round's preconditioner, or a function giving it (see :func:`.ridge_solve.solve_ridge`).
        """
        Wg, bg = solve_ridge(P, self.d, self.n_classes, self.family.alpha, precond)  # (g, d, C), (g, C) float64
        Wdiff = Wg[:, :, 1:] - Wg[:, :, :1]
        bdiff = bg[:, 1:] - bg[:, :1] - np.einsum("d,gdc->gc", self.mu.astype(np.float64), Wdiff)
        return Wdiff.transpose(1, 2, 0), bdiff.T

    def predict(self, fitted: _LinearWeights, X_rows, mask=None) -> NDArray[np.int8]:
        """Class codes predicted by every fitted model for every row: shape (n_rows, n_models)."""
        W, b = fitted.select(np.arange(fitted.n_models))
        scores = X_rows @ W
        scores += b
        return _predict_codes(scores.reshape(len(X_rows), fitted.n_classes - 1, fitted.n_models), fitted.n_classes)

    def score_block(self, fitted: _LinearWeights, block_rows: NDArray[np.intp], models: NDArray[np.intp]):
        """Correctness (rows × models, bool) of the models that held a block out on that block's rows.

        Predicting each block only with the models that held it out is about half the work of predicting
        every row with every model.
        """
        return self.block_predictions(fitted, block_rows, models) == self.codes[block_rows][:, None]

    def block_predictions(self, fitted: _LinearWeights, block_rows: NDArray[np.intp], models: NDArray[np.intp]):
        """Class codes (rows × models) the models that held a block out predict for that block's rows."""
        C = fitted.n_classes
        scores = self.block_scores(fitted, block_rows, models)
        return _predict_codes(scores.reshape(len(block_rows), C - 1, len(models)), C)

    def block_scores(self, fitted: _LinearWeights, block_rows: NDArray[np.intp], models: NDArray[np.intp]):
        """Score differences to class 0 (rows × (C-1)·models, class-major) of the models that held a block out."""
        W, b = fitted.select(models)
        scores = gather_rows(self.X, block_rows) @ W
        scores += b
        return scores

    def forget(self, rows: NDArray[np.intp]) -> None:
        """Bookkeeping of removed rows that every process holding the session keeps (block sizes)."""
        if self.mode == "blocks" and len(rows):
            self.block_sizes -= np.bincount(self.block_of_row[rows], minlength=len(self.block_sizes))

    def remove(self, rows: NDArray[np.intp]) -> None:
        """Forget removed rows and subtract them from their shards' Gram statistics."""
        rows = np.asarray(rows, dtype=np.intp)
        self.forget(rows)
        if not self.shards:
            return
        self._take_pending(-1)  # one never taken (a worker given its preconditioner) finishes before the totals change
        self._precond_cache = None
        totals_done = None
        if self.mode == "blocks" and n_workers() >= EARLY_PRECONDITIONER_THREADS and len(self.shards) == self.n_shards:
            n_next = int(self.block_sizes.sum())
            if self._needs_preconditioner(n_next):

                def totals_done(total: NDArray[np.float64]) -> None:
                    # the next round's preconditioner, from the downdated totals, in a thread of its own while the
                    # pool downdates the blocks' Grams: at 16 threads its serial LAPACK chain (~75 ms a round) was
                    # waited for by the solves; the same calls on the same totals, so the same bits
                    started = Deferred(lambda: self._preconditioner(n_next, total))
                    self._precond_pending = (n_next, started.result)

        self.remove_from_shards(rows, totals_done)
