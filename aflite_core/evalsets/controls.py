"""The evaluation-set study's controls: random evaluation subsets of the same size, and adversaries at equal depth.

Filtering leaves 20-50 evaluation rows; on so few rows the evaluated models' accuracies, their ranking and their
drops move a lot by chance alone. Two controls say how much of what the study reports is the filter:

* **random subsets** (the null): the same statistic on ``n_subsets`` uniformly drawn evaluation subsets of the
  same size as each run's selected rows (one subset per seed, averaged over seeds as the result is). Nothing is
  refitted: the evaluated models' per-row correctness is re-used. For Kendall's coefficient against the unfiltered
  ranking the null asks "does filtering reshuffle the models more than any subset of that size would?": its
  one-sided p-value is the share of subsets whose coefficient is at most the observed one (with the +1 of a Monte
  Carlo test). For an accuracy drop it is the share of subsets whose drop is at least the observed one.
* **equal depth**: adversaries leave different numbers of rows (a stronger one fewer), so "stronger adversaries
  lower every model more" is confounded with depth. Each adversary's evaluation rows are ranked from least to
  most predictable (selected rows first, by their last score; then the removed rows, latest round first, lowest
  score at removal first) and its ``N_min`` least predictable rows kept, ``N_min`` being the smallest adversary's
  selected count at that seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ..engine.result import AFLiteResult

__all__ = [
    "DEPTHS",
    "equal_depth_masks",
    "kendall_many",
    "least_predictable_order",
    "null_p_value",
    "percentile_of",
    "random_subset_accuracies",
    "study_controls",
]

#: how the rows an adversary leaves are counted: as the run left them, or cut to the smallest adversary's count
DEPTHS = ("as run", "equal depth")

#: random keys drawn at once when drawing subsets (about 16 MB)
_BLOCK_VALUES = 2_000_000

#: the central range reported for a null (5th and 95th percentiles)
NULL_RANGE = (5.0, 95.0)


def kendall_many(base: NDArray[np.float64], acc: NDArray[np.float64]) -> NDArray[np.float64]:
    """Kendall's coefficient (variant b, as scipy's ``kendalltau``) of ``base`` against every row of ``acc``.

    Parameters
    ----------
    base : ndarray of shape (n_models,)
        The reference scores (the unfiltered accuracies).
    acc : ndarray of shape (n_draws, n_models)
        Scores to compare; a row with a NaN or with no spread gives NaN.

    Returns
    -------
    ndarray of shape (n_draws,)
        In [-1, 1]; 1 means the same order.

    Examples
    --------
    >>> import numpy as np
    >>> kendall_many(np.array([1.0, 2.0, 3.0]), np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])).tolist()
    [1.0, -1.0]
    """
    base = np.asarray(base, dtype=np.float64)
    acc = np.atleast_2d(np.asarray(acc, dtype=np.float64))
    i, j = np.triu_indices(len(base), k=1)
    sa = np.sign(base[i] - base[j])
    sb = np.sign(acc[:, i] - acc[:, j])
    num = (sb * sa).sum(axis=1)
    den = np.sqrt(float(np.count_nonzero(sa)) * np.count_nonzero(sb, axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    out[~np.isfinite(acc).all(axis=1)] = np.nan
    return out


def random_subset_accuracies(
    correct: NDArray[np.bool_], sizes: Sequence[int], n_subsets: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Each model's accuracy on random evaluation subsets, averaged over seeds like the study's accuracies.

    Parameters
    ----------
    correct : ndarray of bool, shape (n_eval, n_models)
        Whether each evaluated model is right on each evaluation row.
    sizes : sequence of int
        One subset size per seed (a run's selected count); sizes of 0 are skipped, as a run that selects
        nothing gives no accuracy.
    n_subsets : int
        Draws of the null.
    rng : numpy Generator
        Where the subsets come from.

    Returns
    -------
    ndarray of shape (n_subsets, n_models)
        Mean over the seeds' subsets; NaN when every size is 0.
    """
    correct = np.asarray(correct, dtype=np.float64)
    n_eval, n_models = correct.shape
    total = np.zeros((n_subsets, n_models))
    used = 0
    for size in sizes:
        size = int(min(size, n_eval))
        if size <= 0:
            continue
        block = max(1, _BLOCK_VALUES // max(n_eval, 1))  # draws per block: memory stays bounded on large sets
        for lo in range(0, n_subsets, block):
            hi = min(n_subsets, lo + block)
            keys = rng.random((hi - lo, n_eval))
            idx = np.argpartition(keys, size - 1, axis=1)[:, :size]
            total[lo:hi] += correct[idx].mean(axis=1)
        used += 1
    if not used:
        return np.full((n_subsets, n_models), np.nan)
    return total / used


def percentile_of(null: NDArray[np.float64], observed: float) -> float:
    """Where ``observed`` falls in ``null``, in percent (ties count half); NaN if either is undefined."""
    null = np.asarray(null, dtype=np.float64)
    null = null[np.isfinite(null)]
    if not null.size or not np.isfinite(observed):
        return float("nan")
    return float(100.0 * ((null < observed).sum() + 0.5 * (null == observed).sum()) / null.size)


def null_p_value(null: NDArray[np.float64], observed: float, *, lower: bool) -> float:
    """One-sided Monte Carlo p-value: (1 + #null at least as extreme) / (1 + #null).

    ``lower=True``: extreme means ≤ observed (Kendall's coefficient: more reshuffling than chance); otherwise
    ≥ observed (an accuracy drop: larger than chance).
    """
    null = np.asarray(null, dtype=np.float64)
    null = null[np.isfinite(null)]
    if not null.size or not np.isfinite(observed):
        return float("nan")
    hits = (null <= observed).sum() if lower else (null >= observed).sum()
    return float((1 + hits) / (1 + null.size))


def least_predictable_order(res: AFLiteResult) -> NDArray[np.intp]:
    """A run's evaluation rows from least to most predictable.

    Selected rows first (lowest last score first), then removed rows by removal round, latest first, and within
    a round by the score at removal, lowest first.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> run = SimpleNamespace(eval_removed_round=np.array([1, -1, 2, 2]),
    ...                       eval_last_score=np.array([0.9, 0.4, 0.8, 0.7]),
    ...                       eval_removal_score=np.array([0.9, np.nan, 0.8, 0.76]))
    >>> least_predictable_order(run).tolist()
    [1, 3, 2, 0]
    """
    rr = np.asarray(res.eval_removed_round)
    selected = rr < 0
    depth = np.where(selected, np.iinfo(np.int32).max, rr).astype(np.int64)
    last = np.asarray(res.eval_last_score, dtype=np.float64)
    removal = res.eval_removal_score
    score = last if removal is None else np.where(selected, last, np.asarray(removal, dtype=np.float64))
    score = np.nan_to_num(score, nan=1.0)
    return np.lexsort((score, -depth))


def equal_depth_masks(
    detail: Mapping[tuple[str, int], AFLiteResult], names: Sequence[str], seeds: Sequence[int]
) -> tuple[dict[tuple[str, int], NDArray[np.bool_]], dict[int, int]]:
    """Per run, its ``N_min`` least predictable evaluation rows; ``N_min`` per seed over the adversaries run."""
    n_min: dict[int, int] = {}
    for s in seeds:
        counts = [int(detail[(a, s)].eval_kept.sum()) for a in names if (a, s) in detail]
        if counts:
            n_min[s] = min(counts)
    masks = {}
    for (a, s), res in detail.items():
        if a not in names or s not in n_min:
            continue
        mask = np.zeros(len(res.eval_removed_round), dtype=bool)
        mask[least_predictable_order(res)[: n_min[s]]] = True
        masks[(a, s)] = mask
    return masks, n_min


def _summaries(null: NDArray[np.float64]) -> tuple[float, float, float]:
    finite = null[np.isfinite(null)]
    if not finite.size:
        return float("nan"), float("nan"), float("nan")
    lo, hi = np.percentile(finite, NULL_RANGE)
    return float(np.median(finite)), float(lo), float(hi)


def study_controls(
    detail: Mapping[tuple[str, int], AFLiteResult],
    names: Sequence[str],
    seeds: Sequence[int],
    correct: NDArray[np.bool_],
    model_names: Sequence[str],
    *,
    n_subsets: int = 1000,
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The controls of every adversary, as run and at equal depth: the summary table and the per-model drops.

    Parameters
    ----------
    detail : mapping of (adversary, seed) to AFLiteResult
        The finished runs (with evaluation rows).
    names : sequence of str
        Adversaries in display order.
    seeds : sequence of int
        The study's seeds.
    correct : ndarray of bool, shape (n_eval, n_models)
        The evaluated models' per-row correctness (no refit).
    model_names : sequence of str
        The evaluated models, in ``correct``'s column order.
    n_subsets : int, default=1000
        Random subsets per adversary and depth (0: no null; its columns are NaN).
    rng : numpy Generator
        The null's random stream.

    Returns
    -------
    controls : DataFrame
        Per adversary and ``depth`` (``"as run"``, ``"equal depth"``): ``n_rows_mean``, ``mean_drop`` (mean over
        the models of unfiltered − filtered accuracy) and ``kendall``, each with its spread over the seeds
        (``*_seed_sd``, one seed's value each) and beside its null's median, 5-95 % range, the observed value's
        ``percentile`` in it and ``p_vs_random``; ``n_subsets``.
    drops : DataFrame
        Per adversary, depth and model: ``accuracy_drop`` beside the null's median, 5-95 % range, percentile and
        ``p_vs_random``.
    """
    correct = np.asarray(correct, dtype=bool)
    base = correct.mean(axis=0) if len(correct) else np.full(len(model_names), np.nan)
    eq_masks, n_min = equal_depth_masks(detail, names, seeds)
    rows, drop_rows = [], []
    for a in names:
        for depth in DEPTHS:
            masks = []
            for s in seeds:
                res = detail.get((a, s))
                if res is None:
                    continue
                mask = res.eval_kept if depth == DEPTHS[0] else eq_masks.get((a, s))
                if mask is not None:
                    masks.append(np.asarray(mask, dtype=bool))
            if not masks:
                continue
            sizes = [int(m.sum()) for m in masks]
            accs = [correct[m].mean(axis=0) for m in masks if m.any()]
            acc = np.mean(accs, axis=0) if accs else np.full(len(model_names), np.nan)
            seed_drops = np.array([float(np.mean(base - a_s)) for a_s in accs])
            seed_k = kendall_many(base, np.array(accs)) if accs else np.array([])
            drop = base - acc
            if n_subsets > 0 and len(correct):
                null_acc = random_subset_accuracies(correct, sizes, n_subsets, rng)
            else:
                null_acc = np.full((0, len(model_names)), np.nan)
            null_drop = base[None, :] - null_acc
            kendall = float(kendall_many(base, acc[None, :])[0])
            null_k = kendall_many(base, null_acc) if len(null_acc) else np.array([])
            mean_drop = float(np.mean(drop))
            null_mean_drop = null_drop.mean(axis=1)
            k_med, k_lo, k_hi = _summaries(null_k)
            d_med, d_lo, d_hi = _summaries(null_mean_drop)
            rows.append(
                {
                    "adversary": a,
                    "depth": depth,
                    "n_rows_mean": float(np.mean(sizes)),
                    "mean_drop": mean_drop,
                    "mean_drop_seed_sd": float(np.std(seed_drops, ddof=1)) if len(seed_drops) > 1 else float("nan"),
                    "mean_drop_null_median": d_med,
                    "mean_drop_null_low": d_lo,
                    "mean_drop_null_high": d_hi,
                    "mean_drop_percentile": percentile_of(null_mean_drop, mean_drop),
                    "mean_drop_p_vs_random": null_p_value(null_mean_drop, mean_drop, lower=False),
                    "kendall": kendall,
                    "kendall_seed_sd": float(np.nanstd(seed_k, ddof=1))
                    if np.isfinite(seed_k).sum() > 1
                    else float("nan"),
                    "kendall_null_median": k_med,
                    "kendall_null_low": k_lo,
                    "kendall_null_high": k_hi,
                    "kendall_percentile": percentile_of(null_k, kendall),
                    "kendall_p_vs_random": null_p_value(null_k, kendall, lower=True),
                    "n_subsets": len(null_acc),
                }
            )
            for j, model in enumerate(model_names):
                med, lo, hi = _summaries(null_drop[:, j])
                drop_rows.append(
                    {
                        "adversary": a,
                        "depth": depth,
                        "model": model,
                        "n_rows_mean": float(np.mean(sizes)),
                        "accuracy_drop": float(drop[j]),
                        "null_median": med,
                        "null_low": lo,
                        "null_high": hi,
                        "percentile": percentile_of(null_drop[:, j], float(drop[j])),
                        "p_vs_random": null_p_value(null_drop[:, j], float(drop[j]), lower=False),
                    }
                )
    control_cols = [
        "adversary",
        "depth",
        "n_rows_mean",
        "mean_drop",
        "mean_drop_seed_sd",
        "mean_drop_null_median",
        "mean_drop_null_low",
        "mean_drop_null_high",
        "mean_drop_percentile",
        "mean_drop_p_vs_random",
        "kendall",
        "kendall_seed_sd",
        "kendall_null_median",
        "kendall_null_low",
        "kendall_null_high",
        "kendall_percentile",
        "kendall_p_vs_random",
        "n_subsets",
    ]
    drop_cols = [
        "adversary",
        "depth",
        "model",
        "n_rows_mean",
        "accuracy_drop",
        "null_median",
        "null_low",
        "null_high",
        "percentile",
        "p_vs_random",
    ]
    controls = pd.DataFrame(rows, columns=control_cols)
    controls.attrs["n_min"] = {int(s): int(n) for s, n in n_min.items()}
    return controls, pd.DataFrame(drop_rows, columns=drop_cols)
