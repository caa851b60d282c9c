"""Out-of-distribution generalisation after AFLite (aflite_core.experiments.ood, ICML 2020 §5's claim)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aflite_core.cli import main
from aflite_core.data.planted_bias import make_biased_circles
from aflite_core.experiments.ood import OOD_TEST_SETS, OOD_TRAIN_SETS, ood_experiment, shifted_test_sets

KEYS = {"dataset", "model", "train_set", "test_set", "accuracy"}


def test_shifted_test_sets_change_only_the_bias_columns():
    data = make_biased_circles(4000, separation=0.6, random_state=1)
    sets = shifted_test_sets(data)
    assert list(sets) == list(OOD_TEST_SETS)
    for s in sets.values():
        np.testing.assert_array_equal(s.X[:, :2], data.X[:, :2])
        np.testing.assert_array_equal(s.y, data.y)
    sign = 2 * data.y - 1  # the bias direction of each row's own class
    along = lambda X: X[:, 2:].sum(axis=1) / np.sqrt(X.shape[1] - 2)  # noqa: E731  projection on u
    b = data.is_biased
    assert np.mean(along(sets["in_distribution"].X)[b] * sign[b]) == pytest.approx(3.0, abs=0.1)
    assert np.mean(along(sets["no_bias"].X)[b] * sign[b]) == pytest.approx(0.0, abs=0.1)
    assert np.mean(along(sets["flipped_bias"].X)[b] * sign[b]) == pytest.approx(-3.0, abs=0.1)
    assert np.std(along(sets["no_bias"].X)[b]) == pytest.approx(1.0, abs=0.1)  # pure noise, like unbiased rows


def test_filtered_models_lose_less_under_the_flipped_bias():
    res = ood_experiment(seeds=(0,))
    t = res.table
    assert set(t["train_set"]) == set(OOD_TRAIN_SETS) and set(t["test_set"]) == set(OOD_TEST_SETS)
    loss = res.shift_loss().set_index(["dataset", "model", "train_set"])["loss"]
    for dataset in t["dataset"].unique():
        # the RBF SVM can learn the rings: trained on AFLite's rows it barely notices the shortcut flip
        assert loss[(dataset, "rbf", "aflite")] < loss[(dataset, "rbf", "original")] - 0.2
        assert loss[(dataset, "rbf", "aflite")] < loss[(dataset, "rbf", "random")] - 0.2
    by_model = res.shift_loss().groupby(["model", "train_set"])["loss"].mean()
    assert by_model[("logistic", "aflite")] < by_model[("logistic", "original")]
    # the size of the kept set is matched by the random subset
    n = t.groupby(["dataset", "train_set"])["n_train"].first().unstack()
    assert (n["aflite"] == n["random"]).all() and (n["original"] == 2000).all()


def test_cli_ood_json(capsys):
    assert main(["ood", "--json", "--seeds", "0", "--models", "logistic", "--quiet"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert KEYS <= set(records[0])
    assert {r["train_set"] for r in records} == set(OOD_TRAIN_SETS)
    assert {r["test_set"] for r in records} == set(OOD_TEST_SETS)
    assert all(0.0 <= r["accuracy"] <= 1.0 for r in records)
    assert len(records) == 4 * 1 * 3 * 3


def test_cli_ood_rejects_unknown_model(capsys):
    assert main(["ood", "--models", "boosting", "--quiet"]) == 2
    assert "models" in capsys.readouterr().err


@pytest.mark.shared_data
@pytest.mark.slow
def test_cli_ood_real_json(shared_data, capsys):
    assert main(["ood", "--real", "--json", "--seeds", "0", "--data-dir", str(shared_data), "--quiet"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert KEYS <= set(records[0])
    assert {r["dataset"] for r in records} == {"SNLI sample → MNLI sample"}
    assert {r["test_set"] for r in records} == {"in_distribution", "transfer"}
    assert {r["train_set"] for r in records} == set(OOD_TRAIN_SETS)
    sizes = {r["train_set"]: r["n_train"] for r in records}
    assert sizes["aflite"] == sizes["random"] < sizes["original"]
