"""Pure chart builders for the Evaluation sets page: an ``AdversaryStudy`` in, a Plotly figure out (no Streamlit).

They follow Phang et al. ("Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair"):
Table 1 against Figure 1 (adversary strength, measured independently of filtering, next to what round 1 removes),
Figure 1 (what AFLite does to the evaluation rows per adversary), Figures 2 and 7 (evaluated models' accuracy per
adversary, with binomial intervals), Figure 3 (the models sorted on each evaluation set, as the paper draws them;
Kendall's coefficient against the unfiltered ranking and its discordant pairs are our addition), Figure 4 (the
rank change of the adversary's backbone, and of a model on its very Φ as an upper bound) and Figure 5 (annotator
agreement per category). Kendall's coefficient is never called τ here: τ is AFLite's threshold. The rankings and
the strength figures (Figures 3 and 4, Table 1) are :mod:`aflite_app.charts.evalsets_rankings`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from aflite_core.engine.result import EVAL_CATEGORIES
from aflite_core.evalsets import NONE, AdversaryStudy

from .theme import KEPT, MISSING, NEUTRAL, REMOVED, TAU_LINE, plotly_text, style

__all__ = [
    "CATEGORY_COLOURS",
    "NONE_LABEL",
    "accuracy_heatmap",
    "accuracy_lines",
    "agreement_chart",
    "category_chart",
    "heatmap_name_key",
    "heatmap_panels",
    "model_order",
]

#: the three Figure 1 categories: removed rows in the removed colour (round 1 dark, later light), selected = kept
CATEGORY_COLOURS = {EVAL_CATEGORIES[0]: REMOVED, EVAL_CATEGORIES[1]: "#F4A582", EVAL_CATEGORIES[2]: KEPT}
#: how the unfiltered evaluation set is labelled in the charts
NONE_LABEL = "none (unfiltered)"
#: the model that shares the adversary's backbone (Figures 4 and 7)
SAME_COLOUR = "#E69F00"
#: a model trained on the adversary's very Φ: the identity pairing, an upper bound of Figure 4
UPPER_BOUND_COLOUR = "#F5D08A"


def _adversaries(study: AdversaryStudy) -> list[str]:
    """Adversaries in display order that have at least one run (a stopped study lacks the later ones)."""
    ran = set(study.runs["adversary"]) if len(study.runs) else set()
    return [a for a in study.adversaries if a in ran]


def model_order(study: AdversaryStudy) -> list[str]:
    """Evaluated models sorted by accuracy on the unfiltered set, weakest first (the paper's order)."""
    M = study.accuracy_matrix
    if M.empty:
        return []
    base = M[NONE].astype(float)
    return sorted(M.index, key=lambda m: (np.nan_to_num(base[m], nan=-1.0), list(M.index).index(m)))


def _same_pairs(study: AdversaryStudy) -> set[tuple[str, str]]:
    """(adversary, model) pairs where the model uses the adversary's representation (or an ensemble member's)."""
    same = study.same_representation
    if same.empty:
        return set()
    return {(str(a), str(m)) for a, m in zip(same["adversary"], same["model"])}


def _adversary_colours(names: list[str]) -> dict[str, str]:
    """A sequential palette for adversaries: the weakest light, the strongest dark (purple, away from blue/red)."""
    if len(names) == 1:
        return {names[0]: "#6A3D9A"}
    cols = pc.sample_colorscale("Purples", [0.4 + 0.55 * i / (len(names) - 1) for i in range(len(names))])
    return dict(zip(names, cols))


def _study_strength(study: AdversaryStudy) -> dict[str, float]:
    st = getattr(study, "strength", None)
    if st is None or not len(st):
        return {}
    return {str(a): float(x) for a, x in zip(st["adversary"], st["accuracy"]) if np.isfinite(x)}


def category_chart(
    study: AdversaryStudy, *, strength: Mapping[str, float] | None = None, title: str | None = None
) -> go.Figure:
    """Figure 1: stacked bars of the evaluation rows removed in round 1 / removed later / selected, per adversary.

    Bars are shares of the evaluation set in percent (mean over seeds; each bar sums to 100 %), adversaries in the
    study's order (weakest first by independent strength, the ensemble last). The hover gives the mean row count,
    the spread over seeds and the adversary's strength (``strength``, default the study's: its backbone's
    accuracy on the full evaluation set).
    """
    names = _adversaries(study)
    summ = study.category_summary
    n_eval = int(study.params.get("n_eval", 0))
    n_seeds = len(study.params.get("seeds", []))
    strength = dict(strength if strength is not None else _study_strength(study))
    fig = go.Figure()
    for cat in EVAL_CATEGORIES:
        rows = summ[summ["category"] == cat].set_index("adversary").reindex(names)
        share = 100 * rows["share_mean"].astype(float).fillna(0.0).to_numpy()
        sd = 100 * rows["share_std"].astype(float).to_numpy()
        count = rows["n_rows_mean"].astype(float).fillna(0.0).to_numpy()
        st_text = [f"{strength[a]:.2f}" if a in strength else MISSING for a in names]
        sd_text = [
            f"± {s:.1f} points over {n_seeds} seeds" if np.isfinite(s) and n_seeds > 1 else "one seed" for s in sd
        ]
        fig.add_trace(
            go.Bar(
                x=names,
                y=share,
                name=cat,
                marker_color=CATEGORY_COLOURS[cat],
                text=[f"{s:.0f}%" if s >= 4 else "" for s in share],
                textposition="inside",
                insidetextanchor="middle",
                customdata=np.column_stack([count, sd_text, st_text]),
                hovertemplate=(
                    "<b>%{x}</b><br>" + cat + ": %{y:.1f}% of the evaluation rows<br>"
                    f"%{{customdata[0]:.1f}} of {n_eval:,} rows (mean)<br>%{{customdata[1]}}"
                    "<br>adversary strength (backbone accuracy): %{customdata[2]}<extra></extra>"
                ),
            )
        )
    ticks = [f"{plotly_text(a)}<br>strength {strength[a]:.2f}" if a in strength else plotly_text(a) for a in names]
    fig.update_layout(barmode="stack", bargap=0.35, legend_traceorder="normal")
    fig.update_xaxes(
        title_text="adversary (weakest → strongest)",
        categoryorder="array",
        categoryarray=names,
        tickmode="array",
        tickvals=names,
        ticktext=ticks,
    )
    fig.update_yaxes(title_text="share of the evaluation rows (%)", range=[0, 100.5], ticksuffix="%")
    return style(fig, height=420, title=title)


def _cell_text(x: float) -> str:
    return "no rows" if not np.isfinite(x) else f"{x:.2f}"


def _intervals(study: AdversaryStudy, models: list[str], cols: list[str]):
    """Wilson 95 % bounds, mean rows and seed spread as (evaluation sets × models) arrays (NaN where unknown)."""
    summ = study.accuracy_summary
    shape = (len(cols), len(models))
    if summ.empty:
        nan = np.full(shape, np.nan)
        return nan, nan.copy(), nan.copy(), nan.copy()
    idx = summ.set_index(["adversary", "model"])

    def grid(col: str) -> np.ndarray:
        wide = idx[col].unstack("model").reindex(index=cols, columns=models)
        return wide.to_numpy(dtype=float)

    return grid("ci_low"), grid("ci_high"), grid("n_rows"), grid("seed_std")


#: the heatmap's cell text size in px (the accuracy and its ± on two lines)
HEATMAP_FONT_SIZE = 13
#: the unfiltered set's column label in the heatmap (short: a phone's column is ~50 px wide; its title says more)
HEATMAP_NONE_TICK = "full set"
#: the heatmap's axis label size in px (the models' and the evaluation sets' names)
HEATMAP_LABEL_SIZE = 12
#: at most this many evaluation sets (columns) side by side: at 390 px a column stays ~48 px wide, room for "±0.05"
#: at :data:`HEATMAP_FONT_SIZE`; more sets wrap into further panels below
HEATMAP_MAX_COLUMNS = 5
#: the height of one evaluated model's row of cells in px (the accuracy and its ± on two lines)
HEATMAP_ROW_PX = 44
#: room under a panel for its two-line names and its axis title, in px
HEATMAP_AXIS_PX = 110
#: a name is broken into lines of at most this many characters where it has a break (":", "_", " ", "-", ".", "/")
HEATMAP_LINE_CHARS = 10
#: the longest line of a name; a longer one is cut with "…" (:func:`heatmap_name_key` gives the full names)
HEATMAP_CUT_CHARS = 16


def _name_lines(name: str) -> tuple[list[str], bool]:
    """``name`` in at most two lines for an axis label, and whether a line had to be cut (with "…").

    Broken after ":", "_", " ", "-", "." or "/" into lines of at most :data:`HEATMAP_LINE_CHARS` characters where
    it can be; what does not fit in two lines goes on the second, cut to :data:`HEATMAP_CUT_CHARS`.
    """
    pieces = [p for p in re.split(r"(?<=[:_\s\-./])", str(name)) if p]
    lines: list[str] = []
    for piece in pieces:
        if lines and len(lines[-1]) + len(piece) <= HEATMAP_LINE_CHARS:
            lines[-1] += piece
        else:
            lines.append(piece)
    if len(lines) > 2:
        lines = [lines[0], "".join(lines[1:])]
    lines = [line.strip() for line in lines]
    cut = any(len(line) > HEATMAP_CUT_CHARS for line in lines)
    return [line if len(line) <= HEATMAP_CUT_CHARS else line[: HEATMAP_CUT_CHARS - 1] + "…" for line in lines], cut


def _axis_label(name: str) -> str:
    """The tick text of ``name``: its lines (:func:`_name_lines`) joined by ``<br>``, each shown as typed."""
    return "<br>".join(plotly_text(line) for line in _name_lines(name)[0])


def heatmap_name_key(study: AdversaryStudy) -> dict[str, str]:
    """The names the accuracy heatmap had to cut: ``{shown label (one line): full name}``; empty when none was.

    The page lists them under the chart; the hover always gives the full names.
    """
    names = [*model_order(study), *_adversaries(study)]
    key = {}
    for name in names:
        lines, cut = _name_lines(name)
        if cut:
            key[" ".join(lines)] = str(name)
    return key


def heatmap_panels(n_sets: int) -> list[int]:
    """How many evaluation sets (columns) each panel of the heatmap holds, top to bottom.

    Balanced, at most :data:`HEATMAP_MAX_COLUMNS` each.

    >>> heatmap_panels(5), heatmap_panels(6), heatmap_panels(11)
    ([5], [3, 3], [4, 4, 3])
    """
    if n_sets <= 0:
        return []
    n_panels = math.ceil(n_sets / HEATMAP_MAX_COLUMNS)
    base, extra = divmod(n_sets, n_panels)
    return [base + (1 if i < extra else 0) for i in range(n_panels)]


def accuracy_heatmap(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Figure 7: accuracy of every evaluated model (rows) on the full set and each adversary's selection (columns).

    Laid out to read at 390 px as at 1,500 px: the models run down (weakest on the full set first; as many as
    there are, the figure grows with them), the evaluation sets across - the unfiltered set (``"none"``) first,
    then the adversaries weakest to strongest, at most :data:`HEATMAP_MAX_COLUMNS` per panel (more wrap into panels
    below). Each cell gives the accuracy and, under it, ± half the width of its 95 % binomial interval at
    :data:`HEATMAP_FONT_SIZE` px; names are broken into short lines and cut when very long (the hover has them
    whole, :func:`heatmap_name_key` lists them). Cells where the model shares the adversary's representation are
    outlined (the paper's diagonal). No colour bar: every cell carries its number. Each panel's trace holds a
    (models × its evaluation sets) matrix.
    """
    M = study.accuracy_matrix
    models = model_order(study)
    cols = [NONE, *_adversaries(study)]
    Z = M.reindex(index=models, columns=cols).to_numpy(dtype=float)
    xlab = [NONE_LABEL if c == NONE else c for c in cols]
    chance = float(study.params.get("chance", 0.0))
    lo, hi, n_rows, sd = (a.T for a in _intervals(study, models, cols))
    text = np.array(
        # "±" at the cell's own font size on a second line (a <sub> was too small to read on a projector or a phone)
        [[_cell_text(v) + ("" if not np.isfinite(v) else f"<br>±{(h - lw) / 2:.2f}") for v, lw, h in zip(*r)]
         for r in zip(Z, lo, hi)],
        dtype=object,
    ).reshape(Z.shape)  # fmt: skip
    custom = np.dstack([lo, hi, n_rows, sd])
    zmin = min(chance, float(np.nanmin(Z)) if np.isfinite(Z).any() else chance)
    sizes = heatmap_panels(len(cols)) or [0]
    plot_px = HEATMAP_ROW_PX * max(len(models), 1)
    span = len(sizes) * plot_px + (len(sizes) - 1) * HEATMAP_AXIS_PX
    fig = make_subplots(rows=len(sizes), cols=1, vertical_spacing=HEATMAP_AXIS_PX / span if len(sizes) > 1 else 0)
    same = _same_pairs(study)
    start = 0
    for panel, size in enumerate(sizes, start=1):
        part = slice(start, start + size)
        names = xlab[part]
        fig.add_trace(
            go.Heatmap(
                z=Z[:, part],
                x=names,
                y=models,
                text=text[:, part],
                texttemplate="%{text}",
                textfont=dict(size=HEATMAP_FONT_SIZE),
                colorscale="Blues",
                reversescale=True,
                zmin=zmin,
                zmax=1.0,
                showscale=False,
                xgap=2,
                ygap=2,
                customdata=custom[:, part],
                hovertemplate="evaluated model %{y}<br>rows: %{x}<br>accuracy %{z:.3f}<br>95 % interval "
                "%{customdata[0]:.3f}-%{customdata[1]:.3f} on %{customdata[2]:.0f} rows<br>spread over seeds (sd) "
                "%{customdata[3]:.3f}<extra></extra>",
            ),
            row=panel,
            col=1,
        )
        for j, c in enumerate(cols[part]):  # outline the whole cell (categories sit at 0, 1, … on both axes)
            for i, m in enumerate(models):
                if (str(c), str(m)) in same:
                    fig.add_shape(
                        type="rect",
                        x0=j - 0.47,
                        x1=j + 0.47,
                        y0=i - 0.45,
                        y1=i + 0.45,
                        line=dict(color=SAME_COLOUR, width=4),
                        fillcolor="rgba(0,0,0,0)",
                        row=panel,
                        col=1,
                    )
        fig.update_xaxes(
            title_text="evaluation rows: the full set,<br>then each adversary's selection",
            tickmode="array",
            tickvals=names,
            ticktext=[HEATMAP_NONE_TICK if n == NONE_LABEL else _axis_label(n) for n in names],
            tickfont=dict(size=HEATMAP_LABEL_SIZE),
            showgrid=False,
            row=panel,
            col=1,
        )
        fig.update_yaxes(
            title_text="evaluated model",
            tickmode="array",
            tickvals=models,
            ticktext=[_axis_label(m) for m in models],
            tickfont=dict(size=HEATMAP_LABEL_SIZE),
            autorange="reversed",
            showgrid=False,
            row=panel,
            col=1,
        )
        start += size
    if fig.layout.shapes:  # a legend entry for the outline
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name="the adversary's backbone, or a model on its very Φ",
                marker=dict(symbol="square-open", size=14, color=SAME_COLOUR, line=dict(width=3)),
                hoverinfo="skip",
            )
        )
    fig.update_layout(showlegend=bool(fig.layout.shapes))
    fig = style(fig, title=title, height=0 + span + HEATMAP_AXIS_PX + 110 + (34 if title else 0))
    # the legend from the figure's left edge, not the plot's: at 390 px it then fits the width
    fig.update_layout(margin=dict(r=10, b=HEATMAP_AXIS_PX), legend=dict(xref="container", x=0))
    return fig


def accuracy_lines(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Figure 2 (as in the paper's Figure 8): accuracy per evaluated model, one line per adversary plus "none".

    x: evaluated models, weakest to strongest on the unfiltered set; y: accuracy on the rows each adversary
    selected (mean over seeds), whiskers the Wilson 95 % interval on that many rows; chance level (1 / number of
    classes) dashed.
    """
    M = study.accuracy_matrix
    models = model_order(study)
    names = _adversaries(study)
    colours = _adversary_colours(names)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=models,
            y=M.reindex(models)[NONE].to_numpy(dtype=float),
            name=NONE_LABEL,
            mode="lines+markers",
            line=dict(color="#333333", width=3),
            marker=dict(size=8),
            hovertemplate="%{x}<br>full evaluation set: accuracy %{y:.3f}<extra></extra>",
        )
    )
    lo, hi, n_rows, _ = _intervals(study, models, [NONE, *names])
    for i, a in enumerate(names, start=1):
        y = M.reindex(models)[a].to_numpy(dtype=float)
        fig.add_trace(
            go.Scatter(
                x=models,
                y=y,
                name=f"filtered by {a}",
                mode="lines+markers",
                line=dict(color=colours[a], width=2),
                marker=dict(size=7),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=np.nan_to_num(hi[i] - y),
                    arrayminus=np.nan_to_num(y - lo[i]),
                    thickness=1,
                    width=3,
                ),
                customdata=np.c_[lo[i], hi[i], n_rows[i]],
                hovertemplate="%{x}<br>rows " + plotly_text(a) + " selected: accuracy %{y:.3f}<br>95 % interval "
                "%{customdata[0]:.3f}-%{customdata[1]:.3f} on %{customdata[2]:.0f} rows<extra></extra>",
            )
        )
    chance = float(study.params.get("chance", float("nan")))
    if np.isfinite(chance):
        fig.add_hline(
            y=chance,
            line=dict(color=TAU_LINE, dash="dash", width=1),
            annotation_text=f"chance ({chance:.2f})",
            annotation_position="bottom right",
        )
    fig.update_xaxes(title_text="evaluated model (family:representation), weakest → strongest on the full set")
    fig.update_yaxes(title_text="accuracy on the selected rows (0-1)", range=[0, 1.02])
    return style(fig, height=430, title=title)


