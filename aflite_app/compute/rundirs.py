"""Run directories written by the command line (``python -m aflite_core filter --out RUN_DIR``), opened safely.

Only folders below the run root (:mod:`aflite_app.run_root`, ``AFLITE_RUN_ROOT``) are listed and opened; the
features and labels a run recorded are read from below the run root or a data root (``AFLITE_DATA_ROOTS``). The
Data page registers an opened run with :func:`aflite_app.state.register_run_directory`, after which every page
shows it as the current dataset and run.

A run recorded with its table (``filter --table T --id-column ID``: ``table.parquet``) opens with it: the table's
columns become the opened Dataset's frame and its text columns the Dataset's ``text_columns``, exactly as an
uploaded table's, so Inspect's rows table, the map's table of selected rows and the exports show them.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult, load_run_table
from aflite_core._utils import hash_array, hash_labels
from aflite_core._validation import check_labels
from aflite_core.data import budget
from aflite_core.data.datasets import Dataset
from aflite_core.data.preflight import read_small_json
from aflite_core.data.readers import read_features, read_labels
from aflite_core.data.user_tables import id_column_candidates
from aflite_core.engine.registry import adversary_name

from .. import settings
from ..run_root import (
    DATA_ROOTS_ENV,
    RUN_ROOT_ENV,
    data_roots,
    inside_any_root,
    inside_root,
    list_run_directories,
    run_root,
)
from ..run_root import MAX_DEPTH as RUN_ROOT_DEPTH
from ..specs import DatasetSpec, FilterSpec
from ._stores import upload_limit_bytes
from .run_devices import app_device

__all__ = [
    "DATA_ROOTS_ENV",
    "HASH_CHECK_BYTES",
    "RUN_ROOT_DEPTH",
    "RUN_ROOT_ENV",
    "open_run_directory",
    "run_directories",
    "run_root_folder",
    "table_summary",
    "without_server_paths",
]

#: runs larger than this skip re-hashing the features when opened (shape and label hash are still checked)
HASH_CHECK_BYTES = settings.load().run_hash_check_bytes


def run_root_folder() -> Path:
    """The run root the Data page opens runs from (see :mod:`aflite_app.run_root`)."""
    return run_root()


def run_directories() -> list[str]:
    """Run directories below the run root, relative to it (listed afresh on every call: a cheap folder walk)."""
    return list_run_directories(run_root())


def open_run_directory(path: str, features: tuple[str, bytes] | None = None, labels: tuple[str, bytes] | None = None):
    """Open a run directory below the run root, written by ``python -m aflite_core filter`` or ``save``.

    ``path`` is relative to the run root (:func:`aflite_app.run_root.run_root`); no run outside it is ever
    opened, symbolic links included. The run's own record (``cli_args.json``) says where its features and
    labels are; they are memory-mapped when they lie below the run root or one of the data roots
    (``AFLITE_DATA_ROOTS``, :func:`aflite_app.run_root.data_roots`), checked the same way. Otherwise (or when
    the files moved) the user uploads them: ``features`` / ``labels`` are ``(file name, bytes)``; features too
    large to upload are not asked for (the message names the data roots and ``--copy-inputs`` instead). Checks
    that the files are the ones the run used: same shape, same labels (hash), and for feature files up to
    :data:`HASH_CHECK_BYTES` the same bytes. No message quotes a file's content.

    A run recorded with its table (``table.parquet``) opens with it: the Dataset's frame holds the table's
    columns (plus the run's ids and labels where the table lacks them) and its ``text_columns`` the table's
    text columns. The table is read under the memory budget; when it does not fit, the run opens without it
    and ``Dataset.meta["table_refused"]`` says why in one sentence (:func:`table_summary`).

    Returns
    -------
    (key, Dataset, FilterSpec, AFLiteResult)

    Raises
    ------
    ValueError
        With one sentence saying what is missing, outside the roots, damaged or does not match; it names the
        run relative to the run root (:func:`without_server_paths`), never by its place on the server.
    """
    root = run_root()
    try:
        return _open_run_directory(root, path, features, labels)
    except OSError as exc:  # its text names the file by its absolute path
        raise ValueError(
            f"The run '{_shown(path)}' cannot be read: one of its files cannot be opened ({type(exc).__name__})."
        ) from None
    except (ValueError, TypeError) as exc:
        raise ValueError(without_server_paths(str(exc), root)) from None


def _shown(path: str) -> str:
    return str(path).strip().strip("/") or "."


def without_server_paths(text: str, root: Path) -> str:
    """``text`` with every path below the run root (or a data root) made relative to it, and the roots named.

    The core's refusals name a run by the folder they were given (``'/srv/runs/a/b' holds an incomplete or
    damaged AFLite run: …``); the app names it ``'a/b'``, relative to the run root, and never shows where the
    root lies on the server. A file below a data root (``AFLITE_DATA_ROOTS``) is named relative to that root.
    """
    configured = settings.load().run_root.expanduser().absolute()  # the root as set, before links are resolved
    names = {str(root): ("'.'", "the run root"), str(configured): ("'.'", "the run root")}
    for given in settings.load().data_roots:
        for form in (given.expanduser().absolute(), given.expanduser().resolve()):
            names.setdefault(str(form), ("'a data root'", "a data root"))
    for base in sorted(names, key=len, reverse=True):  # the longest first: a root inside another
        if len(base) > 1:
            quoted, named = names[base]
            base = base.rstrip("/")
            text = text.replace(base + "/", "").replace(f"'{base}'", quoted).replace(base, named)
    return text


def _features_bytes(result: AFLiteResult) -> int:
    """The size of the run's features as a float32 ``.npy`` (the smallest they can be): rows × features × 4."""
    return int(result.n_rows) * int(result.params["n_features"]) * 4 + 128


