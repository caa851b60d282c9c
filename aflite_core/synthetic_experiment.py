"""The paper's synthetic experiment (ICML 2020 §3, Figure 2): AFLite on the concentric circles.

Each dataset is measured before and after filtering, with the planted truth (:func:`synthetic_experiment`; its
pieces :func:`subset_accuracies`, :func:`before_accuracies`, :func:`planted_summary` are public too).
``aflite synthetic`` prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from . import _validation as v
from .synthetic import BiasedCircles, paper_circles

__all__ = [
    "EXPERIMENT_DEFAULTS",
    "EXPERIMENT_MODELS",
    "SyntheticExperiment",
    "before_accuracies",
    "planted_summary",
    "subset_accuracies",
    "synthetic_experiment",
]


# -- the synthetic experiment (ICML 2020 §3) -----------------------------------------------------------------
#: models of the synthetic experiment (ICML §3): a linear model (logistic regression) and an RBF-kernel SVM, by the
#: names the experiment's table uses -> their classifier family in :data:`aflite_core.registry.CLASSIFIERS`
EXPERIMENT_MODELS: dict[str, str] = {"linear": "logistic", "rbf": "rbf"}


#: AFLite defaults of :func:`synthetic_experiment` (fractions are of each dataset's rows)
EXPERIMENT_DEFAULTS = {"target_size": 0.27, "train_size": 0.1, "slice_size": 0.05, "tau": 0.75, "n_partitions": 64}


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

    A thin wrapper of :func:`aflite_core.baselines.model_accuracies` (seeded ``StratifiedKFold`` on the
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
        Name in the result -> classifier family of :data:`aflite_core.registry.CLASSIFIERS`.
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
    >>> from aflite_core.synthetic import make_biased_circles
    >>> X, y, *_ = make_biased_circles(300, separation=1.0, random_state=0)
    >>> acc = subset_accuracies(X, y, random_state=0)
    >>> sorted(acc), bool(acc["rbf"] > 0.9)
    (['linear', 'rbf'], True)
    """
    from .baselines import model_accuracies

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
    >>> from aflite_core.synthetic import make_biased_circles
    >>> d = make_biased_circles(100, random_state=0)
    >>> planted_summary(d, ~d.is_biased)["biased_after"]
    0
    """
    from ._measure_args import _kept_mask

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


@dataclass(frozen=True, eq=False)
class SyntheticExperiment:
    """The synthetic experiment's outcome (see :func:`synthetic_experiment`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per dataset (the Figure 2 captions and the planted-truth counts).
    results : dict of str to AFLiteResult
        The AFLite run of every dataset, by dataset name.
    datasets : list of BiasedCircles
        The datasets, in table order.
    params : dict
        The AFLite parameters, ``n_splits`` and the seed.
    """

    table: pd.DataFrame
    results: dict
    datasets: list
    params: dict


def _resolve_count(value: Any, name: str, func: str, n: int, *, low: int, high: int, range_text: str) -> int:
    return v.check_fraction_or_count(value, name, func, n=n, low=low, high=high, range_text=range_text)


def synthetic_experiment(
    datasets: Sequence[BiasedCircles] | None = None,
    *,
    target_size: int | float = EXPERIMENT_DEFAULTS["target_size"],
    train_size: int | float = EXPERIMENT_DEFAULTS["train_size"],
    slice_size: int | float = EXPERIMENT_DEFAULTS["slice_size"],
    tau: float = EXPERIMENT_DEFAULTS["tau"],
    n_partitions: int = EXPERIMENT_DEFAULTS["n_partitions"],
    n_splits: int = 5,
    before: Mapping[str, Mapping[str, float]] | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> SyntheticExperiment:
    """Run AFLite on the concentric-circles datasets and measure them before and after (ICML §3, Figure 2).

    For every dataset: run :func:`aflite_core.aflite` (the fast linear family) on all columns, then report
    the held-out accuracy (:func:`subset_accuracies`, mean over ``n_splits`` seeded folds of the set in
    question) of a linear model (LogisticRegression) and of an RBF-kernel SVM, before (all rows) and after
    (kept rows), and the planted truth (:func:`planted_summary`). The paper's findings: the number and share
    of biased rows drop considerably, the linear model falls toward chance, the RBF SVM stays well above
    it, and most flipped rows are removed.

    Parameters
    ----------
    datasets : sequence of BiasedCircles, optional
        Default: :func:`paper_circles` with its defaults (2000 rows each, seed 0).
    target_size : int or float, default=0.27
        n; a float in (0, 1) is a fraction of each dataset's rows. 0.27 lies just above the 25 % of unbiased
        rows: AFLite can remove nearly all biased rows without being forced deep into the unbiased ones (a
        smaller target makes the kept set adversarial, a linear model then falls *below* chance).
    train_size : int or float, default=0.1
        t, training rows per partition model (fraction or count).
    slice_size : int or float, default=0.05
        k, rows removed per round (a float in (0, 1) is a fraction of each dataset's rows).
    tau : float, default=0.75
        τ, the early-stopping threshold.
    n_partitions : int, default=64
        m, models per round.
    n_splits : int, default=5
        Folds of the accuracy estimates.
    before : mapping, optional
        Cached "before" accuracies, ``{dataset name: {"linear": …, "rbf": …}}`` (from
        :func:`subset_accuracies` with the same seed); datasets found there are not re-evaluated. The random
        stream does not depend on it, so the results are the same either way.
    random_state : int, numpy Generator or None, default=0
        Seed: every dataset draws its AFLite seed and its two fold seeds from it, in a fixed order.
    n_threads : int or None, default=1
        BLAS threads.

    Returns
    -------
    SyntheticExperiment
        ``table`` (one row per dataset: ``dataset, separation, n_before, n_after, linear_before,
        linear_after, rbf_before, rbf_after, biased_before, biased_after, biased_share_before,
        biased_share_after, flipped_before, flipped_removed_share, unbiased_removed_share, rounds,
        stop_reason``), ``results`` (AFLiteResult per dataset name), ``datasets`` and ``params``.

    Notes
    -----
    Paper symbols: m → ``n_partitions``, t → ``train_size``, k → ``slice_size``, τ → ``tau``, n →
    ``target_size``.

    References
    ----------
    .. [1] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020, §3 and Figure 2.

    Examples
    --------
    >>> exp = synthetic_experiment(paper_circles(600), n_partitions=32, n_splits=3)
    >>> exp.table.shape[0], bool((exp.table["linear_after"] < exp.table["linear_before"]).all())
    (4, True)
    """
    from .filtering import aflite

    func = "synthetic_experiment"
    data = paper_circles() if datasets is None else list(datasets)
    if not data or not all(isinstance(d, BiasedCircles) for d in data):
        raise v.param_error("datasets", func, "None or a non-empty sequence of BiasedCircles", datasets, TypeError)
    names = [d.name for d in data]
    if len(set(names)) != len(names):
        raise ValueError(f"The 'datasets' parameter of {func} must have distinct names. Got {names} instead.")
    m = v.check_int(n_partitions, "n_partitions", func, low=1)
    tau_v = v.check_probability(tau, "tau", func)
    folds = v.check_int(n_splits, "n_splits", func, low=2)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    resolved = []
    for d in data:  # validate every dataset's counts before running anything
        n = d.n_samples
        nt = _resolve_count(target_size, "target_size", func, n, low=2, high=n, range_text="(n_classes, n_samples)")
        t = _resolve_count(train_size, "train_size", func, n, low=2, high=nt, range_text="(n_classes, target_size)")
        if v._is_int(slice_size):
            k = v.check_int(slice_size, "slice_size", func, low=1)
        else:
            k = max(
                1, _resolve_count(slice_size, "slice_size", func, n, low=0, high=n + 1, range_text="[1, n_samples]")
            )
        resolved.append((nt, t, k))
    if before is not None and not isinstance(before, Mapping):
        raise v.param_error("before", func, "None or a mapping from dataset names to accuracies", before, TypeError)
    seed = v.check_random_state(random_state, func)
    rng = np.random.default_rng(seed)
    rows, results = [], {}
    for d, (nt, t, k) in zip(data, resolved):
        seed_run, seed_before, seed_after = (int(s) for s in rng.integers(0, 2**31 - 1, size=3))
        res = aflite(
            d.X,
            d.y,
            target_size=nt,
            train_size=t,
            slice_size=k,
            tau=tau_v,
            n_partitions=m,
            random_state=seed_run,
            n_threads=n_threads,
        )
        results[d.name] = res
        cached = None if before is None else before.get(d.name)
        acc_before = (
            dict(cached)
            if cached is not None
            else subset_accuracies(d.X, d.y, None, n_splits=folds, random_state=seed_before, n_threads=n_threads)
        )
        acc_after = subset_accuracies(d.X, d.y, res.kept, n_splits=folds, random_state=seed_after, n_threads=n_threads)
        truth = planted_summary(d, res.kept)
        rows.append(
            {
                "dataset": d.name,
                "separation": d.separation,
                "n_before": truth["n_before"],
                "n_after": truth["n_after"],
                "linear_before": acc_before.get("linear", float("nan")),
                "linear_after": acc_after["linear"],
                "rbf_before": acc_before.get("rbf", float("nan")),
                "rbf_after": acc_after["rbf"],
                "biased_before": truth["biased_before"],
                "biased_after": truth["biased_after"],
                "biased_share_before": truth["biased_share_before"],
                "biased_share_after": truth["biased_share_after"],
                "flipped_before": truth["flipped_before"],
                "flipped_removed_share": truth["flipped_removed_share"],
                "unbiased_removed_share": truth["unbiased_removed_share"],
                "rounds": res.n_rounds,
                "stop_reason": res.stop_reason,
            }
        )
    params = {
        "target_size": target_size,
        "train_size": train_size,
        "slice_size": slice_size,
        "tau": tau_v,
        "n_partitions": m,
        "n_splits": folds,
        "seed": seed,
    }
    return SyntheticExperiment(table=pd.DataFrame(rows), results=results, datasets=data, params=params)


def before_accuracies(
    datasets: Sequence[BiasedCircles] | None = None,
    *,
    n_splits: int = 5,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
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

    Returns
    -------
    dict
        ``{dataset name: {"linear": accuracy, "rbf": accuracy}}``.
    """
    func = "before_accuracies"
    data = paper_circles() if datasets is None else list(datasets)
    if not data or not all(isinstance(d, BiasedCircles) for d in data):
        raise v.param_error("datasets", func, "None or a non-empty sequence of BiasedCircles", datasets, TypeError)
    folds = v.check_int(n_splits, "n_splits", func, low=2)
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    out = {}
    for d in data:
        _, seed_before, _ = (int(s) for s in rng.integers(0, 2**31 - 1, size=3))
        out[d.name] = subset_accuracies(d.X, d.y, None, n_splits=folds, random_state=seed_before, n_threads=n_threads)
    return out
