"""``aflite export RUN_DIR --out DIR``: a filtered dataset, its card and manifest (``engine.provenance``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..data.preflight import read_small_json
from ..engine.provenance import DATA_FILE, export_dataset
from ..engine.result import AFLiteResult
from ..engine.run_table import load_run_table

__all__ = ["add_cli", "representation_of"]


def representation_of(run_dir: str | Path) -> dict[str, Any]:
    """What a CLI run recorded of its features (``cli_args.json``): the file names, never their folders."""
    path = Path(run_dir) / "cli_args.json"
    rep: dict[str, Any] = {"source": "python -m aflite_core filter"}
    if not path.is_file():
        rep["source"] = "a saved run (no cli_args.json)"
        return rep
    try:
        saved = read_small_json(path, "cli_args.json")
    except ValueError:
        return rep
    if isinstance(saved, dict):
        for key in ("features", "labels", "ids", "table"):
            value = saved.get(key)
            if isinstance(value, str):
                rep[f"{key}_file"] = Path(value).name
        for key in ("label_column", "table_id_column"):
            if isinstance(saved.get(key), str):
                rep[key] = saved[key]
        if isinstance(saved.get("features"), str):
            rep.setdefault("name", Path(saved["features"]).stem)
    return rep


def _cmd_export(args: argparse.Namespace) -> int:
    result = AFLiteResult.load(args.run_dir)
    table = load_run_table(args.run_dir, result=result)
    out = export_dataset(
        result,
        args.out,
        table=table,
        include_removed=args.include_removed,
        representation=representation_of(args.run_dir),
    )
    rows = result.n_rows if args.include_removed else result.n_kept
    sys.stdout.write(
        f"Exported {rows:,} rows to '{out}' ({DATA_FILE}, README.md with the datasets configs, manifest.json); "
        f"load them with datasets.load_dataset('{out}').\n"
    )
    return 0


def add_cli(subparsers: Any, name: str = "export") -> None:
    """Register the ``export`` sub-command: a run's filtered rows as Parquet with a dataset card and a manifest.

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="export"
        Command name.

    Notes
    -----
    Loads the run (checked in full) and its recorded table, and writes
    :func:`aflite_core.engine.provenance.export_dataset` into ``--out`` (a new or empty folder, or an earlier
    export, replaced whole and crash-consistently).
    """
    p = subparsers.add_parser(
        name,
        help="a run's filtered rows as Parquet + dataset card + manifest (datasets.load_dataset reads it)",
        description="Write the kept rows of a run (with its recorded table's columns) as Parquet, a README.md "
        "dataset card whose YAML configs block Hugging Face datasets reads, and manifest.json (parameters, seed, "
        "representation, versions, per-row status in aflite_rows.parquet).",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (filter --out)")
    p.add_argument("--out", required=True, help="the export folder (new, empty, or an earlier export)")
    p.add_argument("--include-removed", action="store_true", help="export every row, with its aflite_status")
    p.set_defaults(func=_cmd_export)
