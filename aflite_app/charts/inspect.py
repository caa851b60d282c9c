"""Pure chart builders of the Inspect page: small tables in, Plotly figures out (no Streamlit).

Kept rows are blue and removed rows vermillion, as on every page.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .data import artifact_statistics_chart
from .theme import KEPT, NEUTRAL, REMOVED, TAU_LINE, style

__all__ = [
    "artifact_chart",
    "artifact_shares_chart",
    "artifact_statistics_chart",
    "class_status_chart",
    "explanation_rounds_chart",
    "pixel_artifact_chart",
    "stability_chart",
    "status_cell_style",
    "votes_chart",
]


def status_cell_style(value: str) -> str:
    """CSS of a ``status`` cell of the rows table: removed in bold vermillion, kept in blue (``Styler.map``)."""
    return f"color: {REMOVED}; font-weight: 600" if value == "removed" else f"color: {KEPT}"


def class_status_chart(impact: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Rows per class, kept (blue) and removed (vermillion) stacked, the share lost written above each bar.

    ``impact`` is :func:`aflite_core.measures.stability.class_impact`'s table (``label, n_after, n_removed, share_lost,
    warning``); flagged classes get their share lost in bold with a "!".
    """
    names = [str(c) for c in impact["label"]]
    lost = impact["share_lost"].to_numpy(dtype=float)
    warn = impact["warning"].to_numpy(dtype=bool)
    before = impact["n_after"].to_numpy() + impact["n_removed"].to_numpy()
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=names,
            y=impact["n_after"],
            name="kept",
            marker_color=KEPT,
            customdata=np.c_[before, lost],
            hovertemplate="class %{x}: %{y:,} of %{customdata[0]:,} rows kept<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            x=names,
            y=impact["n_removed"],
            name="removed",
            marker_color=REMOVED,
            customdata=np.c_[before, lost],
            hovertemplate="class %{x}: %{y:,} of %{customdata[0]:,} rows removed (%{customdata[1]:.0%})<extra></extra>",
        )
    )
    labels = [f"<b>−{s:.0%} !</b>" if w else f"−{s:.0%}" for s, w in zip(lost, warn)]
    fig.add_trace(
        go.Scatter(
            x=names,
            y=before,
            mode="text",
            text=labels,
            textposition="top center",
            showlegend=False,
            hoverinfo="skip",
            textfont=dict(color=REMOVED),
        )
    )
    fig.update_layout(barmode="stack", bargap=0.25)
    fig.update_xaxes(title_text="class", type="category")
    fig.update_yaxes(title_text="rows", rangemode="tozero", range=[0, float(before.max()) * 1.15 if len(before) else 1])
    return style(fig, height=340, title=title)


