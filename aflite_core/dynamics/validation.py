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
from .fractions import SELECTIONS, fraction_experiment
from .heldout import LEVEL_VALIDATION_MODELS, level_accuracy
from .levels import DifficultyLevels, difficulty_levels
from .trainer import TrainingStep

__all__ = ["VALIDATION_STAGES", "LevelValidation", "ValidationStep", "validate_levels"]


@dataclass(frozen=True, eq=False)
class LevelValidation:
    """The two checks of the levels (see :func:`validate_levels`).

    Attributes
    ----------
    level_accuracy : pandas.DataFrame
        Per model and level of the characterised rows: ``model, input, level, accuracy, n, ci_low, ci_high``
        (Wilson 95 %), plus ``level="all"``.
    fractions : pandas.DataFrame
        Per fraction, selection and model: ``fraction, selection, model, accuracy`` (mean over seeds),
        ``accuracy_std``, ``n_train``, ``n_seeds``, ``source``; the full training part as ``fraction = 1.0``,
        ``selection = "all rows"``.
    levels : DifficultyLevels
        GMM levels of the characterised rows.
    train_levels : DifficultyLevels or None
        GMM levels of the training rows (for the fraction experiment).
    params : dict
    """

    level_accuracy: pd.DataFrame
    fractions: pd.DataFrame
    levels: DifficultyLevels
    train_levels: DifficultyLevels | None = None
    params: dict = field(default_factory=dict)

    def records(self) -> dict[str, list[dict[str, Any]]]:
        """JSON-friendly records of both tables (what ``aflite dynamics --validate --json`` prints)."""

        def rec(frame: pd.DataFrame) -> list[dict[str, Any]]:
            f = frame.astype(object).where(frame.notna(), None)
            return [
                {k: (x.item() if isinstance(x, np.generic) else x) for k, x in r.items()} for r in f.to_dict("records")
            ]

        return {"level_accuracy": rec(self.level_accuracy), "fractions": rec(self.fractions)}


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

    @property
    def fraction(self) -> float:
        """Estimated share of the whole validation done, in [0, 1]."""
        before = 0.0
        for name, weight in VALIDATION_STAGES.items():
            if name == self.stage:
                return min(1.0, before + weight * (self.done / self.total if self.total else 1.0))
            before += weight
        return min(1.0, before)


