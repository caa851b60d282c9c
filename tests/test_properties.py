"""Invariants of aflite() over many random inputs (hypothesis; bounded profile in conftest.py)."""

from __future__ import annotations

import tempfile

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from aflite_core import AFLiteResult, aflite


@st.composite
def problems(draw):
    n = draw(st.integers(24, 120))
    d = draw(st.integers(1, 6))
    c = draw(st.integers(2, 4))
    signal = draw(st.sampled_from([0.0, 0.5, 3.0]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c  # every class has at least n // c >= 6 rows
    rng.shuffle(y)
    X = rng.normal(size=(n, d)) + signal * np.eye(max(c, d))[y][:, :d]
    target = draw(st.integers(c + 2, n - 1))
    train = draw(st.integers(c + 1, target - 1))
    strategy = draw(st.sampled_from(["slice", "slice", "sample", "greedy"]))
    params = dict(
        target_size=target,
        train_size=train,
        slice_size=None if strategy == "greedy" else draw(st.integers(1, max(1, n // 3))),
        tau=draw(st.sampled_from([0.0, 0.5, 0.75, 1.0])),
        n_partitions=draw(st.integers(1, 12)),
        strategy=strategy,
        random_state=draw(st.integers(0, 1000)),
    )
    if strategy == "greedy":
        params["target_size"] = max(target, n - 12)  # bound the number of one-row rounds
        params["train_size"] = min(train, params["target_size"] - 1)
    return X.astype(np.float32), y, params


def _check_invariants(res, params, n):
    k = 1 if params["strategy"] == "greedy" else params["slice_size"]
    # kept and removed partition the rows
    assert res.kept.shape == (n,)
    assert np.array_equal(res.kept, res.removed_round == -1)
    assert np.all((res.removed_round == -1) | ((res.removed_round >= 1) & (res.removed_round <= res.n_rounds)))
    # never below the target
    assert res.n_kept >= params["target_size"]
    for r in range(1, res.n_rounds + 1):
        gone = res.removed_round == r
        assert gone.sum() <= k
        assert np.all(res.removal_score[gone] >= params["tau"])
        if res.scores is not None:
            assert np.array_equal(res.scores[r - 1, gone], res.removal_score[gone])
            # rows already gone are not scored again
            assert np.all(np.isnan(res.scores[r - 1, (res.removed_round >= 1) & (res.removed_round < r)]))
    # the loop stops as Algorithm 1 says: at the target, or when fewer than k rows qualified
    last = res.history.iloc[-1]
    if res.stop_reason == "target_size_reached":
        assert res.n_kept == params["target_size"]
    else:
        assert res.stop_reason == "fewer_than_k_qualified"
        assert last["n_qualified"] < k
    # every earlier round removed a full slice
    assert (res.history["n_removed"].iloc[:-1] == k).all()


@given(problems())
def test_invariants_hold(problem):
    X, y, params = problem
    res = aflite(X, y, **params)
    _check_invariants(res, params, len(y))


@given(problems())
def test_same_seed_same_result(problem):
    X, y, params = problem
    assert aflite(X, y, **params).equals(aflite(X, y, **params))


@given(problems(), st.integers(1, 30))
def test_an_evaluation_set_never_changes_the_training_selection(problem, n_eval):
    X, y, params = problem
    rng = np.random.default_rng(n_eval)
    eval_X = rng.normal(size=(n_eval, X.shape[1])).astype(np.float32)
    eval_y = rng.choice(np.unique(y), n_eval)
    plain = aflite(X, y, **params)
    withe = aflite(X, y, eval_X=eval_X, eval_y=eval_y, **params)
    assert np.array_equal(plain.kept, withe.kept)
    assert np.array_equal(plain.removed_round, withe.removed_round)
    # evaluation rows: removed exactly when p ≥ τ, categories partition the evaluation set
    gone = ~withe.eval_kept
    assert np.all(withe.eval_removal_score[gone] >= params["tau"])
    assert len(withe.eval_category) == n_eval


@given(problems())
def test_save_load_round_trip(problem):
    X, y, params = problem
    res = aflite(X, y, **params)
    with tempfile.TemporaryDirectory() as tmp:
        assert AFLiteResult.load(res.save(tmp)).equals(res, timings=True)
