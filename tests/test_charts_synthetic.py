"""Chart builders of the Synthetic circles page, without Streamlit."""

from __future__ import annotations

import numpy as np
import pytest

from aflite_app.charts import synthetic as charts
from aflite_app.charts import synthetic_studies as studies
from aflite_app.charts.theme import KEPT, REMOVED, class_colour_map
from aflite_core import aflite
from aflite_core.data.planted_bias import make_biased_circles, paper_circles
from aflite_core.engine.tau_path import narrow_to_tau
from aflite_core.experiments.figure2 import synthetic_experiment


@pytest.fixture(scope="module")
def exp():
    data = paper_circles(400, random_state=0)
    return synthetic_experiment(
        data, target_size=0.1, train_size=0.05, slice_size=20, tau=0.75, n_partitions=16, n_splits=2, random_state=0
    )


@pytest.fixture(scope="module")
def grid(exp):
    return charts.circles_grid(exp.datasets, [exp.results[d.name] for d in exp.datasets], exp.table)


def _ids(trace) -> np.ndarray:
    cd = trace.customdata
    if cd is None:
        return np.array([], dtype=int)
    arr = np.asarray(cd)
    return (arr[:, 0] if arr.ndim == 2 else arr).astype(int)


def _panel(trace) -> tuple[str, str]:
    return trace.xaxis, trace.yaxis


def test_grid_has_two_rows_of_panels_one_column_per_dataset(exp, grid):
    axes = [k for k in grid.layout.to_plotly_json() if k.startswith("xaxis")]
    assert len(axes) == 8  # 4 datasets × (original, after AFLite)
    assert len({_panel(t) for t in grid.data}) == 8
    # axis titles with units: bottom row and first column only
    assert grid.layout.xaxis5.title.text == "ring coordinate 1 (unitless)"
    assert grid.layout.yaxis.title.text == "ring coordinate 2 (unitless)"
    assert grid.layout.yaxis5.title.text == "ring coordinate 2 (unitless)"
    # equal aspect so the rings look round
    assert grid.layout.yaxis.scaleanchor == "x" and grid.layout.yaxis6.scaleanchor == "x6"


def test_grid_traces_per_class_and_planted_kind_with_symbols(exp, grid):
    assert len(grid.data) == 8 * 2 * 3  # panels × classes × (unbiased, biased, flipped)
    colours = class_colour_map(charts.CLASS_NAMES)
    for t in grid.data:
        cls, kind = t.name.split(" · ")
        code = charts.CLASS_NAMES.index(cls)
        k = next(k for k, label in charts.KIND_LABELS.items() if label == kind)
        assert t.marker.symbol == charts.SYMBOLS[k]
        assert t.marker.color == colours[cls]
    assert charts.SYMBOLS["unbiased"] != charts.SYMBOLS["biased"] != charts.SYMBOLS["flipped"]
    # legend entries once (first panel), not 8 times
    assert sum(bool(t.showlegend) for t in grid.data) == 6
    # every trace holds exactly its class × kind rows, original panel = all rows, after panel = kept rows
    for i, d in enumerate(exp.datasets):
        kept = exp.results[d.name].kept
        kind = charts.kind_of_rows(d)
        for row, mask in ((0, np.ones(d.n_samples, bool)), (1, kept)):
            axis = f"x{row * 4 + i + 1}" if row * 4 + i else "x"
            traces = [t for t in grid.data if t.xaxis == axis]
            assert sum(len(_ids(t)) for t in traces) == int(mask.sum())
            for t in traces:
                cls, label = t.name.split(" · ")
                code = charts.CLASS_NAMES.index(cls)
                k = next(k for k, lab in charts.KIND_LABELS.items() if lab == label)
                expected = np.flatnonzero(mask & (d.y == code) & (kind == k))
                assert sorted(_ids(t).tolist()) == expected.tolist()
                np.testing.assert_allclose(np.asarray(t.x, dtype=float), d.X[expected, 0])


