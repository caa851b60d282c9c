"""A run directory on disk, read back: :meth:`AFLiteResult.load`, checked before it reads and after.

The files are those :mod:`aflite_core.engine.run_record` writes. Loading checks the manifest and checksums
(any edit or truncation is refused), each table's row and column counts from its Parquet footer before its
values are read (a few-KB file declaring 10⁸ rows costs milliseconds), then shapes, dtypes, value ranges,
round numbers and that the per-row removals agree with the per-round history. Anything wrong is one
``ValueError`` sentence (:class:`RunRecordError`); nothing is half-loaded.

A run's recorded table (``table.parquet``, format version 4) is checked on load too (its size and SHA-256,
streamed: it is not parsed or held), and read by :func:`aflite_core.engine.run_table.load_run_table`.

Recorded votes (``votes.npy``, format 5) are checked the same way, then read by :mod:`~aflite_core.engine.run_votes`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._validation import shown, shown_list
from ..data import budget
from ..data.parquet_reads import read_parquet_checked
from ..data.preflight import json_bound
from .run_constants import HISTORY_COLUMNS, STOP_REASONS, STRATEGIES, TABLE_FILE, TIE_BREAKS, VOTES_FILE
from .run_record import FORMAT, FORMAT_VERSION, NULL_TAU_COLUMNS, ROW_COLUMNS, _canonical, _sha
from .run_votes import VotesError, read_votes, votes_meta_of

__all__ = ["MAX_META_BYTES", "RunRecordError", "load_run"]

#: result.json is small (parameters, classes, provenance); larger is not a run
MAX_META_BYTES = 64 * 2**20
#: with a row limit, a run may record at most this many per-round score cells per row
MAX_ROUNDS_PER_ROW_LIMIT = 1000
#: text ids may average this many bytes (a refused Parquet string column expands beyond it)
MAX_ID_BYTES = 1024

PARAM_TYPES = {
    "target_size": int,
    "train_size": int,
    "slice_size": int,
    "n_partitions": int,
    "tau": float,
    "strategy": str,
    "model": dict,
    "seed": int,
}


class _Bad(ValueError):
    """A sentence fragment saying what is wrong (wrapped with the directory's name)."""


class RunRecordError(ValueError):
    """Why a folder does not hold a usable run; ``reason`` is the part after the folder's name."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _read_file(src: Path, name: str, manifest: dict | None) -> bytes:
    path = src / name
    if path.is_symlink() or not path.is_file():
        raise _Bad(f"it has no {name}")
    size = path.stat().st_size
    if manifest is not None:
        entry = manifest.get(name)
        if not isinstance(entry, dict) or entry.get("bytes") != size:
            raise _Bad(
                f"{name} is inconsistent with result.json ({size:,} bytes, saved as {_num(entry, 'bytes')}: "
                "truncated or changed)"
            )
        data = path.read_bytes()
        if _sha(data) != entry.get("sha256"):
            raise _Bad(f"{name} is inconsistent with result.json (its sha256 differs: changed since it was saved)")
        return data
    return path.read_bytes()


def _check_streamed(src: Path, name: str, manifest: dict) -> None:
    """Check a large file's size and sha256 against the manifest, one MB at a time (nothing is kept)."""
    import hashlib

    path = src / name
    if path.is_symlink() or not path.is_file():
        raise _Bad(f"it has no {name}")
    entry = manifest.get(name)
    size = path.stat().st_size
    if not isinstance(entry, dict) or entry.get("bytes") != size:
        raise _Bad(
            f"{name} is inconsistent with result.json ({size:,} bytes, saved as {_num(entry, 'bytes')}: "
            "truncated or changed)"
        )
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    if h.hexdigest() != entry.get("sha256"):
        raise _Bad(f"{name} is inconsistent with result.json (its sha256 differs: changed since it was saved)")


def _table_meta(meta: dict, n_rows: int) -> dict:
    """result.json's entry of the recorded table, checked."""
    entry = _need(meta, "table", dict)
    columns, id_column = entry.get("columns"), entry.get("id_column")
    if entry.get("rows") != n_rows or not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise _Bad("its table entry in result.json is malformed")
    if id_column is not None and id_column not in columns:
        raise _Bad("its table entry names an id column the table does not have")
    return entry


def _num(entry: Any, key: str) -> str:
    value = entry.get(key) if isinstance(entry, dict) else None
    return f"{value:,}" if isinstance(value, int) else "size"


def _need(meta: dict, key: str, kinds: type | tuple, *, optional: bool = False) -> Any:
    if key not in meta:
        if optional:
            return None
        raise _Bad(f"result.json lacks '{key}'")
    value = meta[key]
    if optional and value is None:
        return None
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise _Bad(f"result.json's '{key}' has the wrong type")
    if not isinstance(value, kinds):
        raise _Bad(f"result.json's '{key}' has the wrong type")
    return value


def _count(meta: dict, key: str, low: int, *, optional: bool = False) -> int | None:
    value = _need(meta, key, int, optional=optional)
    if value is not None and value < low:
        raise _Bad(f"result.json's '{key}' is {value}, below {low}")
    return value


def _table(data: bytes, name: str, rows: int, columns: list[str], *, id_kind: str | None = None) -> pd.DataFrame:
    with budget.parse(f"Run file '{name}'"):  # the read and its pandas copy below, under one memory budget
        return _checked_table(data, name, rows, columns, id_kind)


def _checked_table(data: bytes, name: str, rows: int, columns: list[str], id_kind: str | None) -> pd.DataFrame:
    import pyarrow as pa

    table = read_parquet_checked(
        data,
        name,
        expected_rows=rows,
        max_columns=len(columns) + 1,
        flat=True,
        max_text_bytes=MAX_ID_BYTES * max(rows, 1) + 2**20,
    )
    want = list(columns) + (["id"] if id_kind else [])
    if table.column_names != want:
        raise _Bad(f"{name} has the columns {shown_list(table.column_names)}, not {shown_list(want)}")
    for field in table.schema:
        t = field.type
        if field.name == "id":
            ok = {"int": pa.types.is_integer, "float": pa.types.is_floating}.get(
                id_kind or "", lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)
            )(t)
        elif field.name in ("y", "removed_round"):
            ok = pa.types.is_integer(t)
        elif field.name == "kept":
            ok = pa.types.is_boolean(t)
        else:
            ok = pa.types.is_floating(t) or pa.types.is_integer(t)
        if not ok:
            raise _Bad(f"{name}'s column {shown(field.name)} has type {t}")
        if field.name != "id" and table.column(field.name).null_count and not pa.types.is_floating(t):
            raise _Bad(f"{name}'s column {shown(field.name)} has missing values")
    return table.to_pandas()


