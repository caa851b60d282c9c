"""What every sub-command shares: its parser class, number parsing, the progress line, JSON output."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .._format import fmt_duration
from .._validation import MAX_NUMBER_CHARS, bounded_int, shown

__all__ = [
    "BATCH_SIZE",
    "EPOCHS",
    "HIDDEN_SIZE",
    "N_INIT",
    "PARTITIONS",
    "SEEDS",
    "THREADS",
    "CLIError",
    "Parser",
    "Progress",
    "add_group_options",
    "bounded",
    "count_or_fraction",
    "int_list",
    "int_option",
    "number",
    "print_json",
    "rounds_left_seconds",
]

# The ranges of the integer options that size what a command allocates or starts (models per round, threads,
# epochs, hidden units, ...): a value outside is refused in one line before any work, never handed to numpy as
# 10**20 ("Maximum allowed dimension exceeded") or to int() as inf.
#: seeds: numpy's and scikit-learn's range
SEEDS = (0, 2**32 - 1)
#: m, models per round (64 by default; the app offers up to 256)
PARTITIONS = (1, 4096)
#: threads or worker processes
THREADS = (1, 1024)
#: training epochs recorded (the epoch files a reader takes: dynamics_epoch_0 … dynamics_epoch_9999)
EPOCHS = (1, 10_000)
#: hidden units of the dynamics model
HIDDEN_SIZE = (1, 65_536)
#: mini-batch size of the dynamics model
BATCH_SIZE = (1, 1_000_000)
#: Gaussian-mixture initialisations
N_INIT = (1, 1000)


class CLIError(Exception):
    """Bad input detected by the CLI itself."""


def add_group_options(p: argparse.ArgumentParser) -> None:
    """``--groups-column COL`` / ``--no-groups``: which rows the partitions keep together (a ``--table`` column)."""
    p.add_argument(
        "--groups-column",
        default=None,
        metavar="COL",
        help="keep the rows that share a value of this --table column on one side of every partition (no "
        "model predicts a row whose group it trained on); default: 'premise' for an NLI pair table "
        "(premise + hypothesis columns), none otherwise",
    )
    p.add_argument(
        "--no-groups",
        action="store_true",
        help="partition rows freely, even for an NLI pair table (no premise groups)",
    )


class Parser(argparse.ArgumentParser):
    """argparse without the usage dump: one line, exit status 2 (through :func:`aflite_core.cli.main`)."""

    def error(self, message: str):
        raise CLIError(f"{self.prog}: {message}")


def number(text: str | None, option: str, *, allow_fraction: bool = True) -> int | float | None:
    """Parse a count ('500') or a fraction ('0.3') given to ``option``; None stays None.

    Text longer than :data:`~aflite_core._validation.MAX_NUMBER_CHARS` characters and infinite or NaN floats
    are refused (ValueError naming the option).
    """
    if text is None:
        return None
    if len(str(text).strip()) <= MAX_NUMBER_CHARS:
        try:
            return int(text)
        except ValueError:
            pass
        if allow_fraction:
            try:
                value = float(text)
            except ValueError:
                pass
            else:
                if math.isfinite(value):
                    return value
    kind = "an int or a float in (0, 1)" if allow_fraction else "an int"
    raise ValueError(
        f"The {option} option must be {kind} of at most {MAX_NUMBER_CHARS} characters. Got {shown(text)} instead."
    )


def int_option(text: str | int, option: str, low: int, high: int) -> int:
    """Parse the int given to ``option`` (text or an int default) within ``[low, high]``; ValueError otherwise."""
    return bounded_int(text, low, high, what=f"The {option} option")


def bounded(low: int, high: int) -> Callable[[str], int]:
    """Argparse ``type=``: an int in ``[low, high]`` (anything else is a one-line usage error, exit status 2).

    Parameters
    ----------
    low, high : int
        The range, both included.

    Returns
    -------
    callable
        ``text -> int`` raising ``argparse.ArgumentTypeError``.

    Examples
    --------
    >>> bounded(1, 4096)("64")
    64
    """

    def parse(text: str) -> int:
        try:
            return bounded_int(text, low, high)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low:,} to {high:,}, got {shown(text)}"
            ) from None

    parse.__name__ = f"int in [{low}, {high}]"
    return parse


def count_or_fraction(text: str) -> int | float:
    """Argparse ``type=``: '500' as an int, '0.3' as a float (counts or fractions; finite, at most 20 characters)."""
    try:
        return number(text, "", allow_fraction=True)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {shown(text)}") from None


def int_list(text: str, option: str, low: int = SEEDS[0], high: int = SEEDS[1]) -> tuple[int, ...]:
    """Parse '0,1,2' given to ``option``: ints in ``[low, high]`` (default: the seeds' range)."""
    try:
        values = tuple(bounded_int(s, low, high) for s in str(text).split(",") if s.strip())
    except ValueError:
        values = ()
    if not values:
        raise ValueError(
            f"The {option} option must be a comma-separated list of whole numbers from {low:,} to {high:,}. "
            f"Got {shown(text)} instead."
        )
    return values


def print_json(payload: Any) -> None:
    """One JSON line on stdout (numpy scalars as numbers, anything else as text)."""
    sys.stdout.write(json.dumps(payload, default=_json_scalar) + "\n")
    sys.stdout.flush()


def _json_scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def rounds_left_seconds(
    size: int, target_size: int, slice_size: int, seconds_per_row: float, removed_last: int = 1
) -> float:
    """Time left of an AFLite run, from the rounds done: the cost model of :class:`Progress`'s ``left`` field.

    A round trains and scores m models over the rows still in S, so its time grows with the rows it starts with
    (roughly linearly: the Gram / L-BFGS work and the predictions are per row). The rounds done give a rate,
    seconds per row at a round's start (their summed times over their summed starting sizes); each later round
    removes up to k rows (``slice_size``: the most one round removed so far), so reaching the target takes
    R = ceil((size - target) / k) more rounds starting with size, size - k, ..., and costs
    rate x (R x size - k x R(R-1)/2). τ may stop the run sooner (fewer than k rows at p ≥ τ): the estimate is an
    upper bound, exact when the run goes to the target. A round that removed nothing ends the run: 0.

    Parameters
    ----------
    size, target_size : int
        Rows in S now, and the target n.
    slice_size : int
        Rows a round removes (k; at least 1).
    seconds_per_row : float
        The measured rate.
    removed_last : int, default=1
        Rows the last round removed (0: the run is over).

    Returns
    -------
    float
        Seconds, finite and >= 0.

    Examples
    --------
    >>> rounds_left_seconds(1000, 700, 100, 0.001)  # rounds of 1000, 900 and 800 rows
    2.7
    """
    if removed_last <= 0 or size <= target_size or not math.isfinite(seconds_per_row):
        return 0.0
    k = max(int(slice_size), 1)
    rounds = -(-(size - target_size) // k)
    rows = rounds * size - k * rounds * (rounds - 1) / 2
    return round(max(seconds_per_row, 0.0) * max(rows, 0.0), 6)


class Progress:
    """A one-line progress bar on stderr (one line per round when stderr is not a terminal), with the time left.

    Without ``shape``, ``left`` is :func:`rounds_left_seconds` from the rounds this process ran (an upper bound:
    τ may stop the run sooner), shown as ``left ≤…``. With the run's ``shape`` (what ``filter`` passes), it is
    the shape model of the Filter page (:class:`aflite_core.engine.estimates.AFLiteTimeLeft`): the rounds' cost
    from m, t, d and the rows left, at the rate this run measured since the bar was made (its first round is the
    calibration), over the rounds τ still allows; an estimate, shown as ``left ~…``. Either is kept in
    :attr:`seconds_left`.

    Parameters
    ----------
    stream : file, optional
        Where the line goes (stderr).
    quiet : bool, default=False
        Compute :attr:`seconds_left` but print nothing.
    shape : dict, optional
        ``n_rows, target_size, slice_size, train_size, n_partitions, n_features`` (counts or fractions) and
        optionally ``n_classes``.
    """

    def __init__(self, stream=None, quiet: bool = False, shape: dict | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._seconds = 0.0
        self._rows = 0
        self._k = 1
        self.seconds_left: float | None = None
        self._started = time.perf_counter()
        self._timer = None
        if shape is not None:
            self.set_shape(**shape)

    def set_shape(self, **shape) -> None:
        """Estimate from the run's shape model from now on (``shape``: as the ``shape`` parameter)."""
        from ..engine.estimates import AFLiteTimeLeft

        self._timer = AFLiteTimeLeft(**shape, prior=None)

    def _estimate(self, progress) -> float:
        if self._timer is not None:
            left = self._timer.update(
                time.perf_counter() - self._started,
                rounds_done=progress.round,
                size=progress.size,
                qualified=progress.qualified,
                removed=progress.removed,
            )
            return 0.0 if left is None else round(left, 6)
        self._seconds += max(float(progress.seconds), 0.0)
        self._rows += progress.size + progress.removed  # the rows the round started with
        self._k = max(self._k, progress.removed)
        rate = self._seconds / max(self._rows, 1)
        return rounds_left_seconds(progress.size, progress.target_size, self._k, rate, progress.removed)

    def __call__(self, progress) -> bool:
        self.seconds_left = self._estimate(progress)
        if self.quiet:
            return True
        width = 30
        filled = round(progress.fraction_done * width)
        bar = "#" * filled + "-" * (width - filled)
        extra = f" | eval left {progress.eval_size}" if progress.eval_size is not None else ""
        mark = "~" if self._timer is not None else "≤"
        line = (
            f"[{bar}] round {progress.round} | size {progress.size:,} (target {progress.target_size:,}) | "
            f"removed {progress.removed:,} | {progress.seconds:.1f}s | "
            f"left {mark}{fmt_duration(self.seconds_left)}{extra}"
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
