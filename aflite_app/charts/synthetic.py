"""Pure chart builders of the Synthetic circles page (the paper's Figure 2, live): no Streamlit here.

* :func:`circles_grid` - every concentric-circles dataset side by side, original on top and after AFLite
  below, coloured by class, the planted truth (biased / flipped rows) marked by symbol, each panel titled
  with its linear and RBF-SVM accuracy and biased-row counts;
* :func:`circles_column` - the same for one dataset (the page puts one per column, so narrow screens stack
  them instead of squeezing four panels and their titles into one row), with :func:`circles_legend`;
* :func:`round_stepper` - one dataset in one AFLite round: the rows removed in that round highlighted,
  earlier removals in grey, with that round's predictability histogram beside it (drawn in
  :mod:`aflite_app.charts.synthetic_rounds`, re-exported here);
* :func:`summary_frame` - the experiment table with readable column names.

The page's other studies (accuracy over the rounds, out of distribution, AFOptimum) are drawn by
:mod:`aflite_app.charts.synthetic_studies`.

Only the two ring coordinates (columns 0-1) are drawn, as in the paper; the bias features are not.

A figure that draws more than :data:`WEBGL_POINTS` points draws its scatter traces with WebGL (``Scattergl``): an
SVG marker costs the browser's renderer about 0.2 ms per point whenever the figure is drawn (3.3 CPU-s per τ change
for the page's 16,000 points), a WebGL point next to nothing. But every WebGL figure holds two WebGL contexts, a
Streamlit chart whose figure changes is mounted afresh (new contexts, shaders compiled again: ~0.35 CPU-s per
figure in software WebGL), and Chromium keeps at most 16 contexts per page, silently dropping the oldest (a blank
panel). So ``webgl=False`` keeps a figure that is rebuilt on every τ/k change in SVG, and only figures drawn once
(the original data) use WebGL. A panel of kept rows carries what it shows in ``layout.meta`` (:func:`kept_meta`:
the dataset, the row count and a digest of the kept rows), not the run's τ and k: a τ change that keeps the same
rows sends the same figure, which the browser does not draw again, and a browser test can still tell which rows a
panel shows. The stepper's histogram, which shows τ, carries ``{"tau", "k"}`` (:func:`run_meta`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import NDArray
from plotly.subplots import make_subplots

from aflite_core import AFLiteResult
from aflite_core.data.planted_bias import BiasedCircles

from .circles import (
    _AXIS,
    _MARGIN_L,
    CLASS_NAMES,
    EARLIER_COLOUR,
    KIND_LABELS,  # noqa: F401 - read here by tests/test_charts_synthetic.py
    KINDS,
    SYMBOLS,
    WEBGL_POINTS,
    _class_name,
    _colours,
    _kept_mask,
    _no_automargin,
    _scatter_points,
    _scatter_type,
    _square_axes,
    _style,
    _unvalidated,
    kept_meta,
    kind_of_rows,
    marker_style,
    panel_titles,
    run_meta,
)
from .synthetic_rounds import round_stepper
from .theme import fmt_num, fmt_pct

__all__ = [
    "CLASS_NAMES",
    "EARLIER_COLOUR",
    "KINDS",
    "SYMBOLS",
    "WEBGL_POINTS",
    "circles_column",
    "circles_grid",
    "circles_legend",
    "kept_meta",
    "kind_of_rows",
    "panel_titles",
    "round_stepper",
    "run_meta",
    "summary_frame",
]


def circles_grid(
    datasets: Sequence[BiasedCircles],
    kept: Sequence[NDArray[np.bool_] | AFLiteResult],
    table: pd.DataFrame,
    *,
    height: int = 820,
) -> go.Figure:
    """Figure 2 of the paper: each dataset before (top row) and after AFLite (bottom row).

    Parameters
    ----------
    datasets : sequence of BiasedCircles
        The datasets, in column order.
    kept : sequence of bool arrays or AFLiteResult
        Rows kept by AFLite, one per dataset.
    table : pandas.DataFrame
        ``SyntheticExperiment.table`` (one row per dataset, same order): the panel titles' numbers.
    height : int, default=820
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        ``2 × len(datasets)`` panels of the two ring coordinates; one scatter trace per class × planted
        kind (unbiased / biased / flipped) per panel, coloured by class and marked by kind.
    """
    if len(datasets) != len(kept) or len(datasets) != len(table):
        raise ValueError(
            f"circles_grid needs one kept mask and one table row per dataset; got {len(datasets)} "
            f"datasets, {len(kept)} masks and {len(table)} rows."
        )
    n = len(datasets)
    titles = [panel_titles(table.iloc[i]) for i in range(n)]
    fig = make_subplots(
        rows=2,
        cols=n,
        subplot_titles=[t[0] for t in titles] + [t[1] for t in titles],
        horizontal_spacing=0.03 if n > 1 else 0.0,
        vertical_spacing=0.17,
    )
    fig._validate = False  # rebuilt on every τ/k change: skip plotly's per-property validation (built by us)
    masks = [_kept_mask(data, k) for data, k in zip(datasets, kept)]
    scatter = _scatter_type(sum(d.n_samples + int(m.sum()) for d, m in zip(datasets, masks)))
    for i, (data, mask) in enumerate(zip(datasets, masks)):
        everything = np.ones(data.n_samples, dtype=bool)
        _scatter_points(
            fig, data, everything, row=1, col=i + 1, showlegend=i == 0, panel=f"{data.name}, original", scatter=scatter
        )
        _scatter_points(
            fig, data, mask, row=2, col=i + 1, showlegend=False, panel=f"{data.name}, after AFLite", scatter=scatter
        )
    _square_axes(fig, 2, n)
    for c in range(1, n + 1):
        fig.update_xaxes(title_text=_AXIS.format(1), row=2, col=c)
        fig.update_xaxes(showticklabels=False, row=1, col=c)
        if c > 1:
            fig.update_yaxes(showticklabels=False, row=1, col=c)
            fig.update_yaxes(showticklabels=False, row=2, col=c)
    fig.update_yaxes(title_text=_AXIS.format(2), row=1, col=1)
    fig.update_yaxes(title_text=_AXIS.format(2), row=2, col=1)
    fig.update_annotations(font_size=12)
    _style(fig, height=height)
    fig.update_layout(
        margin=dict(l=60, r=20, t=150, b=50),
        legend=dict(y=1.12, font_size=12),
        legend_itemsizing="constant",
        meta=run_meta(kept[0]) if n else None,
    )
    return fig


def summary_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The experiment table (``SyntheticExperiment.table``) with readable column names, for display."""
    return pd.DataFrame(
        {
            "dataset": table["dataset"],
            "ring gap": table["separation"].map(lambda s: f"{s:g}"),
            "rows": [f"{a:,} → {b:,}" for a, b in zip(table["n_before"], table["n_after"])],
            "linear acc.": [
                f"{fmt_num(a)} → {fmt_num(b)}" for a, b in zip(table["linear_before"], table["linear_after"])
            ],
            "RBF-SVM acc.": [f"{fmt_num(a)} → {fmt_num(b)}" for a, b in zip(table["rbf_before"], table["rbf_after"])],
            "biased rows": [f"{a:,} → {b:,}" for a, b in zip(table["biased_before"], table["biased_after"])],
            "biased share": [
                f"{fmt_pct(a)} → {fmt_pct(b)}"
                for a, b in zip(table["biased_share_before"], table["biased_share_after"])
            ],
            "flipped rows removed": [fmt_pct(x) for x in table["flipped_removed_share"]],
            "unbiased rows removed": [fmt_pct(x) for x in table["unbiased_removed_share"]],
            "rounds": table["rounds"],
            "stopped because": table["stop_reason"].str.replace("_", " "),
        }
    )


