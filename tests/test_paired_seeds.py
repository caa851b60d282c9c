"""The OOD experiments' controls (issue 27): paired differences over seeds, and the shortcut AFLite leaves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ttest_rel, wilcoxon

from aflite_core.cli import main
from aflite_core.data.planted_bias import make_biased_circles
from aflite_core.experiments.ood import ood_experiment
from aflite_core.experiments.paired_seeds import bias_label_correlation, paired_differences, paired_test


def test_paired_test_on_a_constructed_case():
    """Ten seeds where AFLite is 0.008 worse than random on every seed but one: the paired test sees it."""
    rng = np.random.default_rng(0)
    random = 0.43 + 0.01 * rng.standard_normal(10)  # seed-to-seed spread larger than the effect
    diff = -0.008 + 0.004 * rng.standard_normal(10)
    diff[3] = 0.001  # one seed goes the other way
    aflite = random + diff
    r = paired_test(aflite, random)
    assert r["n_seeds"] == 10 and r["n_negative"] == 9 and r["n_positive"] == 1 and r["n_tied"] == 0
    assert r["mean"] == pytest.approx(diff.mean()) and r["sd"] == pytest.approx(diff.std(ddof=1))
    assert r["t_p"] == pytest.approx(ttest_rel(aflite, random).pvalue) and r["t_p"] < 0.01
    assert r["wilcoxon_p"] == pytest.approx(wilcoxon(aflite, random).pvalue) and r["wilcoxon_p"] < 0.05
    unpaired_sd = np.hypot(aflite.std(ddof=1), random.std(ddof=1))
    assert abs(r["mean"]) < unpaired_sd  # "about one standard deviation" unpaired, significant paired
    same = paired_test(random, random)
    assert same["n_tied"] == 10 and np.isnan(same["t_p"]) and np.isnan(same["wilcoxon_p"])
    symmetric = paired_test(random + np.tile([0.01, -0.01], 5), random)
    assert symmetric["t_p"] > 0.5 and symmetric["n_positive"] == symmetric["n_negative"] == 5


def test_paired_differences_pairs_by_seed():
    rows = []
    for seed in range(4):
        for train_set, acc in (("original", 0.70), ("aflite", 0.68 + 0.001 * seed), ("random", 0.69)):
            rows.append(
                {
                    "dataset": "d",
                    "model": "m",
                    "train_set": train_set,
                    "test_set": "transfer",
                    "accuracy": acc,
                    "seed": seed,
                }
            )
    p = paired_differences(pd.DataFrame(rows)).set_index("comparison")
    assert p.loc["aflite − random", "mean"] == pytest.approx(-0.0085)
    assert p.loc["aflite − original", "n_negative"] == 4
    assert p.loc["aflite − random", "t_p"] < 0.01


def test_bias_label_correlation_is_zero_on_the_generators_unbiased_rows_and_negative_after_selection():
    d = make_biased_circles(4000, random_state=0)
    unbiased = ~np.asarray(d.is_biased, dtype=bool)
    assert abs(bias_label_correlation(d.X, d.y, unbiased)) < 0.06
    direction = d.X[:, 2:].mean(axis=1)
    agrees = np.sign(direction) == np.where(d.y == 1, 1, -1)
    assert bias_label_correlation(d.X, d.y, unbiased & ~agrees) < -0.5  # drop the rows whose noise helps


def test_ood_experiment_reports_the_kept_shortcut_and_the_paired_table(capsys):
    res = ood_experiment(make_biased_circles_list(), models=("logistic",), seeds=(0, 1), n_test=300)
    b = res.bias_correlation
    assert set(b["train_set"]) == {"original", "aflite", "random"} and set(b["seed"]) == {0, 1}
    assert (b["n_unbiased"] > 0).all()
    p = res.paired()
    assert set(p["comparison"]) == {"aflite − random", "aflite − original"} and (p["n_seeds"] == 2).all()
    assert main(["ood", "--seeds", "0,1", "--models", "logistic", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "Paired over the 2 seeds" in out and "ttest_rel" in out and "Wilcoxon" in out
    assert "AFLite's kept unbiased rows:" in out and "no_bias" in out.split("Paired over")[1].splitlines()[4]


def make_biased_circles_list():
    return [make_biased_circles(600, random_state=5)]
