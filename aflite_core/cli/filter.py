"""``aflite filter`` (run AFLite, write a resumable run directory) and ``aflite predictability``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import _durable
from .._folder_lock import folder_lock
from .._validation import shown
from ..data.groups import default_group_column, groups_from_table
from ..data.preflight import read_small_json
from ..data.readers import read_features, read_labels, read_table
from ..engine.checkpoint import peek_meta
from ..engine.filtering import _resolve_backend, execute_run, plan_run, predictability
from ..engine.registry import ADVERSARIES, family_from_spec, resolve_model
from ..engine.result import AFLiteResult
from ..engine.run_constants import TABLE_FILE
from ..engine.run_record import is_run_directory, table_parquet_bytes
from ..engine.run_table import align_table
from ._common import PARTITIONS, SEEDS, THREADS, CLIError, Progress, add_group_options, bounded, count_or_fraction

__all__ = ["add_cli"]


def _load_ids(path: str | None) -> Any:
    if path is None:
        return None

    return read_labels(path, column="id")


#: options of `filter` a resumed run takes from the run directory (the data and every parameter)
_RUN_OPTIONS = (
    "features",
    "labels",
    "label_column",
    "partitions",
    "train_size",
    "model",
    "seed",
    "threads",
    "mmap",
    "ids",
    "target_size",
    "slice_size",
    "tau",
    "strategy",
    "eval_features",
    "eval_labels",
    "eval_ids",
    "null_permutations",
)


_REQUIRED_FOR_NEW_RUN = ("features", "labels", "target_size", "train_size", "out")


def _cluster(args: argparse.Namespace):
    """(backend, closer) for --scheduler / --dask-local, or (None, no-op)."""
    if args.scheduler:
        from ..engine.distributed import _import_distributed

        client = _import_distributed().Client(args.scheduler, timeout="30s")
        return client, client.close
    if args.dask_local is not None:
        from ..engine.distributed import local_cluster

        cluster, client = local_cluster(args.dask_local)

        def close() -> None:
            client.close()
            cluster.close()

        return client, close
    return None, lambda: None


#: the input files of a run: the option that names each, and the name of its copy under RUN_DIR/inputs/
_INPUT_FILES = ("features", "labels", "ids", "eval_features", "eval_labels", "eval_ids")


def _replaceable(out: Path) -> bool:
    """True when ``out`` is a run directory --force may replace: a loadable run, or an interrupted CLI run."""
    if not is_run_directory(out):
        return False
    try:
        AFLiteResult.load(out)
        return True
    except ValueError:
        pass
    if peek_meta(out / "checkpoint") is not None:
        return True
    try:  # a run interrupted before its first round wrote only its arguments
        record = read_small_json(out / "cli_args.json", "cli_args.json")
    except (OSError, ValueError):
        return False
    names = {p.name for p in out.iterdir()}
    return isinstance(record, dict) and "features" in record and names <= {"cli_args.json", "inputs", TABLE_FILE}


def _check_out(args: argparse.Namespace) -> Path:

    out = Path(args.out)
    _durable.finish_swap(out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out '{out}' exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not args.force:
            raise CLIError(
                f"--out '{out}' is not empty; pass --force to replace the run in it, or --resume '{out}' to continue it"
            )
        if not _replaceable(out):
            raise CLIError(
                f"--out '{out}' is not an AFLite run directory (it holds other files); --force only "
                "replaces a run directory, so choose a new or empty folder"
            )
    return out


def _aligned_table(args: argparse.Namespace, n_rows: int, ids: Any) -> Any:
    """--table, one row per run row in the run's order (checked against the ids), or None."""
    if args.table is None:
        if args.id_column is not None:
            raise CLIError("--id-column needs --table (the table whose rows the ids name)")
        return None
    if args.resume:
        raise CLIError("--resume keeps the table recorded when the run started; drop --table and --id-column")
    name = Path(args.table).name
    frame = read_table(args.table)
    return align_table(frame, n_rows=n_rows, ids=ids, id_column=args.id_column, name=name)


