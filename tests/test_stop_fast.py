"""Stop answers within 2 s while a step that cannot be interrupted still runs (issue 29: "Stop within 2 s everywhere").

* **Filter**: the app's AFLite job (:func:`aflite_app.compute.runs.prepare_run`) offers its result so far; a Stop
  pressed while a deliberately slow piece of round 2 runs (15 s, no interruption point) is answered at once with the
  rounds finished before Stop - exactly what the run itself returns when it reaches its next step - while its thread
  ends in the background and counts as running (and holds its heavy-job slot) until then.
* **Baselines**: each cross-validation piece runs in a child process (:mod:`aflite_core._child_process`) that Stop
  ends: a Stop during a piece that would take ≥ 10 s ends the job and its child within 2 s.

The slow pieces are fakes (a gate the test opens), so "within 2 s" never times a real workload.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import sklearn  # noqa: F401 - loaded in a running server (a result's provenance names its version): not timed here

from aflite_app import admission
from aflite_app import jobs as app_jobs
from aflite_app.compute import runs
from aflite_app.jobs import BackgroundRun
from aflite_app.state import DatasetSpec, FilterSpec
from aflite_core import _child_process
from aflite_core.engine import local_backend

SPEC = FilterSpec(DatasetSpec("digits", "mlp"), target_size=700, train_size=300, slice_size=60, tau=0.5, seed=11)


@pytest.fixture(autouse=True)
def _fresh_caches():
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def _wait(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


class SlowRound2:
    """Once armed, the second round scored starts with a 15 s piece without an interruption point."""

    def __init__(self, real) -> None:
        self.real, self.armed, self.calls = real, True, 0
        self.gate, self.inside = threading.Event(), threading.Event()

    def __call__(self, *args, on_step=None, **kwargs):
        if self.armed:
            self.calls += 1
            if self.calls == 2:
                if on_step is not None:
                    on_step("fit", 0, 8)  # the round has begun (and reported it) ...
                self.inside.set()
                self.gate.wait(15)  # ... then a step that cannot be interrupted (the test opens the gate sooner)
        return self.real(*args, on_step=on_step, **kwargs)


@pytest.fixture
def slow_round_2(monkeypatch):
    slow = SlowRound2(local_backend.score_round)
    monkeypatch.setattr(local_backend, "score_round", slow)
    yield slow
    slow.gate.set()


def _job(spec: FilterSpec):
    """The Filter page's job for ``spec``, and a list that receives what the job itself returns."""
    target = runs.prepare_run(spec)
    returned = []

    def job(callback):
        returned.append(target(callback))
        return returned[-1]

    if isinstance(target, admission.HeavyJob):
        return admission.HeavyJob(job, target.what, target.queue), returned
    return job, returned


def test_filter_stop_during_a_slow_piece_answers_at_once_with_the_rounds_finished(slow_round_2):
    gate, inside = slow_round_2.gate, slow_round_2.inside
    job, returned = _job(SPEC)
    run = BackgroundRun(SPEC, job).start()
    _wait(inside.is_set)  # round 1 finished, round 2's slow piece runs
    assert run.progress is not None and run.progress.round == 1
    run.stop()
    t0 = time.monotonic()
    run.wait(app_jobs.STOP_GRACE_S)
    assert run.abandon()  # what the page does after its short wait: the result so far, now
    waited = time.monotonic() - t0
    assert waited < 2.0, waited
    assert run.done and not run.ended and not gate.is_set()  # the slow piece still runs
    shown = run.result
    assert shown.stopped and shown.n_rounds == 1
    assert app_jobs.running_jobs() >= 1  # its thread still counts until it really ends
    gate.set()
    _wait(lambda: run.ended)
    assert run.result is shown  # the page's result is not replaced
    own = returned[0]  # what the run returned when it reached its next step: the same rounds, the same arrays
    assert own.stopped and own.n_rounds == 1 and own.equals(shown)
    assert list(own.classes) == list(shown.classes)
    assert runs._result_store().recall(SPEC) is None  # a partial run is never stored


def test_a_stop_the_run_reaches_within_the_grace_keeps_its_own_ending(slow_round_2):
    """Without a slow step the run's own stop is awaited: abandon() then just reports it done."""
    slow_round_2.gate.set()  # no slow piece
    job, returned = _job(SPEC)
    run = BackgroundRun(SPEC, job).start()
    _wait(lambda: run.progress is not None)
    run.stop()
    _wait(lambda: run.ended)
    assert run.abandon() and not run.abandoned
    assert run.result is returned[0] and run.result.stopped


def test_an_abandoned_heavy_run_holds_its_slot_until_its_thread_ends(slow_round_2, monkeypatch):
    gate, inside = slow_round_2.gate, slow_round_2.inside
    monkeypatch.setattr(runs._stores, "MAX_INTERACTIVE_ROWS", 100)  # the digits are a heavy run now
    job, _ = _job(SPEC)
    assert isinstance(job, admission.HeavyJob)
    run = BackgroundRun(SPEC, job).start()
    _wait(inside.is_set)
    run.stop()
    assert run.abandon()
    queue = admission.heavy_queue()
    assert queue.running() == [job.what]  # still running: the next heavy job waits
    gate.set()
    _wait(lambda: run.ended)
    _wait(lambda: queue.running() == [])


