"""What every compute module shares: the bounded result stores and the limits of interactive work.

* :class:`LRUStore` - finished computations (runs, studies, reports) kept by their spec, least recently used
  dropped first; each page's store is one ``st.cache_resource``, shared by every session;
* :func:`check_rows` / :func:`too_many_rows` - the one row guard: above :data:`MAX_INTERACTIVE_ROWS` the app
  refuses and names the command-line equivalent;
* :func:`upload_limit_bytes` and :data:`MAX_UPLOAD_COLUMNS` - what an uploaded file may hold.

Modules read the limits as ``_stores.MAX_INTERACTIVE_ROWS`` at call time, so a test can lower them; their values
come from :mod:`aflite_app.settings`, with every other limit and ``AFLITE_*`` variable of the server.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import streamlit as st

from .. import settings

__all__ = [
    "MAX_INTERACTIVE_ROWS",
    "MAX_UPLOAD_COLUMNS",
    "LRUStore",
    "check_rows",
    "too_many_rows",
    "upload_limit_bytes",
    "upload_vault",
]

#: rows above which the app refuses interactive work and points to the CLI
MAX_INTERACTIVE_ROWS = settings.load().max_interactive_rows
#: columns an uploaded table may have (counted before it is parsed)
MAX_UPLOAD_COLUMNS = settings.load().max_upload_columns


class LRUStore(OrderedDict):
    """A bounded store of finished computations (runs, studies, reports), shared by every session.

    ``st.cache_resource`` keeps one store per kind; background threads put results in it, pages look them up.
    Least recently used entries go first once ``limit`` is reached.
    """

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: Hashable, value: Any) -> None:
        """Store ``value``; beyond ``limit`` entries the least recently used go (also for ``store[key] = v``)."""
        super().__setitem__(key, value)
        while len(self) > self.limit:
            self.popitem(last=False)

    def recall(self, key: Hashable) -> Any:
        """The entry for ``key`` (marked as just used), or None."""
        if key in self:
            self.move_to_end(key)
            return self[key]
        return None

    def keep(self, key: Hashable, value: Any) -> None:
        """Store ``value`` under ``key``, dropping the least recently used entries beyond the limit."""
        self[key] = value
        self.move_to_end(key)


def too_many_rows(
    n_rows: int | None, *, instead: str, doing: str = "filters", subject: str | None = None
) -> ValueError:
    """The refusal of more than :data:`MAX_INTERACTIVE_ROWS` rows, naming what to run instead.

    Parameters
    ----------
    n_rows : int or None
        The rows asked for (None: more than counted, e.g. a reader that stopped at the limit).
    instead : str
        The sentence after the refusal: the command-line equivalent.
    doing : str
        What the app does with the rows ("filters", "handles").
    subject : str, optional
        What has the rows, with its verb (e.g. ``"'big.csv' has"``): the message then reads "<subject> N rows,
        more than …" instead of "N rows is more than …".

    Returns
    -------
    ValueError
        Ready to raise.
    """
    count = f"{n_rows:,} rows" if n_rows is not None else "more rows"
    limit = f"more than the app {doing} interactively ({MAX_INTERACTIVE_ROWS:,})"
    if subject is None:
        return ValueError(f"{count} is {limit}. {instead}")
    return ValueError(f"{subject} {count}, {limit}. {instead}")


def check_rows(n_rows: int, *, instead: str, doing: str = "filters", subject: str | None = None) -> None:
    """Raise :func:`too_many_rows` when ``n_rows`` is above :data:`MAX_INTERACTIVE_ROWS` (the one row guard)."""
    if n_rows > MAX_INTERACTIVE_ROWS:
        raise too_many_rows(n_rows, instead=instead, doing=doing, subject=subject)


def upload_limit_bytes() -> int:
    """The upload limit of the Streamlit server (``server.maxUploadSize`` in .streamlit/config.toml, MB)."""
    return int(st.get_option("server.maxUploadSize")) * 2**20


@st.cache_resource(max_entries=1)
def upload_vault():
    """The server-wide :class:`~aflite_app.links.UploadVault` (uploads reopened by a link or a reload)."""
    from ..links import UploadVault

    return UploadVault.from_env()