def _groups(args: argparse.Namespace, table: Any, out: Path) -> tuple[Any, str | None]:
    """(group codes or None, the column they came from): --groups-column, else an NLI table's premise.

    A resumed run takes the column recorded when it started (none for a run written before groups existed),
    read from the table recorded in the run directory.
    """
    if args.resume:
        column = args.groups_column
        if column is None:
            return None, None
        if not (out / TABLE_FILE).is_file():
            raise CLIError(f"--resume '{out}': the run was grouped by {column!r} but its table is missing")
        import pandas as pd

        table = pd.read_parquet(out / TABLE_FILE)
    elif args.no_groups:
        if args.groups_column is not None:
            raise CLIError("--groups-column and --no-groups cannot be combined")
        return None, None
    elif args.groups_column is not None:
        if table is None:
            raise CLIError("--groups-column needs --table (the table holding the column)")
        column = args.groups_column
    else:
        column = None if table is None else default_group_column(table.columns)
        if column is None:
            return None, None
    try:
        return groups_from_table(table, column, "--table"), column
    except ValueError as exc:
        raise CLIError(str(exc).rstrip(".")) from None


def _prepare_out(out: Path, args: argparse.Namespace, record: dict, table: bytes | None = None) -> None:
    """Create the run directory (replacing the old run with --force), record the arguments and the table in it."""
    _durable.clear_leftovers(out)
    if out.is_dir() and any(out.iterdir()):  # checked by _check_out: --force over a run directory
        _durable.discard_dir(out)
    _durable.make_dirs(out)
    if args.copy_inputs:
        _durable.make_dirs(out / "inputs")
        for key in _INPUT_FILES:
            if record[key] is not None:
                src = Path(record[key])
                dst = out / "inputs" / f"{key}{''.join(src.suffixes[-1:])}"
                _durable.link_or_copy(src, dst)
                record[key] = str(dst.relative_to(out))
        _durable.fsync_dir(out / "inputs")
    if table is not None:  # kept in the run directory from the start: a resumed run needs no other file
        _durable.write_file(out / TABLE_FILE, table)
    _durable.write_file(out / "cli_args.json", json.dumps(record, indent=2).encode("utf-8"))


def _saved_args(out: Path) -> dict:
    path = out / "cli_args.json"
    if not path.is_file():
        raise CLIError(f"--resume '{out}' is not a run directory written by 'filter' (no cli_args.json)")
    try:
        saved = read_small_json(path, "cli_args.json")
    except ValueError as exc:
        raise CLIError(f"--resume '{out}': {str(exc).rstrip('.')}") from None
    if not isinstance(saved, dict) or any(not isinstance(saved.get(k), (str, type(None))) for k in _INPUT_FILES):
        raise CLIError(f"--resume '{out}': its cli_args.json is damaged (not the arguments of a run)")
    for key in _INPUT_FILES:  # files copied into the run are recorded relative to it
        if saved.get(key) is not None and not Path(saved[key]).is_absolute():
            saved[key] = str(out / saved[key])
    return saved


def _missing_resume(args: argparse.Namespace) -> CLIError:
    return CLIError(
        f"--resume '{args.resume}' does not exist; give the folder that 'filter --out' wrote (or start "
        "a new run with --out)"
    )


def _cmd_filter(args: argparse.Namespace) -> int:
    """Check what can be checked without the run directory, then do the run holding its lock (``.NAME.lock``)."""
    if args.resume:
        out = Path(args.resume)
        if not out.exists() and not out.parent.is_dir():
            raise _missing_resume(args)
    else:
        missing = [f"--{n.replace('_', '-')}" for n in _REQUIRED_FOR_NEW_RUN if getattr(args, n) is None]
        if missing:
            raise CLIError(f"filter needs {', '.join(missing)} (or --resume RUN_DIR)")
        out = Path(args.out)
    # one writer per run directory: a second `filter --out/--force/--resume` or save() into it waits, then refuses
    with folder_lock(out):
        return _filter_locked(args, out)