def _too_big_to_upload(result: AFLiteResult) -> str | None:
    """A sentence's start saying the run's features cannot be uploaded, or None when an upload can hold them."""
    size, limit = _features_bytes(result), upload_limit_bytes()
    if size <= limit:
        return None
    return (
        f"At about {budget.human_bytes(size)} ({result.n_rows:,} rows × {result.params['n_features']} float32 "
        f"features) they are larger than the {budget.human_bytes(limit)} an upload may be"
    )


#: the labels may have come from a large table: a file of the labels alone always fits an upload
_ONE_PER_ROW = {"labels": " (a .txt or .npy with one label per row will do)"}


def _recorded_file(root: Path, run_dir: Path, shown_dir: str, record: dict, key: str, result: AFLiteResult) -> Path:
    """The real path of the features or labels file ``cli_args.json`` records, below the run root or a data root.

    Otherwise a refusal whose advice works: upload the file (when an upload can hold it), else add its folder to
    the data roots (``AFLITE_DATA_ROOTS``) or re-run with ``--copy-inputs``.
    """
    too_big = _too_big_to_upload(result) if key == "features" else None
    copy_inputs = "re-run the CLI with --copy-inputs so the run directory holds them"
    value = record.get(key)
    if not isinstance(value, str) or not value:
        advice = (
            f"{too_big}: {copy_inputs} (python -m aflite_core filter ... --copy-inputs)."
            if too_big
            else f"Upload the {key} it was run on below{_ONE_PER_ROW.get(key, '')}."
        )
        raise ValueError(f"The run '{shown_dir}' does not say where its {key} are (no cli_args.json). {advice}")
    try:
        return inside_any_root(
            (root, *data_roots()), value, base=run_dir, what=f"This run's {key} file ({Path(value).name})"
        )
    except ValueError as exc:
        advice = (
            f"{too_big}: the server's administrator can add the folder that holds them to {DATA_ROOTS_ENV}, "
            f"or {copy_inputs}."
            if too_big
            else f"Upload the {key} the run was made on below{_ONE_PER_ROW.get(key, '')}, or {copy_inputs}."
        )
        raise ValueError(f"{exc} {advice}") from None


