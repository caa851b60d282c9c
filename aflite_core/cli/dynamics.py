"""``aflite dynamics``: difficulty levels from recorded or read training dynamics, one row per example."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pandas as pd

from ..data.readers import read_features, read_labels, read_table
from ..dynamics import (
    DynamicsRecord,
    aum_levels,
    data_maps_levels,
    difficulty_levels,
    read_cartography_dynamics,
    record_dynamics,
)
from ..measures.spurious import compare_classes, spurious_measures
from ._common import BATCH_SIZE, EPOCHS, HIDDEN_SIZE, N_INIT, SEEDS, bounded

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
    src.add_argument("--epochs", type=bounded(*EPOCHS), default=5, help="training epochs (default 5)")
    src.add_argument(
        "--hidden-size", type=bounded(*HIDDEN_SIZE), default=None, help="hidden units (default: softmax model)"
    )
    src.add_argument("--batch-size", type=bounded(*BATCH_SIZE), default=32, help="mini-batch size (default 32)")
    src.add_argument("--learning-rate", type=float, default=1e-2, help="Adam learning rate (default 0.01)")
    src.add_argument("--ids", default=None, help="row ids, one per row (.npy/.txt/.csv with an 'id' column)")
    src.add_argument("--seed", type=bounded(*SEEDS), default=0, help="random seed (default 0)")
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
    p.add_argument("--n-init", type=bounded(*N_INIT), default=10, help="Gaussian-mixture initialisations (default 10)")
    p.add_argument("--out", default=None, help="per-example output: .parquet or .csv (required without --validate)")
    val = p.add_argument_group("validate the levels (Cosma et al.'s level results and Tables 5/6) on held-out rows")
    val.add_argument(
        "--validate",
        action="store_true",
        help="split the rows (by --group-column), record dynamics on each part, and report the accuracy per level "
        "of models trained on the other part, and of models trained on 10-50 %% of the rows chosen by level, by "
        "Data Maps, by an AUM band or at random (needs --features and --labels)",
    )
    val.add_argument(
        "--group-column", default=None, help="column of --labels (a table) or --table keeping groups together"
    )
    val.add_argument("--eval-fraction", type=float, default=0.5, help="share of the rows characterised (default 0.5)")
    val.add_argument("--fractions", default="0.1,0.2,0.3,0.4,0.5", help="training fractions (default 0.1,...,0.5)")
    val.add_argument(
        "--seeds",
        default="0,1,2,3,4",
        help="seeds, each re-drawing the split, the recordings, the models and the subsets (default 0,1,2,3,4)",
    )
    val.add_argument(
        "--digits",
        action="store_true",
        help="with --validate: the bundled digits, levels from the warm-up MLP's features (mlp) and the pixels as "
        "the representation the levels never see",
    )
    val.add_argument(
        "--independent-features",
        default=None,
        help="a representation the levels never see (.npy), scored per level by a logistic regression: the "
        "check that is not circular (e.g. hypothesis embeddings with --features the pair's and no "
        "--partial-features)",
    )
    val.add_argument("--json", action="store_true", help="with --validate: print JSON instead of tables")
    p.set_defaults(func=_cmd_dynamics)


_TABLE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv", ".tsv")


def _labels_and_groups(args: Any) -> tuple[Any, Any]:
    """Labels from --labels (a label file, or a table with --label-column) and groups from --group-column."""
    suffix = Path(args.labels).suffix.lower()
    table = None
    if suffix in (".jsonl", ".json", ".parquet"):
        table = read_table(args.labels)
        column = args.label_column or "label"
        if column not in table.columns:
            raise ValueError(f"Table '{args.labels}' has no label column '{column}' (choose it with --label-column).")
        y = table[column].to_numpy()
    else:
        y = read_labels(args.labels, column=args.label_column)
    groups = None
    if args.group_column is not None:
        source = table
        if args.table is not None:
            source = read_table(args.table)
        elif source is None and suffix in (".csv", ".tsv"):
            source = read_table(args.labels)
        if source is None or args.group_column not in source.columns:
            raise ValueError(
                f"--group-column '{args.group_column}' must be a column of --table or of a tabular --labels file."
            )
        groups = source[args.group_column].astype(str).to_numpy()
        if len(groups) != len(y):
            raise ValueError(f"--group-column has {len(groups)} rows, the labels {len(y)}.")
    return y, groups


def _pm(mean: float, sd: float) -> str:
    return "" if pd.isna(mean) else f"{mean:.3f} ± {0.0 if pd.isna(sd) else sd:.3f}"


def _format_validation(res: Any) -> str:
    from ..dynamics.level_controls import DYNAMICS_KIND, validation_findings

    acc = res.level_controls if len(res.level_controls) else res.level_accuracy.assign(levels=DYNAMICS_KIND)
    n_seeds = len(res.params["seeds"])
    levels = [c for c in ("easy", "ambiguous", "hard", "all") if c in set(acc["level"])]
    rows = {}
    for (kind, model, inp), sub in acc.groupby(["levels", "model", "input"], sort=False):
        cells = sub.set_index("level")
        row = {lv: _pm(cells.loc[lv, "accuracy"], cells.loc[lv, "accuracy_std"]) for lv in levels}
        row["easy − hard"] = f"{cells.loc['easy', 'accuracy'] - cells.loc['hard', 'accuracy']:+.3f}"
        rows[(model, inp, kind)] = row
    wide = pd.DataFrame.from_dict(rows, orient="index")
    wide.index = pd.MultiIndex.from_tuples(wide.index, names=["model", "input", "levels"])
    wide = wide.sort_index(level=["model", "input"], sort_remaining=False)
    counts = res.params["level_counts_eval"]
    head = (
        f"Accuracy per level of models trained on the other {res.params['n_train']:,} rows, on the "
        f"{res.params['n_eval']:,} characterised rows (first seed's levels: easy {counts.get('easy', 0):,}, "
        f"ambiguous {counts.get('ambiguous', 0):,}, hard {counts.get('hard', 0):,}; GMM of Cosma et al., 2024), "
        f"mean ± sd over {n_seeds} seed(s) that re-draw the split, the recordings and the models; beside the "
        f"training-dynamics levels, their controls of the same sizes (one LogisticRegression's gold-label "
        f"probability in-sample and out-of-fold, and random levels):\n"
    )
    fr = res.fractions
    table = fr.pivot_table(index="selection", columns="fraction", values="accuracy", sort=False)
    sd = fr.pivot_table(index="selection", columns="fraction", values="accuracy_std", sort=False)
    cols = sorted(table.columns)
    shown = pd.DataFrame(
        {f"{c:.0%}": [_pm(table.loc[i, c], sd.loc[i, c]) for i in table.index] for c in cols}, index=table.index
    )
    src = fr.drop_duplicates("selection").set_index("selection")["source"]
    shown.insert(0, "defined by", [src.get(i, "") for i in shown.index])
    body = (
        f"\nTraining on a fraction of the {res.params['n_train']:,} training rows (mean ± sd over {n_seeds} "
        f"seed(s) that re-draw the split, the recordings and the subsets; logistic regression; tested on the "
        f"characterised rows; confidence_* = the same orders over one-shot confidence levels):\n"
    )
    findings = validation_findings(res.level_controls, res.fractions)
    tail = ("\n" + "\n".join(f"- {f}" for f in findings) + "\n") if findings else ""
    return head + wide.to_string() + "\n" + body + shown.to_string() + "\n" + tail


def _cmd_validate(args: Any) -> int:
    from ..dynamics.validation import validate_levels
    from ._common import int_list, print_json

    if args.dynamics_dir is not None:
        raise ValueError("--validate records its own dynamics on each part; drop --dynamics-dir.")
    if args.digits:
        if args.features or args.labels or args.partial_features or args.independent_features:
            raise ValueError("--digits brings its own features and labels; drop --features / --labels.")
        from ..data.digits import load_digits_dataset

        ds = load_digits_dataset()
        X, Xp, Xi = ds.representation("mlp"), None, ds.representation("pixels")
        y, groups = ds.y, None
    else:
        if args.features is None or args.labels is None:
            raise ValueError("--validate needs --features and --labels (it trains models on the rows), or --digits.")
        X = read_features(args.features)
        Xp = None if args.partial_features is None else read_features(args.partial_features)
        Xi = None if args.independent_features is None else read_features(args.independent_features)
        y, groups = _labels_and_groups(args)
    try:
        fractions = tuple(float(f) for f in str(args.fractions).split(",") if f.strip())
    except ValueError:
        raise ValueError(f"--fractions must be comma-separated floats in (0, 1]. Got {args.fractions!r}.") from None
    seeds = int_list(args.seeds, "--seeds")
    res = validate_levels(
        X,
        y,
        X_partial=Xp,
        X_independent=Xi,
        groups=groups,
        eval_fraction=args.eval_fraction,
        epochs=args.epochs,
        fractions=fractions,
        seeds=seeds,
        random_state=args.seed,
    )
    if args.out is not None:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        res.level_accuracy.to_csv(out.with_name(out.stem + "_levels.csv"), index=False)
        res.fractions.to_csv(out.with_name(out.stem + "_fractions.csv"), index=False)
        res.level_controls.to_csv(out.with_name(out.stem + "_controls.csv"), index=False)
    if args.json:
        print_json({**res.records(), "params": res.params})
    else:
        print(_format_validation(res), end="")
    return 0


def _cmd_dynamics(args: Any) -> int:
    if args.validate:
        return _cmd_validate(args)
    t0 = time.perf_counter()
    if args.out is None:
        raise ValueError("--out is required (the per-example levels), unless --validate.")
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
        y, _ = _labels_and_groups(args)
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
