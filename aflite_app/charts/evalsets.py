"""Pure chart builders for the Evaluation sets page: an ``AdversaryStudy`` in, a Plotly figure out (no Streamlit).

They follow Phang et al. ("Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair"):
Figure 1 (what AFLite does to the evaluation rows per adversary), Figures 2 and 7 (evaluated models' accuracy per
adversary), Figure 3 (the models' ranking per adversary, with Kendall's coefficient against the unfiltered
ranking), Figure 4 (the rank change of the model that shares the adversary's representation) and Figure 5
(annotator agreement per category). Kendall's coefficient is never called τ here: τ is AFLite's threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.colors as pc
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from aflite_core.evalsets import NONE, AdversaryStudy
from aflite_core.result import EVAL_CATEGORIES

from .theme import CLASS_COLOURS, KEPT, NEUTRAL, REMOVED, TAU_LINE, style

__all__ = [
    "CATEGORY_COLOURS",
    "NONE_LABEL",
    "accuracy_heatmap",
    "accuracy_lines",
    "agreement_chart",
    "category_chart",
    "model_order",
    "ranking_chart",
    "same_representation_chart",
    "same_representation_table",
]

#: the three Figure 1 categories: removed rows in the removed colour (round 1 dark, later light), selected = kept
CATEGORY_COLOURS = {EVAL_CATEGORIES[0]: REMOVED, EVAL_CATEGORIES[1]: "#F4A582", EVAL_CATEGORIES[2]: KEPT}
#: how the unfiltered evaluation set is labelled in the charts
NONE_LABEL = "none (unfiltered)"
#: the model that shares the adversary's representation (Figures 4 and 7)
SAME_COLOUR = "#E69F00"


def _pct(x: float) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.0f}%"


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


def category_chart(
    study: AdversaryStudy, *, strength: Mapping[str, float] | None = None, title: str | None = None
) -> go.Figure:
    """Figure 1: stacked bars of the evaluation rows removed in round 1 / removed later / selected, per adversary.

    Bars are shares of the evaluation set in percent (mean over seeds; each bar sums to 100 %), adversaries in the
    study's order (weakest first, the ensemble last). The hover gives the mean row count, the spread over seeds
    and, when ``strength`` is given, the adversary's measured strength.
    """
    names = _adversaries(study)
    summ = study.category_summary
    n_eval = int(study.params.get("n_eval", 0))
    n_seeds = len(study.params.get("seeds", []))
    strength = dict(strength or {})
    fig = go.Figure()
    for cat in EVAL_CATEGORIES:
        rows = summ[summ["category"] == cat].set_index("adversary").reindex(names)
        share = 100 * rows["share_mean"].astype(float).fillna(0.0).to_numpy()
        sd = 100 * rows["share_std"].astype(float).to_numpy()
        count = rows["n_rows_mean"].astype(float).fillna(0.0).to_numpy()
        st_text = [f"{strength[a]:.2f}" if a in strength else "n/a" for a in names]
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
                    "<br>adversary strength (mean predictability): %{customdata[2]}<extra></extra>"
                ),
            )
        )
    ticks = [f"{a}<br>strength {strength[a]:.2f}" if a in strength else a for a in names]
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


def accuracy_heatmap(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Figure 7: accuracy of every evaluated model (columns) on each adversary's selected rows (rows).

    The first row is the unfiltered evaluation set (``"none"``). Cells where the model shares the adversary's
    representation are outlined (the paper's diagonal). Shape: (adversaries + 1) × evaluated models.
    """
    M = study.accuracy_matrix
    models = model_order(study)
    cols = [NONE, *_adversaries(study)]
    Z = M.reindex(index=models, columns=cols).T.to_numpy(dtype=float)
    ylab = [NONE_LABEL if c == NONE else c for c in cols]
    chance = float(study.params.get("chance", 0.0))
    text = [[_cell_text(v) for v in row] for row in Z]
    fig = go.Figure(
        go.Heatmap(
            z=Z,
            x=models,
            y=ylab,
            text=text,
            texttemplate="%{text}",
            colorscale="Blues",
            reversescale=True,
            zmin=min(chance, float(np.nanmin(Z)) if np.isfinite(Z).any() else chance),
            zmax=1.0,
            colorbar=dict(title=dict(text="accuracy (0-1)")),
            xgap=2,
            ygap=2,
            hovertemplate="evaluated model %{x}<br>rows: %{y}<br>accuracy %{z:.3f}<extra></extra>",
        )
    )
    pairs = [(models.index(m), cols.index(a)) for a, m in _same_pairs(study) if m in models and a in cols]
    for i, j in pairs:  # outline the whole cell (categories sit at 0, 1, … on both axes)
        fig.add_shape(
            type="rect",
            x0=i - 0.47,
            x1=i + 0.47,
            y0=j - 0.45,
            y1=j + 0.45,
            line=dict(color=SAME_COLOUR, width=4),
            fillcolor="rgba(0,0,0,0)",
        )
    if pairs:  # a legend entry for the outline
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name="model uses the adversary's representation",
                marker=dict(symbol="square-open", size=14, color=SAME_COLOUR, line=dict(width=3)),
                hoverinfo="skip",
            )
        )
        fig.update_layout(showlegend=True)
    fig.update_xaxes(
        title_text="evaluated model (family:representation), weakest → strongest on the full set", showgrid=False
    )
    fig.update_yaxes(title_text="evaluation rows scored", autorange="reversed", showgrid=False)
    return style(fig, height=max(300, 90 + 55 * len(cols)), title=title)


