"""Chart builders of the Evaluation sets page, without Streamlit, on small synthetic adversary studies."""

from __future__ import annotations

import numpy as np
import pytest

from aflite_app.charts import evalsets as ce
from aflite_app.charts import evalsets_rankings as cr
from aflite_app.charts.theme import KEPT, REMOVED
from aflite_core.engine.result import EVAL_CATEGORIES
from aflite_core.evalsets import NONE, adversary_study


def _data(n: int = 700, seed: int = 0):
    """Three representations of one 2-class problem: the label shows weakly, moderately, strongly."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    reps = {}
    for name, shift in (("weak", 0.4), ("mid", 1.0), ("strong", 2.0)):
        X = rng.normal(size=(n, 4))
        X[:, 0] += shift * (2 * y - 1)
        reps[name] = X
    return reps, np.where(y == 1, "yes", "no")


@pytest.fixture(scope="module")
def study():
    reps, y = _data()
    tr, ev = slice(0, 500), slice(500, 700)
    rng = np.random.default_rng(1)
    gold = y[ev]
    other = {"yes": "no", "no": "yes"}
    ann = [[g if rng.random() < 0.8 else other[g] for _ in range(5)] for g in gold]
    ann[0] = None  # a row without annotator labels
    src = np.where(rng.random(len(gold)) < 0.8, "random_subset", "chaosnli")
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
        annotator_labels=ann,
        annotator_source=src,
        random_state=0,
    )


def _kendall_titles(fig) -> list[str]:
    return [a.text for a in fig.layout.annotations if "Kendall" in (a.text or "")]


def test_category_bars_sum_to_100_per_adversary_in_strength_order(study):
    fig = ce.category_chart(study, strength={"weak": 0.6, "mid": 0.7, "strong": 0.9})
    assert [t.name for t in fig.data] == list(EVAL_CATEGORIES)
    assert fig.layout.barmode == "stack"
    for t in fig.data:
        assert list(t.x) == ["weak", "mid", "strong"]
    totals = np.sum([np.asarray(t.y, dtype=float) for t in fig.data], axis=0)
    np.testing.assert_allclose(totals, 100.0, atol=1e-6)
    colours = {t.name: t.marker.color for t in fig.data}
    assert colours["selected"] == KEPT and colours["removed in round 1"] == REMOVED
    assert "strength 0.90" in fig.layout.xaxis.ticktext[-1]
    assert "%" in fig.layout.yaxis.title.text and "adversary" in fig.layout.xaxis.title.text
    # the hover carries the row counts
    assert "rows (mean)" in fig.data[0].hovertemplate
    counts = np.sum([np.asarray(t.customdata[:, 0], dtype=float) for t in fig.data], axis=0)
    np.testing.assert_allclose(counts, study.params["n_eval"])


def test_accuracy_heatmap_has_a_column_per_adversary_plus_none(study):
    """Transposed for a phone (issue 29): a row per evaluated model, a column per evaluation set."""
    fig = ce.accuracy_heatmap(study)
    heat = fig.data[0]
    z = np.asarray(heat.z, dtype=float)
    assert z.shape == (len(study.accuracy_matrix), len(study.adversaries) + 1)
    assert list(heat.x) == [ce.NONE_LABEL, "weak", "mid", "strong"]
    assert list(heat.y) == ce.model_order(study)
    # the first column is the unfiltered accuracy, in the heatmap's row order
    expected = study.accuracy_matrix.loc[list(heat.y), NONE].to_numpy(float)
    np.testing.assert_allclose(z[:, 0], expected)
    # every model that shares an adversary's representation gets an outlined cell
    assert len(fig.layout.shapes) == len(study.same_representation)
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert fig.layout.yaxis.autorange == "reversed"


def test_accuracy_lines_one_line_per_adversary_and_chance(study):
    fig = ce.accuracy_lines(study)
    assert [t.name for t in fig.data] == [ce.NONE_LABEL, "filtered by weak", "filtered by mid", "filtered by strong"]
    for t in fig.data:
        assert list(t.x) == ce.model_order(study)
    chance = [s for s in fig.layout.shapes if s.line.dash == "dash"]
    assert len(chance) == 1 and chance[0].y0 == pytest.approx(0.5)
    assert "accuracy" in fig.layout.yaxis.title.text


def test_ranking_chart_is_the_sorted_lists_with_kendall_as_our_addition(study):
    fig = cr.ranking_chart(study)
    cols = [NONE, *study.adversaries]
    assert list(fig.layout.xaxis.ticktext) == [ce.NONE_LABEL, *study.adversaries]
    titles = _kendall_titles(fig)
    assert len(titles) == len(study.adversaries)  # one under every adversary's column, none under the full set
    corr = study.rank_correlation.set_index("adversary")
    for a, title in zip(study.adversaries, titles):
        assert "(ours)" in title and f"{corr.loc[a, 'kendall']:.2f}" in title and "τ" not in title
        assert f"{int(corr.loc[a, 'discordant_pairs'])} of {int(corr.loc[a, 'n_pairs'])} pairs" in title
    M = study.accuracy_matrix
    assert len(fig.data) == len(M)  # one line per model across the columns
    for t in fig.data:  # positions: 0 = worst, per column, consistent with the accuracies
        for j, c in enumerate(cols):
            worse = (M[c] < M.loc[t.name, c]).sum()
            assert t.y[j] >= worse
    lists = cr.ranking_lists(study)
    assert list(lists.columns) == [ce.NONE_LABEL, *study.adversaries] and len(lists) == len(M)
    first = lists[ce.NONE_LABEL].iloc[0]
    assert first.startswith(M[NONE].idxmin())
    # one sorted list per evaluation set (the page's columns): worst at the top, Kendall in the title
    lst = cr.ranking_list_chart(study, "strong")
    ys = {t.name: t.y[0] for t in lst.data}
    acc = M["strong"]
    assert all((ys[a] < ys[b]) <= (acc[a] <= acc[b]) for a in ys for b in ys)
    assert "Kendall's coefficient" in lst.layout.title.text and "(ours)" in lst.layout.title.text
    assert "compare" in cr.ranking_list_chart(study, NONE).layout.title.text
    with pytest.raises(ValueError, match="no evaluation set"):
        cr.ranking_list_chart(study, "medium")
    # the model that shares an adversary's representation is ringed in that column (no backbones here)
    weak = next(t for t in fig.data if t.name == "logistic:weak")
    assert weak.marker.line.width[cols.index("weak")] == 3


def test_strength_chart_and_table():
    reps, y = _data()
    tr, ev = slice(0, 500), slice(500, 700)
    st = adversary_study(
        {k: X[tr] for k, X in reps.items()},
        y[tr],
        {k: X[ev] for k, X in reps.items()},
        y[ev],
        target_size=200,
        train_size=100,
        slice_size=50,
        seeds=(0,),
        evaluated=[("logistic", "weak"), ("logistic", "mid"), ("logistic", "strong"), ("knn", "strong")],
        backbones={"weak": "logistic:weak", "mid": "logistic:mid", "strong": "logistic:strong"},
    )
    fig = cr.strength_chart(st)
    pts = fig.data[0]
    assert list(pts.text) == list(st.strength["adversary"])
    np.testing.assert_allclose(pts.x, st.strength["accuracy"])
    np.testing.assert_allclose(np.asarray(pts.y, dtype=float), 100 * st.strength["round1_removed_share"])
    assert pts.error_x.array is not None and "backbone accuracy" in fig.layout.xaxis.title.text
    table = cr.strength_table(st)
    assert list(table["backbone"]) == ["logistic:weak", "logistic:mid", "logistic:strong"]
    rel = st.same_representation
    assert set(rel["relation"]) == {"shared backbone", "same representation"}
    # the backbone that is itself the same-Φ model appears once, as the backbone
    assert list(rel[rel["relation"] == "same representation"]["model"]) == ["knn:strong"]
    same = cr.same_representation_chart(st)
    assert any("backbone" in y for y in same.data[0].y) and any("upper bound" in y for y in same.data[0].y)
    # without backbones there is nothing to plot, and the chart says so
    assert "No adversary has a backbone" in cr.strength_chart(_no_backbone_study()).layout.annotations[0].text


def _no_backbone_study():
    reps, y = _data(400)
    return adversary_study(
        {"weak": reps["weak"][:300]},
        y[:300],
        {"weak": reps["weak"][300:]},
        y[300:],
        target_size=150,
        train_size=60,
        slice_size=30,
        seeds=(0,),
        evaluated=[("logistic", "weak")],
    )


def test_accuracy_charts_carry_binomial_intervals(study):
    heat = ce.accuracy_heatmap(study).data[0]
    assert "95 % interval" in heat.hovertemplate and "±" in heat.text[1][0]
    lines = ce.accuracy_lines(study)
    assert lines.data[1].error_y.array is not None and "95 % interval" in lines.data[1].hovertemplate


def test_same_representation_chart_and_table(study):
    fig = cr.same_representation_chart(study)
    same = study.same_representation
    assert len(fig.data) == 3
    assert len(fig.data[0].y) == len(same)
    table = cr.same_representation_table(study)
    assert len(table) == len(same) and "places fallen" in table.columns
    assert fig.layout.xaxis.title.text.startswith("places fallen")
    assert fig.layout.xaxis2.title.text.startswith("accuracy lost")


def test_agreement_bars_per_adversary_and_category(study):
    fig = ce.agreement_chart(study)
    assert fig.data[0].x[0] == ce.NONE_LABEL
    assert [t.name for t in fig.data[1:]] == list(EVAL_CATEGORIES)
    for t in fig.data[1:]:
        assert list(t.x) == list(study.adversaries)
        y = np.asarray(t.y, dtype=float)
        assert np.all((y[np.isfinite(y)] >= 0) & (y[np.isfinite(y)] <= 1))
    assert fig.data[1].error_y.visible  # two seeds: spread shown
    assert fig.layout.barmode == "group"
    assert "agreement" in fig.layout.yaxis.title.text
    info = study.agreement.info
    assert info["n_used"] + info["n_excluded_by_source"] + info["n_without_labels"] == info["n_eval"]


def test_agreement_chart_refuses_a_study_without_labels():
    reps, y = _data(400)
    st = adversary_study(
        {"weak": reps["weak"][:300]},
        y[:300],
        {"weak": reps["weak"][300:]},
        y[300:],
        target_size=150,
        train_size=60,
        slice_size=30,
        seeds=(0,),
        evaluated=[("logistic", "weak")],
    )
    with pytest.raises(ValueError, match="no annotator labels"):
        ce.agreement_chart(st)
    # one adversary, one model: every chart still builds
    assert len(_kendall_titles(cr.ranking_chart(st))) == 1
    assert "(ours): –" in _kendall_titles(cr.ranking_chart(st))[0]  # one model: no ranking to correlate
    assert cr.strength_chart(st).layout.annotations
    assert cr.same_representation_chart(st).data


def test_charts_survive_an_adversary_that_selects_nothing():
    reps, y = _data(400)
    tr, ev = slice(0, 300), slice(300, 400)
    st = adversary_study(
        {k: X[tr] for k, X in reps.items()},
        y[tr],
        {k: X[ev] for k, X in reps.items()},
        y[ev],
        target_size=150,
        train_size=60,
        slice_size=30,
        seeds=(0,),
        tau=0.0,
        evaluated=[("logistic", "weak"), ("knn", "strong")],
    )
    assert (st.category_table["selected"] == 0).all()
    heat = ce.accuracy_heatmap(st).data[0]
    assert "no rows" in heat.text[1]
    fig = ce.category_chart(st)
    totals = np.sum([np.asarray(t.y, dtype=float) for t in fig.data], axis=0)
    np.testing.assert_allclose(totals, 100.0)
    cr.ranking_chart(st)
    cr.ranking_lists(st)
    ce.accuracy_lines(st)
    cr.same_representation_chart(st)
    cr.strength_chart(st)


def _many_adversaries(n_adv: int = 6):
    """A one-seed study with ``n_adv`` adversaries (more evaluation sets than one panel of the heatmap holds)."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    reps = {}
    for i in range(n_adv):
        X = rng.normal(size=(300, 3))
        X[:, 0] += (0.3 + 0.3 * i) * (2 * y - 1)
        reps[f"rep{i}"] = X
    labels = np.where(y == 1, "yes", "no")
    return adversary_study(
        {k: X[:200] for k, X in reps.items()},
        labels[:200],
        {k: X[200:] for k, X in reps.items()},
        labels[200:],
        target_size=100,
        train_size=40,
        slice_size=20,
        seeds=(0,),
        adversaries=list(reps),
        evaluated=[("logistic", "rep0"), ("knn", "rep1")],
        random_state=0,
    )