def _ints(frame: pd.DataFrame, col: str) -> NDArray[np.int32]:
    values = frame[col].to_numpy()
    if values.size and (values.min() < np.iinfo(np.int32).min or values.max() > np.iinfo(np.int32).max):
        raise _Bad(f"column {col} holds values out of range")
    return values.astype(np.int32)


def _scores_in_range(values: NDArray, what: str) -> NDArray[np.float32]:
    arr = np.asarray(values, dtype=np.float32)
    finite = arr[np.isfinite(arr)]
    if np.isinf(arr).any() or (finite.size and (finite.min() < 0 or finite.max() > 1)):
        raise _Bad(f"{what} holds scores outside [0, 1]")
    return arr


def _check_rows(
    prefix: str,
    y,
    kept,
    rr,
    first,
    last,
    removal,
    n_classes: int,
    n_rounds: int,
    history: pd.DataFrame,
    removed_col: str,
) -> None:
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise _Bad(f"{prefix}label codes lie outside its {n_classes} classes")
    if rr.size and (rr.min() < -1 or rr.max() > n_rounds or (rr == 0).any()):
        raise _Bad(f"{prefix}rows were removed in rounds the run does not have")
    if not np.array_equal(kept, rr < 0):
        raise _Bad(f"{prefix}'removed_round' does not agree with 'kept'")
    counts = np.bincount(rr[rr > 0], minlength=n_rounds + 1)[1:]
    recorded = history[removed_col].to_numpy()
    if not np.array_equal(counts, recorded):
        bad = int(np.flatnonzero(counts != recorded)[0]) + 1
        raise _Bad(f"the {prefix}rows removed in round {bad} disagree with the history")
    if not (np.isfinite(removal) == ~kept).all():
        raise _Bad(f"{prefix}removal scores are missing for removed rows or present for kept ones")
    del first, last


