"""The Synthetic circles page (the paper's Figure 2, live): datasets, "before" accuracies and AFLite runs.

On the τ/k path, from slowest-changing to fastest: the datasets (memoised by :class:`CirclesSpec`),
their "before" accuracies (keyed by CirclesSpec + folds; independent of τ and k), the AFLite runs at the τ
slider's lowest value (keyed by the AFLite parameters but τ: every higher τ is read off them exactly) and the
experiment at the page's τ with the "after" accuracies (keyed by :class:`CirclesRunSpec`); these sit in a
bounded store rather than ``st.cache_*`` because they report progress to the page's progress bar. Computed only
when asked for, never on the τ/k path: the accuracy over rounds of one run (:func:`circles_curve`), the
out-of-distribution test (:func:`circles_ood`, keyed by :class:`CirclesOODSpec`) and AFOptimum against AFLite on
tiny data (:func:`circles_optimum`). The page builds its own data: the sidebar's dataset is not used.

The figure of every dataset's original panel depends on neither τ nor k either; it is built once per
:class:`CirclesSpec` and folds (:func:`circles_original_figure`), so a τ/k change sends the browser the same
figure, which it does not draw again.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from aflite_core.data import planted_bias as synthetic
from aflite_core.experiments import figure2 as synthetic_experiment
from aflite_core.experiments import ood, optimum
from aflite_core.experiments.seed_counts import (
    optimum_narrative,
    optimum_summary,
    synthetic_narrative,
    synthetic_summary,
)

from .. import settings
from ..jobs import Outcome, remaining_text, start_daemon
from . import _stores

__all__ = [
    "CIRCLES_LIVE_FOLDS",
    "CIRCLES_MAX_LEVELS",
    "CIRCLES_OOD_SEEDS",
    "CIRCLES_TAU_FLOOR",
    "SEED_COUNT_SEEDS",
    "CirclesOODSpec",
    "CirclesRunSpec",
    "CirclesSpec",
    "OptimumCountsSpec",
    "SeedCounts",
    "SeedCountsSpec",
    "circles_before",
    "circles_curve",
    "circles_datasets",
    "circles_experiment",
    "circles_headline",
    "circles_notes",
    "circles_ood",
    "circles_optimum",
    "circles_original_figure",
    "circles_round",
    "describe_seed_counts",
    "one_seed_note",
    "parse_separations",
    "prepare_seed_counts",
    "stored_seed_counts",
]

#: AFLite seeds of the page's out-of-distribution test (every seed: its own AFLite run, random subset, models)
CIRCLES_OOD_SEEDS = (0, 1, 2)

#: CV folds of the accuracies in the live view (the paper's protocol uses 5; 3 keeps a τ/k change under ~2 s)
CIRCLES_LIVE_FOLDS = 3
#: how many separation levels the page accepts
CIRCLES_MAX_LEVELS = settings.load().circles_max_levels
#: finished computations the page remembers (before accuracies, AFLite runs, experiments, out-of-distribution tests)
CIRCLES_STORE_SIZE = settings.load().circles_store_size
#: "after" accuracies remembered by kept set (a few floats each)
CIRCLES_AFTER_MEMO_SIZE = settings.load().circles_after_memo_size
#: the τ slider's lowest value: one AFLite run per dataset at this τ holds the run at every τ above it exactly
#: (aflite_core.engine.tau_path), so a τ change on the page runs no AFLite
CIRCLES_TAU_FLOOR = 0.5


@dataclass(frozen=True)
class CirclesSpec:
    """The concentric-circles datasets of the Synthetic page: the cache key of the datasets and "before" numbers."""

    n_samples: int = 2000
    bias_fraction: float = 0.75
    flip_fraction: float = 0.1
    separations: tuple[float, ...] = synthetic.PAPER_SEPARATIONS
    seed: int = 0


@dataclass(frozen=True)
class CirclesRunSpec:
    """AFLite on every dataset of a :class:`CirclesSpec` (k as a row count; t and n as shares of the rows).

    The target n = 10 % lies below the 25 % of rows without bias features, so the run normally ends by the
    τ early stop (fewer than k rows still reach τ) rather than at the target, and τ visibly matters (with the
    CLI's n = 27 % every τ reaches the target in the same rounds).
    """

    data: CirclesSpec
    tau: float = 0.75
    slice_size: int = 100
    n_partitions: int = 64
    train_size: float = 0.05
    target_size: float = 0.1
    n_splits: int = CIRCLES_LIVE_FOLDS


def parse_separations(text: str) -> tuple[float, ...]:
    """Parse the page's separation list ("1.0, 0.6, 0.4, 0.2") into distinct ring gaps in [0, 2).

    Raises ``ValueError`` with a message for the user on anything else.
    """
    hint = (
        f"Separations must be a comma-separated list of 1 to {CIRCLES_MAX_LEVELS} distinct numbers in [0, 2), "
        f'e.g. "1.0, 0.6, 0.4, 0.2". Got {text!r} instead.'
    )
    parts = [p for p in re.split(r"[,;\s]+", str(text).strip()) if p]
    if not 1 <= len(parts) <= CIRCLES_MAX_LEVELS:
        raise ValueError(hint)
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise ValueError(hint) from None
    if any(not np.isfinite(s) or s < 0 or s >= 2 for s in values):
        raise ValueError(hint)
    if len({f"{s:g}" for s in values}) != len(values):
        raise ValueError(hint.replace(" Got", " (no repeats). Got"))
    return values


@_stores.memo("circles_datasets", 8, spinner="Generating the datasets…")
def circles_datasets(spec: CirclesSpec) -> tuple[synthetic.BiasedCircles, ...]:
    """The datasets of ``spec`` (``paper_circles``' seeds and names, with ``spec.bias_fraction``)."""
    base = synthetic.paper_circles(
        spec.n_samples, separations=list(spec.separations), flip_fraction=spec.flip_fraction, random_state=spec.seed
    )
    out = []
    for d in base:  # paper_circles has no bias_fraction: regenerate each with its own seed (same data at 0.75)
        params = {k: val for k, val in d.params.items() if k not in ("seed", "n_samples")}
        params["bias_fraction"] = spec.bias_fraction
        again = synthetic.make_biased_circles(d.n_samples, **params, random_state=d.params["seed"])
        out.append(replace(again, name=d.name))
    return tuple(out)


def _circles_store() -> _stores.Store:
    """Finished "before" accuracies, experiments and out-of-distribution tests, by their spec.

    A store rather than ``st.cache_*``: these computations report progress to the page, and a cached function
    may not draw into a block created outside it (Streamlit replays such elements on every cache hit).
    """
    return _stores.store("circles_store", CIRCLES_STORE_SIZE)


def circles_before(
    spec: CirclesSpec, n_splits: int, progress: Callable[[int, int, str], Any] | None = None
) -> dict[str, dict[str, float]]:
    """Linear and RBF-SVM accuracy of every dataset before filtering (what the page's first render waits for).

    They depend on neither τ nor k. The paper's reference without biases (``linear_no_bias``, ``rbf_no_bias``) is
    not measured (NaN): the page shows it nowhere, and it was half of this work (1.7 of 3.5 s on the default
    datasets). ``progress(step, n_steps, dataset)`` is called after every dataset when they are computed (not
    when they are remembered).
    """
    key = ("before", spec, int(n_splits))
    hit = _recall_after_warm_up(key)
    if hit is None:
        hit = synthetic_experiment.before_accuracies(
            list(circles_datasets(spec)),
            n_splits=n_splits,
            random_state=spec.seed,
            n_threads=1,
            callback=progress,
            reference=False,
        )
        _circles_store().keep(key, hit)
    return hit


def _aflite_args(run: CirclesRunSpec) -> dict[str, Any]:
    """AFLite's parameters of ``run`` as the core's experiment functions take them."""
    return {
        "target_size": run.target_size,
        "train_size": run.train_size,
        "slice_size": int(run.slice_size),
        "tau": run.tau,
        "n_partitions": run.n_partitions,
    }


def _recall_after_warm_up(key: Any) -> Any:
    """The store's entry for ``key``; if missing, looked up again once the warm-up (if computing) is done."""
    hit = _circles_store().recall(key)
    if hit is None:
        with _COMPUTING:  # the warm-up (or another session's wait) holds it while it computes
            hit = _circles_store().recall(key)
    return hit


def _plan(run: CirclesRunSpec) -> synthetic_experiment.ExperimentPlan:
    """The core's experiment with every parameter of ``run`` but τ checked once (remembered, by ``run`` but τ)."""
    key = ("plan", replace(run, tau=0.0))
    hit = _circles_store().recall(key)
    if hit is None:
        args = {name: value for name, value in _aflite_args(run).items() if name != "tau"}
        hit = synthetic_experiment.plan_experiment(
            list(circles_datasets(run.data)), **args, n_splits=run.n_splits, random_state=run.data.seed, n_threads=1
        )
        _circles_store().keep(key, hit)
    return hit


def _circles_runs(run: CirclesRunSpec, progress: Callable[[int, int, str], Any]) -> dict[str, Any]:
    """AFLite on every dataset at :data:`CIRCLES_TAU_FLOOR` with the run's other parameters (remembered)."""
    floor = replace(run, tau=min(run.tau, CIRCLES_TAU_FLOOR), n_splits=CIRCLES_LIVE_FOLDS)  # folds: not used
    key = ("runs", floor)
    hit = _recall_after_warm_up(key)
    if hit is None:
        hit = _plan(floor).run(floor.tau, callback=progress)
        _circles_store().keep(key, hit)
    return hit


#: held by the warm-up while it computes the default page's "before" accuracies and AFLite runs: a page that
#: needs them waits for it instead of computing them a second time in parallel
_COMPUTING = threading.RLock()


def warm_up_default() -> None:
    """Compute what the default Synthetic page needs first ("before" accuracies, AFLite runs) into the store.

    The slowest part of the page's first render (about 1.5 CPU-s, and the first use of scikit-learn's SVM); done
    once per server process in the background by :func:`start_warm_up`, so a teacher who opens the page finds
    it ready. Errors are ignored: the page then computes (and reports) the same itself.
    """
    run = CirclesRunSpec(CirclesSpec())
    try:
        with _COMPUTING:
            circles_before(run.data, run.n_splits)
            _circles_runs(run, lambda *_: None)
    except Exception:  # the page computes it again and shows any error there
        pass


_WARM_UP_THREAD = "aflite-synthetic-warm-up"


class _QuietWarmUp(logging.Filter):
    """Drops Streamlit's "missing ScriptRunContext" warnings of the warm-up thread (it draws nothing, on purpose)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != _WARM_UP_THREAD


@st.cache_resource(max_entries=1, show_spinner=False)
def start_warm_up() -> threading.Thread | None:
    """Start :func:`warm_up_default` in a daemon thread, once per server process (``AFLITE_WARM_UP=0``: never)."""
    if not settings.load().warm_up:
        return None
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_QuietWarmUp())
    return start_daemon(warm_up_default, _WARM_UP_THREAD)


def _circles_after_memo() -> _stores.Store:
    """The "after" accuracies by data, kept rows, folds and seed: neighbouring τ often keep the same rows."""
    return _stores.store("circles_after_memo", CIRCLES_AFTER_MEMO_SIZE)


def circles_experiment(
    run: CirclesRunSpec, progress: Callable[[float, str], Any] | None = None
) -> synthetic_experiment.SyntheticExperiment:
    """AFLite on every dataset plus the "after" accuracies and planted-truth counts (``synthetic_experiment``).

    Composed from the core's steps (:class:`aflite_core.experiments.figure2.ExperimentPlan`), each remembered
    here: the plan (every parameter but τ, checked once), the "before" accuracies, AFLite once per dataset at
    :data:`CIRCLES_TAU_FLOOR` for the run's k, m, t, n and seed, the run at the page's τ read off it
    (``plan.at_tau``: exactly what a run at τ gives, so a τ change runs no AFLite), and the "after" accuracies by
    kept set (``plan.after_key``). The result equals ``synthetic_experiment`` at τ (the tests compare them).
    ``progress(fraction, text)`` reports the steps for the page's progress bar; it is only called when something
    is computed.
    """
    key = ("experiment", run)
    hit = _circles_store().recall(key)
    if hit is not None:
        return hit

    def step(low: float, high: float, what: str) -> Callable[[int, int, str], None]:
        def report(i: int, total: int, name: str) -> None:
            if progress is not None:
                progress(low + (high - low) * i / total, f"{what}: {name} ({i} of {total})")

        return report

    plan = _plan(run)
    before = circles_before(run.data, run.n_splits, step(0.0, 0.3, "Accuracy before filtering"))
    results = plan.at_tau(_circles_runs(run, step(0.3, 0.75, "AFLite")), run.tau)  # τ checked once, by the core
    memo, after = _circles_after_memo(), {}
    report = step(0.75, 1.0, "Accuracy after filtering")
    for i, (name, res) in enumerate(results.items(), start=1):
        key_after = plan.after_key(name, res)
        acc = memo.recall(key_after)
        if acc is None:
            acc = plan.after(name, res)
            memo.keep(key_after, acc)
        after[name] = acc
        report(i, len(results), name)
    exp = plan.experiment(results, before, after)
    _circles_store().keep(key, exp)
    return exp


@_stores.memo("circles_original_figure", 8 * CIRCLES_MAX_LEVELS)
def circles_original_figure(
    spec: CirclesSpec, n_splits: int, index: int, _data: Any, _row: Any, _build: Callable[..., Any]
) -> Any:
    """The "original" panel of dataset ``index`` of ``spec``, built once by ``_build`` and cached.

    ``_build`` is the page's figure builder (``charts.synthetic.circles_column``), called as
    ``_build(data, all_rows_kept, row, part="original")``: passed in, so compute never imports a chart module.
    Its points and title (the "before" accuracies with ``n_splits`` folds) follow from the key alone; ``_data``,
    ``_row`` (that dataset and its experiment-table row) and ``_build`` are what the figure is built from, not part
    of the key. Shared between sessions: Streamlit copies a figure before sending it, nothing changes the cached one.
    """
    return _build(_data, np.ones(_data.n_samples, dtype=bool), _row, part="original")


def circles_headline(exp: synthetic_experiment.SyntheticExperiment) -> dict[str, float]:
    """Averages over the datasets for the page's metrics: accuracies and biased share before/after."""
    t = exp.table
    flipped = t["flipped_removed_share"].dropna()
    return {
        "linear_before": float(t["linear_before"].mean()),
        "linear_after": float(t["linear_after"].mean()),
        "rbf_before": float(t["rbf_before"].mean()),
        "rbf_after": float(t["rbf_after"].mean()),
        "biased_share_before": float(t["biased_share_before"].mean()),
        "biased_share_after": float(t["biased_share_after"].mean()),
        "flipped_removed_share": float(flipped.mean()) if len(flipped) else float("nan"),
        "rows_after": float(t["n_after"].mean()),
    }


def circles_round(exp: synthetic_experiment.SyntheticExperiment, name: str, rnd: int) -> dict[str, float]:
    """What round ``rnd`` of the run on dataset ``name`` did, with the planted truth (for the round stepper)."""
    data = next(d for d in exp.datasets if d.name == name)
    res = exp.results[name]
    rr = np.asarray(res.removed_round)
    now = rr == rnd
    left = (rr < 1) | (rr > rnd)
    row = res.history.iloc[rnd - 1]
    return {
        "removed": int(now.sum()),
        "removed_biased": int((now & data.is_biased).sum()),
        "removed_flipped": int((now & data.is_flipped).sum()),
        "size_after": int(left.sum()),
        "biased_left": int((left & data.is_biased).sum()),
        "flipped_left": int((left & data.is_flipped).sum()),
        "mean_p": float(row["mean_predictability"]),
        "qualified": int(row["n_qualified"]),
        "scored": int(row["n_scored"]),
    }


@_stores.memo("circles_curve", 64, spinner="Measuring both models on the set left after every round…")
def _circles_curve(run: CirclesRunSpec, name: str, _exp: Any) -> pd.DataFrame:
    data = next(d for d in _exp.datasets if d.name == name)
    return synthetic_experiment.accuracy_over_rounds(
        data, _exp.results[name], n_splits=run.n_splits, random_state=run.data.seed, n_threads=1
    )


def circles_curve(run: CirclesRunSpec, name: str) -> pd.DataFrame:
    """Linear and RBF-SVM accuracy of the set left after every round of ``run`` on dataset ``name`` (cached).

    One row per round (0 = all rows), see :func:`aflite_core.experiments.figure2.accuracy_over_rounds`; the
    folds are the page's. Computed only when the page asks for it (about 0.5 s per dataset).
    """
    return _circles_curve(run, name, circles_experiment(run))


def circles_notes(
    exp: synthetic_experiment.SyntheticExperiment, name: str | None = None, curve: pd.DataFrame | None = None
) -> list[str]:
    """The computed explanations of the accuracies (below chance, at chance, rose) of one dataset or of all.

    With a ``curve`` (one dataset's accuracy over rounds) only what the curve adds is returned, without the
    dataset's name in front (the caption that shows it names the dataset once).
    """
    table = exp.table
    rows = table if name is None else table[table["dataset"] == name]
    plain = [line for _, row in rows.iterrows() for line in synthetic_experiment.accuracy_notes(row)]
    if curve is None:
        return plain
    more = [line for _, row in rows.iterrows() for line in synthetic_experiment.accuracy_notes(row, curve)]
    prefix = f"{name}: "
    out = [line.removeprefix(prefix) for line in more if line not in plain]
    return [line[:1].upper() + line[1:] for line in out]


@dataclass(frozen=True)
class CirclesOODSpec:
    """The out-of-distribution test of the page: its datasets and AFLite parameters, over :data:`CIRCLES_OOD_SEEDS`."""

    run: CirclesRunSpec
    seeds: tuple[int, ...] = CIRCLES_OOD_SEEDS
    models: tuple[str, ...] = ood.OOD_MODELS


def circles_ood(spec: CirclesOODSpec, progress: Callable[[float, str], Any] | None = None) -> ood.OODResult:
    """Train on all rows / AFLite's rows / a random subset of the page's datasets; test in distribution and shifted.

    :func:`aflite_core.experiments.ood.ood_experiment` with the page's datasets and AFLite parameters, one AFLite run
    per seed (the run shown above is seed-for-seed another one). About 2 s per seed on the default datasets; remembered.
    """
    key = ("ood", spec)
    hit = _circles_store().recall(key)
    if hit is not None:
        return hit
    run = spec.run

    def step(i: int, total: int, what: str) -> None:
        if progress is not None:
            progress(i / total, f"Out-of-distribution test: {what} ({i} of {total})")

    result = ood.ood_experiment(
        list(circles_datasets(run.data)),
        models=spec.models,
        **_aflite_args(run),
        n_test=run.data.n_samples,
        seeds=spec.seeds,
        n_threads=1,
        callback=step,
    )
    _circles_store().keep(key, result)
    return result


@_stores.memo("circles_optimum", 4, spinner="Searching every subset of the tiny problems…")
def circles_optimum(seed: int = 0, slice_size: int = 2) -> pd.DataFrame:
    """AFOptimum against AFLite's strategies on the tiny teaching cases (``optimum.compare_with_optimum``)."""
    return optimum.compare_with_optimum(slice_size=slice_size, random_state=seed).table


# -- the narratives over seeds (issue 27): the notes above describe one seed; these count over many, on request ----
#: seeds (Figure 2) and generated instances (AFOptimum) the cross-seed counts use: the page's seed and the next ones
SEED_COUNT_SEEDS = 10


@dataclass(frozen=True)
class SeedCountsSpec:
    """Figure 2's narrative over ``n_seeds`` seeds: the page's data and AFLite parameters, seeds ``seed`` onwards."""

    run: CirclesRunSpec
    n_seeds: int = SEED_COUNT_SEEDS

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds counted over: the page's own first."""
        return tuple(range(self.run.data.seed, self.run.data.seed + int(self.n_seeds)))


@dataclass(frozen=True)
class OptimumCountsSpec:
    """AFOptimum's narrative over ``n_instances`` generated instances (seeds ``seed`` onwards)."""

    seed: int = 0
    slice_size: int = 2
    n_instances: int = SEED_COUNT_SEEDS


@dataclass(frozen=True)
class SeedCounts:
    """The tables of every seed (``table``, with a ``seed`` or ``instance`` column), their summary and sentences."""

    table: pd.DataFrame
    summary: pd.DataFrame
    narrative: tuple[str, ...]
    seconds: float


def stored_seed_counts(spec: SeedCountsSpec | OptimumCountsSpec) -> SeedCounts | None:
    """The counts of ``spec`` when computed already (no computation), else None."""
    return _circles_store().recall(("seed_counts", spec))


def prepare_seed_counts(spec: SeedCountsSpec | OptimumCountsSpec) -> Callable[[Callable], Any]:
    """A background job counting the page's narrative over seeds (Figure 2) or generated instances (AFOptimum).

    ``target(reporter)`` runs one seed (instance) after another - Figure 2: new datasets and a new AFLite run per
    seed, :func:`aflite_core.experiments.figure2.synthetic_experiment`; AFOptimum:
    :func:`aflite_core.experiments.optimum.compare_with_optimum` - reporting ``(done, total)`` after each; a False
    from the reporter stops it between two seeds and gives ``Outcome(stopped=True)``. The finished counts
    (:func:`aflite_core.experiments.seed_counts`' summary and narrative) are kept in the page's store.
    """
    key = ("seed_counts", spec)

    def target(reporter: Callable) -> Outcome:
        hit = _circles_store().recall(key)
        if hit is not None:
            return Outcome(hit)
        start, parts = time.perf_counter(), []
        if isinstance(spec, SeedCountsSpec):
            seeds = spec.seeds
            for i, s in enumerate(seeds):
                if reporter((i, len(seeds))) is False:
                    return Outcome(stopped=True)
                run = replace(spec.run, data=replace(spec.run.data, seed=s))
                exp = synthetic_experiment.synthetic_experiment(
                    list(circles_datasets(run.data)),
                    **_aflite_args(run),
                    n_splits=run.n_splits,
                    random_state=s,
                    n_threads=1,
                )
                parts.append(exp.table.assign(seed=s))
            long = pd.concat(parts, ignore_index=True)
            summary, narrative = synthetic_summary(long), synthetic_narrative(long)
        else:
            for i in range(int(spec.n_instances)):
                if reporter((i, int(spec.n_instances))) is False:
                    return Outcome(stopped=True)
                cmp = optimum.compare_with_optimum(slice_size=spec.slice_size, random_state=spec.seed + i)
                parts.append(cmp.table.assign(instance=i))
            long = pd.concat(parts, ignore_index=True)
            summary, narrative = optimum_summary(long), optimum_narrative(long)
        reporter((len(parts), len(parts)))
        counts = SeedCounts(long, summary, tuple(narrative), time.perf_counter() - start)
        _circles_store().keep(key, counts)
        return Outcome(counts)

    return target


def describe_seed_counts(progress: Any, elapsed: float, _step: Any = None) -> tuple[float, str]:
    """The progress of a cross-seed count: ``(fraction, text)`` with the elapsed time and the time left."""
    if progress is None:
        return 0.0, f"Starting the first seed · {elapsed:.0f} s"
    done, total = progress
    fraction = done / max(total, 1)
    return fraction, f"Seed {done + 1 if done < total else total} of {total} · {elapsed:.0f} s" + remaining_text(
        elapsed, fraction
    )


def one_seed_note(seed: int, what: str = "these notes", unit: str = "seeds") -> str:
    """The sentence that says a note describes one run: the seed, and where the counts over seeds are.

    Examples
    --------
    >>> one_seed_note(3)[:60]
    'These notes describe the run shown: one seed (seed 3). A sen'
    """
    return (
        f"{what[:1].upper() + what[1:]} describe the run shown: one seed (seed {seed}). A sentence that holds here "
        f"may not hold at another seed: press 'Count over {SEED_COUNT_SEEDS} {unit}' for how many it holds on."
    )
