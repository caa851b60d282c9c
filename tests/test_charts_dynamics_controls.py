"""The Training dynamics page's validation controls (issue 27): the levels beside one-shot confidence and random."""

from __future__ import annotations

import pytest
from test_charts_dynamics import _validation

from aflite_app.charts import level_checks as lc
from aflite_app.compute import level_checks as compute


@pytest.fixture(scope="module")
def val():
    return _validation()  # digits, pca + partial mlp_small, logistic and kNN, 2 seeds


def test_level_controls_chart_one_bar_per_kind_with_the_seeds_spread(val):
    assert lc.level_control_pairs(val.level_controls) == [
        ("logistic", "full"),
        ("knn", "full"),
        ("logistic", "partial"),
    ]
    fig = lc.level_controls_chart(val.level_controls, "knn", "full")
    assert [t.name for t in fig.data[:4]] == [
        "training-dynamics levels (GMM)",
        "control: one-shot confidence, in-sample",
        "control: one-shot confidence, out-of-fold",
        "control: random levels",
    ]
    table = val.level_controls
    for trace, kind in zip(fig.data[:4], lc.LEVEL_KIND_STYLE):
        rows = table[(table["levels"] == kind) & (table["model"] == "knn")].set_index("level")
        assert list(trace.x) == ["easy", "ambiguous", "hard"]
        assert list(trace.y) == pytest.approx(rows.loc[list(trace.x), "accuracy"].tolist())
        assert list(trace.error_y.array) == pytest.approx(rows.loc[list(trace.x), "accuracy_std"].tolist())
    assert fig.data[-1].name.startswith("all rows: ") and fig.data[-1].line.dash == "dash"
    with pytest.raises(ValueError, match="no model 'mlp'"):
        lc.level_controls_chart(table, "mlp")


def test_gaps_table_and_findings_are_the_shown_numbers(val):
    gaps = lc.level_controls_gaps(val.level_controls)
    assert list(gaps["model"]) == ["logistic regression", "kNN", "logistic regression, partial input only"]
    t = val.level_controls
    sub = t[(t["levels"] == "confidence, out-of-fold") & (t["model"] == "logistic") & (t["input"] == "full")]
    acc = sub.set_index("level")["accuracy"]
    assert gaps.loc[0, "control: one-shot confidence, out-of-fold"].startswith(f"{acc['easy'] - acc['hard']:+.3f} ± ")
    findings = compute.dynamics_findings(val)
    text = " ".join(findings)
    assert "separate easy from hard more than one-shot out-of-fold confidence levels" in text
    assert f"{acc['easy'] - acc['hard']:+.3f}" in text  # the sentence is computed from the numbers shown
    assert "Random levels of the same sizes" in text


def test_fraction_table_cells_carry_the_seeds_spread(val):
    table = lc.fraction_table(val.fractions)
    cells = table["20%"].tolist()
    assert all(" ± " in c for c in cells if c)
    assert any(s.startswith("control: one-shot confidence") for s in table["selection (who defined it)"])