def test_flipped_rows_only_in_the_flipped_dataset(exp, grid):
    flipped = [t for t in grid.data if t.name.endswith("flipped label") and len(_ids(t))]
    assert flipped and {t.xaxis for t in flipped} <= {"x", "x5"}  # first column only
    assert sum(len(_ids(t)) for t in flipped if t.xaxis == "x") == int(exp.datasets[0].is_flipped.sum())


def test_grid_titles_carry_accuracies_and_biased_counts(exp, grid):
    texts = [a.text for a in grid.layout.annotations]
    for _, row in exp.table.iterrows():
        top = next(t for t in texts if row["dataset"] in t)
        assert f"linear {row['linear_before']:.3f}" in top and f"RBF-SVM {row['rbf_before']:.3f}" in top
        assert f"{int(row['biased_before']):,} biased" in top
    bottoms = [t for t in texts if t.startswith("<b>after AFLite</b>")]
    assert len(bottoms) == 4
    for text, (_, row) in zip(bottoms, exp.table.iterrows()):
        assert f"linear {row['linear_before']:.3f} → {row['linear_after']:.3f}" in text
        assert f"RBF-SVM {row['rbf_before']:.3f} → {row['rbf_after']:.3f}" in text
        assert f"biased {int(row['biased_before']):,} → {int(row['biased_after']):,}" in text
        assert f"{int(row['n_after']):,} rows" in text
    assert "flipped" in bottoms[0] and "flipped" not in bottoms[1]


def test_grid_rejects_mismatched_inputs(exp):
    with pytest.raises(ValueError, match="one kept mask"):
        charts.circles_grid(exp.datasets, [], exp.table)
    with pytest.raises(ValueError, match="must be a bool array"):  # never a silent "everything kept"
        charts.circles_grid(exp.datasets, [object()] * 4, exp.table)


def test_grid_with_a_single_dataset_and_nothing_removed():
    d = make_biased_circles(60, separation=1.0, random_state=0)
    import pandas as pd

    row = {
        "dataset": d.name,
        "n_before": 60,
        "n_after": 60,
        "linear_before": 0.9,
        "linear_after": 0.9,
        "rbf_before": 0.95,
        "rbf_after": float("nan"),
        "biased_before": 45,
        "biased_after": 45,
        "flipped_before": 0,
        "flipped_removed_share": float("nan"),
    }
    fig = charts.circles_grid([d], [np.ones(60, bool)], pd.DataFrame([row]))
    assert len(fig.data) == 2 * 2 * 3
    assert any("RBF-SVM 0.950 → –" in a.text for a in fig.layout.annotations)


@pytest.mark.parametrize("rnd", [1, 2, 4])
def test_round_stepper_highlights_exactly_that_rounds_removals(exp, rnd):
    d = exp.datasets[0]
    res = exp.results[d.name]
    assert res.n_rounds >= 4
    fig = charts.round_stepper(d, res, rnd)
    scatter = {t.name: t for t in fig.data if t.type == "scatter"}
    now = scatter[f"removed in round {rnd}"]
    assert sorted(_ids(now).tolist()) == np.flatnonzero(res.removed_round == rnd).tolist()
    assert now.marker.color == REMOVED
    earlier = next(t for t in fig.data if t.type == "scatter" and t.legendgroup == "earlier")
    assert earlier.marker.color == charts.EARLIER_COLOUR
    assert (
        sorted(_ids(earlier).tolist()) == np.flatnonzero((res.removed_round >= 1) & (res.removed_round < rnd)).tolist()
    )
    still = [t for t in fig.data if t.type == "scatter" and t.legendgroup.startswith("still-")]
    n_still = int(((res.removed_round < 1) | (res.removed_round > rnd)).sum())
    assert sum(len(_ids(t)) for t in still) == n_still
    # symbols follow the planted truth
    kind = charts.kind_of_rows(d)
    assert list(now.marker.symbol) == [charts.SYMBOLS[k] for k in kind[_ids(now)]]
    # histogram: the rows scored in that round; removed ones in the removed colour, the rest in the kept colour
    hists = [t for t in fig.data if t.type == "histogram"]
    scored = ~np.isnan(res.scores[rnd - 1])
    assert sum(len(t.x) for t in hists) == int(scored.sum())
    removed_hist = sum(len(t.x) for t in hists if t.marker.color == REMOVED)
    assert removed_hist == int((res.removed_round == rnd).sum())
    assert {t.marker.color for t in hists} == {KEPT, REMOVED}
    assert f"Round {rnd} of {res.n_rounds}" in fig.layout.annotations[0].text
    assert fig.layout.xaxis2.title.text.startswith("p(i) = share of correct")
    assert fig.layout.yaxis2.title.text == "rows"


