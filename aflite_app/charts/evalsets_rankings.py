"""Rankings and adversary strength of the Evaluation sets page: an ``AdversaryStudy`` in, a figure or table out.

Phang et al. ("Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair"): Figure 3 (the
evaluated models sorted on each evaluation set; Kendall's coefficient against the unfiltered ranking and its
discordant pairs are our addition), Figure 4 (the rank change of the adversary's backbone, and of a model on its
very Φ as an upper bound) and Table 1 (adversary strength, measured independently of filtering). The other figures
of the page, and the helpers shared with these, are :mod:`aflite_app.charts.evalsets`. Kendall's coefficient is
never called τ here: τ is AFLite's threshold.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from aflite_core.evalsets import NONE, AdversaryStudy

from .evalsets import (
    NONE_LABEL,
    SAME_COLOUR,
    UPPER_BOUND_COLOUR,
    _adversaries,
    _adversary_colours,
    model_order,
)
from .theme import CLASS_COLOURS, MISSING, NEUTRAL, plotly_text, style

__all__ = [
    "ranking_chart",
    "ranking_list_chart",
    "ranking_lists",
    "same_representation_chart",
    "same_representation_table",
    "strength_chart",
    "strength_table",
]


def _kendall_label(corr: pd.DataFrame | None, a: str) -> str:
    if corr is None or a not in corr.index or not np.isfinite(corr.loc[a, "kendall"]):
        return f"Kendall's coefficient<br>(ours): {MISSING}"
    row = corr.loc[a]
    text = f"Kendall's coefficient<br>(ours): {float(row['kendall']):.2f}"
    if "discordant_pairs" in corr.columns:
        text += "<br>" + _pairs_text(row, "<br>")
    return text


def _kendall_line(corr: pd.DataFrame | None, a: str) -> str:
    """Kendall's coefficient and its pairs on one line (the sorted lists' subtitles)."""
    if corr is None or a not in corr.index or not np.isfinite(corr.loc[a, "kendall"]):
        return f"Kendall's coefficient (ours): {MISSING}"
    row = corr.loc[a]
    text = f"Kendall's coefficient (ours) {float(row['kendall']):.2f}"
    if "discordant_pairs" in corr.columns:
        text += "<br>" + _pairs_text(row)
    return text


def _pairs_text(row: pd.Series, sep: str = " ") -> str:
    """How many pairs of models swap order and how many tie, said so that a coefficient below 1 with no swap reads.

    E.g. "0 of 15 pairs swap order; 1 pair tied (a tie lowers the coefficient)".
    """
    swapped, n_pairs = int(row["discordant_pairs"]), int(row["n_pairs"])
    tied = int(row.get("tied_pairs", 0) or 0)
    text = f"{swapped} of {n_pairs} pairs{sep}swap order"
    if tied:
        text += f";{sep}{tied} pair{'s' if tied != 1 else ''} tied"
        if swapped == 0:
            text += f"{sep}(a tie lowers the coefficient)"
    return text


def ranking_lists(study: AdversaryStudy) -> pd.DataFrame:
    """Figure 3 as a table: per evaluation set (columns, unfiltered first), the models sorted worst to best.

    Row ``i`` holds the i-th worst model with its accuracy, e.g. ``"knn:pca (0.76)"``; ties keep the unfiltered
    order.
    """
    cols = [NONE, *_adversaries(study)]
    M = study.accuracy_matrix
    base = model_order(study)
    out = {}
    for c in cols:
        acc = M.reindex(base)[c]
        order = sorted(base, key=lambda m: (np.nan_to_num(acc[m], nan=-1.0), base.index(m)))
        out[NONE_LABEL if c == NONE else c] = [
            f"{m} ({acc[m]:.2f})" if np.isfinite(acc[m]) else f"{m} (no rows)" for m in order
        ]
    frame = pd.DataFrame(out)
    frame.index = [f"{i + 1}" for i in range(len(frame))]
    frame.index.name = "worst → best"
    return frame


def ranking_chart(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Figure 3 as the paper draws it: per evaluation set, the models sorted worst (top) to best (bottom).

    One column per evaluation set (the unfiltered one first, then the adversaries weakest first); every model is a
    labelled point at its position in that column's sorted list, joined across columns by a line of its colour,
    so a crossing line is a change of order. The model that shares an adversary's backbone (or, without one, its
    representation) is ringed in that adversary's column. Under each column: Kendall's coefficient against the
    unfiltered ranking and how many of the pairs of models swap order — our addition, the paper reports no
    coefficient.
    """
    cols = [NONE, *_adversaries(study)]
    labels = [NONE_LABEL if c == NONE else c for c in cols]
    M = study.accuracy_matrix
    base = model_order(study)
    colour = {m: CLASS_COLOURS[i % len(CLASS_COLOURS)] for i, m in enumerate(base)}
    corr = study.rank_correlation.set_index("adversary") if not study.rank_correlation.empty else None
    ringed = _ringed_pairs(study)
    pos = {}
    for c in cols:
        acc = M.reindex(base)[c]
        order = sorted(base, key=lambda m: (np.nan_to_num(acc[m], nan=-1.0), base.index(m)))
        for i, m in enumerate(order):
            pos[(c, m)] = i
    fig = go.Figure()
    for m in base:
        xs = list(range(len(cols)))
        ys = [pos[(c, m)] for c in cols]
        accs = [float(M.loc[m, c]) if m in M.index else np.nan for c in cols]
        text = [f"{plotly_text(m)} {a:.2f}" if np.isfinite(a) else f"{plotly_text(m)} {MISSING}" for a in accs]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers+text",
                name=m,
                text=text,
                textposition="top center",
                textfont=dict(size=10, color="#222222"),
                line=dict(color=colour[m], width=2),
                marker=dict(
                    color=colour[m],
                    size=[14 if (c, m) in ringed else 9 for c in cols],
                    line=dict(color="#000000", width=[3 if (c, m) in ringed else 0 for c in cols]),
                ),
                customdata=np.c_[labels, [pos[(c, m)] + 1 for c in cols], [pos[(NONE, m)] + 1] * len(cols)],
                hovertemplate=(
                    f"<b>{plotly_text(m)}</b> on %{{customdata[0]}}<br>accuracy %{{text}}<br>position "
                    "%{customdata[1]} from the worst (full set: %{customdata[2]})<extra></extra>"
                ),
                cliponaxis=False,
                showlegend=False,
            )
        )
    n = len(base)
    for j, c in enumerate(cols):
        if c == NONE:
            continue
        fig.add_annotation(
            x=j,
            y=n - 0.35,
            text=_kendall_label(corr, c),
            showarrow=False,
            yanchor="top",
            font=dict(size=11, color="#444444"),
        )
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(len(cols))),
        ticktext=[plotly_text(label) for label in labels],
        side="top",
        range=[-0.5, len(cols) - 0.5],
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(
        range=[n + 1.3, -0.8],  # room under the last row for the Kendall notes (up to six short lines)
        tickmode="array",
        tickvals=list(range(n)),
        ticktext=[f"{i + 1}" for i in range(n)],
        title_text="position, worst (top) to best",
        showgrid=False,
        zeroline=False,
    )
    style(fig, height=max(320, 150 + 58 * n), title=title)
    fig.update_layout(margin=dict(l=60, r=30, t=80 if not title else 110, b=20))
    return fig


