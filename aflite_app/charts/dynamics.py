"""Pure chart builders and small tables of the Training dynamics page (no Streamlit).

The input is the page's per-row frame (:func:`aflite_app.compute.dynamics_frame`): one row per example with
``row`` (position), ``id``, ``label`` (class name), ``level`` (``"easy"``, ``"ambiguous"``, ``"hard"``), the
four training-dynamics measures ``confidence``, ``variability``, ``correctness``, ``aum`` and, when a partial
input was recorded, their ``partial_`` versions. For the comparison with AFLite the frame also has ``kept``
(bool) and ``status`` (``"kept"`` / ``"removed"``).

Levels are coloured green (easy), orange (ambiguous) and purple (hard) everywhere on the page; kept and removed
use the app's blue and vermillion (:mod:`aflite_app.charts.theme`).

The validation charts take :class:`aflite_core.dynamics.validation.LevelValidation` tables instead:
:func:`level_accuracy_chart` (accuracy per level of models trained on other rows) and :func:`fraction_chart` /
:func:`fraction_table` (training on a fraction chosen by level, by Data Maps, by an AUM band or at random), and
the levels beside their controls (issue 27): :func:`level_controls_chart` and :func:`level_controls_gaps`
(one-shot confidence in-sample and out-of-fold, random levels of the same sizes; mean ± sd over the seeds).
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
    "fraction_chart",
    "fraction_table",
    "level_accuracy_chart",
    "level_control_pairs",
    "level_controls_chart",
    "level_controls_gaps",
    "level_counts",
    "level_crosstab",
    "spurious_display",
    "validation_sentence",
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


#: the selections of the fraction experiment, as the page names them (with who defined each criterion)
SELECTION_LABELS = {
    "gmm_ambiguous": "GMM: ambiguous level first (Cosma et al.)",
    "gmm_easy": "GMM: easy level first (Cosma et al.)",
    "gmm_hard": "GMM: hard level first (Cosma et al.)",
    "data_maps": "Data Maps: most variable (Swayamdipta et al.)",
    "aum_band": "AUM band around the median (Pleiss et al.'s AUM, Cosma et al.'s band)",
    "confidence_ambiguous": "control: one-shot confidence, ambiguous level first (no dynamics)",
    "confidence_easy": "control: one-shot confidence, easy level first (no dynamics)",
    "confidence_hard": "control: one-shot confidence, hard level first (no dynamics)",
    "random": "random subset",
    "all rows": "all training rows",
}
SELECTION_STYLE = {
    "gmm_ambiguous": ("#E69F00", "solid"),
    "gmm_easy": ("#009E73", "solid"),
    "gmm_hard": ("#6A3D9A", "solid"),
    "data_maps": ("#0072B2", "dash"),
    "aum_band": ("#CC79A7", "dash"),
    "confidence_ambiguous": ("#E69F00", "dashdot"),
    "confidence_easy": ("#009E73", "dashdot"),
    "confidence_hard": ("#6A3D9A", "dashdot"),
    "random": ("#555555", "dot"),
}
MODEL_INPUT_LABELS = {
    ("logistic", "full"): "logistic regression",
    ("knn", "full"): "kNN",
    ("mlp", "full"): "MLP",
    ("rbf", "full"): "RBF SVM",
    ("forest", "full"): "random forest",
    ("logistic", "partial"): "logistic regression, partial input only",
}


def level_accuracy_chart(table: pd.DataFrame, *, height: int = 400) -> go.Figure:
    """Accuracy per difficulty level of models trained on other rows (``LevelValidation.level_accuracy``).

    x: the levels (easy → hard, then all rows); one bar per model (the partial-input model hatched); whiskers:
    Wilson 95 % intervals. If the levels are real, every model falls from easy to hard.
    """
    fig = go.Figure()
    order = [*LEVELS, "all"]
    palette = ["#0072B2", "#009E73", "#E69F00", "#CC79A7", "#56B4E9"]
    keys = list(dict.fromkeys(zip(table["model"], table["input"])))
    for i, (m, what) in enumerate(keys):
        sub = table[(table["model"] == m) & (table["input"] == what)].set_index("level").reindex(order)
        acc = sub["accuracy"].to_numpy(dtype=float)
        name = MODEL_INPUT_LABELS.get((m, what), f"{m} ({what} input)")
        fig.add_trace(
            go.Bar(
                x=[f"{lv} ({int(n):,})" if np.isfinite(n) else lv for lv, n in zip(order, sub["n"])],
                y=acc,
                name=name,
                marker=dict(
                    color=palette[i % len(palette)] if what == "full" else "#999999",
                    pattern_shape="/" if what != "full" else "",
                ),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=np.nan_to_num(sub["ci_high"].to_numpy(dtype=float) - acc),
                    arrayminus=np.nan_to_num(acc - sub["ci_low"].to_numpy(dtype=float)),
                    thickness=1.2,
                ),
                hovertemplate=f"{name}<br>%{{x}}: accuracy %{{y:.3f}}<extra></extra>",
            )
        )
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_xaxes(title_text="difficulty level of the characterised rows (rows)")
    fig.update_yaxes(title_text="held-out accuracy (0-1)", range=[0, 1.02])
    return style(fig, height=height)


#: the difficulty levels beside their controls (issue 27): how each kind of levels is drawn
LEVEL_KIND_STYLE = {
    "training dynamics (GMM)": ("#0072B2", ""),
    "confidence, in-sample": ("#E69F00", ""),
    "confidence, out-of-fold": ("#D55E00", "x"),
    "random": ("#999999", "."),
}
#: the kinds' legend names
LEVEL_KIND_LABELS = {
    "training dynamics (GMM)": "training-dynamics levels (GMM)",
    "confidence, in-sample": "control: one-shot confidence, in-sample",
    "confidence, out-of-fold": "control: one-shot confidence, out-of-fold",
    "random": "control: random levels",
}


def level_control_pairs(table: pd.DataFrame) -> list[tuple[str, str]]:
    """The (model, input) pairs of ``LevelValidation.level_controls``, in its order."""
    if table is None or not len(table):
        return []
    return list(dict.fromkeys(zip(table["model"].astype(str), table["input"].astype(str))))


def level_controls_chart(table: pd.DataFrame, model: str, input_: str = "full", *, height: int = 420) -> go.Figure:
    """One model's held-out accuracy per level: the training-dynamics levels beside their controls (issue 27).

    ``table`` is ``LevelValidation.level_controls``. x: the levels easy → hard; one bar per kind of levels (the
    GMM levels, one logistic regression's gold-label probability in-sample and out-of-fold, random levels; all
    of the GMM levels' sizes); whiskers: the spread (sd) over the seeds; the dashed line is the model's accuracy
    on all characterised rows. Levels that add something over one-shot confidence fall more steeply than it.
    """
    if table is None or not len(table):
        raise ValueError("This validation has no control levels; press 'Validate the levels' again to compute them.")
    sub = table[(table["model"].astype(str) == model) & (table["input"].astype(str) == input_)]
    if not len(sub):
        raise ValueError(f"The validation has no model {model!r} on the {input_} input.")
    fig = go.Figure()
    n_seeds = int(sub["n_seeds"].max()) if "n_seeds" in sub else 1
    for kind in [k for k in LEVEL_KIND_STYLE if k in set(sub["levels"])]:
        rows = sub[sub["levels"] == kind].set_index("level").reindex(list(LEVELS))
        colour, pattern = LEVEL_KIND_STYLE[kind]
        name = LEVEL_KIND_LABELS[kind]
        fig.add_trace(
            go.Bar(
                x=list(LEVELS),
                y=rows["accuracy"].to_numpy(dtype=float),
                name=name,
                marker=dict(color=colour, pattern_shape=pattern),
                error_y=dict(
                    type="data", array=np.nan_to_num(rows["accuracy_std"].to_numpy(dtype=float)), thickness=1.2
                ),
                customdata=np.column_stack([rows["accuracy_std"], rows["n"]]),
                hovertemplate=f"{name}<br>%{{x}}: accuracy %{{y:.3f}} ± %{{customdata[0]:.3f}} (sd over {n_seeds} "
                "seeds) on %{customdata[1]:.0f} rows<extra></extra>",
            )
        )
    every = sub[sub["level"] == "all"]["accuracy"]
    if len(every):
        line = dict(color="#000000", dash="dash", width=1.2)
        fig.add_hline(y=float(every.mean()), line=line)
        # its value in the legend, not as a label on the line: bars near 1 would hide it
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line, name=f"all rows: {every.mean():.3f}"))
    fig.update_layout(barmode="group", bargap=0.2)
    fig.update_xaxes(title_text="level (same sizes for every kind)")
    fig.update_yaxes(title_text="held-out accuracy (0-1)", range=[0, 1.03])
    style(fig, height=height)
    fig.update_layout(margin=dict(t=90), legend=dict(font=dict(size=12)))
    return fig


def level_controls_gaps(table: pd.DataFrame) -> pd.DataFrame:
    """Easy − hard accuracy of every model and kind of levels, as ``mean ± sd`` over the seeds (a display table).

    One row per model and input, one column per kind (the training-dynamics levels first, then the controls).
    """
    kinds = [k for k in LEVEL_KIND_STYLE if table is not None and len(table) and k in set(table["levels"])]
    rows = []
    for model, inp in level_control_pairs(table):
        row = {"model": MODEL_INPUT_LABELS.get((model, inp), f"{model} ({inp} input)")}
        for kind in kinds:
            sub = table[(table["levels"] == kind) & (table["model"] == model) & (table["input"] == inp)]
            acc = sub.set_index("level")
            if "easy" in acc.index and "hard" in acc.index:
                gap = float(acc.loc["easy", "accuracy"] - acc.loc["hard", "accuracy"])
                sd = float(np.hypot(acc.loc["easy", "accuracy_std"], acc.loc["hard", "accuracy_std"]))
                row[LEVEL_KIND_LABELS[kind]] = f"{gap:+.3f} ± {sd:.3f}"
            else:
                row[LEVEL_KIND_LABELS[kind]] = ""
        rows.append(row)
    return pd.DataFrame(rows)


def fraction_chart(table: pd.DataFrame, *, model: str | None = None, height: int = 420) -> go.Figure:
    """Accuracy of a model trained on a fraction of the rows, by how the fraction was chosen (Tables 5/6).

    ``table`` is ``LevelValidation.fractions``. x: the fraction of the training rows; one line per selection
    (whiskers: spread over seeds); the dashed black line is the model trained on all training rows.
    """
    t = table if model is None else table[table["model"] == model]
    ref = t[t["selection"] == "all rows"]
    fig = go.Figure()
    for sel in [s for s in dict.fromkeys(t["selection"]) if s != "all rows"]:
        sub = t[t["selection"] == sel].sort_values("fraction")
        colour, dash = SELECTION_STYLE.get(sel, (NEUTRAL, "solid"))
        fig.add_trace(
            go.Scatter(
                x=100 * sub["fraction"].to_numpy(dtype=float),
                y=sub["accuracy"].to_numpy(dtype=float),
                error_y=dict(type="data", array=sub["accuracy_std"].to_numpy(dtype=float), thickness=1),
                mode="lines+markers",
                name=SELECTION_LABELS.get(sel, sel),
                line=dict(color=colour, dash=dash, width=2.5),
                marker=dict(size=7),
                customdata=sub["n_train"].to_numpy(dtype=float),
                hovertemplate=f"{SELECTION_LABELS.get(sel, sel)}<br>%{{x:.0f}} % of the rows (%{{customdata:,.0f}}):"
                " accuracy %{y:.3f}<extra></extra>",
            )
        )
    if len(ref):
        acc = float(ref["accuracy"].mean())
        fig.add_hline(
            y=acc,
            line=dict(color="#000000", dash="dash", width=1.5),
            annotation_text=f"all training rows: {acc:.3f}",
            annotation_position="bottom right",
        )
    fig.update_xaxes(title_text="training rows kept (% of the training part)", ticksuffix="%")
    fig.update_yaxes(title_text="held-out accuracy (0-1)")
    style(fig, height=height)
    fig.update_layout(legend=dict(y=1.02, font_size=11))
    return fig


def fraction_table(table: pd.DataFrame) -> pd.DataFrame:
    """The fraction experiment as a display table: one row per selection, one column per fraction.

    Each cell is the mean accuracy over the seeds, with ``± sd`` (the spread over the seeds that re-drew the
    split, the recordings and the subsets) when there is more than one seed.
    """
    wide = table.pivot_table(index="selection", columns="fraction", values="accuracy", sort=False)
    cols = sorted(wide.columns)
    wide = wide[cols]
    if "accuracy_std" in table.columns and int(table.get("n_seeds", pd.Series([1])).max()) > 1:
        sd = table.pivot_table(index="selection", columns="fraction", values="accuracy_std", sort=False)
        sd = sd.reindex(index=wide.index, columns=cols)
        wide = pd.DataFrame(
            {
                c: [
                    "" if pd.isna(m) else f"{m:.3f}" if pd.isna(e) else f"{m:.3f} ± {e:.3f}"
                    for m, e in zip(wide[c], sd[c])
                ]
                for c in cols
            },
            index=wide.index,
        )
    else:
        wide = wide.apply(lambda col: col.map(lambda x: "" if pd.isna(x) else f"{x:.3f}"))
    wide.columns = [f"{c:.0%}" for c in wide.columns]
    out = wide.reset_index()
    out.insert(0, "selection (who defined it)", out.pop("selection").map(lambda s: SELECTION_LABELS.get(s, s)))
    return out


def validation_sentence(level_table: pd.DataFrame, fraction_table_: pd.DataFrame) -> str:
    """What the validation shows, in words computed from its two tables."""
    full = level_table[(level_table["input"] == "full")]
    falls = []
    for _, sub in full.groupby("model", sort=False):
        acc = sub.set_index("level")["accuracy"]
        falls.append(bool(acc.get("easy", np.nan) > acc.get("ambiguous", np.nan) > acc.get("hard", np.nan)))
    lead = (
        "Every independently trained model falls from easy to ambiguous to hard: the levels carry over to models that "
        "never saw the dynamics."
        if falls and all(falls)
        else f"{sum(falls)} of {len(falls)} independently trained models fall from easy to ambiguous to hard."
    )
    fr = fraction_table_[fraction_table_["selection"] != "all rows"]
    wins, margins = 0, []
    fractions = sorted(fr["fraction"].unique())
    for frac in fractions:
        sub = fr[fr["fraction"] == frac]
        is_gmm = sub["selection"].astype(str).str.startswith("gmm_")
        best_gmm = float(sub.loc[is_gmm, "accuracy"].max())
        best_other = float(sub.loc[~is_gmm, "accuracy"].max())
        margins.append(best_gmm - best_other)
        wins += best_gmm > best_other
    spread = float(fr["accuracy_std"].max()) if "accuracy_std" in fr else 0.0
    tail = (
        f" Trained on a fraction of the rows, a GMM-level selection scores highest at {wins} of {len(fractions)} "
        f"fractions (best GMM selection minus best other selection: {min(margins):+.3f} to {max(margins):+.3f}; the "
        f"seeds spread by up to {spread:.3f})"
    )
    if wins == len(fractions) and min(margins) > spread:
        tail += " — the paper's claim (its Tables 5/6) holds here."
    elif wins == len(fractions):
        tail += (
            " — ahead everywhere, but by less than the spread over seeds: the paper's claim holds only within the "
            "noise."
        )
    else:
        tail += (
            " — the paper's claim that its levels pick better training subsets than Data Maps, AUM or chance does "
            "not hold here."
        )
    return lead + tail
