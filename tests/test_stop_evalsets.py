"""Issue #17, "runs that do not stop", on the Evaluation sets page: Stop ends the study within one piece of work
(a group of partition fits, a block of predictions, one evaluated model's fit, a piece of embedded texts), a run
whose session is gone is cancelled, and the progress text moves inside a step."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest

from aflite_app.compute import evalsets as compute
from aflite_app.jobs import BackgroundRun
from aflite_core.data import embeddings, sentence_model
from aflite_core.evalsets import AdversarySetup, SetupStopped, text_adversary_setup


def _setup(n_train: int = 600, n_eval: int = 200, seed: int = 0) -> AdversarySetup:
    """Two planted adversaries; AFLite takes up to 10 rounds of 64 partitions, a few seconds in all."""
    rng = np.random.default_rng(seed)
    n = n_train + n_eval
    y = rng.integers(0, 2, n)
    reps = {}
    for name, signal in (("weak", 0.6), ("strong", 2.0)):
        X = rng.normal(size=(n, 16)).astype(np.float32)
        X[:, 0] += signal * (2 * y - 1)
        reps[name] = X
    labels = np.array(["no", "yes"], dtype=object)[y]
    tr, ev = slice(0, n_train), slice(n_train, n)
    return AdversarySetup(
        name="planted",
        train_X={k: X[tr] for k, X in reps.items()},
        train_y=labels[tr],
        eval_X={k: X[ev] for k, X in reps.items()},
        eval_y=labels[ev],
        adversaries=("weak", "strong"),
        evaluated=(("logistic", "weak"), ("logistic", "strong"), ("knn", "strong")),
        params={"target_size": 300, "train_size": 150, "slice_size": 30, "tau": 0.6, "n_partitions": 64},
    )


def _spec(n_seeds: int = 2, ensemble: bool = False) -> compute.EvalStudySpec:
    setspec = compute.EvalSetSpec(dataset="planted-for-test")
    compute._evalsets_setup_store().keep(setspec, _setup())  # the page's split, as if built already
    return compute.EvalStudySpec(
        setup=setspec,
        adversaries=("weak", "strong"),
        evaluated=("logistic:weak", "logistic:strong", "knn:strong"),
        n_seeds=n_seeds,
        tau=0.6,
        target_size=300,
        train_size=150,
        slice_size=30,
        n_partitions=64,
        ensemble=ensemble,
    )


class _Watch:
    """Wraps a BackgroundRun's reporter: records every step and calls ``stop_when(step)`` to decide when to stop."""

    def __init__(self, stop_when):
        self.stop_when = stop_when
        self.run: BackgroundRun | None = None
        self.steps: list = []
        self.after_stop: list = []
        self.texts: list[tuple[int, float, str]] = []

    def wrap(self, target):
        def wrapped(reporter):
            watch = self

            class Reporter:
                def __call__(self, progress):
                    return reporter(progress)

                def step(self, s):
                    if watch.run.stop_requested:
                        watch.after_stop.append(s)
                    watch.steps.append(s)
                    fraction, text = compute.describe_evalsets_study(watch.run.progress, s, 4)
                    watch.texts.append((s.step, fraction, text))
                    if not watch.run.stop_requested and watch.stop_when(s):
                        watch.run.stop()  # as the Stop button does, from another thread's point of view
                    return reporter.step(s)

            return target(Reporter())

        return wrapped

    def start(self, spec, alive=None) -> BackgroundRun:
        self.run = BackgroundRun(spec, self.wrap(compute.prepare_evalsets_study(spec)), alive=alive)
        self.run.start()
        assert self.run.wait(300), "the study did not end"
        assert self.run.error is None, self.run.error
        return self.run


