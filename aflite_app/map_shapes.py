"""Box and lasso shapes on the Embedding map: geometry from a chart event, the rows inside it, its link text.

Pure functions (no Streamlit), split from :mod:`aflite_app.selection` (which keeps the selected rows and re-exports
these names). A shape is ``("box", (x0, x1), (y0, y1))`` or ``("lasso", xs, ys)`` in map coordinates
(:data:`Shape`); :func:`geometry_of` reads the shapes of a ``st.plotly_chart`` selection event,
:func:`mask_in_shapes` / :func:`rows_in_shapes` evaluate them over every row (a lasso against the rows sorted by y
once per map, :func:`prepare_lasso`), :func:`compact` finds the shortest form that selects the same rows, and
:func:`encode_shapes` / :func:`decode_shapes` are their text in a link.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aflite_core._validation import MAX_NUMBER_CHARS, bounded_float
from aflite_core.measures.map_grids import points_in_box, points_in_polygon, polygon_parity

__all__ = [
    "COMPACT_FORMS",
    "MAX_LASSO_VERTICES",
    "MAX_LINKED_POINTS",
    "MAX_SHAPES",
    "Shape",
    "compact",
    "compact_with_mask",
    "decode_shapes",
    "encode_shapes",
    "geometry_of",
    "mask_in_shapes",
    "prepare_lasso",
    "rows_in_geometry",
    "rows_in_shapes",
]


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for mappings, ``obj.key`` for attribute objects, None when absent."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


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
    return compact_with_mask(tuple(shapes), xy)[0]


def compact_with_mask(shapes: tuple[Shape, ...], xy: NDArray) -> tuple[tuple[Shape, ...], NDArray[np.bool_]]:
    """:func:`compact`'s form and the mask of the rows it selects (those of ``shapes``): one mask per form tried."""
    inside = mask_in_shapes(shapes, xy)
    for max_vertices, digits in COMPACT_FORMS:
        form = tuple(_shape(kind, np.asarray(sx), np.asarray(sy), max_vertices, digits) for kind, sx, sy in shapes)
        if all(f is not None for f in form) and np.array_equal(mask_in_shapes(form, xy), inside):
            return form, inside
    return shapes, inside


def mask_in_shapes(shapes: Iterable[Shape], xy: NDArray) -> NDArray[np.bool_]:
    """Which rows of ``xy`` lie inside any of the shapes (their union): a boolean mask over every row.

    Uses :func:`aflite_core.measures.projection.points_in_box` and
    :func:`~aflite_core.measures.projection.points_in_polygon` (vectorised over all rows).

    Examples
    --------
    >>> mask_in_shapes([("box", (-1.0, 2.0), (-1.0, 2.0))], np.array([[0.0, 0.0], [5.0, 5.0]]))
    array([ True, False])
    """
    inside = np.zeros(len(xy), dtype=bool)
    for kind, sx, sy in shapes:
        inside |= points_in_box(xy, sx, sy) if kind == "box" else _in_polygon(xy, sx, sy)
    return inside


class _ByY:
    """Every row of one map sorted by y once: a lasso's edges then each test the rows of their own band of y."""

    def __init__(self, xy: NDArray) -> None:
        y = np.asarray(xy[:, 1], dtype=np.float64)
        self.order = np.argsort(y, kind="stable")
        self.ys = y[self.order]
        self.xs = np.asarray(xy[:, 0], dtype=np.float64)[self.order]


#: the last maps' rows sorted by y (id of the coordinates -> (weak reference, sorted)); a few MB each
_BY_Y: dict[int, tuple[weakref.ref, _ByY]] = {}
_BY_Y_LOCK = threading.Lock()
_BY_Y_KEPT = 2
#: maps whose rows :func:`prepare_lasso` is sorting now
_BY_Y_PENDING: set[int] = set()


