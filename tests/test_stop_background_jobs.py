"""Stop, session end and joining for the app's long jobs other than the Filter run (issue #17).

Each job runs as the page runs it: a per-session :class:`~aflite_app.jobs.BackgroundRun` following one
server-wide job (``SharedJobs``). The slow steps are gated by a semaphore the test releases one at a time, so
"Stop ends it within one more step" is counted in steps, never timed: the test stops the session's run, waits
until the shared job has been asked to stop (no step was released meanwhile), then releases every step and
counts how many more ran.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from aflite_app import jobs as app_jobs
from aflite_app.compute import dynamics as dyn
from aflite_app.compute import embedding as emb
from aflite_app.compute import inspect_stability as insp
from aflite_app.compute import level_checks as checks
from aflite_app.compute import runs, upload_sentences
from aflite_app.jobs import BackgroundRun
from aflite_app.state import DatasetSpec, FilterSpec
from aflite_core.dynamics import TrainingInterrupted, TrainingStep
from aflite_core.dynamics.validation import ValidationStep

DIGITS = DatasetSpec("digits")


class Gate:
    """Steps wait here until the test releases them; ``done`` counts the steps that ran."""

    def __init__(self) -> None:
        self._sem = threading.Semaphore(0)
        self.done = 0
        self.calls = 0
        self._lock = threading.Lock()

    def step(self) -> None:
        assert self._sem.acquire(timeout=30), "a step waited 30 s for the test"
        with self._lock:
            self.done += 1

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self._sem.release()

    def drain(self) -> None:
        """Take back the permits no step used (the next job is gated again)."""
        while self._sem.acquire(blocking=False):
            pass

    def run_until(self, n: int) -> None:
        """Release steps one by one until ``n`` have run."""
        while self.done < n:
            before = self.done
            self.release()
            _wait(lambda before=before: self.done > before)


def _wait(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _stop_and_count(run: BackgroundRun, gate: Gate, key, *, stop: Callable[[], None]) -> int:
    """Stop (or end the session of) ``run``; the steps that ran after the shared job was asked to stop."""
    jobs = app_jobs.shared_jobs()
    assert jobs.running(key)
    job = jobs._jobs[key]
    stop()
    _wait(lambda: not jobs.running(key))  # the shared job was asked to stop; no step was released meanwhile
    at_stop = gate.done
    gate.release(1000)
    assert run.wait(30)
    assert job.wait(30)  # the shared job has ended too
    gate.drain()
    return gate.done - at_stop


@pytest.fixture(autouse=True)
def _fresh_caches():
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


# -- Training dynamics: the recording ---------------------------------------------------------------------------
@pytest.fixture
def gated_recording(monkeypatch):
    """record_dynamics replaced by 40 gated mini-batches reporting TrainingStep; ``calls`` counts recordings."""
    gate = Gate()
    real = dyn.record_dynamics

    def fake(X, y, *, on_step=None, **kwargs):
        gate.calls += 1
        for i in range(40):
            gate.step()
            if (
                on_step is not None
                and on_step(TrainingStep("full", i // 10 + 1, 4, i % 10 + 1, 10, i + 1, 40)) is False
            ):
                raise TrainingInterrupted
        return real(X, y, epochs=1, random_state=0, ids=kwargs.get("ids"))

    monkeypatch.setattr(dyn, "record_dynamics", fake)
    return gate


def test_recording_stops_within_one_more_mini_batch_and_is_not_stored(gated_recording):
    gate, spec = gated_recording, dyn.DynamicsSpec(DIGITS, None, 4, 0)
    run = BackgroundRun(spec, dyn.prepare_record(spec)).start()
    gate.run_until(5)
    assert _stop_and_count(run, gate, ("dynamics", spec), stop=run.stop) <= 1
    assert run.error is None and run.result.stopped and not run.result.ok
    assert dyn.stored_dynamics(spec) is None  # a stopped recording is never kept as if complete
    fraction, text = dyn.describe_record(spec)(None, 3.0, TrainingStep("full", 2, 4, 3, 10, 13, 40))
    assert fraction == pytest.approx(13 / 40) and "epoch 2 of 4, batch 3 of 10" in text and "s left" in text

    again = BackgroundRun(spec, dyn.prepare_record(spec)).start()  # Record again starts over
    gate.release(1000)
    assert again.wait(60) and again.result.ok
    assert gated_recording.calls == 2 and dyn.stored_dynamics(spec) is again.result.value


def test_recording_whose_session_is_gone_is_cancelled(gated_recording):
    gate, spec = gated_recording, dyn.DynamicsSpec(DIGITS, None, 4, 1)
    alive = threading.Event()
    alive.set()
    run = BackgroundRun(spec, dyn.prepare_record(spec), alive=alive.is_set).start()
    gate.run_until(3)
    assert _stop_and_count(run, gate, ("dynamics", spec), stop=alive.clear) <= 1
    assert run.cancelled and run.result.stopped and dyn.stored_dynamics(spec) is None


def test_the_same_recording_asked_twice_runs_once(gated_recording):
    gate, spec = gated_recording, dyn.DynamicsSpec(DIGITS, None, 4, 2)
    first = BackgroundRun(spec, dyn.prepare_record(spec)).start()
    gate.run_until(2)
    second = BackgroundRun(spec, dyn.prepare_record(spec)).start()  # another session (or a rerun) joins it
    gate.release(1000)
    assert first.wait(60) and second.wait(60)
    assert gated_recording.calls == 1
    assert first.result.value is second.result.value is dyn.stored_dynamics(spec)


def test_one_of_two_sessions_stopping_leaves_the_recording_running(gated_recording):
    gate, spec = gated_recording, dyn.DynamicsSpec(DIGITS, None, 4, 3)
    first = BackgroundRun(spec, dyn.prepare_record(spec)).start()
    second = BackgroundRun(spec, dyn.prepare_record(spec)).start()
    gate.run_until(2)
    _wait(lambda: app_jobs.shared_jobs()._followers.get(("dynamics", spec)) == 2)
    first.stop()
    assert first.wait(30) and first.result.stopped
    assert app_jobs.shared_jobs().running(("dynamics", spec))  # the other session still waits for it
    gate.release(1000)
    assert second.wait(60) and second.result.ok and gated_recording.calls == 1


def test_the_real_recorder_stops_at_the_mini_batch_its_callback_refused():
    from aflite_core.dynamics import record_dynamics

    rng = np.random.default_rng(0)
    X = rng.normal(size=(320, 5))
    y = (X[:, 0] > 0).astype(int)
    seen: list[TrainingStep] = []

    def on_step(step: TrainingStep) -> bool:
        seen.append(step)
        return step.done < 7

    with pytest.raises(TrainingInterrupted):
        record_dynamics(X, y, X_partial=X[:, 1:], epochs=3, on_step=on_step)
    assert [s.done for s in seen] == list(range(1, 8))  # not one mini-batch after the refusal
    assert seen[0].total == 2 * 3 * 10 and seen[0].batches == 10
    with pytest.raises(TypeError, match="on_step"):
        record_dynamics(X, y, on_step="no")


# -- Training dynamics: the validation --------------------------------------------------------------------------
@pytest.fixture
def gated_validation(monkeypatch):
    gate = Gate()

    def fake(X, y, *, on_step=None, **kwargs):
        gate.calls += 1
        for i in range(30):
            gate.step()
            if on_step is not None and on_step(ValidationStep("training on fractions", i + 1, 30, "x")) is False:
                raise TrainingInterrupted
        return "validated"

    monkeypatch.setattr(checks, "validate_levels", fake)
    return gate


def test_validation_stops_within_one_more_step_and_is_not_stored(gated_validation):
    gate, spec = gated_validation, checks.ValidationSpec(DIGITS, None, 2, 0)
    run = BackgroundRun(spec, checks.prepare_validation(spec)).start()
    gate.run_until(4)
    assert _stop_and_count(run, gate, ("validation", spec), stop=run.stop) <= 1
    assert run.result.stopped and checks.stored_validation(spec) is None
    fraction, text = checks.describe_validation(None, 10.0, ValidationStep("training on fractions", 15, 30, "random"))
    assert 0.45 < fraction < 1 and "Step 4 of 4" in text and "s left" in text


def test_validation_whose_session_is_gone_is_cancelled_and_one_request_runs_once(gated_validation):
    gate, spec = gated_validation, checks.ValidationSpec(DIGITS, None, 2, 1)
    alive = threading.Event()
    alive.set()
    run = BackgroundRun(spec, checks.prepare_validation(spec), alive=alive.is_set).start()
    gate.run_until(2)
    assert _stop_and_count(run, gate, ("validation", spec), stop=alive.clear) <= 1
    assert run.cancelled and run.result.stopped

    spec2 = checks.ValidationSpec(DIGITS, None, 2, 2)
    runs2 = [BackgroundRun(spec2, checks.prepare_validation(spec2)).start() for _ in range(2)]
    _wait(lambda: app_jobs.shared_jobs()._followers.get(("validation", spec2)) == 2)
    gate.release(1000)
    assert all(r.wait(60) and r.result.value == "validated" for r in runs2)
    assert gated_validation.calls == 2  # one for the cancelled request, one for the request asked twice
    assert checks.stored_validation(spec2) == "validated"


def test_the_real_validation_stops_where_its_callback_refused():
    from aflite_core.dynamics.validation import validate_levels

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    stages: list[ValidationStep] = []

    def on_step(step: ValidationStep) -> bool:
        stages.append(step)
        return step.stage != "accuracy per level"

    with pytest.raises(TrainingInterrupted):
        validate_levels(X, y, epochs=2, on_step=on_step)
    assert stages[-1].stage == "accuracy per level" and stages[-1].done == 1  # after the first model fit
    fractions = [s.fraction for s in stages]
    assert fractions == sorted(fractions) and 0 < fractions[-1] < 0.5


# -- Inspect: removal stability over seeds ----------------------------------------------------------------------
@pytest.fixture
def gated_engine(monkeypatch):
    """The real AFLite runs of the stability job, each engine step (group of fits, block of predictions) gated."""
    gate = Gate()
    real = runs.prepare_run

    def prepare(spec, **kwargs):  # kwargs: the session's data the caller passes on
        target = real(spec, **kwargs)

        def gated(callback):
            class Reporter:
                def __call__(self, progress):
                    return callback(progress)

                def step(self, progress):
                    gate.step()
                    return callback.step(progress)

            gate.calls += 1
            return target(Reporter())

        return gated

    monkeypatch.setattr(insp, "prepare_run", prepare)
    return gate


def _stability_spec(seed: int) -> FilterSpec:
    return FilterSpec(DatasetSpec("circles"), 500, 200, 100, 0.5, 8, "slice", "logistic", seed)


def test_stability_stops_within_one_step_keeps_finished_seeds_and_continues(gated_engine):
    gate, spec = gated_engine, _stability_spec(11)
    runs.run_filter(spec)  # the Filter page's run: the report's first seed
    request = insp.StabilityRequest(spec, 3)
    run = BackgroundRun(request, insp.prepare_stability(request)).start()
    second = spec.with_(seed=spec.seed + 1)
    while runs.stored_result(second) is None:  # let the second seed finish, then a few steps of the third
        gate.run_until(gate.done + 1)
    gate.run_until(gate.done + 2)
    assert _stop_and_count(run, gate, ("stability", request), stop=run.stop) <= 1
    assert run.result.stopped
    finished = insp.finished_stability_specs(spec, 3)
    assert [s.seed for s in finished] == [11, 12]  # the seed in progress was dropped, the finished ones kept
    assert [s.seed for s in insp.missing_stability_runs(spec, 3)] == [13]
    _, summary, _ = insp.inspect_stability(spec, 3, only_finished=True)
    assert summary["n_runs"] == 2 and summary["seeds"] == [11, 12]
    fraction, text = insp.describe_stability(request)(insp.StabilityProgress(2, 2, 13, None), 4.0, None)
    assert fraction == pytest.approx(0.5) and "Seed 13 (run 2 of 2)" in text

    calls = gate.calls
    cont = BackgroundRun(request, insp.prepare_stability(request)).start()  # Continue: only the missing seed
    gate.release(10_000)
    assert cont.wait(120) and cont.result.ok
    assert gate.calls == calls + 1 and not insp.missing_stability_runs(spec, 3)
    assert insp.inspect_stability(spec, 3)[1]["n_runs"] == 3


def test_stability_whose_session_is_gone_is_cancelled_and_one_request_runs_once(gated_engine):
    gate, spec = gated_engine, _stability_spec(21)
    runs.run_filter(spec)
    request = insp.StabilityRequest(spec, 2)
    alive = threading.Event()
    alive.set()
    run = BackgroundRun(request, insp.prepare_stability(request), alive=alive.is_set).start()
    gate.run_until(2)
    assert _stop_and_count(run, gate, ("stability", request), stop=alive.clear) <= 1
    assert run.cancelled and run.result.stopped and insp.missing_stability_runs(spec, 2)

    calls = gate.calls
    both = [BackgroundRun(request, insp.prepare_stability(request)).start() for _ in range(2)]
    _wait(lambda: app_jobs.shared_jobs()._followers.get(("stability", request)) == 2)
    gate.release(10_000)
    assert all(r.wait(120) and r.result.ok for r in both)
    assert gate.calls == calls + 1  # two sessions asking for the same report: the missing seed ran once


# -- Embedding: the UMAP fit ------------------------------------------------------------------------------------
def test_umap_is_fitted_once_for_every_caller_and_shows_an_estimate(monkeypatch):
    release = threading.Event()
    calls = []

    def fake_umap(X, random_state=0):
        calls.append(1)
        release.wait(30)
        return np.asarray(X[:, :2], dtype=np.float32)

    monkeypatch.setattr(emb, "umap_2d", fake_umap)
    monkeypatch.setattr(emb, "_umap_compiled", set())  # as in a fresh process (other tests may have fitted UMAP)
    monkeypatch.delenv("AFLITE_APP_UMAP", raising=False)
    views = []
    threads = [threading.Thread(target=lambda: views.append(emb.embedding_view(DIGITS))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(views) == 4 and all(v.umap_status == "running" for v in views)
    assert views[0].estimate == pytest.approx(emb.umap_estimate(1438, compiled=False))
    fraction, text = emb.describe_umap(views[0])
    assert 0 <= fraction < 1 and "Computing UMAP" in text
    late = emb.EmbeddingView(views[0].projection, "running", elapsed=2 * views[0].estimate, estimate=views[0].estimate)
    assert emb.describe_umap(late)[0] < 1 and "longer than estimated" in emb.describe_umap(late)[1]
    release.set()
    _wait(lambda: emb.embedding_view(DIGITS).umap_status == "ready")
    assert emb.embedding_view(DIGITS).projection.method == "UMAP"
    assert len(calls) == 1  # four callers (reruns, sessions), one fit
    assert emb.umap_estimate(1438) < emb.umap_estimate(1438, compiled=False)  # compiled now


# -- Data: the sentence-embedding job of an upload --------------------------------------------------------------
@pytest.fixture
def gated_embedding(monkeypatch):
    from aflite_core.data import embeddings as core_embeddings

    gate = Gate()

    def fake_embed_views(frame, views, *, progress=None, **kwargs):
        gate.calls += 1
        for i in range(50):
            gate.step()
            if progress is not None:
                progress(core_embeddings.EmbeddingProgress("embed", "text", i + 1, 50, 0.1 * i, 1.0))
        return {view: np.zeros((len(frame), 4), dtype=np.float32) for view in views}

    status = core_embeddings.EmbeddingsStatus(True, (), "pip install ...", "")
    monkeypatch.setattr(upload_sentences, "embeddings_status", lambda: status)
    monkeypatch.setattr(upload_sentences._embeddings, "embed_views", fake_embed_views)
    return gate


def test_embedding_job_is_cancelled_only_when_every_session_that_asked_is_gone(gated_embedding):
    gate = gated_embedding
    frame = pd.DataFrame({"text": [f"row {i}" for i in range(20)], "label": ["a", "b"] * 10})
    spec = upload_sentences.EmbedSpec("digest", "t.csv", (("text", ("text",)),), "model")
    tabs = [threading.Event(), threading.Event()]
    for tab in tabs:
        tab.set()
    waits = [
        BackgroundRun(spec, upload_sentences.prepare_embedding(spec, frame), alive=tab.is_set).start() for tab in tabs
    ]
    gate.run_until(3)
    _wait(lambda: app_jobs.shared_jobs()._followers.get(spec) == 2)
    tabs[0].clear()  # one tab closed: the other still waits, so the job goes on
    assert waits[0].wait(30) and waits[0].cancelled and waits[0].result.stopped
    gate.run_until(gate.done + 3)
    assert app_jobs.shared_jobs().running(spec)
    # the last tab closed: the job is cancelled within one more chunk
    assert _stop_and_count(waits[1], gate, spec, stop=tabs[1].clear) <= 1
    assert waits[1].cancelled and waits[1].result.stopped and gate.calls == 1
    assert upload_sentences._embedding_store().recall(spec) is None


def test_level_accuracy_checks_for_a_stop_between_prediction_blocks_with_the_same_result(monkeypatch):
    from aflite_core.dynamics import heldout

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 5))
    y = (X[:, 0] > 0).astype(int)
    lv = np.where(np.abs(X[600:, 0]) > 1, "easy", np.where(np.abs(X[600:, 0]) > 0.2, "ambiguous", "hard"))
    whole = heldout.level_accuracy(lv, X[:600], y[:600], X[600:], y[600:], models=("knn",))
    monkeypatch.setattr(heldout, "_PREDICT_BLOCK_WORK", 600 * 5 * 64)  # blocks of 64 rows
    calls = []
    blocks = heldout.level_accuracy(
        lv, X[:600], y[:600], X[600:], y[600:], models=("knn",), callback=lambda *c: calls.append(c)
    )
    assert blocks.equals(whole) and len(calls) == 600 // 64 + 1 + 1  # every block, then the fit done
    seen = []

    def refuse_third(*c):
        seen.append(c)
        return len(seen) < 3

    with pytest.raises(TrainingInterrupted):
        heldout.level_accuracy(lv, X[:600], y[:600], X[600:], y[600:], models=("knn",), callback=refuse_third)
    assert len(seen) == 3
