"""Chart builders of the Filter and Predictability pages, without Streamlit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from aflite_app.charts import runs as charts
from aflite_app.charts.theme import KEPT, REMOVED, style
from aflite_core import aflite
from aflite_core.data.planted_bias import make_planted_bias


@pytest.fixture(scope="module")
def result():
    X, y, _ = make_planted_bias(600, 8, n_classes=3, class_sep=0.3, random_state=0)
    names = np.array(["ant", "bee", "cat"])[y]
    return aflite(X, names, target_size=300, train_size=120, slice_size=50, tau=0.6, random_state=0)


def _values(trace, axis):
    v = trace[axis]
    return np.asarray(v if not isinstance(v, dict) else [], dtype=float)


def test_removal_chart_bars_per_class_sum_to_removed(result):
    fig = charts.removal_chart(result)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [t.name for t in bars] == ["ant", "bee", "cat"]  # the classes (the axis says "rows removed so far")
    # the bars count the rows removed so far (issue 29): each round's step is that round's removals
    so_far = np.sum([np.asarray(t.y) for t in bars], axis=0)
    assert so_far.tolist() == np.cumsum(result.history["n_removed"]).tolist()
    per_round = np.sum([np.asarray(t.customdata) for t in bars], axis=0)
    assert per_round.tolist() == result.history["n_removed"].tolist()
    size = next(t for t in fig.data if t.name == "rows left")
    assert list(size.y) == result.history["size_after"].tolist()
    assert size.line.color == KEPT
    assert fig.layout.yaxis.title.text.startswith("rows removed")
    assert fig.layout.xaxis3.title.text == "round"  # the bottom panel's
    assert any("τ = 0.6" in (a.text or "") for a in fig.layout.annotations)


def test_predictability_histogram_splits_removed_rows(result):
    fig = charts.predictability_histogram(result, 1)
    removed = [t for t in fig.data if t.name == "removed this round"]
    stayed = [t for t in fig.data if t.name == "stayed"]
    assert len(removed) == len(stayed) == 3  # one pair per class
    # binned on the server: each bar trace holds counts per bin, and they add up to the rows
    assert sum(int(np.sum(t.y)) for t in removed) == int((result.removed_round == 1).sum())
    assert sum(int(np.sum(t.y)) for t in stayed) + sum(int(np.sum(t.y)) for t in removed) == int(
        result.history["n_scored"][0]
    )
    assert all(t.marker.color == REMOVED for t in removed)
    assert [a.text for a in fig.layout.annotations][:3] == ["ant", "bee", "cat"]
    assert "Round 1" in fig.layout.title.text
    with pytest.raises(ValueError, match="between 1 and"):
        charts.predictability_histogram(result, result.n_rounds + 1)


def test_small_multiples_one_panel_per_round(result):
    fig = charts.predictability_small_multiples(result)
    titles = [a.text for a in fig.layout.annotations if (a.text or "").startswith("round")]
    assert titles == [f"round {r}" for r in range(1, result.n_rounds + 1)]
    assert sum(int(np.sum(t.y)) for t in fig.data if t.name == "removed this round") == result.n_removed
    stayed = sum(int(np.sum(t.y)) for t in fig.data if t.name == "stayed")
    assert stayed == int(result.history["n_scored"].sum()) - result.n_removed
    top = max(float((np.asarray(a.y) + np.asarray(b.y)).max()) for a, b in zip(fig.data[::2], fig.data[1::2]))
    assert fig.layout.yaxis.range[1] >= top  # nothing clipped


def test_greedy_results_explain_missing_scores():
    X, y, _ = make_planted_bias(120, 4, random_state=0)
    res = aflite(X, y, target_size=110, train_size=30, strategy="greedy", n_partitions=8, tau=0.5, random_state=0)
    with pytest.raises(ValueError, match="greedy"):
        charts.predictability_histogram(res, 1)
    charts.removal_chart(res)  # the history exists for every strategy


def test_class_counts_chart():
    counts = pd.DataFrame({"before": [10, 20], "after": [2, 15]}, index=["a", "b"])
    fig = charts.class_counts_chart(counts, title="Classes")
    assert [t.name for t in fig.data] == ["before", "after (kept)"]
    assert list(fig.data[1].y) == [2, 15]
    assert fig.layout.yaxis.title.text == "rows"


def test_removal_chart_round_ticks_on_the_rows_left_axis_and_legend_in_class_order():
    import math

    X, y, _ = make_planted_bias(963, 6, n_classes=3, random_state=0)
    res = aflite(X, np.array(["b", "c", "a"])[y], target_size=500, train_size=200, slice_size=60, random_state=0)
    fig = charts.removal_chart(res)
    right = fig.layout.yaxis2
    assert right.tickmode == "linear" and right.tick0 == 0
    mantissa = right.dtick / 10 ** math.floor(math.log10(right.dtick))
    assert mantissa in (1, 2, 5)  # 100, 200, 500 … never 96.6 / 193.1 / 289.7
    assert fig.layout.legend.traceorder == "normal"
    ranked = sorted((t.legendrank, t.name) for t in fig.data)
    assert [name for _, name in ranked] == [
        "a",
        "b",
        "c",
        "rows left",
        "scored rows at p ≥ τ",
        "mean predictability (R estimate)",
    ]


def test_titles_and_legends_have_their_own_bands():
    fig = style(go.Figure(go.Scatter(x=[0], y=[0], name="a")), height=400, title="A title")
    title_top = 1 - fig.layout.title.y  # both in container coordinates, from the top
    legend_top = 1 - fig.layout.legend.y
    assert fig.layout.title.yref == fig.layout.legend.yref == "container"
    assert legend_top * 400 >= title_top * 400 + 24  # the legend starts below the title's line
    assert fig.layout.margin.t >= legend_top * 400 + 20  # and above the plot area


def test_a_clicked_bar_names_its_round_and_class():
    X, y, _ = make_planted_bias(600, 6, random_state=0)
    res = aflite(X, np.array(["neg", "pos"])[y], target_size=300, train_size=120, slice_size=50, random_state=0)
    assert charts.clicked_round_and_class([{"curve_number": 1, "x": 2}], res, "removal") == (2, "pos", "removed")
    line = charts.clicked_round_and_class([{"curve_number": 2, "x": 3.0}], res, "removal")
    assert line == (3, None, "removed")
    # the histogram: per class panel a blue "stayed" bar, then a vermillion "removed this round" one
    assert charts.clicked_round_and_class([{"curve_number": 3}], res, "histogram", rnd=4) == (4, "pos", "removed")
    assert charts.clicked_round_and_class([{"curve_number": 2}], res, "histogram", rnd=4) == (4, "pos", "stayed")
    hist = charts.predictability_histogram(res, 4)
    assert [t.name for t in hist.data[:4]] == ["stayed", "removed this round"] * 2
    assert charts.clicked_round_and_class([], res, "removal") is None


@pytest.mark.parametrize("rnd", [1, 2, 3])
def test_histogram_counts_are_numpys_histogram_of_the_round_scores(result, rnd):
    """Server-side bins: per class and colour, the bars equal numpy.histogram of that round's scores."""
    fig = charts.predictability_histogram(result, rnd)
    edges = charts.histogram_edges(result)
    p = result.scores[rnd - 1]
    scored = ~np.isnan(p)
    gone = result.removed_round == rnd
    for i, _ in enumerate(result.classes):
        for side, trace in enumerate(fig.data[2 * i : 2 * i + 2]):
            rows = scored & (result.y == i) & (gone if side else ~gone)
            expected, _ = np.histogram(p[rows], bins=edges)
            assert trace.type == "bar" and np.asarray(trace.y).tolist() == expected.tolist()
            assert len(trace.x) == len(edges) - 1
    assert np.allclose(np.diff(edges), 1 / 40) and edges[0] < 0 < 1 < edges[-1]  # m = 64: 41 bins of 1/40
    small = charts.predictability_small_multiples(result)
    stayed, removed = small.data[2 * (rnd - 1)], small.data[2 * (rnd - 1) + 1]
    assert np.asarray(removed.y).tolist() == np.histogram(p[scored & gone], bins=edges)[0].tolist()
    assert np.asarray(stayed.y).tolist() == np.histogram(p[scored & ~gone], bins=edges)[0].tolist()


