"""Out-of-distribution generalisation after AFLite (Le Bras et al., ICML 2020, §4.1 and §5).

The paper's headline: models trained on AFLite-filtered data generalise better out of distribution than models
trained on the original data or on a random subset of the same size (its Tables 1, 2 and 5). Two experiments
test that here, on data we control:

* :func:`ood_experiment` - **synthetic**: the concentric circles of §3
  (:func:`aflite_core.data.planted_bias.paper_circles`). Model families are trained on the original training set, on
  AFLite's kept rows and on a random subset of the same size (stratified), and tested on a fresh draw from the same
  generator (``in_distribution``) and on the same draw with the planted shortcut removed (``no_bias``: the bias features
  of the biased rows become pure noise) or reversed (``flipped_bias``: they point to the other class). The ring
  coordinates and labels of the three test sets are identical; only the bias columns differ. A planted shift makes the
  expected outcome likely by construction, so
* :func:`ood_real` - **real transfer**: the same three training sets built from the shared SNLI sample's
  premise + hypothesis features, tested on held-out SNLI rows and on the shared MultiNLI sample (another genre
  mix, its own annotation artefacts), reported whichever way it comes out.

Both return one tidy table (:class:`OODResult`): ``dataset, model, train_set, test_set, accuracy`` plus the
spread over seeds and the sizes.

References
----------
.. [1] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020, §4.1 (Table 1), §5 (Table 5).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _validation as v
from .._utils import blas_threads
from .paired_seeds import paired_differences

__all__ = [
    "OOD_DEFAULTS",
    "OOD_MODELS",
    "OOD_TEST_SETS",
    "OOD_TRAIN_SETS",
    "REAL_OOD_DEFAULTS",
    "OODResult",
    "default_shared_dir",
    "nli_pair_features",
    "ood_experiment",
    "ood_real",
    "paired_differences",
    "shifted_test_sets",
]

#: the three training sets: all rows, AFLite's kept rows, a stratified random subset of the same size
OOD_TRAIN_SETS: tuple[str, ...] = ("original", "aflite", "random")
#: the synthetic test sets (same rows and labels; only the bias columns differ)
OOD_TEST_SETS: tuple[str, ...] = ("in_distribution", "no_bias", "flipped_bias")
#: model families trained on every training set (names of :data:`aflite_core.engine.registry.CLASSIFIERS`)
OOD_MODELS: tuple[str, ...] = ("logistic", "rbf")
#: AFLite parameters of the synthetic experiment: the synthetic experiment's (fractions of the training rows)
OOD_DEFAULTS: dict[str, Any] = {"target_size": 0.1, "train_size": 0.05, "slice_size": 0.05, "tau": 0.75}
#: AFLite parameters of the real transfer (fractions of the SNLI training rows): the paper's SNLI ratio for its
#: out-of-distribution models (182k of 550k rows kept, Table 1), t 10 % and k 5 %
REAL_OOD_DEFAULTS: dict[str, Any] = {"target_size": 1 / 3, "train_size": 0.1, "slice_size": 0.05, "tau": 0.75}


@dataclass(frozen=True, eq=False)
class OODResult:
    """An out-of-distribution experiment's outcome.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per dataset, model, training set and test set: ``dataset, model, train_set, test_set,
        accuracy`` (mean over seeds), ``accuracy_std`` (over seeds; 0 with one seed), ``n_train`` (mean
        training rows), ``n_test``, ``n_seeds``.
    runs : pandas.DataFrame
        The same per seed (``seed`` column, no std).
    params : dict
        AFLite parameters, models, seeds, timings.
    bias_correlation : pandas.DataFrame
        Synthetic only: per dataset, seed and training set (``train_set``), the correlation of the bias direction
        with the label among its *unbiased* rows (``correlation``, ``n_unbiased``; see
        :func:`~aflite_core.experiments.paired_seeds.bias_label_correlation`): negative means AFLite's kept rows
        carry an inverted shortcut that a flipped bias rewards. Empty for the real transfer.
    """

    table: pd.DataFrame
    runs: pd.DataFrame
    params: dict = field(default_factory=dict)
    bias_correlation: pd.DataFrame = field(default_factory=pd.DataFrame)

    def paired(self) -> pd.DataFrame:
        """Paired differences over seeds (AFLite − random, AFLite − all rows) with paired tests.

        See :func:`~aflite_core.experiments.paired_seeds.paired_differences`: ``mean, sd`` of the per-seed
        differences, the seeds in each direction, ``t_p`` (``scipy.stats.ttest_rel``) and ``wilcoxon_p``.
        """
        return paired_differences(self.runs)

    def records(self) -> list[dict[str, Any]]:
        """The table as JSON-friendly records (what ``aflite ood --json`` prints)."""
        frame = self.table.astype(object).where(self.table.notna(), None)
        return [
            {k: (x.item() if isinstance(x, np.generic) else x) for k, x in row.items()}
            for row in frame.to_dict(orient="records")
        ]

    def shift_loss(self, shifted: str = "flipped_bias", reference: str = "in_distribution") -> pd.DataFrame:
        """Accuracy lost under a shift, per dataset, model and training set: reference minus shifted (> 0 = lost).

        Returns
        -------
        pandas.DataFrame
            ``dataset, model, train_set, reference, shifted, loss``.
        """
        t = self.table
        wide = t.pivot_table(index=["dataset", "model", "train_set"], columns="test_set", values="accuracy")
        if shifted not in wide.columns or reference not in wide.columns:
            raise ValueError(f"The table has no test sets {reference!r} and {shifted!r}; it has {list(wide.columns)}.")
        out = pd.DataFrame(
            {"reference": wide[reference], "shifted": wide[shifted], "loss": wide[reference] - wide[shifted]}
        ).reset_index()
        order = {s: i for i, s in enumerate(OOD_TRAIN_SETS)}
        ds_order = {d: i for i, d in enumerate(dict.fromkeys(t["dataset"]))}
        out = out.sort_values(
            ["dataset", "model", "train_set"],
            key=lambda col: (
                col.map(ds_order) if col.name == "dataset" else col.map(order) if col.name == "train_set" else col
            ),
        )
        return out.reset_index(drop=True)


def shifted_test_sets(data: Any) -> dict[str, Any]:
    """The three synthetic test sets of one concentric-circles draw: as drawn, shortcut removed, reversed.

    For a :class:`~aflite_core.data.planted_bias.BiasedCircles` drawn by
    :func:`~aflite_core.data.planted_bias.make_biased_circles`, the bias columns of a biased row are noise plus the
    planted shift ±(bias_strength/2)·u toward its label. ``no_bias`` subtracts that shift (the columns become the same
    pure noise as on unbiased rows: the paper's data without biases); ``flipped_bias`` subtracts it twice (the columns
    point to the other class). Rows, ring coordinates and labels are the same in all three.

    Parameters
    ----------
    data : BiasedCircles

    Returns
    -------
    dict of str to BiasedCircles
        ``{"in_distribution": data, "no_bias": ..., "flipped_bias": ...}`` (in :data:`OOD_TEST_SETS` order).

    Examples
    --------
    >>> from aflite_core.data.planted_bias import make_biased_circles
    >>> sets = shifted_test_sets(make_biased_circles(200, random_state=0))
    >>> list(sets), bool((sets["no_bias"].X[:, :2] == sets["flipped_bias"].X[:, :2]).all())
    (['in_distribution', 'no_bias', 'flipped_bias'], True)
    """
    from ..data.planted_bias import BiasedCircles

    if not isinstance(data, BiasedCircles):
        raise v.param_error("data", "shifted_test_sets", "a BiasedCircles", data, TypeError)
    d = data.X.shape[1] - 2
    strength = float(data.params.get("bias_strength", 6.0))
    u = np.full(d, 1.0 / np.sqrt(d))
    shift = np.zeros((data.n_samples, d))
    b = data.is_biased
    shift[b] = ((data.y[b] - 0.5) * strength)[:, None] * u
    out = {"in_distribution": data}
    for name, times in (("no_bias", 1.0), ("flipped_bias", 2.0)):
        X = data.X.astype(np.float64).copy()
        X[:, 2:] -= times * shift
        out[name] = replace(data, X=X.astype(np.float32), name=f"{data.name} ({name.replace('_', ' ')})")
    return out


def _fit_score(
    family: str,
    X: NDArray,
    y: NDArray,
    tests: Mapping[str, tuple[NDArray, NDArray]],
    seed: int,
    standardize: bool = True,
) -> dict[str, float]:
    from sklearn.exceptions import ConvergenceWarning

    from ..engine.registry import make_classifier

    est = make_classifier(family, random_state=seed, n_train=len(y), standardize=standardize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    return {name: float(np.mean(est.predict(Xt) == yt)) for name, (Xt, yt) in tests.items()}


def _check_models(models: Any, func: str) -> tuple[str, ...]:
    from ..engine.registry import CLASSIFIERS

    if isinstance(models, str):
        models = (models,)
    try:
        names = tuple(models)
    except TypeError:
        raise v.param_error("models", func, f"a sequence of names among {sorted(CLASSIFIERS)}", models) from None
    if not names or not all(isinstance(m, str) and m in CLASSIFIERS for m in names) or len(set(names)) != len(names):
        allowed = f"a non-empty sequence of distinct names among {sorted(CLASSIFIERS)}"
        raise v.param_error("models", func, allowed, models)
    return names


def _summarise(runs: pd.DataFrame) -> pd.DataFrame:
    keys = ["dataset", "model", "train_set", "test_set"]
    order = {k: {x: i for i, x in enumerate(dict.fromkeys(runs[k]))} for k in keys}
    out = (
        runs.groupby(keys, sort=False)
        .agg(
            accuracy=("accuracy", "mean"),
            accuracy_std=("accuracy", lambda s: float(np.std(s, ddof=1)) if len(s) > 1 else 0.0),
            n_train=("n_train", "mean"),
            n_test=("n_test", "first"),
            n_seeds=("seed", "nunique"),
        )
        .reset_index()
    )
    out = out.sort_values(keys, key=lambda col: col.map(order[col.name])).reset_index(drop=True)
    return out


def _counts(aflite_kw: Mapping[str, Any], n: int) -> dict[str, Any]:
    """AFLite's n, t, k as row counts (a float in (0, 1) is a fraction of the ``n`` training rows)."""
    out = dict(aflite_kw)
    for key in ("target_size", "train_size", "slice_size"):
        val = out[key]
        if v._is_real(val) and not v._is_int(val) and 0 < float(val) < 1:
            out[key] = max(1, round(float(val) * n))
    return out


