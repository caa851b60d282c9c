"""The Inspect page: the rows table, artifacts, class counts, stability and downloads of one run.

The run is the Filter page's current run or one opened from a zip, named by an :class:`InspectRef`; the page
resolves it once (:func:`inspect_result`, handing over the opened run it keeps in session state) and passes it
on. Tables are memoised by the ref in the byte-bounded stores (held by
reference, never pickled). Removal stability across seeds reuses the Filter page's result
store (one FilterSpec per seed, so the current run counts as one of them) and caches only the small per-row
table. The pure table and download helpers are :mod:`aflite_app.inspect_tables` and
:mod:`aflite_app.run_archive`; the page's are re-exported here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult
from aflite_core._utils import hash_array
from aflite_core.data.datasets import Dataset
from aflite_core.engine.result import RoundProgress, StepProgress
from aflite_core.measures.artifact_statistics import artifact_shares
from aflite_core.measures.explain import RowExplanation, explain_row
from aflite_core.measures.removed_artifacts import feature_artifacts, token_artifacts
from aflite_core.measures.stability import class_impact, stability_from_results

from .. import images, inspect_tables, run_archive, settings
from ..admission import heavy
from ..inspect_tables import (
    artifact_texts,
    feature_sources,
    filter_rows,
    pixel_grid,
    text_display_columns,
    with_round_lists,
    with_stability,
)
from ..jobs import Outcome, Stopped, as_outcome, remaining_text, shared_jobs, stoppable
from ..specs import NO_SESSION, DatasetSpec, FilterSpec, SessionData
from . import _stores
from .datasets import (
    artifact_source_texts,
    artifact_statistics,
    artifact_summary,
    artifact_table,
    artifact_text_choices,
    class_names,
    dataset,
    dataset_choices,
    word_statistics,
)
from .runs import _result_store, prepare_run, result, run_filter

__all__ = [
    "ARTIFACT_SAMPLE_ROWS",
    "MAX_STABILITY_SEEDS",
    "ArtifactProgress",
    "ArtifactRequest",
    "InspectRef",
    "StabilityProgress",
    "StabilityRequest",
    "WordsRequest",
    "artifact_sample_text",
    "artifact_statistics",
    "artifact_summary",
    "artifact_table",
    "artifact_text_choices",
    "artifact_texts",
    "artifacts_now",
    "class_names",
    "describe_artifacts",
    "describe_link",
    "describe_stability",
    "describe_words",
    "download_bytes",
    "explanation_row",
    "feature_sources",
    "filter_rows",
    "finished_stability_specs",
    "inspect_class_impact",
    "inspect_explanation",
    "inspect_feature_artifacts",
    "inspect_representation",
    "inspect_result",
    "inspect_stability",
    "inspect_table",
    "inspect_token_artifacts",
    "link_origin",
    "link_rows",
    "missing_stability_runs",
    "open_run_archive",
    "pixel_grid",
    "prepare_artifacts",
    "prepare_stability",
    "prepare_words",
    "provenance_zip_bytes",
    "run_stability",
    "run_zip_bytes",
    "running_jobs_text",
    "stability_specs",
    "stored_artifacts",
    "stored_words",
    "text_display_columns",
    "with_round_lists",
    "with_stability",
    "words_now",
]

#: most AFLite runs one stability report may ask for
MAX_STABILITY_SEEDS = settings.load().stability_max_seeds


@dataclass(frozen=True)
class InspectRef:
    """Which run the Inspect page shows: the Filter page's run (``spec``) or an opened archive (``digest``)."""

    dataset: DatasetSpec
    spec: FilterSpec | None = None
    digest: str | None = None


