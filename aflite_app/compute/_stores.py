"""What every compute module shares: the bounded result stores and the limits of interactive work.

* :class:`Store` / :func:`memo` - the app's one cache mechanism: finished computations (runs, studies, reports,
  tables) kept by their spec in named stores of one server-wide :class:`Budget`, bounded in bytes (the held
  arrays' ``nbytes``, :func:`held_bytes`; ``AFLITE_STORE_BUDGET_MB``) and per store in entries, least recently
  used dropped first, values held by reference (never pickled); ``st.cache_resource`` only for the process's
  singletons (the budget itself, the upload vault in :mod:`aflite_app.ui`, the shared jobs, the sentence model,
  the warm-up);
* :func:`check_rows` / :func:`too_many_rows` - the one row guard of uploads and fetches: above
  :data:`MAX_INTERACTIVE_ROWS` the app refuses them and names the command-line equivalent (an AFLite run of an
  opened run directory has no row limit: above it, it is a heavy job that waits its turn,
  :func:`aflite_app.admission.heavy`);
* :func:`upload_limit_bytes` and :data:`MAX_UPLOAD_COLUMNS` - what an uploaded file may hold;
* :func:`apply_parse_budgets` - the memory budgets of every read (:mod:`aflite_core.data.budget`), from settings.

Modules read the limits as ``_stores.MAX_INTERACTIVE_ROWS`` at call time, so a test can lower them; their values
come from :mod:`aflite_app.settings`, with every other limit and ``AFLITE_*`` variable of the server.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from aflite_core.data import budget as _budget

from .. import settings

__all__ = [
    "MAX_INTERACTIVE_ROWS",
    "MAX_UPLOAD_COLUMNS",
    "Budget",
    "Store",
    "apply_parse_budgets",
    "budget",
    "check_rows",
    "held_bytes",
    "memo",
    "store",
    "too_many_rows",
    "upload_limit_bytes",
]

#: rows above which the app refuses an upload (and points to the CLI), and above which an AFLite run is a heavy job
MAX_INTERACTIVE_ROWS = settings.load().max_interactive_rows
#: columns an uploaded table may have (counted before it is parsed)
MAX_UPLOAD_COLUMNS = settings.load().max_upload_columns


def apply_parse_budgets(current: settings.Settings | None = None) -> None:
    """Give every reader of the core the server's memory budgets (``AFLITE_PARSE_BUDGET_MB``, ``…PARSES…``).

    Called once when this module is imported (as the other limits are read); a refusal then names the setting
    that raises it.
    """
    one, every = settings.parse_budget_bytes(current)
    _budget.set_budgets(
        parse_bytes=one,
        parses_bytes=every,
        advice=(
            f"the server's administrator can raise {settings.PARSE_BUDGET_MB_ENV} (megabytes), or filter the file "
            "from the command line (python -m aflite_core ... --parse-budget-mb)"
        ),
        server_advice=(
            f"try again in a moment (the server's administrator can raise {settings.PARSES_BUDGET_MB_ENV}, "
            "in megabytes)"
        ),
    )


apply_parse_budgets()


def held_bytes(value: Any) -> int:
    """The bytes ``value`` holds in arrays: the ``nbytes`` of every distinct numpy array in it, once each.

    Walks containers (dict, list, tuple, set), dataclasses (an ``AFLiteResult``, a ``Dataset``: every field),
    pandas objects (their memory, strings included), scipy sparse matrices (data and indices) and the attributes
    of the app's and the core's own objects; bytes and strings count their length. Plotly figures count the data
    of their traces and layout (arrays, numbers in lists at 8 bytes each, text: :func:`_figure_bytes`); fitted
    models count what they learned: a scikit-learn-style estimator (one with ``get_params``) its attributes'
    arrays, a torch tensor its elements, a torch module its state dict.
    """
    seen: set[int] = set()
    stack = [value]
    total = 0
    while stack:
        v = stack.pop()
        if v is None or isinstance(v, bool | int | float | complex) or id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, np.ndarray):
            total += v.nbytes
            if v.dtype == object:
                stack.extend(v.ravel().tolist())
        elif isinstance(v, pd.DataFrame | pd.Series | pd.Index):
            usage = v.memory_usage(deep=True)
            total += int(usage.sum()) if isinstance(usage, pd.Series) else int(usage)
        elif isinstance(v, bytes | bytearray | memoryview | str):
            total += len(v)
        elif isinstance(v, dict | Mapping):
            stack.extend(v.values())
        elif isinstance(v, list | tuple | set | frozenset):
            stack.extend(v)
        elif hasattr(v, "nnz") and hasattr(v, "data") and hasattr(v, "indices"):  # scipy sparse (CSR/CSC)
            stack.extend([v.data, v.indices, getattr(v, "indptr", None)])
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend(getattr(v, f.name, None) for f in dataclasses.fields(v))
        elif _is_figure(v):
            total += _figure_bytes(v, seen)
        elif _is_tensor(v):
            total += int(v.element_size()) * int(v.nelement())
        elif callable(getattr(v, "state_dict", None)) and callable(getattr(v, "parameters", None)):  # torch module
            stack.extend(v.state_dict(keep_vars=True).values())
        elif hasattr(v, "__dict__") and (
            type(v).__module__.startswith(("aflite_core", "aflite_app")) or callable(getattr(v, "get_params", None))
        ):  # the app's and the core's objects, and fitted estimators (scikit-learn's API): their attributes
            stack.extend(vars(v).values())
    return total


def _is_figure(value: Any) -> bool:
    """A Plotly figure (duck-typed: compute never imports Plotly)."""
    return type(value).__module__.startswith("plotly") and hasattr(value, "_data") and hasattr(value, "_layout")


def _is_tensor(value: Any) -> bool:
    """A torch tensor (duck-typed: torch is optional)."""
    return type(value).__module__.startswith("torch") and hasattr(value, "element_size") and hasattr(value, "nelement")


def _figure_bytes(fig: Any, seen: set[int]) -> int:
    """The bytes of a Plotly figure's data: its traces' and layout's arrays, numbers (8 bytes each) and text.

    Plotly keeps a trace's numpy arrays as arrays and lists as lists (``fig._data``, ``fig._layout``: plain dicts,
    no copy is made); arrays already counted elsewhere in the same value count once.
    """
    total = 0
    stack: list[Any] = [fig._data, fig._layout]
    while stack:
        v = stack.pop()
        if v is None:
            continue
        if isinstance(v, bool | int | float | complex | np.generic):
            total += 8
        elif isinstance(v, bytes | str):
            total += len(v)
        elif id(v) in seen:
            continue
        elif isinstance(v, np.ndarray):
            seen.add(id(v))
            total += v.nbytes if v.dtype != object else 8 * v.size
            if v.dtype == object:
                stack.extend(v.ravel().tolist())
        elif isinstance(v, dict | Mapping):
            seen.add(id(v))
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            seen.add(id(v))
            stack.extend(v)
    return total


class Budget:
    """Every store of the server under one byte budget (:func:`aflite_app.settings.store_budget_bytes`).

    One ordered map of ``(store, key) -> (value, bytes)``, least recently used first, shared by every store and
    every session (:func:`budget`); keeping an entry drops the least recently used entries of *any* store until
    the held bytes fit, and the oldest entries of its own store beyond that store's entry limit. A value larger
    than the whole budget is not kept (the caller still gets it). Thread-safe: background jobs keep results here.
    """

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = int(limit_bytes)
        self.held = 0
        self._entries: OrderedDict[tuple[str, Hashable], tuple[Any, int]] = OrderedDict()
        self._lock = threading.RLock()
        self._computing: dict[tuple[str, Hashable], threading.Lock] = {}

    def recall(self, name: str, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            entry = self._entries.get((name, key))
            if entry is None:
                return default
            self._entries.move_to_end((name, key))
            return entry[0]

    def keep(self, name: str, key: Hashable, value: Any, max_entries: int) -> None:
        size = held_bytes(value)
        with self._lock:
            old = self._entries.pop((name, key), None)
            if old is not None:
                self.held -= old[1]
            if size > self.limit_bytes:
                return
            self._entries[(name, key)] = (value, size)
            self.held += size
            mine = [k for k in self._entries if k[0] == name]
            for k in mine[: max(0, len(mine) - max_entries)]:
                self.held -= self._entries.pop(k)[1]
                self._drop_lock(k)
            while self.held > self.limit_bytes:
                k, (_, dropped) = self._entries.popitem(last=False)
                self.held -= dropped
                self._drop_lock(k)

    def _drop_lock(self, k: tuple[str, Hashable]) -> None:
        lock = self._computing.get(k)
        if lock is not None and not lock.locked():
            del self._computing[k]

    def entries(self, name: str) -> list[tuple[Hashable, Any]]:
        with self._lock:
            return [(k[1], v[0]) for k, v in self._entries.items() if k[0] == name]

    def forget(self, name: str, key: Hashable) -> None:
        with self._lock:
            old = self._entries.pop((name, key), None)
            if old is not None:
                self.held -= old[1]

    def bytes_of(self, name: str) -> int:
        with self._lock:
            return sum(size for k, (_, size) in self._entries.items() if k[0] == name)

    def computing(self, name: str, key: Hashable) -> threading.Lock:
        """The lock held while ``key`` of store ``name`` is computed (one computation per key at a time)."""
        with self._lock:
            return self._computing.setdefault((name, key), threading.Lock())


@st.cache_resource(max_entries=1)
def budget() -> Budget:
    """The server's one :class:`Budget` (``st.cache_resource.clear()`` empties every store)."""
    return Budget(settings.store_budget_bytes())


