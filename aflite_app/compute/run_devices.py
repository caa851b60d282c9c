"""Where the app runs an AFLite run: the device the Filter page asks for, and the caption saying which ran it.

``AFLITE_DEVICE`` (:attr:`aflite_app.settings.Settings.device`) and torch's view of the machine decide
(:func:`app_device`); the spec carries the answer, so the result store keeps runs by device. The GPU checks are
asked once per process (tests patch :func:`cuda_available` and :func:`gpu_name` here).
"""

from __future__ import annotations

import functools
import importlib.util

from aflite_core import AFLiteResult

from .. import settings

__all__ = ["GPU_FAMILIES", "app_device", "cuda_available", "device_caption", "gpu_name"]


#: model families with a torch session (:func:`aflite_core.engine.torch_devices.check_family`): the default family
GPU_FAMILIES = ("linear", "ridge")


@functools.cache
def cuda_available() -> bool:
    """True when torch is installed and sees a CUDA GPU (asked once per process; tests patch this function)."""
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # a broken torch install: the app runs on the CPU
        return False


@functools.cache
def gpu_name(device: str) -> str:
    """The name of the GPU ``device`` (``"cuda"``, ``"cuda:0"``), e.g. ``"NVIDIA H200"``; the device if unknown."""
    try:
        import torch

        index = int(device.split(":")[1]) if ":" in device else 0
        return str(torch.cuda.get_device_name(index))
    except Exception:
        return device


def app_device(model: str) -> str:
    """Where the Filter page runs the family ``model``: ``"cuda"`` or ``"cpu"`` (the spec carries it).

    ``AFLITE_DEVICE`` (:attr:`aflite_app.settings.Settings.device`): ``auto`` runs the default family on a GPU
    when torch is installed and sees one (:func:`cuda_available`), ``cuda`` always (the core refuses in one
    sentence where there is none), ``cpu`` never. Families without a torch session always run on the CPU.
    """
    if model not in GPU_FAMILIES:
        return "cpu"
    choice = settings.load().device
    if choice == "auto":
        return "cuda" if cuda_available() else "cpu"
    return choice


def device_caption(run: AFLiteResult) -> str:
    """Which device ran ``run``: "on NVIDIA H200 (cuda)" or "on the CPU, 2 threads" (for the Filter page)."""
    device = str(run.params.get("device", "cpu"))
    if device.startswith("cuda"):
        return f"on {gpu_name(device)} (cuda)"
    threads = run.params.get("n_threads")
    where = "on the CPU (torch)" if device == "torch:cpu" else "on the CPU"
    if threads is None:
        return where
    return f"{where}, {int(threads)} thread{'s' if int(threads) != 1 else ''}"
