"""The geometry of a 2-D map over all of its rows: which rows a box or a lasso holds, and 2-D histograms.

A map of every row (:mod:`aflite_core.measures.projection`) is drawn as a 2-D histogram (:func:`density_grid`,
per category; :func:`density_values`, a per-row number's mean per bin), and a selection drawn on it is evaluated
over every row from its geometry (:func:`points_in_polygon`, :func:`points_in_box`). Pure numpy: O(bins²)
numbers whatever the rows.

=====================================  ======================================================================
what                                   function
=====================================  ======================================================================
rows inside a lasso / a box            :func:`points_in_polygon` / :func:`points_in_box` (vectorised numpy)
2-D histogram of the map, per category :func:`density_grid` (O(bins²) numbers, whatever the rows)
a per-row number's mean per map bin    :func:`density_values` (a 0/1 number: the share of each bin's rows)
=====================================  ======================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v

__all__ = [
    "DensityGrid",
    "ValueGrid",
    "density_grid",
    "density_values",
    "points_in_box",
    "points_in_polygon",
    "polygon_parity",
]


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
    flip = polygon_parity(xs, ys, px, py)
    inside[box[order[flip]]] = True
    return inside


def polygon_parity(xs: NDArray, ys: NDArray, px: NDArray, py: NDArray) -> NDArray[np.bool_]:
    """Even-odd rule for points sorted by y: True where the polygon's edges cross to a point's right oddly often.

    For points within the polygon's y range that is "inside". ``ys`` ascending, ``xs`` the same points' x; ``px``,
    ``py`` the polygon's vertices (not closed). Each edge touches only the points in its own y band (two binary
    searches), so a lasso costs a pass over the points near each edge, not over every point per edge.
    """
    flip = np.zeros(len(ys), dtype=bool)
    for ax, ay, bx, by in zip(px, py, np.roll(px, -1), np.roll(py, -1)):
        if ay == by:  # a horizontal edge crosses no horizontal ray
            continue
        a, b = np.searchsorted(ys, min(ay, by), "left"), np.searchsorted(ys, max(ay, by), "left")
        if a == b:
            continue
        cross = ax + (ys[a:b] - ay) * ((bx - ax) / (by - ay))
        flip[a:b] ^= xs[a:b] < cross
    return flip


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
