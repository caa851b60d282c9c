"""Issue 23, item 3 (one τ path): the Filter page reads a higher τ off a stored run instead of running AFLite.

The page's run at a τ at or above a complete stored run of the same spec is :func:`aflite_core.engine.tau_path.
narrow_to_tau` of it; it must equal a direct :func:`aflite_core.aflite` run at that τ (the creation time, the
per-round seconds and the recorded ``narrowed_from_tau`` aside), for a run stopped by the target and one stopped by
τ, on the digits and on real SNLI embeddings, and a spy on the engine shows that no AFLite run was started for it.
A τ below every stored run runs AFLite once, and the page says which of the two it did.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

pytestmark = pytest.mark.slow


def _spy_runs(monkeypatch) -> list:
    """Count the AFLite runs the app starts (every Filter run goes through ``runs.execute_run``)."""
    from aflite_app.compute import runs

    calls = []
    real = runs.execute_run

    def counting(run, **kwargs):
        calls.append(float(run.config.tau))
        return real(run, **kwargs)

    monkeypatch.setattr(runs, "execute_run", counting)
    return calls


def _presets(key: str, rep: str, *, tau: float, target: int, train: int, k: int, m: int, strategy="slice") -> dict:
    """Session state that starts the Filter page of dataset ``key`` at these parameters (as an opened run does)."""
    from aflite_app.state import DATASET, REPRESENTATION, TAU, filter_key

    values = {"target": target, "train": train, "m": m, "seed": 0, "k": k, "strategy": strategy, "model": "linear"}
    return {DATASET: key, REPRESENTATION: rep, TAU: tau} | {filter_key(n, key): v for n, v in values.items()}


def _direct(spec, data):
    """A direct run of the core at ``spec`` on ``data``, with the class names the app gives its runs."""
    from aflite_app.compute.runs import with_class_names
    from aflite_core import aflite

    X = data.representation(spec.dataset.representation)
    res = aflite(X, data.y, model=spec.model, random_state=spec.seed, ids=data.ids, **spec.as_kwargs())
    return with_class_names(res, tuple(data.classes))


def _shown(at):
    """The spec and the result the Filter page showed (the one source: ``runs.result``)."""
    from aflite_app.compute import runs
    from aflite_app.state import LAST

    spec = at.session_state[LAST]
    return spec, runs.result(spec)


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def _check_read_off(at, data, calls, n_calls, base_tau, tau, reason):
    """The page at ``tau`` was read off the run at ``base_tau``: no new run, equal to a direct run, said so."""
    from aflite_app.compute import runs

    at.slider(key="tau").set_value(tau).run()
    assert not at.exception, at.exception
    assert len(calls) == n_calls, f"an AFLite run was started for τ = {tau} ({calls})"
    spec, shown = _shown(at)
    assert spec.tau == tau and shown.params["tau"] == tau
    assert runs.narrowed_from(shown) == base_tau
    direct = _direct(spec, data)
    assert direct.stop_reason == reason, (tau, direct.stop_reason)
    expected = replace(direct, provenance=dict(direct.provenance, narrowed_from_tau=base_tau))
    assert shown.equals(expected), f"τ = {tau}: the run read off τ = {base_tau} differs from a direct run"
    assert {m.label: m.value for m in at.metric}["Rows kept"] == f"{direct.n_kept:,}"
    assert any(direct.stop_message == s.value for s in at.success)
    assert f"Read off the run at τ = {base_tau:.2f}" in _captions(at)
    return shown


def _walk_the_tau_path(at, data, calls, low, target_tau, tau_tau, below, between):
    """Start at ``low``; read off ``target_tau`` (stopped by the target) and ``tau_tau`` (stopped by τ); go below."""
    assert not at.exception, at.exception
    assert calls == [low]  # the page's first run
    assert f"An AFLite run at τ = {low:.2f}" in _captions(at)
    _check_read_off(at, data, calls, 1, low, target_tau, "target_size_reached")
    shown = _check_read_off(at, data, calls, 1, low, tau_tau, "fewer_than_k_qualified")
    # the sidebar shows the same run: the one source of "the current run"
    assert {m.label: m.value for m in at.sidebar.metric}["kept"] == f"{shown.n_kept:,}"
    # a τ below the stored run runs AFLite once, says so, and is stored: a τ above it is read off it
    at.slider(key="tau").set_value(below).run()
    assert not at.exception, at.exception
    assert calls == [low, below]
    assert f"An AFLite run at τ = {below:.2f}" in _captions(at)
    spec, shown = _shown(at)
    assert shown.provenance.get("narrowed_from_tau") is None and shown.equals(_direct(spec, data))
    reason = _direct(spec.with_(tau=between), data).stop_reason
    _check_read_off(at, data, calls, 2, below, between, reason)
    # Inspect shows that run too, without running anything
    at.switch_page("pages/inspect.py").run()
    assert not at.exception, at.exception
    assert len(calls) == 2
    assert any(f"τ = {between:g}," in m.value for m in at.markdown if "Showing" in m.value)


def test_digits_a_higher_tau_is_read_off_the_stored_run_and_equals_a_direct_run(app_test, monkeypatch):
    calls = _spy_runs(monkeypatch)
    at = app_test(page="pages/filter.py", **_presets("digits", "mlp", tau=0.4, target=100, train=60, k=72, m=64))
    from aflite_core.data.digits import load_digits_dataset

    _walk_the_tau_path(at, load_digits_dataset(), calls, low=0.4, target_tau=0.5, tau_tau=0.8, below=0.35, between=0.38)


@pytest.mark.shared_data
def test_snli_a_higher_tau_is_read_off_the_stored_run_and_equals_a_direct_run(app_test, monkeypatch, shared_data):
    import pandas as pd

    from aflite_core import dataset_from_table

    lines = (shared_data / "snli_sample.jsonl").read_text(encoding="utf-8").splitlines()[:1500]
    rows = [json.loads(line) for line in lines]
    frame = pd.DataFrame({"label": [r["label"] for r in rows], "hypothesis": [r["hypothesis"] for r in rows]})
    X = np.load(shared_data / "snli_sample.hyp_minilm.npy")[:1500]
    data = dataset_from_table(frame, label_column="label", features={"minilm": X}, name="SNLI sample")
    calls = _spy_runs(monkeypatch)
    state = _presets("upload-snli", "minilm", tau=0.4, target=1000, train=300, k=100, m=32)
    at = app_test(page="pages/filter.py", uploads={"upload-snli": data}, **state)
    _walk_the_tau_path(at, data, calls, low=0.4, target_tau=0.5, tau_tau=0.7, below=0.35, between=0.38)


@pytest.mark.parametrize("strategy", ["sample", "greedy"])
def test_strategies_that_cannot_be_read_off_run_for_each_tau(app_test, monkeypatch, strategy):
    from aflite_app.compute import runs

    calls = _spy_runs(monkeypatch)
    at = app_test(
        page="pages/filter.py",
        **_presets("digits", "mlp", tau=0.8, target=1300, train=60, k=40, m=8, strategy=strategy),
    )
    assert not at.exception, at.exception
    at.slider(key="tau").set_value(0.9).run()
    assert not at.exception, at.exception
    assert calls == [0.8, 0.9]
    _, shown = _shown(at)
    assert runs.narrowed_from(shown) is None and "this strategy is run for each τ" in _captions(at)


def test_a_stopped_run_is_never_read_off(monkeypatch):
    """narrow_to_tau refuses a run stopped on request; the look-up does not offer it (it would raise)."""
    from aflite_app.compute import runs
    from aflite_app.state import DatasetSpec, FilterSpec
    from aflite_core import aflite
    from aflite_core.data.digits import load_digits_dataset

    data = load_digits_dataset()
    spec = FilterSpec(DatasetSpec("digits", "mlp"), target_size=100, train_size=60, slice_size=72, tau=0.4)
    stopped = aflite(
        data.representation("mlp"), data.y, random_state=0, callback=lambda p: p.round < 2, **spec.as_kwargs()
    )
    assert stopped.stop_reason == "stopped_by_callback"
    assert not runs.can_narrow(spec.with_(tau=0.8), stopped)
    complete = aflite(data.representation("mlp"), data.y, random_state=0, **spec.as_kwargs())
    assert runs.can_narrow(spec.with_(tau=0.8), complete) and not runs.can_narrow(spec.with_(tau=0.3), complete)
    assert not runs.can_narrow(spec.with_(tau=0.8, strategy="sample"), complete)


def test_an_opened_run_directory_is_read_off_for_a_higher_tau(app_test, tmp_path, monkeypatch):
    """A CLI run opened on the Data page (any size) holds every higher τ too: no AFLite run for them."""
    from test_app_rundir import _cli_run, _open

    from aflite_app.compute import runs
    from aflite_app.state import DATASET, LAST, RUN_DIRS, UPLOADS
    from aflite_core import aflite

    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    _cli_run(root / "data", root / "run1", "--tau", "0.55")
    calls = _spy_runs(monkeypatch)
    at = _open(app_test(page="pages/data.py"), "run1")
    assert not at.exception, at.exception
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    key = at.session_state[DATASET]
    opened = at.session_state[RUN_DIRS][key]["result"]
    assert at.session_state[LAST].tau == 0.55 and runs.narrowed_from(opened) is None and calls == []
    data = at.session_state[UPLOADS][key]
    X = data.representation(at.session_state[LAST].dataset.representation)
    for tau in (0.7, 0.9):
        at.slider(key="tau").set_value(tau).run()
        assert not at.exception, at.exception
        assert calls == [], f"an AFLite run was started for τ = {tau}"
        spec = at.session_state[LAST]  # the run directory is the session's: find its narrowing in the store
        (shown,) = [run for (other, _), run in runs._narrowed_store().items() if other == spec]
        assert runs.narrowed_from(shown) == 0.55 and "Read off the run at τ = 0.55" in _captions(at)
        # the CLI's run had the label strings and no ids: so has the direct run it is compared with
        labels = np.asarray(data.classes)[data.y]
        direct = aflite(X, labels, model=spec.model, random_state=spec.seed, **spec.as_kwargs())
        assert shown.equals(replace(direct, provenance=dict(direct.provenance, narrowed_from_tau=0.55)))
    at.slider(key="tau").set_value(0.5).run()  # below the opened run: one AFLite run
    assert not at.exception, at.exception
    assert calls == [0.5]
