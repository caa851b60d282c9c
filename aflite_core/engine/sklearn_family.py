"""Any scikit-learn classifier as AFLite's model family M (:class:`SklearnFamily`), cloned per partition.

Each partition trains a fresh clone on an exactly uniform random subset of t rows, as in the paper; it is the
slow, general path next to the batched linear families of :mod:`aflite_core.engine.models`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .partitions import PREDICT_CHUNK_BYTES, PartitionPlan, exact_plan, grouped_exact_plan, report_step

__all__ = ["SklearnFamily"]


class _ConstantClassifier:
    """Stand-in when a training part holds a single class: predicts that class."""

    def __init__(self, code: int) -> None:
        self.code = code

    def predict(self, X):
        return np.full(len(X), self.code, dtype=np.int64)


@dataclass(frozen=True)
class SklearnFamily:
    """Any scikit-learn classifier as the model family M, cloned per partition.

    Each partition trains a fresh ``sklearn.base.clone`` of ``estimator`` on an exactly uniform random
    subset of t rows. Estimators with a ``random_state`` parameter get their own integer seed drawn from the
    run's generator, so runs are reproducible.

    Parameters
    ----------
    estimator : sklearn classifier
        Unfitted estimator with ``fit`` and ``predict``.
    """

    estimator: Any

    @property
    def name(self) -> str:
        """Class name of the estimator."""
        return type(self.estimator).__name__

    def spec(self) -> dict[str, Any]:
        """JSON-serialisable description: class name and ``get_params()``."""
        params = {}
        for key, value in self.estimator.get_params(deep=False).items():
            params[key] = value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
        cls = type(self.estimator)
        return {"family": "sklearn", "class": f"{cls.__module__}.{cls.__qualname__}", "params": params}

    def session(
        self, X, codes, n_classes: int, *, train_size: int, n_partitions: int, rng, groups=None
    ) -> _SklearnSession:
        """Bind the family to one run's data (``groups``: training parts of whole groups)."""
        return _SklearnSession(self, X, codes, n_classes, train_size, n_partitions, groups=groups)


@dataclass
class _SklearnSession:
    family: SklearnFamily
    X: NDArray[np.float32]
    codes: NDArray[np.int32]
    n_classes: int
    train_size: int
    n_partitions: int
    mode: str = "exact"
    groups: NDArray[np.int32] | None = None

    @property
    def predict_chunk_rows(self) -> int:
        return max(8192, 16 * PREDICT_CHUNK_BYTES // (4 * self.X.shape[1]))  # fewer, larger predict calls

    def draw_plan(self, rows, rng) -> PartitionPlan:
        if self.groups is not None:
            return grouped_exact_plan(self.groups[rows], self.n_partitions, self.train_size, rng)
        return exact_plan(len(rows), self.n_partitions, self.train_size, rng)

    def fit(self, rows, plan: PartitionPlan, partitions: Sequence[int], rng) -> list:
        from sklearn.base import clone

        parts = list(partitions)
        seeds = rng.integers(0, 2**31 - 1, size=plan.n_partitions)
        models = []
        has_seed = "random_state" in self.family.estimator.get_params(deep=False)
        for i, j in enumerate(parts):
            report_step(self, "fit", i, len(parts))
            train = np.sort(rows[plan.train_mask(j)])
            y_train = self.codes[train]
            present = np.unique(y_train)
            if len(present) < 2:
                models.append(_ConstantClassifier(int(present[0])))
                continue
            est = clone(self.family.estimator)
            if has_seed:
                est.set_params(random_state=int(seeds[j]))
            est.fit(self.X[train], y_train)
            models.append(est)
        return models

    def predict(self, fitted: list, X_rows, mask=None) -> NDArray[np.int64]:
        preds = np.full((len(X_rows), len(fitted)), -1, dtype=np.int64)
        for j, est in enumerate(fitted):
            sel = slice(None) if mask is None else mask[:, j]
            if mask is not None and not sel.any():
                continue
            preds[sel, j] = est.predict(X_rows[sel])
        return preds

    def remove(self, rows) -> None:
        return None
