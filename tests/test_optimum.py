"""AFOptimum against AFLite on tiny data (aflite_core.experiments.optimum): the exact bias, search, greedy runs."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from aflite_core.cli import main
from aflite_core.experiments.optimum import (
    OPTIMUM_STRATEGIES,
    compare_with_optimum,
    exact_bias,
    exact_scores,
    exhaustive_optimum,
    greedy_filter,
)

# the worked example: six points on a line; the two far points make "class 1 to the right" easy to learn
X6 = np.array([[0.0], [1.0], [2.0], [3.0], [-5.0], [8.0]])
Y6 = np.array([0, 1, 0, 1, 0, 1])


def _refit_loo_bias(X, y, rows, penalty=0.0):
    """Leave-one-out accuracy by refitting least squares on one-hot labels without each row (no closed form)."""
    rows = list(rows)
    correct = 0
    for i in rows:
        train = [j for j in rows if j != i]
        Z = np.c_[np.ones(len(train)), X[train]]
        Y = np.eye(2)[y[train]]
        P = np.diag([0.0] + [penalty] * X.shape[1])
        W = np.linalg.solve(Z.T @ Z + P + 1e-12 * np.eye(Z.shape[1]), Z.T @ Y)
        s = np.r_[1.0, X[i]] @ W
        correct += int(s[y[i]] > s[1 - y[i]])
    return correct / len(rows)


def test_worked_example_by_hand():
    # Subset {0, 1, 2, 3}: x = 0, 1, 2, 3 with labels 0, 1, 0, 1. Code class 0 as +1 and class 1 as -1; with two
    # classes and a free intercept the one-hot scores satisfy s0 - s1 = the least-squares fit of that ±1 target.
    # Leave out x=0: the line through (1,-1), (2,+1), (3,-1) is flat at -1/3, so x=0 gets -1/3: class 1, wrong.
    # Leave out x=1: through (0,+1), (2,+1), (3,-1): mean x 5/3, mean t 1/3, slope -4/7, so at x=1:
    #   1/3 + (-4/7)(1 - 5/3) = 5/7 > 0: class 0, wrong. x=2 and x=3 mirror these (x -> 3-x, t -> -t).
    # Every left-out row is misread: the exact bias is 0, and the margins (gold minus other) are -1/3, -5/7, ...
    scores = exact_scores(X6, Y6, [0, 1, 2, 3], alpha=0.0)
    assert scores["score"].tolist() == [0.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(scores["margin"], [-1 / 3, -5 / 7, -5 / 7, -1 / 3], atol=1e-9)
    assert exact_bias(X6, Y6, [0, 1, 2, 3], alpha=0.0) == 0.0
    # all six rows: the far points carry the trend, 4 of 6 left-out rows are read correctly
    assert exact_bias(X6, Y6, alpha=0.0) == pytest.approx(4 / 6)
    # the optimum of size 4 is unique: every other subset of 4 rows has a positive bias (checked by refitting)
    by_refit = {s: _refit_loo_bias(X6, Y6, s) for s in itertools.combinations(range(6), 4)}
    assert by_refit[(0, 1, 2, 3)] == 0.0
    assert min(b for s, b in by_refit.items() if s != (0, 1, 2, 3)) > 0
    opt = exhaustive_optimum(X6, Y6, target_size=4, alpha=0.0)
    assert opt.subset.tolist() == [0, 1, 2, 3]
    assert opt.bias == 0.0 and opt.n_optimal == 1 and opt.n_subsets == 15


def test_closed_form_equals_refitting():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3))
    y = (X[:, 0] + 0.8 * rng.normal(size=12) > 0).astype(int)
    for rows in ([0, 1, 2, 3, 4, 5, 6, 7], list(range(12)), [1, 3, 5, 7, 9, 11]):
        centred = X - X.mean(axis=0)
        penalty = 0.1 * np.einsum("ij,ij->", centred, centred) / 3  # alpha · trace(Σ) / d over all rows
        assert exact_bias(X, y, rows, alpha=0.1) == pytest.approx(_refit_loo_bias(X, y, rows, penalty))


def test_search_is_exhaustive_and_never_beaten():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(9, 2))
    y = np.array([0, 1] * 4 + [0])
    opt = exhaustive_optimum(X, y, target_size=5)
    every = [exact_bias(X, y, list(s)) for s in itertools.combinations(range(9), 5)]
    assert opt.bias == pytest.approx(min(every))
    assert opt.n_optimal == sum(np.isclose(every, min(every)))
    for strategy in OPTIMUM_STRATEGIES:
        run = greedy_filter(X, y, target_size=5, strategy=strategy, random_state=1)
        assert len(run.subset) == 5 and run.bias >= opt.bias - 1e-12
        assert run.bias == pytest.approx(exact_bias(X, y, run.subset))


def test_comparison_aflite_never_below_optimum():
    cmp = compare_with_optimum(n_seeds=4)
    t = cmp.table
    assert set(t["strategy"]) == set(OPTIMUM_STRATEGIES)
    assert (t["bias_aflite_min"] >= t["bias_optimum"] - 1e-12).all()
    assert (t["gap"] >= -1e-12).all()
    assert (t["bias_optimum"] <= t["bias_full"]).all()
    worked = t[t["case"].str.startswith("worked")]
    assert (worked["bias_optimum"] == 0.0).all() and (worked["n_optimal"] == 1).all()


def test_greedy_runs_are_deterministic_and_sample_is_seeded():
    a = greedy_filter(X6, Y6, target_size=4, strategy="slice")
    b = greedy_filter(X6, Y6, target_size=4, strategy="slice")
    assert a.subset.tolist() == b.subset.tolist() and a.seed is None
    c1 = greedy_filter(X6, Y6, target_size=3, strategy="sample", random_state=7)
    c2 = greedy_filter(X6, Y6, target_size=3, strategy="sample", random_state=7)
    assert c1.subset.tolist() == c2.subset.tolist() and c1.seed == 7
    assert (a.removed_step >= 1).sum() == 2 and list(a.history["size_before"]) == [6]


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: exhaustive_optimum(np.zeros((30, 2)), [0, 1] * 15, target_size=15), "max_subsets"),
        (lambda: exhaustive_optimum(X6, Y6, target_size=7), "target_size"),
        (lambda: greedy_filter(X6, Y6, target_size=4, strategy="best"), "strategy"),
        (lambda: exact_bias(X6, Y6, [0]), "subset"),
        (lambda: exact_bias(X6, Y6, alpha=-1.0), "alpha"),
    ],
)
def test_invalid_parameters(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_cli_optimum_json(capsys):
    assert main(["optimum", "--json", "--sample-seeds", "3"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert {"case", "strategy", "bias_aflite", "bias_optimum", "rows", "target_size"} <= set(records[0])
    assert {r["strategy"] for r in records} == {"greedy", "slice", "sample"}
    assert all(r["bias_aflite"] >= r["bias_optimum"] - 1e-12 for r in records)
    assert main(["optimum", "--sample-seeds", "2"]) == 0
    assert "AFOptimum" in capsys.readouterr().out
