"""The default model family is as strong an adversary as scikit-learn's LogisticRegression() (issue #13).

Held-out accuracy is compared on *the same* partitions: ``LogisticFamily(block_rows=1)`` draws exact random
subsets from the run's generator exactly as the scikit-learn family does, so the two mean predictabilities
(= mean held-out accuracy over the partition models) differ only by the models.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from aflite_core import AFLiteResult, LinearFamily, aflite, load_digits_dataset, predictability
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine.checkpoint import peek_meta
from aflite_core.engine.logistic import LogisticFamily, fit_logistic
from aflite_core.engine.registry import family_from_spec, resolve_model
from aflite_core.engine.sklearn_family import SklearnFamily

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

#: the default family's spec before issue #13, as old checkpoints and run directories record it
OLD_DEFAULT_SPEC = {
    "family": "linear",
    "class": "aflite_core.models.LinearFamily",
    "params": {"alpha": 0.001, "block_rows": None, "max_gram_bytes": None, "iterative": True, "partition_group": 16},
}


def _mean_p_same_partitions(X, y, t, m=16, seed=0):
    ours = predictability(X, y, train_size=t, n_partitions=m, model=LogisticFamily(block_rows=1), random_state=seed)
    ref = predictability(X, y, train_size=t, n_partitions=m, model=LogisticRegression(), random_state=seed)
    return float(np.nanmean(ours)), float(np.nanmean(ref)), ours, ref


def _gaussian_classes(n, d, n_classes, seed, sep=1.0):
    X, y, _ = make_planted_bias(
        n, d, n_classes=n_classes, class_sep=sep, bias_fraction=0.0, spectrum_decay=0.5, random_state=seed
    )
    return X, y


# -- held-out accuracy at least LogisticRegression()'s - 0.01 -------------------------------------------------
PROBLEMS = [  # (classes, d, t / d)
    (3, 8, 2),
    (3, 8, 10),
    (3, 8, 50),
    (10, 8, 5),
    (10, 8, 50),
    (3, 384, 2),
    (3, 384, 5),
    (10, 384, 2),
]


@pytest.mark.parametrize("n_classes,d,ratio", PROBLEMS, ids=[f"C{c}-d{d}-t{r}d" for c, d, r in PROBLEMS])
def test_held_out_accuracy_matches_logistic_regression(n_classes, d, ratio):
    t = ratio * d
    X, y = _gaussian_classes(max(3 * t, 600), d, n_classes, seed=ratio + d, sep=1.5)
    ours, ref, _, _ = _mean_p_same_partitions(X, y, t)
    assert ours >= ref - 0.01, (ours, ref)


def test_the_old_ridge_default_was_weaker_where_logistic_regression_is_not():
    # least squares on one-hot labels masks classes whose means lie between others' (5 classes on a line)
    rng = np.random.default_rng(3)
    y = rng.permutation(np.arange(1500) % 5)
    X = rng.normal(size=(1500, 8)).astype(np.float32)
    X[:, 0] += 2.5 * y
    ridge = predictability(X, y, train_size=400, n_partitions=16, model=LinearFamily(block_rows=1), random_state=0)
    ours, ref, _, _ = _mean_p_same_partitions(X, y, 400)
    assert float(np.nanmean(ridge)) < ref - 0.02 <= ours


def test_digits_mlp_small_at_ten_percent():
    data = load_digits_dataset()
    X, y = data.representation("mlp_small"), data.y
    ours, ref, _, _ = _mean_p_same_partitions(X, y, round(0.1 * len(y)), m=32)
    assert ours >= ref - 0.01, (ours, ref)
    default = predictability(X, y, train_size=0.1, random_state=0)  # the default family, block partitions
    assert float(np.nanmean(default)) >= ref - 0.01


@pytest.mark.shared_data
def test_mnli_hypothesis_only_at_thirty_percent(shared_data):
    rows = [json.loads(line) for line in (shared_data / "mnli_sample.jsonl").read_text(encoding="utf-8").splitlines()]
    y = np.array([r["label"] for r in rows])
    X = np.load(shared_data / "mnli_sample.hyp_minilm.npy")
    ours, ref, _, _ = _mean_p_same_partitions(X, y, round(0.3 * len(y)))
    assert ours >= ref - 0.01, (ours, ref)
    default = predictability(X, y, train_size=0.3, random_state=0)
    assert float(np.nanmean(default)) >= ref - 0.01


# -- the same models as the scikit-learn loop ---------------------------------------------------------------
def test_round_one_scores_match_the_logistic_regression_loop_on_planted_bias():
    X, y, biased = make_planted_bias(2000, 16, n_classes=3, spectrum_decay=0.5, random_state=0)
    _, _, ours, ref = _mean_p_same_partitions(X, y, 500, m=32)
    ok = ~np.isnan(ours) & ~np.isnan(ref)
    assert np.corrcoef(ours[ok], ref[ok])[0, 1] > 0.98
    assert np.mean(np.abs(ours[ok] - ref[ok])) < 0.01
    a, b = ours >= 0.75, ref >= 0.75
    assert (a & b).sum() / (a | b).sum() > 0.95
    assert ours[biased].mean() > ours[~biased].mean() + 0.2


@pytest.mark.parametrize("n_classes", [2, 4])
def test_batched_fit_solves_scikit_learns_objective(n_classes):
    rng = np.random.default_rng(n_classes)
    n, d = 300, 6
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int) if n_classes == 2 else rng.integers(0, n_classes, n)
    X[np.arange(n), y % d] += 1.0
    mu = X.mean(axis=0)
    Xg = np.concatenate([X - mu, np.ones((n, 1), np.float32)], axis=1)[None]
    K = 1 if n_classes == 2 else n_classes
    H_inv = np.linalg.inv(Xg[0].T @ Xg[0] / (4 * K) + np.diag(np.r_[np.ones(d), 0.0])).astype(np.float32)
    W, b, _ = fit_logistic(Xg, y[None].astype(np.intp), np.ones((1, n), np.float32), K, H_inv, tol=1e-6, max_iter=500)
    sk = LogisticRegression(tol=1e-8, max_iter=5000).fit(X, y)
    assert np.allclose(W[0], sk.coef_.T, atol=2e-3)
    assert np.allclose(b[0] - mu @ W[0], sk.intercept_, atol=2e-3)  # fitted on x - μ


# -- the rule, specs and old runs ---------------------------------------------------------------------------
def test_the_default_is_the_logistic_family_and_ridge_stays_available():
    assert isinstance(resolve_model("linear"), LogisticFamily)
    assert type(resolve_model("ridge")) is LinearFamily and resolve_model("ridge").spec() == OLD_DEFAULT_SPEC
    fam = LogisticFamily()
    assert fam.solver(64, 20_000, 256, 3) == "ridge"  # benchmark setting (b): many rows per feature, 3 classes
    assert fam.solver(64, 40_000, 1024, 3) == "ridge"  # setting (c), the paper's SNLI shape
    assert fam.solver(64, 2_067, 384, 3) == "logistic"  # the SNLI sample at t = 30 %
    assert fam.solver(64, 20_000, 64, 10) == "logistic"  # many classes: never ridge
    assert fam.solver(64, 5_000, 1024, 3) == "logistic"  # few rows per feature: never ridge
    assert LogisticFamily(max_work=float("inf")).solver(64, 40_000, 1024, 3) == "logistic"


@pytest.mark.parametrize(
    "family",
    [
        LinearFamily(),
        LinearFamily(alpha=0.5, block_rows=1),
        LogisticFamily(),
        LogisticFamily(C=0.5, tol=1e-4),
        SklearnFamily(LogisticRegression(max_iter=1000)),
    ],
    ids=["ridge", "ridge-custom", "logistic", "logistic-custom", "sklearn"],
)
def test_family_from_spec_rebuilds_the_family(family):
    spec = json.loads(json.dumps(family.spec()))
    again = family_from_spec(spec)
    assert type(again) is type(family) and again.spec() == family.spec()


def test_family_from_spec_rejects_what_it_cannot_rebuild():
    with pytest.raises(ValueError, match="Cannot rebuild"):
        family_from_spec({"family": "sklearn", "class": "os.system", "params": {}})
    with pytest.raises(ValueError, match="Cannot rebuild"):
        family_from_spec({"family": "linear", "class": "aflite_core.models.LinearFamily", "params": {"beta": 1}})


def test_logistic_family_parameters_are_checked():
    with pytest.raises(ValueError, match="'C' parameter of LogisticFamily"):
        LogisticFamily(C=0)
    with pytest.raises(ValueError, match="'max_iter' parameter of LogisticFamily"):
        LogisticFamily(max_iter=0)


def test_ridge_fallback_runs_the_linear_family_computation(planted):
    X, y, _ = planted
    kw = dict(target_size=700, train_size=400, slice_size=100, random_state=0)
    forced = aflite(X, y, model=LogisticFamily(max_work=1), **kw)  # 2 classes, 400 rows for 13 columns: ridge
    ridge = aflite(X, y, model=LinearFamily(), **kw)
    assert np.array_equal(forced.kept, ridge.kept)
    assert np.array_equal(forced.scores, ridge.scores, equal_nan=True)


def test_an_old_checkpoint_resumes_bit_identically_with_its_family(tmp_path):
    X, y, _ = make_planted_bias(1500, 12, random_state=0)
    np.save(tmp_path / "X.npy", X)
    np.savetxt(tmp_path / "y.txt", y, fmt="%d")
    kw = dict(target_size=700, train_size=300, slice_size=100, tau=0.6, n_partitions=16, random_state=2)
    old_family = family_from_spec(OLD_DEFAULT_SPEC)
    uninterrupted = aflite(X, y, model=old_family, **kw)
    assert uninterrupted.n_rounds >= 3
    # what the CLI wrote before the default changed: cli_args.json naming "linear", a checkpoint after round 2
    out = tmp_path / "run"
    out.mkdir()
    args = {
        "features": str(tmp_path / "X.npy"),
        "labels": str(tmp_path / "y.txt"),
        "label_column": None,
        "partitions": 16,
        "train_size": 300,
        "model": "linear",
        "seed": 2,
        "threads": 1,
        "mmap": False,
        "ids": None,
        "target_size": 700,
        "slice_size": 100,
        "tau": 0.6,
        "strategy": "slice",
        "eval_features": None,
        "eval_labels": None,
        "eval_ids": None,
    }
    (out / "cli_args.json").write_text(json.dumps(args))
    partial = aflite(X, y, model=old_family, checkpoint=out / "checkpoint", callback=lambda p: p.round < 2, **kw)
    assert partial.n_rounds == 2
    assert peek_meta(out / "checkpoint")["fingerprint"]["model"] == OLD_DEFAULT_SPEC
    assert main(["filter", "--resume", str(out), "--quiet"]) == 0
    resumed = AFLiteResult.load(out)
    assert resumed.params["model"] == OLD_DEFAULT_SPEC
    assert resumed.equals(uninterrupted)
    # and a finished old run directory (result.json, no checkpoint) still names the old family
    assert family_from_spec(resumed.params["model"]).spec() == OLD_DEFAULT_SPEC


def test_a_new_run_records_the_logistic_family_and_resumes_with_it(tmp_path):
    X, y, _ = make_planted_bias(1500, 12, random_state=0)
    np.save(tmp_path / "X.npy", X)
    np.savetxt(tmp_path / "y.txt", y, fmt="%d")
    common = [
        "--target-size",
        "700",
        "--train-size",
        "300",
        "--slice-size",
        "100",
        "--tau",
        "0.6",
        "--partitions",
        "16",
        "--seed",
        "2",
        "--quiet",
        "--features",
        str(tmp_path / "X.npy"),
        "--labels",
        str(tmp_path / "y.txt"),
    ]
    assert main(["filter", *common, "--out", str(tmp_path / "full")]) == 0
    assert main(["filter", *common, "--out", str(tmp_path / "part"), "--max-rounds", "1"]) == 0
    assert main(["filter", "--resume", str(tmp_path / "part"), "--quiet"]) == 0
    full = AFLiteResult.load(tmp_path / "full")
    assert full.params["model"]["class"] == "aflite_core.logistic.LogisticFamily"
    assert AFLiteResult.load(tmp_path / "part").equals(full)


def test_memoised_fits_are_exactly_the_refitted_ones(monkeypatch):
    from aflite_core.engine import logistic

    data = load_digits_dataset()
    X, y = data.representation("mlp"), data.y
    kw = dict(target_size=719, train_size=359, slice_size=72, random_state=0)
    calls = []
    fit = logistic.fit_logistic
    monkeypatch.setattr(logistic, "fit_logistic", lambda *a, **k: calls.append(1) or fit(*a, **k))
    logistic._MEMO.clear()
    aflite(X, y, tau=0.75, **kw)
    first = len(calls)
    memoised = aflite(X, y, tau=0.7, **kw)  # a τ change: every round's inputs are the same
    assert first > 0 and len(calls) == first
    logistic._MEMO.clear()
    refitted = aflite(X, y, tau=0.7, **kw)
    assert len(calls) == 2 * first
    assert memoised.equals(refitted)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_dask_gives_the_local_result_for_both_solvers_of_the_default_family():
    pytest.importorskip("distributed")
    from aflite_core.engine import logistic
    from aflite_core.engine.distributed import local_cluster

    X, y, _ = make_planted_bias(2500, 12, n_classes=3, random_state=1)
    kw = dict(target_size=1000, train_size=400, slice_size=200, tau=0.5, random_state=4)
    cluster, client = local_cluster(2)
    try:
        for family in (LogisticFamily(), LogisticFamily(max_work=1), LogisticFamily(block_rows=1)):
            logistic._MEMO.clear()
            local = aflite(X, y, model=family, **kw)
            assert local.n_rounds >= 2
            assert aflite(X, y, model=family, backend=client, **kw).equals(local)
    finally:
        client.close()
        cluster.close()
