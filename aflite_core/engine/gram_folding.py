"""Folded symmetric Gram matrices: one triangle of each, stored so BLAS can update it in place.

A block's Gram matrix ``ZᵀZ`` is exactly symmetric (BLAS computes one triangle and mirrors it), and so are sums and
differences of such matrices. :func:`fold_grams` keeps the D·(D+1)/2 values of one triangle as a (2k+1) × k matrix
(k = ⌈D/2⌉) of three contiguous k × k parts; :func:`unfold_grams` rebuilds the square matrices (with the compiled
pass of :mod:`aflite_core.engine.gram_unfold` where numba is there); :func:`pack_upper` and :func:`unpack_upper` are
the row-by-row packing of the upper triangle. Used by :mod:`aflite_core.engine.shards`.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from . import gram_unfold

__all__ = ["fold_grams", "folded_shape", "pack_upper", "unfold_grams", "unpack_upper"]


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
    np.copyto(G, G.T, where=_strict_lower(G.shape[0]))  # numpy reads the overlapping transpose from a copy


def folded_shape(D: int) -> tuple[int, int]:
    """Shape (2k+1, k) of a folded D×D symmetric matrix, k = ⌈D/2⌉ (see :func:`fold_grams`)."""
    k = (D + 1) // 2
    return 2 * k + 1, k


@functools.lru_cache(maxsize=8)
def _strict_lower(k: int) -> NDArray[np.bool_]:
    return np.tril(np.ones((k, k), dtype=bool), -1)


def fold_grams(G: NDArray, D: int | None = None, out: NDArray | None = None) -> NDArray:
    """Fold symmetric matrices G (g, D, D) into (g, 2k+1, k), k = ⌈D/2⌉: every value of one triangle, once.

    Rows 0 .. k-1 hold the upper triangle of the top-left k × k corner ``G[:k, :k]`` (on and above the
    diagonal); rows 1 .. k hold the bottom-right corner ``G[k:, k:]`` transposed, on and below the diagonal (so
    its upper triangle); rows k+1 .. 2k hold the top-right rectangle ``G[:k, k:]``. For odd D the last row and
    column are padded with zeros. The three parts are contiguous k × k matrices, so BLAS updates them in place.
    Only the upper triangle of G is read. ``out`` (g, 2k+1, k), if given, receives the result.
    """
    D = G.shape[-1] if D is None else D
    k = (D + 1) // 2
    g = G.shape[0]
    if (
        G.shape[-1] == D
        and G.dtype == np.float32
        and (out is None or (out.dtype == G.dtype and out.flags.c_contiguous))
        and gram_unfold.available()
    ):  # one compiled pass, the same values (copies), without the GIL
        F = np.empty((g, 2 * k + 1, k), dtype=G.dtype) if out is None else out
        return gram_unfold.fold(G, F)
    if out is None:
        F = np.zeros((g, 2 * k + 1, k), dtype=G.dtype)
    else:
        F = out
        F[...] = 0
    F[:, :k, :k] = G[:, :k, :k]
    lower = np.tril(np.ones((k, k), dtype=bool))
    corner = np.zeros((g, k, k), dtype=G.dtype)
    corner[:, : D - k, : D - k] = np.swapaxes(G[:, k:, k:], 1, 2)
    np.copyto(F[:, 1 : k + 1], corner, where=lower)
    F[:, k + 1 :, : D - k] = G[:, :k, k:]
    return F


def unfold_grams(packed: NDArray, D: int, out: NDArray | None = None) -> NDArray:
    """Full symmetric matrices (g, D, D) from folded ones (:func:`fold_grams`; shape (g, 2k+1, k) or (g, (2k+1)·k)).

    ``out`` (g, D, D), C-contiguous, receives them if given.
    """
    rows, k = folded_shape(D)
    folded = packed.reshape(-1, rows, k)
    if gram_unfold.available():  # one compiled pass, the same values (copies), without the GIL
        return gram_unfold.unfold(folded, D, out)
    m = D - k  # size of the bottom-right corner (k, or k - 1 for odd D)
    if out is None:
        out = np.empty((folded.shape[0], D, D), dtype=packed.dtype)
    below = _strict_lower(k)
    for F, G in zip(folded, out):  # one matrix at a time: its six copies stay in cache
        top_left, bottom_right = G[:k, :k], G[k:, k:]
        top_left[...] = F[:k]  # upper triangle right; the lower one mirrored from it
        np.copyto(top_left, F[:k].T, where=below)
        corner = F[1 : k + 1, :m][:m]  # its lower triangle (with the diagonal) is the corner transposed
        bottom_right[...] = corner.T
        np.copyto(bottom_right, corner, where=below[:m, :m])
        G[:k, k:] = F[k + 1 :, :m]
        G[k:, :k] = F[k + 1 :, :m].T
    return out
