"""The adversary study: AFLite on an evaluation set for several adversaries and seeds, and what it selects.

The study's run, step by step: its arguments are checked (:mod:`.checks`), the evaluated models fitted, every
adversary and seed run, then the tables (:mod:`.tables`) and parameters gathered into an
:class:`~aflite_core.evalsets.result.AdversaryStudy` (:mod:`.result`); progress goes through :mod:`.progress`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validation as v
from .._utils import versions
from ..engine.filtering import aflite
from ..engine.registry import CLASSIFIERS, resolve_model
from ..engine.result import AFLiteResult
from .agreement import DEFAULT_ANNOTATOR_SOURCES, _label_text, category_agreement
from .checks import _check_names as _check_names  # re-exported: setups imports it from here
from .checks import _check_study_args, _StudyInputs
from .controls import DEPTHS, study_controls
from .ensemble import EnsembleResult, ensemble_aflite, ensemble_name
from .evaluated import _fit_evaluated
from .progress import StudyProgress, StudyStep, _Tracker
from .result import AdversaryStudy
from .tables import (
    _accuracies_frame,
    _accuracy_matrix,
    _categories_frame,
    _category_summary,
    _rankings,
    _runs_frame,
    _same_representation,
    _strength_frame,
)

__all__ = ["AdversaryStudy", "StudyProgress", "StudyStep", "adversary_study"]


def adversary_study(
    train_X: Mapping[str, ArrayLike],
    train_y: ArrayLike,
    eval_X: Mapping[str, ArrayLike],
    eval_y: ArrayLike,
    *,
    target_size: int | float,
    train_size: int | float,
    slice_size: int,
    adversaries: Sequence[str] | None = None,
    evaluated: Sequence[tuple[Any, str]] = (),
    backbones: Mapping[str, str] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    tau: float = 0.75,
    n_partitions: int = 64,
    model: Any = "linear",
    ensemble: bool | Sequence[str] = False,
    annotator_labels: Sequence[Any] | None = None,
    annotator_source: Sequence[Any] | None = None,
    annotator_sources: Sequence[str] | None = DEFAULT_ANNOTATOR_SOURCES,
    ids: ArrayLike | None = None,
    eval_ids: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
    callback: Callable[[StudyProgress], bool | None] | None = None,
    on_step: Callable[[StudyStep], bool | None] | None = None,
    null_permutations: int = 0,
    n_null_subsets: int = 1000,
) -> AdversaryStudy:
    """Filter an evaluation set with AFLite for several adversaries and seeds, and score evaluated models on it.

    For every adversary (a named representation Φ with a training and an evaluation matrix) and every seed,
    :func:`aflite_core.aflite` runs on the training rows with the evaluation rows filtered alongside
    (appendix Algorithm 1 of Phang et al.): evaluation rows never train a model and never change which
    training rows are removed; every evaluation row with p ≥ ``tau`` leaves in that round. Each evaluation row
    ends "removed in round 1", "removed later" or "selected" (Figure 1). The evaluated models, each a
    (family, representation) pair, are trained **once** on all training rows, independently of the
    adversaries, and scored on the unfiltered set and on each run's selected rows (Figures 2, 3, 4, 7).

    Parameters
    ----------
    train_X : mapping of str to array-like of shape (n_train, d_r)
        Named representations of the training rows (adversaries and the evaluated models' inputs).
    train_y : array-like of shape (n_train,)
        Training labels (any hashable type).
    eval_X : mapping of str to array-like of shape (n_eval, d_r)
        The same representations of the evaluation rows (every name used).
    eval_y : array-like of shape (n_eval,)
        Evaluation labels.
    target_size, train_size : int or float
        n and t of AFLite (counts or fractions of n_train; t < n).
    slice_size : int
        k, training rows removed per round at most.
    adversaries : sequence of str, optional
        Representations to filter with, in display order (e.g. weakest first). Default: every key of
        ``train_X``.
    evaluated : sequence of (family, representation) or (name, family, representation), default=()
        Evaluated models: a family of :data:`aflite_core.engine.registry.CLASSIFIERS` (or an unfitted scikit-learn
        classifier) and a representation name, e.g. ``[("logistic", "pixels"), ("forest", "pixels")]``. Named
        ``"family:representation"`` in the tables, or by the name given first in a triple (an estimator with an
        explicit integer ``random_state`` keeps it).
    backbones : mapping of str to str, optional
        Adversary -> the evaluated model that is its backbone (:mod:`aflite_core.measures.adversary_strength`): the
        adversary's architecture trained on the training rows. Gives ``strength`` (its accuracy on the full
        evaluation set) and the "shared backbone" rows of ``same_representation``.
    seeds : sequence of int, default=(0, 1, 2)
        AFLite seeds; every adversary runs once per seed (the paper averages three).
    tau : float, default=0.75
        τ, AFLite's threshold (Table 3 of the paper).
    n_partitions : int, default=64
        m, models per round (Table 3).
    model : {"linear", "ridge", "logistic", "knn"}, LinearFamily or scikit-learn classifier, default="linear"
        The adversaries' weak model family M (see :func:`aflite_core.aflite`).
    ensemble : bool or sequence of str, default=False
        Also filter with the pooled ensemble of all adversaries (True) or of the named ones (§7); it appears
        as one more adversary named ``ensemble(a+b+...)`` (see :func:`ensemble_aflite`).
    annotator_labels : sequence of length n_eval, optional
        Per evaluation row its annotator labels (a list, None when it has none); enables the agreement table.
    annotator_source : sequence of length n_eval, optional
        Per evaluation row where its annotator labels came from (e.g. the shared data's
        ``annotator_labels_src``).
    annotator_sources : sequence of str or None, default=("random_subset",)
        Sources whose rows enter the agreement means (None: every source). Ignored without
        ``annotator_source``.
    ids, eval_ids : array-like, optional
        Ids of the training and evaluation rows (``categories["id"]`` shows the evaluation ids).
    random_state : int, numpy Generator or None, default=0
        Seed of the evaluated models (each gets its own integer seed drawn from it).
    n_threads : int or None, default=1
        BLAS threads for everything fitted here.
    callback : callable, optional
        Called with a :class:`StudyProgress` after the evaluated models and after every AFLite run;
        returning ``False`` stops the study: the result then holds the runs finished so far
        (``params["complete"]`` is False).
    on_step : callable, optional
        Called often *inside* the steps with a :class:`StudyStep`: before each evaluated model's fit, and in
        every AFLite run after each group of partition fits, block of predictions and round. Returning
        ``False`` stops the study within that piece of work: the run in progress is abandoned and left out,
        the evaluated models fitted so far are kept (later ones are left out), and the result holds what
        finished (``params["complete"]`` is False).
    null_permutations : int, default=0
        K > 0: every adversary's run also scores K permutations of the training labels per round
        (``aflite(..., null_permutations=K)``, :mod:`aflite_core.engine.null`), and ``runs`` gets
        ``eval_null_round_1``: the mean number of evaluation rows that would reach p ≥ τ in round 1 under
        shuffled training labels, beside ``removed_in_round_1`` (the ensemble's runs compute no null: NaN).
        About K + 1 times the fits of the runs.
    n_null_subsets : int, default=1000
        Random evaluation subsets of each run's selected size for the controls (:mod:`.controls`): the
        percentile and p-value of the observed Kendall coefficient and of every accuracy drop against random
        subsets, as run and at equal depth. No model is refitted. 0 skips the null.

    Returns
    -------
    AdversaryStudy
        The tidy tables (categories, accuracies, rankings with Kendall's coefficient, same-representation
        rank change, agreement) and every run.

    Raises
    ------
    ValueError
        For an invalid parameter, with the uniform wording of :mod:`aflite_core._validation`.

    Notes
    -----
    Rankings use the models' accuracies averaged over seeds; ``rank_correlation`` also gives Kendall's
    coefficient of each seed's ranking. A run that selects no evaluation row gives missing accuracies.

    References
    ----------
    .. [1] J. Phang et al., "Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be
       Fair", §3, §5, appendix Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core.evalsets import adversary_study
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 700)
    >>> strong = rng.normal(size=(700, 4)); strong[:, 0] += 2.0 * (2 * y - 1)
    >>> weak = rng.normal(size=(700, 4)); weak[:, 0] += 0.5 * (2 * y - 1)
    >>> tr, ev = slice(0, 500), slice(500, 700)
    >>> study = adversary_study({"weak": weak[tr], "strong": strong[tr]}, y[tr],
    ...                         {"weak": weak[ev], "strong": strong[ev]}, y[ev],
    ...                         target_size=200, train_size=100, slice_size=50, seeds=(0,),
    ...                         evaluated=[("logistic", "weak"), ("knn", "strong")])
    >>> shares = study.category_table
    >>> bool(shares.loc["strong", "selected"] < shares.loc["weak", "selected"])
    True
    >>> list(study.accuracy_matrix.columns)
    ['none', 'weak', 'strong']
    """
    func = "adversary_study"
    if isinstance(n_null_subsets, bool) or not isinstance(n_null_subsets, (int, np.integer)) or n_null_subsets < 0:
        raise ValueError(
            f"The 'n_null_subsets' parameter of {func} must be an int >= 0 (0 skips the null). "
            f"Got {n_null_subsets!r} instead."
        )
    started = time.perf_counter()
    n_null = v.check_int(null_permutations, "null_permutations", func, low=0)
    a = _check_study_args(
        func,
        train_X,
        train_y,
        eval_X,
        eval_y,
        target_size=target_size,
        train_size=train_size,
        slice_size=slice_size,
        adversaries=adversaries,
        evaluated=evaluated,
        backbones=backbones,
        seeds=seeds,
        tau=tau,
        n_partitions=n_partitions,
        model=model,
        ensemble=ensemble,
        annotator_labels=annotator_labels,
        annotator_source=annotator_source,
        annotator_sources=annotator_sources,
        ids=ids,
        eval_ids=eval_ids,
        random_state=random_state,
        n_threads=n_threads,
        callback=callback,
        on_step=on_step,
    )
    ens_name = ensemble_name(a.members) if a.members else None
    names = [*a.adv, *([ens_name] if ens_name else [])]
    n_steps = 1 + len(a.adv) * len(a.seed_list) + (len(a.seed_list) if a.members else 0)
    # the most rounds a run can take (each removes k rows until n are left); τ often ends it sooner
    max_rounds = max(1, math.ceil((len(a.codes) - a.resolved["n_target"]) / max(a.resolved["k"], 1)))
    track = _Tracker(
        n_steps=n_steps,
        n_models=len(a.models),
        max_rounds=max_rounds,
        started=started,
        callback=callback,
        on_step=on_step,
    )
    correct, fit_seconds, model_seeds, not_fitted = _fit_models(a, track)
    common = {
        "target_size": target_size,
        "n_partitions": n_partitions,
        "train_size": train_size,
        "slice_size": slice_size,
        "tau": tau,
        "model": model,
        "n_threads": a.n_threads,
        "ids": ids,
        "eval_ids": eval_ids,
    }
    if n_null:
        common["null_permutations"] = n_null  # the single-adversary runs only (see _run_adversaries)
    # the null's own stream, drawn after the models' seeds: asking for it changes no fit and no run
    null_rng = np.random.default_rng(int(a.model_seed_draw.integers(0, 2**63 - 1)))
    detail, ens_runs = _run_adversaries(a, track, train_y, eval_y, ens_name, common)
    tables = _study_tables(a, detail, names, ens_name, correct, annotator_labels, annotator_source, annotator_sources)
    tables["controls"], tables["drop_controls"] = study_controls(
        detail,
        names,
        a.seed_list,
        correct,
        [name for _, _, name in a.models],
        n_subsets=int(n_null_subsets),
        rng=null_rng,
    )
    tables["rank_correlation"] = _with_kendall_null(tables["rank_correlation"], tables["controls"])
    params = _study_params(
        a,
        names,
        model_seeds,
        fit_seconds,
        not_fitted,
        complete=not track.stopped,
        given={
            "target_size": target_size,
            "train_size": train_size,
            "model": model,
            "random_state": random_state,
            "n_null_subsets": int(n_null_subsets),
        },
        annotator_sources=annotator_sources,
        func=func,
        started=started,
    )
    params["null_permutations"] = n_null
    params["equal_depth_rows"] = dict(tables["controls"].attrs.get("n_min", {}))  # N_min per seed
    return AdversaryStudy(**tables, runs_detail=detail, ensemble_runs=ens_runs, params=params)


def _with_kendall_null(rank_corr: pd.DataFrame, controls: pd.DataFrame) -> pd.DataFrame:
    """``rank_correlation`` with the as-run random-subset null beside Kendall's coefficient."""
    cols = ["kendall_null_median", "kendall_null_low", "kendall_null_high", "kendall_percentile", "kendall_p_vs_random"]
    run = controls[controls["depth"] == DEPTHS[0]].set_index("adversary")
    out = rank_corr.copy()
    at = out.columns.get_loc("kendall_p_vs_zero") + 1
    for i, col in enumerate(cols):
        values = out["adversary"].map(run[col]) if len(run) else np.nan
        out.insert(at + i, col, pd.to_numeric(values, errors="coerce"))
    return out


