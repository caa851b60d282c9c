"""Measures of what an AFLite run did: pure functions of the data and an :class:`~aflite_core.AFLiteResult`.

Every function takes the data first (features ``X``, labels ``y``, texts …) and the run as ``kept``: either
an :class:`~aflite_core.result.AFLiteResult` or a boolean mask with one entry per row (True = retained), so
the same measures work for baselines (a random subset, a one-shot filter) too. Nothing here prints, plots
or caches; the app and the CLI do that.

========================================  ==================================================================
measure                                   function
========================================  ==================================================================
held-out accuracy of model families       :func:`model_accuracies`
equal-size baselines (ICML §4.2)          :func:`random_subset`, :func:`one_shot_filter`,
                                          :func:`baseline_comparison`
representation bias R(Φ,S,M) per round    :func:`representation_bias`
kNN distances (ICLR version, Table 3)     :func:`knn_distance_table`, :func:`knn_table_wide`
cosine-similarity heatmaps (Figure 1)     :func:`similarity_matrices`
per-class impact                          :func:`class_impact`
stability across seeds                    :func:`removal_stability`, :func:`stability_from_results`
artifact discovery                        :func:`token_artifacts` (text), :func:`feature_artifacts` (dense)
========================================  ==================================================================

References
----------
.. [1] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020.
.. [2] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICLR 2020 submission (kNN table, Table 3).
.. [3] B. L. Monroe, M. P. Colaresi and K. M. Quinn, "Fightin' Words", Political Analysis, 2008 (smoothed
   log-odds with their variance).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from . import _validation as v
from ._utils import blas_threads
from .result import AFLiteResult

__all__ = [
    "DEFAULT_KS",
    "MODEL_FAMILIES",
    "NEGATION_WORDS",
    "ClassSimilarity",
    "OneShotFilter",
    "StabilityReport",
    "baseline_comparison",
    "class_impact",
    "feature_artifacts",
    "knn_distance_table",
    "knn_table_wide",
    "make_model",
    "model_accuracies",
    "one_shot_filter",
    "random_subset",
    "removal_stability",
    "representation_bias",
    "similarity_matrices",
    "stability_from_results",
    "token_artifacts",
]

#: model families evaluated by :func:`model_accuracies`, by name, with what each one is
MODEL_FAMILIES: dict[str, str] = {
    "linear": "LogisticRegression(C=1, lbfgs, max_iter=1000) on the features as given",
    "rbf": "SVC(kernel='rbf', C=1, gamma='scale') on the features as given",
    "knn": "KNeighborsClassifier(n_neighbors=min(15, n_train), distance-weighted) on the features as given",
    "mlp": "StandardScaler + MLPClassifier(hidden_layer_sizes=(64,), max_iter=200, alpha=1e-3)",
}

#: the k of the kNN-distance table (ICLR version, Table 3: Top1, Top5, Top10, Top50)
DEFAULT_KS = (1, 5, 10, 50)

#: negation words of the NLI artifact literature (Gururangan et al., 2018), lower case, whole words
#: (contractions such as "isn't" are single tokens for :func:`token_artifacts` and are not listed)
NEGATION_WORDS = ("no", "not", "nobody", "never", "nothing", "none", "nowhere", "neither", "nor")

#: bytes of the similarity block computed at once by the kNN table
_KNN_CHUNK_BYTES = 32 * 2**20

#: how the tokenizer of :func:`token_artifacts` splits text by default: words with an optional
#: apostrophe part ("isn't", "man's"), numbers; lower-cased first
TOKEN_PATTERN = r"(?u)\b\w+(?:'\w+)?\b"


# -- shared helpers ------------------------------------------------------------------------------------------


def _rng(random_state: Any, func: str) -> np.random.Generator:
    return np.random.default_rng(v.check_random_state(random_state, func))


def _seed(rng: np.random.Generator) -> int:
    """A sub-seed for a scikit-learn model or a nested call, drawn from the function's one generator."""
    return int(rng.integers(0, 2**31 - 1))


def _kept_mask(kept: Any, n_rows: int, func: str, name: str = "kept") -> NDArray[np.bool_]:
    """``kept`` as a boolean mask of length ``n_rows`` (an AFLiteResult gives its ``kept``)."""
    if isinstance(kept, AFLiteResult):
        arr = kept.kept
    else:
        if isinstance(kept, (pd.Series, pd.DataFrame)):
            kept = kept.to_numpy()
        arr = np.asarray(kept)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.dtype != bool:
            if arr.ndim == 1 and arr.dtype.kind in "iu" and len(arr) and np.isin(arr, (0, 1)).all():
                arr = arr.astype(bool)
            else:
                raise v.param_error(name, func, f"an AFLiteResult or a boolean array of length {n_rows}", kept,
                                    TypeError)
    if arr.ndim != 1 or len(arr) != n_rows:
        raise ValueError(
            f"The '{name}' parameter of {func} must be an AFLiteResult or a boolean array with one entry per row "
            f"({n_rows}). Got {'a result' if isinstance(kept, AFLiteResult) else 'an array'} of shape "
            f"{np.shape(arr)} instead."
        )
    return np.ascontiguousarray(arr, dtype=bool)


def _check_ks(ks: Any, func: str) -> tuple[int, ...]:
    if isinstance(ks, (int, np.integer)) and not isinstance(ks, bool):
        ks = (int(ks),)
    try:
        values = tuple(ks)
    except TypeError:
        raise v.param_error("ks", func, "a non-empty sequence of ints in [1, inf)", ks, TypeError) from None
    if not values or not all(v._is_int(k) and k >= 1 for k in values):
        raise v.param_error("ks", func, "a non-empty sequence of ints in [1, inf)", ks)
    return tuple(sorted({int(k) for k in values}))


def _check_groups(groups: Any, n_rows: int, func: str) -> NDArray[np.intp] | None:
    if groups is None:
        return None
    arr = np.asarray(groups.to_numpy() if isinstance(groups, pd.Series) else groups)
    if arr.ndim != 1 or len(arr) != n_rows:
        raise ValueError(
            f"The 'groups' parameter of {func} must have one group id per row ({n_rows}). "
            f"Got shape {arr.shape} instead."
        )
    _, inverse = np.unique(arr.astype(str) if arr.dtype == object else arr, return_inverse=True)
    return inverse.astype(np.intp)


