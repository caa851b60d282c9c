"""Exact and near duplicates (``aflite_core.data.duplicates``): exact ones found exactly, near ones with the
stated recall against brute force, and the groups usable as ``aflite(..., groups=)``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aflite_core import predictability
from aflite_core.data.duplicates import STATED_RECALL, find_duplicates

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_duplicates", ROOT / "benchmarks" / "bench_duplicates.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def planted():
    return bench.make_data(20_000, 96, seed=3)


def test_exact_duplicates_are_found_exactly(planted):
    X, _, exact_rows = planted
    rep = find_duplicates(X, near=False)
    # the truth by brute force on bytes: rows whose features equal another row's
    _, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    truth = counts[inverse.ravel()] > 1
    assert np.array_equal(rep.exact, truth) and rep.exact[exact_rows].all()
    # each group of exact copies is one group, and nothing else is grouped
    assert len(np.unique(rep.groups)) == len(counts)
    assert not rep.near.any() and len(rep.near_pairs) == 0


def test_equal_texts_are_exact_duplicates():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 8)).astype(np.float32)
    texts = pd.DataFrame({"premise": ["p"] * 50, "hypothesis": [f"h{i % 40}" for i in range(50)]})
    rep = find_duplicates(X, texts=texts, near=False)
    assert rep.exact.sum() == 20 and rep.groups[0] == rep.groups[40] and rep.groups[1] != rep.groups[0]


def test_near_recall_reaches_the_stated_recall_against_brute_force(planted):
    X, pairs, _ = planted
    rep = find_duplicates(X)
    found = set(map(tuple, rep.near_pairs.tolist()))
    recall_planted = np.mean([tuple(p) in found for p in pairs.tolist()])
    assert recall_planted >= STATED_RECALL
    # brute force on a sample (with the planted pairs' rows in it): recall and no false pairs
    rng = np.random.default_rng(0)
    sample = np.union1d(rng.choice(len(X), 3000, replace=False), pairs[:300].ravel())
    truth = bench.brute_pairs(X, sample, 0.98)
    inside = set(sample.tolist())
    found_inside = {p for p in found if p[0] in inside and p[1] in inside}
    assert len(truth) >= 300 and len(truth & found) / len(truth) >= STATED_RECALL
    assert found_inside <= truth  # every reported pair really is at cosine >= 0.98
    assert rep.message().startswith(f"{rep.n_with_duplicate:,} rows have an exact or near duplicate")


def test_duplicate_groups_stop_copies_inflating_scores():
    """Copies of rows grouped by find_duplicates score like the rows alone (the copies no longer leak)."""
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(0)
    n = 240
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X3, y3 = np.tile(X, (3, 1)), np.tile(y, 3)
    rep = find_duplicates(X3)
    assert np.array_equal(rep.groups[:n], rep.groups[n : 2 * n]) and rep.exact.all()
    kw = dict(train_size=360, n_partitions=16, model=KNeighborsClassifier(1), random_state=0)
    assert np.nanmean(predictability(X3, y3, groups=rep.groups, **kw)) < 0.45
    assert np.nanmean(predictability(X3, y3, **kw)) > 0.6


def test_bad_input_is_one_sentence():
    with pytest.raises(ValueError, match="2-D"):
        find_duplicates(np.zeros(5))
    with pytest.raises(ValueError, match="threshold"):
        find_duplicates(np.zeros((5, 2)), threshold=1.5)
