"""Sentence embeddings of an uploaded table's text columns (the Data page): specs, the outlook, the background job.

The texts of each view (a column, or a premise-hypothesis pair joined by ``[SEP]``) go to all-MiniLM-L6-v2 through
:func:`aflite_core.data.embeddings.embed_views`: blank runs collapsed, each text cut at :data:`EMBED_TEXT_CHARS`,
at most :data:`EMBED_MAX_CHARS` characters a job (stated on the page); one model per server process
(:class:`_SharedModel`), results kept in a byte-bounded store and in the on-disk cache.
"""

from __future__ import annotations

import gc
import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from aflite_core.data import embed_worker
from aflite_core.data import embeddings as _embeddings
from aflite_core.data.embeddings import load_sentence_model
from aflite_core.data.features import _texts_of

from .. import settings
from ..admission import heavy
from ..jobs import Outcome, as_outcome, shared_jobs, stoppable
from . import _stores

__all__ = [
    "EMBED_MAX_CHARS",
    "EMBED_TEXT_CHARS",
    "EmbedSpec",
    "describe_embedding",
    "embedding_caption",
    "embedding_outlook",
    "embedding_spec",
    "embedding_time_text",
    "embedding_views",
    "embeddings_status",
    "prepare_embedding",
]


def embeddings_status() -> _embeddings.EmbeddingsStatus:
    """Whether the optional embeddings extra is installed, and the install command (looked up, not imported)."""
    return _embeddings.embeddings_status()


def embedding_views(pair: tuple[str, str] | None, text_columns: tuple[str, ...] | list[str]) -> dict[str, tuple]:
    """The views to embed: for a sentence pair the full pair and the hypothesis alone, else the text columns."""
    if pair:
        return {"embedding": (pair[0], pair[1]), "embedding_hypothesis": (pair[1],)}
    if text_columns:
        return {"embedding": tuple(text_columns)}
    return {}


def _view_description(view: str, cols: tuple[str, ...], dim: int) -> str:
    joined = " [SEP] ".join(cols)
    if view == "embedding_hypothesis":
        return f"partial input: sentence embedding (all-MiniLM-L6-v2) of '{cols[0]}' alone ({dim}-d)"
    return f"sentence embedding (all-MiniLM-L6-v2) of {joined} ({dim}-d)"


@dataclass(frozen=True)
class EmbedSpec:
    """Sentence embeddings of an uploaded table: which table (sha256 of its bytes), which views, which model."""

    table: str
    name: str
    views: tuple[tuple[str, tuple[str, ...]], ...]
    model_id: str


def embedding_spec(payload: bytes, name: str, views: Mapping[str, tuple[str, ...]]) -> EmbedSpec:
    """The spec of embedding ``views`` of the uploaded table ``payload`` (needs the embeddings extra)."""
    try:
        model_id = _embeddings.model_identity()
    except ImportError as exc:
        raise ValueError(str(exc)) from None
    return EmbedSpec(
        hashlib.sha256(payload).hexdigest(), name, tuple((v, tuple(c)) for v, c in views.items()), model_id
    )


#: the separator between the columns of a view (embed_views' default: [CLS] premise [SEP] hypothesis [SEP])
_JOIN = " [SEP] "


def _view_texts(frame: pd.DataFrame, cols: tuple[str, ...]) -> list[str]:
    parts, _ = _texts_of(frame, list(cols), "embed_views")
    return [_JOIN.join(p) for p in zip(*parts)]


#: what the model is given (stated on the Data page): blank runs collapsed, each text cut at EMBED_TEXT_CHARS
#: (100 × the 256 word pieces all-MiniLM-L6-v2 reads), and at most EMBED_MAX_CHARS characters a job
EMBED_TEXT_CHARS, EMBED_MAX_CHARS = _embeddings.max_text_chars(), _embeddings.MAX_EMBED_CHARS


