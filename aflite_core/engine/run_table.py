"""The table a run's rows came from, recorded with the run: ``table.parquet``, aligned to the run's rows.

``filter --table T --id-column ID`` (or :meth:`AFLiteResult.save` with ``table=``) copies the user's table
(texts, metadata) into the run directory, so the run can later be read with it (Inspect, the map's hover,
exports) without the original file. It is stored as Parquet whatever its input format, **one row per run row,
in the run's row order** (row i of ``table.parquet`` describes row i of ``rows.parquet``), and goes through
the run record's manifest like every other file (size and SHA-256 in ``result.json``, checked on load).

:func:`align_table` matches the table to the run: by ``id_column`` (its values unique, covering every id of the
run; the run's ids are its ``--ids``, else 0 .. n-1), or, without one, row for row (the same number of rows).
Rows of the table the run does not have are left out. :func:`load_run_table` reads it back
(:func:`run_table_info` says whether a run has one, from ``result.json`` alone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._validation import shown
from ..data import budget
from ..data.parquet_reads import read_parquet_checked
from ..data.preflight import json_bound
from .run_constants import TABLE_FILE
from .run_loading import MAX_META_BYTES, RunRecordError, _Bad, _count, _need, _read_file, _table_meta
from .run_record import FORMAT, _canonical, _sha

__all__ = ["TABLE_FILE", "align_table", "load_run_table", "run_table_info"]


def _keys(values: Any) -> tuple[NDArray, bool]:
    """Ids as comparable keys: (int64 array, True) for whole numbers, else (object array of str, False)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64), True
    if arr.dtype.kind == "f" and np.isfinite(arr).all() and (arr == np.round(arr)).all():
        return arr.astype(np.int64), True
    if arr.dtype.kind == "f":
        return np.asarray([repr(float(x)) for x in arr], dtype=object), False
    out = np.empty(len(arr), dtype=object)
    out[:] = [str(x) for x in arr.tolist()]
    return out, False


def _comparable(table_ids: Any, run_ids: Any) -> tuple[NDArray, NDArray]:
    a, a_num = _keys(table_ids)
    b, b_num = _keys(run_ids)
    if a_num != b_num:  # "17" in a CSV read as text against 17 from an ids file read as a number
        a = np.asarray([str(x) for x in a.tolist()], dtype=object)
        b = np.asarray([str(x) for x in b.tolist()], dtype=object)
    return a, b


def align_table(
    frame: pd.DataFrame,
    *,
    n_rows: int,
    ids: Any = None,
    id_column: str | None = None,
    name: str = "the table",
) -> pd.DataFrame:
    """The table's rows in the run's row order (one per run row), or one sentence saying why they do not match.

    Parameters
    ----------
    frame : DataFrame
        The table.
    n_rows : int
        Rows of the run.
    ids : array-like, optional
        The run's row ids (``--ids``); default 0 .. n_rows - 1.
    id_column : str, optional
        The table's column holding the ids. None: the table's rows are the run's rows, in order.
    name : str
        The table's name in messages.

    Returns
    -------
    DataFrame
        ``n_rows`` rows, index 0 .. n_rows - 1, the table's columns.

    Raises
    ------
    ValueError
        The id column is missing, has missing or repeated values, or lacks ids of the run; or, without an id
        column, the table has another number of rows.

    Examples
    --------
    >>> t = pd.DataFrame({"id": [2, 0, 1, 9], "text": ["c", "a", "b", "z"]})
    >>> align_table(t, n_rows=3, id_column="id")["text"].tolist()
    ['a', 'b', 'c']
    """
    if id_column is None:
        if len(frame) != n_rows:
            raise ValueError(
                f"'{name}' has {len(frame):,} rows and the run {n_rows:,}; give --id-column to match its rows "
                "to the run's ids, or the table the features were made from."
            )
        return frame.reset_index(drop=True)
    if id_column not in frame.columns:
        raise ValueError(
            f"'{name}' has no column {shown(id_column)} for --id-column; its columns are "
            f"{', '.join(shown(c) for c in list(frame.columns)[:8])}{', ...' if frame.shape[1] > 8 else ''}."
        )
    column = frame[id_column]
    if column.isna().any():
        first = int(np.flatnonzero(column.isna().to_numpy())[0])
        raise ValueError(f"'{name}' has a missing id in its column {shown(id_column)} (row {first + 1:,}).")
    run_ids = np.arange(n_rows) if ids is None else np.asarray(ids)
    table_keys, run_keys = _comparable(column.to_numpy(), run_ids)
    index = pd.Index(table_keys)
    if not index.is_unique:
        dup = index[index.duplicated()][0]
        raise ValueError(
            f"'{name}' repeats the id {shown(dup)} in its column {shown(id_column)}; the ids must be unique "
            "to match the table's rows to the run's."
        )
    where = index.get_indexer(run_keys)
    missing = np.flatnonzero(where < 0)
    if missing.size:
        whose = "run's ids (--ids)" if ids is not None else "row numbers 0 .. n-1 (the run has no --ids)"
        raise ValueError(
            f"'{name}' lacks {missing.size:,} of the {n_rows:,} {whose} in its column {shown(id_column)} "
            f"(e.g. {shown(run_keys[missing[0]])}); give the table the run's rows were made from."
        )
    return frame.iloc[where].reset_index(drop=True)


