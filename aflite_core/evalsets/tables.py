"""The study's tables, built from the runs: history categories, accuracies, rankings, rank changes."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ..engine.result import EVAL_CATEGORIES
from ..measures.adversary_strength import pair_counts, wilson_interval

__all__ = ["NONE"]


#: the column / adversary name of the unfiltered evaluation set (the paper's "None")
NONE = "none"


def _ranks(acc: NDArray[np.float64]) -> NDArray[np.float64]:
    """Rank 1 = most accurate; ties share the best rank; NaN accuracies get NaN."""
    from scipy.stats import rankdata

    out = np.full(len(acc), np.nan)
    ok = np.isfinite(acc)
    if ok.any():
        out[ok] = rankdata(-acc[ok], method="min")
    return out


def _kendall(a: NDArray[np.float64], b: NDArray[np.float64]) -> tuple[float, float]:
    """Kendall's coefficient (scipy's variant b, which handles ties) and its p-value; NaN when undefined."""
    from scipy.stats import kendalltau

    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = kendalltau(a[ok], b[ok])
    return float(res.statistic), float(res.pvalue)


def _category_of(removed_round: NDArray[np.int32]) -> NDArray:
    cat = np.full(len(removed_round), EVAL_CATEGORIES[2], dtype=object)
    cat[removed_round == 1] = EVAL_CATEGORIES[0]
    cat[removed_round > 1] = EVAL_CATEGORIES[1]
    return cat


def _finished_runs(detail, names, seeds):
    """(adversary, seed, result) of every run that finished, adversaries in order, then seeds."""
    for a in names:
        for s in seeds:
            res = detail.get((a, s))
            if res is not None:
                yield a, s, res


def _categories_frame(detail, names, seeds, eval_ids, eval_labels) -> pd.DataFrame:
    parts = []
    for a, s, res in _finished_runs(detail, names, seeds):
        rr = res.eval_removed_round
        parts.append(
            pd.DataFrame(
                {
                    "adversary": a,
                    "seed": s,
                    "row": np.arange(len(rr)),
                    "id": eval_ids,
                    "label": eval_labels,
                    "category": _category_of(rr),
                    "removed_round": rr,
                    "first_score": res.eval_first_score,
                }
            )
        )
    cols = ["adversary", "seed", "row", "id", "label", "category", "removed_round", "first_score"]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def _category_summary(categories: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    cols = ["adversary", "category", "share_mean", "share_std", "n_rows_mean", "n_seeds"]
    if categories.empty:
        return pd.DataFrame(columns=cols)
    counts = categories.groupby(["adversary", "seed", "category"]).size().rename("n_rows").reset_index()
    runs = categories[["adversary", "seed"]].drop_duplicates()
    full = runs.merge(pd.DataFrame({"category": list(EVAL_CATEGORIES)}), how="cross")
    counts = full.merge(counts, on=["adversary", "seed", "category"], how="left").fillna({"n_rows": 0})
    sizes = categories.groupby(["adversary", "seed"]).size().rename("n_eval").reset_index()
    counts = counts.merge(sizes, on=["adversary", "seed"])
    counts["share"] = counts["n_rows"] / counts["n_eval"]
    out = (
        counts.groupby(["adversary", "category"])
        .agg(
            share_mean=("share", "mean"),
            share_std=("share", "std"),
            n_rows_mean=("n_rows", "mean"),
            n_seeds=("seed", "nunique"),
        )
        .reset_index()
    )
    out["_a"] = out["adversary"].map({a: i for i, a in enumerate(names)})
    out["_c"] = out["category"].map({c: i for i, c in enumerate(EVAL_CATEGORIES)})
    return out.sort_values(["_a", "_c"]).drop(columns=["_a", "_c"]).reset_index(drop=True)[cols]


def _runs_frame(detail, names, seeds) -> pd.DataFrame:
    rows = []
    for a, s, res in _finished_runs(detail, names, seeds):
        rr = res.eval_removed_round
        rows.append(
            {
                "adversary": a,
                "seed": s,
                "rounds": res.n_rounds,
                "stop_reason": res.stop_reason,
                "train_rows": res.n_rows,
                "train_kept": res.n_kept,
                "n_eval": len(rr),
                "removed_in_round_1": int((rr == 1).sum()),
                "removed_later": int((rr > 1).sum()),
                "selected": int((rr < 0).sum()),
                "round1_mean_p": float(res.history["mean_predictability"].iloc[0]) if len(res.history) else np.nan,
                "eval_round1_mean_p": float(np.nanmean(res.eval_first_score)) if len(rr) else np.nan,
                "eval_null_round_1": _or_nan(res.null_at(round=1, evaluation=True)),
                "seconds": round(float(res.history["seconds"].sum()), 4) if len(res.history) else 0.0,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "adversary",
            "seed",
            "rounds",
            "stop_reason",
            "train_rows",
            "train_kept",
            "n_eval",
            "removed_in_round_1",
            "removed_later",
            "selected",
            "round1_mean_p",
            "eval_round1_mean_p",
            "eval_null_round_1",
            "seconds",
        ],
    )


def _or_nan(value: float | None) -> float:
    return np.nan if value is None else float(value)


def _accuracies_frame(detail, names, seeds, models, correct) -> pd.DataFrame:
    rows = []
    fams = [fam if isinstance(fam, str) else type(fam).__name__ for fam, _, _ in models]

    def add(adversary: str, seed: int | None, mask: NDArray[np.bool_]) -> None:
        n = int(mask.sum())
        hits = correct[mask].sum(axis=0) if n else np.zeros(len(models))
        acc = hits / n if n else np.full(len(models), np.nan)
        for j, (_, rep, name) in enumerate(models):
            rows.append(
                {
                    "adversary": adversary,
                    "seed": seed,
                    "model": name,
                    "family": fams[j],
                    "representation": rep,
                    "accuracy": float(acc[j]),
                    "n_correct": int(hits[j]),
                    "n_rows": n,
                }
            )

    add(NONE, None, np.ones(len(correct), dtype=bool))
    for a, s, res in _finished_runs(detail, names, seeds):
        add(a, s, res.eval_kept)
    cols = ["adversary", "seed", "model", "family", "representation", "accuracy", "n_correct", "n_rows"]
    frame = pd.DataFrame(rows, columns=cols)
    frame["seed"] = frame["seed"].astype("Int64")
    return frame


def _accuracy_matrix(accuracies: pd.DataFrame, names, model_names) -> pd.DataFrame:
    cols = [NONE, *names]
    if accuracies.empty:
        return pd.DataFrame(index=pd.Index(model_names, name="model"), columns=cols, dtype=float)
    mean = accuracies.groupby(["model", "adversary"])["accuracy"].mean().unstack("adversary")
    mean = mean.reindex(index=model_names, columns=cols)
    mean.index.name = "model"
    mean.columns.name = "adversary"
    return mean


def _accuracy_summary(accuracies: pd.DataFrame, names, model_names) -> pd.DataFrame:
    """Per model and evaluation set: mean accuracy over seeds, its spread, rows, and a binomial 95 % interval.

    The interval is Wilson's for the mean accuracy on the mean number of selected rows: the uncertainty of one
    seed's estimate from that many rows (the rows of different seeds overlap, so pooling them would overstate
    the information). ``seed_std`` is the spread over seeds (NaN with one seed).
    """
    cols = ["adversary", "model", "accuracy", "seed_std", "n_rows", "ci_low", "ci_high", "n_seeds"]
    if accuracies.empty:
        return pd.DataFrame(columns=cols)
    g = accuracies.groupby(["adversary", "model"], sort=False)
    out = g.agg(
        accuracy=("accuracy", "mean"),
        seed_std=("accuracy", "std"),
        n_rows=("n_rows", "mean"),
        n_seeds=("accuracy", "size"),
    ).reset_index()
    lo, hi = wilson_interval(out["accuracy"] * out["n_rows"], out["n_rows"])
    out["ci_low"], out["ci_high"] = lo, hi
    order_a = {a: i for i, a in enumerate([NONE, *names])}
    order_m = {m: i for i, m in enumerate(model_names)}
    out = out.sort_values(["adversary", "model"], key=lambda c: c.map(order_a if c.name == "adversary" else order_m))
    return out.reset_index(drop=True)[cols]


def _rankings(matrix: pd.DataFrame, accuracies: pd.DataFrame, names, model_names) -> tuple[pd.DataFrame, pd.DataFrame]:
    rank_cols = ["adversary", "model", "accuracy", "rank", "rank_unfiltered", "rank_change"]
    corr_cols = [
        "adversary",
        "kendall",
        "kendall_p_vs_zero",
        "kendall_seed_mean",
        "kendall_seed_min",
        "kendall_seed_max",
        "discordant_pairs",
        "concordant_pairs",
        "tied_pairs",
        "n_pairs",
        "n_models",
    ]
    if not model_names:
        return pd.DataFrame(columns=rank_cols), pd.DataFrame(columns=corr_cols)
    base = matrix[NONE].to_numpy(np.float64)
    base_rank = _ranks(base)
    rows, corr = [], []
    for a in [NONE, *names]:
        acc = matrix[a].to_numpy(np.float64)
        rk = _ranks(acc)
        for j, name in enumerate(model_names):
            rows.append(
                {
                    "adversary": a,
                    "model": name,
                    "accuracy": acc[j],
                    "rank": rk[j],
                    "rank_unfiltered": base_rank[j],
                    "rank_change": rk[j] - base_rank[j],
                }
            )
        if a == NONE:
            continue
        k, p = _kendall(base, acc)
        per_seed = []
        sub = accuracies[accuracies["adversary"] == a]
        for _, grp in sub.groupby("seed"):
            seed_acc = grp.set_index("model")["accuracy"].reindex(model_names).to_numpy(np.float64)
            per_seed.append(_kendall(base, seed_acc)[0])
        ps = np.array(per_seed, dtype=float)
        finite = ps[np.isfinite(ps)]
        pairs = pair_counts(base, acc)
        corr.append(
            {
                "adversary": a,
                "kendall": k,
                "kendall_p_vs_zero": p,
                "discordant_pairs": pairs["discordant"],
                "concordant_pairs": pairs["concordant"],
                "tied_pairs": pairs["tied"],
                "n_pairs": pairs["n_pairs"],
                "kendall_seed_mean": float(finite.mean()) if finite.size else float("nan"),
                "kendall_seed_min": float(finite.min()) if finite.size else float("nan"),
                "kendall_seed_max": float(finite.max()) if finite.size else float("nan"),
                "n_models": int(np.isfinite(acc).sum()),
            }
        )
    rankings = pd.DataFrame(rows, columns=rank_cols)
    for col in ("rank", "rank_unfiltered", "rank_change"):
        rankings[col] = rankings[col].astype("Int64") if rankings[col].notna().all() else rankings[col]
    return rankings, pd.DataFrame(corr, columns=corr_cols)


#: relations of an evaluated model to an adversary in ``same_representation``
RELATIONS = {
    "shared backbone": "the adversary's architecture, trained separately on the training rows (the paper's Figure 4)",
    "same representation": "trained on the adversary's own Φ: an upper bound, the penalty is partly built in",
    "ensemble member": "trained on the Φ of one member of the ensemble adversary",
}


def _same_representation(matrix, rankings, models, adv, members, ens_name, backbones=None) -> pd.DataFrame:
    cols = [
        "adversary",
        "model",
        "representation",
        "relation",
        "accuracy_unfiltered",
        "accuracy_filtered",
        "rank_unfiltered",
        "rank_filtered",
        "rank_change",
        "accuracy_drop",
        "others_mean_drop",
        "n_models",
    ]
    rows = []
    if not models:
        return pd.DataFrame(columns=cols)
    pairs = [(a, (a,), "same representation") for a in adv]
    if ens_name:
        pairs.append((ens_name, members, "ensemble member"))
    backbones = dict(backbones or {})
    pairs = [(a, None, "shared backbone") for a in adv if a in backbones] + pairs
    ranked = rankings.set_index(["adversary", "model"])
    owner = {m: b for b, m in backbones.items()}  # evaluated model -> the adversary it is the backbone of
    for a, reps, relation in pairs:
        drops = matrix[NONE] - matrix[a]
        for _, rep, name in models:
            if relation == "shared backbone":
                if name != backbones[a]:
                    continue
            elif rep not in reps or owner.get(name, a) != a:  # another adversary's backbone is not "same Φ"
                continue
            elif relation == "same representation" and backbones.get(a) == name:
                continue  # the adversary's backbone is this very model (e.g. logistic regression on the pixels)
            others = drops.drop(index=name)
            r = ranked.loc[(a, name)]
            rows.append(
                {
                    "adversary": a,
                    "model": name,
                    "representation": rep,
                    "relation": relation,
                    "accuracy_unfiltered": float(matrix.loc[name, NONE]),
                    "accuracy_filtered": float(matrix.loc[name, a]),
                    "rank_unfiltered": r["rank_unfiltered"],
                    "rank_filtered": r["rank"],
                    "rank_change": r["rank_change"],
                    "accuracy_drop": float(drops[name]),
                    "others_mean_drop": float(others.mean()) if len(others) else float("nan"),
                    "n_models": len(models),
                }
            )
    frame = pd.DataFrame(rows, columns=cols)
    for col in ("rank_unfiltered", "rank_filtered", "rank_change"):
        if len(frame) and frame[col].notna().all():
            frame[col] = frame[col].astype("Int64")
    return frame


def _strength_frame(correct_frame, runs, names, backbones) -> pd.DataFrame:
    """Each adversary's independent strength (its backbone on the full evaluation set) next to its round 1."""
    cols = [
        "adversary",
        "backbone",
        "accuracy",
        "ci_low",
        "ci_high",
        "n_eval",
        "round1_mean_p",
        "eval_round1_mean_p",
        "round1_removed_share",
    ]
    rows = []
    n_eval = len(correct_frame)
    for a in names:
        name = backbones.get(a)
        acc = lo = hi = float("nan")
        if name is not None and name in correct_frame.columns:
            hits = int(correct_frame[name].sum())
            acc = hits / max(n_eval, 1)
            lo, hi = (float(x) for x in wilson_interval(hits, n_eval))
        mine = runs[runs["adversary"] == a]
        r1 = float((mine["removed_in_round_1"] / mine["n_eval"]).mean()) if len(mine) else float("nan")
        rows.append(
            {
                "adversary": a,
                "backbone": name,
                "accuracy": acc,
                "ci_low": lo,
                "ci_high": hi,
                "n_eval": n_eval,
                "round1_mean_p": float(mine["round1_mean_p"].mean()) if len(mine) else float("nan"),
                "eval_round1_mean_p": float(mine["eval_round1_mean_p"].mean()) if len(mine) else float("nan"),
                "round1_removed_share": r1,
            }
        )
    return pd.DataFrame(rows, columns=cols)
