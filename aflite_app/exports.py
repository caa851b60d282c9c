"""Tables and download bytes of the Inspect page, and the safe loader of a saved run (pure; no Streamlit).

* :func:`rows_table` - one row per example of a run: thumbnail or texts, class, kept/removed, round removed,
  predictability (first, at removal, last, per round); :func:`filter_rows` applies the page's view filters;
* :func:`export_frame`, :func:`csv_bytes`, :func:`parquet_bytes` - the filtered dataset (all original
  columns plus AFLite's) as files;
* :func:`run_zip_bytes` / :func:`load_run_zip` - a run's :meth:`~aflite_core.AFLiteResult.save` directory as
  an in-memory zip, and back, refusing anything that is not a small, well-formed run archive
  (:class:`RunArchiveError`); :func:`check_run_matches` checks a loaded run belongs to a dataset;
* :func:`png_bytes` / :func:`image_thumbnails` - a tiny PNG encoder (numpy + zlib) for image thumbnails.
"""

from __future__ import annotations

import io
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from aflite_core import AFLiteResult
from aflite_core.data.datasets import Dataset
from aflite_core.engine.run_record import RUN_FILES, RunRecordError  # nothing else is ever extracted

from . import settings
from .images import image_thumbnails, png_bytes, png_data_uri

__all__ = [
    "MAX_ARCHIVE_BYTES",
    "MAX_MEMBER_BYTES",
    "MAX_TOTAL_BYTES",
    "RUN_FILES",
    "RunArchiveError",
    "artifact_texts",
    "check_run_matches",
    "class_names",
    "csv_bytes",
    "export_frame",
    "feature_matrix",
    "feature_sources",
    "filter_rows",
    "human_bytes",
    "image_thumbnails",
    "load_run_zip",
    "parquet_bytes",
    "pixel_grid",
    "png_bytes",
    "png_data_uri",
    "rows_table",
    "run_zip_bytes",
    "stability_counts",
    "stability_frame",
    "text_display_columns",
    "with_stability",
]

#: size limits of an uploaded run archive: the zip itself, any one file in it, all files together
MAX_ARCHIVE_BYTES = settings.load().archive_max_bytes
MAX_MEMBER_BYTES = settings.load().archive_max_member_bytes
MAX_TOTAL_BYTES = settings.load().archive_max_total_bytes
#: entries a run archive may list at all (a run has at most six files)
MAX_ENTRIES = settings.load().archive_max_entries
#: entries that archivers add and that are skipped silently
_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")

#: columns of :func:`rows_table` (text columns of the data come after ``image``)
ROW_COLUMNS = ("row", "id", "image", "class", "status", "round", "p_first", "p_removal", "p_last", "p_rounds")


class RunArchiveError(ValueError):
    """An uploaded run archive was refused; the message says why in words."""


# -- the rows table ------------------------------------------------------------------------------------------
def class_names(data: Dataset, result: AFLiteResult) -> NDArray:
    """Class name of every row of the run (the dataset's names; results may hold label codes only)."""
    names = np.empty(data.n_classes, dtype=object)
    names[:] = [str(c) for c in data.classes]
    return names[np.asarray(result.y)]


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


