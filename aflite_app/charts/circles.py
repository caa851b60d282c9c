"""What every figure of the Synthetic circles page shares (pure; no Streamlit).

Class names and colours, the planted-truth symbols, the scatter of the two ring coordinates (SVG or WebGL, see
:mod:`aflite_app.charts.synthetic`), the layout and the ``layout.meta`` of a panel (:func:`kept_meta`,
:func:`run_meta`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from numpy.typing import NDArray

from aflite_core import AFLiteResult
from aflite_core.data.planted_bias import BiasedCircles

from .theme import class_colour_map, fmt_num, style

__all__ = [
    "CLASS_NAMES",
    "EARLIER_COLOUR",
    "KINDS",
    "KIND_LABELS",
    "SYMBOLS",
    "WEBGL_POINTS",
    "kept_meta",
    "kind_of_rows",
    "marker_style",
    "panel_titles",
    "run_meta",
]

#: label code -> class name (``make_biased_circles``: 0 = outer ring, 1 = inner ring, like ``make_circles``)
CLASS_NAMES = ("class 0 (outer ring)", "class 1 (inner ring)")
#: planted-truth kinds of a row, in drawing order
KINDS = ("unbiased", "biased", "flipped")
#: marker symbol of every kind, three shapes told apart at a glance (issue 29 item 9): plain rows filled dots,
#: rows with bias features open diamonds, flipped labels crosses outlined in black
SYMBOLS = {"unbiased": "circle", "biased": "diamond-open", "flipped": "x"}
KIND_LABELS = {"unbiased": "no bias features", "biased": "bias features", "flipped": "flipped label"}
_SIZES = {"unbiased": 5, "biased": 7, "flipped": 9}
#: the outline of a marker of every kind: (colour, width); None: the class colour
_OUTLINES = {"unbiased": (None, 0.5), "biased": (None, 1.6), "flipped": ("#1A1A1A", 1.0)}
#: the opacity of a marker of every kind: plain rows recede, the shortcut and the flips stand out
_OPACITY = {"unbiased": 0.55, "biased": 0.9, "flipped": 1.0}
#: plotting window of the ring coordinates (the outer ring has radius ≤ 1.5 plus noise)
_LIM = 2.1
_AXIS = "ring coordinate {} (unitless)"
#: a figure drawing more points than this draws its scatter traces with WebGL (``go.Scattergl``)
WEBGL_POINTS = 500
#: rows removed in earlier rounds of the stepper: a mid grey, drawn solid enough to be seen
EARLIER_COLOUR = "#7F7F7F"


def _class_name(code: int) -> str:
    return CLASS_NAMES[code] if 0 <= code < len(CLASS_NAMES) else f"class {code}"


def _colours() -> dict[str, str]:
    return class_colour_map(CLASS_NAMES)


def kind_of_rows(data: BiasedCircles) -> NDArray[np.str_]:
    """The planted-truth kind of every row: "flipped" (a subset of biased), "biased" or "unbiased"."""
    kind = np.full(data.n_samples, "unbiased", dtype=object)
    kind[data.is_biased] = "biased"
    kind[data.is_flipped] = "flipped"
    return kind.astype(str)


def _scatter_type(n_points: int, webgl: bool | None = None) -> type[go.Scatter] | type[go.Scattergl]:
    """``go.Scattergl`` for a figure of more than :data:`WEBGL_POINTS` points (``webgl=None``), else as asked."""
    if webgl is None:
        webgl = n_points > WEBGL_POINTS
    return go.Scattergl if webgl else go.Scatter


def kept_meta(data: BiasedCircles, kept: Any) -> dict[str, str | int]:
    """``{"dataset", "rows", "kept"}`` of a panel of kept rows (its ``layout.meta``): ``kept`` is a digest of the mask.

    Two runs that keep the same rows give the same tag (and, with the same numbers in the title, the same figure).
    """
    mask = _kept_mask(data, kept)
    digest = hashlib.blake2b(np.packbits(mask).tobytes(), digest_size=8).hexdigest()
    return {"dataset": data.name, "rows": int(mask.sum()), "kept": digest}


def run_meta(result: Any) -> dict[str, float | int] | None:
    """``{"tau", "k"}`` of the AFLite run a figure shows (its ``layout.meta``), or None for a bare kept mask."""
    params = getattr(result, "params", None)
    if not params or "tau" not in params:
        return None
    return {"tau": float(params["tau"]), "k": int(params["slice_size"])}


def panel_titles(row: pd.Series | dict) -> tuple[str, str]:
    """Titles of a dataset's two panels from its experiment-table row: (original, after AFLite)."""
    top = (
        f"<b>{row['dataset']}</b><br>original: {int(row['n_before']):,} rows, "
        f"{int(row['biased_before']):,} biased<br>linear {fmt_num(row['linear_before'])} · "
        f"RBF-SVM {fmt_num(row['rbf_before'])}"
    )
    flipped = int(row.get("flipped_before", 0) or 0)
    extra = ""
    if flipped:
        share = row.get("flipped_removed_share", float("nan"))
        left = flipped - round(share * flipped) if np.isfinite(share) else flipped
        extra = f"<br>flipped {flipped:,} → {int(left):,}"
    bottom = (
        f"<b>after AFLite</b>: {int(row['n_after']):,} rows<br>"
        f"linear {fmt_num(row['linear_before'])} → {fmt_num(row['linear_after'])}<br>"
        f"RBF-SVM {fmt_num(row['rbf_before'])} → {fmt_num(row['rbf_after'])}<br>"
        f"biased {int(row['biased_before']):,} → {int(row['biased_after']):,}{extra}"
    )
    return top, bottom


