"""Full symmetric Gram matrices from folded ones, and folded from full, in one compiled pass each (numba).

:func:`aflite_core.engine.gram_folding.unfold_grams` rebuilds each partition's D × D matrix from its folded triangle
(:func:`aflite_core.engine.gram_folding.fold_grams`) with six numpy copies per matrix, two of them masked and two
transposed: at the SNLI shape (D = 1,028, 64 partitions) ~230 ms a round on the 2-core VM. :func:`unfold` writes
every value once, row by row, without the GIL. :func:`fold` is the way back, for the shards' blocks. Values are copied,
never computed, so the results are equal to numpy's (``tests/test_shard_folding.py``).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from ._jit import compile_nogil, numba_module

__all__ = ["available", "fold", "unfold"]

_TILE = 32


def _unfold(folded, out, k):  # pragma: no cover - compiled
    g, D = out.shape[0], out.shape[1]
    m = D - k  # the bottom-right corner's size (k, or k - 1 for odd D)
    for p in range(g):
        F, G = folded[p], out[p]
        # row by row, each row written once from left to right; the mirrored values are read down a column of F,
        # whose lines the next rows read again from cache (no explicit tiles: 16.5 against 25 ms for 16 matrices
        # at D = 1,028 with the 32 x 32 tiles of branching code this replaced)
        for i in range(k):
            for j in range(i):  # top-left corner, below the diagonal: its mirror
                G[i, j] = F[j, i]
            for j in range(i, k):  # top-left corner, on and above the diagonal
                G[i, j] = F[i, j]
            for c in range(m):  # top-right rectangle
                G[i, k + c] = F[k + 1 + i, c]
        for a in range(m):
            i = k + a
            for j in range(k):  # bottom-left: the rectangle's mirror
                G[i, j] = F[k + 1 + j, a]
            for b in range(a):  # bottom-right corner, below the diagonal: stored as is in row 1 + a
                G[i, k + b] = F[1 + a, b]
            for b in range(a, m):  # ... on and above it: stored transposed
                G[i, k + b] = F[1 + b, a]


def _fold(G, F, k):  # pragma: no cover - compiled
    g, D = G.shape[0], G.shape[1]
    m = D - k
    zero = F.dtype.type(0)
    for p in range(g):
        S, T = G[p], F[p]
        for i in range(k):
            for j in range(i, k):  # rows 0 .. k-1: the top-left corner's upper triangle
                T[i, j] = S[i, j]
            for c in range(m):  # rows k+1 .. 2k: the top-right rectangle (odd D: a zero last column)
                T[k + 1 + i, c] = S[i, k + c]
            for c in range(m, k):
                T[k + 1 + i, c] = zero
        # rows 1 .. k, on and below the diagonal: the bottom-right corner transposed (odd D: a zero last row)
        for br in range(0, k, _TILE):
            for bc in range(0, br + 1, _TILE):
                for r in range(br, min(br + _TILE, k)):
                    for c in range(bc, min(bc + _TILE, r + 1)):
                        T[1 + r, c] = S[k + c, k + r] if r < m else zero


@functools.cache
def _kernel():
    return compile_nogil(_unfold) if numba_module() is not None else None


@functools.cache
def _fold_kernel():
    return compile_nogil(_fold) if numba_module() is not None else None


def available() -> bool:
    """True when the compiled pass can be used (numba importable)."""
    return _kernel() is not None


def unfold(folded: NDArray, D: int, out: NDArray | None = None) -> NDArray:
    """Matrices (g, D, D) from folded ones (g, 2k+1, k), k = ⌈D/2⌉, into ``out`` if given (needs numba)."""
    run = _kernel()
    if run is None:
        raise RuntimeError("numba is not available")
    k = (D + 1) // 2
    if folded.ndim != 3 or folded.shape[1:] != (2 * k + 1, k):
        raise ValueError(f"folded matrices of shape {folded.shape} do not hold {D} x {D} matrices")
    if out is None:
        out = np.empty((folded.shape[0], D, D), dtype=folded.dtype)
    elif out.shape != (folded.shape[0], D, D) or out.dtype != folded.dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {folded.dtype} array of shape {(folded.shape[0], D, D)}")
    run(np.ascontiguousarray(folded), out, k)
    return out


def fold(G: NDArray, out: NDArray) -> NDArray:
    """Fold symmetric matrices G (g, D, D) into ``out`` (g, 2k+1, k), k = ⌈D/2⌉, reading G's upper triangle only.

    The layout of :func:`aflite_core.engine.gram_folding.fold_grams` (whose numpy copies made with an array of flags
    and two transposed copies took ~3 ms a block at D = 1,028); the same values, copied (needs numba).
    """
    run = _fold_kernel()
    if run is None:
        raise RuntimeError("numba is not available")
    if G.ndim != 3 or G.shape[1] != G.shape[2]:
        raise ValueError(f"G of shape {G.shape} is not a stack of square matrices")
    k = (G.shape[1] + 1) // 2
    if out.shape != (G.shape[0], 2 * k + 1, k) or out.dtype != G.dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {G.dtype} array of shape {(G.shape[0], 2 * k + 1, k)}")
    run(G, out, k)
    return out
