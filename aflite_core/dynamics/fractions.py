"""The second check of the difficulty levels: train on a fraction of the rows chosen by level (Tables 5 and 6).

Characterise the *training* rows, keep a fraction of them chosen by level, train on that fraction and test on
held-out rows; Cosma et al.'s (EMNLP 2024) level-based selection matches the full data better than Data Maps'
ambiguous selection (Swayamdipta et al., 2020) and an AUM band (after Pleiss et al., 2020).
:func:`select_fraction` picks the rows (:data:`SELECTIONS`, who defined each in :data:`SELECTION_SOURCES`);
:func:`fraction_experiment` runs fractions 10-50 % with every selection and a random subset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .._utils import blas_threads
from .._validation import check_features, check_labels, check_random_state, param_error
from .heldout import _asks, fit_predict
from .levels import DifficultyLevels
from .trainer import TrainingInterrupted

__all__ = ["CONTROL_SELECTIONS", "SELECTIONS", "SELECTION_SOURCES", "fraction_experiment", "select_fraction"]

#: how :func:`select_fraction` picks a fraction of the training rows
SELECTIONS: dict[str, str] = {
    "gmm_ambiguous": "GMM levels: the ambiguous level first, then hard, then easy (random order within a level)",
    "gmm_easy": "GMM levels: the easy level first, then ambiguous, then hard (random order within a level)",
    "gmm_hard": "GMM levels: the hard level first, then ambiguous, then easy (random order within a level)",
    "data_maps": "Data Maps' ambiguous region: the most variable rows first",
    "aum_band": "AUM band: the rows whose AUM is closest to the median first (the 33-66 % band, widened or narrowed)",
    "random": "a random subset (stratified by class)",
}

#: the controls of the GMM selections: the same orders over one-shot confidence levels of the GMM levels' sizes
#: (:mod:`aflite_core.dynamics.level_controls`), no training dynamics involved
CONTROL_SELECTIONS: dict[str, str] = {
    "confidence_ambiguous": "control: one-shot confidence levels of the GMM levels' sizes, ambiguous first",
    "confidence_easy": "control: one-shot confidence levels of the GMM levels' sizes, easy first",
    "confidence_hard": "control: one-shot confidence levels of the GMM levels' sizes, hard first",
}

#: who defined each selection's criterion
SELECTION_SOURCES: dict[str, str] = {
    "gmm_ambiguous": "Cosma et al. (2024)",
    "gmm_easy": "Cosma et al. (2024)",
    "gmm_hard": "Cosma et al. (2024)",
    "data_maps": "Swayamdipta et al. (2020)",
    "aum_band": "AUM: Pleiss et al. (2020); band: Cosma et al. (2024)",
    "confidence_ambiguous": "control (no dynamics)",
    "confidence_easy": "control (no dynamics)",
    "confidence_hard": "control (no dynamics)",
    "random": "baseline",
}


def select_fraction(
    selection: str,
    fraction: float,
    *,
    levels: DifficultyLevels,
    y: ArrayLike,
    random_state: int | np.random.Generator | None = None,
    confidence_levels: ArrayLike | None = None,
) -> NDArray[np.bool_]:
    """The rows a selection keeps: ``round(fraction · n)`` of them, chosen as :data:`SELECTIONS` says.

    Parameters
    ----------
    selection : str
        A key of :data:`SELECTIONS` or :data:`CONTROL_SELECTIONS`.
    fraction : float
        Share of the rows to keep, in (0, 1].
    levels : DifficultyLevels
        GMM levels of the rows, with their measures (``variability``, ``aum`` are read from ``levels.measures``).
    y : array-like
        Labels (the random selection is stratified by them).
    random_state : int, numpy Generator or None
        Order within a level (GMM selections), ties, and the random subset.
    confidence_levels : array-like of level names, optional
        The one-shot confidence levels of the rows (:func:`~aflite_core.dynamics.level_controls.control_levels`),
        needed by the ``confidence_*`` selections.

    Returns
    -------
    ndarray of bool
    """
    func = "select_fraction"
    if selection not in SELECTIONS and selection not in CONTROL_SELECTIONS:
        raise param_error("selection", func, f"one of {[*SELECTIONS, *CONTROL_SELECTIONS]}", selection)
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
    if selection.startswith(("gmm_", "confidence_")):
        first = selection.split("_", 1)[1]
        order_of = {
            "ambiguous": ("ambiguous", "hard", "easy"),
            "easy": ("easy", "ambiguous", "hard"),
            "hard": ("hard", "ambiguous", "easy"),
        }[first]
        if selection.startswith("gmm_"):
            named = levels.levels.astype(str).to_numpy()
        elif confidence_levels is None:
            raise ValueError(f"The {selection!r} selection needs the rows' confidence levels (confidence_levels).")
        else:
            named = np.asarray(confidence_levels).astype(str)
        rank = pd.Series(named).map({lv: i for i, lv in enumerate(order_of)}).to_numpy()
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

    The paper's Tables 5 and 6 on our data: for every fraction, selection (:data:`SELECTIONS`, and the
    ``confidence_*`` controls of :data:`CONTROL_SELECTIONS` if asked for, which use one in-sample logistic
    regression's gold-label probability on ``X_train``, cut into levels of the GMM levels' sizes) and model
    family, the model is trained on the selected rows of ``X_train`` and scored on ``X_test``; every seed redraws
    the order within a level, the ties and the random subset (and seeds the model). The full training part is the
    reference. ``callback(step, n_steps, what)``, if given, is called after every step (the reference or one fraction
    and selection of a seed), and while a fit runs (the steps done so far; the fit runs in a child process that a
    stop ends at once); returning ``False`` stops with :class:`~aflite_core.dynamics.TrainingInterrupted`.

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
    bad = [s for s in selections if s not in SELECTIONS and s not in CONTROL_SELECTIONS]
    if bad:
        raise param_error("selections", func, f"names among {[*SELECTIONS, *CONTROL_SELECTIONS]}", list(selections))
    total = len(seeds) * (len(fractions) * len(selections) + 1)
    step = 0

    def asking(done: int, what: str) -> Callable[[], None] | None:
        """The stop check during one fit (it runs in a child process a stop ends): the callback, ``done`` so far."""
        if callback is None:
            return None

        def check() -> None:
            if callback(done, total, what) is False:
                raise TrainingInterrupted

        return check

    conf = None
    if any(sel.startswith("confidence_") for sel in selections):
        from .level_controls import control_levels

        counts = {k: int(v) for k, v in train_levels.counts().items()}
        seed0 = int(seeds[0]) if len(seeds) else 0
        check = asking(0, "confidence levels")
        conf = control_levels(
            Xtr,
            enc.codes,
            counts,
            seed=seed0,
            kinds=("confidence, in-sample",),
            n_threads=n_threads,
            stop=None if check is None else _asks(check),
        )["confidence, in-sample"]
    rows = []
    with blas_threads(n_threads):
        for seed in seeds:
            rng = np.random.default_rng(seed)
            for fam in models:
                what = f"all rows, seed {seed}"
                pred = fit_predict(fam, Xtr, enc.codes, Xte, int(rng.integers(0, 2**31 - 1)), asking(step, what))
                rows.append(("all rows", 1.0, fam, float(np.mean(pred == yte)), Xtr.shape[0], seed))
            step += 1
            if callback is not None and callback(step, total, f"all rows, seed {seed}") is False:
                raise TrainingInterrupted
            for frac in fractions:
                for sel in selections:
                    mask = select_fraction(
                        sel, frac, levels=train_levels, y=enc.codes, random_state=rng, confidence_levels=conf
                    )
                    for fam in models:
                        seed_m = int(rng.integers(0, 2**31 - 1))
                        between = asking(step, f"{sel} at {frac:.0%}, seed {seed}")
                        pred = fit_predict(fam, Xtr[mask], enc.codes[mask], Xte, seed_m, between)
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