def stability_chart(counts: pd.DataFrame, n_runs: int, *, title: str | None = None) -> go.Figure:
    """Rows by how many of ``n_runs`` seeds removed them, split by this run's decision (stacked bars).

    ``counts`` has columns ``k`` (0..n_runs), ``removed`` and ``kept`` (rows this run removed / kept).
    """
    x = [f"{int(k)} of {n_runs}" for k in counts["k"]]
    fig = go.Figure()
    for col, colour, label in (("removed", REMOVED, "removed in this run"), ("kept", KEPT, "kept in this run")):
        fig.add_trace(
            go.Bar(
                x=x,
                y=counts[col],
                name=label,
                marker_color=colour,
                hovertemplate="removed by %{x} seeds: %{y:,} rows " + label + "<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack", bargap=0.2)
    fig.update_xaxes(title_text=f"seeds that removed the row (of {n_runs} runs)", type="category")
    fig.update_yaxes(title_text="rows", rangemode="tozero")
    return style(fig, height=320, title=title)


def artifact_chart(
    frame: pd.DataFrame, label: str, *, kind: str = "token", max_bars: int = 15, title: str | None = None
) -> go.Figure:
    """The artifact table of one class as horizontal bars (strongest at the top).

    ``kind="token"``: ``frame`` from :func:`aflite_core.measures.removed_artifacts.token_artifacts`; bars are the
    log-odds ratio of a token appearing in removed vs kept rows (right, vermillion: skewed toward removed rows).
    ``kind="feature"``: ``frame`` from :func:`aflite_core.measures.removed_artifacts.feature_artifacts` with a
    ``feature`` column; bars are the AUC of the feature for "removed vs kept", drawn from 0.5 (no separation).
    At most ``max_bars`` bars (per direction for tokens), the strongest.
    """
    if kind not in ("token", "feature"):
        raise ValueError(f"kind must be 'token' or 'feature'. Got {kind!r} instead.")
    part = frame[frame["label"].astype(str) == str(label)]
    fig = go.Figure()
    if kind == "token":
        part = part[part["rank"] <= max_bars].sort_values("log_odds")
        colours = [REMOVED if v > 0 else KEPT for v in part["log_odds"]]
        fig.add_trace(
            go.Bar(
                x=part["log_odds"],
                y=part["token"],
                orientation="h",
                marker_color=colours,
                showlegend=False,
                customdata=np.c_[
                    part["n_removed"], part["n_retained"], part["share_removed"], part["share_retained"], part["z"]
                ],
                hovertemplate="'%{y}': in %{customdata[0]:,} removed rows (%{customdata[2]:.1%}) and "
                "%{customdata[1]:,} kept rows (%{customdata[3]:.1%})<br>log-odds %{x:.2f}, "
                "z = %{customdata[4]:.1f}<extra></extra>",
            )
        )
        fig.add_vline(x=0, line=dict(color=TAU_LINE, width=1))
        fig.update_xaxes(title_text="log-odds ratio (removed vs kept rows; > 0 = skewed toward removed)")
        fig.update_yaxes(title_text="token", type="category")
    else:
        part = part.assign(dev=(part["auc"] - 0.5).abs()).sort_values("dev").tail(max_bars)
        colours = [REMOVED if v > 0.5 else KEPT for v in part["auc"]]
        fig.add_trace(
            go.Bar(
                x=part["auc"] - 0.5,
                base=0.5,
                y=part["feature"].astype(str),
                orientation="h",
                marker_color=colours,
                showlegend=False,
                customdata=np.c_[part["auc"], part["mean_removed"], part["mean_retained"], part["smd"]],
                hovertemplate="%{y}: AUC %{customdata[0]:.2f}<br>mean among removed %{customdata[1]:.3g}, among kept "
                "%{customdata[2]:.3g} (standardised difference %{customdata[3]:.2f})<extra></extra>",
            )
        )
        fig.add_vline(x=0.5, line=dict(color=TAU_LINE, width=1))
        fig.update_xaxes(
            title_text="AUC, removed vs kept rows (0.5 = no difference; > 0.5 = higher among removed)", range=[0, 1]
        )
        fig.update_yaxes(title_text="feature", type="category")
    # legend-like keys for the two colours
    for colour, text in ((REMOVED, "skewed toward removed rows"), (KEPT, "skewed toward kept rows")):
        fig.add_trace(go.Bar(x=[None], y=[None], marker_color=colour, name=text, orientation="h"))
    return style(fig, height=max(260, 28 * len(part) + 120), title=title)


def pixel_artifact_chart(
    frame: pd.DataFrame, label: str, shape: tuple[int, int], *, title: str | None = None
) -> go.Figure:
    """Where removed images of one class differ from kept ones: mean kept, mean removed, and AUC per pixel.

    ``frame`` is :func:`aflite_core.measures.removed_artifacts.feature_artifacts` computed for *every* pixel (``top_k``
    = number of pixels), dimensions numbered row by row over an image of ``shape`` (h, w).
    """
    h, w = shape
    part = frame[frame["label"].astype(str) == str(label)]
    grids = {}
    for col in ("mean_retained", "mean_removed", "auc"):
        g = np.full(h * w, np.nan)
        g[part["dimension"].to_numpy(dtype=int)] = part[col].to_numpy(dtype=float)
        grids[col] = g.reshape(h, w)
    hi = float(np.nanmax([np.nanmax(grids["mean_retained"]), np.nanmax(grids["mean_removed"]), 1e-9]))
    fig = make_subplots(
        rows=1,
        cols=3,
        horizontal_spacing=0.06,
        subplot_titles=[
            f"mean image, kept rows of {label}",
            f"mean image, removed rows of {label}",
            "AUC per pixel (removed vs kept)",
        ],
    )
    for i, (col, name) in enumerate((("mean_retained", "kept"), ("mean_removed", "removed")), start=1):
        fig.add_trace(
            go.Heatmap(
                z=grids[col],
                zmin=0,
                zmax=hi,
                colorscale="Greys",
                showscale=False,
                hovertemplate=f"row %{{y}}, column %{{x}}<br>mean value among {name} rows: %{{z:.2f}}<extra></extra>",
            ),
            row=1,
            col=i,
        )
    spread = max(0.1, float(np.nanmax(np.abs(grids["auc"] - 0.5))) if np.isfinite(grids["auc"]).any() else 0.1)
    fig.add_trace(
        go.Heatmap(
            z=grids["auc"],
            zmin=0.5 - spread,
            zmax=0.5 + spread,
            colorscale=[[0, KEPT], [0.5, "#FFFFFF"], [1, REMOVED]],
            colorbar=dict(title=dict(text="AUC", side="right"), len=0.9, thickness=12),
            hovertemplate=(
                "row %{y}, column %{x}<br>AUC %{z:.2f} (> 0.5: brighter ink among removed rows)<extra></extra>"
            ),
        ),
        row=1,
        col=3,
    )
    for c in range(1, 4):
        fig.update_xaxes(title_text="pixel column", constrain="domain", showgrid=False, row=1, col=c)
        fig.update_yaxes(
            title_text="pixel row" if c == 1 else None,
            autorange="reversed",
            showgrid=False,
            scaleanchor=f"x{'' if c == 1 else c}",
            scaleratio=1,
            constrain="domain",
            row=1,
            col=c,
        )
    fig.update_annotations(font_size=12)
    return style(fig, height=330, title=title)


def artifact_shares_chart(
    shares: pd.DataFrame, *, z_critical: float, max_pairs: int = 20, title: str | None = None
) -> go.Figure:
    """Did the filter take the artifact away? Each significant token's share among kept vs removed rows.

    ``shares`` is :func:`aflite_core.measures.artifact_statistics.artifact_shares`'s table for the significant (token,
    label) pairs (the ``max_pairs`` with the largest z are drawn, the strongest at the top). Per pair, the share of
    kept rows (blue) and of removed rows (vermillion) whose text contains the token, joined by a grey line: a
    token far more common among removed rows is one AFLite's removals went after. The hover adds p̂ and z on
    all rows and on the kept rows alone (the pair is still significant after filtering when z_kept > z*).
    """
    part = shares.sort_values("z", ascending=False).head(max_pairs).iloc[::-1]
    names = [f"{t} → {lab}" for t, lab in zip(part["token"], part["label"])]
    fig = go.Figure()
    for i, (_, row) in enumerate(part.iterrows()):
        fig.add_trace(
            go.Scatter(
                x=[row["share_kept"], row["share_removed"]],
                y=[names[i], names[i]],
                mode="lines",
                line=dict(color=NEUTRAL, width=2),
                showlegend=False,
                hoverinfo="skip",
            )
        )
    still = np.where(part["z_kept"].to_numpy(dtype=float) > z_critical, "still significant", "no longer significant")
    custom = np.c_[
        [html.escape(str(t)) for t in part["token"]],
        part["count_kept"],
        part["count_removed"],
        part["p_hat"].round(2),
        part["p_hat_kept"].round(2),
        part["z"].round(1),
        part["z_kept"].round(1),
        still,
    ]
    tail = (
        "<br>p̂(label | token) %{customdata[3]} on all rows → %{customdata[4]} on kept rows"
        "<br>z %{customdata[5]} → %{customdata[6]} (%{customdata[7]} among kept rows)<extra></extra>"
    )
    fig.add_trace(
        go.Scatter(
            x=part["share_kept"],
            y=names,
            mode="markers",
            name="share of kept rows with the token",
            marker=dict(color=KEPT, size=11),
            customdata=custom,
            hovertemplate="'%{customdata[0]}' in %{customdata[1]:,} kept rows (%{x:.1%} of them)" + tail,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=part["share_removed"],
            y=names,
            mode="markers",
            name="share of removed rows with the token",
            marker=dict(color=REMOVED, size=11, symbol="diamond"),
            customdata=custom,
            hovertemplate="'%{customdata[0]}' in %{customdata[2]:,} removed rows (%{x:.1%} of them)" + tail,
        )
    )
    fig.update_xaxes(title_text="share of rows whose text<br>contains the token", tickformat=".0%", rangemode="tozero")
    fig.update_yaxes(title_text=None, type="category")
    fig.update_layout(meta={"n_pairs": len(part)})
    return style(fig, height=max(260, 26 * len(part) + 130), title=title)


def explanation_rounds_chart(rounds: pd.DataFrame, tau: float, *, title: str | None = None) -> go.Figure:
    """One row's p in every round it was scored against τ (the explanation panel).

    ``rounds`` is :class:`aflite_core.measures.explain.RowExplanation`'s ``rounds`` (``round``, ``p``,
    ``n_predictions``, ``reaches_tau``); points at or above τ are vermillion.
    """
    fig = go.Figure()
    x = rounds["round"].to_numpy()
    at = rounds["reaches_tau"].to_numpy(dtype=bool)
    fig.add_trace(
        go.Scatter(
            x=[int(r) for r in x],  # plain lists: a few rounds, readable in the figure's JSON
            y=[float(p) for p in rounds["p"]],
            mode="lines+markers",
            name="p",
            line=dict(color=NEUTRAL),
            marker=dict(size=10, color=[REMOVED if a else KEPT for a in at]),
            customdata=rounds["n_predictions"].astype("float").to_numpy(),
            hovertemplate="round %{x}: p = %{y:.3f} (%{customdata:.0f} held-out models)<extra></extra>",
            showlegend=False,
        )
    )
    fig.add_hline(y=tau, line=dict(color=TAU_LINE, dash="dash", width=1), annotation_text=f"τ = {tau:g}")
    fig.update_xaxes(
        title_text="round", tickmode="array", tickvals=x, range=[0.5, max(float(x.max()), 1) + 0.5] if len(x) else None
    )
    fig.update_yaxes(title_text="predictability p", range=[-0.03, 1.05])
    return style(fig, height=260, title=title)


def votes_chart(votes: pd.DataFrame, round_no: int, *, title: str | None = None) -> go.Figure:
    """The held-out models' votes per class in one round (the row's own class vermillion, the others grey)."""
    names = [str(c) for c in votes["class"]]
    fig = go.Figure(
        go.Bar(
            x=[int(v) for v in votes["votes"]],
            y=names,
            orientation="h",
            marker_color=[REMOVED if is_label else NEUTRAL for is_label in votes["is_label"]],
            text=[f"{v:,} ({s:.0%})" for v, s in zip(votes["votes"], votes["share"])],
            textposition="auto",
            hovertemplate="%{y}: %{x:,} votes<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=f"held-out models' votes in round {round_no}", rangemode="tozero")
    fig.update_yaxes(type="category", autorange="reversed")
    return style(fig, height=90 + 28 * len(names), title=title)
