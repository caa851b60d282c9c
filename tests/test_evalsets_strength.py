"""Adversary strength measured independently of filtering, shared backbones, discordant pairs, intervals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.evalsets import NONE, adversary_study
from aflite_core.measures.adversary_strength import (
    backbone_strength,
    digits_backbones,
    linear_backbones,
    pair_counts,
    wilson_interval,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def test_wilson_interval():
    lo, hi = wilson_interval([0, 20, 40], [40, 40, 40])
    assert lo[0] == 0.0 and 0 < hi[0] < 0.1
    assert lo[1] + hi[1] == pytest.approx(1.0) and lo[1] < 0.5 < hi[1]
    assert hi[2] == 1.0 and 0.9 < lo[2] < 1.0
    lo0, hi0 = wilson_interval(0, 0)
    assert np.isnan(lo0) and np.isnan(hi0)


def test_pair_counts_give_kendalls_coefficient_without_ties():
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.normal(size=9), rng.normal(size=9)
        c = pair_counts(a, b)
        assert c["n_pairs"] == 36 and c["tied"] == 0 and c["concordant"] + c["discordant"] == 36
        assert (c["concordant"] - c["discordant"]) / 36 == pytest.approx(kendalltau(a, b).statistic)
    # the README's reading: with 6 models, Kendall's coefficient 0.73 is two discordant pairs of 15
    base = np.arange(6.0)
    two = base.copy()
    two[[0, 1]], two[[3, 4]] = two[[1, 0]], two[[4, 3]]
    assert pair_counts(base, two)["discordant"] == 2
    assert kendalltau(base, two).statistic == pytest.approx(11 / 15)
    assert pair_counts([1, np.nan, 3], [1, 2, 3])["n_items"] == 2


def test_digits_backbones_retrain_the_warm_up_architecture_on_pixels_with_their_own_seed():
    from aflite_core.data.digits import _digits_recipe

    bbs = digits_backbones(["pixels", "pca", "mlp_small", "mlp"], random_state=0)
    assert bbs["pixels"].name == "logistic:pixels" and bbs["pixels"].model == "logistic"
    for a, units in (("mlp", 64), ("mlp_small", 8)):
        est = bbs[a].model
        assert bbs[a].representation == "pixels"  # the raw input, not the adversary's frozen hidden layer
        assert est.hidden_layer_sizes == (units,) and est.activation == "tanh" and est.solver == "lbfgs"
        assert est.alpha == _digits_recipe(0.2, 0)[a]["alpha"]
        assert isinstance(est.random_state, int)
    warm = [int(s) for s in np.random.default_rng(0).integers(0, 2**31 - 1, size=4)]  # the warm-up seeds
    assert bbs["mlp"].model.random_state not in warm and bbs["mlp_small"].model.random_state not in warm
    with pytest.raises(ValueError, match="'adversaries' parameter of digits_backbones"):
        digits_backbones(["glove"])


def _planted_study(**kw):
    X_s, y, _ = make_planted_bias(700, 6, bias_fraction=0.3, bias_strength=6.0, random_state=3)
    X_w, _, _ = make_planted_bias(700, 6, bias_fraction=0.3, bias_strength=1.0, random_state=3)
    tr, ev = slice(0, 500), slice(500, 700)
    train_X, eval_X = {"weak": X_w[tr], "strong": X_s[tr]}, {"weak": X_w[ev], "strong": X_s[ev]}
    evaluated = [("logistic", "weak"), ("logistic", "strong"), ("knn", "strong"), ("rbf", "weak")]
    study = adversary_study(
        train_X,
        y[tr],
        eval_X,
        y[ev],
        target_size=200,
        train_size=100,
        slice_size=50,
        seeds=(0, 1),
        evaluated=evaluated,
        **kw,
    )
    return study, (train_X, y[tr], eval_X, y[ev])


def test_strength_is_the_backbone_on_the_full_set_independent_of_filtering():
    bb = linear_backbones(["weak", "strong"])
    study, (trX, trY, evX, evY) = _planted_study(backbones={a: b.name for a, b in bb.items()})
    table = backbone_strength(trX, trY, evX, evY, bb).set_index("adversary")
    s = study.strength.set_index("adversary")
    for a in ("weak", "strong"):
        assert s.loc[a, "accuracy"] == pytest.approx(table.loc[a, "accuracy"])
        assert s.loc[a, "accuracy"] == pytest.approx(study.accuracy_matrix.loc[f"logistic:{a}", NONE])
        assert 0 < s.loc[a, "round1_removed_share"] <= 1 and 0.4 < s.loc[a, "round1_mean_p"] <= 1
    assert s.loc["strong", "accuracy"] > s.loc["weak", "accuracy"]
    rel = study.same_representation
    assert set(rel["relation"]) == {"shared backbone", "same representation"}
    summary = study.summary()["adversaries"]["strong"]
    assert summary["strength"]["backbone"] == "logistic:strong" and summary["n_pairs"] == 6


def test_rank_correlation_counts_discordant_pairs_and_accuracies_carry_intervals():
    study, _ = _planted_study()
    corr = study.rank_correlation
    assert (corr["concordant_pairs"] + corr["discordant_pairs"] + corr["tied_pairs"] == corr["n_pairs"]).all()
    assert (corr["n_pairs"] == 6).all()
    summ = study.accuracy_summary
    assert set(summ["adversary"]) == {NONE, "weak", "strong"}
    assert ((summ["ci_low"] <= summ["accuracy"]) & (summ["accuracy"] <= summ["ci_high"])).all()
    filtered = summ[summ["adversary"] != NONE]
    assert (filtered["n_seeds"] == 2).all() and filtered["seed_std"].notna().all()
    assert (filtered["ci_high"] - filtered["ci_low"] > 0.05).all()  # few selected rows: wide intervals
    assert "strength" in study.tables() and "accuracy_summary" in study.tables()


def test_named_evaluated_models_and_backbone_validation():
    from sklearn.neural_network import MLPClassifier

    mlp = MLPClassifier((8,), max_iter=300, random_state=123)
    X, y, _ = make_planted_bias(300, 4, random_state=0)
    kw = {"target_size": 100, "train_size": 50, "slice_size": 30, "seeds": (0,)}
    st = adversary_study({"a": X[:200]}, y[:200], {"a": X[200:]}, y[200:], evaluated=[("net:a", mlp, "a")], **kw)
    assert list(st.accuracy_matrix.index) == ["net:a"]
    assert st.params["evaluated_seeds"]  # drawn, but the explicit random_state was kept:
    ref = MLPClassifier((8,), max_iter=300, random_state=123).fit(X[:200], y[:200])
    assert st.accuracy_matrix.loc["net:a", NONE] == pytest.approx(np.mean(ref.predict(X[200:]) == y[200:]))
    with pytest.raises(ValueError, match="'backbones' parameter of adversary_study"):
        adversary_study(
            {"a": X[:200]}, y[:200], {"a": X[200:]}, y[200:], evaluated=[("logistic", "a")], backbones={"a": "x"}, **kw
        )
