"""The 2-D maps of the Embedding map (aflite_core.measures.projection): row samples, PCA, and the real UMAP once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aflite_core.measures.map_grids import density_grid, points_in_box, points_in_polygon
from aflite_core.measures.projection import (
    UMAP_MIN_ROWS,
    pca_2d,
    pca_2d_all,
    sample_rows,
    umap_2d,
    umap_2d_all,
)


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


# -- the map of every row: pca_2d_all, umap_2d_all, points_in_polygon / points_in_box, density_grid ---------------
def _brute_in_polygon(xy, px, py):
    x, y = xy[:, 0].astype(float), xy[:, 1].astype(float)
    inside = np.zeros(len(x), dtype=bool)
    for ax, ay, bx, by in zip(px, py, np.roll(px, -1), np.roll(py, -1)):
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = ax + (y - ay) * (bx - ax) / (by - ay)
        inside ^= ((ay > y) != (by > y)) & (x < cross)
    return inside


@pytest.mark.parametrize("seed", range(5))
def test_points_in_polygon_equals_the_edge_by_edge_count(seed):
    rng = np.random.default_rng(seed)
    xy = rng.normal(size=(20_000, 2)).astype(np.float32)
    t = np.sort(rng.uniform(0, 2 * np.pi, 40))
    r = rng.uniform(0.3, 2.0, 40)  # a star-shaped, non-convex lasso
    px, py = r * np.cos(t), r * np.sin(t)
    got = points_in_polygon(xy, px, py)
    np.testing.assert_array_equal(got, _brute_in_polygon(xy, px, py))
    assert 0 < got.sum() < len(xy)
    # a closed polygon (last vertex = first, as Plotly sends a lasso) gives the same rows
    np.testing.assert_array_equal(points_in_polygon(xy, np.r_[px, px[0]], np.r_[py, py[0]]), got)


def test_points_in_polygon_and_box_edge_cases():
    xy = np.array([[0.5, 0.5], [2.0, 2.0], [1.0, 0.2]])
    assert not points_in_polygon(xy, [0, 1], [0, 1]).any()  # two vertices enclose nothing
    assert not points_in_polygon(np.zeros((0, 2)), [0, 1, 1], [0, 0, 1]).any()
    assert points_in_box(xy, [1, 0], [0, 1]).tolist() == [True, False, True]
    with pytest.raises(ValueError, match="finite"):
        points_in_polygon(xy, [0, 1, np.nan], [0, 0, 1])
    with pytest.raises(ValueError, match="shape"):
        points_in_polygon(np.zeros(3), [0, 1, 1], [0, 0, 1])


def test_density_grid_counts_every_row_once_in_bins_squared_numbers():
    rng = np.random.default_rng(0)
    for n in (1_000, 200_000):
        xy = rng.normal(size=(n, 2))
        codes = rng.integers(0, 3, n)
        grid = density_grid(xy, bins=50, codes=codes, n_codes=3)
        assert grid.counts.shape == (50, 50, 3)  # O(bins² · categories), whatever the rows
        assert grid.counts.sum() == n == grid.n_rows
        np.testing.assert_array_equal(grid.counts.sum(axis=(0, 1)), np.bincount(codes, minlength=3))
    # an extent counts only the rows inside it, each in the bin its coordinates fall in
    grid = density_grid([[0.1, 0.1], [0.9, 0.6], [5.0, 5.0]], bins=2, extent=(0, 1, 0, 1))
    assert grid.n_rows == 2 and grid.total.tolist() == [[1, 0], [0, 1]]


def test_pca_2d_all_fits_on_a_sample_and_projects_every_row():
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(5_000, 6)) * [4.0, 2.0, 0.5, 0.1, 0.1, 0.1]).astype(np.float32)
    xy, ratio, n_fit = pca_2d_all(X, max_fit_rows=10_000)
    np.testing.assert_allclose(xy, pca_2d(X)[0], atol=1e-4)  # up to the limit: pca_2d itself
    assert n_fit == 5_000
    xy_s, ratio_s, n_fit = pca_2d_all(X, max_fit_rows=1_000, chunk_rows=777)
    assert n_fit == 1_000 and xy_s.shape == (5_000, 2) and xy_s.dtype == np.float32
    # the sample's axes are the full data's axes, up to sign: the coordinates agree closely
    for k in range(2):
        corr = np.corrcoef(xy[:, k], xy_s[:, k])[0, 1]
        assert abs(corr) > 0.99
    assert abs(ratio_s[0] - ratio[0]) < 0.05


def test_umap_2d_all_fits_the_sample_and_transforms_the_rest(monkeypatch):
    """The composition, with a stand-in for umap-learn (the real fit is the slow test above)."""
    import aflite_core.measures.projection as projection

    class FakeUMAP:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

        def fit_transform(self, X):
            self.fitted = len(X)
            return X[:, :2] + 100.0

        def transform(self, X):
            return X[:, :2] - 100.0

    monkeypatch.setattr(projection, "_import_umap", lambda: type("umap", (), {"UMAP": FakeUMAP}))
    X = np.random.default_rng(1).normal(size=(1_000, 4)).astype(np.float32)
    seen = []
    xy, rows = umap_2d_all(X, max_fit_rows=300, chunk_rows=250, progress=lambda d, n: seen.append((d, n)))
    np.testing.assert_array_equal(rows, sample_rows(1_000, 300, random_state=0))
    np.testing.assert_allclose(xy[rows], X[rows, :2] + 100.0)  # the sample keeps its fitted coordinates
    rest = np.setdiff1d(np.arange(1_000), rows)
    np.testing.assert_allclose(xy[rest], X[rest, :2] - 100.0)  # every other row is placed by transform
    assert seen[0] == (300, 1_000) and seen[-1] == (1_000, 1_000) and len(seen) == 1 + 3


def test_umap_2d_all_asks_stop_between_the_fit_and_every_chunk_without_a_child(monkeypatch):
    """Where no child process runs (child processes off), a stop ends the job before the next chunk (issue 25)."""
    import aflite_core._child_process as child
    import aflite_core.measures.projection as projection

    class FakeUMAP:
        def __init__(self, **kwargs):
            pass

        def fit_transform(self, X):
            return X[:, :2]

        def transform(self, X):
            chunks.append(len(X))
            return X[:, :2]

    chunks: list[int] = []
    monkeypatch.setattr(projection, "_import_umap", lambda: type("umap", (), {"UMAP": FakeUMAP}))
    monkeypatch.setattr(child, "ENABLED", False)
    X = np.random.default_rng(1).normal(size=(1_000, 4)).astype(np.float32)
    seen: list[tuple[int, int]] = []
    with pytest.raises(child.ChildStopped):
        umap_2d_all(
            X, max_fit_rows=300, chunk_rows=250, progress=lambda d, n: seen.append((d, n)), stop=lambda: bool(seen)
        )
    assert seen == [(300, 1_000)] and chunks == []  # stopped after the fit, before the first transform


def test_umap_2d_all_with_stop_runs_in_a_child_process_that_a_stop_ends_mid_fit():
    """With a stop callback the real fit runs in a child process: a stop 1 s in ends it within about a second."""
    import time

    from aflite_core._child_process import ChildStopped

    X = np.random.default_rng(0).normal(size=(6_000, 16)).astype(np.float32)
    start = time.perf_counter()
    with pytest.raises(ChildStopped):
        umap_2d_all(X, max_fit_rows=5_000, stop=lambda: time.perf_counter() - start > 1.0)
    assert time.perf_counter() - start < 6.0  # the fit (numba compiling, then NN-descent) takes far longer
