"""The evaluation-set study's controls (issue 27): random subsets of the same size, and equal depth."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import kendalltau

from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.evalsets import adversary_study
from aflite_core.evalsets.controls import (
    equal_depth_masks,
    kendall_many,
    null_p_value,
    percentile_of,
    random_subset_accuracies,
    study_controls,
)

KW = {"target_size": 300, "train_size": 150, "slice_size": 60, "n_partitions": 16}


def _correct(n_eval=400, accs=(0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95), seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n_eval, len(accs))) < np.asarray(accs)


def _run(kept: np.ndarray, seed: int = 0) -> SimpleNamespace:
    """A stand-in AFLite run: its selected rows, the others removed in round 1 with random scores."""
    rng = np.random.default_rng(seed)
    rr = np.where(kept, -1, 1).astype(np.int32)
    return SimpleNamespace(
        eval_kept=kept,
        eval_removed_round=rr,
        eval_last_score=rng.random(len(kept)),
        eval_removal_score=np.where(kept, np.nan, 0.75 + 0.25 * rng.random(len(kept))),
    )


def test_kendall_many_matches_scipy_with_ties():
    rng = np.random.default_rng(1)
    base = np.round(rng.random(9), 1)
    acc = np.round(rng.random((30, 9)), 1)
    ours = kendall_many(base, acc)
    ref = [kendalltau(base, row).statistic for row in acc]
    assert ours == pytest.approx(ref, nan_ok=True)
    assert np.isnan(kendall_many(base, np.full((1, 9), 0.5))[0])  # no spread: undefined


def test_random_subset_accuracies_are_subset_means_over_seeds():
    correct = _correct(n_eval=50)
    acc = random_subset_accuracies(correct, [50, 50], 5, np.random.default_rng(0))
    assert acc == pytest.approx(np.tile(correct.mean(axis=0), (5, 1)))  # the whole set, whatever the draw
    assert np.isnan(random_subset_accuracies(correct, [0], 3, np.random.default_rng(0))).all()


def test_random_subset_null_contains_the_unfiltered_rankings_own_subsampling():
    """A "filter" that keeps a uniform random subset is what the null draws: its p-values are not small."""
    correct = _correct()
    base = correct.mean(axis=0)
    rng = np.random.default_rng(5)
    inside, small_p = 0, 0
    for _ in range(40):
        kept = np.zeros(len(correct), dtype=bool)
        kept[rng.choice(len(correct), 30, replace=False)] = True
        obs = float(kendall_many(base, correct[kept].mean(axis=0)[None, :])[0])
        null = kendall_many(base, random_subset_accuracies(correct, [30], 1000, rng))
        lo, hi = np.nanpercentile(null, [2.5, 97.5])
        inside += lo <= obs <= hi
        small_p += null_p_value(null, obs, lower=True) < 0.05
    assert inside >= 34  # ~95 % of 40
    assert small_p <= 6  # ~5 % of 40


def test_a_selection_of_hard_rows_is_far_outside_the_null():
    correct = _correct()
    hard = correct.sum(axis=1) <= 4  # rows most models get wrong: what a strong filter leaves
    controls, drops = study_controls(
        {("adv", 0): _run(hard)},
        ["adv"],
        [0],
        correct,
        [f"m{j}" for j in range(9)],
        n_subsets=500,
        rng=np.random.default_rng(0),
    )
    row = controls[controls["depth"] == "as run"].iloc[0]
    assert row["n_rows_mean"] == hard.sum() and row["n_subsets"] == 500
    assert row["mean_drop"] > row["mean_drop_null_high"]
    assert row["mean_drop_percentile"] == 100.0 and row["mean_drop_p_vs_random"] == pytest.approx(1 / 501)
    assert (drops[drops["depth"] == "as run"]["percentile"] > 95).all()


def test_equal_depth_keeps_the_smallest_adversarys_count_of_least_predictable_rows():
    correct = _correct()
    rng = np.random.default_rng(2)
    big = rng.random(len(correct)) < 0.2
    small = rng.random(len(correct)) < 0.05
    detail = {("big", 0): _run(big, 0), ("small", 0): _run(small, 1)}
    masks, n_min = equal_depth_masks(detail, ["big", "small"], [0])
    assert n_min == {0: int(small.sum())}
    assert masks[("small", 0)].tolist() == small.tolist()  # the smallest keeps all it selected
    assert masks[("big", 0)].sum() == small.sum() and not (masks[("big", 0)] & ~big).any()
    kept_scores = detail[("big", 0)].eval_last_score[masks[("big", 0)]]
    other = detail[("big", 0)].eval_last_score[big & ~masks[("big", 0)]]
    assert kept_scores.max() <= other.min()  # the least predictable of what it selected
    controls, _ = study_controls(
        detail,
        ["big", "small"],
        [0],
        correct,
        [f"m{j}" for j in range(9)],
        n_subsets=50,
        rng=np.random.default_rng(0),
    )
    eq = controls[controls["depth"] == "equal depth"]
    assert (eq["n_rows_mean"] == small.sum()).all()


def test_percentile_and_p_value():
    null = np.arange(100, dtype=float)
    assert percentile_of(null, 50.0) == pytest.approx(50.5)  # 50 below, one tie counted half
    assert null_p_value(null, 99.0, lower=False) == pytest.approx(2 / 101)
    assert null_p_value(null, 0.0, lower=True) == pytest.approx(2 / 101)
    assert np.isnan(percentile_of(np.array([np.nan]), 1.0))


@pytest.fixture(scope="module")
def pair():
    X_s, y, _ = make_planted_bias(800, 8, bias_fraction=0.3, bias_strength=6.0, random_state=3)
    X_w, _, _ = make_planted_bias(800, 8, bias_fraction=0.3, bias_strength=1.0, random_state=3)
    tr, ev = slice(0, 550), slice(550, 800)
    return {"weak": X_w[tr], "strong": X_s[tr]}, y[tr], {"weak": X_w[ev], "strong": X_s[ev]}, y[ev]


def test_study_prints_the_controls_beside_the_results_and_the_null_changes_no_run(pair):
    train_X, y, eval_X, ey = pair
    evaluated = [("logistic", "weak"), ("knn", "strong"), ("rbf", "strong")]
    study = adversary_study(train_X, y, eval_X, ey, seeds=(0, 1), evaluated=evaluated, n_null_subsets=200, **KW)
    plain = adversary_study(train_X, y, eval_X, ey, seeds=(0, 1), evaluated=evaluated, n_null_subsets=0, **KW)
    assert study.categories.equals(plain.categories)
    assert study.accuracy_matrix.equals(plain.accuracy_matrix)
    ctl = study.controls
    assert set(zip(ctl["adversary"], ctl["depth"])) == {
        (a, d) for a in ("weak", "strong") for d in ("as run", "equal depth")
    }
    assert (ctl["n_subsets"] == 200).all() and (plain.controls["n_subsets"] == 0).all()
    corr = study.rank_correlation.set_index("adversary")
    assert {"kendall_p_vs_zero", "kendall_p_vs_random", "kendall_percentile"} <= set(corr.columns)
    assert "kendall_p_value" not in corr.columns  # the τ = 0 test is labelled as such
    as_run = ctl[ctl["depth"] == "as run"].set_index("adversary")
    M = study.accuracy_matrix
    for a in ("weak", "strong"):
        assert as_run.loc[a, "mean_drop"] == pytest.approx(float((M["none"] - M[a]).mean()))
        assert as_run.loc[a, "kendall"] == pytest.approx(corr.loc[a, "kendall"], nan_ok=True)
    n_min = study.params["equal_depth_rows"]
    assert set(n_min) == {0, 1}
    summary = study.summary()["adversaries"]["strong"]
    assert set(summary["controls"]) == {"as run", "equal depth"} and "kendall_p_vs_random" in summary
    assert "controls" in study.tables() and "drop_controls" in study.tables()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_bad_null_subsets_is_one_sentence(pair, bad):
    train_X, y, eval_X, ey = pair
    with pytest.raises(ValueError, match="'n_null_subsets' parameter of adversary_study must be an int >= 0"):
        adversary_study(train_X, y, eval_X, ey, seeds=(0,), evaluated=[("logistic", "weak")], n_null_subsets=bad, **KW)


def test_reading_sets_the_ranking_change_and_the_drop_beside_their_null(pair):
    train_X, y, eval_X, ey = pair
    evaluated = [("logistic", "weak"), ("knn", "strong"), ("rbf", "strong")]
    study = adversary_study(train_X, y, eval_X, ey, seeds=(0,), evaluated=evaluated, n_null_subsets=100, **KW)
    text = " ".join(study.reading())
    assert "random evaluation subsets of the same size lower it by" in text
    assert "chance does (percentile" in text or "unchanged" in text
    assert "At equal depth" in text
