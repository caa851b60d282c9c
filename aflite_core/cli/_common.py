"""What every sub-command shares: its parser class, number parsing, the progress line, JSON output."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

__all__ = ["CLIError", "Parser", "Progress", "count_or_fraction", "int_list", "number", "print_json"]


class CLIError(Exception):
    """Bad input detected by the CLI itself."""


class Parser(argparse.ArgumentParser):
    """argparse without the usage dump: one line, exit status 2 (through :func:`aflite_core.cli.main`)."""

    def error(self, message: str):
        raise CLIError(f"{self.prog}: {message}")


def number(text: str | None, option: str, *, allow_fraction: bool = True) -> int | float | None:
    """Parse a count ('500') or a fraction ('0.3') given to ``option``; None stays None."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    if allow_fraction:
        try:
            return float(text)
        except ValueError:
            pass
    kind = "an int or a float in (0, 1)" if allow_fraction else "an int"
    raise ValueError(f"The {option} option must be {kind}. Got {text!r} instead.")


def count_or_fraction(text: str) -> int | float:
    """Argparse ``type=``: '500' as an int, '0.3' as a float (counts or fractions)."""
    try:
        return number(text, "", allow_fraction=True)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def int_list(text: str, option: str) -> tuple[int, ...]:
    """Parse '0,1,2' given to ``option``."""
    try:
        values = tuple(int(s) for s in str(text).split(",") if s.strip())
    except ValueError:
        values = ()
    if not values:
        raise ValueError(f"The {option} option must be a comma-separated list of ints. Got {text!r} instead.")
    return values


def print_json(payload: Any) -> None:
    """One JSON line on stdout (numpy scalars as numbers, anything else as text)."""
    sys.stdout.write(json.dumps(payload, default=_json_scalar) + "\n")
    sys.stdout.flush()


def _json_scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


class Progress:
    """A one-line progress bar on stderr (one line per round when stderr is not a terminal)."""

    def __init__(self, stream=None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, progress) -> bool:
        if self.quiet:
            return True
        width = 30
        filled = round(progress.fraction_done * width)
        bar = "#" * filled + "-" * (width - filled)
        extra = f" | eval left {progress.eval_size}" if progress.eval_size is not None else ""
        line = (
            f"[{bar}] round {progress.round} | size {progress.size:,} (target {progress.target_size:,}) | "
            f"removed {progress.removed:,} | {progress.seconds:.1f}s{extra}"
        )
        if self.tty:
            self.stream.write("\r" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        return True

    def close(self) -> None:
        if self.tty and not self.quiet:
            self.stream.write("\n")
            self.stream.flush()
