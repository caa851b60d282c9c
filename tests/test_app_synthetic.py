"""AppTest of the Synthetic circles page (Figure 2, live), and its compute section."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from conftest import plotly_figures
from plotly_figures import plotly_elements

pytestmark = pytest.mark.slow

PAGE = "pages/synthetic.py"


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _charts(at, key: str) -> list[dict]:
    return [json.loads(el.proto.spec) for el in plotly_elements(at) if key in str(el.proto.id)]


def _columns(at) -> list[dict]:
    """The Figure 2 panels after AFLite: one figure per dataset (its original panel is a figure of its own)."""
    return _charts(at, "syn-col-")


def _originals(at) -> list[dict]:
    return _charts(at, "syn-orig-")


def _grid(at) -> dict:
    """Every dataset's panel titles and traces, gathered from the per-dataset figures."""
    cols, originals = _columns(at), _originals(at)
    assert cols and len(originals) == len(cols), "no Figure 2 panels, or not both of every dataset"
    figs = [f for pair in zip(originals, cols) for f in pair]
    return {
        "layout": {"annotations": [a for f in figs for a in f["layout"].get("annotations", [])]},
        "data": [t for f in figs for t in f["data"]],
        "n_columns": len(cols),
    }


def _stepper(at) -> dict:
    return next(f for f in plotly_figures(at) if any(t.get("legendgroup") == "now" for t in f["data"]))


def _titles(fig: dict) -> list[str]:
    return [a.get("text", "") for a in fig["layout"].get("annotations", [])]


def _decode(values) -> np.ndarray:
    if isinstance(values, dict) and "bdata" in values:
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values if values is not None else [])


def _removed_now(fig: dict) -> list[int]:
    trace = next(t for t in fig["data"] if t.get("legendgroup") == "now" and t["type"] == "scatter")
    return sorted(int(row[0]) for row in trace.get("customdata", []))


def test_renders_with_defaults(app_test):
    at = app_test(page=PAGE)
    assert not at.exception, at.exception
    assert at.title[0].value == "Synthetic circles"
    text = " ".join(m.value for m in at.markdown)
    assert "shortcut" in text and "RBF SVM" in text and "chance" in text
    grid = _grid(at)
    assert grid["n_columns"] == 4 and len(_originals(at)) == 4
    assert any("separation 1 (flipped labels)" in t for t in _titles(grid))
    text = " ".join(m.value for m in at.markdown)
    assert "Reading the accuracies" in text and "below chance" in text  # computed notes, not a canned line
    metrics = _metrics(at)
    assert float(metrics["Linear accuracy after (mean)"]) < 0.65  # toward chance
    assert float(metrics["RBF-SVM accuracy after (mean)"]) > 0.75  # the real task survives
    assert at.slider(key="syn-round").value == 1
    assert _stepper(at)
    assert not at.error
    assert any("Figure 2 summary table" in e.label for e in at.expander)


def _n_points(fig: dict) -> int:
    return sum(len(_decode(t.get("x"))) for t in fig["data"])


def test_tau_change_redraws_every_run_panel_and_sends_the_originals_unchanged(app_test):
    """After a τ change every panel is there: the originals byte-identical (WebGL: drawn once), every figure of
    the run (after-panels, the stepper's map and histogram) carrying the new τ and drawn in SVG, all points kept."""
    at = app_test(page=PAGE)
    originals = [el.proto.spec for el in plotly_elements(at) if "syn-orig-" in str(el.proto.id)]
    assert len(originals) == 4
    for fig in _originals(at):
        assert {t["type"] for t in fig["data"]} == {"scattergl"} and _n_points(fig) == 2000
        assert "meta" not in fig["layout"]

    at.slider(key="syn-tau").set_value(0.7).run()
    assert not at.exception, at.exception
    assert [el.proto.spec for el in plotly_elements(at) if "syn-orig-" in str(el.proto.id)] == originals
    run_figs = _columns(at) + _charts(at, "syn-stepper")  # "syn-stepper" matches the map and the histogram
    assert len(run_figs) == 6
    stepper_map = _stepper(at)
    for fig in run_figs:
        assert {t["type"] for t in fig["data"]} <= {"scatter", "histogram"}
    for fig in _columns(at):  # an after-panel is tagged by the rows it shows (dataset, count, digest), not τ
        assert set(fig["layout"]["meta"]) == {"dataset", "rows", "kept"}
    hist = next(f for f in run_figs if f != stepper_map and "tau" in f["layout"].get("meta", {}))
    assert hist["layout"]["meta"] == {"tau": 0.7, "k": 100}
    assert "meta" not in stepper_map["layout"]  # the map shows no τ, only round 1's rows
    for fig in _columns(at):
        title = fig["layout"]["annotations"][0]["text"]
        n_after = int(title.split("</b>: ")[1].split(" rows")[0].replace(",", ""))
        assert _n_points(fig) == n_after  # every kept row is drawn
    stepper = _stepper(at)
    assert _n_points(stepper) == 2000  # removed-in-earlier-round rows stay visible (grey), nothing dropped


