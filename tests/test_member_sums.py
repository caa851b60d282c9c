"""The partitions' Gram sums by adding member blocks: the bits of the 0/1 matrix products and the shard tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aflite_core.engine import member_sums
from aflite_core.engine.shards import shard_bounds, tree_sum

pytestmark = pytest.mark.skipif(not member_sums.available(), reason="numba is a dependency of the app")


def _products_and_tree(stack, member, bounds):
    """What node_grams computed before: one float32 product per shard (BLAS), added along the shard tree."""
    A = member.astype(np.float32)
    leaves = {s: A[:, bounds[s] : bounds[s + 1]] @ stack[bounds[s] : bounds[s + 1]] for s in range(len(bounds) - 1)}
    return tree_sum(leaves, 0, len(bounds) - 1)


@settings(max_examples=60, deadline=None)
@given(
    n_blocks=st.integers(1, 60),
    n_shards=st.integers(1, 20),
    g=st.integers(1, 9),
    size=st.integers(2, 700),
    density=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**16),
)
def test_sums_equal_the_products_and_tree_bit_for_bit(n_blocks, n_shards, g, size, density, seed):
    """Any blocks, shards (unequal ones too), partitions and columns: the same float32 bits, zeros' signs included."""
    rng = np.random.default_rng(seed)
    n_shards = min(n_shards, n_blocks)
    stack = (rng.standard_normal((n_blocks, size)) * 10.0 ** rng.uniform(-3, 4, size)).astype(np.float32)
    stack[rng.random(stack.shape) < 0.05] = -0.0
    member = rng.random((g, n_blocks)) < density
    bounds = shard_bounds(n_blocks, n_shards)
    want = _products_and_tree(stack, member, bounds)
    ptr, blocks = member_sums.member_lists(member, bounds)
    got = np.full((g, size), np.nan, dtype=np.float32)
    cut = int(rng.integers(0, size + 1))  # two column ranges, as the pool splits them
    member_sums.sums(stack, ptr, blocks, got, 0, cut)
    member_sums.sums(stack, ptr, blocks, got, cut, size)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_member_lists_name_each_partitions_blocks_per_shard():
    member = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 1, 1]], dtype=bool)
    ptr, blocks = member_sums.member_lists(member, np.array([0, 2, 5]))
    got = [[list(blocks[ptr[s, r] : ptr[s, r + 1]]) for r in range(2)] for s in range(2)]
    assert got == [[[0], []], [[2, 3], [3, 4]]]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 23])
def test_tree_schedule_is_the_shard_tree(n):
    """Replaying the schedule on symbolic leaves writes node(0, n) as tree_sum groups it."""
    slots = [f"L{s}" for s in range(n)]
    for a, mid in member_sums.tree_schedule(n):
        slots[a] = f"({slots[a]} + {slots[mid]})"

    class Sym(str):
        def __add__(self, other):
            return Sym(f"({self} + {other})")

    assert slots[0] == tree_sum({s: Sym(f"L{s}") for s in range(n)}, 0, n)


def test_sums_refuse_what_they_cannot_add():
    stack, out = np.zeros((3, 4), np.float32), np.zeros((2, 4), np.float32)
    ptr, blocks = member_sums.member_lists(np.ones((2, 3), bool), np.array([0, 3]))
    with pytest.raises(ValueError, match="outside the stack"):
        member_sums.sums(stack[:2], ptr, blocks, out, 0, 4)
    with pytest.raises(ValueError, match="C-contiguous float32"):
        member_sums.sums(stack.astype(np.float64), ptr, blocks, out, 0, 4)
    with pytest.raises(ValueError, match="outside the 4 columns"):
        member_sums.sums(stack, ptr, blocks, out, 2, 5)
