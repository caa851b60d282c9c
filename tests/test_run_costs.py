"""The memory a Filter run is refused for counts what the run keeps per row and round: scores, counts and votes."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from aflite_app.compute import run_costs
from aflite_app.specs import DatasetSpec, FilterSpec
from aflite_core.engine.filtering import execute_run, plan_run


def _run(n: int, d: int, m: int, k: int, n_classes: int = 3, *, traced: bool = False):
    """A run as the app makes it (its spec's keyword arguments), its spec and (traced) its peak traced bytes."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, n_classes, n)
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[:, 0] += y
    spec = FilterSpec(DatasetSpec("digits", "mlp"), target_size=n // 2, train_size=n // 10, slice_size=k, tau=0.0)
    spec = spec.with_(n_partitions=m)
    run = plan_run(X, y, model=spec.model, random_state=spec.seed, n_threads=1, **spec.as_kwargs())
    if not traced:
        return X, spec, execute_run(run), None
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = execute_run(run)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return X, spec, result, peak


@pytest.mark.parametrize("n_classes", [3, 5])
def test_the_estimate_counts_the_runs_per_round_records_votes_included(n_classes):
    X, spec, result, _ = _run(2000, 8, 8, 40, n_classes)
    assert result.votes is not None and len(result.history) == 25  # votes are recorded by default
    stored = result.scores.nbytes + result.n_predictions.nbytes + result.votes.nbytes
    need = run_costs.run_memory_bytes(spec, len(X), X.shape[1], n_classes)
    # the engine's per-round rows and the result's matrices stacked from them are both held as the run ends
    assert need - X.nbytes * run_costs.RUN_MEMORY_FACTOR >= 2 * stored
    assert run_costs.round_record_bytes(spec, n_classes) * len(X) * 25 == stored


def test_the_estimate_covers_the_memory_a_small_run_allocates():
    _run(600, 8, 8, 100)  # the process's first run pays one-off compilations: not what a run allocates
    X, spec, result, peak = _run(3000, 16, 8, 30, traced=True)
    assert len(result.history) == 50
    assert run_costs.run_memory_bytes(spec, len(X), X.shape[1], 3) >= peak


def test_a_greedy_run_keeps_no_per_round_records():
    spec = FilterSpec(DatasetSpec("digits", "mlp"), target_size=500, train_size=100, slice_size=1, tau=0.0)
    greedy = spec.with_(strategy="greedy")
    assert run_costs.round_record_bytes(greedy) == 0
    assert run_costs.run_memory_bytes(greedy, 1000, 8) < run_costs.run_memory_bytes(spec, 1000, 8)


def test_the_filter_page_prices_the_chosen_family():
    """A kNN run on 100,000 rows is priced as kNN (every held-out row against every training row), so the page asks
    before starting it, where pricing it as the default family said seconds."""
    spec = FilterSpec(DatasetSpec("digits", "mlp"), target_size=33_000, train_size=10_000, slice_size=2_000, tau=0.75)
    default = run_costs.estimate_run_seconds(spec, 100_000, 64)
    knn = run_costs.estimate_run_seconds(spec.with_(model="knn"), 100_000, 64)
    assert knn > 10 * default and knn > run_costs.CONFIRM_SECONDS
