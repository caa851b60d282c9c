"""Removing rows from the shards' Gram statistics: the fused downdates and the removal methods of the shards.

A mixin of :class:`aflite_core.engine.shards.ShardedGrams`, in a module of its own (``shards.py`` had grown past
600 lines). A removal subtracts the removed rows' ``ZᵀZ`` from each shard's float64 total (through the removed
rows' float32 Gram matrix, accumulated segment by segment: a segment is the rows of one block removed in a round)
and from each block's folded Gram matrix, with the fused BLAS calls below. Where numba is there, each of the two
loops over a shard's segments is one GIL-free call (:func:`aflite_core.engine._blas.total_downdates` and
:func:`~aflite_core.engine._blas.folded_downdates`) making the same calls in the same order: the same bits, without
taking the GIL again ~1,600 times a round at the SNLI shape.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._blas import compiled_downdates, folded_downdates, sgemm_nt_into, ssyrk_into, total_downdates
from ._parallel import map_ordered
from .gram_folding import _mirror_upper, fold_grams

__all__ = ["FUSED_ROWS", "GRAM_CHUNK_BYTES", "ShardRemovals"]

#: rows gathered at once when building or downdating Gram matrices
GRAM_CHUNK_BYTES = 32 * 2**20

#: removal segments (rows of one block removed in one round) up to this length use the fused ``?syrk`` update;
#: longer ones (rare) form ``ZᵀZ`` and subtract it, as the fused call would split its sum beyond BLAS's K block
FUSED_ROWS = 256


def _fused_folded_downdate(Z1: NDArray[np.float32], Z2: NDArray[np.float32], F: NDArray[np.float32]) -> None:
    """F -= ZᵀZ on a folded Gram matrix F (2k+1, k) in place, Z = [Z1, Z2] cut at column k (both (rows, k)).

    Two ``ssyrk`` (the corners' triangles) and one ``sgemm`` (the rectangle), each with ``beta=1`` and called
    without the GIL (:mod:`aflite_core.engine._blas`): a value
    becomes ``F - Σ z_i z_j``, the same sequential sum of products one ``ssyrk`` over the square forms (see
    :func:`_fused_downdate`), while Z has at most :data:`FUSED_ROWS` rows.
    """
    k = F.shape[1]
    ssyrk_into(-1.0, Z1, F[:k], upper_of_c=True)  # top-left: upper triangle
    ssyrk_into(-1.0, Z2, F[1 : k + 1], upper_of_c=False)  # bottom-right, transposed
    sgemm_nt_into(-1.0, Z2, Z1, F[k + 1 :])  # top-right rectangle


def _fused_downdate(Z: NDArray[np.float32], C: NDArray[np.float32], sign: float) -> None:
    """C += sign · ZᵀZ on C's upper triangle, in place (one ``ssyrk``; C is C-ordered, its transpose F-ordered).

    OpenBLAS forms the products of a ``ssyrk`` call exactly as for ``Z.T @ Z`` (which numpy computes with the
    same routine) and adds them to C once, so the upper triangle equals ``C + sign * (Z.T @ Z)`` bit for bit
    while Z has at most :data:`FUSED_ROWS` rows.
    """
    ssyrk_into(sign, Z, C, upper_of_c=True)


@dataclass
class _Shard:
    """One shard of a run: its current rows and the Gram statistics of its blocks (or rows).

    ``stack`` (blocks whose Grams the ridge fits sum; None where only the total is needed) holds the shard's
    blocks' Gram matrices, folded (:func:`.gram_folding.fold_grams`: shape (blocks, 2k+1, k)), ``total``
    (float64) the Gram matrix of all its current rows. ``applied`` counts the rounds of removals already
    subtracted (a cluster worker replays the missing ones in order).
    """

    index: int
    rows: NDArray[np.intp]
    blocks: tuple[int, int]
    stack: NDArray[np.float32] | None = None
    total: NDArray[np.float64] | None = None
    applied: int = 0


class ShardRemovals:
    """Removals from the shards of a :class:`aflite_core.engine.shards.ShardedGrams` (its mixin)."""

    D: int
    n_shards: int
    shards: dict
    shard_of_row: NDArray
    block_of_row: NDArray

    def remove_from_shard(
        self, sh: _Shard, rows: NDArray[np.intp], totals_done: Callable[[], None] | None = None
    ) -> None:
        """Subtract ``rows`` (all in shard ``sh``) from its Gram statistics and its current rows.

        The shard's total is downdated before its blocks' Grams, and ``totals_done()`` (if given) is called in
        between: the next round's preconditioner needs only the totals (:meth:`remove_from_shards`). The two are
        separate arrays, so the order changes no value.
        """
        sh.applied += 1
        if len(rows) == 0:
            if totals_done is not None:
                totals_done()
            return
        rows = np.asarray(rows, dtype=np.intp)
        sh.rows = sh.rows[~np.isin(sh.rows, rows, assume_unique=True)]
        if sh.stack is None:
            if sh.total is not None:
                Z = self._z(np.sort(rows))
                sh.total -= (Z.T @ Z).astype(np.float64)
            if totals_done is not None:
                totals_done()
            return
        lo, D = sh.blocks[0], self.D
        k = sh.stack.shape[2]
        blocks = self.block_of_row[rows]
        order = np.lexsort((rows, blocks))  # by block, each block's rows sorted: few gathers for the shard
        rows_sorted, blocks_sorted = rows[order], blocks[order]
        cuts = np.r_[0, np.flatnonzero(np.diff(blocks_sorted)) + 1, len(rows)]
        removed = np.zeros((D, D), dtype=np.float32)
        step = max(1, GRAM_CHUNK_BYTES // (4 * D))  # rows gathered at once (whole blocks)
        chunks, start = [], 0
        while start < len(cuts) - 1:
            end = start + 1
            while end < len(cuts) - 1 and cuts[end + 1] - cuts[start] <= step:
                end += 1
            Z = self._z(rows_sorted[cuts[start] : cuts[end]])
            seg_lo, seg_hi = cuts[start:end] - cuts[start], cuts[start + 1 : end + 1] - cuts[start]
            segments = list(zip(seg_lo, seg_hi))
            long = {}  # segments too long for the fused calls: ZᵀZ formed once, for both updates
            compiled = compiled_downdates() and bool(np.all(seg_hi - seg_lo <= FUSED_ROWS))
            if compiled:  # the loop below in one GIL-free call: the same BLAS calls in the same order
                total_downdates(Z, seg_lo, seg_hi, removed)
            else:
                for a, b in segments:  # the removed rows' Gram matrix, segment by segment
                    if b - a <= FUSED_ROWS:
                        _fused_downdate(Z[a:b], removed, 1.0)
                    else:
                        long[a] = Z[a:b].T @ Z[a:b]
                        removed += long[a]
            chunks.append((Z, segments, long, cuts[start], (seg_lo, seg_hi) if compiled else None))
            start = end
        _mirror_upper(removed)
        sh.total -= removed
        if totals_done is not None:
            totals_done()
        for Z, segments, long, first, looped in chunks:  # then the blocks' folded Grams
            Z1 = np.ascontiguousarray(Z[:, :k])
            Z2 = np.zeros((len(Z), k), dtype=np.float32)
            Z2[:, : D - k] = Z[:, k:]
            if looped is not None and sh.stack.flags.c_contiguous:
                seg_lo, seg_hi = looped
                folded_downdates(Z1, Z2, seg_lo, seg_hi, blocks_sorted[first + seg_lo] - lo, sh.stack)
                continue
            for a, b in segments:
                F = sh.stack[blocks_sorted[first + a] - lo]
                if a in long:
                    F -= fold_grams(long[a][None])[0]
                else:
                    _fused_folded_downdate(Z1[a:b], Z2[a:b], F)

    def remove_from_shards(
        self, rows: NDArray[np.intp], totals_done: Callable[[NDArray[np.float64]], None] | None = None
    ) -> None:
        """Subtract removed ``rows`` from every built shard (shards in parallel on the run's pool).

        ``totals_done(total)``, if given (every shard must be built), is called once every shard's total is
        downdated, with their sum along the shard tree (:meth:`node_total`'s value), while the blocks' Grams may
        still be downdated. The tree is added as the shards finish: a shard whose sibling node is ready adds the
        two (the same additions as :meth:`node_total`, so the same bits) and climbs on, so the sum is ready soon
        after the last total. It is called from a pool thread: it must only start work, never wait for the pool.
        """
        of = self.shard_of_row[rows]
        built = [self.shards[s] for s in range(self.n_shards) if s in self.shards]
        on_total: Callable[[_Shard], Callable[[], None] | None] = lambda sh: None  # noqa: E731
        if totals_done is not None:
            if len(built) != self.n_shards:
                raise ValueError("the totals' sum needs every shard")
            root = (0, self.n_shards)
            parent: dict[tuple[int, int], tuple[int, int]] = {}

            def walk(lo: int, hi: int) -> None:
                if hi - lo > 1:
                    mid = (lo + hi) // 2
                    parent[(lo, mid)] = parent[(mid, hi)] = (lo, hi)
                    walk(lo, mid)
                    walk(mid, hi)

            walk(*root)
            waiting: dict[tuple[int, int], tuple[tuple[int, int], NDArray[np.float64]]] = {}
            lock = threading.Lock()

            def climb(sh: _Shard) -> None:
                node, value = (sh.index, sh.index + 1), sh.total
                while node != root:
                    up = parent[node]
                    with lock:
                        other = waiting.pop(up, None)
                        if other is None:  # the sibling is not ready: whoever finishes it adds the two
                            waiting[up] = (node, value)
                            return
                    left, right = (value, other[1]) if node[0] < other[0][0] else (other[1], value)
                    value, node = left + right, up
                totals_done(value)

            on_total = lambda sh: lambda: climb(sh)  # noqa: E731
        map_ordered(lambda sh: self.remove_from_shard(sh, rows[of == sh.index], on_total(sh)), built)
