"""Chart builders of the Training dynamics page, without Streamlit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aflite_app.charts import dynamics as cd
from aflite_app.charts import level_checks as lc
from aflite_app.charts.theme import KEPT, REMOVED


def _frame(partial: bool = True) -> pd.DataFrame:
    """12 rows: 6 easy, 4 ambiguous, 2 hard; correctness covering every bucket."""
    levels = ["easy"] * 6 + ["ambiguous"] * 4 + ["hard"] * 2
    correctness = [1.0, 1.0, 1.0, 0.8, 0.6, 1.0, 0.4, 0.2, 0.6, 0.0, 0.0, 0.2]
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "row": np.arange(12),
            "id": [f"r{i}" for i in range(12)],
            "label": ["cat", "dog", "owl"] * 4,
            "level": levels,
            "confidence": np.linspace(0.95, 0.1, 12),
            "variability": rng.uniform(0, 0.4, 12),
            "correctness": correctness,
            "aum": np.linspace(3, -2, 12),
        }
    )
    if partial:
        for m in ("confidence", "variability", "correctness", "aum"):
            frame[f"partial_{m}"] = frame[m].to_numpy()[::-1]
    return frame


def test_correctness_buckets():
    got = cd.correctness_bucket([1.0, 0.8, 0.5, 0.4, 0.2, 0.0])
    names = list(cd.CORRECTNESS_BUCKETS)
    assert got.tolist() == [names[0], names[1], names[1], names[2], names[2], names[3]]


def test_data_map_points_colours_and_symbols():
    frame = _frame()
    fig = cd.data_map(frame)
    level_traces = [t for t in fig.data if t.meta == "level points"]
    assert [t.name for t in level_traces] == list(cd.LEVELS)
    assert not any(t.showlegend for t in level_traces)  # their symbols vary: the legend uses plain circles
    legend_levels = [t for t in fig.data if t.name in cd.LEVELS and t.meta != "level points"]
    assert [(t.marker.symbol, t.marker.color) for t in legend_levels] == [
        ("circle", cd.LEVEL_COLOURS[lv]) for lv in cd.LEVELS
    ]
    assert sum(len(t.x) for t in level_traces) == len(frame)
    assert [len(t.x) for t in level_traces] == [6, 4, 2]
    for t in level_traces:
        assert t.marker.color == cd.LEVEL_COLOURS[t.name]
        assert t.marker.color not in (KEPT, REMOVED)
    easy, ambiguous, hard = level_traces
    # symbols follow correctness: 1.0 circle, >= .5 diamond, (0, .5) square, 0 x
    assert list(easy.marker.symbol) == ["circle", "circle", "circle", "diamond", "diamond", "circle"]
    assert list(ambiguous.marker.symbol) == ["square", "square", "diamond", "x"]
    assert list(hard.marker.symbol) == ["x", "square"]
    # confidence up, variability across; hover shows id and class
    assert list(easy.y) == pytest.approx(frame["confidence"][:6].tolist())
    assert easy.customdata[0][0] == "r0" and easy.customdata[0][1] == "cat"
    assert "id" in easy.hovertemplate and "class" in easy.hovertemplate
    legend_only = [t for t in fig.data if t.legendgroup == "correctness"]
    assert [t.marker.symbol for t in legend_only] == list(cd.CORRECTNESS_BUCKETS.values())
    assert "confidence" in fig.layout.yaxis.title.text and "variability" in fig.layout.xaxis.title.text


def test_data_map_samples_large_frames():
    frame = pd.concat([_frame()] * 10, ignore_index=True)
    fig = cd.data_map(frame, max_points=50)
    assert sum(len(t.x) for t in fig.data if t.meta == "level points") == 50
    assert "50 of 120" in fig.layout.title.text


def test_data_map_with_an_empty_level():
    frame = _frame()
    frame["level"] = ["easy"] * 12
    fig = cd.data_map(frame)
    assert [len(t.x) for t in fig.data if t.meta == "level points"] == [12, 0, 0]


@pytest.mark.parametrize("partial", [True, False])
def test_feature_distributions_traces(partial):
    fig = cd.feature_distributions(_frame(partial))
    n_features = 8 if partial else 4
    assert len(fig.data) == n_features * 3
    assert all(t.type == "box" for t in fig.data)
    assert {t.name for t in fig.data} == set(cd.LEVELS)
    assert sum(t.showlegend for t in fig.data) == 3
    easy_conf = fig.data[0]
    assert easy_conf.name == "easy" and len(easy_conf.y) == 6
    assert easy_conf.marker.color == cd.LEVEL_COLOURS["easy"]
    titles = [a.text for a in fig.layout.annotations]
    assert "full input: confidence" in titles
    assert ("partial input: aum" in titles) is partial
    assert fig.layout.yaxis.title.text == "mean p(gold), 0-1"
    bottom = fig.layout.xaxis5 if partial else fig.layout.xaxis
    assert bottom.title.text == "difficulty level"


def test_class_counts_chart_stacks_classes_per_level():
    fig = cd.class_counts_chart(_frame(), ["cat", "dog", "owl"])
    assert [t.name for t in fig.data] == ["cat", "dog", "owl"]
    assert fig.layout.barmode == "stack"
    assert list(fig.data[0].x) == list(cd.LEVELS)
    counts = np.array([list(t.y) for t in fig.data])
    assert counts.sum() == 12 and counts.sum(axis=0).tolist() == [6, 4, 2]
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text == "rows"
    shares = cd.class_counts_chart(_frame(), ["cat", "dog", "owl"], share=True)
    assert np.array([list(t.y) for t in shares.data]).sum(axis=0) == pytest.approx([1, 1, 1])
    assert "share" in shares.layout.yaxis.title.text


def test_level_crosstab_numbers_and_sentence():
    levels = ["easy"] * 10 + ["ambiguous"] * 5 + ["hard"] * 5
    kept = np.array([False] * 8 + [True] * 2 + [False] * 2 + [True] * 3 + [False] * 1 + [True] * 4)
    table = cd.level_crosstab(levels, kept)
    assert table.loc["easy", "removed"] == 8 and table.loc["easy", "kept"] == 2
    assert table.loc["ambiguous", "removed"] == 2 and table.loc["hard", "removed"] == 1
    assert table["rows"].tolist() == [10, 5, 5]
    assert table.loc["easy", "removed_share"] == pytest.approx(0.8)
    assert table.loc["hard", "removed_share"] == pytest.approx(0.2)
    assert table.loc["easy", "share_of_removed"] == pytest.approx(8 / 11)
    assert "< 1 % of the easy rows" in cd.crosstab_sentence(cd.level_crosstab(["easy"] * 300, [False] + [True] * 299))
    sentence = cd.crosstab_sentence(table)
    assert sentence == (
        "AFLite removed 80 % of the easy rows, 40 % of the ambiguous rows and 20 % of the hard rows "
        "(55 % of all 20 rows)."
    )
    shown = cd.crosstab_display(table)
    assert shown["% removed"].round().tolist() == [80, 40, 20]
    assert shown["% of all removed"].round().tolist() == [73, 18, 9]
    cells = cd.crosstab_cells(table)
    assert cells[0] == ("easy", "removed", 8) and len(cells) == 6


def test_crosstab_chart_uses_kept_and_removed_colours():
    table = cd.level_crosstab(["easy", "easy", "hard", "ambiguous"], [False, True, True, True])
    fig = cd.crosstab_chart(table)
    assert [t.name for t in fig.data] == ["kept", "removed"]
    assert fig.data[0].marker.color == KEPT and fig.data[1].marker.color == REMOVED
    assert list(fig.data[1].x) == [1, 0, 0]
    assert fig.data[1].text[0] == "1 (50 %)" and fig.data[1].text[1] == ""
    assert fig.data[0].textangle == 0
    assert fig.layout.xaxis.title.text == "rows" and fig.layout.yaxis.title.text == "difficulty level"


def test_crosstab_nothing_removed_and_empty_levels():
    table = cd.level_crosstab(["easy", "easy", "hard"], [True, True, True])
    assert cd.crosstab_sentence(table) == "AFLite removed no rows in this run, so every level was kept whole."
    assert np.isnan(table.loc["ambiguous", "kept_share"])
    assert table["share_of_removed"].isna().all()
    removed_all = cd.level_crosstab(["easy", "hard"], [False, False])
    assert "100 % of the easy rows and 100 % of the hard rows" in cd.crosstab_sentence(removed_all)
    with pytest.raises(ValueError, match="same rows"):
        cd.level_crosstab(["easy"], [True, False])


def test_level_counts_and_spurious_display():
    counts = cd.level_counts(_frame())
    assert counts["rows"].tolist() == [6, 4, 2]
    assert counts["share"].sum() == pytest.approx(1.0)
    paper = pd.DataFrame(
        {"a": [0.1], "b": [0.2], "a vs b": ["**"]},
        index=pd.MultiIndex.from_tuples([("easy", "word_overlap")], names=["level", "measure"]),
    )
    shown = cd.spurious_display(paper)
    assert shown.columns.tolist() == ["level", "measure", "a vs b", "a", "b"]
    assert shown["measure"].tolist() == ["word overlap"]


# -- the validation charts (LevelValidation tables) -------------------------------------------------------------
def _validation():
    from aflite_core import load_digits_dataset
    from aflite_core.dynamics.validation import validate_levels

    ds = load_digits_dataset()
    return validate_levels(
        ds.representation("pca"),
        ds.y,
        X_partial=ds.representation("mlp_small"),
        models=("logistic", "knn"),
        fractions=(0.2, 0.4),
        seeds=(0, 1),
    )


def test_level_accuracy_and_fraction_charts():
    val = _validation()
    fig = lc.level_accuracy_chart(val.level_accuracy)
    assert [t.name for t in fig.data] == ["logistic regression", "kNN", "logistic regression, partial input only"]
    assert [x.split(" (")[0] for x in fig.data[0].x] == ["easy", "ambiguous", "hard", "all"]
    assert fig.data[2].marker.pattern.shape == "/" and fig.data[0].error_y.array is not None
    frac = lc.fraction_chart(val.fractions)
    assert len(frac.data) == 9 and all(list(t.x) == [20.0, 40.0] for t in frac.data)  # 6 selections + 3 controls
    assert any("all training rows" in (a.text or "") for a in frac.layout.annotations)
    table = lc.fraction_table(val.fractions)
    assert list(table.columns) == ["selection (who defined it)", "20%", "40%", "100%"]
    assert "Data Maps: most variable (Swayamdipta et al.)" in set(table["selection (who defined it)"])
    sentence = lc.validation_sentence(val.level_accuracy, val.fractions)
    assert "easy to ambiguous to hard" in sentence and "fractions" in sentence


def test_feature_distributions_one_measure():
    fig = cd.feature_distributions(_frame(True), measure="aum")
    assert [a.text for a in fig.layout.annotations] == ["full input: aum", "partial input: aum"]
    assert len(fig.data) == 2 * len(cd.LEVELS) and not fig.layout.showlegend


def test_every_selection_of_the_fraction_experiment_has_a_label_and_a_style():
    """The controls (one-shot confidence levels) are drawn as named, styled lines, not as unnamed grey ones."""
    from aflite_app.charts.level_checks import SELECTION_LABELS, SELECTION_STYLE
    from aflite_core.dynamics import fractions

    names = set(fractions.SELECTIONS) | set(fractions.CONTROL_SELECTIONS)
    assert {"confidence_easy", "confidence_hard", "random"} <= names
    assert names <= set(SELECTION_LABELS)
    assert names <= set(SELECTION_STYLE)
