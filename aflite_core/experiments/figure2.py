"""The paper's synthetic experiment (ICML 2020 §3, Figure 2): AFLite on the concentric circles.

Each dataset is measured before and after filtering, with the planted truth and the paper's "no bias" reference:
in one call (:func:`synthetic_experiment`) or in composable steps (:func:`plan_experiment` → :class:`ExperimentPlan`:
``run`` / ``at_tau`` / ``before`` / ``after`` / ``experiment``) that a caller can remember one by one. The
measurements themselves (:func:`subset_accuracies`, :func:`before_accuracies`, :func:`planted_summary`,
:func:`accuracy_over_rounds`) live in :mod:`aflite_core.experiments.circle_accuracies` and are re-exported here, as is
:func:`accuracy_notes` (why an accuracy sits below chance or rose). ``aflite synthetic`` prints it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import _validation as v
from ..data.planted_bias import BiasedCircles, paper_circles
from .accuracy_notes import accuracy_notes
from .circle_accuracies import (
    EXPERIMENT_MODELS,
    _before,
    accuracy_over_rounds,
    before_accuracies,
    planted_summary,
    subset_accuracies,
)

__all__ = [
    "EXPERIMENT_DEFAULTS",
    "EXPERIMENT_MODELS",
    "ExperimentPlan",
    "SyntheticExperiment",
    "accuracy_notes",
    "accuracy_over_rounds",
    "before_accuracies",
    "plan_experiment",
    "planted_summary",
    "subset_accuracies",
    "synthetic_experiment",
]


# -- the synthetic experiment (ICML 2020 §3) -----------------------------------------------------------------


#: AFLite defaults of :func:`synthetic_experiment` (fractions are of each dataset's rows): a low target that is only
#: a floor, so the run ends by τ's early stop (fewer than k rows still reach τ), not by a size picked with the
#: planted truth in mind
EXPERIMENT_DEFAULTS = {"target_size": 0.1, "train_size": 0.05, "slice_size": 0.05, "tau": 0.75, "n_partitions": 64}


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
    callback: Callable[[int, int, str], Any] | None = None,
    runs: Mapping[str, Any] | None = None,
    after: MutableMapping[tuple, dict[str, float]] | None = None,
    accuracies: bool = True,
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
    target_size : int or float, default=0.1
        n; a float in (0, 1) is a fraction of each dataset's rows. A low floor chosen without the planted truth
        (which rows carry bias features is not used): the run normally ends by τ's early stop, so τ decides how
        much is removed. Filtering past the shortcut makes the kept set adversarial to linear models, whose
        accuracy can then fall *below* chance (see :func:`accuracy_notes`).
    train_size : int or float, default=0.05
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
        Cached "before" accuracies, ``{dataset name: {"linear": …, "rbf": …, "linear_no_bias": …,
        "rbf_no_bias": …}}`` (from :func:`before_accuracies` with the same seed); datasets found there are not
        re-evaluated. The random stream does not depend on it, so the results are the same either way.
    random_state : int, numpy Generator or None, default=0
        Seed: every dataset draws its AFLite seed and its two fold seeds from it, in a fixed order.
    n_threads : int or None, default=1
        BLAS threads.
    callback : callable, optional
        ``callback(step, n_steps, dataset name)`` after every dataset's run and its accuracies (for a
        progress bar).
    runs : mapping, optional
        AFLite results by dataset name from an earlier call with the same datasets, seed and parameters except a
        τ at or below ``tau`` (e.g. ``exp.results`` of a call at the lowest τ a slider offers): instead of running
        AFLite again, each is read at ``tau`` with :func:`aflite_core.engine.tau_path.narrow_to_tau`, which gives the
        run's result exactly. A result made with other data or parameters is refused (``ValueError``).
    after : mutable mapping, optional
        A memo the caller keeps between calls: the "after" accuracies are stored there by the data, kept rows,
        folds and seed, and looked up before measuring (the numbers are the same either way; two values of τ
        often keep the same rows).
    accuracies : bool, default=True
        False: only the AFLite runs and the planted truth; every accuracy in the table is NaN (for a caller that
        wants ``results`` alone, e.g. to pass back as ``runs``).

    Returns
    -------
    SyntheticExperiment
        ``table`` (one row per dataset: ``dataset, separation, n_before, n_after, linear_before,
        linear_after, rbf_before, rbf_after, linear_no_bias, rbf_no_bias`` (the paper's reference: all rows,
        ring coordinates only), ``biased_before, biased_after, biased_share_before, biased_share_after,
        flipped_before, flipped_removed_share, unbiased_removed_share, rounds, stop_reason``), ``results``
        (AFLiteResult per dataset name), ``datasets`` and ``params``.

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
    func = "synthetic_experiment"
    plan = _plan(
        func,
        datasets,
        target_size=target_size,
        train_size=train_size,
        slice_size=slice_size,
        n_partitions=n_partitions,
        n_splits=n_splits,
        random_state=random_state,
        n_threads=n_threads,
    )
    tau_v = plan.check_tau(tau, func)  # once: the steps below take it checked
    if before is not None and not isinstance(before, Mapping):
        raise v.param_error("before", func, "None or a mapping from dataset names to accuracies", before, TypeError)
    if callback is not None and not callable(callback):
        raise v.param_error("callback", func, "a callable or None", callback, TypeError)
    results: dict[str, Any] = {}
    befores: dict[str, dict[str, float]] = {}
    afters: dict[str, dict[str, float]] = {}
    for i, d in enumerate(plan.datasets):
        given = None if runs is None else runs.get(d.name)
        results[d.name] = plan._run_one(i, tau_v) if given is None else plan._narrow_one(i, given, tau_v)
        if accuracies:
            befores[d.name] = plan._before_one(i, None if before is None else before.get(d.name))
            key = plan.after_key(d.name, results[d.name])
            hit = None if after is None else after.get(key)
            afters[d.name] = hit if hit is not None else plan.after(d.name, results[d.name])
            if after is not None and hit is None:
                after[key] = dict(afters[d.name])
        if callback is not None:
            callback(i + 1, len(plan.datasets), d.name)
    return plan.experiment(results, befores if accuracies else None, afters if accuracies else None)


@dataclass(frozen=True, eq=False)
class ExperimentPlan:
    """The synthetic experiment with every parameter but τ checked and resolved once (:func:`plan_experiment`).

    The experiment in composable steps, each computed once by whoever keeps it (the app memoises each):
    :meth:`run` (AFLite on every dataset at one τ), :meth:`at_tau` (those runs read at a τ at or above theirs,
    exactly, with τ checked here once), :meth:`before` and :meth:`after` (the accuracies, with
    :meth:`after_key` to remember them by kept set), and :meth:`experiment` (the table). Every dataset's seeds
    are drawn here, in the order :func:`synthetic_experiment` draws them, so
    ``plan.experiment(plan.at_tau(plan.run(0.5), tau), plan.before(), ...)`` equals ``synthetic_experiment`` at
    ``tau`` with the same arguments.

    Attributes
    ----------
    datasets : tuple of BiasedCircles
    counts : tuple of (target_size, train_size, slice_size)
        Each dataset's counts, resolved from the fractions.
    n_partitions, n_splits : int
    seed : int
        The experiment's seed.
    seeds : tuple of (run, before, after) seeds
        Each dataset's AFLite seed and its two fold seeds.
    n_threads : int or None
    given : dict
        ``target_size``, ``train_size`` and ``slice_size`` as given (the experiment's ``params``).
    """

    datasets: tuple
    counts: tuple
    n_partitions: int
    n_splits: int
    seed: int
    seeds: tuple
    n_threads: int | None
    given: dict

    def check_tau(self, tau: float, func: str = "ExperimentPlan.at_tau") -> float:
        """``tau`` checked (a probability), as a float."""
        return v.check_probability(tau, "tau", func)

    def _index(self, name: str) -> int:
        return next(i for i, d in enumerate(self.datasets) if d.name == name)

    def _run_one(self, i: int, tau: float) -> Any:
        from ..engine.filtering import aflite

        d, (nt, t, k) = self.datasets[i], self.counts[i]
        return aflite(
            d.X,
            d.y,
            target_size=nt,
            train_size=t,
            slice_size=k,
            tau=tau,
            n_partitions=self.n_partitions,
            random_state=self.seeds[i][0],
            n_threads=self.n_threads,
        )

    def _narrow_one(self, i: int, res: Any, tau: float) -> Any:
        nt, t, k = self.counts[i]
        expected = {"target_size": nt, "train_size": t, "slice_size": k, "n_partitions": self.n_partitions}
        return _narrowed(res, self.datasets[i], tau, expected | {"seed": self.seeds[i][0]})

    def _before_one(self, i: int, have: Mapping[str, float] | None = None) -> dict[str, float]:
        return _before(self.datasets[i], self.n_splits, self.seeds[i][1], self.n_threads, have=have)

    def run(self, tau: float, callback: Callable[[int, int, str], Any] | None = None) -> dict[str, Any]:
        """AFLite on every dataset at ``tau``: ``{dataset name: AFLiteResult}`` (``callback`` after each)."""
        tau = self.check_tau(tau, "ExperimentPlan.run")
        out = {}
        for i, d in enumerate(self.datasets):
            out[d.name] = self._run_one(i, tau)
            if callback is not None:
                callback(i + 1, len(self.datasets), d.name)
        return out

    def at_tau(self, runs: Mapping[str, Any], tau: float) -> dict[str, Any]:
        """The runs of :meth:`run` at a τ at or below ``tau``, read at ``tau``: exactly a run at ``tau``, no AFLite.

        :func:`aflite_core.engine.tau_path.narrow_to_tau` on each; τ is checked once, here. A run made with other data
        or parameters, or above ``tau``, is refused (``ValueError``).
        """
        tau = self.check_tau(tau)
        missing = [d.name for d in self.datasets if d.name not in runs]
        if missing:
            raise ValueError(f"The runs given to ExperimentPlan.at_tau lack the datasets {missing}.")
        return {d.name: self._narrow_one(i, runs[d.name], tau) for i, d in enumerate(self.datasets)}

    def before(
        self, callback: Callable[[int, int, str], Any] | None = None, *, reference: bool = True
    ) -> dict[str, dict[str, float]]:
        """The "before" accuracies (as :func:`before_accuracies`, with this plan's datasets, folds and seeds)."""
        skip = None if reference else {"linear_no_bias": float("nan"), "rbf_no_bias": float("nan")}
        out = {}
        for i, d in enumerate(self.datasets):
            out[d.name] = self._before_one(i, skip)
            if callback is not None:
                callback(i + 1, len(self.datasets), d.name)
        return out

    def after_key(self, name: str, result: Any) -> tuple:
        """What the "after" accuracies of ``result`` depend on: the data, the kept rows, the folds and the seed."""
        return _after_key(result, self.n_splits, self.seeds[self._index(name)][2])

    def after(self, name: str, result: Any) -> dict[str, float]:
        """Linear and RBF-SVM accuracy of ``result``'s kept rows of dataset ``name`` (remember by :meth:`after_key`)."""
        i = self._index(name)
        d = self.datasets[i]
        return subset_accuracies(
            d.X, d.y, result.kept, n_splits=self.n_splits, random_state=self.seeds[i][2], n_threads=self.n_threads
        )

    def experiment(
        self,
        results: Mapping[str, Any],
        before: Mapping[str, Mapping[str, float]] | None = None,
        after: Mapping[str, Mapping[str, float]] | None = None,
    ) -> SyntheticExperiment:
        """The experiment's table from the runs and the accuracies (None: NaN accuracies); nothing is computed."""
        nan = float("nan")
        rows = []
        for d in self.datasets:
            res = results[d.name]
            acc_before = {} if before is None else before[d.name]
            acc_after = {"linear": nan, "rbf": nan} if after is None else after[d.name]
            truth = planted_summary(d, res.kept)
            rows.append(
                {
                    "dataset": d.name,
                    "separation": d.separation,
                    "n_before": truth["n_before"],
                    "n_after": truth["n_after"],
                    "linear_before": acc_before.get("linear", nan),
                    "linear_after": acc_after["linear"],
                    "rbf_before": acc_before.get("rbf", nan),
                    "rbf_after": acc_after["rbf"],
                    "linear_no_bias": acc_before.get("linear_no_bias", nan),
                    "rbf_no_bias": acc_before.get("rbf_no_bias", nan),
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
        taus = {float(results[d.name].params["tau"]) for d in self.datasets}
        params = dict(self.given, tau=taus.pop() if len(taus) == 1 else sorted(taus))
        params |= {"n_partitions": self.n_partitions, "n_splits": self.n_splits, "seed": self.seed}
        return SyntheticExperiment(
            table=pd.DataFrame(rows), results=dict(results), datasets=list(self.datasets), params=params
        )


def plan_experiment(
    datasets: Sequence[BiasedCircles] | None = None,
    *,
    target_size: int | float = EXPERIMENT_DEFAULTS["target_size"],
    train_size: int | float = EXPERIMENT_DEFAULTS["train_size"],
    slice_size: int | float = EXPERIMENT_DEFAULTS["slice_size"],
    n_partitions: int = EXPERIMENT_DEFAULTS["n_partitions"],
    n_splits: int = 5,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> ExperimentPlan:
    """The synthetic experiment's every parameter but τ, checked once: an :class:`ExperimentPlan`.

    The parameters are :func:`synthetic_experiment`'s (τ comes with each step that needs it).

    Examples
    --------
    >>> plan = plan_experiment(paper_circles(400), n_partitions=16, n_splits=3)
    >>> runs = plan.run(0.5)  # AFLite once per dataset; every τ above is read off these runs
    >>> exp = plan.experiment(plan.at_tau(runs, 0.75))
    >>> exp.params["tau"], exp.table.shape[0]
    (0.75, 4)
    """
    return _plan(
        "plan_experiment",
        datasets,
        target_size=target_size,
        train_size=train_size,
        slice_size=slice_size,
        n_partitions=n_partitions,
        n_splits=n_splits,
        random_state=random_state,
        n_threads=n_threads,
    )


def _plan(func: str, datasets: Any, *, target_size, train_size, slice_size, n_partitions, n_splits, random_state,
          n_threads) -> ExperimentPlan:  # fmt: skip
    data = paper_circles() if datasets is None else list(datasets)
    if not data or not all(isinstance(d, BiasedCircles) for d in data):
        raise v.param_error("datasets", func, "None or a non-empty sequence of BiasedCircles", datasets, TypeError)
    names = [d.name for d in data]
    if len(set(names)) != len(names):
        raise ValueError(f"The 'datasets' parameter of {func} must have distinct names. Got {names} instead.")
    m = v.check_int(n_partitions, "n_partitions", func, low=1)
    folds = v.check_int(n_splits, "n_splits", func, low=2)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    counts = []
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
        counts.append((nt, t, k))
    seed = v.check_random_state(random_state, func)
    rng = np.random.default_rng(seed)
    seeds = tuple(tuple(int(s) for s in rng.integers(0, 2**31 - 1, size=3)) for _ in data)
    given = {"target_size": target_size, "train_size": train_size, "slice_size": slice_size}
    return ExperimentPlan(tuple(data), tuple(counts), m, folds, seed, seeds, n_threads, given)


def _after_key(res: Any, folds: int, seed: int) -> tuple:
    kept = hashlib.blake2b(np.packbits(np.asarray(res.kept, dtype=bool)).tobytes(), digest_size=16).hexdigest()
    return (res.provenance.get("x_sha256"), res.provenance.get("y_sha256"), kept, folds, seed)


def _narrowed(res: Any, d: BiasedCircles, tau: float, expected: dict[str, int]) -> Any:
    """``res`` (a run on ``d`` at a τ at or below ``tau``) read at ``tau``; refused if it is another run."""
    from .._utils import hash_array
    from ..engine.tau_path import narrow_to_tau

    p = getattr(res, "params", {})
    same = (
        all(p.get(name) == value for name, value in expected.items())
        and res.provenance.get("x_sha256") == hash_array(np.ascontiguousarray(d.X, dtype=np.float32))
        and np.array_equal(np.asarray(res.classes)[res.y], np.asarray(d.y))
    )
    if not same or float(p.get("tau", 2.0)) > tau:
        raise ValueError(
            f"The run given for dataset {d.name!r} was not made on it with these parameters and a τ at or below "
            f"{tau:g}, so it cannot stand for this experiment's run."
        )
    return narrow_to_tau(res, tau)
