"""The Predictability page's "All rounds" small multiples laid out to read at 390 px as at 1,500 px (issue 29).

At 390 px six panels a row crowded: ticks 0, 0.5 and 1 of neighbouring panels ran together ("10 0.5 10") and the
round titles nearly touched. The builder cannot know the width, so it picks one layout for both.
"""

from __future__ import annotations

import itertools
import math

import pytest

from aflite_app.charts import runs as charts
from aflite_core import aflite
from aflite_core.data.planted_bias import make_planted_bias


@pytest.fixture(scope="module")
def result():
    """A run of 10 rounds (three rows of panels, the last one short)."""
    X, y, _ = make_planted_bias(600, 8, n_classes=3, class_sep=0.3, random_state=0)
    res = aflite(X, y, target_size=100, train_size=60, slice_size=40, tau=0.5, n_partitions=16, random_state=0)
    assert res.n_rounds >= 9, res.n_rounds
    return res


def _axes(fig, kind: str) -> list:
    keys = [k for k in fig.layout if k.startswith(kind + "axis")]
    return [fig.layout[k] for k in sorted(keys, key=lambda k: int(k[5:] or 1))]


def test_at_most_four_panels_a_row_ticks_only_at_0_and_1(result):
    fig = charts.predictability_small_multiples(result)
    n = result.n_rounds
    cols = min(charts.MULTIPLES_MAX_COLUMNS, n)
    assert charts.MULTIPLES_MAX_COLUMNS == 4
    xs = _axes(fig, "x")
    assert len(xs) == n
    # panel r sits in column (r - 1) % 4: four distinct horizontal domains
    assert len({tuple(round(v, 6) for v in ax.domain) for ax in xs}) == cols
    assert all(list(ax.tickvals) == [0, 1] and list(ax.ticktext) == ["0", "1"] for ax in xs)
    # the gap between two panels of a row: 0.04 of the width
    first, second = xs[0].domain, xs[1].domain
    assert second[0] - first[1] == pytest.approx(0.04, abs=1e-6)
    titles = [a for a in fig.layout.annotations if (a.text or "").startswith("round")]
    assert all(a.font.size >= 11 for a in titles)


def test_the_figure_grows_with_its_rows_and_the_title_gap_is_fixed(result):
    fig = charts.predictability_small_multiples(result)
    rows = math.ceil(result.n_rounds / charts.MULTIPLES_MAX_COLUMNS)
    assert fig.layout.height == charts.MULTIPLES_FRAME_PX + charts.MULTIPLES_ROW_PX * rows
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    domains = sorted({tuple(ax.domain) for ax in _axes(fig, "y")}, reverse=True)
    assert len(domains) == rows
    for upper, lower in itertools.pairwise(domains):  # the gap holds the lower panels' titles: the same px per gap
        assert (upper[0] - lower[1]) * plot_px == pytest.approx(charts.MULTIPLES_GAP_PX, abs=0.5)
    fewer = charts.predictability_small_multiples(result, max_rounds=4)
    assert fewer.layout.height == charts.MULTIPLES_FRAME_PX + charts.MULTIPLES_ROW_PX


def test_a_panel_with_none_below_it_shows_its_own_axis(result):
    """A short last row leaves the panels above its gaps without a bottom axis; they draw their own."""
    n, cols = 10, charts.MULTIPLES_MAX_COLUMNS  # the first 10 rounds: a last row of 2 panels
    fig = charts.predictability_small_multiples(result, max_rounds=n)
    for r, ax in enumerate(_axes(fig, "x"), start=1):
        if r + cols <= n:  # a panel below shares this x axis and draws it
            assert ax.showticklabels is False, r
        else:
            assert ax.showticklabels is not False and ax.title.text == "p(i)", r
