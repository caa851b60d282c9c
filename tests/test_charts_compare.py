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
