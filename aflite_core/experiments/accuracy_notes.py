"""What the synthetic experiment's accuracies mean, in words (:func:`accuracy_notes`, for the page and the CLI).

Kept apart from :mod:`aflite_core.experiments.figure2`, which measures them (and re-exports this function).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["accuracy_notes"]

_MODEL_WORDS = {"linear": "the linear model", "rbf": "the RBF SVM"}


def accuracy_notes(row: Mapping[str, Any] | pd.Series, curve: pd.DataFrame | None = None) -> list[str]:
    """Plain sentences on one dataset's accuracies after filtering, computed from its numbers.

    Says when an accuracy is below chance (beyond two binomial standard errors of 0.5 on the kept rows) and why,
    when it is at chance, when it rose after filtering and why (fewer rows, flipped rows removed), and, with the
    per-round ``curve`` of :func:`accuracy_over_rounds`, when the linear accuracy went down and up again.

    Parameters
    ----------
    row : mapping
        A row of ``SyntheticExperiment.table``.
    curve : pandas.DataFrame, optional
        :func:`accuracy_over_rounds` of the same run.

    Returns
    -------
    list of str

    Examples
    --------
    >>> accuracy_notes({"dataset": "d", "n_after": 500, "linear_before": 0.87, "linear_after": 0.41,
    ...                 "rbf_before": 0.9, "rbf_after": 0.7, "biased_after": 60, "flipped_before": 0,
    ...                 "flipped_removed_share": float("nan")})[0][:52]
    'd: the linear model scores 0.410, below chance (0.5 '
    """
    out: list[str] = []
    name = row["dataset"]
    n = int(row["n_after"])
    se = float(np.sqrt(0.25 / max(n, 1)))
    lin = float(row["linear_after"])
    if np.isfinite(lin):
        if lin < 0.5 - 2 * se:
            out.append(
                f"{name}: the linear model scores {lin:.3f}, below chance (0.5 ± {2 * se:.3f} on {n:,} rows). AFLite "
                "kept the rows that linear models trained on the other rows got wrong, so a linear model trained on "
                "part of the kept set is wrong more often than a coin flip on the rest: filtering went past the "
                "shortcut and made the set adversarial to linear models, not merely free of the shortcut."
            )
        elif lin <= 0.5 + 2 * se:
            out.append(f"{name}: the linear model is at chance ({lin:.3f}; 0.5 ± {2 * se:.3f} on {n:,} rows).")
        else:
            share = int(row.get("biased_after", 0)) / max(n, 1)
            out.append(
                f"{name}: the linear model still scores {lin:.3f}, above chance (0.5 ± {2 * se:.3f} on {n:,} rows): "
                f"{share:.0%} of the kept rows still carry bias features it can read."
            )
    for model in ("linear", "rbf"):
        a, b = float(row[f"{model}_before"]), float(row[f"{model}_after"])
        if np.isfinite(a) and np.isfinite(b) and b > a:
            why = f"with only {n:,} rows left the estimate moves by about ±{se:.3f} anyway"
            flipped = int(row.get("flipped_before", 0) or 0)
            if model == "rbf" and flipped and np.isfinite(row.get("flipped_removed_share", float("nan"))):
                why = (
                    f"AFLite removed {float(row['flipped_removed_share']):.0%} of the {flipped:,} flipped rows, whose "
                    "labels contradict their ring and which the RBF SVM could never fit; " + why
                )
            out.append(f"{name}: {_MODEL_WORDS[model]} rose from {a:.3f} to {b:.3f}: {why}.")
    if curve is not None and len(curve) > 2:
        lin_curve = curve["linear"].to_numpy(dtype=float)
        low = int(np.nanargmin(lin_curve))
        last = len(lin_curve) - 1
        if low < last and lin_curve[last] - lin_curve[low] > 2 * float(curve["se"].iloc[last]):
            out.append(
                f"{name}: the linear accuracy fell to {lin_curve[low]:.3f} after round {int(curve['round'].iloc[low])} "
                f"({int(curve['rows'].iloc[low]):,} rows, {int(curve['biased_rows'].iloc[low]):,} with bias features) "
                f"and ended at {lin_curve[last]:.3f} after round {int(curve['round'].iloc[last])} "
                f"({int(curve['rows'].iloc[last]):,} rows): once the shortcut rows are gone, each slice removes the "
                "rows linear models get right and leaves gaps a linear model can read again, so its accuracy swings "
                "while the set shrinks."
            )
    return out
