"""Sentence embeddings in a child process that a stop ends: the model is loaded there once and kept.

One chunk of texts (``8 × batch_size``, 512 by default: seconds on a busy CPU) runs in compiled code that no
callback can interrupt. With a ``stop`` callback (and child processes allowed,
:data:`aflite_core._child_process.ENABLED`), :func:`aflite_core.data.embeddings.embed_texts` hands each chunk to
a :class:`~aflite_core._child_process.Worker` that loaded the packaged model once (about 9 s) and keeps it for the
next chunks and jobs; a stop terminates it within a fraction of a second (the next job loads the model again).
The chunks are the same as in this process and the child uses the same torch thread count, so the embeddings are
bit-identical.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _child_process

__all__ = ["encode_chunk", "in_child", "model_ready"]

_WORKERS: dict[tuple[Any, ...], _child_process.Worker] = {}
_LOCK = threading.Lock()


def in_child(model: Any, stop: Callable[[], bool] | None) -> bool:
    """True when the chunks go to the child: a stop callback, child processes allowed, the packaged model."""
    return stop is not None and _child_process.ENABLED and model is None


def model_ready(device: str = "cpu") -> bool:
    """True when a child holds the packaged model loaded for ``device`` (the next chunk starts without a load)."""
    with _LOCK:
        workers = [w for (_, dev), w in _WORKERS.items() if dev == device]
    return any(w.ready for w in workers)


def _load(loader: Callable[..., Any], device: str) -> Any:
    """The child's state: the packaged model, loaded once."""
    return loader(None, device=device)


def _encode(model: Any, texts: list[str], batch_size: int, n_threads: int | None) -> NDArray[np.float32]:
    """One chunk's embeddings in the child (its torch threads as the caller's)."""
    if n_threads is not None:
        import torch

        torch.set_num_threads(n_threads)
    E = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(E, dtype=np.float32)


def encode_chunk(
    texts: Sequence[str],
    *,
    loader: Callable[..., Any],
    batch_size: int,
    device: str,
    n_threads: int | None,
    stop: Callable[[], bool],
) -> NDArray[np.float32]:
    """Embeddings of one chunk by the packaged model loaded in the server's embedding child (started if needed).

    ``loader(None, device=device)`` loads the model there (a module-level function). Where no child process can
    be started, the model is loaded and the chunk embedded in this process.
    """
    key = (loader, device)
    with _LOCK:
        worker = _WORKERS.get(key)
        if worker is None:
            worker = _WORKERS[key] = _child_process.Worker(_load, loader, device, what="the sentence embedding")
    try:
        return worker.call(_encode, list(texts), batch_size, n_threads, stop=stop)
    except _child_process.NoChildProcess:
        return _encode(_load(loader, device), list(texts), batch_size, n_threads)
