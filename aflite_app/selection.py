"""Selections on the Embedding map, as pure functions (no Streamlit): an event or a linked geometry -> row positions.

``st.plotly_chart(..., on_select="rerun")`` and ``aflite_app.plotly_once.plotly_chart`` (the map's chart, drawn
once per change) return ``{"selection": {"points": [...], "point_indices": [...], "box": [...], "lasso": [...]}}``.
``point_indices`` are per trace (one trace per colour), so they do not index the data; the map puts each point's
row position in ``customdata`` and :func:`selected_rows` reads it back from ``points`` (a click). A box or lasso
also arrives as its geometry, in data coordinates, even on a figure with no points at all (checked in Chromium
against Streamlit 1.67 on a heatmap-only figure):
``"box": [{"xref": "x", "yref": "y", "x": [x0, x1], "y": [y0, y1]}]`` and
``"lasso": [{"xref": "x", "yref": "y", "x": [...], "y": [...]}]`` (the closed polygon's vertices);
:func:`rows_in_geometry` evaluates that geometry over every row's map coordinates, so a selection on the density
map of 550,000 rows needs no per-point data from the browser.
:mod:`aflite_app.map_table` lists the rows found here (thumbnails, text columns, counts per class).

The selected rows are kept as :class:`Rows`: one read-only numpy array of sorted row positions, found once when the
box or lasso arrives (a boolean mask over every row, :func:`mask_in_shapes`). A box over 418,000 of 550,000 rows
is then 3.3 MB in one array, never 418,000 Python ints in the session's state, and a rerun of the page reads it
without a Python loop over the rows (issue 25).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .map_shapes import (  # noqa: F401 (re-exported: the shapes belong to the selection's API)
    COMPACT_FORMS,
    MAX_LASSO_VERTICES,
    MAX_LINKED_POINTS,
    MAX_SHAPES,
    Shape,
    _get,
    compact,
    compact_with_mask,
    decode_shapes,
    encode_shapes,
    geometry_of,
    mask_in_shapes,
    prepare_lasso,
    rows_in_geometry,
    rows_in_shapes,
)

__all__ = [
    "COMPACT_FORMS",
    "MAX_LASSO_VERTICES",
    "MAX_LINKED_POINTS",
    "MapSelection",
    "Rows",
    "Shape",
    "after_event",
    "cleared",
    "compact",
    "decode_shapes",
    "encode_shapes",
    "for_figure",
    "geometry_of",
    "mask_in_shapes",
    "prepare_lasso",
    "redrawn",
    "restored",
    "rows_in_geometry",
    "rows_in_shapes",
    "selected_rows",
]


class Rows:
    """Sorted, distinct row positions in one read-only numpy array: a selection of any size, kept compactly.

    Behaves as the tuple of those positions (length, iteration as Python ints, indexing, ``in``, equality with a
    tuple or list of ints, ``repr``) and as an array (``np.asarray(rows)``, :attr:`array`), without holding one
    Python int per row. Hashable (by content), so a :class:`MapSelection` holding it stays hashable.

    Examples
    --------
    >>> r = Rows([8, 3, 3])
    >>> r, len(r), r == (3, 8), list(r), 8 in r
    ((3, 8), 2, True, [3, 8], True)
    >>> Rows.of_mask(np.array([False, True, True])).array
    array([1, 2])
    >>> bool(Rows()), Rows() == ()
    (False, True)
    """

    __slots__ = ("_array", "_hash")

    def __init__(self, rows: Iterable[int] | NDArray | None = None) -> None:
        if rows is None:
            a = np.zeros(0, dtype=np.intp)
        elif isinstance(rows, Rows):
            a = rows._array
        else:
            src = rows if isinstance(rows, np.ndarray) else np.fromiter((int(r) for r in rows), dtype=np.int64)
            a = np.asarray(src, dtype=np.intp).ravel()
            if len(a) > 1 and not bool(np.all(a[1:] > a[:-1])):  # sorted and distinct already: no sort
                a = np.unique(a)
            if a.base is not None or a.flags.writeable:
                a = a.copy()
        a.flags.writeable = False
        self._array: NDArray[np.intp] = a
        self._hash: int | None = None

    @classmethod
    def of_mask(cls, mask: NDArray[np.bool_]) -> Rows:
        """The positions where ``mask`` is True."""
        out = cls.__new__(cls)
        a = np.flatnonzero(mask).astype(np.intp, copy=False)
        a.flags.writeable = False
        out._array, out._hash = a, None
        return out

    @property
    def array(self) -> NDArray[np.intp]:
        """The positions as a read-only 1-D integer array (no copy)."""
        return self._array

    def below(self, n_rows: int) -> Rows:
        """The positions under ``n_rows`` (a selection left over from a larger dataset loses the others)."""
        if not len(self._array) or self._array[-1] < n_rows:
            return self
        return Rows(self._array[: int(np.searchsorted(self._array, max(int(n_rows), 0)))])

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NDArray:
        return self._array if dtype is None else self._array.astype(dtype)

    def __len__(self) -> int:
        return len(self._array)

    def __iter__(self) -> Iterator[int]:
        return iter(self._array.tolist())

    def __getitem__(self, index: int | slice) -> int | Rows:
        if isinstance(index, slice):
            return Rows(self._array[index])
        return int(self._array[index])

    def __contains__(self, row: object) -> bool:
        try:
            value = int(row)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return False
        i = int(np.searchsorted(self._array, value))
        return i < len(self._array) and int(self._array[i]) == value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rows):
            return self is other or bool(np.array_equal(self._array, other._array))
        if isinstance(other, tuple | list):
            return len(other) == len(self._array) and list(other) == self._array.tolist()
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            digest = hashlib.blake2b(np.ascontiguousarray(self._array, dtype=np.int64).tobytes(), digest_size=8)
            self._hash = hash((len(self._array), digest.digest()))
        return self._hash

    def __repr__(self) -> str:
        if len(self._array) > 20:
            return f"Rows({len(self._array):,} rows from {self._array[0]} to {self._array[-1]})"
        return repr(tuple(self._array.tolist()))

    def __reduce__(self) -> tuple:
        return (Rows, (self._array,))


#: no rows selected
NO_ROWS = Rows()


def _row_of(customdata: Any) -> int | None:
    """The row position carried in a point's customdata: a scalar, or the first item of a list.

    A row of a 2-D typed array arrives from the browser as ``{"0": 7}`` (a JSON-encoded typed array): its
    item "0" is taken.
    """
    value = customdata
    while isinstance(value, (list, tuple, np.ndarray, Mapping)):
        if len(value) == 0:
            return None
        if isinstance(value, Mapping):
            value = value.get("0", value.get(0, next(iter(value.values()))))
        else:
            value = value[0]
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not np.isfinite(number) or number != int(number) or number < 0:
        return None
    return int(number)


def selected_rows(event: Any, *, n_rows: int | None = None) -> list[int]:
    """Row positions of the selected points of a Plotly chart event, sorted and without duplicates.

    Parameters
    ----------
    event : mapping or object, optional
        What ``st.plotly_chart(..., on_select="rerun")`` returned (``{"selection": {"points": [...]}}``), or
        its ``selection`` part. Missing keys, ``None`` and empty selections give an empty list.
    n_rows : int, optional
        Drop positions outside ``[0, n_rows)`` (a selection left over from another dataset).

    Returns
    -------
    list of int
        Positions read from each point's ``customdata`` (a number, or the first item of a list or of a
        ``{"0": ...}`` typed-array object), over all traces. Points without customdata are ignored;
        ``point_indices`` are never used (they count within each trace).

    Examples
    --------
    >>> event = {"selection": {"points": [{"curve_number": 1, "point_index": 0, "customdata": [7]},
    ...                                   {"curve_number": 0, "point_index": 0, "customdata": [3]}],
    ...                        "point_indices": [0], "box": [], "lasso": []}}
    >>> selected_rows(event)
    [3, 7]
    >>> selected_rows({}), selected_rows(None)
    ([], [])
    """
    selection = _get(event, "selection")
    if selection is None and _get(event, "points") is not None:
        selection = event
    points = _get(selection, "points") or []
    if isinstance(points, Mapping) or not isinstance(points, Iterable):
        return []
    rows = set()
    for point in points:
        row = _row_of(_get(point, "customdata"))
        if row is None or (n_rows is not None and row >= n_rows):
            continue
        rows.add(row)
    return sorted(rows)


@dataclass(frozen=True)
class MapSelection:
    """The rows selected on the map, kept across changes of the figure.

    Streamlit identifies a chart by its figure, so a new colouring or projection is a new chart whose
    selection starts empty. The page therefore keeps the selection itself.

    Attributes
    ----------
    signature : hashable
        What the figure shows (e.g. run, colour, projection).
    rows : Rows
        The selected rows the page lists (sorted positions in one read-only array; compares equal to the tuple
        of those positions).
    baked : Rows
        Rows drawn as selected in the figure: the selection carried over when the figure changed. Fixed while
        the figure stays, so the chart keeps its identity (and the user's next selection on it).
    touched : bool
        True when ``rows`` were selected on the current figure (the chart itself holds that selection).
    revision : int
        Bumped by :func:`cleared`; the page puts it in the figure, so clearing makes a new chart.
    shapes : tuple of Shape
        The boxes and lassos that selected ``rows`` (as :func:`geometry_of` keeps them), for the link.
    drawn_on : str or None
        The projection ("PCA", "UMAP") those shapes were drawn on.
    clicked : tuple of int
        Rows clicked one by one (no geometry), for the link.
    """

    signature: Hashable = None
    rows: Rows = NO_ROWS
    baked: Rows = NO_ROWS
    touched: bool = False
    revision: int = 0
    shapes: tuple[Shape, ...] = ()
    drawn_on: str | None = None
    clicked: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("rows", "baked"):  # rows given as a tuple or list (a test, an older state) kept as Rows
            if not isinstance(getattr(self, name), Rows):
                object.__setattr__(self, name, Rows(getattr(self, name)))


def for_figure(state: MapSelection | None, signature: Hashable) -> MapSelection:
    """The selection state for the figure about to be drawn: a new figure carries the current rows over.

    Examples
    --------
    >>> s = for_figure(None, "status")
    >>> s = after_event(s, {"selection": {"points": [{"customdata": 4}]}})
    >>> for_figure(s, "status") == s, for_figure(s, "class").baked
    (True, (4,))
    """
    if state is None:
        return MapSelection(signature)
    if state.signature != signature:
        return replace(state, signature=signature, baked=state.rows, touched=False)
    return state


def after_event(
    state: MapSelection | None,
    event: Any,
    *,
    n_rows: int | None = None,
    xy: NDArray | None = None,
    drawn_on: str | None = None,
) -> MapSelection:
    """The state after the chart reported a selection (``on_select`` callback).

    With ``xy`` (every row's map coordinates) a box or lasso selects every row inside it
    (:func:`rows_in_geometry`), whether or not the figure drew that row; clicked points (no geometry) are read
    from their ``customdata``.

    A non-empty selection replaces the rows. An empty one clears them only when the current figure held a
    selection of its own (``touched``): Streamlit's chart sends "nothing selected" only when its own value was
    non-empty, so an empty event for a figure that only shows a carried-over selection is a stale event of an
    earlier figure (seen when the figure is redrawn) and is ignored.
    """
    state = state if state is not None else MapSelection()
    shapes = geometry_of(event) if xy is not None else None
    clicked = tuple(selected_rows(event, n_rows=n_rows))
    if shapes is not None:  # one mask over every row (numpy): no Python loop over the rows inside
        shapes, inside = compact_with_mask(shapes, xy)
        if clicked:
            inside = _with_rows(inside, clicked)
        rows = Rows.of_mask(inside if n_rows is None else inside[: max(int(n_rows), 0)])
    else:
        rows = Rows(clicked)
    if rows:
        return replace(state, rows=rows, touched=True, shapes=shapes or (), drawn_on=drawn_on, clicked=clicked)
    if state.touched:
        return replace(state, rows=NO_ROWS, touched=False, shapes=(), drawn_on=None, clicked=())
    return state


def _with_rows(mask: NDArray[np.bool_], rows: Iterable[int]) -> NDArray[np.bool_]:
    """``mask`` with ``rows`` (positions inside it) set too, as a new mask."""
    idx = np.asarray(list(rows), dtype=np.intp)
    out = mask.copy()
    out[idx[(idx >= 0) & (idx < len(out))]] = True
    return out


def restored(
    state: MapSelection | None,
    shapes: Iterable[Shape],
    clicked: Iterable[int],
    *,
    xy: NDArray,
    drawn_on: str | None,
) -> MapSelection:
    """The selection a link carried, evaluated over every row of ``xy`` (the projection it was drawn on).

    The rows are drawn as selected (``baked``), as for a selection carried over to a new figure.

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]])
    >>> restored(None, [("box", (-1.0, 2.0), (-1.0, 2.0))], [2], xy=xy, drawn_on="PCA").rows
    (0, 1, 2)
    """
    state = state if state is not None else MapSelection()
    shapes = tuple(shapes)
    n = len(xy)
    points = tuple(sorted({int(r) for r in clicked if 0 <= int(r) < n}))
    rows = Rows.of_mask(_with_rows(mask_in_shapes(shapes, xy), points))
    return replace(state, rows=rows, baked=rows, touched=False, shapes=shapes, drawn_on=drawn_on, clicked=points)


def redrawn(state: MapSelection | None) -> MapSelection:
    """The state for a new figure of the same map (zoomed in or out): its rows drawn as selected.

    The rows become ``baked``; the new chart holds no selection of its own (so a stale empty event of the old chart
    is ignored).

    Examples
    --------
    >>> s = after_event(for_figure(None, "status"), {"selection": {"points": [{"customdata": 4}]}})
    >>> r = redrawn(s)
    >>> r.rows, r.baked, r.touched
    ((4,), (4,), False)
    """
    state = state if state is not None else MapSelection()
    return replace(state, baked=state.rows, touched=False)


def cleared(state: MapSelection | None) -> MapSelection:
    """No rows selected, and a new figure revision so the chart drops its own selection too."""
    state = state if state is not None else MapSelection()
    return MapSelection(state.signature, NO_ROWS, NO_ROWS, False, state.revision + 1)
