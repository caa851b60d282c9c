"""Small shared helpers (private): BLAS thread limits, hashing, package versions."""

from __future__ import annotations

import contextlib
import hashlib
import platform
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["blas_threads", "data_hashes", "hash_array", "hash_labels", "json_default", "versions"]


def blas_threads(n_threads: int | None) -> contextlib.AbstractContextManager[Any]:
    """Limit BLAS/OpenMP threads inside a ``with`` block (``None`` leaves the library default).

    One thread is the robust default on shared machines: on a busy 2-core host two BLAS threads made small
    fits several times slower, and a fixed thread count keeps float results bit-identical across runs.
    """
    if not n_threads:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n_threads)


def hash_array(a: NDArray) -> str:
    """sha256 of an array's dtype, shape and bytes (read in chunks, so a memory-mapped array is fine).

    The chunks are hashed where they lie (a C-contiguous chunk is not copied), and ``hashlib`` releases the
    GIL while it hashes, so other threads run meanwhile.
    """
    h = hashlib.sha256()
    h.update(f"{a.dtype.str}{a.shape}".encode())
    if a.ndim == 2:
        step = max(1, (64 * 2**20) // max(1, a.shape[1] * a.itemsize))
        for start in range(0, a.shape[0], step):
            h.update(_c_bytes(a[start : start + step]))
    else:
        h.update(_c_bytes(a))
    return h.hexdigest()


def _c_bytes(a: NDArray) -> memoryview:
    """The bytes ``a.tobytes()`` would give (C order), without copying a C-contiguous array."""
    c = np.ascontiguousarray(a)
    if c.dtype.hasobject:  # no buffer of the values themselves: as before
        return memoryview(c.tobytes())
    return memoryview(c.reshape(-1).view(np.uint8))


def hash_labels(codes: NDArray, classes: tuple) -> str:
    """sha256 of label codes and the class names they stand for."""
    h = hashlib.sha256(repr(classes).encode())
    h.update(np.ascontiguousarray(codes, dtype=np.int32).tobytes())
    return h.hexdigest()


def data_hashes(X: NDArray, codes: NDArray, classes: tuple, eval_X=None, eval_codes=None, groups=None) -> dict:
    """A run's data hashes: features, labels, evaluation rows and labels, and groups (only when grouped)."""
    has_eval = eval_X is not None
    hashes = {
        "x_sha256": hash_array(X),
        "y_sha256": hash_labels(codes, classes),
        "eval_x_sha256": hash_array(eval_X) if has_eval else None,
        "eval_y_sha256": hash_labels(eval_codes, classes) if has_eval else None,
    }
    if groups is not None:  # an ungrouped run's fingerprint stays as it was
        hashes["groups_sha256"] = hash_array(np.asarray(groups, dtype=np.int32))
    return hashes


def _sklearn_version() -> str:
    """scikit-learn's version, read from its installed metadata unless it is imported already.

    Importing scikit-learn only to read its version took 1-2 CPU seconds at the end of every run in a fresh
    process (about a tenth of a one-thread run at the mid shape); the installed distribution says the same.
    """
    import sys

    module = sys.modules.get("sklearn")
    if module is not None:
        return module.__version__
    try:
        from importlib.metadata import version

        return version("scikit-learn")
    except Exception:  # no metadata (a vendored copy): ask the package
        import sklearn

        return sklearn.__version__


def versions() -> dict[str, str]:
    """Versions of Python and the packages a result depends on."""
    import pandas as pd
    import scipy

    from . import __version__

    return {
        "aflite_core": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": _sklearn_version(),
        "pandas": pd.__version__,
    }


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback: numpy scalars and arrays as Python values, anything else as its repr."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return repr(value)