def load_run(
    directory: str | Path, result_type: type, *, max_rows: int | None = None, expected_rows: int | None = None
):
    """Read and check a run written by :func:`save_run` (or by the CLI); see the module docstring.

    Parameters
    ----------
    directory : str or Path
        The run directory.
    result_type : type
        The class to build (:class:`~aflite_core.AFLiteResult`, whose :meth:`~aflite_core.AFLiteResult.load`
        calls this; passed in so this module never imports the result module that imports it).
    max_rows : int, optional
        Refuse runs on more rows (checked from result.json and the Parquet footers before any table is read).
    expected_rows : int, optional
        Refuse runs on another number of rows (e.g. the dataset the run is opened for).

    Returns
    -------
    AFLiteResult

    Raises
    ------
    ValueError
        One sentence saying why the directory does not hold a usable run.
    """
    src = Path(directory)
    try:
        return _load(src, result_type, max_rows, expected_rows)
    except (_Bad, VotesError) as exc:
        raise RunRecordError(f"'{src}' holds an incomplete or damaged AFLite run: {exc}.", str(exc)) from None
    except (RunRecordError, budget.MemoryBudgetError):  # the budget's own sentence, as every reader says it
        raise
    except ValueError as exc:
        raise RunRecordError(str(exc), str(exc).replace(f"'{src}' ", "it ").rstrip(".")) from None
    except Exception as exc:  # any other failure of a damaged record is one sentence too, never a traceback
        what = f"it is damaged ({type(exc).__name__})"
        raise RunRecordError(f"'{src}' holds an incomplete or damaged AFLite run: {what}.", what) from None


def _load(src: Path, result_type: type, max_rows: int | None, expected_rows: int | None):
    """The run in ``src``, read step by step (each step checks what it reads; the first wrong thing is raised)."""
    head = _read_header(src, max_rows, expected_rows)
    _check_file_list(src, head)
    history = _read_history(src, head)
    rows = _read_rows(src, "rows.parquet", head, head.n_rows, head.ids_meta, history, "", "n_removed")
    if head.n_rounds and int(history["size_after"].iloc[-1]) != int(rows.kept.sum()):
        raise _Bad("the rows kept disagree with the history")
    scores, counts = _read_matrix(
        src, "scores.parquet", head.manifest, head.n_rows, head.n_rounds, head.has_scores, head.count_dtype
    )
    ids = _ids(rows.frame, head.ids_meta)
    eval_kw = _read_eval(src, head, history) if head.n_eval is not None else {}
    eval_kw.update(_read_nulls(src, head))
    votes = None if head.votes_meta is None else read_votes(src / VOTES_FILE, head.votes_meta, counts)
    result = result_type(
        params=head.params,
        classes=tuple(head.classes),
        y=rows.y,
        kept=rows.kept,
        removed_round=rows.removed_round,
        scores=scores,
        n_predictions=counts,
        first_score=rows.first,
        last_score=rows.last,
        removal_score=rows.removal,
        history=history,
        stop_reason=head.stop_reason,
        provenance=_need(head.meta, "provenance", dict, optional=True) or {},
        ids=ids,
        votes=votes,
        **eval_kw,
    )
    _ = result.stop_message  # the parameters it needs are there and format
    return result


@dataclass(frozen=True)
class _Header:
    """What a run's result.json says, checked: its format, manifest, parameters, classes and counts."""

    meta: dict
    version: int
    manifest: dict | None
    params: dict
    classes: list
    stop_reason: str
    n_rows: int
    n_rounds: int
    n_eval: int | None
    has_scores: bool
    count_dtype: str | None
    ids_meta: dict | None
    eval_ids_meta: dict | None
    null_k: int | None
    votes_meta: dict | None = None