def _check_fraction(value: Any, name: str, func: str) -> float:
    if not v._is_real(value):
        raise v.param_error(name, func, "a float in (0, 1)", value, TypeError)
    if not 0.0 < float(value) < 1.0:
        raise v.param_error(name, func, "a float in (0, 1)", value)
    return float(value)


def _check_n_threads(n_threads: Any, func: str) -> int | None:
    return None if n_threads is None else v.check_int(n_threads, "n_threads", func, low=1)


def _encode_labels(y: Any, func: str, n_rows: int | None = None) -> v.EncodedLabels:
    """Labels as codes like :func:`_validation.check_labels`, but one class is allowed (a measure of one label)."""
    arr = v._as_label_array(y, "y", func)
    n = len(arr) if n_rows is None else n_rows
    try:
        return v.check_labels(arr, "y", func, n_rows=n, min_per_class=1)
    except ValueError as exc:
        if "at least 2 classes" not in str(exc) or len(arr) == 0:
            raise
    value = arr[0].item() if isinstance(arr[0], np.generic) else arr[0]
    return v.EncodedLabels(codes=np.zeros(len(arr), dtype=np.int32), classes=(value,))


def _names(classes: tuple, codes: NDArray) -> NDArray:
    arr = np.empty(len(classes), dtype=object)
    arr[:] = list(classes)
    return arr[codes]


def _normalise_rows(X: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)


# -- model families ------------------------------------------------------------------------------------------
def make_model(name: str, *, random_state: int = 0, n_train: int | None = None, standardize: bool = False) -> Any:
    """An unfitted scikit-learn classifier of one of the :data:`MODEL_FAMILIES`.

    Parameters
    ----------
    name : {"linear", "rbf", "knn", "mlp"}
        The family (see :data:`MODEL_FAMILIES` for the exact settings).
    random_state : int, default=0
        Seed of the models that draw random numbers (the MLP).
    n_train : int, optional
        Training rows the model will see; caps kNN's ``n_neighbors``.
    standardize : bool, default=False
        Put a ``StandardScaler`` first (the MLP always has one).

    Returns
    -------
    sklearn estimator
        A classifier or a ``Pipeline`` ending in one.

    Examples
    --------
    >>> type(make_model("rbf")).__name__
    'SVC'
    >>> [step for step, _ in make_model("linear", standardize=True).steps]
    ['standardscaler', 'logisticregression']
    """
    est = _family(name, random_state, n_train)
    if standardize and name != "mlp":
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), est)
    return est


def _family(name: str, random_state: int, n_train: int | None) -> Any:
    if name == "linear":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=1.0, max_iter=1000)
    if name == "rbf":
        from sklearn.svm import SVC

        return SVC(kernel="rbf", C=1.0, gamma="scale")
    if name == "knn":
        from sklearn.neighbors import KNeighborsClassifier

        k = 15 if n_train is None else max(1, min(15, int(n_train)))
        return KNeighborsClassifier(n_neighbors=k, weights="distance")
    if name == "mlp":
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(
            StandardScaler(),
            MLPClassifier(hidden_layer_sizes=(64,), alpha=1e-3, max_iter=200, random_state=int(random_state)),
        )
    raise ValueError(
        f"The 'models' parameter of make_model must name families among {sorted(MODEL_FAMILIES)} or map names "
        f"to unfitted scikit-learn classifiers. Got {name!r} instead."
    )


def _resolve_models(models: Any, func: str) -> dict[str, Any]:
    """``{name: "family name" or estimator}`` from a name, a sequence of names or a mapping."""
    allowed = (
        f"a family name among {sorted(MODEL_FAMILIES)}, a sequence of them, or a mapping from names to unfitted "
        "scikit-learn classifiers"
    )
    if isinstance(models, str):
        models = (models,)
    if isinstance(models, Mapping):
        out = {}
        for key, est in models.items():
            if isinstance(est, str) and est in MODEL_FAMILIES:
                out[str(key)] = est
            elif hasattr(est, "fit") and hasattr(est, "predict") and hasattr(est, "get_params"):
                out[str(key)] = est
            else:
                raise v.param_error("models", func, allowed, est, TypeError)
    else:
        try:
            names = list(models)
        except TypeError:
            raise v.param_error("models", func, allowed, models, TypeError) from None
        out = {}
        for name in names:
            if not isinstance(name, str) or name not in MODEL_FAMILIES:
                raise v.param_error("models", func, allowed, name)
            out[name] = name
    if not out:
        raise v.param_error("models", func, allowed, models)
    return out


def _build(spec: Any, seed: int, n_train: int, standardize: bool = False) -> Any:
    if isinstance(spec, str):
        return make_model(spec, random_state=seed, n_train=n_train, standardize=standardize)
    from sklearn.base import clone

    est = clone(spec)
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=seed)
    if standardize:
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), est)
    return est


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
        splits = [(np.sort(np.random.default_rng(s).permutation(tr)[:max_train_rows]), te) if len(tr) > max_train_rows
                  else (tr, te) for (tr, te), s in zip(splits, sub_seeds)]
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
    models: Any = ("linear", "rbf", "knn", "mlp"),
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
    models : str, sequence of str or mapping, default=("linear", "rbf", "knn", "mlp")
        Family names of :data:`MODEL_FAMILIES`, or ``{name: unfitted sklearn classifier}``.
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
    >>> frame = model_accuracies(X, y, models=["linear", "knn"], random_state=0)
    >>> frame[["model", "n_rows"]].values.tolist()
    [['linear', 200], ['knn', 200]]
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
    threads = _check_n_threads(n_threads, func)
    cap = None if max_train_rows is None else v.check_int(max_train_rows, "max_train_rows", func, low=2)
    rng = _rng(random_state, func)
    return _accuracy_frame(Xv, labels.codes, sel, specs, k, grp, rng, threads, bool(standardize), cap)


