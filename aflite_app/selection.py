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
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aflite_core._validation import MAX_NUMBER_CHARS, bounded_float
from aflite_core.measures.map_grids import points_in_box, points_in_polygon

__all__ = [
    "COMPACT_FORMS",
    "MAX_LASSO_VERTICES",
    "MAX_LINKED_POINTS",
    "MapSelection",
    "Shape",
    "after_event",
    "cleared",
    "compact",
    "decode_shapes",
    "encode_shapes",
    "for_figure",
    "geometry_of",
    "redrawn",
    "restored",
    "rows_in_geometry",
    "rows_in_shapes",
    "selected_rows",
]


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for mappings, ``obj.key`` for attribute objects, None when absent."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


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


def _numbers(values: Any) -> NDArray[np.float64] | None:
    """A list of coordinates from the browser as floats, or None when it is not a list of finite numbers."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        return None
    try:
        out = np.asarray(list(values), dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return out if out.ndim == 1 and np.isfinite(out).all() else None


#: a lasso keeps at most this many vertices (evenly spaced along the drawn outline): the selection's link stays short
MAX_LASSO_VERTICES = 256
#: the compact forms a selection's link tries first, shortest first: (vertices per lasso at most, significant digits);
#: the first that selects exactly the rows of the drawn geometry is kept (else the drawn one, full precision)
COMPACT_FORMS = ((48, 4), (96, 5), (192, 6), (MAX_LASSO_VERTICES, 8))
#: shapes of one selection kept at most (boxes and lassos drawn with Shift)
MAX_SHAPES = 4
#: rows clicked one by one that a link carries at most (a larger click selection is not put in the URL)
MAX_LINKED_POINTS = 50

#: one box or lasso: ``("box", (x0, x1), (y0, y1))`` or ``("lasso", xs, ys)`` in map coordinates
Shape = tuple[str, tuple[float, ...], tuple[float, ...]]


def _text(value: float, digits: int | None = None) -> str:
    """``value`` as link text: ``digits`` significant digits (None: every digit it needs), never an exponent.

    At most 20 characters (what a link's number may have, :data:`aflite_core._validation.MAX_NUMBER_CHARS`): a
    value that needs more (tiny or huge) gets fewer digits.
    """
    text = np.format_float_positional(float(value), precision=digits, unique=True, fractional=False, trim="-")
    digits = 17 if digits is None else digits
    while len(text) > MAX_NUMBER_CHARS and digits > 1:
        digits -= 1
        text = np.format_float_positional(float(value), precision=digits, unique=True, fractional=False, trim="-")
    return text


def _rounded(value: float, digits: int | None = None) -> float:
    """``value`` exactly as its link text (:func:`_text`) reads back."""
    return float(_text(value, digits))


def _shape(
    kind: str,
    sx: NDArray[np.float64],
    sy: NDArray[np.float64],
    max_vertices: int = MAX_LASSO_VERTICES,
    digits: int | None = None,
) -> Shape | None:
    """A box or lasso as kept and linked: coordinates to ``digits`` digits, a lasso thinned to ``max_vertices``."""
    sx, sy = np.asarray(sx, dtype=np.float64), np.asarray(sy, dtype=np.float64)
    if kind == "box":
        if len(sx) != 2 or len(sy) != 2:
            return None
        return ("box", tuple(_rounded(v, digits) for v in sorted(sx)), tuple(_rounded(v, digits) for v in sorted(sy)))
    if len(sx) >= 2 and sx[0] == sx[-1] and sy[0] == sy[-1]:
        sx, sy = sx[:-1], sy[:-1]
    if len(sx) < 3 or len(sx) != len(sy):
        return None
    if len(sx) > max_vertices:
        keep = np.unique(np.linspace(0, len(sx) - 1, max_vertices).round().astype(np.intp))
        sx, sy = sx[keep], sy[keep]
    return ("lasso", tuple(_rounded(v, digits) for v in sx), tuple(_rounded(v, digits) for v in sy))


def geometry_of(event: Any) -> tuple[Shape, ...] | None:
    """The boxes and lassos of a Plotly chart event as drawn (None when it holds none).

    At most :data:`MAX_SHAPES` shapes; a lasso of more than :data:`MAX_LASSO_VERTICES` vertices is thinned to that
    many (evenly spaced along its outline). :func:`compact` then finds the shortest form a link can carry.

    Examples
    --------
    >>> geometry_of({"selection": {"box": [{"x": [2.5, -1], "y": [0, 1]}], "lasso": []}})
    (('box', (-1.0, 2.5), (0.0, 1.0)),)
    >>> geometry_of({"selection": {"points": [{"customdata": 1}]}}) is None
    True
    """
    selection = _get(event, "selection")
    if selection is None and (_get(event, "box") is not None or _get(event, "lasso") is not None):
        selection = event
    shapes: list[Shape] = []
    for kind in ("box", "lasso"):
        drawn = _get(selection, kind) or []
        if isinstance(drawn, (str, bytes, Mapping)) or not isinstance(drawn, Iterable):
            continue
        for item in drawn:
            sx, sy = _numbers(_get(item, "x")), _numbers(_get(item, "y"))
            if sx is None or sy is None or len(sx) != len(sy) or len(sx) < 2:
                continue
            shape = _shape(kind, sx, sy)
            if shape is not None and len(shapes) < MAX_SHAPES:
                shapes.append(shape)
    return tuple(shapes) or None


def compact(shapes: Iterable[Shape], xy: NDArray) -> tuple[Shape, ...]:
    """The shortest form of ``shapes`` that selects exactly the same rows of ``xy``, for the link.

    Tries each of :data:`COMPACT_FORMS` (a lasso thinned to 48 vertices with 4 significant digits, then 96 with 5,
    192 with 6, every vertex with 8)
    and keeps the first whose rows equal those of ``shapes``; otherwise ``shapes`` themselves (every digit). The
    rows selected in the session are those of the form kept, so a link that carries it selects the same rows.

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]])
    >>> compact([("box", (-1.0000001, 2.0000001), (-1.0, 2.0))], xy)
    (('box', (-1.0, 2.0), (-1.0, 2.0)),)
    >>> compact([("box", (0.0, 0.99999), (0.0, 1.0))], xy)  # 4 digits would take row 1 in: kept as drawn
    (('box', (0.0, 0.99999), (0.0, 1.0)),)
    """
    shapes = tuple(shapes)
    rows = rows_in_shapes(shapes, xy)
    for max_vertices, digits in COMPACT_FORMS:
        form = tuple(_shape(kind, np.asarray(sx), np.asarray(sy), max_vertices, digits) for kind, sx, sy in shapes)
        if all(f is not None for f in form) and rows_in_shapes(form, xy) == rows:
            return form
    return shapes


def rows_in_shapes(shapes: Iterable[Shape], xy: NDArray) -> list[int]:
    """Row positions inside any of the shapes (their union), evaluated over every row of ``xy``, sorted.

    Uses :func:`aflite_core.measures.projection.points_in_box` and
    :func:`~aflite_core.measures.projection.points_in_polygon` (vectorised over all rows).
    """
    inside = np.zeros(len(xy), dtype=bool)
    for kind, sx, sy in shapes:
        inside |= points_in_box(xy, sx, sy) if kind == "box" else points_in_polygon(xy, sx, sy)
    return np.flatnonzero(inside).tolist()


def encode_shapes(shapes: Iterable[Shape]) -> str:
    """A selection's shapes as link text: ``b<x0>_<x1>_<y0>_<y1>`` per box, ``l<x>_<y>_<x>_<y>…`` per lasso.

    Only characters a URL never escapes (letters, digits, ``-``, ``.``, ``_``).

    Examples
    --------
    >>> encode_shapes([("box", (-1.0, 2.5), (0.0, 1.0)), ("lasso", (0.0, 1.0, 1.0), (0.0, 0.0, 1.0))])
    'b-1_2.5_0_1l0_0_1_0_1_1'
    """
    parts = []
    for kind, sx, sy in shapes:
        if kind == "box":
            numbers = [sx[0], sx[1], sy[0], sy[1]]
        else:
            numbers = [v for pair in zip(sx, sy) for v in pair]
        parts.append(("b" if kind == "box" else "l") + "_".join(_text(v) for v in numbers))  # exact: no rounding
    return "".join(parts)


def decode_shapes(text: str) -> tuple[Shape, ...]:
    """The shapes of :func:`encode_shapes`' text; ValueError (one sentence) for text that is not such shapes.

    At most :data:`MAX_SHAPES` shapes and :data:`MAX_LASSO_VERTICES` vertices per lasso are read; every number
    goes through :func:`aflite_core._validation.bounded_float` (finite, at most 20 characters).

    Examples
    --------
    >>> decode_shapes("b-1_2.5_0_1")
    (('box', (-1.0, 2.5), (0.0, 1.0)),)
    """
    text = str(text)
    limit = MAX_SHAPES * (2 * MAX_LASSO_VERTICES * 21 + 1)  # every number at most 20 characters and a separator
    if not text or len(text) > limit or text[0] not in "bl":
        raise ValueError("The link's map selection is not a box or lasso this page can read.")
    shapes: list[Shape] = []
    for kind, body in re.findall(r"([bl])([^bl]*)", text)[:MAX_SHAPES]:
        numbers = [bounded_float(t, -1e12, 1e12, what="A coordinate of the link's selection") for t in body.split("_")]
        xs, ys = np.asarray(numbers[0::2]), np.asarray(numbers[1::2])
        if kind == "b":
            if len(numbers) != 4:
                raise ValueError("The link's map selection has a box without exactly four numbers.")
            xs, ys = np.asarray(numbers[:2]), np.asarray(numbers[2:])
        elif len(numbers) % 2:
            raise ValueError("The link's map selection has a lasso with an odd count of numbers.")
        shape = _shape("box" if kind == "b" else "lasso", xs, ys)
        if shape is None:
            raise ValueError("The link's map selection has a lasso of fewer than three points.")
        shapes.append(shape)
    return tuple(shapes)


def rows_in_geometry(event: Any, xy: NDArray | None) -> list[int] | None:
    """Row positions inside the boxes and lassos of a Plotly chart event, evaluated over every row of ``xy``.

    Parameters
    ----------
    event : mapping or object, optional
        What ``st.plotly_chart(..., on_select="rerun")`` returned, or its ``selection`` part.
    xy : ndarray of shape (n_rows, 2), optional
        Every row's map coordinates (row position = index).

    Returns
    -------
    list of int or None
        The rows inside any of the event's boxes or lassos (their union, as :func:`geometry_of` keeps them),
        sorted; None when the event holds no usable geometry (a click, an empty or malformed selection) or
        ``xy`` is None.

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]])
    >>> rows_in_geometry({"selection": {"box": [{"x": [-1, 2], "y": [-1, 2]}], "lasso": []}}, xy)
    [0, 1]
    >>> rows_in_geometry({"selection": {"lasso": [{"x": [4, 6, 6, 4], "y": [4, 4, 6, 6]}]}}, xy)
    [2]
    >>> rows_in_geometry({"selection": {"points": [{"customdata": 1}]}}, xy) is None
    True
    """
    if xy is None:
        return None
    shapes = geometry_of(event)
    return None if shapes is None else rows_in_shapes(shapes, xy)


@dataclass(frozen=True)
class MapSelection:
    """The rows selected on the map, kept across changes of the figure.

    Streamlit identifies a chart by its figure, so a new colouring or projection is a new chart whose
    selection starts empty. The page therefore keeps the selection itself.

    Attributes
    ----------
    signature : hashable
        What the figure shows (e.g. run, colour, projection).
    rows : tuple of int
        The selected rows the page lists.
    baked : tuple of int
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
    rows: tuple[int, ...] = ()
    baked: tuple[int, ...] = ()
    touched: bool = False
    revision: int = 0
    shapes: tuple[Shape, ...] = ()
    drawn_on: str | None = None
    clicked: tuple[int, ...] = ()


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
    if shapes is not None:
        shapes = compact(shapes, xy)
        inside = rows_in_shapes(shapes, xy)
        rows = tuple(sorted(set(inside).union(clicked))) if clicked else tuple(inside)
        rows = tuple(r for r in rows if n_rows is None or r < n_rows)
    else:
        rows = clicked
    if rows:
        return replace(state, rows=rows, touched=True, shapes=shapes or (), drawn_on=drawn_on, clicked=clicked)
    if state.touched:
        return replace(state, rows=(), touched=False, shapes=(), drawn_on=None, clicked=())
    return state


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
    rows = tuple(sorted(set(rows_in_shapes(shapes, xy)).union(points)))
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
    return MapSelection(state.signature, (), (), False, state.revision + 1)
