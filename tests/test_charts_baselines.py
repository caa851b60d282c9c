"""Chart and text builders of the Baselines and Data pages, without Streamlit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aflite_app.charts import baselines as cb
from aflite_app.charts.theme import KEPT, NEUTRAL

LABELS = {"linear": "Linear", "knn": "kNN", "rbf": "RBF SVM"}


def _acc(values: dict, *, features="full input", std=0.01, sizes=None, majority=0.5) -> pd.DataFrame:
    """values: {model: {subset: accuracy}}."""
    sizes = sizes or {"full": 1000, "aflite": 500, "random": 500, "one-shot": 500}
    rows = []
    for model, per in values.items():
        for subset, acc in per.items():
            rows.append(
                {
                    "subset": subset,
                    "features": features,
                    "model": model,
                    "n_rows": sizes[subset],
                    "accuracy": acc,
                    "accuracy_std": std,
                    "n_splits": 5,
                    "majority_rate": majority,
                    "note": "",
                }
            )
    return pd.DataFrame(rows)


HARDER = {
    "linear": {"full": 0.9, "aflite": 0.6, "random": 0.88, "one-shot": 0.75},
    "knn": {"full": 0.85, "aflite": 0.84, "random": 0.84, "one-shot": 0.8},
}


@pytest.fixture
def bias():
    return pd.DataFrame(
        {
            "subset": ["full", "aflite", "random", "one-shot"],
            "n_rows": [1000, 500, 500, 500],
            "n_scored": [1000, 500, 500, 499],
            "mean_predictability": [0.9, 0.55, 0.89, np.nan],
            "note": ["", "", "", "could not score"],
        }
    )


def test_accuracy_chart_groups_subsets_per_model_with_consistent_colours():
    fig = cb.accuracy_chart(_acc(HARDER, majority=0.6), model_labels=LABELS)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [t.name for t in bars] == ["full data", "AFLite kept", "random subset", "one-shot filter"]
    assert {t.name: t.marker.color for t in bars}["AFLite kept"] == KEPT
    assert {t.name: t.marker.color for t in bars}["full data"] == NEUTRAL
    assert len({t.marker.color for t in bars}) == 4
    assert all(list(t.x) == ["Linear", "kNN"] for t in bars)
    aflite = next(t for t in bars if t.name == "AFLite kept")
    assert list(aflite.y) == [0.6, 0.84]
    assert aflite.error_y.visible and list(aflite.error_y.array) == [0.01, 0.01]
    assert fig.layout.barmode == "group"
    assert "accuracy" in fig.layout.yaxis.title.text and fig.layout.xaxis.title.text == "model family"
    assert [sh.y0 for sh in fig.layout.shapes] == [0.6]  # the chance line


def test_accuracy_chart_axis_starts_at_zero_unless_everything_is_high():
    low = cb.accuracy_chart(_acc({"linear": {"full": 0.4, "aflite": 0.3, "random": 0.4}}, majority=0.3))
    assert low.layout.yaxis.range[0] == 0
    high = cb.accuracy_chart(_acc({"linear": {"full": 0.97, "aflite": 0.93, "random": 0.96}}, majority=0.9))
    assert 0 < high.layout.yaxis.range[0] < 0.9
    assert "dashed line" in cb.chance_text(_acc({"linear": {"full": 0.4}}, majority=0.3), low)
    high_acc = _acc({"linear": {"full": 0.97, "aflite": 0.93, "random": 0.96}}, majority=0.1)
    high = cb.accuracy_chart(high_acc)
    assert not high.layout.shapes  # the chance line is below the axis range
    assert "starts at" in cb.chance_text(high_acc, high) and "10%" in cb.chance_text(high_acc, high)


def test_accuracy_chart_has_one_panel_per_kind_of_features():
    both = pd.concat([_acc(HARDER), _acc(HARDER, features="partial input")], ignore_index=True)
    fig = cb.accuracy_chart(both, model_labels=LABELS, view_labels={"partial input": "hypothesis only"})
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 8
    assert sum(bool(t.showlegend) for t in bars) == 4  # one legend entry per subset
    assert {t.xaxis for t in bars} == {"x", "x2"}
    assert any(a.text == "hypothesis only" for a in fig.layout.annotations)


def test_accuracy_chart_without_one_shot_subset():
    fig = cb.accuracy_chart(_acc({"linear": {"full": 0.9, "aflite": 0.7, "random": 0.85}}))
    assert [t.name for t in fig.data if t.type == "bar"] == ["full data", "AFLite kept", "random subset"]


def test_bias_chart_bars_in_subset_colours(bias):
    fig = cb.bias_chart(bias)
    (bar,) = fig.data
    assert list(bar.x) == ["full data", "AFLite kept", "random subset", "one-shot filter"]
    assert list(bar.marker.color) == [cb.SUBSET_COLOURS[s] for s in ("full", "aflite", "random", "one-shot")]
    assert bar.marker.color[1] == KEPT
    assert list(bar.text) == ["0.900", "0.550", "0.890", "–"]
    assert "predictability" in fig.layout.yaxis.title.text and fig.layout.xaxis.title.text.startswith("subset")


def test_baseline_table_has_sizes_and_the_difference_to_random():
    table = cb.baseline_table(_acc(HARDER), model_labels=LABELS)
    assert list(table.columns) == [
        "model family",
        "full data (1,000 rows)",
        "AFLite kept (500 rows)",
        "random subset (500 rows)",
        "one-shot filter (500 rows)",
        "AFLite − random",
    ]
    assert len(table) == 2
    linear = table.set_index("model family").loc["Linear"]
    assert linear["AFLite − random"] == pytest.approx(-0.28)


def test_plain_reading_says_the_filter_removed_more_than_size_explains(bias):
    lines = cb.plain_reading(_acc(HARDER), bias, model_labels=LABELS)
    assert "drops to **0.600**" in lines[0] and "random subset of the same size: 0.880" in lines[0]
    assert "more than size alone explains" in lines[0]
    assert any("one-shot filter" in line and "0.750" in line for line in lines)
    assert any("1 of 2" in line for line in lines)
    assert any(line.startswith("Representation bias") and "AFLite kept 0.550" in line for line in lines)


def test_plain_reading_below_chance_is_called_adversarial():
    lines = cb.plain_reading(_acc({"linear": {"full": 0.68, "aflite": 0.37, "random": 0.65}}, majority=0.56))
    assert "more than size alone explains" in lines[0] and "adversarial" in lines[1] and "56%" in lines[1]


def test_plain_reading_same_easier_and_nothing_removed():
    same = cb.plain_reading(_acc({"linear": {"full": 0.9, "aflite": 0.85, "random": 0.855}}, std=0.02))
    assert "fold-to-fold noise" in same[0]
    easier = cb.plain_reading(_acc({"linear": {"full": 0.9, "aflite": 0.95, "random": 0.85}}))
    assert "*higher*" in easier[0]
    sizes = {"full": 100, "aflite": 100, "random": 100, "one-shot": 100}
    none = cb.plain_reading(_acc({"linear": {"full": 0.9, "aflite": 0.9, "random": 0.9}}, sizes=sizes))
    assert len(none) == 1 and "removed no rows" in none[0]


def test_plain_reading_partial_input_sentence():
    both = pd.concat(
        [
            _acc(HARDER),
            _acc({"linear": {"full": 0.6, "aflite": 0.4, "random": 0.6}}, features="partial input", majority=0.34),
        ],
        ignore_index=True,
    )
    lines = cb.plain_reading(both, model_labels=LABELS, partial_label="hypothesis only")
    partial = [line for line in lines if line.startswith("Partial input")]
    assert partial and "hypothesis only" in partial[0] and "0.400" in partial[0] and "0.340" in partial[0]
