"""The study in plain words: one paragraph per adversary, computed from its numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .._format import fmt_pct, no_negative_zero
from ..engine.result import EVAL_CATEGORIES
from .tables import NONE

__all__ = ["StudyNumbers", "study_overview", "study_reading"]


class StudyNumbers(Protocol):
    """What the reading reads off a study: the attributes of :class:`~aflite_core.evalsets.AdversaryStudy` it uses.

    Declared here so this module never imports the study module (which calls :func:`study_reading`): the two
    were an import cycle.
    """

    params: Mapping[str, Any]
    accuracy_matrix: pd.DataFrame
    category_summary: pd.DataFrame
    rank_correlation: pd.DataFrame
    same_representation: pd.DataFrame
    strength: pd.DataFrame
    agreement: Any

    @property
    def adversaries(self) -> Sequence[str]:
        """The adversaries, in the study's order."""
        ...

    @property
    def category_table(self) -> pd.DataFrame:
        """Per adversary: the mean share of the evaluation rows in each category."""
        ...


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _moved(change: int, before: int, after: int) -> str:
    where = f"from {_ordinal(before)} to {_ordinal(after)}"
    if change > 0:
        return f"falls {change} place{'s' if change != 1 else ''} ({where})"
    if change < 0:
        return f"rises {-change} place{'s' if change != -1 else ''} ({where})"
    return f"keeps its place ({_ordinal(after)})"


def _control_row(study: StudyNumbers, a: str, depth: str) -> pd.Series | None:
    """The controls' row of one adversary and depth, or None (no controls, no such row)."""
    controls = getattr(study, "controls", None)
    if controls is None or not len(controls):
        return None
    rows = controls[(controls["adversary"] == a) & (controls["depth"] == depth)]
    return rows.iloc[0] if len(rows) else None


