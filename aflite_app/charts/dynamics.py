"""Pure chart builders and small tables of the Training dynamics page (no Streamlit).

The input is the page's per-row frame (:func:`aflite_app.compute.dynamics_frame`): one row per example with
``row`` (position), ``id``, ``label`` (class name), ``level`` (``"easy"``, ``"ambiguous"``, ``"hard"``), the
four training-dynamics measures ``confidence``, ``variability``, ``correctness``, ``aum`` and, when a partial
input was recorded, their ``partial_`` versions. For the comparison with AFLite the frame also has ``kept``
(bool) and ``status`` (``"kept"`` / ``"removed"``).

Levels are coloured green (easy), orange (ambiguous) and purple (hard) everywhere on the page; kept and removed
use the app's blue and vermillion (:mod:`aflite_app.charts.theme`).

The charts that check the levels (held-out accuracy per level, training on a fraction, the controls) are
:mod:`aflite_app.charts.level_checks`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .theme import KEPT_REMOVED, NEUTRAL, class_colour_map, fmt_pct, plotly_text, style

__all__ = [
    "CORRECTNESS_BUCKETS",
    "LEVELS",
    "LEVEL_COLOURS",
    "MEASURE_LABELS",
    "class_counts_chart",
    "correctness_bucket",
    "crosstab_cells",
    "crosstab_chart",
    "crosstab_display",
    "crosstab_sentence",
    "data_map",
    "feature_distributions",
    "level_counts",
    "level_crosstab",
    "spurious_display",
]

#: the difficulty levels, easiest first (as aflite_core.dynamics.LEVELS)
LEVELS: tuple[str, ...] = ("easy", "ambiguous", "hard")
#: one colour per level (Okabe-Ito green and orange, and a purple; none is the kept blue or removed vermillion)
LEVEL_COLOURS = {"easy": "#009E73", "ambiguous": "#E69F00", "hard": "#6A3D9A"}
#: correctness buckets (share of epochs in which the model predicted the gold class) and their marker symbols
CORRECTNESS_BUCKETS: dict[str, str] = {
    "always correct": "circle",
    "mostly correct (≥ 50 % of epochs)": "diamond",
    "rarely correct (< 50 %)": "square",
    "never correct": "x",
}
#: y-axis titles (units) of the measures in the per-level box plots
MEASURE_UNITS = {
    "confidence": "mean p(gold), 0-1",
    "variability": "std of p(gold)",
    "correctness": "share of epochs right, 0-1",
    "aum": "mean logit margin",
}
#: axis titles of the measures (with their units)
MEASURE_LABELS = {
    "confidence": "confidence (mean p(gold), 0-1)",
    "variability": "variability (std of p(gold), 0-0.5)",
    "correctness": "correctness (share of epochs right, 0-1)",
    "aum": "AUM (mean logit margin)",
}
#: the spurious-correlation measures, as the paper names them
SPURIOUS_LABELS = {
    "word_overlap": "word overlap",
    "antonyms": "antonyms",
    "length_mismatch": "length mismatch",
    "misspelled_words": "misspelled words",
    "contains_negation": "contains negation",
}
#: above this many rows the scatter and the box plots draw a seeded sample
MAX_POINTS = 20_000


def _measure_label(column: str) -> str:
    if column.startswith("partial_"):
        return "partial input: " + MEASURE_LABELS.get(column[len("partial_") :], column)
    return MEASURE_LABELS.get(column, column)


def _sample(frame: pd.DataFrame, max_points: int) -> pd.DataFrame:
    if len(frame) <= max_points:
        return frame
    rows = np.sort(np.random.default_rng(0).choice(len(frame), size=max_points, replace=False))
    return frame.iloc[rows]


def correctness_bucket(correctness) -> np.ndarray:
    """The bucket (a key of :data:`CORRECTNESS_BUCKETS`) of every correctness value in [0, 1]."""
    c = np.asarray(correctness, dtype=np.float64)
    names = list(CORRECTNESS_BUCKETS)
    code = np.where(c >= 1 - 1e-9, 0, np.where(c >= 0.5, 1, np.where(c > 1e-9, 2, 3)))
    return np.asarray(names, dtype=object)[code]


def level_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows and share of rows per level (all three levels, easy first)."""
    counts = frame["level"].astype(str).value_counts().reindex(list(LEVELS), fill_value=0)
    total = max(int(counts.sum()), 1)
    return pd.DataFrame(
        {"level": list(LEVELS), "rows": counts.to_numpy(dtype=int), "share": counts.to_numpy(dtype=float) / total}
    )


