"""Measures of an AFLite run (aflite_core.measures: baselines, geometry, removed_artifacts, stability): known
answers on hand-made data, behaviour on planted data, and one check on real NLI data."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier

from aflite_core import aflite
from aflite_core.engine.registry import make_classifier
from aflite_core.measures.baselines import (
    baseline_comparison,
    model_accuracies,
    one_shot_filter,
    random_subset,
    representation_bias,
)
from aflite_core.measures.geometry import (
    DEFAULT_KS,
    ClassSimilarity,
    knn_distance_table,
    knn_table_wide,
    similarity_matrices,
)
from aflite_core.measures.removed_artifacts import NEGATION_TOKENS, feature_artifacts, token_artifacts
from aflite_core.measures.stability import StabilityReport, class_impact, removal_stability, stability_from_results

# AFLite parameters of the planted run below: target_size=500, train_size=200, slice_size=100, tau=0.75, m=32
PLANTED_AFLITE = {"target_size": 500, "train_size": 200, "slice_size": 100, "tau": 0.75, "n_partitions": 32}


@pytest.fixture(scope="module")
def planted_run():
    from aflite_core.data.planted_bias import make_planted_bias

    X, y, is_biased = make_planted_bias(1200, 12, random_state=0)
    return X, y, is_biased, aflite(X, y, random_state=0, **PLANTED_AFLITE)


# -- model_accuracies ---------------------------------------------------------------------------------------
def test_model_accuracies_all_families_on_planted_data(planted_run):
    X, y, is_biased, _ = planted_run
    frame = model_accuracies(X[:400], y[:400], random_state=0)
    assert frame["model"].tolist() == ["logistic", "rbf", "knn", "mlp"]
    assert list(frame.columns) == [
        "model",
        "accuracy",
        "accuracy_std",
        "n_splits",
        "n_rows",
        "n_classes",
        "majority_rate",
        "note",
    ]
    assert (frame["n_splits"] == 5).all() and (frame["n_rows"] == 400).all() and (frame["note"] == "").all()
    assert (frame["accuracy"] > frame["majority_rate"] + 0.1).all()
    again = model_accuracies(X[:400], y[:400], random_state=0)
    pd.testing.assert_frame_equal(frame, again)
    # on the planted rows the linear model is almost perfect, on the others much weaker
    on_biased = model_accuracies(X, y, mask=is_biased, models="logistic", random_state=0)["accuracy"].iloc[0]
    on_rest = model_accuracies(X, y, mask=~is_biased, models="logistic", random_state=0)["accuracy"].iloc[0]
    assert on_biased > 0.95 and on_rest < on_biased - 0.2


def test_model_accuracies_handles_tiny_classes_and_single_class_subsets():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.array(["a"] * 30 + ["b"] * 27 + ["c"] * 3)
    mask = np.ones(60, bool)
    mask[[57, 58]] = False  # one row of class c left in the subset
    f = model_accuracies(X, y, mask=mask, models=["logistic", "knn"], random_state=0)
    assert "1 class(es) with a single row left out" in f["note"].iloc[0]
    assert (f["n_splits"] == 5).all() and np.isfinite(f["accuracy"]).all()
    g = model_accuracies(
        X, y, mask=np.r_[np.ones(33, bool), np.zeros(24, bool), np.ones(3, bool)], models="logistic", random_state=0
    )
    assert g["n_splits"].iloc[0] == 3 and "3 folds" in g["note"].iloc[0]  # capped by the 3 rows of class c
    h = model_accuracies(X, y, mask=y == "a", models="logistic", random_state=0)
    assert np.isnan(h["accuracy"].iloc[0]) and "accuracy undefined" in h["note"].iloc[0]


def test_model_accuracies_with_groups_and_a_custom_estimator():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] > 0).astype(int)
    groups = np.repeat(np.arange(40), 3)
    f = model_accuracies(
        X, y, models={"tree": DecisionTreeClassifier(max_depth=2), "linear": "logistic"}, groups=groups, random_state=0
    )
    assert f["model"].tolist() == ["tree", "linear"] and (f["accuracy"] > 0.8).all()
    assert make_classifier("knn", n_train=4).n_neighbors == 4
    capped = model_accuracies(X, y, models="logistic", max_train_rows=30, random_state=0)
    assert capped["note"].iloc[0] == "training folds subsampled to 30 rows" and capped["accuracy"].iloc[0] > 0.8


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"models": ["svm"]}, ValueError, "'models' parameter of model_accuracies"),
        ({"models": 3}, TypeError, "'models' parameter of model_accuracies"),
        ({"n_splits": 1}, ValueError, "'n_splits' parameter of model_accuracies must be an int in \\[2, inf"),
        ({"mask": np.ones(5, bool)}, ValueError, "'mask' parameter of model_accuracies must be an AFLiteResult"),
        ({"groups": [1, 2]}, ValueError, "'groups' parameter of model_accuracies"),
        ({"n_threads": 0}, ValueError, "'n_threads' parameter of model_accuracies"),
        ({"max_train_rows": 1}, ValueError, "'max_train_rows' parameter of model_accuracies"),
    ],
)
def test_model_accuracies_invalid(kwargs, exc, match):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(exc, match=match):
        model_accuracies(X, np.arange(20) % 2, **kwargs)


# -- equal-size baselines ----------------------------------------------------------------------------------
def test_random_subset_sizes_and_stratification():
    y = np.array([0] * 70 + [1] * 20 + [2] * 10)
    m = random_subset(100, 40, random_state=0)
    assert m.dtype == bool and m.sum() == 40
    s = random_subset(100, 40, y=y, random_state=0)
    assert np.bincount(y[s]).tolist() == [28, 8, 4]
    assert np.array_equal(random_subset(100, 40, random_state=0), m)
    with pytest.raises(ValueError, match="'size' parameter of random_subset must be an int in \\[0, 100\\]"):
        random_subset(100, 101)


@given(n=st.integers(1, 200), frac=st.floats(0, 1), classes=st.integers(1, 4), seed=st.integers(0, 1000))
def test_random_subset_is_always_exactly_the_size(n, frac, classes, seed):
    size = round(frac * n)
    y = np.random.default_rng(seed).integers(0, classes, n)
    assert random_subset(n, size, y=y, random_state=seed).sum() == size


def test_one_shot_filter_removes_the_most_confidently_correct_held_out_rows(planted_run):
    X, y, is_biased, _ = planted_run
    f = one_shot_filter(X, y, size=500, train_size=200, random_state=0)
    assert f.n_kept == 500 and f.params == {"size": 500, "train_size": 200, "seed": 0}
    assert f.is_train.sum() == 200 and f.kept[f.is_train].all()  # training rows are never removed
    assert np.isnan(f.score[f.is_train]).all() and np.isfinite(f.score[~f.is_train]).all()
    removed, held_out = ~f.kept, ~f.is_train
    # correctly predicted rows leave first (all of them here, 700 must go), then the most confident mistakes
    assert f.correct[held_out].sum() < 700 and not (f.correct & f.kept).any()
    wrong_removed, wrong_kept = removed & ~f.correct, f.kept & held_out & ~f.correct
    assert f.score[wrong_removed].min() >= f.score[wrong_kept].max()
    assert (~f.kept[is_biased & held_out]).mean() > 0.95  # the planted rows go first
    assert (~f.kept[~is_biased & held_out]).mean() < 0.65
    with pytest.raises(
        ValueError, match="'train_size' parameter of one_shot_filter must be an int in \\(n_classes, size\\)"
    ):
        one_shot_filter(X, y, size=300, train_size=300)


def test_baseline_comparison_table(planted_run):
    X, y, _, res = planted_run
    table = baseline_comparison(X, y, res, partial_X=X[:, :3], random_state=0)
    assert list(table.columns) == [
        "subset",
        "features",
        "model",
        "n_rows",
        "accuracy",
        "accuracy_std",
        "majority_rate",
        "note",
    ]
    assert table["subset"].unique().tolist() == ["full", "aflite", "random", "one-shot"]
    assert table["features"].unique().tolist() == ["full input", "partial input"]
    acc = table.set_index(["subset", "features"])["accuracy"]
    n = table.set_index(["subset", "features"])["n_rows"]
    assert n["aflite", "full input"] == n["random", "full input"] == n["one-shot", "full input"] == res.n_kept
    # AFLite lowers accuracy far more than a random subset of the same size, and more than the one-shot filter
    assert acc["aflite", "full input"] < acc["random", "full input"] - 0.15
    assert acc["aflite", "full input"] <= acc["one-shot", "full input"] + 0.02
    assert abs(acc["random", "full input"] - acc["full", "full input"]) < 0.05


# -- representation bias ---------------------------------------------------------------------------------------
def test_representation_bias_per_round(planted_run):
    *_, res = planted_run
    rb = representation_bias(res)
    assert rb["round"].tolist() == list(range(1, res.n_rounds + 1))
    assert rb["size"].iloc[0] == 1200 and (rb["size"].iloc[1:].to_numpy() == rb["size_after"].iloc[:-1]).all()
    assert rb["representation_bias"].iloc[-1] < rb["representation_bias"].iloc[0] - 0.1
    assert np.allclose(rb["representation_bias"], res.history["mean_predictability"])
    with pytest.raises(TypeError, match="'result' parameter of representation_bias"):
        representation_bias(rb)


# -- kNN distances ------------------------------------------------------------------------------------------------
def test_knn_table_known_answers_by_hand():
    # training side: a=(1,0), a=(0.6,0.8), b=(0,1); held out: a=(1,0), b=(0,1)
    X = np.array([[1, 0], [0.6, 0.8], [0, 1], [1, 0], [0, 1]], dtype=float)
    y = np.array(["a", "a", "b", "a", "b"])
    held = np.array([0, 0, 0, 1, 1], bool)
    kept = np.array([0, 1, 1, 1, 1], bool)  # AFLite "removed" the training row (1, 0)
    t = knn_distance_table(X, y, kept, ks=[1, 2], heldout=held, control=False)
    wide = knn_table_wide(t)
    assert wide.index.tolist() == ["a", "b", "a vs others", "b vs others"]
    assert wide.columns.tolist() == [("before", "Top1"), ("before", "Top2"), ("after", "Top1"), ("after", "Top2")]
    expected = [
        [0.0, 0.4, 0.4, 0.4],  # a: distances 0 and 0.4; after: only (0.6, 0.8) is left, k capped at 1
        [0.0, 0.0, 0.0, 0.0],  # b: its twin (0, 1), one neighbour only
        [1.0, 1.0, 1.0, 1.0],  # a vs others: (0, 1) at distance 1
        [0.2, 1.2, 0.2, 0.2],  # b vs others: 0.2 to (0.6, 0.8), then 1 to (1, 0), which is gone after
    ]
    assert np.allclose(wide.to_numpy(), expected, atol=1e-6)
    after_a = t.query("stage == 'after' and row == 'a' and k == 2").iloc[0]
    assert after_a["k_used"] == 1 and after_a["n_pool"] == 1 and after_a["distance_mean"] == pytest.approx(0.4)


def test_knn_table_matches_brute_force_and_the_control_has_equal_sizes():
    from sklearn.metrics.pairwise import cosine_distances

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6)).astype(np.float32)
    y = rng.integers(0, 3, 300)
    kept = rng.random(300) < 0.6
    held = rng.random(300) < 0.25
    t = knn_distance_table(X, y, kept, heldout=held, random_state=0)
    assert set(t["stage"]) == {"before", "after", "random"} and sorted(t["k"].unique()) == list(DEFAULT_KS)
    D = cosine_distances(X)
    for stage, sel in (("before", np.ones(300, bool)), ("after", kept)):
        for c in range(3):
            q = np.flatnonzero(held & sel & (y == c))
            for comparison, pool in (("same class", ~held & sel & (y == c)), ("other classes", ~held & sel & (y != c))):
                nearest = np.sort(D[np.ix_(q, np.flatnonzero(pool))], axis=1)
                for k in DEFAULT_KS:
                    row = t[(t.stage == stage) & (t.label == c) & (t.comparison == comparison) & (t.k == k)].iloc[0]
                    k_used = min(k, nearest.shape[1])
                    assert row["k_used"] == k_used and row["n_heldout"] == len(q)
                    assert row["distance_sum"] == pytest.approx(nearest[:, :k_used].sum(axis=1).mean(), abs=1e-4)
    # the control: a random subset of each side with the kept part's size
    sizes = t[(t.k == 1) & (t.comparison == "same class")].groupby("stage")["n_heldout"].sum()
    assert sizes["after"] == sizes["random"] == int((held & kept).sum())


def test_knn_table_split_by_groups_keeps_groups_on_one_side():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 4))
    y = np.arange(200) % 2
    groups = np.repeat(np.arange(50), 4)
    t = knn_distance_table(
        X, y, np.ones(200, bool), groups=groups, test_size=0.2, ks=[1], control=False, random_state=0
    )
    n_held = t.query("stage == 'before' and comparison == 'same class'")["n_heldout"].sum()
    assert n_held % 4 == 0 and 36 <= n_held <= 44


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"ks": [0, 5]}, ValueError, "'ks' parameter of knn_distance_table"),
        ({"ks": "5"}, ValueError, "'ks' parameter of knn_distance_table"),
        ({"test_size": 1.5}, ValueError, "'test_size' parameter of knn_distance_table must be a float in \\(0, 1\\)"),
        ({"kept": np.ones(3, bool)}, ValueError, "'kept' parameter of knn_distance_table"),
        ({"kept": ["x"] * 10}, TypeError, "'kept' parameter of knn_distance_table"),
        ({"heldout": np.zeros(10, bool)}, ValueError, "'heldout' parameter of knn_distance_table must leave rows"),
    ],
)
def test_knn_table_invalid(kwargs, exc, match):
    X = np.random.default_rng(0).normal(size=(10, 3))
    kwargs.setdefault("kept", np.ones(10, bool))
    with pytest.raises(exc, match=match):
        knn_distance_table(X, np.arange(10) % 2, **kwargs)


# -- similarity matrices (Figure 1) -------------------------------------------------------------------------
def test_similarity_matrices_sample_and_means():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 5))
    y = np.repeat(["x", "y"], 50)
    kept = rng.random(100) < 0.5
    out = similarity_matrices(X, y, kept, n_per_group=6, random_state=0)
    assert [s.label for s in out] == ["x", "y"] and all(isinstance(s, ClassSimilarity) for s in out)
    Z = X / np.linalg.norm(X, axis=1, keepdims=True)
    for s, label in zip(out, ["x", "y"]):
        assert len(s.retained_rows) == len(s.removed_rows) == 6
        assert kept[s.retained_rows].all() and not kept[s.removed_rows].any()
        assert (y[s.retained_rows] == label).all() and (y[s.removed_rows] == label).all()
        rows = np.r_[s.retained_rows, s.removed_rows]
        assert np.allclose(s.matrix, Z[rows] @ Z[rows].T, atol=1e-5) and np.allclose(np.diag(s.matrix), 1, atol=1e-5)
        assert s.retained.shape == s.removed.shape == (6, 6)
        ret = Z[kept & (y == label)]
        S = ret @ ret.T
        assert s.mean_retained_all == pytest.approx((S.sum() - np.trace(S)) / (len(ret) * (len(ret) - 1)), abs=1e-6)
    only_y = similarity_matrices(X, y, kept, classes=["y"], random_state=0)
    assert [s.label for s in only_y] == ["y"]
    with pytest.raises(ValueError, match="'classes' parameter of similarity_matrices"):
        similarity_matrices(X, y, kept, classes=["z"])


# -- per-class impact ----------------------------------------------------------------------------------------
def test_class_impact_counts_and_warnings():
    y = ["a"] * 10 + ["b"] * 10 + ["c"] * 4
    kept = np.r_[
        np.ones(8, bool), np.zeros(2, bool), np.ones(3, bool), np.zeros(7, bool), np.ones(1, bool), np.zeros(3, bool)
    ]
    f = class_impact(y, kept)
    assert f["label"].tolist() == ["a", "b", "c"]
    assert f["n_after"].tolist() == [8, 3, 1] and f["n_removed"].tolist() == [2, 7, 3]
    assert np.allclose(f["share_lost"], [0.2, 0.7, 0.75])
    assert f["warning"].tolist() == [False, True, True]
    assert f.attrs["overall_share_lost"] == pytest.approx(12 / 24)
    assert "lost 70% of its rows (7 of 10; overall 50%)" in f.loc[1, "message"]
    assert "Only 1 row(s) remain" in f.loc[2, "message"] and f.loc[0, "message"] == ""
    assert np.allclose(f["relative_loss"], [0.4, 1.4, 1.5])
    strict = class_impact(y, kept, threshold=0.1, min_rows=0, margin=0.0)
    assert strict["warning"].tolist() == [False, True, True]  # 'a' lost less than the rows overall
    # halving every class is not a warning: a class must lose more than the rest
    even = class_impact(
        ["a"] * 20 + ["b"] * 20, np.r_[np.tile([True, False], 10), np.ones(9, bool), np.zeros(11, bool)]
    )
    assert even["warning"].tolist() == [False, False]
    with pytest.raises(ValueError, match="'threshold' parameter of class_impact must be a float in \\[0, 1\\]"):
        class_impact(y, kept, threshold=2)


# -- stability across seeds ----------------------------------------------------------------------------------
def test_stability_report_by_hand():
    removed = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 1, 0, 0]], bool)
    rep = StabilityReport(removed=removed, seeds=(1, 2, 3), labels=np.array(["a", "a", "b", "b"], dtype=object))
    J = rep.jaccard.to_numpy()
    assert np.allclose(J, [[1, 1 / 3, 1 / 2], [1 / 3, 1, 1 / 2], [1 / 2, 1 / 2, 1]])
    assert rep.mean_jaccard == pytest.approx((1 / 3 + 1 / 2 + 1 / 2) / 3)
    assert np.allclose(rep.frequency, [1 / 3, 1, 1 / 3, 0])
    frame = rep.to_frame()
    assert frame["status"].tolist() == ["sometimes removed", "always removed", "sometimes removed", "never removed"]
    s = rep.summary()
    assert (s["always_removed"], s["sometimes_removed"], s["never_removed"]) == (1, 2, 1)
    assert s["robust_share"] == pytest.approx(1 / 3) and s["min_jaccard"] == pytest.approx(1 / 3)


def test_removal_stability_on_planted_data(planted_run):
    X, y, is_biased, _ = planted_run
    calls = []
    rep = removal_stability(
        X, y, n_runs=3, random_state=0, callback=lambda i, n: calls.append((i, n)), **PLANTED_AFLITE
    )
    assert calls == [(1, 3), (2, 3), (3, 3)] and len(rep.results) == 3 and len(set(rep.seeds)) == 3
    assert rep.removed.shape == (3, 1200)
    J = rep.jaccard.to_numpy()
    assert np.allclose(np.diag(J), 1) and np.allclose(J, J.T)
    assert rep.mean_jaccard > 0.5  # the planted rows are removed by every seed
    assert rep.frequency[is_biased].mean() > rep.frequency[~is_biased].mean() + 0.5
    same = stability_from_results(rep.results)
    assert np.array_equal(same.removed, rep.removed) and same.seeds == rep.seeds
    stopped = removal_stability(X, y, n_runs=3, random_state=0, callback=lambda i, n: False, **PLANTED_AFLITE)
    assert stopped.n_runs == 1 and np.isnan(stopped.mean_jaccard)


def test_removal_stability_invalid():
    X = np.zeros((10, 2))
    with pytest.raises(ValueError, match="'n_runs' parameter of removal_stability"):
        removal_stability(X, np.arange(10) % 2, n_runs=1, target_size=5, train_size=3, slice_size=1)
    with pytest.raises(TypeError, match="'results' parameter of stability_from_results"):
        stability_from_results([])


# -- artifact discovery ----------------------------------------------------------------------------------------
def test_token_artifacts_known_answer():
    texts = (
        ["Nobody is sleeping."] * 8
        + ["A man is sleeping."] * 2  # contradiction, removed
        + ["A man is running."] * 9
        + ["Nobody runs."] * 1  # contradiction, retained
        + ["A dog runs."] * 10  # entailment, half removed
    )
    y = ["contradiction"] * 20 + ["entailment"] * 10
    kept = np.r_[np.zeros(10, bool), np.ones(10, bool), np.tile([True, False], 5)]
    t = token_artifacts(texts, y, kept, min_count=3, top_k=3)
    c = t[(t.label == "contradiction") & (t.direction == "removed")]
    assert c["token"].tolist()[:2] == ["nobody", "sleeping"] or c["token"].tolist()[:2] == ["sleeping", "nobody"]
    top = c.set_index("token").loc["nobody"]
    assert (top["n_removed"], top["n_retained"]) == (8, 1)
    assert top["share_removed"] == pytest.approx(0.8) and top["share_retained"] == pytest.approx(0.1)
    a = 0.5
    lo = np.log((8 + a) / (2 + a)) - np.log((1 + a) / (9 + a))
    assert top["log_odds"] == pytest.approx(lo)
    assert top["z"] == pytest.approx(lo / np.sqrt(1 / 8.5 + 1 / 2.5 + 1 / 1.5 + 1 / 9.5))
    r = t[(t.label == "contradiction") & (t.direction == "retained")]
    assert r["token"].iloc[0] in ("running", "a")
    # entailment: every token is as common among removed as among retained rows: nothing is skewed
    assert t[t.label == "entailment"].empty
    # min_count drops tokens seen in fewer rows of the label
    assert "nobody" not in set(token_artifacts(texts, y, kept, min_count=10)["token"])
    assert "man" in set(token_artifacts(texts, y, kept, min_count=3, top_k=10)["token"])


def test_token_artifacts_invalid():
    with pytest.raises(ValueError, match="'texts' parameter of token_artifacts must be a sequence of str"):
        token_artifacts(["a", None], [0, 1], [True, False])
    with pytest.raises(ValueError, match="'texts' parameter of token_artifacts must have one text per label"):
        token_artifacts(["a"], [0, 1], [True, False])
    with pytest.raises(ValueError, match="'min_count' parameter of token_artifacts"):
        token_artifacts(["a", "b"], [0, 1], [True, False], min_count=0)


def test_feature_artifacts_finds_the_planted_dimension_within_each_label():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    y = np.repeat([0, 1], 200)
    kept = rng.random(400) < 0.5
    X[~kept & (y == 0), 2] += 3.0  # removed rows of class 0 stand out on dim 2
    X[~kept & (y == 1), 4] -= 3.0  # removed rows of class 1 on dim 4
    X[:, 5] = 10.0 * y  # a dimension that only separates the classes
    f = feature_artifacts(X, kept, y=y, top_k=2)
    top = f[f["rank"] == 1].set_index("label")
    assert top.loc[0, "dimension"] == 2 and top.loc[0, "auc"] > 0.95 and top.loc[0, "smd"] > 2
    assert top.loc[1, "dimension"] == 4 and top.loc[1, "auc"] < 0.05 and top.loc[1, "smd"] < -2
    assert 5 not in set(f["dimension"])
    overall = feature_artifacts(X[:, :2], np.r_[np.zeros(2, bool), np.ones(398, bool)], top_k=1)
    assert overall["label"].tolist() == ["all"]
    # AUC by hand: a dimension that puts every removed row above every retained row
    Z = np.c_[np.r_[5.0, 6.0, 1.0, 2.0, 3.0], np.zeros(5)]
    g = feature_artifacts(Z, np.array([0, 0, 1, 1, 1], bool), top_k=2)
    assert g.loc[0, "dimension"] == 0 and g.loc[0, "auc"] == 1.0 and g.loc[1, "auc"] == 0.5


def test_feature_artifacts_on_a_sample_finds_the_same_dimension_and_reports_its_progress():
    """max_rows: a seeded sample per class and side (stated in attrs); progress(done, total) can stop it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30_000, 12)).astype(np.float32)
    y = np.repeat([0, 1, 2], 10_000)
    kept = rng.random(30_000) < 0.7
    X[~kept, 5] += 1.0  # removed rows stand out on dim 5 in every class
    full = feature_artifacts(X, kept, y=y, top_k=3)
    seen = []
    sampled = feature_artifacts(X, kept, y=y, top_k=3, max_rows=800, progress=lambda d, t: seen.append((d, t)))
    assert (sampled[sampled["rank"] == 1]["dimension"] == 5).all() and (full[full["rank"] == 1]["dimension"] == 5).all()
    assert np.allclose(sampled[sampled["rank"] == 1]["auc"], full[full["rank"] == 1]["auc"], atol=0.04)
    assert sampled.attrs["rows_used"] == {c: (800, 800) for c in (0, 1, 2)}
    assert sampled.attrs["rows"] == full.attrs["rows"] == full.attrs["rows_used"]
    assert seen and seen[-1][0] == seen[-1][1] and [d for d, _ in seen] == sorted(d for d, _ in seen)
    again = feature_artifacts(X, kept, y=y, top_k=3, max_rows=800)
    pd.testing.assert_frame_equal(sampled, again)  # seeded: the same sample every time

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop

    with pytest.raises(Stop):
        feature_artifacts(X, kept, y=y, max_rows=800, progress=stop)
    with pytest.raises(ValueError, match="'max_rows' parameter of feature_artifacts"):
        feature_artifacts(X, kept, max_rows=0)


