"""Validating difficulty levels (aflite_core.dynamics.validation): accuracy per level, training on fractions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aflite_core.cli import main
from aflite_core.dynamics import difficulty_levels, record_dynamics
from aflite_core.dynamics.fractions import SELECTIONS, fraction_experiment, select_fraction
from aflite_core.dynamics.heldout import level_accuracy
from aflite_core.dynamics.validation import validate_levels

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _blobs(n=600, seed=0):
    from aflite_core.data.planted_bias import make_planted_bias

    X, y, _ = make_planted_bias(n, 6, n_classes=3, class_sep=1.0, bias_fraction=0.2, random_state=seed)
    return X, y


@pytest.fixture(scope="module")
def levels():
    X, y = _blobs()
    rec = record_dynamics(X, y, X_partial=X[:, :2], epochs=4, random_state=0)
    return difficulty_levels(rec, random_state=0), X, y


@pytest.mark.shared_data
def test_held_out_accuracy_falls_from_easy_to_hard_on_the_snli_sample(shared_data):
    from sklearn.model_selection import GroupShuffleSplit

    frame = pd.read_json(shared_data / "snli_sample.jsonl", lines=True)
    X = np.load(shared_data / "snli_sample.pair_minilm.npy")
    H = np.load(shared_data / "snli_sample.hyp_minilm.npy")
    y = frame["label"].to_numpy()
    tr, ev = next(GroupShuffleSplit(1, test_size=0.5, random_state=0).split(X, groups=frame["premise"]))
    # training dynamics recorded on the characterised half (in-sample, as the paper does on its test set)
    rec = record_dynamics(X[ev], y[ev], X_partial=H[ev], epochs=5, random_state=0)
    lv = difficulty_levels(rec, random_state=0)
    # models trained on the other half, which never entered the dynamics
    acc = level_accuracy(lv, X[tr], y[tr], X[ev], y[ev], models=("logistic",), partial=(H[tr], H[ev]))
    full = acc[acc["input"] == "full"].set_index("level")
    assert full.loc["easy", "accuracy"] > full.loc["ambiguous", "accuracy"] > full.loc["hard", "accuracy"]
    assert full.loc["easy", "ci_low"] > full.loc["hard", "ci_high"]  # not within the noise
    part = acc[acc["input"] == "partial"].set_index("level")
    assert part.loc["easy", "accuracy"] > 0.7 and part.loc["hard", "accuracy"] < 1 / 3  # hypothesis-only: no cue left


def test_select_fraction_follows_each_criterion(levels):
    lv, _, y = levels
    n = len(y)
    m = lv.measures
    for sel in SELECTIONS:
        mask = select_fraction(sel, 0.2, levels=lv, y=y, random_state=0)
        assert mask.sum() == round(0.2 * n), sel
    amb = select_fraction("gmm_ambiguous", 0.2, levels=lv, y=y, random_state=0)
    n_amb = int((lv.levels == "ambiguous").sum())
    assert (lv.levels[amb] == "ambiguous").sum() == min(n_amb, amb.sum())
    dm = select_fraction("data_maps", 0.2, levels=lv, y=y, random_state=0)
    assert m["variability"][dm].min() >= m["variability"][~dm].max()
    band = select_fraction("aum_band", 0.2, levels=lv, y=y, random_state=0)
    dist = np.abs(m["aum"] - m["aum"].median())
    assert dist[band].max() <= dist[~band].min()
    rnd = select_fraction("random", 0.5, levels=lv, y=y, random_state=0)
    assert abs(np.bincount(y[rnd]) - np.bincount(y) / 2).max() <= 1  # stratified
    with pytest.raises(ValueError, match="'selection' parameter of select_fraction"):
        select_fraction("best", 0.2, levels=lv, y=y)


def test_fraction_experiment_table(levels):
    lv, X, y = levels
    Xt, yt = _blobs(300, seed=1)
    frame = fraction_experiment(lv, X, y, Xt, yt, fractions=(0.2, 0.4), seeds=(0, 1))
    assert set(frame["selection"]) == {*SELECTIONS, "all rows"}
    ref = frame[frame["selection"] == "all rows"]
    assert len(ref) == 1 and ref["fraction"].iloc[0] == 1.0 and ref["n_train"].iloc[0] == len(y)
    sub = frame[frame["selection"] != "all rows"]
    assert set(sub["fraction"]) == {0.2, 0.4} and (sub["n_seeds"] == 2).all()
    assert (sub["source"].str.contains("Swayamdipta")).sum() == 2  # Data Maps credited for its criterion only
    assert ((sub["accuracy"] >= 0) & (sub["accuracy"] <= 1)).all()


def test_validate_levels_on_the_digits():
    from aflite_core import load_digits_dataset

    ds = load_digits_dataset()
    res = validate_levels(
        ds.representation("pca"),
        ds.y,
        X_partial=ds.representation("mlp_small"),
        models=("logistic",),
        fractions=(0.3,),
        seeds=(0,),
    )
    acc = res.level_accuracy.set_index(["input", "level"])["accuracy"]
    assert acc[("full", "easy")] > acc[("full", "hard")]
    assert res.params["n_train"] + res.params["n_eval"] == ds.n_rows
    assert set(res.fractions["fraction"]) == {0.3, 1.0}
    assert set(res.records()) == {"level_accuracy", "fractions"}


def test_cli_validate_json(tmp_path, capsys):
    X, y = _blobs(400)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "P.npy", X[:, :2].copy())
    pd.DataFrame({"label": y, "group": np.arange(len(y)) // 2}).to_csv(tmp_path / "y.csv", index=False)
    args = ["dynamics", "--features", str(tmp_path / "X.npy"), "--partial-features", str(tmp_path / "P.npy")]
    args += ["--labels", str(tmp_path / "y.csv"), "--label-column", "label", "--group-column", "group"]
    args += ["--validate", "--fractions", "0.2,0.5", "--seeds", "0", "--epochs", "3"]
    assert main([*args, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert {"model", "input", "level", "accuracy", "n"} <= set(payload["level_accuracy"][0])
    assert {"fraction", "selection", "model", "accuracy", "source"} <= set(payload["fractions"][0])
    assert payload["params"]["grouped"] is True
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Accuracy per level" in text and "Training on a fraction" in text and "Swayamdipta" in text
    assert main(["dynamics", "--labels", str(tmp_path / "y.csv"), "--validate"]) == 2
    assert "needs --features" in capsys.readouterr().err
