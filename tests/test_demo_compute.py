"""The guided demo's compute (aflite_app/compute/demo.py) and its row chart, without Streamlit."""

from __future__ import annotations

import numpy as np
import pytest

from aflite_app.charts.demo import row_rounds_chart
from aflite_app.compute import demo
from aflite_core.measures.artifact_statistics import tokenize


@pytest.fixture(scope="module")
def words():
    return demo.words_step()


def test_the_word_step_is_a_real_run_on_the_bundled_sample(words):
    result, data = words["result"], words["data"]
    assert data.n_rows == result.n_rows == 1496 and words["spec"].dataset == demo.DEMO_DATASET
    assert words["spec"].tau == demo.DEMO_TAU and result.n_removed > 0
    assert words["removed_share"] == pytest.approx(result.n_removed / 1496)
    shares = words["shares"]
    assert len(shares) >= 1 and set(shares.columns) >= {"token", "label", "removed_fraction", "z", "z_kept"}
    w = words["word"]  # the significant pair AFLite removed most of
    assert w["removed_fraction"] == shares["removed_fraction"].max()
    assert (w["token"], w["label"]) == ("eating", "contradiction")  # measured on the sample (its README)
    assert w["removed_fraction"] > 2 * words["removed_share"] and w["z_kept"] < words["z_critical"] < w["z"]
    assert words["result"].classes == ("entailment", "neutral", "contradiction")
    assert demo.words_step()["result"] is result or demo.words_step()["spec"] == words["spec"]  # cached run


def test_removed_rows_and_one_explained(words):
    data, result, stats = words["data"], words["result"], words["stats"]
    rows = demo.removed_rows(data, result, "eating", "contradiction")
    assert rows and all(not result.kept[i] for i in rows)
    assert all("eating" in tokenize(data.frame.at[i, "hypothesis"]) for i in rows)
    assert all(str(data.labels[i]) == "contradiction" for i in rows)
    rounds = [int(result.removed_round[i]) for i in rows]
    assert rounds == sorted(rounds, reverse=True)  # the longest story first
    why = demo.explain_row(data, result, rows[0], stats)
    assert why["removed_round"] == rounds[0] and why["rounds"] == list(range(1, rounds[0] + 1))
    assert len(why["scores"]) == rounds[0] and why["scores"][-1] >= why["tau"] == demo.DEMO_TAU
    assert why["hypothesis"] == data.frame.at[rows[0], "hypothesis"] and why["label"] == "contradiction"
    assert "eating" in set(why["words"]["token"])
    assert (why["words"]["z"].diff().dropna() <= 0).all()  # strongest first
    everyone = demo.removed_rows(data, result, "no-such-word", "neutral")  # no row has it: every removed row
    assert len(everyone) == result.n_removed


def test_the_row_chart_marks_tau_and_the_removal_round():
    fig = row_rounds_chart([1, 2, 3], np.array([0.8, 0.6, 0.9]), 0.75, 3)
    line, removed = fig.data
    assert list(line.y) == [0.8, 0.6, 0.9] and list(line.text) == ["0.80", "0.60", "0.90"]
    colours = list(line.marker.color)
    assert colours[1] != colours[0] == colours[2]  # below τ in another colour
    assert list(removed.x) == [3] and removed.name == "removed in round 3"
    assert fig.layout.meta == {"removed_round": 3, "tau": 0.75}
    assert any(s.y0 == 0.75 for s in fig.layout.shapes)


def test_the_circles_step_and_the_step_parameter():
    shown = demo.circles_step(0.75)
    row = shown["row"]
    assert row["dataset"] == shown["data"].name and row["linear_after"] < row["linear_before"]
    assert row["rbf_after"] > row["linear_after"]
    assert [demo.parse_step(x) for x in ("1", "3", "0", "99", "x", None, "2.4")] == [1, 3, 1, 3, 1, 1, 2]
