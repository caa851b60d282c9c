"""Are the difficulty levels real? The two checks of Cosma et al. (EMNLP 2024), on held-out rows.

The paper's evidence that its levels mean something is not the clustering itself but what independently trained
models do with them:

* **accuracy per level** (its level-wise results): a model trained on *other* rows scores high on the easy level
  and low on the hard one (and a hypothesis-only model falls to chance on the hard level).
  :func:`~aflite_core.dynamics.heldout.level_accuracy` trains several model families on a training part and
  scores them per level on the characterised part;
* **training on a fraction** (its Tables 5 and 6): characterise the *training* rows, keep a fraction of them
  chosen by level, train on that fraction and test on held-out rows; the paper's level-based selection matches
  the full data better than Data Maps' ambiguous selection (Swayamdipta et al., 2020) and an AUM band (after
  Pleiss et al., 2020). :func:`~aflite_core.dynamics.fractions.fraction_experiment` does that for fractions
  10-50 % with the selections of :data:`~aflite_core.dynamics.fractions.SELECTIONS` and a random subset.

:func:`validate_levels` runs both on one dataset: a grouped split into a training part and a characterised part,
training dynamics recorded in-sample on each part with :func:`~aflite_core.dynamics.record_dynamics` (as the paper
trains on the set it characterises), GMM levels on each.

Who defined what (the attributions the page and the CLI repeat):

* GMM levels over the eight training-dynamics features - Cosma et al. (2024);
* the Data Maps *ambiguous* region, the most variable examples - Swayamdipta et al. (2020); the split of the
  remaining examples at their median confidence into easy / hard (:func:`~aflite_core.dynamics.data_maps_levels`)
  is this project's, not theirs;
* AUM, the area under the margin - Pleiss et al. (2020); its 33rd-66th percentile band as "ambiguous" - Cosma et
  al.'s baseline construction (Pleiss et al. propose no band).

References
----------
.. [1] A. Cosma, S. Ruseti, M. Dascalu and C. Caragea. How Hard is this Test Set? NLI Characterization by
   Exploiting Training Dynamics. EMNLP 2024 (level results, Tables 5 and 6).
.. [2] S. Swayamdipta et al. Dataset Cartography. EMNLP 2020.
.. [3] G. Pleiss et al. Identifying Mislabeled Data using the Area Under the Margin Ranking. NeurIPS 2020.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .._validation import check_features, check_labels, check_random_state, param_error
from .fractions import CONTROL_SELECTIONS, SELECTIONS, fraction_experiment
from .heldout import LEVEL_VALIDATION_MODELS, level_correctness, score_levels
from .level_controls import DYNAMICS_KIND, control_levels
from .levels import DifficultyLevels, difficulty_levels
from .trainer import TrainingInterrupted, TrainingStep

__all__ = ["VALIDATION_STAGES", "LevelValidation", "ValidationStep", "validate_levels"]


@dataclass(frozen=True, eq=False)
class LevelValidation:
    """The two checks of the levels and their controls (see :func:`validate_levels`).

    Every table is a mean over the seeds, each of which re-draws the split, both recordings, the mixtures, the
    models and the subsets; ``accuracy_std`` is the spread over those seeds (ddof 1).

    Attributes
    ----------
    level_accuracy : pandas.DataFrame
        Per model and level of the characterised rows (training-dynamics levels): ``model, input, level,
        accuracy, accuracy_std, n, ci_low, ci_high, n_seeds`` (Wilson 95 % on the mean accuracy and mean level
        size), plus ``level="all"``. ``input`` is ``"full"``, ``"partial"`` or ``"independent"`` (a
        representation the levels never saw).
    fractions : pandas.DataFrame
        Per fraction, selection and model: ``fraction, selection, model, accuracy`` (mean over seeds),
        ``accuracy_std``, ``n_train``, ``n_seeds``, ``source``; the full training part as ``fraction = 1.0``,
        ``selection = "all rows"``; the ``confidence_*`` selections are the one-shot confidence control.
    levels : DifficultyLevels
        GMM levels of the characterised rows (the first seed's).
    train_levels : DifficultyLevels or None
        GMM levels of the training rows (the first seed's).
    params : dict
    level_controls : pandas.DataFrame
        The training-dynamics levels beside their controls, scored by the same fitted models: ``levels``
        (:data:`~aflite_core.dynamics.level_controls.DYNAMICS_KIND` or a kind of
        :data:`~aflite_core.dynamics.level_controls.CONTROL_KINDS`), ``model, input, level, accuracy,
        accuracy_std, n, n_seeds``.
    level_runs, fraction_runs : pandas.DataFrame
        The same per seed (``seed`` column), for counts across seeds.
    """

    level_accuracy: pd.DataFrame
    fractions: pd.DataFrame
    levels: DifficultyLevels
    train_levels: DifficultyLevels | None = None
    params: dict = field(default_factory=dict)
    level_controls: pd.DataFrame = field(default_factory=pd.DataFrame)
    level_runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    fraction_runs: pd.DataFrame = field(default_factory=pd.DataFrame)

    def records(self) -> dict[str, list[dict[str, Any]]]:
        """JSON-friendly records of the tables (what ``aflite dynamics --validate --json`` prints)."""

        def rec(frame: pd.DataFrame) -> list[dict[str, Any]]:
            f = frame.astype(object).where(frame.notna(), None)
            return [
                {k: (x.item() if isinstance(x, np.generic) else x) for k, x in r.items()} for r in f.to_dict("records")
            ]

        return {
            "level_accuracy": rec(self.level_accuracy),
            "fractions": rec(self.fractions),
            "level_controls": rec(self.level_controls),
        }


#: the stages of :func:`validate_levels` and their rough shares of its time (measured on the digits; recording
#: weighs more on large text data, so the overall fraction is an estimate)
VALIDATION_STAGES: dict[str, float] = {
    "record held-out rows": 0.10,
    "accuracy per level": 0.25,
    "record training rows": 0.10,
    "training on fractions": 0.55,
}


@dataclass(frozen=True)
class ValidationStep:
    """How far :func:`validate_levels` is, reported to its ``on_step``.

    ``stage`` is a key of :data:`VALIDATION_STAGES`; ``done`` of ``total`` steps within it (mini-batches while
    recording, model fits otherwise); ``detail`` says what the step was; ``fraction`` is the estimated share of
    the whole validation done (the stages weighted by :data:`VALIDATION_STAGES`).
    """

    stage: str
    done: int
    total: int
    detail: str = ""
    repeat: int = 0
    n_repeats: int = 1

    @property
    def fraction(self) -> float:
        """Estimated share of the whole validation done, in [0, 1] (``repeat`` of ``n_repeats`` seeds done)."""
        before = 0.0
        within = None
        for name, weight in VALIDATION_STAGES.items():
            if name == self.stage:
                within = before + weight * (self.done / self.total if self.total else 1.0)
                break
            before += weight
        within = min(1.0, before if within is None else within)
        return min(1.0, (self.repeat + within) / max(self.n_repeats, 1))


def validate_levels(
    X: ArrayLike,
    y: ArrayLike,
    *,
    X_partial: ArrayLike | None = None,
    X_independent: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    eval_fraction: float = 0.5,
    epochs: int = 5,
    models: Sequence[str] = LEVEL_VALIDATION_MODELS,
    fractions: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5),
    selections: Sequence[str] = (*SELECTIONS, *CONTROL_SELECTIONS),
    fraction_models: Sequence[str] = ("logistic",),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    controls: bool = True,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
    callback: Callable[[int, int, str], Any] | None = None,
    on_step: Callable[[ValidationStep], bool | None] | None = None,
) -> LevelValidation:
    """Validate difficulty levels on one dataset: accuracy per level on held-out rows, and training on fractions.

    Once per seed: the rows are split (by ``groups`` when given, e.g. premises) into a training part and a
    characterised part of ``eval_fraction``. On each part the training dynamics are recorded in-sample
    (:func:`~aflite_core.dynamics.record_dynamics`: a softmax model, Adam, ``epochs`` epochs; the partial input
    too when given) and GMM levels computed (:func:`~aflite_core.dynamics.difficulty_levels`).

    1. :func:`level_accuracy`: model families trained on the training part, scored per level of the characterised
       part (and a logistic regression on the partial input, and on ``X_independent``); with ``controls`` the
       same predictions are scored on the control levels of :mod:`~aflite_core.dynamics.level_controls`
       (one-shot confidence in-sample and out-of-fold, random; the GMM levels' sizes);
    2. :func:`fraction_experiment`: fractions of the training part chosen by level, Data Maps, an AUM band, the
       one-shot confidence levels or at random, a logistic regression trained on each, scored on the
       characterised part.

    Every table is the mean over the seeds with its standard deviation.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Full-input features (e.g. premise + hypothesis embeddings): both the dynamics and the models use them.
    y : array-like of shape (n,)
        Labels.
    X_partial : array-like of shape (n, d_p), optional
        Partial input (e.g. the hypothesis alone): recorded too, so its dynamics enter the levels.
    X_independent : array-like of shape (n, d_i), optional
        A representation the levels never see, scored by a logistic regression per level: the validation that
        is not circular (the models on ``X`` share the levels' Φ). Leave ``X_partial`` out when it is the same
        representation.
    groups : array-like of shape (n,), optional
        Rows sharing a group stay on one side of the split.
    eval_fraction : float, default=0.5
        Share of the rows (groups) characterised and held out.
    epochs : int, default=5
        Epochs of the recorded dynamics (the paper's 5).
    models : sequence of str, default=("logistic", "knn", "mlp")
        Families of the level-accuracy check.
    fractions, selections, fraction_models
        Of the fraction experiment.
    seeds : sequence of int, default=(0, 1, 2, 3, 4)
        One repetition of everything per seed: split, recordings, mixtures, models, subsets.
    controls : bool, default=True
        Score the control levels too (``level_controls``).
    random_state : int, numpy Generator or None, default=0
        Combined with each seed.
    n_threads : int or None, default=1
    callback : callable, optional
        ``callback(step, n_steps, what)`` during the fraction experiment.
    on_step : callable, optional
        ``on_step(ValidationStep)`` after every mini-batch of the two recordings and every model fit of both
        checks, and ten times a second or more while a fit or a mixture runs (each such call then runs in a child
        process that a stop ends at once, :mod:`aflite_core._child_process`); returning ``False`` abandons the
        validation there.

    Returns
    -------
    LevelValidation

    Raises
    ------
    TrainingInterrupted
        When ``on_step`` returned ``False`` (nothing partial is returned).
    """
    func = "validate_levels"
    started = time.perf_counter()
    if on_step is not None and not callable(on_step):
        raise param_error("on_step", func, "a callable or None", on_step, TypeError)
    Xv = check_features(X, "X", func)
    n = Xv.shape[0]
    enc = check_labels(y, "y", func, n_rows=n, min_per_class=2)
    Xp = None if X_partial is None else check_features(X_partial, "X_partial", func, n_rows=n)
    Xi = None if X_independent is None else check_features(X_independent, "X_independent", func, n_rows=n)
    if not 0.0 < float(eval_fraction) < 1.0:
        raise param_error("eval_fraction", func, "a float in (0, 1)", eval_fraction)
    seed_list = [int(s) for s in seeds]
    if not seed_list:
        raise param_error("seeds", func, "a non-empty sequence of ints", seeds)
    base = check_random_state(random_state, func)
    labels = np.asarray(enc.classes, dtype=object)[enc.codes]
    level_parts, control_parts, fraction_parts = [], [], []
    first: tuple[DifficultyLevels, DifficultyLevels] | None = None
    counts_eval, counts_train, sizes = [], [], []
    for i, seed in enumerate(seed_list):
        one = _one_seed(
            Xv,
            labels,
            enc.codes,
            Xp,
            Xi,
            groups,
            float(eval_fraction),
            epochs,
            models,
            fractions,
            selections,
            fraction_models,
            seed,
            np.random.SeedSequence([base, seed]),
            controls,
            n_threads,
            callback,
            on_step,
            (i, len(seed_list)),
            func,
        )
        level_parts.append(one["levels_table"].assign(seed=seed))
        control_parts.append(one["controls_table"].assign(seed=seed))
        fraction_parts.append(one["fractions"].assign(seed=seed))
        counts_eval.append({k: int(v) for k, v in one["lv_ev"].counts().items()})
        counts_train.append({k: int(v) for k, v in one["lv_tr"].counts().items()})
        sizes.append((one["n_train"], one["n_eval"]))
        if first is None:
            first = (one["lv_ev"], one["lv_tr"])
    level_runs = pd.concat(level_parts, ignore_index=True)
    fraction_runs = pd.concat(fraction_parts, ignore_index=True)
    acc = _level_means(level_runs)
    control_table = pd.DataFrame()
    if controls:
        control_runs = pd.concat(control_parts, ignore_index=True)
        control_table = _mean_sd(control_runs, ["levels", "model", "input", "level"])
    frac = _fraction_means(fraction_runs)
    params = {
        "n_rows": n,
        "n_train": sizes[0][0],  # the first seed's split; every seed's in sizes_by_seed
        "n_eval": sizes[0][1],
        "sizes_by_seed": [{"n_train": a, "n_eval": b} for a, b in sizes],
        "grouped": groups is not None,
        "eval_fraction": float(eval_fraction),
        "epochs": int(epochs),
        "partial_input": Xp is not None,
        "independent_input": Xi is not None,
        "models": list(models),
        "fractions": [float(f) for f in fractions],
        "selections": list(selections),
        "fraction_models": list(fraction_models),
        "seeds": seed_list,
        "seed": base,
        "controls": bool(controls),
        "level_counts_eval": counts_eval[0],
        "level_counts_train": counts_train[0],
        "level_counts_eval_by_seed": counts_eval,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if first is None:  # unreachable: seed_list is not empty
        raise RuntimeError("validate_levels ran no seed.")
    return LevelValidation(
        acc,
        frac,
        first[0],
        first[1],
        params,
        level_controls=control_table,
        level_runs=level_runs,
        fraction_runs=fraction_runs,
    )


def _one_seed(
    Xv,
    labels,
    codes,
    Xp,
    Xi,
    groups,
    eval_fraction,
    epochs,
    models,
    fractions,
    selections,
    fraction_models,
    seed,
    seq,
    controls,
    n_threads,
    callback,
    on_step,
    repeat,
    func,
) -> dict[str, Any]:
    """One repetition of the validation: split, record, levels, both checks and the controls' levels."""
    from .trainer import record_dynamics

    recording, fitting, waiting = _recording(on_step, repeat), _fitting(on_step, repeat), _waiting(on_step, repeat)
    s_split, s_dyn_eval, s_dyn_train, s_gmm, s_models, s_controls = (
        int(s) for s in np.random.default_rng(seq).integers(0, 2**31 - 1, size=6)
    )
    tr, ev = _split_rows(codes, groups, eval_fraction, s_split, func)
    rec_ev = record_dynamics(
        Xv[ev],
        labels[ev],
        X_partial=None if Xp is None else Xp[ev],
        epochs=epochs,
        random_state=s_dyn_eval,
        n_threads=n_threads,
        on_step=recording("record held-out rows"),
    )
    stop = waiting("record held-out rows", "difficulty levels (Gaussian mixture)")
    lv_ev = difficulty_levels(rec_ev, random_state=s_gmm, n_threads=n_threads, stop=stop)
    runs = level_correctness(
        Xv[tr],
        labels[tr],
        Xv[ev],
        labels[ev],
        models=models,
        partial=None if Xp is None else (Xp[tr], Xp[ev]),
        independent=None if Xi is None else (Xi[tr], Xi[ev]),
        random_state=s_models,
        n_threads=n_threads,
        callback=fitting("accuracy per level"),
        func=func,
    )
    dyn_levels = np.asarray(lv_ev.levels.astype(str))
    levels_table = score_levels(runs, dyn_levels)
    parts = [levels_table.assign(levels=DYNAMICS_KIND)]
    if controls:
        counts = {k: int(v) for k, v in lv_ev.counts().items()}
        stop = waiting("accuracy per level", "control levels (logistic regressions)")
        for kind, lv in control_levels(
            Xv[ev], codes[ev], counts, seed=s_controls, n_threads=n_threads, stop=stop
        ).items():
            parts.append(score_levels(runs, lv).assign(levels=kind))
    rec_tr = record_dynamics(
        Xv[tr],
        labels[tr],
        X_partial=None if Xp is None else Xp[tr],
        epochs=epochs,
        random_state=s_dyn_train,
        n_threads=n_threads,
        on_step=recording("record training rows"),
    )
    stop = waiting("record training rows", "difficulty levels (Gaussian mixture)")
    lv_tr = difficulty_levels(rec_tr, random_state=s_gmm, n_threads=n_threads, stop=stop)
    frac = fraction_experiment(
        lv_tr,
        Xv[tr],
        labels[tr],
        Xv[ev],
        labels[ev],
        fractions=fractions,
        selections=selections,
        models=fraction_models,
        seeds=(seed,),
        n_threads=n_threads,
        callback=fitting("training on fractions", callback),
    )
    return {
        "levels_table": levels_table,
        "controls_table": pd.concat(parts, ignore_index=True),
        "fractions": frac,
        "lv_ev": lv_ev,
        "lv_tr": lv_tr,
        "n_train": len(tr),
        "n_eval": len(ev),
    }


def _mean_sd(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean accuracy over seeds, its sd (ddof 1; 0 with one seed), mean ``n`` and the number of seeds."""
    out = (
        runs.groupby(keys, sort=False)
        .agg(
            accuracy=("accuracy", "mean"),
            accuracy_std=("accuracy", lambda s: float(np.std(s, ddof=1)) if s.notna().sum() > 1 else 0.0),
            n=("n", "mean"),
            n_seeds=("seed", "nunique"),
        )
        .reset_index()
    )
    return out


def _level_means(level_runs: pd.DataFrame) -> pd.DataFrame:
    """``level_accuracy``: mean over seeds with its sd and a Wilson 95 % interval on the mean accuracy and size."""
    from ..measures.adversary_strength import wilson_interval

    out = _mean_sd(level_runs, ["model", "input", "level"])
    lo, hi = wilson_interval(out["accuracy"].fillna(0) * out["n"], out["n"])
    out["ci_low"], out["ci_high"] = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    cols = ["model", "input", "level", "accuracy", "accuracy_std", "n", "ci_low", "ci_high", "n_seeds"]
    return out[cols]


def _fraction_means(fraction_runs: pd.DataFrame) -> pd.DataFrame:
    """``fractions``: each cell's mean over the seeds that re-drew everything, and its sd."""
    out = (
        fraction_runs.groupby(["fraction", "selection", "model"], sort=False)
        .agg(
            accuracy=("accuracy", "mean"),
            accuracy_std=("accuracy", lambda s: float(np.std(s, ddof=1)) if len(s) > 1 else 0.0),
            n_train=("n_train", "mean"),
            n_seeds=("seed", "nunique"),
            source=("source", "first"),
        )
        .reset_index()
    )
    return out[["fraction", "selection", "model", "accuracy", "accuracy_std", "n_train", "n_seeds", "source"]]


def _recording(on_step: Callable[[ValidationStep], bool | None] | None, repeat: tuple[int, int] = (0, 1)) -> Callable:
    """``recording(stage)``: the ``on_step`` of a recording (``record_dynamics``) reported as ``stage``."""

    def recording(stage: str) -> Callable[[TrainingStep], bool | None] | None:
        if on_step is None:
            return None
        return lambda s: on_step(
            ValidationStep(stage, s.done, s.total, f"{s.model}-input model, epoch {s.epoch} of {s.epochs}", *repeat)
        )

    return recording


def _fitting(on_step: Callable[[ValidationStep], bool | None] | None, repeat: tuple[int, int] = (0, 1)) -> Callable:
    """``fitting(stage, also)``: the ``callback`` of a check reported as ``stage`` (and passed on to ``also``)."""

    def fitting(stage: str, also: Callable[[int, int, str], Any] | None = None) -> Callable | None:
        if on_step is None:
            return also

        def report(done: int, total: int, what: str) -> bool | None:
            if also is not None:
                also(done, total, what)
            return on_step(ValidationStep(stage, done, total, what, *repeat))

        return report

    return fitting


def _waiting(on_step: Callable[[ValidationStep], bool | None] | None, repeat: tuple[int, int] = (0, 1)) -> Callable:
    """``waiting(stage, detail)``: the ``stop()`` of a call run in a child process (a mixture, the controls' fits).

    Asked while the call runs, it reports the end of ``stage``; None without ``on_step`` (the call runs here).
    """

    def waiting(stage: str, detail: str) -> Callable[[], bool] | None:
        if on_step is None:
            return None

        def stop() -> bool:
            if on_step(ValidationStep(stage, 1, 1, detail, *repeat)) is False:
                raise TrainingInterrupted  # as a stop anywhere else in the validation
            return False

        return stop

    return waiting


def _split_rows(
    codes: NDArray, groups: ArrayLike | None, eval_fraction: float, seed: int, func: str
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Sorted training and characterised rows: grouped when ``groups`` is given, else stratified by class."""
    n = len(codes)
    idx = np.arange(n)
    if groups is not None:
        from sklearn.model_selection import GroupShuffleSplit

        g = np.asarray(groups)
        if g.shape != (n,):
            raise param_error("groups", func, f"one group per row ({n})", g.shape)
        tr, ev = next(GroupShuffleSplit(1, test_size=eval_fraction, random_state=seed).split(idx, groups=g))
    else:
        from sklearn.model_selection import train_test_split

        tr, ev = train_test_split(idx, test_size=eval_fraction, stratify=codes, random_state=seed)
    return np.sort(tr), np.sort(ev)
