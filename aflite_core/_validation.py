"""Input validation shared by every public function of :mod:`aflite_core`.

Every check raises ``ValueError`` or ``TypeError`` with one message in scikit-learn's wording:
"The 'train_size' parameter of aflite must be an int in (n_classes, target_size) or a float in (0, 1).
Got 1.5 instead." Public functions call these helpers first, before any work is done.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "MAX_NUMBER_CHARS",
    "MAX_SHOWN_CHARS",
    "EncodedLabels",
    "bounded_float",
    "bounded_int",
    "check_features",
    "check_fraction_or_count",
    "check_ids",
    "check_int",
    "check_labels",
    "check_probability",
    "check_random_state",
    "param_error",
    "shown",
    "shown_list",
    "with_article",
]

#: rows checked per pass when scanning a (possibly memory-mapped) matrix for NaN/inf
_FINITE_CHUNK_ROWS = 65_536
#: the most characters of one value any message quotes (a message never reproduces a file's content)
MAX_SHOWN_CHARS = 32
#: the most values a message lists
MAX_SHOWN_VALUES = 5
#: the most characters of a number read from text (a link, a file name, a command-line option): 2**63 has 19
#: digits, so every number a limit allows fits, and a 5,000-digit one is refused before it is parsed
MAX_NUMBER_CHARS = 20


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (with "…"), for quoting a value in a message."""
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def with_article(noun: str) -> str:
    """``noun`` after "a" or "an", by its first letter (a vowel takes "an"): for messages built as "a {name}".

    Examples
    --------
    >>> with_article("estimator that is not a classifier"), with_article("regressor"), with_article("int")
    ('an estimator that is not a classifier', 'a regressor', 'an int')
    """
    return f"{'an' if noun[:1].lower() in 'aeiou' and noun[:1] else 'a'} {noun}"


def shown_list(values: Any, limit: int = MAX_SHOWN_VALUES) -> str:
    """A few values for a message: ``['a', 'b', … (12 in all)]``, each cut by :func:`shown`."""
    values = list(values)
    head = ", ".join(shown(v) for v in values[:limit])
    more = f", … ({len(values):,} in all)" if len(values) > limit else ""
    return f"[{head}{more}]"


def param_error(name: str, func: str, allowed: str, value: Any, exc: type[Exception] = ValueError) -> Exception:
    """Build the uniform error for a parameter ``name`` of ``func``.

    Parameters
    ----------
    name : str
        Parameter name as the user typed it.
    func : str
        Public function the parameter belongs to.
    allowed : str
        What is allowed, e.g. ``"an int in [1, inf)"``.
    value : object
        The value given.
    exc : type of Exception
        ``ValueError`` (default) or ``TypeError``.

    Returns
    -------
    Exception
        The exception, ready to raise.
    """
    shown = _short_repr(value)
    return exc(f"The '{name}' parameter of {func} must be {allowed}. Got {shown} instead.")


def _number_text(text: Any) -> str | None:
    """``text`` stripped when it is a str of at most :data:`MAX_NUMBER_CHARS` characters, else None."""
    if not isinstance(text, str) or len(text) > 4 * MAX_NUMBER_CHARS:
        return None
    text = text.strip()
    return text if 0 < len(text) <= MAX_NUMBER_CHARS else None


