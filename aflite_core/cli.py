"""Command line: ``python -m aflite_core <command> ...`` (also installed as ``aflite``).

Commands print machine-readable results on stdout and progress on stderr. Bad input prints one line on
stderr and exits with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]

EXIT_BAD_INPUT = 2


class CLIError(Exception):
    """Bad input detected by the CLI itself."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse's own behaviour, without the usage dump)
        raise CLIError(f"{self.prog}: {message}")


def _number(text: str) -> int | float:
    """Parse '500' as an int and '0.3' as a float (counts or fractions)."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


class Progress:
    """A one-line progress bar on stderr (one line per round when stderr is not a terminal)."""

    def __init__(self, stream=None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, progress) -> bool:
        if self.quiet:
            return True
        width = 30
        filled = round(progress.fraction_done * width)
        bar = "#" * filled + "-" * (width - filled)
        extra = f" | eval left {progress.eval_size}" if progress.eval_size is not None else ""
        line = (
            f"[{bar}] round {progress.round} | size {progress.size:,} (target {progress.target_size:,}) | "
            f"removed {progress.removed:,} | {progress.seconds:.1f}s{extra}"
        )
        if self.tty:
            self.stream.write("\r" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        return True

    def close(self) -> None:
        if self.tty and not self.quiet:
            self.stream.write("\n")
            self.stream.flush()


def _load_ids(path: str | None) -> Any:
    if path is None:
        return None
    from .io import read_labels

    return read_labels(path, column="id")


#: options of `filter` a resumed run takes from the run directory (the data and every parameter)
_RUN_OPTIONS = ("features", "labels", "label_column", "partitions", "train_size", "model", "seed", "threads",
                "mmap", "ids", "target_size", "slice_size", "tau", "strategy", "eval_features", "eval_labels",
                "eval_ids")
_REQUIRED_FOR_NEW_RUN = ("features", "labels", "target_size", "train_size", "out")


def _cluster(args: argparse.Namespace):
    """(backend, closer) for --scheduler / --dask-local, or (None, no-op)."""
    if args.scheduler and args.dask_local:
        raise CLIError("--scheduler and --dask-local cannot be combined")
    if args.scheduler:
        from .distributed import _import_distributed

        client = _import_distributed().Client(args.scheduler, timeout="30s")
        return client, client.close
    if args.dask_local:
        if args.dask_local < 1:
            raise CLIError(f"--dask-local must be a number of workers >= 1, got {args.dask_local}")
        from .distributed import local_cluster

        cluster, client = local_cluster(args.dask_local)

        def close() -> None:
            client.close()
            cluster.close()

        return client, close
    return None, lambda: None


def _cmd_filter(args: argparse.Namespace) -> int:
    from .filtering import aflite
    from .io import read_features, read_labels
    from .models import resolve_model

    if args.resume:
        out = Path(args.resume)
        saved_path = out / "cli_args.json"
        if not saved_path.is_file():
            raise CLIError(f"--resume '{out}' is not a run directory written by 'filter' (no cli_args.json)")
        saved = json.loads(saved_path.read_text(encoding="utf-8"))
        for name in _RUN_OPTIONS:
            setattr(args, name, saved.get(name))
        # continue with the family the run started with (its recorded spec), not what its name means today
        from .engine import read_checkpoint_meta
        from .models import family_from_spec

        if (out / "checkpoint" / "state.json").is_file():
            args.model = family_from_spec(read_checkpoint_meta(out / "checkpoint")["fingerprint"]["model"])
        elif (out / "result.json").is_file():
            args.model = family_from_spec(json.loads((out / "result.json").read_text(encoding="utf-8"))["params"]
                                          ["model"])
    else:
        missing = [f"--{n.replace('_', '-')}" for n in _REQUIRED_FOR_NEW_RUN if getattr(args, n) is None]
        if missing:
            raise CLIError(f"filter needs {', '.join(missing)} (or --resume RUN_DIR)")
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise CLIError(f"--out '{out}' exists and is not a directory")
        if out.is_dir() and any(out.iterdir()) and not args.force:
            raise CLIError(f"--out '{out}' is not empty; pass --force to overwrite it, or --resume '{out}' to "
                           "continue the run in it")
    X = read_features(args.features, mmap=args.mmap)
    y = read_labels(args.labels, column=args.label_column)
    eval_X = eval_y = None
    if (args.eval_features is None) != (args.eval_labels is None):
        raise CLIError("--eval-features and --eval-labels must be given together")
    if args.eval_features is not None:
        eval_X = read_features(args.eval_features, mmap=args.mmap)
        eval_y = read_labels(args.eval_labels, column=args.label_column)
    if args.max_rounds is not None and args.max_rounds < 1:
        raise CLIError(f"--max-rounds must be >= 1, got {args.max_rounds}")
    model = resolve_model(args.model, "aflite")
    ids, eval_ids = _load_ids(args.ids), _load_ids(args.eval_ids)
    if not args.resume:
        if out.is_dir() and args.force:
            import shutil

            shutil.rmtree(out / "checkpoint", ignore_errors=True)
        out.mkdir(parents=True, exist_ok=True)
        record = {n: getattr(args, n) for n in _RUN_OPTIONS}
        for key in ("features", "labels", "ids", "eval_features", "eval_labels", "eval_ids"):
            if record[key] is not None:
                record[key] = str(Path(record[key]).resolve())
        (out / "cli_args.json").write_text(json.dumps(record, indent=2))
    bar = Progress(quiet=args.quiet)
    limit = args.max_rounds

    def progress(p) -> bool:
        bar(p)
        return limit is None or p.round < limit

    backend, close = _cluster(args)
    try:
        result = aflite(
            X, y, target_size=args.target_size, n_partitions=args.partitions, train_size=args.train_size,
            slice_size=args.slice_size, tau=args.tau, strategy=args.strategy, model=model, eval_X=eval_X,
            eval_y=eval_y, random_state=args.seed, callback=progress, ids=ids, eval_ids=eval_ids,
            n_threads=args.threads, backend=backend, checkpoint=out / "checkpoint", resume=bool(args.resume),
        )
    finally:
        bar.close()
        close()
    result.save(out)
    summary = result.summary()
    summary["out"] = str(out)
    if result.stopped:
        summary["resume"] = f"python -m aflite_core filter --resume {out}"
    print(json.dumps(summary))
    return 0


def _cmd_predictability(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    from .filtering import predictability
    from .io import read_features, read_labels

    X = read_features(args.features, mmap=args.mmap)
    y = read_labels(args.labels, column=args.label_column)
    t0 = time.perf_counter()
    p = predictability(X, y, n_partitions=args.partitions, train_size=args.train_size, model=args.model,
                       random_state=args.seed, n_threads=args.threads)
    frame = pd.DataFrame({"label": y, "predictability": p})
    ids = _load_ids(args.ids)
    if ids is not None:
        if len(ids) != len(frame):
            raise CLIError(f"--ids has {len(ids)} rows, the features have {len(frame)}")
        frame.insert(0, "id", ids)
    frame.to_csv(args.out, index_label="row")
    print(json.dumps({"rows": len(p), "mean_predictability": float(np.nanmean(p)),
                      "seconds": round(time.perf_counter() - t0, 3), "out": str(args.out)}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = _Parser(prog="aflite", description="AFLite Studio: adversarial filtering of dataset biases.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(p: argparse.ArgumentParser, required: bool = True) -> None:
        p.add_argument("--features", required=required, help="features Φ(X) as a .npy file (float)")
        p.add_argument("--labels", required=required, help="labels: .npy, .txt (one per line), .csv or .tsv")
        p.add_argument("--label-column", default=None, help="label column of a CSV/TSV with several columns")
        p.add_argument("--partitions", type=int, default=64, help="m, models per round (default 64)")
        p.add_argument("--train-size", type=_number, required=required,
                       help="t, rows per model (count or fraction)")
        p.add_argument("--model", default="linear", choices=["linear", "logistic"], help="model family")
        p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
        p.add_argument("--mmap", action="store_true", help="memory-map the .npy feature files")
        p.add_argument("--ids", default=None, help="row ids, one per row (.npy/.txt/.csv with an 'id' column)")

    f = sub.add_parser("filter", help="run AFLite and write the run directory (resumable)")
    common(f, required=False)
    f.add_argument("--target-size", type=_number, default=None, help="n, never go below (count or fraction)")
    f.add_argument("--slice-size", type=int, default=None, help="k, rows removed per round at most")
    f.add_argument("--tau", type=float, default=0.75, help="τ, early-stopping threshold (default 0.75)")
    f.add_argument("--strategy", default="slice", choices=["slice", "greedy", "sample"])
    f.add_argument("--eval-features", default=None, help="evaluation features .npy (filtered alongside)")
    f.add_argument("--eval-labels", default=None, help="evaluation labels")
    f.add_argument("--eval-ids", default=None, help="evaluation row ids")
    f.add_argument("--out", default=None, help="run directory to write (AFLiteResult.save format + checkpoint)")
    f.add_argument("--force", action="store_true", help="overwrite a non-empty run directory")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.add_argument("--resume", default=None, metavar="RUN_DIR",
                   help="continue an interrupted run from its last completed round (same final result)")
    f.add_argument("--max-rounds", type=int, default=None, help="stop after this many rounds (resume later)")
    f.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the rounds on a Dask cluster, e.g. tcp://host:8786")
    f.add_argument("--dask-local", type=int, default=None, metavar="N",
                   help="start a local Dask cluster of N single-threaded workers for this run")
    f.set_defaults(func=_cmd_filter)

    p = sub.add_parser("predictability", help="score every row once (an audit), write a CSV")
    common(p)
    p.add_argument("--out", required=True, help="CSV to write (row, id, label, predictability)")
    p.set_defaults(func=_cmd_predictability)
    for name, register in _EXTRA_COMMANDS:
        register(sub, name)
    return parser


def _lazy(module: str) -> Callable:
    """Register a command whose module is imported only when the parser is built."""

    def register(subparsers, name: str) -> None:
        import importlib

        importlib.import_module(f"aflite_core.{module}").add_cli(subparsers, name)

    return register


#: further commands and the modules that define them: (name, function(subparsers, name))
_EXTRA_COMMANDS: list[tuple[str, Callable]] = [
    ("synthetic", _lazy("synthetic")),
    ("eval-filter", _lazy("evalsets")),
    ("dynamics", _lazy("dynamics")),
]


_OPTION_OF = {"n_partitions": "--partitions", "random_state": "--seed", "X": "--features", "y": "--labels",
              "eval_X": "--eval-features", "eval_y": "--eval-labels", "n_threads": "--threads",
              "X_partial": "--partial-features"}


def _as_option_names(message: str) -> str:
    """Say '--train-size' where the library says 'the train_size parameter of aflite'."""
    import re

    def repl(match: re.Match) -> str:
        name = match.group(1)
        return f"The {_OPTION_OF.get(name, '--' + name.replace('_', '-'))} option"

    return re.sub(r"The '(\w+)' parameter of \w+", repl, message)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except (CLIError, ValueError, TypeError, FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = _as_option_names(message)
        sys.stderr.write(f"error: {message}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except MemoryError:
        sys.stderr.write("error: not enough memory for this run (try --mmap or a smaller --partitions)\n")
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
