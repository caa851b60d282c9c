"""Which torch device a run computes on: the checks of ``device``, ``precision`` and ``max_device_bytes``.

:func:`check_device` turns the public ``device`` argument into a torch device name (or None for the numpy
engine), :func:`check_family` refuses families without a torch session, and :func:`torch_context` sets the
precision (TF32 off, deterministic algorithms) while :mod:`aflite_core.engine.torch_backend` or the null
computes. torch is imported only when a torch device is asked for.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

__all__ = ["DEVICES", "PRECISIONS", "check_device", "check_family", "torch_context"]

#: accepted spellings of ``device`` (besides ``"cuda:N"``)
DEVICES = ("cpu", "cuda", "torch:cpu")
#: accepted values of ``precision``
PRECISIONS = ("float32", "tf32")


def _import_torch(func: str):
    try:
        import torch
    except ImportError:
        raise ValueError(
            f"The 'device' parameter of {func} needs PyTorch for a torch device (pip install torch); "
            "use device='cpu' without it."
        ) from None
    return torch


def check_device(device: Any, precision: Any, max_device_bytes: Any, func: str) -> str | None:
    """Validate ``device``/``precision``/``max_device_bytes``; the torch device name, or None for numpy.

    Raises
    ------
    ValueError
        One sentence: an unknown device or precision, a torch device without torch, or CUDA without a GPU.
    """
    if not isinstance(device, str) or not (device in DEVICES or device.startswith("cuda:")):
        raise ValueError(
            f"The 'device' parameter of {func} must be a str among {{'cpu', 'cuda', 'cuda:N', 'torch:cpu'}}. "
            f"Got {device!r} instead."
        )
    if precision not in PRECISIONS:
        raise ValueError(
            f"The 'precision' parameter of {func} must be a str among {set(PRECISIONS)}. Got {precision!r} instead."
        )
    is_int = isinstance(max_device_bytes, (int, np.integer)) and not isinstance(max_device_bytes, bool)
    if max_device_bytes is not None and not (is_int and max_device_bytes >= 1):
        raise ValueError(
            f"The 'max_device_bytes' parameter of {func} must be an int in [1, inf) or None. "
            f"Got {max_device_bytes!r} instead."
        )
    if device == "cpu":
        return None
    if device.startswith("cuda:") and not device[5:].isdigit():
        raise ValueError(f"The 'device' parameter of {func} must name a GPU as 'cuda:N'. Got {device!r} instead.")
    if device.startswith("cuda"):
        # deterministic cuBLAS needs this before the first CUDA call (no effect once CUDA is initialised)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch = _import_torch(func)
    if device == "torch:cpu":
        return "cpu"
    if not torch.cuda.is_available():
        raise ValueError(
            f"The 'device' parameter of {func} is {device!r} but PyTorch finds no CUDA GPU on this machine; "
            "use device='cpu' (or 'torch:cpu')."
        )
    index = int(device[5:]) if ":" in device else 0
    if index >= torch.cuda.device_count():
        raise ValueError(
            f"The 'device' parameter of {func} is {device!r} but this machine has "
            f"{torch.cuda.device_count()} CUDA GPU(s)."
        )
    return f"cuda:{index}"


def check_family(family: Any, func: str) -> None:
    """Refuse, in one sentence, model families that have no torch session (scikit-learn ones, kNN)."""
    from .models import LinearFamily

    if not isinstance(family, LinearFamily):
        raise ValueError(
            f"The 'device' parameter of {func} runs only the default linear family ('linear' or 'ridge') on a "
            f"torch device; use device='cpu' for the model {getattr(family, 'name', family)!r}."
        )


@contextlib.contextmanager
def torch_context(precision: str):
    """TF32 off (or on for ``"tf32"``) and deterministic algorithms, restored afterwards."""
    import torch

    saved = (
        torch.get_float32_matmul_precision(),
        torch.backends.cudnn.allow_tf32,
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    tf32 = precision == "tf32"
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    torch.backends.cudnn.allow_tf32 = tf32
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved[0])
        torch.backends.cudnn.allow_tf32 = saved[1]
        torch.use_deterministic_algorithms(saved[2], warn_only=saved[3])