def data_map(frame: pd.DataFrame, *, title: str | None = None, max_points: int = MAX_POINTS) -> go.Figure:
    """The data map: confidence (y) against variability (x), one point per example.

    Colour = difficulty level (one trace per level), marker symbol = correctness bucket; hover shows the id,
    the class and the four measures. Legend-only grey markers explain the symbols. Above ``max_points`` rows a
    seeded sample is drawn (said in the title).
    """
    shown = _sample(frame, max_points)
    Scatter = go.Scattergl if len(shown) > 5000 else go.Scatter
    fig = go.Figure()
    buckets = correctness_bucket(shown["correctness"])
    for level in LEVELS:
        mask = (shown["level"].astype(str) == level).to_numpy()
        part = shown.loc[mask]
        custom = (
            np.column_stack(
                [
                    part["id"].astype(str).to_numpy(object),
                    part["label"].astype(str).to_numpy(object),
                    part["correctness"].to_numpy(),
                    part["aum"].to_numpy(),
                ]
            )
            if len(part)
            else None
        )
        fig.add_trace(
            Scatter(
                x=part["variability"].to_numpy(),
                y=part["confidence"].to_numpy(),
                mode="markers",
                name=level,
                marker=dict(
                    color=LEVEL_COLOURS[level],
                    size=7,
                    opacity=0.75,
                    symbol=[CORRECTNESS_BUCKETS[b] for b in buckets[mask]],
                    line=dict(width=0.5, color="white"),
                ),
                customdata=custom,
                legendgroup=level,
                showlegend=False,
                meta="level points",
                hovertemplate=(
                    f"<b>{level}</b><br>id %{{customdata[0]}} · class %{{customdata[1]}}<br>"
                    "confidence %{y:.3f} · variability %{x:.3f}<br>"
                    "correctness %{customdata[2]:.2f} · AUM %{customdata[3]:.2f}<extra></extra>"
                ),
            )
        )
    for level in LEVELS:  # legend entries: the level colours as plain circles (the points' symbols vary)
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=level,
                legendgroup=level,
                legendgrouptitle_text="level" if level == LEVELS[0] else None,
                hoverinfo="skip",
                marker=dict(color=LEVEL_COLOURS[level], size=9, symbol="circle"),
            )
        )
    for bucket, symbol in CORRECTNESS_BUCKETS.items():
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=bucket,
                legendgroup="correctness",
                legendgrouptitle_text="correctness" if symbol == "circle" else None,
                hoverinfo="skip",
                marker=dict(color=NEUTRAL, size=9, symbol=symbol),
            )
        )
    fig.update_xaxes(title_text=MEASURE_LABELS["variability"], rangemode="tozero")
    fig.update_yaxes(title_text=MEASURE_LABELS["confidence"], range=[-0.03, 1.03])
    if len(shown) < len(frame):
        title = (title + " · " if title else "") + f"a random {len(shown):,} of {len(frame):,} rows"
    fig = style(fig, height=520, title=title)
    # the legend above the map (not beside it), so a phone-width screen keeps the map's full width
    fig.update_layout(
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, tracegroupgap=12),
        margin=dict(t=110 if not title else 140),
    )
    return fig


