"""Synthetic data with planted, known biases, and the paper's synthetic experiment.

* :func:`make_planted_bias` - Gaussian classes plus a label-revealing shift on some rows;
* :func:`make_biased_circles` / :func:`paper_circles` - the concentric circles with class-specific bias
  features of ICML 2020 §3 (Figure 2), with the planted truth (biased and flipped rows);
* :func:`synthetic_experiment` - AFLite on those datasets, measured before and after (the pieces are public:
  :func:`subset_accuracies`, :func:`before_accuracies`, :func:`planted_summary`);
* :func:`add_cli` - the ``aflite synthetic`` command printing the experiment's table.

Generators are shaped like scikit-learn's ``make_*`` (``n_samples`` first, everything else keyword-only,
``random_state``) and return the planted truth too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from . import _validation as v

__all__ = [
    "EXPERIMENT_DEFAULTS",
    "EXPERIMENT_MODELS",
    "PAPER_SEPARATIONS",
    "BiasedCircles",
    "SyntheticExperiment",
    "add_cli",
    "before_accuracies",
    "format_experiment_table",
    "make_biased_circles",
    "make_planted_bias",
    "paper_circles",
    "planted_summary",
    "subset_accuracies",
    "synthetic_experiment",
]


def make_planted_bias(
    n_samples: int = 5000,
    n_features: int = 64,
    *,
    n_classes: int = 2,
    class_sep: float = 0.5,
    bias_fraction: float = 0.25,
    bias_strength: float = 6.0,
    spectrum_decay: float = 0.0,
    random_state: int | np.random.Generator | None = None,
) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.bool_]]:
    """Gaussian classes a linear model separates only moderately, plus a planted label-revealing shift.

    Each class is a Gaussian blob around a random centre at distance ``class_sep`` (in units of the noise
    scale) from the origin, so a linear model is right well above chance but far from always. Then a
    ``bias_fraction`` share of the rows is shifted by ``bias_strength`` along a direction specific to its
    class, which makes those rows almost perfectly predictable: the artefact AFLite should remove.

    Parameters
    ----------
    n_samples : int, default=5000
        Rows.
    n_features : int, default=64
        Columns (at least 2).
    n_classes : int, default=2
        Classes (balanced up to one row).
    class_sep : float, default=0.5
        Distance of each class centre from the origin.
    bias_fraction : float, default=0.25
        Share of rows carrying the planted bias.
    bias_strength : float, default=6.0
        Length of the class-specific shift.
    spectrum_decay : float, default=0.0
        0 gives isotropic noise. A positive value rotates the features randomly and scales the i-th
        principal direction by ``i ** -spectrum_decay`` and adds a constant offset of 1, like real
        embeddings (anisotropic, not centred). Linear models then need many more solver iterations.
    random_state : int, Generator or None
        Seed.

    Returns
    -------
    X : ndarray of float32, shape (n_samples, n_features)
    y : ndarray of int64, shape (n_samples,)
    is_biased : ndarray of bool, shape (n_samples,)
        The planted truth: True for shifted rows.

    Examples
    --------
    >>> X, y, is_biased = make_planted_bias(1000, 16, random_state=0)
    >>> X.shape, int(is_biased.sum())
    ((1000, 16), 250)
    """
    func = "make_planted_bias"
    n = v.check_int(n_samples, "n_samples", func, low=4)
    d = v.check_int(n_features, "n_features", func, low=2)
    C = v.check_int(n_classes, "n_classes", func, low=2)
    frac = v.check_probability(bias_fraction, "bias_fraction", func)
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    y = rng.permutation(np.arange(n) % C)
    centres = rng.normal(size=(C, d))
    centres *= class_sep / np.linalg.norm(centres, axis=1, keepdims=True)
    X = rng.normal(size=(n, d)) + centres[y]
    directions = rng.normal(size=(C, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    is_biased = np.zeros(n, dtype=bool)
    is_biased[rng.permutation(n)[: round(frac * n)]] = True
    X[is_biased] += bias_strength * directions[y[is_biased]]
    if spectrum_decay > 0:
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        X = X @ (q * np.arange(1, d + 1) ** -float(spectrum_decay)) + 1.0
    return X.astype(np.float32), y.astype(np.int64), is_biased


# -- concentric circles with planted bias features (ICML 2020 §3, Figure 2) ---------------------------------
def _check_real(value: Any, name: str, func: str, *, low: float, high: float | None = None,
                high_open: bool = False) -> float:
    """A real number in [low, high] (or [low, high) with ``high_open``; ``high=None`` means unbounded)."""
    bounds = f"[{low:g}, {'inf' if high is None else format(high, 'g')}{')' if high_open or high is None else ']'}"
    if not v._is_real(value):
        raise v.param_error(name, func, f"a float in {bounds}", value, TypeError)
    x = float(value)
    if not np.isfinite(x) or x < low or (high is not None and (x >= high if high_open else x > high)):
        raise v.param_error(name, func, f"a float in {bounds}", value)
    return x


@dataclass(frozen=True, eq=False)
class BiasedCircles:
    """A concentric-circles dataset with planted bias features and its planted truth.

    Unpacks like scikit-learn's generators: ``X, y, is_biased, is_flipped = make_biased_circles(...)``.

    Attributes
    ----------
    X : ndarray of float32, shape (n_samples, 2 + bias_dims)
        Columns 0-1: the point on its ring; columns 2…: bias features (biased rows) or noise (the others).
    y : ndarray of int64, shape (n_samples,)
        Final labels (0 = outer ring, 1 = inner ring, as in ``sklearn.datasets.make_circles``), after flips.
    is_biased : ndarray of bool, shape (n_samples,)
        True for rows whose extra columns are drawn from their label's Gaussian.
    is_flipped : ndarray of bool, shape (n_samples,)
        True for rows whose label was flipped (always a subset of ``is_biased``).
    name : str
        Display name (``paper_circles`` names the four datasets).
    params : dict
        The generator's arguments and the seed used.
    """

    X: NDArray[np.float32]
    y: NDArray[np.int64]
    is_biased: NDArray[np.bool_]
    is_flipped: NDArray[np.bool_]
    name: str = "circles"
    params: dict = field(default_factory=dict)

    def __iter__(self) -> Iterator[NDArray]:
        """Yield ``X, y, is_biased, is_flipped``."""
        return iter((self.X, self.y, self.is_biased, self.is_flipped))

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def separation(self) -> float:
        """Gap between the two rings."""
        return float(self.params.get("separation", float("nan")))

    def to_frame(self) -> pd.DataFrame:
        """One row per example: ``x0, x1, bias_0 …, label, is_biased, is_flipped``."""
        cols = ["x0", "x1"] + [f"bias_{j}" for j in range(self.X.shape[1] - 2)]
        frame = pd.DataFrame(self.X, columns=cols)
        frame["label"] = self.y
        frame["is_biased"] = self.is_biased
        frame["is_flipped"] = self.is_flipped
        frame.index.name = "row"
        return frame


def make_biased_circles(
    n_samples: int = 1000,
    *,
    separation: float = 0.5,
    bias_fraction: float = 0.75,
    bias_dims: int = 2,
    bias_strength: float = 6.0,
    flip_fraction: float = 0.0,
    noise: float = 0.15,
    random_state: int | np.random.Generator | None = None,
) -> BiasedCircles:
    """Two classes on concentric circles plus class-specific bias features on 75 % of each class (ICML §3).

    The points of class 0 lie on a ring of radius ``1 + separation/2`` and those of class 1 on a ring of
    radius ``1 − separation/2`` (random angles), plus Gaussian noise of sd ``noise`` on both coordinates: a
    linear model cannot tell the rings apart, an RBF kernel can (the larger ``separation`` relative to
    ``noise``, the more cleanly). Then ``bias_dims`` columns are appended:

    * for ``bias_fraction`` of each class (the *biased* rows) they are drawn from one of two Gaussians,
      ``N(±(bias_strength/2)·u, I)`` with u = (1, …, 1)/√bias_dims, the sign given by the label: the two
      class means are ``bias_strength`` standard deviations apart, so a linear model separates them;
    * for the other rows they are noise ``N(0, I)``, drawn independently of the label (no label
      information).

    ``flip_fraction`` of the biased rows of each class get the other label; their bias features follow the
    *final* (flipped) label, so a linear model finds them easy while their position on the wrong ring makes
    them adversarial to an RBF kernel.

    Parameters
    ----------
    n_samples : int, default=1000
        Rows; class 0 gets ``n_samples // 2`` before flips.
    separation : float, default=0.5
        Gap between the rings, in [0, 2): 0 puts both classes on the same ring; with ``noise=0.15`` a gap of
        1.0 is cleanly separable and 0.2 overlaps heavily (an RBF kernel reaches about 75 %).
    bias_fraction : float, default=0.75
        Share of each class carrying bias features, in [0, 1].
    bias_dims : int, default=2
        Width of the bias / noise block.
    bias_strength : float, default=6.0
        Distance between the two bias Gaussians' means, in their standard deviations.
    flip_fraction : float, default=0.0
        Share of the biased rows of each class whose label is flipped, in [0, 1].
    noise : float, default=0.15
        Standard deviation of the Gaussian noise on the ring coordinates.
    random_state : int, numpy Generator or None
        Seed.

    Returns
    -------
    BiasedCircles
        ``X`` (float32, n_samples × (2 + bias_dims)), ``y`` (int64) and the planted truth ``is_biased``,
        ``is_flipped``; unpacks as ``X, y, is_biased, is_flipped``.

    References
    ----------
    .. [1] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020, §3 and Figure 2.

    Examples
    --------
    >>> X, y, is_biased, is_flipped = make_biased_circles(400, separation=1.0, flip_fraction=0.1, random_state=0)
    >>> X.shape, X.dtype.name, int(is_biased.sum()), int(is_flipped.sum()), bool((is_flipped <= is_biased).all())
    ((400, 4), 'float32', 300, 30, True)
    """
    func = "make_biased_circles"
    n = v.check_int(n_samples, "n_samples", func, low=4)
    sep = _check_real(separation, "separation", func, low=0.0, high=2.0, high_open=True)
    frac = v.check_probability(bias_fraction, "bias_fraction", func)
    d = v.check_int(bias_dims, "bias_dims", func, low=1)
    strength = _check_real(bias_strength, "bias_strength", func, low=0.0)
    flip = v.check_probability(flip_fraction, "flip_fraction", func)
    sd = _check_real(noise, "noise", func, low=0.0)
    seed = v.check_random_state(random_state, func)
    rng = np.random.default_rng(seed)

    ring = np.repeat(np.array([0, 1], dtype=np.int64), [n // 2, n - n // 2])  # 0 outer, 1 inner (make_circles)
    angle = rng.uniform(0.0, 2.0 * np.pi, n)
    radius = np.where(ring == 0, 1.0 + sep / 2, 1.0 - sep / 2)
    xy = np.c_[radius * np.cos(angle), radius * np.sin(angle)] + rng.normal(scale=sd, size=(n, 2))

    # biased and flipped rows per class: a random rank within the class decides (no loop over rows)
    rank = np.empty(n, dtype=np.int64)
    keys = rng.random(n)
    order = np.lexsort((keys, ring))
    counts = np.bincount(ring, minlength=2)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank[order] = np.arange(n) - np.repeat(starts, counts)
    n_biased = np.round(frac * counts).astype(np.int64)
    n_flipped = np.round(flip * n_biased).astype(np.int64)
    is_biased = rank < n_biased[ring]
    is_flipped = rank < n_flipped[ring]  # the first ranks of the biased rows
    y = np.where(is_flipped, 1 - ring, ring)

    u = np.full(d, 1.0 / np.sqrt(d))
    extra = rng.normal(size=(n, d))
    extra[is_biased] += ((y[is_biased] - 0.5) * strength)[:, None] * u  # follows the final label
    perm = rng.permutation(n)
    X = np.c_[xy, extra].astype(np.float32)[perm]
    params = {"n_samples": n, "separation": sep, "bias_fraction": frac, "bias_dims": d, "bias_strength": strength,
              "flip_fraction": flip, "noise": sd, "seed": seed}
    return BiasedCircles(X=X, y=y[perm], is_biased=is_biased[perm], is_flipped=is_flipped[perm],
                         name=f"separation {sep:g}", params=params)


#: the four separation levels of :func:`paper_circles`, from cleanly separable to overlapping
PAPER_SEPARATIONS = (1.0, 0.6, 0.4, 0.2)


def paper_circles(
    n_samples: int = 2000,
    *,
    separations: Sequence[float] = PAPER_SEPARATIONS,
    flip_fraction: float = 0.1,
    bias_dims: int = 2,
    bias_strength: float = 6.0,
    noise: float = 0.15,
    random_state: int | np.random.Generator | None = 0,
) -> list[BiasedCircles]:
    """The four datasets of the paper's synthetic experiment (Figure 2), one per separation level.

    Labels are flipped (``flip_fraction`` of the biased rows) only in the most separated dataset, as in the
    paper ("for the leftmost dataset with the highest separation, we flip some labels").

    Parameters
    ----------
    n_samples : int, default=2000
        Rows per dataset (2000 keeps the RBF SVM's estimate on the small filtered sets steady and the whole
        experiment within a few seconds).
    separations : sequence of float, default=(1.0, 0.6, 0.4, 0.2)
        Ring gaps, one dataset each, in this order (editable; any number of levels).
    flip_fraction : float, default=0.1
        Share of the biased rows flipped in the most separated dataset.
    bias_dims, bias_strength, noise : see :func:`make_biased_circles`
    random_state : int, numpy Generator or None, default=0
        Seed; each dataset gets its own integer seed drawn from it.

    Returns
    -------
    list of BiasedCircles
        Named "separation 1", "separation 0.6" …, with " (flipped labels)" on the flipped one.

    Examples
    --------
    >>> [d.name for d in paper_circles(200)]
    ['separation 1 (flipped labels)', 'separation 0.6', 'separation 0.4', 'separation 0.2']
    """
    func = "paper_circles"
    n = v.check_int(n_samples, "n_samples", func, low=4)
    if isinstance(separations, (str, bytes)) or not isinstance(separations, Sequence | np.ndarray):
        raise v.param_error("separations", func, "a non-empty sequence of floats in [0, 2)", separations, TypeError)
    seps = [_check_real(s, "separations", func, low=0.0, high=2.0, high_open=True) for s in separations]
    if not seps:
        raise v.param_error("separations", func, "a non-empty sequence of floats in [0, 2)", separations)
    flip = v.check_probability(flip_fraction, "flip_fraction", func)
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    most = int(np.argmax(seps))
    out = []
    for i, sep in enumerate(seps):
        f = flip if i == most else 0.0
        data = make_biased_circles(n, separation=sep, bias_dims=bias_dims, bias_strength=bias_strength,
                                   flip_fraction=f, noise=noise, random_state=int(rng.integers(0, 2**63 - 1)))
        name = f"separation {sep:g}" + (" (flipped labels)" if f > 0 else "")
        out.append(replace(data, name=name))
    return out


# -- the synthetic experiment (ICML 2020 §3) -----------------------------------------------------------------
#: models of the synthetic experiment: a linear model and an RBF-kernel SVM (ICML §3)
EXPERIMENT_MODELS = ("linear", "rbf")

#: AFLite defaults of :func:`synthetic_experiment` (fractions are of each dataset's rows)
EXPERIMENT_DEFAULTS = {"target_size": 0.27, "train_size": 0.1, "slice_size": 0.05, "tau": 0.75, "n_partitions": 64}


def subset_accuracies(
    X: ArrayLike,
    y: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    models: Sequence[str] = EXPERIMENT_MODELS,
    n_splits: int = 5,
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
) -> dict[str, float]:
    """Held-out accuracy of a linear model and an RBF-kernel SVM on a subset, mean over seeded CV splits.

    A thin wrapper of :func:`aflite_core.analysis.model_accuracies` (seeded ``StratifiedKFold`` on the
    rows of the subset, features standardised on the training folds, so the RBF kernel's width does not
    depend on how spread out the bias columns are); call it once with ``mask=None`` for the "before"
    numbers (callers may cache them) and with the kept mask for the "after" numbers.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Labels.
    mask : boolean array of shape (n_samples,) or AFLiteResult, optional
        The subset; None means all rows.
    models : sequence of str, default=("linear", "rbf")
        Family names of :data:`aflite_core.analysis.MODEL_FAMILIES`.
    n_splits : int, default=5
        Folds.
    random_state : int, numpy Generator or None
        Seed of the folds.
    n_threads : int or None, default=1
        BLAS threads.

    Returns
    -------
    dict
        ``{model name: mean held-out accuracy}`` (NaN when the subset has fewer than two classes).

    Examples
    --------
    >>> X, y, *_ = make_biased_circles(300, separation=1.0, random_state=0)
    >>> acc = subset_accuracies(X, y, random_state=0)
    >>> sorted(acc), bool(acc["rbf"] > 0.9)
    (['linear', 'rbf'], True)
    """
    from .analysis import model_accuracies

    frame = model_accuracies(X, y, mask=mask, models=list(models), n_splits=n_splits, standardize=True,
                             random_state=random_state, n_threads=n_threads)
    return {str(m): float(a) for m, a in zip(frame["model"], frame["accuracy"])}


def planted_summary(data: BiasedCircles, kept: ArrayLike) -> dict[str, float | int]:
    """How many planted rows a filter kept: biased rows (number and share) and flipped rows removed.

    Parameters
    ----------
    data : BiasedCircles
        The dataset with its planted truth.
    kept : boolean array of shape (n_samples,) or AFLiteResult
        Retained rows.

    Returns
    -------
    dict
        ``n_before, n_after, biased_before, biased_after, biased_share_before, biased_share_after``,
        ``flipped_before``, ``flipped_removed`` and ``flipped_removed_share`` (NaN without flipped rows), and
        ``unbiased_removed_share``.

    Examples
    --------
    >>> d = make_biased_circles(100, random_state=0)
    >>> planted_summary(d, ~d.is_biased)["biased_after"]
    0
    """
    from .analysis import _kept_mask

    func = "planted_summary"
    if not isinstance(data, BiasedCircles):
        raise v.param_error("data", func, "a BiasedCircles", data, TypeError)
    k = _kept_mask(kept, data.n_samples, func)
    b, f = data.is_biased, data.is_flipped
    n_after = int(k.sum())
    n_flip = int(f.sum())
    return {
        "n_before": data.n_samples,
        "n_after": n_after,
        "biased_before": int(b.sum()),
        "biased_after": int((b & k).sum()),
        "biased_share_before": float(b.mean()),
        "biased_share_after": float((b & k).sum() / n_after) if n_after else float("nan"),
        "flipped_before": n_flip,
        "flipped_removed": int((f & ~k).sum()),
        "flipped_removed_share": float((f & ~k).sum() / n_flip) if n_flip else float("nan"),
        "unbiased_removed_share": float((~b & ~k).sum() / max(int((~b).sum()), 1)),
    }


@dataclass(frozen=True, eq=False)
class SyntheticExperiment:
    """The synthetic experiment's outcome (see :func:`synthetic_experiment`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per dataset (the Figure 2 captions and the planted-truth counts).
    results : dict of str to AFLiteResult
        The AFLite run of every dataset, by dataset name.
    datasets : list of BiasedCircles
        The datasets, in table order.
    params : dict
        The AFLite parameters, ``n_splits`` and the seed.
    """

    table: pd.DataFrame
    results: dict
    datasets: list
    params: dict


def _resolve_count(value: Any, name: str, func: str, n: int, *, low: int, high: int, range_text: str) -> int:
    return v.check_fraction_or_count(value, name, func, n=n, low=low, high=high, range_text=range_text)


def synthetic_experiment(
    datasets: Sequence[BiasedCircles] | None = None,
    *,
    target_size: int | float = EXPERIMENT_DEFAULTS["target_size"],
    train_size: int | float = EXPERIMENT_DEFAULTS["train_size"],
    slice_size: int | float = EXPERIMENT_DEFAULTS["slice_size"],
    tau: float = EXPERIMENT_DEFAULTS["tau"],
    n_partitions: int = EXPERIMENT_DEFAULTS["n_partitions"],
    n_splits: int = 5,
    before: Mapping[str, Mapping[str, float]] | None = None,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> SyntheticExperiment:
    """Run AFLite on the concentric-circles datasets and measure them before and after (ICML §3, Figure 2).

    For every dataset: run :func:`aflite_core.aflite` (the fast linear family) on all columns, then report
    the held-out accuracy (:func:`subset_accuracies`, mean over ``n_splits`` seeded folds of the set in
    question) of a linear model (LogisticRegression) and of an RBF-kernel SVM, before (all rows) and after
    (kept rows), and the planted truth (:func:`planted_summary`). The paper's findings: the number and share
    of biased rows drop considerably, the linear model falls toward chance, the RBF SVM stays well above
    it, and most flipped rows are removed.

    Parameters
    ----------
    datasets : sequence of BiasedCircles, optional
        Default: :func:`paper_circles` with its defaults (2000 rows each, seed 0).
    target_size : int or float, default=0.27
        n; a float in (0, 1) is a fraction of each dataset's rows. 0.27 lies just above the 25 % of unbiased
        rows: AFLite can remove nearly all biased rows without being forced deep into the unbiased ones (a
        smaller target makes the kept set adversarial, a linear model then falls *below* chance).
    train_size : int or float, default=0.1
        t, training rows per partition model (fraction or count).
    slice_size : int or float, default=0.05
        k, rows removed per round (a float in (0, 1) is a fraction of each dataset's rows).
    tau : float, default=0.75
        τ, the early-stopping threshold.
    n_partitions : int, default=64
        m, models per round.
    n_splits : int, default=5
        Folds of the accuracy estimates.
    before : mapping, optional
        Cached "before" accuracies, ``{dataset name: {"linear": …, "rbf": …}}`` (from
        :func:`subset_accuracies` with the same seed); datasets found there are not re-evaluated. The random
        stream does not depend on it, so the results are the same either way.
    random_state : int, numpy Generator or None, default=0
        Seed: every dataset draws its AFLite seed and its two fold seeds from it, in a fixed order.
    n_threads : int or None, default=1
        BLAS threads.

    Returns
    -------
    SyntheticExperiment
        ``table`` (one row per dataset: ``dataset, separation, n_before, n_after, linear_before,
        linear_after, rbf_before, rbf_after, biased_before, biased_after, biased_share_before,
        biased_share_after, flipped_before, flipped_removed_share, unbiased_removed_share, rounds,
        stop_reason``), ``results`` (AFLiteResult per dataset name), ``datasets`` and ``params``.

    Notes
    -----
    Paper symbols: m → ``n_partitions``, t → ``train_size``, k → ``slice_size``, τ → ``tau``, n →
    ``target_size``.

    References
    ----------
    .. [1] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020, §3 and Figure 2.

    Examples
    --------
    >>> exp = synthetic_experiment(paper_circles(600), n_partitions=32, n_splits=3)
    >>> exp.table.shape[0], bool((exp.table["linear_after"] < exp.table["linear_before"]).all())
    (4, True)
    """
    from .filtering import aflite

    func = "synthetic_experiment"
    data = paper_circles() if datasets is None else list(datasets)
    if not data or not all(isinstance(d, BiasedCircles) for d in data):
        raise v.param_error("datasets", func, "None or a non-empty sequence of BiasedCircles", datasets, TypeError)
    names = [d.name for d in data]
    if len(set(names)) != len(names):
        raise ValueError(f"The 'datasets' parameter of {func} must have distinct names. Got {names} instead.")
    m = v.check_int(n_partitions, "n_partitions", func, low=1)
    tau_v = v.check_probability(tau, "tau", func)
    folds = v.check_int(n_splits, "n_splits", func, low=2)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    resolved = []
    for d in data:  # validate every dataset's counts before running anything
        n = d.n_samples
        nt = _resolve_count(target_size, "target_size", func, n, low=2, high=n, range_text="(n_classes, n_samples)")
        t = _resolve_count(train_size, "train_size", func, n, low=2, high=nt, range_text="(n_classes, target_size)")
        if v._is_int(slice_size):
            k = v.check_int(slice_size, "slice_size", func, low=1)
        else:
            k = max(1, _resolve_count(slice_size, "slice_size", func, n, low=0, high=n + 1,
                                      range_text="[1, n_samples]"))
        resolved.append((nt, t, k))
    if before is not None and not isinstance(before, Mapping):
        raise v.param_error("before", func, "None or a mapping from dataset names to accuracies", before, TypeError)
    seed = v.check_random_state(random_state, func)
    rng = np.random.default_rng(seed)
    rows, results = [], {}
    for d, (nt, t, k) in zip(data, resolved):
        seed_run, seed_before, seed_after = (int(s) for s in rng.integers(0, 2**31 - 1, size=3))
        res = aflite(d.X, d.y, target_size=nt, train_size=t, slice_size=k, tau=tau_v, n_partitions=m,
                     random_state=seed_run, n_threads=n_threads)
        results[d.name] = res
        cached = None if before is None else before.get(d.name)
        acc_before = dict(cached) if cached is not None else subset_accuracies(
            d.X, d.y, None, n_splits=folds, random_state=seed_before, n_threads=n_threads)
        acc_after = subset_accuracies(d.X, d.y, res.kept, n_splits=folds, random_state=seed_after,
                                      n_threads=n_threads)
        truth = planted_summary(d, res.kept)
        rows.append({
            "dataset": d.name,
            "separation": d.separation,
            "n_before": truth["n_before"],
            "n_after": truth["n_after"],
            "linear_before": acc_before.get("linear", float("nan")),
            "linear_after": acc_after["linear"],
            "rbf_before": acc_before.get("rbf", float("nan")),
            "rbf_after": acc_after["rbf"],
            "biased_before": truth["biased_before"],
            "biased_after": truth["biased_after"],
            "biased_share_before": truth["biased_share_before"],
            "biased_share_after": truth["biased_share_after"],
            "flipped_before": truth["flipped_before"],
            "flipped_removed_share": truth["flipped_removed_share"],
            "unbiased_removed_share": truth["unbiased_removed_share"],
            "rounds": res.n_rounds,
            "stop_reason": res.stop_reason,
        })
    params = {"target_size": target_size, "train_size": train_size, "slice_size": slice_size, "tau": tau_v,
              "n_partitions": m, "n_splits": folds,
              "seed": seed}
    return SyntheticExperiment(table=pd.DataFrame(rows), results=results, datasets=data, params=params)


def before_accuracies(
    datasets: Sequence[BiasedCircles] | None = None,
    *,
    n_splits: int = 5,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> dict[str, dict[str, float]]:
    """The "before" accuracies :func:`synthetic_experiment` computes, for callers to cache and pass back.

    Draws the same seeds as :func:`synthetic_experiment` with the same ``random_state``, so
    ``synthetic_experiment(ds, before=before_accuracies(ds, random_state=s), random_state=s)`` equals
    ``synthetic_experiment(ds, random_state=s)``.

    Parameters
    ----------
    datasets : sequence of BiasedCircles, optional
        Default: :func:`paper_circles`.
    n_splits : int, default=5
        Folds.
    random_state : int, numpy Generator or None, default=0
        The experiment's seed.
    n_threads : int or None, default=1
        BLAS threads.

    Returns
    -------
    dict
        ``{dataset name: {"linear": accuracy, "rbf": accuracy}}``.
    """
    func = "before_accuracies"
    data = paper_circles() if datasets is None else list(datasets)
    if not data or not all(isinstance(d, BiasedCircles) for d in data):
        raise v.param_error("datasets", func, "None or a non-empty sequence of BiasedCircles", datasets, TypeError)
    folds = v.check_int(n_splits, "n_splits", func, low=2)
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    out = {}
    for d in data:
        _, seed_before, _ = (int(s) for s in rng.integers(0, 2**31 - 1, size=3))
        out[d.name] = subset_accuracies(d.X, d.y, None, n_splits=folds, random_state=seed_before,
                                        n_threads=n_threads)
    return out


# -- command line: ``aflite synthetic`` ----------------------------------------------------------------------
def format_experiment_table(table: pd.DataFrame) -> str:
    """The experiment table as readable text (what ``aflite synthetic`` prints).

    Parameters
    ----------
    table : pandas.DataFrame
        ``SyntheticExperiment.table``.

    Returns
    -------
    str
        A fixed-width table, one line per dataset.
    """
    def arrow(a: float, b: float, fmt: str = "{:.3f}") -> str:
        return f"{fmt.format(a)} → {fmt.format(b)}"

    def share(x: float) -> str:
        return "–" if not np.isfinite(x) else f"{x:.0%}"

    out = pd.DataFrame({
        "dataset": table["dataset"],
        "rows": [arrow(a, b, "{:d}") for a, b in zip(table["n_before"], table["n_after"])],
        "linear acc": [arrow(a, b) for a, b in zip(table["linear_before"], table["linear_after"])],
        "RBF-SVM acc": [arrow(a, b) for a, b in zip(table["rbf_before"], table["rbf_after"])],
        "biased rows": [f"{a:d} → {b:d}" for a, b in zip(table["biased_before"], table["biased_after"])],
        "biased share": [f"{share(a)} → {share(b)}" for a, b in zip(table["biased_share_before"],
                                                                     table["biased_share_after"])],
        "flipped removed": [share(x) for x in table["flipped_removed_share"]],
        "rounds": table["rounds"],
    })
    return out.to_string(index=False)


def _cli_number(text: str, option: str, *, allow_fraction: bool = True) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    if allow_fraction:
        try:
            return float(text)
        except ValueError:
            pass
    kind = "an int or a float in (0, 1)" if allow_fraction else "an int"
    raise ValueError(f"The {option} option must be {kind}. Got {text!r} instead.")


def _cmd_synthetic(args: argparse.Namespace) -> int:
    try:
        seps = [float(s) for s in str(args.separations).split(",") if s.strip()]
    except ValueError:
        raise ValueError(
            f"The --separations option must be a comma-separated list of floats in [0, 2). Got {args.separations!r} "
            "instead."
        ) from None
    seed = int(_cli_number(args.seed, "--seed", allow_fraction=False))
    if seed < 0:
        raise ValueError(f"The --seed option must be an int in [0, inf). Got {seed} instead.")
    n = int(_cli_number(args.n_samples, "--n-samples", allow_fraction=False))
    datasets = paper_circles(n, separations=seps, flip_fraction=float(_cli_number(args.flip_fraction,
                                                                                   "--flip-fraction")),
                             random_state=seed)
    params = {
        "target_size": _cli_number(args.target_size, "--target-size"),
        "train_size": _cli_number(args.train_size, "--train-size"),
        "slice_size": _cli_number(args.slice_size, "--slice-size"),
        "tau": float(_cli_number(args.tau, "--tau")),
        "n_partitions": int(_cli_number(args.partitions, "--partitions", allow_fraction=False)),
        "n_splits": int(_cli_number(args.splits, "--splits", allow_fraction=False)),
    }
    exp = synthetic_experiment(datasets, random_state=seed, **params)
    if args.json:
        records = exp.table.astype(object).where(exp.table.notna(), None).to_dict(orient="records")
        payload = {"params": {**params, "n_samples": n, "separations": seps, "seed": seed}, "datasets": records}
        sys.stdout.write(json.dumps(payload, default=_json_scalar) + "\n")
    else:
        head = (
            "Synthetic experiment (Le Bras et al., ICML 2020, §3 / Figure 2): concentric circles with planted bias "
            "features\n"
            f"AFLite: target_size={params['target_size']} train_size={params['train_size']} "
            f"slice_size={params['slice_size']} tau={params['tau']} n_partitions={params['n_partitions']} | "
            f"{n} rows per dataset | accuracy: mean of {params['n_splits']}-fold CV | seed {seed}\n\n"
        )
        sys.stdout.write(head + format_experiment_table(exp.table) + "\n")
    return 0


def _json_scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def add_cli(subparsers: Any, name: str = "synthetic") -> None:
    """Register the ``synthetic`` sub-command: run the Figure 2 experiment and print its table.

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="synthetic"
        Command name (``cli._EXTRA_COMMANDS`` passes it).

    Notes
    -----
    Bad option values raise ``ValueError`` naming the option; the CLI's ``main`` prints it on one line and
    exits with status 2. The command reports; it does not check the paper's findings.
    """
    p = subparsers.add_parser(
        name, help="reproduce the synthetic concentric-circles experiment (ICML 2020 §3, Figure 2)",
        description="Run AFLite on concentric-circles datasets with planted bias features (one per separation "
                    "level) and print the held-out accuracy of a linear model and an RBF SVM before and after "
                    "filtering, with the planted truth (biased rows kept, flipped rows removed).",
    )
    d = EXPERIMENT_DEFAULTS
    options = [
        ("--n-samples", "2000", "N", "rows per dataset (default 2000)"),
        ("--separations", ",".join(f"{s:g}" for s in PAPER_SEPARATIONS), "LIST",
         "comma-separated ring gaps in [0, 2), one dataset each (default 1,0.6,0.4,0.2)"),
        ("--flip-fraction", "0.1", "F", "share of biased rows flipped in the most separated set (default 0.1)"),
        ("--target-size", str(d["target_size"]), "N", f"n, count or fraction (default {d['target_size']})"),
        ("--train-size", str(d["train_size"]), "T", f"t, count or fraction (default {d['train_size']})"),
        ("--slice-size", str(d["slice_size"]), "K", f"k, count or fraction (default {d['slice_size']})"),
        ("--tau", str(d["tau"]), "TAU", f"τ, early-stopping threshold (default {d['tau']})"),
        ("--partitions", str(d["n_partitions"]), "M", f"m, models per round (default {d['n_partitions']})"),
        ("--splits", "5", "S", "CV folds of the accuracies (default 5)"),
        ("--seed", "0", "SEED", "random seed (default 0)"),
    ]
    for flag, default, metavar, text in options:
        p.add_argument(flag, default=default, metavar=metavar, help=text)
    p.add_argument("--json", action="store_true", help="print JSON instead of a text table")
    p.set_defaults(func=_cmd_synthetic)