def test_moving_tau_and_k_changes_the_numbers(app_test):
    at = app_test(page=PAGE)
    first_metrics, first_titles = _metrics(at), _titles(_grid(at))

    at.slider(key="syn-tau").set_value(0.6).run()
    assert not at.exception, at.exception
    after_tau = _titles(_grid(at))
    assert after_tau != first_titles
    assert _metrics(at)["Linear accuracy after (mean)"] != first_metrics["Linear accuracy after (mean)"]

    k_slider = next(s for s in at.slider if s.key.startswith("syn-k-"))
    k_slider.set_value(200).run()
    assert not at.exception, at.exception
    assert _titles(_grid(at)) != after_tau

    at.slider(key="syn-tau").set_value(1.0).run()  # the strictest τ still works
    assert not at.exception, at.exception


def test_bad_separation_list_shows_st_error(app_test):
    at = app_test(page=PAGE)
    for bad in ("1.0, abc", "", "2.5, 0.4", "0.4, 0.4", "1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4"):
        at.text_input(key="syn-seps").set_value(bad)
        next(b for b in at.button if b.label == "Apply").click().run()
        assert not at.exception, at.exception
        assert any("Separations must be" in e.value for e in at.error), bad
        assert not _columns(at)
    at.text_input(key="syn-seps").set_value("1.0, 0.2")  # fixed: the page comes back
    next(b for b in at.button if b.label == "Apply").click().run()
    assert not at.exception and not at.error
    assert _grid(at)["n_columns"] == 2


def test_round_slider_play_and_dataset_change_the_stepper(app_test):
    at = app_test(page=PAGE)
    round_1 = _stepper(at)
    at.slider(key="syn-round").set_value(3).run()
    assert not at.exception, at.exception
    round_3 = _stepper(at)
    assert _removed_now(round_3) != _removed_now(round_1)
    assert any(t.startswith("Round 3 of") for t in _titles(round_3))
    assert _metrics(at)["Rows left after the round"] == "1,700"  # 3 rounds × k = 100

    at.button(key="syn-play").click().run()  # one step now; further steps come from the fragment's timer
    assert not at.exception, at.exception
    assert at.slider(key="syn-round").value == 4
    assert at.session_state["syn-page"]["playing"]
    at.button(key="syn-pause").click().run()
    assert not at.exception
    assert not at.session_state["syn-page"]["playing"]

    at.radio(key="syn-step-data").set_value("separation 0.2").run()
    assert not at.exception, at.exception
    assert any(c.value.startswith("Map: separation 0.2") for c in at.caption)
    assert _removed_now(_stepper(at)) != _removed_now(round_3)


def test_small_single_dataset_without_bias_removes_nothing(app_test):
    """Edge cases: one ring gap, 200 points, no bias features (nothing predictable, so nothing to remove)."""
    at = app_test(page=PAGE)
    at.number_input(key="syn-n").set_value(200)
    at.slider(key="syn-bias").set_value(0.0)
    at.text_input(key="syn-seps").set_value("0.5")
    next(b for b in at.button if b.label == "Apply").click().run()
    assert not at.exception, at.exception
    assert not at.error
    assert _grid(at)["n_columns"] == 1
    assert _metrics(at)["Share of rows with bias features"] in ("0%", "–", "nan%")


# -- the compute section (no AppTest) -------------------------------------------------------------------------
def test_parse_separations():
    from aflite_app.compute.synthetic import parse_separations

    assert parse_separations("1.0, 0.6, 0.4, 0.2") == (1.0, 0.6, 0.4, 0.2)
    assert parse_separations(" 0.5;0.1 ") == (0.5, 0.1)
    for bad in ("", "x", "2", "-0.1", "0.3, 0.30", "nan"):
        with pytest.raises(ValueError, match="Separations must be"):
            parse_separations(bad)


