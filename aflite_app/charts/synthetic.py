"""Pure chart builders of the Synthetic circles page (the paper's Figure 2, live): no Streamlit here.

* :func:`circles_grid` - every concentric-circles dataset side by side, original on top and after AFLite
  below, coloured by class, the planted truth (biased / flipped rows) marked by symbol, each panel titled
  with its linear and RBF-SVM accuracy and biased-row counts;
* :func:`circles_column` - the same for one dataset (the page puts one per column, so narrow screens stack
  them instead of squeezing four panels and their titles into one row), with :func:`circles_legend`;
* :func:`round_stepper` - one dataset in one AFLite round: the rows removed in that round highlighted,
  earlier removals in grey, with that round's predictability histogram beside it;
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

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from numpy.typing import NDArray
from plotly.subplots import make_subplots

from aflite_core import AFLiteResult
from aflite_core.data.planted_bias import BiasedCircles

from .theme import KEPT, REMOVED, TAU_LINE, class_colour_map, fmt_num, fmt_pct, style

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

#: label code -> class name (``make_biased_circles``: 0 = outer ring, 1 = inner ring, like ``make_circles``)
CLASS_NAMES = ("class 0 (outer ring)", "class 1 (inner ring)")
#: planted-truth kinds of a row, in drawing order
KINDS = ("unbiased", "biased", "flipped")
#: marker symbol of every kind: plain rows solid, rows with bias features open, flipped labels as crosses
SYMBOLS = {"unbiased": "circle", "biased": "circle-open", "flipped": "x"}
KIND_LABELS = {"unbiased": "no bias features", "biased": "bias features", "flipped": "flipped label"}
_SIZES = {"unbiased": 4, "biased": 5, "flipped": 6}
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
                    marker=dict(
                        color=colours[name],
                        symbol=SYMBOLS[k],
                        size=_SIZES[k],
                        opacity=0.75 if k == "unbiased" else 0.9,
                        line=dict(width=1, color=colours[name]),
                    ),
                    hovertemplate=(
                        f"{panel}<br>row %{{customdata}}<br>{name}<br>{KIND_LABELS[k]}"
                        "<br>(%{x:.2f}, %{y:.2f})<extra></extra>"
                    ),
                    _validate=False,  # plotly's per-property validation is most of the build time
                ),
                row=row,
                col=col,
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


def round_stepper(
    data: BiasedCircles,
    result: AFLiteResult,
    rnd: int,
    *,
    height: int = 460,
    panel: str = "both",
    webgl: bool | None = None,
) -> go.Figure:
    """One AFLite round on one dataset: which rows it removed, and how predictable they were.

    Left (``panel="map"``): the two ring coordinates; rows still in the set after round ``rnd`` in their class
    colour, rows removed in round ``rnd`` highlighted in the removed colour (larger, outlined), rows removed in
    earlier rounds in grey. Symbols mark the planted truth as in :func:`circles_grid`. Right
    (``panel="histogram"``): the histogram of the predictability p(i) of the rows scored in round ``rnd`` (stayed
    in the kept colour, removed in the removed colour; rows with bias features hatched), τ dashed. ``"both"`` (the
    default) puts them side by side; the page draws the two panels as separate figures in columns, so a narrow
    screen stacks them. ``webgl`` as in :func:`circles_column`; ``layout.meta`` holds the run's τ and k, except
    for the map alone (``panel="map"``), which depends on the run only through round ``rnd``'s rows.
    """
    if panel not in ("both", "map", "histogram"):
        raise ValueError(f"panel must be 'both', 'map' or 'histogram'; got {panel!r}.")
    if result.scores is None:
        raise ValueError("Per-round scores are not kept for strategy='greedy'; the round stepper needs them.")
    if not 1 <= rnd <= result.n_rounds:
        raise ValueError(f"Round must be between 1 and {result.n_rounds}; got {rnd}.")
    if len(result.kept) != data.n_samples:
        raise ValueError(f"The result has {len(result.kept)} rows, the dataset {data.n_samples}.")
    rr = np.asarray(result.removed_round)
    now = rr == rnd
    earlier = (rr >= 1) & (rr < rnd)
    still = ~now & ~earlier
    kind = kind_of_rows(data)
    symbols = np.array([SYMBOLS[k] for k in kind], dtype=object)
    labels = np.array([KIND_LABELS[k] for k in kind], dtype=object)
    idx = np.arange(data.n_samples)
    p = result.scores[rnd - 1]
    p_text = np.array(["not scored" if np.isnan(v) else f"{v:.2f}" for v in p], dtype=object)
    colours = _colours()

    titles = [
        f"Round {rnd} of {result.n_rounds}: {int(now.sum()):,} rows removed "
        f"({int((now & data.is_biased).sum()):,} biased)",
        f"Predictability in round {rnd} (τ = {float(result.params['tau']):g})",
    ]
    if panel == "both":
        fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.1, subplot_titles=titles)
        map_at, hist_at = (1, 1), (1, 2)
    else:
        fig = make_subplots(rows=1, cols=1, subplot_titles=[titles[0] if panel == "map" else titles[1]])
        map_at = hist_at = (1, 1)
    _unvalidated(fig)
    draw_map, draw_hist = panel in ("both", "map"), panel in ("both", "histogram")

    scatter = _scatter_type(data.n_samples, webgl)

    def points(sel, name, colour, size, opacity, line, group):
        if not draw_map:
            return
        fig.add_trace(
            scatter(
                x=data.X[sel, 0],
                y=data.X[sel, 1],
                mode="markers",
                name=name,
                legendgroup=group,
                customdata=np.c_[idx[sel], labels[sel], p_text[sel]],
                marker=dict(color=colour, symbol=list(symbols[sel]), size=size, opacity=opacity, line=line),
                hovertemplate=(
                    f"{name}<br>row %{{customdata[0]}} · %{{customdata[1]}}<br>"
                    "p this round: %{customdata[2]}<extra></extra>"
                ),
                _validate=False,
            ),
            row=map_at[0],
            col=map_at[1],
        )

    gone_label = f"removed in rounds 1–{rnd - 1}" if rnd > 2 else "removed in round 1"
    points(
        earlier,
        gone_label if rnd > 1 else "removed earlier",
        EARLIER_COLOUR,
        5,
        0.6,
        dict(width=1, color=EARLIER_COLOUR),
        "earlier",
    )
    for code in (0, 1):
        name = _class_name(code)
        sel = still & (data.y == code)
        points(
            sel, f"{name}: still in the set", colours[name], 4, 0.6, dict(width=1, color=colours[name]), f"still-{code}"
        )
    points(now, f"removed in round {rnd}", REMOVED, 9, 1.0, dict(width=1.5, color="#000000"), "now")

    # histogram: stayed (kept colour) / removed this round (removed colour, same legend entry as the scatter's),
    # rows with bias features hatched
    scored = ~np.isnan(p)
    bins = dict(start=-0.0125, end=1.0125, size=0.025)
    for sel, name, colour, group in (
        (scored & ~now, "stayed in the set", KEPT, "h-stayed"),
        (scored & now, f"removed in round {rnd}", REMOVED, "now"),
    ):
        if not draw_hist:
            break
        for biased in (False, True):
            part = sel & (data.is_biased == biased)
            what = "with bias features" if biased else "no bias features"
            legend_name = "scored, stayed in the set" if not biased else "hatched: rows with bias features"
            fig.add_trace(
                go.Histogram(
                    x=p[part],
                    xbins=bins,
                    name=legend_name if group != "now" else f"{name} · {what}",
                    legendgroup=group if group == "now" or not biased else f"{group}-biased",
                    showlegend=group != "now" or not draw_map,
                    marker=dict(
                        color=colour, pattern_shape="/" if biased else "", pattern_fgcolor="#ffffff" if biased else None
                    ),
                    opacity=0.9,
                    hovertemplate=f"{name}, {what}<br>p in %{{x}}<br>%{{y}} rows<extra></extra>",
                ),
                row=hist_at[0],
                col=hist_at[1],
            )
    fig.update_layout(barmode="stack")
    if draw_hist:
        tau = float(result.params["tau"])
        fig.add_vline(x=tau, line=dict(color=TAU_LINE, dash="dash", width=1), row=hist_at[0], col=hist_at[1])
        fig.update_xaxes(
            range=[-0.03, 1.03],
            title_text="p(i) = share of correct held-out predictions",
            row=hist_at[0],
            col=hist_at[1],
        )
        fig.update_yaxes(title_text="rows", rangemode="tozero", row=hist_at[0], col=hist_at[1])
    if draw_map:
        fig.update_xaxes(
            range=[-_LIM, _LIM], constrain="domain", zeroline=False, title_text=_AXIS.format(1), row=1, col=1
        )
        fig.update_yaxes(
            range=[-_LIM, _LIM],
            scaleanchor="x",
            scaleratio=1,
            constrain="domain",
            zeroline=False,
            title_text=_AXIS.format(2),
            row=1,
            col=1,
        )
    fig.update_annotations(font_size=13)
    _style(fig, height=height)
    left = 86 if panel == "histogram" else 66  # the histogram's row counts are wider than ring coordinates
    # the map alone shows nothing of τ or k but the rows removed: without them in its meta, a τ change that leaves
    # round rnd as it was sends the same figure, which the browser does not draw again (2,000 SVG points)
    fig.update_layout(
        legend=dict(y=1.1, font_size=11),
        margin=dict(l=left, r=20, t=110, b=66),
    )
    meta = None if panel == "map" else run_meta(result)
    if meta is not None:  # unvalidated, an explicit None would be sent as "meta": null
        fig.update_layout(meta=meta)
    return _no_automargin(fig)


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
    both panels, 300 for the original alone, 350 for the after-panel alone (the same plot area). ``webgl``: draw
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
    _style(fig, height=height or {"both": 640, "original": 300, "after": 350}[part])
    margin = {"both": dict(t=70, b=45), "original": dict(t=70, b=15), "after": dict(t=95, b=45)}[part]
    fig.update_layout(
        showlegend=False,
        margin=dict(l=_MARGIN_L, r=10, **margin),
    )
    meta = {"original": None, "after": kept_meta(data, kept), "both": run_meta(kept)}[part]
    if meta is not None:  # unvalidated, an explicit None would be sent as "meta": null
        fig.update_layout(meta=meta)
    return _no_automargin(fig)


def circles_legend(*, height: int = 80) -> go.Figure:
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
                    marker=dict(
                        color=colours[name], symbol=SYMBOLS[k], size=9, line=dict(width=1.5, color=colours[name])
                    ),
                    hoverinfo="skip",
                )
            )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    _style(fig, height=height)
    fig.update_layout(
        legend=dict(
            orientation="h", yanchor="top", y=1.0, xanchor="left", x=0, font_size=11, maxheight=400, tracegroupgap=0
        ),
        margin=dict(l=0, r=0, t=0, b=0),
        plot_bgcolor="rgba(0,0,0,0)",
    )
    return fig