def _filter_locked(args: argparse.Namespace, out: Path) -> int:
    if args.resume:
        _durable.finish_swap(out)  # a save interrupted between its two renames is completed first
        if not out.exists():
            raise _missing_resume(args)
        if not out.is_dir():
            raise CLIError(f"--resume '{args.resume}' is a file, not a run directory")
        saved = _saved_args(out)
        for name in _RUN_OPTIONS:
            setattr(args, name, saved.get(name))
        table_id_column = saved.get("table_id_column")
        # the tie-break the run started with (a run directory written before the option existed: "position")
        started_with = saved.get("tie_break") or "position"
        if args.tie_break is not None and args.tie_break != started_with:
            raise CLIError(
                f"--resume '{out}' started with --tie-break {started_with} and continues with it; "
                f"drop --tie-break {args.tie_break}"
            )
        args.tie_break = started_with
        # the groups the run started with (a run written before groups existed has none)
        args.groups_column, args.no_groups = saved.get("groups_column"), saved.get("groups_column") is None
        # continue with the family the run started with (its recorded spec), not what its name means today
        spec = ((peek_meta(out / "checkpoint") or {}).get("fingerprint") or {}).get("model")
        if spec is None and (out / "result.json").is_file():
            spec = AFLiteResult.load(out).params.get("model")
        if isinstance(spec, dict):
            args.model = family_from_spec(spec)
    else:
        _check_out(args)
        table_id_column = args.id_column
        args.tie_break = args.tie_break or "position"
    if args.dask_local is not None and args.dask_local < 1:
        raise CLIError(f"--dask-local must be a number of workers >= 1, got {args.dask_local}")
    if args.dask_local is not None and args.dask_local > THREADS[1]:
        raise CLIError(f"--dask-local must be a number of workers <= {THREADS[1]:,}, got {shown(args.dask_local)}")
    if args.scheduler and args.dask_local is not None:
        raise CLIError("--scheduler and --dask-local cannot be combined")
    if args.max_rounds is not None and args.max_rounds < 1:
        raise CLIError(f"--max-rounds must be >= 1, got {args.max_rounds}")
    if (args.eval_features is None) != (args.eval_labels is None):
        raise CLIError("--eval-features and --eval-labels must be given together")
    X = read_features(args.features, mmap=args.mmap)
    y = read_labels(args.labels, column=args.label_column)
    eval_X = eval_y = None
    if args.eval_features is not None:
        eval_X = read_features(args.eval_features, mmap=args.mmap)
        eval_y = read_labels(args.eval_labels, column=args.label_column)
    model = resolve_model(args.model, "aflite")
    ids, eval_ids = _load_ids(args.ids), _load_ids(args.eval_ids)
    bar = Progress(quiet=args.quiet)
    limit = args.max_rounds

    def progress(p) -> bool:
        bar(p)
        return limit is None or p.round < limit

    aligned = _aligned_table(args, len(y), ids)
    groups, groups_column = _groups(args, aligned, out)
    # every argument is checked here, before the run directory is touched
    run = plan_run(
        X,
        y,
        target_size=args.target_size,
        n_partitions=args.partitions,
        train_size=args.train_size,
        slice_size=args.slice_size,
        tau=args.tau,
        strategy=args.strategy,
        model=model,
        eval_X=eval_X,
        eval_y=eval_y,
        random_state=args.seed,
        callback=progress,
        ids=ids,
        eval_ids=eval_ids,
        n_threads=args.threads,
        checkpoint=out / "checkpoint",
        device=args.device,
        precision=args.precision,
        max_device_bytes=args.max_device_bytes,
        null_permutations=args.null_permutations or 0,  # a run directory written before the null: none
        groups=groups,
        groups_source=groups_column,
        tie_break=args.tie_break,
    )
    cfg = run.config  # the resolved counts: the progress line's time left follows the run's shape model
    bar.set_shape(
        n_rows=int(X.shape[0]),
        target_size=cfg.target_size,
        slice_size=cfg.slice_size,
        train_size=cfg.train_size,
        n_partitions=cfg.n_partitions,
        n_features=int(X.shape[1]) if X.ndim == 2 else 1,
        n_classes=max(len(np.unique(y)), 2),
        model=args.model if isinstance(args.model, str) else "linear",  # a resumed run's recorded family: as default
    )
    if args.device != "cpu" and (args.scheduler or args.dask_local is not None):
        raise CLIError(f"--device {args.device} runs in this process only; drop --scheduler/--dask-local")
    if args.null_permutations and (args.scheduler or args.dask_local is not None):
        raise CLIError(
            "--null-permutations runs in this process only (the Dask backend does not compute the null); "
            "drop --scheduler/--dask-local or --null-permutations"
        )
    table = None if aligned is None else table_parquet_bytes(aligned, Path(args.table).name)
    del aligned
    if not args.resume:
        record = {n: getattr(args, n) for n in _RUN_OPTIONS}
        record["groups_column"] = groups_column
        record["tie_break"] = args.tie_break
        for key in _INPUT_FILES:
            if record[key] is not None:
                record[key] = str(Path(record[key]).resolve())
        if table is not None:
            record["table"], record["table_id_column"] = str(Path(args.table).resolve()), args.id_column
        _prepare_out(out, args, record, table)
        del table
    backend, close = _cluster(args)
    try:
        if backend is not None:
            run.backend = _resolve_backend(backend, "aflite")
        result = execute_run(run, resume=bool(args.resume))
    finally:
        bar.close()
        close()
    recorded = out / TABLE_FILE
    result.save(out, table=recorded if recorded.is_file() else None, table_id_column=table_id_column)
    summary = result.summary()
    summary["out"] = str(out)
    if recorded.is_file():
        summary["table"] = str(recorded)
    if result.stopped:
        summary["resume"] = f"python -m aflite_core filter --resume {out}"
    print(json.dumps(summary))
    return 0


