"""Full symmetric Gram matrices from folded ones in one compiled pass (numba), the same values as numpy's copies.

:func:`aflite_core.engine.gram_folding.unfold_grams` rebuilds each partition's D × D matrix from its folded triangle
(:func:`aflite_core.engine.gram_folding.fold_grams`) with six numpy copies per matrix, two of them masked and two
transposed: at the SNLI shape (D = 1,028, 64 partitions) ~230 ms a round on the 2-core VM. :func:`unfold` writes
every value once, in 32 × 32 tiles (the transposed reads stay in cache), without the GIL. Values are copied, never
computed, so the result is equal to numpy's (``tests/test_shard_folding.py``).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from ._jit import compile_nogil, numba_module

__all__ = ["available", "unfold"]

_TILE = 32


def _unfold(folded, out, k):  # pragma: no cover - compiled
    g, D = out.shape[0], out.shape[1]
    for p in range(g):
        F, G = folded[p], out[p]
        for bi in range(0, D, _TILE):
            for bj in range(0, D, _TILE):
                for i in range(bi, min(bi + _TILE, D)):
                    for j in range(bj, min(bj + _TILE, D)):
                        if i < k and j < k:  # top-left corner: its upper triangle, mirrored
                            G[i, j] = F[i, j] if i <= j else F[j, i]
                        elif i >= k and j >= k:  # bottom-right corner: stored transposed below row 0
                            a, b = i - k, j - k
                            G[i, j] = F[1 + b, a] if a <= b else F[1 + a, b]
                        elif i < k:  # top-right rectangle
                            G[i, j] = F[k + 1 + i, j - k]
                        else:  # its mirror
                            G[i, j] = F[k + 1 + j, i - k]


@functools.cache
def _kernel():
    return compile_nogil(_unfold) if numba_module() is not None else None


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