def feature_distributions(
    frame: pd.DataFrame, *, measure: str | None = None, max_points: int = MAX_POINTS
) -> go.Figure:
    """Box plots of the measures per level: one panel per measure, full input on top, partial input below.

    ``measure`` (e.g. ``"confidence"``) draws that measure alone (full input above, partial below): the page shows
    one such figure per measure in columns, so a narrow screen stacks them.
    """
    shown = _sample(frame, max_points)
    full = [m for m in MEASURE_LABELS if m in shown.columns and (measure is None or m == measure)]
    partial = [f"partial_{m}" for m in full if f"partial_{m}" in shown.columns]
    rows = 2 if partial else 1
    titles = [f"full input: {m}" for m in full] + [f"partial input: {m}" for m in full if f"partial_{m}" in partial]
    fig = make_subplots(
        rows=rows, cols=len(full), subplot_titles=titles, vertical_spacing=0.14, horizontal_spacing=0.07
    )
    level = shown["level"].astype(str).to_numpy()
    for r, cols in enumerate((full, partial), start=1):
        for c, col in enumerate(cols, start=1):
            for name in LEVELS:
                values = shown[col].to_numpy()[level == name]
                fig.add_trace(
                    go.Box(
                        y=values,
                        name=name,
                        marker_color=LEVEL_COLOURS[name],
                        boxpoints=False,
                        legendgroup=name,
                        showlegend=(r == 1 and c == 1),
                        hovertemplate=f"{name}: %{{y:.3f}}<extra>{col}</extra>",
                    ),
                    row=r,
                    col=c,
                )
            fig.update_yaxes(title_text=MEASURE_UNITS[col.removeprefix("partial_")], row=r, col=c)
            fig.update_xaxes(title_text="difficulty level" if r == rows else None, row=r, col=c)
    fig = style(fig, height=330 * rows)
    fig.update_annotations(font_size=12)
    fig.update_layout(margin=dict(t=70), legend=dict(y=1.0 + 0.12 / rows))
    if measure is not None:
        fig.update_layout(showlegend=False, margin=dict(l=50, r=10, t=40))
    return fig