def _cmd_predictability(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    X = read_features(args.features, mmap=args.mmap)
    y = read_labels(args.labels, column=args.label_column)
    t0 = time.perf_counter()
    p = predictability(
        X,
        y,
        n_partitions=args.partitions,
        train_size=args.train_size,
        model=args.model,
        random_state=args.seed,
        n_threads=args.threads,
        device=args.device,
        precision=args.precision,
        max_device_bytes=args.max_device_bytes,
    )
    frame = pd.DataFrame({"label": y, "predictability": p})
    ids = _load_ids(args.ids)
    if ids is not None:
        if len(ids) != len(frame):
            raise CLIError(f"--ids has {len(ids)} rows, the features have {len(frame)}")
        frame.insert(0, "id", ids)
    frame.to_csv(args.out, index_label="row")
    print(
        json.dumps(
            {
                "rows": len(p),
                "mean_predictability": float(np.nanmean(p)),
                "seconds": round(time.perf_counter() - t0, 3),
                "out": str(args.out),
            }
        )
    )
    return 0


def add_cli(sub: Any) -> None:
    """Register ``filter`` and ``predictability`` (the commands that run AFLite on a feature file)."""

    def common(p: argparse.ArgumentParser, required: bool = True) -> None:
        p.add_argument("--features", required=required, help="features Φ(X) as a .npy file (float)")
        p.add_argument("--labels", required=required, help="labels: .npy, .txt (one per line), .csv or .tsv")
        p.add_argument("--label-column", default=None, help="label column of a CSV/TSV with several columns")
        p.add_argument("--partitions", type=bounded(*PARTITIONS), default=64, help="m, models per round (default 64)")
        p.add_argument(
            "--train-size", type=count_or_fraction, required=required, help="t, rows per model (count or fraction)"
        )
        p.add_argument(
            "--model",
            default="linear",
            choices=list(ADVERSARIES),
            help="model family M (default linear: batched logistic regression)",
        )
        p.add_argument("--seed", type=bounded(*SEEDS), default=0, help="random seed (default 0)")
        p.add_argument(
            "--threads",
            type=bounded(*THREADS),
            default=None,
            help="threads (default: every available core; the result is the same for any value)",
        )
        p.add_argument("--mmap", action="store_true", help="memory-map the .npy feature files")
        p.add_argument("--ids", default=None, help="row ids, one per row (.npy/.txt/.csv with an 'id' column)")
        p.add_argument(
            "--device",
            default="cpu",
            help="cpu (numpy engine, default), cuda, cuda:N or torch:cpu (the default family through PyTorch); "
            "a resumed run needs the device it started on",
        )
        p.add_argument("--precision", default="float32", choices=["float32", "tf32"], help="torch devices only")
        p.add_argument(
            "--max-device-bytes",
            type=bounded(1, 2**62),
            default=None,
            help="torch devices: stream features larger than this from host memory (default: half the GPU)",
        )

    f = sub.add_parser("filter", help="run AFLite and write the run directory (resumable)")
    common(f, required=False)
    f.add_argument("--target-size", type=count_or_fraction, default=None, help="n, never go below (count or fraction)")
    f.add_argument("--slice-size", type=int, default=None, help="k, rows removed per round at most")
    f.add_argument("--tau", type=float, default=0.75, help="τ, early-stopping threshold (default 0.75)")
    f.add_argument("--strategy", default="slice", choices=["slice", "greedy", "sample"])
    f.add_argument("--eval-features", default=None, help="evaluation features .npy (filtered alongside)")
    f.add_argument("--eval-labels", default=None, help="evaluation labels")
    f.add_argument("--eval-ids", default=None, help="evaluation row ids")
    f.add_argument("--out", default=None, help="run directory to write (AFLiteResult.save format + checkpoint)")
    f.add_argument(
        "--force",
        action="store_true",
        help="replace the run in --out (only ever a run directory: a saved or interrupted run)",
    )
    f.add_argument(
        "--copy-inputs",
        action="store_true",
        help="hard-link (or copy) the input files into RUN_DIR/inputs/ and record them relative to the "
        "run, so the run directory is self-contained (the app opens runs whose files lie below "
        "its run root)",
    )
    f.add_argument(
        "--table",
        default=None,
        help="record the table the rows came from (texts, metadata; .csv/.tsv/.parquet/.jsonl) in the run "
        "directory as table.parquet, one row per run row (the app shows it beside the run's rows)",
    )
    f.add_argument(
        "--id-column",
        default=None,
        help="the --table column holding the rows' ids (unique, covering --ids, or 0..n-1 without --ids); "
        "default: the table's rows are the features' rows, in order",
    )
    f.add_argument(
        "--null-permutations",
        type=bounded(0, 1000),
        default=0,
        metavar="K",
        help="also score K label permutations every round and record how many rows chance alone would put at "
        "p >= tau (the run removes the same rows; about K + 1 times the fits; default 0: no null)",
    )
    f.add_argument(
        "--tie-break",
        default=None,
        choices=["position", "row"],
        help="order among rows of equal score: position (default; a fresh random key per position in the set "
        "each round, the engine's order since commit 4293819) or row (keys drawn per row and round, so a row "
        "that differs by a rounding error on another device moves no other row's key); a resumed run keeps its own",
    )
    add_group_options(f)
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="continue an interrupted run from its last completed round (same final result)",
    )
    f.add_argument("--max-rounds", type=int, default=None, help="stop after this many rounds (resume later)")
    f.add_argument(
        "--scheduler", default=None, metavar="ADDRESS", help="run the rounds on a Dask cluster, e.g. tcp://host:8786"
    )
    f.add_argument(
        "--dask-local",
        type=int,
        default=None,
        metavar="N",
        help="start a local Dask cluster of N single-threaded workers for this run",
    )
    f.set_defaults(func=_cmd_filter)

    p = sub.add_parser("predictability", help="score every row once (an audit), write a CSV")
    common(p)
    p.add_argument("--out", required=True, help="CSV to write (row, id, label, predictability)")
    p.set_defaults(func=_cmd_predictability)
