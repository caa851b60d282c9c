"""The Synthetic circles page's round stepper: one dataset in one AFLite round (pure; no Streamlit).

:func:`round_stepper` highlights the rows removed in that round, earlier removals in grey, with that round's
predictability histogram beside it (re-exported by :mod:`aflite_app.charts.synthetic`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import NDArray
from plotly.subplots import make_subplots

from aflite_core import AFLiteResult
from aflite_core.data.planted_bias import BiasedCircles

from .circles import (
    _AXIS,
    _LIM,
    EARLIER_COLOUR,
    KIND_LABELS,
    SYMBOLS,
    _class_name,
    _colours,
    _no_automargin,
    _scatter_type,
    _style,
    _unvalidated,
    kind_of_rows,
    run_meta,
)
from .theme import KEPT, REMOVED, TAU_LINE

__all__ = ["round_stepper"]


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

    rows = dict(now=now, earlier=earlier, still=still, symbols=symbols, labels=labels, idx=idx, p_text=p_text)
    if draw_map:
        _round_map(fig, data, rnd, rows, map_at, webgl)
    if draw_hist:
        _round_histogram(fig, data, rnd, p, now, hist_at, draw_map)
    _round_axes(fig, result, hist_at, draw_map, draw_hist)
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


def _round_map(
    fig: go.Figure, data: BiasedCircles, rnd: int, rows: dict[str, Any], map_at: tuple[int, int], webgl: bool | None
) -> None:
    """The stepper's map: earlier removals in grey, the rows still in the set by class, round ``rnd``'s removals."""
    now, earlier, still = rows["now"], rows["earlier"], rows["still"]
    symbols, labels, idx, p_text = rows["symbols"], rows["labels"], rows["idx"], rows["p_text"]
    colours = _colours()
    scatter = _scatter_type(data.n_samples, webgl)

    def points(sel, name, colour, size, opacity, line, group):
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


def _round_histogram(
    fig: go.Figure, data: BiasedCircles, rnd: int, p: NDArray, now: NDArray, hist_at: tuple[int, int], draw_map: bool
) -> None:
    """The stepper's histogram of round ``rnd``'s predictability: stayed / removed, rows with bias features hatched."""
    # histogram: stayed (kept colour) / removed this round (removed colour, same legend entry as the scatter's),
    # rows with bias features hatched
    scored = ~np.isnan(p)
    bins = dict(start=-0.0125, end=1.0125, size=0.025)
    for sel, name, colour, group in (
        (scored & ~now, "stayed in the set", KEPT, "h-stayed"),
        (scored & now, f"removed in round {rnd}", REMOVED, "now"),
    ):
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


def _round_axes(
    fig: go.Figure, result: AFLiteResult, hist_at: tuple[int, int], draw_map: bool, draw_hist: bool
) -> None:
    """Stacked bars, τ and the axes of the panels drawn."""
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
