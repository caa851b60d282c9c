"""The Evaluation sets page's controls (issue 27): every result beside random evaluation subsets of the same size.

A filtered evaluation set keeps 20-50 rows; on so few rows the models' ranking and accuracies move a lot by
chance alone. The study (:func:`aflite_core.evalsets.controls.study_controls`) draws 1,000 random evaluation
subsets of each run's size and computes the same statistic on each, as run and at equal depth (every adversary cut
to the smallest adversary's row count). These builders draw the observed value beside that null: its median and
5-95 % range, the observed value's percentile and the one-sided p-value against it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from aflite_core.evalsets import AdversaryStudy
from aflite_core.evalsets.controls import DEPTHS

from .theme import KEPT, NEUTRAL, REMOVED, plotly_text, style

__all__ = [
    "controls_findings",
    "controls_table",
    "drop_null_chart",
    "kendall_null_chart",
]

#: the colour of each depth's observed marker
DEPTH_COLOURS = {DEPTHS[0]: REMOVED, DEPTHS[1]: KEPT}
#: a p-value against random subsets below this is called "beyond chance" in the page's sentences
ALPHA = 0.05


def _controls(study: AdversaryStudy) -> pd.DataFrame:
    ctl = getattr(study, "controls", None)
    if ctl is None or not len(ctl):
        raise ValueError(
            "This study has no random-subset controls (it was stopped before its runs finished, or computed "
            "without them): press Run study to compute them."
        )
    return ctl


def _null_range_chart(
    rows: pd.DataFrame,
    labels: list[str],
    observed: str,
    median: str,
    low: str,
    high: str,
    percentile: str,
    p_value: str,
    *,
    x_title: str,
    height: int,
    title: str | None,
) -> go.Figure:
    """Horizontal null ranges (grey whiskers around the null's median) and the observed values per depth."""
    fig = go.Figure()
    pos = np.arange(len(rows))
    fig.add_trace(
        go.Scatter(
            x=rows[median].to_numpy(dtype=float),
            y=pos,
            mode="markers",
            name="random subsets of the same size: median, 5-95 %",
            marker=dict(symbol="line-ns-open", size=16, color=NEUTRAL, line=dict(width=2)),
            error_x=dict(
                type="data",
                symmetric=False,
                array=(rows[high] - rows[median]).to_numpy(dtype=float),
                arrayminus=(rows[median] - rows[low]).to_numpy(dtype=float),
                color=NEUTRAL,
                thickness=6,
                width=0,
            ),
            customdata=np.column_stack([rows[low], rows[high]]),
            text=labels,
            hovertemplate="%{text}<br>random subsets: median %{x:.3f}, 5-95 % %{customdata[0]:.3f} to "
            "%{customdata[1]:.3f}<extra></extra>",
        )
    )
    for depth in DEPTHS:
        mask = (rows["depth"] == depth).to_numpy()
        if not mask.any():
            continue
        sub = rows[mask]
        fig.add_trace(
            go.Scatter(
                x=sub[observed].to_numpy(dtype=float),
                y=pos[mask],
                text=[lab for lab, m in zip(labels, mask) if m],
                mode="markers",
                name=f"filtered rows ({depth})",
                marker=dict(symbol="diamond", size=12, color=DEPTH_COLOURS[depth], line=dict(color="#000", width=1)),
                customdata=np.column_stack([sub[percentile], sub[p_value], sub["n_rows_mean"]]),
                hovertemplate="%{text}<br>observed %{x:.3f} on %{customdata[2]:.0f} rows<br>percentile of the null "
                "%{customdata[0]:.0f}, p against random %{customdata[1]:.3f}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text=x_title, zeroline=True)
    # labels as tick texts: two short lines each (readable at 390 px), the data's names escaped by the caller
    fig.update_yaxes(
        autorange="reversed", automargin=True, title_text=None, tickmode="array", tickvals=pos, ticktext=labels
    )
    style(fig, height=height, title=title)
    fig.update_layout(margin=dict(l=10, r=20), legend=dict(font=dict(size=12)))
    return fig


def _row_labels(rows: pd.DataFrame) -> list[str]:
    """Short y labels: the adversary, its depth and its row count, on two lines (readable at 390 px)."""
    return [
        f"<b>{plotly_text(str(a))}</b><br>{d}, {n:.0f} rows"
        for a, d, n in zip(rows["adversary"], rows["depth"], rows["n_rows_mean"])
    ]


def kendall_null_chart(study: AdversaryStudy, *, title: str | None = None) -> go.Figure:
    """Kendall's coefficient against the unfiltered ranking beside its random-subset null, per adversary and depth.

    One row per adversary and depth (as run, equal depth): a grey whisker from the null's 5th to its 95th
    percentile around its median, and a diamond at the observed coefficient. A diamond left of the whisker
    means the filter reshuffles the models more than random subsets of the same size do.
    """
    rows = _controls(study).reset_index(drop=True)
    return _null_range_chart(
        rows,
        _row_labels(rows),
        "kendall",
        "kendall_null_median",
        "kendall_null_low",
        "kendall_null_high",
        "kendall_percentile",
        "kendall_p_vs_random",
        x_title="Kendall's coefficient (1 = same order)",
        height=max(300, 150 + 46 * len(rows)),
        title=title,
    )


def drop_null_chart(study: AdversaryStudy, adversary: str, *, title: str | None = None) -> go.Figure:
    """Each evaluated model's accuracy drop on one adversary's rows beside random subsets of the same size.

    One row per model and depth; a diamond right of its grey whisker is a drop larger than chance gives.
    """
    drops = getattr(study, "drop_controls", None)
    if drops is None or not len(drops) or adversary not in set(drops["adversary"]):
        raise ValueError(f"The study has no accuracy-drop controls for {adversary!r}; press Run study to compute them.")
    rows = drops[drops["adversary"] == adversary].reset_index(drop=True)
    labels = [f"<b>{plotly_text(str(m))}</b><br>{d}" for m, d in zip(rows["model"], rows["depth"])]
    return _null_range_chart(
        rows,
        labels,
        "accuracy_drop",
        "null_median",
        "null_low",
        "null_high",
        "percentile",
        "p_vs_random",
        x_title="accuracy drop (full − selected)",
        height=max(300, 150 + 40 * len(rows)),
        title=title,
    )


def controls_table(study: AdversaryStudy) -> pd.DataFrame:
    """The controls for display: per adversary and depth, Kendall's coefficient and the mean drop beside the null."""
    ctl = _controls(study)

    def rng(lo: pd.Series, hi: pd.Series) -> list[str]:
        return [f"{a:.2f} to {b:.2f}" if np.isfinite(a) and np.isfinite(b) else "–" for a, b in zip(lo, hi)]

    return pd.DataFrame(
        {
            "adversary": ctl["adversary"],
            "rows": ctl["depth"],
            "evaluation rows": ctl["n_rows_mean"].round(1),
            "Kendall": ctl["kendall"],
            "Kendall, random subsets (5-95 %)": rng(ctl["kendall_null_low"], ctl["kendall_null_high"]),
            "Kendall percentile": ctl["kendall_percentile"],
            "Kendall p vs random": ctl["kendall_p_vs_random"],
            "mean drop": ctl["mean_drop"],
            "mean drop, random subsets (5-95 %)": rng(ctl["mean_drop_null_low"], ctl["mean_drop_null_high"]),
            "mean drop percentile": ctl["mean_drop_percentile"],
            "mean drop p vs random": ctl["mean_drop_p_vs_random"],
        }
    )


def controls_findings(study: AdversaryStudy) -> list[str]:
    """What the controls say, in sentences computed from the study's numbers (markdown, names escaped by the page).

    One sentence on the ranking (how many adversaries reshuffle the models more than random subsets of the same
    size, as run and at equal depth) and one on the mean accuracy drop, each with the range of percentiles.
    """
    ctl = _controls(study)
    n_sub = int(ctl["n_subsets"].max()) if len(ctl) else 0
    out = []
    for what, col, beyond, within in (
        (
            "Kendall's coefficient",
            "kendall",
            "reshuffle the models more than",
            "reshuffle them no more than",
        ),
        ("the mean accuracy drop", "mean_drop", "lower the models more than", "lower them no more than"),
    ):
        parts = []
        for depth in DEPTHS:
            sub = ctl[(ctl["depth"] == depth) & np.isfinite(ctl[f"{col}_p_vs_random"])]
            if not len(sub):
                continue
            hits = int((sub[f"{col}_p_vs_random"] < ALPHA).sum())
            pct = sub[f"{col}_percentile"]
            lo, hi = round(float(pct.min())), round(float(pct.max()))
            where = f"percentile {lo}" if lo == hi else f"percentiles {lo}-{hi}"
            rest = f"; the other {len(sub) - hits} {within} chance" if hits < len(sub) else ""
            at_depth = "as run" if depth == DEPTHS[0] else f"at {depth}"
            parts.append(
                f"{at_depth}, {hits} of {len(sub)} adversar{'ies' if len(sub) != 1 else 'y'} {beyond} random "
                f"subsets of the same size do (p < {ALPHA:g}){rest} (observed values at {where} of the null)"
            )
        if parts:
            out.append(f"By {what}: " + "; ".join(parts) + ".")
    if out and n_sub:
        out.append(f"Each null is {n_sub:,} random evaluation subsets per adversary and depth; nothing is refitted.")
    return out
