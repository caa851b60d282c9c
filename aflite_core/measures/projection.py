"""Two-dimensional maps of a feature matrix Φ(X): PCA, UMAP, and what a map of every row needs at scale.

PCA is fast and shown at once; UMAP keeps neighbourhoods but its first fit in a process compiles with numba.
On large data both place every row: PCA's axes are fitted on a seeded sample and every row is projected
(:func:`pca_2d_all`); UMAP is fitted on a seeded sample and applied to the other rows with its ``transform``
(:func:`umap_2d_all`). A map of every row is drawn as a 2-D histogram (:func:`density_grid`) and a selection
drawn on it is evaluated over every row from its geometry (:func:`points_in_polygon`, :func:`points_in_box`).
Pure numpy / scikit-learn / umap-learn: nothing here plots, caches or knows about Streamlit.

=====================================  ======================================================================
what                                   function
=====================================  ======================================================================
seeded, sorted sample of row positions :func:`sample_rows`
first two principal components         :func:`pca_2d` (with the share of variance of each axis)
UMAP to two dimensions                 :func:`umap_2d` (seeded; the first fit in a process compiles with numba)
PCA of every row, axes from a sample   :func:`pca_2d_all` (projected in chunks)
UMAP fitted on a sample, every row     :func:`umap_2d_all` (``transform`` in chunks, with progress and stop)
rows inside a lasso / a box            :func:`points_in_polygon` / :func:`points_in_box` (vectorised numpy)
2-D histogram of the map, per category :func:`density_grid` (O(bins²) numbers, whatever the rows)
a per-row number's mean per map bin    :func:`density_values` (a 0/1 number: the share of each bin's rows)
=====================================  ======================================================================

The app's Embedding map shows :func:`pca_2d` first and swaps in :func:`umap_2d` once its fit is done.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from .._utils import blas_threads

__all__ = [
    "PCA_FIT_ROWS",
    "UMAP_INSTALL_HINT",
    "UMAP_MIN_ROWS",
    "DensityGrid",
    "ValueGrid",
    "density_grid",
    "density_values",
    "pca_2d",
    "pca_2d_all",
    "points_in_box",
    "points_in_polygon",
    "sample_rows",
    "umap_2d",
    "umap_2d_all",
]

#: rows a PCA of every row fits its axes on at most (a seeded sample above it; every row is projected)
PCA_FIT_ROWS = 50_000
#: rows projected / transformed per chunk (bounds the float64 copy of a memory-mapped matrix)
_CHUNK_ROWS = 32_768

#: what an ImportError of :func:`umap_2d` says (umap-learn is an optional dependency: the ``app`` extra)
UMAP_INSTALL_HINT = "The UMAP map needs umap-learn: pip install umap-learn"
#: fewest rows :func:`umap_2d` maps (its neighbour graph needs a few points)
UMAP_MIN_ROWS = 5


def sample_rows(n_rows: int, max_rows: int, *, random_state: int | np.random.Generator | None = 0) -> NDArray[np.intp]:
    """Row positions to map: all ``n_rows`` rows, or above ``max_rows`` a seeded sample of ``max_rows`` of them.

    Parameters
    ----------
    n_rows : int
        Rows of the data, at least 0.
    max_rows : int
        Rows mapped at most, at least 1.
    random_state : int, numpy Generator or None, default=0
        Seed of the sample (an int gives the same rows every time).

    Returns
    -------
    ndarray of int, shape (min(n_rows, max_rows),)
        Sorted, distinct row positions in ``[0, n_rows)``.

    Examples
    --------
    >>> sample_rows(5, 10).tolist()
    [0, 1, 2, 3, 4]
    >>> rows = sample_rows(1000, 3, random_state=0)
    >>> len(rows), bool((rows == sample_rows(1000, 3, random_state=0)).all())
    (3, True)
    """
    func = "sample_rows"
    n_rows = v.check_int(n_rows, "n_rows", func, low=0)
    max_rows = v.check_int(max_rows, "max_rows", func, low=1)
    seed = v.check_random_state(random_state, func)
    if n_rows <= max_rows:
        return np.arange(n_rows)
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=max_rows, replace=False))


def pca_2d(
    X: ArrayLike, *, random_state: int | np.random.Generator | None = 0, n_threads: int | None = 1
) -> tuple[NDArray[np.float32], NDArray[np.float64]]:
    """The first two principal components of every row of ``X``.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        Finite features, at least one row and one column.
    random_state : int, numpy Generator or None, default=0
        Seed of scikit-learn's randomized SVD (used on large inputs).
    n_threads : int or None, default=1
        BLAS threads during the fit (None: the library default).

    Returns
    -------
    xy : ndarray of float32, shape (n_rows, 2)
        The coordinates. When ``X`` has a single direction of variance (one row, or one column) the second
        coordinate is 0.
    variance_ratio : ndarray of float64, shape (n_components,)
        Share of the variance each fitted component explains (``n_components`` is 2, or 1 as above); constant
        features give 0 instead of NaN.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [2.0, 2.1, 1.0], [3.0, 2.9, 1.0]])
    >>> xy, ratio = pca_2d(X)
    >>> xy.shape, xy.dtype, len(ratio), bool(ratio[0] > 0.99)
    ((4, 2), dtype('float32'), 2, True)
    """
    from sklearn.decomposition import PCA

    func = "pca_2d"
    X = v.check_features(X, "X", func)
    seed = v.check_random_state(random_state, func)
    n_threads = None if n_threads is None else v.check_int(n_threads, "n_threads", func, low=1)
    n, d = X.shape
    k = max(1, min(2, n - 1, d))
    with blas_threads(n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant features: 0/0 variance ratios, reported as 0
        pca = PCA(n_components=k, random_state=seed)
        Z = pca.fit_transform(np.asarray(X, dtype=np.float64))
    ratio = np.nan_to_num(np.asarray(pca.explained_variance_ratio_, dtype=np.float64), nan=0.0)
    if k == 1:
        Z = np.c_[Z, np.zeros(n)]
    return Z.astype(np.float32), ratio


def umap_2d(
    X: ArrayLike, *, n_neighbors: int = 15, min_dist: float = 0.1, random_state: int | np.random.Generator | None = 0
) -> NDArray[np.float32]:
    """UMAP of the rows of ``X`` to two dimensions (seeded: the same map for the same input and seed).

    Uses ``init="pca"``: UMAP's default spectral initialisation can hang on a disconnected neighbour graph.
    ``n_neighbors`` is lowered to ``n_rows - 1`` on small inputs. The first fit in a new process spends
    ~20 s compiling (numba); set ``NUMBA_CACHE_DIR`` to a writable folder to keep the compiled code.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        Finite features, at least :data:`UMAP_MIN_ROWS` rows.
    n_neighbors : int, default=15
        Size of the local neighbourhood UMAP keeps (at least 2).
    min_dist : float, default=0.1
        How tightly UMAP packs neighbours, in [0, 1].
    random_state : int, numpy Generator or None, default=0
        Seed of the fit.

    Returns
    -------
    ndarray of float32, shape (n_rows, 2)
        The coordinates (arbitrary units).

    Raises
    ------
    ImportError
        Without umap-learn (:data:`UMAP_INSTALL_HINT`).
    ValueError
        For fewer than :data:`UMAP_MIN_ROWS` rows or invalid parameters.
    """
    func = "umap_2d"
    X = v.check_features(X, "X", func)
    n_neighbors = v.check_int(n_neighbors, "n_neighbors", func, low=2)
    min_dist = v.check_probability(min_dist, "min_dist", func)
    seed = v.check_random_state(random_state, func)
    n = X.shape[0]
    if n < UMAP_MIN_ROWS:
        raise ValueError(
            f"The 'X' parameter of {func} must have at least {UMAP_MIN_ROWS} rows to map. Got {n} rows instead."
        )
    umap = _import_umap()
    reducer = umap.UMAP(
        n_components=2,
        n_neighbors=max(2, min(n_neighbors, n - 1)),
        min_dist=min_dist,
        init="pca",
        random_state=seed,
        n_jobs=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(reducer.fit_transform(X), dtype=np.float32)


def pca_2d_all(
    X: ArrayLike,
    *,
    max_fit_rows: int = PCA_FIT_ROWS,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
    chunk_rows: int = _CHUNK_ROWS,
) -> tuple[NDArray[np.float32], NDArray[np.float64], int]:
    """The first two principal components of every row, the axes fitted on at most ``max_fit_rows`` rows.

    Up to ``max_fit_rows`` rows this is :func:`pca_2d`. Above it the axes (mean and components) are fitted on a
    seeded sample of ``max_fit_rows`` rows (:func:`sample_rows`) and every row is projected onto them, ``chunk_rows``
    at a time, so a memory-mapped matrix is never copied whole: the fit costs O(max_fit_rows · d²) and the projection
    O(n_rows · d).

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        Finite features, at least one row and one column (a memory-mapped array is read in chunks).
    max_fit_rows : int, default=PCA_FIT_ROWS
        Rows the axes are fitted on at most.
    random_state : int, numpy Generator or None, default=0
        Seed of the sample and of scikit-learn's randomized SVD.
    n_threads : int or None, default=1
        BLAS threads (None: the library default).
    chunk_rows : int, default=32768
        Rows projected per chunk.

    Returns
    -------
    xy : ndarray of float32, shape (n_rows, 2)
        Every row's coordinates.
    variance_ratio : ndarray of float64
        Share of the (sample's) variance each component explains, as in :func:`pca_2d`.
    n_fit : int
        Rows the axes were fitted on (``n_rows`` when no sample was needed).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 5)) * [5.0, 2.0, 0.1, 0.1, 0.1]
    >>> xy, ratio, n_fit = pca_2d_all(X, max_fit_rows=200)
    >>> xy.shape, n_fit, bool(ratio[0] > 0.7)
    ((1000, 2), 200, True)
    """
    from sklearn.decomposition import PCA

    func = "pca_2d_all"
    X = v.check_features(X, "X", func)
    max_fit_rows = v.check_int(max_fit_rows, "max_fit_rows", func, low=1)
    chunk_rows = v.check_int(chunk_rows, "chunk_rows", func, low=1)
    seed = v.check_random_state(random_state, func)
    n, d = X.shape
    if n <= max_fit_rows:
        xy, ratio = pca_2d(X, random_state=seed, n_threads=n_threads)
        return xy, ratio, n
    rows = sample_rows(n, max_fit_rows, random_state=seed)
    k = max(1, min(2, d))
    with blas_threads(n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pca = PCA(n_components=k, random_state=seed).fit(np.asarray(X[rows], dtype=np.float64))
        # projected in the features' own precision (float32 features: 5x faster than a float64 copy per chunk)
        dtype = np.float32 if X.dtype == np.float32 else np.float64
        mean, comps = pca.mean_.astype(dtype), np.ascontiguousarray(pca.components_.T, dtype=dtype)
        xy = np.zeros((n, 2), dtype=np.float32)
        for start in range(0, n, chunk_rows):
            block = np.asarray(X[start : start + chunk_rows], dtype=dtype) - mean
            xy[start : start + len(block), :k] = block @ comps
    ratio = np.nan_to_num(np.asarray(pca.explained_variance_ratio_, dtype=np.float64), nan=0.0)
    return xy, ratio, len(rows)


def umap_2d_all(
    X: ArrayLike,
    *,
    max_fit_rows: int,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    random_state: int | np.random.Generator | None = 0,
    chunk_rows: int = _CHUNK_ROWS,
    progress: Callable[[int, int], Any] | None = None,
) -> tuple[NDArray[np.float32], NDArray[np.intp]]:
    """UMAP fitted on at most ``max_fit_rows`` rows and applied to every other row with its ``transform``.

    Up to ``max_fit_rows`` rows this is :func:`umap_2d`. Above it UMAP is fitted on a seeded sample
    (:func:`sample_rows`); the sampled rows keep their fitted coordinates and the others are placed by
    ``transform`` (each new row near its neighbours among the sampled rows), ``chunk_rows`` at a time.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        Finite features, at least :data:`UMAP_MIN_ROWS` rows.
    max_fit_rows : int
        Rows the fit uses at most.
    n_neighbors, min_dist, random_state
        As in :func:`umap_2d` (the seed also draws the sample).
    chunk_rows : int, default=32768
        Rows transformed per chunk.
    progress : callable, optional
        ``progress(rows_done, n_rows)`` after the fit and after every chunk.

    Returns
    -------
    xy : ndarray of float32, shape (n_rows, 2)
        Every row's coordinates (arbitrary units).
    fit_rows : ndarray of int
        The rows the fit used (sorted).
    """
    func = "umap_2d_all"
    X = v.check_features(X, "X", func)
    max_fit_rows = v.check_int(max_fit_rows, "max_fit_rows", func, low=UMAP_MIN_ROWS)
    chunk_rows = v.check_int(chunk_rows, "chunk_rows", func, low=1)
    seed = v.check_random_state(random_state, func)
    v.check_optional_callable(progress, "progress", func)
    n = X.shape[0]
    rows = sample_rows(n, max_fit_rows, random_state=seed)
    if n <= max_fit_rows:
        xy = umap_2d(X, n_neighbors=n_neighbors, min_dist=min_dist, random_state=seed)
        if progress is not None:
            progress(n, n)
        return xy, rows
    n_neighbors = v.check_int(n_neighbors, "n_neighbors", func, low=2)
    min_dist = v.check_probability(min_dist, "min_dist", func)
    umap = _import_umap()
    reducer = umap.UMAP(
        n_components=2, n_neighbors=n_neighbors, min_dist=min_dist, init="pca", random_state=seed, n_jobs=1
    )
    xy = np.zeros((n, 2), dtype=np.float32)
    rest = np.ones(n, dtype=bool)
    rest[rows] = False
    others = np.flatnonzero(rest)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xy[rows] = reducer.fit_transform(np.asarray(X[rows], dtype=np.float32))
        done = len(rows)
        if progress is not None:
            progress(done, n)
        for start in range(0, len(others), chunk_rows):
            part = others[start : start + chunk_rows]
            xy[part] = reducer.transform(np.asarray(X[part], dtype=np.float32))
            done += len(part)
            if progress is not None:
                progress(done, n)
    return xy, rows


def _as_xy(xy: ArrayLike, func: str) -> NDArray:
    xy = np.asarray(xy)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"The 'xy' parameter of {func} must be an array of shape (n_rows, 2). Got {xy.shape} instead.")
    return xy


def _polygon(px: ArrayLike, py: ArrayLike, func: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    px = np.asarray(px, dtype=np.float64).ravel()
    py = np.asarray(py, dtype=np.float64).ravel()
    if len(px) != len(py) or not (np.isfinite(px).all() and np.isfinite(py).all()):
        raise ValueError(
            f"The polygon of {func} must have as many finite x as y coordinates. Got {len(px)} x and {len(py)} y."
        )
    return px, py


def points_in_box(xy: ArrayLike, x_range: ArrayLike, y_range: ArrayLike) -> NDArray[np.bool_]:
    """Which rows of ``xy`` lie in the box ``x_range × y_range`` (edges included, either order of the ends).

    Examples
    --------
    >>> points_in_box([[0, 0], [1, 1], [2, 2]], (0.5, 2), (3, 1)).tolist()
    [False, True, True]
    """
    xy = _as_xy(xy, "points_in_box")
    bx, by = _polygon(x_range, y_range, "points_in_box")
    if len(bx) != 2:
        raise ValueError(f"The box of points_in_box must have two x and two y ends. Got {len(bx)} instead.")
    x, y = xy[:, 0], xy[:, 1]
    return (x >= bx.min()) & (x <= bx.max()) & (y >= by.min()) & (y <= by.max())


def points_in_polygon(xy: ArrayLike, px: ArrayLike, py: ArrayLike) -> NDArray[np.bool_]:
    """Which rows of ``xy`` lie inside the polygon with vertices ``(px[i], py[i])`` (even-odd rule).

    The polygon is closed (last vertex to first) whether or not the last vertex repeats the first; fewer than three
    vertices enclose nothing. Vectorised: the rows inside the polygon's bounding box are sorted by y once, and each
    edge tests only the rows in its own band of y (``searchsorted``), so the work is about
    ``n_rows · log n_rows`` plus the rows each horizontal line crosses, not ``n_rows · n_vertices``.

    Parameters
    ----------
    xy : array-like of shape (n_rows, 2)
        Points (e.g. every row's map coordinates).
    px, py : array-like of float
        The polygon's vertices (e.g. the ``x`` and ``y`` lists of a Plotly lasso selection).

    Returns
    -------
    ndarray of bool, shape (n_rows,)

    Examples
    --------
    >>> square = ([0, 2, 2, 0], [0, 0, 2, 2])
    >>> points_in_polygon([[1, 1], [3, 1], [1, -0.5]], *square).tolist()
    [True, False, False]
    """
    func = "points_in_polygon"
    xy = _as_xy(xy, func)
    px, py = _polygon(px, py, func)
    inside = np.zeros(len(xy), dtype=bool)
    if len(px) >= 2 and px[0] == px[-1] and py[0] == py[-1]:
        px, py = px[:-1], py[:-1]
    if len(px) < 3:
        return inside
    x, y = xy[:, 0], xy[:, 1]
    box = np.flatnonzero((x >= px.min()) & (x <= px.max()) & (y >= py.min()) & (y < py.max()))
    if not len(box):
        return inside
    cy = np.asarray(y[box], dtype=np.float64)
    order = np.argsort(cy, kind="stable")
    ys, xs = cy[order], np.asarray(x[box], dtype=np.float64)[order]
    flip = np.zeros(len(box), dtype=bool)
    x2, y2 = np.roll(px, -1), np.roll(py, -1)
    for ax, ay, bx, by in zip(px, py, x2, y2):
        if ay == by:  # a horizontal edge crosses no horizontal ray
            continue
        a, b = np.searchsorted(ys, min(ay, by), "left"), np.searchsorted(ys, max(ay, by), "left")
        if a == b:
            continue
        cross = ax + (ys[a:b] - ay) * ((bx - ax) / (by - ay))
        flip[a:b] ^= xs[a:b] < cross
    inside[box[order[flip]]] = True
    return inside


@dataclass(frozen=True, eq=False)
class DensityGrid:
    """A 2-D histogram of map coordinates, split by a category (see :func:`density_grid`).

    ``counts[j, i, c]`` is the number of rows of category ``c`` in the bin of x-edges ``x_edges[i:i+2]`` and
    y-edges ``y_edges[j:j+2]`` (row-major in y, as an image or a Plotly heatmap's ``z``). ``n_rows`` counts the
    rows inside the extent.
    """

    counts: NDArray[np.int64]
    x_edges: NDArray[np.float64]
    y_edges: NDArray[np.float64]
    n_rows: int

    @property
    def total(self) -> NDArray[np.int64]:
        """Rows per bin, all categories together, shape (ny, nx)."""
        return self.counts.sum(axis=2)

    @property
    def x_centres(self) -> NDArray[np.float64]:
        """Centre of each column of bins."""
        return (self.x_edges[:-1] + self.x_edges[1:]) / 2

    @property
    def y_centres(self) -> NDArray[np.float64]:
        """Centre of each row of bins."""
        return (self.y_edges[:-1] + self.y_edges[1:]) / 2


def density_grid(
    xy: ArrayLike,
    *,
    bins: int = 200,
    extent: tuple[float, float, float, float] | None = None,
    codes: ArrayLike | None = None,
    n_codes: int | None = None,
) -> DensityGrid:
    """The 2-D histogram of every row's map position, one layer per category (O(bins² · n_codes) numbers).

    Parameters
    ----------
    xy : array-like of shape (n_rows, 2)
        Map coordinates.
    bins : int, default=200
        Bins along each axis.
    extent : (x0, x1, y0, y1), optional
        The area binned (rows outside are not counted); default: the rows' range.
    codes : array-like of int, optional
        Each row's category in ``[0, n_codes)`` (class, removed or not, round removed); default: one category.
    n_codes : int, optional
        Number of categories (default: ``max(codes) + 1``).

    Returns
    -------
    DensityGrid

    Examples
    --------
    >>> g = density_grid([[0, 0], [1, 1], [1, 1]], bins=2, codes=[0, 1, 0])
    >>> g.counts.shape, g.total.tolist(), g.counts[1, 1].tolist()
    ((2, 2, 2), [[1, 0], [0, 2]], [1, 1])
    """
    func = "density_grid"
    xy = _as_xy(xy, func)
    bins = v.check_int(bins, "bins", func, low=1, high=4096)
    n = len(xy)
    if codes is None:
        codes_arr = np.zeros(n, dtype=np.int64)
        n_codes = 1
    else:
        codes_arr = np.asarray(codes).astype(np.int64, copy=False).ravel()
        if len(codes_arr) != n or (n and codes_arr.min() < 0):
            raise ValueError(f"The 'codes' parameter of {func} must hold one category ≥ 0 per row of xy.")
        n_codes = (
            int(codes_arr.max(initial=-1) + 1) if n_codes is None else v.check_int(n_codes, "n_codes", func, low=1)
        )
        if n and codes_arr.max() >= n_codes:
            raise ValueError(f"The 'codes' parameter of {func} must be below n_codes ({n_codes}).")
        n_codes = max(n_codes, 1)
    x_edges, y_edges, keep, flat_bin = _bins(xy, bins, extent, func)
    flat = flat_bin * n_codes + codes_arr[keep]
    counts = np.bincount(flat, minlength=bins * bins * n_codes).reshape(bins, bins, n_codes)
    return DensityGrid(counts, x_edges, y_edges, int(keep.sum()))


def _bins(
    xy: NDArray, bins: int, extent: tuple[float, float, float, float] | None, func: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.int64]]:
    """The bin edges of a density image, which rows fall inside it, and each such row's flat bin (y-major)."""
    x, y = np.asarray(xy[:, 0], dtype=np.float64), np.asarray(xy[:, 1], dtype=np.float64)
    if extent is None:
        finite = np.isfinite(x) & np.isfinite(y)
        x0, x1 = (float(x[finite].min()), float(x[finite].max())) if finite.any() else (0.0, 1.0)
        y0, y1 = (float(y[finite].min()), float(y[finite].max())) if finite.any() else (0.0, 1.0)
    else:
        x0, x1, y0, y1 = (float(e) for e in extent)
        if not (np.isfinite([x0, x1, y0, y1]).all() and x1 >= x0 and y1 >= y0):
            raise ValueError(f"The 'extent' parameter of {func} must be finite (x0, x1, y0, y1) with x0 ≤ x1, y0 ≤ y1.")
    if x1 <= x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    if y1 <= y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    x_edges, y_edges = np.linspace(x0, x1, bins + 1), np.linspace(y0, y1, bins + 1)
    keep = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
    i = np.minimum(((x[keep] - x0) / (x1 - x0) * bins).astype(np.int64), bins - 1)
    j = np.minimum(((y[keep] - y0) / (y1 - y0) * bins).astype(np.int64), bins - 1)
    return x_edges, y_edges, keep, j * bins + i


@dataclass(frozen=True, eq=False)
class ValueGrid:
    """A per-row number averaged over the bins of a 2-D histogram (see :func:`density_values`).

    ``mean[j, i]`` is the mean value of the rows with a value in the bin (NaN where none has one), ``counts[j, i]``
    the rows in the bin (with or without a value) and ``n_valued[j, i]`` those with a value; the edges and
    ``n_rows`` are as in :class:`DensityGrid`.
    """

    mean: NDArray[np.float64]
    counts: NDArray[np.int64]
    n_valued: NDArray[np.int64]
    x_edges: NDArray[np.float64]
    y_edges: NDArray[np.float64]
    n_rows: int

    @property
    def x_centres(self) -> NDArray[np.float64]:
        """Centre of each column of bins."""
        return (self.x_edges[:-1] + self.x_edges[1:]) / 2

    @property
    def y_centres(self) -> NDArray[np.float64]:
        """Centre of each row of bins."""
        return (self.y_edges[:-1] + self.y_edges[1:]) / 2


def density_values(
    xy: ArrayLike,
    values: ArrayLike,
    *,
    bins: int = 200,
    extent: tuple[float, float, float, float] | None = None,
) -> ValueGrid:
    """The mean of a per-row number in each bin of the 2-D histogram of the rows' map positions.

    A 0/1 value gives the share of a bin's rows that have it (e.g. the rows containing a word); NaN values (a
    row without one, e.g. the predictability at removal of a kept row) are left out of the mean but counted in
    the bin. O(bins²) numbers whatever the rows; the bins are those of :func:`density_grid`.

    Parameters
    ----------
    xy : array-like of shape (n_rows, 2)
        Map coordinates.
    values : array-like of float, shape (n_rows,)
        One number per row (NaN: none).
    bins, extent
        As in :func:`density_grid`.

    Returns
    -------
    ValueGrid

    Examples
    --------
    >>> g = density_values([[0, 0], [1, 1], [1, 1], [1, 1]], [1.0, 0.0, 1.0, float("nan")], bins=2)
    >>> float(g.mean[1, 1]), g.counts.tolist(), int(g.n_valued[1, 1])
    (0.5, [[1, 0], [0, 3]], 2)
    """
    func = "density_values"
    xy = _as_xy(xy, func)
    bins = v.check_int(bins, "bins", func, low=1, high=4096)
    vals = np.asarray(values, dtype=np.float64).ravel()
    if len(vals) != len(xy):
        raise ValueError(f"The 'values' parameter of {func} must hold one number per row of xy.")
    x_edges, y_edges, keep, flat = _bins(xy, bins, extent, func)
    kept = vals[keep]
    valued = ~np.isnan(kept)
    size = bins * bins
    counts = np.bincount(flat, minlength=size).reshape(bins, bins)
    n_valued = np.bincount(flat[valued], minlength=size).reshape(bins, bins)
    sums = np.bincount(flat[valued], weights=kept[valued], minlength=size).reshape(bins, bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n_valued > 0, sums / np.maximum(n_valued, 1), np.nan)
    return ValueGrid(mean, counts, n_valued, x_edges, y_edges, int(keep.sum()))


def _import_umap() -> Any:
    """umap-learn, imported on first use (heavy: it loads numba)."""
    try:
        import umap
    except ImportError as exc:  # pragma: no cover - umap-learn is installed with the app extra
        raise ImportError(UMAP_INSTALL_HINT) from exc
    return umap
