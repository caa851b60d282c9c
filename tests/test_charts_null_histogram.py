"""The null drawn on the Predictability histogram itself (issue 27): a dotted step per class panel, after the bars."""

from __future__ import annotations

import numpy as np
import pytest

from aflite_app.charts import runs as charts
from aflite_core import aflite
from aflite_core.data.planted_bias import make_planted_bias


@pytest.fixture(scope="module")
def runs():
    X, y, _ = make_planted_bias(600, 8, n_classes=3, class_sep=0.3, random_state=0)
    names = np.array(["ant", "bee", "cat"])[y]
    kw = dict(target_size=300, train_size=120, slice_size=50, tau=0.6, random_state=0)
    return aflite(X, names, **kw), aflite(X, names, null_permutations=2, **kw)


def test_null_step_per_class_right_of_tau_sums_to_the_null_count(runs):
    plain, nulled = runs
    fig = charts.predictability_histogram(plain, 1, null=nulled)
    n = len(plain.classes)
    assert all(t.type == "bar" for t in fig.data[: 2 * n])  # a click still names a bar (stayed, removed per class)
    steps = fig.data[2 * n :]
    assert [t.name for t in steps] == ["under shuffled labels (mean)"] * n
    assert [bool(t.showlegend) for t in steps] == [True] + [False] * (n - 1)
    assert steps[0].line.shape == "hvh" and steps[0].line.dash == "dot"
    edges = charts.histogram_edges(plain)
    # the bins from the first edge above τ on: their step's mass is exactly the null's count at p >= that edge
    # rounded up to the 0.01 grid
    first = edges[np.argmax(edges > 0.6)]
    right = edges[:-1] >= first - 1e-12
    col = int(np.ceil(round(first * 100, 6)))
    for i, t in enumerate(steps):
        assert float(np.sum(np.asarray(t.y)[right])) == pytest.approx(nulled.null_counts[0, i, col])
    # the whole step sums to every scored row of the class (p >= 0 counts them all)
    total = sum(float(np.sum(t.y)) for t in steps)
    assert total == pytest.approx(float(nulled.null_counts[0, :, 0].sum()))
    assert charts.clicked_round_and_class([{"curve_number": 2 * n}], plain, "histogram", 1) is None


def test_no_null_no_step_and_small_multiples_get_one_legend_entry(runs):
    plain, nulled = runs
    assert all(t.type == "bar" for t in charts.predictability_histogram(plain, 1).data)
    multiples = charts.predictability_small_multiples(plain, null=nulled)
    steps = [t for t in multiples.data if t.name == "under shuffled labels (mean)"]
    assert len(steps) == min(plain.n_rounds, len(nulled.null_counts))
    assert sum(bool(t.showlegend) for t in steps) == 1