def test_round_stepper_figures_differ_between_rounds(exp):
    d = exp.datasets[1]
    res = exp.results[d.name]
    a = charts.round_stepper(d, res, 1)
    b = charts.round_stepper(d, res, 2)

    def now(fig):
        return next(t for t in fig.data if t.type == "scatter" and t.legendgroup == "now")

    assert _ids(now(a)).tolist() != _ids(now(b)).tolist()
    assert a.to_json() != b.to_json()


def test_round_stepper_rejects_bad_rounds_and_greedy_results(exp):
    d = exp.datasets[0]
    res = exp.results[d.name]
    with pytest.raises(ValueError, match="Round must be between"):
        charts.round_stepper(d, res, res.n_rounds + 1)
    small = make_biased_circles(40, separation=1.0, random_state=0)
    greedy = aflite(
        small.X, small.y, target_size=36, train_size=10, tau=0.5, n_partitions=4, strategy="greedy", random_state=0
    )
    with pytest.raises(ValueError, match="greedy"):
        charts.round_stepper(small, greedy, 1)


def test_summary_frame_is_readable(exp):
    frame = charts.summary_frame(exp.table)
    assert len(frame) == 4
    assert {"dataset", "linear acc.", "RBF-SVM acc.", "biased rows", "flipped rows removed"} <= set(frame.columns)
    assert "→" in frame.loc[0, "linear acc."]
    assert frame.loc[1, "flipped rows removed"] == "–"


def test_kind_of_rows_marks_flipped_as_a_subset_of_biased():
    d = make_biased_circles(200, flip_fraction=0.2, random_state=1)
    kind = charts.kind_of_rows(d)
    assert (kind == "flipped").sum() == d.is_flipped.sum()
    assert (kind == "biased").sum() == (d.is_biased & ~d.is_flipped).sum()
    assert (kind == "unbiased").sum() == (~d.is_biased).sum()


# -- one column per dataset, the legend, accuracy over rounds, OOD and AFOptimum charts ---------------------------
def test_circles_column_is_one_dataset_in_two_panels(exp):
    d = exp.datasets[0]
    fig = charts.circles_column(d, exp.results[d.name], exp.table.iloc[0])
    assert {t.xaxis for t in fig.data} == {"x", "x2"}
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0].startswith("<b>separation 1 (flipped labels)</b>") and "after AFLite" in titles[1]
    assert not fig.layout.showlegend
    kept = np.concatenate([_ids(t) for t in fig.data if t.xaxis == "x2"])
    assert sorted(kept.tolist()) == np.flatnonzero(exp.results[d.name].kept).tolist()
    with pytest.raises(ValueError, match="kept mask"):
        charts.circles_column(d, np.ones(3, bool), exp.table.iloc[0])


def test_circles_legend_has_every_class_and_kind():
    fig = charts.circles_legend()
    assert len(fig.data) == 2 * len(charts.KINDS)
    assert {t.marker.symbol for t in fig.data} == set(charts.SYMBOLS.values())


