"""Per-example measures of a training run's dynamics: confidence, variability, correctness and AUM."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .._validation import param_error

__all__ = ["MEASURES", "PARTIAL_PREFIX", "DynamicsRecord", "TrainingDynamics", "training_measures"]


#: the four per-example measures of one input (columns of :func:`training_measures`)
MEASURES: tuple[str, ...] = ("confidence", "variability", "correctness", "aum")


#: column prefix of the partial-input measures
PARTIAL_PREFIX = "partial_"


_KNOWN_COLUMNS = MEASURES + tuple(PARTIAL_PREFIX + m for m in MEASURES)


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
        raise param_error(
            name, func, "a numeric array of shape (n_examples, n_epochs, n_classes)", logits, TypeError
        ) from None
    if arr.ndim != 3 or arr.shape[0] < 1 or arr.shape[1] < 1 or arr.shape[2] < 2:
        raise ValueError(
            f"The '{name}' parameter of {func} must be an array of shape (n_examples, n_epochs, n_classes) with "
            f"at least 1 example, 1 epoch and 2 classes. Got shape {arr.shape} instead."
        )
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr).all(axis=(1, 2)))[0])
        raise ValueError(
            f"The '{name}' parameter of {func} must contain only finite values. "
            f"Got NaN or infinity (first in example {bad}) instead."
        )
    return arr


def _check_gold(gold: Any, name: str, func: str, n: int, n_classes: int) -> NDArray[np.int64]:
    arr = np.asarray(gold)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(
            f"The '{name}' parameter of {func} must be 1-D with one class index per example ({n}). "
            f"Got shape {arr.shape} instead."
        )
    if arr.dtype.kind not in "iu":
        raise param_error(name, func, f"an int array of class indices in [0, {n_classes - 1}]", arr, TypeError)
    if n and (arr.min() < 0 or arr.max() >= n_classes):
        bad = int(np.flatnonzero((arr < 0) | (arr >= n_classes))[0])
        raise ValueError(
            f"The '{name}' parameter of {func} must hold class indices in [0, {n_classes - 1}]. "
            f"Got {int(arr[bad])} (example {bad}) instead."
        )
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
        raise ValueError(
            f"The '{name}' parameter of {func} must have one id per example ({n}). Got {len(index)} ids instead."
        )
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
            raise ValueError(
                f"The 'classes' parameter of {func} must name the {n_classes} classes of the logits. "
                f"Got {len(classes)} names instead."
            )
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
        Every file goes through :func:`aflite_core.dynamics.recorder.write_epoch` (crash-consistent; ids must
        be str or int).
        """
        from .recorder import write_epoch

        ids = [i.item() if isinstance(i, np.generic) else i for i in self.ids]
        return [write_epoch(directory, e, ids, self.logits[:, e, :], self.gold) for e in range(self.n_epochs)]


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
            raise ValueError(
                f"The 'partial' parameter of {func} must describe the same {full.n_examples} examples "
                f"as 'full'. Got {part.n_examples} examples instead."
            )
        if not part.ids.equals(full.ids):
            missing = full.ids.difference(part.ids)
            if len(missing):
                raise ValueError(
                    f"The 'partial' parameter of {func} must hold the ids of 'full'. "
                    f"Got no example with id {missing[0]!r} instead."
                )
            order = part.ids.get_indexer(full.ids)
            part = TrainingDynamics(part.logits[order], part.gold[order], part.classes, full.ids)
            object.__setattr__(self, "partial", part)
        full_names = full.labels.to_numpy()
        part_names = part.labels.to_numpy()
        differ = np.flatnonzero(full_names != part_names)
        if len(differ):
            i = int(differ[0])
            raise ValueError(
                f"The 'partial' parameter of {func} must have the same gold labels as 'full'. "
                f"Got {part_names[i]!r} instead of {full_names[i]!r} for id {full.ids[i]!r}."
            )

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