@given(
    values=st.lists(st.integers(-3, 3), min_size=1, max_size=40),
    data=st.data(),
)
def test_rank_sums_equal_scipys_average_ranks(values, data):
    from scipy.stats import rankdata

    from aflite_core.measures.removed_artifacts import _first_rank_sums

    B = np.array([values, values[::-1]], dtype=np.float32)  # ties on purpose
    n1 = data.draw(st.integers(0, len(values)))
    assert np.allclose(_first_rank_sums(B, n1), rankdata(B, axis=1)[:, :n1].sum(axis=1))


# -- real data: SNLI hypotheses (AFLite parameters stated in the test) ---------------------------------------------
@pytest.mark.shared_data
def test_snli_hypothesis_only_bias_is_filtered(shared_data):
    rows = [json.loads(line) for line in (shared_data / "snli_sample.jsonl").read_text(encoding="utf-8").splitlines()]
    X = np.load(shared_data / "snli_sample.hyp_minilm.npy")
    y = np.array([r["label"] for r in rows])
    premise = [r["premise"] for r in rows]
    hypothesis = [r["hypothesis"] for r in rows]
    # AFLite on hypothesis-only features: target_size=0.5, train_size=0.2, slice_size=300, tau=0.6, m=32, seed 0
    res = aflite(X, y, target_size=0.5, train_size=0.2, slice_size=300, tau=0.6, n_partitions=32, random_state=0)
    same_size = random_subset(len(y), res.n_kept, random_state=1)
    # held-out hypothesis-only accuracy (linear), 5 folds split by premise: a premise never sits on both sides
    kw = {"models": "logistic", "groups": premise, "random_state": 0}
    after = model_accuracies(X, y, mask=res, **kw)["accuracy"].iloc[0]
    control = model_accuracies(X, y, mask=same_size, **kw)["accuracy"].iloc[0]
    assert control > 0.5  # the hypothesis-only bias: ~0.59 with 3 balanced classes
    assert after < control - 0.15
    # negation words are over-represented among removed vs retained contradictions
    negation = re.compile(r"\b(" + "|".join(NEGATION_TOKENS) + r")\b")
    has_negation = np.array([bool(negation.search(h.lower())) for h in hypothesis])
    contra = y == "contradiction"
    assert has_negation[contra & ~res.kept].mean() > 2 * has_negation[contra & res.kept].mean()
    artifacts = token_artifacts(hypothesis, y, res)
    removed_contra = artifacts[(artifacts.label == "contradiction") & (artifacts.direction == "removed")]
    assert "nobody" in set(removed_contra["token"])
