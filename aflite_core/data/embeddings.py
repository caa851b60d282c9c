"""Sentence embeddings of a table's text columns, cached on disk by content (texts + model + view).

Embedding is the slow step of working with real text (about 100 premise + hypothesis pairs per second on two
busy cores, plus about 9 s to load the model), so :func:`embed_views` keeps every result on disk under a key
that hashes the exact texts, the model's identity and the view (which columns, joined how). A second call, in
this process or any other, reads the file instead of embedding again; a changed text, model or view is a new
key. Files are written crash-consistently (temporary file, fsync, rename) and carry a SHA-256 of their
content: a damaged, truncated or foreign file is ignored and recomputed, never half-loaded.

* :func:`shared_sentence_model` - the sentence model, loaded once per process (a lock: never twice at once),
  shared by every caller (:func:`load_sentence_model` goes through it);
* :func:`embeddings_status` - whether the optional extra is installed, and the install command (no import);
* :func:`embed_views` - the named views of a table (default: the NLI pair and the hypothesis alone), with a
  progress callback that carries a time estimate;
* :func:`estimate_embedding_seconds` - a rough duration before starting;
* :func:`default_cache_dir` - where the cache lives (``$AFLITE_CACHE_DIR``, else the user's cache folder).

Every text is prepared before the model's tokenizer sees it (:func:`model_texts`: blank runs collapsed, then cut at
100 × the model's ``max_seq_length`` characters, 25,600 for all-MiniLM-L6-v2, which reads 256 word pieces), and a
job holds at most :data:`MAX_EMBED_CHARS` characters after that (refused in one sentence above it): a few huge
texts no longer take gigabytes in the tokenizer. The cache key still hashes the texts as given.

The cache's files and keys are in :mod:`aflite_core.data.embed_cache`, the extra's status, the text preparation,
the time estimate and the progress type in :mod:`aflite_core.data.embed_status`, the model's loading in
:mod:`aflite_core.data.sentence_model`; all are importable from here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _validation as v
from . import embed_worker
from .embed_cache import CACHE_DIR_ENV, _read_entry, _write_entry, default_cache_dir, embedding_cache_key
from .embed_status import (
    CHARS_PER_PIECE,
    DEFAULT_MAX_SEQ_LENGTH,
    EMBEDDINGS_INSTALL_COMMAND,
    EMBEDDINGS_INSTALL_HINT,
    MAX_EMBED_CHARS,
    EmbeddingProgress,
    EmbeddingsStatus,
    _pieces,
    embed_chars_refusal,
    embeddings_status,
    estimate_embedding_seconds,
    max_text_chars,
    model_texts,
)
from .features import _texts_of
from .sentence_model import load_sentence_model, model_identity, sentence_model_loaded, shared_sentence_model

__all__ = [
    "CACHE_DIR_ENV",
    "CHARS_PER_PIECE",
    "DEFAULT_MAX_SEQ_LENGTH",
    "EMBEDDINGS_INSTALL_COMMAND",
    "EMBEDDINGS_INSTALL_HINT",
    "MAX_EMBED_CHARS",
    "NLI_EMBEDDING_VIEWS",
    "EmbeddingProgress",
    "EmbeddingsStatus",
    "default_cache_dir",
    "embed_chars_refusal",
    "embed_texts",
    "embed_views",
    "embedding_cache_key",
    "embedding_features",
    "embeddings_status",
    "estimate_embedding_seconds",
    "load_sentence_model",
    "max_text_chars",
    "model_identity",
    "model_texts",
    "sentence_model_loaded",
    "shared_sentence_model",
]

#: the two standard views of an NLI table: premise + hypothesis as one text, and the hypothesis alone (the
#: partial input); the names match the representations of :mod:`aflite_core.evalsets.setups`
NLI_EMBEDDING_VIEWS: dict[str, tuple[str, ...]] = {
    "embedding": ("premise", "hypothesis"),
    "embedding_hypothesis": ("hypothesis",),
}


# --------------------------------------------------------------------------------------------------- embedding
def _check_views(views: Any, frame: pd.DataFrame, func: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(views, Mapping) or not views:
        raise v.param_error("views", func, "a non-empty mapping of view name to text columns", views, TypeError)
    out: dict[str, tuple[str, ...]] = {}
    for name, cols in views.items():
        if not isinstance(name, str) or not name:
            raise v.param_error("views", func, "a mapping with non-empty str names", name, TypeError)
        cols = (cols,) if isinstance(cols, str) else tuple(cols)
        if not cols:
            raise ValueError(f"The 'views' parameter of {func} must give at least one column for view {name!r}.")
        for c in cols:
            if c not in frame.columns:
                raise ValueError(
                    f"The 'views' parameter of {func} names the column {v.shown(c)} for view {name!r}, "
                    f"which is not one of the columns {v.shown_list(frame.columns)}."
                )
        out[name] = cols
    return out


def embed_views(
    frame: pd.DataFrame,
    views: Mapping[str, Sequence[str] | str] | None = None,
    *,
    model: Any = None,
    model_id: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    join: str = " [SEP] ",
    batch_size: int = 64,
    device: str = "cpu",
    n_threads: int | None = 1,
    progress: Callable[[EmbeddingProgress], Any] | None = None,
    max_chars: int = MAX_EMBED_CHARS,
    stop: Callable[[], bool] | None = None,
) -> dict[str, NDArray[np.float32]]:
    """Sentence embeddings of named views of a table, each read from or written to the disk cache.

    A view is one or more text columns joined into one text per row (``join`` between them; the default
    ``" [SEP] "`` gives a BERT tokenizer ``[CLS] premise [SEP] hypothesis [SEP]``, as the shared NLI samples'
    ``pair`` embeddings were made). Every view is looked up in the cache first, by
    :func:`embedding_cache_key` of (its texts, the model identity, the columns and ``join``); the model is
    loaded only when some view is missing. Results are identical to
    :func:`embedding_features` up to float rounding.

    Parameters
    ----------
    frame : DataFrame
        The table (missing cells count as "").
    views : mapping of str to column name(s), optional
        View name -> columns. Default :data:`NLI_EMBEDDING_VIEWS` (``"embedding"``: premise + hypothesis,
        ``"embedding_hypothesis"``: the hypothesis alone).
    model : SentenceTransformer, str or None, optional
        None: the packaged all-MiniLM-L6-v2 (loaded only on a cache miss); a local model folder; or a loaded
        model (e.g. kept by the app with ``st.cache_resource``), which then needs ``model_id``.
    model_id : str, optional
        Identity of ``model`` in the cache key (default :func:`model_identity` of ``model``; required for a
        loaded model object: use ``model_identity()`` when it is the packaged default).
    cache_dir : str or path, optional
        Cache folder (default :func:`default_cache_dir`); entries go to its ``embeddings/`` sub-folder.
    use_cache : bool, default=True
        False embeds without reading or writing the cache.
    join : str, default=" [SEP] "
        Separator between the columns of a view.
    batch_size, device, n_threads
        As in :func:`embed_texts` (one torch thread is fastest on a busy 2-core machine).
    progress : callable, optional
        Called with an :class:`EmbeddingProgress` after each cache hit, before loading the model, after each
        chunk of ``8 * batch_size`` texts and at the end; its return value is ignored.
    max_chars : int, default=MAX_EMBED_CHARS
        The most characters the views still to embed may hold after :func:`model_texts` (100 million).
    stop : callable, optional
        Passed to :func:`embed_texts`: with the packaged model, loaded and run in a child process a stop ends.

    Returns
    -------
    dict of str to ndarray of float32, shape (n_rows, dim)
        One matrix per view, in the order of ``views``; row i embeds row i of ``frame``.

    Raises
    ------
    ImportError
        With the install command when a view must be computed and the optional packages are missing.
    ValueError
        For a view naming a missing column, a loaded model without ``model_id``, or views to embed holding
        more than ``max_chars`` characters.

    Notes
    -----
    The model is given :func:`model_texts` of each view (identical embeddings for ordinary texts); the cache
    key hashes the texts as joined from the table. Slow only on a cache miss: about 9 s to load the model,
    then roughly 100 SNLI pairs or 250 hypotheses per second (:func:`estimate_embedding_seconds`). A cache
    entry of n rows takes n × 1.5 KB (384 float32). Entries are never deleted here; remove the folder to
    reclaim the space.
    """
    func = "embed_views"
    if not isinstance(frame, pd.DataFrame):
        raise v.param_error("frame", func, "a pandas DataFrame", frame, TypeError)
    checked = _check_views(NLI_EMBEDDING_VIEWS if views is None else views, frame, func)
    if not isinstance(join, str):
        raise v.param_error("join", func, "a str", join, TypeError)
    v.check_int(batch_size, "batch_size", func, low=1)
    v.check_int(max_chars, "max_chars", func, low=1)
    if progress is not None and not callable(progress):
        raise v.param_error("progress", func, "a callable or None", progress, TypeError)
    if model_id is None:
        if model is not None and not isinstance(model, str | os.PathLike):
            raise ValueError(
                f"The 'model_id' parameter of {func} must name a loaded model (it keys the cache); "
                "pass model_id=model_identity() for the packaged all-MiniLM-L6-v2."
            )
        model_id = model_identity(model) if use_cache else ""
    elif not isinstance(model_id, str) or not model_id:
        raise v.param_error("model_id", func, "a non-empty str or None", model_id, TypeError)
    folder = Path(cache_dir if cache_dir is not None else default_cache_dir()) / "embeddings"

    t0 = time.perf_counter()
    texts: dict[str, list[str]] = {}
    for name, cols in checked.items():
        parts, _ = _texts_of(frame, list(cols), func)
        texts[name] = [join.join(p) for p in zip(*parts)]
    n = len(frame)
    total = n * len(checked)
    done = 0

    def report(stage: str, view: str, eta: float | None) -> None:
        if progress is not None:
            progress(EmbeddingProgress(stage, view, done, total, time.perf_counter() - t0, eta))

    out: dict[str, NDArray[np.float32]] = {}
    paths: dict[str, Path] = {}
    for name, cols in checked.items():
        if not use_cache:
            continue
        view_id = f"columns={list(cols)!r} join={join!r}"
        paths[name] = folder / f"{embedding_cache_key(texts[name], model_id=model_id, view=view_id)}.npy"
        cached = _read_entry(paths[name], n)
        if cached is not None:
            out[name] = cached
            done += n
            report("cache", name, None)
    pending = [name for name in checked if name not in out]
    if pending:
        # a folder's model says its max_seq_length once loaded: until then the cut assumes the longest (512)
        cut = max_text_chars(model if not isinstance(model, str | os.PathLike) else object())
        prepared = {name: model_texts(texts[name], max_chars=cut) for name in pending}
        refusal = embed_chars_refusal(sum(len(t) for p in prepared.values() for t in p), max_chars=max_chars, cut=cut)
        if refusal is not None:
            raise ValueError(refusal)
        remaining = {name: _pieces(prepared[name]) for name in pending}
        loaded = model
        if model is None or isinstance(model, str | os.PathLike):
            report("load_model", "", estimate_embedding_seconds([t for p in pending for t in prepared[p]]))
            if not embed_worker.in_child(model, stop):  # else the child process loads it (once per server)
                loaded = load_sentence_model(None if model is None else str(model), device=device)
        t_embed = time.perf_counter()
        pieces_done = 0.0
        for name in pending:
            view_texts = prepared[name]
            base = done
            chunk_start = [0]

            def on_chunk(
                k: int,
                _total: int,
                name: str = name,
                base: int = base,
                view_texts: list[str] = view_texts,
                chunk_start: list[int] = chunk_start,
            ) -> None:
                nonlocal done, pieces_done
                pieces_done += _pieces(view_texts[chunk_start[0] : k])
                chunk_start[0] = k
                done = base + k
                rate = pieces_done / max(time.perf_counter() - t_embed, 1e-9)
                left = sum(remaining.values()) - pieces_done
                report("embed", name, max(left, 0.0) / rate if rate > 0 else None)

            E = embed_texts(
                view_texts,
                model=loaded,
                batch_size=batch_size,
                device=device,
                n_threads=n_threads,
                progress=on_chunk,
                max_chars=max_chars,
                stop=stop,
            )
            out[name] = E
            if use_cache:
                _write_entry(folder, paths[name], E)
    done = total
    report("done", "", 0.0)
    return {name: out[name] for name in checked}


def embed_texts(
    texts: Sequence[str],
    *,
    model: Any = None,
    batch_size: int = 64,
    device: str = "cpu",
    n_threads: int | None = 1,
    progress: Callable[[int, int], Any] | None = None,
    max_chars: int = MAX_EMBED_CHARS,
    stop: Callable[[], bool] | None = None,
) -> NDArray[np.float32]:
    """Sentence embeddings of texts (default: all-MiniLM-L6-v2, 384-d, rows of unit length).

    Needs the optional ``embeddings`` extra; imports it only when called. With one torch thread (the
    default) a busy 2-core machine embeds about 200-340 short sentences per second; loading the default model
    takes about 9 s, so pass a loaded ``model`` (from :func:`load_sentence_model`) when embedding repeatedly.

    Parameters
    ----------
    texts : sequence of str
        One text per row (missing values become "").
    model : SentenceTransformer or str, optional
        A loaded model or a local model directory; default: the packaged all-MiniLM-L6-v2.
    batch_size : int, default=64
        Texts per forward pass.
    device : str, default="cpu"
        Torch device when the model is loaded here.
    n_threads : int or None, default=1
        Torch threads during the call (restored afterwards); ``None`` leaves torch's setting.
    progress : callable, optional
        Called as ``progress(done, total)`` (texts) after every chunk of ``8 * batch_size`` texts; its return
        value is ignored. Without it the texts go to the model in one call.
    max_chars : int, default=MAX_EMBED_CHARS
        The most characters the texts may hold after :func:`model_texts` (100 million).
    stop : callable, optional
        ``stop() -> bool`` (or raising to stop), with the packaged model (``model=None``): the chunks go to a
        child process that loaded it once and keeps it, and a stop ends it at once
        (:mod:`aflite_core.data.embed_worker`; the same embeddings).

    Returns
    -------
    ndarray of float32, shape (n_texts, dim)
        Row i embeds ``texts[i]``.

    Raises
    ------
    ImportError
        With :data:`EMBEDDINGS_INSTALL_HINT` when sentence-transformers or the model package is missing.
    ValueError
        When the texts hold more than ``max_chars`` characters after :func:`model_texts`.

    Notes
    -----
    The model is given :func:`model_texts` of the texts: blank runs collapsed to one space, each text cut at
    :func:`max_text_chars` of the model (100 × its ``max_seq_length``; 25,600 characters for all-MiniLM-L6-v2),
    so a huge text never reaches the tokenizer whole and an ordinary text embeds as before.
    """
    func = "embed_texts"
    v.check_int(batch_size, "batch_size", func, low=1)
    v.check_int(max_chars, "max_chars", func, low=1)
    if n_threads is not None:
        v.check_int(n_threads, "n_threads", func, low=1)
    if progress is not None and not callable(progress):
        raise v.param_error("progress", func, "a callable or None", progress, TypeError)
    values, _ = _texts_of(list(texts) if not isinstance(texts, str) else texts, None, func)
    if isinstance(model, str):  # a folder's model says its max_seq_length once loaded
        model = load_sentence_model(model, device=device)
    cut = max_text_chars(model)
    given = model_texts(values[0], max_chars=cut)
    refusal = embed_chars_refusal(sum(len(t) for t in given), max_chars=max_chars, cut=cut)
    if refusal is not None:
        raise ValueError(refusal)
    child = embed_worker.in_child(model, stop)
    if model is None and not child:
        model = load_sentence_model(None, device=device)
    try:
        import torch
    except ImportError:  # a model object that does not need torch
        torch = None
    previous = torch.get_num_threads() if torch is not None else None
    if torch is not None and n_threads is not None:
        torch.set_num_threads(n_threads)
    try:
        if progress is None and not child:
            E = model.encode(given, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
        else:
            chunk = 8 * batch_size
            parts = []
            total = len(given)
            for start in range(0, total, chunk):
                piece = given[start : start + chunk]
                if child:  # the same chunks, in the child that a stop ends
                    kw = {"loader": load_sentence_model, "device": device, "n_threads": n_threads, "stop": stop}
                    part = embed_worker.encode_chunk(piece, batch_size=batch_size, **kw)
                else:
                    part = model.encode(piece, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
                parts.append(np.asarray(part, dtype=np.float32))
                if progress is not None:
                    progress(min(start + chunk, total), total)
            E = np.concatenate(parts, axis=0)
    finally:
        if torch is not None:
            torch.set_num_threads(previous)
    return np.ascontiguousarray(E, dtype=np.float32)


def embedding_features(
    frame: pd.DataFrame,
    columns: Sequence[str] | str,
    *,
    join: str = " [SEP] ",
    model: Any = None,
    batch_size: int = 64,
    device: str = "cpu",
    n_threads: int | None = 1,
    progress: Callable[[int, int], Any] | None = None,
    max_chars: int = MAX_EMBED_CHARS,
) -> NDArray[np.float32]:
    """Sentence embeddings of one or more text columns of a table.

    Several columns are joined into one text per row with ``join`` (the default ``" [SEP] "`` makes a BERT
    tokenizer see ``[CLS] premise [SEP] hypothesis [SEP]``, as the shared NLI samples' ``pair`` embeddings
    were made). One column gives a partial-input view.

    Parameters
    ----------
    frame : DataFrame
        The table.
    columns : str or sequence of str
        Text columns, joined in this order.
    join : str, default=" [SEP] "
        Separator between columns.
    model, batch_size, device, n_threads, progress, max_chars
        As in :func:`embed_texts` (which prepares the texts with :func:`model_texts`).
        :func:`aflite_core.data.embeddings.embed_views` adds a disk cache.

    Returns
    -------
    ndarray of float32, shape (n_rows, dim)
        Row i embeds row i of ``frame``.
    """
    texts, _ = _texts_of(frame, columns, "embedding_features")
    joined = [join.join(parts) for parts in zip(*texts)]
    return embed_texts(
        joined,
        model=model,
        batch_size=batch_size,
        device=device,
        n_threads=n_threads,
        progress=progress,
        max_chars=max_chars,
    )
