"""numba for the engine's kernels, loaded on first use: the module, and functions compiled without the GIL.

numba ships with umap-learn (a dependency of the app); the library imports without it, and each kernel's caller
keeps its numpy path where it is missing (:func:`numba_module` is None).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["compile_nogil", "numba_installed", "numba_module"]


@functools.cache
def numba_module() -> Any:
    """The numba module, or None where it cannot be imported."""
    try:
        import numba
    except Exception:  # pragma: no cover - numba ships with umap-learn
        return None
    return numba


@functools.cache
def numba_installed() -> bool:
    """True when numba is installed, without importing it (~0.17 s on the 2-core VM).

    For decisions made before the kernels are needed (a layout that lets them run), so that the import itself can
    happen on the run's pool beside the shards' Gram matrices; whoever calls a kernel still asks
    :func:`numba_module`, which is None where the import fails.
    """
    import importlib.util

    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):  # pragma: no cover - a broken installation
        return False


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