def _fit_models(a: _StudyInputs, track: _Tracker) -> tuple[np.ndarray, list[float], list[int], list[str]]:
    """Fit the evaluated models once on the full training set, independently of the adversaries.

    Stopped between two fits, the models fitted so far are kept: ``a.models`` and ``a.bb`` shrink to them.
    Returns their correctness on the evaluation rows, fit seconds, seeds and the names not fitted.
    """
    correct, fit_seconds, model_seeds = _fit_evaluated(
        a.models,
        a.TX,
        a.codes,
        a.EX,
        a.eval_codes,
        a.model_seed_draw,
        a.n_threads,
        track.before_fit if track.on_step is not None else None,
    )
    not_fitted = [name for _, _, name in a.models[len(fit_seconds) :]]
    if not_fitted:  # stopped between two fits: keep the models fitted so far
        a.models = a.models[: len(fit_seconds)]
        track.n_models = len(a.models)
        correct, model_seeds = correct[:, : len(a.models)], model_seeds[: len(a.models)]
        kept_names = {name for _, _, name in a.models}
        a.bb = {adv: m for adv, m in a.bb.items() if m in kept_names}
    track.report("evaluated models", None, None)
    return correct, fit_seconds, model_seeds, not_fitted


def _run_adversaries(
    a: _StudyInputs, track: _Tracker, train_y: ArrayLike, eval_y: ArrayLike, ens_name: str | None, common: dict
) -> tuple[dict[tuple[str, int], AFLiteResult], dict[int, EnsembleResult]]:
    """Every AFLite run: each adversary for each seed, then the ensemble per seed; until a stop request."""
    TX, EX = a.TX, a.EX
    detail: dict[tuple[str, int], AFLiteResult] = {}
    ens_runs: dict[int, EnsembleResult] = {}
    for adv in a.adv:
        for s in a.seed_list:
            if track.stopped or not track.inside("aflite", adv, s, 0.0):
                break
            res = aflite(
                TX[adv],
                train_y,
                eval_X=EX[adv],
                eval_y=eval_y,
                random_state=s,
                **common,
                **track.run_hooks("aflite", adv, s),
            )
            if res.stop_reason == "stopped_by_callback":  # abandoned on request: not a finished run
                track.stopped = True
                break
            detail[(adv, s)] = res
            track.report("aflite", adv, s)
    if a.members:
        for s in a.seed_list:
            if track.stopped or not track.inside("ensemble", ens_name, s, 0.0):
                break
            ens = ensemble_aflite(
                {m: TX[m] for m in a.members},
                train_y,
                eval_X={m: EX[m] for m in a.members},
                eval_y=eval_y,
                random_state=s,
                **{k: val for k, val in common.items() if k != "null_permutations"},  # no null for the pool
                **track.run_hooks("ensemble", ens_name, s),
            )
            if ens.result.stop_reason == "stopped_by_callback":
                track.stopped = True
                break
            ens_runs[s] = ens
            detail[(ens_name, s)] = ens.result
            track.report("ensemble", ens_name, s)
    return detail, ens_runs


