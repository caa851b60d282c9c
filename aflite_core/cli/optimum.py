"""``aflite optimum``: AFOptimum (exhaustive search) against AFLite's greedy strategies on tiny data (ICML §2)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..experiments.optimum import compare_with_optimum, optimum_table
from ._common import SEEDS, int_option, print_json

__all__ = ["add_cli"]


def _cmd_optimum(args: argparse.Namespace) -> int:
    seed = int_option(args.seed, "--seed", *SEEDS)
    k = int_option(args.slice_size, "--slice-size", 1, 1_000_000)
    n_seeds = int_option(args.sample_seeds, "--sample-seeds", 1, 10_000)
    cmp = compare_with_optimum(slice_size=k, n_seeds=n_seeds, random_state=seed)
    if args.json:
        print_json(cmp.records())
        return 0
    head = (
        "AFOptimum vs AFLite (Le Bras et al., ICML 2020, §2, eq. 1 and 5) on tiny problems\n"
        "bias = exact representation bias: mean leave-one-out accuracy of a ridge classifier (closed form).\n"
        "AFOptimum = the subset of the target size with the lowest bias, by exhaustive search; AFLite = its "
        f"strategies A (greedy), B (slice, k={k}) and C (sample, k={k}, {n_seeds} seeds) run with the same exact "
        f"scores, recomputed after every step, to the target size (no τ) | seed {seed}\n\n"
    )
    sys.stdout.write(head + optimum_table(cmp) + "\n")
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
    p.add_argument("--json", action="store_true", help="print JSON records instead of a text table")
    p.set_defaults(func=_cmd_optimum)
