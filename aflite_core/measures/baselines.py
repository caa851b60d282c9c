"""Held-out accuracies and the paper's equal-size baselines: a random subset and a one-shot filter (ICML §4.2)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from .._utils import blas_threads
from ..engine.registry import _build, _resolve_models
from ..engine.result import AFLiteResult
from ._args import _check_groups, _encode_labels, _kept_mask, _rng, _seed

__all__ = [
    "OneShotFilter",
    "baseline_comparison",
    "model_accuracies",
    "one_shot_filter",
    "random_subset",
    "representation_bias",
]


def _split_plan(codes: NDArray, groups: NDArray | None, n_splits: int, seed: int) -> list[tuple[NDArray, NDArray]]:
    if groups is None:
        from sklearn.model_selection import StratifiedKFold

        splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        return list(splitter.split(np.zeros(len(codes)), codes))
    from sklearn.model_selection import StratifiedGroupKFold

    n_groups = len(np.unique(groups))
    splitter = StratifiedGroupKFold(n_splits=min(n_splits, n_groups), shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "least populated class" warnings: handled by the caller
        return list(splitter.split(np.zeros(len(codes)), codes, groups))


def _cv_scores(
    X: NDArray[np.float32],
    codes: NDArray,
    models: dict[str, Any],
    *,
    n_splits: int,
    groups: NDArray | None,
    rng: np.random.Generator,
    n_threads: int | None,
    standardize: bool = False,
    max_train_rows: int | None = None,
) -> tuple[dict[str, list[float]], int, str]:
    """Per-model fold accuracies on rows ``X``/``codes`` (codes already restricted to the subset).

    Classes with fewer than two rows are left out (they cannot be both trained on and tested); the number of
    folds is capped by the smallest remaining class. Returns the scores, the folds used and a note.
    """
    from sklearn.exceptions import ConvergenceWarning

    notes = []
    counts = np.bincount(codes) if len(codes) else np.zeros(0, int)
    tiny = np.flatnonzero((counts > 0) & (counts < 2))
    if len(tiny):
        keep = ~np.isin(codes, tiny)
        X, codes = X[keep], codes[keep]
        groups = None if groups is None else groups[keep]
        notes.append(f"{len(tiny)} class(es) with a single row left out")
    present = np.flatnonzero(np.bincount(codes) >= 2) if len(codes) else np.zeros(0, int)
    if len(present) < 2:
        notes.append("fewer than 2 classes with at least 2 rows: accuracy undefined")
        return {name: [] for name in models}, 0, "; ".join(notes)
    if groups is not None and len(np.unique(groups)) < 2:
        notes.append("fewer than 2 groups: accuracy undefined")
        return {name: [] for name in models}, 0, "; ".join(notes)
    k = int(min(n_splits, np.bincount(codes)[present].min()))
    if k < n_splits:
        notes.append(f"{k} folds (smallest class has {k} rows)")
    splits = _split_plan(codes, groups, k, _seed(rng))
    seeds = {name: [_seed(rng) for _ in splits] for name in models}
    sub_seeds = [_seed(rng) for _ in splits]  # drawn whatever max_train_rows is: the stream stays the same
    if max_train_rows is not None and any(len(tr) > max_train_rows for tr, _ in splits):
        splits = [
            (np.sort(np.random.default_rng(s).permutation(tr)[:max_train_rows]), te)
            if len(tr) > max_train_rows
            else (tr, te)
            for (tr, te), s in zip(splits, sub_seeds)
        ]
        notes.append(f"training folds subsampled to {max_train_rows} rows")
    scores: dict[str, list[float]] = {name: [] for name in models}
    with blas_threads(n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for f, (train, test) in enumerate(splits):
            if len(np.unique(codes[train])) < 2 or len(test) == 0:
                continue
            for name, spec in models.items():
                est = _build(spec, seeds[name][f], len(train), standardize)
                est.fit(X[train], codes[train])
                scores[name].append(float(np.mean(est.predict(X[test]) == codes[test])))
    return scores, len(splits), "; ".join(notes)


def model_accuracies(
    X: ArrayLike,
    y: ArrayLike,
    *,
    mask: ArrayLike | AFLiteResult | None = None,
    models: Any = ("logistic", "rbf", "knn", "mlp"),
    n_splits: int = 5,
    groups: ArrayLike | None = None,
    standardize: bool = False,
    max_train_rows: int | None = None,
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
) -> pd.DataFrame:
    """Cross-validated accuracy of several model families on a subset: an estimate of R(Φ, S, M) per family.

    The rows of the subset (``mask``) are split by a seeded ``StratifiedKFold`` (``StratifiedGroupKFold``
    when ``groups`` is given, so a group, e.g. a premise, never sits on both sides); each model is trained on
    the training folds of the subset and tested on its held-out fold. Higher means the family exploits Φ
    better on this subset.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Labels of any hashable type.
    mask : AFLiteResult or boolean array of shape (n_samples,), optional
        The subset (an AFLiteResult means its kept rows); None means all rows.
    models : str, sequence of str or mapping, default=("logistic", "rbf", "knn", "mlp")
        Family names of :data:`CLASSIFIERS`, or ``{name: unfitted sklearn classifier}``.
    n_splits : int, default=5
        Folds. Capped by the smallest class of the subset; classes with a single row in the subset are left
        out (see the ``note`` column).
    groups : array-like of shape (n_samples,), optional
        Group ids (any hashable values) kept on one side of every split.
    standardize : bool, default=False
        Standardise the features (fitted on the training folds) before every model. Off by default: the
        families suit L2-normalised embeddings as they are, and logistic regression converges faster on them.
    max_train_rows : int, optional
        Train every model on a seeded random subsample of at most this many rows of each training fold (test
        folds are untouched). The RBF SVM's cost grows about quadratically with the rows: on 5,500 × 384
        embeddings one fit takes ~13 s on one core (logistic regression ~1 s, MLP ~3 s, kNN ~0.2 s), so an
        interactive caller should cap it (e.g. 2000) or cache.
    random_state : int, numpy Generator or None
        Seed of the folds and of the models that need one.
    n_threads : int or None, default=1
        BLAS threads while fitting (one thread is much faster on shared machines).

    Returns
    -------
    pandas.DataFrame
        One row per model: ``model, accuracy`` (mean over folds), ``accuracy_std, n_splits, n_rows``
        (rows of the subset used), ``n_classes, majority_rate`` (the share of the largest class, a chance
        baseline) and ``note`` (empty unless a fallback applied). ``accuracy`` is NaN when fewer than two
        classes have two rows.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = (X[:, 0] > 0).astype(int)
    >>> frame = model_accuracies(X, y, models=["logistic", "knn"], random_state=0)
    >>> frame[["model", "n_rows"]].values.tolist()
    [['logistic', 200], ['knn', 200]]
    >>> bool(frame.loc[0, "accuracy"] > 0.9)
    True
    """
    func = "model_accuracies"
    Xv = v.check_features(X, "X", func)
    labels = v.check_labels(y, "y", func, n_rows=Xv.shape[0], min_per_class=1)
    sel = np.ones(Xv.shape[0], bool) if mask is None else _kept_mask(mask, Xv.shape[0], func, "mask")
    specs = _resolve_models(models, func)
    k = v.check_int(n_splits, "n_splits", func, low=2)
    grp = _check_groups(groups, Xv.shape[0], func)
    threads = v.check_n_threads(n_threads, func)
    cap = None if max_train_rows is None else v.check_int(max_train_rows, "max_train_rows", func, low=2)
    rng = _rng(random_state, func)
    return _accuracy_frame(Xv, labels.codes, sel, specs, k, grp, rng, threads, bool(standardize), cap)


def _accuracy_frame(Xv, codes, sel, specs, k, grp, rng, threads, standardize=False, cap=None) -> pd.DataFrame:
    rows = np.flatnonzero(sel)
    sub_codes = codes[rows]
    scores, _, note = _cv_scores(
        Xv[rows],
        sub_codes,
        specs,
        n_splits=k,
        groups=None if grp is None else grp[rows],
        rng=rng,
        n_threads=threads,
        standardize=standardize,
        max_train_rows=cap,
    )
    counts = np.bincount(sub_codes) if len(rows) else np.zeros(1, int)
    majority = float(counts.max() / max(len(rows), 1))
    out = []
    for name in specs:
        s = np.asarray(scores[name], dtype=float)
        out.append(
            {
                "model": name,
                "accuracy": float(s.mean()) if len(s) else float("nan"),
                "accuracy_std": float(s.std(ddof=1)) if len(s) > 1 else float("nan"),
                "n_splits": len(s),
                "n_rows": len(rows),
                "n_classes": int((counts > 0).sum()),
                "majority_rate": majority,
                "note": note,
            }
        )
    return pd.DataFrame(out)


# -- equal-size baselines (ICML §4.2) ------------------------------------------------------------------------
def random_subset(
    n_rows: int,
    size: int,
    *,
    y: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
) -> NDArray[np.bool_]:
    """A uniformly random subset of ``size`` rows: the "random subset of the same size" baseline (D_92k).

    Parameters
    ----------
    n_rows : int
        Rows to choose from.
    size : int
        Rows in the subset (use ``result.n_kept`` for AFLite's kept set), in [0, n_rows].
    y : array-like of shape (n_rows,), optional
        When given, the subset is stratified: every class keeps its share (largest remainders), so only the
        row choice, not the label mix, differs from the full data.
    random_state : int, numpy Generator or None
        Seed.

    Returns
    -------
    ndarray of bool, shape (n_rows,)
        True for the rows in the subset.

    Examples
    --------
    >>> int(random_subset(10, 4, random_state=0).sum())
    4
    """
    func = "random_subset"
    n = v.check_int(n_rows, "n_rows", func, low=1)
    m = v.check_int(size, "size", func, low=0, high=n)
    rng = _rng(random_state, func)
    out = np.zeros(n, dtype=bool)
    if y is None:
        out[rng.permutation(n)[:m]] = True
        return out
    codes = _encode_labels(y, func, n).codes
    counts = np.bincount(codes)
    quota = counts * (m / n)
    take = np.floor(quota).astype(int)
    rest = m - int(take.sum())
    if rest:
        order = np.lexsort((rng.random(len(counts)), -(quota - take)))
        take[order[:rest]] += 1
    keys = rng.random(n)
    order = np.lexsort((keys, codes))  # rows grouped by class, random order within a class
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, counts)
    out[rank < take[codes]] = True
    return out


@dataclass(frozen=True)
class OneShotFilter:
    """The single-model, single-split, one-shot filter of ICML §4.2 (see :func:`one_shot_filter`).

    Attributes
    ----------
    kept : ndarray of bool, shape (n_samples,)
        True for retained rows.
    score : ndarray of float32, shape (n_samples,)
        Probability the model gave the row's true label (in [0, 1]; higher means more predictable, removed
        first); NaN for the model's training rows, which are never scored.
    correct : ndarray of bool, shape (n_samples,)
        The model predicted the row's label (False for training rows).
    is_train : ndarray of bool, shape (n_samples,)
        Rows the single model was trained on (always retained).
    params : dict
        ``size, train_size, seed``.
    """

    kept: NDArray[np.bool_]
    score: NDArray[np.float32]
    correct: NDArray[np.bool_]
    is_train: NDArray[np.bool_]
    params: dict = field(default_factory=dict)

    @property
    def n_kept(self) -> int:
        """Rows retained."""
        return int(self.kept.sum())


def one_shot_filter(
    X: ArrayLike,
    y: ArrayLike,
    *,
    size: int,
    train_size: int | float,
    model: Any = "logistic",
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
) -> OneShotFilter:
    """Non-iterative, single-model AFLite: remove the most confidently-correct rows of one split, once.

    Exactly: (1) draw a stratified random training part of ``train_size`` rows (every class keeps its share);
    (2) fit one model on it; (3) score every other row by the probability the model gives its true label;
    (4) remove held-out rows, correctly predicted ones first and within them the highest score first (equal
    scores in a seeded random order), until ``size`` rows remain. Training rows are never removed (they were
    not scored out of sample), so ``train_size`` must be below ``size``. This is the baseline of ICML §4.2
    ("using a single model, we filter out the most predictable examples in a single iteration").

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The representation Φ(X).
    y : array-like of shape (n_samples,)
        Labels.
    size : int
        Rows to retain (use ``result.n_kept`` to match an AFLite run), in (n_classes, n_samples).
    train_size : int or float
        Training rows of the single model (AFLite's t, ``result.params["train_size"]``), in
        (n_classes, size); a float in (0, 1) is a fraction of n_samples.
    model : str or sklearn classifier, default="logistic"
        A family name of :data:`CLASSIFIERS` or an unfitted classifier. Its ``predict_proba`` gives the
        score; a classifier without it is scored by its ``decision_function`` turned into a softmax.
    random_state : int, numpy Generator or None
        Seed of the split, the model and the tie order.
    n_threads : int or None, default=1
        BLAS threads while fitting.

    Returns
    -------
    OneShotFilter
        Kept mask, scores and the training rows.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400); X = rng.normal(size=(400, 3)); X[:100, 0] += 6 * (2 * y[:100] - 1)
    >>> f = one_shot_filter(X, y, size=250, train_size=100, random_state=0)
    >>> f.n_kept, bool((~f.kept[:100]).mean() > (~f.kept[100:]).mean())
    (250, True)
    """
    func = "one_shot_filter"
    Xv = v.check_features(X, "X", func)
    n = Xv.shape[0]
    labels = v.check_labels(y, "y", func, n_rows=n)
    C = labels.n_classes
    keep_n = v.check_int(size, "size", func, low=C + 1, high=n - 1)
    t = v.check_fraction_or_count(
        train_size, "train_size", func, n=n, low=C, high=keep_n, range_text="(n_classes, size)"
    )
    spec = _resolve_models({"model": model} if not isinstance(model, str) else (model,), func)
    spec_value = next(iter(spec.values()))
    threads = v.check_n_threads(n_threads, func)
    seed = v.check_random_state(random_state, func)
    rng = np.random.default_rng(seed)
    codes = labels.codes
    is_train = random_subset(n, t, y=codes, random_state=rng)
    est = _build(spec_value, _seed(rng), t)
    test = np.flatnonzero(~is_train)
    from sklearn.exceptions import ConvergenceWarning

    with blas_threads(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xv[is_train], codes[is_train])
        model_classes = np.asarray(est.classes_)
        if hasattr(est, "predict_proba"):
            proba = est.predict_proba(Xv[test])
        else:
            dec = np.asarray(est.decision_function(Xv[test]), dtype=np.float64)
            if dec.ndim == 1:
                dec = np.c_[-dec, dec]
            dec = dec - dec.max(axis=1, keepdims=True)
            proba = np.exp(dec) / np.exp(dec).sum(axis=1, keepdims=True)
    col = np.full(C, -1)
    col[model_classes.astype(int)] = np.arange(len(model_classes))
    true_col = col[codes[test]]
    p_true = np.where(true_col >= 0, proba[np.arange(len(test)), np.maximum(true_col, 0)], 0.0)
    predicted = model_classes[np.argmax(proba, axis=1)]
    correct_test = predicted == codes[test]
    score = np.full(n, np.nan, dtype=np.float32)
    score[test] = p_true
    correct = np.zeros(n, dtype=bool)
    correct[test] = correct_test
    tie = rng.random(len(test))
    order = np.lexsort((tie, -p_true, ~correct_test))  # correct first, then by score, then seeded ties
    kept = np.ones(n, dtype=bool)
    kept[test[order[: n - keep_n]]] = False
    return OneShotFilter(
        kept=kept,
        score=score,
        correct=correct,
        is_train=is_train,
        params={"size": keep_n, "train_size": t, "seed": seed},
    )


def baseline_comparison(
    X: ArrayLike,
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    partial_X: ArrayLike | None = None,
    models: Any = ("logistic",),
    one_shot: bool = True,
    train_size: int | float | None = None,
    n_splits: int = 5,
    groups: ArrayLike | None = None,
    max_train_rows: int | None = None,
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
) -> pd.DataFrame:
    """Held-out accuracy on the full data, AFLite's kept set and equal-size baselines (ICML §4.2).

    Subsets: ``full`` (all rows), ``aflite`` (the kept rows), ``random`` (a uniform random subset of the
    same size, :func:`random_subset`) and, with ``one_shot``, ``one-shot`` (:func:`one_shot_filter` down to
    the same size, trained on ``train_size`` rows). Each subset is scored by :func:`model_accuracies` with
    the features ``X`` (``features="full input"``) and, when ``partial_X`` is given, with a partial-input
    representation (``features="partial input"``, e.g. hypothesis-only embeddings of NLI pairs): the
    partial-input baseline before (``full``) and after (``aflite``) filtering.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The representation Φ(X) AFLite filtered with (the one-shot filter uses it too).
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        AFLite's kept rows.
    partial_X : array-like of shape (n_samples, n_partial_features), optional
        A second representation of the same rows.
    models : str, sequence of str or mapping, default=("logistic",)
        Families scored (see :func:`model_accuracies`).
    one_shot : bool, default=True
        Add the one-shot filter baseline.
    train_size : int or float, optional
        Training rows of the one-shot model; default: the run's ``params["train_size"]`` when ``kept`` is an
        AFLiteResult, else 10 % of the rows.
    n_splits : int, default=5
        Folds per subset.
    groups : array-like of shape (n_samples,), optional
        Group ids kept on one side of every split (e.g. the premise of NLI pairs).
    max_train_rows : int, optional
        Cap on the training rows of each fold (see :func:`model_accuracies`).
    random_state : int, numpy Generator or None
        Seed of the baselines and of the folds.
    n_threads : int or None, default=1
        BLAS threads while fitting.

    Returns
    -------
    pandas.DataFrame
        One row per (subset, features, model): ``subset, features, model, n_rows, accuracy, accuracy_std,
        majority_rate, note``.
    """
    func = "baseline_comparison"
    Xv = v.check_features(X, "X", func)
    n = Xv.shape[0]
    labels = v.check_labels(y, "y", func, n_rows=n, min_per_class=1)
    mask = _kept_mask(kept, n, func)
    PX = None if partial_X is None else v.check_features(partial_X, "partial_X", func, n_rows=n)
    specs = _resolve_models(models, func)
    k = v.check_int(n_splits, "n_splits", func, low=2)
    grp = _check_groups(groups, n, func)
    threads = v.check_n_threads(n_threads, func)
    cap = None if max_train_rows is None else v.check_int(max_train_rows, "max_train_rows", func, low=2)
    if train_size is None:
        train_size = (
            kept.params["train_size"] if isinstance(kept, AFLiteResult) else max(labels.n_classes + 1, round(0.1 * n))
        )
    rng = _rng(random_state, func)
    n_kept = int(mask.sum())
    subsets: dict[str, NDArray[np.bool_]] = {
        "full": np.ones(n, dtype=bool),
        "aflite": mask,
        "random": random_subset(n, n_kept, random_state=rng),
    }
    if one_shot:
        subsets["one-shot"] = one_shot_filter(
            Xv, labels.codes, size=n_kept, train_size=train_size, random_state=rng, n_threads=threads
        ).kept
    views = {"full input": Xv} if PX is None else {"full input": Xv, "partial input": PX}
    frames = []
    for subset, sel in subsets.items():
        for view, F in views.items():
            frame = _accuracy_frame(F, labels.codes, sel, specs, k, grp, rng, threads, False, cap)
            frame.insert(0, "features", view)
            frame.insert(0, "subset", subset)
            frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    return out[["subset", "features", "model", "n_rows", "accuracy", "accuracy_std", "majority_rate", "note"]]


# -- representation bias -------------------------------------------------------------------------------------
def representation_bias(result: AFLiteResult) -> pd.DataFrame:
    """R(Φ, S, M) per round (ICML eq. 5) as recorded by the run, with the size of S it was measured on.

    R in round r is the mean predictability p(i) over the rows of S scored in round r, i.e. measured on the
    set *entering* round r (before that round's removals): in [0, 1]; higher means Φ makes S more
    predictable for the family M. It should fall as AFLite removes rows.

    Parameters
    ----------
    result : AFLiteResult
        A finished (or stopped) run.

    Returns
    -------
    pandas.DataFrame
        One row per round: ``round, size`` (rows of S entering the round), ``n_scored, representation_bias,
        mean_model_accuracy`` (held-out accuracy of the round's m models), ``n_removed, size_after``.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core import aflite
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400); X = rng.normal(size=(400, 4)); X[:150, 0] += 5 * (2 * y[:150] - 1)
    >>> rb = representation_bias(aflite(X, y, target_size=200, train_size=80, slice_size=40, random_state=0))
    >>> list(rb.columns[:4]), bool(rb["representation_bias"].iloc[-1] < rb["representation_bias"].iloc[0])
    (['round', 'size', 'n_scored', 'representation_bias'], True)
    """
    if not isinstance(result, AFLiteResult):
        raise v.param_error("result", "representation_bias", "an AFLiteResult", result, TypeError)
    h = result.history
    return pd.DataFrame(
        {
            "round": h["round"].astype(int).to_numpy(),
            "size": h["size_before"].astype(int).to_numpy(),
            "n_scored": h["n_scored"].astype(int).to_numpy(),
            "representation_bias": h["mean_predictability"].astype(float).to_numpy(),
            "mean_model_accuracy": h["mean_model_accuracy"].astype(float).to_numpy(),
            "n_removed": h["n_removed"].astype(int).to_numpy(),
            "size_after": h["size_after"].astype(int).to_numpy(),
        }
    )