def _recorded_table(run_dir: Path, result: AFLiteResult) -> tuple[pd.DataFrame | None, str | None]:
    """The run's recorded table (None when it has none), or (None, why) when it does not fit the memory budget.

    The run then opens without it; ``why`` is one sentence whose advice works (the administrator raises the
    budget, or the user opens the run again once other reads have finished).
    """
    try:
        return load_run_table(run_dir, result=result), None
    except budget.MemoryBudgetError as exc:
        if exc.scope == "server":
            return None, (
                "Its table was not loaded: the files being read on this server right now hold the memory all reads "
                "may use together; open the run again in a moment to read it."
            )
        return None, (
            f"Its table was not loaded: it needs {budget.human_bytes(exc.needed)} of memory to read, more than "
            f"the {budget.human_bytes(exc.limit)} one read may use on this server; the server's administrator "
            f"can raise {settings.PARSE_BUDGET_MB_ENV} (megabytes), and the run then opens with it."
        )


def _free_name(base: str, taken) -> str:
    """``base``, or ``run_<base>``, ``run_<base>_2``, ... : the first name not in ``taken``."""
    taken = {str(c) for c in taken}
    if base not in taken:
        return base
    name, i = f"run_{base}", 2
    while name in taken:
        name, i = f"run_{base}_{i}", i + 1
    return name


def _is_text(series: pd.Series) -> bool:
    """A column of strings (missing values allowed): shown as text, as an uploaded table's text columns are."""
    if isinstance(series.dtype, pd.StringDtype):
        return True
    return series.dtype == object and pd.api.types.infer_dtype(series, skipna=True) == "string"


def _run_frame(
    table: pd.DataFrame | None, ids: np.ndarray, result: AFLiteResult, recorded_label: object
) -> tuple[pd.DataFrame, str, str, list[str]]:
    """The opened run's frame, its id and label columns and its text columns.

    Without a table: the run's ids and labels. With one: the table's columns (row i = run row i), its id column
    (else the run's ids added as ``id``), its label column when one holds the run's labels exactly (the one
    ``cli_args.json`` names, or ``label``; else they are added), and its columns of strings as text columns
    (but for columns named like ids, :func:`aflite_core.data.user_tables.id_column_candidates`).
    """
    labels = np.asarray(result.labels)
    if table is None:
        return pd.DataFrame({"id": ids, "label": labels}), "id", "label", []
    id_column = table.attrs.get("id_column")
    frame = table  # ours (just read): columns are added in place, never a copy of the texts
    frame.index = pd.RangeIndex(len(frame))
    frame.attrs = {}
    if id_column is None or id_column not in frame.columns:
        id_column = _free_name("id", frame.columns)
        frame.insert(0, id_column, ids)
    label_column = None
    shown = labels.astype(str)
    for candidate in dict.fromkeys([recorded_label, "label"]):
        if isinstance(candidate, str) and candidate in frame.columns and candidate != id_column:
            if np.array_equal(frame[candidate].astype(str).to_numpy(), shown):
                label_column = candidate
                break
    if label_column is None:
        label_column = _free_name("label", frame.columns)
        frame[label_column] = labels
    skip = {id_column, label_column, *id_column_candidates(list(frame.columns))}  # ids are not texts to read
    texts = [c for c in frame.columns if c not in skip and _is_text(frame[c])]
    return frame, id_column, label_column, texts


def table_summary(data: Dataset) -> tuple[str, str | None]:
    """What the Data page says of an opened run's table: ``("with its table (N columns: a, b, …)", refusal)``.

    The first is "" when the run opened without a table; the second is the one-sentence reason a recorded table
    was not loaded (None when it was, or the run has none).
    """
    columns = data.meta.get("table_columns")
    refused = data.meta.get("table_refused")
    if not columns:
        return "", refused
    shown = ", ".join(columns[:8]) + (", …" if len(columns) > 8 else "")
    return f"with its table ({len(columns)} column{'s' * (len(columns) != 1)}: {shown})", refused


