"""The compiled row gather of :func:`aflite_core.engine.models.gather_rows` (imports numba: loaded on first use).

Kept apart so that importing the engine never imports numba; the prefetch is an LLVM intrinsic, which numba only
offers through :func:`numba.extending.intrinsic`.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: rows ahead of the one being copied whose cache lines are asked for (4-8 measured alike on the 2-core VM)
AHEAD = 4
#: floats per 64-byte cache line (one prefetch each)
_LINE = 16


@intrinsic
def _prefetch(typingctx, arr, i, j):  # pragma: no cover - compiled
    """Ask for the cache line holding ``arr[i, j]`` (a hint: LLVM's ``llvm.prefetch``, read, keep in all levels)."""

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], args[2]], wraparound=False)
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        read, keep_everywhere, data = ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), read, keep_everywhere, data])
        return context.get_dummy_value()

    return types.void(arr, i, j), codegen


@njit(nogil=True, cache=True)
def gather(X, rows, out):  # pragma: no cover - compiled
    """``out[r] = X[rows[r]]`` for every r, the lines of row ``rows[r + AHEAD]`` asked for meanwhile."""
    n, d = len(rows), X.shape[1]
    for r in range(min(AHEAD, n)):
        for c in range(0, d, _LINE):
            _prefetch(X, rows[r], c)
    for r in range(n):
        if r + AHEAD < n:
            ahead = rows[r + AHEAD]
            for c in range(0, d, _LINE):
                _prefetch(X, ahead, c)
        src = rows[r]
        for c in range(d):
            out[r, c] = X[src, c]
