"""Difficulty levels from training dynamics (Cosma et al., EMNLP 2024; after Swayamdipta et al., 2020).

A model is trained for a few epochs *on the set being characterised* and, for every example and epoch, its
class logits are recorded. Four measures summarise each example's trajectory, for the full input (e.g.
premise + hypothesis) and for a partial input (e.g. the hypothesis alone): eight features. A 3-component
Gaussian mixture over the standardised features gives three clusters, ranked by their mean full-input
confidence into the difficulty levels ``"easy"`` (highest), ``"ambiguous"`` and ``"hard"`` (lowest).

Where the dynamics come from:

* :func:`train_dynamics` / :func:`record_dynamics` train a small softmax model (or a one-hidden-layer MLP) with
  Adam on a feature matrix, in numpy, deterministic given ``random_state``;
* :func:`read_cartography_dynamics` reads the JSONL files written by allenai/cartography (one
  ``dynamics_epoch_<e>.jsonl`` per epoch) or by any trainer that writes the same format.

The four measures (paper symbols → our names), for example *i* with gold class y_i over E epochs, p⁽ᵉ⁾ the
softmax probabilities and z⁽ᵉ⁾ the logits at epoch e:

* confidence μ̂_i = (1/E) Σ_e p⁽ᵉ⁾(y_i | x_i) → ``confidence``, in [0, 1], higher = easier;
* variability σ̂_i = sqrt((1/E) Σ_e (p⁽ᵉ⁾(y_i | x_i) − μ̂_i)²) → ``variability``, the *population* standard
  deviation (divide by E, not E − 1), as in Swayamdipta et al.'s Eq. 2 and the authors' code (``np.std``);
* correctness c_i = (1/E) Σ_e 1[argmax_y p⁽ᵉ⁾(y | x_i) = y_i] → ``correctness``, in [0, 1]; an epoch where
  another class ties with the gold class for the largest logit counts as incorrect;
* AUM_i = (1/E) Σ_e (z⁽ᵉ⁾_{y_i} − max_{y ≠ y_i} z⁽ᵉ⁾_y) → ``aum`` (Pleiss et al., 2020), in logit units,
  positive when the gold class usually wins.

The partial-input versions carry the prefix ``partial_`` (``partial_confidence`` …).

References
----------
A. Cosma, S. Ruseti, M. Dascalu and C. Caragea. How Hard is this Test Set? NLI Characterization by Exploiting
Training Dynamics. EMNLP 2024.

S. Swayamdipta, R. Schwartz, N. Lourie, Y. Wang, H. Hajishirzi, N. A. Smith and Y. Choi. Dataset Cartography:
Mapping and Diagnosing Datasets with Training Dynamics. EMNLP 2020.

G. Pleiss, T. Zhang, E. Elenberg and K. Q. Weinberger. Identifying Mislabeled Data using the Area Under the
Margin Ranking. NeurIPS 2020.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._utils import blas_threads
from ._validation import check_features, check_int, check_labels, check_random_state, param_error

__all__ = [
    "LEVELS",
    "MEASURES",
    "PARTIAL_PREFIX",
    "RECORD_MODES",
    "DifficultyLevels",
    "DynamicsRecord",
    "TrainingDynamics",
    "add_cli",
    "aum_levels",
    "data_maps_levels",
    "difficulty_levels",
    "read_cartography_dynamics",
    "record_dynamics",
    "train_dynamics",
    "training_measures",
]

#: the difficulty levels, from easiest to hardest
LEVELS: tuple[str, ...] = ("easy", "ambiguous", "hard")
#: the four per-example measures of one input (columns of :func:`training_measures`)
MEASURES: tuple[str, ...] = ("confidence", "variability", "correctness", "aum")
#: column prefix of the partial-input measures
PARTIAL_PREFIX = "partial_"
#: when :func:`train_dynamics` records the logits of an epoch
RECORD_MODES: tuple[str, ...] = ("epoch_end", "train_pass")

_CHUNK = 65_536  # rows per block when standardising and scoring the whole matrix
_KNOWN_COLUMNS = MEASURES + tuple(PARTIAL_PREFIX + m for m in MEASURES)
_EPOCH_FILE = re.compile(r"^dynamics_epoch_(\d+)\.jsonl$")
_LOGITS_KEY = re.compile(r"^logits_epoch_(\d+)$")


# --------------------------------------------------------------------------------------------------- measures
def _softmax(z: NDArray) -> NDArray:
    z = z - z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def _check_logits(logits: Any, name: str, func: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray(logits, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(name, func, "a numeric array of shape (n_examples, n_epochs, n_classes)", logits,
                          TypeError) from None
    if arr.ndim != 3 or arr.shape[0] < 1 or arr.shape[1] < 1 or arr.shape[2] < 2:
        raise ValueError(
            f"The '{name}' parameter of {func} must be an array of shape (n_examples, n_epochs, n_classes) with "
            f"at least 1 example, 1 epoch and 2 classes. Got shape {arr.shape} instead."
        )
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr).all(axis=(1, 2)))[0])
        raise ValueError(f"The '{name}' parameter of {func} must contain only finite values. "
                         f"Got NaN or infinity (first in example {bad}) instead.")
    return arr


def _check_gold(gold: Any, name: str, func: str, n: int, n_classes: int) -> NDArray[np.int64]:
    arr = np.asarray(gold)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"The '{name}' parameter of {func} must be 1-D with one class index per example ({n}). "
                         f"Got shape {arr.shape} instead.")
    if arr.dtype.kind not in "iu":
        raise param_error(name, func, f"an int array of class indices in [0, {n_classes - 1}]", arr, TypeError)
    if n and (arr.min() < 0 or arr.max() >= n_classes):
        bad = int(np.flatnonzero((arr < 0) | (arr >= n_classes))[0])
        raise ValueError(f"The '{name}' parameter of {func} must hold class indices in [0, {n_classes - 1}]. "
                         f"Got {int(arr[bad])} (example {bad}) instead.")
    return arr.astype(np.int64)


def _measures(logits: NDArray[np.float64], gold: NDArray[np.int64], prefix: str = "") -> dict[str, NDArray]:
    n = logits.shape[0]
    rows = np.arange(n)
    gold_logit = logits[rows, :, gold]  # (n, E)
    others = logits.copy()
    others[rows, :, gold] = -np.inf
    margin = gold_logit - others.max(axis=2)  # (n, E)
    p_gold = _softmax(logits.copy())[rows, :, gold]
    return {
        prefix + "confidence": p_gold.mean(axis=1),
        prefix + "variability": p_gold.std(axis=1, ddof=0),
        prefix + "correctness": (margin > 0).mean(axis=1),
        prefix + "aum": margin.mean(axis=1),
    }


def training_measures(logits: ArrayLike, gold: ArrayLike, *, prefix: str = "") -> pd.DataFrame:
    """Confidence, variability, correctness and AUM of every example from its per-epoch logits.

    Parameters
    ----------
    logits : array-like of shape (n_examples, n_epochs, n_classes)
        Pre-softmax scores per example and epoch. Log-probabilities work too: every measure is unchanged when a
        constant is added to an example's logits of one epoch.
    gold : array-like of int, shape (n_examples,)
        Gold class index of every example.
    prefix : str, default=""
        Put before the column names (e.g. ``"partial_"``).

    Returns
    -------
    pandas.DataFrame
        Columns ``confidence`` (mean gold-class probability, in [0, 1]), ``variability`` (its population
        standard deviation across epochs), ``correctness`` (share of epochs where the gold class has the
        strictly largest logit) and ``aum`` (mean margin of the gold logit over the largest other logit); the
        definitions are in the module notes. Higher confidence, correctness and AUM mean easier.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.log([[[0.8, 0.2], [0.6, 0.4]]])   # one example, two epochs, two classes
    >>> training_measures(z, [0]).round(4)
       confidence  variability  correctness     aum
    0         0.7          0.1          1.0  0.8959
    """
    func = "training_measures"
    arr = _check_logits(logits, "logits", func)
    codes = _check_gold(gold, "gold", func, arr.shape[0], arr.shape[2])
    if not isinstance(prefix, str):
        raise param_error("prefix", func, "a str", prefix, TypeError)
    return pd.DataFrame(_measures(arr, codes, prefix))


def _as_index(ids: Any, n: int, name: str, func: str) -> pd.Index:
    if ids is None:
        return pd.RangeIndex(n, name="id")
    if isinstance(ids, (str, bytes)):
        raise param_error(name, func, "a sequence of unique ids, one per example", ids, TypeError)
    try:
        index = pd.Index(list(ids) if not isinstance(ids, (np.ndarray, pd.Index, pd.Series)) else ids)
    except TypeError:
        raise param_error(name, func, "a sequence of unique ids, one per example", ids, TypeError) from None
    if index.ndim != 1 or len(index) != n:
        raise ValueError(f"The '{name}' parameter of {func} must have one id per example ({n}). "
                         f"Got {len(index)} ids instead.")
    if index.has_duplicates:
        dup = index[index.duplicated()][0]
        raise ValueError(f"The '{name}' parameter of {func} must hold unique ids. Got {dup!r} twice instead.")
    return index.rename("id")


@dataclass(frozen=True, eq=False)
class TrainingDynamics:
    """Per-epoch logits of every example of one input representation, with its gold classes.

    Build it with :func:`train_dynamics` or :func:`read_cartography_dynamics`, or directly from arrays.

    Parameters
    ----------
    logits : array-like of shape (n_examples, n_epochs, n_classes)
        Pre-softmax scores per example and epoch (stored as float64).
    gold : array-like of int, shape (n_examples,)
        Gold class index of every example, in ``[0, n_classes)``.
    classes : sequence, optional
        Class names in index order (default ``0 .. n_classes - 1``).
    ids : sequence, optional
        Unique example ids (default ``0 .. n_examples - 1``); the index of every frame returned.

    Examples
    --------
    >>> import numpy as np
    >>> td = TrainingDynamics(np.log([[[0.9, 0.1], [0.7, 0.3]], [[0.5, 0.5], [0.2, 0.8]]]), [0, 1],
    ...                       classes=("yes", "no"), ids=["a", "b"])
    >>> td.to_frame().round(3)
       label  confidence  variability  correctness    aum
    id
    a    yes        0.80        0.100          1.0  1.522
    b     no        0.65        0.150          0.5  0.693
    """

    logits: NDArray[np.float64]
    gold: NDArray[np.int64]
    classes: tuple = ()
    ids: pd.Index = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        func = "TrainingDynamics"
        logits = _check_logits(self.logits, "logits", func)
        n, _, n_classes = logits.shape
        gold = _check_gold(self.gold, "gold", func, n, n_classes)
        classes = tuple(self.classes) if self.classes is not None and len(self.classes) else tuple(range(n_classes))
        if len(classes) != n_classes:
            raise ValueError(f"The 'classes' parameter of {func} must name the {n_classes} classes of the logits. "
                             f"Got {len(classes)} names instead.")
        if len(set(classes)) != n_classes:
            raise ValueError(f"The 'classes' parameter of {func} must hold distinct names. Got {classes!r} instead.")
        object.__setattr__(self, "logits", logits)
        object.__setattr__(self, "gold", gold)
        object.__setattr__(self, "classes", tuple(c.item() if isinstance(c, np.generic) else c for c in classes))
        object.__setattr__(self, "ids", _as_index(self.ids, n, "ids", func))

    @property
    def n_examples(self) -> int:
        """Number of examples."""
        return self.logits.shape[0]

    @property
    def n_epochs(self) -> int:
        """Number of recorded epochs."""
        return self.logits.shape[1]

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return self.logits.shape[2]

    @property
    def probabilities(self) -> NDArray[np.float64]:
        """Softmax of the logits, shape (n_examples, n_epochs, n_classes)."""
        return _softmax(self.logits.copy())

    @property
    def labels(self) -> pd.Series:
        """Gold class name of every example (index: ids)."""
        names = np.empty(self.n_examples, dtype=object)
        names[:] = [self.classes[g] for g in self.gold]
        return pd.Series(names, index=self.ids, name="label")

    def measures(self, prefix: str = "") -> pd.DataFrame:
        """The four measures (see :func:`training_measures`), one row per example, indexed by ids."""
        return pd.DataFrame(_measures(self.logits, self.gold, prefix), index=self.ids)

    def to_frame(self) -> pd.DataFrame:
        """Gold label and the four measures, one row per example, indexed by ids."""
        return pd.concat([self.labels, self.measures()], axis=1)

    def save_cartography(self, directory: str | os.PathLike) -> list[Path]:
        """Write the allenai/cartography format: ``dynamics_epoch_<e>.jsonl`` per epoch in ``directory``.

        Each line is ``{"guid": id, "logits_epoch_<e>": [...], "gold": class index}``; returns the files.
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        ids = [i.item() if isinstance(i, np.generic) else i for i in self.ids]
        files = []
        for e in range(self.n_epochs):
            path = out / f"dynamics_epoch_{e}.jsonl"
            with path.open("w", encoding="utf-8") as fh:
                for guid, z, g in zip(ids, self.logits[:, e, :].tolist(), self.gold.tolist()):
                    fh.write(json.dumps({"guid": guid, f"logits_epoch_{e}": z, "gold": g}) + "\n")
            files.append(path)
        return files


