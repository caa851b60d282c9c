"""The on-disk cache of sentence embeddings: where it lives, the content key of an entry, and its entry files.

An entry is ``np.save`` bytes followed by their SHA-256; a damaged, truncated or foreign file reads as missing
(never half-loaded), and a failed write costs only the cache. :func:`aflite_core.data.embeddings.embed_views`
uses it (and re-exports the public names).
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from .. import _durable

__all__ = ["CACHE_DIR_ENV", "default_cache_dir", "embedding_cache_key"]

#: environment variable naming the cache folder
CACHE_DIR_ENV = "AFLITE_CACHE_DIR"

_CACHE_FORMAT = b"aflite-embedding-cache-v1"
_DIGEST_BYTES = 32


def default_cache_dir() -> Path:
    """The cache folder: ``$AFLITE_CACHE_DIR``, else ``aflite-studio`` in the user's cache folder.

    The user's cache folder is ``$XDG_CACHE_HOME`` or ``~/.cache`` (``%LOCALAPPDATA%`` on Windows,
    ``~/Library/Caches`` on macOS). Nothing is created here.

    Returns
    -------
    Path
        The folder (embeddings go to its ``embeddings/`` sub-folder).
    """
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "aflite-studio"


def embedding_cache_key(texts: Sequence[str], *, model_id: str, view: str) -> str:
    """SHA-256 (hex) of the exact texts, the model identity and the view: the name of a cache entry.

    Parameters
    ----------
    texts : sequence of str
        The texts as given to the model (after joining columns).
    model_id : str
        See :func:`model_identity`.
    view : str
        What the texts are (columns and separator).

    Returns
    -------
    str
        64 hex digits.
    """
    h = hashlib.sha256()
    for part in (_CACHE_FORMAT, model_id.encode(), view.encode(), str(len(texts)).encode()):
        h.update(len(part).to_bytes(8, "little") + part)
    for t in texts:
        b = t.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()


def _encode_entry(E: NDArray[np.float32]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(E, dtype=np.float32), allow_pickle=False)
    body = buf.getvalue()
    return body + hashlib.sha256(body).digest()


def _read_entry(path: Path, n_rows: int) -> NDArray[np.float32] | None:
    """The cached matrix, or None when the file is missing, damaged or does not fit (never a partial one)."""
    try:
        size = path.stat().st_size
        if size > n_rows * 16_384 * 4 + 65_536:  # larger than any sentence embedding of these rows
            return None
        data = path.read_bytes()
    except OSError:
        return None
    body, digest = data[:-_DIGEST_BYTES], data[-_DIGEST_BYTES:]
    if len(data) <= _DIGEST_BYTES or hashlib.sha256(body).digest() != digest:
        return None
    try:
        E = np.load(io.BytesIO(body), allow_pickle=False)
    except (ValueError, OSError, EOFError):
        return None
    if E.dtype != np.float32 or E.ndim != 2 or E.shape[0] != n_rows or E.shape[1] < 1 or not np.isfinite(E).all():
        return None
    return np.ascontiguousarray(E)


def _write_entry(folder: Path, path: Path, E: NDArray[np.float32]) -> None:
    """Write a cache entry durably; a failure (read-only folder, full disk, a race) only costs the cache."""
    try:
        _durable.make_dirs(folder)
        _durable.write_file(path, _encode_entry(E))
    except OSError:
        pass