def _accuracy_frame(Xv, codes, sel, specs, k, grp, rng, threads, standardize=False, cap=None) -> pd.DataFrame:
    rows = np.flatnonzero(sel)
    sub_codes = codes[rows]
    scores, _, note = _cv_scores(Xv[rows], sub_codes, specs, n_splits=k,
                                    groups=None if grp is None else grp[rows], rng=rng, n_threads=threads,
                                 standardize=standardize, max_train_rows=cap)
    counts = np.bincount(sub_codes) if len(rows) else np.zeros(1, int)
    majority = float(counts.max() / max(len(rows), 1))
    out = []
    for name in specs:
        s = np.asarray(scores[name], dtype=float)
        out.append({
            "model": name,
            "accuracy": float(s.mean()) if len(s) else float("nan"),
            "accuracy_std": float(s.std(ddof=1)) if len(s) > 1 else float("nan"),
            "n_splits": len(s),
            "n_rows": len(rows),
            "n_classes": int((counts > 0).sum()),
            "majority_rate": majority,
            "note": note,
        })
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
    model: Any = "linear",
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
    model : str or sklearn classifier, default="linear"
        A family name of :data:`MODEL_FAMILIES` or an unfitted classifier. Its ``predict_proba`` gives the
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
    t = v.check_fraction_or_count(train_size, "train_size", func, n=n, low=C, high=keep_n,
                                  range_text="(n_classes, size)")
    spec = _resolve_models({"model": model} if not isinstance(model, str) else (model,), func)
    spec_value = next(iter(spec.values()))
    threads = _check_n_threads(n_threads, func)
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
    return OneShotFilter(kept=kept, score=score, correct=correct, is_train=is_train,
                         params={"size": keep_n, "train_size": t, "seed": seed})


def baseline_comparison(
    X: ArrayLike,
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    partial_X: ArrayLike | None = None,
    models: Any = ("linear",),
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
    models : str, sequence of str or mapping, default=("linear",)
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
    threads = _check_n_threads(n_threads, func)
    cap = None if max_train_rows is None else v.check_int(max_train_rows, "max_train_rows", func, low=2)
    if train_size is None:
        train_size = kept.params["train_size"] if isinstance(kept, AFLiteResult) else max(labels.n_classes + 1,
                                                                                          round(0.1 * n))
    rng = _rng(random_state, func)
    n_kept = int(mask.sum())
    subsets: dict[str, NDArray[np.bool_]] = {
        "full": np.ones(n, dtype=bool),
        "aflite": mask,
        "random": random_subset(n, n_kept, random_state=rng),
    }
    if one_shot:
        subsets["one-shot"] = one_shot_filter(Xv, labels.codes, size=n_kept, train_size=train_size, random_state=rng,
                                              n_threads=threads).kept
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
    return pd.DataFrame({
        "round": h["round"].astype(int).to_numpy(),
        "size": h["size_before"].astype(int).to_numpy(),
        "n_scored": h["n_scored"].astype(int).to_numpy(),
        "representation_bias": h["mean_predictability"].astype(float).to_numpy(),
        "mean_model_accuracy": h["mean_model_accuracy"].astype(float).to_numpy(),
        "n_removed": h["n_removed"].astype(int).to_numpy(),
        "size_after": h["size_after"].astype(int).to_numpy(),
    })


# -- kNN distances (ICLR version, Table 3) -------------------------------------------------------------------
def _heldout_split(n: int, codes: NDArray, groups: NDArray | None, test_size: float, rng) -> NDArray[np.bool_]:
    """Seeded held-out side: stratified by class, or whole groups until ``test_size`` of the rows."""
    if groups is None:
        counts = np.bincount(codes)
        take = np.round(counts * test_size).astype(int)
        keys = rng.random(n)
        order = np.lexsort((keys, codes))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - np.repeat(starts, counts)
        return rank < take[codes]
    n_groups = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=n_groups)
    perm = rng.permutation(n_groups)
    cum = np.cumsum(sizes[perm])
    chosen = perm[: int(np.searchsorted(cum, test_size * n)) + 1]
    held = np.zeros(n_groups, dtype=bool)
    held[chosen] = True
    return held[groups]