def agreement_chart(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Figure 5: mean annotator agreement with the gold label per adversary and category.

    The first group is the unfiltered set (all rows used); then, per adversary, the rows it removed in round 1,
    removed later and selected (mean over seeds, ± spread over seeds when there are several).

    Raises
    ------
    ValueError
        When the study has no annotator labels.
    """
    rep = study.agreement
    if rep is None:
        raise ValueError("This study has no annotator labels, so there is no agreement to show.")
    summ = rep.summary
    names = _adversaries(study)
    x_all = [NONE_LABEL, *names]
    fig = go.Figure()
    none = summ[summ["adversary"] == NONE]
    if len(none):
        fig.add_trace(
            go.Bar(
                x=[NONE_LABEL],
                y=[float(none["mean_agreement"].iloc[0])],
                name="all rows used (unfiltered)",
                marker_color=NEUTRAL,
                customdata=[[float(none["n_rows_mean"].iloc[0])]],
                hovertemplate="unfiltered: agreement %{y:.3f}<br>%{customdata[0]:.0f} rows<extra></extra>",
            )
        )
    n_seeds = len(study.params.get("seeds", []))
    for cat in EVAL_CATEGORIES:
        rows = summ[(summ["category"] == cat) & (summ["adversary"] != NONE)].set_index("adversary").reindex(names)
        sd = rows["std_over_seeds"].astype(float).to_numpy()
        fig.add_trace(
            go.Bar(
                x=names,
                y=rows["mean_agreement"].astype(float).to_numpy(),
                name=cat,
                marker_color=CATEGORY_COLOURS[cat],
                error_y=dict(type="data", array=np.nan_to_num(sd), visible=n_seeds > 1, thickness=1.2),
                customdata=rows["n_rows_mean"].astype(float).fillna(0).to_numpy(),
                hovertemplate="<b>%{x}</b> · " + cat + "<br>mean agreement %{y:.3f}<br>%{customdata:.1f} rows with "
                "labels (mean over seeds)<extra></extra>",
            )
        )
    fig.update_layout(barmode="group", bargap=0.25, bargroupgap=0.05)
    fig.update_xaxes(title_text="adversary (weakest → strongest)", categoryorder="array", categoryarray=x_all)
    fig.update_yaxes(title_text="annotator agreement with the gold label (0-1)", range=[0, 1.02])
    return style(fig, height=420, title=title)
