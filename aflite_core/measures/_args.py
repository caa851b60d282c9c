"""Argument checks the measures share (kept masks, groups, fractions …) and their seeding helpers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _validation as v
from ..engine.result import AFLiteResult


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
                raise v.param_error(
                    name, func, f"an AFLiteResult or a boolean array of length {n_rows}", kept, TypeError
                )
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


def _normalise_rows(X: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)
