"""Run directories written by the command line (``python -m aflite_core filter --out RUN_DIR``), opened safely.

Only folders below the run root (:mod:`aflite_app.run_root`, ``AFLITE_RUN_ROOT``) are listed and opened; the
Data page registers an opened run with :func:`aflite_app.state.register_run_directory`, after which every page
shows it as the current dataset and run.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult
from aflite_core._utils import hash_array, hash_labels
from aflite_core._validation import check_labels
from aflite_core.data import budget
from aflite_core.data.datasets import Dataset
from aflite_core.data.preflight import read_small_json
from aflite_core.data.readers import read_features, read_labels
from aflite_core.engine.registry import adversary_name

from .. import settings
from ..run_root import MAX_DEPTH as RUN_ROOT_DEPTH
from ..run_root import RUN_ROOT_ENV, inside_root, list_run_directories, run_root
from ..specs import DatasetSpec, FilterSpec
from ._stores import upload_limit_bytes
from .runs import app_device

__all__ = [
    "HASH_CHECK_BYTES",
    "RUN_ROOT_DEPTH",
    "RUN_ROOT_ENV",
    "open_run_directory",
    "run_directories",
    "run_root_folder",
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

    ``path`` is relative to the run root (:func:`aflite_app.run_root.run_root`); nothing outside it is ever
    opened, symbolic links included. The run's own record (``cli_args.json``) says where its features and
    labels are; they are memory-mapped when they lie below the run root too. Otherwise (or when the files
    moved) the user uploads them: ``features`` / ``labels`` are ``(file name, bytes)``. Checks that the files
    are the ones the run used: same shape, same labels (hash), and for feature files up to
    :data:`HASH_CHECK_BYTES` the same bytes. No message quotes a file's content.

    Returns
    -------
    (key, Dataset, FilterSpec, AFLiteResult)

    Raises
    ------
    ValueError
        With one sentence saying what is missing, outside the run root, damaged or does not match; it names the
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
    """``text`` with every path below the run root made relative to it, and the root itself named, not shown.

    The core's refusals name a run by the folder they were given (``'/srv/runs/a/b' holds an incomplete or
    damaged AFLite run: …``); the app names it ``'a/b'``, relative to the run root, and never shows where the
    root lies on the server.
    """
    configured = settings.load().run_root.expanduser().absolute()  # the root as set, before links are resolved
    for base in dict.fromkeys([str(root), str(configured)]):
        if len(base) > 1:
            base = base.rstrip("/")
            text = text.replace(base + "/", "").replace(f"'{base}'", "'.'").replace(base, "the run root")
    return text


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

    def recorded(key: str, what: str):
        value = record.get(key)
        if not isinstance(value, str) or not value:
            raise ValueError(
                f"The run '{shown_dir}' does not say where its {what} are (no cli_args.json): upload "
                f"the {what} it was run on below."
            )
        try:
            return inside_root(root, value, base=run_dir, what=f"This run's {what} file ({Path(value).name})")
        except ValueError as exc:
            raise ValueError(
                f"{exc} Upload the {what} the run was made on below, or re-run the CLI with "
                "--copy-inputs so the run directory holds them."
            ) from None

    if features is not None:
        X = read_features(io.BytesIO(features[1]), max_bytes=upload_limit_bytes())
        features_name = features[0]
    else:
        features_path = recorded("features", "features")
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
        source = recorded("labels", "labels")
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
    frame = pd.DataFrame({"id": ids, "label": result.labels})
    key = "run-" + hashlib.sha256(str(run_dir).encode()).hexdigest()[:12]
    how = "memory-mapped" if isinstance(X, np.memmap) else "uploaded"
    data = Dataset(
        name=f"run {shown_dir}",
        frame=frame,
        label_column="label",
        classes=tuple(result.classes),
        y=result.y,
        ids=np.asarray(ids),
        representations={"features": X},
        representation_descriptions={"features": f"{features} ({X.shape[1]}-d, {how})"},
        description=f"Features and labels of the CLI run '{shown_dir}' (below the run root).",
        id_column="id",
        meta={"run_dir": shown_dir, "features": str(features), "labels": str(labels_path)},
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
