"""Chart builders of one AFLite run (Filter and Predictability pages): an ``AFLiteResult`` in, a figure out.

Every figure has axis titles with units, class names rather than codes, and the same two colours for kept
(blue) and removed (vermillion); one y-axis per panel.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from aflite_core import AFLiteResult

from .theme import CHART_CONFIG, KEPT, NEUTRAL, REMOVED, TAU_LINE, class_colour_map, nice_step, plotly_text, style

__all__ = [
    "CHART_CONFIG",
    "class_counts_chart",
    "clicked_round_and_class",
    "histogram_edges",
    "null_bin_counts",
    "predictability_histogram",
    "predictability_small_multiples",
    "removal_chart",
    "round_counts",
    "rounds_counts",
]


def _removed_per_round_by_class(result: AFLiteResult) -> pd.DataFrame:
    rounds = np.arange(1, result.n_rounds + 1)
    table = np.zeros((len(rounds), len(result.classes)), dtype=int)
    gone = result.removed_round > 0
    np.add.at(table, (result.removed_round[gone] - 1, result.y[gone]), 1)
    return pd.DataFrame(table, index=pd.Index(rounds, name="round"), columns=[str(c) for c in result.classes])


def removal_chart(result: AFLiteResult, *, title: str | None = None) -> go.Figure:
    """Rows removed so far by class, the rows left and those at p ≥ τ, and the representation bias, per round.

    Three panels on one round axis, one y-axis each (issue 29: no second axis over the bars):

    The legend lists the classes only; each line is labelled at its last point.

    * top, "rows removed so far": stacked bars of the rows removed up to and including each round, one colour
      per class (a bar's hover says how many of them that round removed; a click opens that round's rows of
      that class on Inspect). Cumulative, so every bar reads at any k - per-round bars all had the same height,
      k, which at k = 1 filled the panel;
    * middle, "rows": the rows left after the round (blue) and the rows scored in it that reached τ (grey dots),
      both counts of rows - the run stops early once fewer than k reach τ;
    * bottom, "mean p": the mean predictability of the scored rows (the estimate of the representation bias
      R(Φ, S, M), eq. 5) with τ dashed - τ is a predictability, so it is drawn on this predictability axis.
    """
    hist = result.history
    by_class = _removed_per_round_by_class(result)
    so_far = by_class.cumsum()
    colours = class_colour_map(result.classes)
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.5, 0.22, 0.28])
    for rank, name in enumerate(by_class.columns):
        fig.add_trace(
            go.Bar(
                x=so_far.index,
                y=so_far[name],
                customdata=by_class[name].to_numpy(),
                name=name,
                legendgroup="removed",
                legendrank=rank,  # classes in their own order, then the lines (stacked bars reverse it otherwise)
                marker_color=colours[name],
                hovertemplate="after round %{x}<br>"
                + plotly_text(name)
                + ": %{y:,} rows removed so far (%{customdata:,} in this round)<extra></extra>",
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=hist["round"],
            y=hist["size_after"],
            name="rows left",
            legendrank=100,
            showlegend=False,  # labelled at its last point: the legend holds the classes only (short on a phone)
            mode="lines+markers+text",
            text=_last_only(len(hist), "rows left"),
            textposition="top left",
            textfont=dict(color=KEPT),
            line=dict(color=KEPT, width=3),
            hovertemplate="after round %{x}: %{y:,} rows left<extra></extra>",
        ),
        row=2,
        col=1,
    )
    share = hist["n_qualified"] / hist["n_scored"].where(hist["n_scored"] > 0)
    fig.add_trace(
        go.Scatter(
            x=hist["round"],
            y=hist["n_qualified"],
            customdata=share.to_numpy(),
            name="scored rows at p ≥ τ",
            legendrank=101,
            showlegend=False,
            mode="lines+markers+text",
            text=_last_only(len(hist), "at p ≥ τ"),
            textposition="bottom left",
            textfont=dict(color="#666666"),
            line=dict(color=NEUTRAL, width=2, dash="dot"),
            hovertemplate="round %{x}: %{y:,} scored rows reached τ (%{customdata:.1%} of those scored)<extra></extra>",
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=hist["round"],
            y=hist["mean_predictability"],
            name="mean predictability (R estimate)",
            legendrank=102,
            showlegend=False,  # the panel's axis names it
            mode="lines+markers",
            line=dict(color=REMOVED, width=2),
            hovertemplate="round %{x}: mean p = %{y:.3f}<extra></extra>",
        ),
        row=3,
        col=1,
    )
    tau = float(result.params["tau"])
    fig.add_hline(
        y=tau,
        line=dict(color=TAU_LINE, dash="dash", width=1),
        row=3,
        col=1,
        annotation_text=f"τ = {tau:g}",
        annotation_position="top left",
    )
    fig.update_layout(barmode="stack", bargap=0.15)
    removed = float(so_far.sum(axis=1).max()) if len(so_far) else 0.0
    fig.update_yaxes(title_text="rows removed<br>so far", row=1, col=1, rangemode="tozero", tickformat=",d")
    if removed < 5:  # a few rows: whole-row ticks, not 0.5 steps
        fig.update_yaxes(row=1, col=1, dtick=1, range=[0, max(removed, 1) * 1.1])
    top = float(max(hist["size_after"].max(), hist["n_qualified"].max())) if len(hist) else 1.0
    step = nice_step(top, 3)  # round ticks (100, 200 …) on this panel's own axis
    fig.update_yaxes(
        title_text="rows",
        row=2,
        col=1,
        range=[0, step * math.ceil(top * 1.05 / step)],
        tickmode="linear",
        tick0=0,
        dtick=step,
        tickformat=",d",
    )
    fig.update_yaxes(title_text="mean p", row=3, col=1, range=[0, 1.02], dtick=0.25)
    fig.update_xaxes(title_text="round", row=3, col=1, dtick=1 if result.n_rounds <= 30 else None)
    fig = style(fig, height=600, title=title)
    longest = max((len(str(c)) for c in result.classes), default=1)
    # entries of one width (the longest class name's): many on a line at any width, a few lines on a phone
    return fig.update_layout(
        legend=dict(traceorder="normal", entrywidth=min(7 * longest + 40, 220), entrywidthmode="pixels")
    )  # (traceorder: stacked bars would reverse it)


def _last_only(n: int, label: str) -> list[str]:
    """A line's text: ``label`` at its last point only (a direct label instead of a legend entry)."""
    return [""] * (n - 1) + [label] if n else []


