"""AppTests of issue 29's guard rails: one current run, a confirmation before long runs, an explicit embedding Start.

The browser halves (bounding boxes at 390 and 1,500 px, the sidebar after a reload) are in
tests/test_browser_guards.py.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from aflite_app.compute import run_costs, runs, upload_sentences, uploads
from aflite_app.jobs import Outcome
from aflite_app.specs import DatasetSpec, FilterSpec

pytestmark = pytest.mark.slow


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _sidebar_text(at) -> str:
    return " ".join([c.value for c in at.sidebar.caption] + [f"{m.label} {m.value}" for m in at.sidebar.metric])


def _stop_a_logistic_run(at, monkeypatch):
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.3")
    next(s for s in at.selectbox if s.key.startswith("model-")).set_value("logistic")
    at.button[0].click().run()  # the form's Run button
    assert "Running on the Filter page" in _sidebar_text(at)  # the sidebar says what the page shows: a run going on
    run = at.session_state["background_run"]
    deadline = time.time() + 120
    while run.progress is None and not run.done and time.time() < deadline:  # a round done: a partial run to show
        time.sleep(0.2)
    at.button(key="stop-run").click().run()
    deadline = time.time() + 120
    while time.time() < deadline and not any("partial" in w.value for w in at.warning):
        at.run()
        time.sleep(0.5)


# -- item 1: one truth per run ------------------------------------------------------------------------------------
def test_after_stop_the_sidebar_shows_the_partial_run_the_page_shows(app_test, monkeypatch):
    """Stop: the page said "Rows kept 6,852 · 39 in 39 rounds", the sidebar "No run yet" and an older run's counts."""
    at = app_test(page="pages/filter.py")
    before = _metrics(at)["Rows kept"]
    _stop_a_logistic_run(at, monkeypatch)
    assert not at.exception, at.exception
    warning = next(w.value for w in at.warning if "partial" in w.value)
    assert warning.startswith("Stopped after round"), warning  # a round had finished before Stop (waited for above)
    page = _metrics(at)
    side = {m.label: m.value for m in at.sidebar.metric}
    assert side == {"kept": page["Rows kept"], "removed": page["Rows removed"]}
    assert "Partial run" in _sidebar_text(at) and "No run yet" not in _sidebar_text(at)
    assert before  # the older run's counts (the default run's) are not what the sidebar shows now: the page's are
    # the message says it once (it read "Stopped after round 39: this is a partial result. Stopped on request after
    # round 39; this result is partial …")
    assert warning.count("partial") == 1 and "Stopped on request" not in warning
    # the other pages read the same current run, labelled partial, without running it again
    calls = []
    monkeypatch.setattr(runs, "execute_run", lambda *a, **k: calls.append(1))
    at.switch_page("pages/predictability.py").run()
    assert not at.exception, at.exception
    assert any("current run is partial" in i.value for i in at.info) and calls == []
    assert {m.label: m.value for m in at.sidebar.metric} == side


def test_a_refused_run_never_reads_running_in_the_sidebar(app_test):
    at = app_test(page="pages/filter.py")
    next(n for n in at.number_input if n.key.startswith("target-")).set_value(100)
    next(n for n in at.number_input if n.key.startswith("train-")).set_value(500)  # t must be < n
    at.button[0].click().run()
    assert at.error and "Running on the Filter page" not in _sidebar_text(at)


def test_after_a_tau_change_the_sidebar_shows_the_new_run(app_test):
    at = app_test(page="pages/filter.py")
    at.slider(key="tau").set_value(0.95).run()  # read off the stored run
    assert not at.exception, at.exception
    page = _metrics(at)
    side = {m.label: m.value for m in at.sidebar.metric}
    assert side == {"kept": page["Rows kept"], "removed": page["Rows removed"]}
    assert "τ = 0.95" in _sidebar_text(at)


# -- item 4: the confirmation before a long run ---------------------------------------------------------------------
def test_k_equal_to_one_asks_before_a_long_run_and_keeps_the_current_one(app_test, monkeypatch):
    """The k slider's Home key (k = 1) started a run of hundreds of rounds at once; now it asks, with an estimate."""
    monkeypatch.setattr(run_costs, "CONFIRM_SECONDS", 1.0)  # digits at k = 1 are ~40 s here; any run above 1 s asks
    at = app_test(page="pages/filter.py")
    first = _metrics(at)
    k = next(s for s in at.slider if s.key.startswith("k-"))
    k.set_value(1).run()
    assert not at.exception, at.exception
    (warning,) = [w.value for w in at.warning if "This run would take" in w.value]
    assert "rounds" in warning and "k = 1 row a round" in warning
    assert at.session_state["background_run"] is None or at.session_state["background_run"].key.slice_size != 1
    assert not at.metric or {m.label for m in at.metric} == {"kept", "removed"}  # no result on the page ...
    assert {m.label: m.value for m in at.sidebar.metric}["kept"] == first["Rows kept"]  # ... the sidebar keeps its run
    at.button(key="keep-run").click().run()  # back to the current run's k
    assert not at.exception, at.exception
    assert next(s for s in at.slider if s.key.startswith("k-")).value != 1 and _metrics(at) == first
    next(s for s in at.slider if s.key.startswith("k-")).set_value(1).run()
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.3")
    at.button(key="confirm-run").click().run()  # agreed: the run starts
    assert not at.exception, at.exception
    assert at.session_state["background_run"].key.slice_size == 1
    assert "Running on the Filter page" in _sidebar_text(at)
    at.button(key="stop-run").click().run()  # (no need to wait for its hundreds of rounds)


