"""Deprecated: :mod:`aflite_core.data.user_tables` (the user's own table as a dataset); kept for one release.

``from aflite_core import load_table_dataset, dataset_from_table, ID_COLUMN_NAMES`` works without the old path.
"""

from ._deprecated import moved
from .data.user_tables import *  # noqa: F403  (the public names, for ``from ... import *`` and dir())

__getattr__ = moved(__name__, "aflite_core.data.user_tables")
