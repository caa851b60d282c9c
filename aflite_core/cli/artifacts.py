"""``aflite artifacts``: the tokens that give the label away (Gardner et al.'s competency-problems test)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
import pandas as pd

from .._validation import shown
from ..data.preflight import RowLimitError, SizeLimitError
from ..data.readers import read_table
from ..measures.artifact_statistics import artifact_statistics
from ._common import print_json

__all__ = ["DEFAULT_MAX_ROWS", "add_cli"]

#: most rows ``aflite artifacts`` reads unless --max-rows says otherwise (SNLI's training set has 550k)
DEFAULT_MAX_ROWS = 2_000_000

#: largest table file read (bytes)
_MAX_BYTES = 4 * 2**30

_SHOWN = ["token", "label", "count", "label_count", "p_hat", "z", "pmi"]


def _cmd_artifacts(args: argparse.Namespace) -> int:
    if args.max_rows < 1:
        raise ValueError(f"The --max-rows option must be an int in [1, inf). Got {args.max_rows} instead.")
    try:
        table = read_table(args.table, max_rows=args.max_rows, max_bytes=_MAX_BYTES)
    except RowLimitError as exc:  # the reader's own advice ("use the command line") means nothing here
        count = f"{exc.n_rows:,} rows" if exc.n_rows is not None else "more rows"
        raise ValueError(
            f"Table '{args.table}' has {count}, more than --max-rows {args.max_rows:,}; pass a larger --max-rows "
            "to read it all."
        ) from None
    except SizeLimitError as exc:  # nor here
        size = f"{exc.size / 2**30:.1f} GB" if exc.size is not None else "larger"
        raise ValueError(
            f"Table '{args.table}' is {size}, more than the {_MAX_BYTES / 2**30:g} GB `aflite artifacts` reads; "
            "keep the text and label columns only (or a sample of the rows) and try again."
        ) from None
    for option, col in (("--text-column", args.text_column), ("--label-column", args.label_column)):
        if col not in table.columns:
            raise ValueError(
                f"Table '{args.table}' has no column {col!r} ({option}); its columns are {list(table.columns)[:20]}."
            )
    if len(table) == 0:
        raise ValueError(f"Table '{args.table}' has no rows; the test needs texts with at least two labels.")
    labels = table[args.label_column]
    missing = np.flatnonzero(labels.isna().to_numpy())
    if len(missing):
        raise ValueError(
            f"Table '{args.table}' has no label in column {args.label_column!r} of row "
            f"{int(missing[0])}; drop unlabelled rows first."
        )
    texts = table[args.text_column]
    bad = [i for i, t in enumerate(texts.tolist()) if not isinstance(t, str) and not pd.isna(t)]
    if bad:
        raise ValueError(
            f"Table '{args.table}' column {args.text_column!r} must hold text; row {bad[0]} holds "
            f"{texts.iloc[bad[0]]!r}."
        )
    distinct = pd.unique(labels)
    if len(distinct) < 2:  # the rule of artifact_statistics, worded for this command's options
        raise ValueError(
            f"Table '{args.table}' has one label only ({shown(distinct[0])}) in column {args.label_column!r} "
            "(--label-column); the competency-problems test needs at least two labels."
        )
    stats = artifact_statistics(
        texts.where(texts.notna(), "").tolist(), labels.tolist(), min_count=args.min_count, alpha=args.alpha
    )
    a = stats.attrs
    if a["n_tests"] == 0:  # nothing to print but why
        if args.json:
            print_json([])
        elif a["n_tokens"] == 0:
            sys.stdout.write(
                f"Column '{args.text_column}' of '{args.table}' holds no tokens (its {a['n_texts']:,} texts are "
                "empty or only punctuation), so nothing was tested; choose the text column with --text-column.\n"
            )
        else:
            sys.stdout.write(
                f"No token of column '{args.text_column}' of '{args.table}' is in at least {a['min_count']:,} of "
                f"its {a['n_texts']:,} texts, so nothing was tested; lower --min-count to test rarer tokens.\n"
            )
        return 0
    rows = stats if args.all else stats[stats["significant"].astype(bool)]
    order = {lab: i for i, lab in enumerate(a["labels"])}
    rows = (
        rows.assign(_l=rows["label"].map(order))
        .sort_values(["_l", "z", "token"], ascending=[True, False, True], kind="stable")
        .drop(columns="_l")
    )
    if args.json:
        print_json(rows.to_dict(orient="records"))
        return 0
    n_sig = int(stats["significant"].sum())
    head = (
        f"Competency-problems test (Gardner et al., 2021) on column '{args.text_column}' of '{args.table}': "
        f"{a['n_texts']:,} texts, {len(a['labels'])} labels (p0 = {a['p0']:.3f}); {a['n_tests']:,} tests "
        f"(tokens in >= {a['min_count']} texts x labels); significant when z > {a['z_critical']:.3f} "
        f"(alpha {a['alpha']:g}, Bonferroni): {n_sig:,} (token, label) pairs\n"
    )
    sys.stdout.write(head)
    if len(rows):
        printed = rows[_SHOWN + (["significant"] if args.all else [])]
        sys.stdout.write(printed.to_string(index=False, float_format=lambda x: f"{x:.3f}") + "\n")
    return 0


def add_cli(subparsers: Any, name: str = "artifacts") -> None:
    """Register the ``artifacts`` sub-command: print the significant (token, label) pairs of a text table.

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="artifacts"
        Command name.

    Notes
    -----
    Reads the table with :func:`aflite_core.data.readers.read_table` (CSV, TSV, Parquet or JSON Lines; at most
    ``--max-rows`` rows), runs :func:`aflite_core.measures.artifact_statistics.artifact_statistics` on one text column
    and prints the significant rows as a table, grouped by label with the largest z first (``--json``: one JSON
    array of records; ``--all``: every tested pair). Bad input raises ``ValueError``; the CLI's ``main``
    prints it on one line and exits with status 2.
    """
    p = subparsers.add_parser(
        name,
        help="tokens whose presence gives the label away (Gardner et al. 2021 z-test)",
        description="For every token and label, z = (p(label|token) - 1/|labels|) / sqrt(p0 (1 - p0) / n) over "
        "the n texts containing the token (Gardner et al., 2021, 'Competency Problems'), one-sided "
        "and Bonferroni-corrected over tokens x labels. Tokens: lower case, punctuation removed, "
        "split on white space, counted once per text.",
    )
    p.add_argument("--table", required=True, help="the texts: .csv, .tsv, .jsonl or .parquet")
    p.add_argument("--text-column", default="hypothesis", help="text column (default hypothesis)")
    p.add_argument("--label-column", default="label", help="label column (default label)")
    p.add_argument("--min-count", type=int, default=10, help="test tokens in at least this many texts (default 10)")
    p.add_argument("--alpha", type=float, default=0.01, help="family-wise significance level (default 0.01)")
    p.add_argument(
        "--all", action="store_true", help="print every tested (token, label) pair, not only the significant ones"
    )
    p.add_argument(
        "--max-rows",
        type=int,
        default=DEFAULT_MAX_ROWS,
        help=f"refuse tables with more rows (default {DEFAULT_MAX_ROWS:,})",
    )
    p.add_argument("--json", action="store_true", help="print a JSON array of records instead of a table")
    p.set_defaults(func=_cmd_artifacts)
