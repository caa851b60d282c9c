"""The table under the Embedding map, as pure functions (no Streamlit): the selected rows and their counts.

Each selected row is listed with an image thumbnail (PNG data URI, encoded here without extra dependencies) or
the dataset's text columns. :func:`selection_table` lists the rows :mod:`aflite_app.selection` found (a click,
a box, a lasso); :func:`class_counts` counts them per class and outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .images import png_data_uri

__all__ = [
    "class_counts",
    "selection_table",
    "thumbnail",
    "thumbnails",
]


# -- thumbnails ----------------------------------------------------------------------------------------------
def thumbnail(image: NDArray, *, vmax: float | None = None, invert: bool = True, size: int = 32) -> NDArray[np.uint8]:
    """A small image as a crisp uint8 thumbnail of about ``size`` pixels (nearest-neighbour upscaling).

    Grey images are scaled by ``vmax`` (default: the image's own maximum) and, with ``invert``, drawn as dark
    ink on white (the digits' values are ink intensities). Colour images are scaled to 0-255 and not inverted.
    """
    a = np.nan_to_num(np.asarray(image, dtype=np.float64))
    lo = min(0.0, float(a.min())) if a.size else 0.0
    hi = float(a.max()) if vmax is None else float(vmax)
    scaled = np.clip((a - lo) / (hi - lo), 0, 1) if hi > lo else np.zeros_like(a)
    if a.ndim == 2 and invert:
        scaled = 1 - scaled
    out = np.round(scaled * 255).astype(np.uint8)
    factor = max(1, size // max(out.shape[:2]))
    return np.repeat(np.repeat(out, factor, axis=0), factor, axis=1)


def thumbnails(data: Any, rows: Iterable[int], *, size: int = 48) -> list[NDArray[np.uint8]]:
    """Thumbnails of some rows of a dataset with images (one scale for all, so they compare); [] without images."""
    if data.images is None:
        return []
    images = np.asarray(data.images)
    vmax = float(images.max()) if images.size else 1.0
    return [thumbnail(images[int(r)], vmax=vmax, invert=images.ndim == 3, size=size) for r in rows]


# -- the table under the map ---------------------------------------------------------------------------------
def _extra_columns(data: Any) -> list[str]:
    """Columns of ``data.frame`` worth showing next to a selected row (text, pair, planted truth)."""
    cols = [*list(data.pair or ()), *data.text_columns, *data.meta.get("planted_truth", [])]
    seen: list[str] = []
    for col in cols:
        if col in data.frame.columns and col not in seen and col != data.label_column:
            seen.append(col)
    if not seen and data.images is None:  # nothing descriptive: the first few original columns
        skip = {data.label_column, data.id_column}
        seen = [c for c in data.frame.columns if c not in skip][:6]
    return seen


def _scores(values: NDArray[np.float64], missing: str) -> list[str]:
    """Scores as display text with two decimals ("" or a word where there is none, instead of "None")."""
    return [missing if np.isnan(v) else f"{v:.2f}" for v in values]


def _positions(rows: Iterable[int], n_rows: int) -> NDArray[np.intp]:
    """Distinct, sorted row positions in ``[0, n_rows)``.

    An array (or :class:`aflite_app.selection.Rows`) that is sorted and distinct already is only checked (one
    vectorised pass), not sorted again: a selection of 418,000 rows is listed without an ``np.unique`` per call.
    """
    arr = rows if isinstance(rows, np.ndarray) else np.asarray(rows) if hasattr(rows, "__array__") else None
    idx = np.asarray(arr if arr is not None else list(rows), dtype=np.int64)
    if len(idx) > 1 and not bool(np.all(idx[1:] > idx[:-1])):
        idx = np.unique(idx)
    lo, hi = np.searchsorted(idx, 0), np.searchsorted(idx, n_rows)
    return idx[lo:hi].astype(np.intp)


def class_counts(data: Any, result: Any, rows: Iterable[int]) -> pd.DataFrame:
    """Selected, kept and removed rows per class (every class, in order; rows outside the data are dropped).

    Returns
    -------
    DataFrame
        Index: class names; columns ``selected, kept, removed``.
    """
    idx = _positions(rows, data.n_rows)
    names = [str(c) for c in data.classes]
    codes = np.asarray(data.y)[idx]
    selected = np.bincount(codes, minlength=len(names))
    kept = np.bincount(codes[np.asarray(result.kept)[idx]], minlength=len(names))
    frame = pd.DataFrame({"selected": selected, "kept": kept, "removed": selected - kept}, index=names)
    frame.index.name = "class"
    return frame


def selection_table(
    data: Any, result: Any, rows: Iterable[int], *, cap: int = 200, offset: int = 0
) -> tuple[pd.DataFrame, dict]:
    """The selected rows as a display table: image or text, id, class, outcome and predictability.

    Parameters
    ----------
    data : aflite_core.data.datasets.Dataset
        The dataset the run filtered.
    result : aflite_core.AFLiteResult
        The run (aligned with ``data``'s rows).
    rows : iterable of int
        Selected row positions.
    cap : int, default=200
        Rows listed at most (the first ones, in row order, from ``offset``); the counts cover all selected rows.
    offset : int, default=0
        Selected rows skipped before the listed ones (a page of the selection: ``offset = page · cap``).

    Returns
    -------
    (DataFrame, dict)
        Columns ``image`` (PNG data URI, when the dataset has images) or the text / planted-truth columns,
        then ``id, class, status, round removed`` ("" if kept), ``first-round p`` ("not scored" if never
        scored), ``removal score`` ("" if kept) as display text with two decimals, and ``row`` (the position);
        and the counts ``{"selected", "kept", "removed", "shown"}`` (per class: :func:`class_counts`).
    """
    idx = _positions(rows, data.n_rows)
    kept = np.asarray(result.kept)[idx]
    offset = max(0, min(int(offset), max(len(idx) - 1, 0)))
    show = idx[offset : offset + cap]
    counts = {"selected": len(idx), "kept": int(kept.sum()), "removed": int((~kept).sum()), "shown": len(show)}
    names = np.asarray([str(c) for c in data.classes], dtype=object)
    table = pd.DataFrame(index=pd.RangeIndex(len(show)))
    if data.images is not None:
        table["image"] = [png_data_uri(t) for t in thumbnails(data, show, size=32)]
    for col in _extra_columns(data):  # only the listed rows of each column (not the whole column, then a page)
        table[col] = data.frame[col].iloc[show].to_numpy()
    rr = np.asarray(result.removed_round)[show]
    table["id"] = [str(i) for i in np.asarray(data.ids)[show]]
    table["class"] = names[np.asarray(data.y)[show]]
    table["status"] = np.where(rr > 0, "removed", "kept")
    table["round removed"] = [str(r) if r > 0 else "" for r in rr]
    table["first-round p"] = _scores(np.asarray(result.first_score, dtype=float)[show], "not scored")
    table["removal score"] = _scores(np.asarray(result.removal_score, dtype=float)[show], "")
    table["row"] = show
    return table, counts
