"""``aflite explain RUN_DIR --row ID``: why one row of a saved run was removed (or kept).

Prints :func:`aflite_core.measures.explain.explain_row`'s report: the row's text with its label-revealing words
and their z, p per round against τ (and the null for its class), the held-out models' votes in its removal round
and its nearest kept and removed rows in Φ. ``--json`` prints the same as one JSON object.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..data.readers import read_features
from ..measures.explain import explain_row
from ._common import CLIError, print_json

__all__ = ["add_cli"]


def _cmd_explain(args: argparse.Namespace) -> int:
    run = Path(args.run_dir)
    if not (run / "result.json").is_file():
        raise CLIError(f"'{run}' is not a run directory (it has no result.json); name the folder 'filter --out' wrote")
    features = None
    if args.features is not None:
        features = read_features(args.features, mmap=True)
    report = explain_row(
        run,
        args.row,
        features=features,
        k_neighbours=args.neighbours,
        words_column=args.words_column,
        min_count=args.min_count,
        alpha=args.alpha,
    )
    if args.json:
        print_json(report.to_dict())
    else:
        sys.stdout.write(report.to_text(width=args.width) + "\n")
    return 0


def add_cli(subparsers: Any, name: str = "explain") -> None:
    """Register the ``explain`` sub-command.

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="explain"
        Command name.
    """
    p = subparsers.add_parser(
        name,
        help="why one row of a saved run was removed (or kept): its words, p per round, votes and neighbours",
        description="Explain one row of a run directory ('filter --out'): its text with the label-revealing words "
        "it contains (Gardner et al.'s z-test, Bonferroni-corrected, on the run's recorded table), its "
        "predictability per round against τ and the null for its class (runs with --null-permutations), the "
        "held-out models' votes per class in its removal round (runs recorded from format 5 on) and its nearest "
        "kept and removed rows in Φ (cosine over every row; the run's --features, or --features here).",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory")
    p.add_argument(
        "--row", required=True, metavar="ID", help="the row's id (its position 0..N-1 when the run has no ids)"
    )
    p.add_argument(
        "--features",
        default=None,
        help="Φ(X) for the neighbours, a .npy file (default: the features the run was made with, when still there)",
    )
    p.add_argument(
        "--neighbours", type=int, default=5, help="nearest kept and nearest removed rows shown (each; default 5)"
    )
    p.add_argument(
        "--words-column", default=None, help="the table's text column the words are read from (default hypothesis)"
    )
    p.add_argument("--min-count", type=int, default=10, help="test tokens in at least this many texts (default 10)")
    p.add_argument("--alpha", type=float, default=0.01, help="family-wise significance level (default 0.01)")
    p.add_argument("--width", type=int, default=120, help="characters per line of a neighbour (default 120)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text report")
    p.set_defaults(func=_cmd_explain)
