"""Deprecated: :mod:`aflite_core.engine.logistic` (the batched logistic-regression family); kept for one release.

Import from the new path, or the README's names from :mod:`aflite_core` itself.
"""

from ._deprecated import moved
from .engine.logistic import *  # noqa: F403  (the public names, for ``from ... import *`` and dir())

__getattr__ = moved(__name__, "aflite_core.engine.logistic")
