"""The argument checks :func:`~aflite_core.engine.filtering.predictability` and the null share.

Below both :mod:`aflite_core.engine.filtering` and :mod:`aflite_core.engine.null`, so the null validates exactly as
``predictability`` does without importing the module that imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import _validation as v
from .registry import resolve_model

__all__ = ["check_groups", "group_summary", "predictability_inputs"]


def check_groups(groups: Any, func: str, *, n_rows: int) -> np.ndarray | None:
    """Group labels (any hashable, one per row) as int32 codes 0 .. G-1 in order of first appearance, or None.

    Raises
    ------
    ValueError
        Not one label per row, a missing label, or fewer than 2 groups (one sentence each).
    """
    if groups is None:
        return None
    if isinstance(groups, (pd.Series, pd.Index)):
        groups = groups.to_numpy()
    arr = np.asarray(groups) if isinstance(groups, np.ndarray) else v._as_label_array(groups, "groups", func)
    if arr.ndim != 1 or len(arr) != n_rows:
        raise ValueError(
            f"The 'groups' parameter of {func} must have one group label per row of X ({n_rows}). "
            f"Got shape {arr.shape} instead."
        )
    values = [v._label_key(x) for x in arr] if arr.dtype == object else arr
    series = pd.Series(values, dtype=object if arr.dtype == object else None)
    if series.isna().any():
        first = int(np.flatnonzero(series.isna().to_numpy())[0])
        raise ValueError(f"The 'groups' parameter of {func} must not contain missing labels. Row {first} has none.")
    try:
        codes, uniques = pd.factorize(series, sort=False)
    except TypeError as exc:
        raise TypeError(f"The 'groups' parameter of {func} must hold hashable labels ({exc}).") from None
    if len(uniques) < 2:
        raise ValueError(
            f"The 'groups' parameter of {func} must name at least 2 groups (every training part holds some "
            f"out); got {len(uniques)}; pass groups=None to partition rows freely."
        )
    return codes.astype(np.int32)


def group_summary(codes: np.ndarray, source: str | None = None) -> dict[str, Any]:
    """What a run records about its groups in its parameters (``params["groups"]``): counts, a hash, the source."""
    from .._utils import hash_array

    sizes = np.bincount(codes)
    return {
        "n_groups": len(sizes),
        "largest": int(sizes.max()),
        "grouped_rows": int(sizes[sizes > 1].sum()),
        "sha256": hash_array(np.asarray(codes, dtype=np.int32)),
        "source": source,
    }


def _check_device(device: Any, precision: Any, max_device_bytes: Any, family: Any, func: str) -> str | None:
    """Validate the device arguments: None for the numpy engine, else the torch device name (torch imported)."""
    if device == "cpu" and precision == "float32" and max_device_bytes is None:
        return None  # the default: nothing to import or check
    from .torch_devices import check_device, check_family

    torch_device = check_device(device, precision, max_device_bytes, func)
    if torch_device is not None:
        check_family(family, func)
    return torch_device


def predictability_inputs(
    X,
    y,
    *,
    func,
    n_partitions,
    train_size,
    model,
    random_state,
    n_threads,
    device,
    precision,
    max_device_bytes,
    groups=None,
) -> dict[str, Any]:
    """Validate the arguments :func:`predictability` (and the null, :mod:`aflite_core.engine.null`) share.

    Returns the checked features ``X``, ``labels``, counts ``m`` and ``t``, the ``family``, ``n_threads``, the
    integer ``seed``, the ``torch_device`` (None for the numpy engine) and ``groups`` (int32 codes or None).
    """
    Xv = v.check_features(X, "X", func)
    labels = v.check_labels(y, "y", func, n_rows=Xv.shape[0])
    m = v.check_int(n_partitions, "n_partitions", func, low=1)
    t = v.check_fraction_or_count(
        train_size,
        "train_size",
        func,
        n=Xv.shape[0],
        low=labels.n_classes,
        high=Xv.shape[0],
        range_text="(n_classes, n_samples)",
    )
    family = resolve_model(model, func)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    seed = v.check_random_state(random_state, func)
    torch_device = _check_device(device, precision, max_device_bytes, family, func)
    group_codes = check_groups(groups, func, n_rows=Xv.shape[0])
    return {
        "groups": group_codes,
        "X": Xv,
        "labels": labels,
        "m": m,
        "t": t,
        "family": family,
        "n_threads": n_threads,
        "seed": seed,
        "torch_device": torch_device,
    }