def test_circles_datasets_match_paper_circles_and_apply_the_bias_fraction():
    import streamlit as st

    from aflite_app.compute.synthetic import CirclesSpec, circles_datasets
    from aflite_core.data.planted_bias import paper_circles

    st.cache_resource.clear()
    ours = circles_datasets(CirclesSpec(n_samples=300, seed=3))
    ref = paper_circles(300, random_state=3)
    assert [d.name for d in ours] == [d.name for d in ref]
    for a, b in zip(ours, ref):
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.is_flipped, b.is_flipped)
    half = circles_datasets(CirclesSpec(n_samples=300, bias_fraction=0.5, seed=3))
    assert [int(d.is_biased.sum()) for d in half] == [150] * 4
    st.cache_resource.clear()


def test_accuracy_over_rounds_is_computed_on_request(app_test):
    at = app_test(page=PAGE)
    assert not any("syn-curve-chart" in str(el.proto.id) for el in plotly_elements(at))  # not on the τ/k path
    at.checkbox(key="syn-curve").check().run()
    assert not at.exception, at.exception
    chart = next(json.loads(el.proto.spec) for el in plotly_elements(at) if "syn-curve-chart" in str(el.proto.id))
    assert {t.get("name") for t in chart["data"]} >= {"linear model", "RBF SVM", "chance ± 2 standard errors"}
    assert any(c.value.startswith("separation 1 (flipped labels): held-out accuracy") for c in at.caption)
    at.slider(key="syn-round").set_value(2).run()  # the curve follows the stepper's round
    assert not at.exception, at.exception


def test_out_of_distribution_section_runs_on_request(app_test):
    at = app_test(page=PAGE)
    assert not any("syn-ood-chart" in str(el.proto.id) for el in plotly_elements(at))
    assert any(c.value.startswith("Not computed yet") for c in at.caption)
    at.button(key="syn-ood-run").click().run()
    assert not at.exception, at.exception
    chart = next(json.loads(el.proto.spec) for el in plotly_elements(at) if "syn-ood-chart" in str(el.proto.id))
    names = {t.get("name") for t in chart["data"]}
    assert names == {"all training rows", "AFLite's kept rows", "random subset, same size"}
    assert any("Accuracy lost from in distribution to flipped bias features" in c.value for c in at.caption)
    at.radio(key="syn-ood-data").set_value("separation 0.6").run()
    assert not at.exception, at.exception
    at.slider(key="syn-tau").set_value(0.8).run()  # the result stays, marked as computed with other parameters
    assert any("other parameters" in c.value for c in at.caption)


def test_optimum_section_on_request(app_test):
    at = app_test(page=PAGE)
    assert not any("syn-optimum-chart" in str(el.proto.id) for el in plotly_elements(at))
    at.toggle(key="syn-optimum-on").set_value(True).run()
    assert not at.exception, at.exception
    chart = next(json.loads(el.proto.spec) for el in plotly_elements(at) if "syn-optimum-chart" in str(el.proto.id))
    assert "AFOptimum (exhaustive search)" in {t.get("name") for t in chart["data"]}
    assert any("Closest on average" in c.value for c in at.caption)


def test_the_page_experiment_read_off_one_run_equals_a_direct_run_at_every_tau():
    """The page runs AFLite once per k at the τ slider's floor and reads every τ off it: same table, same rows."""
    import pandas as pd
    import streamlit as st

    from aflite_app.compute.synthetic import (
        CIRCLES_TAU_FLOOR,
        CirclesRunSpec,
        CirclesSpec,
        circles_before,
        circles_datasets,
        circles_experiment,
    )
    from aflite_core.experiments.figure2 import synthetic_experiment

    st.cache_resource.clear()
    spec = CirclesSpec(n_samples=400, seed=2)
    for k in (20, 40):
        for tau in (CIRCLES_TAU_FLOOR, 0.66, 0.75, 0.9, 1.0):
            run = CirclesRunSpec(spec, tau=tau, slice_size=k, n_partitions=16)
            page = circles_experiment(run)
            direct = synthetic_experiment(
                list(circles_datasets(spec)),
                target_size=run.target_size,
                train_size=run.train_size,
                slice_size=k,
                tau=tau,
                n_partitions=16,
                n_splits=run.n_splits,
                before=circles_before(spec, run.n_splits),
                random_state=spec.seed,
            )
            pd.testing.assert_frame_equal(page.table, direct.table)
            for name, res in direct.results.items():
                np.testing.assert_array_equal(page.results[name].removed_round, res.removed_round)
                assert page.results[name].stop_message == res.stop_message
    st.cache_resource.clear()


