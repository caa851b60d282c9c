"""Pure chart builders and tables that check the Training dynamics page's difficulty levels (no Streamlit).

They take :class:`aflite_core.dynamics.validation.LevelValidation` tables: :func:`level_accuracy_chart` (accuracy
per level of models trained on other rows) and :func:`fraction_chart` / :func:`fraction_table` (training on a
fraction chosen by level, by Data Maps, by an AUM band or at random), and the levels beside their controls (issue
27): :func:`level_controls_chart` and :func:`level_controls_gaps` (one-shot confidence in-sample and out-of-fold,
random levels of the same sizes; mean ± sd over the seeds); :func:`validation_sentence` says what they found.
Levels keep the colours of :mod:`aflite_app.charts.dynamics`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .dynamics import LEVELS
from .theme import NEUTRAL, style

__all__ = [
    "fraction_chart",
    "fraction_table",
    "level_accuracy_chart",
    "level_control_pairs",
    "level_controls_chart",
    "level_controls_gaps",
    "validation_sentence",
]


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
