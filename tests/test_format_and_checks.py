"""The core's one number / percent formatter and missing-value mark, and the argument checks shared in _validation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from aflite_app.charts import theme
from aflite_core import _validation as v
from aflite_core._format import MISSING, fmt_num, fmt_pct, is_missing
from aflite_core.experiments.ood import ood_experiment


def test_missing_values_read_as_one_mark():
    assert MISSING == "–" and theme.MISSING is MISSING
    assert theme.fmt_num is fmt_num and theme.fmt_pct is fmt_pct  # the charts use the core's formatter
    for x in (None, float("nan"), np.nan, math.inf, -np.inf, pd.NA, "text"):
        assert is_missing(x)
        assert fmt_num(x) == MISSING and fmt_pct(x) == MISSING
    for x in (0, 0.0, 1, np.float32(0.5), np.int64(3)):
        assert not is_missing(x)


def test_numbers_and_percentages():
    assert fmt_num(0.91249) == "0.912" and fmt_num(2, digits=1) == "2.0"
    assert fmt_pct(0.25) == "25%" and fmt_pct(0.25, sep=" ") == "25 %" and fmt_pct(0.1234, 1) == "12.3%"
    assert [fmt_pct(x, sep=" ", ends=True) for x in (0, 0.001, 0.5, 0.999, 1)] == [
        "0 %",
        "< 1 %",
        "50 %",
        "> 99 %",
        "100 %",
    ]
    for x in (0.0, 0.004, 0.125, 0.5, 0.995, 1.0):
        assert fmt_pct(x) == f"{x:.0%}"  # the CLI's former "{:.0%}" reads the same


@pytest.mark.parametrize(
    ("seeds", "exc"),
    [(1.5, TypeError), (None, TypeError), ((), ValueError), ((1, 1), ValueError), ((-1,), ValueError)],
)
def test_one_seed_check_raises_the_same_for_the_same_input(seeds, exc):
    with pytest.raises(exc, match="The 'seeds' parameter of f must be a non-empty sequence of distinct ints"):
        v.check_seeds(seeds, "f")
    with pytest.raises(exc, match="'seeds' parameter of ood_experiment"):
        ood_experiment(seeds=seeds)  # the check runs before any data is built


def test_seeds_accept_one_int_or_distinct_ints():
    assert v.check_seeds(3, "f") == (3,) and v.check_seeds([0, np.int64(2)], "f") == (0, 2)


def test_the_generic_float_checks():
    assert v.check_open_fraction(0.5, "x", "f") == 0.5
    for bad, exc in (
        (0, ValueError),
        (1.0, ValueError),
        (float("nan"), ValueError),
        ("0.5", TypeError),
        (True, TypeError),
    ):
        with pytest.raises(exc):
            v.check_open_fraction(bad, "x", "f")
    assert v.check_positive_float(np.float32(2), "x", "f") == 2.0
    assert v.check_nonnegative_float(0, "x", "f") == 0.0
    for check, bad in (
        (v.check_positive_float, 0),
        (v.check_nonnegative_float, -1),
        (v.check_positive_float, math.inf),
    ):
        with pytest.raises(ValueError):
            check(bad, "x", "f")
    assert v.check_n_threads(None, "f") is None and v.check_n_threads(2, "f") == 2
    with pytest.raises(ValueError):
        v.check_n_threads(0, "f")
    v.check_optional_callable(None, "cb", "f")
    with pytest.raises(TypeError, match="a callable or None"):
        v.check_optional_callable(3, "cb", "f")
