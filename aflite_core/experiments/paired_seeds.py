"""The out-of-distribution experiments' controls: paired differences over seeds, and the shortcut AFLite leaves.

Every seed of :func:`~aflite_core.experiments.ood.ood_experiment` and :func:`~aflite_core.experiments.ood.ood_real`
trains the three training sets on the same split and tests them on the same rows, so the fair comparison is
*paired*: per seed, AFLite's accuracy minus the random subset's (and minus all rows'). :func:`paired_differences`
reports the mean and sd of those differences, how many seeds go each way, and two paired tests:
``scipy.stats.ttest_rel`` (the main p-value, two-sided) and the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``,
two-sided, which assumes no normality).

On the synthetic circles AFLite removes the biased rows, but what it keeps can carry a shortcut of its own: among
the kept *unbiased* rows the bias direction may correlate with the label (negatively: the few unbiased rows whose
noise happened to point the right way were the predictable ones, and left). A model trained on them then gains
when the bias is *flipped* for reasons AFLite created. :func:`bias_label_correlation` measures it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["COMPARISONS", "bias_label_correlation", "paired_differences", "paired_test"]

#: the paired comparisons: (name, training set, the one it is compared with)
COMPARISONS: tuple[tuple[str, str, str], ...] = (
    ("aflite − random", "aflite", "random"),
    ("aflite − original", "aflite", "original"),
)


def paired_test(a: ArrayLike, b: ArrayLike) -> dict[str, float | int]:
    """Paired comparison of two per-seed accuracies: differences a − b, their spread, direction counts and tests.

    Parameters
    ----------
    a, b : array-like of shape (n_seeds,)
        The same seeds' accuracies of the two training sets.

    Returns
    -------
    dict
        ``mean, sd`` (ddof 1) of a − b, ``n_seeds``, ``n_positive, n_negative, n_tied``, ``t_p`` (paired t-test,
        ``scipy.stats.ttest_rel``, two-sided; NaN with fewer than 2 seeds or no spread) and ``wilcoxon_p``
        (Wilcoxon signed-rank, two-sided; NaN when every difference is 0 or with fewer than 2 seeds).

    Examples
    --------
    >>> r = paired_test([0.70, 0.71, 0.72, 0.69], [0.68, 0.70, 0.70, 0.68])
    >>> r["n_positive"], r["n_negative"], round(r["mean"], 4), bool(r["t_p"] < 0.05)
    (4, 0, 0.015, True)
    """
    from scipy.stats import ttest_rel, wilcoxon

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = a - b
    n = len(d)
    out: dict[str, float | int] = {
        "mean": float(d.mean()) if n else float("nan"),
        "sd": float(d.std(ddof=1)) if n > 1 else float("nan"),
        "n_seeds": n,
        "n_positive": int((d > 0).sum()),
        "n_negative": int((d < 0).sum()),
        "n_tied": int((d == 0).sum()),
        "t_p": float("nan"),
        "wilcoxon_p": float("nan"),
    }
    if n > 1 and np.ptp(d) > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["t_p"] = float(ttest_rel(a, b).pvalue)
    elif n > 1 and d[0] != 0:  # every seed moves by the same nonzero amount: as significant as it gets
        out["t_p"] = 0.0
    if n > 1 and np.any(d != 0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["wilcoxon_p"] = float(wilcoxon(a, b).pvalue)
    return out


def paired_differences(runs: pd.DataFrame, comparisons: Sequence[tuple[str, str, str]] = COMPARISONS) -> pd.DataFrame:
    """Per dataset, model, test set and comparison: the paired differences over seeds and their tests.

    Parameters
    ----------
    runs : pandas.DataFrame
        ``OODResult.runs``: ``dataset, model, train_set, test_set, accuracy, seed``.
    comparisons : sequence of (name, train_set, other), default=:data:`COMPARISONS`

    Returns
    -------
    pandas.DataFrame
        ``dataset, model, test_set, comparison, mean, sd, n_seeds, n_positive, n_negative, n_tied, t_p,
        wilcoxon_p`` (see :func:`paired_test`).
    """
    cols = ["dataset", "model", "test_set", "comparison", "mean", "sd", "n_seeds"]
    cols += ["n_positive", "n_negative", "n_tied", "t_p", "wilcoxon_p"]
    if runs is None or not len(runs):
        return pd.DataFrame(columns=cols)
    wide = runs.pivot_table(
        index=["dataset", "model", "test_set", "seed"], columns="train_set", values="accuracy", sort=False
    )
    rows = []
    for (dataset, model, test_set), grp in wide.groupby(level=["dataset", "model", "test_set"], sort=False):
        for name, first, other in comparisons:
            if first not in grp.columns or other not in grp.columns:
                continue
            pair = grp[[first, other]].dropna()
            rows.append(
                {
                    "dataset": dataset,
                    "model": model,
                    "test_set": test_set,
                    "comparison": name,
                    **paired_test(pair[first], pair[other]),
                }
            )
    return pd.DataFrame(rows, columns=cols)


def bias_label_correlation(X: ArrayLike, y: ArrayLike, rows: ArrayLike) -> float:
    """Pearson correlation of the bias direction with the label among ``rows`` (NaN if undefined).

    The bias direction is the mean of the bias columns (``X[:, 2:]``, the direction the circles' planted shift
    takes); the label is coded ±1. Near 0 on unbiased rows drawn by the generator; negative means the rows'
    bias noise points to the *other* class - a shortcut a flipped bias then rewards.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((4, 4)); X[:, 2:] = [[1, 1], [1, 1], [-1, -1], [-1, -1]]
    >>> bias_label_correlation(X, np.array([0, 0, 1, 1]), np.ones(4, bool))
    -1.0
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    mask = np.asarray(rows, dtype=bool)
    if mask.sum() < 3 or X.shape[1] < 3:
        return float("nan")
    direction = X[mask, 2:].mean(axis=1)
    sign = np.where(y[mask] == y.max(), 1.0, -1.0)
    if np.ptp(direction) == 0 or np.ptp(sign) == 0:
        return float("nan")
    return float(np.corrcoef(direction, sign)[0, 1])
