"""Synthetic data with planted, known biases.

* :func:`make_planted_bias` - Gaussian classes plus a label-revealing shift on some rows;
* :func:`make_biased_circles` / :func:`paper_circles` - the concentric circles with class-specific bias
  features of ICML 2020 §3 (Figure 2), with the planted truth (biased and flipped rows).

Generators are shaped like scikit-learn's ``make_*`` (``n_samples`` first, everything else keyword-only,
``random_state``) and return the planted truth too. The experiment on them is
:mod:`aflite_core.experiments.figure2`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _validation as v

__all__ = ["PAPER_SEPARATIONS", "BiasedCircles", "make_biased_circles", "make_planted_bias", "paper_circles"]


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
def _check_real(
    value: Any, name: str, func: str, *, low: float, high: float | None = None, high_open: bool = False
) -> float:
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
    params = {
        "n_samples": n,
        "separation": sep,
        "bias_fraction": frac,
        "bias_dims": d,
        "bias_strength": strength,
        "flip_fraction": flip,
        "noise": sd,
        "seed": seed,
    }
    return BiasedCircles(
        X=X,
        y=y[perm],
        is_biased=is_biased[perm],
        is_flipped=is_flipped[perm],
        name=f"separation {sep:g}",
        params=params,
    )


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
        data = make_biased_circles(
            n,
            separation=sep,
            bias_dims=bias_dims,
            bias_strength=bias_strength,
            flip_fraction=f,
            noise=noise,
            random_state=int(rng.integers(0, 2**63 - 1)),
        )
        name = f"separation {sep:g}" + (" (flipped labels)" if f > 0 else "")
        out.append(replace(data, name=name))
    return out
