"""Pure chart and text builders of the Baselines page (Plotly, no Streamlit).

Baselines (ICML 2020 §4.2): is AFLite's kept set harder because of *which* rows it kept, or only because it
is smaller? The same model families are cross-validated on the full data, AFLite's kept rows, a random
subset of the same size and the one-shot single-model filter's subset; every subset has one colour on every
chart (AFLite kept in the KEPT blue). Data: a grid of sample images per class and the class counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .theme import KEPT, NEUTRAL, fmt_num, style

__all__ = [
    "SUBSET_COLOURS",
    "SUBSET_LABELS",
    "accuracy_chart",
    "baseline_table",
    "bias_chart",
    "chance_text",
    "plain_reading",
]

#: the subsets compared, in display order, with their names on the page
SUBSET_LABELS = {
    "full": "full data",
    "aflite": "AFLite kept",
    "random": "random subset",
    "one-shot": "one-shot filter",
}
#: one colour per subset on every chart: AFLite kept is the app's KEPT blue (Okabe-Ito for the others)
SUBSET_COLOURS = {
    "full": NEUTRAL,
    "aflite": KEPT,
    "random": "#009E73",
    "one-shot": "#CC79A7",
}
ACCURACY_AXIS = "accuracy (share correct, 0-1)"
BIAS_AXIS = "mean predictability p̄ (0-1)"


def _label(model: str, model_labels: Mapping[str, str] | None) -> str:
    return (model_labels or {}).get(model, model)


def _floor(values: Sequence[float]) -> float:
    """Lower end of the value axis: 0, unless every value is high (then a bit below the lowest, on 0.05)."""
    finite = [float(v) for v in values if v is not None and np.isfinite(v)]
    if not finite:
        return 0.0
    low = min(finite)
    if low < 0.5:
        return 0.0
    return max(0.0, math.floor((low - 0.05) * 20) / 20)


def accuracy_chart(
    accuracies: pd.DataFrame,
    *,
    model_labels: Mapping[str, str] | None = None,
    view_labels: Mapping[str, str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Grouped bars: cross-validated accuracy per model family (x), one bar per subset, ± one fold sd.

    ``accuracies`` has one row per (subset, features, model) with columns ``subset`` (keys of
    :data:`SUBSET_LABELS`), ``features`` ("full input" / "partial input"), ``model``, ``accuracy``,
    ``accuracy_std``, ``n_rows``, ``majority_rate`` and ``note``. With two kinds of features the figure has one
    panel per kind (same y axis). The dashed line (no label: :func:`chance_text` is its caption) is the share of
    the largest class in the full data (what always answering that class would score). The y axis starts above 0
    when every bar is high, to make the differences visible (:func:`chance_text` says so; the dashed line is then
    drawn only inside the range).
    """
    views = list(dict.fromkeys(accuracies["features"])) or ["full input"]
    models = list(dict.fromkeys(accuracies["model"]))
    subsets = [s for s in SUBSET_LABELS if s in set(accuracies["subset"])]
    titles = [(view_labels or {}).get(v, v) for v in views]
    fig = make_subplots(
        rows=1,
        cols=len(views),
        shared_yaxes=True,
        horizontal_spacing=0.06,
        subplot_titles=titles if len(views) > 1 else None,
    )
    x = [_label(m, model_labels) for m in models]
    for col, view in enumerate(views, start=1):
        part = accuracies[accuracies["features"] == view]
        for subset in subsets:
            rows = part[part["subset"] == subset].set_index("model").reindex(models)
            name = SUBSET_LABELS[subset]
            custom = np.c_[
                rows["n_rows"].fillna(0).to_numpy(),
                rows["majority_rate"].to_numpy(dtype=float),
                rows["note"].fillna("").to_numpy(dtype=object),
            ]
            fig.add_trace(
                go.Bar(
                    x=x,
                    y=rows["accuracy"].to_numpy(dtype=float),
                    name=name,
                    legendgroup=subset,
                    showlegend=col == 1,
                    marker_color=SUBSET_COLOURS[subset],
                    offsetgroup=subset,
                    error_y=dict(
                        type="data",
                        array=rows["accuracy_std"].fillna(0).to_numpy(dtype=float),
                        visible=True,
                        thickness=1.2,
                        width=3,
                        color="#444444",
                    ),
                    customdata=custom,
                    hovertemplate=(
                        f"<b>{name}</b><br>%{{x}}: accuracy %{{y:.3f}}<br>%{{customdata[0]:,}} rows"
                        "; largest class %{customdata[1]:.1%}<br>%{customdata[2]}<extra></extra>"
                    ),
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="model family", row=1, col=col)
    floor = _floor(list(accuracies["accuracy"]))
    for col, view in enumerate(views, start=1):
        full = accuracies[(accuracies["features"] == view) & (accuracies["subset"] == "full")]
        majority = float(full["majority_rate"].iloc[0]) if len(full) else float("nan")
        if np.isfinite(majority) and majority >= floor:  # chance level, when it is inside the axis range
            fig.add_hline(y=majority, line=dict(color="#000000", dash="dash", width=1), row=1, col=col)
    fig.update_yaxes(title_text=ACCURACY_AXIS, row=1, col=1)
    fig.update_yaxes(range=[floor, 1.0])
    fig.update_layout(barmode="group", bargap=0.25, bargroupgap=0.05)
    style(fig, height=420 if len(views) == 1 else 450, title=title)
    if len(views) > 1:  # panel titles sit where the legend would: legend below the panels
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0), margin=dict(b=110))
    return fig


