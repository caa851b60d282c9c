"""The linear families' sharded Gram statistics: block Grams, their shards, removals and partition sums.

Private machinery of :class:`aflite_core.engine.models.LinearFamily` (and the logistic family built on it), in a
module of its own. The arithmetic is fixed by the run (see :mod:`aflite_core.engine.models`): a partition's Gram
matrix is the sum of one partial product per shard (its blocks' Grams weighted by the partition's 0/1
membership), added along the balanced binary tree over the shard indices. Whatever computes a tree node - this
process on one thread or several, or a cluster worker - gets the same bits.

How that fixed arithmetic is carried out cheaply:

* **symmetric statistics, one triangle**: a block's Gram matrix ``ZᵀZ`` is exactly symmetric (BLAS computes
  one triangle and mirrors it), and so are sums and differences of such matrices. The partition sums are
  therefore formed for the upper triangles only (half the products and half the memory traffic), and a
  removal subtracts ``ZᵀZ`` from the upper triangle in one fused BLAS call (``?syrk`` with ``beta=1``, which
  rounds exactly as forming ``ZᵀZ`` and subtracting it, for the segment lengths it is used for); the lower
  triangles of the block stack are not kept up to date and never read;
* **one pass over the stack**: the partial products of all the round's partitions are one matrix product per
  shard and column tile (a product's entries do not depend on how many rows or columns it has), tiles wide
  enough that a handful of calls cover the stack, and the tree is added in place tile by tile;
* **threads**: column tiles, shards and removals are independent, so they are spread over the run's thread
  pool (:mod:`aflite_core.engine._parallel`) and written to fixed places.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._parallel import map_ordered, n_workers, split

__all__ = [
    "DEFAULT_SHARDS",
    "GRAM_CHUNK_BYTES",
    "ShardedGrams",
    "pack_upper",
    "shard_bounds",
    "tree_cover",
    "tree_sum",
    "unpack_upper",
]

#: rows gathered at once when building or downdating Gram matrices
GRAM_CHUNK_BYTES = 32 * 2**20
#: shards of the blocks (fewer if there are fewer blocks): the unit a cluster worker owns. Fixed per run, so
#: a run's result never depends on how many workers share the shards (more shards: more workers can share the
#: Gram work; ``LinearFamily(shards=...)`` changes it, and with it the run's floating-point result)
DEFAULT_SHARDS = 16
#: bytes of the partial products one tile of columns holds while the shard tree adds them (kept in cache)
TILE_BYTES = 2**21
#: at most this share of a column tile may be lower-triangle entries computed only to keep the tile in one piece
TILE_WASTE = 0.3
#: removal segments (rows of one block removed in one round) up to this length use the fused ``?syrk`` update;
#: longer ones (rare) form ``ZᵀZ`` and subtract it, as the fused call would split its sum beyond BLAS's K block
FUSED_ROWS = 256


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


def _tree_tile(parts: list, leaves: list, buf: NDArray[np.float32], a: int, b: int, level: int) -> None:
    """Tree node (a, b) (indices into ``parts``) of one column tile into ``buf[level]``, added in place.

    ``node(a, b) = node(a, mid) + node(mid, b)`` as in :func:`tree_sum`; the right child uses the levels below.
    """
    if b - a == 1:
        np.matmul(parts[a], leaves[a], out=buf[level])
        return
    mid = (a + b) // 2
    _tree_tile(parts, leaves, buf, a, mid, level)
    _tree_tile(parts, leaves, buf, mid, b, level + 1)
    np.add(buf[level], buf[level + 1], out=buf[level])


@functools.lru_cache(maxsize=8)
def _triangle(D: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Flat positions in a D×D matrix of its upper triangle (row-major) and of their mirror images."""
    r, c = np.triu_indices(D)
    return (r * D + c).astype(np.intp), (c * D + r).astype(np.intp)


def pack_upper(G: NDArray, D: int) -> NDArray:
    """Upper triangles (..., D·(D+1)/2) of symmetric matrices G (..., D, D), row by row."""
    upper, _ = _triangle(D)
    return G.reshape(*G.shape[:-2], D * D)[..., upper]


def unpack_upper(packed: NDArray, D: int) -> NDArray:
    """Full symmetric matrices (g, D, D) from their upper triangles (g, D·(D+1)/2)."""
    out = np.empty((packed.shape[0], D, D), dtype=packed.dtype)
    start = 0
    for r in range(D):  # row r's upper part, and its mirror image as column r (slices: no index arrays)
        row = packed[:, start : start + D - r]
        out[:, r, r:] = row
        out[:, r + 1 :, r] = row[:, 1:]
        start += D - r
    return out


