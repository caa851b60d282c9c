"""Removal stability across seeds for the Inspect page: the report's runs, their background job, the per-row table.

A report of ``n`` seeds is the Filter run's spec with seeds ``seed, seed+1, ...`` (the current run is the
first). Its runs go to the Filter page's result store one by one (:func:`prepare_stability`, a heavy job with
Stop; a stopped report keeps its finished seeds), and only the small per-row table is cached
(:func:`inspect_stability`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from aflite_core.engine.result import RoundProgress, StepProgress
from aflite_core.measures.stability import stability_from_results

from .. import inspect_tables, settings
from ..admission import heavy
from ..jobs import Outcome, Stopped, as_outcome, remaining_text, shared_jobs
from ..specs import NO_SESSION, FilterSpec, SessionData
from . import _stores
from .datasets import dataset
from .runs import _result_store, prepare_run, result, run_filter

__all__ = [
    "MAX_STABILITY_SEEDS",
    "StabilityProgress",
    "StabilityRequest",
    "describe_stability",
    "finished_stability_specs",
    "inspect_stability",
    "missing_stability_runs",
    "prepare_stability",
    "run_stability",
    "stability_specs",
]


#: most AFLite runs one stability report may ask for
MAX_STABILITY_SEEDS = settings.load().stability_max_seeds


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