def test_stop_inside_an_aflite_run_ends_the_study_at_once_with_a_partial_study():
    spec = _spec()
    watch = _Watch(lambda s: s.stage == "aflite" and s.step == 3 and s.round == 2 and s.phase == "fit")
    run = watch.start(spec)
    study = run.result
    assert run.stop_requested and not run.cancelled
    assert len(watch.after_stop) <= 1  # at most one more partition-fit group or prediction block after Stop
    assert not study.params["complete"]
    # step 2 (weak, seed 0) finished; step 3 (weak, seed 1) was abandoned in its round 2 and is left out
    assert list(study.runs_detail) == [("weak", 0)]
    assert set(study.runs["adversary"]) == {"weak"}
    assert study.params["evaluated_names"][:3] == ["logistic:weak", "logistic:strong", "knn:strong"]
    assert compute.stored_evalsets_study(spec) is None  # a partial study is not kept as the answer to spec


def test_stop_between_evaluated_model_fits_keeps_the_models_fitted():
    spec = _spec(n_seeds=1)
    watch = _Watch(lambda s: s.stage == "evaluated models" and s.model_index == 1)
    run = watch.start(spec)
    study = run.result
    fits_after = [s for s in watch.after_stop if s.stage == "evaluated models" and s.model is not None]
    assert len(fits_after) <= 1
    assert not study.params["complete"] and len(study.runs) == 0
    assert study.params["evaluated_names"] == ["logistic:weak"]
    assert "logistic:strong" in study.params["evaluated_not_fitted"]


def test_stop_inside_the_ensemble_run():
    spec = _spec(n_seeds=1, ensemble=True)
    watch = _Watch(lambda s: s.stage == "ensemble" and s.round == 1 and s.phase == "predict")
    run = watch.start(spec)
    assert len(watch.after_stop) <= 1
    study = run.result
    assert not study.params["complete"] and list(study.runs_detail) == [("weak", 0), ("strong", 0)]


def test_a_run_whose_session_is_gone_is_cancelled():
    spec = _spec()
    calls = []

    def alive() -> bool:  # the browser tab closes during the first AFLite run
        calls.append(1)
        return len(calls) < 25

    watch = _Watch(lambda s: False)
    run = watch.start(spec, alive=alive)
    assert run.cancelled and run.stop_requested
    assert not run.result.params["complete"]
    assert len(watch.steps) <= 26  # nothing ran on after the session was gone


def test_progress_moves_inside_an_aflite_run_with_round_and_share():
    spec = _spec(n_seeds=1)
    watch = _Watch(lambda s: False)
    run = watch.start(spec)
    assert run.result.params["complete"]
    inside = [(f, t) for step, f, t in watch.texts if step == 2]  # step 2 of 3: AFLite with weak, seed 0
    texts = [t for _, t in inside]
    assert texts[0] == "Step 2 of 3: AFLite with weak, seed 0"
    assert any(t.startswith("Step 2 of 3: AFLite with weak, seed 0 — round 1, fitting") for t in texts)
    assert any("— round 2" in t for t in texts)
    fractions = [f for f, _ in inside]
    assert fractions == sorted(fractions)  # never goes back
    assert fractions[-1] > fractions[0] + 0.1  # and moves within the step
    assert len(set(texts)) > 5
    models = [t for step, _, t in watch.texts if step == 1]
    assert "Step 1 of 3: training the evaluated models — knn:strong (3 of 3)" in models


def test_page_text_has_elapsed_time_and_time_left():
    from aflite_app import ui

    spec = _spec(n_seeds=1)
    watch = _Watch(lambda s: False)
    watch.start(spec)
    s = next(s for s in watch.steps if s.stage == "aflite" and s.round == 3)
    fraction, text = compute.describe_evalsets_study(None, s, 3)
    line = f"{text} · 12 s{ui.remaining_text(12.0, fraction)}"
    assert line.startswith("Step 2 of 3: AFLite with weak, seed 0 — round 3") and " % · 12 s · about " in line
    assert line.endswith(" s left")


# -- the split with sentence embeddings ----------------------------------------------------------------------------
class _FakeModel:
    """A stand-in sentence model: counts the texts it embeds."""

    def __init__(self):
        self.texts = 0

    def encode(self, texts, batch_size, convert_to_numpy, show_progress_bar):
        self.texts += len(texts)
        return np.array([[len(t), t.count(" "), 1.0] for t in texts], dtype=np.float32)


