"""AppTest of the Home, Filter and Predictability pages: what a user sees and changes."""

from __future__ import annotations

import time

import pytest
from conftest import plotly_figures

pytestmark = pytest.mark.slow


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_home_explains_aflite(app_test):
    at = app_test()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "predictability" in text and "τ" in text
    assert at.title[0].value == "AFLite Studio"


def test_filter_renders_and_tau_and_k_change_the_result(app_test):
    at = app_test(page="pages/filter.py")
    assert not at.exception, at.exception
    first = _metrics(at)
    assert first["Rows kept"] and first["Rows removed"]
    figs = plotly_figures(at)
    assert figs and any(t.get("type") == "bar" for t in figs[0]["data"])
    # the stop reason in words, and it agrees with the numbers shown (a run that was not stopped: success)
    assert not at.warning and len(at.success) == 1
    kept = first["Rows kept"]  # formatted alike: "1,000"
    message = at.success[0].value
    assert message == f"The filtered set reached the target size of {kept} rows." or (
        message.startswith("Early stop (τ):") and f"stopped with {kept} rows left" in message
    ), message

    at.slider(key="tau").set_value(0.99).run()
    assert not at.exception
    after_tau = _metrics(at)
    assert after_tau != first

    k_slider = next(s for s in at.slider if s.key.startswith("k-"))
    k_slider.set_value(10).run()
    assert not at.exception
    assert _metrics(at) != after_tau


def _tiny_noise_dataset():
    import numpy as np
    import pandas as pd

    from aflite_core import dataset_from_table

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"label": np.repeat(["yes", "no"], 25), "text": [f"row {i}" for i in range(50)]})
    return dataset_from_table(frame, label_column="label", features=rng.normal(size=(50, 3)), name="tiny noise")


def test_two_class_fifty_rows_with_nothing_removed(app_test):
    at = app_test(page="pages/filter.py", uploads={"upload-tiny": _tiny_noise_dataset()}, dataset_key="upload-tiny")
    assert not at.exception
    at.slider(key="tau").set_value(1.0).run()
    assert not at.exception
    assert _metrics(at)["Rows removed"] == "0"
    assert any("Early stop" in s.value for s in at.success)
    at.switch_page("pages/predictability.py").run()
    assert not at.exception


def test_bad_parameters_show_st_error_not_a_traceback(app_test):
    at = app_test(page="pages/filter.py")
    train = next(n for n in at.number_input if n.key.startswith("train-"))
    target = next(n for n in at.number_input if n.key.startswith("target-"))
    target.set_value(100)
    train.set_value(500)  # t must be < n
    at.button[0].click().run()  # the form's Run button
    assert not at.exception
    # the form's own words: the field names on screen, the rule, and what to change (not the API's parameter names)
    (error,) = [e.value for e in at.error]
    assert "Training rows per model t is 500" in error and "target size n (100)" in error
    assert "train_size" not in error and "Lower t or raise n" in error


def test_stop_button_stops_the_run_and_shows_the_partial_result(app_test, monkeypatch):
    at = app_test(page="pages/filter.py")
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.3")
    # logistic regression over 64 partitions takes seconds per round on the digits: long enough to stop
    model = next(s for s in at.selectbox if s.key.startswith("model-"))
    model.set_value("logistic")
    at.button[0].click().run()
    assert not at.exception
    stop = [b for b in at.button if b.key == "stop-run"]
    assert stop, "a running run shows a Stop button"
    stop[0].click().run()
    deadline = time.time() + 120
    while time.time() < deadline:
        at.run()
        if any("partial" in w.value for w in at.warning):
            break
        time.sleep(1)
    assert not at.exception
    warning = next(w.value for w in at.warning if "partial" in w.value)
    if warning.startswith("Stopped after round"):
        assert _metrics(at)["Rows removed"]
    else:  # stopped inside round 1: nothing removed, and the page says so
        assert warning.startswith("Stopped during round 1")


def test_after_stop_the_page_never_runs_the_filter_again(app_test, monkeypatch):
    """A stopped run is not stored; nothing on the page may fetch it again by its spec (that re-ran the whole
    filter synchronously in the page thread — 49 s on the digits with logistic regression)."""
    from aflite_app.compute import runs

    calls = []
    real = runs.execute_run

    def counting(run, **kwargs):
        calls.append(run.config.seed)
        return real(run, **kwargs)

    monkeypatch.setattr(runs, "execute_run", counting)
    at = app_test(page="pages/filter.py")
    assert len(calls) == 1  # the default run
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.3")
    model = next(s for s in at.selectbox if s.key.startswith("model-"))
    model.set_value("logistic")
    at.button[0].click().run()
    stop = [b for b in at.button if b.key == "stop-run"]
    assert stop, "a running run shows a Stop button"
    stop[0].click().run()
    deadline = time.time() + 120
    while time.time() < deadline and not any("partial" in w.value for w in at.warning):
        at.run()
        time.sleep(0.5)
    assert any("partial" in w.value for w in at.warning)
    at.run()  # one more rerun of the page showing the partial result
    assert not at.exception
    assert len(calls) == 2, f"the engine ran {len(calls)} times: after Stop nothing may start a second run"


def test_predictability_page_follows_the_filter_run(app_test):
    at = app_test(page="pages/predictability.py")
    assert not at.exception
    assert at.info  # no run yet: points to the Filter page
    at.switch_page("pages/filter.py").run()
    at.switch_page("pages/predictability.py").run()
    assert not at.exception
    figs = plotly_figures(at)
    assert len(figs) == 2
    rounds = at.slider(key="pred-round")
    first = figs[0]["layout"]["title"]["text"]
    rounds.set_value(min(2, rounds.max)).run()
    assert plotly_figures(at)[0]["layout"]["title"]["text"] != first or rounds.max == 1
