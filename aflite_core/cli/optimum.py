"""``aflite optimum``: AFOptimum (exhaustive search) against AFLite's greedy strategies on tiny data (ICML §2)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from ..experiments.optimum import compare_with_optimum, optimum_table
from ..experiments.seed_counts import optimum_narrative, optimum_summary
from ._common import SEEDS, int_option, print_json

__all__ = ["add_cli"]


def _cmd_optimum(args: argparse.Namespace) -> int:
    seed = int_option(args.seed, "--seed", *SEEDS)
    k = int_option(args.slice_size, "--slice-size", 1, 1_000_000)
    n_seeds = int_option(args.sample_seeds, "--sample-seeds", 1, 10_000)
    cmp = compare_with_optimum(slice_size=k, n_seeds=n_seeds, random_state=seed)
    n_inst = int_option(args.instances, "--instances", 1, 1000)
    long = None
    if n_inst > 1:
        parts = [cmp.table.assign(instance=0)]
        for i in range(1, n_inst):
            other = compare_with_optimum(slice_size=k, n_seeds=n_seeds, random_state=seed + i)
            parts.append(other.table.assign(instance=i))
        long = pd.concat(parts, ignore_index=True)
    if args.json:
        if long is None:
            print_json(cmp.records())
        else:
            summary = optimum_summary(long)
            print_json(
                {
                    "instances": cmp.records(),
                    "across_instances": summary.astype(object).where(summary.notna(), None).to_dict("records"),
                    "narrative": optimum_narrative(long),
                }
            )
        return 0
    head = (
        "AFOptimum vs AFLite (Le Bras et al., ICML 2020, §2, eq. 1 and 5) on tiny problems\n"
        "bias = exact representation bias: mean leave-one-out accuracy of a ridge classifier (closed form).\n"
        "AFOptimum = the subset of the target size with the lowest bias, by exhaustive search; AFLite = its "
        f"strategies A (greedy), B (slice, k={k}) and C (sample, k={k}, {n_seeds} seeds) run with the same exact "
        f"scores, recomputed after every step, to the target size (no τ) | seed {seed}\n\n"
    )
    body = optimum_table(cmp) + "\n"
    if long is not None:
        summary = optimum_summary(long)
        shown = pd.DataFrame(
            {
                "case": summary["case"],
                "strategy": summary["strategy"],
                "gap (mean [min, max])": [
                    f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                    for m, lo, hi in zip(summary["gap_mean"], summary["gap_min"], summary["gap_max"])
                ],
                "optimum reached": [f"{a} of {b}" for a, b in zip(summary["optimum_reached"], summary["instances"])],
            }
        )
        body += (
            f"\nAcross {n_inst} generated instances (seeds {seed}-{seed + n_inst - 1}; the worked example is the same "
            "in each):\n" + shown.to_string(index=False) + "\n"
        )
        body += "\n".join(f"- {line}" for line in optimum_narrative(long)) + "\n"
    sys.stdout.write(head + body)
    return 0


def add_cli(subparsers: Any, name: str = "optimum") -> None:
    """Register the ``optimum`` sub-command: the exact optimum against AFLite's strategies on tiny data.

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="optimum"
        Command name.
    """
    p = subparsers.add_parser(
        name,
        help="AFOptimum (exhaustive search) vs AFLite's greedy strategies on tiny data (ICML 2020 §2)",
        description="On a few problems of at most 20 rows, find the subset of the target size with the lowest "
        "exact representation bias (mean leave-one-out accuracy of a ridge classifier) by exhaustive search, "
        "and compare AFLite's strategies A/B/C run with the same exact scores.",
    )
    p.add_argument("--slice-size", default="2", metavar="K", help="k of strategies B and C (default 2)")
    p.add_argument("--sample-seeds", default="20", metavar="S", help="runs of strategy C per case (default 20)")
    p.add_argument("--seed", default="0", metavar="SEED", help="seed of the generated cases and of C (default 0)")
    p.add_argument(
        "--instances",
        default="1",
        metavar="N",
        help="generated instances (seeds SEED..SEED+N-1): prints the counts over them (default 1)",
    )
    p.add_argument("--json", action="store_true", help="print JSON records instead of a text table")
    p.set_defaults(func=_cmd_optimum)