def test_earlier_removals_are_drawn_visibly(exp):
    d = exp.datasets[1]
    res = exp.results[d.name]
    fig = charts.round_stepper(d, res, min(3, res.n_rounds))
    earlier = next(t for t in fig.data if t.legendgroup == "earlier")
    assert earlier.marker.opacity >= 0.5 and earlier.marker.color == charts.EARLIER_COLOUR


def test_accuracy_rounds_chart():
    from aflite_core.experiments.figure2 import accuracy_over_rounds

    data = make_biased_circles(400, random_state=0)
    res = aflite(data.X, data.y, target_size=100, train_size=40, slice_size=40, random_state=0)
    curve = accuracy_over_rounds(data, res, n_splits=3)
    fig = studies.accuracy_rounds_chart(curve, 2)
    names = [t.name for t in fig.data]
    assert names == ["chance ± 2 standard errors", "linear model", "RBF SVM"]
    assert list(fig.data[1].x) == list(range(res.n_rounds + 1))
    assert any(s.type == "line" and s.x0 == 2 for s in fig.layout.shapes)


def test_ood_chart_one_panel_per_model_one_line_per_training_set():
    from aflite_core.experiments.ood import ood_experiment

    res = ood_experiment(paper_circles(400, separations=(1.0, 0.4)), seeds=(0, 1), n_test=300)
    for dataset in (None, "separation 0.4"):
        fig = studies.ood_chart(res.table, dataset)
        assert len(fig.data) == 2 * 3
        assert {t.name for t in fig.data} == set(studies.TRAIN_SET_LABELS.values())
        assert list(fig.data[0].x) == ["in distribution", "bias removed", "bias flipped"]
        assert [a.text for a in fig.layout.annotations if a.text][:2] == [
            studies.MODEL_LABELS["logistic"],
            studies.MODEL_LABELS["rbf"],
        ]
    one = studies.ood_chart(res.table, model="rbf")
    assert len(one.data) == 3 and next(a.text for a in one.layout.annotations if a.text) == studies.MODEL_LABELS["rbf"]
    text = studies.ood_loss_text(res)
    assert text.startswith("linear model (logistic regression): all training rows +")
    assert "RBF-kernel SVM: " in text


def test_optimum_chart_and_text():
    from aflite_core.experiments.optimum import compare_with_optimum

    table = compare_with_optimum(n_seeds=3).table
    fig = studies.optimum_chart(table)
    names = [t.name for t in fig.data]
    assert names[0] == "all rows (before filtering)" and names[-1] == "AFOptimum (exhaustive search)"
    assert len(names) == 5 and list(fig.data[-1].y) == list(dict.fromkeys(table["case"]))
    sample = next(t for t in fig.data if "C ·" in t.name)
    assert all("(" in t and "-" in t for t in sample.text)  # mean (best-worst seed)
    assert "Closest on average" in studies.optimum_text(table)


def test_round_stepper_panels_separately(exp):
    d = exp.datasets[0]
    res = exp.results[d.name]
    both = charts.round_stepper(d, res, 2)
    map_only = charts.round_stepper(d, res, 2, panel="map")
    hist_only = charts.round_stepper(d, res, 2, panel="histogram")
    assert {t.type for t in map_only.data} == {"scatter"} and {t.type for t in hist_only.data} == {"histogram"}
    assert len(map_only.data) + len(hist_only.data) == len(both.data)
    assert map_only.layout.annotations[0].text.startswith("Round 2 of")
    assert hist_only.layout.annotations[0].text.startswith("Predictability in round 2")
    with pytest.raises(ValueError, match="panel"):
        charts.round_stepper(d, res, 2, panel="left")


