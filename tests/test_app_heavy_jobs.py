"""Issue 25: τ and k on an opened run of any size, and one server-wide queue for the app's heavy jobs.

* An opened CLI run of 100,000 rows (d = 16, written by the CLI under a temp run root, opened as the Data page
  opens runs): τ up and back is read off the stored run (a spy on the engine sees no AFLite run) and equals a
  direct run; a τ below it starts a background run, no row limit in the way (the 60,000-row refusal that named
  the CLI is gone); a run the machine has no memory for is refused with advice that works.
* Admission control (:class:`aflite_app.admission.HeavyQueue`): a second heavy job waits, shows its place ("next in
  line, behind a UMAP projection"), is taken out of the line by Stop, and a closed session's queued job is
  dropped; ``AFLITE_HEAVY_JOBS`` runs more at once; light jobs never wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from aflite_app import admission, jobs
from aflite_app.jobs import BackgroundRun, Stopped

N_ROWS = 100_000
#: the CLI run's τ, seed and output folder (the folder follows)
RUN_TAIL = ("--tau", "0.6", "--seed", "0", "--quiet", "--out")


@pytest.fixture(autouse=True)
def _fresh_caches():
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def _wait(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


class Gated:
    """A job that runs until the test opens its gate; ``started`` is set once it runs."""

    def __init__(self) -> None:
        self.started, self.gate, self.calls = threading.Event(), threading.Event(), 0

    def __call__(self, callback) -> str:
        self.calls += 1
        self.started.set()
        assert self.gate.wait(30)
        return "done"


# -- the queue --------------------------------------------------------------------------------------------------
def test_a_second_heavy_job_waits_shows_its_place_and_stop_takes_it_out():
    first, second, third = Gated(), Gated(), Gated()
    umap = BackgroundRun("umap", admission.heavy(first, "a UMAP projection")).start()
    assert first.started.wait(10) and umap.waiting is None
    waiting = BackgroundRun("run", admission.heavy(second, "an AFLite run on 100,000 rows")).start()
    _wait(lambda: waiting.waiting is not None)
    assert waiting.waiting.startswith("Waiting: next in line, behind a UMAP projection")
    later = BackgroundRun("stability", admission.heavy(third, "a stability report (3 seeds)")).start()
    _wait(lambda: later.waiting is not None)
    assert "2nd in line, behind a UMAP projection and 1 more waiting" in later.waiting
    assert admission.heavy_queue().waiting() == ["an AFLite run on 100,000 rows", "a stability report (3 seeds)"]
    assert jobs.running_jobs() == 1  # queued jobs use no core (app_threads divides the cores by the running)

    waiting.stop()  # the page's Stop button: out of the line, never run
    assert waiting.wait(10) and isinstance(waiting.error, jobs.StoppedWaiting) and second.calls == 0
    assert "Stopped before it started" in str(waiting.error)
    _wait(lambda: later.waiting is not None and later.waiting.startswith("Waiting: next in line"))
    assert not third.started.is_set()

    time.sleep(0.6)
    first.gate.set()  # the UMAP finishes: the next in line starts
    assert umap.wait(10) and umap.result == "done"
    assert third.started.wait(10) and later.waiting is None
    third.gate.set()
    assert later.wait(10) and later.result == "done" and second.calls == 0
    assert later.elapsed < 0.5  # its time (and the page's time left) counts from its turn, not from the wait
    assert admission.heavy_queue().running() == [] and admission.heavy_queue().waiting() == []


def test_a_closed_sessions_queued_job_is_dropped():
    first, second, third = Gated(), Gated(), Gated()
    running = BackgroundRun("a", admission.heavy(first, "a UMAP projection")).start()
    assert first.started.wait(10)
    alive = threading.Event()
    alive.set()
    queued = BackgroundRun("b", admission.heavy(second, "a stability report"), alive=alive.is_set).start()
    after = BackgroundRun("c", admission.heavy(third, "sentence embeddings of 9 rows")).start()
    _wait(lambda: admission.heavy_queue().waiting() == ["a stability report", "sentence embeddings of 9 rows"])
    alive.clear()  # its browser tab closed: dropped from the line within a poll, before it ever ran
    assert queued.wait(5) and queued.cancelled and isinstance(queued.error, Stopped)
    assert admission.heavy_queue().waiting() == ["sentence embeddings of 9 rows"]
    first.gate.set()
    assert third.started.wait(10) and second.calls == 0
    third.gate.set()
    assert running.wait(10) and after.wait(10) and after.result == "done"


def test_a_followed_shared_job_shows_its_place_to_every_follower():
    """Stability and embeddings are shared jobs: each session's BackgroundRun follows one queued job."""
    first, shared = Gated(), Gated()
    running = BackgroundRun("umap", admission.heavy(first, "a UMAP projection")).start()
    assert first.started.wait(10)
    job = admission.heavy(shared, "a stability report (2 seeds)")
    registry = jobs.shared_jobs()

    def target(callback):
        return jobs.as_outcome(lambda: registry.follow("report", job, callback), "Stability")

    followers = [BackgroundRun("report", target).start() for _ in range(2)]
    _wait(lambda: all(f.waiting is not None for f in followers))
    assert all("next in line, behind a UMAP projection" in f.waiting for f in followers)
    assert admission.heavy_queue().waiting() == ["a stability report (2 seeds)"]  # one job for both sessions
    for follower in followers:  # both stop: nobody follows the job any more, so it leaves the line
        follower.stop()
        assert follower.wait(10) and follower.result.stopped
    _wait(lambda: admission.heavy_queue().waiting() == [])
    first.gate.set()
    assert running.wait(10) and shared.calls == 0