def _three_training_sets(
    X: NDArray, y: NDArray, aflite_kw: Mapping[str, Any], seed: int, n_threads: int | None
) -> tuple[dict[str, NDArray[np.bool_]], Any]:
    from ..engine.filtering import aflite
    from ..measures.baselines import random_subset

    s_run, s_random = (int(s) for s in np.random.default_rng(seed).integers(0, 2**31 - 1, size=2))
    res = aflite(X, y, random_state=s_run, n_threads=n_threads, **aflite_kw)
    masks = {
        "original": np.ones(len(y), dtype=bool),
        "aflite": np.asarray(res.kept, dtype=bool),
        "random": random_subset(len(y), res.n_kept, y=y, random_state=s_random),
    }
    return masks, res


def ood_experiment(
    datasets: Sequence[Any] | None = None,
    *,
    models: Sequence[str] = OOD_MODELS,
    target_size: int | float = OOD_DEFAULTS["target_size"],
    train_size: int | float = OOD_DEFAULTS["train_size"],
    slice_size: int | float = OOD_DEFAULTS["slice_size"],
    tau: float = OOD_DEFAULTS["tau"],
    n_partitions: int = 64,
    n_test: int = 2000,
    seeds: Sequence[int] = tuple(range(10)),
    n_threads: int | None = 1,
    callback: Callable[[int, int, str], Any] | None = None,
) -> OODResult:
    """Synthetic out-of-distribution test of AFLite (ICML 2020's §5 claim, on the §3 circles).

    For every seed and dataset: draw the training set (:func:`~aflite_core.data.planted_bias.paper_circles` with that
    seed, unless ``datasets`` are given), run :func:`aflite_core.aflite` on it, draw a random subset of the same
    size (stratified by class), train every model family on the three training sets (features standardised on the
    training rows), and score them on a fresh draw from the same generator and on its two shifted versions
    (:func:`shifted_test_sets`). The paper's expectation: the models trained on AFLite's rows lose less under
    the shift (``flipped_bias``) than those trained on all rows or on the random subset.

    Parameters
    ----------
    datasets : sequence of BiasedCircles, optional
        Training sets to use for every seed (then only AFLite, the random subset and the models vary with the
        seed). Default: ``paper_circles(2000, random_state=seed)`` per seed.
    models : sequence of str, default=("logistic", "rbf")
        Families of :data:`aflite_core.engine.registry.CLASSIFIERS`.
    target_size, train_size, slice_size, tau, n_partitions
        AFLite's n, t, k (fractions of the training rows or counts), τ and m (default: the synthetic
        experiment's, :data:`OOD_DEFAULTS`).
    n_test : int, default=2000
        Rows of each test set.
    seeds : sequence of int, default=(0, 1, ..., 9)
        Repetitions; the table reports the mean and the spread, :meth:`OODResult.paired` the paired differences.
    n_threads : int or None, default=1
        BLAS threads.
    callback : callable, optional
        ``callback(step, n_steps, what)`` after every dataset of every seed.

    Returns
    -------
    OODResult
        ``dataset`` is the training set's name (e.g. ``"separation 0.6"``); ``test_set`` one of
        :data:`OOD_TEST_SETS`; ``train_set`` one of :data:`OOD_TRAIN_SETS`.

    Examples
    --------
    >>> from aflite_core.data.planted_bias import paper_circles
    >>> res = ood_experiment(paper_circles(600, separations=(0.6,)), models=("logistic",), seeds=(0,), n_test=400)
    >>> sorted(res.table["test_set"].unique())
    ['flipped_bias', 'in_distribution', 'no_bias']
    >>> loss = res.shift_loss().set_index("train_set")["loss"]
    >>> bool(loss["aflite"] < loss["original"])
    True
    """
    from ..data.planted_bias import BiasedCircles, make_biased_circles, paper_circles

    func = "ood_experiment"
    fams = _check_models(models, func)
    seed_list = v.check_seeds(seeds, func)
    n_t = v.check_int(n_test, "n_test", func, low=10)
    if datasets is not None:
        given = list(datasets)
        if not given or not all(isinstance(d, BiasedCircles) for d in given):
            raise v.param_error("datasets", func, "None or a non-empty sequence of BiasedCircles", datasets, TypeError)
    else:
        given = None
    v.check_optional_callable(callback, "callback", func)
    n_threads = v.check_n_threads(n_threads, func)
    aflite_kw = {
        "target_size": target_size,
        "train_size": train_size,
        "slice_size": slice_size,
        "tau": tau,
        "n_partitions": n_partitions,
    }
    from .paired_seeds import bias_label_correlation

    started = time.perf_counter()
    rows, bias_rows = [], []
    n_sets = len(given) if given is not None else 4
    total, step = len(seed_list) * n_sets, 0
    for seed in seed_list:
        data = given if given is not None else paper_circles(random_state=seed)
        seed_rng = np.random.default_rng(seed)
        for d in data:
            s_sets, s_test, s_models = (int(s) for s in seed_rng.integers(0, 2**31 - 1, size=3))
            n = d.n_samples
            kw = _counts(aflite_kw, n)
            masks, _ = _three_training_sets(d.X, d.y, kw, s_sets, n_threads)
            for train_set, mask in masks.items():  # the shortcut left among each training set's unbiased rows
                unbiased = mask & ~np.asarray(d.is_biased, dtype=bool)
                bias_rows.append(
                    {
                        "dataset": d.name,
                        "seed": seed,
                        "train_set": train_set,
                        "n_unbiased": int(unbiased.sum()),
                        "correlation": bias_label_correlation(d.X, d.y, unbiased),
                    }
                )
            params = {k: val for k, val in d.params.items() if k not in ("seed", "n_samples")}
            test = make_biased_circles(n_t, **params, random_state=s_test)
            tests = {name: (t.X, t.y) for name, t in shifted_test_sets(test).items()}
            model_seeds = np.random.default_rng(s_models).integers(0, 2**31 - 1, size=len(fams))
            with blas_threads(n_threads):
                for fam, ms in zip(fams, model_seeds):
                    for train_set, mask in masks.items():
                        acc = _fit_score(fam, d.X[mask], d.y[mask], tests, int(ms))
                        for test_set in OOD_TEST_SETS:
                            rows.append(
                                {
                                    "dataset": d.name,
                                    "model": fam,
                                    "train_set": train_set,
                                    "test_set": test_set,
                                    "accuracy": acc[test_set],
                                    "n_train": int(mask.sum()),
                                    "n_test": n_t,
                                    "seed": seed,
                                }
                            )
            step += 1
            if callback is not None:
                callback(step, total, f"{d.name}, seed {seed}")
    runs = pd.DataFrame(rows)
    params = {
        **aflite_kw,
        "models": list(fams),
        "seeds": list(seed_list),
        "n_test": n_t,
        "data": "paper_circles(2000, random_state=seed)" if given is None else [d.name for d in given],
        "seconds": round(time.perf_counter() - started, 3),
    }
    return OODResult(_summarise(runs), runs, params, bias_correlation=pd.DataFrame(bias_rows))


