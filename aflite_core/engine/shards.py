"""The linear families' sharded Gram statistics: block Grams, their shards, removals and partition sums.

Private machinery of :class:`aflite_core.engine.models.LinearFamily` (and the logistic family built on it), in a
module of its own. The arithmetic is fixed by the run (see :mod:`aflite_core.engine.models`): a partition's Gram
matrix is the sum of one partial product per shard (its blocks' Grams weighted by the partition's 0/1
membership), added along the balanced binary tree over the shard indices. Whatever computes a tree node - this
process on one thread or several, or a cluster worker - gets the same bits.

How that fixed arithmetic is carried out cheaply:

* **symmetric statistics, folded**: a block's Gram matrix ``ZᵀZ`` is exactly symmetric (BLAS computes one
  triangle and mirrors it), and so are sums and differences of such matrices. Each block keeps only the
  D·(D+1)/2 values of one triangle, *folded* into a (2k+1) × k matrix (k = ⌈D/2⌉, :func:`fold_grams`): the
  upper triangle of the top-left k × k corner, the bottom-right corner's triangle transposed below it, and the
  top-right k × k rectangle under both. The folded blocks are one contiguous run of values, so the partition
  sums are cut into column tiles of any width with no value computed twice, and the stack takes half the
  memory of square matrices. A removal subtracts ``ZᵀZ`` from the three parts in place with three fused
  BLAS calls (two ``?syrk`` and one ``?gemm`` with ``beta=1``): each value is the stored value minus the same
  sequential sum of products a single ``?syrk`` over the square forms (the products commute), for the
  segment lengths the fused calls are used for;
* **one pass over the stack**: where the shards' stacks are views of one array (a run's own process), each
  partition's shard sums add only its member blocks, and the tree after them, in one compiled pass
  (:mod:`aflite_core.engine.member_sums`: the bits of the 0/1 matrix products, with 8 % of their arithmetic at
  the SNLI shape). Elsewhere (a cluster worker's shards) the partial products of all the round's partitions are
  one matrix product per shard and column tile (a product's entries do not depend on how many rows or columns it
  has), tiles wide enough that a handful of calls cover the stack, and the tree is added in place tile by tile;
* **threads**: column tiles, shards and removals are independent, so they are spread over the run's thread
  pool (:mod:`aflite_core.engine._parallel`) and written to fixed places.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from . import member_sums, tree_add
from ._jit import numba_installed
from ._parallel import map_ordered, n_workers, split
from .gram_folding import (  # noqa: F401 - re-exported: the folding helpers lived here before
    _mirror_upper,
    fold_grams,
    folded_shape,
    pack_upper,
    unfold_grams,
    unpack_upper,
)
from .shard_removal import (  # noqa: F401 - re-exported: the removals lived here before
    FUSED_ROWS,
    GRAM_CHUNK_BYTES,
    ShardRemovals,
    _fused_downdate,
    _fused_folded_downdate,
    _Shard,
)

__all__ = [
    "DEFAULT_SHARDS",
    "GRAM_CHUNK_BYTES",
    "ShardedGrams",
    "fold_grams",
    "folded_shape",
    "pack_upper",
    "shard_bounds",
    "tree_cover",
    "tree_sum",
    "unfold_grams",
    "unpack_upper",
]

#: shards of the blocks (fewer if there are fewer blocks): the unit a cluster worker owns. Fixed per run, so
#: a run's result never depends on how many workers share the shards (more shards: more workers can share the
#: Gram work; ``LinearFamily(shards=...)`` changes it, and with it the run's floating-point result)
DEFAULT_SHARDS = 16
#: bytes of the partial products one tile of columns holds while the shard tree adds them (kept in cache)
TILE_BYTES = 2**21
#: bytes of a tile's n shard products when the compiled additions (:mod:`aflite_core.engine.tree_add`) add them:
#: at the mid shape (64 partitions, 16 shards) 256 columns; per 1,000 columns on the 2-core VM the products and
#: additions took 309 µs at 256 columns, 422 µs at 512 and 433 µs for numpy's tree at 768 (speed only: a
#: product's entries do not depend on how many columns it has)
LEAF_BYTES = 2**20
#: ... and at most this many columns (a speed setting only: on the shared 2-core VM at the mid shape a round's
#: Gram sums took ~75-80 ms with 512-768 columns and ~85-89 ms with the 1,638 the byte budget allows; OpenBLAS
#: multiplies these thin products at ~110 GFLOP/s up to ~1,300 columns and ~70 GFLOP/s from ~1,500)
TILE_COLUMNS = 768
#: bytes of the shard products of one run of consecutive tiles of equal width that the compiled path multiplies
#: and adds in one call each (:func:`aflite_core.engine.tree_add.tree_add` takes runs): the same products and
#: additions as tile by tile, in 2 calls per run instead of 2 per tile. On 16 threads at the SNLI shape the
#: ~4,100 calls per round made the GIL the Gram sums' bottleneck (8.1 s of a 30.5 s run, against 14.8 s on one
#: thread); on one thread the Gram sums of runs of 1-32 tiles took the same time within ±5 % (the 2-core VM, a
#: micro-benchmark at the SNLI shape; 14.8 s in a whole (c) run before and after)
RUN_BYTES = 2**23
#: the member blocks are added (:mod:`aflite_core.engine.member_sums`) while at most this share of the blocks are
#: members; above it the 0/1 products (the same bits). The adds' cost grows with the members, the products' does
#: not: as rows are removed, blocks shrink and a training part takes more of them (the mid shape ends at ~90 %).
#: One thread, 2-core VM, per round: mid shape 10 ms a quarter of the columns at 17 % members, 36 ms at ~90 %
#: (products ~90 ms a round); SNLI shape ~0.25 s at 8 % (products ~0.48 s)
MEMBER_SUMS_DENSITY = 0.25
#: rows of the shards' float64 totals added at once (:meth:`ShardedGrams.node_total`)
TOTAL_ROWS = 32


def shard_bounds(n_items: int, n_shards: int) -> NDArray[np.int64]:
    """Bounds of ``n_shards`` contiguous, nearly equal ranges of ``n_items`` (shard s: ``[b[s], b[s + 1])``)."""
    return (np.arange(n_shards + 1, dtype=np.int64) * n_items) // n_shards


def tree_sum(values: dict, lo: int, hi: int):
    """Sum of ``values[s]`` for s in [lo, hi) along the fixed balanced binary tree over shard indices.

    Node (lo, hi) is ``node(lo, mid) + node(mid, hi)`` with ``mid = (lo + hi) // 2``; the tree of a run is that of
    (0, n_shards), so a subtree computed anywhere gives the bits it gives inside the whole sum. ``values`` may
    hold whole nodes' values (``(lo, hi)`` keys) where those were computed elsewhere.
    """
    if (lo, hi) in values:
        return values[(lo, hi)]
    if hi - lo == 1:
        return values[lo]
    mid = (lo + hi) // 2
    return tree_sum(values, lo, mid) + tree_sum(values, mid, hi)


def tree_cover(lo: int, hi: int, node: tuple[int, int]) -> list[tuple[int, int]]:
    """The largest nodes of the shard tree below ``node`` that lie inside [lo, hi), in shard order."""
    a, b = node
    if b <= lo or a >= hi:
        return []
    if lo <= a and b <= hi:
        return [node]
    mid = (a + b) // 2
    return tree_cover(lo, hi, (a, mid)) + tree_cover(lo, hi, (mid, b))


def _tree_depth(n: int) -> int:
    return 0 if n <= 1 else 1 + _tree_depth(n - n // 2)


def _tree_tile(
    parts: list, leaves: list, buf: NDArray[np.float32], a: int, b: int, level: int, out: NDArray | None = None
) -> None:
    """Tree node (a, b) (indices into ``parts``) of one column tile into ``buf[level]``, added in place.

    ``node(a, b) = node(a, mid) + node(mid, b)`` as in :func:`tree_sum`; the right child uses the levels below.
    With ``out`` the node's value goes there instead (the last addition writes it: no copy afterwards).
    """
    if b - a == 1:
        np.matmul(parts[a], leaves[a], out=buf[level] if out is None else out)
        return
    mid = (a + b) // 2
    _tree_tile(parts, leaves, buf, a, mid, level)
    _tree_tile(parts, leaves, buf, mid, b, level + 1)
    np.add(buf[level], buf[level + 1], out=buf[level] if out is None else out)


def _column_tiles(n_cols: int, width: int) -> list[tuple[int, int]]:
    """[c0, c1) ranges of nearly equal widths (at most ``width``, at least 2) covering ``n_cols`` columns.

    Never a single column: numpy multiplies by one column with a matrix-vector routine, which rounds
    differently from the matrix product every other tile uses.
    """
    n_tiles = max(1, min(-(-n_cols // max(width, 2)), n_cols // 2))
    bounds = [(i * n_cols) // n_tiles for i in range(n_tiles + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(n_tiles)]


_UNPACKED = threading.local()
_GRAMS = threading.local()
_LEAVES = threading.local()
_SQUARE = threading.local()


def _kept(store: threading.local, size: int, dtype=np.float32) -> NDArray:
    """The first ``size`` entries of a flat buffer ``store`` keeps for this thread (grown when too small).

    Valid until this thread's next call with the same ``store``: fresh arrays of megabytes every call cost page
    faults (the round's Gram sums, the unfolded matrices, the shard products of a run of tiles).
    """
    buf = getattr(store, "buf", None)
    if buf is None or buf.size < size or buf.dtype != dtype:
        buf = store.buf = np.empty(size, dtype=dtype)
    return buf[:size]


class ShardedGrams(ShardRemovals):
    """Mixin of the linear session: shards of its persistent blocks and their Gram statistics.

    Expects ``X``, ``codes``, ``mu``, ``d``, ``D``, ``family``, ``mode``, ``block_of_row``, ``block_sizes`` and
    ``shards`` (a dict) on the session.
    """

    def _init_shards(self) -> None:
        """Cut the blocks (exact mode: the rows) into the run's shards: contiguous ranges of ids."""
        n = self.X.shape[0]
        wanted = self.family.shards or DEFAULT_SHARDS
        if self.mode == "blocks":
            n_blocks = len(self.block_sizes)
            self.n_shards = int(max(1, min(wanted, n_blocks)))
            self.shard_block_bounds = shard_bounds(n_blocks, self.n_shards)
            of_block = np.repeat(np.arange(self.n_shards, dtype=np.int32), np.diff(self.shard_block_bounds))
            self.shard_of_row = of_block[self.block_of_row]
        else:
            self.n_shards = int(max(1, min(wanted, n)))
            self.shard_block_bounds = None
            self.shard_of_row = np.repeat(
                np.arange(self.n_shards, dtype=np.int32), np.diff(shard_bounds(n, self.n_shards))
            )

    @property
    def uses_stack(self) -> bool:
        """True when the fits sum block Gram matrices (blocks mode of the ridge classifier)."""
        return self.mode == "blocks"

    @property
    def uses_total(self) -> bool:
        """True when the fits need the Gram matrix of the whole current set (their preconditioner)."""
        return self.mode == "blocks" and self.family.iterative

    @property
    def packed_size(self) -> int:
        """Values of one folded Gram matrix (:func:`fold_grams`): ``D·(D+1)/2``, a little more for odd D."""
        rows, k = folded_shape(self.D)
        return rows * k

    def _z(self, rows: NDArray[np.intp]) -> NDArray[np.float32]:
        """[x - μ, 1, onehot(y)] for ``rows``."""
        d = self.d
        Z = np.zeros((len(rows), self.D), dtype=np.float32)
        np.subtract(self.X[rows], self.mu, out=Z[:, :d])
        Z[:, d] = 1.0
        Z[np.arange(len(rows)), d + 1 + self.codes[rows]] = 1.0
        return Z

    def _gram_of_groups(self, groups: Sequence[NDArray[np.intp]], out: NDArray[np.float32]) -> None:
        """out[i] = Zᵀ Z over the rows of ``groups[i]`` (rows gathered in bounded chunks)."""
        chunk = max(1, GRAM_CHUNK_BYTES // (4 * self.D))
        for i, rows in enumerate(groups):
            out[i] = 0.0
            for start in range(0, len(rows), chunk):
                Z = self._z(np.sort(rows[start : start + chunk]))
                out[i] += Z.T @ Z

    def block_stack(
        self, groups: Sequence[NDArray[np.intp]], out: NDArray[np.float32] | None = None
    ) -> tuple[NDArray[np.float32], NDArray[np.float64]]:
        """Folded Gram matrices (len(groups), 2k+1, k) of the blocks' rows ``groups`` and their float64 sum.

        ``out``, if given, receives the folded matrices (and is returned). One block's square matrix at a time: a
        shard's (25 × 4 MB at the SNLI shape) held by each of 16 threads made the run's peak 2.35-2.49× the features
        on 16 cores. The float64 sum adds the blocks in order, as ``sum(axis=0, dtype=float64)`` over all of them
        did (the same bits).
        """
        rows, k = folded_shape(self.D)
        folded = np.empty((len(groups), rows, k), dtype=np.float32) if out is None else out
        total = np.zeros((self.D, self.D), dtype=np.float64)
        square = _kept(_SQUARE, self.D * self.D).reshape(1, self.D, self.D)
        for i, block in enumerate(groups):
            self._gram_of_groups([block], square)
            fold_grams(square, out=folded[i : i + 1])
            total += square[0]
        return folded, total

    # -- shards -------------------------------------------------------------------------------------
    def shard(self, index: int) -> _Shard:
        """Shard ``index``, built on first use from all its rows (removals are applied to it afterwards)."""
        sh = self.shards.get(index)
        if sh is None:
            sh = self._new_shard(index)
            self.shards[index] = sh
        return sh

    def _new_shard(self, index: int, stack_out: NDArray[np.float32] | None = None) -> _Shard:
        rows = np.flatnonzero(self.shard_of_row == index)
        blocks = (0, 0)
        if self.shard_block_bounds is not None:
            blocks = (int(self.shard_block_bounds[index]), int(self.shard_block_bounds[index + 1]))
        sh = _Shard(index=index, rows=rows, blocks=blocks)
        if self.uses_stack:
            lo, hi = sh.blocks
            block = self.block_of_row[sh.rows] - lo
            order = np.argsort(block, kind="stable")
            cuts = np.cumsum(np.bincount(block, minlength=hi - lo))[:-1]
            sh.stack, sh.total = self.block_stack(np.split(sh.rows[order], cuts), out=stack_out)
        elif self.uses_total:
            out = np.empty((1, self.D, self.D), dtype=np.float32)
            self._gram_of_groups([sh.rows], out)
            sh.total = out[0].astype(np.float64)
        return sh

    def node_grams(self, node: tuple[int, int], member: NDArray[np.bool_], reuse: bool = False) -> NDArray[np.float32]:
        """Partial Gram matrices of the partitions ``member`` (g, n_blocks) over the shards of ``node``.

        Returns them folded (:func:`fold_grams`), shape (g, (2k+1)·k) (:func:`unfold_grams` gives the matrices).
        Each shard's partial sum added along the shard tree: the value of the tree node ``node``, bit for bit
        whichever process computes it (all its shards must be built and up to date). The partial sums are the
        member blocks added in order (:mod:`.member_sums`) where the shards' stacks are views of one array, else one
        matrix product per shard and column tile (the same bits).
        Column tiles run on the run's thread pool. ``reuse=True`` writes them into a buffer kept per thread
        (valid until this thread's next such call: a round's fit, which solves them at once; a fresh array every
        round cost page faults, ~135 MB at the SNLI shape).
        """
        lo, hi = node
        g = member.shape[0]
        size = self.packed_size
        if reuse:
            out = _kept(_GRAMS, g * size).reshape(g, size)
        else:
            out = np.empty((g, size), dtype=np.float32)
        stack = self._node_stack(node)
        if stack is not None:
            bounds = self.shard_block_bounds[lo : hi + 1]
            members = member[:, bounds[0] : bounds[-1]]  # the node's blocks, as the rows of ``stack``
            if members.mean() <= MEMBER_SUMS_DENSITY:  # add the member blocks, column chunks on the pool
                ptr, blocks = member_sums.member_lists(members, bounds - bounds[0])
                step = member_sums.CHUNK * max(1, -(-size // (member_sums.CHUNK * 4 * n_workers())))
                map_ordered(
                    lambda c0: member_sums.sums(stack, ptr, blocks, out, c0, min(c0 + step, size)),
                    range(0, size, step),
                )
                return out
        A = member.astype(np.float32)
        parts, flats = [], []
        for s in range(lo, hi):
            sh = self.shards[s]
            b0, b1 = sh.blocks
            parts.append(np.ascontiguousarray(A[:, b0:b1]))
            flats.append(sh.stack.reshape(b1 - b0, -1))
        n = hi - lo
        compiled = n >= 2 and tree_add.available()
        counts = np.diff(self.shard_block_bounds[lo : hi + 1])
        batched = compiled and stack is not None and bool(np.all(counts == counts[0]))
        if batched:  # the shards' stacks as one (n, blocks, size) view: a run's n · T products in one call
            stacked = stack.reshape(n, int(counts[0]), size)
            A4 = np.stack(parts)[:, None]  # (n, 1, g, blocks)
        # the compiled additions keep every shard's product of a tile (n leaves); numpy's keep one per level
        levels = n if compiled else _tree_depth(n) + 1
        budget = LEAF_BYTES if compiled else TILE_BYTES
        tiles = _column_tiles(size, min(TILE_COLUMNS, int(budget // (4 * max(g, 1) * levels))))
        width = max(c1 - c0 for c0, c1 in tiles)
        longest = max(1, RUN_BYTES // (4 * levels * max(g, 1) * width)) if compiled else 1

        def runs(todo: range) -> list[tuple[int, int, int]]:
            """(c0, tiles, width) of the runs of consecutive tiles of equal width in ``todo``, at most ``longest``."""
            found, i, todo = [], 0, list(todo)
            while i < len(todo):
                c0, c1 = tiles[todo[i]]
                j = i + 1
                while j < len(todo) and j - i < longest and tiles[todo[j]][1] - tiles[todo[j]][0] == c1 - c0:
                    j += 1
                found.append((c0, j - i, c1 - c0))
                i = j
            return found

        def run(todo: range) -> None:
            if not compiled:
                space = np.empty(levels * g * width, dtype=np.float32)
                for c0, c1 in (tiles[i] for i in todo):
                    # contiguous buffers for this tile's width: numpy adds strided 2-D views about 4x slower
                    buf = space[: levels * g * (c1 - c0)].reshape(levels, g, c1 - c0)
                    _tree_tile(parts, [f[:, c0:c1] for f in flats], buf, 0, n, 0, out[:, c0:c1])
                return
            space = _kept(_LEAVES, levels * g * width * longest)
            for c0, n_tiles, w in runs(todo):
                # the n products of each tile of the run, then one GIL-free call for the additions (same bits)
                buf = space[: n * n_tiles * g * w].reshape(n, n_tiles, g, w)
                if batched:  # numpy multiplies the n · T pairs with the same sgemm calls as tile by tile (one call
                    # holding the GIL once: per shard, 16 calls per run made it the bottleneck on 16 threads)
                    span = stacked[:, :, c0 : c0 + n_tiles * w]
                    np.matmul(A4, span.reshape(n, span.shape[1], n_tiles, w).transpose(0, 2, 1, 3), out=buf)
                else:
                    for s in range(n):  # numpy multiplies the T tiles with the same sgemm calls as tile by tile
                        span = flats[s][:, c0 : c0 + n_tiles * w]
                        np.matmul(parts[s], span.reshape(span.shape[0], n_tiles, w).transpose(1, 0, 2), out=buf[s])
                tree_add.tree_add(buf, out, c0)

        map_ordered(run, split(len(tiles), 4 * n_workers()) if n_workers() > 1 else [range(len(tiles))])
        return out

    def unpack_grams(self, packed: NDArray[np.float32]) -> NDArray[np.float32]:
        """Gram matrices (g, D, D) from :meth:`node_grams`' folded ones (g, (2k+1)·k).

        Written into a buffer kept per thread: valid until this thread's next call (the fits solve them at once).
        """
        g, D = len(packed), self.D
        # kept per thread: a fresh (g, D, D) array every group cost page faults (~60 MB at the SNLI shape)
        return unfold_grams(packed, D, _kept(_UNPACKED, g * D * D, packed.dtype).reshape(g, D, D))

    def node_total(self, node: tuple[int, int]) -> NDArray[np.float64]:
        """Gram matrix of the current rows of the shards of ``node`` (float64, summed along the shard tree).

        Added in pieces of :data:`TOTAL_ROWS` rows on the run's pool: the same additions of the same entries (the
        tree is elementwise), a few hundred kilobytes at a time instead of 15 fresh 8 MB arrays at d = 1,024
        (~19 ms a round on one thread, on the preconditioner's path to the solves).
        """
        lo, hi = node
        if hi - lo == 1:
            return self.shards[lo].total
        first = self.shards[lo].total
        out = np.empty(first.shape, dtype=first.dtype)

        def piece(r: range) -> None:
            out[r.start : r.stop] = tree_sum({s: self.shards[s].total[r.start : r.stop] for s in range(lo, hi)}, lo, hi)

        map_ordered(piece, [range(r0, min(r0 + TOTAL_ROWS, len(out))) for r0 in range(0, len(out), TOTAL_ROWS)])
        return out

    def prepare(self) -> None:
        """Build every shard's Gram statistics now, before any removal (shards in parallel on the run's pool).

        Replaying removals on resume, or on another worker, then repeats exactly the same floating-point
        operations as the original run.
        """
        if self.uses_stack or self.uses_total:
            todo = [s for s in range(self.n_shards) if s not in self.shards]
            base = self._stack_base(todo)
            bounds = self.shard_block_bounds
            build = self._new_shard if base is None else (lambda s: self._new_shard(s, base[bounds[s] : bounds[s + 1]]))
            for s, sh in zip(todo, map_ordered(build, todo)):
                self.shards[s] = sh

    def _stack_base(self, todo: list[int]) -> NDArray[np.float32] | None:
        """One array (blocks, 2k+1, k) for all the shards' stacks, or None.

        Only where every shard is built here at once: the shards' stacks are then its consecutive views, and
        :meth:`node_grams` adds the member blocks of any node in one compiled pass (:mod:`.member_sums`).
        """
        # numba_installed, not member_sums.available: importing numba here kept the pool idle for ~0.17 s while
        # this thread imported it; the run's first fit imports it on the pool beside these shards (_warm_kernels),
        # and without it (:meth:`_node_stack` asks) the views of one array are summed by the products
        if not self.uses_stack or len(todo) != self.n_shards or not numba_installed():
            return None
        rows, k = folded_shape(self.D)
        return np.empty((int(self.shard_block_bounds[-1]), rows, k), dtype=np.float32)

    def _node_stack(self, node: tuple[int, int]) -> NDArray[np.float32] | None:
        """The folded block Grams of the shards of ``node`` as one (blocks, (2k+1)·k) view, or None.

        Only where those shards' stacks are consecutive views of one array (:meth:`prepare`) and numba is there.
        """
        lo, hi = node
        first = self.shards[lo].stack
        base = first.base
        if base is None or not member_sums.available():
            return None
        row_bytes = first.strides[0]
        start = self.shard_block_bounds[lo]
        for s in range(lo, hi):
            st = self.shards[s].stack
            b0 = self.shard_block_bounds[s]
            if st.base is not base or st.ctypes.data != base.ctypes.data + b0 * row_bytes or not st.flags.c_contiguous:
                return None
        stop = self.shard_block_bounds[hi]
        return base.reshape(base.shape[0], -1)[start:stop]

    def _total(self) -> NDArray[np.float64]:
        if len(self.shards) < self.n_shards:
            self.prepare()
        return self.node_total((0, self.n_shards))
