"""The Training dynamics page (Cosma et al., EMNLP 2024): difficulty levels from training dynamics vs AFLite.

Per-epoch logits are recorded on the sidebar's dataset (full input = its representation, plus a partial-input
representation) or read from uploaded allenai/cartography JSONL files (parsed and aligned to the dataset by
:mod:`aflite_core.dynamics.align`); difficulty levels come from the GMM (the paper's method) or a baseline; text
pairs get the spurious-correlation tests; the levels are crossed with the Filter page's AFLite run. Recorded and
uploaded dynamics sit in a bounded store keyed by :class:`DynamicsSpec` (so the page can tell "already
recorded" from "needs the button"); levels, per-row frames and tables are memoised in the
byte-bounded stores (:func:`._stores.memo`).
Checking the levels (held-out accuracy, fractions, controls over seeds) is :mod:`aflite_app.compute.level_checks`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from aflite_core.data.datasets import Dataset
from aflite_core.dynamics import (
    DynamicsRecord,
    TrainingDynamics,
    TrainingInterrupted,
    TrainingStep,
    aum_levels,
    data_maps_levels,
    difficulty_levels,
    record_dynamics,
)
from aflite_core.dynamics.align import align_dynamics, parse_class_order, read_epoch_files
from aflite_core.measures.spurious import compare_classes, paper_table, spurious_measures

from .. import settings
from ..images import image_thumbnails
from ..inspect_tables import text_display_columns
from ..jobs import Outcome, Stopped, as_outcome, remaining_text
from ..jobs import shared_jobs as _shared_jobs
from ..run_archive import human_bytes
from ..specs import NO_SESSION, DatasetSpec, FilterSpec, SessionData
from . import _stores
from .datasets import class_names, dataset, is_partial_input, pair_full_input, partial_input_choices
from .runs import run_filter

__all__ = [
    "DYN_AUTO_SECONDS",
    "DYN_EXAMPLES",
    "DYN_LEVEL_METHODS",
    "DYN_LEVEL_SOURCES",
    "DYN_MAX_EPOCHS",
    "DYN_MAX_UPLOAD_BYTES",
    "DYN_MAX_UPLOAD_FILES",
    "DynamicsSpec",
    "LevelSpec",
    "class_names",
    "describe_record",
    "dynamics_estimate",
    "dynamics_examples",
    "dynamics_frame",
    "dynamics_full_input",
    "dynamics_levels",
    "dynamics_record",
    "dynamics_spurious_measures",
    "dynamics_spurious_tests",
    "dynamics_upload",
    "dynamics_vs_aflite",
    "is_partial_input",
    "partial_input_choices",
    "prepare_record",
    "stored_dynamics",
]

#: recordings estimated to take longer than this wait for the page's Record button (digits: ~0.1 s)
DYN_AUTO_SECONDS = settings.load().dynamics_auto_seconds
#: seconds per (row × epoch) and per (row × feature × epoch) of record_dynamics' softmax model, fitted to
#: measurements on this machine at load 2.5 (2026-11-25: 1,438 × (64 + 8) × 5 epochs 0.04 s, 5,000 × 384 × 5
#: 0.10 s, 20,000 × 384 × 5 0.53 s, 20,000 × (768 + 384) × 3 0.96 s; a 60,000 × 768 × 20 recording in the app
#: ~5 s). The old single constant (2e-7 per row × feature × epoch) said 166 s for that 5 s recording.
_DYN_ROW_COST = 3e-6
_DYN_COST = 1e-8
#: epochs the page offers
DYN_MAX_EPOCHS = settings.load().dynamics_max_epochs
#: uploaded dynamics: at most this many epoch files and this many bytes per input
DYN_MAX_UPLOAD_FILES = settings.load().dynamics_max_upload_files
DYN_MAX_UPLOAD_BYTES = settings.load().dynamics_max_upload_bytes
#: the level methods of the page
DYN_LEVEL_METHODS = {
    "gmm": "GMM on the training-dynamics features (Cosma et al.'s method)",
    "data_maps": "Data Maps' ambiguous region + our median split of the rest",
    "aum": "AUM percentile bands (Cosma et al.'s baseline)",
}
DYN_STORE_SIZE = settings.load().dynamics_store_size
#: the level methods' attributions, as the page and the README give them
DYN_LEVEL_SOURCES = {
    "gmm": "Cosma et al. (2024)",
    "data_maps": "ambiguous region: Swayamdipta et al. (2020); easy / hard split of the rest at the median "
    "confidence: this project's choice",
    "aum": "AUM: Pleiss et al. (2020); the percentile bands: Cosma et al.'s baseline (2024)",
}
#: example rows shown per cross-tab cell
DYN_EXAMPLES = 8


@dataclass(frozen=True)
class DynamicsSpec:
    """Which training dynamics: recorded on ``dataset`` (+ ``partial``) or uploaded (``upload`` = content digest).

    For uploads ``partial``, ``epochs`` and ``seed`` are unused (``epochs`` is 0).
    """

    dataset: DatasetSpec
    partial: str | None = None
    epochs: int = 5
    seed: int = 0
    upload: str | None = None


@dataclass(frozen=True)
class LevelSpec:
    """How the dynamics become levels: ``method`` (a key of DYN_LEVEL_METHODS) and its parameters."""

    method: str = "gmm"
    ambiguous_fraction: float = 0.33
    lower: float = 0.33
    upper: float = 0.66
    seed: int = 0


def dynamics_estimate(spec: DynamicsSpec, *, session: SessionData = NO_SESSION) -> float:
    """Rough seconds :func:`dynamics_record` needs to record ``spec`` (0 for uploads)."""
    if spec.upload is not None:
        return 0.0
    data = dataset(spec.dataset, session=session)
    dims = data.representation(spec.dataset.representation).shape[1]
    if spec.partial is not None and spec.partial in data.representations:
        dims += data.representation(spec.partial).shape[1]
    return float((_DYN_ROW_COST + _DYN_COST * dims) * data.n_rows * spec.epochs)


def _dynamics_store() -> _stores.Store:
    """Recorded or uploaded dynamics by DynamicsSpec."""
    return _stores.store("dynamics_store", DYN_STORE_SIZE)


def _dyn_put(spec: DynamicsSpec, record) -> None:
    _dynamics_store().keep(spec, record)


def stored_dynamics(spec: DynamicsSpec):
    """The DynamicsRecord of ``spec`` if it was recorded or uploaded before (no computation), else None."""
    return _dynamics_store().recall(spec)


def _dyn_check_size(data: Dataset) -> None:
    _stores.check_rows(
        data.n_rows,
        doing="handles",
        instead="Record the dynamics from the command line: `python -m "
        "aflite_core dynamics --features FEATURES.npy --partial-features PARTIAL.npy --labels "
        "LABELS.csv --out levels.parquet`.",
    )


def _record_job(spec: DynamicsSpec, *, session: SessionData = NO_SESSION) -> Callable[..., DynamicsRecord]:
    """``job(on_step=None) -> DynamicsRecord`` recording ``spec`` (checked here, in the caller's thread).

    The record is stored only once complete; a recording stopped by ``on_step`` raises TrainingInterrupted.
    """
    if spec.upload is not None:
        raise ValueError("The uploaded training dynamics are no longer in memory; upload the files again.")
    data = dataset(spec.dataset, session=session)
    _dyn_check_size(data)
    if spec.partial is not None and spec.partial not in data.representations:
        raise ValueError(
            f"Dataset '{data.name}' has no representation {spec.partial!r} to use as the partial input; "
            f"available: {list(data.representations)}."
        )
    X = data.representation(spec.dataset.representation)
    Xp = None if spec.partial is None else data.representation(spec.partial)
    y, ids = data.y, data.ids
    store = _dynamics_store()  # fetched here: the job may run in a thread without a script context

    def job(on_step: Callable[[TrainingStep], bool | None] | None = None) -> DynamicsRecord:
        record = record_dynamics(
            X,
            y,
            X_partial=Xp,
            epochs=int(spec.epochs),
            ids=ids,
            random_state=int(spec.seed),
            n_threads=1,
            on_step=on_step,
        )
        store.keep(spec, record)
        return record

    return job


def dynamics_record(spec: DynamicsSpec, *, session: SessionData = NO_SESSION):
    """Record (or fetch) the training dynamics of ``spec``: full input and, when chosen, the partial input.

    Uses :func:`aflite_core.dynamics.record_dynamics` (softmax model, Adam, batch 32, in-sample) with the
    dataset's ids; uploaded dynamics are only fetched (see :func:`dynamics_upload`). Runs in this thread; the
    page records in the background with :func:`prepare_record`.
    """
    hit = stored_dynamics(spec)
    if hit is not None:
        return hit
    return _record_job(spec, session=session)()


def _shared(
    key, job: Callable[..., Any], callback: Callable, what: str, stored: Callable[[], Any], jobs: Any
) -> Outcome:
    """Follow the server-wide job ``key`` (started once, joined by every session asking for it) as an Outcome.

    ``job(on_step)`` gets the shared job's step reporter; a stop (the last follower left, or its session is
    gone) ends it within one step with TrainingInterrupted, which the follower sees as ``Outcome(stopped=True)``.
    ``stored()`` is asked first by the job itself: a request that came just as the same job finished gets its
    stored value instead of running it again.
    """

    def run(reporter: Callable) -> Any:
        hit = stored()
        if hit is not None:
            return hit
        try:
            return job(reporter.step)
        except TrainingInterrupted:
            raise Stopped("Stopped.") from None

    return as_outcome(lambda: jobs.follow(key, run, callback), what)


def prepare_record(spec: DynamicsSpec, *, session: SessionData = NO_SESSION) -> Callable[[Callable], Outcome]:
    """The recording :func:`aflite_app.jobs.run_in_background` runs for ``spec`` (checked here, in the page's thread).

    The recording is one job for the whole server (:class:`~aflite_app.jobs.SharedJobs`): a rerun,
    a second tab or another session asking for the same spec joins it. It checks for a stop after every
    mini-batch; a stopped recording gives ``Outcome(stopped=True)`` and stores nothing, so asking again starts
    over. A finished one is stored (:func:`stored_dynamics`) and given as ``Outcome(value=record)``.
    """
    store, jobs = _dynamics_store(), _shared_jobs()  # fetched here: the job's thread has no script context
    job = None if store.recall(spec) is not None else _record_job(spec, session=session)

    def target(callback: Callable) -> Outcome:
        done = store.recall(spec)
        if done is not None or job is None:
            return Outcome(done) if done is not None else Outcome(error="The recording is no longer in memory.")
        what = "Recording the training dynamics"
        return _shared(("dynamics", spec), job, callback, what, lambda: store.recall(spec), jobs)

    return target


def describe_record(spec: DynamicsSpec) -> Callable:
    """The progress text of a recording: which model, epoch and batch, elapsed seconds and a time estimate."""

    def describe(_progress, elapsed: float, step: TrainingStep | None = None) -> tuple[float, str]:
        if step is None:
            return 0.0, f"Starting the recording… {elapsed:.0f} s"
        model = "Full-input model" if step.model == "full" else "Partial-input model"
        fraction = step.fraction
        text = f"{model}: epoch {step.epoch} of {step.epochs}, batch {step.batch:,} of {step.batches:,}"
        return fraction, f"{text} · {elapsed:.0f} s{remaining_text(elapsed, fraction)}"

    return describe


def _dyn_read_files(files, classes: list[str], what: str) -> TrainingDynamics:
    """Uploaded epoch files ``[(name, bytes), ...]`` within the app's limits, parsed by the core."""
    if len(files) > DYN_MAX_UPLOAD_FILES:
        raise ValueError(f"{len(files)} {what} files is more than the {DYN_MAX_UPLOAD_FILES} epochs the app reads.")
    total = sum(len(b) for _, b in files)
    if total > DYN_MAX_UPLOAD_BYTES:
        raise ValueError(
            f"The {what} files hold {human_bytes(total)}, more than the app reads "
            f"({human_bytes(DYN_MAX_UPLOAD_BYTES)}); compute the levels with `python -m aflite_core "
            "dynamics --dynamics-dir DIR ...` instead."
        )
    return read_epoch_files(files, classes=classes, what=what)


def _dyn_align(td: TrainingDynamics, data: Dataset, what: str) -> TrainingDynamics:
    """The uploaded dynamics re-ordered to the dataset's rows (guid ↔ id) and classes (by name)."""
    return align_dynamics(td, ids=data.ids, y=data.y, classes=data.classes, dataset_name=data.name, what=what)


def dynamics_upload(
    dspec: DatasetSpec, full_files, partial_files=(), class_order: str = "", *, session: SessionData = NO_SESSION
) -> DynamicsSpec:
    """Read uploaded allenai/cartography dynamics, align them to the dataset, and store them.

    Parameters
    ----------
    dspec : DatasetSpec
        The dataset the dynamics describe (guids must be its ids).
    full_files, partial_files : sequence of (file name, bytes)
        ``dynamics_epoch_<e>.jsonl`` files of the full input (required) and of the partial input (optional).
    class_order : str
        Class names in logit order, comma-separated (default: the dataset's class order).

    Returns
    -------
    DynamicsSpec
        With ``upload`` set to the content digest; :func:`dynamics_record` returns the aligned record.

    Raises
    ------
    ValueError
        Naming the file, line or id for anything that does not fit (see :func:`_dyn_align`).
    """
    data = dataset(dspec, session=session)
    _dyn_check_size(data)
    full_files, partial_files = list(full_files), list(partial_files)
    if not full_files:
        raise ValueError("Upload the full-input dynamics (dynamics_epoch_0.jsonl, dynamics_epoch_1.jsonl, …).")
    classes = parse_class_order(class_order, data.classes)
    h = hashlib.sha256(repr((dspec, classes)).encode())
    for tag, files in (("full", full_files), ("partial", partial_files)):
        for name, payload in sorted(files, key=lambda f: str(f[0])):
            h.update(f"{tag}:{name}:{len(payload)}:".encode())
            h.update(payload)
    spec = DynamicsSpec(dataset=dspec, partial=None, epochs=0, seed=0, upload=h.hexdigest()[:16])
    if stored_dynamics(spec) is not None:
        return spec
    full = _dyn_align(_dyn_read_files(full_files, classes, "full-input"), data, "full-input")
    partial = None
    if partial_files:
        partial = _dyn_align(_dyn_read_files(partial_files, classes, "partial-input"), data, "partial-input")
    _dyn_put(spec, DynamicsRecord(full=full, partial=partial))
    return spec


@_stores.memo("dynamics_levels", 32, spinner="Sorting the rows into difficulty levels…")
def _dynamics_levels(spec: DynamicsSpec, level: LevelSpec, _record):
    if level.method == "gmm":
        return difficulty_levels(_record, random_state=int(level.seed), n_threads=1)
    if level.method == "data_maps":
        return data_maps_levels(_record, ambiguous_fraction=float(level.ambiguous_fraction))
    if level.method == "aum":
        return aum_levels(_record, lower=float(level.lower), upper=float(level.upper))
    raise ValueError(f"Unknown level method {level.method!r}; choose one of {list(DYN_LEVEL_METHODS)}.")


def dynamics_levels(spec: DynamicsSpec, level: LevelSpec, *, session: SessionData = NO_SESSION):
    """The DifficultyLevels of the dynamics of ``spec`` by ``level`` (GMM, Data Maps or AUM bands)."""
    return _dynamics_levels(spec, level, dynamics_record(spec, session=session))


@_stores.memo("dynamics_frame", 32)
def _dynamics_frame(spec: DynamicsSpec, level: LevelSpec, _record, _levels, *, _session: SessionData = NO_SESSION):
    data = dataset(spec.dataset, session=_session)
    frame = _record.measures().reset_index(drop=True)
    head = pd.DataFrame(
        {
            "row": np.arange(data.n_rows),
            "id": np.asarray(data.ids),
            "label": data.class_names_of(data.y),
            "level": _levels.levels.astype(str).to_numpy(),
        }
    )
    return pd.concat([head, frame], axis=1)


def dynamics_frame(spec: DynamicsSpec, level: LevelSpec, *, session: SessionData = NO_SESSION):
    """One row per example: ``row``, ``id``, ``label`` (class name), ``level`` and the (up to) eight measures."""
    record = dynamics_record(spec, session=session)
    return _dynamics_frame(spec, level, record, _dynamics_levels(spec, level, record), _session=session)


@_stores.memo(
    "dynamics_spurious",
    4,
    spinner="Measuring word overlap, antonyms, length mismatch, misspellings and "
    "negation of every pair (the first time loads WordNet)…",
)
def _dynamics_spurious(dspec: DatasetSpec, _data: Dataset):
    a, b = _data.pair
    frame = spurious_measures(_data.frame[a].astype(str).tolist(), _data.frame[b].astype(str).tolist())
    return frame.reset_index(drop=True)


def dynamics_spurious_measures(dspec: DatasetSpec, *, session: SessionData = NO_SESSION):
    """The five spurious-correlation measures of every pair (None when the dataset has no text pair)."""
    data = dataset(dspec, session=session)
    if data.pair is None:
        return None
    return _dynamics_spurious(DatasetSpec(dspec.key), data)


@_stores.memo("dynamics_spurious_tests", 16, spinner="Testing the classes against each other (Mann-Whitney U)…")
def _dynamics_spurious_tests(spec: DynamicsSpec, level: LevelSpec, _frame, _measures):
    tests = compare_classes(_measures, _frame["label"].to_numpy(), _frame["level"].to_numpy())
    return tests, paper_table(tests)


def dynamics_spurious_tests(spec: DynamicsSpec, level: LevelSpec, *, session: SessionData = NO_SESSION):
    """Spurious-measure tests of the levels: ``(tests, table)``, or None without a text pair.

    ``tests``: two-sided Mann-Whitney U between every pair of classes per level and measure, Bonferroni over the
    table (:func:`aflite_core.measures.spurious.compare_classes`); ``table``: its wide view (:func:`paper_table`).
    """
    measures = dynamics_spurious_measures(spec.dataset, session=session)
    if measures is None:
        return None
    return _dynamics_spurious_tests(spec, level, dynamics_frame(spec, level, session=session), measures)


@_stores.memo("dynamics_vs_aflite", 16)
def _dynamics_vs_aflite(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec, _frame, _result):
    kept = np.asarray(_result.kept, dtype=bool)
    if len(kept) != len(_frame):
        raise ValueError(
            f"The AFLite run has {len(kept):,} rows but the dynamics {len(_frame):,}; run AFLite again on this dataset."
        )
    out = _frame.copy()
    out["kept"] = kept
    out["status"] = np.where(kept, "kept", "removed")
    out["removed_round"] = np.asarray(_result.removed_round)
    return out


def dynamics_vs_aflite(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec, *, session: SessionData = NO_SESSION):
    """The per-row frame of :func:`dynamics_frame` with AFLite's ``kept``, ``status`` and ``removed_round``."""
    return _dynamics_vs_aflite(
        spec, level, fspec, dynamics_frame(spec, level, session=session), run_filter(fspec, session=session)
    )


@_stores.memo("dynamics_examples", 64)
def _dynamics_examples(
    spec: DynamicsSpec,
    level: LevelSpec,
    fspec: FilterSpec,
    cell: tuple[str, str],
    n: int,
    seed: int,
    _frame,
    _data: Dataset,
    _spurious,
):
    in_cell = _frame[(_frame["level"] == cell[0]) & (_frame["status"] == cell[1])]
    if len(in_cell) > n:
        in_cell = in_cell.iloc[np.sort(np.random.default_rng(seed).choice(len(in_cell), size=n, replace=False))]
    rows = in_cell["row"].to_numpy()
    out = pd.DataFrame({"id": in_cell["id"].astype(str).to_numpy()})
    if _data.images is not None and len(rows):
        out["image"] = image_thumbnails(_data.images[rows])
    for col in text_display_columns(_data):
        out[col] = _data.frame[col].iloc[rows].astype(str).to_numpy()
    out["class"] = in_cell["label"].to_numpy()
    out["level"] = in_cell["level"].to_numpy()
    out["AFLite"] = [f"removed in round {r}" if r > 0 else "kept" for r in in_cell["removed_round"]]
    for col in in_cell.columns:
        if col in ("confidence", "variability", "correctness", "aum") or col.startswith("partial_"):
            out[col] = in_cell[col].to_numpy()
    if _spurious is not None:
        for col in _spurious.columns:
            out[col] = _spurious[col].iloc[rows].to_numpy()
    return out


def dynamics_examples(
    spec: DynamicsSpec,
    level: LevelSpec,
    fspec: FilterSpec,
    cell: tuple[str, str],
    *,
    n: int = DYN_EXAMPLES,
    seed: int = 0,
    session: SessionData = NO_SESSION,
):
    """Up to ``n`` seeded example rows of one cross-tab cell ``(level, "kept" | "removed")`` for display.

    Columns: ``id``, ``image`` (PNG data URI, for image data), the text columns, ``class``, ``level``,
    ``AFLite`` (kept / removed in round r), the training-dynamics measures and, for text pairs, the spurious
    measures.
    """
    data = dataset(spec.dataset, session=session)
    return _dynamics_examples(
        spec,
        level,
        fspec,
        tuple(cell),
        int(n),
        int(seed),
        dynamics_vs_aflite(spec, level, fspec, session=session),
        data,
        dynamics_spurious_measures(spec.dataset, session=session),
    )


def dynamics_full_input(dspec: DatasetSpec, data: Dataset) -> DatasetSpec:
    """The dataset spec whose representation the dynamics take as the full input.

    The sidebar's (``dspec``), except on a premise/hypothesis pair whose sidebar representation is a partial input
    (AFLite run on the hypothesis alone): then the pair's own view (:func:`pair_full_input`), so the full-input
    model sees the whole example and the hypothesis stays the partial input, never the other way round.
    """
    used = dspec.representation or data.default_representation
    full = pair_full_input(data, used)
    return dspec if full == dspec.representation else DatasetSpec(dspec.key, full)
