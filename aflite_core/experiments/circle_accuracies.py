"""The synthetic experiment's measurements on the concentric circles (ICML 2020 §3, Figure 2).

* :func:`subset_accuracies` - held-out accuracy of the experiment's models (linear, RBF SVM) on a subset of rows;
* :func:`before_accuracies` - each dataset's accuracies before filtering, with the paper's "no bias" reference (the
  ring coordinates alone);
* :func:`planted_summary` - how many planted (biased, flipped) rows a filter kept;
* :func:`accuracy_over_rounds` - the accuracies of the set left after every round of a run.

:mod:`aflite_core.experiments.figure2` runs the experiment with them (and re-exports them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validation as v
from ..data.planted_bias import BiasedCircles, paper_circles

__all__ = [
    "EXPERIMENT_MODELS",
    "RING_COLUMNS",
    "accuracy_over_rounds",
    "before_accuracies",
    "planted_summary",
    "subset_accuracies",
]


#: models of the synthetic experiment (ICML §3): a linear model (logistic regression) and an RBF-kernel SVM, by the
#: names the experiment's table uses -> their classifier family in :data:`aflite_core.engine.registry.CLASSIFIERS`
EXPERIMENT_MODELS: dict[str, str] = {"linear": "logistic", "rbf": "rbf"}


#: the ring coordinates: the paper's data "without biases" (its reference) is these two columns alone
RING_COLUMNS = (0, 1)


def subset_accuracies(
    X: ArrayLike,
    y: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    models: Mapping[str, str] = EXPERIMENT_MODELS,
    n_splits: int = 5,
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
) -> dict[str, float]:
    """Held-out accuracy of a linear model and an RBF-kernel SVM on a subset, mean over seeded CV splits.

    A thin wrapper of :func:`aflite_core.measures.baselines.model_accuracies` (seeded ``StratifiedKFold`` on the
    rows of the subset, features standardised on the training folds, so the RBF kernel's width does not
    depend on how spread out the bias columns are); call it once with ``mask=None`` for the "before"
    numbers (callers may cache them) and with the kept mask for the "after" numbers.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Labels.
    mask : boolean array of shape (n_samples,) or AFLiteResult, optional
        The subset; None means all rows.
    models : mapping of str to str, default=EXPERIMENT_MODELS
        Name in the result -> classifier family of :data:`aflite_core.engine.registry.CLASSIFIERS`.
    n_splits : int, default=5
        Folds.
    random_state : int, numpy Generator or None
        Seed of the folds.
    n_threads : int or None, default=1
        BLAS threads.

    Returns
    -------
    dict
        ``{model name: mean held-out accuracy}`` (NaN when the subset has fewer than two classes).

    Examples
    --------
    >>> from aflite_core.data.planted_bias import make_biased_circles
    >>> X, y, *_ = make_biased_circles(300, separation=1.0, random_state=0)
    >>> acc = subset_accuracies(X, y, random_state=0)
    >>> sorted(acc), bool(acc["rbf"] > 0.9)
    (['linear', 'rbf'], True)
    """
    from ..measures.baselines import model_accuracies

    frame = model_accuracies(
        X,
        y,
        mask=mask,
        models=dict(models),
        n_splits=n_splits,
        standardize=True,
        random_state=random_state,
        n_threads=n_threads,
    )
    return {str(m): float(a) for m, a in zip(frame["model"], frame["accuracy"])}


def planted_summary(data: BiasedCircles, kept: ArrayLike) -> dict[str, float | int]:
    """How many planted rows a filter kept: biased rows (number and share) and flipped rows removed.

    Parameters
    ----------
    data : BiasedCircles
        The dataset with its planted truth.
    kept : boolean array of shape (n_samples,) or AFLiteResult
        Retained rows.

    Returns
    -------
    dict
        ``n_before, n_after, biased_before, biased_after, biased_share_before, biased_share_after``,
        ``flipped_before``, ``flipped_removed`` and ``flipped_removed_share`` (NaN without flipped rows), and
        ``unbiased_removed_share``.

    Examples
    --------
    >>> from aflite_core.data.planted_bias import make_biased_circles
    >>> d = make_biased_circles(100, random_state=0)
    >>> planted_summary(d, ~d.is_biased)["biased_after"]
    0
    """
    from ..measures._args import _kept_mask

    func = "planted_summary"
    if not isinstance(data, BiasedCircles):
        raise v.param_error("data", func, "a BiasedCircles", data, TypeError)
    k = _kept_mask(kept, data.n_samples, func)
    b, f = data.is_biased, data.is_flipped
    n_after = int(k.sum())
    n_flip = int(f.sum())
    return {
        "n_before": data.n_samples,
        "n_after": n_after,
        "biased_before": int(b.sum()),
        "biased_after": int((b & k).sum()),
        "biased_share_before": float(b.mean()),
        "biased_share_after": float((b & k).sum() / n_after) if n_after else float("nan"),
        "flipped_before": n_flip,
        "flipped_removed": int((f & ~k).sum()),
        "flipped_removed_share": float((f & ~k).sum() / n_flip) if n_flip else float("nan"),
        "unbiased_removed_share": float((~b & ~k).sum() / max(int((~b).sum()), 1)),
    }


def before_accuracies(
    datasets: Sequence[BiasedCircles] | None = None,
    *,
    n_splits: int = 5,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
    callback: Callable[[int, int, str], Any] | None = None,
    reference: bool = True,
) -> dict[str, dict[str, float]]:
    """The "before" accuracies :func:`synthetic_experiment` computes, for callers to cache and pass back.

    Draws the same seeds as :func:`synthetic_experiment` with the same ``random_state``, so
    ``synthetic_experiment(ds, before=before_accuracies(ds, random_state=s), random_state=s)`` equals
    ``synthetic_experiment(ds, random_state=s)``.

    Parameters
    ----------
    datasets : sequence of BiasedCircles, optional
        Default: :func:`paper_circles`.
    n_splits : int, default=5
        Folds.
    random_state : int, numpy Generator or None, default=0
        The experiment's seed.
    n_threads : int or None, default=1
        BLAS threads.
    callback : callable, optional
        ``callback(step, n_steps, dataset name)`` after every dataset.
    reference : bool, default=True
        Also measure the reference without biases. False: ``linear_no_bias`` and ``rbf_no_bias`` are NaN (half
        the work, for a caller that does not show them; passed back as ``before``, they stay NaN). The other
        numbers are the same either way.

    Returns
    -------
    dict
        ``{dataset name: {"linear": accuracy, "rbf": accuracy, "linear_no_bias": …, "rbf_no_bias": …}}``: all
        rows with every column, and the paper's reference without biases (the two ring coordinates alone).
    """
    func = "before_accuracies"
    data = paper_circles() if datasets is None else list(datasets)
    if not data or not all(isinstance(d, BiasedCircles) for d in data):
        raise v.param_error("datasets", func, "None or a non-empty sequence of BiasedCircles", datasets, TypeError)
    folds = v.check_int(n_splits, "n_splits", func, low=2)
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    out = {}
    for step, d in enumerate(data, start=1):
        _, seed_before, _ = (int(s) for s in rng.integers(0, 2**31 - 1, size=3))
        skip = None if reference else {"linear_no_bias": float("nan"), "rbf_no_bias": float("nan")}
        out[d.name] = _before(d, folds, seed_before, n_threads, have=skip)
        if callback is not None:
            callback(step, len(data), d.name)
    return out


def _before(
    d: BiasedCircles, folds: int, seed: int, n_threads: int | None, have: Mapping[str, float] | None = None
) -> dict[str, float]:
    """All rows with every column, and with the ring coordinates only (the paper's "no bias" reference).

    Numbers already in ``have`` (a cache) are used as given; only the missing ones are measured.
    """
    out = dict(have or {})
    if not {"linear", "rbf"} <= set(out):
        out.update(subset_accuracies(d.X, d.y, None, n_splits=folds, random_state=seed, n_threads=n_threads))
    if not {"linear_no_bias", "rbf_no_bias"} <= set(out):
        rings = d.X[:, list(RING_COLUMNS)]
        ring = subset_accuracies(rings, d.y, None, n_splits=folds, random_state=seed, n_threads=n_threads)
        out.update({f"{m}_no_bias": a for m, a in ring.items()})
    return out


def accuracy_over_rounds(
    data: BiasedCircles,
    result: Any,
    *,
    n_splits: int = 5,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> pd.DataFrame:
    """Linear and RBF-SVM accuracy of the set left after every round of a run (round 0 = all rows).

    Each set is measured like :func:`subset_accuracies` (seeded folds on its own rows, the same fold seed for
    every round), so the curve shows how the two models fare as AFLite digs deeper: the linear model falls while
    the shortcut rows leave, and can swing once they are gone (each slice then leaves new holes a linear model
    can read, and the sets get small).

    Parameters
    ----------
    data : BiasedCircles
    result : AFLiteResult
        A run on ``data``.
    n_splits : int, default=5
    random_state : int, numpy Generator or None, default=0
        Seed of the folds.
    n_threads : int or None, default=1

    Returns
    -------
    pandas.DataFrame
        One row per round: ``round, rows, biased_rows, flipped_rows, linear, rbf, chance`` (the share of the
        largest class, what always guessing it scores), ``se`` (the binomial standard error of an accuracy near
        chance on that many rows, sqrt(0.25 / rows)).

    Examples
    --------
    >>> from aflite_core import aflite
    >>> from aflite_core.data.planted_bias import make_biased_circles
    >>> d = make_biased_circles(400, random_state=0)
    >>> res = aflite(d.X, d.y, target_size=100, train_size=40, slice_size=40, random_state=0)
    >>> curve = accuracy_over_rounds(d, res, n_splits=3)
    >>> int(curve["rows"].iloc[0]), bool(curve["linear"].iloc[-1] < curve["linear"].iloc[0])
    (400, True)
    """
    func = "accuracy_over_rounds"
    if not isinstance(data, BiasedCircles):
        raise v.param_error("data", func, "a BiasedCircles", data, TypeError)
    rr = np.asarray(getattr(result, "removed_round", None))
    if rr.shape != (data.n_samples,):
        raise v.param_error("result", func, f"an AFLiteResult on the {data.n_samples} rows of data", result, TypeError)
    folds = v.check_int(n_splits, "n_splits", func, low=2)
    seed = v.check_random_state(random_state, func)
    rows = []
    for r in range(int(result.n_rounds) + 1):
        left = (rr < 1) | (rr > r)
        acc = subset_accuracies(data.X, data.y, left, n_splits=folds, random_state=seed, n_threads=n_threads)
        n = int(left.sum())
        rows.append(
            {
                "round": r,
                "rows": n,
                "biased_rows": int((left & data.is_biased).sum()),
                "flipped_rows": int((left & data.is_flipped).sum()),
                "linear": acc["linear"],
                "rbf": acc["rbf"],
                "chance": float(np.bincount(data.y[left]).max() / max(n, 1)),
                "se": float(np.sqrt(0.25 / max(n, 1))),
            }
        )
    return pd.DataFrame(rows)
