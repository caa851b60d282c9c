"""``aflite synthetic``: the paper's Figure 2 experiment (concentric circles) as a table or JSON."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from .._format import fmt_num, fmt_pct
from ..data.planted_bias import PAPER_SEPARATIONS, paper_circles
from ..experiments.figure2 import EXPERIMENT_DEFAULTS, accuracy_notes, synthetic_experiment
from ..experiments.seed_counts import synthetic_narrative, synthetic_summary
from ._common import PARTITIONS, SEEDS, int_list, int_option, number, print_json

__all__ = ["add_cli", "format_experiment_table", "format_seed_summary"]


# -- command line: ``aflite synthetic`` ----------------------------------------------------------------------
def format_experiment_table(table: pd.DataFrame) -> str:
    """The experiment table as readable text (what ``aflite synthetic`` prints).

    Parameters
    ----------
    table : pandas.DataFrame
        ``SyntheticExperiment.table``.

    Returns
    -------
    str
        A fixed-width table, one line per dataset.
    """

    def arrow(a: float, b: float, fmt: str = "{:.3f}") -> str:
        return f"{fmt.format(a)} → {fmt.format(b)}"

    table = table.copy()
    for col in ("linear_no_bias", "rbf_no_bias"):  # tables written before the reference existed
        if col not in table:
            table[col] = float("nan")
    if "stop_reason" not in table:
        table["stop_reason"] = ""

    out = pd.DataFrame(
        {
            "dataset": table["dataset"],
            "rows": [arrow(a, b, "{:d}") for a, b in zip(table["n_before"], table["n_after"])],
            "linear acc": [arrow(a, b) for a, b in zip(table["linear_before"], table["linear_after"])],
            "RBF-SVM acc": [arrow(a, b) for a, b in zip(table["rbf_before"], table["rbf_after"])],
            "no-bias ref. (lin / RBF)": [
                f"{fmt_num(a)} / {fmt_num(b)}" for a, b in zip(table["linear_no_bias"], table["rbf_no_bias"])
            ],
            "biased rows": [f"{a:d} → {b:d}" for a, b in zip(table["biased_before"], table["biased_after"])],
            "biased share": [
                f"{fmt_pct(a)} → {fmt_pct(b)}"
                for a, b in zip(table["biased_share_before"], table["biased_share_after"])
            ],
            "flipped removed": [fmt_pct(x) for x in table["flipped_removed_share"]],
            "rounds": table["rounds"],
            "stopped": table["stop_reason"].map(_STOPS).fillna(table["stop_reason"]),
        }
    )
    return out.to_string(index=False)


_STOPS = {"fewer_than_k_qualified": "τ (< k rows ≥ τ)", "target_size_reached": "target size"}


def format_seed_summary(summary: pd.DataFrame) -> str:
    """The cross-seed summary (:func:`~aflite_core.experiments.seed_counts.synthetic_summary`) as text."""
    out = pd.DataFrame(
        {
            "dataset": summary["dataset"],
            "rows after": [f"{a}-{b}" for a, b in zip(summary["rows_min"], summary["rows_max"])],
            "linear after (mean [min, max])": [
                f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
                for m, lo, hi in zip(summary["linear_mean"], summary["linear_min"], summary["linear_max"])
            ],
            "below / at / above chance": [
                f"{a} / {b} / {c}"
                for a, b, c in zip(summary["linear_below"], summary["linear_at"], summary["linear_above"])
            ],
            "RBF after (mean [min, max])": [
                f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
                for m, lo, hi in zip(summary["rbf_mean"], summary["rbf_min"], summary["rbf_max"])
            ],
            "biased share after": [
                f"{fmt_pct(a)}-{fmt_pct(b)}" for a, b in zip(summary["biased_share_min"], summary["biased_share_max"])
            ],
            "τ stops": [f"{a} of {b}" for a, b in zip(summary["tau_stops"], summary["seeds"])],
        }
    )
    return out.to_string(index=False)


def _cmd_synthetic(args: argparse.Namespace) -> int:
    try:
        seps = [float(s) for s in str(args.separations).split(",") if s.strip()]
    except ValueError:
        raise ValueError(
            f"The --separations option must be a comma-separated list of floats in [0, 2). Got {args.separations!r} "
            "instead."
        ) from None
    seed = int_option(args.seed, "--seed", *SEEDS)
    n = int_option(args.n_samples, "--n-samples", 4, 10_000_000)
    datasets = paper_circles(
        n, separations=seps, flip_fraction=float(number(args.flip_fraction, "--flip-fraction")), random_state=seed
    )
    params = {
        "target_size": number(args.target_size, "--target-size"),
        "train_size": number(args.train_size, "--train-size"),
        "slice_size": number(args.slice_size, "--slice-size"),
        "tau": float(number(args.tau, "--tau")),
        "n_partitions": int_option(args.partitions, "--partitions", *PARTITIONS),
        "n_splits": int_option(args.splits, "--splits", 2, 100),
    }
    exp = synthetic_experiment(datasets, random_state=seed, **params)
    seeds = int_list(args.seeds, "--seeds") if args.seeds else [seed]
    long = None
    if len(seeds) > 1 or seeds[0] != seed:
        parts = [exp.table.assign(seed=seed)] if seed in seeds else []
        for s in seeds:
            if s == seed:
                continue
            data_s = paper_circles(
                n, separations=seps, flip_fraction=float(number(args.flip_fraction, "--flip-fraction")), random_state=s
            )
            parts.append(synthetic_experiment(data_s, random_state=s, **params).table.assign(seed=s))
        long = pd.concat(parts, ignore_index=True)
    if args.json:
        records = exp.table.astype(object).where(exp.table.notna(), None).to_dict(orient="records")
        payload = {"params": {**params, "n_samples": n, "separations": seps, "seed": seed}, "datasets": records}
        if long is not None:
            summary = synthetic_summary(long)
            payload["across_seeds"] = {
                "seeds": list(seeds),
                "summary": summary.astype(object).where(summary.notna(), None).to_dict(orient="records"),
                "narrative": synthetic_narrative(long),
            }
        print_json(payload)
    else:
        head = (
            "Synthetic experiment (Le Bras et al., ICML 2020, §3 / Figure 2): concentric circles with planted bias "
            "features\n"
            f"AFLite: target_size={params['target_size']} train_size={params['train_size']} "
            f"slice_size={params['slice_size']} tau={params['tau']} n_partitions={params['n_partitions']} | "
            f"{n} rows per dataset | accuracy: mean of {params['n_splits']}-fold CV | no-bias ref.: all rows, ring "
            f"coordinates only (the paper's data without biases) | seed {seed} (one run: the notes below describe "
            "it; --seeds gives the counts over seeds)\n\n"
        )
        notes = [line for _, row in exp.table.iterrows() for line in accuracy_notes(row)]
        body = format_experiment_table(exp.table) + "\n"
        if notes:
            body += "\n" + "\n".join(f"- {line}" for line in notes) + "\n"
        if long is not None:
            body += f"\nAcross {len(seeds)} seeds {list(seeds)} (each its own data and AFLite run):\n"
            body += format_seed_summary(synthetic_summary(long)) + "\n"
            body += "\n".join(f"- {line}" for line in synthetic_narrative(long)) + "\n"
        sys.stdout.write(head + body)
    return 0


def add_cli(subparsers: Any, name: str = "synthetic") -> None:
    """Register the ``synthetic`` sub-command: run the Figure 2 experiment and print its table.

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="synthetic"
        Command name.

    Notes
    -----
    Bad option values raise ``ValueError`` naming the option; the CLI's ``main`` prints it on one line and
    exits with status 2. The command reports; it does not check the paper's findings.
    """
    p = subparsers.add_parser(
        name,
        help="reproduce the synthetic concentric-circles experiment (ICML 2020 §3, Figure 2)",
        description="Run AFLite on concentric-circles datasets with planted bias features (one per separation "
        "level) and print the held-out accuracy of a linear model and an RBF SVM before and after "
        "filtering, with the planted truth (biased rows kept, flipped rows removed) and the reference without "
        "biases (ring coordinates only).",
    )
    d = EXPERIMENT_DEFAULTS
    options = [
        ("--n-samples", "2000", "N", "rows per dataset (default 2000)"),
        (
            "--separations",
            ",".join(f"{s:g}" for s in PAPER_SEPARATIONS),
            "LIST",
            "comma-separated ring gaps in [0, 2), one dataset each (default 1,0.6,0.4,0.2)",
        ),
        ("--flip-fraction", "0.1", "F", "share of biased rows flipped in the most separated set (default 0.1)"),
        ("--target-size", str(d["target_size"]), "N", f"n, count or fraction (default {d['target_size']})"),
        ("--train-size", str(d["train_size"]), "T", f"t, count or fraction (default {d['train_size']})"),
        ("--slice-size", str(d["slice_size"]), "K", f"k, count or fraction (default {d['slice_size']})"),
        ("--tau", str(d["tau"]), "TAU", f"τ, early-stopping threshold (default {d['tau']})"),
        ("--partitions", str(d["n_partitions"]), "M", f"m, models per round (default {d['n_partitions']})"),
        ("--splits", "5", "S", "CV folds of the accuracies (default 5)"),
        ("--seed", "0", "SEED", "random seed (default 0)"),
    ]
    for flag, default, metavar, text in options:
        p.add_argument(flag, default=default, metavar=metavar, help=text)
    p.add_argument(
        "--seeds",
        default=None,
        metavar="LIST",
        help="also run these seeds (each its own data and run) and print the counts over them, e.g. 0,1,...,9",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a text table")
    p.set_defaults(func=_cmd_synthetic)
