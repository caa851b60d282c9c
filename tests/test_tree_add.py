"""The compiled shard-tree additions (``aflite_core.engine.tree_add``): the bits of numpy's additions, fewer calls.

A partition's Gram sum is a fixed tree of float32 additions over the shards' products; the compiled kernel must
give exactly the values numpy's recursive additions give (``tree_sum``), for every tree size, and the engine's
runs must not change by a bit whether it is used, whether the shards' stacks share one array (one batched
product per tile) or not, and whatever the thread count.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aflite_core import aflite
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine import member_sums, shards, tree_add
from aflite_core.engine.models import LinearFamily, _LinearSession, tree_sum

pytestmark = pytest.mark.skipif(not tree_add.available(), reason="numba is a dependency (umap-learn)")


@pytest.mark.parametrize("n", range(2, 41))
def test_every_tree_size_adds_like_numpy(n):
    rng = np.random.default_rng(n)
    # magnitudes far apart, so a different grouping of the additions would round differently
    leaves = (rng.standard_normal((n, 3, 29)) * rng.choice([1e-4, 1.0, 1e5], (n, 3, 29))).astype(np.float32)
    out = np.full((3, 40), np.nan, dtype=np.float32)
    tree_add.tree_add(leaves, out, 5)
    assert np.array_equal(out[:, 5:34], tree_sum({s: leaves[s] for s in range(n)}, 0, n))
    assert np.isnan(out[:, :5]).all() and np.isnan(out[:, 34:]).all()  # only the tile's columns are written


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 20),
    g=st.integers(1, 5),
    w=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_tile_adds_like_numpy(n, g, w, seed):
    rng = np.random.default_rng(seed)
    leaves = (rng.standard_normal((n, g, w)) * 10.0 ** rng.integers(-6, 7, (n, g, w))).astype(np.float32)
    out = np.zeros((g, w), dtype=np.float32)
    tree_add.tree_add(leaves, out, 0)
    assert np.array_equal(out, tree_sum({s: leaves[s] for s in range(n)}, 0, n))


@settings(max_examples=60, deadline=None)
@given(
    n=st.sampled_from([2, 3, 7, 16]),
    n_tiles=st.integers(1, 6),
    g=st.integers(1, 4),
    w=st.integers(1, 17),
    c0=st.integers(0, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_run_of_tiles_adds_as_one_call_per_tile(n, n_tiles, g, w, c0, seed):
    """Leaves (n, T, g, w) of T consecutive tiles: each tile's columns as a one-tile call writes them."""
    rng = np.random.default_rng(seed)
    leaves = (rng.standard_normal((n, n_tiles, g, w)) * 10.0 ** rng.integers(-6, 7, (n, n_tiles, g, w))).astype(
        np.float32
    )
    width = c0 + n_tiles * w + 3
    got, want = np.full((g, width), np.nan, np.float32), np.full((g, width), np.nan, np.float32)
    tree_add.tree_add(leaves, got, c0)
    for t in range(n_tiles):
        tree_add.tree_add(np.ascontiguousarray(leaves[:, t]), want, c0 + t * w)
        tile = want[:, c0 + t * w : c0 + (t + 1) * w]
        assert np.array_equal(tile, tree_sum({s: leaves[s, t] for s in range(n)}, 0, n))
    np.testing.assert_array_equal(got, want)  # NaN outside the run's columns in both
    with pytest.raises(ValueError, match="do not fit"):
        tree_add.tree_add(leaves, np.zeros((g, c0 + n_tiles * w - 1), np.float32), c0)


def test_the_expression_is_the_trees_grouping():
    assert tree_add.tree_expression(0, 3) == "(L[0, t, r, c] + (L[1, t, r, c] + L[2, t, r, c]))"
    assert tree_add.tree_expression(0, 4) == "((L[0, t, r, c] + L[1, t, r, c]) + (L[2, t, r, c] + L[3, t, r, c]))"