def inspect_result(ref: InspectRef, loaded: dict | None = None, *, session: SessionData = NO_SESSION) -> AFLiteResult:
    """The run behind ``ref``: the Filter page's run, or ``loaded``, the opened run's record.

    The Filter page's run comes from :func:`aflite_app.compute.runs.result`, the one source of the current run
    (stored, or read off a stored run at a lower τ, as the Filter page showed it); only if that store has lost
    it is it run again here. ``loaded`` is what :func:`open_run_archive` returned and the page keeps in session
    state (the ``"loaded"`` entry of :data:`aflite_app.state.INSPECT_PAGE`).
    """
    if ref.spec is not None:
        return run_filter(ref.spec, session=session)  # runs.result(spec), else a run
    if not loaded or loaded.get("digest") != ref.digest:
        raise ValueError("The opened run is no longer in this session; open its zip again.")
    return loaded["result"]


@_stores.memo("inspect_thumbnails", 8)
def _inspect_thumbnails(key: str, _data: Dataset) -> list[str] | None:
    return None if _data.images is None else images.image_thumbnails(_data.images)


@_stores.memo("inspect_table", 8, spinner="Building the table of rows…")
def _inspect_table(ref: InspectRef, _result: AFLiteResult, _data: Dataset) -> pd.DataFrame:
    thumbnails = _inspect_thumbnails(ref.dataset.key, _data)
    # the per-round lists only for the rows shown (with_round_lists): one list per row is slow at 550,000 rows
    return inspect_tables.rows_table(_result, _data, thumbnails=thumbnails, round_lists=False)


def inspect_table(ref: InspectRef, result: AFLiteResult, *, session: SessionData = NO_SESSION) -> pd.DataFrame:
    """One row per example of the run (see :func:`aflite_app.inspect_tables.rows_table`), without ``p_rounds``.

    The page adds the per-round scores to the rows it shows (:func:`with_round_lists`).
    """
    return _inspect_table(ref, result, dataset(ref.dataset, session=session))


@_stores.memo("inspect_class_impact", 16)
def _inspect_class_impact(ref: InspectRef, threshold: float, _result: AFLiteResult, _data: Dataset) -> pd.DataFrame:
    frame = class_impact(inspect_tables.class_names(_data, _result), _result.kept, threshold=threshold)
    order = {str(c): i for i, c in enumerate(_data.classes)}
    return frame.sort_values("label", key=lambda s: s.map(order)).reset_index(drop=True)


def inspect_class_impact(
    ref: InspectRef, result: AFLiteResult, threshold: float = 0.5, *, session: SessionData = NO_SESSION
) -> pd.DataFrame:
    """Per-class counts before/after with a warning flag, class names in the dataset's order."""
    return _inspect_class_impact(ref, threshold, result, dataset(ref.dataset, session=session))


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
    """Where an artifact job is: ``done`` of ``total`` blocks of work, and what it is doing."""

    done: int
    total: int
    what: str


def _artifact_store() -> _stores.Store:
    """Finished tables of "What the removed rows share", by :class:`ArtifactRequest`."""
    return _stores.store("inspect_artifacts", 16)


def _compute_artifacts(
    request: ArtifactRequest, result: AFLiteResult, data: Dataset, report: Callable[[ArtifactProgress], None]
) -> pd.DataFrame:
    y = inspect_tables.class_names(data, result)
    if request.kind == "token":
        texts, _ = inspect_tables.artifact_texts(data)
        report(ArtifactProgress(0, 1, f"Counting the tokens of {len(texts):,} texts"))
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


def running_jobs_text(page: dict) -> str | None:
    """What this page still computes in the background (from its state dict), in words; None when nothing."""
    names = {
        "words": "'Label-revealing words'",
        "artifacts": "'What the removed rows share'",
        "stability_run": "'Stability across seeds'",
    }
    busy = [
        name
        for entry, name in names.items()
        if (run := page.get(entry)) is not None and not getattr(run, "done", True) and not run.stop_requested
    ]
    if not busy:
        return None
    return "Still computing in the background: " + " and ".join(busy) + " (its tab shows the progress and Stop)."