def test_heatmap_reads_on_a_phone(study):
    """Issue 29: at 390 px the cells' '±0.05' was too small and the model names cut. The cells keep a readable
    font, every name is a tick of its own in short lines, no colour bar takes the width, and the figure grows with
    the number of models (a fixed height squeezed many models into thin rows)."""
    fig = ce.accuracy_heatmap(study)
    heat = fig.data[0]
    assert heat.textfont.size >= 11 and fig.layout.xaxis.tickfont.size >= 11 and fig.layout.yaxis.tickfont.size >= 11
    assert heat.showscale is False
    for axis, names in ((fig.layout.xaxis, heat.x), (fig.layout.yaxis, heat.y)):
        assert axis.tickmode == "array" and list(axis.tickvals) == list(names) and len(axis.ticktext) == len(names)
        assert all(len(line) <= ce.HEATMAP_CUT_CHARS for t in axis.ticktext for line in t.split("<br>"))
    assert fig.layout.xaxis.ticktext[0] == ce.HEATMAP_NONE_TICK == "full set"  # short, on one line
    assert "full set" in fig.layout.xaxis.title.text
    assert len(heat.x) <= ce.HEATMAP_MAX_COLUMNS
    n_models = len(heat.y)
    assert fig.layout.height >= ce.HEATMAP_ROW_PX * n_models + fig.layout.margin.t + fig.layout.margin.b
    fewer = replace_models_subset(study, ce.model_order(study)[:2])
    assert ce.accuracy_heatmap(fewer).layout.height == fig.layout.height - ce.HEATMAP_ROW_PX * (n_models - 2)
    # the axis titles are short lines: none is wider than a phone's plot area
    for title in (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text):
        assert all(len(line) <= 34 for line in title.split("<br>")), title


