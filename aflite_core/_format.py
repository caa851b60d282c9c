"""How numbers, percentages and missing values read, everywhere: the core's sentences, the CLI and the charts.

One mark for a missing value (:data:`MISSING`, an en dash) and two formatters that return it for ``None``, NaN,
infinity or ``pd.NA``. The app's charts use them through :mod:`aflite_app.charts.theme`.

>>> fmt_num(0.91234), fmt_num(float("nan")), fmt_pct(0.25), fmt_pct(None)
('0.912', '–', '25%', '–')
>>> fmt_pct(0.001, sep=" ", ends=True), fmt_pct(0.999, sep=" ", ends=True), fmt_pct(1.0, sep=" ", ends=True)
('< 1 %', '> 99 %', '100 %')
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["MISSING", "fmt_duration", "fmt_num", "fmt_pct", "is_missing", "no_negative_zero"]

#: what a missing, undefined or non-finite value shows as (tables, sentences, hover texts, the CLI)
MISSING = "–"


def is_missing(x: Any) -> bool:
    """True for ``None``, NaN, ±infinity, ``pd.NA`` and anything that is not a real number."""
    if x is None or isinstance(x, bool):
        return x is None
    try:
        return not math.isfinite(float(x))
    except (TypeError, ValueError):
        return True


def fmt_num(x: Any, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals (``0.912``), or :data:`MISSING`."""
    if is_missing(x):
        return MISSING
    return no_negative_zero(f"{float(x):.{digits}f}")


def no_negative_zero(text: str) -> str:
    """``text`` with every number that rounds to zero written without a minus sign (``-0.00`` → ``0.00``).

    >>> no_negative_zero("a drop of -0.00 (5-95 %: -0.01 to -0.000).")
    'a drop of 0.00 (5-95 %: -0.01 to 0.000).'
    """
    return _NEGATIVE_ZERO.sub(r"\1", text)


_NEGATIVE_ZERO = re.compile(r"(?<![\w.])-(0(?:\.0+)?)(?!\.?\d)")


def fmt_pct(x: Any, digits: int = 0, *, sep: str = "", ends: bool = False) -> str:
    """The share ``x`` (0.25) as a percentage (``25%``), or :data:`MISSING`.

    ``sep`` goes between the number and the sign (``" "``: ``25 %``). With ``ends``, a share that is neither 0 nor 1
    but would round to either reads ``< 1 %`` / ``> 99 %`` (at ``digits`` = 0), so "none" and "all" stay exact.
    """
    if is_missing(x):
        return MISSING
    x = float(x)
    if ends:
        step = 10.0**-digits  # the smallest step shown, in percent
        if 0 < x < step / 200:
            return f"< {step:.{digits}f}{sep}%"
        if 1 - step / 200 < x < 1:
            return f"> {100 - step:.{digits}f}{sep}%"
    return f"{100 * x:.{digits}f}{sep}%"


def fmt_duration(seconds: float) -> str:
    """A time span for a progress line: ``42s``, ``3m07s``, ``2h05m`` (rounded to whole seconds, never negative).

    Examples
    --------
    >>> fmt_duration(42.4), fmt_duration(187), fmt_duration(7500)
    ('42s', '3m07s', '2h05m')
    """
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