def _read_meta(src: Path) -> tuple[dict, int, dict | None]:
    """result.json read within the budget and checked: a run of a known format version, unchanged since saved.

    Returns the parsed record, its format version and its manifest (None before format version 2).
    """
    meta_path = src / "result.json"
    if not src.is_dir():
        raise ValueError(f"'{src}' is not a folder.")
    if not meta_path.is_file():
        raise ValueError(f"'{src}' is not an AFLite run directory: it has no result.json.")
    if meta_path.stat().st_size > MAX_META_BYTES:
        raise _Bad("its result.json is far larger than any run's")
    try:
        raw = meta_path.read_bytes()
        with budget.parse(f"Run file '{meta_path.name}'") as parse:  # nested JSON would build far more than it is
            parse.reserve(json_bound(raw), "its JSON values")
            meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _Bad("result.json is not valid JSON (truncated or edited)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = shown(meta.get("format")) if isinstance(meta, dict) else "none"
        raise ValueError(f"'{src}' does not hold an AFLite Studio run (format {found}).")
    version = meta.get("format_version", 0)
    if not isinstance(version, int) or version < 1:
        raise _Bad("result.json has no valid format version")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"'{src}' was written by a newer AFLite Studio (format version {version}); upgrade to read it."
        )
    manifest = None
    if version >= 2:
        body = {k: v for k, v in meta.items() if k != "checksum"}
        if meta.get("checksum") != _sha(_canonical(body)):
            raise _Bad("result.json has changed since it was saved (its checksum differs)")
        manifest = _need(meta, "files", dict)
    return meta, version, manifest


def _check_params(meta: dict) -> tuple[dict, list, str]:
    """The run's parameters (each of its type, in range), its classes and its stop reason."""
    params = _need(meta, "params", dict)
    for key, kind in PARAM_TYPES.items():
        value = params.get(key)
        if not isinstance(value, int if kind is int else (int, float) if kind is float else kind) or isinstance(
            value, bool
        ):
            raise _Bad(f"its parameter '{key}' is missing or of the wrong type")
    if not 0 <= params["tau"] <= 1 or params["strategy"] not in STRATEGIES or params["n_partitions"] < 1:
        raise _Bad("its parameters are out of range")
    if params.get("tie_break", "position") not in TIE_BREAKS:
        raise _Bad(f"its tie-break {shown(params.get('tie_break'))} is unknown")
    params = {**params, "tie_break": params.get("tie_break", "position")}  # written before the option: "position"
    classes = _need(meta, "classes", list)
    if len(classes) < 2 or not all(isinstance(c, (str, int, float, bool)) or c is None for c in classes):
        raise _Bad("its classes are not a list of at least two names")
    stop_reason = _need(meta, "stop_reason", str)
    if stop_reason not in STOP_REASONS:
        raise _Bad(f"its stop reason {shown(stop_reason)} is unknown")
    return params, classes, stop_reason


def _read_header(src: Path, max_rows: int | None, expected_rows: int | None) -> _Header:
    """result.json read and checked, its counts against each other and against ``max_rows`` / ``expected_rows``."""
    meta, version, manifest = _read_meta(src)
    params, classes, stop_reason = _check_params(meta)
    n_rows = _count(meta, "n_rows", 1)
    n_rounds = _count(meta, "n_rounds", 0)
    n_eval = _count(meta, "n_eval", 1, optional=True)
    has_scores = _need(meta, "has_scores", bool)
    count_dtype = _need(meta, "n_predictions_dtype", str, optional=True)
    if count_dtype not in (None, "uint16", "int32"):
        raise _Bad("its prediction-count dtype is unknown")
    ids_meta = _need(meta, "ids", dict, optional=True)
    eval_ids_meta = _need(meta, "eval_ids", dict, optional=True)
    for m in (ids_meta, eval_ids_meta):
        if m is not None and m.get("kind") not in ("int", "float", "str", "repr"):
            raise _Bad("its id kind is unknown")
    if eval_ids_meta is not None and n_eval is None:
        raise _Bad("it has evaluation ids but no evaluation set")
    if expected_rows is not None and n_rows != expected_rows:
        raise _Bad(f"it was made on {n_rows:,} rows, but the dataset it is opened for has {expected_rows:,} rows")
    if max_rows is not None and n_rows > max_rows:
        raise _Bad(f"it was made on {n_rows:,} rows, more than the {max_rows:,} allowed here")
    if n_rounds > n_rows:
        raise _Bad(f"it claims {n_rounds:,} rounds on {n_rows:,} rows")
    if has_scores and max_rows is not None and n_rounds > MAX_ROUNDS_PER_ROW_LIMIT:
        raise _Bad(f"it has {n_rounds:,} rounds of scores, more than the {MAX_ROUNDS_PER_ROW_LIMIT:,} allowed here")
    null_k = _count(meta, "null_permutations", 1, optional=True) if version >= 3 else None
    if null_k is not None and params.get("null_permutations") != null_k:
        raise _Bad("its null's number of permutations disagrees with its parameters")
    return _Header(
        votes_meta=votes_meta_of(meta, version, n_rounds, n_rows, len(classes), has_scores),
        meta=meta,
        version=version,
        manifest=manifest,
        params=params,
        classes=classes,
        stop_reason=stop_reason,
        n_rows=n_rows,
        n_rounds=n_rounds,
        n_eval=n_eval,
        has_scores=has_scores,
        count_dtype=count_dtype,
        ids_meta=ids_meta,
        eval_ids_meta=eval_ids_meta,
        null_k=null_k,
    )