@_stores.memo("inspect_representation", 16)
def _inspect_representation(ref: InspectRef, x_sha256: str | None, _data: Dataset) -> str | None:
    # the engine's fingerprint of X (provenance["x_sha256"]), the one opening a run directory checks too
    for name, X in _data.representations.items():
        if x_sha256 is not None and hash_array(X) == x_sha256:
            return name
    return None


def inspect_representation(ref: InspectRef, result: AFLiteResult, *, session: SessionData = NO_SESSION) -> str | None:
    """The representation the run was made on, None when unknown.

    For the Filter run, the spec's; for an opened run, the one whose fingerprint (``provenance["x_sha256"]``)
    matches.
    """
    if ref.spec is not None:
        return ref.spec.dataset.representation
    return _inspect_representation(ref, result.provenance.get("x_sha256"), dataset(ref.dataset, session=session))


def open_run_archive(payload: bytes, name: str, dspec: DatasetSpec, *, session: SessionData = NO_SESSION) -> dict:
    """Load a run archive safely and check it belongs to the dataset of ``dspec`` (ValueError otherwise).

    Returns the record the page keeps in session state (:func:`aflite_app.state.keep_inspect_run`). Nothing is
    cached: the run lives in this session only.
    """
    data = dataset(dspec, session=session)
    result = run_archive.load_run_zip(payload, name=f"'{name}'", expected_rows=data.n_rows)
    run_archive.check_run_matches(
        result, data, data_label=f"the dataset '{dataset_choices(session=session).get(dspec.key, dspec.key)}'"
    )
    digest = hashlib.sha256(payload).hexdigest()[:16]
    return {"result": result, "name": name, "digest": digest, "dataset": dspec.key}


# -- the rows a chart bar links to (the Filter and Predictability pages set state.INSPECT_FILTER) ----------------
def _link_parts(link: dict | None) -> tuple[int | None, str | None, bool]:
    if not isinstance(link, dict):
        return None, None, False
    rnd, cls = link.get("round"), link.get("class")
    return (
        (int(rnd) if rnd is not None else None),
        (str(cls) if cls is not None else None),
        link.get("status") == "stayed",
    )


def link_rows(table: pd.DataFrame, link: dict | None) -> pd.DataFrame:
    """The rows of :func:`aflite_app.inspect_tables.rows_table` a chart bar links to.

    ``link`` is ``{"round": int or None, "class": str or None, "status": "removed" or "stayed"}``
    (:data:`aflite_app.state.INSPECT_FILTER`): a round keeps the rows removed in that round, or with status
    "stayed" the rows scored in that round and not removed in it (kept, or removed later); a class keeps the rows
    of that class; None (or a missing key) keeps everything. ``{"rows": [positions], "what": str}`` (rows picked
    on the Compare runs page) keeps those rows.
    """
    rnd, cls, stayed = _link_parts(link)
    mask = np.ones(len(table), dtype=bool)
    if isinstance(link, dict) and link.get("rows") is not None:  # rows picked on Compare runs, by position
        mask &= table["row"].isin([int(r) for r in link["rows"]]).to_numpy()
    if rnd is not None:
        removed_in = pd.to_numeric(table["round"], errors="coerce")
        hit = (removed_in.isna() | (removed_in > rnd)) if stayed else (removed_in == rnd)
        mask &= hit.fillna(False).to_numpy(dtype=bool)
    if cls is not None:
        mask &= (table["class"].astype(str) == cls).to_numpy()
    return table.loc[mask]


def link_origin(link: dict | None) -> str:
    """Where the link filter came from, for Inspect's notice."""
    if isinstance(link, dict) and link.get("rows") is not None:
        return "the rows you picked on the Compare runs page"
    return "the bar you clicked on the Filter or Predictability page"


def describe_link(link: dict | None) -> str | None:
    """The link filter in words ("rows removed in round 3 of class 'cat'"), None when there is none."""
    if isinstance(link, dict) and link.get("rows") is not None:
        return str(link.get("what") or f"{len(link['rows']):,} rows picked on Compare runs")
    rnd, cls, stayed = _link_parts(link)
    if rnd is None and cls is None:
        return None
    if rnd is None:
        what = "rows"
    else:
        what = f"rows that stayed in round {rnd}" if stayed else f"rows removed in round {rnd}"
    return what + (f" of class '{cls}'" if cls is not None else "")


