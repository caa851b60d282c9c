"""Behaviour of aflite() and predictability(): the rules of Algorithm 1 as a user relies on them."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

from aflite_core import LinearFamily, aflite, predictability
from aflite_core.data.planted_bias import make_planted_bias


def _noise(n=400, d=6, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype(np.float32), rng.integers(0, classes, n)


def _separable(n=300, seed=0):
    """Every row is trivially predictable (p = 1 for all): a stress test of ties."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.c_[10.0 * (2 * y - 1), rng.normal(size=(n, 2))].astype(np.float32)
    return X, y


# -- the per-round rules ------------------------------------------------------------------------------------
def test_every_removed_row_had_p_at_least_tau_and_at_most_k_per_round(planted):
    X, y, _ = planted
    res = aflite(X, y, target_size=500, train_size=300, slice_size=80, tau=0.7, random_state=0)
    assert res.n_rounds >= 2
    for r in range(1, res.n_rounds + 1):
        gone = res.removed_round == r
        assert gone.sum() <= 80
        assert np.all(res.scores[r - 1, gone] >= 0.7)
        assert np.all(res.removal_score[gone] == res.scores[r - 1, gone])
    assert res.history["n_removed"].tolist() == [int((res.removed_round == r).sum()) for r in res.history["round"]]


def test_removes_the_highest_scores_first(planted):
    X, y, _ = planted
    res = aflite(X, y, target_size=600, train_size=300, slice_size=50, tau=0.5, random_state=3)
    p = res.scores[0]
    gone = res.removed_round == 1
    stayed = ~gone & ~np.isnan(p)
    # the slice is the top-k among qualified rows: nothing that stayed scored higher than what left
    assert p[gone].min() >= p[stayed].max() - 1e-7 or p[stayed].max() <= p[gone].min()


def test_never_goes_below_target_and_clamps_the_last_slice():
    X, y = _separable(300)
    res = aflite(X, y, target_size=130, train_size=60, slice_size=50, tau=0.5, random_state=0)
    assert res.n_kept == 130
    assert res.stop_reason == "target_size_reached"
    assert res.history["n_removed"].tolist() == [50, 50, 50, 20]  # 300 → 250 → 200 → 150 → 130


def test_stops_early_when_fewer_than_k_qualify():
    X, y = _noise(500, seed=1)
    res = aflite(X, y, target_size=100, train_size=80, slice_size=50, tau=0.95, random_state=0)
    assert res.stop_reason == "fewer_than_k_qualified"
    last = res.history.iloc[-1]
    assert last["n_qualified"] < 50
    assert res.n_kept > 100
    assert "τ" in res.stop_message and str(res.n_kept) in res.stop_message


def test_rows_without_a_prediction_are_not_scored_and_not_removed():
    X, y = _separable(200)
    # one model: its training rows get no out-of-sample prediction in that round
    res = aflite(X, y, target_size=100, train_size=60, slice_size=100, tau=0.0, n_partitions=1, random_state=0)
    unscored = res.n_predictions[0] == 0
    assert unscored.sum() >= 55
    assert np.all(np.isnan(res.scores[0, unscored]))
    assert not np.any(res.removed_round[unscored] == 1)


def test_ties_are_broken_by_a_seeded_random_order_not_by_index():
    X, y = _separable(400)
    a = aflite(X, y, target_size=300, train_size=100, slice_size=100, random_state=0)
    b = aflite(X, y, target_size=300, train_size=100, slice_size=100, random_state=1)
    assert np.all(a.scores[0][~np.isnan(a.scores[0])] == 1.0)  # everything tied
    removed = np.flatnonzero(~a.kept)
    assert not np.array_equal(removed, np.arange(100))  # not the first rows
    assert removed.mean() == pytest.approx(200, abs=60)  # spread over the data
    assert not np.array_equal(a.kept, b.kept)


def test_same_seed_same_result_and_integer_seed_recorded(planted):
    X, y, _ = planted
    kw = dict(target_size=600, train_size=300, slice_size=100, random_state=7)
    a, b = aflite(X, y, **kw), aflite(X, y, **kw)
    assert a.equals(b)
    c = aflite(X, y, **{**kw, "random_state": None})
    d = aflite(X, y, **{**kw, "random_state": c.params["seed"]})
    assert c.equals(d)
    gen = aflite(X, y, **{**kw, "random_state": np.random.default_rng(5)})
    assert isinstance(gen.params["seed"], int)


def test_planted_bias_rows_are_removed():
    # 500 planted rows, a removal budget of 600: nearly all planted rows go, few others
    X, y, biased = make_planted_bias(2000, 16, class_sep=0.1, bias_fraction=0.25, bias_strength=6, random_state=0)
    res = aflite(X, y, target_size=1400, train_size=500, slice_size=100, tau=0.75, random_state=0)
    assert (~res.kept[biased]).mean() > 0.9
    assert (~res.kept[~biased]).mean() < 0.15
    # the representation bias estimate falls as the artefact is stripped
    r = res.history["mean_predictability"].to_numpy()
    assert r[-1] < r[0] - 0.1


