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


def reference_aflite(X, y, *, target_size, n_partitions, train_size, slice_size, tau, random_state, max_iter=1000):
    """One run; ``max_iter`` is LogisticRegression's L-BFGS cap (1000: run to convergence; sklearn's default 100)."""
    rng = np.random.default_rng(random_state)
    n_rows = len(y)
    S = np.arange(n_rows)
    removed_round = np.full(n_rows, -1)
    qualified_per_round = []
    rnd = 0
    t0 = time.perf_counter()
    while len(S) > target_size:
        rnd += 1
        correct = np.zeros(len(S))
        count = np.zeros(len(S))
        for _ in range(n_partitions):
            perm = rng.permutation(len(S))
            train, test = perm[:train_size], perm[train_size:]
            clf = LogisticRegression(max_iter=max_iter)
            with warnings.catch_warnings():  # with a small max_iter L-BFGS stops early, as users' loops do
                warnings.simplefilter("ignore")
                clf.fit(X[S[train]], y[S[train]])
            correct[test] += clf.predict(X[S[test]]) == y[S[test]]
            count[test] += 1
        with np.errstate(invalid="ignore"):
            p = correct / count
        qualified = np.flatnonzero((count > 0) & (p >= tau))
        qualified_per_round.append(len(qualified))
        k = min(slice_size, len(S) - target_size)
        order = np.lexsort((rng.random(len(qualified)), -p[qualified]))
        gone = qualified[order[:k]]
        removed_round[S[gone]] = rnd
        S = np.delete(S, gone)
        if len(qualified) < slice_size:
            break
    return removed_round < 0, rnd, time.perf_counter() - t0, removed_round, qualified_per_round
