"""The study in plain words: one paragraph per adversary, computed from its numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..result import EVAL_CATEGORIES
from .tables import NONE

if TYPE_CHECKING:  # the study calls study_reading; only the annotations need the class
    from .study import AdversaryStudy

__all__ = ["study_reading"]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _model_sentences(study: AdversaryStudy, a: str, corr: pd.DataFrame | None) -> list[str]:
    """Accuracy, ranking and same-representation sentences of one adversary."""
    out: list[str] = []
    M = study.accuracy_matrix
    before, after = M[NONE], M[a]
    ok = before.notna() & after.notna()
    if not ok.any():
        return [f"Filtering with {a} selects no evaluation row, so no model can be scored on it."]
    lower = int((after[ok] < before[ok]).sum())
    n = int(ok.sum())
    if lower == n:
        verb = "lowers every evaluated model"
    elif lower == 0:
        verb = "lowers no evaluated model"
    else:
        verb = f"lowers {lower} of {n} evaluated models"
    out.append(f"Filtering with {a} {verb}: mean accuracy {before[ok].mean():.2f} → {after[ok].mean():.2f}.")
    if corr is not None and a in corr.index and np.isfinite(corr.loc[a, "kendall"]):
        k = float(corr.loc[a, "kendall"])
        if k >= 1 - 1e-12:
            out.append(f"The ranking of the models is unchanged (Kendall's coefficient {k:.2f}).")
        else:
            out.append(f"The ranking changes: Kendall's coefficient {k:.2f} against the unfiltered ranking.")
    same = study.same_representation
    members = same[(same["adversary"] == a) & (same["relation"] == "ensemble member")]
    if len(members):
        ch = members["rank_change"].dropna().astype(int)
        parts = [
            f"{int((ch > 0).sum())} fall",
            f"{int((ch < 0).sum())} rise",
            f"{int((ch == 0).sum())} keep their place",
        ]
        out.append(
            f"Of the {len(members)} evaluated model(s) on an ensemble member's representation, {', '.join(parts)}; "
            f"they lose {members['accuracy_drop'].mean():.2f} accuracy on average."
        )
    for _, row in same[(same["adversary"] == a) & (same["relation"] == "same representation")].iterrows():
        change = row["rank_change"]
        if pd.isna(change):
            continue
        change = int(change)
        who = "The model sharing the adversary's representation"
        where = f"from {_ordinal(int(row['rank_unfiltered']))} to {_ordinal(int(row['rank_filtered']))}"
        if change > 0:
            move = f"falls {change} place{'s' if change != 1 else ''} ({where})"
        elif change < 0:
            move = f"rises {-change} place{'s' if change != -1 else ''} ({where})"
        else:
            move = f"keeps its place ({_ordinal(int(row['rank_filtered']))})"
        drop, others = row["accuracy_drop"], row["others_mean_drop"]
        extra = ""
        if np.isfinite(drop) and np.isfinite(others):
            extra = f"; it loses {drop:.2f} accuracy, the other models {others:.2f} on average"
        out.append(f"{who} ({row['model']}) {move}{extra}.")
    return out


def study_reading(study: AdversaryStudy, adversary: str | None = None) -> list[str]:
    """A few plain sentences computed only from the study's numbers.

    Parameters
    ----------
    study : AdversaryStudy
        The study.
    adversary : str, optional
        Only this adversary (default: an overview sentence, then every adversary).

    Returns
    -------
    list of str
        One sentence per item, e.g. "Filtering with mlp lowers every evaluated model: mean accuracy
        0.95 → 0.61."
    """
    names = list(study.adversaries) if adversary is None else [adversary]
    if adversary is not None and adversary not in study.adversaries:
        raise ValueError(f"The study has no adversary {adversary!r}; it has {list(study.adversaries)}.")
    out: list[str] = []
    M = study.accuracy_matrix
    have_models = not M.empty and M.shape[0] > 0
    cats = study.category_table
    corr = study.rank_correlation.set_index("adversary") if not study.rank_correlation.empty else None
    seeds = study.params.get("seeds", [])
    if adversary is None and have_models and len(names) > 1:
        means = M.mean(axis=0)
        filt = means.drop(index=NONE).dropna()
        if len(filt):
            lo, hi = filt.idxmin(), filt.idxmax()
            out.append(
                f"Mean accuracy of the {M.shape[0]} evaluated models is {means[NONE]:.2f} on the full evaluation "
                f"set and ranges from {filt[hi]:.2f} ({hi}) to {filt[lo]:.2f} ({lo}) on the selected rows."
            )
    for a in names:
        if a in cats.index:
            sel_n = study.category_summary.query("adversary == @a and category == 'selected'")["n_rows_mean"]
            n_sel = float(sel_n.iloc[0]) if len(sel_n) else float("nan")
            out.append(
                f"{a} removes {_pct(cats.loc[a, EVAL_CATEGORIES[0]])} of the evaluation rows in round 1, "
                f"{_pct(cats.loc[a, EVAL_CATEGORIES[1]])} later and selects {_pct(cats.loc[a, EVAL_CATEGORIES[2]])} "
                f"({n_sel:.0f} rows; mean over {len(seeds)} seed{'s' if len(seeds) != 1 else ''})."
            )
        if have_models and a in M.columns:
            out.extend(_model_sentences(study, a, corr))
        if study.agreement is not None:
            tab = study.agreement.table()
            if a in tab.index:
                r1, sel = tab.loc[a].get(EVAL_CATEGORIES[0]), tab.loc[a].get(EVAL_CATEGORIES[2])
                if r1 is not None and sel is not None and np.isfinite(r1) and np.isfinite(sel):
                    info = study.agreement.info
                    out.append(
                        f"Annotator agreement is {r1:.2f} among the rows {a} removes in round 1 and {sel:.2f} among "
                        f"the rows it selects ({info['n_used']} evaluation rows with labels used)."
                    )
    return out
