"""The adversary study: AFLite on an evaluation set for several adversaries and seeds, and what it selects."""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validation as v
from .._utils import json_default, versions
from ..engine.filtering import _resolve, aflite
from ..engine.registry import CLASSIFIERS, resolve_model
from ..engine.result import EVAL_CATEGORIES, AFLiteResult, RoundProgress, StepProgress
from .agreement import (
    DEFAULT_ANNOTATOR_SOURCES,
    AgreementReport,
    _label_text,
    _used_rows,
    annotator_agreement,
    category_agreement,
)
from .ensemble import EnsembleResult, _check_mapping, ensemble_aflite, ensemble_name
from .evaluated import _check_evaluated, _fit_evaluated
from .reading import study_reading
from .tables import (
    NONE,
    _accuracies_frame,
    _accuracy_matrix,
    _accuracy_summary,
    _categories_frame,
    _category_summary,
    _rankings,
    _runs_frame,
    _same_representation,
)

__all__ = ["AdversaryStudy", "StudyProgress", "StudyStep", "adversary_study"]


@dataclass(frozen=True)
class StudyProgress:
    """What the progress callback of :func:`adversary_study` receives after every step.

    Attributes
    ----------
    step : int
        Steps done (1-based).
    n_steps : int
        Steps in total: one for the evaluated models, one per AFLite run.
    stage : str
        ``"evaluated models"``, ``"aflite"`` or ``"ensemble"``.
    adversary : str or None
        Adversary of the run just finished.
    seed : int or None
        Its seed.
    seconds : float
        Wall time since the study started.
    """

    step: int
    n_steps: int
    stage: str
    adversary: str | None
    seed: int | None
    seconds: float

    @property
    def fraction_done(self) -> float:
        """Share of the steps done, in [0, 1]."""
        return self.step / max(self.n_steps, 1)


@dataclass(frozen=True)
class StudyStep:
    """Where :func:`adversary_study` is *inside* a step: what its ``on_step`` callback receives, often.

    Sent at the start of every step, before each evaluated model's fit, and inside every AFLite run after each
    group of partition fits, each block of predictions and each round, so a progress bar moves within a step
    and a stop request is seen within one such piece of work.

    Attributes
    ----------
    step : int
        The step in progress (1-based; :class:`StudyProgress` counts the steps finished).
    n_steps : int
        Steps in total.
    stage : str
        ``"evaluated models"``, ``"aflite"`` or ``"ensemble"``.
    adversary : str or None
        Adversary of the run in progress.
    seed : int or None
        Its seed.
    share : float
        Rough share of this step done, in [0, 1]: models fitted out of all, or AFLite rounds done (with the
        share of the round in progress) out of the most the run can take (τ often ends it sooner).
    round : int or None
        AFLite round in progress.
    phase : str or None
        ``"fit"`` or ``"predict"`` inside a round (None between rounds).
    model : str or None
        The evaluated model about to be fitted.
    model_index : int or None
        Its position (0-based) among the ``n_models`` evaluated models.
    n_models : int
        Evaluated models in all.
    seconds : float
        Wall time since the study started.
    """

    step: int
    n_steps: int
    stage: str
    adversary: str | None
    seed: int | None
    share: float
    round: int | None = None
    phase: str | None = None
    model: str | None = None
    model_index: int | None = None
    n_models: int = 0
    seconds: float = 0.0

    @property
    def fraction_done(self) -> float:
        """Share of the whole study done, in [0, 1] (every step counts the same)."""
        return min(1.0, (self.step - 1 + min(max(self.share, 0.0), 1.0)) / max(self.n_steps, 1))


