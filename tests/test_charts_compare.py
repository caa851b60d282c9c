"""The Compare runs page's figures are pure builders over a RunDiff's tables (issue 28)."""

from __future__ import annotations

import pandas as pd
from test_run_diff import record

from aflite_app.charts import compare as charts
from aflite_core.measures.run_diff import diff_runs


def _diff():
    y = [0, 1, 2] * 20
    texts = ["nobody sleeps" if i % 3 == 0 else "a <b>man</b> runs" for i in range(60)]
    a = record([1 if i % 3 == 0 else -1 for i in range(60)], y)
    b = record([2 if i % 6 == 1 else -1 for i in range(60)], y)
    return diff_runs(a, b, table=pd.DataFrame({"hypothesis": texts}), min_count=2)


def test_the_class_chart_stacks_both_and_each_run_alone_per_class():
    d = _diff()
    fig = charts.class_groups_chart(d.by_class)
    bars = {t.name: list(t.y) for t in fig.data if t.type == "bar"}
    assert bars == {
        "removed by both": d.by_class["both"].tolist(),
        "removed by A only": d.by_class["a_only"].tolist(),
        "removed by B only": d.by_class["b_only"].tolist(),
    }
    assert fig.layout.barmode == "stack"


def test_the_round_chart_splits_each_runs_rounds_by_the_other_run():
    d = _diff()
    fig = charts.round_groups_chart(d.by_round)
    also, only = fig.data
    assert list(also.y) == d.by_round["also_other"].tolist() and list(only.y) == d.by_round["only_this"].tolist()
    assert [list(x) for x in also.x] == [d.by_round["run"].tolist(), [str(r) for r in d.by_round["round"]]]


def test_the_words_chart_escapes_the_words_and_shows_only_significant_ones():
    d = _diff()
    sig = d.significant_words
    assert len(sig)
    fig = charts.word_shares_chart(d.words)
    shown = set(fig.data[0].y)
    assert len(shown) == len(sig) and not any("<b>" in w for w in shown)


def test_the_runs_to_compare_are_the_filter_run_the_stored_runs_of_its_dataset_and_the_run_root(tmp_path, monkeypatch):
    from aflite_app.compute import compare, runs
    from aflite_app.specs import NO_SESSION, DatasetSpec, FilterSpec

    monkeypatch.setenv("AFLITE_RUN_ROOT", str(tmp_path))
    record([1, -1, -1], [0, 1, 2]).save(tmp_path / "a" / "run")
    spec = FilterSpec(DatasetSpec("digits-test"), target_size=2, train_size=1, slice_size=1, tau=0.7)
    other_seed, other_data = spec.with_(seed=7), spec.with_(dataset=DatasetSpec("planted-test"))
    store = runs._result_store()
    for s in (spec, other_seed, other_data):
        store.keep(s, record([1, -1, -1], [0, 1, 2]))
    try:
        found = compare.run_choices(spec, "digits-test", session=NO_SESSION)
    finally:
        for s in (spec, other_seed, other_data):
            store.pop(s)
    kinds = [(c.kind, c.spec, c.key) for c in found]
    assert kinds == [("filter", spec, None), ("stored", other_seed, None), ("root", None, "a/run")]
    assert compare.choice_label(found[1]).startswith("Stored run: τ = 0.7, k = 1, m = 64, seed 7")


def test_the_comparison_job_reports_progress_stops_when_asked_and_stores_its_diff(tmp_path, monkeypatch):
    from aflite_app.compute import compare

    monkeypatch.setenv("AFLITE_RUN_ROOT", str(tmp_path))
    y = [0, 1] * 20
    texts = pd.DataFrame({"hypothesis": ["nobody sleeps" if i % 2 == 0 else "a man runs" for i in range(40)]})
    record([1 if i % 2 == 0 else -1 for i in range(40)], y).save(tmp_path / "a", table=texts)
    record([1 if i % 4 == 1 else -1 for i in range(40)], y).save(tmp_path / "b")
    request = compare.compare_request(compare.RunChoice("root", key="b"), compare.RunChoice("root", key="a"))
    stopped = compare.prepare_compare(request)(lambda p: False)
    assert stopped.stopped and compare.stored_compare(request) is None
    seen = []
    outcome = compare.prepare_compare(request)(lambda p: seen.append(p) or True)
    assert outcome.ok and compare.stored_compare(request) is outcome.value
    assert seen[-1] == compare.CompareProgress(40, 40, "Testing the words of 40 texts")
    assert outcome.value.rows["text"].tolist()[:2] == ["nobody sleeps", "a man runs"]  # B's texts in A's order
    text = compare.describe_compare(request)(seen[-1], 3.0)[1]
    assert text.startswith("Testing the words of 40 texts · 3 s")
