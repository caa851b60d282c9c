"""The ridge systems of :class:`~aflite_core.engine.models.LinearFamily`, solved for a group of partitions at once.

A partition's augmented Gram matrix ``[x, 1, onehot(y)]ᵀ[x, 1, onehot(y)]`` becomes a ridge system with the free
intercept eliminated (:func:`ridge_system`); the systems are solved by batched preconditioned conjugate gradients
in float32 (:func:`pcg_solve`) with a direct float64 Cholesky fallback (:func:`direct_solve`), or directly
(:func:`solve_ridge` picks). The torch backend builds the same systems on its device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ._jit import compile_nogil, numba_module

__all__ = ["PCG_CHUNK_BYTES", "direct_solve", "pcg_solve", "ridge_system", "solve_ridge"]


def ridge_system(P: NDArray, d: int, alpha: float):
    """Turn augmented Grams P (g, D, D) into ridge systems (Gc + λI) w = r, *in place* (no copy of P).

    With Z = [x, 1, onehot(y)], P holds G = Σxxᵀ, s = Σx, n, XᵀY and ΣY. Eliminating the free intercept
    gives (Gc + λI) w = XᵀY - s ΣYᵀ / n with Gc = G - s sᵀ / n and λ = alpha · trace(Gc) / d; afterwards
    b = (ΣY - sᵀw) / n. Returns A (a view into P), r (float64), s, n and ΣY.
    """
    s = P[:, :d, d].astype(np.float64)
    n = np.maximum(P[:, d, d].astype(np.float64), 1.0)
    ysum = P[:, d, d + 1 :].astype(np.float64)
    rhs = P[:, :d, d + 1 :].astype(np.float64) - s[:, :, None] * (ysum / n[:, None])[:, None, :]
    A = P[:, :d, :d]
    s_over_n = s / n[:, None]
    idx = np.arange(d)
    centre = _compiled_centring() if P.dtype == np.float32 and P.flags.c_contiguous else None
    if centre is not None:  # one pass over each matrix instead of three (the products written, read, subtracted)
        centre(P, s, s_over_n, d)
    else:
        # reused: fresh d×d temporaries per partition cost page faults. The float64 products are rounded to P's
        # type as they are written (``casting="unsafe"`` casts each float64 product as ``astype`` does). They are
        # subtracted from whole rows of P, the columns past d subtracting exact zeros (x - 0 = x): numpy subtracts
        # contiguous rows about 1.3x faster than the strided d × d view
        outer = np.zeros((d, P.shape[2]), dtype=P.dtype)
        for i in range(len(A)):  # rank-one centring, in place
            np.multiply.outer(s[i], s_over_n[i], out=outer[:, :d], casting="unsafe")
            P[i, :d] -= outer
    for i in range(len(A)):  # the ridge
        trace = float(np.trace(A[i], dtype=np.float64)) / d
        A[i, idx, idx] += alpha * (trace if trace > 0 else 1.0)
    return A, rhs, s, n, ysum


def _centring(P, s, s_over_n, d):  # pragma: no cover - compiled
    for i in range(P.shape[0]):
        sn = s_over_n[i]
        for r in range(d):
            a = s[i, r]
            row = P[i, r, :d]
            for c in range(d):
                row[c] = row[c] - np.float32(a * sn[c])  # the float64 product rounded to float32, then subtracted


@functools.cache
def _compiled_centring() -> Callable | None:
    """:func:`ridge_system`'s rank-one centring of float32 Grams compiled with numba (None without numba).

    ``P[i, r, c] -= float32(s[r] · (s/n)[c])`` for r, c < d: the float64 product rounded as numpy's unsafe cast
    rounds it, then one float32 subtraction, as the numpy path computes it (``tests/test_engine_speed_helpers.py``
    checks the bits). At the SNLI shape the numpy path wrote, read and subtracted a 4 MB matrix of products per
    partition: 64 a round.
    """
    if numba_module() is None:
        return None
    return compile_nogil(_centring)


def direct_solve(A: NDArray, rhs: NDArray) -> NDArray[np.float64]:
    """Cholesky solves (LAPACK, float64, one system at a time), least squares where not positive definite."""
    from scipy.linalg import lapack

    w = np.empty(rhs.shape, dtype=np.float64)
    for i in range(A.shape[0]):
        Ai = np.array(A[i], dtype=np.float64, order="F")
        c, info = lapack.dpotrf(Ai, lower=False, clean=False, overwrite_a=True)
        if info == 0:
            w[i], info = lapack.dpotrs(c, rhs[i], lower=False)
        if info != 0:
            w[i] = np.linalg.lstsq(np.asarray(A[i], dtype=np.float64), rhs[i], rcond=None)[0]
    return w


#: bytes of system matrices iterated together by PCG (bounds the float32 working set)
PCG_CHUNK_BYTES = 512 * 2**20


def pcg_solve(
    A: NDArray[np.float32], rhs: NDArray, M_inv: NDArray[np.float32], *, tol: float = 1e-5, max_iter: int = 60
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Batched preconditioned conjugate gradients for g·C independent systems, in float32.

    ``M_inv`` is the inverse of a preconditioner close to every A_j (the ridge system of the whole current
    set, scaled to the training size), so a handful of iterations reach ``tol`` relative residual. Every
    (system, column) pair iterates on its own and stops on its own residual, so its answer does not depend
    on which other systems share the batch; systems are processed a few at a time so their matrices stay in
    cache across iterations. Returns the solutions and which systems converged.
    """
    g, d, C = rhs.shape
    x_all = np.empty((g, d, C), dtype=np.float64)
    ok_all = np.empty(g, dtype=bool)
    step = max(1, PCG_CHUNK_BYTES // (4 * d * d))
    for g0 in range(0, g, step):
        sl = slice(g0, min(g0 + step, g))
        x_all[sl], ok_all[sl] = _pcg_batch(A[sl], rhs[sl].astype(np.float32), M_inv, tol, max_iter)
    return x_all, ok_all


def _pcg_batch(A, rhs, M_inv, tol, max_iter):
    g, d, C = rhs.shape

    def precond(r):  # M⁻¹ r for all systems at once: (g, d, C) -> (g, d, C)
        z = M_inv @ r.transpose(1, 0, 2).reshape(d, g * C)
        return z.reshape(d, g, C).transpose(1, 0, 2)

    bnorm = np.sqrt(np.einsum("gdc,gdc->gc", rhs, rhs))
    bnorm[bnorm == 0] = 1.0
    x = precond(rhs)
    r = rhs - A @ x
    z = precond(r)
    p = z.copy()
    rz = np.einsum("gdc,gdc->gc", r, z)
    active = np.sqrt(np.einsum("gdc,gdc->gc", r, r)) > tol * bnorm
    for _ in range(max_iter):
        if not active.any():
            break
        Ap = A @ p
        pAp = np.einsum("gdc,gdc->gc", p, Ap)
        step = np.where(active, rz / np.where(pAp > 0, pAp, 1.0), 0.0).astype(np.float32)
        x += step[:, None, :] * p
        r -= step[:, None, :] * Ap
        active &= np.sqrt(np.einsum("gdc,gdc->gc", r, r)) > tol * bnorm
        z = precond(r)
        rz_new = np.einsum("gdc,gdc->gc", r, z)
        beta = np.where(active, rz_new / np.where(rz != 0, rz, 1.0), 0.0).astype(np.float32)
        p = z + beta[:, None, :] * p
        rz = rz_new
    return x.astype(np.float64), ~active.any(axis=1)


def solve_ridge(
    P: NDArray[np.float32],
    d: int,
    C: int,
    alpha: float,
    precond: NDArray[np.float32] | Callable[[], NDArray[np.float32] | None] | None = None,
):
    """Ridge weights (g, d, C) and intercepts (g, C) from augmented Gram matrices ``P`` (g, D, D; overwritten).

    With a preconditioner factor, systems are solved by batched conjugate gradients (float32) and any that
    do not converge fall back to a direct Cholesky solve in float64; without one, all are solved directly.
    ``precond`` may also be a function giving it (or None): it is called once the systems are built, so a thread
    builds them while another still computes the preconditioner.
    """
    A, rhs, s, n, ysum = ridge_system(P, d, alpha)
    if callable(precond):
        precond = precond()
    if precond is not None:
        w, ok = pcg_solve(A, rhs, precond)
        if not ok.all():
            w[~ok] = direct_solve(A[~ok], rhs[~ok])
    else:
        w = direct_solve(A, rhs)
    b = (ysum - np.einsum("gd,gdc->gc", s, w)) / n[:, None]
    return w, b