def test_the_cached_16_leaf_kernel_is_written_as_the_tree():
    """The default 16 shards use a kernel written out in the module (so numba can cache it): the same tree."""
    import ast
    import inspect

    body = ast.parse(inspect.getsource(tree_add._add_16)).body[0]
    assigned = [node.value for node in ast.walk(body) if isinstance(node, ast.Assign)][-1]
    assert ast.dump(assigned) == ast.dump(ast.parse(tree_add.tree_expression(0, 16), mode="eval").body)


def test_bad_arguments_are_refused_in_one_sentence():
    with pytest.raises(ValueError, match="at least 2 leaves"):
        tree_add.tree_add(np.zeros((1, 2, 3), np.float32), np.zeros((2, 3), np.float32), 0)
    with pytest.raises(ValueError, match="do not fit"):
        tree_add.tree_add(np.zeros((2, 2, 3), np.float32), np.zeros((2, 3), np.float32), 1)
    with pytest.raises(ValueError, match="C-contiguous float32"):
        tree_add.tree_add(np.zeros((2, 2, 3), np.float64), np.zeros((2, 3), np.float32), 0)


def _run(X, y, n_threads=1, **family):
    kw = dict(target_size=2_000, train_size=1_600, slice_size=250, n_partitions=64, tau=0.75, random_state=0)
    model = LinearFamily(**family) if family else "ridge"
    return aflite(X, y, model=model, n_threads=n_threads, **kw)


def _same(a, b) -> None:
    assert np.array_equal(a.removed_round, b.removed_round)
    assert np.array_equal(a.n_predictions, b.n_predictions)
    assert np.array_equal(a.scores, b.scores, equal_nan=True)


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_planted_bias(4_000, 16, n_classes=3, spectrum_decay=0.5, random_state=1)
    return X, y


def test_runs_are_the_same_with_and_without_the_compiled_additions(data, monkeypatch):
    """Member blocks added (one array of stacks), products + compiled tree, or numpy's tree: the same runs."""
    calls = {"tree_add": 0, "sums": 0}
    real_add, real_sums = tree_add.tree_add, member_sums.sums

    def counting_add(*a, **k):
        calls["tree_add"] += 1
        return real_add(*a, **k)

    def counting_sums(*a, **k):
        calls["sums"] += 1
        return real_sums(*a, **k)

    monkeypatch.setattr(tree_add, "tree_add", counting_add)
    monkeypatch.setattr(member_sums, "sums", counting_sums)
    # the kernels' warm-up (one tiny call of each, beside the shards' building) is not a path of the Gram sums
    monkeypatch.setattr(_LinearSession, "_warm_kernels", lambda self: None)
    default = _run(*data)  # 40 % of the blocks are members from the start: the products
    # t = 800 of 4,000 rows: 20 % of the blocks are members at first, 40 % at the end - both paths in one run
    kw = dict(target_size=2_000, train_size=800, slice_size=250, n_partitions=64, tau=0.75, random_state=0)
    switching = aflite(*data, model="ridge", n_threads=1, **kw)
    assert calls["sums"] > 0 and calls["tree_add"] > 0
    monkeypatch.setattr(shards, "MEMBER_SUMS_DENSITY", 0.0)
    _same(switching, aflite(*data, model="ridge", n_threads=1, **kw))
    monkeypatch.setattr(shards, "MEMBER_SUMS_DENSITY", 1.0)
    _same(switching, aflite(*data, model="ridge", n_threads=1, **kw))
    calls.update(sums=0, tree_add=0)
    monkeypatch.setattr(shards, "MEMBER_SUMS_DENSITY", 1.0)
    added = _run(*data)
    assert calls["sums"] > 0 and calls["tree_add"] == 0  # the member blocks' sums ran, only they
    _same(added, default)
    monkeypatch.setattr(shards, "MEMBER_SUMS_DENSITY", 0.0)
    products = _run(*data)
    assert calls["tree_add"] > 0  # the products and the compiled tree ran
    _same(added, products)
    monkeypatch.setattr(member_sums, "available", lambda: False)
    compiled = _run(*data)
    _same(added, compiled)
    monkeypatch.setattr(tree_add, "available", lambda: False)
    _same(added, _run(*data))