def _topk_distances(Q: NDArray[np.float32], T: NDArray[np.float32], K: int, chunk_bytes: int) -> NDArray[np.float32]:
    """Sorted cosine distances (ascending) of every row of Q to its K nearest rows of T (both L2-normalised)."""
    out = np.empty((Q.shape[0], K), dtype=np.float32)
    if K == 0:
        return out
    step = max(1, chunk_bytes // max(1, 4 * T.shape[0]))
    for start in range(0, Q.shape[0], step):
        sims = Q[start : start + step] @ T.T
        if K < sims.shape[1]:
            part = np.argpartition(-sims, K - 1, axis=1)[:, :K]
            sims = np.take_along_axis(sims, part, axis=1)
        sims = -np.sort(-sims, axis=1)
        out[start : start + step] = 1.0 - sims
    return out


def knn_distance_table(
    X: ArrayLike,
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    test_size: float = 0.2,
    heldout: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    control: bool = True,
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
) -> pd.DataFrame:
    """Cosine distances from held-out rows to their k nearest training rows, before and after AFLite.

    The ICLR version's Table 3: for every held-out row, the sum of the cosine distances (1 − cos) to its k
    nearest training rows (the table's magnitudes grow with k, so they are sums), averaged over the held-out
    rows of a class; within the same class ("entailment") and against the training rows of all other classes
    ("entailment vs others"). Larger means held-out rows are farther from anything in training: a more
    diverse, less redundant set.

    What "before" and "after" mean here: the rows are split once (seeded) into a training side and a
    held-out side, and that split is shared by every stage, so stages differ only by the filtering.
    ``before``: all training-side rows as neighbours, all held-out-side rows as queries (the full data).
    ``after``: only *kept* training-side rows as neighbours and only *kept* held-out-side rows as queries
    (the filtered data split the same way: AFLite filters train and held-out data alike, as the paper's
    filtered benchmarks do). ``random`` (with ``control``): a random subset of each side of the same size as
    the kept part of that side, to separate the effect of *which* rows AFLite keeps from the effect of
    having fewer rows (fewer neighbours are farther away even without any selection).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features; they are L2-normalised (a zero row has distance 1 to everything).
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    ks : sequence of int, default=(1, 5, 10, 50)
        Neighbour counts. A k larger than the training pool of a class uses the whole pool (``k_used``).
    test_size : float, default=0.2
        Share of rows on the held-out side (stratified by class, or whole groups with ``groups``).
    heldout : boolean array of shape (n_samples,), optional
        The held-out side, instead of a random split.
    groups : array-like of shape (n_samples,), optional
        Group ids kept on one side (e.g. premises), for the random split.
    control : bool, default=True
        Add the ``random`` stage.
    random_state : int, numpy Generator or None
        Seed of the split and of the control subset.
    n_threads : int or None, default=1
        BLAS threads for the similarity products.

    Returns
    -------
    pandas.DataFrame
        One row per (stage, class, comparison, k): ``stage`` ("before", "after", "random"), ``label`` (class
        of the held-out rows), ``comparison`` ("same class" or "other classes"), ``row`` (the table's row name,
        "entailment" or "entailment vs others"), ``k, k_used, distance_sum`` (mean over held-out rows of the
        sum over the k nearest), ``distance_mean`` (= distance_sum / k_used), ``n_heldout`` (query rows),
        ``n_pool`` (candidate neighbours). Rows with no query or no pool are left out.
        :func:`knn_table_wide` lays it out like the paper.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 0], [0.6, 0.8], [0, 1], [1, 0], [0, 1]])   # the last two rows are held out
    >>> y = np.array(["a", "a", "b", "a", "b"]); held = np.array([0, 0, 0, 1, 1], bool)
    >>> t = knn_distance_table(X, y, np.ones(5, bool), ks=[1, 2], heldout=held, control=False)
    >>> wide = knn_table_wide(t)["before"].round(2)
    >>> wide.index.tolist(), wide.values.tolist()
    (['a', 'b', 'a vs others', 'b vs others'], [[0.0, 0.4], [0.0, 0.0], [1.0, 1.0], [0.2, 1.2]])
    """
    func = "knn_distance_table"
    Xv = v.check_features(X, "X", func)
    n = Xv.shape[0]
    labels = _encode_labels(y, func, n)
    mask = _kept_mask(kept, n, func)
    K_list = _check_ks(ks, func)
    tsize = _check_fraction(test_size, "test_size", func)
    grp = _check_groups(groups, n, func)
    held = None if heldout is None else _kept_mask(heldout, n, func, "heldout")
    threads = _check_n_threads(n_threads, func)
    rng = _rng(random_state, func)
    codes = labels.codes
    C = labels.n_classes
    if held is None:
        held = _heldout_split(n, codes, grp, tsize, rng)
    if held.all() or not held.any():
        raise ValueError(
            f"The 'heldout' parameter of {func} must leave rows on both sides. Got "
            f"{int(held.sum())} held-out rows of {n} instead."
        )
    stages: dict[str, NDArray[np.bool_]] = {"before": np.ones(n, dtype=bool), "after": mask}
    if control:
        ctrl = np.zeros(n, dtype=bool)
        for side in (held, ~held):
            idx = np.flatnonzero(side)
            ctrl[idx[rng.permutation(len(idx))[: int(mask[side].sum())]]] = True
        stages["random"] = ctrl
    Z = _normalise_rows(Xv)
    q_rows = np.flatnonzero(held)
    t_rows = np.flatnonzero(~held)
    Kmax = max(K_list)
    records = []
    with blas_threads(threads):
        Q = Z[q_rows]
        for stage, sel in stages.items():
            q_sel = sel[q_rows]
            t_sel = sel[t_rows]
            # nearest neighbours of every query within each class pool of this stage
            per_class: list[NDArray[np.float32]] = []
            for c in range(C):
                pool = t_rows[t_sel & (codes[t_rows] == c)]
                per_class.append(_topk_distances(Q[q_sel], Z[pool], min(Kmax, len(pool)), _KNN_CHUNK_BYTES))
            q_codes = codes[q_rows[q_sel]]
            pool_counts = np.bincount(codes[t_rows[t_sel]], minlength=C)
            for c in range(C):
                qi = q_codes == c
                if not qi.any():
                    continue
                others = [per_class[o][qi] for o in range(C) if o != c]
                other = np.sort(np.concatenate(others, axis=1), axis=1)[:, :Kmax] if others else np.empty((qi.sum(), 0))
                for comparison, D, n_pool in (
                    ("same class", per_class[c][qi], int(pool_counts[c])),
                    ("other classes", other, int(pool_counts.sum() - pool_counts[c])),
                ):
                    if D.shape[1] == 0:
                        continue
                    csum = np.cumsum(D, axis=1, dtype=np.float64)
                    for k in K_list:
                        k_used = min(k, D.shape[1])
                        total = float(csum[:, k_used - 1].mean())
                        records.append({
                            "stage": stage,
                            "label": labels.classes[c],
                            "comparison": comparison,
                            "row": str(labels.classes[c]) + (" vs others" if comparison == "other classes" else ""),
                            "k": k,
                            "k_used": k_used,
                            "distance_sum": total,
                            "distance_mean": total / k_used,
                            "n_heldout": int(qi.sum()),
                            "n_pool": n_pool,
                        })
    return pd.DataFrame.from_records(records, columns=[
        "stage", "label", "comparison", "row", "k", "k_used", "distance_sum", "distance_mean", "n_heldout", "n_pool",
    ])


def knn_table_wide(table: pd.DataFrame, *, value: str = "distance_sum") -> pd.DataFrame:
    """Lay a :func:`knn_distance_table` frame out like the paper: one row per class, columns (stage, TopK).

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`knn_distance_table`.
    value : {"distance_sum", "distance_mean"}, default="distance_sum"
        The number shown.

    Returns
    -------
    pandas.DataFrame
        Index: the table's row names, same-class rows first, then the "vs others" rows; columns: a
        MultiIndex (stage, "Top{k}").
    """
    if value not in ("distance_sum", "distance_mean"):
        raise v.param_error("value", "knn_table_wide", "'distance_sum' or 'distance_mean'", value)
    if not isinstance(table, pd.DataFrame) or not {"stage", "row", "k", value} <= set(table.columns):
        raise v.param_error("table", "knn_table_wide", "a frame returned by knn_distance_table", table, TypeError)
    wide = table.assign(top=lambda f: "Top" + f["k"].astype(str)).pivot_table(
        index="row", columns=["stage", "top"], values=value, sort=False
    )
    stage_order = [s for s in ("before", "after", "random") if s in wide.columns.get_level_values(0)]
    top_order = ["Top" + str(k) for k in sorted(table["k"].unique())]
    wide = wide.reindex(columns=pd.MultiIndex.from_product([stage_order, top_order]))
    same = table.loc[table["comparison"] == "same class", "row"].unique().tolist()
    other = table.loc[table["comparison"] == "other classes", "row"].unique().tolist()
    wide = wide.reindex([*same, *other])
    wide.index.name = None
    return wide


# -- cosine-similarity heatmaps (Figure 1) -------------------------------------------------------------------
@dataclass(frozen=True)
class ClassSimilarity:
    """Pairwise cosine similarities of sampled retained and removed rows of one class (Figure 1).

    Attributes
    ----------
    label : object
        The class.
    retained_rows, removed_rows : ndarray of int
        Row indices sampled (into X), retained first in ``matrix``.
    matrix : ndarray of float32, shape (n_r + n_m, n_r + n_m)
        Cosine similarities of ``[retained_rows, removed_rows]``; the top-left block is retained vs retained,
        the bottom-right removed vs removed.
    mean_retained_all, mean_removed_all : float
        Mean pairwise cosine similarity (off-diagonal) over *all* retained / removed rows of the class, not
        only the sample; lower means more diverse. NaN with fewer than 2 rows.
    """

    label: Any
    retained_rows: NDArray[np.intp]
    removed_rows: NDArray[np.intp]
    matrix: NDArray[np.float32]
    mean_retained_all: float
    mean_removed_all: float

    @property
    def retained(self) -> NDArray[np.float32]:
        """Retained vs retained block."""
        r = len(self.retained_rows)
        return self.matrix[:r, :r]

    @property
    def removed(self) -> NDArray[np.float32]:
        """Removed vs removed block."""
        r = len(self.retained_rows)
        return self.matrix[r:, r:]

    @property
    def mean_retained(self) -> float:
        """Mean off-diagonal similarity of the sampled retained rows."""
        return _mean_offdiag(self.retained)

    @property
    def mean_removed(self) -> float:
        """Mean off-diagonal similarity of the sampled removed rows."""
        return _mean_offdiag(self.removed)


def _mean_offdiag(S: NDArray) -> float:
    n = S.shape[0]
    if n < 2:
        return float("nan")
    return float((S.sum(dtype=np.float64) - np.trace(S, dtype=np.float64)) / (n * (n - 1)))


def _mean_pairwise_cosine(Z: NDArray[np.float32]) -> float:
    """Mean off-diagonal cosine similarity of L2-normalised rows in O(n·d): (‖Σz‖² − Σ‖z‖²) / (n(n−1))."""
    n = Z.shape[0]
    if n < 2:
        return float("nan")
    s = Z.sum(axis=0, dtype=np.float64)
    sq = float(np.einsum("ij,ij->", Z, Z, dtype=np.float64))
    return float((s @ s - sq) / (n * (n - 1)))


def similarity_matrices(
    X: ArrayLike,
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    n_per_group: int = 10,
    classes: Sequence[Any] | None = None,
    random_state: int | np.random.Generator | None = None,
) -> list[ClassSimilarity]:
    """Cosine-similarity matrices of a seeded sample of retained and removed rows, per class (Figure 1).

    Figure 1 of the paper shows, per class, retained images next to removed ones with their pairwise cosine
    similarity: retained rows are more diverse (lower similarity). Per class this samples up to
    ``n_per_group`` retained and ``n_per_group`` removed rows without replacement and returns their
    similarity matrix, plus the mean pairwise similarity over *all* retained and removed rows of the class.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features (cosine similarity of the rows).
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    n_per_group : int, default=10
        Rows sampled per class and side.
    classes : sequence, optional
        Classes to include, in this order; default: all, in the label order.
    random_state : int, numpy Generator or None
        Seed of the sample.

    Returns
    -------
    list of ClassSimilarity
        One per class.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 0], [0, 1], [1, 1], [1, 0.1], [1, 0.2], [1, 0]])
    >>> y = np.zeros(6, int); y[5] = 1
    >>> kept = np.array([1, 1, 1, 0, 0, 0], bool)
    >>> s = similarity_matrices(X, y, kept, random_state=0)[0]
    >>> s.matrix.shape, bool(s.mean_retained_all < s.mean_removed_all)
    ((5, 5), True)
    """
    func = "similarity_matrices"
    Xv = v.check_features(X, "X", func)
    n = Xv.shape[0]
    labels = _encode_labels(y, func, n)
    mask = _kept_mask(kept, n, func)
    per = v.check_int(n_per_group, "n_per_group", func, low=1)
    if classes is None:
        wanted = list(range(labels.n_classes))
    else:
        lookup = {c: i for i, c in enumerate(labels.classes)}
        wanted = []
        for c in classes:
            key = c.item() if isinstance(c, np.generic) else c
            if key not in lookup:
                raise v.param_error("classes", func, f"a sequence of classes among {list(labels.classes)[:10]}", c)
            wanted.append(lookup[key])
    rng = _rng(random_state, func)
    Z = _normalise_rows(Xv)
    out = []
    for c in wanted:
        ret = np.flatnonzero(mask & (labels.codes == c))
        rem = np.flatnonzero(~mask & (labels.codes == c))
        r_s = np.sort(ret[rng.permutation(len(ret))[:per]])
        m_s = np.sort(rem[rng.permutation(len(rem))[:per]])
        rows = np.concatenate([r_s, m_s])
        S = Z[rows] @ Z[rows].T
        out.append(ClassSimilarity(
            label=labels.classes[c], retained_rows=r_s, removed_rows=m_s, matrix=S.astype(np.float32),
            mean_retained_all=_mean_pairwise_cosine(Z[ret]), mean_removed_all=_mean_pairwise_cosine(Z[rem]),
        ))
    return out


# -- per-class impact ----------------------------------------------------------------------------------------
def class_impact(
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    threshold: float = 0.5,
    min_rows: int = 2,
    margin: float = 0.1,
) -> pd.DataFrame:
    """Class counts before and after filtering, the share each class lost, and warnings.

    A class is flagged when it loses more than ``threshold`` of its rows (default: more than half, i.e. "most
    of its rows") *and* at least ``margin`` more than the rows overall (so a run that halves the data does not
    flag every class that lost 51 %), or when fewer than ``min_rows`` of it remain (a class that small cannot
    be trained on and tested, and AFLite's weak models stop seeing it). The message also gives the overall
    share removed, so a class hit harder than the rest stands out.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    threshold : float, default=0.5
        Flag a class whose share lost is strictly above this, in [0, 1].
    min_rows : int, default=2
        Flag a class with fewer retained rows than this.
    margin : float, default=0.1
        How much more than the overall share a class must lose to be flagged, in [0, 1].

    Returns
    -------
    pandas.DataFrame
        One row per class: ``label, n_before, n_after, n_removed, share_lost, share_before, share_after``
        (the class's share of all rows before / after), ``relative_loss`` (share_lost divided by the overall
        share lost; > 1 means hit harder than average), ``warning`` (bool) and ``message`` ("" when no
        warning). ``frame.attrs["overall_share_lost"]`` holds the overall share.

    Examples
    --------
    >>> frame = class_impact(["a", "a", "a", "b", "b", "b"], [True, False, False, True, True, False])
    >>> frame[["label", "n_after", "warning"]].values.tolist()
    [['a', 1, True], ['b', 2, False]]
    """
    func = "class_impact"
    labels = _encode_labels(y, func)
    mask = _kept_mask(kept, len(labels.codes), func)
    thr = v.check_probability(threshold, "threshold", func)
    low = v.check_int(min_rows, "min_rows", func, low=0)
    extra = v.check_probability(margin, "margin", func)
    C = labels.n_classes
    before = np.bincount(labels.codes, minlength=C)
    after = np.bincount(labels.codes[mask], minlength=C)
    lost = 1.0 - after / np.maximum(before, 1)
    overall = 1.0 - mask.sum() / len(mask)
    rel = lost / overall if overall > 0 else np.full(C, np.nan)
    warn = ((lost > thr) & (lost >= overall + extra - 1e-12)) | (after < low)
    messages = []
    for c in range(C):
        if not warn[c]:
            messages.append("")
            continue
        text = (f"Class {labels.classes[c]!r} lost {lost[c]:.0%} of its rows ({before[c] - after[c]} of "
                f"{before[c]}; overall {overall:.0%}).")
        if after[c] < low:
            text += f" Only {after[c]} row(s) remain, too few to train or evaluate on."
        messages.append(text)
    frame = pd.DataFrame({
        "label": _names(labels.classes, np.arange(C)),
        "n_before": before,
        "n_after": after,
        "n_removed": before - after,
        "share_lost": lost,
        "share_before": before / before.sum(),
        "share_after": after / max(int(after.sum()), 1),
        "relative_loss": rel,
        "warning": warn,
        "message": messages,
    })
    frame.attrs["overall_share_lost"] = float(overall)
    return frame


# -- stability across seeds ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class StabilityReport:
    """How stable AFLite's removals are across seeds (see :func:`removal_stability`).

    Attributes
    ----------
    removed : ndarray of bool, shape (n_runs, n_samples)
        Removed rows of each run.
    seeds : tuple of int
        Seed of each run.
    labels : ndarray, shape (n_samples,)
        Class of every row.
    results : tuple of AFLiteResult
        The runs (empty when built from masks).
    """

    removed: NDArray[np.bool_]
    seeds: tuple
    labels: NDArray
    results: tuple = ()

    @property
    def n_runs(self) -> int:
        """Number of runs."""
        return int(self.removed.shape[0])

    @property
    def frequency(self) -> NDArray[np.float64]:
        """Removal frequency of every row, in [0, 1]: share of runs that removed it (1 = robust removal)."""
        return self.removed.mean(axis=0)

    @property
    def jaccard(self) -> pd.DataFrame:
        """Pairwise Jaccard similarity |A ∩ B| / |A ∪ B| of the runs' removed sets (1 on the diagonal)."""
        R = self.removed.astype(np.float64)
        inter = R @ R.T
        sizes = R.sum(axis=1)
        union = sizes[:, None] + sizes[None, :] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            J = np.where(union > 0, inter / union, 1.0)
        names = [f"seed {s}" for s in self.seeds]
        return pd.DataFrame(J, index=names, columns=names)

    @property
    def mean_jaccard(self) -> float:
        """Mean pairwise Jaccard over distinct pairs of runs (NaN with one run)."""
        if self.n_runs < 2:
            return float("nan")
        J = self.jaccard.to_numpy()
        return float(J[np.triu_indices(self.n_runs, 1)].mean())

    def to_frame(self) -> pd.DataFrame:
        """One row per example: ``label, removal_frequency, n_runs_removed, status``.

        ``status`` is "always removed" (every run), "sometimes removed" or "never removed".
        """
        count = self.removed.sum(axis=0)
        status = np.where(count == self.n_runs, "always removed",
                          np.where(count == 0, "never removed", "sometimes removed"))
        frame = pd.DataFrame({"label": self.labels, "removal_frequency": self.frequency,
                              "n_runs_removed": count, "status": status})
        frame.index.name = "row"
        return frame

    def summary(self) -> dict[str, float | int]:
        """Headline numbers of the report.

        Returns
        -------
        dict
            ``n_runs, mean_jaccard, min_jaccard``, rows ``always_removed, sometimes_removed, never_removed``
            and ``robust_share``: of the rows removed by at least one run, the share removed by every run.
        """
        count = self.removed.sum(axis=0)
        ever = int((count > 0).sum())
        always = int((count == self.n_runs).sum())
        J = self.jaccard.to_numpy()
        off = J[np.triu_indices(self.n_runs, 1)]
        return {
            "n_runs": self.n_runs,
            "mean_jaccard": self.mean_jaccard,
            "min_jaccard": float(off.min()) if len(off) else float("nan"),
            "always_removed": always,
            "sometimes_removed": ever - always,
            "never_removed": int((count == 0).sum()),
            "robust_share": always / ever if ever else float("nan"),
        }


def stability_from_results(results: Sequence[AFLiteResult]) -> StabilityReport:
    """Stability of removals across runs already made (same data, e.g. different seeds).

    Parameters
    ----------
    results : sequence of AFLiteResult
        At least one run, all on the same rows.

    Returns
    -------
    StabilityReport
    """
    func = "stability_from_results"
    runs = list(results) if not isinstance(results, AFLiteResult) else [results]
    if not runs or not all(isinstance(r, AFLiteResult) for r in runs):
        raise v.param_error("results", func, "a non-empty sequence of AFLiteResult", results, TypeError)
    n = runs[0].n_rows
    if any(r.n_rows != n or r.classes != runs[0].classes for r in runs):
        raise ValueError(
            f"The 'results' parameter of {func} must hold runs on the same rows and classes. "
            f"Got runs over {sorted({r.n_rows for r in runs})} rows instead."
        )
    removed = np.vstack([~r.kept for r in runs])
    return StabilityReport(removed=removed, seeds=tuple(int(r.params.get("seed", -1)) for r in runs),
                           labels=runs[0].labels, results=tuple(runs))


def removal_stability(
    X: ArrayLike,
    y: ArrayLike,
    *,
    n_runs: int = 5,
    random_state: int | np.random.Generator | None = None,
    callback: Any = None,
    **aflite_params: Any,
) -> StabilityReport:
    """Run AFLite with ``n_runs`` seeds and report how often each row is removed.

    The seeds are drawn from ``random_state``; every other parameter is passed to
    :func:`aflite_core.aflite` unchanged (``target_size``, ``train_size``, ``slice_size``, ``tau`` … are
    required as there). Rows removed by every run are robust removals; rows removed by only some runs
    depend on the random partitions.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The representation Φ(X).
    y : array-like of shape (n_samples,)
        Labels.
    n_runs : int, default=5
        Runs (seeds), at least 2.
    random_state : int, numpy Generator or None
        Source of the runs' seeds.
    callback : callable, optional
        Called as ``callback(run_index, n_runs)`` after each run (progress); returning ``False`` stops early
        and the report covers the finished runs.
    **aflite_params
        Passed to :func:`aflite_core.aflite` (``random_state`` is this function's own: the seeds' source).

    Returns
    -------
    StabilityReport
        Per-row removal frequency, pairwise Jaccard, the runs.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300); X = rng.normal(size=(300, 4)); X[:100, 0] += 6 * (2 * y[:100] - 1)
    >>> rep = removal_stability(X, y, n_runs=3, random_state=0, target_size=180, train_size=60, slice_size=40)
    >>> rep.removed.shape, bool(rep.mean_jaccard > 0.5)
    ((3, 300), True)
    """
    from .filtering import aflite

    func = "removal_stability"
    runs = v.check_int(n_runs, "n_runs", func, low=2)
    if callback is not None and not callable(callback):
        raise v.param_error("callback", func, "a callable or None", callback, TypeError)
    rng = _rng(random_state, func)
    seeds = [_seed(rng) for _ in range(runs)]
    results = []
    for i, seed in enumerate(seeds):
        results.append(aflite(X, y, random_state=seed, **aflite_params))
        if callback is not None and callback(i + 1, runs) is False:
            break
    return stability_from_results(results)


# -- artifact discovery --------------------------------------------------------------------------------------
def _check_texts(texts: Any, n: int | None, func: str) -> list[str]:
    if isinstance(texts, pd.Series):
        texts = texts.tolist()
    if isinstance(texts, str) or not isinstance(texts, Sequence | np.ndarray):
        raise v.param_error("texts", func, "a sequence of str", texts, TypeError)
    values = list(texts)
    for i, t in enumerate(values):
        if not isinstance(t, str):
            raise ValueError(f"The 'texts' parameter of {func} must be a sequence of str. Row {i} is {t!r}.")
    if n is not None and len(values) != n:
        raise ValueError(f"The 'texts' parameter of {func} must have one text per label ({n}). Got {len(values)}.")
    return values


def token_artifacts(
    texts: Sequence[str],
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    min_count: int = 5,
    top_k: int = 15,
    alpha: float = 0.5,
    token_pattern: str = TOKEN_PATTERN,
) -> pd.DataFrame:
    """Tokens whose share among removed rows differs most from their share among retained rows, per label.

    Within each label, for every token w: ``a`` removed rows and ``b`` retained rows contain it, out of
    ``n_rem`` and ``n_ret``. The smoothed log-odds ratio is
    ``log((a+α)/(n_rem−a+α)) − log((b+α)/(n_ret−b+α))`` with variance
    ``1/(a+α) + 1/(n_rem−a+α) + 1/(b+α) + 1/(n_ret−b+α)``; tokens are ranked by ``z`` = log-odds / sd
    (positive: over-represented among removed rows, the artifacts a model exploited, e.g. "nobody" among
    removed contradictions of NLI data). Tokens are counted once per row (document frequency), after
    lower-casing, with a simple regular expression.

    Parameters
    ----------
    texts : sequence of str, length n_samples
        The text of every row (for NLI, the hypothesis).
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    min_count : int, default=5
        Only tokens in at least this many rows of the label (removed and retained together).
    top_k : int, default=15
        Tokens per label and direction.
    alpha : float, default=0.5
        Smoothing added to every cell (> 0).
    token_pattern : str
        Regular expression of a token (default: words with an optional apostrophe part, e.g. "isn't").

    Returns
    -------
    pandas.DataFrame
        Per label, the ``top_k`` tokens most over-represented among removed rows (``direction="removed"``)
        and among retained rows (``direction="retained"``): ``label, direction, rank, token, n_removed,
        n_retained`` (rows containing it), ``share_removed, share_retained, log_odds, z``.

    Examples
    --------
    >>> texts = ["nobody sleeps"] * 6 + ["a man sleeps"] * 6
    >>> kept = [False] * 6 + [True] * 6
    >>> t = token_artifacts(texts, ["c"] * 12, kept, min_count=3, top_k=1)
    >>> t[["direction", "token"]].values.tolist()
    [['removed', 'nobody'], ['retained', 'a']]
    """
    func = "token_artifacts"
    labels = _encode_labels(y, func)
    n = len(labels.codes)
    docs = _check_texts(texts, n, func)
    mask = _kept_mask(kept, n, func)
    mc = v.check_int(min_count, "min_count", func, low=1)
    k = v.check_int(top_k, "top_k", func, low=1)
    if not v._is_real(alpha) or not float(alpha) > 0:
        raise v.param_error("alpha", func, "a float in (0, inf)", alpha)
    from sklearn.feature_extraction.text import CountVectorizer

    vec = CountVectorizer(lowercase=True, token_pattern=token_pattern, binary=True)
    try:
        M = vec.fit_transform(docs).tocsc()
    except ValueError:  # empty vocabulary
        M = None
    cols = ["label", "direction", "rank", "token", "n_removed", "n_retained", "share_removed", "share_retained",
            "log_odds", "z"]
    if M is None:
        return pd.DataFrame(columns=cols)
    vocab = vec.get_feature_names_out()
    C = labels.n_classes
    group = labels.codes * 2 + mask.astype(np.int64)  # 2c = removed, 2c+1 = retained
    import scipy.sparse as sp

    G = sp.csr_matrix((np.ones(n), (group, np.arange(n))), shape=(2 * C, n))
    counts = np.asarray((G @ M).todense(), dtype=np.float64)  # (2C, V): rows containing each token
    sizes = np.bincount(group, minlength=2 * C).astype(np.float64)
    a_ = float(alpha)
    frames = []
    for c in range(C):
        a, b = counts[2 * c], counts[2 * c + 1]
        n_rem, n_ret = sizes[2 * c], sizes[2 * c + 1]
        if n_rem == 0 or n_ret == 0:
            continue
        ok = (a + b) >= mc
        if not ok.any():
            continue
        lo = np.log((a + a_) / (n_rem - a + a_)) - np.log((b + a_) / (n_ret - b + a_))
        var = 1 / (a + a_) + 1 / (n_rem - a + a_) + 1 / (b + a_) + 1 / (n_ret - b + a_)
        z = lo / np.sqrt(var)
        idx = np.flatnonzero(ok)
        for direction, sign in (("removed", -1.0), ("retained", 1.0)):
            order = idx[np.lexsort((vocab[idx], sign * z[idx]))][:k]
            order = order[(z[order] > 0) if direction == "removed" else (z[order] < 0)]
            frames.append(pd.DataFrame({
                "label": [labels.classes[c]] * len(order),
                "direction": direction,
                "rank": np.arange(1, len(order) + 1),
                "token": vocab[order],
                "n_removed": a[order].astype(int),
                "n_retained": b[order].astype(int),
                "share_removed": a[order] / n_rem,
                "share_retained": b[order] / n_ret,
                "log_odds": lo[order],
                "z": z[order],
            }))
    if not frames:
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)[cols]