def circles_column(
    data: BiasedCircles,
    kept: NDArray[np.bool_] | AFLiteResult,
    row: pd.Series | dict,
    *,
    height: int | None = None,
    part: str = "both",
    webgl: bool | None = None,
) -> go.Figure:
    """One dataset of Figure 2: original (top) and after AFLite (bottom), titled like :func:`circles_grid`'s panels.

    The page shows one of these per column, so on a narrow screen the datasets stack (each at full width) rather
    than squeezing four panels and their titles into one row. No legend (see :func:`circles_legend`).

    ``part="original"`` or ``"after"`` builds only that panel, as a figure of its own: the page draws the two
    apart, so a τ or k change (which cannot change the original panel) leaves the original's figure byte-identical
    and the browser does not draw it again. The after-panel alone (``"after"``) carries :func:`kept_meta` in
    ``layout.meta``, so a τ change that keeps the same rows sends it byte-identical too; ``"both"`` carries the
    run's τ and k (:func:`run_meta`) when ``kept`` is an ``AFLiteResult``. Default heights: 640 for
    both panels, 460 for the original alone, 510 for the after-panel alone (the same plot area). ``webgl``: draw
    the points with ``Scattergl`` (True), SVG (False) or WebGL above :data:`WEBGL_POINTS` points (None).
    """
    if part not in ("both", "original", "after"):
        raise ValueError(f"part must be 'both', 'original' or 'after'; got {part!r}.")
    mask = _kept_mask(data, kept)
    top, bottom = panel_titles(row)
    everything = np.ones(data.n_samples, dtype=bool)
    panels = {
        "both": [(everything, top, "original"), (mask, bottom, "after AFLite")],
        "original": [(everything, top, "original")],
        "after": [(mask, bottom, "after AFLite")],
    }[part]
    fig = _unvalidated(
        make_subplots(rows=len(panels), cols=1, subplot_titles=[p[1] for p in panels], vertical_spacing=0.2)
    )
    scatter = _scatter_type(sum(int(p[0].sum()) for p in panels), webgl)
    for r, (sel, _, what) in enumerate(panels, start=1):
        _scatter_points(fig, data, sel, row=r, col=1, showlegend=False, panel=f"{data.name}, {what}", scatter=scatter)
    _square_axes(fig, len(panels), 1)
    last = len(panels)
    if part != "original":
        fig.update_xaxes(title_text=_AXIS.format(1), row=last, col=1)
    for r, (_, _, what) in enumerate(panels, start=1):
        if what == "original":
            fig.update_xaxes(showticklabels=False, row=r, col=1)
        fig.update_yaxes(title_text=_AXIS.format(2), row=r, col=1)
    fig.update_annotations(font_size=12)
    _style(fig, height=height or {"both": 860, "original": 460, "after": 510}[part])
    margin = {"both": dict(t=70, b=45), "original": dict(t=70, b=15), "after": dict(t=95, b=45)}[part]
    fig.update_layout(
        showlegend=False,
        margin=dict(l=_MARGIN_L, r=10, **margin),
    )
    meta = {"original": None, "after": kept_meta(data, kept), "both": run_meta(kept)}[part]
    if meta is not None:  # unvalidated, an explicit None would be sent as "meta": null
        fig.update_layout(meta=meta)
    return _no_automargin(fig)


def circles_legend(*, height: int = 90) -> go.Figure:
    """The legend of :func:`circles_column` alone: colour = class, symbol = planted kind.

    Short entries ("class 0 · bias features"), so that a phone-width screen wraps them into a few rows within the
    figure's height instead of a scrolling legend.
    """
    fig = go.Figure()
    colours = _colours()
    short = {"unbiased": "plain", "biased": "bias features", "flipped": "flipped label"}
    for code in (0, 1):
        name = _class_name(code)
        for k in KINDS:
            fig.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="markers",
                    name=f"class {code} · {short[k]}",
                    marker=marker_style(k, colours[name], scale=2.0) | {"opacity": 1.0},
                    hoverinfo="skip",
                )
            )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    _style(fig, height=height)
    fig.update_layout(
        legend=dict(
            orientation="h", yanchor="top", y=1.0, xanchor="left", x=0, font_size=13, maxheight=400, tracegroupgap=0
        ),
        margin=dict(l=0, r=0, t=0, b=0),
        plot_bgcolor="rgba(0,0,0,0)",
    )
    return fig