def rows_table(result: AFLiteResult, data: Dataset, *, thumbnails: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per example of the run, ready to show in a sortable table.

    Parameters
    ----------
    result : AFLiteResult
        A run on ``data`` (same rows, in the same order).
    data : Dataset
    thumbnails : sequence of str, optional
        Image data URIs (:func:`image_thumbnails`), one per row.

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
    if result.scores is not None:
        table["p_rounds"] = _scored_lists(result.scores)
    for col in data.meta.get("planted_truth", []) or []:
        if col in data.frame.columns and col not in table.columns:
            table[col] = data.frame[col].to_numpy()
    return table


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
    joined = data.frame[cols].fillna("").astype(str).agg(" ".join, axis=1).tolist()
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


# -- run archives --------------------------------------------------------------------------------------------
def run_zip_bytes(result: AFLiteResult) -> bytes:
    """The run's :meth:`~aflite_core.AFLiteResult.save` directory, zipped in memory (files at the root)."""
    with tempfile.TemporaryDirectory(prefix="aflite-run-") as tmp:
        folder = result.save(Path(tmp) / "run")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(folder.iterdir()):
                if path.is_file():
                    zf.write(path, arcname=path.name)
    return buf.getvalue()


def human_bytes(n: float) -> str:
    """A byte count for people: "512 bytes", "1.5 KB", "200.0 MB", "1.2 GB" (powers of 1024)."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _unsafe_name(name: str) -> str | None:
    """Why an archive member name is unsafe, or None."""
    if not name or "\x00" in name:
        return "an empty or NUL-containing name"
    if "\\" in name:
        return "a backslash in its name"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if any(part == ".." for part in name.split("/")):
        return "'..' in its path (it would be written outside the folder)"
    return None


def _is_junk(name: str) -> bool:
    return name.startswith(_JUNK[0]) or PurePosixPath(name).name in _JUNK[1:]


def _plan(infos: list[zipfile.ZipInfo], max_member: int, max_total: int) -> dict[str, zipfile.ZipInfo]:
    """The run files to extract (base name -> entry), after every safety check of the listing."""
    if len(infos) > MAX_ENTRIES:
        raise RunArchiveError(
            f"The archive lists {len(infos):,} entries; a saved run has at most "
            f"{len(RUN_FILES)} files. It is not a run archive."
        )
    chosen: dict[str, zipfile.ZipInfo] = {}
    folders: set[str] = set()
    for info in infos:
        name = info.filename
        why = _unsafe_name(name)
        if why is not None:
            raise RunArchiveError(f"Refused: the archive entry {name!r} has {why}.")
        mode = (info.external_attr >> 16) & 0xFFFF
        if stat.S_ISLNK(mode):
            raise RunArchiveError(f"Refused: the archive entry {name!r} is a symbolic link.")
        if info.flag_bits & 0x1:
            raise RunArchiveError(f"The archive entry {name!r} is encrypted; save the run without a password.")
        if info.is_dir() or _is_junk(name):
            continue
        path = PurePosixPath(name)
        if path.name not in RUN_FILES:
            continue  # never extracted
        if len(path.parts) > 2:
            raise RunArchiveError(
                f"The run file {name!r} is nested too deep; put the run's files at the top of "
                "the archive or in one folder."
            )
        if path.name in chosen:
            raise RunArchiveError(
                f"The archive holds '{path.name}' twice ({chosen[path.name].filename!r} and "
                f"{name!r}); it must hold one run."
            )
        if info.file_size > max_member:
            raise RunArchiveError(
                f"Refused: '{name}' would unpack to {human_bytes(info.file_size)}, more than the "
                f"limit of {human_bytes(max_member)} per file."
            )
        chosen[path.name] = info
        folders.add(str(path.parent))
    if "result.json" not in chosen:
        raise RunArchiveError(
            "The archive has no result.json: it is not a saved AFLite run. Download one with "
            "'Run record · zip' on the Inspect page, or zip the folder the CLI wrote with --out."
        )
    if len(folders) > 1:
        raise RunArchiveError(
            f"The run files are spread over several folders ({sorted(folders)}); the archive must hold one run."
        )
    total = sum(i.file_size for i in chosen.values())
    if total > max_total:
        raise RunArchiveError(
            f"Refused: the run files would unpack to {human_bytes(total)}, more than the limit of "
            f"{human_bytes(max_total)}."
        )
    return chosen


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, budget: int) -> int:
    """Copy one member to ``dest`` reading at most its declared size (a lying header cannot inflate more)."""
    limit = min(info.file_size, budget)
    written = 0
    with zf.open(info) as src, open(dest, "xb") as out:
        while True:
            block = src.read(min(1 << 20, limit - written + 1))
            if not block:
                break
            written += len(block)
            if written > limit:
                raise RunArchiveError(
                    f"Refused: '{info.filename}' unpacks to more than it declares ({human_bytes(info.file_size)})."
                )
            out.write(block)
    return written


def load_run_zip(
    payload: bytes,
    *,
    name: str = "the archive",
    max_archive_bytes: int = MAX_ARCHIVE_BYTES,
    max_member_bytes: int = MAX_MEMBER_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_rows: int | None = None,
    expected_rows: int | None = None,
) -> AFLiteResult:
    """Read a run from the bytes of a zip written by :func:`run_zip_bytes` (or a zipped CLI ``--out`` folder).

    Safe with untrusted bytes: only the known run files (:data:`RUN_FILES`, at the top or in one folder) are
    extracted, into a fresh temporary directory, by base name; entries with absolute paths, ``..``, backslashes
    or symbolic links, encrypted entries, more than ``max_member_bytes`` in one file or ``max_total_bytes`` in
    all (as declared, and enforced while unpacking) refuse the whole archive. The result is loaded with
    :meth:`AFLiteResult.load` (Parquet + JSON, never pickle) and checked for consistency.

    Parameters
    ----------
    payload : bytes
        The archive.
    name : str
        How to call it in messages (the file name).
    max_archive_bytes, max_member_bytes, max_total_bytes : int
        Limits of the archive, of one unpacked file, of all unpacked files.
    max_rows, expected_rows : int, optional
        Refuse runs on more rows, or on another number of rows than the dataset's: checked from result.json and
        the Parquet footers before any table is read, so a tiny archive declaring 10⁸ rows costs milliseconds.

    Returns
    -------
    AFLiteResult

    Raises
    ------
    RunArchiveError
        (a ValueError) saying in words why the bytes are not a usable run.
    """
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise RunArchiveError(f"Expected the bytes of a zip archive. Got {type(payload).__name__}.")
    payload = bytes(payload)
    if len(payload) > max_archive_bytes:
        raise RunArchiveError(
            f"Refused: {name} is {human_bytes(len(payload))}, more than the limit of {human_bytes(max_archive_bytes)}."
        )
    if not payload:
        raise RunArchiveError(f"{name} is empty.")
    try:
        zf = zipfile.ZipFile(io.BytesIO(payload))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        raise RunArchiveError(
            f"{name} is not a zip archive (or it is damaged). Upload the 'Run record' zip the Inspect page downloads."
        ) from None
    with zf, tempfile.TemporaryDirectory(prefix="aflite-upload-") as tmp:
        plan = _plan(zf.infolist(), max_member_bytes, max_total_bytes)
        budget = max_total_bytes
        folder = Path(tmp) / "run"
        folder.mkdir()
        try:
            for base, info in plan.items():
                budget -= _extract(zf, info, folder / base, budget)
        except RunArchiveError:
            raise
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError, zlib.error) as exc:
            raise RunArchiveError(f"{name} could not be unpacked: {exc}") from None
        try:
            result = AFLiteResult.load(folder, max_rows=max_rows, expected_rows=expected_rows)
        except RunRecordError as exc:
            raise RunArchiveError(f"{name} does not hold a readable AFLite run: {exc.reason}.") from None
    return result


def _same_ids(a: NDArray, b: NDArray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iuf" and b.dtype.kind in "iuf":
        return bool(np.array_equal(a, b))
    return [str(v) for v in a.tolist()] == [str(v) for v in b.tolist()]


def check_run_matches(result: AFLiteResult, data: Dataset, *, data_label: str = "the current dataset") -> None:
    """Raise ValueError, in words, when a loaded run was not made on ``data``'s rows.

    Checks the number of rows, the ids (when the run has ids) and the labels of every row.
    """
    if result.n_rows != data.n_rows:
        raise ValueError(
            f"This run was made on {result.n_rows:,} rows, but {data_label} has {data.n_rows:,} rows. "
            "Pick the dataset the run was made on in the sidebar, then open the run again."
        )
    if result.ids is not None and not _same_ids(result.ids, data.ids):
        n_diff = int(
            np.sum(
                np.asarray([str(v) for v in result.ids.tolist()], dtype=object)
                != np.asarray([str(v) for v in np.asarray(data.ids).tolist()], dtype=object)
            )
        )
        raise ValueError(
            f"This run has the same number of rows as {data_label}, but {n_diff:,} of its row ids "
            "differ: it was made on other rows (or in another order)."
        )
    names = np.asarray([str(c) for c in result.classes], dtype=object)[result.y]
    if tuple(str(c) for c in result.classes) == tuple(str(c) for c in range(data.n_classes)):
        same = np.array_equal(result.y, data.y)  # a run on label codes (what the app and most callers pass)
    else:
        same = bool((names == np.asarray([str(c) for c in data.labels], dtype=object)).all())
    if not same:
        raise ValueError(f"This run's labels differ from {data_label}'s: it was made on other data.")