def test_the_warm_up_fills_the_store_with_the_default_page_and_the_page_uses_it(monkeypatch):
    """The server's background warm-up computes the default page's "before" accuracies and AFLite runs; the page
    then computes neither again, and shows what a direct run gives."""
    import streamlit as st

    from aflite_app.compute import synthetic as compute
    from aflite_core.experiments import figure2 as core

    st.cache_resource.clear()
    monkeypatch.setenv("AFLITE_WARM_UP", "1")
    thread = compute.start_warm_up()
    assert thread is not None
    thread.join(120)
    assert not thread.is_alive()
    calls = []
    real_before, real_run = core.before_accuracies, core.synthetic_experiment
    real_plan_run, real_at_tau = core.ExperimentPlan.run, core.ExperimentPlan.at_tau
    monkeypatch.setattr(core, "before_accuracies", lambda *a, **k: calls.append("before") or real_before(*a, **k))
    monkeypatch.setattr(core, "synthetic_experiment", lambda *a, **k: calls.append("experiment") or real_run(*a, **k))
    monkeypatch.setattr(core.ExperimentPlan, "run", lambda *a, **k: calls.append("AFLite") or real_plan_run(*a, **k))
    monkeypatch.setattr(core.ExperimentPlan, "at_tau", lambda *a, **k: calls.append("at_tau") or real_at_tau(*a, **k))
    run = compute.CirclesRunSpec(compute.CirclesSpec())
    exp = compute.circles_experiment(run)
    assert calls == ["at_tau"]  # one call, reading the warmed-up runs at τ, no "before" and no AFLite run
    assert compute.start_warm_up() is thread  # once per process
    direct = real_run(
        list(compute.circles_datasets(run.data)),
        target_size=run.target_size,
        train_size=run.train_size,
        slice_size=run.slice_size,
        tau=run.tau,
        n_partitions=run.n_partitions,
        n_splits=run.n_splits,
        random_state=run.data.seed,
    )
    cols = ["dataset", "n_after", "linear_after", "rbf_after", "linear_before", "rbf_before", "rounds"]
    assert exp.table[cols].equals(direct.table[cols])
    st.cache_resource.clear()


def test_warm_up_is_off_when_asked(monkeypatch):
    import streamlit as st

    from aflite_app.compute import synthetic as compute

    st.cache_resource.clear()
    monkeypatch.setenv("AFLITE_WARM_UP", "0")
    assert compute.start_warm_up() is None
    st.cache_resource.clear()


def _visible_texts(node, out: list[str]) -> list[str]:
    """The Markdown and caption texts of the page that are not inside an expander (what a reader sees at once)."""
    from streamlit.testing.v1.element_tree import Expander

    if isinstance(node, Expander):
        return out
    children = getattr(node, "children", None)
    if children is not None:
        for child in children.values():
            _visible_texts(child, out)
    elif getattr(node, "type", None) in ("markdown", "caption"):
        out.append(str(node.value))
    return out


def test_long_texts_sit_behind_explain_expanders(app_test):
    """Issue 29 item 9: the two paragraphs before the first control and the paragraph-long notes under the figures
    are behind "Explain" expanders; what stays visible is one short sentence each."""
    at = app_test(page=PAGE)
    at.button(key="syn-ood-run").click().run()
    at.toggle(key="syn-optimum-on").set_value(True).run()
    at.checkbox(key="syn-curve").check().run()
    assert not at.exception, at.exception
    visible = _visible_texts(at.main, [])
    assert visible and all(len(text) <= 200 for text in visible), [t for t in visible if len(t) > 200]
    explains = [e for e in at.expander if e.label.startswith("Explain")]
    assert len(explains) >= 7  # the intro, the panels, the map, the curve, OOD (intro and chart), AFOptimum (2)
    hidden = " ".join(m.value for e in explains for m in (*e.markdown, *e.caption))
    assert "What this page shows" in hidden and "Reading the accuracies" in hidden and "Accuracy lost" in hidden
