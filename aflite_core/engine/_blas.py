"""SciPy's BLAS routines called without holding the GIL (the engine's fused Gram downdates).

``scipy.linalg.blas.ssyrk`` and ``sgemm`` (f2py wrappers) keep the GIL for the whole BLAS call: sampled with
``py-spy --gil`` at the mid shape, the removals held the GIL in 94 % of their samples, so the engine's threads
removed rows one shard at a time however many cores they had. The same routines are reached here through the
function pointers SciPy exports for Cython (``scipy.linalg.cython_blas``) and called with :mod:`ctypes`, which
releases the GIL for the duration of a foreign call. It is the same library routine with the same arguments,
so the results are the same bits as the f2py calls (``tests/test_engine_speed_helpers.py`` checks it); only
other threads may now run meanwhile.

Arrays are passed as they lie in memory, in Fortran's column-major terms: a C-ordered (rows, cols) array is a
column-major (cols, rows) matrix with leading dimension ``cols``. Callers pass C-contiguous float32 arrays
(checked).
"""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np
from numpy.typing import NDArray

__all__ = ["lower_inverse", "sgemm_nt_into", "ssyrk_into"]


@functools.cache
def _routine(name: str, n_args: int, library: str = "blas"):
    """The Cython-exported BLAS (or LAPACK) routine ``name`` as a ctypes function (all arguments by reference)."""
    if library == "lapack":
        from scipy.linalg import cython_lapack as module
    else:
        from scipy.linalg import cython_blas as module

    capsule = module.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get_pointer(capsule, get_name(capsule))
    return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n_args))(address)


def _ptr(a: NDArray[np.float32]) -> int:
    if a.dtype != np.float32 or not a.flags.c_contiguous:
        raise ValueError("the GIL-free BLAS calls take C-contiguous float32 arrays")
    return a.__array_interface__["data"][0]


class _Args(threading.local):
    """Fortran's by-reference arguments in fixed memory of this thread: a call sets values and passes addresses.

    Building ctypes objects for every call cost ~10 µs of Python (with the GIL held) per downdate, as much as
    the BLAS work of a small removal segment; setting a few array items and passing plain addresses costs ~2.
    """

    def __init__(self) -> None:
        self.ints = (ctypes.c_int * 6)()
        self.floats = (ctypes.c_float * 2)()
        self.chars = ctypes.create_string_buffer(b"LUNT")
        i, f, c = ctypes.addressof(self.ints), ctypes.addressof(self.floats), ctypes.addressof(self.chars)
        self.int_at = [i + 4 * j for j in range(6)]
        self.alpha, self.beta = f, f + 4
        self.char_at = {b"L": c, b"U": c + 1, b"N": c + 2, b"T": c + 3}


_ARGS = _Args()


def ssyrk_into(alpha: float, Z: NDArray[np.float32], C: NDArray[np.float32], upper_of_c: bool) -> None:
    """C += alpha · ZᵀZ on one triangle of C, in place, without holding the GIL.

    As ``scipy.linalg.blas.ssyrk(alpha, Z.T, beta=1.0, c=C.T, trans=0, lower=int(upper_of_c), overwrite_c=1)``.
    ``Z`` (rows, n) and ``C`` (n, n), both C-contiguous float32 (``C`` may be a C-contiguous block of a larger
    array). ``upper_of_c``: update C's upper triangle (row-major), i.e. the lower one of the column-major
    ``C.T``; False updates its lower triangle.
    """
    rows, n = Z.shape
    if C.shape != (n, n):
        raise ValueError(f"C must be ({n}, {n}); got {C.shape}")
    if rows == 0:
        return
    z, c = _ptr(Z), _ptr(C)
    a = _ARGS
    a.ints[0], a.ints[1] = n, rows
    a.floats[0], a.floats[1] = alpha, 1.0
    i = a.int_at
    uplo = a.char_at[b"L" if upper_of_c else b"U"]
    # ssyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
    _routine("ssyrk", 10)(uplo, a.char_at[b"N"], i[0], i[1], a.alpha, z, i[0], a.beta, c, i[0])


