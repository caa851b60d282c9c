"""``aflite dynamics``: difficulty levels from recorded or read training dynamics, one row per example."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pandas as pd

from ..dynamics import (
    DynamicsRecord,
    aum_levels,
    data_maps_levels,
    difficulty_levels,
    read_cartography_dynamics,
    record_dynamics,
)
from ..io import read_features, read_labels, read_table
from ..spurious import compare_classes, spurious_measures

__all__ = ["add_cli"]


# --------------------------------------------------------------------------------------------------- CLI
def add_cli(subparsers: Any, name: str = "dynamics") -> None:
    """Register the ``dynamics`` sub-command on an argparse ``subparsers`` object.

    ``aflite dynamics`` records (``--features``) or reads (``--dynamics-dir``) training dynamics, computes the
    measures, the GMM difficulty levels and both baselines, optionally the spurious-correlation measures of a
    text table (``--table``), writes one row per example to ``--out`` (.parquet or .csv) and prints one JSON
    line with the counts per level. Bad input raises ``ValueError``.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="dynamics"
        The command's name.
    """
    p = subparsers.add_parser(
        name,
        help="difficulty levels (easy/ambiguous/hard) from training dynamics",
        description="Difficulty levels from training dynamics (Cosma et al., 2024): record or read per-epoch "
        "logits, compute confidence/variability/correctness/AUM for the full and partial input, "
        "cluster them, and write one row per example.",
    )
    src = p.add_argument_group("record dynamics from features")
    src.add_argument("--features", help="full-input features .npy (e.g. premise+hypothesis embeddings)")
    src.add_argument("--partial-features", help="partial-input features .npy (e.g. hypothesis only)")
    src.add_argument("--labels", help="labels: .npy, .txt (one per line), .csv or .tsv")
    src.add_argument("--label-column", default=None, help="label column of a CSV/TSV with several columns")
    src.add_argument("--epochs", type=int, default=5, help="training epochs (default 5)")
    src.add_argument("--hidden-size", type=int, default=None, help="hidden units (default: softmax model)")
    src.add_argument("--batch-size", type=int, default=32, help="mini-batch size (default 32)")
    src.add_argument("--learning-rate", type=float, default=1e-2, help="Adam learning rate (default 0.01)")
    src.add_argument("--ids", default=None, help="row ids, one per row (.npy/.txt/.csv with an 'id' column)")
    src.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    red = p.add_argument_group("or read dynamics (allenai/cartography JSONL)")
    red.add_argument("--dynamics-dir", help="folder of dynamics_epoch_<e>.jsonl for the full input")
    red.add_argument("--partial-dynamics-dir", help="the same for the partial input")
    red.add_argument("--classes", default=None, help="class names in logit order, comma-separated")
    txt = p.add_argument_group("spurious-correlation measures")
    txt.add_argument("--table", help="texts: .csv, .tsv, .jsonl or .parquet, one row per example")
    txt.add_argument("--text-a", default="premise", help="first text column (default premise)")
    txt.add_argument("--text-b", default="hypothesis", help="second text column (default hypothesis)")
    txt.add_argument("--id-column", default=None, help="table column matching the dynamics ids (default: by row)")
    txt.add_argument("--tests-out", default=None, help="write the Mann-Whitney table (.csv) here")
    p.add_argument("--ambiguous-fraction", type=float, default=0.33, help="Data Maps ambiguous share (0.33)")
    p.add_argument("--n-init", type=int, default=10, help="Gaussian-mixture initialisations (default 10)")
    p.add_argument("--out", required=True, help="per-example output: .parquet or .csv")
    p.set_defaults(func=_cmd_dynamics)


def _cmd_dynamics(args: Any) -> int:

    t0 = time.perf_counter()
    out = Path(args.out)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise ValueError(f"--out '{out}' must end in .parquet or .csv.")
    if (args.features is None) == (args.dynamics_dir is None):
        raise ValueError("Give either --features (with --labels) or --dynamics-dir, exactly one of them.")
    if args.features is not None:
        if args.labels is None:
            raise ValueError("--features needs --labels.")
        if args.partial_dynamics_dir is not None:
            raise ValueError("--partial-dynamics-dir goes with --dynamics-dir; with --features use --partial-features.")
        X = read_features(args.features)
        Xp = None if args.partial_features is None else read_features(args.partial_features)
        y = read_labels(args.labels, column=args.label_column)
        if Xp is not None and Xp.shape[0] != X.shape[0]:
            raise ValueError(f"--partial-features has {Xp.shape[0]} rows, --features has {X.shape[0]}.")
        ids = None if args.ids is None else read_labels(args.ids, column="id")
        record = record_dynamics(
            X,
            y,
            X_partial=Xp,
            epochs=args.epochs,
            hidden_size=args.hidden_size,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            ids=ids,
            random_state=args.seed,
        )
    else:
        if args.partial_features is not None or args.labels is not None or args.ids is not None:
            raise ValueError(
                "--partial-features, --labels and --ids go with --features; --dynamics-dir reads the "
                "gold labels and ids (guids) from the files (use --partial-dynamics-dir for the "
                "partial input)."
            )
        classes = None if args.classes is None else [c.strip() for c in args.classes.split(",")]
        full = read_cartography_dynamics(args.dynamics_dir, classes=classes)
        partial = None
        if args.partial_dynamics_dir is not None:
            partial = read_cartography_dynamics(args.partial_dynamics_dir, classes=classes)
        record = DynamicsRecord(full=full, partial=partial)
    levels = difficulty_levels(record, n_init=args.n_init, random_state=args.seed)
    maps = data_maps_levels(record, ambiguous_fraction=args.ambiguous_fraction)
    bands = aum_levels(record)
    frame = record.to_frame()
    frame["level"] = levels.levels
    frame["data_maps_level"] = maps.levels
    frame["aum_level"] = bands.levels
    summary: dict[str, Any] = {
        "rows": len(frame),
        "epochs": record.full.n_epochs,
        "partial_input": record.partial is not None,
    }
    if args.table is not None:
        table = read_table(args.table)
        for col in (args.text_a, args.text_b):  # an empty cell is an empty text here
            if col in table.columns:
                table[col] = table[col].where(table[col].notna(), "")
        for col in (args.text_a, args.text_b):
            if col not in table.columns:
                raise ValueError(
                    f"Table '{args.table}' has no column '{col}'; its columns are {list(table.columns)} "
                    "(choose them with --text-a / --text-b)."
                )
        if args.id_column is not None:
            if args.id_column not in table.columns:
                raise ValueError(f"Table '{args.table}' has no column '{args.id_column}' (--id-column).")
            keyed = table.set_index(table[args.id_column].astype(str))
            if keyed.index.has_duplicates:
                raise ValueError(
                    f"Table '{args.table}' repeats id {keyed.index[keyed.index.duplicated()][0]!r} in "
                    f"column '{args.id_column}'."
                )
            wanted = frame.index.astype(str)
            absent = wanted.difference(keyed.index)
            if len(absent):
                raise ValueError(f"Table '{args.table}' has no row with {args.id_column} = {absent[0]!r}.")
            table = keyed.loc[wanted]
        elif len(table) != len(frame):
            raise ValueError(
                f"Table '{args.table}' has {len(table)} rows but the dynamics have {len(frame)}; give "
                "one row per example in the same order, or --id-column."
            )
        for col in (args.text_a, args.text_b):
            bad = [i for i, v in enumerate(table[col].tolist()) if not isinstance(v, str)]
            if bad:
                raise ValueError(
                    f"Table '{args.table}' column '{col}' must hold text; row {bad[0]} holds "
                    f"{table[col].iloc[bad[0]]!r}."
                )
        spur = spurious_measures(table[args.text_a].tolist(), table[args.text_b].tolist())
        spur.index = frame.index
        frame = pd.concat([frame, spur], axis=1)
        if args.tests_out is not None:
            tests = compare_classes(spur, frame["label"], levels)
            tests.to_csv(args.tests_out, index=False)
            summary["tests_out"] = str(args.tests_out)
    elif args.tests_out is not None:
        raise ValueError("--tests-out needs --table (the texts to measure).")
    out.parent.mkdir(parents=True, exist_ok=True)
    written = frame.reset_index()
    if out.suffix.lower() == ".parquet":
        written.to_parquet(out, index=False)
    else:
        written.to_csv(out, index=False)
    summary.update(
        {
            "levels": {k: int(v) for k, v in levels.counts().items()},
            "data_maps_levels": {k: int(v) for k, v in maps.counts().items()},
            "aum_levels": {k: int(v) for k, v in bands.counts().items()},
            "out": str(out),
            "seconds": round(time.perf_counter() - t0, 3),
        }
    )
    print(json.dumps(summary))
    return 0
