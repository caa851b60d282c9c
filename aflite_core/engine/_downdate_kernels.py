"""A shard's removal downdates as two compiled loops of BLAS calls (imports numba: loaded on first use).

:meth:`aflite_core.engine.shards.ShardedGrams.remove_from_shard` makes one ``ssyrk`` call per removal segment (the
rows of one block removed in a round) into the removed rows' Gram matrix, then three calls per segment (two
``ssyrk``, one ``sgemm``) on the block's folded Gram matrix: ~1,600 calls a round at the SNLI shape, each entered
from Python through :mod:`ctypes` (:mod:`aflite_core.engine._blas`), which takes the GIL again after every call. On
16 threads the removals waited for the GIL between calls. The loops here make the same calls, with the same
arguments, in the same order, from compiled code that holds no GIL: the same bits.

The BLAS routines are SciPy's Cython exports (the addresses :func:`aflite_core.engine._blas._routine` wraps); an
address is an argument of the loop, never a constant in its code, so numba's on-disk cache stays valid in a new
process. Fortran's by-reference scalars live in small arrays the caller passes (kept alive for the call).
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: offsets of the characters in the ``chars`` array the callers pass (b"LUNT")
_L, _U, _N, _T = 0, 1, 2, 3


@intrinsic
def _call(typingctx, fn, args):  # pragma: no cover - compiled
    """Call the C function at address ``fn`` with the addresses in the tuple ``args`` (void return)."""
    if not isinstance(fn, types.Integer) or not isinstance(args, types.BaseTuple):
        return None
    if not all(isinstance(t, types.Integer) and t.bitwidth == 64 for t in args.types):
        return None
    n = len(args.types)

    def codegen(context, builder, sig, llargs):
        byte_ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr] * n)
        target = builder.inttoptr(llargs[0], fnty.as_pointer())
        values = cgutils.unpack_tuple(builder, llargs[1], n)
        builder.call(target, [builder.inttoptr(v, byte_ptr) for v in values])
        return context.get_dummy_value()

    return types.void(fn, args), codegen


@njit(nogil=True, cache=True)
def total_downdates(syrk, Z, lo, hi, C, ints, floats, chars):  # pragma: no cover - compiled
    """``C += Z[lo[s]:hi[s]]ᵀ Z[lo[s]:hi[s]]`` on C's upper triangle (row-major), segment by segment, in order.

    Each call is :func:`aflite_core.engine._blas.ssyrk_into` ``(1.0, Z[a:b], C, upper_of_c=True)``'s.
    """
    D = Z.shape[1]
    ints[0] = D
    floats[0] = 1.0
    floats[1] = 1.0
    z, c = Z.ctypes.data, C.ctypes.data
    ip, fp, cp = ints.ctypes.data, floats.ctypes.data, chars.ctypes.data
    for s in range(len(lo)):
        a, b = lo[s], hi[s]
        if b <= a:
            continue
        ints[1] = b - a
        # ssyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
        _call(syrk, (cp + _L, cp + _N, ip, ip + 4, fp, z + a * D * 4, ip, fp + 4, c, ip))


@njit(nogil=True, cache=True)
def folded_downdates(syrk, gemm, Z1, Z2, lo, hi, block, stack, ints, floats, chars):  # pragma: no cover - compiled
    """``stack[block[s]] -= ZᵀZ`` folded (Z = [Z1, Z2][lo[s]:hi[s]]), segment by segment, in order.

    Each segment's three calls are :func:`aflite_core.engine.shards._fused_folded_downdate`'s: ``ssyrk`` on the
    top-left corner's upper triangle, ``ssyrk`` on the bottom-right corner's (transposed below it), ``sgemm``
    on the top-right rectangle, each with alpha -1 and beta 1.
    """
    k = Z1.shape[1]
    ints[0] = k
    floats[0] = -1.0
    floats[1] = 1.0
    z1, z2, base = Z1.ctypes.data, Z2.ctypes.data, stack.ctypes.data
    ip, fp, cp = ints.ctypes.data, floats.ctypes.data, chars.ctypes.data
    per_block = stack.shape[1] * stack.shape[2] * 4
    for s in range(len(lo)):
        a, b = lo[s], hi[s]
        if b <= a:
            continue
        ints[1] = b - a
        F = base + block[s] * per_block
        p1, p2 = z1 + a * k * 4, z2 + a * k * 4
        _call(syrk, (cp + _L, cp + _N, ip, ip + 4, fp, p1, ip, fp + 4, F, ip))
        _call(syrk, (cp + _U, cp + _N, ip, ip + 4, fp, p2, ip, fp + 4, F + k * 4, ip))
        # sgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc): C.T (k × k) += -Z2ᵀ Z1
        _call(gemm, (cp + _N, cp + _T, ip, ip, ip + 4, fp, p2, ip, p1, ip, fp + 4, F + (k + 1) * k * 4, ip))
