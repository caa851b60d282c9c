"""The folded block Grams of the sharded linear sessions (:mod:`aflite_core.engine.shards`): same values, same bits.

The folded layout stores one triangle of each symmetric block Gram as a contiguous (2k+1) × k matrix; these
tests check that folding loses nothing, that the in-place BLAS removal on the folded parts rounds exactly as the
single ``ssyrk`` on the square matrix did (the engine's results are pinned to commit 4293819 by
``tests/test_engine_bits.py``), and the helpers that replaced per-row loops.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from aflite_core.engine.gram_folding import _mirror_upper, fold_grams, folded_shape, unfold_grams, unpack_upper
from aflite_core.engine.shards import _column_tiles, _fused_downdate, _fused_folded_downdate


def _symmetric(rng: np.random.Generator, g: int, D: int) -> np.ndarray:
    G = rng.standard_normal((g, D, D)).astype(np.float32) * np.float32(10.0)
    return G + np.swapaxes(G, 1, 2)


@given(D=st.integers(2, 40), g=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_fold_then_unfold_is_the_matrix(D, g, seed):
    """Every value of the upper triangle is kept once; unfolding mirrors it back (odd D: zero padding)."""
    G = _symmetric(np.random.default_rng(seed), g, D)
    F = fold_grams(G)
    rows, k = folded_shape(D)
    assert F.shape == (g, rows, k) and rows * k - D * (D + 1) // 2 == (D % 2) * (D + 1)
    assert np.array_equal(unfold_grams(F, D), G)
    assert np.array_equal(unfold_grams(F.reshape(g, -1), D), G)


@given(D=st.integers(1, 80), g=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_the_compiled_unfolding_equals_numpys_copies(D, g, seed):
    """gram_unfold (one numba pass, row by row) and the numpy copies give the same matrices, odd D too."""
    from aflite_core.engine import gram_unfold

    if not gram_unfold.available():
        pytest.skip("numba is a dependency (umap-learn)")
    G = _symmetric(np.random.default_rng(seed), g, D)
    F = fold_grams(G)
    compiled = gram_unfold.unfold(F, D)
    real = gram_unfold.available
    gram_unfold.available = lambda: False  # the numpy path of unfold_grams
    try:
        plain = unfold_grams(F, D)
    finally:
        gram_unfold.available = real
    assert np.array_equal(compiled, plain) and np.array_equal(compiled, G)


@given(D=st.integers(1, 100), g=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_the_compiled_folding_equals_numpys_copies(D, g, seed):
    """gram_unfold.fold and fold_grams' numpy copies give the same bits, reading only the upper triangle: a
    non-symmetric input, signed zeros and a NaN, odd D's zero padding, and an ``out`` holding garbage."""
    from aflite_core.engine import gram_unfold

    if not gram_unfold.available():
        pytest.skip("numba is a dependency (umap-learn)")
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((g, D, D)).astype(np.float32)  # not symmetric: the lower triangle must not matter
    G[0, 0, D - 1] = -0.0
    G[-1, D // 2, D - 1] = np.nan
    rows, k = folded_shape(D)
    out = np.full((g, rows, k), 7.0, dtype=np.float32)
    compiled = fold_grams(G, out=out)
    assert compiled is out
    real = gram_unfold.available
    gram_unfold.available = lambda: False  # the numpy path of fold_grams
    try:
        plain = fold_grams(G)
        upper = np.triu(np.ones((D, D), dtype=bool))
        upper_only = fold_grams(np.where(upper, G, np.float32(5.0)))  # another lower triangle
    finally:
        gram_unfold.available = real
    assert np.array_equal(compiled.view(np.int32), plain.view(np.int32))
    assert np.array_equal(compiled.view(np.int32), upper_only.view(np.int32))
    assert np.array_equal(fold_grams(G).view(np.int32), plain.view(np.int32))  # a fresh array too


def test_unfold_agrees_with_the_upper_triangle_unpacking():
    """The folded and the row-packed upper triangles describe the same matrices."""
    G = _symmetric(np.random.default_rng(3), 2, 17)
    iu = np.triu_indices(17)
    assert np.array_equal(unfold_grams(fold_grams(G), 17), unpack_upper(G[:, iu[0], iu[1]], 17))


@pytest.mark.parametrize("D", [4, 7, 12, 35, 516])
def test_folded_removal_has_the_bits_of_one_ssyrk_on_the_square(D):
    """Two ssyrk and one sgemm on the folded parts = one ssyrk on the square, bit for bit (any row count)."""
    rng = np.random.default_rng(D)
    k = folded_shape(D)[1]
    with threadpool_limits(1):
        for rows in (1, 2, 5, 31, 64, 255, 256):
            Z = rng.standard_normal((rows, D)).astype(np.float32) * np.float32(rng.integers(1, 40))
            Z[:, -3:] = rng.random((rows, 3)) < 0.4  # one-hot-like columns, as the sessions' Z
            G = _symmetric(rng, 1, D)[0] * np.float32(50.0)
            square = G.copy()
            _fused_downdate(Z, square, -1.0)
            F = fold_grams(G[None])[0]
            Z2 = np.zeros((rows, k), dtype=np.float32)
            Z2[:, : D - k] = Z[:, k:]
            _fused_folded_downdate(np.ascontiguousarray(Z[:, :k]), Z2, F)
            expected = np.triu(square) + np.triu(square, 1).T
            got = unfold_grams(F[None], D)[0]
            assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)), (D, rows)


@given(n_cols=st.integers(2, 5_000), width=st.integers(1, 3_000))
def test_column_tiles_cover_every_column_never_one_alone(n_cols, width):
    """Contiguous, in order, at most ``width`` wide where possible, and never a single column (gemv rounds)."""
    tiles = _column_tiles(n_cols, width)
    assert tiles[0][0] == 0 and tiles[-1][1] == n_cols
    assert all(a[1] == b[0] for a, b in itertools.pairwise(tiles))
    widths = [c1 - c0 for c0, c1 in tiles]
    assert min(widths) >= 2
    assert max(widths) <= max(width, 2) or len(tiles) == n_cols // 2


@given(D=st.integers(1, 60), seed=st.integers(0, 2**16))
def test_mirror_upper_copies_the_upper_triangle_down(D, seed):
    """The cached-index mirror equals the tril_indices assignment it replaced."""
    G = np.random.default_rng(seed).standard_normal((D, D)).astype(np.float32)
    expected = G.copy()
    il = np.tril_indices(D, -1)
    expected[il] = expected.T[il]
    _mirror_upper(G)
    assert np.array_equal(G, expected)