def test_every_filter_progress_line_has_a_time_left():
    from aflite_app import ui

    spec = FilterSpec(DatasetSpec("x", "e"), target_size=3446, train_size=1723, slice_size=1, tau=0.75)
    for d in (384, None):
        describe = ui.describe_filter_run(spec, 6891, d, 3)
        lines = [describe(None, 0.5, None)[1]]
        for r in (1, 10, 37):
            p = SimpleNamespace(round=r, size=6891 - r, removed=1, total_removed=r, qualified=4000)
            step = SimpleNamespace(round=r + 1, phase="fit", done=0, total=64, fraction_of_round=0.0)
            lines.append(describe(p, 8.0 * r / 37, step)[1])
        for line in lines:
            assert "left" in line or "finishing" in line, line


def test_a_change_that_rounds_to_zero_never_reads_minus_zero():
    off = {"delta": "no change", "delta_color": "off", "delta_arrow": "off"}
    assert runs.change_since_round_1(-0.0031, ".0%") == off  # it read "-0% since round 1"
    assert runs.change_since_round_1(-0.0004, ".3f") == off
    assert runs.change_since_round_1(0.0, ".0%") == off
    assert runs.change_since_round_1(-0.026, ".3f")["delta"] == "-0.026 since round 1"
    assert runs.change_since_round_1(0.2, ".0%") == {
        "delta": "+20% since round 1",
        "delta_color": "inverse",
        "delta_arrow": "auto",
    }


def test_the_long_run_estimate_grows_as_k_falls():
    spec = FilterSpec(DatasetSpec("digits", "mlp"), target_size=719, train_size=360, slice_size=72, tau=0.75)
    fast = run_costs.estimate_run_seconds(spec, 1438, 64, 10)
    slow = run_costs.estimate_run_seconds(spec.with_(slice_size=1), 1438, 64, 10)
    assert run_costs.run_rounds(spec, 1438) == 10 and run_costs.run_rounds(spec.with_(slice_size=1), 1438) == 719
    assert slow > 20 * fast > 0


# -- item 5: the embedding's explicit Start --------------------------------------------------------------------------
PAGE = "pages/data.py"


def _pairs(n: int) -> bytes:
    labels = ["entailment", "neutral", "contradiction"]
    frame = pd.DataFrame(
        {
            "premise": [f"A man number {i} walks in the park." for i in range(n)],
            "hypothesis": [f"Someone {i} is outside." for i in range(n)],
            "label": [labels[i % 3] for i in range(n)],
        }
    )
    return frame.to_csv(index=False).encode()


def test_ticking_embeddings_starts_nothing_until_start_and_keeps_tfidf(app_test, monkeypatch):
    started = []

    def fake_prepare(spec, frame):
        started.append(spec)
        vectors = np.random.default_rng(0).normal(size=(len(frame), 4)).astype(np.float32)
        return lambda callback: Outcome({"embedding": vectors, "embedding_hypothesis": vectors})

    monkeypatch.setattr(upload_sentences, "embeddings_status", lambda: SimpleNamespace(available=True))
    monkeypatch.setattr(
        upload_sentences,
        "embedding_spec",
        lambda payload, name, views: upload_sentences.EmbedSpec("digest", name, tuple(views.items()), "stand-in"),
    )
    monkeypatch.setattr(
        upload_sentences,
        "embedding_outlook",
        lambda frame, spec: {"seconds": 12.0, "load_seconds": 9.0, "cached": [], "refusal": None},
    )
    monkeypatch.setattr(upload_sentences, "prepare_embedding", fake_prepare)
    payload = _pairs(30)
    tag = uploads.content_tag(payload)
    at = app_test(page=PAGE)
    at.file_uploader(key="upload-table").set_value(("pairs.csv", payload, "text/csv"))
    at.run()
    tfidf = next(c for c in at.checkbox if c.key.startswith(f"up-tfidf-{tag}"))
    assert tfidf.value  # on by default for text
    at.checkbox(key=f"up-emb-{tag}").check().run()
    assert not at.exception, at.exception
    assert started == []  # ticking the box starts nothing
    assert [b.key for b in at.button if b.key == "up-emb-start"] == ["up-emb-start"]
    assert next(c for c in at.checkbox if c.key.startswith(f"up-tfidf-{tag}")).value  # TF-IDF stays ticked
    assert any("9 s of it loading the model" in c.value for c in at.caption)
    at.button(key="up-emb-start").click().run()
    assert not at.exception, at.exception
    assert [spec.name for spec in started] == ["pairs.csv"]
    at.button(key="use-upload").click().run()
    data = at.session_state["uploads"][at.session_state["dataset_key"]]
    assert {"embedding", "embedding_hypothesis"} <= set(data.representations)
    assert any(r.startswith("tfidf") for r in data.representations), data.representations  # both kept


def test_the_estimate_of_a_two_row_file_never_says_zero_seconds_with_the_model_load():
    """A 2-row file read "About 0 s … loading the model included" while loading the model alone is ~9 s."""
    loaded = upload_sentences.embedding_time_text({"seconds": 0.004, "load_seconds": 0.0})
    assert "0 s" not in loaded and "already loaded" in loaded
    cold = upload_sentences.embedding_time_text({"seconds": 9.004, "load_seconds": 9.0})
    assert cold.startswith("About 9 s") and "9 s of it loading the model" in cold