def test_the_histogram_sends_counts_not_rows_for_a_large_run():
    """100,000 rows: the figures' JSON hold O(bins) numbers per trace, not one score per row."""
    X, y, _ = make_planted_bias(100_000, 8, n_classes=3, random_state=0)
    run = aflite(X, y, target_size=90_000, train_size=5_000, slice_size=4_000, n_partitions=16, random_state=0)
    assert run.n_rounds >= 2
    for fig in (charts.predictability_histogram(run, 2), charts.predictability_small_multiples(run)):
        n_bins = len(charts.histogram_edges(run)) - 1
        assert all(len(t.x) == len(t.y) == n_bins for t in fig.data)
        assert len(fig.to_json()) < 40_000 * max(1, len(fig.data) // 6)  # 100,000 scores would be ~1 MB


def test_every_panel_has_its_dashed_tau_line(result):
    """One τ line per panel, on that panel's axes (as add_vline drew them, set in one layout update)."""
    for fig, n_panels in (
        (charts.predictability_histogram(result, 1), len(result.classes)),
        (charts.predictability_small_multiples(result), result.n_rounds),
    ):
        shapes = fig.layout.shapes
        assert len(shapes) == n_panels
        assert {s.x0 for s in shapes} == {s.x1 for s in shapes} == {0.6} and {s.line.dash for s in shapes} == {"dash"}
        assert [s.xref for s in shapes] == ["x"] + [f"x{k}" for k in range(2, n_panels + 1)]
        assert [s.yref for s in shapes] == ["y domain"] + [f"y{k} domain" for k in range(2, n_panels + 1)]


def _panel_of(fig, trace) -> str:
    return trace.yaxis or "y"


def test_removal_chart_has_one_y_axis_per_panel_and_tau_on_the_predictability_axis(result):
    """Issue 29 item 6: rows left drew on a right axis over the removed-row bars (it read as ~70 against the bars'
    axis), and τ was a line on a "share (0-1)" axis beside counts. Now each panel has one y-axis and one unit."""
    fig = charts.removal_chart(result)
    assert not any(axis.overlaying for axis in fig.select_yaxes())  # no second axis drawn over a panel
    panels = {}
    for trace in fig.data:
        panels.setdefault(_panel_of(fig, trace), set()).add("bar" if trace.type == "bar" else trace.name)
    assert panels == {
        "y": {"bar"},
        "y2": {"rows left", "scored rows at p ≥ τ"},  # both counts of rows
        "y3": {"mean predictability (R estimate)"},
    }
    (tau_line,) = [s for s in fig.layout.shapes if s.type == "line"]
    assert tau_line.yref.startswith("y3") and tau_line.y0 == pytest.approx(0.6)
    assert fig.layout.yaxis3.title.text == "mean p" and "share" not in fig.layout.yaxis3.title.text
    assert fig.layout.yaxis2.title.text == "rows"


def test_removal_chart_bars_read_with_k_equal_to_one():
    """With k = 1 every per-round bar was one row high and filled the panel; the bars now grow with the rows removed
    so far, so the last bar is the tallest and the first one is a small share of it."""
    X, y, _ = make_planted_bias(160, 4, n_classes=2, random_state=0)
    res = aflite(X, np.array(["no", "yes"])[y], target_size=140, train_size=40, slice_size=1, tau=0.0, random_state=0)
    assert res.n_rounds == 20
    fig = charts.removal_chart(res)
    heights = np.sum([np.asarray(t.y) for t in fig.data if t.type == "bar"], axis=0)
    assert heights.tolist() == list(range(1, 21))
    assert heights[0] / heights.max() <= 0.05  # the first bar is a sliver, not the panel's full height
    assert fig.layout.yaxis.tickformat == ",d"  # whole rows on the axis


def test_the_toolbar_strip_at_the_top_is_clear_of_the_title_and_the_legend():
    """Issue 29 item 7: at 390 px Plotly's toolbar (top right, ~25 px high) covered chart titles; every figure now
    keeps a strip of MODEBAR_BAND pixels at its top free, and its title and legend start below it."""
    from aflite_app.charts.theme import MODEBAR_BAND

    assert MODEBAR_BAND >= 26  # the toolbar's buttons are 22 px plus their padding
    for title in ("A long title that reaches the toolbar on a phone", None):
        fig = style(go.Figure(go.Scatter(x=[0], y=[0], name="a")), height=400, title=title)
        if title:
            assert (1 - fig.layout.title.y) * 400 >= MODEBAR_BAND
        assert (1 - fig.layout.legend.y) * 400 >= MODEBAR_BAND
        assert fig.layout.margin.t >= MODEBAR_BAND + 30 + (34 if title else 0)