def bounded_int(text: Any, low: int, high: int, *, what: str = "The value", clamp: bool = False) -> int:
    """An int in ``[low, high]`` read from text: a link's value, the number in a file name, a command-line option.

    The one parser for numbers that come from outside: the text is never longer than
    :data:`MAX_NUMBER_CHARS` characters when it is parsed, so a 5,000-digit number, ``inf``, ``nan`` or
    ``1e309`` cannot reach an ``int()`` conversion (an OverflowError) or size an allocation.

    Parameters
    ----------
    text : str or int
        The text (blanks around it are dropped), or an int (a caller's own number, e.g. ``write_epoch``'s
        epoch).
    low, high : int
        The range, both included.
    what : str, default="The value"
        What the number is, to start the message, e.g. ``"The --partitions option"``.
    clamp : bool, default=False
        False: a number outside the range is refused (file names, command-line options). True: a finite
        number is moved into the range, and a decimal one is cut to a whole number (a hand-edited link).

    Returns
    -------
    int
        A value in ``[low, high]``.

    Raises
    ------
    ValueError
        One sentence, for text that is not a whole number of at most :data:`MAX_NUMBER_CHARS` characters
        (with ``clamp``: not a finite number), and without ``clamp`` for a number outside the range. Nothing
        else is raised.

    Examples
    --------
    >>> bounded_int("12", 0, 99), bounded_int("7.9", 0, 5, clamp=True), bounded_int("-1e30", 0, 5, clamp=True)
    (12, 5, 0)
    >>> bounded_int("inf", 0, 99, what="The link's n", clamp=True)
    Traceback (most recent call last):
    ...
    ValueError: The link's n must be a whole number from 0 to 99 (at most 20 characters). Got 'inf' instead.
    """
    value: int | None = None
    if _is_int(text):
        value = int(text)
    else:
        s = _number_text(text)
        if s is not None:
            try:
                value = int(s)
            except ValueError:
                if clamp:
                    try:
                        number = float(s)
                    except ValueError:
                        number = math.nan
                    value = int(number) if math.isfinite(number) else None
    if value is not None and clamp:
        return min(max(value, low), high)
    if value is None or not low <= value <= high:
        raise ValueError(
            f"{what} must be a whole number from {low:,} to {high:,} (at most {MAX_NUMBER_CHARS} characters). "
            f"Got {shown(text)} instead."
        )
    return value


def bounded_float(text: Any, low: float, high: float, *, what: str = "The value") -> float:
    """A finite float in ``[low, high]`` read from text (a link's value), like :func:`bounded_int`.

    Parameters
    ----------
    text : str
        The text (blanks around it are dropped), at most :data:`MAX_NUMBER_CHARS` characters.
    low, high : float
        The range, both included.
    what : str, default="The value"
        What the number is, to start the message.

    Returns
    -------
    float
        A value in ``[low, high]``.

    Raises
    ------
    ValueError
        One sentence, for text that is not a finite number in the range of at most :data:`MAX_NUMBER_CHARS`
        characters. Nothing else is raised.

    Examples
    --------
    >>> bounded_float(" 0.6 ", 0, 1)
    0.6
    """
    s = _number_text(text)
    try:
        value = float(s) if s is not None else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(
            f"{what} must be a number from {low:g} to {high:g} (at most {MAX_NUMBER_CHARS} characters). "
            f"Got {shown(text)} instead."
        )
    return value