def _open_run_directory(root: Path, path: str, features, labels):
    if not str(path).strip():
        raise ValueError(
            "Choose a run directory (the --out folder of `python -m aflite_core filter`, saved below the run root)."
        )
    run_dir = inside_root(root, path, what="That run directory")
    if not run_dir.is_dir() or not (run_dir / "result.json").is_file():
        raise ValueError(f"'{path}' below the run root is not a run directory (it has no result.json).")
    shown_dir = run_dir.relative_to(root).as_posix() or "."
    result = AFLiteResult.load(run_dir)
    record: dict = {}
    if (run_dir / "cli_args.json").is_file():
        try:
            record = read_small_json(run_dir / "cli_args.json", f"The run '{shown_dir}''s cli_args.json")
        except budget.MemoryBudgetError:
            raise
        except ValueError:
            record = {}  # unreadable: the page asks for the features and labels as uploads
        record = record if isinstance(record, dict) else {}

    def recorded(key: str) -> Path:
        return _recorded_file(root, run_dir, shown_dir, record, key, result)

    if features is not None:
        X = read_features(io.BytesIO(features[1]), max_bytes=upload_limit_bytes())
        features_name = features[0]
    else:
        features_path = recorded("features")
        X = read_features(features_path, mmap=True)
        features_name = features_path.name
    if X.shape != (result.n_rows, int(result.params["n_features"])):
        raise ValueError(
            f"The features '{features_name}' have shape {X.shape}, but the run was made on "
            f"{result.n_rows:,} rows × {result.params['n_features']} features."
        )
    if labels is not None:
        source = io.BytesIO(labels[1])
        source.name = labels[0]
        labels_name = labels[0]
    else:
        source = recorded("labels")
        labels_name = source.name
    mismatch = ValueError(f"The labels '{labels_name}' are not the ones the run in '{shown_dir}' was made with.")
    label_column = record.get("label_column") if isinstance(record.get("label_column"), str) else None
    try:  # a labels file that does not fit is refused without quoting it
        y = read_labels(
            source, column=label_column, max_bytes=upload_limit_bytes() if labels else None, max_rows=result.n_rows
        )
        enc = check_labels(y, "labels", "open_run_directory", n_rows=result.n_rows)
    except ValueError:
        raise mismatch from None
    if enc.classes != tuple(result.classes) or hash_labels(enc.codes, enc.classes) != result.provenance.get(
        "y_sha256", hash_labels(enc.codes, enc.classes)
    ):
        raise mismatch
    if (
        X.dtype == np.float32
        and X.nbytes <= HASH_CHECK_BYTES
        and result.provenance.get("x_sha256")
        and hash_array(X) != result.provenance["x_sha256"]
    ):
        raise ValueError(
            f"The features '{features_name}' are not the ones the run in '{shown_dir}' was made with "
            "(their sha256 differs)."
        )
    features = features_name
    labels_path = labels_name

    ids = result.ids if result.ids is not None else np.arange(result.n_rows)
    table, refused = _recorded_table(run_dir, result)
    meta = {"run_dir": shown_dir, "features": str(features), "labels": str(labels_path)}
    if table is not None:
        meta["table_columns"] = [str(c) for c in table.columns]
    frame, id_column, label_column, texts = _run_frame(table, np.asarray(ids), result, record.get("label_column"))
    key = "run-" + hashlib.sha256(str(run_dir).encode()).hexdigest()[:12]
    how = "memory-mapped" if isinstance(X, np.memmap) else "uploaded"
    if refused:
        meta["table_refused"] = refused
    data = Dataset(
        name=f"run {shown_dir}",
        frame=frame,
        label_column=label_column,
        classes=tuple(result.classes),
        y=result.y,
        ids=np.asarray(ids),
        representations={"features": X},
        representation_descriptions={"features": f"{features} ({X.shape[1]}-d, {how})"},
        description=f"Features and labels of the CLI run '{shown_dir}' (below the run root)"
        + (", with the table its rows came from." if "table_columns" in meta else "."),
        id_column=id_column,
        text_columns=tuple(texts),
        meta=meta,
    )
    p = result.params
    model = adversary_name(p["model"]) or "linear"
    spec = FilterSpec(
        dataset=DatasetSpec(key, "features"),
        target_size=int(p["target_size"]),
        train_size=int(p["train_size"]),
        slice_size=int(p["slice_size"]),
        tau=float(p["tau"]),
        n_partitions=int(p["n_partitions"]),
        strategy=str(p["strategy"]),
        model=model,
        seed=int(p["seed"]),
        device=app_device(model),  # the spec the Filter page asks for on this server (the run answers it)
    )
    return key, data, spec, result