def _mirror_upper(G: NDArray) -> None:
    """Copy the upper triangle of the square matrix G onto its lower triangle, in place."""
    il = np.tril_indices(G.shape[0], -1)
    G[il] = G.T[il]


@functools.lru_cache(maxsize=32)
def _row_tiles(D: int, max_width: int) -> tuple[tuple[int, int], ...]:
    """Row ranges [r0, r1) whose upper-triangle entries are computed as one contiguous range of flat columns.

    The range runs from (r0, r0) to (r1 - 1, D - 1), so it also holds the lower-triangle entries of rows r0 + 1
    .. r1 - 1; rows are added while the range stays within ``max_width`` columns and at most
    :data:`TILE_WASTE` of it is such entries. A function of the shapes only.
    """
    tiles, r0 = [], 0
    while r0 < D:
        r1 = r0 + 1
        while r1 < D:
            width = (r1 + 1 - r0) * D - r0
            waste = (r1 - r0) * r0 + (r1 - r0) * (r1 - r0 + 1) // 2
            if width > max_width or waste > TILE_WASTE * width:
                break
            r1 += 1
        tiles.append((r0, r1))
        r0 = r1
    return tuple(tiles)


def _fused_downdate(Z: NDArray[np.float32], C: NDArray[np.float32], sign: float) -> None:
    """C += sign · ZᵀZ on C's upper triangle, in place (one ``ssyrk``; C is C-ordered, its transpose F-ordered).

    OpenBLAS forms the products of a ``ssyrk`` call exactly as for ``Z.T @ Z`` (which numpy computes with the
    same routine) and adds them to C once, so the upper triangle equals ``C + sign * (Z.T @ Z)`` bit for bit
    while Z has at most :data:`FUSED_ROWS` rows.
    """
    from scipy.linalg.blas import ssyrk

    ssyrk(sign, Z.T, beta=1.0, c=C.T, trans=0, lower=1, overwrite_c=1)


@dataclass
class _Shard:
    """One shard of a run: its current rows and the Gram statistics of its blocks (or rows).

    ``stack`` (blocks whose Grams the ridge fits sum; None where only the total is needed) holds the shard's
    blocks' Gram matrices (their upper triangles are current; the lower ones are not read after the first
    removal), ``total`` (float64) the Gram matrix of all its current rows. ``applied`` counts the rounds of
    removals already subtracted (a cluster worker replays the missing ones in order).
    """

    index: int
    rows: NDArray[np.intp]
    blocks: tuple[int, int]
    stack: NDArray[np.float32] | None = None
    total: NDArray[np.float64] | None = None
    applied: int = 0