def _model_sentences(study: StudyNumbers, a: str, corr: pd.DataFrame | None, subject: str) -> list[str]:
    """Accuracy, ranking and same-backbone sentences of one adversary (``subject`` names it: its name or "it")."""
    out: list[str] = []
    M = study.accuracy_matrix
    before, after = M[NONE], M[a]
    ok = before.notna() & after.notna()
    if not ok.any():
        return [f"Filtering with {subject} selects no evaluation row, so no model can be scored on it."]
    lower = int((after[ok] < before[ok]).sum())
    n = int(ok.sum())
    if lower == n:
        verb = "lowers every evaluated model"
    elif lower == 0:
        verb = "lowers no evaluated model"
    else:
        verb = f"lowers {lower} of {n} evaluated models"
    ctl = _control_row(study, a, "as run")
    null_note = ""
    if ctl is not None and np.isfinite(ctl["mean_drop_p_vs_random"]):
        null_note = (
            f" (random evaluation subsets of the same size lower it by {ctl['mean_drop_null_median']:.2f}, 5-95 %: "
            f"{ctl['mean_drop_null_low']:.2f} to {ctl['mean_drop_null_high']:.2f}; p against them "
            f"{ctl['mean_drop_p_vs_random']:.3f})"
        )
    out.append(
        f"Filtering with {subject} {verb}: mean accuracy {before[ok].mean():.2f} → {after[ok].mean():.2f}{null_note}."
    )
    eq = _control_row(study, a, "equal depth")
    if eq is not None and ctl is not None and eq["n_rows_mean"] < ctl["n_rows_mean"]:
        out.append(
            f"At equal depth (its {eq['n_rows_mean']:.0f} least predictable rows, the smallest adversary's count) "
            f"the mean drop is {eq['mean_drop']:.2f} instead of {ctl['mean_drop']:.2f}."
        )
    if corr is not None and a in corr.index and np.isfinite(corr.loc[a, "kendall"]):
        k = float(corr.loc[a, "kendall"])
        pairs = ""
        if "discordant_pairs" in corr.columns:
            d, total = int(corr.loc[a, "discordant_pairs"]), int(corr.loc[a, "n_pairs"])
            pairs = f"; {d} of the {total} pairs of models swap order"
            tied = int(corr.loc[a, "tied_pairs"]) if "tied_pairs" in corr.columns else 0
            if tied:  # a tie lowers the coefficient too: without it "0.84 … 0 pairs swap" reads as a contradiction
                pairs += f" and {tied} {'is' if tied == 1 else 'are'} tied (a tie lowers the coefficient too)"
        if k >= 1 - 1e-12:
            out.append(f"The ranking of the models is unchanged (Kendall's coefficient {k:.2f}).")
        else:
            sentence = f"The ranking changes: Kendall's coefficient {k:.2f} against the unfiltered ranking{pairs}"
            if ctl is not None and np.isfinite(ctl["kendall_p_vs_random"]):
                beyond = "more than" if ctl["kendall_p_vs_random"] < 0.05 else "no more than"
                sentence += (
                    f"; random evaluation subsets of the same size give {ctl['kendall_null_median']:.2f} (5-95 %: "
                    f"{ctl['kendall_null_low']:.2f}-{ctl['kendall_null_high']:.2f}), so the filter reshuffles the "
                    f"models {beyond} chance does (percentile {ctl['kendall_percentile']:.0f}, p "
                    f"{ctl['kendall_p_vs_random']:.3f})"
                )
            out.append(sentence + ".")
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
    backbone = set(same[(same["adversary"] == a) & (same["relation"] == "shared backbone")]["model"])
    for relation, who in (
        ("shared backbone", "the adversary's backbone, trained separately"),
        ("same representation", "trained on the adversary's very Φ: an upper bound, the penalty is partly built in"),
    ):
        for _, row in same[(same["adversary"] == a) & (same["relation"] == relation)].iterrows():
            change = row["rank_change"]
            if pd.isna(change) or (relation == "same representation" and row["model"] in backbone):
                continue
            move = _moved(int(change), int(row["rank_unfiltered"]), int(row["rank_filtered"]))
            drop, others = row["accuracy_drop"], row["others_mean_drop"]
            extra = ""
            if np.isfinite(drop) and np.isfinite(others):
                extra = f"; it loses {drop:.2f} accuracy, the other models {others:.2f} on average"
            out.append(f"{row['model']} ({who}) {move}{extra}.")
    return [no_negative_zero(x) for x in out]


def study_overview(study: StudyNumbers) -> list[str]:
    """The sentences about all adversaries together: accuracy range and whether strength orders round 1."""
    out: list[str] = []
    M = study.accuracy_matrix
    names = list(study.adversaries)
    if not M.empty and M.shape[0] > 0 and len(names) > 1:
        means = M.mean(axis=0)
        filt = means.drop(index=NONE).dropna()
        if len(filt):
            lo, hi = filt.idxmin(), filt.idxmax()
            out.append(
                f"Mean accuracy of the {M.shape[0]} evaluated models is {means[NONE]:.2f} on the full evaluation "
                f"set and ranges from {filt[hi]:.2f} ({hi}) to {filt[lo]:.2f} ({lo}) on the selected rows."
            )
    st = study.strength
    ok = st.dropna(subset=["accuracy", "round1_removed_share"]) if len(st) else st
    if len(ok) > 1:  # a stopped study may have run fewer than two adversaries
        by_strength = list(ok.sort_values("accuracy", kind="stable")["adversary"])
        by_removal = list(ok.sort_values("round1_removed_share", kind="stable")["adversary"])
        strongest = by_strength[-1]
        weakest = by_strength[0]
        same_order = by_strength == by_removal
        overlap = (ok["ci_low"].to_numpy()[:, None] <= ok["ci_high"].to_numpy()[None, :]) & (
            ok["ci_high"].to_numpy()[:, None] >= ok["ci_low"].to_numpy()[None, :]
        )
        n_overlap = int((np.triu(overlap, 1)).sum())
        n_pairs = len(ok) * (len(ok) - 1) // 2
        out.append(
            f"Strength measured independently of filtering (each backbone's accuracy on the full evaluation set) "
            f"ranges from {float(ok['accuracy'].min()):.3f} ({weakest}) to {float(ok['accuracy'].max()):.3f} "
            f"({strongest}); {n_overlap} of the {n_pairs} pairs of adversaries have overlapping 95 % intervals. "
            + (
                "Round-1 removals grow with it, as the paper reports."
                if same_order
                else f"Round-1 removals do not follow it: they order the adversaries {' < '.join(by_removal)}, "
                f"strength orders them {' < '.join(by_strength)}."
            )
        )
    return [no_negative_zero(x) for x in out]


