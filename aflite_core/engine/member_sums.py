"""The partitions' Gram sums over the block stack by adding their member blocks, in one compiled pass (numba).

A partition's Gram sum over a node of the shard tree (:meth:`aflite_core.engine.shards.ShardedGrams.node_grams`) is
the tree sum of one leaf per shard, the leaf being the 0/1 membership row times the shard's folded block Grams. As a
matrix product that multiplies every block by its weight: at the SNLI shape (400 blocks, 32 per partition) 12.5×
more multiply-adds than there are member blocks, ~27 GFLOP a round. OpenBLAS forms each entry of such a product as
one sequential sum from zero over the inner dimension (the blocks, fewer than its K block; beta = 0, alpha = 1):
a weight of 1 adds the block's value (``fma(1, g, s) = s + g``, rounded once), a weight of 0 adds zero, which leaves
every partial sum unchanged. :func:`sums` therefore adds the member blocks only, in block order from zero, and then
the shard tree with the additions of :mod:`aflite_core.engine.tree_add`: the same values, bit for bit
(``tests/test_member_sums.py`` checks it against the products and the tree).

The pass goes over the columns in chunks of :data:`CHUNK`: a chunk of every block stays in cache while all the
partitions' leaves are added from it, so the block stack is read from memory once a round. Without numba the
caller keeps its matrix products.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from ._jit import compile_nogil, numba_module

__all__ = ["available", "member_lists", "sums", "tree_schedule"]

#: columns added at once: the chunk of all the blocks (400 × 1 KB at the SNLI shape) stays in a core's L2 cache
#: while every partition's leaves (16 shards × 1 KB) stay in L1
CHUNK = 256


@functools.cache
def tree_schedule(n: int) -> NDArray[np.int64]:
    """The additions of the shard tree over n leaves, in an order that computes each operand first.

    Row ``(a, mid)`` means ``slot[a] = slot[a] + slot[mid]``: node ``(a, b) = node(a, mid) + node(mid, b)`` with
    ``mid = (a + b) // 2`` (:func:`aflite_core.engine.shards.tree_sum`), each node kept in the slot of its first
    leaf. After the last row, slot 0 holds node ``(0, n)``.
    """
    ops: list[tuple[int, int]] = []

    def visit(a: int, b: int) -> None:
        if b - a > 1:
            mid = (a + b) // 2
            visit(a, mid)
            visit(mid, b)
            ops.append((a, mid))

    visit(0, n)
    schedule = np.array(ops, dtype=np.int64).reshape(-1, 2)
    schedule.flags.writeable = False  # cached: shared by every call
    return schedule


def member_lists(member: NDArray[np.bool_], bounds: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Each partition's member blocks, shard by shard: ``(ptr, blocks)`` for :func:`sums`.

    ``member`` (g, n_blocks) marks the blocks of each partition; shard s holds blocks ``[bounds[s], bounds[s+1])``
    (``bounds`` has n + 1 entries, block ids as ``member``'s columns). Partition r's blocks in shard s are
    ``blocks[ptr[s, r] : ptr[s, r + 1]]``, in increasing order.
    """
    g = member.shape[0]
    n = len(bounds) - 1
    r, b = np.nonzero(member[:, bounds[0] : bounds[-1]])  # row-major: by partition, then block
    b = b.astype(np.int64) + bounds[0]
    shard = np.searchsorted(bounds, b, side="right") - 1
    order = np.argsort(shard, kind="stable")  # by shard; within one, still by partition, then block
    counts = np.bincount(shard * g + r, minlength=n * g).reshape(n, g)
    ptr = np.zeros((n, g + 1), dtype=np.int64)
    ptr[:, 1:] = np.cumsum(counts, axis=1)
    ptr += np.r_[0, np.cumsum(counts.sum(axis=1))[:-1]][:, None]
    return ptr, b[order]


def _sums(stack, ptr, blocks, schedule, out, c_lo, c_hi, chunk):  # pragma: no cover - compiled
    n, g = ptr.shape[0], out.shape[0]
    leaf = np.empty((n, chunk), dtype=np.float32)
    zero = np.float32(0.0)
    for cs in range(c_lo, c_hi, chunk):
        w = min(chunk, c_hi - cs)
        for r in range(g):
            for s in range(n):
                acc = leaf[s]
                q0, q1 = ptr[s, r], ptr[s, r + 1]
                if q0 == q1:
                    for c in range(w):
                        acc[c] = zero
                    continue
                # slices: an index cs + c would stop LLVM's vectorising (numba checks it for negative values)
                src = stack[blocks[q0], cs : cs + w]
                for c in range(w):
                    acc[c] = zero + src[c]  # the product's sum starts from zero (-0 becomes +0, as there)
                for q in range(q0 + 1, q1):
                    src = stack[blocks[q], cs : cs + w]
                    for c in range(w):
                        acc[c] += src[c]
            dst = out[r, cs : cs + w]
            if n == 1:
                first = leaf[0]
                for c in range(w):
                    dst[c] = first[c]
                continue
            last = schedule.shape[0] - 1
            for op in range(last):
                a, mid = schedule[op, 0], schedule[op, 1]
                left, right = leaf[a], leaf[mid]
                for c in range(w):
                    left[c] = left[c] + right[c]
            left, right = leaf[schedule[last, 0]], leaf[schedule[last, 1]]  # the root: written to out
            for c in range(w):
                dst[c] = left[c] + right[c]


@functools.cache
def _kernel():
    return compile_nogil(_sums)


def available() -> bool:
    """True when the compiled sums can be used (numba importable)."""
    return numba_module() is not None


def warm() -> None:
    """Compile (or load from numba's cache) the kernel now, if numba is there."""
    if available():
        stack = np.zeros((1, 2), dtype=np.float32)
        out = np.empty((1, 2), dtype=np.float32)
        sums(stack, np.zeros((1, 2), dtype=np.int64), np.zeros(0, dtype=np.int64), out, 0, 2)


def sums(
    stack: NDArray[np.float32],
    ptr: NDArray[np.int64],
    blocks: NDArray[np.int64],
    out: NDArray[np.float32],
    c_lo: int,
    c_hi: int,
) -> None:
    """``out[r, c_lo:c_hi]`` = tree sum over the shards of partition r's member blocks' columns, without the GIL.

    ``stack`` (n_blocks, size) holds the folded block Grams, one per row; ``ptr`` and ``blocks`` come from
    :func:`member_lists`; ``out`` is (g, size). Both arrays C-contiguous float32. Raises RuntimeError when numba is
    missing (check :func:`available` first).
    """
    if numba_module() is None:
        raise RuntimeError("numba is not available")
    if not (stack.dtype == out.dtype == np.float32 and stack.flags.c_contiguous and out.flags.c_contiguous):
        raise ValueError("sums takes C-contiguous float32 arrays")
    if stack.ndim != 2 or out.ndim != 2 or out.shape[1] != stack.shape[1] or ptr.shape[1] != out.shape[0] + 1:
        raise ValueError(f"shapes do not match: stack {stack.shape}, out {out.shape}, ptr {ptr.shape}")
    if not 0 <= c_lo <= c_hi <= out.shape[1]:
        raise ValueError(f"columns [{c_lo}, {c_hi}) are outside the {out.shape[1]} columns")
    if len(blocks) and (blocks.min() < 0 or blocks.max() >= stack.shape[0]):
        raise ValueError("a member block is outside the stack")
    _kernel()(stack, ptr, blocks, tree_schedule(ptr.shape[0]), out, c_lo, c_hi, CHUNK)