#: the longest model name a sorted list writes on one line; a longer one breaks after its family ("logistic:")
LIST_LINE_CHARS = 22


def _list_name(model: str) -> str:
    """A model's name for a sorted list: escaped, and broken after ``family:`` (then every 22 characters) if long."""
    if len(model) <= LIST_LINE_CHARS:
        return plotly_text(model)
    family, sep, rep = model.partition(":")
    parts = [family + sep] if sep else []
    rest = rep if sep else model
    parts += [rest[i : i + LIST_LINE_CHARS] for i in range(0, len(rest), LIST_LINE_CHARS)]
    return "<br>".join(plotly_text(p) for p in parts)


def ranking_list_chart(study: AdversaryStudy, evaluation_set: str, *, height: int | None = None) -> go.Figure:
    """One sorted list of Figure 3: the models on one evaluation set, worst (top) to best, each in its own colour.

    ``evaluation_set`` is ``"none"`` (the full set) or an adversary. The page shows one of these per evaluation set
    in columns (a narrow screen stacks them); a model keeps its colour in every list, the adversary's backbone is
    ringed, and the title gives Kendall's coefficient against the full set's order with the pairs that swap
    (our addition: the paper gives no coefficient).
    """
    M = study.accuracy_matrix
    base = model_order(study)
    colour = {m: CLASS_COLOURS[i % len(CLASS_COLOURS)] for i, m in enumerate(base)}
    if evaluation_set not in M.columns:
        raise ValueError(f"The study has no evaluation set {evaluation_set!r}; it has {list(M.columns)}.")
    acc = M.reindex(base)[evaluation_set]
    order = sorted(base, key=lambda m: (np.nan_to_num(acc[m], nan=-1.0), base.index(m)))
    ringed = _ringed_pairs(study)
    corr = study.rank_correlation.set_index("adversary") if not study.rank_correlation.empty else None
    title = NONE_LABEL if evaluation_set == NONE else evaluation_set
    sub = "the order to compare with" if evaluation_set == NONE else _kendall_line(corr, evaluation_set)
    fig = go.Figure()
    wrapped = any(len(m) > LIST_LINE_CHARS for m in order)
    for i, m in enumerate(order):
        a = float(acc[m])
        ring = (evaluation_set, m) in ringed
        number = f"{a:.2f}" if np.isfinite(a) else MISSING
        fig.add_trace(
            go.Scatter(
                x=[0],
                y=[i],
                mode="markers+text",
                # the accuracy first, then the name on lines short enough for a narrow column (never cut off)
                text=[f"<b>{number}</b>  {_list_name(m)}"],
                customdata=[number],
                textposition="middle right",
                textfont=dict(size=12),
                marker=dict(
                    symbol="square",
                    size=16,
                    color=colour[m],
                    line=dict(color="#000000", width=3 if ring else 0),
                ),
                name=m,
                showlegend=False,
                hovertemplate=f"<b>{plotly_text(m)}</b> on {plotly_text(title)}<br>accuracy %{{customdata[0]}}<br>"
                f"{i + 1} from the worst" + ("<br>the adversary's backbone" if ring else "") + "<extra></extra>",
                cliponaxis=False,
            )
        )
    n = len(order)
    fig.update_xaxes(visible=False, range=[-0.12, 1.0])
    fig.update_yaxes(
        range=[n - 0.4, -0.6],
        tickmode="array",
        tickvals=list(range(n)),
        ticktext=[str(i + 1) for i in range(n)],
        showgrid=False,
        zeroline=False,
    )
    style(fig, height=height or 125 + (44 if wrapped else 30) * n)
    fig.update_layout(
        title=dict(text=f"<b>{plotly_text(title)}</b><br><sub>{sub}</sub>", x=0, xanchor="left", font_size=14),
        margin=dict(l=30, r=10, t=90, b=10),
    )
    return fig


