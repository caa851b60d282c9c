"""The background run behind the Filter page's progress bar and Stop button."""

from __future__ import annotations

import threading

import numpy as np

from aflite_app.runner import BackgroundRun
from aflite_core import aflite
from aflite_core.synthetic import make_planted_bias


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