def feature_artifacts(
    X: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    y: ArrayLike | None = None,
    top_k: int = 10,
) -> pd.DataFrame:
    """The feature dimensions that best separate removed from retained rows (dense features).

    Per dimension: the standardised mean difference ``smd = (mean_removed − mean_retained) / pooled sd``
    and the AUC = P(a removed row's value > a retained row's value) (ties count half; 0.5 = no separation),
    from ranks. Dimensions are ranked by ``|AUC − 0.5|``. With ``y`` the comparison is made within each
    label (removed vs retained rows of the same class), so a dimension that only tells classes apart does not
    show up merely because AFLite removed more of one class.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    y : array-like of shape (n_samples,), optional
        Labels; compare within each label.
    top_k : int, default=10
        Dimensions per group.

    Returns
    -------
    pandas.DataFrame
        ``label`` ("all" without y), ``rank, dimension, mean_removed, mean_retained, smd, auc``; groups with
        no removed or no retained row are left out.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); kept = np.ones(200, bool); kept[:50] = False; X[:50, 3] += 2
    >>> feature_artifacts(X, kept, top_k=1)["dimension"].tolist()
    [3]
    """
    from scipy.stats import rankdata

    func = "feature_artifacts"
    Xv = v.check_features(X, "X", func)
    n = Xv.shape[0]
    mask = _kept_mask(kept, n, func)
    k = v.check_int(top_k, "top_k", func, low=1)
    if y is None:
        groups = [("all", np.arange(n))]
    else:
        labels = _encode_labels(y, func, n)
        groups = [(labels.classes[c], np.flatnonzero(labels.codes == c)) for c in range(labels.n_classes)]
    frames = []
    for name, rows in groups:
        rem = ~mask[rows]
        n1, n0 = int(rem.sum()), int((~rem).sum())
        if n1 == 0 or n0 == 0:
            continue
        A = Xv[rows].astype(np.float64)
        m1, m0 = A[rem].mean(axis=0), A[~rem].mean(axis=0)
        v1 = A[rem].var(axis=0, ddof=1) if n1 > 1 else np.zeros(A.shape[1])
        v0 = A[~rem].var(axis=0, ddof=1) if n0 > 1 else np.zeros(A.shape[1])
        pooled = np.sqrt(((n1 - 1) * v1 + (n0 - 1) * v0) / max(n1 + n0 - 2, 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            smd = np.where(pooled > 0, (m1 - m0) / pooled, 0.0)
        ranks = rankdata(A, axis=0)
        auc = (ranks[rem].sum(axis=0) - n1 * (n1 + 1) / 2) / (n1 * n0)
        order = np.lexsort((np.arange(A.shape[1]), -np.abs(auc - 0.5)))[:k]
        frames.append(pd.DataFrame({
            "label": [name] * len(order),
            "rank": np.arange(1, len(order) + 1),
            "dimension": order,
            "mean_removed": m1[order],
            "mean_retained": m0[order],
            "smd": smd[order],
            "auc": auc[order],
        }))
    cols = ["label", "rank", "dimension", "mean_removed", "mean_retained", "smd", "auc"]
    if not frames:
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)[cols]