def replace_models_subset(study, models: list[str]):
    """The study with only ``models`` evaluated."""
    from dataclasses import replace

    return replace(study, accuracy_matrix=study.accuracy_matrix.loc[models])


def test_heatmap_cuts_long_names_and_lists_them_in_a_key(study):
    from test_charts_evalsets_controls import replace_models

    long = "logistic:embedding_hypothesis_minilm_l6"
    fig = ce.accuracy_heatmap(replace_models(study, {"logistic:weak": long}))
    heat = fig.data[0]
    assert long in list(heat.y)  # the hover (and the category) keep the full name
    shown = fig.layout.yaxis.ticktext[list(heat.y).index(long)]
    assert shown.startswith("logistic:<br>embedding_") and shown.endswith("…") and len(shown.split("<br>")) == 2
    key = ce.heatmap_name_key(replace_models(study, {"logistic:weak": long}))
    assert key == {shown.replace("<br>", " "): long}
    assert ce.heatmap_name_key(study) == {}  # short names: no key
    # a tag in a name is shown as typed
    tagged = ce.accuracy_heatmap(replace_models(study, {"logistic:weak": "<b>x</b>"}))
    assert "&lt;b>x&lt;/b>" in tagged.layout.yaxis.ticktext


def test_heatmap_wraps_many_evaluation_sets_into_panels():
    assert ce.heatmap_panels(1) == [1] and ce.heatmap_panels(5) == [5]
    assert ce.heatmap_panels(6) == [3, 3] and ce.heatmap_panels(7) == [4, 3] and ce.heatmap_panels(11) == [4, 4, 3]
    st = _many_adversaries(6)  # 7 evaluation sets: two panels of 4 and 3 columns
    fig = ce.accuracy_heatmap(st)
    heats = [t for t in fig.data if t.type == "heatmap"]
    assert [len(t.x) for t in heats] == [4, 3]
    assert [x for t in heats for x in t.x] == [ce.NONE_LABEL, *[f"rep{i}" for i in range(6)]]
    assert all(list(t.y) == ce.model_order(st) for t in heats)
    assert {t.yaxis for t in heats} == {"y", "y2"}
    # the outline of each backbone cell sits on its own panel's axes
    refs = {(s.xref, s.yref) for s in fig.layout.shapes}
    assert refs <= {("x", "y"), ("x2", "y2")} and len(fig.layout.shapes) == len(st.same_representation)
    # two panels are taller than one of the same models, by one panel and its axis band
    one = ce.accuracy_heatmap(_many_adversaries(4))
    assert fig.layout.height - one.layout.height == ce.HEATMAP_ROW_PX * len(heats[0].y) + ce.HEATMAP_AXIS_PX
