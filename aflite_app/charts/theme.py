"""One visual language for every chart: the kept/removed colours, class colours, fonts and the common layout."""

from __future__ import annotations

import math

import plotly.colors as pc
import plotly.graph_objects as go

from aflite_core._format import MISSING, fmt_num, fmt_pct

__all__ = [
    "CLASS_COLOURS",
    "FONT",
    "KEPT",
    "KEPT_REMOVED",
    "MISSING",
    "NEUTRAL",
    "REMOVED",
    "TAU_LINE",
    "class_colour_map",
    "fmt_num",
    "fmt_pct",
    "nice_step",
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
    band of the top margin, so a long legend never overprints the title or the panels' own titles.
    """
    h = height or fig.layout.height or 450
    title_band = 34 if title else 0
    legend_band = 30
    fig.update_layout(
        template="plotly_white",
        font=dict(family=FONT, size=13),
        margin=dict(l=60, r=30, t=title_band + legend_band + 14, b=50),
        legend=dict(
            orientation="h",
            yref="container",
            y=1 - (title_band + 6) / h,
            yanchor="top",
            xanchor="left",
            x=0,
        ),
        hoverlabel=dict(font_size=12),
        height=h,
    )
    if title:
        fig.update_layout(title=dict(text=title, x=0, xanchor="left", yref="container", y=1 - 8 / h, yanchor="top"))
    return fig


def nice_step(span: float, n_ticks: int = 5) -> float:
    """A round tick step (1, 2 or 5 × a power of ten) giving about ``n_ticks`` ticks over ``span``."""
    if not span > 0:
        return 1.0
    raw = span / n_ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