def chance_text(accuracies: pd.DataFrame, fig: go.Figure) -> str:
    """One sentence on the chance level of an :func:`accuracy_chart` (the dashed line, or why there is none)."""
    full = accuracies[(accuracies["subset"] == "full") & (accuracies["features"] == "full input")]
    majority = float(full["majority_rate"].iloc[0]) if len(full) else float("nan")
    floor = float(fig.layout.yaxis.range[0]) if fig.layout.yaxis.range else 0.0
    if not np.isfinite(majority):
        return ""
    if majority >= floor:
        return f"The dashed line is the largest class's share ({majority:.0%}): what always guessing it would score."
    return (
        f"The y axis starts at {floor:g} to make the differences visible; always guessing the largest class "
        f"would score only {majority:.0%}."
    )


def bias_chart(bias: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Bars: the representation bias of each subset, measured as its mean out-of-sample predictability p̄.

    ``bias`` has one row per subset with columns ``subset``, ``mean_predictability`` (NaN when it could not be
    measured), ``n_rows``, ``n_scored`` and ``note``.
    """
    order = [s for s in SUBSET_LABELS if s in set(bias["subset"])]
    table = bias.set_index("subset").reindex(order)
    fig = go.Figure(
        go.Bar(
            x=[SUBSET_LABELS[s] for s in order],
            y=table["mean_predictability"].to_numpy(dtype=float),
            marker_color=[SUBSET_COLOURS[s] for s in order],
            text=[fmt_num(v) for v in table["mean_predictability"].to_numpy(dtype=float)],
            textposition="outside",
            cliponaxis=False,
            customdata=np.c_[
                table["n_rows"].fillna(0).to_numpy(),
                table["n_scored"].fillna(0).to_numpy(),
                table["note"].fillna("").to_numpy(dtype=object),
            ],
            hovertemplate=(
                "%{x}: mean p̄ = %{y:.3f}<br>%{customdata[0]:,} rows, %{customdata[1]:,} scored"
                "<br>%{customdata[2]}<extra></extra>"
            ),
            showlegend=False,
        )
    )
    floor = _floor(table["mean_predictability"].to_numpy(dtype=float))
    fig.update_yaxes(range=[floor, 1.05], title_text=BIAS_AXIS)
    fig.update_xaxes(title_text="subset (all of equal size except the full data)")
    return style(fig, height=340, title=title)


def baseline_table(
    accuracies: pd.DataFrame,
    *,
    model_labels: Mapping[str, str] | None = None,
    view_labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per model family (and kind of features): the accuracy on every subset, and AFLite − random.

    The column of each subset names its size, e.g. ``"AFLite kept (719 rows)"``. Accuracies are rounded to 3
    decimals.
    """
    subsets = [s for s in SUBSET_LABELS if s in set(accuracies["subset"])]
    views = list(dict.fromkeys(accuracies["features"]))
    records = []
    sizes = accuracies.drop_duplicates("subset").set_index("subset")["n_rows"]
    for view in views:
        part = accuracies[accuracies["features"] == view]
        for model in dict.fromkeys(part["model"]):
            rows = part[part["model"] == model].set_index("subset")["accuracy"]
            rec = {"model family": _label(model, model_labels), "features": (view_labels or {}).get(view, view)}
            rec.update({SUBSET_LABELS[s]: round(float(rows.get(s, np.nan)), 3) for s in subsets})
            if "aflite" in rows and "random" in rows:
                rec["AFLite − random"] = round(float(rows["aflite"] - rows["random"]), 3)
            records.append(rec)
    out = pd.DataFrame(records).rename(
        columns={SUBSET_LABELS[s]: f"{SUBSET_LABELS[s]} ({int(sizes[s]):,} rows)" for s in subsets}
    )
    if len(views) <= 1:
        out = out.drop(columns="features")
    return out


def plain_reading(
    accuracies: pd.DataFrame,
    bias: pd.DataFrame | None = None,
    *,
    model_labels: Mapping[str, str] | None = None,
    partial_label: str | None = None,
) -> list[str]:
    """What the comparison says, in a few sentences computed from the numbers (Markdown).

    The first model family is the headline: AFLite's subset is called harder than the random subset when its
    accuracy is lower by more than two standard errors of the difference (fold sd / √folds) and at least one
    point (0.01); "about the same" otherwise.
    """
    acc = accuracies[accuracies["features"] == "full input"]
    if not len(acc):
        return []
    sizes = acc.drop_duplicates("subset").set_index("subset")["n_rows"]
    out: list[str] = []
    if "aflite" in sizes and "full" in sizes and int(sizes["aflite"]) == int(sizes["full"]):
        return [
            "AFLite removed no rows in this run, so every subset is the full data and there is nothing to "
            "compare. Lower τ or raise the number of rounds on the Filter page."
        ]
    models = list(dict.fromkeys(acc["model"]))
    table = acc.pivot_table(index="model", columns="subset", values="accuracy", aggfunc="first")
    spread = acc.pivot_table(index="model", columns="subset", values="accuracy_std", aggfunc="first")
    folds = (
        acc.pivot_table(index="model", columns="subset", values="n_splits", aggfunc="first")
        if "n_splits" in acc
        else None
    )

    def verdict(model: str) -> str:
        a, r = table.loc[model].get("aflite", np.nan), table.loc[model].get("random", np.nan)
        if not (np.isfinite(a) and np.isfinite(r)):
            return "unknown"
        k = 5.0
        if folds is not None:
            k = float(np.nanmin([folds.loc[model].get("aflite", 5), folds.loc[model].get("random", 5)]) or 5)
        sa, sr = spread.loc[model].get("aflite", 0.0), spread.loc[model].get("random", 0.0)
        se = math.sqrt((np.nan_to_num(sa) ** 2 + np.nan_to_num(sr) ** 2) / max(k, 1.0))
        margin = max(0.01, 2 * se)
        if r - a > margin:
            return "harder"
        if a - r > margin:
            return "easier"
        return "same"

    head = models[0]
    name = _label(head, model_labels)
    row = table.loc[head]
    a, r, f = row.get("aflite", np.nan), row.get("random", np.nan), row.get("full", np.nan)
    v = verdict(head)
    if v == "harder":
        out.append(
            f"On the AFLite subset the **{name}** model drops to **{fmt_num(a)}** (random subset of the same "
            f"size: {fmt_num(r)}; full data: {fmt_num(f)}): the filter removed more than size alone explains."
        )
    elif v == "easier":
        out.append(
            f"The **{name}** model scores **{fmt_num(a)}** on the AFLite subset, *higher* than on a random "
            f"subset of the same size ({fmt_num(r)}; full data: {fmt_num(f)}): for this family the filter did "
            "not leave harder rows than chance would."
        )
    elif v == "same":
        out.append(
            f"The **{name}** model scores **{fmt_num(a)}** on the AFLite subset and {fmt_num(r)} on a random "
            f"subset of the same size (full data: {fmt_num(f)}): the difference is within the fold-to-fold "
            "noise, so any drop from the full data is mostly the smaller size."
        )
    maj = acc[(acc["model"] == head) & (acc["subset"] == "aflite")]["majority_rate"]
    if len(maj) and np.isfinite(a) and a < float(maj.iloc[0]) - 0.02:
        out.append(
            f"That is below the {float(maj.iloc[0]):.0%} that always answering the largest class of the AFLite "
            "subset would score: the kept rows are adversarial for this family (their features point to the "
            "wrong label), which happens when little signal is left beyond what was filtered out."
        )
    o = row.get("one-shot", np.nan)
    if np.isfinite(o) and np.isfinite(a):
        if o - a > 0.01:
            out.append(
                f"The one-shot filter (one model, one split, one pass) leaves {fmt_num(o)}: AFLite's iterated "
                "filter removed more of what the models exploit."
            )
        elif a - o > 0.01:
            out.append(
                f"The one-shot filter (one model, one split, one pass) leaves an even lower {fmt_num(o)} for "
                "this family: here a single pass already removed the easiest rows."
            )
        else:
            out.append(f"The one-shot filter (one model, one split, one pass) leaves about the same ({fmt_num(o)}).")
    if len(models) > 1:
        verdicts = [verdict(m) for m in models]
        n_harder = verdicts.count("harder")
        out.append(
            f"Across the {len(models)} model families, the AFLite subset is clearly harder than the random "
            f"subset for {n_harder} of {len(models)}"
            + (
                f" ({', '.join(_label(m, model_labels) for m, x in zip(models, verdicts) if x == 'harder')})."
                if 0 < n_harder < len(models)
                else "."
            )
        )
    if bias is not None and len(bias):
        b = bias.set_index("subset")["mean_predictability"]
        parts = [f"{SUBSET_LABELS[s]} {fmt_num(b[s])}" for s in SUBSET_LABELS if s in b]
        out.append("Representation bias (mean out-of-sample predictability p̄): " + ", ".join(parts) + ".")
    part = accuracies[(accuracies["features"] == "partial input") & (accuracies["model"] == head)]
    if len(part):
        p = part.set_index("subset")
        maj = float(p["majority_rate"].get("full", np.nan))
        out.append(
            f"Partial input ({partial_label or 'second representation'}), {name} model: "
            f"{fmt_num(p['accuracy'].get('full', np.nan))} on the full data, "
            f"{fmt_num(p['accuracy'].get('aflite', np.nan))} on the AFLite subset (random subset: "
            f"{fmt_num(p['accuracy'].get('random', np.nan))}; largest class: {fmt_num(maj)})."
        )
    return out