# -- what a τ/k change redraws: WebGL above WEBGL_POINTS, the original panel apart, the run's τ/k in layout.meta -----
@pytest.fixture(scope="module")
def big():
    """One dataset above WEBGL_POINTS, filtered (the page's default size)."""
    d = paper_circles(2000, separations=(1.0,), random_state=0)
    exp = synthetic_experiment(
        d, target_size=0.1, train_size=0.05, slice_size=100, tau=0.75, n_partitions=16, n_splits=2, random_state=0
    )
    return exp.datasets[0], exp.results[exp.datasets[0].name], exp.table.iloc[0]


def _points(fig) -> int:
    return sum(len(_ids(t)) for t in fig.data)


def test_webgl_above_the_threshold_with_every_trace_and_point(big):
    d, res, row = big
    assert d.n_samples > charts.WEBGL_POINTS
    svg = charts.circles_column(d, res, row, webgl=False)
    auto = charts.circles_column(d, res, row)
    assert {t.type for t in svg.data} == {"scatter"} and {t.type for t in auto.data} == {"scattergl"}
    # the same traces (class × kind per panel), points, symbols and colours: only the renderer differs
    assert [(t.name, t.xaxis, t.marker.symbol, t.marker.color) for t in auto.data] == [
        (t.name, t.xaxis, t.marker.symbol, t.marker.color) for t in svg.data
    ]
    for a, b in zip(auto.data, svg.data):
        np.testing.assert_array_equal(_ids(a), _ids(b))
    assert _points(auto) == d.n_samples + int(res.kept.sum())
    stepper = charts.round_stepper(d, res, 2, panel="map")
    assert {t.type for t in stepper.data} == {"scattergl"} and _points(stepper) == d.n_samples
    assert {t.legendgroup for t in stepper.data} >= {"earlier", "now", "still-0", "still-1"}
    assert {t.type for t in charts.round_stepper(d, res, 2, panel="map", webgl=False).data} == {"scatter"}


def test_small_figures_stay_svg(exp):
    d = exp.datasets[0]
    fig = charts.circles_column(d, exp.results[d.name], exp.table.iloc[0], part="original")
    assert d.n_samples <= charts.WEBGL_POINTS and {t.type for t in fig.data} == {"scatter"}
    assert {t.type for t in charts.circles_column(d, exp.results[d.name], exp.table.iloc[0], webgl=True).data} == {
        "scattergl"
    }


def test_original_and_after_panels_apart(big):
    d, res, row = big
    both = charts.circles_column(d, res, row)
    original = charts.circles_column(d, res, row, part="original")
    after = charts.circles_column(d, res, row, part="after", webgl=False)
    assert {t.xaxis for t in original.data} == {t.xaxis for t in after.data} == {"x"}
    assert _points(original) == d.n_samples and _points(after) == int(res.kept.sum())
    assert sorted(np.concatenate([_ids(t) for t in after.data]).tolist()) == np.flatnonzero(res.kept).tolist()
    assert [a.text for a in original.layout.annotations] == [both.layout.annotations[0].text]
    assert [a.text for a in after.layout.annotations] == [both.layout.annotations[1].text]
    assert after.layout.xaxis.title.text == charts._AXIS.format(1) and not original.layout.xaxis.showticklabels
    with pytest.raises(ValueError, match="part"):
        charts.circles_column(d, res, row, part="top")


def test_the_original_panel_does_not_depend_on_the_run(big):
    """A τ/k change sends the browser the same original figure (byte for byte), so it is not drawn again."""
    d, res, row = big
    other = aflite(d.X, d.y, target_size=200, train_size=100, slice_size=50, tau=0.6, n_partitions=16, random_state=0)
    changed = row.copy()
    changed[["n_after", "linear_after", "rbf_after", "biased_after"]] = [1, 0.1, 0.2, 3]
    a = charts.circles_column(d, res, row, part="original").to_json()
    b = charts.circles_column(d, other, changed, part="original").to_json()
    assert a == b and '"meta"' not in a


