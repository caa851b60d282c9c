"""``aflite diff RUN_A RUN_B``: what differs between two runs of the same rows (``measures.run_diff``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from ..engine.result import AFLiteResult
from ..engine.run_table import load_run_table
from ..measures.run_diff import diff_runs
from ._common import print_json

__all__ = ["DEFAULT_MAX_ROWS", "add_cli"]

#: most rows a run compared may have unless --max-rows says otherwise
DEFAULT_MAX_ROWS = 5_000_000
#: changed rows printed at most (--json prints them all)
_SHOWN_ROWS = 20


def _load(path: str, max_rows: int, text_bytes: int | None) -> tuple[AFLiteResult, pd.DataFrame | None]:
    result = AFLiteResult.load(path, max_rows=max_rows)
    return result, load_run_table(path, result=result, max_rows=max_rows, max_text_bytes=text_bytes)


def _cmd_diff(args: argparse.Namespace) -> int:
    if args.max_rows < 1:
        raise ValueError(f"The --max-rows option must be an int in [1, inf). Got {args.max_rows} instead.")
    a, table_a = _load(args.run_a, args.max_rows, None)
    b, table_b = _load(args.run_b, args.max_rows, None)
    table = table_a if table_a is not None else None
    diff = diff_runs(
        a,
        b,
        table=table,
        text_column=args.text_column,
        min_count=args.min_count,
        alpha=args.alpha,
    )
    if diff.words is None and table_a is None and table_b is not None:  # B's table, in A's row order
        diff = diff_runs(
            a,
            b,
            table=table_b.iloc[diff.rows["row_b"].to_numpy()].reset_index(drop=True),
            text_column=args.text_column,
            min_count=args.min_count,
            alpha=args.alpha,
        )
    if args.json:
        print_json(diff.to_dict())
        return 0
    s = diff.summary()
    out = sys.stdout
    out.write(
        f"A = {args.run_a}, B = {args.run_b}: {s['rows']:,} rows matched by id. Removed by A {s['removed_a']:,}, "
        f"by B {s['removed_b']:,}; by both {s['removed_both']:,}, A only {s['removed_a_only']:,}, B only "
        f"{s['removed_b_only']:,}; Jaccard of the removed sets {s['jaccard']:.3f}.\n"
    )
    if s["changed_round"]:
        out.write(f"{s['changed_round']:,} rows removed by both in different rounds.\n")
    out.write("\nBy class:\n" + diff.by_class.to_string(index=False, float_format=lambda x: f"{x:.3f}") + "\n")
    if len(diff.by_round):
        out.write("\nBy round (removed: by that run in that round; also_other: removed by the other run too):\n")
        out.write(diff.by_round.to_string(index=False) + "\n")
    if diff.words is None:
        out.write("\nNo words compared: neither run recorded a table with text (filter --table).\n")
    else:
        at = diff.words.attrs
        sig = diff.significant_words
        out.write(
            f"\nWords of column '{at['text_column']}' whose removal share differs (z-test of the word's rows removed "
            f"by one run only against the share of all such rows A removed, p0 = {at['p0']:.3f}; Bonferroni over "
            f"{at['n_tests']:,} tests, |z| > {at['z_critical']:.3f}, alpha {at['alpha']:g}): {len(sig):,}\n"
        )
        if len(sig):
            out.write(sig.to_string(index=False, float_format=lambda x: f"{x:.3f}") + "\n")
    changed = diff.changed
    if len(changed):
        more = f" (the first {_SHOWN_ROWS}; --json prints all)" if len(changed) > _SHOWN_ROWS else ""
        out.write(f"\nRows whose status or round differs: {len(changed):,}{more}\n")
        cols = ["id", "label", "status_a", "round_a", "status_b", "round_b"]
        out.write(changed[cols].head(_SHOWN_ROWS).to_string(index=False) + "\n")
    else:
        out.write("\nNo row differs in status or round.\n")
    return 0


def add_cli(subparsers: Any, name: str = "diff") -> None:
    """Register the ``diff`` sub-command: compare two run directories over the same rows.

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="diff"
        Command name.

    Notes
    -----
    Loads both runs (checked in full, :meth:`AFLiteResult.load`) and their recorded tables, and prints
    :func:`aflite_core.measures.run_diff.diff_runs`: the counts removed by both, A only and B only, by class
    and by round, the Jaccard of the removed sets, the words whose removal share differs significantly (with a
    recorded table) and the rows that differ (``--json``: one JSON object with all of it). Runs over different
    rows are refused in one line (exit status 2).
    """
    p = subparsers.add_parser(
        name,
        help="what differs between two runs over the same rows (rows, classes, rounds, words)",
        description="Compare two run directories over the same rows, matched by id: rows removed by both, by "
        "one only (by class and by round), the Jaccard of the removed sets and, with a recorded table, "
        "the words whose removal share differs (a z-test against the runs' overall difference, Bonferroni).",
    )
    p.add_argument("run_a", metavar="RUN_A", help="run directory A (filter --out)")
    p.add_argument("run_b", metavar="RUN_B", help="run directory B, over the same rows")
    p.add_argument("--text-column", default=None, help="the table's text column (default: hypothesis, else the first)")
    p.add_argument(
        "--min-count", type=int, default=10, help="test words with at least this many rows removed by one run only"
    )
    p.add_argument("--alpha", type=float, default=0.01, help="family-wise significance level (default 0.01)")
    p.add_argument(
        "--max-rows", type=int, default=DEFAULT_MAX_ROWS, help=f"refuse larger runs (default {DEFAULT_MAX_ROWS:,} rows)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.set_defaults(func=_cmd_diff)