@pytest.fixture
def fake_sentence_model(monkeypatch):
    """The shared sentence model replaced by a fake one (loaded through the real cache, counted)."""
    model = _FakeModel()
    loads = []

    def load(path, device):
        loads.append(path)
        return model

    monkeypatch.setattr(sentence_model, "_MODELS", {})
    monkeypatch.setattr(sentence_model, "_load_sentence_model", load)
    return model, loads


def _pair_dataset(n: int = 600):
    from aflite_core.data.user_tables import dataset_from_table

    rng = np.random.default_rng(0)
    labels = np.array(["entailment", "neutral", "contradiction"], dtype=object)[rng.integers(0, 3, n)]
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "premise": [f"scene {i // 3} with a person" for i in range(n)],
            "hypothesis": [f"{lab} words {'x ' * (i % 5)}" for i, lab in enumerate(labels)],
            "label": labels,
        }
    )
    return dataset_from_table(frame, label_column="label", id_column="id", pair=("premise", "hypothesis"), name="p")


def test_embedding_setup_reports_the_model_load_then_pieces_and_stops_between_pieces(fake_sentence_model):
    model, loads = fake_sentence_model
    data = _pair_dataset()
    seen, stop_at = [], 3

    def progress(p):
        seen.append(p)
        return len(seen) < stop_at

    with pytest.raises(SetupStopped):
        text_adversary_setup(data, embeddings=True, progress=progress)
    assert [p.stage for p in seen] == ["load_model", "embed", "embed"]
    assert model.texts == 96  # one piece embedded, then the stop: no further piece
    assert len(loads) == 1

    seen.clear()
    stop_at = 10**6
    setup = text_adversary_setup(data, embeddings=True, progress=progress)
    assert "load_model" not in [p.stage for p in seen]  # loaded once per process
    assert seen[-1].stage == "done" and {"embedding", "embedding_hypothesis"} <= set(setup.adversaries)
    assert len(loads) == 1
    assert sum(p.stage == "embed" for p in seen) >= 2 * (len(setup.train_y) + len(setup.eval_y)) // 96


def test_app_builds_the_embedding_split_in_the_background_and_stop_gives_a_stopped_outcome(
    fake_sentence_model, monkeypatch
):
    data = _pair_dataset()
    monkeypatch.setattr(compute, "dataset", lambda key, **kwargs: data)  # kwargs: the session's data
    spec = compute.EvalSetSpec(dataset="p", embeddings=True)
    assert compute.evalsets_setup_is_slow(spec)
    texts = []

    def target(reporter):
        class R:
            def __call__(self, p):
                return reporter(p)

            def step(self, p):
                texts.append(compute.describe_evalsets_setup(None, 1.0, p)[1])
                if p.stage == "embed" and p.done >= 192:
                    run.stop()
                return reporter.step(p)

        return compute.prepare_evalsets_setup(spec)(R())

    run = BackgroundRun(spec, target).start()
    assert run.wait(120) and run.error is None
    assert run.result.stopped and compute.stored_evalsets_setup(spec) is None
    assert texts[0].startswith("Loading the sentence model…")
    assert any(t.startswith("Embedding 'embedding': 96 of ") and "s left" in t for t in texts)

    run = BackgroundRun(spec, compute.prepare_evalsets_setup(spec)).start()
    assert run.wait(120) and run.error is None and run.result.ok
    assert compute.stored_evalsets_setup(spec) is run.result.value