def sgemm_nt_into(alpha: float, A: NDArray[np.float32], B: NDArray[np.float32], C: NDArray[np.float32]) -> None:
    """C += alpha · BᵀA, in place, without holding the GIL.

    As ``scipy.linalg.blas.sgemm(alpha, A.T, B.T, beta=1.0, c=C.T, trans_b=1, overwrite_c=1)``.
    ``A`` (rows, m), ``B`` (rows, n) and ``C`` (n, m), all C-contiguous float32: in column-major terms
    ``C.T (m × n) += alpha · A.T (m × rows) · B (rows × n)``.
    """
    rows, m = A.shape
    n = B.shape[1]
    if B.shape[0] != rows or C.shape != (n, m):
        raise ValueError(f"shapes do not agree: A {A.shape}, B {B.shape}, C {C.shape}")
    if rows == 0:
        return
    pa, pb, pc = _ptr(A), _ptr(B), _ptr(C)
    a = _ARGS
    a.ints[0], a.ints[1], a.ints[2] = m, n, rows
    a.floats[0], a.floats[1] = alpha, 1.0
    i = a.int_at
    # sgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    _routine("sgemm", 13)(
        a.char_at[b"N"], a.char_at[b"T"], i[0], i[1], i[2], a.alpha, pa, i[0], pb, i[1], a.beta, pc, i[0]
    )


def lower_inverse(L: NDArray[np.float64]) -> NDArray[np.float64]:
    """L⁻¹ of a lower-triangular float64 matrix, without holding the GIL.

    As ``scipy.linalg.solve_triangular(L, np.eye(d), lower=True, check_finite=False)`` for a C-contiguous ``L``
    (what ``np.linalg.cholesky`` returns): that call hands LAPACK's ``dtrtrs`` the column-major view of ``L``
    (upper-triangular ``Lᵀ``) with ``trans="T"`` and a Fortran-ordered identity. SciPy 1.18.1's held the GIL
    through the solve (12 % of py-spy's GIL samples of a 16-thread run at the SNLI shape, d = 1,024, once a
    round, while the Gram sums' tiles waited for the GIL). The same routine with the same arguments is called
    here through ctypes, which releases the GIL; the result is SciPy 1.17's bits (tested). Returns a Fortran-ordered
    array, as SciPy does. Raises ``numpy.linalg.LinAlgError`` for a zero on the diagonal.
    """
    L = np.asarray(L)
    if L.dtype != np.float64 or L.ndim != 2 or L.shape[0] != L.shape[1] or not L.flags.c_contiguous:
        raise ValueError("lower_inverse takes a square C-contiguous float64 matrix")
    d = L.shape[0]
    X = np.asfortranarray(np.eye(d, dtype=np.float64))
    if d == 0:
        return X
    ints = (ctypes.c_int * 2)(d, 0)  # n = nrhs = lda = ldb = d; info
    chars = ctypes.create_string_buffer(b"UTN")
    n_at, info_at, c = ctypes.addressof(ints), ctypes.addressof(ints) + 4, ctypes.addressof(chars)
    # dtrtrs(uplo, trans, diag, n, nrhs, a, lda, b, ldb, info)
    _routine("dtrtrs", 10, "lapack")(
        c,
        c + 1,
        c + 2,
        n_at,
        n_at,
        L.__array_interface__["data"][0],
        n_at,
        X.__array_interface__["data"][0],
        n_at,
        info_at,
    )
    if ints[1] > 0:
        raise np.linalg.LinAlgError(f"singular matrix: resolution failed at diagonal {ints[1] - 1}")
    if ints[1] < 0:  # pragma: no cover - the arguments above are valid
        raise ValueError(f"illegal value in argument {-ints[1]} of dtrtrs")
    return X
