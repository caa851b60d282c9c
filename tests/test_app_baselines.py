"""AppTest of the Baselines page: no run, a run on the digits, model and partial-input choices."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from conftest import plotly_figures
from plotly_figures import plotly_elements  # tests/ is on sys.path when pytest collects this file

pytestmark = pytest.mark.slow


def _bars(fig: dict) -> list[dict]:
    return [t for t in fig["data"] if t.get("type") == "bar"]


def _values(v) -> list:
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def _accuracy_figure(at) -> dict:
    figs = plotly_figures(at)
    return next(f for f in figs if len(_bars(f)) >= 3)


def test_without_a_run_the_page_points_to_the_filter_page(app_test):
    at = app_test(page="pages/baselines.py")
    assert not at.exception
    assert any("Filter page first" in i.value for i in at.info)
    assert not plotly_elements(at)


def test_baselines_after_a_filter_run_and_model_choice(app_test):
    at = app_test(page="pages/filter.py")
    assert not at.exception, at.exception
    at.switch_page("pages/baselines.py").run()
    assert not at.exception, at.exception
    fig = _accuracy_figure(at)
    bars = _bars(fig)
    assert [b["name"] for b in bars] == ["full data", "AFLite kept", "random subset", "one-shot filter"]
    assert bars[1]["marker"]["color"] == "#0072B2"  # KEPT
    assert list(bars[0]["x"]) == ["Logistic regression", "kNN (k = 15)"]  # labels from the core registry
    assert all(0 <= v <= 1 for b in bars for v in _values(b["y"]))
    assert len(plotly_figures(at)) == 2  # accuracy + representation bias
    assert at.dataframe, "the accuracy table"
    assert any("AFLite subset" in m.value for m in at.markdown)  # the plain-language reading
    assert any("Computed in" in c.value for c in at.caption)
    sizes = {m.label: m.value for m in at.metric}
    assert sizes["AFLite kept"].startswith("719") and sizes["Random subset"].startswith("719")

    at.multiselect(key="bl-models").set_value(["logistic", "rbf"]).run()
    assert not at.exception, at.exception
    bars = _bars(_accuracy_figure(at))
    assert list(bars[0]["x"]) == ["Logistic regression", "RBF SVM"]

    # a second representation as the partial input: a second panel with the same four subsets
    partial = next(s for s in at.selectbox if s.key.startswith("bl-partial-"))
    partial.set_value("pixels").run()
    assert not at.exception, at.exception
    if not plotly_elements(at):  # estimated above the few seconds the page computes without asking
        at.button(key="bl-compute").click().run()
        assert not at.exception, at.exception
    assert len(_bars(_accuracy_figure(at))) == 8
    assert any(m.value.count("Partial input") for m in at.markdown)


def test_slow_families_wait_for_the_compute_button(app_test):
    at = app_test(page="pages/filter.py")
    at.switch_page("pages/baselines.py").run()
    at.multiselect(key="bl-models").set_value(["logistic", "mlp"]).run()
    assert not at.exception, at.exception
    assert [b for b in at.button if b.key == "bl-compute"]
    assert any("roughly" in i.value for i in at.info)
    assert not plotly_elements(at)


def _small_upload(seed: int = 0):
    """A 2-class, 50-row table whose labels are noise: nothing is predictable."""
    import pandas as pd

    from aflite_app.compute import uploads

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(50, 3)), columns=["a", "b", "c"])
    frame["label"] = np.repeat(["cat", "dog"], 25)
    outcome = uploads.load_upload(
        frame.to_csv(index=False).encode(),
        "noise.csv",
        uploads.UploadOptions(label_column="label", feature_columns=("a", "b", "c")),
    )
    assert outcome.ok, outcome.error
    return outcome


def test_small_dataset_with_nothing_removed_is_explained(app_test):
    upload = _small_upload()
    at = app_test(uploads={upload.key: upload.dataset}, dataset_key=upload.key)
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    at.slider(key="tau").set_value(1.0).run()
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["Rows removed"] == "0"
    at.switch_page("pages/baselines.py").run()
    assert not at.exception, at.exception
    assert any("removed no rows" in w.value for w in at.warning)
    assert any("removed no rows" in m.value for m in at.markdown)
    assert {m.label: m.value for m in at.metric}["AFLite kept"].startswith("50")


def test_small_dataset_with_rows_removed(app_test):
    upload = _small_upload()
    at = app_test(uploads={upload.key: upload.dataset}, dataset_key=upload.key)
    at.switch_page("pages/filter.py").run()
    at.slider(key="tau").set_value(0.5).run()
    assert not at.exception, at.exception
    at.switch_page("pages/baselines.py").run()
    assert not at.exception, at.exception
    assert len(_bars(_accuracy_figure(at))) == 4
    assert not [w for w in at.warning if "removed no rows" in w.value]


def test_without_a_one_shot_filter_the_page_compares_three_subsets(app_test, monkeypatch):
    import aflite_core.measures.baselines

    def refuse(*args, **kwargs):
        raise ValueError("the kept set is too small")

    monkeypatch.setattr(aflite_core.measures.baselines, "one_shot_filter", refuse)
    upload = _small_upload()
    at = app_test(uploads={upload.key: upload.dataset}, dataset_key=upload.key)
    at.switch_page("pages/filter.py").run()
    at.slider(key="tau").set_value(0.5).run()
    at.switch_page("pages/baselines.py").run()
    assert not at.exception, at.exception
    assert any("one-shot filter not possible here: the kept set is too small" in w.value for w in at.warning)
    assert [b["name"] for b in _bars(_accuracy_figure(at))] == ["full data", "AFLite kept", "random subset"]
    assert {m.label: m.value for m in at.metric}["One-shot filter"] == "–"


def test_baselines_run_in_the_background_with_a_time_left_and_a_stop_that_ends_them(app_test, monkeypatch):
    """Issue 25: the comparison's first report shows progress, a time left and Stop; Stop ends it between pieces."""
    import threading
    import time

    from aflite_app.compute import baselines as compute

    pieces, stopped = [], threading.Event()

    def slow_baselines(spec, options, *, session=None, progress=None, stop=None):
        progress(0.0, "Drawing the random subset and the one-shot filter")  # the real first report: no time left
        try:
            for i in range(300):  # pieces until stopped (at most 30 s)
                time.sleep(0.1)
                pieces.append(i)
                progress(i / 300, f"piece {i}")
        except Exception:
            stopped.set()
            raise
        pytest.fail("the comparison was not stopped")

    monkeypatch.setattr(compute, "baselines", slow_baselines)
    monkeypatch.setattr(compute, "baseline_estimate", lambda *a, **k: 60.0)  # a large run's: it asks first
    at = app_test(page="pages/filter.py")
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.3")
    at.session_state["bl-models"], at.session_state["bl-folds"] = ["logistic"], 2
    at.switch_page("pages/baselines.py").run()
    next(b for b in at.button if b.key == "bl-compute").click().run()
    assert not at.exception, at.exception
    bars = at.get("progress")
    assert len(bars) == 1 and "left" in bars[0].proto.text, [b.proto.text for b in bars]
    next(b for b in at.button if b.label == "Stop").click().run()
    assert stopped.wait(10)  # ended after the piece that ran
    for _ in range(25):
        if any("stopped before it finished" in i.value for i in at.info):
            break
        time.sleep(0.2)
        at.run()
    assert not at.exception, at.exception
    assert any("stopped before it finished" in i.value for i in at.info)
    assert {b.key for b in at.button} & {"bl-compute", "bl-again"}  # asked again to start over
    assert "Full data" not in {m.label for m in at.metric}
