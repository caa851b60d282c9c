"""The synthetic and AFOptimum narratives over many seeds: counts and ranges instead of one seed's story.

One seed's run says what happened once ("τ's early stop ends every run", "A gets stuck above B"); a claim stands
only if it holds across seeds. These functions take the tables of several seeds (or generated instances) and say
on how many set × seed cells each statement holds, with the ranges:

* :func:`synthetic_summary` / :func:`synthetic_narrative`: tables of
  :func:`~aflite_core.experiments.figure2.synthetic_experiment`, one per seed (``seed`` column);
* :func:`optimum_summary` / :func:`optimum_narrative`: tables of
  :func:`~aflite_core.experiments.optimum.compare_with_optimum`, one per generated instance (``instance`` column).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["chance_band", "optimum_narrative", "optimum_summary", "synthetic_narrative", "synthetic_summary"]

#: the stop reason of a run that τ's early stop ended
TAU_STOP = "fewer_than_k_qualified"


def chance_band(n_rows: int | float) -> float:
    """Two binomial standard errors of a 0.5 accuracy on ``n_rows`` rows (the band "at chance" uses)."""
    return float(2 * np.sqrt(0.25 / max(float(n_rows), 1.0)))


def _where(acc: float, n: float) -> str:
    band = chance_band(n)
    if not np.isfinite(acc):
        return "unknown"
    return "below" if acc < 0.5 - band else "at" if acc <= 0.5 + band else "above"


def synthetic_summary(long: pd.DataFrame) -> pd.DataFrame:
    """Per dataset over the seeds: ranges of the "after" columns and counts of the narrative's events.

    Parameters
    ----------
    long : pandas.DataFrame
        ``SyntheticExperiment.table`` of every seed, with a ``seed`` column.

    Returns
    -------
    pandas.DataFrame
        ``dataset, seeds, rows_min, rows_max, linear_mean, linear_min, linear_max, rbf_mean, rbf_min, rbf_max,
        biased_share_min, biased_share_max, flipped_removed_min, flipped_removed_max, tau_stops, linear_below,
        linear_at, linear_above`` (the last three: seeds whose linear accuracy after filtering is below, within or
        above two binomial standard errors of 0.5 on the kept rows).
    """
    t = long.copy()
    t["_where"] = [_where(a, n) for a, n in zip(t["linear_after"], t["n_after"])]
    rows = []
    for name, g in t.groupby("dataset", sort=False):
        flipped = g["flipped_removed_share"].astype(float)
        rows.append(
            {
                "dataset": name,
                "seeds": int(g["seed"].nunique()),
                "rows_min": int(g["n_after"].min()),
                "rows_max": int(g["n_after"].max()),
                "linear_mean": float(g["linear_after"].mean()),
                "linear_min": float(g["linear_after"].min()),
                "linear_max": float(g["linear_after"].max()),
                "rbf_mean": float(g["rbf_after"].mean()),
                "rbf_min": float(g["rbf_after"].min()),
                "rbf_max": float(g["rbf_after"].max()),
                "biased_share_min": float(g["biased_share_after"].min()),
                "biased_share_max": float(g["biased_share_after"].max()),
                "flipped_removed_min": float(flipped.min()) if flipped.notna().any() else float("nan"),
                "flipped_removed_max": float(flipped.max()) if flipped.notna().any() else float("nan"),
                "tau_stops": int((g["stop_reason"] == TAU_STOP).sum()),
                "linear_below": int((g["_where"] == "below").sum()),
                "linear_at": int((g["_where"] == "at").sum()),
                "linear_above": int((g["_where"] == "above").sum()),
            }
        )
    return pd.DataFrame(rows)


def synthetic_narrative(long: pd.DataFrame) -> list[str]:
    """The synthetic experiment's sentences, each with the number of set × seed cells it holds on.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"dataset": ["a", "a"], "seed": [0, 1], "n_after": [400, 400],
    ...                   "linear_after": [0.40, 0.55], "rbf_after": [0.9, 0.8], "biased_share_after": [0.1, 0.2],
    ...                   "flipped_removed_share": [float("nan")] * 2,
    ...                   "stop_reason": ["fewer_than_k_qualified", "target_size_reached"]})
    >>> synthetic_narrative(t)[0]
    "τ's early stop ends the run on 1 of 2 set × seed cells (the others stop at the target size)."
    """
    s = synthetic_summary(long)
    if not len(s):
        return []
    cells = int(s["seeds"].sum())
    n_seeds = int(long["seed"].nunique())
    out = [
        f"τ's early stop ends the run on {int(s['tau_stops'].sum())} of {cells} set × seed cells (the others stop "
        "at the target size)."
    ]
    per = "; ".join(f"{r['dataset']} {r['linear_below']}" for _, r in s.iterrows())
    out.append(
        f"After filtering the linear model is below chance (beyond two binomial standard errors of 0.5) on "
        f"{int(s['linear_below'].sum())} of {cells} cells (per set, of {n_seeds} seeds: {per}), at chance on "
        f"{int(s['linear_at'].sum())} and above on {int(s['linear_above'].sum())}; its accuracy ranges "
        f"{s['linear_min'].min():.3f}-{s['linear_max'].max():.3f}."
    )
    below_any = [
        str(seed)
        for seed, g in long.groupby("seed")
        if any(_where(a, n) == "below" for a, n in zip(g["linear_after"], g["n_after"]))
    ]
    out.append(
        f"Seeds with at least one set below chance: {len(below_any)} of {n_seeds}"
        + (f" ({', '.join(below_any)})." if below_any else ".")
    )
    out.append(
        f"The RBF SVM after filtering: {s['rbf_min'].min():.3f}-{s['rbf_max'].max():.3f} over all cells "
        f"(per-set means {', '.join(f'{m:.3f}' for m in s['rbf_mean'])}); the biased rows' share of the kept rows "
        f"{s['biased_share_min'].min():.0%}-{s['biased_share_max'].max():.0%}."
    )
    flipped = s.dropna(subset=["flipped_removed_min"])
    if len(flipped):
        out.append(
            f"Flipped rows removed: {flipped['flipped_removed_min'].min():.0%}-"
            f"{flipped['flipped_removed_max'].max():.0%} over the seeds."
        )
    return out


def optimum_summary(long: pd.DataFrame) -> pd.DataFrame:
    """Per case and strategy over the generated instances: the gap to AFOptimum and how often it is reached.

    Parameters
    ----------
    long : pandas.DataFrame
        ``OptimumComparison.table`` of every instance, with an ``instance`` column.

    Returns
    -------
    pandas.DataFrame
        ``case, strategy, instances, gap_mean, gap_min, gap_max, optimum_reached`` (instances whose bias equals
        the optimum; strategy C: its mean over seeds), ``bias_mean``.
    """
    rows = []
    for (case, strategy), g in long.groupby(["case", "strategy"], sort=False):
        rows.append(
            {
                "case": case,
                "strategy": strategy,
                "instances": int(g["instance"].nunique()),
                "gap_mean": float(g["gap"].mean()),
                "gap_min": float(g["gap"].min()),
                "gap_max": float(g["gap"].max()),
                "optimum_reached": int((g["gap"].abs() < 1e-12).sum()),
                "bias_mean": float(g["bias_aflite"].mean()),
            }
        )
    return pd.DataFrame(rows)


def optimum_narrative(long: pd.DataFrame) -> list[str]:
    """AFOptimum's sentences over instances: how often A ends above, equal to or below B, and B's gap.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"case": ["c"] * 4, "strategy": ["greedy", "slice"] * 2, "instance": [0, 0, 1, 1],
    ...                   "gap": [0.5, 0.25, 0.0, 0.0], "bias_aflite": [0.875, 0.625, 0.375, 0.375]})
    >>> optimum_narrative(t)[0][:60]
    'c: one row at a time (A) ends above slicing (B) on 1 of 2 in'
    >>> optimum_narrative(t)[0][-58:]
    'B reaches the optimum on 1 of 2 (gap 0.000-0.250), A on 1.'
    """
    out = []
    for case, g in long.groupby("case", sort=False):
        w = g.pivot_table(index="instance", columns="strategy", values="bias_aflite")
        gaps = g.pivot_table(index="instance", columns="strategy", values="gap")
        if "greedy" not in w.columns or "slice" not in w.columns:
            continue
        a, b = w["greedy"], w["slice"]
        n = len(w)
        text = (
            f"{case}: one row at a time (A) ends above slicing (B) on {int((a > b + 1e-12).sum())} of {n} instances, "
            f"equal on {int(((a - b).abs() <= 1e-12).sum())}, below on {int((a < b - 1e-12).sum())}; B reaches the "
            f"optimum on {int((gaps['slice'].abs() < 1e-12).sum())} of {n} (gap {gaps['slice'].min():.3f}-"
            f"{gaps['slice'].max():.3f}), A on {int((gaps['greedy'].abs() < 1e-12).sum())}"
        )
        if "sample" in gaps.columns:
            text += f"; sampling (C, mean over its seeds) gap {gaps['sample'].min():.3f}-{gaps['sample'].max():.3f}"
        out.append(text + ".")
    return out