# -- downloads -------------------------------------------------------------------------------------------------
def download_bytes(result: AFLiteResult, data: Dataset, which: str = "kept", fmt: str = "csv") -> bytes:
    """The run's ``which`` rows ("kept", "removed" or "all") with every original column plus AFLite's, as a file.

    ``fmt`` is "csv" or "parquet" (see :func:`aflite_app.inspect_tables.export_frame`).
    """
    frame = inspect_tables.export_frame(result, data, which)
    if fmt == "csv":
        return inspect_tables.csv_bytes(frame)
    if fmt == "parquet":
        return inspect_tables.parquet_bytes(frame)
    raise ValueError(f"The 'fmt' parameter must be 'csv' or 'parquet'. Got {fmt!r} instead.")


def provenance_zip_bytes(result: AFLiteResult, data: Dataset, representation: str | None) -> bytes:
    """The kept rows with their dataset card and manifest, zipped (:func:`aflite_app.exports.provenance_zip_bytes`)."""
    from .. import exports

    return exports.provenance_zip_bytes(result, data, representation)


def run_zip_bytes(result: AFLiteResult) -> bytes:
    """The whole run record as a zip the page (or :meth:`AFLiteResult.load`, unzipped) opens again."""
    return run_archive.run_zip_bytes(result)


# -- stability across seeds ------------------------------------------------------------------------------------
def stability_specs(spec: FilterSpec, n_seeds: int) -> list[FilterSpec]:
    """The runs of a stability report: ``spec`` with seeds ``seed, seed+1, ...`` (the current run is the first)."""
    n = int(n_seeds)
    if not 2 <= n <= MAX_STABILITY_SEEDS:
        raise ValueError(f"The number of seeds must be between 2 and {MAX_STABILITY_SEEDS}. Got {n} instead.")
    return [spec.with_(seed=(spec.seed + i) % (2**31 - 1)) for i in range(n)]


def missing_stability_runs(spec: FilterSpec, n_seeds: int, *, session: SessionData = NO_SESSION) -> list[FilterSpec]:
    """The runs of the report that are not computed yet (no computation)."""
    return [s for s in stability_specs(spec, n_seeds) if result(s, session=session) is None]


def run_stability(
    spec: FilterSpec,
    n_seeds: int,
    progress: Callable[[float, str], None] | None = None,
    *,
    session: SessionData = NO_SESSION,
) -> None:
    """Compute the missing runs of the report in this thread, reporting ``progress(fraction, text)``.

    Each finished run goes to the result store at once, so an interrupted report resumes where it stopped.
    """
    todo = missing_stability_runs(spec, n_seeds, session=session)
    for i, s in enumerate(todo):

        def callback(p, i=i, s=s):
            if progress is not None:
                progress(
                    (i + p.fraction_done) / len(todo),
                    f"Run {i + 1} of {len(todo)} (seed {s.seed}): round {p.round}, {p.size:,} rows left",
                )
            return True

        if progress is not None:
            progress(i / len(todo), f"Run {i + 1} of {len(todo)} (seed {s.seed}) starting…")
        run_filter(s, callback, session=session)
    if progress is not None:
        progress(1.0, "All runs done.")


def finished_stability_specs(spec: FilterSpec, n_seeds: int, *, session: SessionData = NO_SESSION) -> list[FilterSpec]:
    """The runs of the report that are computed already (no computation), the current run first."""
    return [s for s in stability_specs(spec, n_seeds) if result(s, session=session) is not None]


@dataclass(frozen=True)
class StabilityRequest:
    """A stability report asked for: the Filter run ``spec`` and ``n_seeds`` seeds (its job's key)."""

    spec: FilterSpec
    n_seeds: int