def _round_scores(result: AFLiteResult, rnd: int) -> tuple[np.ndarray, np.ndarray]:
    if result.scores is None:
        raise ValueError("Per-round scores are not kept for strategy='greedy'; choose 'slice' or 'sample'.")
    if not 1 <= rnd <= result.n_rounds:
        raise ValueError(f"Round must be between 1 and {result.n_rounds}; got {rnd}.")
    p = result.scores[rnd - 1]
    scored = ~np.isnan(p)
    return p, scored


def _bins(result: AFLiteResult) -> dict:
    m = int(result.params["n_partitions"])
    size = 1.0 / min(max(m, 10), 40)
    return dict(start=-size / 2, end=1 + size / 2, size=size)


def histogram_edges(result: AFLiteResult) -> np.ndarray:
    """The bin edges of every predictability histogram of a run.

    Bins of width 1/min(max(m, 10), 40) centred on 0, 1/…, 1 (p = 0 and p = 1 fall in the middle of the first and
    the last bin).
    """
    bins = _bins(result)
    n = round((bins["end"] - bins["start"]) / bins["size"])
    return bins["start"] + bins["size"] * np.arange(n + 1)


def rounds_counts(result: AFLiteResult, rounds: range | None = None) -> np.ndarray:
    """Rows scored in each round per class, stayed or removed, and bin: an int array (rounds, classes, 2, bins).

    ``[i, c, 0]`` counts the rows of class ``c`` scored in round ``rounds[i]`` (default: every round) that stayed in
    it, ``[i, c, 1]`` those removed in it, binned by :func:`histogram_edges` exactly as ``numpy.histogram`` bins
    them (left-closed bins; the index from arithmetic, then corrected against the edges as numpy does). Binned
    here, on the server: a chart of them sends O(bins) numbers to the browser, not one score per row.
    """
    if result.scores is None:
        raise ValueError("Per-round scores are not kept for strategy='greedy'; choose 'slice' or 'sample'.")
    rounds = range(1, result.n_rounds + 1) if rounds is None else rounds
    for rnd in (rounds[0], rounds[-1]) if len(rounds) else ():
        _round_scores(result, rnd)  # the range check and its message
    edges = histogram_edges(result)
    n_bins, n_classes = len(edges) - 1, len(result.classes)
    y = np.asarray(result.y).astype(np.int64)
    removed_round = np.asarray(result.removed_round)
    out = np.zeros((len(rounds), n_classes, 2, n_bins), dtype=np.int64)
    for i, rnd in enumerate(rounds):
        p = np.asarray(result.scores[rnd - 1], dtype=np.float64)
        scored = ~np.isnan(p)
        which = np.floor((np.where(scored, p, 0.0) - edges[0]) / (edges[1] - edges[0])).astype(np.int64)
        np.clip(which, 0, n_bins - 1, out=which)
        which -= (p < edges[which]) & (which > 0)  # as numpy.histogram: the edges decide, not the rounding
        which += (p >= edges[which + 1]) & (which < n_bins - 1)
        group = (y * 2 + (removed_round == rnd)) * n_bins + which
        out[i] = np.bincount(group[scored], minlength=n_classes * 2 * n_bins).reshape(n_classes, 2, n_bins)
    return out