def class_counts_chart(frame: pd.DataFrame, classes, *, share: bool = False) -> go.Figure:
    """Stacked bars: rows per level (x), split by class (colour, legend in class order).

    With ``share=True`` each bar shows the class mix of its level (shares summing to 1) instead of row counts;
    hover gives both.
    """
    names = [str(c) for c in classes]
    colours = class_colour_map(names)
    table = pd.crosstab(frame["level"].astype(str), frame["label"].astype(str))
    table = table.reindex(index=list(LEVELS), columns=names, fill_value=0)
    totals = table.sum(axis=1).replace(0, np.nan)
    fig = go.Figure()
    for name in names:
        counts = table[name].to_numpy()
        shares = (table[name] / totals).fillna(0).to_numpy()
        fig.add_trace(
            go.Bar(
                x=list(LEVELS),
                y=shares if share else counts,
                name=name,
                marker_color=colours[name],
                customdata=np.column_stack([counts, shares]),
                hovertemplate=f"%{{x}}: %{{customdata[0]:,}} rows of class {plotly_text(name)} "
                "(%{customdata[1]:.0%} of the level)<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack", legend_title_text="class", legend_traceorder="normal")
    fig.update_xaxes(title_text="difficulty level")
    fig.update_yaxes(title_text="share of the level's rows (0-1)" if share else "rows")
    return style(fig, height=380)


# -- the comparison with AFLite -------------------------------------------------------------------------------
def level_crosstab(levels, kept) -> pd.DataFrame:
    """Counts and shares of every (level, kept/removed) cell.

    Parameters
    ----------
    levels : array-like of str
        The level of every row.
    kept : array-like of bool
        AFLite's kept mask, aligned with ``levels``.

    Returns
    -------
    pandas.DataFrame
        Index: the three levels, easy first. Columns ``kept``, ``removed``, ``rows`` (counts), ``kept_share`` and
        ``removed_share`` (of the level's rows; NaN for an empty level) and ``share_of_removed`` (the level's
        share of every removed row; NaN when nothing was removed).
    """
    lv = pd.Series(np.asarray(levels, dtype=object)).astype(str)
    k = np.asarray(kept, dtype=bool)
    if len(lv) != len(k):
        raise ValueError(f"Got {len(lv)} levels but {len(k)} kept flags; they must describe the same rows.")
    kept_n = lv[k].value_counts().reindex(list(LEVELS), fill_value=0)
    removed_n = lv[~k].value_counts().reindex(list(LEVELS), fill_value=0)
    out = pd.DataFrame({"kept": kept_n.astype(int), "removed": removed_n.astype(int)})
    out["rows"] = out["kept"] + out["removed"]
    denom = out["rows"].where(out["rows"] > 0)
    out["kept_share"] = out["kept"] / denom
    out["removed_share"] = out["removed"] / denom
    total_removed = int(out["removed"].sum())
    out["share_of_removed"] = out["removed"] / total_removed if total_removed else np.nan
    out.index.name = "level"
    return out


def _pct(x: float) -> str:
    """A share as "80 %", "< 1 %" / "> 99 %" near the ends (none and all stay exact), or the missing mark."""
    return fmt_pct(x, sep=" ", ends=True)


def crosstab_sentence(table: pd.DataFrame) -> str:
    """One sentence reading the cross-tab: the share of each level AFLite removed, easiest first."""
    total = int(table["rows"].sum())
    removed = int(table["removed"].sum())
    if total == 0:
        return "There are no rows to compare."
    if removed == 0:
        return "AFLite removed no rows in this run, so every level was kept whole."
    parts = [f"{_pct(table.loc[lv, 'removed_share'])} of the {lv} rows" for lv in LEVELS if table.loc[lv, "rows"] > 0]
    body = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"AFLite removed {body} ({_pct(removed / total)} of all {total:,} rows)."


def crosstab_chart(table: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Horizontal stacked bars per level: kept (blue) and removed (vermillion) rows, labelled "count (share)"."""
    fig = go.Figure()
    widest = max(int(table["rows"].max()), 1)
    for status in ("kept", "removed"):
        counts = table[status].to_numpy(dtype=int)
        shares = table[f"{status}_share"].to_numpy(dtype=float)
        # a label only where the segment is wide enough to hold it (the table and hover give every number)
        text = [f"{n:,} ({_pct(s)})" if n >= 0.15 * widest else "" for n, s in zip(counts, shares)]
        fig.add_trace(
            go.Bar(
                y=list(table.index),
                x=counts,
                orientation="h",
                name=status,
                marker_color=KEPT_REMOVED[status],
                text=text,
                textposition="inside",
                insidetextanchor="middle",
                textangle=0,
                customdata=np.nan_to_num(shares),
                hovertemplate=f"%{{y}}: %{{x:,}} rows {status} (%{{customdata:.0%}} of the level)<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_yaxes(title_text="difficulty level", categoryorder="array", categoryarray=list(LEVELS)[::-1])
    fig.update_xaxes(title_text="rows")
    return style(fig, height=260, title=title)


def crosstab_display(table: pd.DataFrame) -> pd.DataFrame:
    """The cross-tab as a table to show: counts, % of the level removed, and the level's % of all removed rows."""
    return pd.DataFrame(
        {
            "level": list(table.index),
            "rows": table["rows"].to_numpy(dtype=int),
            "kept": table["kept"].to_numpy(dtype=int),
            "removed": table["removed"].to_numpy(dtype=int),
            "% removed": 100 * table["removed_share"].to_numpy(dtype=float),
            "% of all removed": 100 * np.asarray(table["share_of_removed"], dtype=float),
        }
    )


def crosstab_cells(table: pd.DataFrame) -> list[tuple[str, str, int]]:
    """The six cells ``(level, status, rows)``, easy-removed first (the cell AFLite and dynamics agree on)."""
    order = [(lv, st) for lv in LEVELS for st in ("removed", "kept")]
    return [(lv, st, int(table.loc[lv, st])) for lv, st in order]


def spurious_display(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's table (:func:`aflite_core.measures.spurious.paper_table`) laid out to show.

    Columns: level and measure (readable names), then the significance stars of every pair of classes
    (``"a vs b"``), then each class's mean.
    """
    out = table.reset_index()
    out["measure"] = out["measure"].map(lambda m: SPURIOUS_LABELS.get(m, m))
    pairs = [c for c in out.columns if " vs " in str(c)]
    means = [c for c in out.columns if c not in ("level", "measure", *pairs)]
    return out[["level", "measure", *pairs, *means]]
