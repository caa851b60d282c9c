"""Old module paths the README documented, kept for one release: each warns on import and re-exports the new one.

A shim is three lines (see ``aflite_core/tables.py``)::

    from ._deprecated import moved
    from .data.user_tables import *  # noqa: F403  (the public names, for ``from ... import *`` and dir())
    __getattr__ = moved(__name__, "aflite_core.data.user_tables")
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["moved"]


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside this package and Python's import machinery (the importer).

    ``warnings.warn`` does not count the frozen ``importlib._bootstrap`` frames, so neither does this.
    """
    level, frame = 1, sys._getframe(1)
    while frame is not None:
        filename, module = frame.f_code.co_filename, frame.f_globals.get("__name__", "")
        internal = "importlib" in filename and "_bootstrap" in filename
        if not internal and not module.startswith(("aflite_core", "importlib")):
            return level
        frame, level = frame.f_back, level + (0 if internal else 1)
    return 2


def moved(old: str, new: str) -> Callable[[str], Any]:
    """Warn that module ``old`` moved to ``new`` (DeprecationWarning), and return a module ``__getattr__``.

    The ``__getattr__`` hands out every name of the new module, private ones included, so code written against
    the old path keeps working for the release the shim lives.
    """
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release: it moved to {new}.",
        DeprecationWarning,
        stacklevel=_caller_stacklevel(),
    )
    module = importlib.import_module(new)

    def __getattr__(name: str) -> Any:
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} (now {new!r}) has no attribute {name!r}") from None

    return __getattr__
