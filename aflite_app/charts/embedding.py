"""Pure chart builders for the Embedding map page (no Streamlit): the 2-D map and the Figure 1 heatmap.

The map is selectable: every point carries its row position in ``customdata`` (read back by
:func:`aflite_app.selection.selected_rows`) and the figure starts in lasso mode. Above the points limit the map is a
density image (:func:`embedding_density`): a heatmap of the 2-D histogram of every row, O(bins²) numbers whatever
the rows; a box or lasso drawn on it reaches the server as its geometry and selects over every row.
The same map coloured by a per-row field is :mod:`aflite_app.charts.map_fields`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .theme import KEPT, REMOVED, class_colour_map, plotly_text, round_colours, style

__all__ = [
    "COLOUR_MODES",
    "embedding_density",
    "embedding_scatter",
    "similarity_heatmap",
    "wrap_title",
]

#: colour control of the map: key -> label (the last five colour by a per-row field:
#: :mod:`aflite_app.charts.map_fields`)
COLOUR_MODES = {
    "status": "kept / removed",
    "round": "round removed",
    "class": "class",
    "p_last": "predictability (last round)",
    "p_removal": "predictability at removal",
    "word": "a word",
    "difficulty": "difficulty level",
    "stability": "stability across seeds",
}
#: the modes :func:`embedding_scatter` and :func:`embedding_density` draw themselves
_OUTCOME_MODES = ("status", "round", "class")
#: characters per line of a map title (at 390 px a longer line runs off the chart)
TITLE_CHARS = 40
#: pixels at the top of the map kept free for the chart's toolbar (Plotly's mode bar): the title starts below it
TOOLBAR_BAND = 48

#: above this many points the map uses WebGL (Scattergl)
WEBGL_POINTS = 5000


def _marker_size(n: int) -> float:
    return 7.0 if n <= 2000 else 5.0 if n <= 10000 else 3.5


def _hover(frame: pd.DataFrame) -> np.ndarray:
    """One hover line per point: id, class, outcome, first-round predictability."""
    ids = (frame["id"].astype(str) if "id" in frame else frame["row"].astype(str)).map(plotly_text)
    rr = frame["removed_round"].to_numpy()
    outcome = np.where(rr > 0, "removed in round " + pd.Series(rr).astype(str).to_numpy(dtype=object), "kept")
    labels = frame["label"].astype(str).map(plotly_text).to_numpy(dtype=object)
    text = "id " + ids.to_numpy(dtype=object) + " · class " + labels
    text = text + "<br>" + outcome
    if "first_score" in frame:
        p = frame["first_score"].to_numpy(dtype=float)
        p_text = np.where(np.isnan(p), "not scored", pd.Series(p).map("{:.2f}".format).to_numpy(dtype=object))
        text = text + "<br>first-round p = " + p_text
    return text


def embedding_scatter(
    frame: pd.DataFrame,
    colour: str = "status",
    *,
    classes: Sequence[str] | None = None,
    n_rounds: int | None = None,
    axis_titles: tuple[str, str] = ("component 1", "component 2"),
    selected: Collection[int] | None = None,
    revision: int = 0,
    title: str | None = None,
    height: int = 600,
    extent: tuple[float, float, float, float] | None = None,
) -> go.Figure:
    """The 2-D map of the rows, coloured by outcome, by the round a row was removed in, or by class.

    Parameters
    ----------
    frame : DataFrame
        One row per point with ``row`` (position in the dataset, put in ``customdata``), ``x``, ``y``,
        ``label`` (class name), ``kept``, ``removed_round`` (-1 if kept) and optionally ``id`` and
        ``first_score`` (for the hover).
    colour : {"status", "round", "class"}
        Kept (blue) vs removed (vermillion); removed rows by round on a sequential palette with kept rows in
        blue; or one colour per class.
    classes : sequence of str, optional
        Class names in order (stable class colours); default: the labels in order of appearance.
    n_rounds : int, optional
        Rounds of the run (the round palette's range); default: the largest round in ``frame``.
    axis_titles : (str, str)
        Titles of the two axes.
    selected : collection of int, optional
        Row positions drawn as selected (the others dimmed), e.g. a selection carried over from the map
        before the colour or the projection changed. Default: no selection.
    revision : int, default=0
        Stored in ``layout.meta``: a new revision makes a new figure (Streamlit then forgets the chart's
        own selection).
    extent : (x0, x1, y0, y1), optional
        The axes' ranges (a zoomed view); default: Plotly's autorange.

    Returns
    -------
    plotly.graph_objects.Figure
        Every trace's ``customdata`` holds the row position of each point (1-D, so a selected point's
        customdata arrives as a plain number); ``dragmode`` is "lasso".
    """
    if colour not in _OUTCOME_MODES:
        raise ValueError(
            f"The 'colour' parameter of embedding_scatter must be one of {list(_OUTCOME_MODES)}. Got {colour!r} "
            "instead."
        )
    kept = frame["kept"].to_numpy(dtype=bool)
    rr = frame["removed_round"].to_numpy()
    fig = go.Figure()
    add = _point_traces(fig, frame, _hover(frame), selected)

    if colour == "status":
        add(kept, f"kept ({kept.sum():,})", dict(color=KEPT, opacity=0.55))
        add(~kept, f"removed ({(~kept).sum():,})", dict(color=REMOVED, opacity=0.8))
    elif colour == "round":
        last = int(n_rounds if n_rounds is not None else max(1, rr.max(initial=1)))
        palette = round_colours(min(max(last, 1), 12))
        if len(palette) == 1:
            palette = palette * 2
        scale = [[i / (len(palette) - 1), c] for i, c in enumerate(palette)]
        add(kept, f"kept ({kept.sum():,})", dict(color=KEPT, opacity=0.35))
        add(
            ~kept,
            f"removed ({(~kept).sum():,}), colour = round",
            dict(
                color=rr[~kept],
                colorscale=scale,
                cmin=1,
                cmax=max(last, 2),
                opacity=0.9,
                colorbar=dict(title=dict(text="round<br>removed"), thickness=14, len=0.75, y=0.45),
            ),
        )
    else:
        labels = frame["label"].astype(str).to_numpy()
        order = [str(c) for c in classes] if classes is not None else list(dict.fromkeys(labels))
        colours = class_colour_map(order)
        for name in order:
            mask = labels == name
            if mask.any():
                add(mask, f"{name} ({mask.sum():,})", dict(color=colours[name], opacity=0.7))
    return _lasso_map(fig, revision, axis_titles, extent, height, title)


def _point_traces(
    fig: go.Figure, frame: pd.DataFrame, hover: np.ndarray, selected: Collection[int] | None
) -> Callable[[np.ndarray, str, dict], None]:
    """``add(mask, name, marker)``: a trace of the rows of ``frame`` in ``mask``, added to ``fig`` (both maps' points).

    WebGL above :data:`WEBGL_POINTS` rows, the marker size of the map's row count, ``hover`` as its text,
    ``customdata`` the rows' positions, and the ``selected`` rows drawn as selected (the others dimmed).
    """
    n = len(frame)
    scatter = go.Scattergl if n > WEBGL_POINTS else go.Scatter
    size = _marker_size(n)
    chosen = (
        None
        if selected is None or not len(selected)
        else np.isin(
            frame["row"].to_numpy(), np.asarray(selected if hasattr(selected, "__array__") else list(selected))
        )
    )

    def add(mask: np.ndarray, name: str, marker: dict) -> None:
        sub = frame.loc[mask]
        kw = {} if chosen is None else {"selectedpoints": np.flatnonzero(chosen[mask]).tolist()}
        fig.add_trace(
            scatter(
                x=sub["x"].to_numpy(),
                y=sub["y"].to_numpy(),
                mode="markers",
                name=name,
                customdata=sub["row"].to_numpy(dtype=np.int64),
                hovertext=hover[mask],
                hovertemplate="%{hovertext}<extra></extra>",
                marker=dict(size=size, **marker),
                **kw,
            )
        )

    return add


def _lasso_map(fig: go.Figure, revision: int, axis_titles, extent, height, title) -> go.Figure:
    """A point map's layout: lasso by default, its selection revision in ``meta``, then :func:`_finish`."""
    fig.update_layout(
        dragmode="lasso", hovermode="closest", clickmode="event+select", meta={"selection_revision": int(revision)}
    )
    return _finish(fig, axis_titles, extent, height, title)


def wrap_title(title: str, width: int = TITLE_CHARS) -> str:
    """``title`` broken into lines of at most about ``width`` characters (at spaces; Plotly never wraps a title).

    Examples
    --------
    >>> wrap_title("UMAP of Φ = partial input: sentence embedding (all-MiniLM-L6-v2) of the hypothesis", 40)
    'UMAP of Φ = partial input: sentence<br>embedding (all-MiniLM-L6-v2) of the<br>hypothesis'
    """
    lines: list[str] = []
    for word in str(title).split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def _finish(fig, axis_titles, extent, height, title) -> go.Figure:
    fig.update_xaxes(title_text=axis_titles[0], zeroline=False)
    fig.update_yaxes(title_text=axis_titles[1], zeroline=False)
    if extent is not None:
        fig.update_xaxes(range=[extent[0], extent[1]])
        fig.update_yaxes(range=[extent[2], extent[3]])
    if not title:
        return style(fig, height=height)
    # the title starts below the toolbar's band (issue 29 item 7: at 390 px the mode bar covered it) and is wrapped
    # so that it fits a phone's width; the legend row follows it
    text = wrap_title(title)
    n_lines = text.count("<br>") + 1
    fig = style(fig, height=height, title=text)
    title_top = TOOLBAR_BAND
    legend_top = title_top + 20 * n_lines + 6
    fig.update_layout(
        margin=dict(t=legend_top + 44),
        title=dict(y=1 - title_top / height, yanchor="top", font=dict(size=15)),
        legend=dict(y=1 - legend_top / height, yanchor="top"),
    )
    return fig


def embedding_density(
    grid,
    colour: str = "status",
    *,
    codes: Sequence[str],
    classes: Sequence[str] | None = None,
    n_rounds: int | None = None,
    axis_titles: tuple[str, str] = ("component 1", "component 2"),
    revision: int = 0,
    title: str | None = None,
    height: int = 600,
    extent: tuple[float, float, float, float] | None = None,
) -> go.Figure:
    """The map of every row as a density image: one heatmap cell per bin of a 2-D histogram.

    Parameters
    ----------
    grid : aflite_core.measures.map_grids.DensityGrid
        Rows per bin and category (``counts[y, x, category]``).
    colour : {"status", "round", "class"}
        A cell's colour: the share of its rows AFLite removed (blue = all kept, vermillion = all removed); the
        mean round its removed rows left in (cells with only kept rows in blue); or its most common class.
    codes : sequence of str
        The grid's categories: "kept", "removed" (status); "kept", "round 1", ... (round); the class names (class).
    classes, n_rounds, axis_titles, revision, title, height, extent
        As in :func:`embedding_scatter`.

    Returns
    -------
    plotly.graph_objects.Figure
        Heatmap traces of ``bins × bins`` cells (empty bins are gaps); the hover gives each cell's rows;
        ``dragmode`` is "lasso". The figure holds O(bins²) numbers, whatever the number of rows.
    """
    if colour not in _OUTCOME_MODES:
        raise ValueError(
            f"The 'colour' parameter of embedding_density must be one of {list(_OUTCOME_MODES)}. Got {colour!r} "
            "instead."
        )
    counts = np.asarray(grid.counts)
    total = counts.sum(axis=2)
    empty = total == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        share_of = counts / np.where(empty, 1, total)[..., None]
    x, y = grid.x_centres, grid.y_centres
    fig = go.Figure()
    common = dict(x=x, y=y, zsmooth=False, hoverongaps=False, xgap=0, ygap=0)
    if colour == "status":
        removed = counts[..., 1] if counts.shape[2] > 1 else np.zeros_like(total)
        z = np.where(empty, np.nan, share_of[..., 1] if counts.shape[2] > 1 else 0.0).astype(np.float32)
        fig.add_trace(
            go.Heatmap(
                z=z,
                customdata=np.dstack([total, removed]).astype(np.int32),
                colorscale=[[0.0, KEPT], [0.5, "#C9B8C9"], [1.0, REMOVED]],
                zmin=0,
                zmax=1,
                colorbar=dict(title=dict(text="share<br>removed"), tickformat=".0%", thickness=14, len=0.75),
                hovertemplate="%{customdata[0]:,} rows here · %{customdata[1]:,} removed (%{z:.0%})<extra></extra>",
                name=f"{int(total.sum()):,} rows",
                **common,
            )
        )
    elif colour == "round":
        removed = total - counts[..., 0]
        rounds = np.arange(counts.shape[2], dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_round = (counts[..., 1:] * rounds[1:]).sum(axis=2) / removed
        last = int(n_rounds if n_rounds is not None else max(1, counts.shape[2] - 1))
        palette = round_colours(min(max(last, 1), 12))
        if len(palette) == 1:
            palette = palette * 2
        scale = [[i / (len(palette) - 1), c] for i, c in enumerate(palette)]
        fig.add_trace(
            go.Heatmap(
                z=np.where(empty, np.nan, 0.0).astype(np.float32),
                colorscale=[[0, KEPT], [1, KEPT]],
                showscale=False,
                customdata=total.astype(np.int32),
                hovertemplate="%{customdata:,} rows here, all kept<extra></extra>",
                name="kept",
                **common,
            )
        )
        fig.add_trace(
            go.Heatmap(
                z=np.where(removed > 0, mean_round, np.nan).astype(np.float32),
                customdata=np.dstack([total, removed]).astype(np.int32),
                colorscale=scale,
                zmin=1,
                zmax=max(last, 2),
                colorbar=dict(title=dict(text="mean round<br>removed"), thickness=14, len=0.75, y=0.45),
                hovertemplate="%{customdata[0]:,} rows here · %{customdata[1]:,} removed, in round %{z:.1f} on "
                "average<extra></extra>",
                name="removed",
                **common,
            )
        )
    else:
        order = [str(c) for c in (classes if classes is not None else codes)]
        colours = class_colour_map(order)
        k = counts.shape[2]
        top = counts.argmax(axis=2)
        top_share = np.take_along_axis(share_of, top[..., None], axis=2)[..., 0]
        steps = []
        for i in range(k):
            c = colours[order[i]] if i < len(order) else "#999999"
            steps += [[i / k, c], [(i + 1) / k, c]]
        names = np.asarray([plotly_text(n) for n in order] + [""] * max(0, k - len(order)), dtype=object)[top]
        fig.add_trace(
            go.Heatmap(
                z=np.where(empty, np.nan, top + 0.5).astype(np.float32),
                customdata=np.dstack([total, top_share]).astype(np.float32),
                text=names,
                colorscale=steps,
                zmin=0,
                zmax=k,
                colorbar=dict(
                    title=dict(text="most common<br>class"),
                    tickvals=np.arange(k) + 0.5,
                    ticktext=[plotly_text(n) for n in order[:k]],
                    thickness=14,
                    len=0.75,
                ),
                hovertemplate="%{customdata[0]:,} rows here · most are %{text} (%{customdata[1]:.0%})<extra></extra>",
                name="classes",
                **common,
            )
        )
    fig.update_layout(
        dragmode="lasso", hovermode="closest", clickmode="event+select", meta={"selection_revision": int(revision)}
    )
    if extent is None:
        extent = (float(grid.x_edges[0]), float(grid.x_edges[-1]), float(grid.y_edges[0]), float(grid.y_edges[-1]))
    return _finish(fig, axis_titles, extent, height, title)


def similarity_heatmap(
    sim,
    *,
    class_name: str,
    ids: Sequence | np.ndarray | None = None,
    title: str | None = None,
    height: int = 520,
) -> go.Figure:
    """Figure 1: the cosine-similarity matrix of sampled retained and removed rows of one class.

    Parameters
    ----------
    sim : aflite_core.measures.geometry.ClassSimilarity
        Retained rows first in ``sim.matrix``, then removed rows.
    class_name : str
        The class, for the title.
    ids : array-like, optional
        Row ids of the dataset (indexed by row position) for the hover; default: row positions.

    Returns
    -------
    plotly.graph_objects.Figure
        One heatmap; the retained block is outlined in blue and the removed block in vermillion, and the
        axis ticks name the two blocks.
    """
    r, m = len(sim.retained_rows), len(sim.removed_rows)
    rows = np.concatenate([np.asarray(sim.retained_rows), np.asarray(sim.removed_rows)]).astype(np.intp)
    Z = np.asarray(sim.matrix, dtype=float)
    ident = np.asarray(ids)[rows] if ids is not None else rows
    who = [f"{'retained' if i < r else 'removed'} id {plotly_text(ident[i])}" for i in range(r + m)]
    text = [[f"{who[i]}<br>{who[j]}<br>cos = {Z[i, j]:.3f}" for j in range(r + m)] for i in range(r + m)]
    off = Z[~np.eye(r + m, dtype=bool)] if r + m > 1 else np.array([])
    zmin, zmax = (float(off.min()), float(off.max())) if off.size else (0.0, 1.0)
    if zmax - zmin < 1e-6:
        zmin, zmax = zmin - 0.05, zmax + 0.05
    fig = go.Figure(
        go.Heatmap(
            z=Z,
            x=np.arange(r + m),
            y=np.arange(r + m),
            text=text,
            hovertemplate="%{text}<extra></extra>",
            colorscale="Greys",
            zmin=zmin,
            zmax=zmax,
            xgap=1,
            ygap=1,
            colorbar=dict(title=dict(text="cosine<br>similarity"), thickness=14),
        )
    )
    ticks, labels = [], []
    for start, count, name, colour in ((0, r, "retained", KEPT), (r, m, "removed", REMOVED)):
        if count == 0:
            continue
        ticks.append(start + (count - 1) / 2)
        labels.append(f"{name} ({count})")
        fig.add_shape(
            type="rect",
            x0=start - 0.5,
            x1=start + count - 0.5,
            y0=start - 0.5,
            y1=start + count - 0.5,
            line=dict(color=colour, width=3),
        )
    axis = dict(
        tickvals=ticks, ticktext=labels, showgrid=False, zeroline=False, range=[-0.6, r + m - 0.4], constrain="domain"
    )
    fig.update_xaxes(title_text=f"sampled rows of class {plotly_text(class_name)}", **axis)
    fig.update_yaxes(
        title_text=f"sampled rows of class {plotly_text(class_name)}",
        autorange=None,
        scaleanchor="x",
        **{**axis, "range": [r + m - 0.4, -0.6]},
    )
    fig = style(
        fig, height=height, title=title or f"Class {class_name}: cosine similarity of {r} retained and {m} removed rows"
    )
    fig.update_layout(margin=dict(l=110, r=30, t=60, b=80))
    return fig