@_stores.memo("view_plan", 8)
def _view_plan(spec: EmbedSpec, _frame: pd.DataFrame) -> list[tuple[str, str, float, int]]:
    """Per view: cache key, seconds to embed, characters given to the model (hashed once per table and views)."""
    plan = []
    for view, cols in spec.views:
        texts = _view_texts(_frame, cols)
        view_id = f"columns={list(cols)!r} join={_JOIN!r}"  # as embed_views names a view in its cache key
        key = _embeddings.embedding_cache_key(texts, model_id=spec.model_id, view=view_id)
        given = _embeddings.model_texts(texts, max_chars=EMBED_TEXT_CHARS)  # as embed_texts gives them the model
        seconds = _embeddings.estimate_embedding_seconds(given, model_loaded=True)
        plan.append((view, key, seconds, sum(len(t) for t in given)))
    return plan


def embedding_outlook(frame: pd.DataFrame, spec: EmbedSpec) -> dict[str, Any]:
    """What embedding will cost, before starting: ``seconds`` (rough), the views ``cached`` on disk already.

    And ``refusal``: the sentence refusing a job over :data:`EMBED_MAX_CHARS` characters (None when it fits).
    """
    cache = _embeddings.default_cache_dir() / "embeddings"
    plan = _view_plan(spec, frame)
    done = _embedding_store().recall(spec) is not None
    todo = [(view, secs, chars) for view, key, secs, chars in plan if not done and not (cache / f"{key}.npy").is_file()]
    seconds = sum(secs for _, secs, _ in todo)
    if todo and not _sentence_model().loaded:
        seconds += _embeddings.estimate_embedding_seconds([], model_loaded=False)  # loading the model
    todo_views = {view for view, _, _ in todo}
    chars = sum(chars for _, _, chars in todo)
    refusal = _embeddings.embed_chars_refusal(
        chars, max_chars=EMBED_MAX_CHARS, remedy="upload fewer rows or shorter texts"
    )
    return {
        "seconds": seconds,
        "load_seconds": seconds - sum(secs for _, secs, _ in todo),  # loading the model (0: loaded, or no work)
        "cached": [view for view, _, _, _ in plan if view not in todo_views],
        "refusal": refusal,
    }


def embedding_caption(outlook: dict[str, Any], n_views: int, n_rows: int) -> str:
    """The Data page's line under the embeddings box before Start: the estimate, the cache, what the model reads."""
    return (
        f"{embedding_time_text(outlook)} for {n_views} view{'s' * (n_views > 1)} × {n_rows:,} rows on this machine, in "
        "the background with a progress bar once you press Start. Cached on disk (the server's embedding cache): the "
        "same texts are never embedded twice, in any session. The model is given each text with its runs of blanks "
        f"collapsed and cut at {EMBED_TEXT_CHARS:,} characters (it reads only the first 256 word pieces), and one job "
        f"embeds at most {EMBED_MAX_CHARS:,} characters."
    )


def embedding_time_text(outlook: dict[str, Any]) -> str:
    """The Data page's estimate: "About 12 s (±50 %; 9 s of it loading the model, once per server)".

    Issue 29: a 2-row file read "About 0 s … loading the model included" while the model's load alone takes ~9 s;
    the load is now named only when it is still to come, and a job under a second says so.
    """
    seconds, load = float(outlook["seconds"]), float(outlook.get("load_seconds", 0.0))
    if load > 0:
        return f"About {seconds:.0f} s (±50 %; {load:.0f} s of it loading the model, once per server)"
    if seconds < 1:
        return "About 1 s or less (the model is already loaded)"
    return f"About {seconds:.0f} s (±50 %; the model is already loaded)"