def _ringed_pairs(study: AdversaryStudy) -> set[tuple[str, str]]:
    """(adversary, model): the backbone of each adversary, or the same-representation model when it has none."""
    same = study.same_representation
    if same.empty:
        return set()
    backbone = same[same["relation"] == "shared backbone"]
    have = set(backbone["adversary"])
    rest = same[(same["relation"] != "shared backbone") & ~same["adversary"].isin(have)]
    return {(str(a), str(m)) for a, m in zip(backbone["adversary"], backbone["model"])} | {
        (str(a), str(m)) for a, m in zip(rest["adversary"], rest["model"])
    }


def strength_table(study: AdversaryStudy, *, descriptions: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Each adversary's independent strength next to what round 1 did (for display)."""
    st = study.strength
    cols = [
        "adversary",
        "backbone",
        "strength (backbone accuracy)",
        "95 % interval",
        "round-1 mean predictability",
        "removed in round 1",
    ]
    if st is None or st.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame(
        {
            "adversary": st["adversary"],
            "backbone": st["backbone"].fillna(MISSING),
            "strength (backbone accuracy)": st["accuracy"],
            "95 % interval": [
                MISSING if not np.isfinite(lo) else f"{lo:.3f}-{hi:.3f}" for lo, hi in zip(st["ci_low"], st["ci_high"])
            ],
            "round-1 mean predictability": st["round1_mean_p"],
            "removed in round 1": st["round1_removed_share"],
        }
    )
    if descriptions:
        out.insert(2, "what the backbone is", [descriptions.get(a, "") for a in st["adversary"]])
    return out


def strength_chart(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Strength measured independently of filtering against what round 1 removes (the paper's Table 1 vs Figure 1).

    x: each adversary's strength, its backbone's accuracy on the full evaluation set with the Wilson 95 %
    interval as whiskers; y: the share of the evaluation rows it removes in round 1 (mean over seeds). If
    stronger adversaries removed more, the points would climb from left to right.
    """
    st = study.strength
    fig = go.Figure()
    if st is None or st.empty or not np.isfinite(st["accuracy"]).any():
        fig.add_annotation(
            text="No adversary has a backbone here, so there is no independent strength to show.",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
        )
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return style(fig, height=220, title=title)
    ok = st[np.isfinite(st["accuracy"])]
    colours = _adversary_colours(list(ok["adversary"]))
    acc = ok["accuracy"].to_numpy(dtype=float)
    rank = np.argsort(np.argsort(acc, kind="stable"), kind="stable")  # neighbours on x get labels above / below
    positions = ["top center" if r % 2 == 0 else "bottom center" for r in rank]
    fig.add_trace(
        go.Scatter(
            x=acc,
            y=100 * ok["round1_removed_share"].to_numpy(dtype=float),
            mode="markers+text",
            text=[plotly_text(a) for a in ok["adversary"]],
            textposition=positions,
            marker=dict(size=13, color=[colours[a] for a in ok["adversary"]], line=dict(color="#000000", width=1)),
            error_x=dict(
                type="data",
                symmetric=False,
                array=ok["ci_high"].to_numpy(dtype=float) - acc,
                arrayminus=acc - ok["ci_low"].to_numpy(dtype=float),
                thickness=1.2,
            ),
            customdata=np.c_[ok["backbone"], ok["ci_low"], ok["ci_high"], ok["round1_mean_p"]],
            hovertemplate=(
                "<b>%{text}</b><br>strength: %{customdata[0]} scores %{x:.3f} (95 % interval %{customdata[1]:.3f}-"
                "%{customdata[2]:.3f})<br>removed in round 1: %{y:.1f}% of the evaluation rows<br>round-1 mean "
                "predictability %{customdata[3]:.3f}<extra></extra>"
            ),
            showlegend=False,
            cliponaxis=False,
        )
    )
    lo = float(np.nanmin(ok["ci_low"]))
    hi = float(np.nanmax(ok["ci_high"]))
    pad = max(0.01, 0.1 * (hi - lo))
    fig.update_xaxes(
        title_text="strength: backbone accuracy on the full evaluation set (0-1)", range=[lo - pad, hi + pad]
    )
    fig.update_yaxes(title_text="removed in round 1 (% of the evaluation rows)", ticksuffix="%")
    return style(fig, height=380, title=title)


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
    """Figure 4: the adversary's backbone (and a model on its very Φ) — places fallen, and its accuracy drop.

    One row per adversary and related model: its backbone, trained separately (the paper's comparison, orange),
    and models trained on the adversary's own Φ (the identity pairing: an upper bound, the penalty is partly
    built in; light). Left: rank change (places fallen; > 0 means it fell). Right: its accuracy drop next to the
    mean drop of the other evaluated models on the same selected rows (a fair filter hurts both alike).
    """
    same = study.same_representation
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.05, column_widths=[0.45, 0.55])
    if same.empty:
        fig.add_annotation(
            text="No evaluated model is an adversary's backbone or uses its representation.",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
        )
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return style(fig, height=220, title=title)
    tag = {"shared backbone": "backbone", "same representation": "same Φ (upper bound)", "ensemble member": "member"}
    labels = [
        f"{m}<br>{tag.get(r, r)} · filtered by {a}"
        for a, m, r in zip(same["adversary"], same["model"], same["relation"])
    ]
    is_backbone = (same["relation"] == "shared backbone").to_numpy()
    point_colours = [SAME_COLOUR if b else UPPER_BOUND_COLOUR for b in is_backbone]
    change = pd.to_numeric(same["rank_change"], errors="coerce").astype(float).to_numpy()
    fig.add_trace(
        go.Scatter(
            x=change,
            y=labels,
            mode="markers+text",
            name="places fallen (this model)",
            showlegend=False,
            marker=dict(color=point_colours, size=14, line=dict(color="#000000", width=1)),
            text=[
                ("fell " if c > 0 else "rose " if c < 0 else "kept its place") + (f"{abs(int(c))}" if c else "")
                if np.isfinite(c)
                else MISSING
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
            name="this model's accuracy drop (orange: backbone; light: same Φ, an upper bound)",
            marker_color=point_colours,
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
