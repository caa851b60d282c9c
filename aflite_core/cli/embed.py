"""``aflite embed``: sentence-embedding features of a table's texts, chunked and resumable after a kill.

The work is :func:`aflite_core.data.embed_job.embed_table`; this module parses the options and prints the
progress line (stderr: rows, rows/s, time left) and one JSON line at the end (stdout).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..data.embed_job import CLI_MAX_EMBED_CHARS, DEFAULT_CHUNK_ROWS, EmbedJobProgress, embed_table
from ..data.embed_status import EMBEDDINGS_INSTALL_HINT, embeddings_status
from ._common import BATCH_SIZE, THREADS, CLIError, bounded, print_json

__all__ = ["add_cli"]

#: rows per durable part
CHUNK_ROWS = (1, 10_000_000)
#: characters one job may give the model
MAX_CHARS = (1, 10**12)


class _Line:
    """The progress line on stderr: rewritten in place on a terminal, one line per part otherwise."""

    def __init__(self, quiet: bool, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.open = False

    def say(self, text: str) -> None:
        if self.quiet:
            return
        self.stream.write(("\r" + text) if self.tty else (text + "\n"))
        self.stream.flush()
        self.open = self.tty

    def __call__(self, p: EmbedJobProgress) -> None:
        self.say(p.message)

    def close(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.stream.flush()


def _cmd_embed(args: argparse.Namespace) -> int:
    line = _Line(args.quiet)
    try:
        summary = embed_table(
            args.table,
            args.text_column,
            args.out,
            pair_column=args.pair_column,
            model=args.model,
            batch_size=args.batch_size,
            device=args.device,
            n_threads=args.threads,
            chunk_rows=args.chunk_rows,
            max_chars=args.max_chars,
            force=args.force,
            progress=line,
            on_load=lambda: line.say("embed: loading the sentence model ..."),
        )
    except ImportError:  # the optional extra is missing: its one sentence with the install command
        status = embeddings_status()
        raise CLIError(status.message if not status.available else EMBEDDINGS_INSTALL_HINT) from None
    finally:
        line.close()
    print_json(summary)
    return 0


def add_cli(sub: Any) -> None:
    """Register ``embed``."""
    p = sub.add_parser(
        "embed",
        help="sentence-embedding features of a table's text column(s) as a .npy (chunked, resumable)",
    )
    p.add_argument("--table", required=True, help="the table: .csv, .tsv, .parquet or .jsonl")
    p.add_argument("--text-column", required=True, help="the text column (the premise with --pair-column)")
    p.add_argument(
        "--pair-column",
        default=None,
        help="a second text column (the hypothesis): each row embeds 'text [SEP] pair', as the app's pair view",
    )
    p.add_argument("--out", required=True, help="the .npy to write; its parts go to OUT.parts/ until it is done")
    p.add_argument(
        "--model",
        default=None,
        help="a local sentence-transformers model folder (default: the packaged all-MiniLM-L6-v2, offline)",
    )
    p.add_argument(
        "--batch-size", type=bounded(*BATCH_SIZE), default=None, help="texts per forward pass (default 64 CPU, 256 GPU)"
    )
    p.add_argument("--device", default="auto", help="auto (a GPU when torch sees one, default), cpu, cuda or cuda:N")
    p.add_argument("--threads", type=bounded(*THREADS), default=1, help="torch threads (default 1)")
    p.add_argument(
        "--chunk-rows",
        type=bounded(*CHUNK_ROWS),
        default=DEFAULT_CHUNK_ROWS,
        help=f"rows per durable part (default {DEFAULT_CHUNK_ROWS:,}): a kill loses at most one part's work",
    )
    p.add_argument(
        "--max-chars",
        type=bounded(*MAX_CHARS),
        default=CLI_MAX_EMBED_CHARS,
        help=f"refuse jobs whose texts hold more characters (default {CLI_MAX_EMBED_CHARS:,})",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out, and discard the parts of a job with other arguments or another table",
    )
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=_cmd_embed)
