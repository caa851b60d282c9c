"""What a run did to each class, and how stable its removals are across seeds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from ..engine.result import AFLiteResult, _names
from ._args import _encode_labels, _kept_mask, _rng, _seed

__all__ = ["StabilityReport", "class_impact", "removal_stability", "stability_from_results"]


# -- per-class impact ----------------------------------------------------------------------------------------
def class_impact(
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    threshold: float = 0.5,
    min_rows: int = 2,
    margin: float = 0.1,
) -> pd.DataFrame:
    """Class counts before and after filtering, the share each class lost, and warnings.

    A class is flagged when it loses more than ``threshold`` of its rows (default: more than half, i.e. "most
    of its rows") *and* at least ``margin`` more than the rows overall (so a run that halves the data does not
    flag every class that lost 51 %), or when fewer than ``min_rows`` of it remain (a class that small cannot
    be trained on and tested, and AFLite's weak models stop seeing it). The message also gives the overall
    share removed, so a class hit harder than the rest stands out.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    threshold : float, default=0.5
        Flag a class whose share lost is strictly above this, in [0, 1].
    min_rows : int, default=2
        Flag a class with fewer retained rows than this.
    margin : float, default=0.1
        How much more than the overall share a class must lose to be flagged, in [0, 1].

    Returns
    -------
    pandas.DataFrame
        One row per class: ``label, n_before, n_after, n_removed, share_lost, share_before, share_after``
        (the class's share of all rows before / after), ``relative_loss`` (share_lost divided by the overall
        share lost; > 1 means hit harder than average), ``warning`` (bool) and ``message`` ("" when no
        warning). ``frame.attrs["overall_share_lost"]`` holds the overall share.

    Examples
    --------
    >>> frame = class_impact(["a", "a", "a", "b", "b", "b"], [True, False, False, True, True, False])
    >>> frame[["label", "n_after", "warning"]].values.tolist()
    [['a', 1, True], ['b', 2, False]]
    """
    func = "class_impact"
    labels = _encode_labels(y, func)
    mask = _kept_mask(kept, len(labels.codes), func)
    thr = v.check_probability(threshold, "threshold", func)
    low = v.check_int(min_rows, "min_rows", func, low=0)
    extra = v.check_probability(margin, "margin", func)
    C = labels.n_classes
    before = np.bincount(labels.codes, minlength=C)
    after = np.bincount(labels.codes[mask], minlength=C)
    lost = 1.0 - after / np.maximum(before, 1)
    overall = 1.0 - mask.sum() / len(mask)
    rel = lost / overall if overall > 0 else np.full(C, np.nan)
    warn = ((lost > thr) & (lost >= overall + extra - 1e-12)) | (after < low)
    messages = []
    for c in range(C):
        if not warn[c]:
            messages.append("")
            continue
        text = (
            f"Class {labels.classes[c]!r} lost {lost[c]:.0%} of its rows ({before[c] - after[c]} of "
            f"{before[c]}; overall {overall:.0%})."
        )
        if after[c] < low:
            text += f" Only {after[c]} row(s) remain, too few to train or evaluate on."
        messages.append(text)
    frame = pd.DataFrame(
        {
            "label": _names(labels.classes, np.arange(C)),
            "n_before": before,
            "n_after": after,
            "n_removed": before - after,
            "share_lost": lost,
            "share_before": before / before.sum(),
            "share_after": after / max(int(after.sum()), 1),
            "relative_loss": rel,
            "warning": warn,
            "message": messages,
        }
    )
    frame.attrs["overall_share_lost"] = float(overall)
    return frame


# -- stability across seeds ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class StabilityReport:
    """How stable AFLite's removals are across seeds (see :func:`removal_stability`).

    Attributes
    ----------
    removed : ndarray of bool, shape (n_runs, n_samples)
        Removed rows of each run.
    seeds : tuple of int
        Seed of each run.
    labels : ndarray, shape (n_samples,)
        Class of every row.
    results : tuple of AFLiteResult
        The runs (empty when built from masks).
    """

    removed: NDArray[np.bool_]
    seeds: tuple
    labels: NDArray
    results: tuple = ()

    @property
    def n_runs(self) -> int:
        """Number of runs."""
        return int(self.removed.shape[0])

    @property
    def frequency(self) -> NDArray[np.float64]:
        """Removal frequency of every row, in [0, 1]: share of runs that removed it (1 = robust removal)."""
        return self.removed.mean(axis=0)

    @property
    def jaccard(self) -> pd.DataFrame:
        """Pairwise Jaccard similarity |A ∩ B| / |A ∪ B| of the runs' removed sets (1 on the diagonal)."""
        R = self.removed.astype(np.float64)
        inter = R @ R.T
        sizes = R.sum(axis=1)
        union = sizes[:, None] + sizes[None, :] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            J = np.where(union > 0, inter / union, 1.0)
        names = [f"seed {s}" for s in self.seeds]
        return pd.DataFrame(J, index=names, columns=names)

    @property
    def mean_jaccard(self) -> float:
        """Mean pairwise Jaccard over distinct pairs of runs (NaN with one run)."""
        if self.n_runs < 2:
            return float("nan")
        J = self.jaccard.to_numpy()
        return float(J[np.triu_indices(self.n_runs, 1)].mean())

    def to_frame(self) -> pd.DataFrame:
        """One row per example: ``label, removal_frequency, n_runs_removed, status``.

        ``status`` is "always removed" (every run), "sometimes removed" or "never removed".
        """
        count = self.removed.sum(axis=0)
        status = np.where(
            count == self.n_runs, "always removed", np.where(count == 0, "never removed", "sometimes removed")
        )
        frame = pd.DataFrame(
            {"label": self.labels, "removal_frequency": self.frequency, "n_runs_removed": count, "status": status}
        )
        frame.index.name = "row"
        return frame

    def summary(self) -> dict[str, float | int]:
        """Headline numbers of the report.

        Returns
        -------
        dict
            ``n_runs, mean_jaccard, min_jaccard``, rows ``always_removed, sometimes_removed, never_removed``
            and ``robust_share``: of the rows removed by at least one run, the share removed by every run.
        """
        count = self.removed.sum(axis=0)
        ever = int((count > 0).sum())
        always = int((count == self.n_runs).sum())
        J = self.jaccard.to_numpy()
        off = J[np.triu_indices(self.n_runs, 1)]
        return {
            "n_runs": self.n_runs,
            "mean_jaccard": self.mean_jaccard,
            "min_jaccard": float(off.min()) if len(off) else float("nan"),
            "always_removed": always,
            "sometimes_removed": ever - always,
            "never_removed": int((count == 0).sum()),
            "robust_share": always / ever if ever else float("nan"),
        }


def stability_from_results(results: Sequence[AFLiteResult]) -> StabilityReport:
    """Stability of removals across runs already made (same data, e.g. different seeds).

    Parameters
    ----------
    results : sequence of AFLiteResult
        At least one run, all on the same rows.

    Returns
    -------
    StabilityReport
    """
    func = "stability_from_results"
    runs = list(results) if not isinstance(results, AFLiteResult) else [results]
    if not runs or not all(isinstance(r, AFLiteResult) for r in runs):
        raise v.param_error("results", func, "a non-empty sequence of AFLiteResult", results, TypeError)
    n = runs[0].n_rows
    if any(r.n_rows != n or r.classes != runs[0].classes for r in runs):
        raise ValueError(
            f"The 'results' parameter of {func} must hold runs on the same rows and classes. "
            f"Got runs over {sorted({r.n_rows for r in runs})} rows instead."
        )
    removed = np.vstack([~r.kept for r in runs])
    return StabilityReport(
        removed=removed,
        seeds=tuple(int(r.params.get("seed", -1)) for r in runs),
        labels=runs[0].labels,
        results=tuple(runs),
    )


def removal_stability(
    X: ArrayLike,
    y: ArrayLike,
    *,
    n_runs: int = 5,
    random_state: int | np.random.Generator | None = None,
    callback: Any = None,
    **aflite_params: Any,
) -> StabilityReport:
    """Run AFLite with ``n_runs`` seeds and report how often each row is removed.

    The seeds are drawn from ``random_state``; every other parameter is passed to
    :func:`aflite_core.aflite` unchanged (``target_size``, ``train_size``, ``slice_size``, ``tau`` … are
    required as there). Rows removed by every run are robust removals; rows removed by only some runs
    depend on the random partitions.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The representation Φ(X).
    y : array-like of shape (n_samples,)
        Labels.
    n_runs : int, default=5
        Runs (seeds), at least 2.
    random_state : int, numpy Generator or None
        Source of the runs' seeds.
    callback : callable, optional
        Called as ``callback(run_index, n_runs)`` after each run (progress); returning ``False`` stops early
        and the report covers the finished runs.
    **aflite_params
        Passed to :func:`aflite_core.aflite` (``random_state`` is this function's own: the seeds' source).

    Returns
    -------
    StabilityReport
        Per-row removal frequency, pairwise Jaccard, the runs.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300); X = rng.normal(size=(300, 4)); X[:100, 0] += 6 * (2 * y[:100] - 1)
    >>> rep = removal_stability(X, y, n_runs=3, random_state=0, target_size=180, train_size=60, slice_size=40)
    >>> rep.removed.shape, bool(rep.mean_jaccard > 0.5)
    ((3, 300), True)
    """
    from ..engine.filtering import aflite

    func = "removal_stability"
    runs = v.check_int(n_runs, "n_runs", func, low=2)
    if callback is not None and not callable(callback):
        raise v.param_error("callback", func, "a callable or None", callback, TypeError)
    rng = _rng(random_state, func)
    seeds = [_seed(rng) for _ in range(runs)]
    results = []
    for i, seed in enumerate(seeds):
        results.append(aflite(X, y, random_state=seed, **aflite_params))
        if callback is not None and callback(i + 1, runs) is False:
            break
    return stability_from_results(results)
