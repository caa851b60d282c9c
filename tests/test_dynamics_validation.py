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
    assert set(res.records()) == {"level_accuracy", "fractions", "level_controls"}


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


# -- controls of the levels (issue 27) ------------------------------------------------------------------------
def test_random_levels_give_flat_accuracy_within_binomial_error():
    from aflite_core.dynamics.heldout import level_correctness, score_levels
    from aflite_core.dynamics.level_controls import control_levels

    X, y = _blobs(1200, seed=3)
    runs = level_correctness(X[:600], y[:600], X[600:], y[600:], models=("logistic",))
    counts = {"easy": 250, "ambiguous": 200, "hard": 150}
    lv = control_levels(X[600:], y[600:], counts, seed=0)
    assert {k: int((v == "easy").sum()) for k, v in lv.items()} == dict.fromkeys(lv, 250)  # the same sizes
    table = score_levels(runs, lv["random"]).set_index("level")
    p = table.loc["all", "accuracy"]
    for level, n in counts.items():
        assert table.loc[level, "n"] == n
        assert abs(table.loc[level, "accuracy"] - p) <= 3 * np.sqrt(p * (1 - p) / n)  # flat within binomial error
    conf = score_levels(runs, lv["confidence, in-sample"]).set_index("level")["accuracy"]
    assert conf["easy"] - conf["hard"] > 0.3  # one-shot confidence on the same Φ separates without any dynamics


def test_levels_of_sizes_cuts_by_score_and_refuses_wrong_sizes():
    from aflite_core.dynamics.level_controls import levels_of_sizes

    rng = np.random.default_rng(0)
    out = levels_of_sizes(np.arange(10.0), {"easy": 3, "ambiguous": 3, "hard": 4}, rng)
    assert out.tolist() == ["hard"] * 4 + ["ambiguous"] * 3 + ["easy"] * 3
    with pytest.raises(ValueError, match="must add up to the 10 rows"):
        levels_of_sizes(np.arange(10.0), {"easy": 3, "ambiguous": 3, "hard": 3}, rng)


def test_validate_levels_sets_the_controls_beside_the_levels_over_seeds_that_redraw_everything():
    from aflite_core.dynamics.level_controls import CONTROL_KINDS, DYNAMICS_KIND, validation_findings

    X, y = _blobs(500, seed=4)
    rng = np.random.default_rng(0)
    other = X[:, :3] + rng.normal(size=(500, 3))  # a representation the levels never see
    res = validate_levels(X, y, X_independent=other, models=("logistic",), fractions=(0.3,), seeds=(0, 1), epochs=3)
    ctl = res.level_controls
    assert set(ctl["levels"]) == {DYNAMICS_KIND, *CONTROL_KINDS}
    assert set(ctl["input"]) == {"full", "independent"} and (ctl["n_seeds"] == 2).all()
    sizes = ctl[ctl["level"] != "all"].groupby(["levels", "level"])["n"].mean().unstack("levels")
    assert (sizes.nunique(axis=1) == 1).all()  # every control has the GMM levels' sizes
    dyn = ctl[ctl["levels"] == DYNAMICS_KIND].drop(columns="levels").reset_index(drop=True)
    acc = res.level_accuracy.reset_index(drop=True)
    assert np.allclose(dyn["accuracy"], acc["accuracy"]) and "accuracy_std" in acc.columns
    runs = res.level_runs
    assert set(runs["seed"]) == {0, 1}
    by_seed = runs[(runs["level"] == "all") & (runs["input"] == "full")].set_index("seed")["accuracy"]
    assert by_seed[0] != by_seed[1]  # the split is re-drawn, not only the subsets
    fr = res.fractions
    assert {"confidence_easy", "confidence_ambiguous", "confidence_hard"} <= set(fr["selection"])
    assert (fr["n_seeds"] == 2).all() and (fr["accuracy_std"] > 0).any()
    text = " ".join(validation_findings(res.level_controls, res.fractions))
    assert "one-shot out-of-fold confidence levels" in text and "Random levels of the same sizes" in text


def test_validation_step_fraction_spans_the_seeds():
    from aflite_core.dynamics.validation import ValidationStep

    first = ValidationStep("training on fractions", 10, 10, "", 0, 2).fraction
    second = ValidationStep("record held-out rows", 0, 10, "", 1, 2).fraction
    assert first == pytest.approx(0.5) and second == pytest.approx(0.5)
    assert ValidationStep("training on fractions", 10, 10).fraction == pytest.approx(1.0)


def test_cli_validate_digits_scores_the_levels_on_the_pixels_they_never_saw(capsys):
    args = ["dynamics", "--validate", "--digits", "--seeds", "0", "--fractions", "0.5", "--epochs", "2", "--json"]
    assert main(args) == 0
    payload = json.loads(capsys.readouterr().out)
    inputs = {r["input"] for r in payload["level_controls"]}
    assert inputs == {"full", "independent"} and payload["params"]["independent_input"] is True
    assert {r["levels"] for r in payload["level_controls"]} >= {"random", "confidence, out-of-fold"}
    assert main(["dynamics", "--validate", "--digits", "--features", "x.npy"]) == 2
    assert "--digits brings its own features" in capsys.readouterr().err
