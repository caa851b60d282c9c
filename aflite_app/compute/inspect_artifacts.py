"""The Inspect page's two tabs computed as background jobs: "What the removed rows share" and "Label-revealing words".

Each tab asks with a request (:class:`ArtifactRequest`, :class:`WordsRequest`: the job's key and its stored
table's); one job per request for the whole server (:class:`~aflite_app.jobs.SharedJobs`) computes it with
progress and Stop (``prepare_*`` / ``describe_*``), or ``*_now`` computes it in the page's thread; the finished
tables are kept in the byte-bounded stores (``stored_*``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult
from aflite_core.data.datasets import Dataset
from aflite_core.measures.artifact_statistics import artifact_shares
from aflite_core.measures.removed_artifacts import feature_artifacts, token_artifacts

from .. import inspect_tables, settings
from ..admission import heavy
from ..jobs import Outcome, as_outcome, remaining_text, shared_jobs, stoppable
from ..specs import NO_SESSION, SessionData
from . import _stores
from .datasets import artifact_source_texts, dataset, word_statistics
from .inspect import InspectRef

__all__ = [
    "ARTIFACT_SAMPLE_ROWS",
    "ArtifactProgress",
    "ArtifactRequest",
    "WordsRequest",
    "artifact_sample_text",
    "artifacts_now",
    "describe_artifacts",
    "describe_words",
    "inspect_feature_artifacts",
    "inspect_token_artifacts",
    "prepare_artifacts",
    "prepare_words",
    "stored_artifacts",
    "stored_words",
    "words_now",
]


#: removed and kept rows per class "What the removed rows share" compares at most on features (a seeded sample)
ARTIFACT_SAMPLE_ROWS = settings.load().artifact_sample_rows


@dataclass(frozen=True)
class ArtifactRequest:
    """What the tab "What the removed rows share" asks for: its job's key and its stored table's.

    ``kind`` is ``"token"`` (the dataset's texts, :func:`aflite_core.measures.removed_artifacts.token_artifacts`)
    or ``"feature"`` (the feature source ``source``, :func:`~aflite_core.measures.removed_artifacts.feature_artifacts`
    on at most ``max_rows`` removed and ``max_rows`` kept rows per class; None: every row).
    """

    ref: InspectRef
    kind: str
    source: str | None = None
    top_k: int = 15
    min_count: int = 5
    max_rows: int | None = None


@dataclass(frozen=True)
class ArtifactProgress:
    """Where an artifact job is: ``done`` of ``total`` blocks of work, and what it is doing.

    ``seconds``: the expected seconds of a step that reports no blocks (token counting), for its time left.
    """

    done: int
    total: int
    what: str
    seconds: float | None = None


#: seconds per text of token counting in "What the removed rows share" (core ``token_artifacts``), measured with
#: bench_app_scale.py: 200,000 texts in 3 s, 550,000 in about 7-8 s on the 2-core machine at load 2-5
TOKEN_COUNT_SECONDS_PER_TEXT = 1.5e-5


def _artifact_store() -> _stores.Store:
    """Finished tables of "What the removed rows share", by :class:`ArtifactRequest`."""
    return _stores.store("inspect_artifacts", 16)


def _compute_artifacts(
    request: ArtifactRequest, result: AFLiteResult, data: Dataset, report: Callable[[ArtifactProgress], None]
) -> pd.DataFrame:
    y = inspect_tables.class_names(data, result)
    if request.kind == "token":
        texts, _ = inspect_tables.artifact_texts(data)
        expected = TOKEN_COUNT_SECONDS_PER_TEXT * len(texts)  # one call, no blocks to count: its time left
        report(ArtifactProgress(0, 1, f"Counting the tokens of {len(texts):,} texts", seconds=expected))
        return token_artifacts(texts, y, result.kept, top_k=request.top_k, min_count=request.min_count)
    if request.kind != "feature" or request.source is None:
        raise ValueError(f"Unknown artifact request kind {request.kind!r}; expected 'token' or 'feature'.")
    X, names = inspect_tables.feature_matrix(data, request.source)
    what = "Comparing the features of removed and kept rows"

    def progress(done: int, total: int) -> None:
        report(ArtifactProgress(done, total, what))

    progress(0, 1)
    frame = feature_artifacts(X, result.kept, y=y, top_k=request.top_k, max_rows=request.max_rows, progress=progress)
    frame.insert(3, "feature", [names[int(j)] for j in frame["dimension"]])
    return frame


def stored_artifacts(request: ArtifactRequest) -> pd.DataFrame | None:
    """The table of ``request`` when it is computed already (no computation), else None."""
    hit = _artifact_store().recall(request)
    return None if hit is None else _stores._fresh(hit)


def artifacts_now(request: ArtifactRequest, result: AFLiteResult, *, session: SessionData = NO_SESSION) -> pd.DataFrame:
    """The table of ``request``, computed in this thread when it is not stored yet (no progress, no Stop)."""
    hit = stored_artifacts(request)
    if hit is not None:
        return hit
    frame = _compute_artifacts(request, result, dataset(request.ref.dataset, session=session), lambda p: None)
    _artifact_store().keep(request, frame)
    return _stores._fresh(frame)


def prepare_artifacts(
    request: ArtifactRequest, result: AFLiteResult, *, session: SessionData = NO_SESSION
) -> Callable[[Callable], Outcome]:
    """The job :func:`aflite_app.jobs.run_in_background` runs for ``request`` (checked in the page's thread).

    One job per request for the whole server (:class:`~aflite_app.jobs.SharedJobs`): reruns, a second tab and
    other sessions join it. It reports :class:`ArtifactProgress` after every block of columns of every class
    and stops there when asked (token counting stops only once the texts are counted: the follower's wait ends
    at once). The finished table goes to the store (:func:`stored_artifacts`). Gives ``Outcome(value=table)``,
    ``Outcome(stopped=True)`` when stopped, or the error in one sentence.
    """
    data = dataset(request.ref.dataset, session=session)  # here: a background thread sees no session
    store, jobs = _artifact_store(), shared_jobs()  # fetched here: the job's thread has no script context

    def job(callback: Callable) -> pd.DataFrame:
        hit = store.recall(request)
        if hit is not None:
            return hit
        frame = _compute_artifacts(request, result, data, stoppable(callback))
        store.keep(request, frame)
        return frame

    def target(callback: Callable) -> Outcome:
        outcome = as_outcome(
            lambda: jobs.follow(("artifacts", request), job, callback), "Comparing removed and kept rows"
        )
        return Outcome(_stores._fresh(outcome.value)) if outcome.ok else outcome

    return target


def describe_artifacts(request: ArtifactRequest) -> Callable:
    """The progress text of an artifact job: what it does, blocks done, elapsed seconds and time left."""

    def describe(p: ArtifactProgress | None, elapsed: float, step: object = None) -> tuple[float, str]:
        if p is None:
            return 0.0, f"Starting… {elapsed:.0f} s"
        fraction = min(1.0, p.done / max(p.total, 1))
        if p.done == 0 and p.seconds is not None:  # a step without blocks: its expected seconds less the time so far
            left = p.seconds - elapsed
            if left >= 1:
                return min(0.95, elapsed / p.seconds), f"{p.what} · {elapsed:.0f} s · about {left:,.0f} s left"
            return 0.95, f"{p.what} · {elapsed:.0f} s · finishing"
        return fraction, f"{p.what} · {elapsed:.0f} s{remaining_text(elapsed, fraction)}"

    return describe


# -- the tab "Label-revealing words": the dataset's token statistics and the run's shares, one background job ---
@dataclass(frozen=True)
class WordsRequest:
    """What the tab "Label-revealing words" asks for: the run, the text ``source``, ``min_count`` and ``alpha``.

    Its job's key and its stored result's.
    """

    ref: InspectRef
    source: str
    min_count: int = 10
    alpha: float = 0.01


def _words_store() -> _stores.Store:
    """Finished results of "Label-revealing words", by :class:`WordsRequest`."""
    return _stores.store("inspect_words", 16)


def _compute_words(
    request: WordsRequest, result: AFLiteResult, data: Dataset, report: Callable[[ArtifactProgress], None]
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The statistics on all rows and, when there is something to compare, the run's shares of them.

    Three passes over the texts (the test, its example texts, then the shares), each reporting every 10,000 texts.
    """
    texts = artifact_source_texts(data, request.source)
    n = len(texts)
    compare = result.n_removed > 0 and result.n_kept > 0

    def counting(done: int, _total: int) -> None:
        report(ArtifactProgress(done, 3 * n if compare else 2 * n, f"Testing the tokens of {n:,} texts"))

    stats = word_statistics(data, request.source, request.min_count, request.alpha, counting, texts=texts)
    shares = None
    if compare and bool(stats["significant"].astype(bool).any()):

        def sharing(done: int, _total: int) -> None:
            report(ArtifactProgress(2 * n + done, 3 * n, "Counting the significant tokens among kept and removed rows"))

        shares = artifact_shares(texts, data.labels, result.kept, stats, progress=sharing)
        shares["still_significant"] = shares["z_kept"].to_numpy(dtype=float) > stats.attrs["z_critical"]
        shares["label"] = shares["label"].astype(str)
        shares.attrs.update(stats.attrs, removed_share=float(result.n_removed / max(result.n_rows, 1)))
    return stats, shares


def stored_words(request: WordsRequest) -> tuple[pd.DataFrame, pd.DataFrame | None] | None:
    """The result of ``request`` (``(stats, shares)``) when it is computed already (no computation), else None."""
    hit = _words_store().recall(request)
    return None if hit is None else _stores._fresh(hit)


def words_now(
    request: WordsRequest, result: AFLiteResult, *, session: SessionData = NO_SESSION
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The result of ``request``, computed in this thread when it is not stored yet (no progress, no Stop)."""
    hit = stored_words(request)
    if hit is not None:
        return hit
    out = _compute_words(request, result, dataset(request.ref.dataset, session=session), lambda p: None)
    _words_store().keep(request, out)
    return _stores._fresh(out)


def prepare_words(
    request: WordsRequest, result: AFLiteResult, *, session: SessionData = NO_SESSION
) -> Callable[[Callable], Outcome]:
    """The job :func:`aflite_app.jobs.run_in_background` runs for ``request`` (checked in the page's thread).

    One job per request for the whole server (:class:`~aflite_app.jobs.SharedJobs`): reruns and other sessions
    join it. It reports :class:`ArtifactProgress` every 10,000 texts (three passes) and stops there when asked;
    above the interactive size (``_stores.MAX_INTERACTIVE_ROWS`` rows) it waits its turn in the server's queue
    of heavy jobs. The finished result goes to the store (:func:`stored_words`). Gives
    ``Outcome(value=(stats, shares))``: the statistics of :func:`artifact_statistics` and the shares as
    the core's ``artifact_shares`` gives them, with ``still_significant`` (None when the run removed or kept
    nothing, or no pair is significant); ``Outcome(stopped=True)`` when stopped, or the error in one sentence.
    """
    data = dataset(request.ref.dataset, session=session)  # here: a background thread sees no session
    store, jobs = _words_store(), shared_jobs()  # fetched here: the job's thread has no script context

    def job(callback: Callable) -> tuple[pd.DataFrame, pd.DataFrame | None]:
        hit = store.recall(request)
        if hit is not None:
            return hit
        out = _compute_words(request, result, data, stoppable(callback))
        store.keep(request, out)
        return out

    n_rows = data.n_rows
    queued = heavy(job, f"token statistics of {n_rows:,} texts") if n_rows > _stores.MAX_INTERACTIVE_ROWS else job

    def target(callback: Callable) -> Outcome:
        outcome = as_outcome(lambda: jobs.follow(("words", request), queued, callback), "Testing the tokens")
        return Outcome(_stores._fresh(outcome.value)) if outcome.ok else outcome

    return target


def describe_words(request: WordsRequest) -> Callable:
    """The progress text of a words job: what it does, texts done, elapsed seconds and time left."""
    return describe_artifacts(request)  # the same ArtifactProgress


def inspect_token_artifacts(
    ref: InspectRef, result: AFLiteResult, *, top_k: int = 15, min_count: int = 5, session: SessionData = NO_SESSION
) -> pd.DataFrame:
    """Tokens over-represented among removed / kept rows per class (the core's ``token_artifacts``)."""
    request = ArtifactRequest(ref, "token", top_k=int(top_k), min_count=int(min_count))
    return artifacts_now(request, result, session=session)


def inspect_feature_artifacts(
    ref: InspectRef,
    result: AFLiteResult,
    source: str,
    *,
    top_k: int = 10,
    max_rows: int | None = None,
    session: SessionData = NO_SESSION,
) -> pd.DataFrame:
    """Feature dimensions separating removed from kept rows per class (``feature_artifacts``), with names.

    ``max_rows``: removed and kept rows per class compared at most (a seeded sample of each side); None: all.
    """
    request = ArtifactRequest(ref, "feature", source, top_k=int(top_k), max_rows=max_rows)
    return artifacts_now(request, result, session=session)


def artifact_sample_text(frame: pd.DataFrame) -> str | None:
    """How a feature table of "What the removed rows share" was sampled, in words; None when it used every row.

    Reads the table's ``attrs`` (``rows`` and ``rows_used`` per class, from ``feature_artifacts``).
    """
    rows, used = frame.attrs.get("rows") or {}, frame.attrs.get("rows_used") or {}
    if not used or all(tuple(used[k]) == tuple(rows.get(k, used[k])) for k in used):
        return None
    n_used = sum(a + b for a, b in used.values())
    n_all = sum(a + b for a, b in rows.values())
    se = max(float(np.sqrt((1 / max(a, 1) + 1 / max(b, 1)) / 12)) for a, b in used.values())
    cap = max(max(a, b) for a, b in used.values())
    return (
        f"Computed on a seeded random sample of {n_used:,} of the {n_all:,} rows (at most {cap:,} removed and "
        f"{cap:,} kept rows of each class): each AUC is within about ±{2 * se:.3f} of its value on every row."
    )
