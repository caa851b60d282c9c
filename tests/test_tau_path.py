"""narrow_to_tau: a run at a low τ read at a higher τ equals a direct run at that τ, field by field."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aflite_core import aflite
from aflite_core.data.planted_bias import make_biased_circles, paper_circles
from aflite_core.engine.tau_path import narrow_to_tau


def assert_same_run(narrowed, direct) -> None:
    """Every field a user or the app reads, except the creation time and the per-round wall time."""
    assert narrowed.params == direct.params
    names = ("kept", "removed_round", "scores", "n_predictions", "first_score", "last_score", "removal_score", "votes")
    for name in names:  # the votes too: narrowing keeps the votes of the rounds it keeps
        a, b = getattr(narrowed, name), getattr(direct, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=True), name
    assert narrowed.stop_reason == direct.stop_reason
    assert narrowed.stop_message == direct.stop_message
    pd.testing.assert_frame_equal(narrowed.history.drop(columns="seconds"), direct.history.drop(columns="seconds"))


@pytest.mark.parametrize("k", [20, 60])
def test_every_tau_of_the_circles_matches_a_direct_run(k):
    taus = np.round(np.arange(0.5, 1.0001, 0.05), 2)
    stops = set()
    for d in paper_circles(800, random_state=1):
        kw = dict(target_size=80, train_size=40, slice_size=k, n_partitions=24, random_state=7)
        low = aflite(d.X, d.y, tau=0.5, **kw)
        for tau in taus:
            direct = aflite(d.X, d.y, tau=float(tau), **kw)
            assert_same_run(narrow_to_tau(low, float(tau)), direct)
            partial = 0 < int(direct.history["n_removed"].iloc[-1]) < k
            stops.add((direct.stop_reason, direct.n_rounds, partial))
    # the grid reaches both stopping rules, several stopping rounds and a last round that removed fewer than k
    # rows (those at or above τ only), so every branch of the narrowing is exercised
    assert {s for s, _, _ in stops} == {"target_size_reached", "fewer_than_k_qualified"}
    assert len({r for _, r, _ in stops}) >= 3
    assert any(p for _, _, p in stops)


@pytest.mark.shared_data
def test_real_nli_embeddings_every_tau_matches_a_direct_run(shared_data):
    rows = [json.loads(line) for line in (shared_data / "snli_sample.jsonl").read_text(encoding="utf-8").splitlines()]
    X = np.load(shared_data / "snli_sample.hyp_minilm.npy")[:1500]
    y = np.array([r["label"] for r in rows])[:1500]
    kw = dict(target_size=400, train_size=300, slice_size=100, n_partitions=32, random_state=0)
    low = aflite(X, y, tau=0.4, **kw)
    rounds = set()
    for tau in (0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.9):
        direct = aflite(X, y, tau=tau, **kw)
        assert_same_run(narrow_to_tau(low, tau), direct)
        rounds.add(direct.n_rounds)
    assert len(rounds) >= 3


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    k=st.integers(1, 40),
    tau_low=st.floats(0.0, 0.9),
    gap=st.floats(0.0, 0.5),
    tie_break=st.sampled_from(["position", "row"]),
)
def test_narrowing_is_exact_for_any_seed_k_and_pair_of_taus(seed, k, tau_low, gap, tie_break):
    X, y, *_ = make_biased_circles(300, separation=0.4, random_state=seed)
    kw = dict(target_size=40, train_size=30, slice_size=k, n_partitions=12, random_state=seed, tie_break=tie_break)
    tau = min(1.0, tau_low + gap)
    assert_same_run(narrow_to_tau(aflite(X, y, tau=tau_low, **kw), tau), aflite(X, y, tau=tau, **kw))


def test_narrowing_records_where_it_came_from_and_chains():
    X, y, *_ = make_biased_circles(400, separation=0.6, random_state=0)
    kw = dict(target_size=50, train_size=40, slice_size=20, n_partitions=16, random_state=0)
    low = aflite(X, y, tau=0.5, **kw)
    mid = narrow_to_tau(low, 0.7)
    assert mid.provenance["narrowed_from_tau"] == 0.5
    assert_same_run(narrow_to_tau(mid, 0.85), aflite(X, y, tau=0.85, **kw))
    assert low.params["tau"] == 0.5 and low.n_rounds >= mid.n_rounds  # the input is not changed


def test_results_that_cannot_be_narrowed_are_refused_with_one_sentence():
    X, y, *_ = make_biased_circles(300, separation=0.6, random_state=0)
    kw = dict(target_size=40, train_size=30, slice_size=20, n_partitions=8, random_state=0)
    low = aflite(X, y, tau=0.6, **kw)
    with pytest.raises(ValueError, match=r"must be in \[0.6, 1\]"):
        narrow_to_tau(low, 0.5)
    with pytest.raises(ValueError, match="must be in"):
        narrow_to_tau(low, 1.5)
    with pytest.raises(ValueError, match="must be a number"):
        narrow_to_tau(low, "high")
    with pytest.raises(ValueError, match="strategy 'sample'"):
        narrow_to_tau(aflite(X, y, tau=0.6, strategy="sample", **kw), 0.7)
    with pytest.raises(ValueError, match="stopped on request"):
        narrow_to_tau(aflite(X, y, tau=0.6, callback=lambda p: False, **kw), 0.7)
    half = X.shape[0] // 2
    with_eval = aflite(X[:half], y[:half], tau=0.6, eval_X=X[half:], eval_y=y[half:], **kw)
    with pytest.raises(ValueError, match="evaluation set"):
        narrow_to_tau(with_eval, 0.7)


def test_a_narrowed_result_shares_the_score_matrix_read_only():
    X, y, *_ = make_biased_circles(300, separation=0.6, random_state=0)
    low = aflite(X, y, tau=0.5, target_size=40, train_size=30, slice_size=20, n_partitions=8, random_state=0)
    high = narrow_to_tau(low, 0.8)
    assert np.shares_memory(high.scores, low.scores) and not high.scores.flags.writeable
    assert low.scores.flags.writeable  # the run it was read off is untouched
    with pytest.raises(ValueError, match="read-only"):
        high.scores[0, 0] = 1.0
