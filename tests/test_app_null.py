"""The null for predictability on the Predictability page (issue 27): computed on request as a heavy background job,
or read off an opened run directory that carries one; the chance sentence, the per-class table, the suggested τ."""

from __future__ import annotations

import numpy as np
import pytest
from plotly_figures import plotly_elements  # tests/ is on sys.path when pytest collects this file

from aflite_app.compute import runs
from aflite_app.specs import FilterSpec
from aflite_app.state import LAST, TAU
from aflite_core import AFLiteResult
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine.null import suggest_tau

pytestmark = pytest.mark.slow

COMPUTE = "Compute the null"


def _texts(at) -> str:
    return " ".join(m.value for m in at.markdown)


def _chart(at, key: str) -> dict:
    import json

    return next(json.loads(el.proto.spec) for el in plotly_elements(at) if str(el.proto.id).endswith(key))


def _compute_button(at):
    return next((b for b in at.button if b.label.startswith(COMPUTE)), None)


def _check_sentence(at, run: AFLiteResult, rnd: int = 1) -> None:
    tau = float(run.params["tau"])
    observed = int(np.sum(run.scores[rnd - 1] >= np.float32(tau))) if run.scores is not None else None
    expected = run.null_at(tau, rnd)
    text = _texts(at)
    k = int(run.params["null_permutations"])
    assert f"Under shuffled labels ({k} permutations), about {expected:,.1f} of the {observed:,} rows" in text, text
    share = f"{100 * expected / observed:.0f} %"
    assert f"chance share {share}" in text


def test_filter_spec_keeps_runs_with_and_without_a_null_apart():
    from aflite_app.specs import DatasetSpec

    spec = FilterSpec(DatasetSpec("digits", "mlp"), 900, 450, 90, 0.75)
    assert spec.null_permutations == 0 and "null_permutations" not in spec.as_kwargs()  # every old call the same
    with_null = spec.with_(null_permutations=3)
    assert with_null != spec and hash(with_null) != hash(spec)
    assert with_null.as_kwargs()["null_permutations"] == 3


@pytest.mark.parametrize("k", [0, 51, -1, 2.5, True])
def test_permutations_outside_1_to_50_are_refused_in_one_sentence(k):
    with pytest.raises(ValueError, match="from 1 to 50") as err:
        runs.check_null_permutations(k)
    assert str(err.value).count(". ") == 0


def test_the_null_is_a_heavy_job_whatever_the_size():
    from aflite_app.admission import HeavyJob
    from aflite_app.specs import DatasetSpec

    spec = FilterSpec(DatasetSpec("digits", "mlp"), 900, 450, 90, 0.75, null_permutations=2)
    job = runs.prepare_null(spec)
    assert isinstance(job, HeavyJob) and job.what == "a null of 2 permutations"
    assert not isinstance(runs.prepare_run(spec.with_(null_permutations=0)), HeavyJob)  # 1,797 rows: interactive
    with pytest.raises(ValueError, match="from 1 to 50"):
        runs.prepare_null(spec.with_(null_permutations=0))


