"""The background run behind the Filter page's progress bar and Stop button."""

from __future__ import annotations

import threading

import numpy as np

from aflite_app.jobs import BackgroundRun
from aflite_core import aflite
from aflite_core.data.planted_bias import make_planted_bias


def test_stop_really_stops_the_engine_and_keeps_the_partial_result():
    X, y, _ = make_planted_bias(3000, 8, class_sep=1.5, random_state=0)
    gate = threading.Event()
    rounds_seen = []

    def target(callback):
        def slow(progress):
            rounds_seen.append(progress.round)
            gate.wait(5)  # hold the engine after round 1 until the test asked to stop
            return callback(progress)

        return aflite(X, y, target_size=500, train_size=300, slice_size=50, tau=0.5, random_state=0, callback=slow)

    run = BackgroundRun("k", target).start()
    while not rounds_seen and not run.done:  # the engine finished round 1 and waits at the gate
        run.wait(0.01)
    assert not run.done
    run.stop()
    gate.set()
    assert run.wait(30)
    assert run.error is None
    res = run.result
    assert res.stopped and res.n_rounds == 1 and rounds_seen == [1]
    assert res.n_kept == 3000 - 50
    assert run.stop_requested and run.elapsed > 0


def test_errors_are_kept_for_the_page():
    def target(callback):
        raise ValueError("The 'tau' parameter of aflite must be a float in [0, 1]. Got 3 instead.")

    run = BackgroundRun("k", target).start()
    assert run.wait(5)
    assert isinstance(run.error, ValueError) and run.result is None


def test_a_run_that_is_not_stopped_completes():
    X, y, _ = make_planted_bias(400, 4, random_state=0)
    run = BackgroundRun(
        "k", lambda cb: aflite(X, y, target_size=200, train_size=80, slice_size=40, random_state=0, callback=cb)
    ).start()
    assert run.wait(30)
    assert not run.result.stopped
    assert np.array_equal(
        run.result.kept, aflite(X, y, target_size=200, train_size=80, slice_size=40, random_state=0).kept
    )


def _sklearn_target(X, y, seen_after_stop, run_ref):
    from sklearn.linear_model import LogisticRegression

    def target(callback):
        def on_step(step):
            if run_ref[0] is not None and run_ref[0].stop_requested:
                seen_after_stop.append(step)
            return callback.step(step)

        return aflite(
            X,
            y,
            target_size=400,
            train_size=200,
            slice_size=20,
            tau=0.5,
            n_partitions=64,
            model=LogisticRegression(max_iter=300),
            random_state=0,
            callback=callback,
            on_step=on_step,
        )

    return target


def test_stop_ends_the_run_within_one_fit_not_at_the_end_of_the_round():
    X, y, _ = make_planted_bias(1500, 16, random_state=1)
    seen_after_stop, ref = [], [None]
    run = BackgroundRun("k", _sklearn_target(X, y, seen_after_stop, ref))
    ref[0] = run
    run.start()
    while run.step is None or run.step.done < 5:  # a few partition fits into round 1
        run.wait(0.005)
    run.stop()
    assert run.wait(30) and run.error is None
    res = run.result
    assert res.stopped and res.n_rounds == 0 and res.n_kept == 1500  # round 1 abandoned, nothing removed
    assert len(seen_after_stop) <= 1  # at most the step that was already on its way when Stop was pressed


def test_a_run_whose_session_is_gone_is_cancelled():
    X, y, _ = make_planted_bias(1500, 16, random_state=1)
    seen_after_stop, ref = [], [None]
    gone = threading.Event()
    run = BackgroundRun("k", _sklearn_target(X, y, seen_after_stop, ref), alive=lambda: not gone.is_set())
    ref[0] = run
    run.start()
    while run.step is None or run.step.done < 3:
        run.wait(0.005)
    gone.set()  # the browser tab was closed
    assert run.wait(30)
    assert run.cancelled and run.stop_requested and run.result.stopped
