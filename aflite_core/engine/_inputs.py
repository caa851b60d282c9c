"""The argument checks :func:`~aflite_core.engine.filtering.predictability` and the null share.

Below both :mod:`aflite_core.engine.filtering` and :mod:`aflite_core.engine.null`, so the null validates exactly as
``predictability`` does without importing the module that imports it.
"""

from __future__ import annotations

from typing import Any

from .. import _validation as v
from .registry import resolve_model

__all__ = ["predictability_inputs"]


def _check_device(device: Any, precision: Any, max_device_bytes: Any, family: Any, func: str) -> str | None:
    """Validate the device arguments: None for the numpy engine, else the torch device name (torch imported)."""
    if device == "cpu" and precision == "float32" and max_device_bytes is None:
        return None  # the default: nothing to import or check
    from .torch_backend import check_device, check_family

    torch_device = check_device(device, precision, max_device_bytes, func)
    if torch_device is not None:
        check_family(family, func)
    return torch_device


def predictability_inputs(
    X, y, *, func, n_partitions, train_size, model, random_state, n_threads, device, precision, max_device_bytes
) -> dict[str, Any]:
    """Validate the arguments :func:`predictability` (and the null, :mod:`aflite_core.engine.null`) share.

    Returns the checked features ``X``, ``labels``, counts ``m`` and ``t``, the ``family``, ``n_threads``, the
    integer ``seed`` and the ``torch_device`` (None for the numpy engine).
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
    return {
        "X": Xv,
        "labels": labels,
        "m": m,
        "t": t,
        "family": family,
        "n_threads": n_threads,
        "seed": seed,
        "torch_device": torch_device,
    }