@dataclass(frozen=True, eq=False)
class DynamicsRecord:
    """Training dynamics of the full input and, optionally, of a partial input, for the same examples.

    Parameters
    ----------
    full : TrainingDynamics
        Dynamics of the model trained on the full input (the paper's P+H).
    partial : TrainingDynamics, optional
        Dynamics of the model trained on the partial input (the paper's H). Must hold the same ids (in any
        order; it is re-ordered to ``full``'s) with the same gold class names.
    random_state : int, optional
        The seed the dynamics were recorded with (set by :func:`record_dynamics`).
    """

    full: TrainingDynamics
    partial: TrainingDynamics | None = None
    random_state: int | None = None

    def __post_init__(self) -> None:
        func = "DynamicsRecord"
        if not isinstance(self.full, TrainingDynamics):
            raise param_error("full", func, "a TrainingDynamics", self.full, TypeError)
        if self.partial is None:
            return
        if not isinstance(self.partial, TrainingDynamics):
            raise param_error("partial", func, "a TrainingDynamics or None", self.partial, TypeError)
        full, part = self.full, self.partial
        if part.n_examples != full.n_examples:
            raise ValueError(f"The 'partial' parameter of {func} must describe the same {full.n_examples} examples "
                             f"as 'full'. Got {part.n_examples} examples instead.")
        if not part.ids.equals(full.ids):
            missing = full.ids.difference(part.ids)
            if len(missing):
                raise ValueError(f"The 'partial' parameter of {func} must hold the ids of 'full'. "
                                 f"Got no example with id {missing[0]!r} instead.")
            order = part.ids.get_indexer(full.ids)
            part = TrainingDynamics(part.logits[order], part.gold[order], part.classes, full.ids)
            object.__setattr__(self, "partial", part)
        full_names = full.labels.to_numpy()
        part_names = part.labels.to_numpy()
        differ = np.flatnonzero(full_names != part_names)
        if len(differ):
            i = int(differ[0])
            raise ValueError(f"The 'partial' parameter of {func} must have the same gold labels as 'full'. "
                             f"Got {part_names[i]!r} instead of {full_names[i]!r} for id {full.ids[i]!r}.")

    @property
    def labels(self) -> pd.Series:
        """Gold class name of every example (index: ids)."""
        return self.full.labels

    def measures(self) -> pd.DataFrame:
        """The four full-input measures, then (when recorded) the four ``partial_`` ones; index: ids."""
        frame = self.full.measures()
        if self.partial is not None:
            frame = pd.concat([frame, self.partial.measures(PARTIAL_PREFIX)], axis=1)
        return frame

    def to_frame(self) -> pd.DataFrame:
        """Gold label and the measures, one row per example, indexed by ids."""
        return pd.concat([self.labels, self.measures()], axis=1)