# -- the real transfer: SNLI sample -> MultiNLI sample -------------------------------------------------------------
def nli_pair_features(directory: str | os.PathLike, stem: str) -> tuple[NDArray[np.float32], NDArray, NDArray]:
    """Premise + hypothesis features of a shared NLI sample: ``[p, h, |p − h|, p * h]`` of its MiniLM embeddings.

    Reads ``<stem>.jsonl`` (labels, premises) and ``<stem>.prem_minilm.npy`` / ``<stem>.hyp_minilm.npy`` from
    ``directory`` (the layout of the project's shared data, see its README); the concatenation is the usual
    sentence-pair classifier input (InferSent's features).

    Parameters
    ----------
    directory : str or path-like
        Folder of the files.
    stem : str
        ``"snli_sample"`` or ``"mnli_sample"``.

    Returns
    -------
    X : ndarray of float32, shape (n, 1536)
    y : ndarray of str
        Gold labels.
    premise : ndarray of str
        Premises (to keep a premise's hypotheses on one side of a split).
    """
    folder = Path(directory)
    table = folder / f"{stem}.jsonl"
    if not table.is_file():
        raise ValueError(f"The shared NLI sample '{table}' does not exist (give the folder of {stem}.jsonl).")
    frame = pd.read_json(table, lines=True)
    p = np.load(folder / f"{stem}.prem_minilm.npy", allow_pickle=False).astype(np.float32)
    h = np.load(folder / f"{stem}.hyp_minilm.npy", allow_pickle=False).astype(np.float32)
    if p.shape != h.shape or p.shape[0] != len(frame):
        raise ValueError(f"The embeddings of '{stem}' do not match its {len(frame)} rows: {p.shape}, {h.shape}.")
    X = np.concatenate([p, h, np.abs(p - h), p * h], axis=1)
    return X, frame["label"].astype(str).to_numpy(), frame["premise"].astype(str).to_numpy()


