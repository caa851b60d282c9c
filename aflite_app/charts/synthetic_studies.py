"""Charts of the Synthetic page's studies beyond Figure 2: accuracy over the rounds, out of distribution, AFOptimum.

:func:`accuracy_rounds_chart` (one run's linear and RBF accuracy after every round), :func:`ood_chart` and
:func:`ood_loss_text` (the out-of-distribution test, ICML §5's claim), :func:`optimum_chart` and
:func:`optimum_text` (AFOptimum against AFLite's strategies on tiny data, ICML §2). Figure 2 itself (the circles,
the round stepper) is :mod:`aflite_app.charts.synthetic`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .theme import KEPT, NEUTRAL, REMOVED, TAU_LINE, style

__all__ = [
    "MODEL_LABELS",
    "OPTIMUM_BAR_NAMES",
    "STRATEGY_LABELS",
    "TEST_SET_LABELS",
    "TRAIN_SET_COLOURS",
    "TRAIN_SET_LABELS",
    "TRAIN_SET_LINES",
    "accuracy_rounds_chart",
    "ood_chart",
    "ood_loss_text",
    "optimum_chart",
    "optimum_text",
]

#: the training sets of the out-of-distribution test: all rows neutral, AFLite's rows kept-blue, random purple
TRAIN_SET_COLOURS = {"original": "#333333", "aflite": KEPT, "random": "#CC79A7"}
#: how each training set's line is drawn, so that two with the same accuracies never hide one another: drawn in
#: this order (first at the bottom), a wide solid line under a narrower dashed one, each with its own marker
TRAIN_SET_LINES = {
    "random": dict(width=6, dash="solid", symbol="square", size=13),
    "aflite": dict(width=3, dash="solid", symbol="diamond", size=10),
    "original": dict(width=2, dash="dash", symbol="circle", size=7),
}
#: the legend's order (all rows, AFLite, random), whatever the drawing order
_LEGEND_RANK = {"original": 1, "aflite": 2, "random": 3}
TRAIN_SET_LABELS = {
    "original": "all training rows",
    "aflite": "AFLite's kept rows",
    "random": "random subset, same size",
}
TEST_SET_LABELS = {
    "in_distribution": "in distribution",
    "no_bias": "bias removed",
    "flipped_bias": "bias flipped",
    "transfer": "transfer (MNLI)",
}
MODEL_LABELS = {"logistic": "linear model (logistic regression)", "rbf": "RBF-kernel SVM"}
STRATEGY_LABELS = {
    "greedy": "A · greedy (1 per step)",
    "slice": "B · greedy slicing (AFLite)",
    "sample": "C · slice sampling",
}


def accuracy_rounds_chart(curve: pd.DataFrame, rnd: int | None = None, *, height: int = 380) -> go.Figure:
    """Linear and RBF-SVM accuracy of the set left after every round (round 0 = all rows).

    ``curve`` is :func:`aflite_core.experiments.figure2.accuracy_over_rounds`. The grey band is chance (the
    largest class's share) ± two binomial standard errors on that round's rows: an accuracy inside it is
    indistinguishable from guessing, one below it is worse than guessing. A dotted line marks round ``rnd``.
    """
    x = curve["round"].to_numpy()
    chance = curve["chance"].to_numpy(dtype=float)
    band = 2 * curve["se"].to_numpy(dtype=float)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=np.r_[x, x[::-1]],
            y=np.r_[chance + band, (chance - band)[::-1]],
            fill="toself",
            fillcolor="rgba(153,153,153,0.25)",
            line=dict(width=0),
            name="chance ± 2 standard errors",
            hoverinfo="skip",
        )
    )
    custom = np.c_[curve["rows"], curve["biased_rows"]]
    for col, label, colour, dash in (("linear", "linear model", REMOVED, "solid"), ("rbf", "RBF SVM", KEPT, "solid")):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=curve[col].to_numpy(dtype=float),
                mode="lines+markers",
                name=label,
                line=dict(color=colour, width=2.5, dash=dash),
                marker=dict(size=6),
                customdata=custom,
                hovertemplate=(
                    f"{label}<br>after round %{{x}}: accuracy %{{y:.3f}}<br>%{{customdata[0]:,}} rows left, "
                    "%{customdata[1]:,} with bias features<extra></extra>"
                ),
            )
        )
    if rnd is not None:
        fig.add_vline(x=int(rnd), line=dict(color=TAU_LINE, dash="dot", width=1))
    fig.update_xaxes(title_text="after round (0 = all rows)", tickformat="d")
    fig.update_yaxes(title_text="held-out accuracy (0-1)", range=[0, 1.02])
    return style(fig, height=height)


def _ood_means(table: pd.DataFrame, dataset: str | None) -> pd.DataFrame:
    t = table if dataset is None else table[table["dataset"] == dataset]
    if dataset is None:  # mean over datasets; spread = sd over datasets of the seed means
        return (
            t.groupby(["model", "train_set", "test_set"], sort=False)
            .agg(accuracy=("accuracy", "mean"), spread=("accuracy", "std"))
            .reset_index()
        )
    return t.rename(columns={"accuracy_std": "spread"})[["model", "train_set", "test_set", "accuracy", "spread"]]


#: the OOD chart's top margin: up to three legend rows (about 22 px each) and the panel title above the plot
OOD_TOP_MARGIN = 110


def ood_chart(
    table: pd.DataFrame, dataset: str | None = None, *, model: str | None = None, height: int = 440
) -> go.Figure:
    """Accuracy by test set for models trained on all rows, on AFLite's kept rows and on a random subset.

    ``table`` is :attr:`aflite_core.experiments.ood.OODResult.table`. One panel per model family (or only ``model``: the
    page draws one figure per family in columns, so a narrow screen stacks them); x: the test sets, from in
    distribution to the strongest shift (bias features removed, then flipped to the other class); one line per
    training set; error bars: the spread over seeds (one dataset) or over datasets (``dataset=None``: the mean of
    all datasets). Chance (0.5) dashed. Lines that coincide stay visible (:data:`TRAIN_SET_LINES`: a wide solid line
    under a narrower or dashed one, distinct markers); the legend sits at the top inside the figure.
    """
    means = _ood_means(table, dataset)
    if model is not None:
        means = means[means["model"] == model]
    models = list(dict.fromkeys(means["model"]))
    tests = list(dict.fromkeys(table["test_set"]))
    fig = make_subplots(
        rows=1,
        cols=max(1, len(models)),
        shared_yaxes=True,
        subplot_titles=[MODEL_LABELS.get(m, m) for m in models],
        horizontal_spacing=0.06,
    )
    present = list(dict.fromkeys(means["train_set"]))
    drawing = [t for t in TRAIN_SET_LINES if t in present] + [t for t in present if t not in TRAIN_SET_LINES]
    for j, m in enumerate(models, start=1):
        for train_set in drawing:
            look = TRAIN_SET_LINES.get(train_set, dict(width=2.5, dash="solid", symbol="circle", size=8))
            sub = means[(means["model"] == m) & (means["train_set"] == train_set)].set_index("test_set").reindex(tests)
            fig.add_trace(
                go.Scatter(
                    x=[TEST_SET_LABELS.get(t, t) for t in tests],
                    y=sub["accuracy"].to_numpy(dtype=float),
                    error_y=dict(type="data", array=np.nan_to_num(sub["spread"].to_numpy(dtype=float)), thickness=1.2),
                    mode="lines+markers",
                    name=TRAIN_SET_LABELS.get(train_set, train_set),
                    legendgroup=train_set,
                    showlegend=j == 1,
                    legendrank=_LEGEND_RANK.get(train_set, 9),
                    line=dict(color=TRAIN_SET_COLOURS.get(train_set, NEUTRAL), width=look["width"], dash=look["dash"]),
                    marker=dict(size=look["size"], symbol=look["symbol"]),
                    hovertemplate=(
                        f"{MODEL_LABELS.get(m, m)} trained on {TRAIN_SET_LABELS.get(train_set, train_set)}"
                        "<br>%{x}: accuracy %{y:.3f}<extra></extra>"
                    ),
                ),
                row=1,
                col=j,
            )
        fig.add_hline(y=0.5, line=dict(color=TAU_LINE, dash="dash", width=1), row=1, col=j)
    fig.update_yaxes(title_text="test accuracy (0-1)", range=[0, 1.02], row=1, col=1)
    fig.update_annotations(font_size=13)
    style(fig, height=height)
    # the legend on top, inside the figure (container coordinates, issue 29 item 3): three entries may wrap to
    # three rows on a phone, then the panel title; the top margin holds both
    fig.update_layout(
        legend=dict(orientation="h", yref="container", y=1.0, yanchor="top", x=0, xanchor="left", font_size=12),
        margin=dict(t=OOD_TOP_MARGIN),
    )
    return fig


#: the short name on every bar of the AFOptimum chart, so a bar of length 0 still says whose it is
OPTIMUM_BAR_NAMES = {"full": "all rows", "greedy": "A", "slice": "B", "sample": "C", "optimum": "optimum"}
#: a bias of 0 is drawn this long (in bias units, 1 % of the axis) so its colour shows; its label reads 0.00
ZERO_BAR = 0.011


def _bar(values: np.ndarray) -> np.ndarray:
    """Bar lengths: the values, a zero (or missing) drawn as a short stub (:data:`ZERO_BAR`)."""
    v = np.asarray(values, dtype=float)
    return np.where(np.isfinite(v) & (v > ZERO_BAR), v, ZERO_BAR)


def optimum_chart(table: pd.DataFrame, *, height: int | None = None) -> go.Figure:
    """AFOptimum against AFLite's strategies: the exact bias each reaches at the target size, per tiny problem.

    ``table`` is :attr:`aflite_core.experiments.optimum.OptimumComparison.table`. Per case (rows of the chart): the bias
    of all rows (grey), of each strategy's run with the exact scores (strategy C: mean over its seeds, with the best to
    the worst seed in the label) and the optimum (black). Lower is less biased; nothing can go below the optimum.
    Every bar is labelled with its short name and value ("B 0.00"), and a bias of 0 is drawn as a short stub of its
    colour (:data:`ZERO_BAR`), so a zero result is never a bare "0.00" without a bar (issue 29 item 9); the hover
    gives the exact value.
    """
    cases = list(dict.fromkeys(table["case"]))
    fig = go.Figure()
    first = table.drop_duplicates("case").set_index("case").reindex(cases)
    labels = dict(textposition="outside", cliponaxis=False, textfont_size=11)
    full = first["bias_full"].to_numpy(dtype=float)
    fig.add_trace(
        go.Bar(
            y=cases,
            x=_bar(full),
            orientation="h",
            name="all rows (before filtering)",
            marker_color=NEUTRAL,
            text=[f"{OPTIMUM_BAR_NAMES['full']} {v:.2f}" for v in full],
            customdata=full,
            hovertemplate="%{y}<br>all rows: bias %{customdata:.3f}<extra></extra>",
            **labels,
        )
    )
    shades = {"greedy": "#56B4E9", "slice": KEPT, "sample": "#003F63"}
    for strategy in dict.fromkeys(table["strategy"]):
        sub = table[table["strategy"] == strategy].set_index("case").reindex(cases)
        mean = sub["bias_aflite"].to_numpy(dtype=float)
        several = (sub["n_seeds"] > 1).to_numpy()
        short = OPTIMUM_BAR_NAMES.get(strategy, strategy)
        text = [
            f"{short} {m:.2f} ({lo:.2f}-{hi:.2f})" if many else f"{short} {m:.2f}"
            for m, lo, hi, many in zip(mean, sub["bias_aflite_min"], sub["bias_aflite_max"], several)
        ]
        fig.add_trace(
            go.Bar(
                y=cases,
                x=_bar(mean),
                orientation="h",
                name=f"AFLite {STRATEGY_LABELS.get(strategy, strategy)}",
                marker_color=shades.get(strategy, KEPT),
                text=text,
                customdata=np.c_[sub["bias_aflite_min"], sub["bias_aflite_max"], sub["n_seeds"], mean],
                hovertemplate=f"%{{y}}<br>{STRATEGY_LABELS.get(strategy, strategy)}: bias %{{customdata[3]:.3f}}"
                "<br>best to worst of %{customdata[2]:.0f} run(s): %{customdata[0]:.3f}-%{customdata[1]:.3f}"
                "<extra></extra>",
                **labels,
            )
        )
    best = first["bias_optimum"].to_numpy(dtype=float)
    fig.add_trace(
        go.Bar(
            y=cases,
            x=_bar(best),
            orientation="h",
            name="AFOptimum (exhaustive search)",
            marker_color="#000000",
            text=[f"{OPTIMUM_BAR_NAMES['optimum']} {v:.2f}" for v in best],
            **labels,
            customdata=np.c_[first["n_optimal"], first["n_subsets"], best],
            hovertemplate="%{y}<br>optimum: bias %{customdata[2]:.3f}<br>%{customdata[0]:,} of %{customdata[1]:,} "
            "subsets reach it<extra></extra>",
        )
    )
    fig.update_layout(barmode="group", bargap=0.25, bargroupgap=0.05)
    fig.update_yaxes(autorange="reversed", title_text=None)
    fig.update_xaxes(title_text="exact bias R (leave-one-out accuracy, 0-1)", range=[0, 1.15])
    fig.update_yaxes(tickmode="array", tickvals=cases, ticktext=[c.replace(" (", "<br>(") for c in cases])
    return style(fig, height=height or 140 + 150 * len(cases))


def ood_loss_text(result: Any, dataset: str | None = None) -> str:
    """Accuracy lost from in distribution to flipped bias features, per model and training set, in words.

    ``result`` is an :class:`aflite_core.experiments.ood.OODResult`; ``dataset=None`` averages the datasets.
    """
    loss = result.shift_loss()
    if dataset is not None:
        loss = loss[loss["dataset"] == dataset]
    lost = loss.groupby(["model", "train_set"], sort=False)["loss"].mean()
    parts = []
    for m in dict.fromkeys(loss["model"]):
        sets = [f"{TRAIN_SET_LABELS.get(s, s)} {lost[(m, s)]:+.3f}" for s in TRAIN_SET_LABELS if (m, s) in lost]
        parts.append(f"{MODEL_LABELS.get(m, m)}: {', '.join(sets)}")
    return "; ".join(parts)


def optimum_text(table: pd.DataFrame) -> str:
    """What the AFOptimum comparison shows, in words computed from its table."""
    per = table.groupby("strategy", sort=False).agg(found=("found_optimum", "mean"), gap=("gap", "mean"))
    best = per["gap"].idxmin()
    worst = table.loc[table["gap"].idxmax()]
    zero = int((table.drop_duplicates("case")["bias_optimum"] == 0).sum())
    n_cases = table["case"].nunique()
    text = (
        f"Closest on average: {STRATEGY_LABELS.get(best, best)} (mean gap {per.loc[best, 'gap']:+.3f}); largest "
        f"gap: {STRATEGY_LABELS.get(worst['strategy'], worst['strategy'])} on {worst['case']} "
        f"({worst['bias_aflite']:.3f} against the optimum {worst['bias_optimum']:.3f})."
    )
    if zero:
        text += (
            f" On {zero} of the {n_cases} problems the optimum is 0: a subset on which every left-out row is misread, "
            "below chance — minimising R alone drives a filter past 'unbiased' to adversarial, as the linear "
            "accuracies above show."
        )
    return text