def accuracy_lines(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Figure 2 (as in the paper's Figure 8): accuracy per evaluated model, one line per adversary plus "none".

    x: evaluated models, weakest to strongest on the unfiltered set; y: accuracy on the rows each adversary
    selected (mean over seeds); chance level (1 / number of classes) dashed.
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
    for a in names:
        fig.add_trace(
            go.Scatter(
                x=models,
                y=M.reindex(models)[a].to_numpy(dtype=float),
                name=f"filtered by {a}",
                mode="lines+markers",
                line=dict(color=colours[a], width=2),
                marker=dict(size=7),
                hovertemplate="%{x}<br>rows " + a + " selected: accuracy %{y:.3f}<extra></extra>",
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


def _kendall_title(a: str, k: float) -> str:
    value = f"{k:.2f}" if k is not None and np.isfinite(k) else "n/a"
    return f"{a}<br>Kendall's coefficient {value}"


def ranking_chart(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Figure 3: per adversary, the evaluated models sorted worst (top) to best (bottom) on its selected rows.

    One panel per adversary, titled with Kendall's coefficient between that ranking and the unfiltered one
    (1 = same order). Each model keeps its colour across panels; the model that shares the adversary's
    representation has a thick outline. Bar text: rank on the selected rows and on the full set.
    """
    names = _adversaries(study)
    rk = study.rankings
    corr = study.rank_correlation.set_index("adversary") if not study.rank_correlation.empty else None
    base_order = model_order(study)
    colour = {m: CLASS_COLOURS[i % len(CLASS_COLOURS)] for i, m in enumerate(base_order)}
    same = _same_pairs(study)
    n = max(len(names), 1)
    ncols = 1 if n == 1 else 2
    nrows = math.ceil(n / ncols)
    titles = [
        _kendall_title(a, float(corr.loc[a, "kendall"]) if corr is not None and a in corr.index else np.nan)
        for a in names
    ]
    fig = make_subplots(
        rows=nrows,
        cols=ncols,
        subplot_titles=titles or None,
        horizontal_spacing=0.22,
        vertical_spacing=min(0.25, 0.5 / nrows) if nrows > 1 else 0.1,
    )
    for i, a in enumerate(names):
        r, c = i // ncols + 1, i % ncols + 1
        sub = rk[rk["adversary"] == a].copy()
        sub["accuracy"] = sub["accuracy"].astype(float)
        sub = sub.sort_values("accuracy", na_position="first", kind="stable")
        for _, row in sub.iterrows():
            m = str(row["model"])
            acc = float(row["accuracy"])
            rank = "–" if pd.isna(row["rank"]) else f"{int(row['rank'])}"
            was = "–" if pd.isna(row["rank_unfiltered"]) else f"{int(row['rank_unfiltered'])}"
            is_same = (a, m) in same
            fig.add_trace(
                go.Bar(
                    x=[0.0 if not np.isfinite(acc) else acc],
                    y=[m],
                    orientation="h",
                    name=m,
                    showlegend=False,
                    marker=dict(color=colour.get(m, NEUTRAL), line=dict(color="#000000", width=3 if is_same else 0)),
                    text=[f"rank {rank} (was {was})"],
                    textposition="auto",
                    insidetextanchor="start",
                    cliponaxis=False,
                    hovertemplate=(
                        f"<b>{m}</b> on the rows {a} selected<br>accuracy "
                        f"{'n/a' if not np.isfinite(acc) else f'{acc:.3f}'}<br>rank {rank} of {len(sub)}; "
                        f"rank on the full set {was}"
                        + ("<br>shares the adversary's representation" if is_same else "")
                        + "<extra></extra>"
                    ),
                ),
                row=r,
                col=c,
            )
        fig.update_yaxes(
            categoryorder="array",
            categoryarray=list(sub["model"]),
            autorange="reversed",
            title_text="evaluated model (worst at top)" if c == 1 else None,
            row=r,
            col=c,
        )
        fig.update_xaxes(range=[0, 1.02], title_text="accuracy on its selected rows (0-1)", row=r, col=c)
    fig.update_layout(barmode="overlay", bargap=0.25, uniformtext=dict(minsize=10, mode="show"))
    fig.update_annotations(font_size=13)
    return style(fig, height=max(340, 60 + nrows * (90 + 34 * max(1, len(base_order)))), title=title)


def same_representation_table(study: AdversaryStudy) -> pd.DataFrame:
    """Figure 4 as a table: per adversary, each evaluated model on the adversary's representation."""
    same = study.same_representation
    cols = {
        "adversary": "adversary",
        "model": "evaluated model",
        "relation": "relation",
        "rank_unfiltered": "rank (full set)",
        "rank_filtered": "rank (selected rows)",
        "rank_change": "places fallen",
        "accuracy_unfiltered": "accuracy (full set)",
        "accuracy_filtered": "accuracy (selected rows)",
        "accuracy_drop": "accuracy drop",
        "others_mean_drop": "other models' mean drop",
    }
    if same.empty:
        return pd.DataFrame(columns=list(cols.values()))
    return same[list(cols)].rename(columns=cols).reset_index(drop=True)


def same_representation_chart(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Figure 4: the model that shares the adversary's representation — places fallen, and its accuracy drop.

    Left: rank change (places fallen; > 0 means it fell). Right: its accuracy drop next to the mean drop of the
    other evaluated models on the same selected rows (a fair filter hurts both alike).
    """
    same = study.same_representation
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.05, column_widths=[0.45, 0.55])
    if same.empty:
        fig.add_annotation(
            text="No evaluated model uses an adversary's representation.",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
        )
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return style(fig, height=220, title=title)
    labels = [f"{m} · filtered by {a}" for a, m in zip(same["adversary"], same["model"])]
    change = pd.to_numeric(same["rank_change"], errors="coerce").astype(float).to_numpy()
    fig.add_trace(
        go.Scatter(
            x=change,
            y=labels,
            mode="markers+text",
            name="places fallen (this model)",
            showlegend=False,
            marker=dict(color=SAME_COLOUR, size=14, line=dict(color="#000000", width=1)),
            text=[
                ("fell " if c > 0 else "rose " if c < 0 else "kept its place") + (f"{abs(int(c))}" if c else "")
                if np.isfinite(c)
                else "n/a"
                for c in change
            ],
            textposition="middle right",
            customdata=np.column_stack([same["rank_unfiltered"].astype(str), same["rank_filtered"].astype(str)]),
            hovertemplate="%{y}<br>rank %{customdata[0]} on the full set → %{customdata[1]} on the selected rows"
            "<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=same["accuracy_drop"].astype(float),
            y=labels,
            orientation="h",
            name="this model's accuracy drop",
            marker_color=SAME_COLOUR,
            hovertemplate="%{y}<br>accuracy drop %{x:.3f}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Bar(
            x=same["others_mean_drop"].astype(float),
            y=labels,
            orientation="h",
            name="other models' mean drop",
            marker_color=NEUTRAL,
            hovertemplate="%{y}<br>other models lose %{x:.3f} on average<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fig.add_vline(x=0, line=dict(color="#000000", width=1), row=1, col=1)
    fig.update_layout(barmode="group", bargap=0.3)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    finite = change[np.isfinite(change)]
    reach = max(2.0, float(np.abs(finite).max()) + 1.5) if finite.size else 2.0
    fig.update_xaxes(
        title_text="places fallen in the ranking", dtick=1, range=[-reach, reach + 1.5], zeroline=False, row=1, col=1
    )
    fig.update_xaxes(title_text="accuracy lost (0-1)", rangemode="tozero", row=1, col=2)
    return style(fig, height=max(260, 120 + 46 * len(labels)), title=title)


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