def _check_file_list(src: Path, head: _Header) -> None:
    """The manifest lists exactly the files of such a run; a recorded table is checked (streamed, not parsed)."""
    names = ["rows.parquet", "history.parquet", "scores.parquet"]
    if head.n_eval is not None:
        names += ["eval_rows.parquet", "eval_scores.parquet"]
    if head.null_k is not None:
        names += ["null_counts.parquet"] + (["eval_null_counts.parquet"] if head.n_eval is not None else [])
    has_table = head.version >= 4 and head.meta.get("table") is not None
    if has_table:
        names.append(TABLE_FILE)
        _table_meta(head.meta, head.n_rows)
    names += [VOTES_FILE] if head.votes_meta is not None else []
    if head.manifest is not None and sorted(head.manifest) != sorted(names):
        raise _Bad("its manifest does not list the files of a run")
    if has_table:
        _check_streamed(src, TABLE_FILE, head.manifest)
    for name in [VOTES_FILE] if head.votes_meta is not None else []:
        _check_streamed(src, name, head.manifest)


def _read_history(src: Path, head: _Header) -> pd.DataFrame:
    """history.parquet: one row per round, numbered 1, 2, … (format 1: the columns of its day)."""
    history = _table(
        _read_file(src, "history.parquet", head.manifest),
        "history.parquet",
        head.n_rounds,
        list(HISTORY_COLUMNS) if head.version >= 2 else list(_legacy_history_columns(src)),
    )
    if head.version < 2:
        missing = {"round", "n_removed", "size_after", "eval_removed", "n_qualified"} - set(history.columns)
        if missing:
            raise _Bad(f"its history lacks {shown_list(sorted(missing))}")
    if not np.array_equal(history["round"].to_numpy(), np.arange(1, head.n_rounds + 1)):
        raise _Bad("its history's rounds are not numbered 1, 2, …")
    return history


@dataclass(frozen=True)
class _Rows:
    """A rows file's columns, checked against the run's classes, rounds and history."""

    frame: pd.DataFrame
    y: NDArray
    kept: NDArray
    removed_round: NDArray
    first: NDArray
    last: NDArray
    removal: NDArray


def _read_rows(
    src: Path,
    name: str,
    head: _Header,
    n: int,
    id_meta: dict | None,
    history: pd.DataFrame,
    prefix: str,
    removed_col: str,
) -> _Rows:
    """``rows.parquet`` or ``eval_rows.parquet``: ``n`` rows, their labels, removals and scores checked."""
    frame = _table(
        _read_file(src, name, head.manifest), name, n, list(ROW_COLUMNS), id_kind=id_meta["kind"] if id_meta else None
    )
    y, rr = _ints(frame, "y"), _ints(frame, "removed_round")
    kept = frame["kept"].to_numpy(bool)
    first, last, removal = (
        _scores_in_range(frame[c].to_numpy(), name) for c in ("first_score", "last_score", "removal_score")
    )
    _check_rows(prefix, y, kept, rr, first, last, removal, len(head.classes), head.n_rounds, history, removed_col)
    return _Rows(frame, y, kept, rr, first, last, removal)