def test_strings_labels_and_class_names(planted):
    X, y, _ = planted
    names = np.array(["contradiction", "entailment"])[y]
    res = aflite(X, names, target_size=600, train_size=300, slice_size=100, random_state=0)
    assert res.classes == ("contradiction", "entailment")
    frame = res.to_frame()
    assert set(frame["label"]) == {"contradiction", "entailment"}
    assert (frame["label"].to_numpy() == names).all()
    as_codes = aflite(X, y, target_size=600, train_size=300, slice_size=100, random_state=0)
    assert np.array_equal(as_codes.kept, res.kept)


def test_fractions_resolve_to_counts(planted):
    X, y, _ = planted
    res = aflite(X, y, target_size=0.5, train_size=0.25, slice_size=100, random_state=0)
    assert res.params["target_size"] == 600 and res.params["train_size"] == 300
    assert res.n_kept >= 600


# -- strategies --------------------------------------------------------------------------------------------
def test_greedy_removes_one_row_per_round_and_keeps_compact_scores(planted):
    X, y, _ = planted
    X, y = X[:200], y[:200]
    res = aflite(X, y, target_size=180, train_size=60, strategy="greedy", n_partitions=16, tau=0.6, random_state=0)
    assert res.scores is None and res.n_predictions is None
    assert (res.history["n_removed"] <= 1).all()
    assert res.n_removed == res.history["n_removed"].sum() <= 20
    gone = ~res.kept
    assert np.all(res.removal_score[gone] >= 0.6)
    with pytest.raises(ValueError, match=r"slice_size.*greedy"):
        aflite(X, y, target_size=180, train_size=60, strategy="greedy", slice_size=5)


def test_sample_strategy_draws_among_qualified_rows(planted):
    X, y, _ = planted
    res = aflite(X, y, target_size=600, train_size=300, slice_size=100, tau=0.6, strategy="sample", random_state=0)
    for r in range(1, res.n_rounds + 1):
        gone = res.removed_round == r
        assert gone.sum() <= 100
        assert np.all(res.scores[r - 1, gone] >= 0.6)
    slice_ = aflite(X, y, target_size=600, train_size=300, slice_size=100, tau=0.6, random_state=0)
    assert not np.array_equal(slice_.kept, res.kept)


def test_sample_strategy_prefers_higher_scores():
    # Gumbel top-k samples ∝ p: over many rounds rows with p=1 go before rows with p≈0.6
    X, y, _ = make_planted_bias(1500, 10, class_sep=0.8, bias_fraction=0.3, bias_strength=8, random_state=2)
    res = aflite(X, y, target_size=1300, train_size=400, slice_size=100, tau=0.5, strategy="sample", random_state=0)
    p = res.scores[0]
    first = res.removed_round == 1
    qualified = (p >= 0.5) & ~np.isnan(p)
    assert p[first].mean() > p[qualified].mean()


# -- evaluation sets ---------------------------------------------------------------------------------------
def test_evaluation_set_never_changes_training_selection_and_follows_its_rules():
    X, y, biased = make_planted_bias(2400, 12, class_sep=0.3, bias_strength=6, random_state=4)
    tr, ev = np.arange(1800), np.arange(1800, 2400)
    kw = dict(target_size=1200, train_size=400, slice_size=100, tau=0.75, random_state=0)
    plain = aflite(X[tr], y[tr], **kw)
    withe = aflite(X[tr], y[tr], eval_X=X[ev], eval_y=y[ev], **kw)
    assert np.array_equal(plain.kept, withe.kept)
    assert np.array_equal(plain.scores, withe.scores, equal_nan=True)
    # every evaluation row with p ≥ τ leaves in that round; categories partition the evaluation set
    for r in range(1, withe.n_rounds + 1):
        gone = withe.eval_removed_round == r
        assert np.all(withe.eval_scores[r - 1, gone] >= 0.75)
        still = withe.eval_removed_round == -1
        assert np.all(np.nan_to_num(withe.eval_scores[r - 1, still], nan=0) < 0.75)
    cats = withe.eval_category
    assert set(cats) <= {"removed in round 1", "removed later", "selected"}
    assert len(cats) == 600
    # planted rows in the evaluation set are removed too, mostly in round 1
    eb = biased[ev]
    assert (~withe.eval_kept[eb]).mean() > 0.9
    assert (withe.eval_removed_round[eb] == 1).mean() > 0.6
    assert withe.history["eval_removed"].sum() == (~withe.eval_kept).sum()


def test_evaluation_labels_must_be_known_classes(planted):
    X, y, _ = planted
    with pytest.raises(ValueError, match=r"eval_y.*classes seen"):
        aflite(X, y, target_size=600, train_size=300, slice_size=100, eval_X=X[:5], eval_y=[0, 1, 7, 0, 1])


