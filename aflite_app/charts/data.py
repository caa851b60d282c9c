"""Pure chart builders of the Data page (Plotly, no Streamlit): sample images per class, rows per class."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .theme import class_colour_map, style

__all__ = ["class_count_chart", "sample_grid"]


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