@dataclass(eq=False)
class AdversaryStudy:
    """Evaluation-set AFLite for several adversaries and seeds, and what it does to evaluated models.

    All tables are tidy pandas DataFrames (one observation per row); ``adversary`` is a representation name,
    ``ensemble(a+b+...)`` for the pooled adversary, or ``"none"`` for the unfiltered evaluation set.

    Attributes
    ----------
    categories : DataFrame
        One row per adversary, seed and evaluation row: ``adversary, seed, row`` (position in the evaluation
        set), ``id``, ``label``, ``category`` (``"removed in round 1"``, ``"removed later"``, ``"selected"``),
        ``removed_round`` (-1 if selected) and ``first_score`` (round-1 predictability).
    category_summary : DataFrame
        ``adversary, category, share_mean, share_std, n_rows_mean, n_seeds`` (Figure 1; mean over seeds).
    runs : DataFrame
        One row per AFLite run: rounds, stop reason, training rows kept, evaluation rows per category, seconds.
    accuracies : DataFrame
        ``adversary, seed, model, family, representation, accuracy, n_rows``: each evaluated model on the
        unfiltered set (adversary ``"none"``, seed missing) and on each run's selected rows.
    accuracy_matrix : DataFrame
        Mean accuracy over seeds: index the evaluated models, columns ``"none"`` then the adversaries
        (Figures 2 and 7).
    rankings : DataFrame
        ``adversary, model, accuracy, rank, rank_unfiltered, rank_change``: rank 1 is the most accurate model
        (ties share the best rank); ``rank_change`` > 0 means the model fell that many places (Figure 3).
    rank_correlation : DataFrame
        Per adversary: ``kendall`` (Kendall's coefficient between the models' mean accuracies on the selected
        rows and on the unfiltered set), ``kendall_p_value``, per-seed ``kendall_seed_mean/min/max`` and
        ``n_models``.
    same_representation : DataFrame
        Per adversary and evaluated model related to it: ``relation`` ``"shared backbone"`` (the adversary's
        backbone, trained separately on the training rows: the paper's Figure 4), ``"same representation"``
        (trained on the adversary's own Φ: an upper bound, the penalty is partly built in) or ``"ensemble
        member"``; accuracies, ranks unfiltered / filtered, ``rank_change`` (> 0: fell), ``accuracy_drop`` and
        ``others_mean_drop`` (the other models' mean drop).
    strength : DataFrame
        Per adversary: ``backbone`` and its accuracy on the full evaluation set with a Wilson 95 % interval
        (``accuracy, ci_low, ci_high, n_eval``: the strength measured independently of filtering, the paper's
        Table 1; NaN without a backbone), next to what round 1 did: ``round1_mean_p`` (mean predictability of the
        training rows), ``eval_round1_mean_p`` and ``round1_removed_share`` (means over seeds).
    agreement : AgreementReport or None
        Annotator agreement per category (Figure 5), when annotator labels were given.
    runs_detail : dict of (str, int) to AFLiteResult
        Every run, by (adversary, seed).
    ensemble_runs : dict of int to EnsembleResult
        The ensemble's runs by seed (with each member's scores).
    eval_correct : DataFrame
        Whether each evaluated model is right on each evaluation row (rows × models, bool).
    params : dict
        Resolved parameters, adversaries, evaluated models, seeds, sizes, chance level, timings.
    """

    categories: pd.DataFrame
    category_summary: pd.DataFrame
    runs: pd.DataFrame
    accuracies: pd.DataFrame
    accuracy_matrix: pd.DataFrame
    rankings: pd.DataFrame
    rank_correlation: pd.DataFrame
    same_representation: pd.DataFrame
    agreement: AgreementReport | None
    runs_detail: dict[tuple[str, int], AFLiteResult]
    ensemble_runs: dict[int, EnsembleResult]
    eval_correct: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    strength: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def accuracy_summary(self) -> pd.DataFrame:
        """Per evaluation set and model: mean accuracy, spread over seeds, rows and a Wilson 95 % interval."""
        return _accuracy_summary(self.accuracies, list(self.adversaries), list(self.params.get("evaluated_names", [])))

    @property
    def adversaries(self) -> tuple[str, ...]:
        """Adversary names in order (the ensemble last, when run)."""
        return tuple(self.params.get("adversary_names", ()))

    @property
    def category_table(self) -> pd.DataFrame:
        """Mean share of each category per adversary: adversary × category (Figure 1's bars)."""
        if self.category_summary.empty:
            return pd.DataFrame(columns=list(EVAL_CATEGORIES))
        wide = self.category_summary.pivot(index="adversary", columns="category", values="share_mean")
        return wide.reindex(index=[a for a in self.adversaries if a in wide.index], columns=list(EVAL_CATEGORIES))

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by file stem (what :meth:`save` writes)."""
        out = {
            "categories": self.categories,
            "category_summary": self.category_summary,
            "runs": self.runs,
            "accuracies": self.accuracies,
            "accuracy_matrix": self.accuracy_matrix.reset_index(),
            "rankings": self.rankings,
            "rank_correlation": self.rank_correlation,
            "same_representation": self.same_representation,
            "strength": self.strength,
            "accuracy_summary": self.accuracy_summary,
        }
        if self.agreement is not None:
            out["agreement"] = self.agreement.summary
            out["agreement_by_seed"] = self.agreement.by_seed
        return out

    def reading(self) -> list[str]:
        """Plain-language sentences built from the numbers (see :func:`study_reading`)."""
        return study_reading(self)

    def summary(self) -> dict[str, Any]:
        """Headline numbers per adversary, JSON-friendly (what the CLI prints and writes to summary.json)."""
        adv: dict[str, Any] = {}
        cat = self.category_table
        means = self.accuracy_matrix.mean(axis=0) if not self.accuracy_matrix.empty else pd.Series(dtype=float)
        corr = self.rank_correlation.set_index("adversary") if not self.rank_correlation.empty else None
        strength = self.strength.set_index("adversary") if len(self.strength) else None
        for a in self.adversaries:
            entry: dict[str, Any] = {}
            if strength is not None and a in strength.index:
                row = strength.loc[a]
                entry["strength"] = {
                    "backbone": row["backbone"],
                    "accuracy": _num(row["accuracy"]),
                    "ci": [_num(row["ci_low"]), _num(row["ci_high"])],
                    "round1_mean_p": _num(row["round1_mean_p"]),
                }
            if a in cat.index:
                entry["shares"] = {c: _num(cat.loc[a, c]) for c in EVAL_CATEGORIES}
            if a in means.index:
                entry["mean_accuracy"] = _num(means[a])
            if corr is not None and a in corr.index:
                entry["kendall"] = _num(corr.loc[a, "kendall"])
                entry["discordant_pairs"] = int(corr.loc[a, "discordant_pairs"])
                entry["n_pairs"] = int(corr.loc[a, "n_pairs"])
            adv[a] = entry
        out: dict[str, Any] = {
            "adversaries": adv,
            "mean_accuracy_unfiltered": _num(means.get(NONE, float("nan"))) if len(means) else None,
            "n_train": self.params.get("n_train"),
            "n_eval": self.params.get("n_eval"),
            "seeds": self.params.get("seeds"),
            "evaluated": self.params.get("evaluated_names"),
            "complete": self.params.get("complete"),
            "seconds": self.params.get("seconds"),
        }
        if self.agreement is not None:
            out["agreement"] = self.agreement.info
        return out

    def save(self, directory: str | Path) -> Path:
        """Write every table as Parquet and CSV, plus ``summary.json`` (parameters, headline, reading).

        Parameters
        ----------
        directory : str or Path
            Created if missing; files of the same names are overwritten.

        Returns
        -------
        Path
            The directory.
        """
        from .. import _durable

        out = Path(directory)
        _durable.make_dirs(out)
        for stem, table in self.tables().items():
            frame = table.copy()
            for col in frame.columns:
                if frame[col].dtype == object:  # ids / labels of mixed types: text, so Parquet has one type
                    kinds = {type(x.item() if isinstance(x, np.generic) else x) for x in frame[col] if x is not None}
                    if len(kinds) > 1 or not kinds <= {str, int, float, bool}:
                        frame[col] = frame[col].map(lambda x: x if x is None or isinstance(x, str) else str(x))
            buf = io.BytesIO()
            frame.to_parquet(buf, index=False)
            _durable.write_file(out / f"{stem}.parquet", buf.getvalue())  # each file whole or not at all
            _durable.write_file(out / f"{stem}.csv", frame.to_csv(index=False).encode("utf-8"))
        payload = {
            "format": "aflite-studio-eval-filter",
            "format_version": 1,
            "summary": self.summary(),
            "reading": self.reading(),
            "params": self.params,
            "files": sorted(f"{stem}.{ext}" for stem in self.tables() for ext in ("parquet", "csv")),
        }
        text = json.dumps(payload, indent=2, default=json_default, ensure_ascii=False) + "\n"
        _durable.write_file(out / "summary.json", text.encode("utf-8"))  # written last: the study is complete
        return out

    def __repr__(self) -> str:
        return (
            f"AdversaryStudy(adversaries={list(self.adversaries)}, seeds={self.params.get('seeds')}, "
            f"evaluated={self.params.get('evaluated_names')})"
        )


def _num(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if not math.isfinite(f) else round(f, 6)


def _check_names(value: Any, name: str, func: str, available: Sequence[str]) -> tuple[str, ...]:
    allowed = f"a non-empty sequence of distinct representation names among {list(available)}"
    if isinstance(value, str):
        value = (value,)
    try:
        values = tuple(value)
    except TypeError:
        raise v.param_error(name, func, allowed, value, TypeError) from None
    if not values or len(set(values)) != len(values) or not all(isinstance(x, str) and x in available for x in values):
        raise v.param_error(name, func, allowed, value)
    return values


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
    started = time.perf_counter()
    TX = _check_mapping(train_X, "train_X", func)
    reps = tuple(TX)
    adv = reps if adversaries is None else _check_names(adversaries, "adversaries", func, reps)
    models = _check_evaluated(evaluated, reps, func)
    seed_list = v.check_seeds(seeds, func)
    members: tuple[str, ...] = ()
    if ensemble is True:
        members = adv
    elif ensemble is not False and ensemble is not None:
        members = _check_names(ensemble, "ensemble", func, reps)
    if members and len(members) < 2:
        raise ValueError(
            f"The 'ensemble' parameter of {func} must name at least 2 adversaries to pool. Got {list(members)} instead."
        )
    if NONE in adv:
        raise ValueError(
            f"The 'adversaries' parameter of {func} must not name an adversary {NONE!r} (the name of the "
            "unfiltered evaluation set). Rename that representation."
        )
    bb = dict(backbones or {})
    names_given = {name for _, _, name in models}
    bad_bb = [(a, m) for a, m in bb.items() if a not in adv or m not in names_given]
    if bad_bb:
        raise ValueError(
            f"The 'backbones' parameter of {func} must map adversaries to evaluated models' names. Got "
            f"{bad_bb[0]!r}, which is not one (adversaries {list(adv)}, models {sorted(names_given)})."
        )
    used_reps = list(dict.fromkeys([*adv, *members, *(rep for _, rep, _ in models)]))
    EX = _check_mapping(eval_X, "eval_X", func, keys=used_reps, n_cols={k: TX[k].shape[1] for k in used_reps})
    # validate the AFLite parameters, labels and ids once, before any work
    resolved = _resolve(
        TX[adv[0]],
        train_y,
        func=func,
        target_size=target_size,
        n_partitions=n_partitions,
        train_size=train_size,
        slice_size=slice_size,
        tau=tau,
        strategy="slice",
        eval_X=EX[adv[0]],
        eval_y=eval_y,
        ids=ids,
        eval_ids=eval_ids,
    )
    resolve_model(model, func)
    labels = resolved["labels"]
    codes, eval_codes = labels.codes, resolved["eval_codes"]
    n_eval = len(eval_codes)
    if callback is not None and not callable(callback):
        raise v.param_error("callback", func, "a callable or None", callback, TypeError)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    eval_labels = np.empty(n_eval, dtype=object)
    eval_labels[:] = [labels.classes[c] for c in eval_codes]
    agreement_rows = None
    if annotator_labels is not None:
        agreement_rows = annotator_agreement(eval_labels, annotator_labels)
        _used_rows(n_eval, agreement_rows, annotator_source, annotator_sources, func)  # validate early
    elif annotator_source is not None:
        raise ValueError(f"The 'annotator_source' parameter of {func} needs 'annotator_labels' too.")
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    model_seed_draw = np.random.default_rng(int(rng.integers(0, 2**63 - 1)))

    ens_name = ensemble_name(members) if members else None
    names = [*adv, *([ens_name] if ens_name else [])]
    n_steps = 1 + len(adv) * len(seed_list) + (len(seed_list) if members else 0)
    step = 0
    stopped = False
    if on_step is not None and not callable(on_step):
        raise v.param_error("on_step", func, "a callable or None", on_step, TypeError)
    # the most rounds a run can take (each removes k rows until n are left); τ often ends it sooner
    max_rounds = max(1, math.ceil((len(codes) - resolved["n_target"]) / max(resolved["k"], 1)))

    def report(stage: str, adversary: str | None, seed: int | None) -> None:
        nonlocal step, stopped
        step += 1
        if callback is not None:
            prog = StudyProgress(
                step=step,
                n_steps=n_steps,
                stage=stage,
                adversary=adversary,
                seed=seed,
                seconds=time.perf_counter() - started,
            )
            if callback(prog) is False:
                stopped = True

    def inside(stage: str, adversary: str | None, seed: int | None, share: float, **where: Any) -> bool:
        """Tell ``on_step`` where the step in progress is; False (and the study stops) once it says stop."""
        nonlocal stopped
        if on_step is None or stopped:
            return not stopped
        info = StudyStep(
            step=step + 1,
            n_steps=n_steps,
            stage=stage,
            adversary=adversary,
            seed=seed,
            share=share,
            n_models=len(models),
            seconds=time.perf_counter() - started,
            **where,
        )
        if on_step(info) is False:
            stopped = True
        return not stopped

    def run_hooks(stage: str, adversary: str, seed: int) -> dict[str, Any]:
        """The engine's ``callback`` and ``on_step`` for one run, as :class:`StudyStep` s (empty without on_step)."""
        if on_step is None:
            return {}
        done = [0.0]  # share of the run, never going back

        def share(value: float) -> float:
            done[0] = max(done[0], min(value, 1.0))
            return done[0]

        def per_round(p: RoundProgress) -> bool:
            return inside(stage, adversary, seed, share(p.round / max_rounds), round=p.round)

        def in_round(p: StepProgress) -> bool:
            part = share((p.round - 1 + p.fraction_of_round) / max_rounds)
            return inside(stage, adversary, seed, part, round=p.round, phase=p.phase)

        return {"callback": per_round, "on_step": in_round}

    # evaluated models: trained once on the full training set, independently of the adversaries
    def before_fit(j: int, name: str) -> bool:
        if j >= len(models):
            return inside("evaluated models", None, None, 1.0)
        return inside("evaluated models", None, None, j / len(models), model=name or None, model_index=j)

    correct, fit_seconds, model_seeds = _fit_evaluated(
        models, TX, codes, EX, eval_codes, model_seed_draw, n_threads, before_fit if on_step is not None else None
    )
    not_fitted = [name for _, _, name in models[len(fit_seconds) :]]
    if not_fitted:  # stopped between two fits: keep the models fitted so far
        models = models[: len(fit_seconds)]
        correct, model_seeds = correct[:, : len(models)], model_seeds[: len(models)]
        kept_names = {name for _, _, name in models}
        bb = {a: m for a, m in bb.items() if m in kept_names}
    report("evaluated models", None, None)

    common = {
        "target_size": target_size,
        "n_partitions": n_partitions,
        "train_size": train_size,
        "slice_size": slice_size,
        "tau": tau,
        "model": model,
        "n_threads": n_threads,
        "ids": ids,
        "eval_ids": eval_ids,
    }
    detail: dict[tuple[str, int], AFLiteResult] = {}
    ens_runs: dict[int, EnsembleResult] = {}
    for a in adv:
        for s in seed_list:
            if stopped or not inside("aflite", a, s, 0.0):
                break
            res = aflite(
                TX[a], train_y, eval_X=EX[a], eval_y=eval_y, random_state=s, **common, **run_hooks("aflite", a, s)
            )
            if res.stop_reason == "stopped_by_callback":  # abandoned on request: not a finished run
                stopped = True
                break
            detail[(a, s)] = res
            report("aflite", a, s)
    if members:
        for s in seed_list:
            if stopped or not inside("ensemble", ens_name, s, 0.0):
                break
            ens = ensemble_aflite(
                {a: TX[a] for a in members},
                train_y,
                eval_X={a: EX[a] for a in members},
                eval_y=eval_y,
                random_state=s,
                **common,
                **run_hooks("ensemble", ens_name, s),
            )
            if ens.result.stop_reason == "stopped_by_callback":
                stopped = True
                break
            ens_runs[s] = ens
            detail[(ens_name, s)] = ens.result
            report("ensemble", ens_name, s)

    eval_id_values = resolved["eval_ids"] if resolved["eval_ids"] is not None else np.arange(n_eval)
    categories = _categories_frame(detail, names, seed_list, eval_id_values, eval_labels)
    category_summary = _category_summary(categories, names)
    runs = _runs_frame(detail, names, seed_list)
    model_names = [name for _, _, name in models]
    correct_frame = pd.DataFrame(correct, columns=model_names)
    correct_frame.index.name = "row"
    accuracies = _accuracies_frame(detail, names, seed_list, models, correct)
    matrix = _accuracy_matrix(accuracies, names, model_names)
    rankings, rank_corr = _rankings(matrix, accuracies, names, model_names)
    same = _same_representation(matrix, rankings, models, adv, members, ens_name, bb)
    strength = _strength_frame(correct_frame, runs, names, bb)
    agreement = None
    if agreement_rows is not None:
        agreement = category_agreement(
            categories,
            eval_labels,
            annotator_labels,
            annotator_source=annotator_source,
            annotator_sources=annotator_sources,
        )
    params = {
        "target_size": resolved["n_target"],
        "train_size": resolved["t"],
        "slice_size": resolved["k"],
        "tau": resolved["tau"],
        "n_partitions": resolved["m"],
        "target_size_given": target_size,
        "train_size_given": train_size,
        "model": resolve_model(model, func).spec(),
        "seeds": list(seed_list),
        "adversaries": list(adv),
        "ensemble_members": list(members),
        "adversary_names": names,
        "evaluated": [[fam if isinstance(fam, str) else type(fam).__name__, rep] for fam, rep, _ in models],
        "evaluated_names": model_names,
        "backbones": dict(bb),
        "evaluated_families": {
            name: CLASSIFIERS.get(fam, repr(fam)) if isinstance(fam, str) else repr(fam) for fam, _, name in models
        },
        "evaluated_seeds": dict(zip(model_names, model_seeds)),
        "evaluated_fit_seconds": dict(zip(model_names, [round(s, 3) for s in fit_seconds])),
        "representations": {r: int(TX[r].shape[1]) for r in used_reps},
        "classes": [_label_text(c) for c in labels.classes],
        "n_classes": labels.n_classes,
        "chance": 1.0 / labels.n_classes,
        "majority_share_eval": float(np.bincount(eval_codes, minlength=labels.n_classes).max() / max(n_eval, 1)),
        "n_train": len(codes),
        "n_eval": int(n_eval),
        "random_state": random_state if isinstance(random_state, (int, type(None))) else repr(random_state),
        "n_threads": n_threads,
        "complete": not stopped,
        "evaluated_not_fitted": not_fitted,
        "annotator_sources": None if annotator_sources is None else list(annotator_sources),
        "seconds": round(time.perf_counter() - started, 3),
        "versions": versions(),
    }
    return AdversaryStudy(
        categories=categories,
        category_summary=category_summary,
        runs=runs,
        accuracies=accuracies,
        accuracy_matrix=matrix,
        rankings=rankings,
        rank_correlation=rank_corr,
        same_representation=same,
        agreement=agreement,
        runs_detail=detail,
        ensemble_runs=ens_runs,
        eval_correct=correct_frame,
        params=params,
        strength=strength,
    )


def _strength_frame(correct_frame, runs, names, backbones) -> pd.DataFrame:
    """Each adversary's independent strength (its backbone on the full evaluation set) next to its round 1."""
    from ..measures.adversary_strength import wilson_interval

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