# -- callback, models, audit -------------------------------------------------------------------------------
def test_callback_sees_every_round_and_can_stop_the_run(planted):
    X, y, _ = planted
    seen = []
    full = aflite(
        X,
        y,
        target_size=400,
        train_size=200,
        slice_size=50,
        tau=0.5,
        random_state=0,
        callback=lambda p: seen.append(p.round),
    )
    assert seen == list(range(1, full.n_rounds + 1))

    def stop_after_two(progress):
        return progress.round < 2

    part = aflite(
        X, y, target_size=400, train_size=200, slice_size=50, tau=0.5, random_state=0, callback=stop_after_two
    )
    assert part.stopped and part.stop_reason == "stopped_by_callback"
    assert part.n_rounds == 2
    assert np.array_equal(
        part.removed_round[part.removed_round > 0],
        full.removed_round[(full.removed_round > 0) & (full.removed_round <= 2)],
    )
    assert "partial" in part.stop_message


def test_progress_reports_sizes(planted):
    X, y, _ = planted
    got = []
    aflite(X, y, target_size=900, train_size=300, slice_size=100, tau=0.5, random_state=0, callback=got.append)
    first = got[0]
    assert first.n_rows == 1200 and first.target_size == 900
    assert first.size == 1200 - first.removed
    assert 0 < first.fraction_done <= 1


def test_predictability_equals_round_one_of_aflite(planted):
    X, y, _ = planted
    p = predictability(X, y, train_size=300, random_state=11)
    res = aflite(X, y, target_size=600, train_size=300, slice_size=100, random_state=11)
    assert p.dtype == np.float32
    assert np.array_equal(p, res.scores[0], equal_nan=True)
    assert np.nanmin(p) >= 0 and np.nanmax(p) <= 1


@pytest.mark.parametrize("model", [LogisticRegression(max_iter=200), KNeighborsClassifier(5), "logistic"])
def test_any_sklearn_classifier_is_a_model_family(planted, model):
    X, y, biased = planted
    res = aflite(X, y, target_size=800, train_size=300, slice_size=100, n_partitions=8, model=model, random_state=0)
    assert res.params["model"]["family"] == "sklearn"
    assert (~res.kept[biased]).mean() > (~res.kept[~biased]).mean()
    again = aflite(X, y, target_size=800, train_size=300, slice_size=100, n_partitions=8, model=model, random_state=0)
    assert res.equals(again)


def test_linear_family_blocks_and_exact_modes_agree_in_behaviour(planted):
    X, y, biased = planted
    blocks = aflite(X, y, target_size=700, train_size=400, slice_size=100, random_state=0, model=LinearFamily())
    exact = aflite(
        X, y, target_size=700, train_size=400, slice_size=100, random_state=0, model=LinearFamily(block_rows=1)
    )
    direct = aflite(
        X, y, target_size=700, train_size=400, slice_size=100, random_state=0, model=LinearFamily(iterative=False)
    )
    assert blocks.params["partition_mode"] == "blocks" and exact.params["partition_mode"] == "exact"
    for res in (blocks, exact, direct):
        assert (~res.kept[biased]).mean() > 0.8
    # the iterative solver changes nothing a user can see
    assert (blocks.kept == direct.kept).mean() > 0.97


def test_linear_family_agrees_with_logistic_regression(planted):
    X, y, _ = planted
    fast = predictability(X, y, train_size=400, random_state=0)
    slow = predictability(X, y, train_size=400, model=LogisticRegression(), n_partitions=16, random_state=0)
    ok = ~np.isnan(fast) & ~np.isnan(slow)
    assert np.corrcoef(fast[ok], slow[ok])[0, 1] > 0.8


def test_memory_mapped_features_give_the_same_result(tmp_path, planted):
    X, y, _ = planted
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    a = aflite(X, y, target_size=600, train_size=300, slice_size=100, random_state=0)
    b = aflite(mm, y, target_size=600, train_size=300, slice_size=100, random_state=0)
    assert a.equals(b)


def test_float64_and_dataframe_inputs(planted):
    import pandas as pd

    X, y, _ = planted
    a = aflite(X, y, target_size=600, train_size=300, slice_size=100, random_state=0)
    b = aflite(
        pd.DataFrame(X.astype(np.float64)),
        pd.Series(y),
        target_size=600,
        train_size=300,
        slice_size=100,
        random_state=0,
    )
    assert np.array_equal(a.kept, b.kept)


def test_ten_classes_and_tiny_data():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 30)
    X = rng.normal(size=(300, 8)).astype(np.float32) + y[:, None] * 0.3
    res = aflite(X, y, target_size=150, train_size=100, slice_size=30, tau=0.5, random_state=0)
    assert len(res.classes) == 10 and res.n_kept >= 150
    small_X, small_y = X[:50], np.r_[np.zeros(25, int), np.ones(25, int)]
    tiny = aflite(small_X, small_y, target_size=25, train_size=10, slice_size=5, tau=0.5, random_state=0)
    assert tiny.n_kept >= 25