def test_compute_the_null_then_suggest_and_set_tau(app_test):
    at = app_test(page="pages/filter.py")
    # the Filter page says how to compute the null while there is none
    assert any("'Compute the null' on the Predictability page" in c.value for c in at.caption)
    at.switch_page("pages/predictability.py").run()
    assert not at.exception, at.exception
    spec = at.session_state[LAST]
    assert "Under shuffled labels" not in _texts(at)  # no null yet: the control instead
    hist = _chart(at, "pred-hist")
    assert "under shuffled labels (mean)" not in [t.get("name") for t in hist["data"]]
    k_input = at.number_input(key="pred-null-k")
    assert (k_input.min, k_input.max, k_input.value) == (1, 50, 5)  # K outside 1..50 cannot be entered
    k_input.set_value(2).run()
    button = _compute_button(at)
    assert button is not None and "2 label permutations, about 3× the run's time" in button.label
    button.click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    nulled = runs.null_result(spec)
    assert nulled is not None and nulled.params["null_permutations"] == 2
    assert spec.with_(null_permutations=2) in runs._result_store().keys()  # stored apart from the run without
    plain = runs.result(spec)
    # the null never changes what the run removes
    np.testing.assert_array_equal(nulled.kept, plain.kept)
    np.testing.assert_array_equal(nulled.removed_round, plain.removed_round)
    _check_sentence(at, nulled)
    assert _compute_button(at) is None  # shown, not offered again
    # the per-class table: the null per class sums to the sentence's count
    table = next(d.value for d in at.dataframe if "by chance (null)" in d.value.columns)
    assert table["by chance (null)"].sum() == pytest.approx(nulled.null_at(None, 1), abs=0.1 * len(table))
    # the null drawn on the histogram itself: one dotted step per class panel after the bars, one legend entry
    hist = _chart(at, "pred-hist")
    steps = [t for t in hist["data"] if t.get("name") == "under shuffled labels (mean)"]
    n_classes = len(nulled.classes)
    assert len(steps) == n_classes and [t.get("showlegend") for t in steps].count(True) == 1
    assert all(t.get("name") != "under shuffled labels (mean)" for t in hist["data"][: 2 * n_classes])
    assert any("The dotted step is the null" in c.value for c in at.caption)
    multiples = _chart(at, "pred-multiples")
    assert any(t.get("name") == "under shuffled labels (mean)" for t in multiples["data"])
    # and on the Filter page: how many of the removed rows chance would bring to τ
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    line = next(c.value for c in at.caption if "removed rows" in c.value and "shuffled labels" in c.value)
    assert line.startswith("Under shuffled labels (2 permutations), about ")
    at.switch_page("pages/predictability.py").run()
    assert not at.exception, at.exception
    # the suggestion at the default 10 %
    suggestion = suggest_tau(nulled, 0.10, 1)
    text = _texts(at)
    if suggestion is None:
        assert any("No τ keeps chance under 10 %" in i.value for i in at.info)
        return
    assert f"τ = {suggestion:.2f} keeps chance under 10 % of the rows removed in round 1" in text, text
    at.number_input(key="pred-null-share").set_value(50.0).run()
    loose = suggest_tau(nulled, 0.50, 1)
    assert loose is not None and loose <= suggestion
    assert f"τ = {loose:.2f} keeps chance under 50 %" in _texts(at)
    set_tau = next(b for b in at.button if b.label.startswith("Set the Filter τ"))
    assert set_tau.label == f"Set the Filter τ to {loose:.2f}"
    set_tau.click().run()
    assert not at.exception, at.exception
    assert at.session_state[TAU] == pytest.approx(loose)


def _cli_run(data_dir, out, *extra):
    X, y, _ = make_planted_bias(900, 12, random_state=0)
    data_dir.mkdir(parents=True, exist_ok=True)
    np.save(data_dir / "X.npy", X)
    (data_dir / "y.txt").write_text("\n".join(np.array(["cat", "dog"])[y]) + "\n")
    args = ["filter", "--features", str(data_dir / "X.npy"), "--labels", str(data_dir / "y.txt")]
    args += ["--target-size", "400", "--train-size", "200", "--slice-size", "60", "--seed", "2", "--quiet"]
    assert main([*args, "--out", str(out), *extra]) == 0
    return out


def test_an_opened_run_directory_with_a_null_shows_it_without_computing(app_test, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    run_dir = _cli_run(root / "data", root / "planted" / "run1", "--null-permutations", "3")
    recorded = AFLiteResult.load(run_dir)
    assert recorded.null_counts is not None
    at = app_test(page="pages/data.py")
    at.selectbox(key="run-dir").set_value("planted/run1")
    next(b for b in at.button if b.label == "Open run").click().run()
    assert not at.exception, at.exception

    def fail(*_a, **_k):
        raise AssertionError("an opened run with a null must not compute it again")

    monkeypatch.setattr(runs, "prepare_null", fail)
    at.switch_page("pages/predictability.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert _compute_button(at) is None
    _check_sentence(at, recorded)


def test_the_tau_writer_puts_the_suggestion_on_the_filter_grid():
    from aflite_app import state

    session: dict = {}
    state.set_filter_tau(session, 0.8300000001)
    assert session[TAU] == 0.83