class _SharedModel:
    """all-MiniLM-L6-v2, loaded once per server process on first use (9 s, 450 MB); one batch at a time.

    Handed to :func:`aflite_core.data.embeddings.embed_views` as a loaded model: it is loaded only when a view is not
    in the disk cache, and two sessions' jobs take turns chunk by chunk instead of competing for the CPU.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def loaded(self) -> bool:  # here, or in the embedding child process that keeps it (AFLITE_CHILD_PROCESSES)
        return self._model is not None or embed_worker.model_ready()

    @property
    def max_seq_length(self) -> int:  # the word pieces the model reads of a text (embed_texts cuts texts by it)
        return int(getattr(self._model, "max_seq_length", None) or _embeddings.DEFAULT_MAX_SEQ_LENGTH)

    def encode(self, texts: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._model is None:
                model = load_sentence_model()
                # torch and the model add ~400k objects that live as long as the process. Streamlit runs a full
                # garbage collection after every script run (runner.postScriptGC), also after each 0.4 s poll
                # of a progress fragment: with them that took 1.3-2.8 s holding the GIL, which slowed embedding
                # (and every page of every session) about tenfold. Frozen objects are left out of those scans.
                gc.collect()
                gc.freeze()
                self._model = model
            return self._model.encode(texts, **kwargs)


@st.cache_resource(max_entries=1, show_spinner=False)
def _sentence_model() -> _SharedModel:
    return _SharedModel()


def _embedding_store() -> _stores.Store:
    """Finished embeddings by :class:`EmbedSpec`, shared by every session (the disk cache outlives it)."""
    return _stores.store("embedding_store", settings.load().embedding_store_size)


def prepare_embedding(spec: EmbedSpec, frame: pd.DataFrame) -> Callable[[Callable], Outcome]:
    """The job :func:`aflite_app.jobs.run_in_background` runs to embed ``frame`` as ``spec`` says.

    Checked here, in the page's thread. The job reads every view it can from the disk cache
    (:func:`aflite_core.data.embeddings.embed_views`), so a second session, or the same table uploaded again, is
    not embedded again; a job in progress is joined, never started twice (``SharedJobs``). The wait gives an
    ``Outcome``: the matrices by view, or why not.
    """
    status = embeddings_status()
    if not status.available:
        raise ValueError(status.message)
    for _, cols in spec.views:
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise ValueError(f"The table has no column {missing[0]!r} to embed; choose its text columns again.")
    store, jobs, model = _embedding_store(), shared_jobs(), _sentence_model()
    cache_dir = _embeddings.default_cache_dir()

    refusal = embedding_outlook(frame, spec)["refusal"]
    if refusal is not None:
        raise ValueError(refusal)

    def job(callback: Callable) -> dict[str, NDArray]:
        # with child processes allowed, the chunks run in the embedding child that keeps the model and that Stop
        # ends at once (the last progress is re-sent to ask whether to stop); else in this process, chunk by chunk
        child, last, report = settings.load().child_processes, [None], stoppable(callback)

        def progress(p: Any) -> None:
            last[0] = p
            report(p)

        out = _embeddings.embed_views(
            frame,
            {view: cols for view, cols in spec.views},
            model=None if child else model,
            model_id=spec.model_id,
            cache_dir=cache_dir,
            join=_JOIN,
            progress=progress,
            max_chars=EMBED_MAX_CHARS,
            stop=(lambda: not callback(last[0])) if child else None,
        )
        store.keep(spec, out)
        return out

    queued = heavy(job, f"sentence embeddings of {len(frame):,} rows")  # it waits its turn in the server's queue

    def target(callback: Callable) -> Outcome:
        hit = store.recall(spec)
        if hit is not None:
            return Outcome(hit)
        return as_outcome(lambda: jobs.follow(spec, queued, callback), "Embedding")

    return target


def describe_embedding(
    progress: _embeddings.EmbeddingProgress | None, elapsed: float, _step: Any = None
) -> tuple[float, str]:
    """The progress bar of an embedding job: ``(fraction, text)`` with the time left.

    Takes (and ignores) the step argument :func:`aflite_app.jobs.run_in_background` passes to every describe.
    """
    if progress is None:
        if _sentence_model().loaded:
            return 0.0, f"Starting… {elapsed:.0f} s"
        return 0.0, f"Starting: loading the sentence model (about 9 s, once per server)… {elapsed:.0f} s"
    return min(progress.fraction, 1.0), f"{progress.message} · {elapsed:.0f} s so far"
