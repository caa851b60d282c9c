"""Pure chart builders of the Synthetic circles page (the paper's Figure 2, live): no Streamlit here.

* :func:`circles_grid` - every concentric-circles dataset side by side, original on top and after AFLite
  below, coloured by class, the planted truth (biased / flipped rows) marked by symbol, each panel titled
  with its linear and RBF-SVM accuracy and biased-row counts;
* :func:`round_stepper` - one dataset in one AFLite round: the rows removed in that round highlighted,
  earlier removals faded, with that round's predictability histogram beside it;
* :func:`summary_frame` - the experiment table with readable column names.

Only the two ring coordinates (columns 0-1) are drawn, as in the paper; the bias features are not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import NDArray
from plotly.subplots import make_subplots

from aflite_core import AFLiteResult
from aflite_core.synthetic import BiasedCircles

from .theme import KEPT, NEUTRAL, REMOVED, TAU_LINE, class_colour_map, style

__all__ = [
    "CLASS_NAMES",
    "KINDS",
    "SYMBOLS",
    "circles_grid",
    "kind_of_rows",
    "panel_titles",
    "round_stepper",
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


def _fmt(x: float) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.3f}"


def panel_titles(row: pd.Series | dict) -> tuple[str, str]:
    """Titles of a dataset's two panels from its experiment-table row: (original, after AFLite)."""
    top = (
        f"<b>{row['dataset']}</b><br>original: {int(row['n_before']):,} rows, "
        f"{int(row['biased_before']):,} biased<br>linear {_fmt(row['linear_before'])} · "
        f"RBF-SVM {_fmt(row['rbf_before'])}"
    )
    flipped = int(row.get("flipped_before", 0) or 0)
    extra = ""
    if flipped:
        share = row.get("flipped_removed_share", float("nan"))
        left = flipped - round(share * flipped) if np.isfinite(share) else flipped
        extra = f" · flipped {flipped:,} → {int(left):,}"
    bottom = (
        f"<b>after AFLite</b>: {int(row['n_after']):,} rows<br>"
        f"linear {_fmt(row['linear_before'])} → {_fmt(row['linear_after'])}<br>"
        f"RBF-SVM {_fmt(row['rbf_before'])} → {_fmt(row['rbf_after'])}<br>"
        f"biased {int(row['biased_before']):,} → {int(row['biased_after']):,}{extra}"
    )
    return top, bottom


def _scatter_points(
    fig: go.Figure, data: BiasedCircles, mask: NDArray[np.bool_], *, row: int, col: int, showlegend: bool, panel: str
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
                go.Scatter(
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
    for i, (data, k) in enumerate(zip(datasets, kept)):
        # duck-typed: a cached result may predate a module reload, so isinstance(k, AFLiteResult) can be False
        mask = np.asarray(getattr(k, "kept", k))
        if mask.shape != (data.n_samples,) or mask.dtype != bool:
            raise ValueError(
                f"The kept mask of {data.name!r} must be a bool array of shape ({data.n_samples},); got "
                f"{mask.dtype} of shape {mask.shape}."
            )
        everything = np.ones(data.n_samples, dtype=bool)
        _scatter_points(fig, data, everything, row=1, col=i + 1, showlegend=i == 0, panel=f"{data.name}, original")
        _scatter_points(fig, data, mask, row=2, col=i + 1, showlegend=False, panel=f"{data.name}, after AFLite")
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
    style(fig, height=height)
    fig.update_layout(
        margin=dict(l=60, r=20, t=150, b=50), legend=dict(y=1.12, font_size=12), legend_itemsizing="constant"
    )
    return fig


def round_stepper(data: BiasedCircles, result: AFLiteResult, rnd: int, *, height: int = 460) -> go.Figure:
    """One AFLite round on one dataset: which rows it removed, and how predictable they were.

    Left: the two ring coordinates; rows still in the set after round ``rnd`` in their class colour, rows
    removed in round ``rnd`` highlighted in the removed colour (larger, outlined), rows removed in earlier
    rounds faded grey. Symbols mark the planted truth as in :func:`circles_grid`. Right: the histogram of
    the predictability p(i) of the rows scored in round ``rnd`` (stayed in the kept colour, removed in the
    removed colour; rows with bias features hatched), τ dashed.
    """
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

    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.55, 0.45],
        horizontal_spacing=0.1,
        subplot_titles=[
            f"Round {rnd} of {result.n_rounds}: {int(now.sum()):,} rows removed "
            f"({int((now & data.is_biased).sum()):,} biased)",
            f"Predictability in round {rnd} (τ = {float(result.params['tau']):g})",
        ],
    )

    def points(sel, name, colour, size, opacity, line, group):
        fig.add_trace(
            go.Scatter(
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
            row=1,
            col=1,
        )

    gone_label = f"removed in rounds 1–{rnd - 1}" if rnd > 2 else "removed in round 1"
    points(
        earlier, gone_label if rnd > 1 else "removed earlier", NEUTRAL, 4, 0.25, dict(width=1, color=NEUTRAL), "earlier"
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
                    showlegend=group != "now",
                    marker=dict(
                        color=colour, pattern_shape="/" if biased else "", pattern_fgcolor="#ffffff" if biased else None
                    ),
                    opacity=0.9,
                    hovertemplate=f"{name}, {what}<br>p in %{{x}}<br>%{{y}} rows<extra></extra>",
                ),
                row=1,
                col=2,
            )
    tau = float(result.params["tau"])
    fig.add_vline(x=tau, line=dict(color=TAU_LINE, dash="dash", width=1), row=1, col=2)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(range=[-_LIM, _LIM], constrain="domain", zeroline=False, title_text=_AXIS.format(1), row=1, col=1)
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
    fig.update_xaxes(
        range=[-0.03, 1.03], title_text="predictability p(i) (share of correct held-out predictions)", row=1, col=2
    )
    fig.update_yaxes(title_text="rows", rangemode="tozero", row=1, col=2)
    fig.update_annotations(font_size=13)
    style(fig, height=height)
    fig.update_layout(legend=dict(y=1.1, font_size=11), margin=dict(l=60, r=20, t=110, b=50))
    return fig


def summary_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The experiment table (``SyntheticExperiment.table``) with readable column names, for display."""

    def share(x: float) -> str:
        return "–" if x is None or not np.isfinite(x) else f"{x:.0%}"

    return pd.DataFrame(
        {
            "dataset": table["dataset"],
            "ring gap": table["separation"].map(lambda s: f"{s:g}"),
            "rows": [f"{a:,} → {b:,}" for a, b in zip(table["n_before"], table["n_after"])],
            "linear acc.": [f"{_fmt(a)} → {_fmt(b)}" for a, b in zip(table["linear_before"], table["linear_after"])],
            "RBF-SVM acc.": [f"{_fmt(a)} → {_fmt(b)}" for a, b in zip(table["rbf_before"], table["rbf_after"])],
            "biased rows": [f"{a:,} → {b:,}" for a, b in zip(table["biased_before"], table["biased_after"])],
            "biased share": [
                f"{share(a)} → {share(b)}" for a, b in zip(table["biased_share_before"], table["biased_share_after"])
            ],
            "flipped rows removed": [share(x) for x in table["flipped_removed_share"]],
            "unbiased rows removed": [share(x) for x in table["unbiased_removed_share"]],
            "rounds": table["rounds"],
            "stopped because": table["stop_reason"].str.replace("_", " "),
        }
    )
