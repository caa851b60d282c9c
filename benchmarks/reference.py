"""The straightforward AFLite everyone writes first: a Python loop of scikit-learn LogisticRegression fits.

Used only by the benchmarks, as the baseline the fast engine is compared with. It follows Algorithm 1 of
Le Bras et al. (2020) with the same rules as ``aflite_core.aflite`` (p >= tau, top-k with random tie-break,
stop when fewer than k qualify, never below the target), but one exact random subset and one
``LogisticRegression()`` per partition.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression


def reference_round(X, y, S, *, n_partitions, train_size, rng, max_iter=1000, stats=None):
    """One filtering phase on the rows ``S``: m fits on random t-row subsets, each predicting the other rows.

    Returns (correct, count) per position of ``S``; ``stats`` (a dict), if given, gets the fits' L-BFGS
    iteration counts under ``"n_iter"``.
    """
    correct = np.zeros(len(S))
    count = np.zeros(len(S))
    for _ in range(n_partitions):
        perm = rng.permutation(len(S))
        train, test = perm[:train_size], perm[train_size:]
        clf = LogisticRegression(max_iter=max_iter)
        with warnings.catch_warnings():  # with a small max_iter L-BFGS stops early, as users' loops do
            warnings.simplefilter("ignore")
            clf.fit(X[S[train]], y[S[train]])
        if stats is not None:
            stats.setdefault("n_iter", []).append(int(np.max(clf.n_iter_)))
        correct[test] += clf.predict(X[S[test]]) == y[S[test]]
        count[test] += 1
    return correct, count


def reference_predictability(X, y, *, n_partitions, train_size, random_state, max_iter=1000, stats=None):
    """p(i) of one round on all rows (NaN where no model held the row out)."""
    rng = np.random.default_rng(random_state)
    correct, count = reference_round(
        X,
        y,
        np.arange(len(y)),
        n_partitions=n_partitions,
        train_size=train_size,
        rng=rng,
        max_iter=max_iter,
        stats=stats,
    )
    with np.errstate(invalid="ignore"):
        return correct / count


def reference_aflite(X, y, *, target_size, n_partitions, train_size, slice_size, tau, random_state, max_iter=1000):
    """One run; ``max_iter`` is LogisticRegression's L-BFGS cap (1000: run to convergence; sklearn's default 100).

    Returns (kept, rounds, seconds, removed_round, qualified counts per round, qualified row sets per round).
    """
    rng = np.random.default_rng(random_state)
    n_rows = len(y)
    S = np.arange(n_rows)
    removed_round = np.full(n_rows, -1)
    qualified_per_round = []
    qualified_sets = []
    rnd = 0
    t0 = time.perf_counter()
    while len(S) > target_size:
        rnd += 1
        correct, count = reference_round(
            X, y, S, n_partitions=n_partitions, train_size=train_size, rng=rng, max_iter=max_iter
        )
        with np.errstate(invalid="ignore"):
            p = correct / count
        qualified = np.flatnonzero((count > 0) & (p >= tau))
        qualified_per_round.append(len(qualified))
        qualified_sets.append(S[qualified])
        k = min(slice_size, len(S) - target_size)
        order = np.lexsort((rng.random(len(qualified)), -p[qualified]))
        gone = qualified[order[:k]]
        removed_round[S[gone]] = rnd
        S = np.delete(S, gone)
        if len(qualified) < slice_size:
            break
    return removed_round < 0, rnd, time.perf_counter() - t0, removed_round, qualified_per_round, qualified_sets
