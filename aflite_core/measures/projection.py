"""Two-dimensional maps of a feature matrix Φ(X): PCA, UMAP, and what a map of every row needs at scale.

PCA is fast and shown at once; UMAP keeps neighbourhoods but its first fit in a process compiles with numba.
On large data both place every row: PCA's axes are fitted on a seeded sample and every row is projected
(:func:`pca_2d_all`); UMAP is fitted on a seeded sample and applied to the other rows with its ``transform``
(:func:`umap_2d_all`). Such a map is drawn as a 2-D histogram and a selection on it is evaluated over every row
from its geometry: :mod:`aflite_core.measures.map_grids`.
Pure numpy / scikit-learn / umap-learn: nothing here plots, caches or knows about Streamlit.

=====================================  ======================================================================
what                                   function
=====================================  ======================================================================
seeded, sorted sample of row positions :func:`sample_rows`
first two principal components         :func:`pca_2d` (with the share of variance of each axis)
UMAP to two dimensions                 :func:`umap_2d` (seeded; the first fit in a process compiles with numba)
PCA of every row, axes from a sample   :func:`pca_2d_all` (projected in chunks)
UMAP fitted on a sample, every row     :func:`umap_2d_all` (``transform`` in chunks, with progress and stop)
=====================================  ======================================================================

The app's Embedding map shows :func:`pca_2d` first and swaps in :func:`umap_2d` once its fit is done.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _child_process
from .. import _validation as v
from .._utils import blas_threads

__all__ = [
    "PCA_FIT_ROWS",
    "UMAP_INSTALL_HINT",
    "UMAP_MIN_ROWS",
    "pca_2d",
    "pca_2d_all",
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
    stop: Callable[[], bool] | None = None,
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
    stop : callable, optional
        ``stop() -> bool``: with it the fit and the transforms run in a child process
        (:class:`aflite_core._child_process.Worker`, the same seeded result) that ``stop()`` ends within a
        fraction of a second, raising :class:`~aflite_core._child_process.ChildStopped`; where no child process
        can be started, ``stop()`` is asked between the fit and every chunk here instead.

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
        xy = _child_process.run_stoppable(
            umap_2d, X, n_neighbors=n_neighbors, min_dist=min_dist, random_state=seed, stop=stop, what="the UMAP fit"
        )
        if progress is not None:
            progress(n, n)
        return xy, rows
    n_neighbors = v.check_int(n_neighbors, "n_neighbors", func, low=2)
    min_dist = v.check_probability(min_dist, "min_dist", func)
    if stop is not None:
        v.check_optional_callable(stop, "stop", func)
    xy = np.zeros((n, 2), dtype=np.float32)
    rest = np.ones(n, dtype=bool)
    rest[rows] = False
    others = np.flatnonzero(rest)
    sample = np.asarray(X[rows], dtype=np.float32)
    worker = None
    if stop is not None and _child_process.ENABLED:
        worker = _child_process.Worker(_umap_fitted, sample, n_neighbors, min_dist, seed, what="the UMAP fit")
    try:
        reducer = None
        if worker is not None:
            try:
                xy[rows] = worker.call(_umap_embedding, stop=stop)
            except _child_process.NoChildProcess:
                worker = None
        if worker is None:
            _stop_check(stop)
            reducer = _umap_fitted(sample, n_neighbors, min_dist, seed)
            xy[rows] = _umap_embedding(reducer)
        del sample
        done = len(rows)
        if progress is not None:
            progress(done, n)
        for start in range(0, len(others), chunk_rows):
            part = others[start : start + chunk_rows]
            chunk = np.asarray(X[part], dtype=np.float32)
            if worker is not None:
                xy[part] = worker.call(_umap_transform, chunk, stop=stop)
            else:
                _stop_check(stop)
                xy[part] = _umap_transform(reducer, chunk)
            done += len(part)
            if progress is not None:
                progress(done, n)
    finally:
        if worker is not None:
            worker.close()
    return xy, rows


def _stop_check(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise _child_process.ChildStopped("the UMAP fit was stopped.")


def _umap_fitted(sample: NDArray[np.float32], n_neighbors: int, min_dist: float, seed: Any) -> tuple[Any, Any]:
    """A UMAP reducer fitted on ``sample`` and the sample's coordinates: ``(reducer, xy)``."""
    umap = _import_umap()
    reducer = umap.UMAP(
        n_components=2, n_neighbors=n_neighbors, min_dist=min_dist, init="pca", random_state=seed, n_jobs=1
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xy = reducer.fit_transform(sample)
    return reducer, xy


def _umap_embedding(fitted: tuple[Any, Any]) -> NDArray[np.float32]:
    """The fitted sample's coordinates (float32) from :func:`_umap_fitted`'s pair."""
    return np.asarray(fitted[1], dtype=np.float32)


def _umap_transform(fitted: tuple[Any, Any], chunk: NDArray[np.float32]) -> NDArray[np.float32]:
    """The fitted reducer's ``transform(chunk)`` as float32 (UMAP's warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(fitted[0].transform(chunk), dtype=np.float32)


def _import_umap() -> Any:
    """umap-learn, imported on first use (heavy: it loads numba)."""
    try:
        import umap
    except ImportError as exc:  # pragma: no cover - umap-learn is installed with the app extra
        raise ImportError(UMAP_INSTALL_HINT) from exc
    return umap
