"""One visual language for every chart: the kept/removed colours, class colours, fonts and the common layout."""

from __future__ import annotations

import math

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

from aflite_core._format import MISSING, fmt_num, fmt_pct

from ..markup import plotly_text

__all__ = [
    "CHART_CONFIG",
    "CLASS_COLOURS",
    "FONT",
    "KEPT",
    "KEPT_REMOVED",
    "MISSING",
    "MODEBAR_BAND",
    "NEUTRAL",
    "REMOVED",
    "TAU_LINE",
    "class_colour_map",
    "fmt_num",
    "fmt_pct",
    "nice_step",
    "plotly_text",
    "round_colours",
    "style",
]

#: Okabe-Ito colour-blind-safe palette; blue means kept and vermillion means removed on every page.
KEPT = "#0072B2"
REMOVED = "#D55E00"
NEUTRAL = "#999999"
KEPT_REMOVED = {"kept": KEPT, "removed": REMOVED}
#: classes, in order (Okabe-Ito without the two status colours first, then a few more distinct ones)
CLASS_COLOURS = [
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
    "#8C564B",
    "#7F7F7F",
    "#BCBD22",
    "#17BECF",
    "#1F77B4",
    "#9467BD",
]
TAU_LINE = "#000000"
FONT = "Source Sans Pro, sans-serif"
#: pixels at the top of every figure kept free for Plotly's toolbar (the modebar, drawn over the top-right corner
#: when the pointer is on the chart): the title and the legend start below it, so at 390 px the toolbar never
#: covers a title (issue 29 item 7)
MODEBAR_BAND = 30
#: ``st.plotly_chart(config=...)`` of the pages that pass one: no Plotly logo, and only the buttons a reader uses
#: (zoom, pan, reset, download), so the toolbar is narrow on a phone
CHART_CONFIG = {
    "displaylogo": False,
    "modeBarButtonsToRemove": ["lasso2d", "select2d", "autoScale2d", "hoverClosestCartesian", "hoverCompareCartesian"],
}


def class_colour_map(classes) -> dict[str, str]:
    """Class name -> colour, stable for a given class order."""
    return {str(c): CLASS_COLOURS[i % len(CLASS_COLOURS)] for i, c in enumerate(classes)}


def round_colours(n_rounds: int) -> list[str]:
    """A sequential palette for 'round removed' (early rounds dark, late rounds light)."""
    if n_rounds <= 1:
        return [REMOVED]
    return pc.sample_colorscale("OrRd_r", [0.1 + 0.75 * i / (n_rounds - 1) for i in range(n_rounds)])


def style(fig: go.Figure, *, height: int | None = None, title: str | None = None) -> go.Figure:
    """The common look: white background, readable font, the title on top and the legend in a row below it.

    Title and legend are placed in pixels from the top of the figure (container coordinates), each in its own
    band of the top margin, so a long legend never overprints the title or the panels' own titles; both sit
    below :data:`MODEBAR_BAND`, the toolbar's strip, so the toolbar never covers them at any width.
    """
    h = height or fig.layout.height or 450
    title_band = 34 if title else 0
    legend_band = 30
    fig.update_layout(
        template="plotly_white",
        font=dict(family=FONT, size=13),
        margin=dict(l=60, r=30, t=MODEBAR_BAND + title_band + legend_band + 14, b=50),
        legend=dict(
            orientation="h",
            yref="container",
            y=1 - (MODEBAR_BAND + title_band + 6) / h,
            yanchor="top",
            xanchor="left",
            x=0,
        ),
        hoverlabel=dict(font_size=12),
        height=h,
    )
    if title:
        fig.update_layout(
            title=dict(text=title, x=0, xanchor="left", yref="container", y=1 - (MODEBAR_BAND + 4) / h, yanchor="top")
        )
    return data_as_text(fig)


def _as_text(values):
    """``values`` with the strings that hold a tag through :func:`plotly_text` (the very object if none does).

    A string, a sequence (possibly nested) or a numpy array.
    """
    if isinstance(values, str):
        return plotly_text(values) if "<" in values else values
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "OUS" or not any("<" in str(v) for v in values.ravel()):
            return values
        return np.vectorize(lambda v: plotly_text(v) if isinstance(v, str) else v, otypes=[object])(values)
    if isinstance(values, list | tuple):
        out = [_as_text(v) for v in values]
        return values if all(a is b for a, b in zip(out, values, strict=True)) else out
    return values


def data_as_text(fig: go.Figure) -> go.Figure:
    """The figure's data texts - trace names, categories, custom data - with their tags shown, not applied.

    Class names, ids and file names reach a figure as data; Plotly would draw ``<b>``, ``<a href>`` or
    ``<span style>`` in them (:func:`aflite_app.markup.plotly_text`). The builders' own markup lives in hover
    templates, texts, tick texts, titles and annotations, which this leaves alone (a builder that puts a user's
    value there escapes it itself). The axes' category orders and tick values are escaped alike, so they still
    name the escaped categories. Every figure passes here through :func:`style`.
    """
    for trace in fig.data:
        if isinstance(getattr(trace, "name", None), str):
            trace.name = plotly_text(trace.name)
        for attr in ("x", "y", "customdata", "labels"):
            values = getattr(trace, attr, None) if attr in trace else None
            if values is not None and not isinstance(values, int | float):
                escaped = _as_text(values)
                if escaped is not values:
                    trace[attr] = escaped
    for axis in [*fig.select_xaxes(), *fig.select_yaxes()]:  # what names the categories, the same way
        for attr in ("categoryarray", "tickvals"):
            values = axis[attr]
            if values is not None:
                escaped = _as_text(values)
                if escaped is not values:
                    axis[attr] = escaped
    return fig


def nice_step(span: float, n_ticks: int = 5) -> float:
    """A round tick step (1, 2 or 5 × a power of ten) giving about ``n_ticks`` ticks over ``span``."""
    if not span > 0:
        return 1.0
    raw = span / n_ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
