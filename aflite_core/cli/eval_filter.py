"""``aflite eval-filter``: the adversary study of an evaluation set (Phang et al.), written to a folder."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from ..data.readers import read_features, read_table
from ..engine.registry import CLASSIFIERS
from ..evalsets import StudyProgress, adversary_study, digits_adversary_setup
from ._common import PARTITIONS, SEEDS, THREADS, bounded, int_list, number, print_json

__all__ = ["add_cli"]


def _parse_arrays_spec(text: str, option: str) -> tuple[str, str | None, str | None]:
    """``NAME=TRAIN.npy:EVAL.npy`` (or a bare ``NAME``) → (name, train path, eval path)."""
    if "=" not in text:
        name = text.strip()
        if not name:
            raise ValueError(f"The {option} option must be NAME=TRAIN.npy:EVAL.npy. Got {text!r} instead.")
        return name, None, None
    name, rest = text.split("=", 1)
    name = name.strip()
    parts = rest.split(":")
    if len(parts) != 2:  # a path with ':' in it: split after the first '.npy'
        cut = rest.find(".npy:")
        parts = [rest[: cut + 4], rest[cut + 5 :]] if cut >= 0 else []
    if not name or len(parts) != 2 or not parts[0] or not parts[1]:
        raise ValueError(f"The {option} option must be NAME=TRAIN.npy:EVAL.npy. Got {text!r} instead.")
    return name, parts[0], parts[1]


def _read_column(frame: pd.DataFrame, column: str, option: str, path: str) -> pd.Series:
    if column not in frame.columns:
        raise ValueError(
            f"The {option} option names {column!r}, which is not a column of '{path}' ({list(frame.columns)})."
        )
    return frame[column]


def _cmd_eval_filter(args: argparse.Namespace) -> int:

    started = time.perf_counter()
    specs = [_parse_arrays_spec(s, "--adversary") for s in (args.adversary or [])]
    extra = [_parse_arrays_spec(s, "--representation") for s in (args.representation or [])]
    seeds = int_list(args.seeds, "--seeds")
    evaluated = []
    for item in args.evaluated or []:
        if ":" not in item:
            raise ValueError(f"The --evaluated option must be FAMILY:REPRESENTATION. Got {item!r} instead.")
        fam, rep = item.split(":", 1)
        evaluated.append((fam.strip(), rep.strip()))
    numbers = {
        "target_size": number(args.target_size, "--target-size"),
        "train_size": number(args.train_size, "--train-size"),
        "slice_size": number(args.slice_size, "--slice-size"),
    }
    kw: dict[str, Any] = {
        "seeds": seeds,
        "tau": args.tau,
        "n_partitions": args.partitions,
        "random_state": args.seed,
        "n_threads": args.threads,
        "null_permutations": args.null_permutations,
        "n_null_subsets": args.null_subsets,
    }
    if args.annotator_sources is not None:
        kw["annotator_sources"] = (
            None
            if args.annotator_sources.strip().lower() == "all"
            else tuple(s.strip() for s in args.annotator_sources.split(",") if s.strip())
        )
    if args.digits:
        if args.train_table or args.eval_table:
            raise ValueError("The --digits option cannot be combined with --train-table / --eval-table.")
        if any(p is not None for _, p, _ in specs) or extra:
            raise ValueError(
                "With --digits, --adversary takes bare representation names (pixels, pca, mlp_small, "
                "mlp) and --representation is not used."
            )
        if args.annotator_column:
            raise ValueError(
                "The --annotator-column option needs --train-table / --eval-table (digits have no annotator labels)."
            )
        setup = digits_adversary_setup(
            random_state=args.seed,
            eval_fraction=args.eval_fraction,
            adversaries=[n for n, _, _ in specs] or None,
            evaluated=evaluated or None,
            n_threads=args.threads,
        )
        study_kw = setup.study_kwargs()
        study_kw.update({k: val for k, val in numbers.items() if val is not None})
        study_kw.update(kw)
        train_X, train_y, eval_X, eval_y = setup.train_X, setup.train_y, setup.eval_X, setup.eval_y
        source = {"data": "digits", "eval_fraction": args.eval_fraction, "strength": setup.strength}
    else:
        if not (args.train_table and args.eval_table):
            raise ValueError("Give either --digits or both --train-table and --eval-table.")
        if not specs:
            raise ValueError("Give at least one --adversary NAME=TRAIN.npy:EVAL.npy with --train-table.")
        for opt, val in (
            ("--target-size", numbers["target_size"]),
            ("--train-size", numbers["train_size"]),
            ("--slice-size", numbers["slice_size"]),
        ):
            if val is None:
                raise ValueError(f"The {opt} option is required with --train-table.")
        for name, p, _ in specs + extra:
            if p is None:
                raise ValueError(
                    f"The --adversary / --representation option must give files: {name}=TRAIN.npy:EVAL.npy."
                )
        names = [n for n, _, _ in specs + extra]
        if len(set(names)) != len(names):
            raise ValueError(f"Representation names must be distinct. Got {names}.")
        train = read_table(args.train_table)
        ev = read_table(args.eval_table)
        train_y = _read_column(train, args.label_column, "--label-column", args.train_table).to_numpy()
        eval_y = _read_column(ev, args.label_column, "--label-column", args.eval_table).to_numpy()
        train_X, eval_X = {}, {}
        for name, p_train, p_eval in specs + extra:
            train_X[name] = read_features(p_train)
            eval_X[name] = read_features(p_eval)
            for what, arr, table, path in (
                ("train", train_X[name], train, p_train),
                ("eval", eval_X[name], ev, p_eval),
            ):
                if arr.ndim != 2 or arr.shape[0] != len(table):
                    raise ValueError(
                        f"'{path}' ({what} features of {name!r}) has shape {arr.shape}; the {what} table "
                        f"has {len(table)} rows."
                    )
        study_kw = {
            "adversaries": [n for n, _, _ in specs],
            "evaluated": evaluated or [("logistic", n) for n, _, _ in specs],
            **numbers,
        }
        if args.id_column:
            study_kw["ids"] = _read_column(train, args.id_column, "--id-column", args.train_table).to_numpy()
            study_kw["eval_ids"] = _read_column(ev, args.id_column, "--id-column", args.eval_table).to_numpy()
        if args.annotator_column:
            study_kw["annotator_labels"] = _read_column(
                ev, args.annotator_column, "--annotator-column", args.eval_table
            ).tolist()
            if args.annotator_source_column:
                study_kw["annotator_source"] = _read_column(
                    ev, args.annotator_source_column, "--annotator-source-column", args.eval_table
                ).tolist()
        elif args.annotator_source_column:
            raise ValueError("The --annotator-source-column option needs --annotator-column.")
        study_kw.update(kw)
        source = {"data": "tables", "train_table": args.train_table, "eval_table": args.eval_table}
    if args.ensemble:
        study_kw["ensemble"] = True
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"The --out option must name a directory. '{out}' is a file.")

    def progress(p: StudyProgress) -> None:
        if not args.quiet:
            what = p.stage if p.adversary is None else f"{p.stage} {p.adversary} seed {p.seed}"
            sys.stderr.write(f"[{p.step}/{p.n_steps}] {what} | {p.seconds:.1f}s\n")
            sys.stderr.flush()

    study = adversary_study(train_X, train_y, eval_X, eval_y, callback=progress, **study_kw)
    study.params["source"] = source
    study.save(out)
    summary = study.summary()
    summary["out"] = str(out)
    summary["seconds"] = round(time.perf_counter() - started, 3)
    print_json(summary)
    return 0


def add_cli(subparsers: Any, name: str = "eval-filter") -> None:
    """Register the ``eval-filter`` sub-command: the adversary study of an evaluation set.

    ``aflite eval-filter`` runs :func:`adversary_study` on the bundled digits (``--digits``) or on a training
    and an evaluation table with named representations (``--adversary NAME=TRAIN.npy:EVAL.npy``, repeated),
    writes every table as Parquet and CSV plus ``summary.json`` to ``--out`` and prints one JSON line.
    Progress goes to stderr. Bad input raises ``ValueError``; the CLI's ``main`` prints it on one line and
    exits with status 2.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="eval-filter"
        The command's name.
    """
    p = subparsers.add_parser(
        name,
        help="filter an evaluation set with several adversaries and compare evaluated models (Phang et al.)",
        description="AFLite on an evaluation set for several adversaries and seeds: which evaluation rows leave "
        "in round 1, later, or are selected; evaluated models' accuracy, ranking (Kendall's "
        "coefficient) and same-representation rank change; annotator agreement per category.",
    )
    data = p.add_argument_group("data")
    data.add_argument("--digits", action="store_true", help="the bundled digits with four adversaries")
    data.add_argument("--eval-fraction", type=float, default=0.3, help="digits: evaluation share (default 0.3)")
    data.add_argument("--train-table", default=None, help="training rows: CSV, TSV, Parquet or JSONL")
    data.add_argument("--eval-table", default=None, help="evaluation rows: CSV, TSV, Parquet or JSONL")
    data.add_argument("--label-column", default="label", help="label column of both tables (default label)")
    data.add_argument("--id-column", default=None, help="id column of both tables")
    data.add_argument(
        "--adversary",
        action="append",
        metavar="NAME=TRAIN.npy:EVAL.npy",
        help="an adversary's representation of the training and evaluation rows (repeat); with "
        "--digits a bare name selects one of pixels, pca, mlp_small, mlp",
    )
    data.add_argument(
        "--representation",
        action="append",
        metavar="NAME=TRAIN.npy:EVAL.npy",
        help="a further representation used only by evaluated models (repeat)",
    )
    p.add_argument(
        "--evaluated",
        action="append",
        metavar="FAMILY:REPRESENTATION",
        help=f"an evaluated model (repeat); families: {', '.join(CLASSIFIERS)}",
    )
    p.add_argument("--seeds", default="0,1,2", help="AFLite seeds, comma-separated (default 0,1,2)")
    p.add_argument("--target-size", default=None, help="n, count or fraction (digits default 400)")
    p.add_argument("--train-size", default=None, help="t, count or fraction (digits default 100)")
    p.add_argument("--slice-size", default=None, help="k, count (digits default 100)")
    p.add_argument("--tau", type=float, default=0.75, help="τ, AFLite's threshold (default 0.75)")
    p.add_argument("--partitions", type=bounded(*PARTITIONS), default=64, help="m, models per round (default 64)")
    p.add_argument(
        "--null-subsets",
        type=bounded(0, 100_000),
        default=1000,
        help="random evaluation subsets of each run's selected size: the control of every Kendall coefficient "
        "and accuracy drop (default 1000; 0 skips it)",
    )
    p.add_argument("--ensemble", action="store_true", help="also filter with the pooled ensemble of adversaries")
    p.add_argument("--annotator-column", default=None, help="evaluation-table column with annotator label lists")
    p.add_argument("--annotator-source-column", default=None, help="column with the source of those labels")
    p.add_argument(
        "--annotator-sources",
        default=None,
        help="sources used for agreement, comma-separated, or 'all' (default random_subset)",
    )
    p.add_argument(
        "--seed", type=bounded(*SEEDS), default=0, help="seed of the split (digits) and evaluated models (default 0)"
    )
    p.add_argument("--threads", type=bounded(*THREADS), default=1, help="BLAS threads (default 1)")
    p.add_argument(
        "--null-permutations",
        type=bounded(0, 1000),
        default=0,
        metavar="K",
        help="also score K training-label permutations per round: the runs table's eval_null_round_1 says how "
        "many evaluation rows chance alone would put at p >= tau in round 1 (default 0: none)",
    )
    p.add_argument("--out", required=True, help="directory for the tables (Parquet + CSV) and summary.json")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=_cmd_eval_filter)
