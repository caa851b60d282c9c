"""Run comparison (issue 28): diff_runs on hand-built run records, its properties, and ``aflite diff``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aflite_core import AFLiteResult
from aflite_core.cli import main
from aflite_core.engine.run_constants import HISTORY_COLUMNS
from aflite_core.measures.run_diff import GROUPS, diff_runs

CLASSES = ("contradiction", "entailment", "neutral")
PARAMS = {
    "target_size": 2,
    "train_size": 1,
    "slice_size": 1,
    "n_partitions": 4,
    "tau": 0.75,
    "strategy": "slice",
    "model": {"class": "aflite_core.logistic.LogisticFamily", "params": {}},
    "seed": 0,
}


def record(removed_round, y, *, ids=None, p=None, classes=CLASSES) -> AFLiteResult:
    """A hand-built run record: the given removal rounds (-1 kept) and labels (codes)."""
    r = np.asarray(removed_round, dtype=np.int32)
    n = len(r)
    kept = r < 0
    p = np.full(n, 0.3, np.float32) if p is None else np.asarray(p, np.float32)
    n_rounds = int(r.max(initial=0))
    removed = np.bincount(r[r > 0], minlength=n_rounds + 1)[1:]
    after = n - np.cumsum(removed)
    history = pd.DataFrame({c: np.zeros(n_rounds) for c in HISTORY_COLUMNS})
    history["round"] = np.arange(1, n_rounds + 1)
    history["size_before"], history["n_scored"] = after + removed, after + removed
    history["n_removed"], history["n_qualified"], history["size_after"] = removed, removed, after
    history = history.astype(
        {
            c: np.int64
            for c in (
                "round",
                "size_before",
                "n_scored",
                "n_qualified",
                "n_removed",
                "size_after",
                "eval_size_before",
                "eval_removed",
            )
        }
    )
    return AFLiteResult(
        params=PARAMS,
        classes=classes,
        y=np.asarray(y, dtype=np.int32),
        kept=kept,
        removed_round=r,
        scores=None,
        n_predictions=None,
        first_score=p,
        last_score=p,
        removal_score=np.where(kept, np.nan, p).astype(np.float32),
        history=history,
        stop_reason="target_size_reached",
        ids=None if ids is None else np.asarray(ids),
    )


def test_hand_built_records_report_exactly_their_differences():
    y = [0, 0, 1, 1, 2, 2, 0, 1]
    a = record([1, 1, 2, -1, -1, 3, -1, -1], y)
    b = record([1, -1, 1, 2, -1, -1, -1, -1], y)
    d = diff_runs(a, b)
    assert d.counts == {"both": 2, "a_only": 2, "b_only": 1, "neither": 3}
    assert d.jaccard == pytest.approx(2 / 5)
    assert d.rows["group"].tolist() == ["both", "a_only", "both", "b_only", "neither", "a_only", "neither", "neither"]
    assert d.rows["round_a"].tolist()[:3] == [1, 1, 2] and d.rows["round_b"].tolist()[2] == 1
    by_class = d.by_class.set_index("class")
    assert by_class.loc["contradiction", ["both", "a_only", "b_only", "neither"]].tolist() == [1, 1, 0, 1]
    assert by_class.loc["entailment", ["both", "a_only", "b_only", "neither"]].tolist() == [1, 0, 1, 1]
    assert by_class.loc["neutral", ["both", "a_only", "b_only", "neither"]].tolist() == [0, 1, 0, 1]
    by_round = d.by_round.set_index(["run", "round"])
    assert by_round.loc[("A", 1), ["removed", "also_other", "only_this"]].tolist() == [2, 1, 1]
    assert by_round.loc[("A", 2), ["removed", "also_other"]].tolist() == [1, 1]
    assert by_round.loc[("A", 3), ["removed", "only_this"]].tolist() == [1, 1]
    assert by_round.loc[("B", 1), ["removed", "also_other"]].tolist() == [2, 2]
    assert by_round.loc[("B", 2), ["removed", "only_this"]].tolist() == [1, 1]
    # rows removed by both in other rounds count as changed, but stay in "both"
    assert sorted(d.changed["id"].tolist()) == [1, 2, 3, 5]
    assert not d.empty


def test_rows_are_matched_by_id_not_position():
    y = [0, 1, 2, 0]
    a = record([1, -1, -1, -1], y, ids=["w", "x", "y", "z"])
    order = [3, 2, 1, 0]  # B holds the same rows backwards
    b = record(np.asarray([1, -1, -1, -1])[order], np.asarray(y)[order], ids=np.asarray(["w", "x", "y", "z"])[order])
    d = diff_runs(a, b)
    assert d.empty and d.jaccard == 1.0
    assert d.rows["row_b"].tolist() == [3, 2, 1, 0]


@pytest.mark.parametrize(
    ("b_ids", "b_n", "message"),
    [
        (None, 5, "Run A has 4 rows and run B 5"),
        ([0, 1, 2, 9], 4, "Runs A and B are over different rows: 1 of run A's 4 row ids are not in run B (e.g. 3)"),
        ([0, 1, 1, 2], 4, "Run B repeats the row id 1"),
    ],
)
def test_runs_over_different_rows_are_refused_in_one_sentence(b_ids, b_n, message):
    a = record([1, -1, -1, -1], [0, 1, 2, 0])
    b = record([-1] * b_n, [0, 1, 2, 0, 1][:b_n], ids=b_ids)
    with pytest.raises(ValueError) as err:
        diff_runs(a, b)
    text = str(err.value)
    assert text.startswith(message) and text.replace("e.g. ", "").count(". ") == 0 and text.endswith(".")


def test_other_labels_are_refused():
    with pytest.raises(ValueError, match="give 1 of their rows different labels"):
        diff_runs(record([-1, -1], [0, 1]), record([-1, -1], [0, 0]))


def test_words_whose_removal_share_differs_are_found_and_the_others_not():
    rng = np.random.default_rng(0)
    n = 600
    texts = [" ".join(rng.choice(["a", "man", "the", "dog", "runs", "sits"], size=4)) for _ in range(n)]
    texts = [("nobody " + t) if i % 4 == 0 else t for i, t in enumerate(texts)]
    y = rng.integers(0, 3, n)
    has = np.array(["nobody" in t for t in texts])
    ra = np.where(has & (rng.random(n) < 0.6), 1, -1)  # A removes most "nobody" rows (90 of 150) ...
    rb = np.where(rng.random(n) < 0.3, 1, -1)  # ... B a random 30 % of all rows (more rows overall)
    d = diff_runs(record(ra, y), record(rb, y), table=pd.DataFrame({"hypothesis": texts}))
    sig = d.significant_words
    assert sig["token"].tolist() == ["nobody"]  # not the other words: B removing more rows overall is no word's doing
    row = sig.iloc[0]
    assert row["z"] > d.words.attrs["z_critical"] and row["share_a"] > row["share_b"]
    assert row["count"] == has.sum() and row["removed_a"] == ((ra > 0) & has).sum()
    assert d.words.attrs["n_tests"] == 2 * len(d.words)
    # the z of the test: the artifacts z-test with p0 = the share of all discordant rows that A removed
    p0 = ((ra > 0) & (rb < 0)).sum() / ((ra > 0) != (rb > 0)).sum()
    disc = row["a_only"] + row["b_only"]
    assert d.words.attrs["p0"] == pytest.approx(p0)
    assert row["z"] == pytest.approx((row["a_only"] / disc - p0) / np.sqrt(p0 * (1 - p0) / disc))


def test_a_recorded_table_in_run_directories_gives_the_words(tmp_path):
    y = [0, 1] * 40
    texts = [("nobody sleeps" if i % 2 == 0 else "a man runs") for i in range(80)]
    a = record([1 if i % 2 == 0 else -1 for i in range(80)], y)  # every "nobody sleeps" row
    b = record([1 if i % 4 == 1 else -1 for i in range(80)], y)  # half of the "a man runs" rows
    a.save(tmp_path / "a", table=pd.DataFrame({"hypothesis": texts}))
    b.save(tmp_path / "b")
    d = diff_runs(tmp_path / "b", tmp_path / "a")  # the second run's table, in the first run's row order
    sig = d.significant_words
    assert set(sig.loc[sig["z"] < 0, "token"]) == {"nobody", "sleeps"}  # the second run removed them
    assert set(sig.loc[sig["z"] > 0, "token"]) == {"a", "man", "runs"}
    assert d.words.attrs["text_column"] == "hypothesis"


def test_progress_reports_the_texts_tested_and_changes_nothing():
    y = [0, 1] * 15
    texts = ["nobody sleeps" if i % 2 == 0 else "a man runs" for i in range(30)]
    a = record([1 if i % 2 == 0 else -1 for i in range(30)], y)
    b = record([1 if i % 4 == 1 else -1 for i in range(30)], y)
    seen = []
    with_progress = diff_runs(a, b, table=texts, min_count=2, progress=lambda d, t: seen.append((d, t)))
    plain = diff_runs(a, b, table=texts, min_count=2)
    assert seen[0] == (0, 30) and seen[-1] == (30, 30)
    pd.testing.assert_frame_equal(with_progress.words, plain.words)


# -- properties ------------------------------------------------------------------------------------------------------
@st.composite
def run_pairs(draw):
    n = draw(st.integers(1, 40))
    y = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    rounds = st.lists(st.sampled_from([-1, -1, 1, 2, 3]), min_size=n, max_size=n)
    ra, rb = draw(rounds), draw(rounds)
    perm = draw(st.permutations(list(range(n))))
    words = st.lists(st.sampled_from(["nobody", "cat", "sleeps", "a"]), min_size=1, max_size=3)
    texts = [" ".join(w) for w in draw(st.lists(words, min_size=n, max_size=n))]
    return n, y, ra, rb, perm, texts


@given(run_pairs())
def test_a_run_compared_with_itself_is_empty(pair):
    n, y, ra, _, _, texts = pair
    a = record(ra, y, ids=[f"r{i}" for i in range(n)])
    d = diff_runs(a, a, table=texts, min_count=1)
    assert d.empty and d.jaccard == 1.0
    assert d.counts["a_only"] == d.counts["b_only"] == 0
    assert len(d.words) == 0 or not d.words["significant"].any()


@given(run_pairs())
def test_diff_b_a_mirrors_diff_a_b(pair):
    n, y, ra, rb, perm, texts = pair
    ids = np.array([f"r{i}" for i in range(n)], dtype=object)
    a = record(ra, y, ids=ids)
    b = record(np.asarray(rb)[perm], np.asarray(y)[perm], ids=ids[perm])  # B in another row order
    ab = diff_runs(a, b, table=texts, min_count=1)
    ba = diff_runs(b, a, table=[texts[i] for i in perm], min_count=1)
    assert ab.jaccard == ba.jaccard
    c1, c2 = ab.counts, ba.counts
    assert (c1["both"], c1["a_only"], c1["b_only"], c1["neither"]) == (
        c2["both"],
        c2["b_only"],
        c2["a_only"],
        c2["neither"],
    )
    left = ab.rows.set_index("id").sort_index()
    right = ba.rows.set_index("id").sort_index()
    for x, z in (("status_a", "status_b"), ("round_a", "round_b"), ("p_a", "p_b")):
        assert left[x].astype(object).tolist() == right[z].astype(object).tolist()
    swap = {"a_only": "b_only", "b_only": "a_only", "both": "both", "neither": "neither"}
    assert left["group"].map(swap).tolist() == right["group"].tolist()
    cls1, cls2 = ab.by_class.set_index("class"), ba.by_class.set_index("class")
    assert cls1["a_only"].tolist() == cls2["b_only"].tolist() and cls1["jaccard"].tolist() == cls2["jaccard"].tolist()
    rounds1 = ab.by_round.replace({"run": {"A": "B", "B": "A"}}).sort_values(["run", "round"]).reset_index(drop=True)
    rounds2 = ba.by_round.sort_values(["run", "round"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(rounds1, rounds2)
    w1, w2 = ab.words.set_index("token").sort_index(), ba.words.set_index("token").sort_index()
    assert w1.index.tolist() == w2.index.tolist()
    assert np.allclose(w1["z"], -w2["z"]) and (w1["significant"] == w2["significant"]).all()
    assert (w1["a_only"] == w2["b_only"]).all() and np.allclose(w1["share_a"], w2["share_b"])


# -- the command line ------------------------------------------------------------------------------------------------
def test_cli_diff_prints_the_comparison_and_refuses_other_rows(tmp_path, capsys):
    y = [0, 1, 2, 0, 1, 2]
    record([1, -1, 2, -1, -1, -1], y).save(tmp_path / "a")
    record([1, 1, -1, -1, -1, -1], y).save(tmp_path / "b")
    record([-1] * 4, y[:4]).save(tmp_path / "c")
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "by both 1, A only 1, B only 1" in out and "Jaccard of the removed sets 0.333" in out
    assert "No words compared" in out
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["removed_a_only"] == 1 and data["summary"]["jaccard"] == pytest.approx(1 / 3)
    assert {r["id"] for r in data["changed_rows"]} == {1, 2}
    assert set(GROUPS) <= set(data["by_class"][0])
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Run A has 6 rows and run B 4") and err.count("\n") == 1