def test_heavy_jobs_setting_runs_more_at_once(monkeypatch):
    from aflite_app import settings

    monkeypatch.setenv(settings.HEAVY_JOBS_ENV, "2")
    assert settings.load().heavy_jobs == 2 and admission.heavy_queue().slots == 2
    a, b, c = Gated(), Gated(), Gated()
    runs_ = [BackgroundRun(i, admission.heavy(g, f"job {i}")).start() for i, g in enumerate((a, b, c))]
    assert a.started.wait(10) and b.started.wait(10)
    _wait(lambda: runs_[2].waiting is not None)
    assert "2 heavy jobs run at a time" in runs_[2].waiting
    for g in (a, b, c):
        g.gate.set()
    assert all(r.wait(10) for r in runs_) and c.calls == 1


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5"])
def test_a_bad_heavy_jobs_value_is_ignored(monkeypatch, raw):
    from aflite_app import settings

    settings._warned.clear()
    assert settings.load({settings.HEAVY_JOBS_ENV: raw}).heavy_jobs == 1


def test_only_runs_above_the_interactive_size_are_heavy(monkeypatch):
    from aflite_app.compute import _stores, runs
    from aflite_app.state import DatasetSpec, FilterSpec

    spec = FilterSpec(DatasetSpec("digits", "mlp"), target_size=900, train_size=300, slice_size=200, tau=0.6)
    assert not isinstance(runs.prepare_run(spec), admission.HeavyJob)  # the digits' 1,438 rows: light, never queued
    monkeypatch.setattr(_stores, "MAX_INTERACTIVE_ROWS", 1_000)
    job = runs.prepare_run(spec)
    assert isinstance(job, admission.HeavyJob) and job.what == "an AFLite run on 1,438 rows"


def test_a_run_another_session_finished_while_this_one_waited_is_not_run_again(monkeypatch):
    """Two sessions ask for the same large run: the second, queued behind the first, takes its stored result."""
    from aflite_app.compute import runs
    from aflite_app.state import DatasetSpec, FilterSpec

    calls = _spy_runs(monkeypatch)
    spec = FilterSpec(DatasetSpec("digits", "mlp"), target_size=900, train_size=300, slice_size=200, tau=0.6)
    first, second = runs.prepare_run(spec), runs.prepare_run(spec)  # both planned before either ran
    done = first(lambda _p: True)
    assert calls == [0.6] and second(lambda _p: True) is done and calls == [0.6]


def test_a_run_the_server_has_no_memory_for_is_refused_with_advice_that_works(monkeypatch):
    from aflite_app.compute import run_costs, runs
    from aflite_app.specs import SessionData
    from aflite_app.state import DatasetSpec, FilterSpec

    spec = FilterSpec(DatasetSpec("digits", "mlp"), target_size=900, train_size=300, slice_size=200, tau=0.6)
    need = run_costs.run_memory_bytes(spec, 1438, 64)
    assert need >= 1438 * 64 * 4 * run_costs.RUN_MEMORY_FACTOR
    monkeypatch.setattr(run_costs, "available_memory_bytes", lambda: need - 1)
    with pytest.raises(ValueError) as refused:
        runs.prepare_run(spec)
    text = str(refused.value)
    assert "1,438 rows × 64 features needs about" in text and "try again once" in text
    assert "python -m aflite_core" not in text and "open the run directory" not in text
    opened = SessionData(run_dirs={"x": {"spec": spec.with_(tau=0.7, slice_size=150), "result": None}})
    with pytest.raises(ValueError, match=r"keep k at 150 and τ at 0\.70 or above \(read off the opened run"):
        runs.prepare_run(spec, session=opened)
    monkeypatch.setattr(run_costs, "available_memory_bytes", lambda: None)  # the platform does not say: run it
    assert callable(runs.prepare_run(spec))
    assert run_costs.available_memory_bytes.__module__  # (the real one reads psutil or /proc/meminfo)


