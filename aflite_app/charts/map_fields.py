"""Pure chart builders for the Embedding map coloured by a per-row field (no Streamlit): a number, a word, a level.

The map of :mod:`aflite_app.charts.embedding` with another colouring: each row's value of a field (a number such as
predictability, a word's presence, a difficulty level, stability across seeds) as points
(:func:`embedding_field_scatter`) or, above the points limit, per density cell (:func:`embedding_field_density`:
a number's mean, a 0/1 field's share, a category's most common value).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .embedding import _finish, _hover, _lasso_map, _point_traces
from .theme import NEUTRAL, plotly_text

__all__ = [
    "embedding_field_density",
    "embedding_field_scatter",
]

#: a number's colour scale (colour-blind safe, dark = low): viridis
NUMBER_SCALE = "Viridis"
#: a word's rows (with it: orange; without it: light grey)
WORD_COLOURS = ("#C8C8C8", "#E69F00")
#: a 0/1 field's share per cell: none light grey, any at all light orange, all dark orange (rare words stand out)
SHARE_SCALE = [[0.0, "#E3E3E3"], [0.001, "#FCD9A0"], [0.5, "#E69F00"], [1.0, "#8A4500"]]
#: difficulty levels easy, ambiguous, hard (Okabe-Ito green, yellow-orange, reddish purple); no level: grey
LEVEL_COLOURS = ("#009E73", "#E69F00", "#CC79A7")


def _field_hover(frame: pd.DataFrame, field) -> np.ndarray:
    """The map's hover lines with the field's value of each point."""
    text = _hover(frame)
    values = frame["value"].to_numpy(dtype=float)
    if field.kind == "number":
        shown = np.where(np.isnan(values), "none", pd.Series(values).map("{:.2f}".format).to_numpy(dtype=object))
    elif field.kind == "share":
        shown = np.where(values > 0, "yes", "no").astype(object)
    else:
        names = np.asarray([*field.categories, "none"], dtype=object)
        codes = np.where(np.isnan(values) | (values < 0), len(field.categories), values).astype(np.intp)
        shown = names[codes]
    return text + "<br>" + plotly_text(field.value_name) + ": " + shown


def embedding_field_scatter(
    frame: pd.DataFrame,
    field,
    *,
    axis_titles: tuple[str, str] = ("component 1", "component 2"),
    selected: Collection[int] | None = None,
    revision: int = 0,
    title: str | None = None,
    height: int = 600,
    extent: tuple[float, float, float, float] | None = None,
) -> go.Figure:
    """The 2-D map of the rows coloured by a per-row field, one point per row.

    Parameters
    ----------
    frame : DataFrame
        As for :func:`aflite_app.charts.embedding.embedding_scatter`, plus ``value``: the row's value of ``field``.
    field : aflite_app.compute.embedding.MapField
        A number (colour scale from dark = low to yellow = high, with a colour bar titled ``field.title``; rows
        without a value grey), a 0/1 share (a word: rows with it orange, the others light grey) or categories
        (difficulty levels: one colour each, rows without one grey), the legend naming each.
    axis_titles, selected, revision, title, height, extent
        As in :func:`aflite_app.charts.embedding.embedding_scatter`.

    Returns
    -------
    plotly.graph_objects.Figure
        Every trace's ``customdata`` holds each point's row position; ``dragmode`` is "lasso".
    """
    values = frame["value"].to_numpy(dtype=float)
    fig = go.Figure()
    add = _point_traces(fig, frame, _field_hover(frame, field), selected)

    if field.kind == "number":
        none = np.isnan(values)
        if none.any():
            add(none, f"no value ({none.sum():,})", dict(color=NEUTRAL, opacity=0.35))
        add(
            ~none,
            f"{plotly_text(field.value_name)} ({(~none).sum():,})",
            dict(
                color=values[~none],
                colorscale=NUMBER_SCALE,
                cmin=0,
                cmax=1,
                opacity=0.85,
                colorbar=dict(title=dict(text=field.title), thickness=14, len=0.75, y=0.45),
            ),
        )
    elif field.kind == "share":
        has = values > 0
        without, with_ = field.categories or ("without", "with")
        add(~has, f"{plotly_text(without)} ({(~has).sum():,})", dict(color=WORD_COLOURS[0], opacity=0.5))
        add(has, f"{plotly_text(with_)} ({has.sum():,})", dict(color=WORD_COLOURS[1], opacity=0.95))
    else:
        codes = np.where(np.isnan(values), -1, values).astype(np.int64)
        for i, name in enumerate(field.categories):
            mask = codes == i
            if mask.any():
                colour = LEVEL_COLOURS[i % len(LEVEL_COLOURS)]
                add(mask, f"{plotly_text(name)} ({mask.sum():,})", dict(color=colour, opacity=0.8))
        none = codes < 0
        if none.any():
            add(none, f"no level ({none.sum():,})", dict(color=NEUTRAL, opacity=0.35))
    return _lasso_map(fig, revision, axis_titles, extent, height, title)


def embedding_field_density(
    layer,
    *,
    axis_titles: tuple[str, str] = ("component 1", "component 2"),
    revision: int = 0,
    title: str | None = None,
    height: int = 600,
    extent: tuple[float, float, float, float] | None = None,
) -> go.Figure:
    """The map of every row as a density image coloured by a per-row field: one heatmap cell per bin.

    Parameters
    ----------
    layer : aflite_app.compute.embedding.MapLayer
        A density layer with a ``field``: a number's mean per cell or a 0/1 field's share per cell (``layer.values``,
        a :class:`~aflite_core.measures.map_grids.ValueGrid`, colour scale 0-1 with its colour bar; cells whose rows
        have no value grey), or a category field's most common category per cell (``layer.grid``).
    axis_titles, revision, title, height, extent
        As in :func:`aflite_app.charts.embedding.embedding_scatter`.

    Returns
    -------
    plotly.graph_objects.Figure
        O(bins²) numbers whatever the rows; the hover gives each cell's rows and value; ``dragmode`` is "lasso".
    """
    field = layer.field
    fig = go.Figure()
    if layer.values is not None:
        grid = layer.values
        total, n_valued = np.asarray(grid.counts), np.asarray(grid.n_valued)
        common = dict(x=grid.x_centres, y=grid.y_centres, zsmooth=False, hoverongaps=False, xgap=0, ygap=0)
        unvalued = (total > 0) & (n_valued == 0)
        if unvalued.any():
            fig.add_trace(
                go.Heatmap(
                    z=np.where(unvalued, 0.0, np.nan).astype(np.float32),
                    colorscale=[[0, NEUTRAL], [1, NEUTRAL]],
                    showscale=False,
                    customdata=total.astype(np.int32),
                    hovertemplate="%{customdata:,} rows here, none with a value<extra></extra>",
                    name="no value",
                    **common,
                )
            )
        share = field.kind == "share"
        what = "share of rows" if share else "mean"
        fig.add_trace(
            go.Heatmap(
                z=np.where(n_valued > 0, grid.mean, np.nan).astype(np.float32),
                customdata=np.dstack([total, n_valued]).astype(np.int32),
                colorscale=SHARE_SCALE if share else NUMBER_SCALE,
                zmin=0,
                zmax=1,
                colorbar=dict(
                    title=dict(text=field.title if share else f"{field.title}<br>(mean per cell)"),
                    tickformat=".0%" if share else ".1f",
                    thickness=14,
                    len=0.75,
                ),
                hovertemplate=(
                    "%{customdata[0]:,} rows here · %{z:.0%} " + plotly_text(field.value_name)
                    if share
                    else "%{customdata[0]:,} rows here · " + what + " " + plotly_text(field.value_name) + " %{z:.2f} "
                    "over %{customdata[1]:,} rows with one"
                )
                + "<extra></extra>",
                name=field.value_name,
                **common,
            )
        )
        edges = (float(grid.x_edges[0]), float(grid.x_edges[-1]), float(grid.y_edges[0]), float(grid.y_edges[-1]))
    else:
        grid = layer.grid
        counts = np.asarray(grid.counts)
        total = counts.sum(axis=2)
        empty = total == 0
        k = counts.shape[2]
        names = [*field.categories, "none"][:k]
        palette = [*LEVEL_COLOURS[: len(field.categories)], NEUTRAL][:k]
        top = counts.argmax(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            top_share = np.take_along_axis(counts, top[..., None], axis=2)[..., 0] / np.where(empty, 1, total)
        steps = []
        for i, colour in enumerate(palette):
            steps += [[i / k, colour], [(i + 1) / k, colour]]
        fig.add_trace(
            go.Heatmap(
                x=grid.x_centres,
                y=grid.y_centres,
                z=np.where(empty, np.nan, top + 0.5).astype(np.float32),
                customdata=np.dstack([total, top_share]).astype(np.float32),
                text=np.asarray([plotly_text(n) for n in names], dtype=object)[top],
                colorscale=steps,
                zmin=0,
                zmax=k,
                zsmooth=False,
                hoverongaps=False,
                colorbar=dict(
                    title=dict(text=f"most common<br>{field.title}"),
                    tickvals=np.arange(k) + 0.5,
                    ticktext=[plotly_text(n) for n in names],
                    thickness=14,
                    len=0.75,
                ),
                hovertemplate="%{customdata[0]:,} rows here · most are %{text} (%{customdata[1]:.0%})<extra></extra>",
                name=field.value_name,
            )
        )
        edges = (float(grid.x_edges[0]), float(grid.x_edges[-1]), float(grid.y_edges[0]), float(grid.y_edges[-1]))
    fig.update_layout(
        dragmode="lasso", hovermode="closest", clickmode="event+select", meta={"selection_revision": int(revision)}
    )
    return _finish(fig, axis_titles, extent if extent is not None else edges, height, title)