def _run_args(res) -> dict:
    keys = ("target_size", "train_size", "slice_size", "n_partitions", "tau")
    return {**{k: res.params[k] for k in keys}, "random_state": res.params["seed"]}


def test_run_figures_carry_tau_and_k(big):
    d, res, row = big
    expected = {"tau": 0.75, "k": 100}
    assert charts.run_meta(res) == expected and charts.run_meta(res.kept) is None
    assert charts.circles_column(d, res, row, part="both").layout.meta == expected
    for panel in ("both", "histogram"):
        assert charts.round_stepper(d, res, 1, panel=panel).layout.meta == expected
    # the map shows round 1's rows only: another τ with the same first round gives the very same figure
    other = aflite(d.X, d.y, **{**_run_args(res), "tau": 0.74})
    assert np.array_equal(np.asarray(other.removed_round) == 1, np.asarray(res.removed_round) == 1)
    assert other.n_rounds == res.n_rounds
    a, b = (charts.round_stepper(d, r, 1, panel="map").to_json() for r in (res, other))
    assert a == b and '"meta"' not in a


def test_an_after_panel_is_tagged_by_its_rows_so_the_same_rows_give_the_same_figure(big):
    """The after-panel carries its dataset, row count and kept-set digest, not τ: a τ that keeps the same rows
    (with the same numbers in the title) sends the very same figure; other rows give another tag."""
    d, res, row = big
    meta = charts.circles_column(d, res, row, part="after").layout.meta
    assert meta == charts.kept_meta(d, res) == charts.kept_meta(d, res.kept)
    assert meta["dataset"] == d.name and meta["rows"] == res.n_kept and len(meta["kept"]) == 16
    low = aflite(d.X, d.y, **{**_run_args(res), "tau": 0.5})  # find a τ ≠ 0.75 that keeps the same rows
    tau = next(
        t
        for t in np.round(np.arange(0.7, 0.8, 0.002), 3)
        if t != 0.75 and np.array_equal(narrow_to_tau(low, t).kept, res.kept)
    )
    same_rows = aflite(d.X, d.y, **{**_run_args(res), "tau": float(tau)})  # a direct run at that τ
    assert np.array_equal(same_rows.kept, res.kept)
    assert same_rows.params["tau"] != res.params["tau"]
    a, b = (charts.circles_column(d, r, row, part="after", webgl=False).to_json() for r in (res, same_rows))
    assert a == b
    fewer = res.kept.copy()
    fewer[np.flatnonzero(fewer)[0]] = False
    assert charts.kept_meta(d, fewer)["kept"] != meta["kept"] and charts.kept_meta(d, fewer)["rows"] == meta["rows"] - 1