def _by_y(xy: NDArray) -> _ByY:
    """``xy``'s rows sorted by y, computed once per map (the projection's coordinates stay the same array)."""
    with _BY_Y_LOCK:
        entry = _BY_Y.get(id(xy))
        if entry is not None and entry[0]() is xy:
            return entry[1]
    sorted_rows = _ByY(xy)
    try:
        ref = weakref.ref(xy)
    except TypeError:  # not an ndarray (a list): nothing to keep
        return sorted_rows
    with _BY_Y_LOCK:
        _BY_Y[id(xy)] = (ref, sorted_rows)
        for key in [k for k, (r, _) in _BY_Y.items() if r() is None] + list(_BY_Y)[:-_BY_Y_KEPT]:
            _BY_Y.pop(key, None)
    return sorted_rows


def prepare_lasso(xy: NDArray) -> None:
    """Sort a map's rows by y for its lassos in a daemon thread, once per map, so that a first lasso need not.

    Called when the map is drawn: a lasso over 550,000 rows then costs its edges' passes only (the sort is about
    0.1 s of CPU on a busy machine, otherwise spent in the lasso's own rerun).
    """
    if not isinstance(xy, np.ndarray) or xy.ndim != 2 or xy.shape[1] != 2:
        return
    with _BY_Y_LOCK:
        entry = _BY_Y.get(id(xy))
        if (entry is not None and entry[0]() is xy) or id(xy) in _BY_Y_PENDING:
            return
        _BY_Y_PENDING.add(id(xy))

    def work() -> None:
        try:
            _by_y(xy)
        finally:
            with _BY_Y_LOCK:
                _BY_Y_PENDING.discard(id(xy))

    threading.Thread(target=work, name="aflite-lasso-rows", daemon=True).start()


def _in_polygon(xy: NDArray, px: Iterable[float], py: Iterable[float]) -> NDArray[np.bool_]:
    """:func:`aflite_core.measures.map_grids.points_in_polygon`, with the rows sorted by y once per map.

    The same even-odd test, edge by edge in the same float64 arithmetic (so the same rows), but the sort by y that
    it does per call is done once per map (:func:`_by_y`): a lasso over 550,000 rows and each compact form tried
    for its link (:func:`compact`) then cost a few passes over the rows each edge's band holds, not a sort.
    """
    xy = np.asarray(xy)
    if xy.ndim != 2 or xy.shape[1] != 2 or not len(xy):
        return points_in_polygon(xy, px, py)
    px, py = np.asarray(px, dtype=np.float64).ravel(), np.asarray(py, dtype=np.float64).ravel()
    if len(px) != len(py) or not (np.isfinite(px).all() and np.isfinite(py).all()):
        return points_in_polygon(xy, px, py)  # its one-sentence refusal
    inside = np.zeros(len(xy), dtype=bool)
    if len(px) >= 2 and px[0] == px[-1] and py[0] == py[-1]:
        px, py = px[:-1], py[:-1]
    if len(px) < 3:
        return inside
    rows = _by_y(xy)
    ys, xs = rows.ys, rows.xs
    lo, hi = np.searchsorted(ys, py.min(), "left"), np.searchsorted(ys, py.max(), "left")  # py.min() <= y < py.max()
    if lo == hi:
        return inside
    # every edge lies in the band py.min() <= y < py.max(): searching the band finds the same rows, from lo
    flip = polygon_parity(xs[lo:hi], ys[lo:hi], px, py)
    band_x = xs[lo:hi]
    flip &= (band_x >= px.min()) & (band_x <= px.max())  # the polygon's bounding box in x, as points_in_polygon's
    inside[rows.order[lo:hi][flip]] = True
    return inside


def rows_in_shapes(shapes: Iterable[Shape], xy: NDArray) -> list[int]:
    """Row positions inside any of the shapes (their union), evaluated over every row of ``xy``, sorted.

    A list of Python ints (for small selections and tests); the page keeps :func:`mask_in_shapes`' rows as
    :class:`Rows`.
    """
    return np.flatnonzero(mask_in_shapes(shapes, xy)).tolist()


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