def _study_tables(
    a: _StudyInputs,
    detail: dict[tuple[str, int], AFLiteResult],
    names: list[str],
    ens_name: str | None,
    correct: np.ndarray,
    annotator_labels: Any,
    annotator_source: Any,
    annotator_sources: Any,
) -> dict[str, Any]:
    """The study's tables from the finished runs, by :class:`AdversaryStudy` field."""
    n_eval = len(a.eval_codes)
    eval_id_values = a.resolved["eval_ids"] if a.resolved["eval_ids"] is not None else np.arange(n_eval)
    categories = _categories_frame(detail, names, a.seed_list, eval_id_values, a.eval_labels)
    category_summary = _category_summary(categories, names)
    runs = _runs_frame(detail, names, a.seed_list)
    model_names = [name for _, _, name in a.models]
    correct_frame = pd.DataFrame(correct, columns=model_names)
    correct_frame.index.name = "row"
    accuracies = _accuracies_frame(detail, names, a.seed_list, a.models, correct)
    matrix = _accuracy_matrix(accuracies, names, model_names)
    rankings, rank_corr = _rankings(matrix, accuracies, names, model_names)
    same = _same_representation(matrix, rankings, a.models, a.adv, a.members, ens_name, a.bb)
    strength = _strength_frame(correct_frame, runs, names, a.bb)
    agreement = None
    if a.agreement_rows is not None:
        agreement = category_agreement(
            categories,
            a.eval_labels,
            annotator_labels,
            annotator_source=annotator_source,
            annotator_sources=annotator_sources,
        )
    return {
        "categories": categories,
        "category_summary": category_summary,
        "runs": runs,
        "accuracies": accuracies,
        "accuracy_matrix": matrix,
        "rankings": rankings,
        "rank_correlation": rank_corr,
        "same_representation": same,
        "agreement": agreement,
        "eval_correct": correct_frame,
        "strength": strength,
    }


