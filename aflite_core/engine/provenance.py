"""A filtered dataset with its provenance, in a folder Hugging Face ``datasets`` loads: :func:`export_dataset`.

``python -m aflite_core export RUN_DIR --out DIR`` (and the app's "Dataset + manifest" download) writes:

* ``data/train-00000-of-00001.parquet`` - the filtered rows (the kept ones; every row with ``include_removed``):
  the run's recorded table (texts, metadata) when there is one, plus ``aflite_id``, ``aflite_label``,
  ``aflite_status``, ``aflite_removed_round``, ``aflite_p_first``, ``aflite_p_removal`` and ``aflite_p_last``;
* ``README.md`` - a dataset card whose YAML header holds the ``configs`` block ``datasets`` reads
  (``configs: - config_name: default, data_files: - split: train, path: data/train-…``), so
  ``datasets.load_dataset(DIR)`` loads the filtered rows as the ``train`` split (nothing here imports
  ``datasets``);
* ``manifest.json`` - what a dataset card cites: the run's parameters and the arguments that re-run it
  (:func:`aflite_arguments`), the seed, the representation and its provenance (where the features came from,
  their SHA-256), the package versions of the run and of the export, the code version (the git commit when the
  code is a git checkout, else the package version), the row counts, the null (``null_permutations``) when the
  run has one, and the size and SHA-256 of every other file;
* ``aflite_rows.parquet`` - every row's id, label, status, removal round and p (first, at removal, last, and per
  round when the run kept them), beside the data;
* ``null_counts.parquet`` - the run's null, when it has one (the run record's format);
* ``run/`` - the run record itself (:meth:`AFLiteResult.save`'s files), so :meth:`AFLiteResult.load` reads the
  exported run back.

The folder is built as a hidden sibling and swapped in (:mod:`aflite_core._durable`) under the folder's lock
(:mod:`aflite_core._folder_lock`): a reader sees the old export, none for a moment, or the new one, never a mix;
a folder holding anything but an earlier export is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import _durable
from .._folder_lock import folder_lock
from .._utils import json_default, versions
from .._validation import shown_list
from .run_record import _null_frame, encode_run, table_parquet_bytes

__all__ = [
    "DATA_FILE",
    "EXPORT_FORMAT",
    "MANIFEST_FILE",
    "ROWS_FILE",
    "aflite_arguments",
    "code_version",
    "export_dataset",
    "export_files",
    "read_manifest",
]

EXPORT_FORMAT = "aflite-studio-dataset-export"
EXPORT_FORMAT_VERSION = 1
#: the filtered rows (one shard, named as the Hub names them)
DATA_FILE = "data/train-00000-of-00001.parquet"
MANIFEST_FILE = "manifest.json"
#: every row's status, round and p
ROWS_FILE = "aflite_rows.parquet"
NULL_FILE = "null_counts.parquet"
CARD_FILE = "README.md"
#: the run record inside the export
RUN_FOLDER = "run"
#: the columns AFLite adds to the data (after the table's own)
ADDED_COLUMNS = (
    "aflite_id",
    "aflite_label",
    "aflite_status",
    "aflite_removed_round",
    "aflite_p_first",
    "aflite_p_removal",
    "aflite_p_last",
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def code_version() -> dict[str, str | None]:
    """The code that exports: ``{"aflite_core": version, "git_commit": hash or None}``.

    The commit is read with ``git rev-parse HEAD`` in the package's folder (a git checkout; 5 s at most); None
    when git or the checkout is not there (an installed package), so the version is what identifies the code.
    """
    from .. import __version__

    commit = None
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=False
        )
        text = done.stdout.strip()
        if done.returncode == 0 and len(text) == 40 and all(c in "0123456789abcdef" for c in text):
            commit = text
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"aflite_core": __version__, "git_commit": commit}


def aflite_arguments(manifest: dict) -> dict[str, Any]:
    """The keyword arguments that re-run an exported run: ``aflite(X, y, **aflite_arguments(manifest))``.

    With the same features and labels (their SHA-256 are in ``manifest["representation"]``), the run equals the
    exported one (:meth:`AFLiteResult.equals`). The model family is rebuilt from its recorded spec
    (:func:`aflite_core.engine.registry.family_from_spec`).
    """
    from .registry import family_from_spec

    kwargs = dict(manifest["aflite_arguments"])
    spec = kwargs.pop("model_spec", None)
    if isinstance(spec, dict):
        kwargs["model"] = family_from_spec(spec)
    return kwargs


def _arguments(params: dict) -> dict[str, Any]:
    keys = ("target_size", "train_size", "slice_size", "tau", "n_partitions", "strategy")
    out: dict[str, Any] = {k: params.get(k) for k in keys}
    if out["strategy"] == "greedy":
        out["slice_size"] = None
    out["random_state"] = params.get("seed")
    if params.get("null_permutations"):
        out["null_permutations"] = int(params["null_permutations"])
    out["model_spec"] = params.get("model")
    return out


def _row_frame(result: Any) -> pd.DataFrame:
    """Every row: id, label, status, removal round, p first / at removal / last, and p per round when kept."""
    kept = np.asarray(result.kept)
    rounds = pd.array(np.asarray(result.removed_round), dtype="Int32")
    rounds[kept] = pd.NA
    frame = pd.DataFrame(
        {
            "aflite_id": np.arange(result.n_rows) if result.ids is None else result.ids,
            "aflite_label": [str(result.classes[int(c)]) for c in result.y],
            "aflite_status": np.where(kept, "kept", "removed"),
            "aflite_removed_round": rounds,
            "aflite_p_first": np.asarray(result.first_score, dtype=np.float64),
            "aflite_p_removal": np.asarray(result.removal_score, dtype=np.float64),
            "aflite_p_last": np.asarray(result.last_score, dtype=np.float64),
        }
    )
    if result.ids is not None and np.asarray(result.ids).dtype == object:
        frame["aflite_id"] = [str(x) for x in result.ids]
    return frame


def _data_frame(result: Any, table: pd.DataFrame | None, include_removed: bool) -> pd.DataFrame:
    added = _row_frame(result)
    if table is not None:
        if len(table) != result.n_rows:
            raise ValueError(
                f"The table has {len(table):,} rows and the run {result.n_rows:,}: it must hold one row per run row, "
                "in the run's order."
            )
        base = table.reset_index(drop=True).copy()
        base.columns = [str(c) for c in base.columns]
        clash = [c for c in ADDED_COLUMNS if c in base.columns]
        base = base.drop(columns=clash)
        frame = pd.concat([base, added], axis=1)
    else:
        frame = added
    if not include_removed:
        frame = frame.loc[np.asarray(result.kept)].reset_index(drop=True)
    return frame


def _parquet(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def _card(manifest: dict) -> str:
    """README.md: the YAML ``configs`` block ``datasets`` reads, then what the folder holds, in words."""
    run, args = manifest["run"], manifest["aflite_arguments"]
    rep = manifest.get("representation") or {}
    which = "every row (removed ones too, see `aflite_status`)" if manifest["include_removed"] else "the kept rows"
    code = manifest["code_version"]
    code_text = f"commit `{code['git_commit']}`" if code.get("git_commit") else f"version {code['aflite_core']}"
    lines = [
        "---",
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: train",
        f"    path: {DATA_FILE}",
        "tags:",
        "- aflite",
        "- adversarial-filtering",
        "---",
        "",
        "# A dataset filtered with AFLite",
        "",
        f"This folder holds {which} of a dataset filtered with AFLite (Le Bras et al., ICML 2020, Algorithm 1) "
        f"by AFLite Studio ({code_text}): {run['n_kept']:,} of {run['n_rows']:,} rows kept, {run['n_removed']:,} "
        f"removed in {run['n_rounds']} rounds (stop reason: {run['stop_reason']}).",
        "",
        'Load it with `datasets.load_dataset("path/to/this/folder")` (the `train` split), or read '
        f"`{DATA_FILE}` with any Parquet reader.",
        "",
        "## How it was filtered",
        "",
        f"- τ = {args['tau']}, target size {args['target_size']:,}, training size {args['train_size']:,}, "
        f"k = {args['slice_size']}, m = {args['n_partitions']} models per round, strategy `{args['strategy']}`, "
        f"seed {args['random_state']}",
        f"- model family: `{(args.get('model_spec') or {}).get('class', 'unknown')}`",
        f"- representation: {rep.get('name') or 'not recorded'}"
        + (f" (features SHA-256 `{rep['x_sha256']}`)" if rep.get("x_sha256") else ""),
        "",
        "## Files",
        "",
        f"- `{DATA_FILE}`: the rows, with the columns AFLite adds: {', '.join(f'`{c}`' for c in ADDED_COLUMNS)}.",
        f"- `{MANIFEST_FILE}`: the parameters (and the arguments that re-run the filter), the seed, the "
        "representation and its provenance, package and code versions, and every file's SHA-256.",
        f"- `{ROWS_FILE}`: every row's status, removal round and predictability p (per round too).",
    ]
    if manifest.get("null"):
        lines.append(f"- `{NULL_FILE}`: the null for predictability (mean counts at p ≥ τ under shuffled labels).")
    lines += [f"- `{RUN_FOLDER}/`: the run record (`aflite_core.AFLiteResult.load` reads it).", ""]
    return "\n".join(lines)


def export_files(
    result: Any,
    *,
    table: pd.DataFrame | None = None,
    include_removed: bool = False,
    representation: dict | None = None,
) -> dict[str, bytes]:
    """The files of an export, relative path -> bytes (what :func:`export_dataset` writes; the app zips them).

    Parameters are those of :func:`export_dataset`.
    """
    data = table_parquet_bytes(_data_frame(result, table, include_removed), "the exported rows")
    rows = _row_frame(result)
    if result.scores is not None:
        per_round = pd.DataFrame(
            np.asarray(result.scores, dtype=np.float64).T,
            columns=[f"p_round_{r + 1}" for r in range(result.scores.shape[0])],
        )
        rows = pd.concat([rows, per_round], axis=1)
    files: dict[str, bytes] = {DATA_FILE: data, ROWS_FILE: _parquet(rows)}
    null = None
    if result.null_counts is not None:
        files[NULL_FILE] = _parquet(_null_frame(result.null_counts))
        null = {"permutations": int(result.params.get("null_permutations") or 0) or None, "file": NULL_FILE}
    for name, blob in encode_run(result).items():
        files[f"{RUN_FOLDER}/{name}"] = blob
    prov = dict(result.provenance)
    rep = dict(representation or {})
    rep.setdefault("x_sha256", prov.get("x_sha256"))
    rep.setdefault("y_sha256", prov.get("y_sha256"))
    params = result.params
    manifest = {
        "format": EXPORT_FORMAT,
        "format_version": EXPORT_FORMAT_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "include_removed": bool(include_removed),
        "run": {
            "n_rows": int(result.n_rows),
            "n_kept": int(result.n_kept),
            "n_removed": int(result.n_removed),
            "n_rounds": int(result.n_rounds),
            "stop_reason": result.stop_reason,
            "classes": [str(c) for c in result.classes],
            "data_rows": int(result.n_rows if include_removed else result.n_kept),
        },
        "parameters": params,
        "aflite_arguments": _arguments(params),
        "seed": params.get("seed"),
        "representation": rep,
        "run_provenance": prov,
        "package_versions": {"at_run": prov.get("versions"), "at_export": versions()},
        "code_version": code_version(),
        "null": null,
        "table_columns": None if table is None else [str(c) for c in table.columns],
        "files": {name: {"bytes": len(blob), "sha256": _sha(blob)} for name, blob in sorted(files.items())},
    }
    manifest = json.loads(json.dumps(manifest, default=json_default))
    files[CARD_FILE] = _card(manifest).encode("utf-8")
    manifest["files"][CARD_FILE] = {"bytes": len(files[CARD_FILE]), "sha256": _sha(files[CARD_FILE])}
    files[MANIFEST_FILE] = json.dumps(manifest, indent=2, ensure_ascii=False).encode("utf-8")
    return files


def _is_export(folder: Path) -> bool:
    try:
        meta = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("format") == EXPORT_FORMAT


def export_dataset(
    result: Any,
    out: str | Path,
    *,
    table: pd.DataFrame | None = None,
    include_removed: bool = False,
    representation: dict | None = None,
    lock_timeout: float | None = None,
) -> Path:
    """Write the filtered rows, their dataset card and manifest to ``out`` (see the module docstring).

    Parameters
    ----------
    result : AFLiteResult
        The run.
    out : str or Path
        The export folder: created if missing; an existing one must be empty or hold an earlier export (it is
        replaced whole).
    table : DataFrame, optional
        The rows' table (texts, metadata), one row per run row in the run's order
        (:func:`aflite_core.engine.run_table.load_run_table`); without one the data holds AFLite's columns only.
    include_removed : bool, default=False
        Export every row (``aflite_status`` says which were removed), not only the kept ones.
    representation : dict, optional
        What the features were, for the manifest: e.g. ``{"name": "tfidf", "source": "features.npy"}``
        (the features' and labels' SHA-256 from the run are added).
    lock_timeout : float, optional
        Seconds to wait for another writer of ``out`` (default 10 s).

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    ValueError
        One sentence when ``out`` holds something other than an export, another writer holds it, or ``table``
        does not have one row per run row.
    """
    target = Path(out)
    files = export_files(result, table=table, include_removed=include_removed, representation=representation)
    with folder_lock(target, timeout=lock_timeout):
        _durable.finish_swap(target)
        if target.exists() and not target.is_dir():
            raise ValueError(f"'{target}' exists and is not a folder; export into a new or empty folder.")
        if target.is_dir() and any(target.iterdir()) and not _is_export(target):
            names = sorted(p.name for p in target.iterdir())
            raise ValueError(
                f"'{target}' holds files that are not an AFLite export ({shown_list(names)}); export into a new or "
                "empty folder, or over an earlier export."
            )
        _durable.make_dirs(target.parent)
        _durable.clear_leftovers(target)
        tmp = _durable.scratch_sibling(target, "new")
        _durable.make_dirs(tmp)
        for name, blob in files.items():
            path = tmp / name
            _durable.make_dirs(path.parent)
            _durable.write_file(path, blob, atomic=False)
        for sub in {str(Path(n).parent) for n in files if "/" in n}:
            _durable.fsync_dir(tmp / sub)
        _durable.replace_dir(tmp, target)
    return target


def read_manifest(folder: str | Path) -> dict:
    """An export's ``manifest.json``, every file it lists checked (size and SHA-256); one sentence otherwise."""
    src = Path(folder)
    try:
        meta = json.loads((src / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ValueError(f"'{src}' is not an AFLite export: it has no readable {MANIFEST_FILE}.") from None
    if not isinstance(meta, dict) or meta.get("format") != EXPORT_FORMAT:
        raise ValueError(f"'{src}' is not an AFLite export (its {MANIFEST_FILE} is not one).")
    for name, entry in (meta.get("files") or {}).items():
        path = src / name
        if (
            not path.is_file()
            or path.stat().st_size != entry.get("bytes")
            or _sha(path.read_bytes()) != entry.get("sha256")
        ):
            raise ValueError(f"'{src}' holds a damaged AFLite export: {name} changed since it was written.")
    return meta
