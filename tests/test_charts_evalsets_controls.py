"""The Evaluation sets page's controls (issue 27) and its label fixes (issue 29 item 8), without Streamlit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_charts_evalsets import _data

from aflite_app.charts import evalsets as ce
from aflite_app.charts import evalsets_controls as cc
from aflite_app.charts import evalsets_rankings as cr
from aflite_core.evalsets import adversary_study


@pytest.fixture(scope="module")
def study():
    reps, y = _data()
    tr, ev = slice(0, 500), slice(500, 700)
    return adversary_study(
        {k: X[tr] for k, X in reps.items()},
        y[tr],
        {k: X[ev] for k, X in reps.items()},
        y[ev],
        target_size=200,
        train_size=100,
        slice_size=50,
        seeds=(0, 1),
        adversaries=["weak", "mid", "strong"],
        evaluated=[("logistic", "weak"), ("knn", "strong"), ("logistic", "mid"), ("rbf", "strong")],
        random_state=0,
    )


def test_kendall_null_chart_draws_every_adversary_and_depth_beside_its_null(study):
    fig = cc.kendall_null_chart(study)
    null, as_run, equal = fig.data
    ctl = study.controls
    assert "random subsets" in null.name and as_run.name == "filtered rows (as run)"
    assert equal.name == "filtered rows (equal depth)"
    assert len(null.x) == len(ctl) == 6  # 3 adversaries × 2 depths
    np.testing.assert_allclose(null.x, ctl["kendall_null_median"])
    np.testing.assert_allclose(np.asarray(null.x) - np.asarray(null.error_x.arrayminus), ctl["kendall_null_low"])
    np.testing.assert_allclose(np.asarray(null.x) + np.asarray(null.error_x.array), ctl["kendall_null_high"])
    run = ctl[ctl["depth"] == "as run"]
    np.testing.assert_allclose(as_run.x, run["kendall"])
    ticks = list(fig.layout.yaxis.ticktext)
    assert ticks[0].startswith("<b>weak</b><br>as run,") and ticks[0].endswith("rows")
    assert fig.layout.showlegend is not False


def test_drop_null_chart_one_row_per_model_and_depth(study):
    fig = cc.drop_null_chart(study, "mid")
    rows = study.drop_controls[study.drop_controls["adversary"] == "mid"]
    assert len(fig.data[0].x) == len(rows) == 2 * 4
    np.testing.assert_allclose(fig.data[1].x, rows[rows["depth"] == "as run"]["accuracy_drop"])
    with pytest.raises(ValueError, match="no accuracy-drop controls"):
        cc.drop_null_chart(study, "nobody")


def test_controls_table_and_findings_follow_the_numbers(study):
    table = cc.controls_table(study)
    assert list(table["rows"]) == ["as run", "equal depth"] * 3
    assert table["Kendall, random subsets (5-95 %)"].str.contains(" to ").all()
    text = " ".join(cc.controls_findings(study))
    ctl = study.controls
    hits = int(((ctl["depth"] == "as run") & (ctl["kendall_p_vs_random"] < 0.05)).sum())
    assert f"as run, {hits} of 3 adversaries reshuffle the models more than random subsets" in text
    assert "1,000 random evaluation subsets" in text


def test_controls_refused_in_one_sentence_without_them(study):
    from dataclasses import replace

    empty = replace(study, controls=pd.DataFrame())
    with pytest.raises(ValueError, match="press Run study"):
        cc.kendall_null_chart(empty)


def test_sorted_lists_put_the_number_first_and_break_long_names(study):
    # issue 29 item 8: "logistic:embedding_hypoth" was cut off; the accuracy now comes first and a long name breaks
    renamed = replace_models(study, {"logistic:weak": "logistic:embedding_hypothesis_minilm"})
    fig = cr.ranking_list_chart(renamed, "mid")
    texts = [t.text[0] for t in fig.data]
    long = next(t for t in texts if "embedding" in t)
    assert long.startswith("<b>0.") and "logistic:<br>" in long
    assert all(len(line.replace("<b>", "").replace("</b>", "")) <= 30 for t in texts for line in t.split("<br>"))


def test_kendall_subtitle_says_tied_pairs_explicitly():
    corr = pd.DataFrame(
        {"kendall": [0.97], "discordant_pairs": [0], "concordant_pairs": [14], "tied_pairs": [1], "n_pairs": [15]},
        index=pd.Index(["pixels"], name="adversary"),
    )
    line = cr._kendall_line(corr, "pixels")
    assert "0 of 15 pairs swap order; 1 pair tied (a tie lowers the coefficient)" in line
    label = cr._kendall_label(corr, "pixels")
    assert "1 pair tied" in label and "a tie lowers the coefficient" in label


def test_heatmap_plus_minus_at_the_cells_font_size(study):
    fig = ce.accuracy_heatmap(study)
    text = fig.data[0].text
    assert all("<sub>" not in cell for row in text for cell in row)
    assert any("<br>±0." in cell for row in text for cell in row)
    assert fig.data[0].textfont.size >= 12


def replace_models(study, names: dict[str, str]):
    """The study with evaluated models renamed (long names as an upload's representations give them)."""
    from dataclasses import replace

    return replace(
        study,
        accuracy_matrix=study.accuracy_matrix.rename(index=names),
        rankings=study.rankings.assign(model=study.rankings["model"].replace(names)),
        accuracies=study.accuracies.assign(model=study.accuracies["model"].replace(names)),
        same_representation=study.same_representation.assign(model=study.same_representation["model"].replace(names)),
    )


def test_reading_says_tied_pairs_beside_the_swapped_ones(study):
    from aflite_core.evalsets import study_reading

    corr = study.rank_correlation.set_index("adversary")
    assert int(corr.loc["mid", "tied_pairs"]) == 1 and float(corr.loc["mid", "kendall"]) < 1
    text = " ".join(study_reading(study, "mid"))
    assert "of the 6 pairs of models swap order and 1 is tied (a tie lowers the coefficient too)" in text