def _study_params(
    a: _StudyInputs,
    names: list[str],
    model_seeds: list[int],
    fit_seconds: list[float],
    not_fitted: list[str],
    *,
    complete: bool,
    given: dict[str, Any],
    annotator_sources: Any,
    func: str,
    started: float,
) -> dict[str, Any]:
    """``params``: the resolved parameters, adversaries, evaluated models, seeds, sizes, chance level, timings."""
    resolved, models, labels, eval_codes = a.resolved, a.models, a.labels, a.eval_codes
    n_eval = len(eval_codes)
    model_names = [name for _, _, name in models]
    random_state = given["random_state"]
    return {
        "target_size": resolved["n_target"],
        "train_size": resolved["t"],
        "slice_size": resolved["k"],
        "tau": resolved["tau"],
        "n_partitions": resolved["m"],
        "target_size_given": given["target_size"],
        "train_size_given": given["train_size"],
        "model": resolve_model(given["model"], func).spec(),
        "seeds": list(a.seed_list),
        "adversaries": list(a.adv),
        "ensemble_members": list(a.members),
        "adversary_names": names,
        "evaluated": [[fam if isinstance(fam, str) else type(fam).__name__, rep] for fam, rep, _ in models],
        "evaluated_names": model_names,
        "backbones": dict(a.bb),
        "evaluated_families": {
            name: CLASSIFIERS.get(fam, repr(fam)) if isinstance(fam, str) else repr(fam) for fam, _, name in models
        },
        "evaluated_seeds": dict(zip(model_names, model_seeds)),
        "evaluated_fit_seconds": dict(zip(model_names, [round(s, 3) for s in fit_seconds])),
        "representations": {r: int(a.TX[r].shape[1]) for r in a.used_reps},
        "classes": [_label_text(c) for c in labels.classes],
        "n_classes": labels.n_classes,
        "chance": 1.0 / labels.n_classes,
        "majority_share_eval": float(np.bincount(eval_codes, minlength=labels.n_classes).max() / max(n_eval, 1)),
        "n_train": len(a.codes),
        "n_eval": int(n_eval),
        "random_state": random_state if isinstance(random_state, (int, type(None))) else repr(random_state),
        "n_threads": a.n_threads,
        "n_null_subsets": given["n_null_subsets"],
        "complete": complete,
        "evaluated_not_fitted": not_fitted,
        "annotator_sources": None if annotator_sources is None else list(annotator_sources),
        "seconds": round(time.perf_counter() - started, 3),
        "versions": versions(),
    }
