"""The first check of the difficulty levels: accuracy per level of models trained on *other* rows.

Cosma et al. (EMNLP 2024) show that their levels mean something through what independently trained models do
with them: a model trained on rows whose dynamics played no part in the levels scores high on the easy level and
low on the hard one, and a hypothesis-only model falls to chance on the hard level. :func:`level_accuracy`
trains several model families on a training part and scores them per level on the characterised part, with
Wilson 95 % intervals. :func:`fit_predict` is the one fit-and-predict both checks use
(:mod:`aflite_core.dynamics.fractions` is the other; :mod:`aflite_core.dynamics.validation` runs both).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .._child_process import run_stoppable
from .._utils import blas_threads
from .._validation import check_features, check_labels, check_random_state, param_error
from .levels import LEVELS, DifficultyLevels
from .trainer import TrainingInterrupted

__all__ = ["LEVEL_VALIDATION_MODELS", "fit_predict", "level_accuracy", "level_correctness", "score_levels"]

#: model families trained independently of the dynamics to score each level (names of ``CLASSIFIERS``)
LEVEL_VALIDATION_MODELS: tuple[str, ...] = ("logistic", "knn", "mlp")


#: predicted rows × training rows × features per block when a caller checks for a stop between blocks (about
#: 0.5 s of a kNN's distances; predictions are row by row, so the blocks give exactly the one-call result)
_PREDICT_BLOCK_WORK = 2 * 10**9


#: families whose fit only keeps the rows (nothing to interrupt): fitted here even when a stop is asked for
_FITS_AT_ONCE = frozenset({"knn"})


def _fitted(est: Any, X: NDArray, y: NDArray) -> Any:
    """``est`` fitted on ``(X, y)``, convergence warnings silenced (module level: it runs in a child process too)."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def _asks(between: Callable[[], None]) -> Callable[[], bool]:
    """A ``stop()`` for :func:`~aflite_core._child_process.run_stoppable` from a check that raises to stop."""

    def stop() -> bool:
        between()
        return False

    return stop


def fit_predict(
    family: str, Xtr: NDArray, ytr: NDArray, Xte: NDArray, seed: int, between: Callable[[], None] | None = None
) -> NDArray:
    """Train a fresh, seeded ``family`` classifier on ``(Xtr, ytr)`` and predict ``Xte``.

    ``between()`` is a caller's stop check (it raises to stop): called between blocks of predictions (the blocks
    give exactly the one-call result), and while the fit runs - in a child process
    (:func:`aflite_core._child_process.run_stoppable`, the same seeded fit, bit-identical) that a stop ends at
    once, as one fit of an MLP cannot be interrupted otherwise. Without ``between`` the fit runs here.
    """
    from ..engine.registry import make_classifier

    est = make_classifier(family, random_state=seed, n_train=len(ytr))
    if between is None or family in _FITS_AT_ONCE:
        est = _fitted(est, Xtr, ytr)
    else:
        est = run_stoppable(_fitted, est, Xtr, ytr, stop=_asks(between), what=f"the {family} fit", cells=Xtr.size)
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
    independent: tuple[ArrayLike, ArrayLike] | None = None,
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
    independent : (X_train_other, X_eval_other), optional
        A representation the levels never saw (e.g. hypothesis embeddings when the dynamics ran on the pair's):
        a logistic regression on it is scored too (``input = "independent"``): the check that is not circular,
        as the models on ``X_train`` share the levels' Φ.
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
    func = "level_accuracy"
    n_eval = np.asarray(X_eval).shape[0] if np.ndim(X_eval) == 2 else None
    lv = np.asarray(levels.levels if isinstance(levels, DifficultyLevels) else levels).astype(str)
    if n_eval is not None and lv.shape != (n_eval,):
        raise param_error("levels", func, f"one level per evaluation row ({n_eval})", lv.shape)
    runs = level_correctness(
        X_train,
        y_train,
        X_eval,
        y_eval,
        models=models,
        partial=partial,
        independent=independent,
        random_state=random_state,
        n_threads=n_threads,
        callback=callback,
        func=func,
    )
    return score_levels(runs, lv)


def level_correctness(
    X_train: ArrayLike,
    y_train: ArrayLike,
    X_eval: ArrayLike,
    y_eval: ArrayLike,
    *,
    models: Sequence[str] = LEVEL_VALIDATION_MODELS,
    partial: tuple[ArrayLike, ArrayLike] | None = None,
    independent: tuple[ArrayLike, ArrayLike] | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
    callback: Callable[[int, int, str], bool | None] | None = None,
    func: str = "level_correctness",
) -> list[tuple[str, str, NDArray[np.bool_]]]:
    """Whether each model of :func:`level_accuracy` is right on each characterised row: ``(model, input, correct)``.

    Fitted once, so any number of level assignments (the levels and their controls) can be scored on the same
    predictions with :func:`score_levels`. Parameters as :func:`level_accuracy`.
    """
    Xtr = check_features(X_train, "X_train", func)
    Xev = check_features(X_eval, "X_eval", func, n_cols=Xtr.shape[1])
    enc = check_labels(y_train, "y_train", func, n_rows=Xtr.shape[0], min_per_class=1)
    yev = enc.encode(y_eval, "y_eval", func)
    if len(yev) != Xev.shape[0]:
        raise param_error("y_eval", func, f"one label per evaluation row ({Xev.shape[0]})", len(yev))
    rng = np.random.default_rng(check_random_state(random_state, func))
    runs: list[tuple[str, str, NDArray]] = []
    extra = [(name, pair) for name, pair in (("partial", partial), ("independent", independent)) if pair is not None]
    n_fits = len(models) + len(extra)

    def fitted(fam: str) -> None:
        if callback is not None and callback(len(runs), n_fits, fam) is False:
            raise TrainingInterrupted

    def predicting(fam: str) -> Callable[[], None] | None:  # a stop is honoured during the fit and predictions too
        return None if callback is None else (lambda: fitted(f"{fam}: fitting and predicting"))

    with blas_threads(n_threads):
        for fam in models:
            pred = fit_predict(fam, Xtr, enc.codes, Xev, int(rng.integers(0, 2**31 - 1)), predicting(fam))
            runs.append((fam, "full", pred == yev))
            fitted(fam)
        for name, pair in extra:
            Ptr = check_features(pair[0], name, func, n_rows=Xtr.shape[0])
            Pev = check_features(pair[1], name, func, n_rows=Xev.shape[0], n_cols=Ptr.shape[1])
            seed = int(rng.integers(0, 2**31 - 1))
            pred = fit_predict("logistic", Ptr, enc.codes, Pev, seed, predicting("logistic"))
            runs.append(("logistic", name, pred == yev))
            fitted(f"logistic on the {name} input")
    return runs


def score_levels(runs: Sequence[tuple[str, str, NDArray[np.bool_]]], levels: ArrayLike) -> pd.DataFrame:
    """Accuracy per level (and ``"all"``) of every ``(model, input, correct)`` of :func:`level_correctness`.

    Returns
    -------
    pandas.DataFrame
        ``model, input, level, accuracy, n, ci_low, ci_high`` (Wilson 95 %).
    """
    from ..measures.adversary_strength import wilson_interval

    lv = np.asarray(levels).astype(str)
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
