"""How strong an adversary is, measured independently of the filtering it does (Phang et al., Table 1).

Ordering adversaries by their mean round-1 predictability is nearly circular: that is the very quantity whose
effect (round-1 removals) is then "found" to grow with strength. Phang et al. rank adversaries by an independent
measure, the accuracy of the *fully trained* model (their Table 1: each pretrained model fine-tuned on the whole
training set, scored on the full validation set). Here:

* an adversary's **backbone** is the model the representation Φ stands for, trained from scratch on all training
  rows with its own seed: for a warm-up network's hidden layer, that network's architecture retrained on the raw
  input (:func:`digits_backbones`); for a representation that is the input itself (raw pixels, frozen sentence
  embeddings, TF-IDF) a logistic regression on Φ (:func:`linear_backbones`);
* its **strength** is the backbone's accuracy on the held-out evaluation rows, with a Wilson 95 % interval
  (:func:`backbone_strength`). The same model is the "shared backbone" evaluated model of the paper's Figure 4:
  trained separately from the adversary's frozen Φ, but of the same architecture.

References
----------
.. [1] J. Phang et al., "Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair",
   2021, Table 1 and Figure 4.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validation as v
from .._utils import blas_threads

__all__ = [
    "Backbone",
    "backbone_strength",
    "digits_backbones",
    "linear_backbones",
    "pair_counts",
    "wilson_interval",
]


#: salt of the backbones' seed stream (any fixed int; it keeps it apart from the warm-up networks' stream)
_BACKBONE_SALT = 1402


@dataclass(frozen=True)
class Backbone:
    """The fully trained model an adversary's representation stands for.

    Attributes
    ----------
    name : str
        Its name as an evaluated model (e.g. ``"backbone:mlp"``, or ``"logistic:pixels"`` when it is that model).
    model : str or sklearn estimator
        A family of :data:`aflite_core.engine.registry.CLASSIFIERS` or an unfitted estimator (with an explicit integer
        ``random_state`` where it draws random numbers, so the strength and the evaluated model are the same fit).
    representation : str
        The input it is trained on (e.g. ``"pixels"`` for a network retrained on the raw input).
    description : str
        One line for tables and captions.
    """

    name: str
    model: Any
    representation: str
    description: str = ""

    def as_evaluated(self) -> tuple[str, Any, str]:
        """``(name, model, representation)``: the form :func:`aflite_core.evalsets.adversary_study` accepts."""
        return (self.name, self.model, self.representation)


def wilson_interval(correct: ArrayLike, n: ArrayLike, *, z: float = 1.96) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion (95 % by default); NaN where ``n`` is 0.

    Parameters
    ----------
    correct : array-like
        Successes (may be fractional, e.g. a mean accuracy times a mean row count).
    n : array-like
        Trials.
    z : float, default=1.96
        Normal quantile.

    Returns
    -------
    (low, high) : tuple of ndarray

    Examples
    --------
    >>> lo, hi = wilson_interval(40, 50)
    >>> round(float(lo), 3), round(float(hi), 3)
    (0.67, 0.888)
    """
    k = np.asarray(correct, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / m
        denom = 1 + z**2 / m
        centre = (p + z**2 / (2 * m)) / denom
        half = z * np.sqrt(p * (1 - p) / m + z**2 / (4 * m**2)) / denom
    lo = np.where(m > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    hi = np.where(m > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return lo, hi


def pair_counts(a: ArrayLike, b: ArrayLike) -> dict[str, int]:
    """Concordant, discordant and tied pairs of two score lists (what Kendall's coefficient summarises).

    A pair (i, j) is concordant when a and b order it the same way, discordant when they order it oppositely and
    tied when either has a tie. Entries that are NaN in a or b are left out.

    Returns
    -------
    dict
        ``concordant, discordant, tied, n_pairs, n_items``.

    Examples
    --------
    >>> pair_counts([1, 2, 3, 4], [1, 3, 2, 4])
    {'concordant': 5, 'discordant': 1, 'tied': 0, 'n_pairs': 6, 'n_items': 4}
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    i, j = np.triu_indices(len(x), k=1)
    s = np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
    return {
        "concordant": int((s > 0).sum()),
        "discordant": int((s < 0).sum()),
        "tied": int((s == 0).sum()),
        "n_pairs": len(i),
        "n_items": len(x),
    }


def digits_backbones(adversaries: Sequence[str], *, random_state: int | np.random.Generator | None = 0) -> dict:
    """The backbones of the digits adversaries (:func:`aflite_core.data.digits.load_digits_dataset`).

    * ``pixels`` - a logistic regression on the raw pixels (Φ is the input: the backbone is a linear model on it,
      the same model as the evaluated ``logistic:pixels``);
    * ``pca`` - PCA (16 components) and a logistic regression, both fitted on the training rows' pixels (the
      adversary's PCA was fitted on the warm-up rows);
    * ``mlp`` / ``mlp_small`` - the warm-up networks' architecture (one tanh hidden layer of 64 / 8 units, L-BFGS,
      alpha 1e-3, up to 1,000 iterations; :func:`aflite_core.data.digits.build_digits_arrays`) retrained from scratch
      on the raw pixels of the training rows with its own seed, not the adversary's frozen hidden layer.

    Parameters
    ----------
    adversaries : sequence of str
        Among ``"pixels", "pca", "mlp_small", "mlp"``.
    random_state : int, numpy Generator or None, default=0
        Seed of the networks' initial weights (each its own integer seed).

    Returns
    -------
    dict of str to Backbone
    """
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline

    from ..data.digits import _MLP_SIZES, _PCA_COMPONENTS

    func = "digits_backbones"
    known = ("pixels", "pca", "mlp_small", "mlp")
    bad = [a for a in adversaries if a not in known]
    if bad:
        raise v.param_error("adversaries", func, f"names among {list(known)}", list(adversaries))
    # a stream of its own (salted), so even random_state=0 never repeats the warm-up networks' seeds, which
    # build_digits_arrays draws from default_rng(0)
    rng = np.random.default_rng(np.random.SeedSequence([v.check_random_state(random_state, func), _BACKBONE_SALT]))
    seeds = {name: int(s) for name, s in zip(("mlp_small", "mlp"), rng.integers(0, 2**31 - 1, size=2))}
    out = {}
    for a in adversaries:
        if a == "pixels":
            out[a] = Backbone("logistic:pixels", "logistic", "pixels", "logistic regression on the raw pixels")
        elif a == "pca":
            model = make_pipeline(
                PCA(n_components=_PCA_COMPONENTS, svd_solver="full"), LogisticRegression(C=1.0, max_iter=1000)
            )
            out[a] = Backbone(
                "backbone:pca",
                model,
                "pixels",
                f"PCA ({_PCA_COMPONENTS}) + logistic regression, refitted on pixels",
            )
        else:
            units = _MLP_SIZES[a]
            model = MLPClassifier(
                hidden_layer_sizes=(units,),
                activation="tanh",
                solver="lbfgs",
                alpha=1e-3,
                max_iter=1000,
                random_state=seeds[a],
            )
            out[a] = Backbone(
                f"backbone:{a}",
                model,
                "pixels",
                f"the warm-up MLP's architecture ({units} tanh units) retrained on the pixels, own seed",
            )
    return out


def linear_backbones(representations: Sequence[str]) -> dict:
    """Backbones of representations that are the model's input (frozen embeddings, TF-IDF, raw features).

    There is no network behind such a Φ to retrain, so the fully trained model is a logistic regression on Φ
    itself: the backbone *is* the evaluated ``logistic:<representation>``, and a "shared backbone" comparison on it
    equals the same-representation one.
    """
    return {
        r: Backbone(f"logistic:{r}", "logistic", r, f"logistic regression on {r} (no separate backbone)")
        for r in representations
    }


def backbone_strength(
    train_X: Mapping[str, ArrayLike],
    train_y: ArrayLike,
    eval_X: Mapping[str, ArrayLike],
    eval_y: ArrayLike,
    backbones: Mapping[str, Backbone],
    *,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> pd.DataFrame:
    """Each adversary's strength: its backbone trained on all training rows, accuracy on the evaluation rows.

    Independent of AFLite: no predictability, no partitions, no filtering; the evaluation rows are never used
    for fitting (Phang et al.'s Table 1).

    Parameters
    ----------
    train_X, eval_X : mapping of str to array-like
        Representations of the training and evaluation rows (every backbone's input).
    train_y, eval_y : array-like
        Labels.
    backbones : mapping of str to Backbone
        Adversary name -> its backbone.
    random_state : int, numpy Generator or None, default=0
        Seed of family-named backbones that draw random numbers (explicit estimators keep their own seed).
    n_threads : int or None, default=1
        BLAS threads.

    Returns
    -------
    pandas.DataFrame
        One row per adversary: ``adversary, backbone, representation, description, accuracy, ci_low, ci_high``
        (Wilson 95 %), ``n_correct, n_eval``; higher accuracy = stronger.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400); X = rng.normal(size=(400, 3)); X[:, 0] += 4 * y
    >>> tab = backbone_strength({"x": X[:300]}, y[:300], {"x": X[300:]}, y[300:], linear_backbones(["x"]))
    >>> tab[["adversary", "backbone", "n_eval"]].values.tolist(), bool(tab["accuracy"].iloc[0] > 0.8)
    ([['x', 'logistic:x', 100]], True)
    """
    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    from ..engine.registry import make_classifier

    func = "backbone_strength"
    enc = v.check_labels(train_y, "train_y", func, n_rows=len(np.asarray(train_y)), min_per_class=1)
    ytr = enc.codes  # the codes the evaluation-set study fits on, so a seeded backbone is the same fit there
    yev = enc.encode(eval_y, "eval_y", func)
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    rows = []
    with blas_threads(n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for a, bb in backbones.items():
            if not isinstance(bb, Backbone):
                raise v.param_error("backbones", func, "a mapping from adversary names to Backbone", bb, TypeError)
            if bb.representation not in train_X or bb.representation not in eval_X:
                raise ValueError(
                    f"The backbone of {a!r} needs the representation {bb.representation!r}, which the data lacks."
                )
            seed = int(rng.integers(0, 2**31 - 1))
            Xtr = np.asarray(train_X[bb.representation])
            est = (
                make_classifier(bb.model, random_state=seed, n_train=len(Xtr))
                if isinstance(bb.model, str)
                else clone(bb.model)
            )
            est.fit(Xtr, ytr)
            correct = int(np.sum(np.asarray(est.predict(np.asarray(eval_X[bb.representation]))) == yev))
            lo, hi = wilson_interval(correct, len(yev))
            rows.append(
                {
                    "adversary": a,
                    "backbone": bb.name,
                    "representation": bb.representation,
                    "description": bb.description,
                    "accuracy": correct / max(len(yev), 1),
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                    "n_correct": correct,
                    "n_eval": len(yev),
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "adversary",
            "backbone",
            "representation",
            "description",
            "accuracy",
            "ci_low",
            "ci_high",
            "n_correct",
            "n_eval",
        ],
    )
