"""Are the difficulty levels real? The two checks of Cosma et al. (EMNLP 2024), on held-out rows.

The paper's evidence that its levels mean something is not the clustering itself but what independently trained
models do with them:

* **accuracy per level** (its level-wise results): a model trained on *other* rows scores high on the easy level
  and low on the hard one (and a hypothesis-only model falls to chance on the hard level). :func:`level_accuracy`
  trains several model families on a training part and scores them per level on the characterised part;
* **training on a fraction** (its Tables 5 and 6): characterise the *training* rows, keep a fraction of them
  chosen by level, train on that fraction and test on held-out rows; the paper's level-based selection matches
  the full data better than Data Maps' ambiguous selection (Swayamdipta et al., 2020) and an AUM band (after
  Pleiss et al., 2020). :func:`fraction_experiment` does that for fractions 10-50 % with the selections of
  :data:`SELECTIONS` and a random subset.

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
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .._utils import blas_threads
from .._validation import check_features, check_labels, check_random_state, param_error
from .levels import LEVELS, DifficultyLevels, difficulty_levels
from .trainer import TrainingInterrupted, TrainingStep

__all__ = [
    "LEVEL_VALIDATION_MODELS",
    "SELECTIONS",
    "SELECTION_SOURCES",
    "VALIDATION_STAGES",
    "LevelValidation",
    "ValidationStep",
    "fraction_experiment",
    "level_accuracy",
    "select_fraction",
    "validate_levels",
]

#: model families trained independently of the dynamics to score each level (names of ``CLASSIFIERS``)
LEVEL_VALIDATION_MODELS: tuple[str, ...] = ("logistic", "knn", "mlp")

#: how :func:`select_fraction` picks a fraction of the training rows
SELECTIONS: dict[str, str] = {
    "gmm_ambiguous": "GMM levels: the ambiguous level first, then hard, then easy (random order within a level)",
    "gmm_easy": "GMM levels: the easy level first, then ambiguous, then hard (random order within a level)",
    "gmm_hard": "GMM levels: the hard level first, then ambiguous, then easy (random order within a level)",
    "data_maps": "Data Maps' ambiguous region: the most variable rows first",
    "aum_band": "AUM band: the rows whose AUM is closest to the median first (the 33-66 % band, widened or narrowed)",
    "random": "a random subset (stratified by class)",
}

#: who defined each selection's criterion
SELECTION_SOURCES: dict[str, str] = {
    "gmm_ambiguous": "Cosma et al. (2024)",
    "gmm_easy": "Cosma et al. (2024)",
    "gmm_hard": "Cosma et al. (2024)",
    "data_maps": "Swayamdipta et al. (2020)",
    "aum_band": "AUM: Pleiss et al. (2020); band: Cosma et al. (2024)",
    "random": "baseline",
}


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


#: predicted rows × training rows × features per block when a caller checks for a stop between blocks (about
#: 0.5 s of a kNN's distances; predictions are row by row, so the blocks give exactly the one-call result)
_PREDICT_BLOCK_WORK = 2 * 10**9


def _fit_predict(
    family: str, Xtr: NDArray, ytr: NDArray, Xte: NDArray, seed: int, between: Callable[[], None] | None = None
) -> NDArray:
    from sklearn.exceptions import ConvergenceWarning

    from ..engine.registry import make_classifier

    est = make_classifier(family, random_state=seed, n_train=len(ytr))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xtr, ytr)
    block = max(64, _PREDICT_BLOCK_WORK // max(1, Xtr.shape[0] * Xtr.shape[1]))
    if between is None or len(Xte) <= block:
        return np.asarray(est.predict(Xte))
    parts = []
    for start in range(0, len(Xte), block):
        between()
        parts.append(np.asarray(est.predict(Xte[start : start + block])))
    return np.concatenate(parts)


def level_accuracy(
    levels: DifficultyLevels | ArrayLike,
    X_train: ArrayLike,
    y_train: ArrayLike,
    X_eval: ArrayLike,
    y_eval: ArrayLike,
    *,
    models: Sequence[str] = LEVEL_VALIDATION_MODELS,
    partial: tuple[ArrayLike, ArrayLike] | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
    callback: Callable[[int, int, str], bool | None] | None = None,
) -> pd.DataFrame:
    """Accuracy per difficulty level of models trained on other rows (the paper's level-wise evaluation).

    Every model family is trained on ``(X_train, y_train)`` - rows whose dynamics played no part in the levels -
    and scored on the characterised rows ``X_eval``, level by level.

    Parameters
    ----------
    levels : DifficultyLevels or array-like of level names
        Level of every evaluation row (``"easy"``, ``"ambiguous"``, ``"hard"``).
    X_train, y_train : array-like
        Training rows of the independent models.
    X_eval, y_eval : array-like
        The characterised rows.
    models : sequence of str, default=("logistic", "knn", "mlp")
        Families of :data:`aflite_core.engine.registry.CLASSIFIERS`.
    partial : (X_train_partial, X_eval_partial), optional
        A partial input (e.g. the hypothesis alone): a logistic regression on it is scored too (``input =
        "partial"``); the paper finds it near chance on the hard level.
    random_state : int, numpy Generator or None, default=0
        Seeds of the models that draw random numbers.
    n_threads : int or None, default=1
    callback : callable, optional
        ``callback(fits_done, n_fits, what)`` after every model fit and between blocks of its predictions;
        returning ``False`` stops with :class:`~aflite_core.dynamics.TrainingInterrupted`.

    Returns
    -------
    pandas.DataFrame
        ``model, input, level, accuracy, n, ci_low, ci_high``; one row per model and level plus ``"all"``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)); y = (X[:, 0] > 0).astype(int)
    >>> lv = np.where(np.abs(X[200:, 0]) > 1, "easy", np.where(np.abs(X[200:, 0]) > 0.2, "ambiguous", "hard"))
    >>> acc = level_accuracy(lv, X[:200], y[:200], X[200:], y[200:], models=("logistic",))
    >>> bool(acc.set_index("level")["accuracy"]["easy"] >= acc.set_index("level")["accuracy"]["hard"])
    True
    """
    from ..measures.adversary_strength import wilson_interval

    func = "level_accuracy"
    Xtr = check_features(X_train, "X_train", func)
    Xev = check_features(X_eval, "X_eval", func, n_cols=Xtr.shape[1])
    enc = check_labels(y_train, "y_train", func, n_rows=Xtr.shape[0], min_per_class=1)
    yev = enc.encode(y_eval, "y_eval", func)
    if len(yev) != Xev.shape[0]:
        raise param_error("y_eval", func, f"one label per evaluation row ({Xev.shape[0]})", len(yev))
    lv = np.asarray(levels.levels if isinstance(levels, DifficultyLevels) else levels).astype(str)
    if lv.shape != (Xev.shape[0],):
        raise param_error("levels", func, f"one level per evaluation row ({Xev.shape[0]})", lv.shape)
    rng = np.random.default_rng(check_random_state(random_state, func))
    runs: list[tuple[str, str, NDArray]] = []
    n_fits = len(models) + (partial is not None)

    def fitted(fam: str) -> None:
        if callback is not None and callback(len(runs), n_fits, fam) is False:
            raise TrainingInterrupted

    def predicting(fam: str) -> Callable[[], None] | None:  # a stop is honoured between prediction blocks too
        return None if callback is None else (lambda: fitted(f"{fam}: predicting"))

    with blas_threads(n_threads):
        for fam in models:
            pred = _fit_predict(fam, Xtr, enc.codes, Xev, int(rng.integers(0, 2**31 - 1)), predicting(fam))
            runs.append((fam, "full", pred == yev))
            fitted(fam)
        if partial is not None:
            Ptr = check_features(partial[0], "partial", func, n_rows=Xtr.shape[0])
            Pev = check_features(partial[1], "partial", func, n_rows=Xev.shape[0], n_cols=Ptr.shape[1])
            seed = int(rng.integers(0, 2**31 - 1))
            pred = _fit_predict("logistic", Ptr, enc.codes, Pev, seed, predicting("logistic"))
            runs.append(("logistic", "partial", pred == yev))
            fitted("logistic on the partial input")
    rows = []
    for fam, what, correct in runs:
        for level in (*LEVELS, "all"):
            sel = np.ones(len(lv), bool) if level == "all" else lv == level
            n = int(sel.sum())
            hits = int(correct[sel].sum())
            lo, hi = wilson_interval(hits, n)
            rows.append(
                {
                    "model": fam,
                    "input": what,
                    "level": level,
                    "accuracy": hits / n if n else float("nan"),
                    "n": n,
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                }
            )
    return pd.DataFrame(rows, columns=["model", "input", "level", "accuracy", "n", "ci_low", "ci_high"])


def select_fraction(
    selection: str,
    fraction: float,
    *,
    levels: DifficultyLevels,
    y: ArrayLike,
    random_state: int | np.random.Generator | None = None,
) -> NDArray[np.bool_]:
    """The rows a selection keeps: ``round(fraction · n)`` of them, chosen as :data:`SELECTIONS` says.

    Parameters
    ----------
    selection : str
        A key of :data:`SELECTIONS`.
    fraction : float
        Share of the rows to keep, in (0, 1].
    levels : DifficultyLevels
        GMM levels of the rows, with their measures (``variability``, ``aum`` are read from ``levels.measures``).
    y : array-like
        Labels (the random selection is stratified by them).
    random_state : int, numpy Generator or None
        Order within a level (GMM selections), ties, and the random subset.

    Returns
    -------
    ndarray of bool
    """
    func = "select_fraction"
    if selection not in SELECTIONS:
        raise param_error("selection", func, f"one of {list(SELECTIONS)}", selection)
    if not 0.0 < float(fraction) <= 1.0:
        raise param_error("fraction", func, "a float in (0, 1]", fraction)
    n = len(levels.levels)
    k = max(1, round(float(fraction) * n))
    rng = np.random.default_rng(check_random_state(random_state, func))
    tie = rng.random(n)
    out = np.zeros(n, dtype=bool)
    if selection == "random":
        from ..measures.baselines import random_subset

        return random_subset(n, k, y=y, random_state=rng)
    m = levels.measures
    if selection.startswith("gmm_"):
        first = selection[4:]
        order_of = {
            "ambiguous": ("ambiguous", "hard", "easy"),
            "easy": ("easy", "ambiguous", "hard"),
            "hard": ("hard", "ambiguous", "easy"),
        }[first]
        rank = levels.levels.astype(str).map({lv: i for i, lv in enumerate(order_of)}).to_numpy()
        order = np.lexsort((tie, rank))
    elif selection == "data_maps":
        order = np.lexsort((tie, -m["variability"].to_numpy()))
    else:  # aum_band: closest to the median AUM first
        aum = m["aum"].to_numpy()
        order = np.lexsort((tie, np.abs(aum - np.median(aum))))
    out[order[:k]] = True
    return out


def fraction_experiment(
    train_levels: DifficultyLevels,
    X_train: ArrayLike,
    y_train: ArrayLike,
    X_test: ArrayLike,
    y_test: ArrayLike,
    *,
    fractions: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5),
    selections: Sequence[str] = tuple(SELECTIONS),
    models: Sequence[str] = ("logistic",),
    seeds: Sequence[int] = (0, 1, 2),
    n_threads: int | None = 1,
    callback: Callable[[int, int, str], bool | None] | None = None,
) -> pd.DataFrame:
    """Train on a fraction of the characterised training rows, chosen by a selection; test on held-out rows.

    The paper's Tables 5 and 6 on our data: for every fraction, selection (:data:`SELECTIONS`) and model family,
    the model is trained on the selected rows of ``X_train`` and scored on ``X_test``; every seed redraws the order
    within a level, the ties and the random subset (and seeds the model). The full training part is the reference.
    ``callback(step, n_steps, what)``, if given, is called after every step (the reference or one fraction and
    selection of a seed); returning ``False`` stops with :class:`~aflite_core.dynamics.TrainingInterrupted`.

    Returns
    -------
    pandas.DataFrame
        ``fraction, selection, model, accuracy, accuracy_std, n_train, n_seeds, source``.
    """
    func = "fraction_experiment"
    Xtr = check_features(X_train, "X_train", func)
    Xte = check_features(X_test, "X_test", func, n_cols=Xtr.shape[1])
    enc = check_labels(y_train, "y_train", func, n_rows=Xtr.shape[0], min_per_class=1)
    yte = enc.encode(y_test, "y_test", func)
    if len(train_levels.levels) != Xtr.shape[0]:
        raise param_error("train_levels", func, f"levels of the {Xtr.shape[0]} training rows", len(train_levels.levels))
    bad = [s for s in selections if s not in SELECTIONS]
    if bad:
        raise param_error("selections", func, f"names among {list(SELECTIONS)}", list(selections))
    rows = []
    total = len(seeds) * (len(fractions) * len(selections) + 1)
    step = 0
    with blas_threads(n_threads):
        for seed in seeds:
            rng = np.random.default_rng(seed)
            for fam in models:
                pred = _fit_predict(fam, Xtr, enc.codes, Xte, int(rng.integers(0, 2**31 - 1)))
                rows.append(("all rows", 1.0, fam, float(np.mean(pred == yte)), Xtr.shape[0], seed))
            step += 1
            if callback is not None and callback(step, total, f"all rows, seed {seed}") is False:
                raise TrainingInterrupted
            for frac in fractions:
                for sel in selections:
                    mask = select_fraction(sel, frac, levels=train_levels, y=enc.codes, random_state=rng)
                    for fam in models:
                        pred = _fit_predict(fam, Xtr[mask], enc.codes[mask], Xte, int(rng.integers(0, 2**31 - 1)))
                        rows.append((sel, float(frac), fam, float(np.mean(pred == yte)), int(mask.sum()), seed))
                    step += 1
                    if callback is not None and callback(step, total, f"{sel} at {frac:.0%}, seed {seed}") is False:
                        raise TrainingInterrupted
    runs = pd.DataFrame(rows, columns=["selection", "fraction", "model", "accuracy", "n_train", "seed"])
    out = (
        runs.groupby(["fraction", "selection", "model"], sort=False)
        .agg(
            accuracy=("accuracy", "mean"),
            accuracy_std=("accuracy", lambda s: float(np.std(s, ddof=1)) if len(s) > 1 else 0.0),
            n_train=("n_train", "mean"),
            n_seeds=("seed", "nunique"),
        )
        .reset_index()
    )
    out["source"] = out["selection"].map(SELECTION_SOURCES).fillna("reference")
    return out[["fraction", "selection", "model", "accuracy", "accuracy_std", "n_train", "n_seeds", "source"]]


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

    def recording(stage: str) -> Callable[[TrainingStep], bool | None] | None:
        if on_step is None:
            return None
        return lambda s: on_step(
            ValidationStep(stage, s.done, s.total, f"{s.model}-input model, epoch {s.epoch} of {s.epochs}")
        )

    def fitting(stage: str, also: Callable[[int, int, str], Any] | None = None) -> Callable | None:
        if on_step is None:
            return also

        def report(done: int, total: int, what: str) -> bool | None:
            if also is not None:
                also(done, total, what)
            return on_step(ValidationStep(stage, done, total, what))

        return report

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
    idx = np.arange(n)
    if groups is not None:
        from sklearn.model_selection import GroupShuffleSplit

        g = np.asarray(groups)
        if g.shape != (n,):
            raise param_error("groups", func, f"one group per row ({n})", g.shape)
        tr, ev = next(GroupShuffleSplit(1, test_size=float(eval_fraction), random_state=s_split).split(idx, groups=g))
    else:
        from sklearn.model_selection import train_test_split

        tr, ev = train_test_split(idx, test_size=float(eval_fraction), stratify=enc.codes, random_state=s_split)
    tr, ev = np.sort(tr), np.sort(ev)
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
