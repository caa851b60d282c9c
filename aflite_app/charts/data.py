"""Pure chart builders of the Data page (Plotly, no Streamlit).

Sample images per class, rows per class, and Gardner et al.'s token statistics (also drawn on the Inspect page).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from aflite_core.measures.artifact_statistics import significance_curve

from .theme import NEUTRAL, TAU_LINE, class_colour_map, style

__all__ = ["artifact_statistics_chart", "class_count_chart", "sample_grid"]


def sample_grid(
    images: np.ndarray,
    y: np.ndarray,
    classes: Sequence,
    *,
    per_class: int = 8,
    random_state: int = 0,
    title: str | None = None,
) -> go.Figure:
    """A mosaic of ``per_class`` seeded random sample images per class (one row per class), in grey.

    ``images`` is (n, h, w); ``y`` the integer class codes; ``classes`` the class names in code order. One
    Heatmap trace; empty tiles (a class with fewer rows) stay blank. The y axis names the classes.
    """
    imgs = np.asarray(images, dtype=float)
    if imgs.ndim != 3:
        raise ValueError(f"images must have shape (n, h, w); got {imgs.shape}.")
    codes = np.asarray(y)
    h, w = imgs.shape[1:]
    gap = 1
    C = len(classes)
    mosaic = np.full((C * (h + gap), per_class * (w + gap)), np.nan)
    rng = np.random.default_rng(random_state)
    shown = 0
    for c in range(C):
        rows = np.flatnonzero(codes == c)
        pick = np.sort(rng.permutation(rows)[:per_class]) if len(rows) else rows
        for j, i in enumerate(pick):
            r0, c0 = c * (h + gap), j * (w + gap)
            mosaic[r0 : r0 + h, c0 : c0 + w] = imgs[i]
            shown += 1
    fig = go.Figure(
        go.Heatmap(
            z=mosaic,
            colorscale="Greys",
            showscale=False,
            hoverinfo="skip",
            zmin=0,
            zmax=float(np.nanmax(imgs)) if imgs.size else 1.0,
        )
    )
    centres = [c * (h + gap) + (h - 1) / 2 for c in range(C)]
    fig.update_yaxes(
        autorange="reversed",
        tickvals=centres,
        ticktext=[str(c) for c in classes],
        title_text="class",
        showgrid=False,
        zeroline=False,
        scaleanchor="x",
        constrain="domain",
    )
    fig.update_xaxes(
        showticklabels=False,
        showgrid=False,
        zeroline=False,
        constrain="domain",
        constraintoward="left",
        title_text=f"{per_class} random examples per class ({h}×{w} pixels each)",
    )
    fig.update_layout(meta={"n_images": shown})
    return style(fig, height=max(240, 38 * C + 90), title=title)


def class_count_chart(counts: pd.Series, *, title: str | None = None) -> go.Figure:
    """Horizontal bars: rows per class (index = class names), each class in its class colour."""
    names = [str(c) for c in counts.index]
    colours = class_colour_map(names)
    total = max(int(counts.sum()), 1)
    fig = go.Figure(
        go.Bar(
            y=names,
            x=counts.to_numpy(),
            orientation="h",
            marker_color=[colours[n] for n in names],
            customdata=(counts.to_numpy() / total).reshape(-1, 1),
            hovertemplate="%{y}: %{x:,} rows (%{customdata[0]:.1%})<extra></extra>",
            showlegend=False,
        )
    )
    fig.update_xaxes(title_text="rows", rangemode="tozero")
    fig.update_yaxes(title_text="class", autorange="reversed", type="category")
    return style(fig, height=max(200, 26 * len(names) + 100), title=title)


def artifact_statistics_chart(
    stats: pd.DataFrame, *, n_labelled: int = 12, title: str | None = None, height: int = 520
) -> go.Figure:
    """Gardner et al.'s Figure 1: every (token, label) pair at n = texts with the token vs p̂(label | token).

    ``stats`` is :func:`aflite_core.measures.artifact_statistics.artifact_statistics`'s table (its ``attrs`` give the
    labels, the number of tests, α and z*), optionally with an ``examples`` column (texts shown on hover). One colour
    per label, two traces each: the significant pairs, large and opaque, named in the legend, and the others,
    small and faint. Pairs never seen together (p̂ = 0) are left out. The dashed curve is the p̂ a token seen in
    n texts needs to be significant (:func:`aflite_core.measures.artifact_statistics.significance_curve`; above it =
    significant), the dotted line the null 1/|Y|. The ``n_labelled`` significant pairs with the largest z are
    named on the chart. ``layout.meta`` holds ``n_points`` and ``n_significant``.
    """
    attrs = stats.attrs
    labels = list(attrs.get("labels") or pd.unique(stats["label"]))
    colours = class_colour_map(labels)
    shown = stats[stats["label_count"] > 0]
    z_crit = float(attrs.get("z_critical", np.nan))
    fig = go.Figure()
    hover = (
        "<b>%{customdata[0]}</b> → %{customdata[6]}: %{customdata[1]} of %{x:,} texts (p̂ = %{y:.2f})<br>"
        "z = %{customdata[2]} (%{customdata[3]}"
        + (f" above z* = {z_crit:.2f}" if np.isfinite(z_crit) else "")
        + "), PMI %{customdata[4]}<br>e.g.%{customdata[5]}<extra></extra>"
    )
    for label in labels:
        part = shown[shown["label"].astype(str) == str(label)]
        # significant pairs large and opaque (the legend's marker), the others small and faint, one colour
        for sig in (False, True):
            sub = part[part["significant"].astype(bool) == sig]
            if not len(sub) and not sig:
                continue
            examples = sub["examples"] if "examples" in sub.columns else pd.Series([[]] * len(sub), index=sub.index)
            fig.add_trace(
                go.Scatter(
                    x=sub["count"],
                    y=sub["p_hat"],
                    mode="markers",
                    name=str(label),
                    legendgroup=str(label),
                    showlegend=sig,
                    marker=dict(
                        color=colours[str(label)],
                        size=10 if sig else 6,
                        opacity=0.95 if sig else 0.35,
                        line=dict(color="#333333", width=1.0 if sig else 0.0),
                    ),
                    customdata=np.c_[
                        [html.escape(str(t)) for t in sub["token"]],
                        sub["label_count"],
                        sub["z"].round(2),
                        np.full(len(sub), "significant" if sig else "not significant"),
                        sub["pmi"].round(2),
                        ["".join(f"<br>  “{html.escape(t)}”" for t in (ex or [])) for ex in examples],
                        np.full(len(sub), html.escape(str(label))),
                    ]
                    if len(sub)
                    else None,
                    hovertemplate=hover,
                )
            )
    n_max = float(stats["count"].max()) if len(stats) else 10.0
    n_min = float(attrs.get("min_count", max(1.0, float(stats["count"].min()) if len(stats) else 1.0)))
    if len(labels) >= 2 and attrs.get("n_tests"):
        n = np.geomspace(max(n_min, 1.0), max(n_max, n_min + 1.0) * 1.1, 200)
        curve = significance_curve(n, n_labels=len(labels), n_tests=int(attrs["n_tests"]), alpha=attrs["alpha"])
        reach = curve <= 1.0
        fig.add_trace(
            go.Scatter(
                x=n[reach],
                y=curve[reach],
                mode="lines",
                name=f"significance threshold (α = {attrs['alpha']:g}, {int(attrs['n_tests']):,} tests)",
                line=dict(color=TAU_LINE, width=1.5, dash="dash"),
                hovertemplate="a token in %{x:,.0f} texts is significant above p̂ = %{y:.2f}<extra></extra>",
            )
        )
        p0 = 1.0 / len(labels)
        fig.add_hline(
            y=p0,
            line=dict(color=NEUTRAL, width=1, dash="dot"),
            annotation_text=f"no information: 1/{len(labels)}",
            annotation_position="bottom right",
            annotation_font_color=NEUTRAL,
        )
    top = shown[shown["significant"].astype(bool)].nlargest(n_labelled, "z") if len(shown) else shown
    if len(top):
        fig.add_trace(
            go.Scatter(
                x=top["count"],
                y=top["p_hat"],
                mode="text",
                text=[html.escape(str(t)) for t in top["token"]],
                textposition="top center",
                textfont=dict(color=[colours[str(lab)] for lab in top["label"]], size=12),
                showlegend=False,
                hoverinfo="skip",
            )
        )
    fig.update_xaxes(type="log", title_text="texts containing the token (n, log scale)")
    fig.update_yaxes(title_text="p̂(label | token)", range=[-0.02, 1.08])
    fig.update_layout(
        meta={"n_points": len(shown), "n_significant": int(stats["significant"].astype(bool).sum())},
        legend_title_text="label",
    )
    return style(fig, height=height, title=title)