def validate_levels(
    X: ArrayLike,
    y: ArrayLike,
    *,
    X_partial: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    eval_fraction: float = 0.5,
    epochs: int = 5,
    models: Sequence[str] = LEVEL_VALIDATION_MODELS,
    fractions: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5),
    selections: Sequence[str] = tuple(SELECTIONS),
    fraction_models: Sequence[str] = ("logistic",),
    seeds: Sequence[int] = (0, 1, 2),
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
    callback: Callable[[int, int, str], Any] | None = None,
    on_step: Callable[[ValidationStep], bool | None] | None = None,
) -> LevelValidation:
    """Validate difficulty levels on one dataset: accuracy per level on held-out rows, and training on fractions.

    The rows are split (by ``groups`` when given, e.g. premises) into a training part and a characterised part
    of ``eval_fraction``. On each part the training dynamics are recorded in-sample
    (:func:`~aflite_core.dynamics.record_dynamics`: a softmax model, Adam, ``epochs`` epochs; the partial input
    too when given) and GMM levels computed (:func:`~aflite_core.dynamics.difficulty_levels`).

    1. :func:`level_accuracy`: model families trained on the training part, scored per level of the characterised
       part (and a logistic regression on the partial input);
    2. :func:`fraction_experiment`: fractions of the training part chosen by level, Data Maps, an AUM band or at
       random, a logistic regression trained on each, scored on the characterised part.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Full-input features (e.g. premise + hypothesis embeddings): both the dynamics and the models use them.
    y : array-like of shape (n,)
        Labels.
    X_partial : array-like of shape (n, d_p), optional
        Partial input (e.g. the hypothesis alone).
    groups : array-like of shape (n,), optional
        Rows sharing a group stay on one side of the split.
    eval_fraction : float, default=0.5
        Share of the rows (groups) characterised and held out.
    epochs : int, default=5
        Epochs of the recorded dynamics (the paper's 5).
    models : sequence of str, default=("logistic", "knn", "mlp")
        Families of the level-accuracy check.
    fractions, selections, fraction_models, seeds
        Of the fraction experiment.
    random_state : int, numpy Generator or None, default=0
        The split, the dynamics, the mixtures and the level-accuracy models.
    n_threads : int or None, default=1
    callback : callable, optional
        ``callback(step, n_steps, what)`` during the fraction experiment.
    on_step : callable, optional
        ``on_step(ValidationStep)`` after every mini-batch of the two recordings and every model fit of both
        checks; returning ``False`` abandons the validation there.

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

    recording, fitting = _recording(on_step), _fitting(on_step)
    Xv = check_features(X, "X", func)
    n = Xv.shape[0]
    enc = check_labels(y, "y", func, n_rows=n, min_per_class=2)
    Xp = None if X_partial is None else check_features(X_partial, "X_partial", func, n_rows=n)
    if not 0.0 < float(eval_fraction) < 1.0:
        raise param_error("eval_fraction", func, "a float in (0, 1)", eval_fraction)
    seed = check_random_state(random_state, func)
    s_split, s_dyn_eval, s_dyn_train, s_gmm, s_models = (
        int(s) for s in np.random.default_rng(seed).integers(0, 2**31 - 1, size=5)
    )
    tr, ev = _split_rows(enc.codes, groups, float(eval_fraction), s_split, func)
    from .trainer import record_dynamics

    labels = np.asarray(enc.classes, dtype=object)[enc.codes]
    rec_ev = record_dynamics(
        Xv[ev],
        labels[ev],
        X_partial=None if Xp is None else Xp[ev],
        epochs=epochs,
        random_state=s_dyn_eval,
        n_threads=n_threads,
        on_step=recording("record held-out rows"),
    )
    lv_ev = difficulty_levels(rec_ev, random_state=s_gmm, n_threads=n_threads)
    acc = level_accuracy(
        lv_ev,
        Xv[tr],
        labels[tr],
        Xv[ev],
        labels[ev],
        models=models,
        partial=None if Xp is None else (Xp[tr], Xp[ev]),
        random_state=s_models,
        n_threads=n_threads,
        callback=fitting("accuracy per level"),
    )
    rec_tr = record_dynamics(
        Xv[tr],
        labels[tr],
        X_partial=None if Xp is None else Xp[tr],
        epochs=epochs,
        random_state=s_dyn_train,
        n_threads=n_threads,
        on_step=recording("record training rows"),
    )
    lv_tr = difficulty_levels(rec_tr, random_state=s_gmm, n_threads=n_threads)
    frac = fraction_experiment(
        lv_tr,
        Xv[tr],
        labels[tr],
        Xv[ev],
        labels[ev],
        fractions=fractions,
        selections=selections,
        models=fraction_models,
        seeds=seeds,
        n_threads=n_threads,
        callback=fitting("training on fractions", callback),
    )
    params = {
        "n_rows": n,
        "n_train": len(tr),
        "n_eval": len(ev),
        "grouped": groups is not None,
        "eval_fraction": float(eval_fraction),
        "epochs": int(epochs),
        "partial_input": Xp is not None,
        "models": list(models),
        "fractions": [float(f) for f in fractions],
        "selections": list(selections),
        "fraction_models": list(fraction_models),
        "seeds": list(seeds),
        "seed": seed,
        "level_counts_eval": {k: int(v) for k, v in lv_ev.counts().items()},
        "level_counts_train": {k: int(v) for k, v in lv_tr.counts().items()},
        "seconds": round(time.perf_counter() - started, 3),
    }
    return LevelValidation(acc, frac, lv_ev, lv_tr, params)


def _recording(on_step: Callable[[ValidationStep], bool | None] | None) -> Callable:
    """``recording(stage)``: the ``on_step`` of a recording (``record_dynamics``) reported as ``stage``."""

    def recording(stage: str) -> Callable[[TrainingStep], bool | None] | None:
        if on_step is None:
            return None
        return lambda s: on_step(
            ValidationStep(stage, s.done, s.total, f"{s.model}-input model, epoch {s.epoch} of {s.epochs}")
        )

    return recording


def _fitting(on_step: Callable[[ValidationStep], bool | None] | None) -> Callable:
    """``fitting(stage, also)``: the ``callback`` of a check reported as ``stage`` (and passed on to ``also``)."""

    def fitting(stage: str, also: Callable[[int, int, str], Any] | None = None) -> Callable | None:
        if on_step is None:
            return also

        def report(done: int, total: int, what: str) -> bool | None:
            if also is not None:
                also(done, total, what)
            return on_step(ValidationStep(stage, done, total, what))

        return report

    return fitting


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