@dataclass(frozen=True)
class StabilityProgress:
    """Where a stability job is: run ``run`` of ``runs`` missing ones (seed ``seed``), and that run's round."""

    run: int
    runs: int
    seed: int
    round: RoundProgress | None = None


class _SeedReporter:
    """The engine's callback for one seed of a stability job: its rounds wrapped in StabilityProgress."""

    def __init__(self, job: Callable, run: int, runs: int, seed: int) -> None:
        self._job, self._where = job, (run, runs, seed)
        self.step = getattr(job, "step", None)

    def __call__(self, progress: RoundProgress | None) -> bool:
        return bool(self._job(StabilityProgress(*self._where, progress)))


def prepare_stability(request: StabilityRequest, *, session: SessionData = NO_SESSION) -> Callable[[Callable], Outcome]:
    """The job :func:`aflite_app.jobs.run_in_background` runs for a stability report (checked in the page's thread).

    Runs the report's missing seeds one after the other, each stored as soon as it finishes, so a stopped
    report keeps its finished seeds (:func:`finished_stability_specs`) and a new request runs only the rest.
    One job per request for the whole server (:class:`~aflite_app.jobs.SharedJobs`): reruns and
    other sessions join it. It stops within one step of a round (a group of partition fits or a block of
    predictions); the seed in progress is then dropped. Gives ``Outcome(value=n_seeds)`` once every seed is
    there, ``Outcome(stopped=True)`` when stopped.
    """
    n_seeds = int(request.n_seeds)
    # planned here, in the page's thread: a background thread sees no session (an uploaded dataset)
    todo = [
        (s, prepare_run(s, session=session)) for s in missing_stability_runs(request.spec, n_seeds, session=session)
    ]
    store, jobs = _result_store(), shared_jobs()  # fetched here: the job's thread has no script context

    def job(callback: Callable) -> int:
        for i, (s, run) in enumerate(todo):
            reporter = _SeedReporter(callback, i + 1, len(todo), s.seed)
            if not reporter(None):
                raise Stopped("Stopped.")
            if store.recall(s) is None and run(reporter).stopped:
                raise Stopped("Stopped.")  # the partial run of this seed is not stored
        return n_seeds

    queued = heavy(job, f"a stability report ({n_seeds} seeds)")  # it waits its turn in the server's queue

    def target(callback: Callable) -> Outcome:
        if all(store.recall(s) is not None for s, _ in todo):
            return Outcome(n_seeds)
        return as_outcome(lambda: jobs.follow(("stability", request), queued, callback), "Stability")

    return target


def describe_stability(request: StabilityRequest, *, session: SessionData = NO_SESSION) -> Callable:
    """The progress text of a stability job: which seed, its round, elapsed seconds and a time estimate."""
    spec = request.spec
    n_rows = dataset(spec.dataset, session=session).n_rows
    rounds_est = max(1.0, max(n_rows - int(spec.target_size), 1) / max(int(spec.slice_size), 1))

    def describe(p: StabilityProgress | None, elapsed: float, step: StepProgress | None = None) -> tuple[float, str]:
        if p is None:
            return 0.0, f"Starting… {elapsed:.0f} s"
        r = p.round
        rounds = r.round if r is not None else 0
        if step is not None and step.round == rounds + 1:
            rounds += step.fraction_of_round
        within = min(1.0, max(r.fraction_done if r is not None else 0.0, rounds / rounds_est))
        fraction = min(1.0, (p.run - 1 + within) / max(p.runs, 1))
        where = f"Seed {p.seed} (run {p.run} of {p.runs})"
        if step is not None and step.round == (r.round if r is not None else 0) + 1:
            what = "fitting the models" if step.phase == "fit" else "predicting held-out rows"
            where += f", round {step.round}: {what} ({step.done}/{step.total})"
        elif r is not None:
            where += f", round {r.round} done, {r.size:,} rows left"
        return fraction, f"{where} · {elapsed:.0f} s{remaining_text(elapsed, fraction)}"

    return describe


