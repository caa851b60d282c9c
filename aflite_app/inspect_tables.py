"""Inspect's tables and download bytes (pure; no Streamlit).

* :func:`rows_table` - one row per example of a run: thumbnail or texts, class, kept/removed, round removed,
  predictability (first, at removal, last, per round); :func:`filter_rows` applies the page's view filters;
  :func:`with_round_lists` adds the per-round scores to the rows shown only;
* :func:`stability_frame`, :func:`stability_counts`, :func:`with_stability` - removals across seeds;
* :func:`artifact_texts`, :func:`feature_sources`, :func:`feature_matrix`, :func:`pixel_grid` - the inputs of
  artifact discovery;
* :func:`export_frame`, :func:`csv_bytes`, :func:`parquet_bytes` - the filtered dataset (all original
  columns plus AFLite's) as files.

A run as a zip and back is :mod:`aflite_app.run_archive`.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from aflite_core import AFLiteResult
from aflite_core.data.datasets import Dataset

__all__ = [
    "ROW_COLUMNS",
    "artifact_texts",
    "class_names",
    "csv_bytes",
    "export_frame",
    "feature_matrix",
    "feature_sources",
    "filter_rows",
    "joined_texts",
    "parquet_bytes",
    "pixel_grid",
    "rows_table",
    "stability_counts",
    "stability_frame",
    "text_display_columns",
    "with_round_lists",
    "with_stability",
]

#: columns of :func:`rows_table` (text columns of the data come after ``image``)
ROW_COLUMNS = ("row", "id", "image", "class", "status", "round", "p_first", "p_removal", "p_last", "p_rounds")


# -- the rows table ------------------------------------------------------------------------------------------
def class_names(data: Dataset, result: AFLiteResult) -> NDArray:
    """Class name of every row of the run (the dataset's names; results may hold label codes only)."""
    return data.class_names_of(result.y)


def text_display_columns(data: Dataset) -> list[str]:
    """The text columns to show, premise/hypothesis first for a sentence pair."""
    cols = list(data.pair or ()) + [c for c in data.text_columns if c not in (data.pair or ())]
    return list(dict.fromkeys(cols))


def _scored_lists(scores: NDArray) -> list[list[float]]:
    """Per row, its predictability in the rounds it was scored (NaN rounds left out)."""
    S = np.asarray(scores, dtype=np.float64).T
    ok = ~np.isnan(S)
    return [row[m].round(4).tolist() for row, m in zip(S, ok)]


def _as_computed(values: Any) -> NDArray[np.floating]:
    """Scores in the float type they were computed in (the engine's float32), never widened.

    Widening float32 to float64 turns 0.7 into 0.699999988079071 in a CSV; pandas writes a float32 column
    with the shortest text that reads back as the same float32 (0.7), and Parquet keeps float32 exactly.
    """
    arr = np.asarray(values)
    return arr if arr.dtype.kind == "f" else arr.astype(np.float64)


def _rounds(result: AFLiteResult) -> pd.arrays.IntegerArray:
    rr = pd.Series(np.asarray(result.removed_round, dtype=np.int64))
    return rr.where(rr > 0).astype("Int64").array


def rows_table(
    result: AFLiteResult, data: Dataset, *, thumbnails: Sequence[str] | None = None, round_lists: bool = True
) -> pd.DataFrame:
    """One row per example of the run, ready to show in a sortable table.

    Parameters
    ----------
    result : AFLiteResult
        A run on ``data`` (same rows, in the same order).
    data : Dataset
    thumbnails : sequence of str, optional
        Image data URIs (:func:`image_thumbnails`), one per row.
    round_lists : bool, default=True
        Add ``p_rounds``, one Python list per row. False leaves it out (a page that shows a few thousand rows of
        a large run adds it to those with :func:`with_round_lists`: at 550,000 rows the lists take seconds and
        hundreds of MB).

    Returns
    -------
    pandas.DataFrame
        ``row`` (position), ``id``, ``image`` (when thumbnails are given), the text columns, ``class`` (name),
        ``status`` ("kept" / "removed"), ``round`` (round removed, <NA> when kept), ``p_first``, ``p_removal``,
        ``p_last`` (predictability in round 1, when removed, in the last round scored), ``p_rounds`` (the list
        of per-round scores, when the run kept them) and the dataset's planted-truth columns.
    """
    n = result.n_rows
    if n != data.n_rows:
        raise ValueError(f"The run has {n:,} rows but the dataset has {data.n_rows:,}.")
    out: dict[str, Any] = {"row": np.arange(n), "id": np.asarray(data.ids)}
    if thumbnails is not None:
        if len(thumbnails) != n:
            raise ValueError(f"Got {len(thumbnails)} thumbnails for {n} rows.")
        out["image"] = list(thumbnails)
    for col in text_display_columns(data):
        name = col if col not in ROW_COLUMNS else f"{col} (text)"
        out[name] = data.frame[col].astype("string").to_numpy()
    out["class"] = class_names(data, result)
    out["status"] = np.where(result.kept, "kept", "removed")
    out["round"] = _rounds(result)
    table = pd.DataFrame(out)
    table["p_first"] = _as_computed(result.first_score)
    table["p_removal"] = _as_computed(result.removal_score)
    table["p_last"] = _as_computed(result.last_score)
    if result.scores is not None and round_lists:
        table["p_rounds"] = _scored_lists(result.scores)
    for col in data.meta.get("planted_truth", []) or []:
        if col in data.frame.columns and col not in table.columns:
            table[col] = data.frame[col].to_numpy()
    return table


def with_round_lists(view: pd.DataFrame, result: AFLiteResult) -> pd.DataFrame:
    """``view`` (rows of :func:`rows_table`, its ``row`` column intact) with ``p_rounds`` for those rows only.

    The same lists :func:`rows_table` makes with ``round_lists=True``; unchanged when the run kept no per-round
    scores (strategy 'greedy') or the column is there already.
    """
    if result.scores is None or "p_rounds" in view.columns:
        return view
    rows = view["row"].to_numpy(dtype=np.int64)
    lists = _scored_lists(np.asarray(result.scores)[:, rows]) if len(rows) else []
    out = view.copy()
    at = list(out.columns).index("p_last") + 1 if "p_last" in out.columns else len(out.columns)
    out.insert(at, "p_rounds", pd.Series(lists, index=out.index, dtype=object))
    return out


def filter_rows(
    table: pd.DataFrame,
    *,
    status: str = "all",
    classes: Iterable[str] | None = None,
    rounds: tuple[int, int] | None = None,
    query: str = "",
    text_columns: Sequence[str] = (),
) -> pd.DataFrame:
    """The rows of :func:`rows_table` that pass the page's filters.

    Parameters
    ----------
    table : DataFrame
        From :func:`rows_table`.
    status : {"all", "removed", "kept"}
    classes : iterable of str, optional
        Keep only these classes (None or empty: all).
    rounds : (int, int), optional
        Removed rows only when removed in this inclusive round range; kept rows are not affected (they were
        never removed).
    query : str
        Case-insensitive substring searched in ``text_columns`` (any of them).
    text_columns : sequence of str
        Columns the query searches.
    """
    if status not in ("all", "removed", "kept"):
        raise ValueError(f"The status filter must be 'all', 'removed' or 'kept'. Got {status!r} instead.")
    mask = np.ones(len(table), dtype=bool)
    if status != "all":
        mask &= (table["status"] == status).to_numpy()
    chosen = [str(c) for c in (classes or ())]
    if chosen:
        mask &= table["class"].astype(str).isin(chosen).to_numpy()
    if rounds is not None:
        lo, hi = int(rounds[0]), int(rounds[1])
        rnd = table["round"]
        in_range = rnd.between(lo, hi).fillna(False).to_numpy(dtype=bool)
        mask &= in_range | (table["status"] == "kept").to_numpy()
    q = (query or "").strip().lower()
    if q and text_columns:
        hit = np.zeros(len(table), dtype=bool)
        for col in text_columns:
            if col in table.columns:
                hit |= (
                    table[col]
                    .astype("string")
                    .str.lower()
                    .str.contains(q, regex=False)
                    .fillna(False)
                    .to_numpy(dtype=bool)
                )
        mask &= hit
    return table.loc[mask]


# -- stability -----------------------------------------------------------------------------------------------
def stability_frame(removed: NDArray, kept: NDArray) -> tuple[pd.DataFrame, dict[str, float]]:
    """Per-row removal frequency over several runs, and a summary relative to the displayed run.

    Parameters
    ----------
    removed : ndarray of bool, shape (n_runs, n_rows)
        True where a run removed the row (see :class:`aflite_core.measures.stability.StabilityReport`).
    kept : ndarray of bool, shape (n_rows,)
        The displayed run's kept mask.

    Returns
    -------
    frame : DataFrame
        ``n_runs_removed`` and ``removal_frequency`` per row.
    summary : dict
        ``n_runs``; of the displayed run's removals: ``robust`` (removed by every run), ``sometimes``,
        ``robust_share``; ``never_elsewhere`` (removed here only); ``kept_but_removed_elsewhere``.
    """
    R = np.asarray(removed, dtype=bool)
    keep = np.asarray(kept, dtype=bool)
    if R.ndim != 2 or R.shape[1] != len(keep):
        raise ValueError(f"Got a removal matrix of shape {R.shape} for {len(keep)} rows.")
    n_runs = R.shape[0]
    count = R.sum(axis=0)
    gone = ~keep
    robust = int((gone & (count == n_runs)).sum())
    n_gone = int(gone.sum())
    frame = pd.DataFrame({"n_runs_removed": count, "removal_frequency": count / max(n_runs, 1)})
    summary = {
        "n_runs": n_runs,
        "removed_here": n_gone,
        "robust": robust,
        "sometimes": n_gone - robust,
        "robust_share": robust / n_gone if n_gone else float("nan"),
        "kept_but_removed_elsewhere": int((keep & (count > 0)).sum()),
    }
    return frame, summary


def stability_counts(frame: pd.DataFrame, kept: NDArray, n_runs: int) -> pd.DataFrame:
    """Rows by "removed in k of n runs" (k = 0..n), split by the displayed run's status (for a bar chart)."""
    keep = np.asarray(kept, dtype=bool)
    count = frame["n_runs_removed"].to_numpy()
    ks = np.arange(n_runs + 1)
    return pd.DataFrame(
        {
            "k": ks,
            "removed": [int(((count == k) & ~keep).sum()) for k in ks],
            "kept": [int(((count == k) & keep).sum()) for k in ks],
        }
    )


def with_stability(table: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """The rows table with the per-row ``removal_frequency`` across seeds added (aligned by ``row``)."""
    out = table.copy()
    out["seed_frequency"] = frame["removal_frequency"].to_numpy()[out["row"].to_numpy()]
    return out


# -- artifact discovery inputs -------------------------------------------------------------------------------
def joined_texts(frame: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """Each row's cells of ``columns`` as text joined with a space (missing cells empty), column-wise.

    What ``frame[columns].fillna("").astype(str).agg(" ".join, axis=1)`` gives, without a Python call per row
    (one column of 550,000 texts: 0.07 s instead of 19 s).

    >>> joined_texts(pd.DataFrame({"a": ["x", None], "b": ["y", "z"]}), ["a", "b"])
    ['x y', ' z']
    """
    cols = list(columns)
    out = frame[cols[0]].astype("string").fillna("")
    for col in cols[1:]:
        out = out + " " + frame[col].astype("string").fillna("")
    return out.tolist()


def artifact_texts(data: Dataset) -> tuple[list[str], str] | None:
    """The texts token artifacts are counted in, and which columns they are (None without text).

    For a sentence pair, the hypothesis (annotation artifacts live there); otherwise the text columns
    joined with a space.
    """
    if data.pair is not None:
        col = data.pair[1]
        return data.frame[col].fillna("").astype(str).tolist(), f"the hypothesis column '{col}'"
    cols = [c for c in data.text_columns if c in data.frame.columns]
    if not cols:
        return None
    joined = joined_texts(data.frame, cols)
    named = ", ".join(f"'{c}'" for c in cols)
    return joined, f"the text column{'s' * (len(cols) > 1)} {named}"


def _table_feature_columns(data: Dataset) -> list[str]:
    skip = {
        data.label_column,
        data.id_column,
        *(data.meta.get("planted_truth") or []),
        *data.text_columns,
        *(data.pair or ()),
    }
    out = []
    for col in data.frame.columns:
        s = data.frame[col]
        if col in skip or pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            continue
        out.append(str(col))
    return out


def feature_sources(data: Dataset) -> dict[str, str]:
    """Dense feature sources the artifact table can compare: key -> description.

    ``"table"`` (the numeric columns of the data's table, named) when there are at least two such columns,
    then every representation by name.
    """
    out: dict[str, str] = {}
    cols = _table_feature_columns(data)
    if len(cols) >= 2:
        out["table"] = f"numeric columns of the table ({len(cols)}, by name)"
    for key, desc in data.representation_descriptions.items():
        out[key] = f"representation {desc}"
    return out


def feature_matrix(data: Dataset, source: str) -> tuple[NDArray, list[str]]:
    """The matrix of a :func:`feature_sources` key and the names of its columns."""
    if source == "table":
        cols = _table_feature_columns(data)
        if not cols:
            raise ValueError("The table has no numeric feature columns to compare.")
        return data.frame[cols].to_numpy(dtype=np.float64), cols
    X = data.representation(source)
    return X, [f"{source}[{j}]" for j in range(X.shape[1])]


def pixel_grid(data: Dataset, source: str) -> tuple[int, int] | None:
    """The (h, w) image grid of a feature source whose columns are the pixels of grey images, row by row.

    True for the table's numeric columns or the ``"pixels"`` representation when the dataset has 2-D images
    and the source has exactly h × w columns (digits: ``pixel_0_0`` … ``pixel_7_7``); None otherwise.
    """
    if data.images is None or np.asarray(data.images).ndim != 3 or source not in ("table", "pixels"):
        return None
    h, w = np.asarray(data.images).shape[1:]
    n = (
        len(_table_feature_columns(data))
        if source == "table"
        else (data.representation(source).shape[1] if source in data.representations else -1)
    )
    return (int(h), int(w)) if n == h * w else None


# -- exports -------------------------------------------------------------------------------------------------
def export_frame(result: AFLiteResult, data: Dataset, which: str = "kept") -> pd.DataFrame:
    """The dataset's rows with every original column plus AFLite's, for download.

    Added columns: ``aflite_id`` (the stable row id), ``aflite_label`` (class name), ``aflite_status``,
    ``aflite_removed_round`` (<NA> when kept), ``aflite_first_score``, ``aflite_removal_score``,
    ``aflite_last_score``.

    Parameters
    ----------
    result : AFLiteResult
    data : Dataset
    which : {"kept", "removed", "all"}
        Rows to include: the filtered dataset (kept), the removed rows, or all.
    """
    if which not in ("kept", "removed", "all"):
        raise ValueError(f"The 'which' parameter must be 'kept', 'removed' or 'all'. Got {which!r} instead.")
    if result.n_rows != data.n_rows:
        raise ValueError(f"The run has {result.n_rows:,} rows but the dataset has {data.n_rows:,}.")
    frame = data.frame.copy()
    added = {
        "aflite_id": np.asarray(data.ids),
        "aflite_label": class_names(data, result),
        "aflite_status": np.where(result.kept, "kept", "removed"),
        "aflite_removed_round": _rounds(result),
        "aflite_first_score": _as_computed(result.first_score),
        "aflite_removal_score": _as_computed(result.removal_score),
        "aflite_last_score": _as_computed(result.last_score),
    }
    for name, values in added.items():
        frame[name] = values
    if which == "kept":
        frame = frame.loc[result.kept]
    elif which == "removed":
        frame = frame.loc[~result.kept]
    return frame.reset_index(drop=True)


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """The table as UTF-8 CSV (no index)."""
    return frame.to_csv(index=False).encode("utf-8")


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The table as Parquet (no index); object columns of mixed types are written as text."""
    buf = io.BytesIO()
    try:
        frame.to_parquet(buf, index=False)
    except (TypeError, ValueError, NotImplementedError):  # pyarrow: mixed object columns (ArrowInvalid is a ValueError)
        fixed = frame.copy()
        for col in fixed.columns:
            if fixed[col].dtype == object:
                fixed[col] = fixed[col].map(lambda v: None if v is None else str(v)).astype("string")
        buf = io.BytesIO()
        fixed.to_parquet(buf, index=False)
    return buf.getvalue()