def default_shared_dir() -> Path:
    """``$AFLITE_SHARED_DATA``, or ``../shared/data`` from the current directory (the project's layout)."""
    return Path(os.environ.get("AFLITE_SHARED_DATA", Path("..") / "shared" / "data"))


def ood_real(
    directory: str | os.PathLike | None = None,
    *,
    models: Sequence[str] = ("logistic",),
    target_size: int | float = REAL_OOD_DEFAULTS["target_size"],
    train_size: int | float = REAL_OOD_DEFAULTS["train_size"],
    slice_size: int | float = REAL_OOD_DEFAULTS["slice_size"],
    tau: float = REAL_OOD_DEFAULTS["tau"],
    n_partitions: int = 64,
    test_fraction: float = 0.2,
    seeds: Sequence[int] = tuple(range(10)),
    n_threads: int | None = 1,
    callback: Callable[[int, int, str], Any] | None = None,
) -> OODResult:
    """Real transfer: train on the SNLI sample (original / AFLite-filtered / random subset), test on MultiNLI.

    The SNLI sample is split by premise (``test_fraction`` of the premises held out, so no premise's other
    hypotheses leak); AFLite runs on the training part with Φ = the same premise + hypothesis features the models
    are trained on (:func:`nli_pair_features`; as the paper filters with RoBERTa features and trains RoBERTa).
    Every model family is trained on the three training sets and tested on the held-out SNLI rows
    (``test_set="in_distribution"``) and on the whole MultiNLI sample (``test_set="transfer"``).

    Parameters
    ----------
    directory : str or path-like, optional
        Folder of ``snli_sample.*`` and ``mnli_sample.*`` (default :func:`default_shared_dir`).
    models : sequence of str, default=("logistic",)
        Families of :data:`aflite_core.engine.registry.CLASSIFIERS` (the RBF SVM takes tens of seconds per fit here).
    target_size, train_size, slice_size, tau, n_partitions
        AFLite's n, t, k, τ, m (default :data:`REAL_OOD_DEFAULTS`: n = 1/3 of the training rows, the paper's
        182k of 550k).
    test_fraction : float, default=0.2
        Share of the SNLI premises held out.
    seeds : sequence of int, default=(0, 1, ..., 9)
        Each seed draws its own split, AFLite run, random subset and model seeds.
    n_threads : int or None, default=1
    callback : callable, optional
        ``callback(step, n_steps, what)`` after every seed.

    Returns
    -------
    OODResult
        ``dataset = "SNLI sample → MNLI sample"``.
    """
    from sklearn.model_selection import GroupShuffleSplit

    func = "ood_real"
    fams = _check_models(models, func)
    seed_list = v.check_seeds(seeds, func)
    if not v._is_real(test_fraction) or not 0.0 < float(test_fraction) < 1.0:
        raise v.param_error("test_fraction", func, "a float in (0, 1)", test_fraction)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    folder = default_shared_dir() if directory is None else Path(directory)
    X, y, premise = nli_pair_features(folder, "snli_sample")
    Xm, ym, _ = nli_pair_features(folder, "mnli_sample")
    name = "SNLI sample → MNLI sample"
    started = time.perf_counter()
    rows = []
    for i, seed in enumerate(seed_list):
        s_split, s_sets, s_models = (int(s) for s in np.random.default_rng(seed).integers(0, 2**31 - 1, size=3))
        gss = GroupShuffleSplit(n_splits=1, test_size=float(test_fraction), random_state=s_split)
        tr, te = next(gss.split(X, groups=premise))
        tr, te = np.sort(tr), np.sort(te)
        kw = _counts(
            {
                "target_size": target_size,
                "train_size": train_size,
                "slice_size": slice_size,
                "tau": tau,
                "n_partitions": n_partitions,
            },
            len(tr),
        )
        masks, _ = _three_training_sets(X[tr], y[tr], kw, s_sets, n_threads)
        tests = {"in_distribution": (X[te], y[te]), "transfer": (Xm, ym)}
        model_seeds = np.random.default_rng(s_models).integers(0, 2**31 - 1, size=len(fams))
        with blas_threads(n_threads):
            for fam, ms in zip(fams, model_seeds):
                for train_set, mask in masks.items():
                    acc = _fit_score(fam, X[tr][mask], y[tr][mask], tests, int(ms), standardize=False)
                    for test_set, (_, yt) in tests.items():
                        rows.append(
                            {
                                "dataset": name,
                                "model": fam,
                                "train_set": train_set,
                                "test_set": test_set,
                                "accuracy": acc[test_set],
                                "n_train": int(mask.sum()),
                                "n_test": len(yt),
                                "seed": seed,
                            }
                        )
        if callback is not None:
            callback(i + 1, len(seed_list), f"seed {seed}")
    runs = pd.DataFrame(rows)
    params = {
        "target_size": target_size,
        "train_size": train_size,
        "slice_size": slice_size,
        "tau": tau,
        "n_partitions": n_partitions,
        "models": list(fams),
        "seeds": list(seed_list),
        "test_fraction": float(test_fraction),
        "features": "[p, h, |p - h|, p * h] of all-MiniLM-L6-v2 premise and hypothesis embeddings (1536-d)",
        "data": str(folder),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return OODResult(_summarise(runs), runs, params)