def inspect_stability(
    spec: FilterSpec, n_seeds: int, only_finished: bool = False, *, session: SessionData = NO_SESSION
) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """How often each row is removed over ``n_seeds`` seeds (computes missing runs without progress).

    Returns the per-row frame (``n_runs_removed``, ``removal_frequency``), the summary relative to the current
    run (:func:`aflite_app.inspect_tables.stability_frame`) with ``mean_jaccard`` and ``seeds`` added, and the counts
    per "removed in k of n runs" (:func:`aflite_app.inspect_tables.stability_counts`). ``only_finished`` uses only
    the seeds computed already (a stopped report: at least two are needed).
    """
    specs = (
        finished_stability_specs(spec, n_seeds, session=session) if only_finished else stability_specs(spec, n_seeds)
    )
    if len(specs) < 2:
        raise ValueError("Removal stability needs at least two finished seeds; press Continue to run more.")
    return _inspect_stability(spec, tuple(s.seed for s in specs), _session=session)


@_stores.memo("inspect_stability", 16)
def _inspect_stability(
    spec: FilterSpec, seeds: tuple[int, ...], *, _session: SessionData = NO_SESSION
) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    specs = [spec.with_(seed=s) for s in seeds]
    report = stability_from_results([run_filter(s, session=_session) for s in specs])
    current = run_filter(spec, session=_session)
    frame, summary = inspect_tables.stability_frame(report.removed, current.kept)
    summary["mean_jaccard"] = report.mean_jaccard
    summary["seeds"] = [s.seed for s in specs]
    return frame, summary, inspect_tables.stability_counts(frame, current.kept, len(specs))


# -- the explanation of one row (the rows tab's panel) --------------------------------------------------------
def explanation_row(table: pd.DataFrame, typed: str) -> int | None:
    """The position of the row whose id (as text) is ``typed`` in Inspect's rows table; None when none is."""
    typed = str(typed).strip()
    if not typed:
        return None
    hits = np.flatnonzero(table["id"].astype(str).to_numpy() == typed)
    return int(table["row"].iloc[hits[0]]) if len(hits) else None


@_stores.memo("inspect_explanation", 32, spinner="Explaining the row…")
def _inspect_explanation(
    ref: InspectRef, position: int, representation: str | None, words: WordsRequest | None, _result, _data, _stats
) -> RowExplanation:
    text_cols = [c for c in text_display_columns(_data) if c in _data.frame.columns]
    features = _data.representations.get(representation) if representation else None
    key = _result.ids[position] if _result.ids is not None else position
    return explain_row(
        _result,
        key,
        table=_data.frame[text_cols] if text_cols else None,
        features=features,
        artifact_stats=_stats,
        text_columns=text_cols,
        words_column=words.source if words is not None and words.source in text_cols else None,
    )


def inspect_explanation(
    ref: InspectRef,
    result: AFLiteResult,
    position: int,
    representation: str | None,
    words: WordsRequest | None = None,
    *,
    session: SessionData = NO_SESSION,
) -> RowExplanation:
    """Why row ``position`` was removed or kept (the core's ``explain_row``), memoised per run and row.

    Its words are those of ``words`` (the tab "Label-revealing words"'s request): its stored statistics, or
    computed now up to the interactive size (above it, the tab's background job computes them and the
    explanation shows them once it is done). The neighbours are searched in the run's ``representation``
    (none when it is unknown, e.g. a run opened from a file made on other features).
    """
    data = dataset(ref.dataset, session=session)
    stats = None
    if words is not None:
        done = stored_words(words)
        if done is None and data.n_rows <= _stores.MAX_INTERACTIVE_ROWS:
            done = words_now(words, result, session=session)
        stats = None if done is None else done[0]
    shown = words if stats is not None else None  # the key says whether the words were there
    return _inspect_explanation(ref, int(position), representation, shown, result, data, stats)
