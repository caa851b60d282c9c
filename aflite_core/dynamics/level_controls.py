"""Controls of the difficulty-level validation: levels that need no training dynamics, of the same sizes.

The check "a model trained on other rows falls from easy to hard" is nearly true by construction when the levels
and the model share the representation Φ: any ranking by confidence on Φ does it. The controls cut other
rankings into levels of exactly the GMM levels' sizes (``n_easy`` most confident → easy, the next ``n_ambiguous``
→ ambiguous, the rest → hard):

* ``"confidence, in-sample"``: one scikit-learn ``LogisticRegression`` fitted on the characterised rows, its
  probability of each row's gold label (the one-shot confidence the dynamics average over epochs);
* ``"confidence, out-of-fold"``: the same probability from 5-fold cross-fitting (each row scored by a model that
  did not see it);
* ``"random"``: a uniform permutation: accuracy is flat across its levels up to binomial error.

What the dynamics add is what the GMM levels do beyond the confidence levels.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._child_process import run_stoppable
from .._utils import blas_threads
from .levels import LEVELS

__all__ = [
    "CONTROL_KINDS",
    "DYNAMICS_KIND",
    "confidence_scores",
    "control_levels",
    "levels_of_sizes",
    "validation_findings",
]

#: the name of the training-dynamics levels in the tables that set them beside their controls
DYNAMICS_KIND = "training dynamics (GMM)"

#: the controls, in the order the tables print them
CONTROL_KINDS: tuple[str, ...] = ("confidence, in-sample", "confidence, out-of-fold", "random")


def levels_of_sizes(score: NDArray[np.float64], counts: Mapping[str, int], rng: np.random.Generator) -> NDArray:
    """Cut a ranking into levels of given sizes: the highest ``counts["easy"]`` scores are easy, and so on.

    Ties are broken at random. ``counts`` must sum to ``len(score)``.

    Examples
    --------
    >>> import numpy as np
    >>> levels_of_sizes(np.array([0.9, 0.1, 0.5, 0.7]), {"easy": 1, "ambiguous": 2, "hard": 1},
    ...                 np.random.default_rng(0)).tolist()
    ['easy', 'hard', 'ambiguous', 'ambiguous']
    """
    score = np.asarray(score, dtype=np.float64)
    sizes = [int(counts.get(level, 0)) for level in LEVELS]
    if sum(sizes) != len(score):
        raise ValueError(f"The level sizes {sizes} must add up to the {len(score)} rows.")
    order = np.lexsort((rng.random(len(score)), -score))
    out = np.empty(len(score), dtype=object)
    start = 0
    for level, size in zip(LEVELS, sizes):
        out[order[start : start + size]] = level
        start += size
    return out


def confidence_scores(
    X: NDArray,
    codes: NDArray[np.intp],
    *,
    out_of_fold: bool,
    seed: int,
    n_threads: int | None = 1,
    stop: Callable[[], bool] | None = None,
) -> NDArray[np.float64]:
    """One ``LogisticRegression``'s probability of each row's gold label (in-sample, or from 5-fold cross-fitting).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The representation the levels are computed on.
    codes : ndarray of int
        Gold labels as codes 0..C-1.
    out_of_fold : bool
        False: fitted on all rows and scored on them; True: each row scored by the model of the fold that held it
        out (stratified 5 folds, fewer if a class is that small).
    seed : int
        The folds' shuffle and the model's seed.
    n_threads : int or None, default=1
        BLAS threads.
    stop : callable, optional
        ``stop() -> bool`` (or raising to stop): the fits then run in a child process that a stop ends at once
        (:func:`aflite_core._child_process.run_stoppable`; the same result). Without it they run here.

    Returns
    -------
    ndarray of shape (n,)
        In [0, 1]; higher means more confident in the gold label.
    """
    codes = np.asarray(codes)
    if out_of_fold and int(min(5, np.bincount(codes).min())) < 2:
        raise ValueError("Out-of-fold confidence needs at least 2 rows of every class.")
    kind = "out-of-fold" if out_of_fold else "in-sample"
    with blas_threads(n_threads):
        cells = np.asarray(X).size * (5 if out_of_fold else 1)
        return run_stoppable(
            _gold_proba, X, codes, out_of_fold, seed, stop=stop, what=f"the {kind} logistic fit", cells=cells
        )


def _gold_proba(X: NDArray, codes: NDArray[np.intp], out_of_fold: bool, seed: int) -> NDArray[np.float64]:
    """:func:`confidence_scores`' fits (module level: it runs in a child process when a stop is asked for)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    est = LogisticRegression(max_iter=1000, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if out_of_fold:
            n_splits = int(min(5, np.bincount(codes).min()))
            cv = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
            proba = cross_val_predict(est, X, codes, cv=cv, method="predict_proba")
        else:
            proba = est.fit(X, codes).predict_proba(X)
    return proba[np.arange(len(codes)), codes].astype(np.float64)