def _read_eval(src: Path, head: _Header, history: pd.DataFrame) -> dict[str, Any]:
    """The evaluation set's rows and scores, as the result's ``eval_*`` arguments."""
    erows = _read_rows(
        src, "eval_rows.parquet", head, head.n_eval, head.eval_ids_meta, history, "evaluation ", "eval_removed"
    )
    escores, _ = _read_matrix(
        src, "eval_scores.parquet", head.manifest, head.n_eval, head.n_rounds, head.has_scores, None
    )
    return {
        "eval_y": erows.y,
        "eval_kept": erows.kept,
        "eval_removed_round": erows.removed_round,
        "eval_scores": escores,
        "eval_first_score": erows.first,
        "eval_last_score": erows.last,
        "eval_removal_score": erows.removal,
        "eval_ids": _ids(erows.frame, head.eval_ids_meta),
    }


def _read_nulls(src: Path, head: _Header) -> dict[str, Any]:
    """The null files of a run with a null (``null_counts``, and ``eval_null_counts`` with an evaluation set)."""
    if head.null_k is None:
        return {}
    n_classes = len(head.classes)
    out = {"null_counts": _read_null(src, "null_counts.parquet", head.manifest, head.n_rounds, n_classes, head.n_rows)}
    if head.n_eval is not None:
        out["eval_null_counts"] = _read_null(
            src, "eval_null_counts.parquet", head.manifest, head.n_rounds, n_classes, head.n_eval
        )
    return out


def _legacy_history_columns(src: Path) -> list[str]:
    """Format 1 wrote the history with the columns of its day: take them from the file's schema."""
    import pyarrow.parquet as pq

    try:
        return list(pq.ParquetFile(str(src / "history.parquet")).schema_arrow.names)
    except Exception:  # the real read below says what is wrong
        return []


def _read_matrix(
    src: Path, name: str, manifest: dict | None, n: int, n_rounds: int, has_scores: bool, count_dtype: str | None
):
    data = _read_file(src, name, manifest)
    if not has_scores:
        read_parquet_checked(data, name, expected_rows=0, max_columns=0, flat=True)
        return None, None
    cols = []
    for r in range(1, n_rounds + 1):
        cols.append(f"p_round_{r}")
        if count_dtype:
            cols.append(f"n_round_{r}")
    frame = _table(data, name, n if cols else 0, cols)
    scores = np.empty((n_rounds, n), dtype=np.float32)
    counts = np.empty((n_rounds, n), dtype=np.dtype(count_dtype)) if count_dtype else None
    for r in range(n_rounds):
        scores[r] = _scores_in_range(frame[f"p_round_{r + 1}"].to_numpy(), name)
        if counts is not None:
            values = frame[f"n_round_{r + 1}"].to_numpy()
            if values.size and (values.min() < 0 or values.max() > np.iinfo(counts.dtype).max):
                raise _Bad(f"{name} holds prediction counts out of range")
            counts[r] = values.astype(counts.dtype)
    return scores, counts


def _read_null(src: Path, name: str, manifest: dict | None, n_rounds: int, n_classes: int, n_rows: int):
    """A null file (one row per round and class, one column per τ of the grid) as (rounds, classes, 101)."""
    frame = _table(_read_file(src, name, manifest), name, n_rounds * n_classes, ["round", "class", *NULL_TAU_COLUMNS])
    want_round = np.repeat(np.arange(1, n_rounds + 1), n_classes)
    want_class = np.tile(np.arange(n_classes), n_rounds)
    if not (np.array_equal(frame["round"], want_round) and np.array_equal(frame["class"], want_class)):
        raise _Bad(f"{name}'s rows are not one per round and class in order")
    counts = frame[list(NULL_TAU_COLUMNS)].to_numpy(dtype=np.float64).reshape(n_rounds, n_classes, -1)
    ordered = (np.diff(counts, axis=2) <= 0).all()
    if not np.isfinite(counts).all() or counts.min(initial=0) < 0 or counts.max(initial=0) > n_rows or not ordered:
        raise _Bad(f"{name} holds counts that are not non-increasing numbers of rows in [0, {n_rows:,}]")
    return counts


def _ids(frame: pd.DataFrame, meta: dict | None) -> NDArray | None:
    if meta is None:
        return None
    col = frame["id"]
    if col.isna().any():
        raise _Bad("some row ids are missing")
    if meta["kind"] in ("int", "float"):
        return col.to_numpy()
    out = np.empty(len(col), dtype=object)
    out[:] = [str(v) for v in col.tolist()]
    return out