def _short_repr(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    return shown(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_int(value: Any, name: str, func: str, *, low: int, high: int | None = None) -> int:
    """Check ``value`` is an int in ``[low, high]`` (``high=None`` means unbounded)."""
    bounds = f"[{low}, inf)" if high is None else f"[{low}, {high}]"
    if not _is_int(value):
        raise param_error(name, func, f"an int in {bounds}", value, TypeError)
    if value < low or (high is not None and value > high):
        raise param_error(name, func, f"an int in {bounds}", value)
    return int(value)


def check_probability(value: Any, name: str, func: str) -> float:
    """Check ``value`` is a real number in ``[0, 1]``."""
    if not _is_real(value):
        raise param_error(name, func, "a float in [0, 1]", value, TypeError)
    if not (0.0 <= float(value) <= 1.0) or np.isnan(float(value)):
        raise param_error(name, func, "a float in [0, 1]", value)
    return float(value)


def check_open_fraction(value: Any, name: str, func: str) -> float:
    """Check ``value`` is a real number strictly between 0 and 1 (TypeError for a non-number)."""
    if not _is_real(value):
        raise param_error(name, func, "a float in (0, 1)", value, TypeError)
    if not 0.0 < float(value) < 1.0:
        raise param_error(name, func, "a float in (0, 1)", value)
    return float(value)


def check_positive_float(value: Any, name: str, func: str) -> float:
    """Check ``value`` is a finite real number above 0."""
    if not _is_real(value):
        raise param_error(name, func, "a float in (0, inf)", value, TypeError)
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise param_error(name, func, "a float in (0, inf)", value)
    return float(value)


def check_nonnegative_float(value: Any, name: str, func: str) -> float:
    """Check ``value`` is a finite real number at or above 0."""
    if not _is_real(value):
        raise param_error(name, func, "a float in [0, inf)", value, TypeError)
    if not (math.isfinite(float(value)) and float(value) >= 0):
        raise param_error(name, func, "a float in [0, inf)", value)
    return float(value)


def check_n_threads(n_threads: Any, func: str) -> int | None:
    """``None`` (the library's default) or an int in ``[1, inf)``."""
    return None if n_threads is None else check_int(n_threads, "n_threads", func, low=1)


def check_optional_callable(value: Any, name: str, func: str) -> None:
    """Check ``value`` is callable or None (progress callbacks, ``on_step``)."""
    if value is not None and not callable(value):
        raise param_error(name, func, "a callable or None", value, TypeError)


def check_seeds(seeds: Any, func: str) -> tuple[int, ...]:
    """One seed or a non-empty sequence of distinct seeds in ``[0, inf)``, as a tuple of ints.

    TypeError when ``seeds`` is neither an int nor iterable; ValueError for an empty, repeated or negative seed.
    """
    allowed = "a non-empty sequence of distinct ints in [0, inf)"
    if _is_int(seeds):
        seeds = (seeds,)
    try:
        values = tuple(seeds)
    except TypeError:
        raise param_error("seeds", func, allowed, seeds, TypeError) from None
    if not values or not all(_is_int(s) and s >= 0 for s in values) or len(set(values)) != len(values):
        raise param_error("seeds", func, allowed, seeds)
    return tuple(int(s) for s in values)


def check_fraction_or_count(
    value: Any, name: str, func: str, *, n: int, low: int, high: int, range_text: str | None = None
) -> int:
    """Resolve an int count or a float fraction of ``n`` and check it lies in ``(low, high)``.

    Parameters
    ----------
    value : int or float
        A count, or a float in (0, 1) meaning ``round(value * n)``.
    name, func : str
        For the error message.
    n : int
        What a fraction is a fraction of.
    low, high : int
        Exclusive bounds for the resolved count.
    range_text : str, optional
        Human-readable bounds for the message, e.g. ``"(n_classes, target_size)"``.

    Returns
    -------
    int
        The resolved count.
    """
    rng_text = range_text or f"({low}, {high})"
    allowed = f"an int in {rng_text} or a float in (0, 1)"
    if _is_int(value):
        count = int(value)
    elif _is_real(value):
        if not 0.0 < float(value) < 1.0:
            raise param_error(name, func, allowed, value)
        count = round(float(value) * n)
    else:
        raise param_error(name, func, allowed, value, TypeError)
    if not low < count < high:
        if _is_int(value):
            raise param_error(name, func, allowed + f" (here {rng_text} = ({low}, {high}))", value)
        raise ValueError(
            f"The '{name}' parameter of {func} must be an int in {rng_text} or a float in (0, 1) "
            f"(here {rng_text} = ({low}, {high})). Got {shown(value)}, which is {count} rows of {n}, instead."
        )
    return count


def check_random_state(random_state: Any, func: str) -> int:
    """Turn ``random_state`` into the one integer seed a run uses.

    ``None`` draws fresh OS entropy; an int is used as is; a ``np.random.Generator`` or
    ``np.random.RandomState`` gives one integer drawn from it. The integer is recorded in the result so
    the run can be repeated exactly.
    """
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if _is_int(random_state):
        if random_state < 0:
            raise param_error("random_state", func, "None, an int in [0, inf) or a numpy Generator", random_state)
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    raise param_error("random_state", func, "None, an int in [0, inf) or a numpy Generator", random_state, TypeError)


def check_features(X: Any, name: str, func: str, *, n_rows: int | None = None, n_cols: int | None = None):
    """Return ``X`` as a 2-D float32 array (no copy when it already is one, e.g. a read-only memmap).

    Checks: 2-D, numeric, at least one row and column, finite (NaN/inf are reported with the first bad
    row), and optionally the number of rows / columns.
    """
    if isinstance(X, (pd.DataFrame, pd.Series)):
        X = X.to_numpy()
    if not isinstance(X, np.ndarray):
        try:
            X = np.asarray(X)
        except Exception as exc:  # ragged lists and similar
            raise TypeError(f"The '{name}' parameter of {func} must be a 2-D numeric array. {exc}") from None
    if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise param_error(name, func, "a 2-D numeric array", X, TypeError)
    if np.issubdtype(X.dtype, np.complexfloating):
        raise TypeError(
            f"The '{name}' parameter of {func} must be a 2-D array of real numbers. Got complex numbers (dtype "
            f"{X.dtype}) instead; pass their real part, magnitude, or both as separate columns."
        )
    if X.ndim != 2:
        raise ValueError(
            f"The '{name}' parameter of {func} must be a 2-D array of shape (n_samples, n_features). "
            f"Got an array with {X.ndim} dimension(s) and shape {X.shape} instead."
            + (" Reshape 1-D data with X.reshape(-1, 1)." if X.ndim == 1 else "")
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(
            f"The '{name}' parameter of {func} must have at least one row and one column. Got shape {X.shape} instead."
        )
    if n_rows is not None and X.shape[0] != n_rows:
        raise ValueError(
            f"The '{name}' parameter of {func} must have {n_rows} rows to match the labels. "
            f"Got {X.shape[0]} rows instead."
        )
    if n_cols is not None and X.shape[1] != n_cols:
        raise ValueError(
            f"The '{name}' parameter of {func} must have {n_cols} columns, like the training features. "
            f"Got {X.shape[1]} columns instead."
        )
    if X.dtype != np.float32:
        X = X.astype(np.float32)
    elif not (X.flags.c_contiguous or X.flags.f_contiguous):
        X = np.ascontiguousarray(X)
    for start in range(0, X.shape[0], _FINITE_CHUNK_ROWS):
        block = X[start : start + _FINITE_CHUNK_ROWS]
        # a NaN or an infinity makes the sum NaN or infinite, so a finite sum clears the chunk in one pass without
        # an array of flags (half the time of isfinite().all() at the SNLI shape); a sum that overflows (huge but
        # finite values) is checked value by value
        if np.isfinite(np.add.reduce(block, axis=None)):
            continue
        finite = np.isfinite(block)
        if not finite.all():
            bad_row = start + int(np.flatnonzero(~finite.all(axis=1))[0])
            raise ValueError(
                f"The '{name}' parameter of {func} must contain only finite values. "
                f"Got NaN or infinity (first in row {bad_row}) instead."
            )
    return X


@dataclass(frozen=True)
class EncodedLabels:
    """Labels as integer codes ``0..n_classes-1`` plus the class names they stand for."""

    codes: np.ndarray
    classes: tuple

    @property
    def n_classes(self) -> int:
        """Number of distinct classes."""
        return len(self.classes)

    def encode(self, values: Sequence[Hashable], name: str, func: str) -> np.ndarray:
        """Map further labels (e.g. evaluation labels) onto the same codes; unknown classes are an error."""
        arr = _as_label_array(values, name, func)
        lookup = {c: i for i, c in enumerate(self.classes)}
        codes = np.empty(len(arr), dtype=np.int32)
        for i, value in enumerate(arr):
            key = _label_key(value)
            if key not in lookup:
                raise ValueError(
                    f"The '{name}' parameter of {func} must only contain classes seen in the training "
                    f"labels {shown_list(self.classes)}. Got {shown(value)} instead."
                )
            codes[i] = lookup[key]
        return codes


def _label_key(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _as_label_array(y: Any, name: str, func: str) -> np.ndarray:
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise ValueError(
                f"The '{name}' parameter of {func} must be 1-D (one label per row). "
                f"Got a table with {y.shape[1]} columns instead."
            )
        y = y.iloc[:, 0]
    if isinstance(y, pd.Series):
        y = y.to_numpy()
    try:
        if isinstance(y, np.ndarray):
            arr = y
        else:
            values = list(y)
            kinds = {type(v) for v in values[:10_000]}
            mixed = len(kinds) > 1 and not all(issubclass(k, (int, float, np.number)) for k in kinds)
            if mixed or any(issubclass(k, tuple) for k in kinds):
                arr = np.empty(len(values), dtype=object)  # keep 1 and "one" apart; tuples are labels
                arr[:] = values
            else:
                arr = np.asarray(values)
    except Exception as exc:
        raise TypeError(f"The '{name}' parameter of {func} must be a 1-D sequence of labels. {exc}") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(
            f"The '{name}' parameter of {func} must be 1-D (one label per row). "
            f"Got an array of shape {arr.shape} instead."
        )
    return arr


def check_labels(y: Any, name: str, func: str, *, n_rows: int, min_per_class: int = 2) -> EncodedLabels:
    """Encode labels of any hashable type as integer codes.

    Classes are sorted when they can be compared (as scikit-learn's ``LabelEncoder`` does) and kept in
    order of first appearance otherwise. Checks: 1-D, ``n_rows`` long, no missing labels, at least two
    classes, each with at least ``min_per_class`` rows.
    """
    arr = _as_label_array(y, name, func)
    if len(arr) != n_rows:
        raise ValueError(
            f"The '{name}' parameter of {func} must have one label per row of X ({n_rows}). "
            f"Got {len(arr)} labels instead."
        )
    values = [_label_key(v) for v in arr] if arr.dtype == object else arr
    series = pd.Series(values, dtype=object if arr.dtype == object else None)
    if series.isna().any():
        first = int(np.flatnonzero(series.isna().to_numpy())[0])
        raise ValueError(f"The '{name}' parameter of {func} must not contain missing labels. Row {first} has none.")
    for v in series.iloc[: min(len(series), 1000)]:
        if not isinstance(v, Hashable):
            raise param_error(name, func, "a sequence of hashable labels", v, TypeError)
    try:
        codes, uniques = pd.factorize(series, sort=True)
    except TypeError:
        codes, uniques = pd.factorize(series, sort=False)
    classes = tuple(_label_key(u) for u in uniques)
    if len(classes) < 2:
        raise ValueError(
            f"The '{name}' parameter of {func} must contain at least 2 classes. Got {len(classes)} class"
            f"{'' if len(classes) == 1 else 'es'} (every row has the same label) instead."
        )
    counts = np.bincount(codes, minlength=len(classes))
    small = np.flatnonzero(counts < min_per_class)
    if small.size:
        c = int(small[0])
        raise ValueError(
            f"The '{name}' parameter of {func} must have at least {min_per_class} rows in every class. "
            f"Got {int(counts[c])} row(s) of class {shown(classes[c])} instead."
        )
    return EncodedLabels(codes=codes.astype(np.int32), classes=classes)


def check_ids(ids: Any, name: str, func: str, *, n_rows: int) -> np.ndarray:
    """Check row ids: 1-D, one per row, no missing value, every id once (the first repeat is named).

    Returns
    -------
    ndarray
        The ids as an array (object dtype for text).
    """
    if isinstance(ids, (pd.Series, pd.Index)):
        ids = ids.to_numpy()
    arr = np.asarray(ids) if isinstance(ids, np.ndarray) else _as_label_array(ids, name, func)
    if arr.ndim != 1 or len(arr) != n_rows:
        raise ValueError(
            f"The '{name}' parameter of {func} must have one id per row ({n_rows}). Got shape {arr.shape} instead."
        )
    if arr.dtype.kind == "c":
        raise TypeError(f"The '{name}' parameter of {func} must hold ints or strings. Got complex numbers instead.")
    series = pd.Series(arr, dtype=object if arr.dtype == object else None)
    missing = series.isna().to_numpy()
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise ValueError(f"The '{name}' parameter of {func} must not contain missing ids. Row {first} has none.")
    try:
        dup = series.duplicated(keep=False).to_numpy()
    except TypeError:
        raise param_error(name, func, "a sequence of hashable ids", series.iloc[0], TypeError) from None
    if dup.any():
        rows = np.flatnonzero(dup)
        first = rows[0]
        again = rows[1:][series.iloc[rows[1:]].to_numpy() == series.iloc[first]]
        second = int(again[0]) if len(again) else int(rows[1])
        raise ValueError(
            f"The '{name}' parameter of {func} must give every row its own id. Got {shown(series.iloc[first])} "
            f"in rows {int(first)} and {second} instead."
        )
    return arr