def control_levels(
    X: NDArray,
    codes: NDArray[np.intp],
    counts: Mapping[str, int],
    *,
    seed: int,
    kinds: tuple[str, ...] = CONTROL_KINDS,
    n_threads: int | None = 1,
    stop: Callable[[], bool] | None = None,
) -> dict[str, NDArray]:
    """Every control's levels of the rows, of the sizes ``counts`` (the GMM levels' counts), by kind.

    ``stop`` is passed to :func:`confidence_scores` (its fits then run in a child process a stop ends).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(90, 3)); y = (X[:, 0] > 0).astype(int)
    >>> lv = control_levels(X, y, {"easy": 30, "ambiguous": 30, "hard": 30}, seed=0)
    >>> sorted(lv), [int((lv["random"] == "easy").sum())]
    (['confidence, in-sample', 'confidence, out-of-fold', 'random'], [30])
    """
    rng = np.random.default_rng(seed)
    out: dict[str, NDArray] = {}
    for kind in kinds:
        if kind == "random":
            score = rng.random(len(codes))
        elif kind in ("confidence, in-sample", "confidence, out-of-fold"):
            score = confidence_scores(
                X,
                codes,
                out_of_fold=kind.endswith("out-of-fold"),
                seed=int(rng.integers(0, 2**31 - 1)),
                n_threads=n_threads,
                stop=stop,
            )
        else:
            raise ValueError(f"Unknown control {kind!r}; the controls are {list(CONTROL_KINDS)}.")
        out[kind] = levels_of_sizes(score, counts, rng)
    return out


def _gap(table: pd.DataFrame, kind: str, model: str, inp: str) -> tuple[float, float]:
    """Easy − hard accuracy of one (levels, model, input), with the seeds' spread of that gap when known."""
    sub = table[(table["levels"] == kind) & (table["model"] == model) & (table["input"] == inp)].set_index("level")
    if "easy" not in sub.index or "hard" not in sub.index:
        return float("nan"), float("nan")
    return float(sub.loc["easy", "accuracy"] - sub.loc["hard", "accuracy"]), float(
        np.hypot(sub.loc["easy", "accuracy_std"], sub.loc["hard", "accuracy_std"])
    )


def validation_findings(level_controls: pd.DataFrame | None, fractions: pd.DataFrame | None) -> list[str]:
    """What the training-dynamics levels add over their controls, in sentences computed from the two tables.

    Parameters
    ----------
    level_controls : pandas.DataFrame
        ``LevelValidation.level_controls`` (the levels beside their controls).
    fractions : pandas.DataFrame
        ``LevelValidation.fractions``.

    Returns
    -------
    list of str
        One sentence per model and input (the easy − hard gap of every kind of levels), one on the random levels
        and one on the fraction experiment against the confidence selections and random.
    """
    out: list[str] = []
    if level_controls is None or not len(level_controls):
        return out
    kinds = [k for k in (DYNAMICS_KIND, *CONTROL_KINDS) if k in set(level_controls["levels"])]
    pairs = list(dict.fromkeys(zip(level_controls["model"], level_controls["input"])))
    steeper = flatter = compared = 0
    for model, inp in pairs:
        gaps = {k: _gap(level_controls, k, model, inp) for k in kinds}
        text = ", ".join(f"{k} {g:+.3f} ± {sd:.3f}" for k, (g, sd) in gaps.items() if np.isfinite(g))
        out.append(f"{model} on the {inp} input, easy − hard accuracy: {text}.")
        dyn, conf = gaps.get(DYNAMICS_KIND), gaps.get("confidence, out-of-fold")
        if dyn is not None and conf is not None and np.isfinite(dyn[0]) and np.isfinite(conf[0]):
            compared += 1
            noise = float(np.hypot(dyn[1], conf[1])) if np.isfinite(dyn[1]) and np.isfinite(conf[1]) else 0.0
            steeper += dyn[0] - conf[0] > noise
            flatter += conf[0] - dyn[0] > noise
    if compared:
        verdict = (
            ": on this check the dynamics add nothing over one logistic regression's confidence."
            if steeper == 0
            else "."
        )
        out.append(
            f"The training-dynamics levels separate easy from hard more than one-shot out-of-fold confidence levels "
            f"(by more than the seeds' spread) for {steeper} of {compared} model × input pairs, less for {flatter}, "
            f"within the spread for {compared - steeper - flatter}{verdict}"
        )
    if "random" in kinds:
        rnd = [abs(_gap(level_controls, "random", m, i)[0]) for m, i in pairs]
        rnd = [g for g in rnd if np.isfinite(g)]
        if rnd:
            out.append(f"Random levels of the same sizes: |easy − hard| at most {max(rnd):.3f} (flat, as chance is).")
    if fractions is not None and len(fractions):
        fr = fractions[fractions["selection"] != "all rows"]
        sel = fr["selection"].astype(str)
        wins_conf = wins_rand = n = 0
        margins = []
        for frac in sorted(fr["fraction"].unique()):
            sub = fr[fr["fraction"] == frac]
            s = sub["selection"].astype(str)
            gmm = sub[s.str.startswith("gmm_")]
            conf = sub[s.str.startswith("confidence_")]
            rand = sub[s == "random"]
            if not len(gmm):
                continue
            best = gmm.loc[gmm["accuracy"].idxmax()]
            n += 1
            if len(conf):
                margins.append(float(best["accuracy"] - conf["accuracy"].max()))
                wins_conf += best["accuracy"] - conf["accuracy"].max() > best["accuracy_std"]
            if len(rand):
                wins_rand += best["accuracy"] - float(rand["accuracy"].iloc[0]) > best["accuracy_std"]
        if n and sel.str.startswith("confidence_").any():
            out.append(
                f"Training on a fraction: the best GMM-level selection beats the best one-shot confidence selection "
                f"by more than its seeds' sd at {wins_conf} of {n} fractions (margins {min(margins):+.3f} to "
                f"{max(margins):+.3f}) and a random subset at {wins_rand} of {n}."
            )
    return out
