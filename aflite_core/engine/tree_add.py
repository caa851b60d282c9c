"""Adding one column tile's shard products along the shard tree in a single compiled call, same bits.

A partition's Gram sum is ``node(0, n)`` of the balanced binary tree over the shards' partial products
(:func:`aflite_core.engine.shards.tree_sum`): ``node(a, b) = node(a, mid) + node(mid, b)``, ``mid = (a + b) // 2``.
Done with numpy, a tile of 16 shards costs 31 calls of ~10 µs each (16 products, 15 additions), and each call
hands the GIL over twice: two threads on the 2-core VM added tiles only 1.1-1.35× faster than one. Here the
products go into one buffer of leaves and :func:`tree_add` adds them in one call compiled with numba
(``nogil``) from the tree written out as one parenthesised expression (:func:`tree_expression`): the same
additions of the same operands in the same grouping, so the bits are those of the numpy additions
(``tests/test_tree_add.py`` checks it against :func:`tree_sum` for every tree size up to 40). Without numba the
caller keeps its numpy additions.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
from numpy.typing import NDArray

from ._jit import compile_nogil, numba_module

__all__ = ["available", "tree_add", "tree_expression", "warm"]


def tree_expression(a: int, b: int) -> str:
    """Node ``(a, b)`` of the shard tree as one Python expression over the leaves ``L[s, t, r, c]``.

    ``node(a, b) = node(a, mid) + node(mid, b)``: the parentheses fix the additions and their order (no
    compiler may reassociate float additions without being told to).
    """
    if b - a == 1:
        return f"L[{a}, t, r, c]"
    mid = (a + b) // 2
    return f"({tree_expression(a, mid)} + {tree_expression(mid, b)})"


_LOCK = threading.Lock()


def _add_16(L, out, c0):  # pragma: no cover - compiled; the default 16 shards, as tree_expression(0, 16) writes it
    n_tiles, g, w = L.shape[1], L.shape[2], L.shape[3]
    for t in range(n_tiles):
        for r in range(g):
            row = out[r, c0 + t * w : c0 + (t + 1) * w]
            for c in range(w):
                row[c] = (
                    ((L[0, t, r, c] + L[1, t, r, c]) + (L[2, t, r, c] + L[3, t, r, c]))
                    + ((L[4, t, r, c] + L[5, t, r, c]) + (L[6, t, r, c] + L[7, t, r, c]))
                ) + (
                    ((L[8, t, r, c] + L[9, t, r, c]) + (L[10, t, r, c] + L[11, t, r, c]))
                    + ((L[12, t, r, c] + L[13, t, r, c]) + (L[14, t, r, c] + L[15, t, r, c]))
                )


@functools.cache
def _kernel(n: int):
    """The compiled additions of the tree over ``n`` leaves (one per tree size and process).

    Every value is read once and the sum stays in registers, so a tile's additions touch its leaves once. The
    default tree (16 shards) is a function of this file, so numba keeps its machine code between processes
    (``cache=True``: ~0.3 s to load instead of ~0.5 s to compile); other sizes are compiled from
    :func:`tree_expression` once per process.
    """
    if n == 16:
        return compile_nogil(_add_16)
    src = (
        "def add_tree(L, out, c0):\n"
        "    n_tiles, g, w = L.shape[1], L.shape[2], L.shape[3]\n"
        "    for t in range(n_tiles):\n"
        "        for r in range(g):\n"
        "            row = out[r, c0 + t * w : c0 + (t + 1) * w]\n"  # a row view: 3x faster than out[r, c0 + c]
        "            for c in range(w):\n"
        f"                row[c] = {tree_expression(0, n)}\n"
    )
    namespace: dict = {}
    exec(compile(src, f"<shard tree over {n} leaves>", "exec"), namespace)  # our own source (tree_expression)
    return compile_nogil(namespace["add_tree"], cache=False)


def available() -> bool:
    """True when the compiled additions can be used (numba importable)."""
    return numba_module() is not None


def warm(n: int) -> None:
    """Compile (or load from numba's cache) the additions of the tree over ``n`` leaves now, if numba is there.

    The engine calls it beside the first round's shard building, so the first tile does not wait for it.
    """
    if n >= 2 and available():
        tree_add(np.zeros((n, 1, 2), dtype=np.float32), np.zeros((1, 2), dtype=np.float32), 0)


def tree_add(leaves: NDArray[np.float32], out: NDArray[np.float32], c0: int) -> None:
    """``out[:, c0:c0+w] = node(0, n)`` of the shard tree over ``leaves`` (n, g, w), without the GIL.

    ``leaves`` may also hold a run of T consecutive tiles of width w, shape (n, T, g, w): tile t is written to
    ``out[:, c0 + t·w : c0 + (t + 1)·w]``, each entry by the same additions as a one-tile call (one call instead
    of T: on 16 threads a call per tile made the GIL the Gram sums' bottleneck). ``leaves`` is C-contiguous
    float32 with ``n >= 2``; ``out`` (g, ≥ c0 + T·w) is C-contiguous float32. Raises RuntimeError when numba is
    missing (check :func:`available` first).
    """
    if numba_module() is None:
        raise RuntimeError("numba is not available")
    if leaves.ndim == 3:
        leaves = leaves[:, None]
    n, n_tiles, g, w = leaves.shape
    if not (leaves.dtype == out.dtype == np.float32 and leaves.flags.c_contiguous and out.flags.c_contiguous):
        raise ValueError("tree_add takes C-contiguous float32 arrays")
    if out.shape[0] != g or c0 < 0 or c0 + n_tiles * w > out.shape[1]:
        raise ValueError(f"the tiles' columns [{c0}, {c0 + n_tiles * w}) do not fit an output of shape {out.shape}")
    if n < 2:
        raise ValueError(f"the tree needs at least 2 leaves; got {n}")
    with _LOCK:  # two threads asking for a new tree size compile it once
        run = _kernel(n)
    run(leaves, out, c0)