def test_available_memory_is_read():
    from aflite_app.compute import run_costs

    free = run_costs.available_memory_bytes()
    assert free is None or free > 0


# -- an opened run of 100,000 rows --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_run(tmp_path_factory):
    """A CLI run of 100,000 × 16 (3 classes, planted shortcut) under a run root, written in about 2 s."""
    from aflite_core.cli import main
    from aflite_core.data.planted_bias import make_planted_bias

    root = tmp_path_factory.mktemp("runs")
    data = root / "data"
    data.mkdir()
    X, y, _ = make_planted_bias(N_ROWS, 16, n_classes=3, random_state=0)
    np.save(data / "X.npy", X)
    np.savetxt(data / "y.txt", y, fmt="%d")
    args = ["--target-size", "50000", "--train-size", "2000", "--slice-size", "5000", "--partitions", "8"]
    out = root / "big"
    code = main(
        ["filter", "--features", str(data / "X.npy"), "--labels", str(data / "y.txt"), *args, *RUN_TAIL, str(out)]
    )
    assert code == 0
    return root


def _spy_runs(monkeypatch) -> list:
    from aflite_app.compute import runs

    calls = []
    real = runs.execute_run

    def counting(run, **kwargs):
        calls.append(float(run.config.tau))
        return real(run, **kwargs)

    monkeypatch.setattr(runs, "execute_run", counting)
    return calls


def _open_big(app_test, big_run, monkeypatch):
    from test_app_rundir import _open

    monkeypatch.setenv("AFLITE_RUN_ROOT", str(big_run))
    at = _open(app_test(page="pages/data.py"), "big")
    assert not at.exception, at.exception
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    return at


def _texts(at) -> str:
    return " ".join(e.value for kind in ("caption", "error", "warning", "info", "success") for e in at.get(kind))


@pytest.mark.slow
def test_tau_up_and_back_on_an_opened_run_of_100000_rows_is_read_off_and_below_runs(app_test, big_run, monkeypatch):
    from aflite_app.compute import runs
    from aflite_app.state import DATASET, LAST, RUN_DIRS, UPLOADS
    from aflite_core import aflite

    calls = _spy_runs(monkeypatch)
    entered = []
    real_enter = admission.HeavyQueue.enter
    monkeypatch.setattr(
        admission.HeavyQueue, "enter", lambda self, what, *a: entered.append(what) or real_enter(self, what, *a)
    )
    at = _open_big(app_test, big_run, monkeypatch)
    key = at.session_state[DATASET]
    opened = at.session_state[RUN_DIRS][key]["result"]
    assert opened.n_rows == N_ROWS and at.session_state[LAST].tau == 0.6 and calls == []
    data = at.session_state[UPLOADS][key]
    X = data.representation("features")
    for tau in (0.7, 0.6):  # up, and back to the opened run's own τ
        at.slider(key="tau").set_value(tau).run()
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error]
        assert calls == [], f"an AFLite run was started for τ = {tau}"
        spec = at.session_state[LAST]
        shown = runs.result(spec, session=replace(runs.NO_SESSION, run_dirs=at.session_state[RUN_DIRS]))
        assert shown.n_rows == N_ROWS and shown.params["tau"] == tau
        labels = np.asarray(data.classes)[data.y]  # the CLI's run had the label strings and no ids
        direct = aflite(X, labels, model=spec.model, random_state=spec.seed, **spec.as_kwargs())
        if tau == 0.6:
            assert shown is opened and runs.narrowed_from(shown) is None
            assert shown.equals(replace(direct, provenance=dict(direct.provenance)))
        else:
            assert runs.narrowed_from(shown) == 0.6 and "Read off the run at τ = 0.60" in _texts(at)
            assert shown.equals(replace(direct, provenance=dict(direct.provenance, narrowed_from_tau=0.6)))
    # a τ below the opened run's: a background AFLite run (a heavy job, through the queue), never refused
    at.slider(key="tau").set_value(0.5).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert "more than the app filters interactively" not in _texts(at)
    assert calls == [0.5] and entered == [f"an AFLite run on {N_ROWS:,} rows"]
    assert "An AFLite run at τ = 0.50" in _texts(at)
    assert {m.label: m.value for m in at.metric}["Rows kept"] == f"{runs.result(at.session_state[LAST]).n_kept:,}"