# == the recorded table ===============================================================================================
def _checked_meta(src: Path) -> dict:
    """result.json of a run directory, its checksum verified (one sentence otherwise)."""
    path = src / "result.json"
    if not src.is_dir() or not path.is_file():
        raise ValueError(f"'{src}' is not an AFLite run directory: it has no result.json.")
    if path.stat().st_size > MAX_META_BYTES:
        raise ValueError(f"'{src}' holds an incomplete or damaged AFLite run: its result.json is far too large.")
    try:
        raw = path.read_bytes()
        with budget.parse(f"Run file '{path.name}'") as parse:  # nested JSON would build far more than it is
            parse.reserve(json_bound(raw), "its JSON values")
            meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"'{src}' does not hold an AFLite Studio run (its result.json is not one).")
    body = {k: v for k, v in meta.items() if k != "checksum"}
    if meta.get("format_version", 0) >= 2 and meta.get("checksum") != _sha(_canonical(body)):
        raise ValueError(
            f"'{src}' holds an incomplete or damaged AFLite run: result.json has changed since it was saved "
            "(its checksum differs)."
        )
    return meta


def run_table_info(directory: str | Path) -> dict | None:
    """What a run recorded of the table its rows came from, read from ``result.json`` alone (no table is read).

    Parameters
    ----------
    directory : str or Path
        The run directory.

    Returns
    -------
    dict or None
        ``{"rows", "columns", "id_column", "bytes"}`` (``id_column`` None when the table was matched row for
        row), or None when the run recorded no table (format versions 1-3, and any run saved without one).

    Raises
    ------
    ValueError
        One sentence when ``result.json`` is missing, damaged or not a run's.
    """
    src = Path(directory)
    meta = _checked_meta(src)
    entry = meta.get("table")
    if meta.get("format_version", 0) < 4 or not isinstance(entry, dict):
        return None
    size = (meta.get("files") or {}).get(TABLE_FILE, {}).get("bytes")
    return {
        "rows": entry.get("rows"),
        "columns": list(entry.get("columns") or []),
        "id_column": entry.get("id_column"),
        "bytes": size,
    }


def load_run_table(
    directory: str | Path,
    *,
    result: Any = None,
    max_rows: int | None = None,
    max_text_bytes: int | None = None,
) -> pd.DataFrame | None:
    """The table a run's rows came from (``filter --table``), row i describing row i of the run; None if none.

    The file is checked against the run's manifest (size and SHA-256) and read through
    :func:`aflite_core.data.parquet_reads.read_parquet_checked` inside one :func:`aflite_core.data.budget.parse` (its
    footer checked before its values are read, the read and its pandas copy under the memory budget, its text
    bounded by ``max_text_bytes``). Join it to the run by position:
    ``result.to_frame().join(table, suffixes=("", "_table"))`` (both are indexed 0 .. n-1).

    Parameters
    ----------
    directory : str or Path
        The run directory.
    result : AFLiteResult, optional
        The run loaded from ``directory``: the table's id column (when it has one) is then checked to equal the
        run's ids, row for row.
    max_rows : int, optional
        Refuse tables of more rows (checked from the footer).
    max_text_bytes : int, optional
        Refuse tables holding more bytes of text.

    Returns
    -------
    DataFrame or None
        Index 0 .. n-1 named ``row``; ``attrs["id_column"]`` names the column holding the run's ids (None when
        the table was matched row for row). None when the run recorded no table.

    Raises
    ------
    ValueError
        One sentence: the table is missing, changed since it was saved (checksum), larger than allowed, or
        does not match ``result``.
    """
    src = Path(directory)
    meta = _checked_meta(src)
    if meta.get("format_version", 0) < 4 or meta.get("table") is None:
        return None
    where = f"'{src}' holds an incomplete or damaged AFLite run"
    try:
        n_rows = _count(meta, "n_rows", 1)
        entry = _table_meta(meta, n_rows)
        data = _read_file(src, TABLE_FILE, _need(meta, "files", dict))
    except _Bad as exc:
        raise RunRecordError(f"{where}: {exc}.", str(exc)) from None
    with budget.parse(f"Run file '{TABLE_FILE}'"):  # the read and its pandas copy, under one memory budget
        table = read_parquet_checked(
            data,
            TABLE_FILE,
            max_rows=max_rows,
            expected_rows=n_rows,
            max_text_bytes=max_text_bytes,
            what="The run's table",
        )
        del data
        frame = table.to_pandas()
        del table
    if [str(c) for c in frame.columns] != entry["columns"]:
        raise RunRecordError(f"{where}: its table's columns disagree with result.json.", "table columns")
    id_column = entry["id_column"]
    if result is not None:
        if result.n_rows != n_rows:
            raise ValueError(f"The table of '{src}' has {n_rows:,} rows, the run given {result.n_rows:,}.")
        if id_column is not None:
            run_ids = np.arange(n_rows) if result.ids is None else result.ids
            a, b = _comparable(frame[id_column].to_numpy(), run_ids)
            if not np.array_equal(a, b):
                raise ValueError(f"The table of '{src}' is not in the order of the run's ids (column {id_column!r}).")
    frame.index.name = "row"
    frame.attrs["id_column"] = id_column
    return frame
