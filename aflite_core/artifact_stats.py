"""Deprecated: :mod:`aflite_core.measures.artifact_statistics` (the competency-problems test); kept for one release.

``from aflite_core import artifact_statistics, artifact_shares, significance_curve`` works without the old path.
"""

from ._deprecated import moved
from .measures.artifact_statistics import *  # noqa: F403  (the public names, for ``from ... import *`` and dir())

__getattr__ = moved(__name__, "aflite_core.measures.artifact_statistics")
