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

__all__ = [
    "compiled_downdates",
    "folded_downdates",
    "lower_inverse",
    "sgemm_nt_into",
    "ssyrk_into",
    "total_downdates",
    "warm_downdates",
]


@functools.cache
def _address(name: str, library: str = "blas") -> int:
    """Address of the Cython-exported BLAS (or LAPACK) routine ``name``."""
    if library == "lapack":
        from scipy.linalg import cython_lapack as module
    else:
        from scipy.linalg import cython_blas as module

    capsule = module.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return int(get_pointer(capsule, get_name(capsule)))


@functools.cache
def _routine(name: str, n_args: int, library: str = "blas"):
    """The Cython-exported BLAS (or LAPACK) routine ``name`` as a ctypes function (all arguments by reference)."""
    return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n_args))(_address(name, library))


@functools.cache
def _kernels():
    """The compiled downdate loops (:mod:`._downdate_kernels`), or None without numba (or if they fail to load)."""
    from ._jit import numba_module

    if numba_module() is None:
        return None
    try:
        from . import _downdate_kernels
    except Exception:  # pragma: no cover - a numba that cannot build the loops: the ctypes calls stay
        return None
    return _downdate_kernels


def compiled_downdates() -> bool:
    """True when :func:`total_downdates` and :func:`folded_downdates` can run (numba there)."""
    return _kernels() is not None


def warm_downdates() -> None:
    """Compile (or load from numba's cache) the downdate loops now, if numba is there."""
    if compiled_downdates():
        Z = np.zeros((1, 2), dtype=np.float32)
        lo, hi = np.zeros(1, np.int64), np.ones(1, np.int64)
        total_downdates(Z, lo, hi, np.zeros((2, 2), dtype=np.float32))
        folded_downdates(Z[:, :1], Z[:, :1], lo, hi, np.zeros(1, np.int64), np.zeros((1, 3, 1), dtype=np.float32))


def _scratch() -> tuple[NDArray[np.int32], NDArray[np.float32], NDArray[np.uint8]]:
    """Fortran's by-reference scalars for one compiled loop: ints (n, k), floats (alpha, beta), chars b"LUNT"."""
    return np.zeros(2, np.int32), np.zeros(2, np.float32), np.frombuffer(b"LUNT", dtype=np.uint8).copy()


def _segments(lo: NDArray[np.int64], hi: NDArray[np.int64], rows: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    lo, hi = np.ascontiguousarray(lo, dtype=np.int64), np.ascontiguousarray(hi, dtype=np.int64)
    if lo.shape != hi.shape or lo.ndim != 1 or (len(lo) and (lo.min() < 0 or hi.max() > rows or np.any(hi < lo))):
        raise ValueError("segments must be ranges [lo, hi) of the rows of Z")
    return lo, hi


def total_downdates(Z: NDArray[np.float32], lo: NDArray[np.int64], hi: NDArray[np.int64], C: NDArray[np.float32]):
    """``ssyrk_into(1.0, Z[lo[s]:hi[s]], C, upper_of_c=True)`` for every segment s in order, in one GIL-free call.

    The same BLAS calls with the same arguments as that loop (the same bits). Raises RuntimeError without numba
    (check :func:`compiled_downdates` first).
    """
    kernels = _kernels()
    if kernels is None:
        raise RuntimeError("numba is not available")
    _ptr(Z), _ptr(C)
    if C.shape != (Z.shape[1], Z.shape[1]):
        raise ValueError(f"C must be ({Z.shape[1]}, {Z.shape[1]}); got {C.shape}")
    lo, hi = _segments(lo, hi, Z.shape[0])
    kernels.total_downdates(_address("ssyrk"), Z, lo, hi, C, *_scratch())


def folded_downdates(
    Z1: NDArray[np.float32],
    Z2: NDArray[np.float32],
    lo: NDArray[np.int64],
    hi: NDArray[np.int64],
    block: NDArray[np.int64],
    stack: NDArray[np.float32],
):
    """``stack[block[s]] -= ZᵀZ`` folded for every segment s in order (Z = [Z1, Z2][lo[s]:hi[s]]), GIL-free.

    The same three BLAS calls per segment as :func:`aflite_core.engine.shards._fused_folded_downdate` (the same
    bits). ``stack`` (blocks, 2k+1, k) C-contiguous float32; Z1, Z2 (rows, k). Raises RuntimeError without numba.
    """
    kernels = _kernels()
    if kernels is None:
        raise RuntimeError("numba is not available")
    _ptr(Z1), _ptr(Z2), _ptr(stack)
    k = Z1.shape[1]
    if Z2.shape != Z1.shape or stack.ndim != 3 or stack.shape[1:] != (2 * k + 1, k):
        raise ValueError(f"shapes do not agree: Z1 {Z1.shape}, Z2 {Z2.shape}, stack {stack.shape}")
    lo, hi = _segments(lo, hi, Z1.shape[0])
    block = np.ascontiguousarray(block, dtype=np.int64)
    if block.shape != lo.shape or (len(block) and (block.min() < 0 or block.max() >= stack.shape[0])):
        raise ValueError("every segment needs a block of the stack")
    kernels.folded_downdates(_address("ssyrk"), _address("sgemm"), Z1, Z2, lo, hi, block, stack, *_scratch())


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