def round_counts(result: AFLiteResult, rnd: int) -> np.ndarray:
    """:func:`rounds_counts` of round ``rnd`` alone: an int array (classes, 2, bins)."""
    _round_scores(result, rnd)
    return rounds_counts(result, range(rnd, rnd + 1))[0]


#: the null's trace: a dark dotted step over the bars (one colour for every class; not a class colour)
NULL_LINE = dict(color="#222222", dash="dot", width=2)
NULL_NAME = "under shuffled labels (mean)"


def null_bin_counts(null_counts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Mean rows per histogram bin under shuffled labels, from a round's null counts on the 0.01 grid.

    Parameters
    ----------
    null_counts : ndarray of shape (..., 101)
        Mean rows whose null p reaches τ = 0.00, 0.01, …, 1.00 (``AFLiteResult.null_counts[round - 1]``, per
        class or summed).
    edges : ndarray of shape (n_bins + 1,)
        :func:`histogram_edges`.

    Returns
    -------
    ndarray of shape (..., n_bins)
        Rows with null p in [a, b) for each bin, each edge rounded up to the grid (the null is recorded on
        the 0.01 grid only, so a row within 0.01 below an edge may count in the next bin; the rows at p ≥ τ
        for a τ on the grid - the sum right of τ - are exact).

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.linspace(10, 0, 101)  # 10 rows at p >= 0, none at p >= 1
    >>> null_bin_counts(counts, np.array([-0.25, 0.25, 0.75, 1.25])).round(2).tolist()
    [2.5, 5.0, 2.5]
    """
    counts = np.asarray(null_counts, dtype=np.float64)
    grid = np.clip(np.ceil(np.round(np.asarray(edges, dtype=np.float64) * 100, 6)).astype(np.int64), 0, 101)
    padded = np.concatenate([counts, np.zeros((*counts.shape[:-1], 1))], axis=-1)  # index 101: p ≥ 1.01, none
    at = padded[..., grid]
    return at[..., :-1] - at[..., 1:]


def _null_of_round(null: AFLiteResult | None, rnd: int) -> np.ndarray | None:
    """The null counts of round ``rnd`` (classes, 101), or None (no null, or none for that round)."""
    counts = None if null is None else getattr(null, "null_counts", None)
    if counts is None or not 1 <= rnd <= len(counts):
        return None
    return np.asarray(counts[rnd - 1], dtype=np.float64)


def _tau_lines(fig: go.Figure, tau: float, panels: list[int]) -> None:
    """A dashed line at τ across each subplot of ``panels`` (1-based, row by row).

    make_subplots gives panel k the axes x{k} and y{k}. One layout update for all panels: ``add_vline`` per panel
    costs ~45 ms each in Plotly (a second for 21 rounds).
    """
    line = dict(color=TAU_LINE, dash="dash", width=1)
    shapes = [
        dict(
            type="line",
            x0=tau,
            x1=tau,
            y0=0,
            y1=1,
            xref=f"x{k if k > 1 else ''}",
            yref=f"y{k if k > 1 else ''} domain",
            line=line,
        )
        for k in panels
    ]
    fig.update_layout(shapes=list(fig.layout.shapes or ()) + shapes)


def predictability_histogram(
    result: AFLiteResult, rnd: int, *, title: str | None = None, null: AFLiteResult | None = None
) -> go.Figure:
    """Histogram of the predictability p(i) of the rows scored in round ``rnd``, one panel per class.

    Rows removed in that round are drawn in the removed colour, the others in the kept colour; τ is a
    dashed line. Only rows still in the set at that round were scored. The bars are counted on the server
    (:func:`round_counts`): per class and colour one bar trace of O(bins) numbers, whatever the run's size; the
    traces come per class as (stayed, removed), which :func:`clicked_round_and_class` relies on.

    ``null``: the same run with a null (``null_counts``, :func:`aflite_app.compute.runs.null_result`); each
    panel then also draws the mean rows per bin under shuffled labels as a dotted step (:func:`null_bin_counts`),
    after every bar trace so that a click still names a bar.
    """
    counts = round_counts(result, rnd)
    edges = histogram_edges(result)
    centres, width = (edges[:-1] + edges[1:]) / 2, float(edges[1] - edges[0])
    classes = [str(c) for c in result.classes]
    n_panels = len(classes)
    cols = 1 if n_panels <= 3 else 2
    rows = math.ceil(n_panels / cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        shared_xaxes=True,
        subplot_titles=[plotly_text(c) for c in classes],
        vertical_spacing=0.12 / max(1, rows / 3),
        horizontal_spacing=0.14,  # room for the right panel's y tick labels at 390 px
    )
    bin_text = [f"{max(a, 0.0):.3f}–{min(b, 1.0):.3f}" for a, b in itertools.pairwise(edges)]
    for i, name in enumerate(classes):
        r, c = i // cols + 1, i % cols + 1
        for side, label, colour in ((0, "stayed", KEPT), (1, "removed this round", REMOVED)):
            fig.add_trace(
                go.Bar(
                    x=centres,
                    y=counts[i, side],
                    width=width,
                    customdata=bin_text,
                    name=label,
                    marker_color=colour,
                    legendgroup=label,
                    showlegend=i == 0,
                    opacity=0.85,
                    hovertemplate=f"{plotly_text(name)}<br>p in %{{customdata}}<br>%{{y}} rows<extra>{label}</extra>",
                ),
                row=r,
                col=c,
            )
        fig.update_yaxes(title_text="rows" if c == 1 else None, row=r, col=c)
    null_round = _null_of_round(null, rnd)
    if null_round is not None:
        k = int(null.params.get("null_permutations", 0))
        per_bin = null_bin_counts(null_round, edges)
        for i, name in enumerate(classes):
            fig.add_trace(
                go.Scatter(
                    x=centres,
                    y=per_bin[i],
                    mode="lines",
                    line=dict(shape="hvh", **NULL_LINE),
                    name=NULL_NAME,
                    legendgroup="null",
                    showlegend=i == 0,
                    customdata=bin_text,
                    hovertemplate=f"{plotly_text(name)}<br>p in %{{customdata}}<br>%{{y:.1f}} rows under shuffled "
                    f"labels (mean of {k})<extra></extra>",
                ),
                row=i // cols + 1,
                col=i % cols + 1,
            )
    tau = float(result.params["tau"])
    _tau_lines(fig, tau, list(range(1, n_panels + 1)))
    fig.update_layout(barmode="stack", bargap=0)
    fig.update_xaxes(range=[-0.03, 1.03])
    # one column: the whole meaning; two columns: short enough that the two titles never run into each other on a
    # phone (390 px), the meaning is in the page's caption
    x_title = "predictability p(i) (share of correct out-of-sample predictions)" if cols == 1 else "predictability p(i)"
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text=x_title, row=rows, col=c)
    fig = style(fig, height=max(320, 230 * rows), title=title or f"Round {rnd}: predictability by class (τ = {tau:g})")
    if null_round is not None:  # a third legend entry wraps to a second line on a phone: room for it above the panels
        fig.update_layout(margin=dict(t=fig.layout.margin.t + 22))
    return fig


#: at most this many rounds side by side in the "All rounds" small multiples: at 390 px a panel stays ~60 px wide
MULTIPLES_MAX_COLUMNS = 4
#: the height of one row of small multiples in px (its panels and the gap above them for their titles)
MULTIPLES_ROW_PX = 150
#: the gap between two rows of small multiples in px: room for the lower panels' titles
MULTIPLES_GAP_PX = 34
#: the small multiples' figure height outside the panels in px (the top margin with its legend, the bottom axis)
MULTIPLES_FRAME_PX = 140


def predictability_small_multiples(
    result: AFLiteResult, *, max_rounds: int = 48, null: AFLiteResult | None = None
) -> go.Figure:
    """One small histogram per round (all classes together), removed rows highlighted, τ dashed.

    Laid out to read at 390 px as at 1,500 px (the server cannot know the width): at most
    :data:`MULTIPLES_MAX_COLUMNS` panels a row, x ticks only at 0 and 1, the figure growing by
    :data:`MULTIPLES_ROW_PX` per row of panels with a fixed gap for the panels' titles.

    ``null``: the same run with a null; every round it covers also draws the mean rows per bin under shuffled
    labels (all classes together) as a dotted step.
    """
    if result.scores is None:
        raise ValueError("Per-round scores are not kept for strategy='greedy'; choose 'slice' or 'sample'.")
    n = min(result.n_rounds, max_rounds)
    cols = min(MULTIPLES_MAX_COLUMNS, n)
    rows = math.ceil(n / cols)
    height = max(260, MULTIPLES_FRAME_PX + MULTIPLES_ROW_PX * rows)
    area = height - MULTIPLES_FRAME_PX  # the panels and the gaps between their rows, in px
    fig = make_subplots(
        rows=rows,
        cols=cols,
        shared_xaxes=True,
        shared_yaxes=True,
        subplot_titles=[f"round {r}" for r in range(1, n + 1)],
        vertical_spacing=MULTIPLES_GAP_PX / area if rows > 1 else 0.0,
        horizontal_spacing=0.04,
    )
    edges = histogram_edges(result)
    centres, width = (edges[:-1] + edges[1:]) / 2, float(edges[1] - edges[0])
    tau = float(result.params["tau"])
    top = 1
    per_round = rounds_counts(result, range(1, n + 1)).sum(axis=1)  # all classes together: (stayed, removed) × bins
    for r in range(1, n + 1):
        row, col = (r - 1) // cols + 1, (r - 1) % cols + 1
        counts = per_round[r - 1]
        for side, label, colour in ((0, "stayed", KEPT), (1, "removed this round", REMOVED)):
            fig.add_trace(
                go.Bar(
                    x=centres,
                    y=counts[side],
                    width=width,
                    marker_color=colour,
                    name=label,
                    legendgroup=label,
                    showlegend=r == 1,
                    hovertemplate=f"round {r}: %{{y}} rows at p≈%{{x:.2f}}<extra>{label}</extra>",
                ),
                row=row,
                col=col,
            )
        top = max(top, int(counts.sum(axis=0).max()))
        null_round = _null_of_round(null, r)
        if null_round is not None:
            per_bin = null_bin_counts(null_round.sum(axis=0), edges)
            fig.add_trace(
                go.Scatter(
                    x=centres,
                    y=per_bin,
                    mode="lines",
                    line=dict(shape="hvh", **NULL_LINE),
                    name=NULL_NAME,
                    legendgroup="null",
                    showlegend=r == 1,
                    hovertemplate=f"round {r}: %{{y:.1f}} rows at p≈%{{x:.2f}} under shuffled labels<extra></extra>",
                ),
                row=row,
                col=col,
            )
            top = max(top, float(per_bin.max()))
    _tau_lines(fig, tau, list(range(1, n + 1)))
    fig.update_layout(barmode="stack", bargap=0)
    fig.update_yaxes(range=[0, top * 1.05])  # explicit: Plotly's autorange over matched stacked panels can clip
    # ticks only at 0 and 1; an invisible 5 px tick on both axes keeps the corner's two "0" labels apart
    clear = dict(ticks="outside", ticklen=5, tickcolor="rgba(0,0,0,0)", tickfont_size=11)
    fig.update_xaxes(range=[-0.03, 1.03], tickvals=[0, 1], ticktext=["0", "1"], **clear)
    fig.update_yaxes(nticks=4, **clear)
    fig.update_xaxes(title_text="p(i)", row=rows)
    for r in range(n - cols + 1, (rows - 1) * cols + 1):  # nothing below these panels: their own x axis
        fig.update_layout({f"xaxis{r if r > 1 else ''}": dict(showticklabels=True, title_text="p(i)")})
    fig.update_yaxes(title_text="rows", col=1)
    fig.update_annotations(font_size=11)
    fig = style(fig, height=height)
    fig.update_layout(margin=dict(b=MULTIPLES_FRAME_PX - fig.layout.margin.t))
    return fig


def class_counts_chart(counts: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Rows per class before and after filtering (grouped bars), with the share lost in the hover.

    ``counts`` has one row per class and columns ``before`` and ``after`` (index = class names).
    """
    fig = go.Figure()
    lost = 1 - counts["after"] / counts["before"].where(counts["before"] > 0)
    fig.add_trace(
        go.Bar(
            x=[str(c) for c in counts.index],
            y=counts["before"],
            name="before",
            marker_color=NEUTRAL,
            hovertemplate="%{x}: %{y:,} rows before<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            x=[str(c) for c in counts.index],
            y=counts["after"],
            name="after (kept)",
            marker_color=KEPT,
            customdata=np.c_[lost.fillna(0).to_numpy()],
            hovertemplate="%{x}: %{y:,} rows kept (%{customdata[0]:.0%} removed)<extra></extra>",
        )
    )
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="class")
    fig.update_yaxes(title_text="rows", rangemode="tozero")
    return style(fig, height=340, title=title)


def clicked_round_and_class(points: list[dict], result: AFLiteResult, chart: str, rnd: int | None = None):
    """``(round, class name, status)`` of the bar a user clicked, or None (what Inspect is then filtered to).

    ``chart="removal"``: :func:`removal_chart` (a class's bar gives its round and class; the lines give the
    round only; status "removed"); ``chart="histogram"``: :func:`predictability_histogram` of round ``rnd`` (a
    panel's bar gives that round, the panel's class, and "removed" for the vermillion bar or "stayed" for the
    blue one). ``points`` is Streamlit's ``selection.points``.
    """
    if not points:
        return None
    point = points[0]
    curve = int(point.get("curve_number", -1))
    classes = list(result.classes)
    if chart == "removal":
        x = point.get("x")
        if x is None or curve < 0:
            return None
        return round(float(x)), (classes[curve] if curve < len(classes) else None), "removed"
    if chart == "histogram":
        if rnd is None or curve < 0 or curve // 2 >= len(classes):
            return None
        return int(rnd), classes[curve // 2], ("removed" if curve % 2 else "stayed")  # per class: stayed, removed
    raise ValueError(f"Unknown chart {chart!r}; expected 'removal' or 'histogram'.")