@pytest.mark.slow
def test_a_k_change_on_an_opened_run_waits_in_the_queue_and_stop_cancels_it(app_test, big_run, monkeypatch):
    from aflite_app.state import filter_key

    calls = _spy_runs(monkeypatch)
    at = _open_big(app_test, big_run, monkeypatch)
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.3")
    holder = admission.heavy_queue().enter("a UMAP projection")  # another session's heavy job holds the one slot
    assert holder.admitted
    key = at.session_state["dataset_key"]
    at.slider(key=filter_key("k", key)).set_value(4000).run()
    assert not at.exception, at.exception
    progress = " ".join(p.proto.text for p in at.get("progress"))
    assert "Waiting: next in line, behind a UMAP projection" in progress, progress
    assert admission.heavy_queue().waiting() == [f"an AFLite run on {N_ROWS:,} rows"]
    next(b for b in at.button if b.label == "Stop").click().run()  # the existing Stop button leaves the line
    assert not at.exception, at.exception
    assert any("Stopped before it started" in w.value for w in at.warning) and not at.error
    assert admission.heavy_queue().waiting() == [] and calls == []
    # asked again, then k moved back to the opened run's: the page shows the opened run, and the queued rerun
    # nobody waits for any more leaves the line
    at.slider(key=filter_key("k", key)).set_value(3000).run()
    assert admission.heavy_queue().waiting() == [f"an AFLite run on {N_ROWS:,} rows"]
    at.slider(key=filter_key("k", key)).set_value(5000).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    _wait(lambda: admission.heavy_queue().waiting() == [])
    assert calls == [] and {m.label: m.value for m in at.metric}["Rows kept"] == "50,000"
    holder.leave()


# -- Baselines: a background job (issue 25) that waits its turn in the same queue -----------------------------------
@pytest.mark.slow
def test_baselines_wait_their_turn_in_the_page_and_then_compute(app_test, monkeypatch):
    seen = []
    real = admission.Ticket.describe
    monkeypatch.setattr(admission.Ticket, "describe", lambda self: seen.append(real(self)) or seen[-1])
    at = app_test(page="pages/filter.py")
    assert not at.exception, at.exception
    at.session_state["bl-models"], at.session_state["bl-folds"] = ["logistic"], 2  # a quick comparison
    holder = admission.heavy_queue().enter("a UMAP projection")  # the one slot is taken
    timer = threading.Timer(1.5, holder.leave)  # the UMAP ends while the page waits
    timer.start()
    at.switch_page("pages/baselines.py").run()
    timer.join()
    assert not at.exception, at.exception
    assert any(s and s.startswith("Waiting: next in line, behind a UMAP projection") for s in seen), seen
    for _ in range(100):  # a background job since issue 25: its place, then its progress, then the report
        if {m.label for m in at.metric} >= {"Full data"}:
            break
        time.sleep(0.2)
        at.run()
    assert {m.label for m in at.metric} >= {"Full data", "AFLite kept"}  # computed once its turn came
    assert admission.heavy_queue().running() == [] and admission.heavy_queue().waiting() == []


@pytest.mark.slow
def test_a_stop_while_baselines_wait_is_said_and_nothing_runs(app_test, monkeypatch):
    from aflite_app.compute import baselines

    at = app_test(page="pages/filter.py")
    assert not at.exception, at.exception
    monkeypatch.setattr(baselines, "baselines", lambda *a, **k: pytest.fail("the Baselines ran after Stop"))
    holder = admission.heavy_queue().enter("a UMAP projection")  # the one slot is taken: the comparison waits
    try:
        at.switch_page("pages/baselines.py").run()
        assert not at.exception, at.exception
        assert "Waiting: next in line" in at.get("progress")[0].proto.text
        next(b for b in at.button if b.label == "Stop").click().run()  # its place in line and Stop, at once
        assert not at.exception, at.exception
        assert any("Stopped before it started" in w.value for w in at.warning)
        assert admission.heavy_queue().waiting() == []
    finally:
        holder.leave()