def test_the_filter_page_shows_the_partial_result_in_the_rerun_stop_starts(app_test, slow_round_2, monkeypatch):
    """The Stop click's own rerun shows the stopped state - page and sidebar agree - while the slow piece still runs.

    Before, that rerun showed "Stopping…" and the page waited for the run to reach its next step (seconds under
    load; here 15 s).
    """
    slow_round_2.armed = False  # the page's default run first
    at = app_test(page="pages/filter.py")
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.3")
    slow_round_2.armed = True
    next(s for s in at.selectbox if s.key.startswith("model-")).set_value("logistic")
    at.button[0].click().run()  # the form's Run
    assert not at.exception
    _wait(slow_round_2.inside.is_set)  # round 1 finished; round 2's slow piece runs
    stop = next(b for b in at.button if b.key == "stop-run")
    t0 = time.monotonic()
    stop.click().run()
    rerun = time.monotonic() - t0
    assert not slow_round_2.gate.is_set()  # the piece still runs: the page did not wait for it
    assert not at.exception
    warning = next(w.value for w in at.warning if "partial" in w.value)
    assert warning.startswith("Stopped after round 1: this is a partial result")
    assert not at.get("progress")  # the progress bar is gone
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["kept"] == metrics["Rows kept"] and metrics["removed"] == metrics["Rows removed"]
    assert any("Partial run" in c.value for c in at.sidebar.caption)
    assert rerun < 15  # (the page's own render is not timed: under load it alone may take seconds)
    slow_round_2.gate.set()


def test_a_run_stopped_before_its_first_step_cannot_be_abandoned():
    """No result so far yet (planning): the page waits for the run's own stop, as before."""
    started = threading.Event()
    release = threading.Event()

    def job(callback):
        started.set()
        release.wait(10)
        return "done"

    run = BackgroundRun("k", job).start()
    _wait(started.is_set)
    assert not run.abandon()  # not stopped
    run.stop()
    assert not run.abandon() and not run.done  # stopped, but nothing offered
    release.set()
    assert run.wait(10) and run.result == "done"


def test_snapshot_result_equals_the_run_stopped_at_that_round():
    from aflite_core.data.planted_bias import make_planted_bias
    from aflite_core.engine.filtering import execute_run, plan_run

    X, y, _ = make_planted_bias(600, 6, random_state=2)
    kw = dict(target_size=200, train_size=120, slice_size=40, n_partitions=8, tau=0.5, random_state=3)
    frozen = []

    def callback(progress):
        frozen.append(run.snapshot())
        return progress.round < 2

    run = plan_run(X, y, **kw)
    run.callback = callback
    stopped = execute_run(run)
    assert stopped.n_rounds == 2 and stopped.stopped
    assert frozen[1].result().equals(stopped)
    first = frozen[0].result()
    assert first.n_rounds == 1 and first.stopped
    assert np.array_equal(first.removed_round, np.where(stopped.removed_round > 1, -1, stopped.removed_round))


# -- Baselines: every piece in a child process that Stop ends ------------------------------------------------------
def slow_cv_in_child(state, rep, mask, *args):
    """A cross-validation piece that would take 60 s (run in the comparison's child process)."""
    time.sleep(60)
    return {}


def _stoppable_children() -> list:
    import multiprocessing

    return [c for c in multiprocessing.active_children() if c.name == "aflite-stoppable" and c.is_alive()]


def test_baselines_stop_inside_a_slow_piece_ends_it_and_its_child_within_2_s(monkeypatch):
    from aflite_app.compute import baseline_pieces
    from aflite_app.compute import baselines as compute

    monkeypatch.setattr(baseline_pieces, "cv_in_child", slow_cv_in_child)
    monkeypatch.setattr(_child_process, "MIN_CELLS", 0)  # every piece in the child, however small
    options = compute.BaselineOptions(models=("logistic",), n_splits=2, seed=5)
    request = (SPEC, options)
    run = BackgroundRun(request, compute.prepare_baselines(SPEC, options)).start()
    # the one-shot filter ran in the child; the first cross-validation (60 s) runs there now
    _wait(lambda: run.progress is not None and run.progress[1].startswith("Subsets drawn"), timeout=120)
    _wait(lambda: bool(_stoppable_children()))
    time.sleep(0.5)
    assert not run.done
    run.stop()
    t0 = time.monotonic()
    run.wait(app_jobs.STOP_GRACE_S)
    run.abandon()
    _wait(lambda: run.ended and not _stoppable_children(), timeout=10)
    ended = time.monotonic() - t0
    assert ended < 2.0, ended
    assert run.result.stopped and run.error is None
    assert compute.stored_baselines(SPEC, options) is None


def test_baselines_numbers_are_the_same_in_the_child_process():
    from aflite_app.compute import baselines as compute

    _child_process.MIN_CELLS, before = 0, _child_process.MIN_CELLS
    options = compute.BaselineOptions(models=("logistic", "knn"), n_splits=2, seed=3)
    here = compute.baselines(SPEC, options)  # no stop: every piece in this thread
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    children = []
    try:
        there = compute.baselines(SPEC, options, stop=lambda: children.append(1) is not None)  # in the child
    finally:
        _child_process.MIN_CELLS = before
    assert children  # stop() was asked: the pieces ran in the child process
    assert here.accuracies.equals(there.accuracies) and here.bias.equals(there.bias)
    assert here.sizes == there.sizes
