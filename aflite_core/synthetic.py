"""Synthetic data with planted, known biases (generators shaped like scikit-learn's ``make_*``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from . import _validation as v

__all__ = ["make_planted_bias"]


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
    class_sep : float, default=0.35
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