def _scatter_points(
    fig: go.Figure,
    data: BiasedCircles,
    mask: NDArray[np.bool_],
    *,
    row: int,
    col: int,
    showlegend: bool,
    panel: str,
    scatter: type[go.Scatter] | type[go.Scattergl] = go.Scatter,
) -> None:
    """One trace per class × planted kind (so the legend reads off colour and symbol)."""
    colours = _colours()
    kind = kind_of_rows(data)
    idx = np.arange(data.n_samples)
    for code in (0, 1):
        name = _class_name(code)
        for k in KINDS:
            sel = mask & (data.y == code) & (kind == k)
            fig.add_trace(
                scatter(
                    x=data.X[sel, 0],
                    y=data.X[sel, 1],
                    mode="markers",
                    customdata=idx[sel],
                    name=f"{name} · {KIND_LABELS[k]}",
                    legendgroup=f"{code}-{k}",
                    showlegend=showlegend,
                    marker=marker_style(k, colours[name]),
                    hovertemplate=(
                        f"{panel}<br>row %{{customdata}}<br>{name}<br>{KIND_LABELS[k]}"
                        "<br>(%{x:.2f}, %{y:.2f})<extra></extra>"
                    ),
                    _validate=False,  # plotly's per-property validation is most of the build time
                ),
                row=row,
                col=col,
            )


def marker_style(kind: str, colour: str, *, scale: float = 1.0) -> dict[str, Any]:
    """The marker of a row of planted ``kind`` in its class ``colour``: shape, size, outline and opacity."""
    line_colour, width = _OUTLINES[kind]
    return dict(
        color=colour,
        symbol=SYMBOLS[kind],
        size=_SIZES[kind] * scale,
        opacity=_OPACITY[kind],
        line=dict(width=width * (1.5 if scale > 1 else 1.0), color=line_colour or colour),
    )


def _kept_mask(data: BiasedCircles, kept: NDArray[np.bool_] | AFLiteResult) -> NDArray[np.bool_]:
    # duck-typed: a cached result may predate a module reload, so isinstance(k, AFLiteResult) can be False
    mask = np.asarray(getattr(kept, "kept", kept))
    if mask.shape != (data.n_samples,) or mask.dtype != bool:
        raise ValueError(
            f"The kept mask of {data.name!r} must be a bool array of shape ({data.n_samples},); got "
            f"{mask.dtype} of shape {mask.shape}."
        )
    return mask


#: left margin of a ring-coordinate panel: the y tick labels and the axis title with Streamlit's title standoff
_MARGIN_L = 66


def _style(fig: go.Figure, *, height: int) -> go.Figure:
    """:func:`theme.style` at a tenth of the cost: the same layout, with plotly's template not validated again.

    ``style`` names its template ("plotly_white"); plotly.py validates a named template by building and deep-
    copying every trace type's defaults, ~40 ms per figure, ten figures per τ/k change. Here the name is stored
    unvalidated and replaced by the registered (already valid) template object: the figure's JSON is the same.
    """
    layout = fig._layout_obj
    before = layout._validate
    layout._validate = False
    try:
        style(fig, height=height)
        name = layout._props.get("template")
        if isinstance(name, str):
            fig.layout.template = pio.templates[name]
    finally:
        layout._validate = before
    return fig


def _unvalidated(fig: go.Figure) -> go.Figure:
    """Skip plotly.py's per-property validation for the rest of the build (figure and layout).

    The traces pass ``_validate=False`` themselves; the values are built here and already valid, the JSON is the
    same, and the validation was most of a figure's build time on the τ/k path.
    """
    fig._validate = False
    fig._layout_obj._validate = False
    return fig


def _no_automargin(fig: go.Figure) -> go.Figure:
    """Axes that never push the margins: the figure is drawn once, not twice.

    With ``automargin`` (Streamlit's theme turns it on for every axis) an axis whose labels need more room makes
    plotly.js draw the whole figure a second time with pushed margins; the figures of this page set their margins
    to what the push gave instead.
    """
    fig.update_xaxes(automargin=False)
    fig.update_yaxes(automargin=False)
    return fig


def _square_axes(fig: go.Figure, rows: int, cols: int) -> None:
    for r in range(1, rows + 1):
        for c in range(1, cols + 1):
            i = (r - 1) * cols + c
            fig.update_xaxes(range=[-_LIM, _LIM], constrain="domain", zeroline=False, row=r, col=c)
            fig.update_yaxes(
                range=[-_LIM, _LIM],
                scaleanchor="x" if i == 1 else f"x{i}",
                scaleratio=1,
                constrain="domain",
                zeroline=False,
                row=r,
                col=c,
            )
