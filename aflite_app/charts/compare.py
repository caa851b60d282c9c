"""The Compare runs page's figures: removals of two runs by class and by round, and the words that differ."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .theme import REMOVED, plotly_text, style

__all__ = ["GROUP_COLOURS", "class_groups_chart", "round_groups_chart", "word_shares_chart"]

#: removed by both, by the first run only, by the second only (Okabe-Ito; vermillion is "removed" on every page)
GROUP_COLOURS = {"both": REMOVED, "a_only": "#CC79A7", "b_only": "#009E73"}
RUN_COLOURS = ("#CC79A7", "#009E73")


def _names(names: tuple[str, str]) -> tuple[str, str]:
    return plotly_text(names[0]), plotly_text(names[1])


def class_groups_chart(by_class: pd.DataFrame, names: tuple[str, str] = ("A", "B"), *, title: str | None = None):
    """Per class, the rows removed by both runs, by A only and by B only (stacked bars; the Jaccard on top).

    ``by_class`` is :attr:`aflite_core.measures.run_diff.RunDiff.by_class`.
    """
    a, b = _names(names)
    x = [plotly_text(str(c)) for c in by_class["class"]]
    fig = go.Figure()
    groups = (("both", "removed by both"), ("a_only", f"removed by {a} only"), ("b_only", f"removed by {b} only"))
    for col, label in groups:
        fig.add_trace(
            go.Bar(
                x=x,
                y=by_class[col],
                name=label,
                marker_color=GROUP_COLOURS[col],
                customdata=by_class[["rows"]].to_numpy(),
                hovertemplate="%{x}: %{y:,} rows " + label + " (of %{customdata[0]:,})<extra></extra>",
            )
        )
    tops = by_class[["both", "a_only", "b_only"]].sum(axis=1)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=tops,
            mode="text",
            text=[f"J = {j:.2f}" for j in by_class["jaccard"]],
            textposition="top center",
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.update_layout(barmode="stack", bargap=0.3, legend_traceorder="normal")
    fig.update_xaxes(title_text="class", type="category")
    top = float(tops.max()) if len(tops) else 1.0
    fig.update_yaxes(title_text="rows removed", rangemode="tozero", range=[0, max(top, 1.0) * 1.18])
    return style(fig, height=360, title=title)


def round_groups_chart(by_round: pd.DataFrame, names: tuple[str, str] = ("A", "B"), *, title: str | None = None):
    """Per run and round, the rows it removed then: also removed by the other run, or only by this one.

    ``by_round`` is :attr:`aflite_core.measures.run_diff.RunDiff.by_round` (columns ``run``, ``round``,
    ``removed``, ``also_other``, ``only_this``); the x axis groups the rounds under each run's name.
    """
    a, b = _names(names)
    shown = {names[0]: a, names[1]: b}
    runs = [shown.get(r, plotly_text(str(r))) for r in by_round["run"]]
    x = [runs, [str(int(r)) for r in by_round["round"]]]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=x,
            y=by_round["also_other"],
            name="also removed by the other run",
            marker_color=REMOVED,
            hovertemplate="run %{x[0]}, round %{x[1]}: %{y:,} rows the other run removed too<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            x=x,
            y=by_round["only_this"],
            name="kept by the other run",
            marker_color="#56B4E9",
            hovertemplate="run %{x[0]}, round %{x[1]}: %{y:,} rows the other run kept<extra></extra>",
        )
    )
    fig.update_layout(barmode="stack", bargap=0.2, legend_traceorder="normal")
    fig.update_xaxes(title_text="run · round it removed the rows in")
    fig.update_yaxes(title_text="rows removed", rangemode="tozero")
    return style(fig, height=340, title=title)


def word_shares_chart(words: pd.DataFrame, names: tuple[str, str] = ("A", "B"), *, top: int = 15, title=None):
    """The significant words (largest |z| first, at most ``top``): each run's share of the word's rows removed.

    ``words`` is :attr:`aflite_core.measures.run_diff.RunDiff.words`.
    """
    a, b = _names(names)
    part = words.loc[words["significant"].astype(bool)].head(top).iloc[::-1]
    y = [plotly_text(str(t)) for t in part["token"]]
    fig = go.Figure()
    runs = (("share_a", a, RUN_COLOURS[0], "circle"), ("share_b", b, RUN_COLOURS[1], "diamond"))
    for col, name, colour, symbol in runs:
        fig.add_trace(
            go.Scatter(
                x=part[col],
                y=y,
                mode="markers",
                name=f"share removed by {name}",
                marker=dict(color=colour, size=11, symbol=symbol),
                customdata=part[["count", "z"]].to_numpy(),
                hovertemplate="'%{y}': "
                + name
                + " removed %{x:.0%} of its %{customdata[0]:,} rows (z = %{customdata[1]:.1f})<extra></extra>",
            )
        )
    for _, row in part.iterrows():
        fig.add_shape(
            type="line",
            x0=row["share_a"],
            x1=row["share_b"],
            y0=plotly_text(str(row["token"])),
            y1=plotly_text(str(row["token"])),
            line=dict(color="#BBBBBB", width=2),
            layer="below",
        )
    fig.update_xaxes(title_text="share of the word's rows removed", tickformat=".0%")
    fig.update_yaxes(type="category")
    return style(fig, height=max(240, 36 * len(part) + 120), title=title)