def study_reading(study: StudyNumbers, adversary: str | None = None, *, named: bool = True) -> list[str]:
    """A few plain sentences computed only from the study's numbers.

    Parameters
    ----------
    study : AdversaryStudy
        The study (anything with the attributes of :class:`StudyNumbers`).
    adversary : str, optional
        Only this adversary (default: the overview sentences, then every adversary).
    named : bool, default=True
        Name the adversary in its sentences ("mlp removes …"); False writes them to follow a heading that names
        it ("Removes …", "Filtering with it …").

    Returns
    -------
    list of str
        One sentence per item, e.g. "Filtering with mlp lowers every evaluated model: mean accuracy
        0.95 → 0.61."
    """
    names = list(study.adversaries) if adversary is None else [adversary]
    if adversary is not None and adversary not in study.adversaries:
        raise ValueError(f"The study has no adversary {adversary!r}; it has {list(study.adversaries)}.")
    out: list[str] = study_overview(study) if adversary is None else []
    M = study.accuracy_matrix
    have_models = not M.empty and M.shape[0] > 0
    cats = study.category_table
    corr = study.rank_correlation.set_index("adversary") if not study.rank_correlation.empty else None
    seeds = study.params.get("seeds", [])
    strength = study.strength.set_index("adversary") if len(study.strength) else None
    for a in names:
        subject = a if named else "it"
        lead = f"{a} removes" if named else "Removes"
        if strength is not None and a in strength.index and np.isfinite(strength.loc[a, "accuracy"]):
            row = strength.loc[a]
            out.append(
                f"{'Strength' if not named else a + ' strength'} ({row['backbone']} trained on the training rows, "
                f"on the full evaluation set): {row['accuracy']:.3f} (95 % interval {row['ci_low']:.3f}-"
                f"{row['ci_high']:.3f}); round-1 mean predictability {row['round1_mean_p']:.3f}."
            )
        if a in cats.index:
            sel_n = study.category_summary.query("adversary == @a and category == 'selected'")["n_rows_mean"]
            n_sel = float(sel_n.iloc[0]) if len(sel_n) else float("nan")
            out.append(
                f"{lead} {fmt_pct(cats.loc[a, EVAL_CATEGORIES[0]])} of the evaluation rows in round 1, "
                f"{fmt_pct(cats.loc[a, EVAL_CATEGORIES[1]])} later and selects "
                f"{fmt_pct(cats.loc[a, EVAL_CATEGORIES[2]])} "
                f"({n_sel:.0f} rows; mean over {len(seeds)} seed{'s' if len(seeds) != 1 else ''})."
            )
        if have_models and a in M.columns:
            out.extend(_model_sentences(study, a, corr, subject))
        if study.agreement is not None:
            tab = study.agreement.table()
            if a in tab.index:
                r1, sel = tab.loc[a].get(EVAL_CATEGORIES[0]), tab.loc[a].get(EVAL_CATEGORIES[2])
                if r1 is not None and sel is not None and np.isfinite(r1) and np.isfinite(sel):
                    info = study.agreement.info
                    out.append(
                        f"Annotator agreement is {r1:.2f} among the rows {subject} removes in round 1 and {sel:.2f} "
                        f"among the rows it selects ({info['n_used']} evaluation rows with labels used)."
                    )
    return [no_negative_zero(x) for x in out]
