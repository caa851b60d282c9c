"""Command line: ``python -m aflite_core <command> ...`` (also installed as ``aflite``).

Commands print machine-readable results on stdout and progress on stderr. Bad input prints one line on
stderr and exits with status 2, never a traceback.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from ..data import budget
from ._common import CLIError, Parser

__all__ = ["EXIT_BAD_INPUT", "build_parser", "main"]

EXIT_BAD_INPUT = 2


def build_parser() -> Parser:
    """The argument parser of every command (exposed for documentation and tests)."""
    from . import artifacts, diff, dynamics, embed, eval_filter, explain, export, filter, ood, optimum, synthetic

    parser = Parser(prog="aflite", description="AFLite Studio: adversarial filtering of dataset biases.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    filter.add_cli(sub)
    synthetic.add_cli(sub, "synthetic")
    eval_filter.add_cli(sub, "eval-filter")
    dynamics.add_cli(sub, "dynamics")
    artifacts.add_cli(sub, "artifacts")
    ood.add_cli(sub, "ood")
    optimum.add_cli(sub, "optimum")
    embed.add_cli(sub)
    diff.add_cli(sub, "diff")
    export.add_cli(sub, "export")
    explain.add_cli(sub)
    for command in sub.choices.values():  # every command reads files under the same memory budget
        command.add_argument(
            "--parse-budget-mb",
            type=float,
            default=None,
            metavar="MB",
            help=f"memory one read of a file may use (default {budget.DEFAULT_PARSE_BYTES // 2**20})",
        )
    return parser


def _apply_budget(args) -> budget.BudgetLimits:
    """The memory budget of this command's reads (``--parse-budget-mb``); returns the budgets to restore."""
    mb = getattr(args, "parse_budget_mb", None)
    if mb is not None and not (math.isfinite(mb) and mb > 0):
        raise ValueError(f"The --parse-budget-mb option must be a positive number of megabytes. Got {mb:g} instead.")
    given: dict = {"advice": "pass a larger --parse-budget-mb (megabytes) to read it"}
    if mb is not None:
        one = max(1, int(mb * 2**20))
        given.update(parse_bytes=one, parses_bytes=max(one, budget.limits().parses_bytes))
    return budget.set_budgets(**given)


_OPTION_OF = {
    "n_partitions": "--partitions",
    "random_state": "--seed",
    "X": "--features",
    "y": "--labels",
    "eval_X": "--eval-features",
    "eval_y": "--eval-labels",
    "n_threads": "--threads",
    "X_partial": "--partial-features",
}


def _as_option_names(message: str) -> str:
    """Say '--train-size' where the library says 'the train_size parameter of aflite'."""
    import re

    def repl(match: re.Match) -> str:
        name = match.group(1)
        return f"The {_OPTION_OF.get(name, '--' + name.replace('_', '-'))} option"

    return re.sub(r"The '(\w+)' parameter of \w+", repl, message)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        restore = _apply_budget(args)
        try:
            return int(args.func(args) or 0)
        finally:
            budget.set_budgets(**restore.as_dict())
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except (CLIError, ValueError, TypeError, OSError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = _as_option_names(message)
        sys.stderr.write(f"error: {message}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except MemoryError:
        sys.stderr.write("error: not enough memory for this run (try --mmap or a smaller --partitions)\n")
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