def test_page_figures_use_fixed_margins_and_the_white_template(big):
    """No axis pushes the margins (plotly.js would draw the figure twice); the look is theme.style's."""
    from aflite_app.charts.theme import style

    d, res, row = big
    figs = [charts.circles_column(d, res, row, part=p, webgl=False) for p in ("original", "after", "both")] + [
        charts.round_stepper(d, res, 1, panel=p) for p in ("map", "histogram")
    ]
    for fig in figs:
        axes = [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
        assert axes and all(fig.layout[k].automargin is False for k in axes)
        assert fig.layout.template.layout.plot_bgcolor == "white"
    # the fast styling gives theme.style's figure, template included
    import plotly.graph_objects as go

    fast, slow = charts._style(go.Figure(), height=300), style(go.Figure(), height=300)
    assert fast.to_plotly_json() == slow.to_plotly_json() and fast.layout.template == slow.layout.template


# -- issue 29: legends inside the figure, no trace hidden under another, distinct markers, every bar labelled -----
@pytest.fixture(scope="module")
def ood_table():
    from aflite_core.experiments.ood import ood_experiment

    return ood_experiment(paper_circles(400, separations=(1.0, 0.4)), seeds=(0, 1), n_test=300).table


def test_ood_chart_legend_is_inside_the_figure(ood_table):
    for model in (None, "logistic"):
        fig = studies.ood_chart(ood_table, model=model)
        legend = fig.layout.legend
        assert legend.yref == "container" and 0.0 <= legend.y <= 1.0 and legend.yanchor == "top"
        # the top margin holds up to three legend rows and the panel title (it was cut off below a 400-px figure)
        assert fig.layout.margin.t >= studies.OOD_TOP_MARGIN >= 3 * 22 + 30
        assert fig.layout.height >= fig.layout.margin.t + fig.layout.margin.b + 200  # a plot area remains
        assert sum(bool(t.showlegend) for t in fig.data) == 3


def test_ood_chart_lines_that_coincide_stay_visible(ood_table):
    """The linear panel's all-rows line (black) used to lie hidden under the random subset's (pink): same width,
    both solid, same markers. Now every training set differs in marker, and a line drawn later is narrower than
    every line under it or dashed, so the one below shows around it."""
    fig = studies.ood_chart(ood_table, model="logistic")
    looks = [(t.line.width, t.line.dash, t.marker.symbol) for t in fig.data]
    assert len({symbol for _, _, symbol in looks}) == len(looks)
    for later in range(1, len(looks)):
        for earlier in range(later):
            assert looks[later][0] < looks[earlier][0] or looks[later][1] != looks[earlier][1]
    # the legend keeps its reading order (all rows, AFLite, random) whatever the drawing order
    ranked = sorted(fig.data, key=lambda t: t.legendrank)
    assert [t.name for t in ranked] == list(studies.TRAIN_SET_LABELS.values())


def test_scatter_kinds_have_three_distinct_shapes_and_bigger_markers(exp):
    shapes = {s.replace("-open", "") for s in charts.SYMBOLS.values()}
    assert len(shapes) == 3  # not a filled and an open circle: three shapes
    d = exp.datasets[0]
    fig = charts.circles_column(d, exp.results[d.name], exp.table.iloc[0], part="after")
    sizes = {t.name.split(" · ")[1]: t.marker.size for t in fig.data}
    assert min(sizes.values()) >= 5 and sizes["flipped label"] > sizes["bias features"] > sizes["no bias features"]
    flipped = next(t for t in fig.data if t.name.endswith("flipped label"))
    assert flipped.marker.line.color != flipped.marker.color  # outlined in black
    assert fig.layout.height >= 450 and charts.circles_column(d, d.y >= 0, exp.table.iloc[0], part="original")
    legend = charts.circles_legend()
    assert len({t.marker.symbol for t in legend.data}) == 3 and all(t.marker.size >= 10 for t in legend.data)


def test_every_optimum_bar_has_a_label_naming_its_strategy_and_a_zero_shows_a_bar():
    from aflite_core.experiments.optimum import compare_with_optimum

    table = compare_with_optimum(n_seeds=3).table.copy()
    table.loc[table.index[0], ["bias_aflite", "bias_aflite_min", "bias_aflite_max"]] = 0.0  # a zero result
    fig = studies.optimum_chart(table)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == len(fig.data) == 5
    for t in bars:
        assert t.text is not None and len(t.text) == len(t.y)
        short = t.text[0].split(" ")[0]
        assert short in {"all", "A", "B", "C", "optimum"} and all(str(x).startswith(short) for x in t.text)
        assert all(x > 0 for x in t.x)  # every bar has a length, a zero too (a stub)
    zero_strategy = table.loc[table.index[0], "strategy"]
    zero = next(t for t in bars if t.name.endswith(studies.STRATEGY_LABELS[zero_strategy]))
    row = list(zero.y).index(table.loc[table.index[0], "case"])
    assert zero.text[row].startswith(f"{studies.OPTIMUM_BAR_NAMES[zero_strategy]} 0.00")
    assert zero.x[row] == studies.ZERO_BAR and zero.customdata[row][3] == 0.0