# --------------------------------------------------------------------------------------------------- training
def _check_positive_float(value: Any, name: str, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise param_error(name, func, "a float in (0, inf)", value, TypeError)
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise param_error(name, func, "a float in (0, inf)", value)
    return float(value)


def _check_nonnegative_float(value: Any, name: str, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise param_error(name, func, "a float in [0, inf)", value, TypeError)
    if not (math.isfinite(float(value)) and float(value) >= 0):
        raise param_error(name, func, "a float in [0, inf)", value)
    return float(value)


def _check_training(func: str, *, epochs, hidden_size, batch_size, learning_rate, weight_decay, record,
                    n_threads) -> dict[str, Any]:
    out = {
        "epochs": check_int(epochs, "epochs", func, low=1),
        "hidden_size": None if hidden_size is None else check_int(hidden_size, "hidden_size", func, low=1),
        "batch_size": check_int(batch_size, "batch_size", func, low=1),
        "learning_rate": _check_positive_float(learning_rate, "learning_rate", func),
        "weight_decay": _check_nonnegative_float(weight_decay, "weight_decay", func),
    }
    if record not in RECORD_MODES:
        raise param_error("record", func, f"one of {list(RECORD_MODES)}", record)
    out["record"] = record
    if n_threads is not None:
        check_int(n_threads, "n_threads", func, low=1)
    return out


class _Adam:
    """Adam (Kingma & Ba) on a list of float32 arrays, updated in place."""

    def __init__(self, params: list[NDArray], lr: float, total_steps: int, b1=0.9, b2=0.999, eps=1e-8) -> None:
        self.params, self.lr, self.total = params, lr, max(total_steps, 1)
        self.b1, self.b2, self.eps, self.t = b1, b2, eps, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, grads: list[NDArray]) -> None:
        lr = self.lr * (1.0 - self.t / self.total)  # linear decay to 0 over the run, no warm-up
        self.t += 1
        c1, c2 = 1.0 - self.b1**self.t, 1.0 - self.b2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= self.b1
            m += (1.0 - self.b1) * g
            v *= self.b2
            v += (1.0 - self.b2) * (g * g)
            p -= (lr / c1) * m / (np.sqrt(v / c2) + self.eps)


def _fit_and_record(X: NDArray[np.float32], codes: NDArray, n_classes: int, rng: np.random.Generator, *,
                    epochs: int, hidden_size: int | None, batch_size: int, learning_rate: float,
                    weight_decay: float, record: str,
                    callback: Callable[[int, int], Any] | None) -> NDArray[np.float64]:
    n, d = X.shape
    mean = X.mean(axis=0, dtype=np.float64)
    std = X.std(axis=0, dtype=np.float64)
    std[std == 0] = 1.0
    Z = np.empty(X.shape, dtype=np.float32)  # standardised copy: the optimiser sees unit-scale features
    for start in range(0, n, _CHUNK):
        Z[start : start + _CHUNK] = (X[start : start + _CHUNK] - mean) / std
    onehot = np.eye(n_classes, dtype=np.float32)[codes]
    if hidden_size is None:
        params = [(rng.standard_normal((d, n_classes)) * 0.01).astype(np.float32),
                  np.zeros(n_classes, dtype=np.float32)]
    else:
        params = [(rng.standard_normal((d, hidden_size)) * math.sqrt(2.0 / d)).astype(np.float32),
                  np.zeros(hidden_size, dtype=np.float32),
                  (rng.standard_normal((hidden_size, n_classes)) * math.sqrt(1.0 / hidden_size)).astype(np.float32),
                  np.zeros(n_classes, dtype=np.float32)]
    batch_size = min(batch_size, n)
    steps = math.ceil(n / batch_size)
    adam = _Adam(params, learning_rate, epochs * steps)
    logits = np.empty((n, epochs, n_classes), dtype=np.float32)

    def forward(rows: NDArray) -> tuple[NDArray, NDArray | None]:
        if hidden_size is None:
            return rows @ params[0] + params[1], None
        h = rows @ params[0] + params[1]
        np.maximum(h, 0, out=h)
        return h @ params[2] + params[3], h

    for epoch in range(epochs):
        order = rng.permutation(n)
        for s in range(steps):
            idx = order[s * batch_size : (s + 1) * batch_size]
            xb = Z[idx]
            z, h = forward(xb)
            if record == "train_pass":
                logits[idx, epoch] = z
            g = _softmax(z.copy())
            g -= onehot[idx]
            g /= len(idx)
            if hidden_size is None:
                grads = [xb.T @ g, g.sum(axis=0)]
                if weight_decay:
                    grads[0] += weight_decay * params[0]
            else:
                dh = g @ params[2].T
                dh *= h > 0
                grads = [xb.T @ dh, dh.sum(axis=0), h.T @ g, g.sum(axis=0)]
                if weight_decay:
                    grads[0] += weight_decay * params[0]
                    grads[2] += weight_decay * params[2]
            adam.step(grads)
        if record == "epoch_end":
            for start in range(0, n, _CHUNK):
                logits[start : start + _CHUNK, epoch] = forward(Z[start : start + _CHUNK])[0]
        if callback is not None:
            callback(epoch + 1, epochs)
    return logits.astype(np.float64)


def train_dynamics(
    X: ArrayLike,
    y: ArrayLike,
    *,
    epochs: int = 5,
    hidden_size: int | None = None,
    batch_size: int = 32,
    learning_rate: float = 1e-2,
    weight_decay: float = 0.0,
    record: str = "epoch_end",
    ids: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
    callback: Callable[[int, int], Any] | None = None,
    n_threads: int | None = 1,
) -> TrainingDynamics:
    """Train a small model on ``(X, y)`` for E epochs and record every example's logits after each epoch.

    The model is trained in-sample, on the very rows being characterised (as the paper does on the test set):
    mini-batch Adam on the mean cross-entropy, features standardised per column first, one shuffle per epoch.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The representation (e.g. sentence-pair embeddings).
    y : array-like of shape (n_samples,)
        Labels of any hashable type; at least 2 classes.
    epochs : int, default=5
        E, passes over the data (the paper trains 5 epochs).
    hidden_size : int, optional
        Units of one ReLU hidden layer; ``None`` (default) trains a softmax (multinomial logistic) model.
    batch_size : int, default=32
        Mini-batch size (the paper's 32).
    learning_rate : float, default=1e-2
        Adam's initial step size; it decays linearly to 0 over the run (as the paper's schedule, no warm-up).
        With 1e-3 the softmax model on the SNLI sample embeddings stopped improving after 2-3 epochs and the
        per-example variability was close to 0; 1e-2 keeps it learning through all 5 epochs.
    weight_decay : float, default=0.0
        L2 penalty on the weights (not the biases), added to the gradient.
    record : {"epoch_end", "train_pass"}, default="epoch_end"
        ``"epoch_end"``: after each epoch, the logits of every example from the model at that point.
        ``"train_pass"``: the logits each example received in its mini-batch's forward pass during the epoch,
        before that batch's update, as allenai/cartography records them (epoch 0 then starts from an untrained
        model).
    ids : array-like, optional
        Unique example ids (default ``0 .. n_samples - 1``).
    random_state : int, numpy Generator or None
        The one source of randomness (initial weights and shuffles).
    callback : callable, optional
        Called as ``callback(epochs_done, epochs)`` after every epoch.
    n_threads : int or None, default=1
        BLAS threads during training (``None`` leaves the library default).

    Returns
    -------
    TrainingDynamics
        Logits of shape (n_samples, epochs, n_classes); classes sorted as in :func:`aflite` (``check_labels``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(-2, 1, (20, 2)), rng.normal(2, 1, (20, 2))]
    >>> y = np.repeat(["a", "b"], 20)
    >>> td = train_dynamics(X, y, epochs=3, learning_rate=0.05, random_state=0)
    >>> td.logits.shape, td.classes
    ((40, 3, 2), ('a', 'b'))
    >>> bool(td.measures()["correctness"].mean() > 0.9)
    True
    """
    func = "train_dynamics"
    opts = _check_training(func, epochs=epochs, hidden_size=hidden_size, batch_size=batch_size,
                           learning_rate=learning_rate, weight_decay=weight_decay, record=record,
                           n_threads=n_threads)
    Xc = check_features(X, "X", func)
    enc = check_labels(y, "y", func, n_rows=Xc.shape[0], min_per_class=1)
    index = _as_index(ids, Xc.shape[0], "ids", func)
    if callback is not None and not callable(callback):
        raise param_error("callback", func, "a callable or None", callback, TypeError)
    seed = check_random_state(random_state, func)
    return _train(Xc, enc.codes, enc.classes, index, seed, opts, callback, n_threads)



def _train(X, codes, classes, index, seed, opts, callback, n_threads) -> TrainingDynamics:
    rng = np.random.default_rng(seed)
    with blas_threads(n_threads):
        logits = _fit_and_record(X, codes, len(classes), rng, callback=callback, **opts)
    return TrainingDynamics(logits, codes.astype(np.int64), classes, index)



def record_dynamics(
    X: ArrayLike,
    y: ArrayLike,
    *,
    X_partial: ArrayLike | None = None,
    epochs: int = 5,
    hidden_size: int | None = None,
    batch_size: int = 32,
    learning_rate: float = 1e-2,
    weight_decay: float = 0.0,
    record: str = "epoch_end",
    ids: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
    callback: Callable[[int, int], Any] | None = None,
    n_threads: int | None = 1,
) -> DynamicsRecord:
    """Record training dynamics for the full input and a partial input of the same examples (the paper's setup).

    Two models of the same kind are trained separately, one on ``X`` (the paper's premise + hypothesis) and
    one on ``X_partial`` (hypothesis only), each in-sample for ``epochs`` epochs (see :func:`train_dynamics`).
    Each model gets its own integer seed drawn from ``random_state``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Full-input representation.
    y : array-like of shape (n_samples,)
        Labels of any hashable type; at least 2 classes.
    X_partial : array-like of shape (n_samples, n_partial_features), optional
        Partial-input representation; without it only the full-input dynamics are recorded.
    epochs : int, default=5
        E, passes over the data (the paper trains 5 epochs).
    hidden_size : int, optional
        Units of one ReLU hidden layer; ``None`` (default) trains a softmax (multinomial logistic) model.
    batch_size : int, default=32
        Mini-batch size (the paper's 32).
    learning_rate : float, default=1e-2
        Adam's initial step size; it decays linearly to 0 over the run (as the paper's schedule, no warm-up).
        With 1e-3 the softmax model on the SNLI sample embeddings stopped improving after 2-3 epochs and the
        per-example variability was close to 0; 1e-2 keeps it learning through all 5 epochs.
    weight_decay : float, default=0.0
        L2 penalty on the weights (not the biases), added to the gradient.
    record : {"epoch_end", "train_pass"}, default="epoch_end"
        ``"epoch_end"``: after each epoch, the logits of every example from the model at that point.
        ``"train_pass"``: the logits each example received in its mini-batch's forward pass during the epoch,
        before that batch's update, as allenai/cartography records them (epoch 0 then starts from an untrained
        model).
    ids : array-like, optional
        Unique example ids (default ``0 .. n_samples - 1``).
    random_state : int, numpy Generator or None
        The one source of randomness; the integer seed used is kept in ``result.random_state``.
    callback : callable, optional
        Called as ``callback(epochs_done, total_epochs)`` after every epoch of either model (the partial model's
        epochs count from ``epochs + 1``).
    n_threads : int or None, default=1
        BLAS threads during training.

    Returns
    -------
    DynamicsRecord
        ``full`` and ``partial`` dynamics; ``measures()`` gives the eight features.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4)); y = (X[:, 0] > 0).astype(int)
    >>> rec = record_dynamics(X, y, X_partial=X[:, 1:], epochs=2, random_state=0)
    >>> list(rec.measures().columns)  # doctest: +NORMALIZE_WHITESPACE
    ['confidence', 'variability', 'correctness', 'aum',
     'partial_confidence', 'partial_variability', 'partial_correctness', 'partial_aum']
    """
    func = "record_dynamics"
    opts = _check_training(func, epochs=epochs, hidden_size=hidden_size, batch_size=batch_size,
                           learning_rate=learning_rate, weight_decay=weight_decay, record=record,
                           n_threads=n_threads)
    Xc = check_features(X, "X", func)
    Xp = None if X_partial is None else check_features(X_partial, "X_partial", func, n_rows=Xc.shape[0])
    enc = check_labels(y, "y", func, n_rows=Xc.shape[0], min_per_class=1)
    index = _as_index(ids, Xc.shape[0], "ids", func)
    if callback is not None and not callable(callback):
        raise param_error("callback", func, "a callable or None", callback, TypeError)
    seed = check_random_state(random_state, func)
    seeds = np.random.default_rng(seed).integers(0, 2**63 - 1, size=2)
    total = epochs * (1 if Xp is None else 2)
    full = _train(Xc, enc.codes, enc.classes, index, int(seeds[0]), opts,
                  None if callback is None else (lambda e, _: callback(e, total)), n_threads)
    partial = None
    if Xp is not None:
        partial = _train(Xp, enc.codes, enc.classes, index, int(seeds[1]), opts,
                         None if callback is None else (lambda e, _: callback(epochs + e, total)), n_threads)
    return DynamicsRecord(full=full, partial=partial, random_state=seed)


# --------------------------------------------------------------------------------------------------- reading
def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(f"'{path}' is not UTF-8 text (line {line}, byte {exc.start} cannot be decoded); "
                         "save it as UTF-8.") from None


def _epoch_files(source: Any) -> list[tuple[Path, int | None]]:
    """(path, epoch number from the file name or None) in epoch order."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_file():
            return [(path, None)]
        if not path.is_dir():
            raise ValueError(f"Training-dynamics directory '{path}' does not exist.")
        found = {}
        for folder in (path, path / "training_dynamics"):
            if folder.is_dir():
                for f in folder.iterdir():
                    m = _EPOCH_FILE.match(f.name)
                    if m and f.is_file():
                        found[int(m.group(1))] = f
            if found:
                break
        if not found:
            raise ValueError(f"Training-dynamics directory '{path}' holds no dynamics_epoch_<e>.jsonl files "
                             "(allenai/cartography format).")
        epochs = sorted(found)
        missing = sorted(set(range(epochs[-1] + 1)) - set(epochs))
        if missing:
            have = ", ".join(found[e].name for e in epochs)
            raise ValueError(f"Training-dynamics directory '{path}' is missing epoch(s) {missing}: expected "
                             f"dynamics_epoch_0.jsonl … dynamics_epoch_{epochs[-1]}.jsonl, found {have}.")
        return [(found[e], e) for e in epochs]
    if isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray)):
        if not source:
            raise ValueError("The 'source' parameter of read_cartography_dynamics must name at least one file. "
                             "Got an empty list instead.")
        out = []
        for item in source:
            if not isinstance(item, (str, os.PathLike)):
                raise param_error("source", "read_cartography_dynamics", "a directory or a list of file paths",
                                  item, TypeError)
            if not Path(item).is_file():
                raise ValueError(f"Training-dynamics file '{item}' does not exist.")
            out.append((Path(item), None))
        return out
    raise param_error("source", "read_cartography_dynamics", "a directory or a list of file paths", source,
                      TypeError)


def _read_epoch(path: Path, epoch: int, named_epoch: int | None, classes: tuple | None
                ) -> tuple[list[Hashable], list[list[float]], list[Any], int, dict[Hashable, int]]:
    """Parse one epoch file: guids, logits rows, gold indices, number of classes, guid → line number."""
    text = _decode(path.read_bytes(), path)
    n_classes: int | None = None
    guids: list[Hashable] = []
    rows: list[list[float]] = []
    golds: list[Any] = []
    where: dict[Hashable, int] = {}
    key = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"'{path}' line {lineno} is not valid JSON: {exc.msg} (column {exc.colno}).") from None
        if not isinstance(rec, dict):
            raise ValueError(f"'{path}' line {lineno} must be a JSON object with guid, logits_epoch_<e> and gold. "
                             f"Got {type(rec).__name__} instead.")
        if key is None or key not in rec:
            wanted = f"logits_epoch_{named_epoch}" if named_epoch is not None else None
            if wanted is not None and wanted in rec:
                key = wanted
            else:
                keys = [k for k in rec if _LOGITS_KEY.match(k)]
                if len(keys) != 1 or (wanted is not None and keys):
                    expected = wanted or "logits_epoch_<e>"
                    raise ValueError(f"'{path}' line {lineno} must have one '{expected}' field (the logits). "
                                     f"Got fields {sorted(rec)} instead.")
                key = keys[0]
        guid = rec.get("guid", rec.get("id"))
        if guid is None or isinstance(guid, (list, dict, bool, float)):
            raise ValueError(f"'{path}' line {lineno} must have a 'guid' (a string or an integer). "
                             f"Got {guid!r} instead.")
        if guid in where:
            raise ValueError(f"'{path}' has guid {guid!r} twice (lines {where[guid]} and {lineno}).")
        where[guid] = lineno
        z = rec[key]
        if not isinstance(z, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in z):
            raise ValueError(f"'{path}' line {lineno}: '{key}' must be a list of numbers. Got {z!r} instead.")
        if n_classes is None:
            if len(z) < 2:
                raise ValueError(f"'{path}' line {lineno}: '{key}' must have at least 2 logits (one per class). "
                                 f"Got {len(z)} instead.")
            n_classes = len(z)
        elif len(z) != n_classes:
            raise ValueError(f"'{path}' line {lineno} has {len(z)} logits, but earlier lines have {n_classes}: every "
                             "line must have one logit per class.")
        if not all(math.isfinite(v) for v in z):
            raise ValueError(f"'{path}' line {lineno}: '{key}' must hold finite numbers. Got {z!r} instead.")
        if "gold" not in rec:
            raise ValueError(f"'{path}' line {lineno} must have a 'gold' field (the gold class).")
        gold = rec["gold"]
        if isinstance(gold, bool) or not isinstance(gold, (int, str)):
            raise ValueError(f"'{path}' line {lineno}: 'gold' must be a class index or a class name. "
                             f"Got {gold!r} instead.")
        if isinstance(gold, str):
            if classes is None:
                raise ValueError(f"'{path}' line {lineno}: 'gold' is the class name {gold!r}; pass classes=[...] "
                                 "(the class names in logit order) to read named gold labels.")
            if gold not in classes:
                raise ValueError(f"'{path}' line {lineno}: 'gold' {gold!r} is not one of the classes "
                                 f"{list(classes)}.")
            gold = classes.index(gold)
        elif not 0 <= gold < n_classes:
            raise ValueError(f"'{path}' line {lineno}: 'gold' must be a class index in [0, {n_classes - 1}]. "
                             f"Got {gold} instead.")
        guids.append(guid)
        rows.append(z)
        golds.append(gold)
    if not guids:
        raise ValueError(f"Training-dynamics file '{path}' (epoch {epoch}) has no records.")
    return guids, rows, golds, n_classes, where


def read_cartography_dynamics(
    source: str | os.PathLike | Sequence[str | os.PathLike], *, classes: Sequence[Hashable] | None = None
) -> TrainingDynamics:
    """Read training dynamics written in allenai/cartography's format (one JSONL file per epoch).

    Every line of ``dynamics_epoch_<e>.jsonl`` is ``{"guid": ..., "logits_epoch_<e>": [z_1, ..., z_C],
    "gold": g}``. Rows are aligned across epochs by ``guid`` (``"id"`` is accepted too); the row order is
    that of epoch 0.

    Parameters
    ----------
    source : path or list of paths
        A directory holding ``dynamics_epoch_0.jsonl``, ``dynamics_epoch_1.jsonl``, … (or a
        ``training_dynamics/`` sub-directory holding them, cartography's layout), every epoch from 0 on; or
        the epoch files themselves, in epoch order (then each line needs exactly one ``logits_epoch_<e>``
        field, whatever ``e``).
    classes : sequence, optional
        Class names in logit order. Required when ``gold`` holds class names; otherwise it names the classes
        (default ``0 .. C-1``).

    Returns
    -------
    TrainingDynamics
        Logits of shape (n_examples, n_epochs, n_classes); ``ids`` are the guids.

    Raises
    ------
    ValueError
        Naming the file (and line) for: a missing directory, file or epoch; text that is not UTF-8; a line that
        is not valid JSON or lacks a field; logits of different lengths; an unknown or out-of-range gold class;
        a guid repeated in one file, missing from an epoch, or with different gold labels across epochs.

    Examples
    --------
    >>> from pathlib import Path
    >>> folder = Path(__file__).parents[1] / "sample_data" / "cartography_example"
    >>> td = read_cartography_dynamics(folder, classes=["entailment", "neutral", "contradiction"])
    >>> td.n_examples, td.n_epochs, td.n_classes
    (6, 3, 3)
    """
    func = "read_cartography_dynamics"
    if classes is not None:
        if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence):
            raise param_error("classes", func, "a sequence of class names in logit order", classes, TypeError)
        classes = tuple(classes)
        if len(set(classes)) != len(classes) or len(classes) < 2:
            raise param_error("classes", func, "at least 2 distinct class names", classes)
    files = _epoch_files(source)
    n_classes: int | None = None
    first_path = files[0][0]
    logits_by_epoch: list[NDArray] = []
    guids0: list[Hashable] = []
    gold0: NDArray = np.empty(0, dtype=np.int64)
    for epoch, (path, named) in enumerate(files):
        guids, rows, golds, file_classes, where = _read_epoch(path, epoch, named, classes)
        if classes is not None and file_classes != len(classes):
            raise ValueError(f"'{path}' has {file_classes} logits per line, but {len(classes)} classes were "
                             f"given ({list(classes)}).")
        if n_classes is None:
            n_classes = file_classes
        elif file_classes != n_classes:
            raise ValueError(f"'{path}' has {file_classes} logits per line, but '{first_path}' has {n_classes}: "
                             "every epoch must have one logit per class.")
        z = np.asarray(rows, dtype=np.float64)
        g = np.asarray(golds, dtype=np.int64)
        if epoch == 0:
            guids0, gold0 = guids, g
            logits_by_epoch.append(z)
            continue
        if guids != guids0:
            position = {gid: i for i, gid in enumerate(guids)}
            missing = [gid for gid in guids0 if gid not in position]
            if missing:
                raise ValueError(f"guid {missing[0]!r} of epoch 0 ('{first_path}') is missing from epoch {epoch} "
                                 f"('{path}'){f' along with {len(missing) - 1} more' if len(missing) > 1 else ''}.")
            if len(guids) != len(guids0):
                known = set(guids0)
                extra = next(gid for gid in guids if gid not in known)
                raise ValueError(f"'{path}' line {where[extra]} has guid {extra!r}, which is not in epoch 0 "
                                 f"('{first_path}').")
            order = np.array([position[gid] for gid in guids0])
            z, g = z[order], g[order]
        differ = np.flatnonzero(g != gold0)
        if len(differ):
            i = int(differ[0])
            raise ValueError(f"guid {guids0[i]!r} has gold {int(g[i])} in epoch {epoch} ('{path}') but {int(gold0[i])} "
                             f"in epoch 0 ('{first_path}'): the gold label must not change across epochs.")
        logits_by_epoch.append(z)
    logits = np.stack(logits_by_epoch, axis=1)
    return TrainingDynamics(logits, gold0, classes if classes is not None else (), pd.Index(guids0, name="id"))


# --------------------------------------------------------------------------------------------------- levels
@dataclass(frozen=True, eq=False)
class DifficultyLevels:
    """Per-example difficulty levels, with the measures they were derived from.

    Attributes
    ----------
    levels : pandas.Series
        Ordered categorical with categories ``("easy", "ambiguous", "hard")``, one per example (index: ids).
    measures : pandas.DataFrame
        The measures used (one row per example, same index).
    method : str
        ``"gmm"`` (:func:`difficulty_levels`), ``"data_maps"`` or ``"aum"`` (the baselines).
    thresholds : dict of str to float
        Cut points used by a percentile baseline (empty for ``"gmm"``).
    random_state : int or None
        The seed of the Gaussian mixture (``None`` for the baselines, which are deterministic).
    """

    levels: pd.Series
    measures: pd.DataFrame
    method: str
    thresholds: dict[str, float] = field(default_factory=dict)
    random_state: int | None = None

    @property
    def level_means(self) -> pd.DataFrame:
        """Mean of every measure per level (the cluster means, in the measures' own units); rows easy → hard."""
        return self.measures.groupby(self.levels, observed=False).mean().reindex(list(LEVELS))

    def counts(self) -> pd.Series:
        """Examples per level (all three levels, zeros included)."""
        return self.levels.value_counts().reindex(list(LEVELS), fill_value=0).rename("count")

    def to_frame(self) -> pd.DataFrame:
        """The measures and a ``level`` column, one row per example."""
        return self.measures.assign(level=self.levels)


def _level_series(codes: NDArray, index: pd.Index) -> pd.Series:
    cat = pd.Categorical.from_codes(codes, categories=list(LEVELS), ordered=True)
    return pd.Series(cat, index=index, name="level")


def _measure_frame(data: Any, func: str, required: Sequence[str], columns: Sequence[str] | None = None
                   ) -> pd.DataFrame:
    if isinstance(data, (DynamicsRecord, TrainingDynamics)):
        frame = data.measures()
    elif isinstance(data, pd.DataFrame):
        frame = data
    else:
        raise param_error("data", func, "a DynamicsRecord, TrainingDynamics or DataFrame of measures", data,
                          TypeError)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"The 'data' parameter of {func} must have the measure column(s) {missing}. "
                         f"Got columns {list(frame.columns)} instead.")
    if columns is None:
        columns = [c for c in _KNOWN_COLUMNS if c in frame.columns]
    else:
        if isinstance(columns, str):
            columns = [columns]
        columns = list(columns)
        unknown = [c for c in columns if c not in frame.columns]
        if unknown:
            raise ValueError(f"The 'columns' parameter of {func} must name columns of the measures "
                             f"{list(frame.columns)}. Got {unknown!r} instead.")
        lacking = [c for c in required if c not in columns]
        if lacking:
            raise ValueError(f"The 'columns' parameter of {func} must include {lacking}. Got {columns!r} instead.")
    out = frame[list(columns)]
    bad = [c for c in out.columns if not (pd.api.types.is_numeric_dtype(out[c]) and not pd.api.types.is_bool_dtype(
        out[c]))]
    if bad:
        raise ValueError(f"The 'data' parameter of {func} must hold numeric measures. Got non-numeric column(s) "
                         f"{bad} instead.")
    values = out.to_numpy(dtype=np.float64)
    if len(out) == 0:
        raise ValueError(f"The 'data' parameter of {func} must have at least one example. Got none instead.")
    if not np.isfinite(values).all():
        row = int(np.flatnonzero(~np.isfinite(values).all(axis=1))[0])
        raise ValueError(f"The 'data' parameter of {func} must hold finite measures. Got NaN or infinity in "
                         f"row {row} instead.")
    return out.astype(np.float64)


def difficulty_levels(
    data: DynamicsRecord | TrainingDynamics | pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    n_init: int = 10,
    covariance_type: str = "full",
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
) -> DifficultyLevels:
    """Cluster examples into easy / ambiguous / hard with a 3-component Gaussian mixture (the paper's method).

    The features (default: the eight measures, or the four of a single input) are standardised (mean 0,
    standard deviation 1 per column), a :class:`sklearn.mixture.GaussianMixture` with three components is
    fitted, and every example goes to its most likely component. Components are ranked by the mean full-input
    ``confidence`` of their members: highest = ``"easy"``, middle = ``"ambiguous"``, lowest = ``"hard"``.

    Parameters
    ----------
    data : DynamicsRecord, TrainingDynamics or pandas.DataFrame
        The dynamics, or their measures (one row per example; needs a ``confidence`` column).
    columns : sequence of str, optional
        Feature columns to cluster on (default: every column of :data:`MEASURES` and its ``partial_`` version
        that is present).
    n_init : int, default=10
        Initialisations of the mixture; the best likelihood is kept (the authors' code uses 10).
    covariance_type : {"full", "tied", "diag", "spherical"}, default="full"
        Passed to the mixture.
    random_state : int, numpy Generator or None
        Seed of the mixture; the integer used is kept in ``result.random_state``.
    n_threads : int or None, default=1
        BLAS/OpenMP threads during the fit (``None`` leaves the library default). On a busy 2-core machine two
        threads made the fit several times slower.

    Returns
    -------
    DifficultyLevels
        ``levels`` per example, ``level_means`` (the cluster means), ``counts()``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> conf = np.r_[rng.normal(0.9, 0.02, 30), rng.normal(0.5, 0.02, 30), rng.normal(0.1, 0.02, 30)]
    >>> m = pd.DataFrame({"confidence": conf, "variability": rng.normal(0.1, 0.01, 90)})
    >>> difficulty_levels(m, random_state=0).counts().tolist()
    [30, 30, 30]
    """
    from sklearn.mixture import GaussianMixture

    func = "difficulty_levels"
    frame = _measure_frame(data, func, ("confidence",), columns)
    n_init = check_int(n_init, "n_init", func, low=1)
    if covariance_type not in ("full", "tied", "diag", "spherical"):
        raise param_error("covariance_type", func, "one of ['full', 'tied', 'diag', 'spherical']", covariance_type)
    if len(frame) < len(LEVELS):
        raise ValueError(f"The 'data' parameter of {func} must have at least {len(LEVELS)} examples to form three "
                         f"clusters. Got {len(frame)} instead.")
    if n_threads is not None:
        check_int(n_threads, "n_threads", func, low=1)
    seed = check_random_state(random_state, func)
    values = frame.to_numpy()
    std = values.std(axis=0)
    std[std == 0] = 1.0
    standardised = (values - values.mean(axis=0)) / std
    gmm = GaussianMixture(n_components=len(LEVELS), covariance_type=covariance_type, n_init=n_init,
                          random_state=seed % 2**32)
    with blas_threads(n_threads):
        component = gmm.fit(standardised).predict(standardised)
    conf = frame["confidence"].to_numpy()
    conf_col = list(frame.columns).index("confidence")
    mean_conf = np.array([
        conf[component == k].mean() if np.any(component == k)
        else gmm.means_[k, conf_col] * std[conf_col] + values[:, conf_col].mean()
        for k in range(len(LEVELS))
    ])
    rank = np.empty(len(LEVELS), dtype=np.int64)
    rank[np.argsort(-mean_conf, kind="stable")] = np.arange(len(LEVELS))  # component → level code
    return DifficultyLevels(_level_series(rank[component], frame.index), frame, "gmm", {}, seed)


def data_maps_levels(
    data: DynamicsRecord | TrainingDynamics | pd.DataFrame, *, ambiguous_fraction: float = 0.33
) -> DifficultyLevels:
    """Data Maps baseline (Swayamdipta et al., 2020): ambiguous = most variable; the rest split by confidence.

    ``"ambiguous"``: full-input ``variability`` at or above its (1 − ``ambiguous_fraction``) quantile (the top
    33 % by default: the paper's "top 33 %" and "above the 66 % percentile"). The remaining examples are split
    at their median ``confidence``: at or above it ``"easy"`` (easy-to-learn: high confidence, low
    variability), below it ``"hard"`` (hard-to-learn: low confidence, low variability). The paper only
    defines the ambiguous cut; the median split of the rest is our choice, giving three near-equal levels.

    Parameters
    ----------
    data : DynamicsRecord, TrainingDynamics or pandas.DataFrame
        The dynamics or their measures (needs ``confidence`` and ``variability``).
    ambiguous_fraction : float, default=0.33
        Share of examples (before ties) called ambiguous, in (0, 1).

    Returns
    -------
    DifficultyLevels
        With ``thresholds = {"variability": v, "confidence": c}``.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame({"confidence": [0.9, 0.8, 0.5, 0.2, 0.1, 0.6],
    ...                   "variability": [0.01, 0.02, 0.30, 0.03, 0.04, 0.25]})
    >>> data_maps_levels(m).levels.tolist()
    ['easy', 'easy', 'ambiguous', 'hard', 'hard', 'ambiguous']
    """
    func = "data_maps_levels"
    frame = _measure_frame(data, func, ("confidence", "variability"), ["confidence", "variability"])
    fraction = _check_open_fraction(ambiguous_fraction, "ambiguous_fraction", func)
    var = frame["variability"].to_numpy()
    conf = frame["confidence"].to_numpy()
    v_cut = float(np.quantile(var, 1.0 - fraction))
    ambiguous = var >= v_cut
    rest = ~ambiguous
    c_cut = float(np.median(conf[rest])) if rest.any() else float("nan")
    codes = np.where(ambiguous, 1, np.where(conf >= c_cut, 0, 2))
    return DifficultyLevels(_level_series(codes, frame.index), frame, "data_maps",
                            {"variability": v_cut, "confidence": c_cut}, None)


def aum_levels(
    data: DynamicsRecord | TrainingDynamics | pd.DataFrame, *, lower: float = 0.33, upper: float = 0.66
) -> DifficultyLevels:
    """AUM percentile bands (after Pleiss et al., 2020, as the paper's baseline): hard / ambiguous / easy.

    With ``lo`` and ``hi`` the ``lower`` and ``upper`` quantiles of the full-input ``aum``: below ``lo`` is
    ``"hard"``, above ``hi`` is ``"easy"``, from ``lo`` to ``hi`` (inclusive) is ``"ambiguous"``.

    Parameters
    ----------
    data : DynamicsRecord, TrainingDynamics or pandas.DataFrame
        The dynamics or their measures (needs ``aum``).
    lower, upper : float, default=0.33, 0.66
        Quantiles bounding the ambiguous band, ``0 < lower < upper < 1``.

    Returns
    -------
    DifficultyLevels
        With ``thresholds = {"aum_lower": lo, "aum_upper": hi}``.

    Examples
    --------
    >>> import pandas as pd
    >>> aum_levels(pd.DataFrame({"aum": [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0]})).levels.tolist()
    ['hard', 'hard', 'ambiguous', 'ambiguous', 'easy', 'easy']
    """
    func = "aum_levels"
    frame = _measure_frame(data, func, ("aum",), ["aum"])
    lo_q = _check_open_fraction(lower, "lower", func)
    hi_q = _check_open_fraction(upper, "upper", func)
    if not lo_q < hi_q:
        raise ValueError(f"The 'upper' parameter of {func} must be a float in (lower, 1) = ({lo_q}, 1). "
                         f"Got {upper!r} instead.")
    aum = frame["aum"].to_numpy()
    lo, hi = (float(v) for v in np.quantile(aum, [lo_q, hi_q]))
    codes = np.where(aum < lo, 2, np.where(aum > hi, 0, 1))
    return DifficultyLevels(_level_series(codes, frame.index), frame, "aum", {"aum_lower": lo, "aum_upper": hi},
                            None)


def _check_open_fraction(value: Any, name: str, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise param_error(name, func, "a float in (0, 1)", value, TypeError)
    if not 0.0 < float(value) < 1.0:
        raise param_error(name, func, "a float in (0, 1)", value)
    return float(value)


# --------------------------------------------------------------------------------------------------- CLI
def add_cli(subparsers: Any, name: str = "dynamics") -> None:
    """Register the ``dynamics`` sub-command on an argparse ``subparsers`` object.

    ``aflite dynamics`` records (``--features``) or reads (``--dynamics-dir``) training dynamics, computes the
    measures, the GMM difficulty levels and both baselines, optionally the spurious-correlation measures of a
    text table (``--table``), writes one row per example to ``--out`` (.parquet or .csv) and prints one JSON
    line with the counts per level. Bad input raises ``ValueError``.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers()`` returned.
    name : str, default="dynamics"
        The command's name (so it fits ``aflite_core.cli._EXTRA_COMMANDS``, which calls ``register(sub, name)``).
    """
    p = subparsers.add_parser(
        name,
        help="difficulty levels (easy/ambiguous/hard) from training dynamics",
        description="Difficulty levels from training dynamics (Cosma et al., 2024): record or read per-epoch "
                    "logits, compute confidence/variability/correctness/AUM for the full and partial input, "
                    "cluster them, and write one row per example.",
    )
    src = p.add_argument_group("record dynamics from features")
    src.add_argument("--features", help="full-input features .npy (e.g. premise+hypothesis embeddings)")
    src.add_argument("--partial-features", help="partial-input features .npy (e.g. hypothesis only)")
    src.add_argument("--labels", help="labels: .npy, .txt (one per line), .csv or .tsv")
    src.add_argument("--label-column", default=None, help="label column of a CSV/TSV with several columns")
    src.add_argument("--epochs", type=int, default=5, help="training epochs (default 5)")
    src.add_argument("--hidden-size", type=int, default=None, help="hidden units (default: softmax model)")
    src.add_argument("--batch-size", type=int, default=32, help="mini-batch size (default 32)")
    src.add_argument("--learning-rate", type=float, default=1e-2, help="Adam learning rate (default 0.01)")
    src.add_argument("--ids", default=None, help="row ids, one per row (.npy/.txt/.csv with an 'id' column)")
    src.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    red = p.add_argument_group("or read dynamics (allenai/cartography JSONL)")
    red.add_argument("--dynamics-dir", help="folder of dynamics_epoch_<e>.jsonl for the full input")
    red.add_argument("--partial-dynamics-dir", help="the same for the partial input")
    red.add_argument("--classes", default=None, help="class names in logit order, comma-separated")
    txt = p.add_argument_group("spurious-correlation measures")
    txt.add_argument("--table", help="texts: .csv, .tsv, .jsonl or .parquet, one row per example")
    txt.add_argument("--text-a", default="premise", help="first text column (default premise)")
    txt.add_argument("--text-b", default="hypothesis", help="second text column (default hypothesis)")
    txt.add_argument("--id-column", default=None, help="table column matching the dynamics ids (default: by row)")
    txt.add_argument("--tests-out", default=None, help="write the Mann-Whitney table (.csv) here")
    p.add_argument("--ambiguous-fraction", type=float, default=0.33, help="Data Maps ambiguous share (0.33)")
    p.add_argument("--n-init", type=int, default=10, help="Gaussian-mixture initialisations (default 10)")
    p.add_argument("--out", required=True, help="per-example output: .parquet or .csv")
    p.set_defaults(func=_cmd_dynamics)


def _read_table(path: str) -> pd.DataFrame:
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"Table '{file}' does not exist.")
    suffix = file.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(file)
        if suffix in (".csv", ".tsv"):
            text = _decode(file.read_bytes(), file)
            return pd.read_csv(io.StringIO(text), sep="\t" if suffix == ".tsv" else ",", dtype=str,
                               keep_default_na=False)
        if suffix == ".jsonl":
            records = []
            for lineno, line in enumerate(_decode(file.read_bytes(), file).splitlines(), start=1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"'{file}' line {lineno} is not valid JSON: {exc.msg}.") from None
            return pd.DataFrame.from_records(records)
    except ValueError:
        raise
    except Exception as exc:  # parser errors of pandas / pyarrow
        raise ValueError(f"Table '{file}' could not be read: {exc}") from None
    raise ValueError(f"Table '{file}' must be .csv, .tsv, .jsonl or .parquet; got '{suffix}'.")


def _cmd_dynamics(args: Any) -> int:
    from .io import read_features, read_labels
    from .spurious import compare_classes, spurious_measures

    t0 = time.perf_counter()
    out = Path(args.out)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise ValueError(f"--out '{out}' must end in .parquet or .csv.")
    if (args.features is None) == (args.dynamics_dir is None):
        raise ValueError("Give either --features (with --labels) or --dynamics-dir, exactly one of them.")
    if args.features is not None:
        if args.labels is None:
            raise ValueError("--features needs --labels.")
        if args.partial_dynamics_dir is not None:
            raise ValueError("--partial-dynamics-dir goes with --dynamics-dir; with --features use "
                             "--partial-features.")
        X = read_features(args.features)
        Xp = None if args.partial_features is None else read_features(args.partial_features)
        y = read_labels(args.labels, column=args.label_column)
        if Xp is not None and Xp.shape[0] != X.shape[0]:
            raise ValueError(f"--partial-features has {Xp.shape[0]} rows, --features has {X.shape[0]}.")
        ids = None if args.ids is None else read_labels(args.ids, column="id")
        record = record_dynamics(X, y, X_partial=Xp, epochs=args.epochs, hidden_size=args.hidden_size,
                                 batch_size=args.batch_size, learning_rate=args.learning_rate, ids=ids,
                                 random_state=args.seed)
    else:
        if args.partial_features is not None or args.labels is not None or args.ids is not None:
            raise ValueError("--partial-features, --labels and --ids go with --features; --dynamics-dir reads the "
                             "gold labels and ids (guids) from the files (use --partial-dynamics-dir for the "
                             "partial input).")
        classes = None if args.classes is None else [c.strip() for c in args.classes.split(",")]
        full = read_cartography_dynamics(args.dynamics_dir, classes=classes)
        partial = None
        if args.partial_dynamics_dir is not None:
            partial = read_cartography_dynamics(args.partial_dynamics_dir, classes=classes)
        record = DynamicsRecord(full=full, partial=partial)
    levels = difficulty_levels(record, n_init=args.n_init, random_state=args.seed)
    maps = data_maps_levels(record, ambiguous_fraction=args.ambiguous_fraction)
    bands = aum_levels(record)
    frame = record.to_frame()
    frame["level"] = levels.levels
    frame["data_maps_level"] = maps.levels
    frame["aum_level"] = bands.levels
    summary: dict[str, Any] = {"rows": len(frame), "epochs": record.full.n_epochs,
                               "partial_input": record.partial is not None}
    if args.table is not None:
        table = _read_table(args.table)
        for col in (args.text_a, args.text_b):
            if col not in table.columns:
                raise ValueError(f"Table '{args.table}' has no column '{col}'; its columns are {list(table.columns)} "
                                 "(choose them with --text-a / --text-b).")
        if args.id_column is not None:
            if args.id_column not in table.columns:
                raise ValueError(f"Table '{args.table}' has no column '{args.id_column}' (--id-column).")
            keyed = table.set_index(table[args.id_column].astype(str))
            if keyed.index.has_duplicates:
                raise ValueError(f"Table '{args.table}' repeats id {keyed.index[keyed.index.duplicated()][0]!r} in "
                                 f"column '{args.id_column}'.")
            wanted = frame.index.astype(str)
            absent = wanted.difference(keyed.index)
            if len(absent):
                raise ValueError(f"Table '{args.table}' has no row with {args.id_column} = {absent[0]!r}.")
            table = keyed.loc[wanted]
        elif len(table) != len(frame):
            raise ValueError(f"Table '{args.table}' has {len(table)} rows but the dynamics have {len(frame)}; give "
                             "one row per example in the same order, or --id-column.")
        for col in (args.text_a, args.text_b):
            bad = [i for i, v in enumerate(table[col].tolist()) if not isinstance(v, str)]
            if bad:
                raise ValueError(f"Table '{args.table}' column '{col}' must hold text; row {bad[0]} holds "
                                 f"{table[col].iloc[bad[0]]!r}.")
        spur = spurious_measures(table[args.text_a].tolist(), table[args.text_b].tolist())
        spur.index = frame.index
        frame = pd.concat([frame, spur], axis=1)
        if args.tests_out is not None:
            tests = compare_classes(spur, frame["label"], levels)
            tests.to_csv(args.tests_out, index=False)
            summary["tests_out"] = str(args.tests_out)
    elif args.tests_out is not None:
        raise ValueError("--tests-out needs --table (the texts to measure).")
    out.parent.mkdir(parents=True, exist_ok=True)
    written = frame.reset_index()
    if out.suffix.lower() == ".parquet":
        written.to_parquet(out, index=False)
    else:
        written.to_csv(out, index=False)
    summary.update({
        "levels": {k: int(v) for k, v in levels.counts().items()},
        "data_maps_levels": {k: int(v) for k, v in maps.counts().items()},
        "aum_levels": {k: int(v) for k, v in bands.counts().items()},
        "out": str(out),
        "seconds": round(time.perf_counter() - t0, 3),
    })
    print(json.dumps(summary))
    return 0