class Store:
    """One named store in the server's :class:`Budget`: finished runs, studies, reports, tables, by their spec.

    A cheap view (make one per call); values are held by reference, never copied or pickled. ``max_entries``
    bounds this store's count; every store together is bounded in bytes by the budget.
    """

    def __init__(self, name: str, max_entries: int, pool: Budget | None = None) -> None:
        self.name, self.max_entries = name, int(max_entries)
        self.budget = pool if pool is not None else budget()

    def recall(self, key: Hashable) -> Any:
        """The entry for ``key`` (marked as just used), or None."""
        return self.budget.recall(self.name, key)

    def keep(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key`` (the least recently used entries go beyond the limits)."""
        self.budget.keep(self.name, key, value, self.max_entries)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The entry for ``key`` (marked as just used), or ``default``."""
        return self.budget.recall(self.name, key, default)

    def __getitem__(self, key: Hashable) -> Any:
        value = self.budget.recall(self.name, key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self.keep(key, value)

    def pop(self, key: Hashable, default: Any = None) -> Any:
        """Remove the entry for ``key`` and return it (``default`` if there is none)."""
        value = self.budget.recall(self.name, key, _MISSING)
        self.budget.forget(self.name, key)
        return default if value is _MISSING else value

    def __contains__(self, key: Hashable) -> bool:
        return any(k == key for k, _ in self.budget.entries(self.name))

    def __len__(self) -> int:
        return len(self.budget.entries(self.name))

    def items(self) -> list[tuple[Hashable, Any]]:
        """Every (key, value) of this store, least recently used first (a snapshot)."""
        return self.budget.entries(self.name)

    def keys(self) -> list[Hashable]:
        return [k for k, _ in self.items()]

    def values(self) -> list[Any]:
        return [v for _, v in self.items()]

    @property
    def nbytes(self) -> int:
        """Bytes this store holds (its share of the budget)."""
        return self.budget.bytes_of(self.name)


def store(name: str, max_entries: int) -> Store:
    """The store ``name`` of the server's budget, at most ``max_entries`` entries."""
    return Store(name, max_entries)


_MISSING = object()


def _frozen(value: Any) -> Hashable:
    """A hashable stand-in for an argument (lists as tuples, dicts as sorted items, arrays by content hash)."""
    try:
        hash(value)
        return value
    except TypeError:
        pass
    if isinstance(value, dict | Mapping):
        return ("dict", tuple(sorted((repr(k), _frozen(v)) for k, v in value.items())))
    if isinstance(value, list | tuple | set | frozenset):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, np.ndarray):
        return ("array", value.shape, str(value.dtype), hashlib.sha256(np.ascontiguousarray(value)).hexdigest())
    return ("repr", repr(value))


def _fresh(value: Any) -> Any:
    """What a memoised call hands out: DataFrames as copy-on-write shallow copies, the rest by reference.

    pandas' copy-on-write keeps the stored frame intact whatever the caller does with its copy.
    """
    if isinstance(value, pd.DataFrame | pd.Series):
        return value.copy(deep=False)
    if isinstance(value, tuple) and any(isinstance(v, pd.DataFrame | pd.Series) for v in value):
        return tuple(_fresh(v) for v in value)
    return value


def memo(name: str, max_entries: int, spinner: str | None = None) -> Callable[[Callable], Callable]:
    """Memoise a function in store ``name`` of the budget (the app's one cache mechanism besides singletons).

    The key is the function's arguments whose names do not start with ``_`` (as with ``st.cache_data``: an
    argument such as ``_result`` is what the value is computed from, named by the others). The value is held by
    reference (DataFrames come back as copy-on-write shallow copies). One computation per key at a time: a
    second caller waits for the first. ``spinner`` is shown while computing inside a script run.
    """

    def decorate(func: Callable) -> Callable:
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            key = (func.__qualname__, *((k, _frozen(v)) for k, v in bound.arguments.items() if not k.startswith("_")))
            pool = budget()
            hit = pool.recall(name, key, _MISSING)
            if hit is not _MISSING:
                return _fresh(hit)
            with pool.computing(name, key):
                hit = pool.recall(name, key, _MISSING)
                if hit is not _MISSING:
                    return _fresh(hit)
                if spinner and get_script_run_ctx(suppress_warning=True) is not None:
                    with st.spinner(spinner):
                        value = func(*args, **kwargs)
                        # kept before the spinner closes: closing it is where Streamlit stops a run that a rerun
                        # interrupted, and the value computed would be lost (computed again by the next run)
                        pool.keep(name, key, value, max_entries)
                else:
                    value = func(*args, **kwargs)
                    pool.keep(name, key, value, max_entries)
                return _fresh(value)

        wrapper.store_name = name  # type: ignore[attr-defined]
        return wrapper

    return decorate


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
