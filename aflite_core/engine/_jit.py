"""numba for the engine's kernels, loaded on first use: the module, and functions compiled without the GIL.

numba ships with umap-learn (a dependency of the app); the library imports without it, and each kernel's caller
keeps its numpy path where it is missing (:func:`numba_module` is None).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["compile_nogil", "numba_module"]


@functools.cache
def numba_module() -> Any:
    """The numba module, or None where it cannot be imported."""
    try:
        import numba
    except Exception:  # pragma: no cover - numba ships with umap-learn
        return None
    return numba


def compile_nogil(fn: Callable, cache: bool = True) -> Callable:
    """``numba.njit(nogil=True, cache=cache)(fn)``; without a writable cache folder, compiled in every process.

    numba keeps machine code next to the source (``__pycache__``) or in the user's cache folder; where neither can
    be written (a read-only install and home) it refuses ``cache=True``, and the kernel is compiled uncached.
    """
    numba = numba_module()
    if cache:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # numba warns where it cannot cache; the fallback below is silent
                return numba.njit(nogil=True, cache=True)(fn)
        except RuntimeError:
            pass
    return numba.njit(nogil=True)(fn)
