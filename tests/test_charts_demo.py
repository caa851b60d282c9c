"""Chart builders of the guided demo (issue 29), without Streamlit: laid out to read at 390 px as at 1,500 px."""

from __future__ import annotations

import json

import pytest

from aflite_app.charts import demo as charts
from aflite_app.charts import synthetic as syn_charts
from aflite_core.data.planted_bias import paper_circles
from aflite_core.experiments.figure2 import synthetic_experiment


@pytest.fixture(scope="module")
def exp():
    data = paper_circles(400, random_state=0)
    return synthetic_experiment(
        data, target_size=0.1, train_size=0.05, slice_size=20, tau=0.75, n_partitions=16, n_splits=2, random_state=0
    )


@pytest.mark.parametrize("part", ["original", "after"])
def test_step_1s_square_plot_sits_at_the_top_of_its_figure(exp, part):
    """At 390 px the square plot was centred in the figure's height, its points ~60 px under the panel's title."""
    d = exp.datasets[0]
    args = (d, exp.results[d.name], exp.table.iloc[0])
    fig = charts.circles_panel(*args, part=part, height=500)
    axes = [fig.layout[k] for k in fig.layout if k.startswith("yaxis")]
    assert axes and all(ax.constraintoward == "top" and ax.scaleanchor for ax in axes)
    # otherwise the Synthetic page's figure, unchanged
    plain = syn_charts.circles_column(*args, part=part, height=500)
    fig.update_yaxes(constraintoward=None)
    assert json.loads(fig.to_json()) == json.loads(plain.to_json())


def test_the_removed_label_sits_on_a_white_ground_off_the_tau_line():
    """The 'removed' label under the diamond was drawn across the dashed τ line; now an annotation on white."""
    fig = charts.row_rounds_chart([1, 2, 3, 4], [0.98, 0.95, 0.9, 0.8], 0.75, 4)
    label = next(a for a in fig.layout.annotations if a.text == "removed")
    assert label.x == 4 and label.y == pytest.approx(0.8) and label.yshift < 0 and label.bgcolor
    diamond = next(t for t in fig.data if t.name == "removed in round 4")
    assert diamond.mode == "markers" and not diamond.text


def test_step_2s_axis_title_is_two_short_lines():
    """On one line the title ran past the figure's right edge at 390 px ("share of rows whose text contains the t")."""
    import pandas as pd

    shares = pd.DataFrame(
        {
            "token": ["eating", "sleeping"],
            "label": ["contradiction", "contradiction"],
            "share_kept": [0.01, 0.02],
            "share_removed": [0.03, 0.05],
            "count_kept": [3, 5],
            "count_removed": [10, 12],
            "p_hat": [0.8, 0.9],
            "p_hat_kept": [0.5, 0.6],
            "z": [4.1, 5.0],
            "z_kept": [0.9, 1.2],
        }
    )
    fig = charts.word_shares_panel(shares, z_critical=3.0)
    title = fig.layout.xaxis.title.text
    assert title.startswith("share of rows whose text") and all(len(line) <= 26 for line in title.split("<br>"))