def test_the_sentence_model_is_loaded_once_for_concurrent_callers(fake_sentence_model):
    model, loads = fake_sentence_model
    gate = threading.Event()
    results, announced = [], []

    def slow_load(path, device):
        loads.append(path)
        gate.wait(2.0)  # the second caller arrives while the first is loading
        return model

    entered = threading.Event()

    def loader(path, device):
        entered.set()
        return slow_load(path, device)

    sentence_model._load_sentence_model, original = loader, sentence_model._load_sentence_model
    try:
        first = threading.Thread(target=lambda: results.append(embeddings.load_sentence_model()))
        second = threading.Thread(
            target=lambda: results.append(embeddings.shared_sentence_model(on_load=lambda: announced.append(1)))
        )
        first.start()
        assert entered.wait(5)  # the first caller is loading …
        second.start()  # … when the second one asks
        second.join(0.3)
        assert second.is_alive()  # it waits for that load instead of starting its own
        gate.set()
        for t in (first, second):
            t.join(10)
    finally:
        sentence_model._load_sentence_model = original
    assert len(loads) == 1 and results == [model, model] and announced == []
    assert embeddings.sentence_model_loaded()


# -- the page ------------------------------------------------------------------------------------------------------
def test_page_stop_button_ends_the_study_and_shows_it_as_partial(app_test, monkeypatch):
    """Run study, then Stop in the progress panel: the study ends within a step and the page says it is partial."""
    from aflite_app.state import EVALSETS_RUN

    counted = {"after_stop": 0, "steps": 0}
    real_prepare = compute.prepare_evalsets_study

    def counting_prepare(spec, **kwargs):  # kwargs: the session's data the page passes on
        target = real_prepare(spec, **kwargs)

        def wrapped(reporter):
            class R:
                def __call__(self, p):
                    return reporter(p)

                def step(self, s):
                    counted["steps"] += 1
                    time.sleep(0.02)  # a slower machine: the study cannot finish before the click
                    keep_going = reporter.step(s)
                    if not keep_going:
                        counted["after_stop"] += 1
                    return keep_going

            return target(R())

        return wrapped

    monkeypatch.setattr(compute, "prepare_evalsets_study", counting_prepare)
    at = app_test(page="pages/evaluation_sets.py")
    assert not at.exception, at.exception
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.3")
    next(b for b in at.button if b.label == "Run study").click().run()
    assert not at.exception, at.exception
    run = at.session_state[EVALSETS_RUN]
    deadline = time.perf_counter() + 60
    while counted["steps"] < 3 and time.perf_counter() < deadline:  # let it get going
        time.sleep(0.05)
    assert not run.done, "the default digits study should take longer than this"
    texts = [p.proto.text for p in at.get("progress")]
    assert texts and texts[0].startswith("Step "), texts
    # (AppTest reruns the whole script on a click, where the panel's st.rerun(scope="fragment") is refused; in
    # the browser the click reruns the fragment alone)
    at.button(key="es-stop").click().run()
    assert run.stop_requested
    assert run.wait(60)
    assert counted["after_stop"] <= 1  # the study saw the stop at its next step and ended
    at.run()
    assert not at.exception, [(e.message, e.stack_trace) for e in at.exception] + [len(run.result.runs)]
    assert any("partial study" in w.value for w in at.warning)
    assert not run.result.params["complete"]


def test_page_draws_a_study_stopped_before_any_aflite_run(app_test, monkeypatch):
    """Stopped while the evaluated models were trained: no AFLite run, one model; the page still draws."""
    real_prepare = compute.prepare_evalsets_study

    def stopping_prepare(spec, **kwargs):  # kwargs: the session's data the page passes on
        target = real_prepare(spec, **kwargs)

        def wrapped(reporter):
            class R:
                def __call__(self, p):
                    return reporter(p)

                def step(self, s):
                    return reporter.step(s) and not (s.stage == "evaluated models" and s.model_index == 1)

            return target(R())

        return wrapped

    monkeypatch.setattr(compute, "prepare_evalsets_study", stopping_prepare)
    at = app_test(page="pages/evaluation_sets.py")
    next(b for b in at.button if b.label == "Run study").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    warning = next(w.value for w in at.warning if "partial study" in w.value)
    assert "not run: mlp_small, pca, pixels, mlp" in warning and "evaluated models not trained:" in warning