class ShardedGrams:
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
        """Values of one packed Gram matrix, ``D·(D+1)/2``."""
        return self.D * (self.D + 1) // 2

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

    # -- shards -------------------------------------------------------------------------------------
    def shard(self, index: int) -> _Shard:
        """Shard ``index``, built on first use from all its rows (removals are applied to it afterwards)."""
        sh = self.shards.get(index)
        if sh is None:
            sh = self._new_shard(index)
            self.shards[index] = sh
        return sh

    def _new_shard(self, index: int) -> _Shard:
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
            sh.stack = np.empty((hi - lo, self.D, self.D), dtype=np.float32)
            self._gram_of_groups(np.split(sh.rows[order], cuts), sh.stack)
            sh.total = sh.stack.sum(axis=0, dtype=np.float64)
        elif self.uses_total:
            out = np.empty((1, self.D, self.D), dtype=np.float32)
            self._gram_of_groups([sh.rows], out)
            sh.total = out[0].astype(np.float64)
        return sh

    def remove_from_shard(self, sh: _Shard, rows: NDArray[np.intp]) -> None:
        """Subtract ``rows`` (all in shard ``sh``) from its Gram statistics and its current rows."""
        sh.applied += 1
        if len(rows) == 0:
            return
        rows = np.asarray(rows, dtype=np.intp)
        sh.rows = sh.rows[~np.isin(sh.rows, rows, assume_unique=True)]
        if sh.stack is not None:
            lo, D = sh.blocks[0], self.D
            blocks = self.block_of_row[rows]
            order = np.lexsort((rows, blocks))  # by block, each block's rows sorted: few gathers for the shard
            rows_sorted, blocks_sorted = rows[order], blocks[order]
            cuts = np.r_[0, np.flatnonzero(np.diff(blocks_sorted)) + 1, len(rows)]
            removed = np.zeros((D, D), dtype=np.float32)
            step = max(1, GRAM_CHUNK_BYTES // (4 * D))  # rows gathered at once (whole blocks)
            start = 0
            while start < len(cuts) - 1:
                end = start + 1
                while end < len(cuts) - 1 and cuts[end + 1] - cuts[start] <= step:
                    end += 1
                Z = self._z(rows_sorted[cuts[start] : cuts[end]])
                for a, b in zip(cuts[start:end] - cuts[start], cuts[start + 1 : end + 1] - cuts[start]):
                    Zs, G = Z[a:b], sh.stack[blocks_sorted[cuts[start] + a] - lo]
                    if b - a <= FUSED_ROWS:
                        _fused_downdate(Zs, G, -1.0)
                        _fused_downdate(Zs, removed, 1.0)
                    else:
                        ZtZ = Zs.T @ Zs
                        G -= ZtZ
                        removed += ZtZ
                start = end
            _mirror_upper(removed)
            sh.total -= removed
        elif sh.total is not None:
            Z = self._z(np.sort(rows))
            sh.total -= (Z.T @ Z).astype(np.float64)

    def remove_from_shards(self, rows: NDArray[np.intp]) -> None:
        """Subtract removed ``rows`` from every built shard (shards in parallel on the run's pool)."""
        of = self.shard_of_row[rows]
        built = [self.shards[s] for s in range(self.n_shards) if s in self.shards]
        map_ordered(lambda sh: self.remove_from_shard(sh, rows[of == sh.index]), built)

    def node_grams(self, node: tuple[int, int], member: NDArray[np.bool_]) -> NDArray[np.float32]:
        """Partial Gram matrices of the partitions ``member`` (g, n_blocks) over the shards of ``node``.

        Returns their upper triangles, shape (g, D·(D+1)/2) (:func:`unpack_upper` gives the matrices). One
        matrix product per shard and column tile, added along the shard tree: the value of the tree node
        ``node``, bit for bit whichever process computes it (all its shards must be built and up to date).
        Column tiles run on the run's thread pool.
        """
        lo, hi = node
        g, D = member.shape[0], self.D
        A = member.astype(np.float32)
        parts, flats = [], []
        for s in range(lo, hi):
            sh = self.shards[s]
            b0, b1 = sh.blocks
            parts.append(np.ascontiguousarray(A[:, b0:b1]))
            flats.append(sh.stack.reshape(b1 - b0, D * D))
        out = np.empty((g, self.packed_size), dtype=np.float32)
        levels = _tree_depth(hi - lo) + 1
        width = int(max(2 * D, TILE_BYTES // (4 * max(g, 1) * levels)))
        tiles = _row_tiles(D, width)
        starts = np.r_[0, np.cumsum(D - np.arange(D))]  # where each row's upper part starts in ``out``

        def run(todo: range) -> None:
            buf = np.empty((levels, g, width), dtype=np.float32)
            for r0, r1 in (tiles[i] for i in todo):
                f0, f1 = r0 * D + r0, (r1 - 1) * D + D
                _tree_tile(parts, [f[:, f0:f1] for f in flats], buf[:, :, : f1 - f0], 0, hi - lo, 0)
                for r in range(r0, r1):
                    out[:, starts[r] : starts[r + 1]] = buf[0, :, r * D + r - f0 : r * D + D - f0]

        map_ordered(run, split(len(tiles), 4 * n_workers()) if n_workers() > 1 else [range(len(tiles))])
        return out

    def unpack_grams(self, packed: NDArray[np.float32]) -> NDArray[np.float32]:
        """Gram matrices (g, D, D) from :meth:`node_grams`' upper triangles (g, D·(D+1)/2)."""
        return unpack_upper(packed, self.D)

    def node_total(self, node: tuple[int, int]) -> NDArray[np.float64]:
        """Gram matrix of the current rows of the shards of ``node`` (float64, summed along the shard tree)."""
        return tree_sum({s: self.shards[s].total for s in range(*node)}, *node)

    def prepare(self) -> None:
        """Build every shard's Gram statistics now, before any removal (shards in parallel on the run's pool).

        Replaying removals on resume, or on another worker, then repeats exactly the same floating-point
        operations as the original run.
        """
        if self.uses_stack or self.uses_total:
            todo = [s for s in range(self.n_shards) if s not in self.shards]
            for s, sh in zip(todo, map_ordered(self._new_shard, todo)):
                self.shards[s] = sh

    def _total(self) -> NDArray[np.float64]:
        if len(self.shards) < self.n_shards:
            self.prepare()
        return self.node_total((0, self.n_shards))
