"""The 2-D maps of the Embedding map (aflite_core.measures.projection): row samples, PCA, and the real UMAP once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aflite_core.measures.projection import UMAP_MIN_ROWS, pca_2d, sample_rows, umap_2d


# -- sample_rows -------------------------------------------------------------------------------------------------
def test_sample_rows_keeps_small_data_whole():
    np.testing.assert_array_equal(sample_rows(30, 100), np.arange(30))
    assert sample_rows(0, 5).tolist() == []


def test_sample_rows_is_seeded_sorted_distinct_and_bounded():
    rows = sample_rows(50_000, 20_000, random_state=0)
    assert len(rows) == 20_000 and (np.diff(rows) > 0).all() and rows[0] >= 0 and rows[-1] < 50_000
    np.testing.assert_array_equal(rows, sample_rows(50_000, 20_000, random_state=0))
    assert not np.array_equal(rows, sample_rows(50_000, 20_000, random_state=1))


def test_sample_rows_accepts_a_generator():
    a = sample_rows(1000, 10, random_state=np.random.default_rng(3))
    b = sample_rows(1000, 10, random_state=np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


@given(n_rows=st.integers(0, 500), max_rows=st.integers(1, 600), seed=st.integers(0, 2**31 - 1))
def test_sample_rows_invariants(n_rows, max_rows, seed):
    rows = sample_rows(n_rows, max_rows, random_state=seed)
    assert len(rows) == min(n_rows, max_rows)
    assert len(np.unique(rows)) == len(rows) and (rows < max(n_rows, 1)).all()


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"n_rows": -1, "max_rows": 5}, ValueError, r"'n_rows' parameter of sample_rows must be an int in \[0, inf\)"),
        ({"n_rows": 10, "max_rows": 0}, ValueError, r"'max_rows' parameter of sample_rows must be an int in \[1,"),
        ({"n_rows": 10.0, "max_rows": 5}, TypeError, "'n_rows' parameter of sample_rows"),
        ({"n_rows": 10, "max_rows": 5, "random_state": "x"}, TypeError, "'random_state' parameter of sample_rows"),
    ],
    ids=["negative-rows", "zero-max", "float-rows", "bad-random-state"],
)
def test_sample_rows_invalid_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sample_rows(**kwargs)


# -- pca_2d ------------------------------------------------------------------------------------------------------
def test_pca_finds_the_direction_of_largest_variance():
    rng = np.random.default_rng(0)
    t = rng.normal(size=200)
    X = np.c_[10 * t, 10 * t + rng.normal(scale=0.1, size=200), rng.normal(scale=0.5, size=(200, 3))]
    xy, ratio = pca_2d(X)
    assert xy.shape == (200, 2) and xy.dtype == np.float32
    assert len(ratio) == 2 and ratio[0] > 0.95 and ratio[0] >= ratio[1] >= 0
    assert abs(np.corrcoef(xy[:, 0], t)[0, 1]) > 0.99


def test_pca_is_deterministic_with_the_randomized_solver():
    X = np.random.default_rng(1).normal(size=(1200, 40)).astype(np.float32)  # large: scikit-learn's randomized SVD
    a, _ = pca_2d(X, random_state=0)
    b, _ = pca_2d(X, random_state=0)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", [(1, 4), (7, 1)], ids=["one-row", "one-column"])
def test_pca_of_a_single_direction_pads_the_second_axis(shape):
    X = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    xy, ratio = pca_2d(X)
    assert xy.shape == (shape[0], 2) and len(ratio) == 1
    assert (xy[:, 1] == 0).all()


def test_pca_of_constant_features_reports_zero_variance_not_nan():
    xy, ratio = pca_2d(np.ones((10, 3)))
    assert np.isfinite(xy).all() and np.isfinite(ratio).all() and (ratio == 0).all()


@pytest.mark.parametrize(
    ("X", "kwargs", "exc", "match"),
    [
        (np.zeros(5), {}, ValueError, "'X' parameter of pca_2d must be a 2-D array"),
        (np.array([[0.0, np.nan], [1.0, 2.0]]), {}, ValueError, "must contain only finite values"),
        (np.array([["a", "b"]]), {}, TypeError, "'X' parameter of pca_2d must be a 2-D numeric array"),
        (np.zeros((3, 2)), {"n_threads": 0}, ValueError, "'n_threads' parameter of pca_2d"),
        (np.zeros((3, 2)), {"random_state": -1}, ValueError, "'random_state' parameter of pca_2d"),
    ],
    ids=["1-d", "nan", "text", "zero-threads", "negative-seed"],
)
def test_pca_invalid_parameters(X, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pca_2d(X, **kwargs)


# -- umap_2d (parameters only; the real fit is the slow test below) ------------------------------------------------
@pytest.mark.parametrize(
    ("X", "kwargs", "exc", "match"),
    [
        (np.zeros((UMAP_MIN_ROWS - 1, 3)), {}, ValueError, "at least 5 rows"),
        (np.zeros((10, 3)), {"n_neighbors": 1}, ValueError, "'n_neighbors' parameter of umap_2d"),
        (np.zeros((10, 3)), {"min_dist": 2.0}, ValueError, "'min_dist' parameter of umap_2d"),
        (np.zeros((10, 3)), {"random_state": 1.5}, TypeError, "'random_state' parameter of umap_2d"),
        (np.full((10, 3), np.inf), {}, ValueError, "must contain only finite values"),
    ],
    ids=["too-few-rows", "one-neighbour", "min-dist-above-1", "float-seed", "inf"],
)
def test_umap_invalid_parameters_fail_before_the_fit(X, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        umap_2d(X, **kwargs)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_umap_maps_the_digits_into_class_clusters():
    """The real UMAP fit (one numba warm-up for the whole test process; NUMBA_CACHE_DIR is set by tests/run.sh)."""
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    from aflite_core import load_digits_dataset

    data = load_digits_dataset()
    X = data.representation("mlp")[:600]
    y = data.y[:600]
    xy = umap_2d(X)
    assert xy.shape == (600, 2) and xy.dtype == np.float32 and np.isfinite(xy).all()
    again = umap_2d(X)
    assert np.allclose(xy, again)  # seeded: the same map every time
    # neighbours in the 2-D map share their class, as they do in Φ
    score = cross_val_score(KNeighborsClassifier(5), xy, y, cv=3).mean()
    assert score > 0.8
    with pytest.raises(ValueError, match="at least 5 rows"):
        umap_2d(X[:3])
