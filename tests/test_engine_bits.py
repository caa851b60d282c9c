"""The engine's bits: ``n_threads=1`` reproduces commit 4293819 exactly, and the thread count changes nothing.

The stored results (``tests/fixtures/engine_*.npz``, written by ``tests/fixtures/make_engine_fixtures.py`` with
the engine of commit 4293819) are compared with ``np.array_equal``: the same bits, not a tolerance. Float32
matrix products round according to the BLAS build, so these fixtures hold for the pinned numpy/OpenBLAS on
this machine type (the CI machines); another BLAS build may need the fixtures rewritten from that commit.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from aflite_core import aflite

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_spec = importlib.util.spec_from_file_location("make_engine_fixtures", FIXTURES / "make_engine_fixtures.py")
_maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_maker)
CASES = _maker.cases()


def _run(name: str, n_threads: int):
    X, y, kw = CASES[name]
    return aflite(X, y, **kw, tau=0.75, random_state=0, n_threads=n_threads)


def _assert_same(res, stored) -> None:
    assert np.array_equal(res.removed_round, stored["removed_round"])
    assert np.array_equal(res.n_predictions, stored["n_predictions"])
    assert np.array_equal(res.scores, stored["scores"], equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_thread_reproduces_commit_4293819(name):
    """Digits (app defaults), bench_core setting (a), and a ridge run with 16 shards: the stored bits."""
    with np.load(FIXTURES / f"engine_{name}.npz") as stored:
        _assert_same(_run(name, 1), stored)


@pytest.mark.parametrize("name", sorted(CASES))
def test_thread_count_does_not_change_the_bits(name):
    """Two threads give exactly the one-thread (and stored) result."""
    with np.load(FIXTURES / f"engine_{name}.npz") as stored:
        _assert_same(_run(name, 2), stored)


@pytest.mark.parametrize(
    "setting",
    [
        ("aflite_core.engine.models", "ALL_PARTITIONS_BYTES", 0),
        ("aflite_core.engine.shard_removal", "FUSED_ROWS", 0),
        ("aflite_core.engine.shard_removal", "compiled_downdates", lambda: False),
    ],
    ids=["gram-sums-per-group", "unfused-downdates", "downdates-called-from-python"],
)
def test_the_engine_s_alternative_paths_keep_the_bits(monkeypatch, setting):
    """Gram sums per partition group (paper-scale memory), unfused removals and the fused downdates called one by
    one from Python (no numba) give the stored bits too."""
    module, name, value = setting
    monkeypatch.setattr(importlib.import_module(module), name, value)
    with np.load(FIXTURES / "engine_ridge_blocks.npz") as stored:
        _assert_same(_run("ridge_blocks", 2), stored)


def test_a_checkpoint_resumes_with_another_thread_count(tmp_path):
    """Written on one thread, resumed on two: the uninterrupted result (a thread count is no reason to refuse)."""
    name = sorted(CASES)[0]
    X, y, kw = CASES[name]
    full = aflite(X, y, **kw, tau=0.75, random_state=0, n_threads=1)
    assert full.n_rounds >= 2
    cp = tmp_path / "checkpoint"
    partial = aflite(X, y, **kw, tau=0.75, random_state=0, n_threads=1, checkpoint=cp, callback=lambda p: p.round < 1)
    assert partial.n_rounds == 1
    resumed = aflite(X, y, **kw, tau=0.75, random_state=0, n_threads=2, checkpoint=cp, resume=True)
    assert np.array_equal(resumed.removed_round, full.removed_round)
    assert np.array_equal(resumed.scores, full.scores, equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_preconditioners_started_by_the_removals_keep_the_bits(monkeypatch, name):
    """On 4 threads the next round's preconditioner starts once the totals are downdated; the bits stay."""
    from aflite_core.engine import models

    taken = []
    real = models._LinearSession._take_pending

    def counting(self, n_rows):
        got = real(self, n_rows)
        if n_rows >= 0:
            taken.append(got is not None)
        return got

    monkeypatch.setattr(models._LinearSession, "_take_pending", counting)
    with np.load(FIXTURES / f"engine_{name}.npz") as stored:
        _assert_same(_run(name, models.EARLY_PRECONDITIONER_THREADS), stored)
    if name == "ridge_blocks":  # blocks and PCG: every round after the first fits with the early preconditioner
        assert len(taken) >= 2 and not taken[0] and all(taken[1:])


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("shards", [1, 3, 7, 11, 16])
def test_totals_summed_as_the_shards_finish_are_node_total_bit_for_bit(shards, threads):
    """Any shard tree (odd sizes too), any finishing order: the removals' sum of the totals is node_total's."""
    from aflite_core.data.planted_bias import make_planted_bias
    from aflite_core.engine._parallel import engine_threads
    from aflite_core.engine.models import LinearFamily

    X, y, _ = make_planted_bias(4_000, 24, n_classes=3, spectrum_decay=0.5, random_state=1)
    rng = np.random.default_rng(0)
    session = LinearFamily(shards=shards).session(X, y, 3, train_size=1_600, n_partitions=16, rng=rng)
    assert session.mode == "blocks" and session.n_shards == shards
    present = np.ones(len(X), dtype=bool)
    got = []
    with engine_threads(threads):
        session.prepare()
        for _ in range(3):
            rows = np.sort(rng.choice(np.flatnonzero(present), 300, replace=False))
            present[rows] = False
            session.remove_from_shards(rows, got.append)
            assert len(got) == 1
            want = session.node_total((0, shards))
            assert np.array_equal(got.pop().view(np.int64), want.view(np.int64))
