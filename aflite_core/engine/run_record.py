"""A run directory on disk, written: :meth:`AFLiteResult.save`, crash-consistent, with a manifest of checksums.

Files: ``result.json`` (parameters, classes, stop reason, provenance, and a manifest with the size and sha256
of every other file plus a checksum of itself), ``rows.parquet``, ``history.parquet``, ``scores.parquet`` and,
with an evaluation set, ``eval_rows.parquet`` / ``eval_scores.parquet``; a run with a null
(``null_permutations``, format 3 on) adds ``null_counts.parquet`` (and ``eval_null_counts.parquet``): one row
per round and class, the columns ``round``, ``class`` and ``ge_0.00`` … ``ge_1.00`` (mean null count at
p ≥ τ). A run with a recorded table (format 4 on: the user's texts and metadata, one row per run row,
:mod:`aflite_core.engine.run_table`) adds ``table.parquet``, described by ``result.json``'s ``"table"`` entry.
A run with recorded votes (format 5 on: ``AFLiteResult.votes``, per round, row and class, the held-out
predictions that went to that class) adds ``votes.npy``: one plain ``.npy`` array (rounds, N, classes) of int16
(int32 from m = 32,768), described by ``result.json``'s ``"votes"`` entry and loaded memory-mapped.
Never pickle. Records of formats 1 and 2 have no null and load with ``null_counts`` None; records before
format 5 have no votes and load with ``votes`` None ("votes not recorded").

**Saving** builds the complete run in a hidden sibling folder and swaps it in (:mod:`aflite_core._durable`):
a reader sees the old run, no run for a moment, or the new one, never a mix. Two saves into one folder (other
processes or threads) take turns: each holds the folder's lock file ``.NAME.lock`` beside it
(:mod:`aflite_core._folder_lock`); the second waits for the first, up to 10 s, then refuses in one sentence.
A CLI run's ``cli_args.json``, ``checkpoint/`` and ``inputs/`` move into the new folder when they belong to the
run being saved.

**Loading** (:meth:`AFLiteResult.load`) checks every file against this manifest before it reads a table:
:mod:`aflite_core.engine.run_loading`.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _durable
from .._folder_lock import folder_lock
from .._utils import json_default
from .._validation import shown_list
from .run_constants import TABLE_FILE, VOTES_FILE
from .run_votes import npy_bytes

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ROW_COLUMNS",
    "RUN_FILES",
    "encode_run",
    "is_run_directory",
    "save_run",
    "table_parquet_bytes",
]

FORMAT = "aflite-studio-run"
#: 3: the null (``null_counts.parquet``, ``eval_null_counts.parquet``, ``null_permutations`` in result.json)
#: 4: the recorded table (``table.parquet``, ``table`` in result.json; absent or null without one)
#: 5: the recorded votes (``votes.npy``, ``votes`` in result.json: its shape and dtype)
FORMAT_VERSION = 5
#: a run without recorded votes is written as format 4 (with a table) or 3, so older readers keep reading it
_VERSION_WITHOUT_VOTES = 4
#: a run without a recorded table is written as format 3, so that readers of format 3 keep reading it
_VERSION_WITHOUT_TABLE = 3
#: files a saved run may consist of
RUN_FILES = (
    "result.json",
    "rows.parquet",
    "history.parquet",
    "scores.parquet",
    "eval_rows.parquet",
    "eval_scores.parquet",
    "null_counts.parquet",
    "eval_null_counts.parquet",
    TABLE_FILE,
    VOTES_FILE,
)
#: the columns of a null file after ``round`` and ``class``: one per τ of the 0.01 grid
NULL_TAU_COLUMNS = tuple(f"ge_{i / 100:.2f}" for i in range(101))
#: what else a CLI run directory holds (moved along when the run is saved again)
RUN_EXTRAS = ("cli_args.json", "checkpoint", "inputs")

ROW_COLUMNS = ("y", "kept", "removed_round", "first_score", "last_score", "removal_score")


def _canonical(meta: dict) -> bytes:
    return json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def table_parquet_bytes(frame: pd.DataFrame, name: str = "the table") -> bytes:
    """The table as Parquet bytes (no index); a column of mixed Python types is stored as text.

    Raises
    ------
    ValueError
        One sentence when a column cannot be stored even as text.
    """
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    for attempt in range(2):
        buf = io.BytesIO()
        try:
            frame.to_parquet(buf, index=False)
            return buf.getvalue()
        except Exception as exc:  # pyarrow: ArrowInvalid / ArrowTypeError / ArrowNotImplementedError
            if attempt:
                detail = " ".join(str(exc).split())[:160]
                raise ValueError(f"'{name}' cannot be stored as Parquet in the run ({detail}).") from None
            for col in frame.columns:
                if frame[col].dtype == object:
                    frame[col] = [None if _missing(v) else v if isinstance(v, str) else str(v) for v in frame[col]]
    raise AssertionError("unreachable")  # pragma: no cover


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


# == saving =========================================================================================================
def _encode_values(values: Any) -> tuple[list, bool]:
    """Values as JSON-able Python scalars; True when some had to become their repr."""
    out, lossy = [], False
    for v in values:
        v = v.item() if isinstance(v, np.generic) else v
        if isinstance(v, float) and not math.isfinite(v):
            out.append(repr(v))
            lossy = True
        elif isinstance(v, (str, int, float, bool)) or v is None:
            out.append(v)
        else:
            out.append(repr(v))
            lossy = True
    return out, lossy


def _ids_meta(ids: NDArray | None) -> dict | None:
    if ids is None:
        return None
    kind = np.asarray(ids).dtype.kind
    if kind in "iu":
        return {"kind": "int"}
    if kind == "f":
        return {"kind": "float"}
    if all(isinstance(v, str) for v in list(ids)):
        return {"kind": "str"}
    return {"kind": "repr"}


def _ids_for_parquet(ids: NDArray) -> Any:
    kind = _ids_meta(ids)["kind"]
    if kind in ("int", "float"):
        return np.asarray(ids)
    if kind == "str":
        return pd.array([str(v) for v in ids], dtype=object)
    return pd.array([repr(v) if not isinstance(v, str) else v for v in ids], dtype=object)


def _round_matrix(scores: NDArray | None, counts: NDArray | None) -> pd.DataFrame:
    cols: dict[str, Any] = {}
    if scores is not None:
        for r in range(scores.shape[0]):
            cols[f"p_round_{r + 1}"] = scores[r]
            if counts is not None:
                cols[f"n_round_{r + 1}"] = counts[r]
    return pd.DataFrame(cols)


def _row_frame(y, kept, removed_round, first, last, removal, ids) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "y": y,
            "kept": kept,
            "removed_round": removed_round,
            "first_score": first,
            "last_score": last,
            "removal_score": removal,
        }
    )
    if ids is not None:
        frame["id"] = _ids_for_parquet(ids)
    return frame


def _null_frame(counts: NDArray) -> pd.DataFrame:
    """One row per (round, class): the mean null count at p ≥ τ for every τ of the grid."""
    n_rounds, n_classes, _ = counts.shape
    frame = pd.DataFrame(counts.reshape(n_rounds * n_classes, -1), columns=list(NULL_TAU_COLUMNS))
    frame.insert(0, "class", np.tile(np.arange(n_classes, dtype=np.int32), n_rounds))
    frame.insert(0, "round", np.repeat(np.arange(1, n_rounds + 1, dtype=np.int32), n_classes))
    return frame


def encode_run(result: Any, table: tuple[bytes, dict] | None = None) -> dict[str, bytes]:
    """The files of a saved run, name -> bytes (``result.json`` with its manifest and checksum last).

    ``table``: the recorded table's Parquet bytes and its ``result.json`` entry (``rows``, ``columns``,
    ``id_column``), or None.
    """
    files = {
        "rows.parquet": _parquet_bytes(
            _row_frame(
                result.y,
                result.kept,
                result.removed_round,
                result.first_score,
                result.last_score,
                result.removal_score,
                result.ids,
            )
        ),
        "history.parquet": _parquet_bytes(result.history.reset_index(drop=True)),
        "scores.parquet": _parquet_bytes(_round_matrix(result.scores, result.n_predictions)),
    }
    if result.eval_kept is not None:
        files["eval_rows.parquet"] = _parquet_bytes(
            _row_frame(
                result.eval_y,
                result.eval_kept,
                result.eval_removed_round,
                result.eval_first_score,
                result.eval_last_score,
                result.eval_removal_score,
                result.eval_ids,
            )
        )
        files["eval_scores.parquet"] = _parquet_bytes(_round_matrix(result.eval_scores, None))
    if result.null_counts is not None:
        files["null_counts.parquet"] = _parquet_bytes(_null_frame(result.null_counts))
        if result.eval_null_counts is not None:
            files["eval_null_counts.parquet"] = _parquet_bytes(_null_frame(result.eval_null_counts))
    if table is not None:
        files[TABLE_FILE] = table[0]
    votes = getattr(result, "votes", None)
    if votes is not None:
        files[VOTES_FILE] = npy_bytes(votes)
    classes, classes_lossy = _encode_values(result.classes)
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION
        if votes is not None
        else _VERSION_WITHOUT_VOTES
        if table is not None
        else _VERSION_WITHOUT_TABLE,
        "params": result.params,
        "classes": classes,
        "classes_are_repr": classes_lossy,
        "stop_reason": result.stop_reason,
        "provenance": result.provenance,
        "n_rows": result.n_rows,
        "n_rounds": result.n_rounds,
        "has_scores": result.scores is not None,
        "n_predictions_dtype": None if result.n_predictions is None else str(result.n_predictions.dtype),
        "n_eval": None if result.eval_kept is None else len(result.eval_kept),
        "ids": _ids_meta(result.ids),
        "eval_ids": _ids_meta(result.eval_ids),
        "null_permutations": int(result.params.get("null_permutations") or 0) or None
        if result.null_counts is not None
        else None,
        **({"table": table[1]} if table is not None else {}),
        **({"votes": {"shape": list(votes.shape), "dtype": str(votes.dtype)}} if votes is not None else {}),
        "files": {name: {"bytes": len(data), "sha256": _sha(data)} for name, data in sorted(files.items())},
    }
    meta = json.loads(json.dumps(meta, default=json_default))  # what a reader will see, byte for byte
    meta["checksum"] = _sha(_canonical(meta))
    files["result.json"] = json.dumps(meta, indent=2, ensure_ascii=False).encode("utf-8")
    return files


def is_run_directory(directory: str | Path) -> bool:
    """True when ``directory`` holds only what a run directory holds (saved run files, a CLI run's extras)."""
    d = Path(directory)
    if not d.is_dir():
        return False
    names = {p.name for p in d.iterdir()}
    return bool(names) and names <= set(RUN_FILES) | set(RUN_EXTRAS)


def _extras_of_same_run(out: Path, result: Any) -> list[str]:
    """The CLI extras in ``out`` that belong to ``result``'s run (its checkpoint has the run's fingerprint)."""
    from .checkpoint import peek_meta

    meta = peek_meta(out / "checkpoint")
    fp = (meta or {}).get("fingerprint") or {}
    p, prov = json.loads(json.dumps(result.params, default=json_default)), result.provenance
    same = (
        isinstance(fp, dict)
        and fp.get("hashes", {}).get("x_sha256") == prov.get("x_sha256")
        and fp.get("hashes", {}).get("y_sha256") == prov.get("y_sha256")
        and fp.get("model") == p.get("model")
        and all(
            fp.get("config", {}).get(k) == p.get(k)
            for k in ("target_size", "train_size", "slice_size", "n_partitions", "tau", "strategy", "seed")
        )
    )
    return [name for name in RUN_EXTRAS if (out / name).exists()] if same else []


def _table_entry(table: Any, id_column: str | None, n_rows: int) -> tuple[bytes, dict]:
    """The Parquet bytes and ``result.json`` entry of a table given to :func:`save_run` (its footer checked)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(table, pd.DataFrame):
        data = table_parquet_bytes(table)
    elif isinstance(table, str | Path):
        data = Path(table).read_bytes()
    else:
        raise TypeError(
            "The 'table' parameter of save_run must be a DataFrame, a Parquet file or None. "
            f"Got {type(table).__name__} instead."
        )
    try:
        footer = pq.ParquetFile(pa.BufferReader(data))
        rows, columns = footer.metadata.num_rows, [str(c) for c in footer.schema_arrow.names]
    except (pa.ArrowException, OSError, ValueError):
        raise ValueError("The run's table is not a readable Parquet file.") from None
    if rows != n_rows:
        raise ValueError(f"The run's table has {rows:,} rows and the run {n_rows:,}: it must have one per run row.")
    if id_column is not None and id_column not in columns:
        raise ValueError(f"The run's table has no column {id_column!r} (its id column).")
    return data, {"rows": n_rows, "columns": columns, "id_column": id_column}


def save_run(
    result: Any,
    directory: str | Path,
    *,
    lock_timeout: float | None = None,
    table: Any = None,
    table_id_column: str | None = None,
) -> Path:
    """Write ``result`` to ``directory`` (see the module docstring); returns the directory.

    The save holds the folder's lock (:func:`aflite_core._folder_lock.folder_lock`, ``.NAME.lock`` beside it):
    a second save into the same folder, from another process or thread, waits for this one and then replaces
    the run whole.

    Parameters
    ----------
    result : AFLiteResult
        The run.
    directory : str or Path
        Created if missing; an existing folder must be empty or hold a run.
    lock_timeout : float, optional
        Seconds to wait for another writer of ``directory``; default
        :data:`aflite_core._folder_lock.LOCK_TIMEOUT_S` (10 s).
    table : DataFrame or path, optional
        The table the run's rows came from, one row per run row in the run's order
        (:func:`aflite_core.engine.run_table.align_table`), or a Parquet file of it: recorded as ``table.parquet``
        in the manifest. None records no table (a ``table.parquet`` already in ``directory`` is not kept).
    table_id_column : str, optional
        The table's column holding the run's ids, recorded in ``result.json`` (None: matched row for row).

    Raises
    ------
    ValueError
        When ``directory`` exists and holds anything but a run (nothing is overwritten then), another writer
        still held it after ``lock_timeout`` seconds (:class:`~aflite_core._folder_lock.FolderBusyError`), or
        ``table`` is not a table of the run's rows.
    """
    out = Path(directory)
    entry = None if table is None else _table_entry(table, table_id_column, result.n_rows)
    with folder_lock(out, timeout=lock_timeout):
        _durable.finish_swap(out)
        if out.exists() and not out.is_dir():
            raise ValueError(f"'{out}' exists and is not a folder; save the run into a new or empty folder.")
        if out.is_dir() and any(out.iterdir()) and not is_run_directory(out):
            extra = sorted(p.name for p in out.iterdir() if p.name not in set(RUN_FILES) | set(RUN_EXTRAS))
            raise ValueError(
                f"'{out}' holds files that are not part of a run ({shown_list(extra)}); save the run into a "
                "new or empty folder, or over an AFLite run directory."
            )
        files = encode_run(result, entry)
        _durable.make_dirs(out.parent)
        _durable.clear_leftovers(out)
        tmp = _durable.scratch_sibling(out, "new")
        _durable.make_dirs(tmp)
        for name, data in files.items():
            _durable.write_file(tmp / name, data, atomic=False)
        if out.is_dir():
            _durable.carry_into(out, _extras_of_same_run(out, result), tmp)
        _durable.replace_dir(tmp, out)
    return out
