"""The Baselines page (ICML 2020 §4.2): AFLite's kept rows against equal-size random and one-shot subsets.

Is the subset harder because of *which* rows it kept, or only smaller? The same model families are
cross-validated on the full data, AFLite's kept rows, a random subset of the same size and the one-shot
single-model filter's subset, plus each subset's representation bias. Small pieces are memoised separately
(in the byte-bounded stores, :func:`._stores.memo`), so the full-data numbers are reused across runs and
adding a model family computes only that family; whole reports sit in a bounded store so the page can tell
"already computed" from "needs the Compute button".

Stop (issue 29: within 2 s everywhere): in the page's background job every piece - a family's cross-validation on
one subset, a subset's bias, the one-shot filter - runs in one child process per comparison
(:class:`aflite_core._child_process.Worker`: the features travel to it once) that Stop ends at once; the same
functions on the same arguments, so the numbers are those computed here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from aflite_core import _child_process
from aflite_core.data.datasets import Dataset
from aflite_core.engine import estimates
from aflite_core.engine.registry import CLASSIFIER_LABELS
from aflite_core.measures import baselines as core_baselines

from .. import settings
from ..admission import heavy
from ..jobs import Outcome, Stopped, as_outcome
from ..specs import NO_SESSION, FilterSpec, SessionData
from . import _stores
from . import baseline_pieces as pieces_
from .datasets import dataset, default_partial_input, pair_full_input, partial_input_choices
from .runs import run_filter

__all__ = [
    "BASELINE_AUTO_SECONDS",
    "BASELINE_DEFAULT_MODELS",
    "BASELINE_MODELS",
    "BaselineOptions",
    "BaselineReport",
    "baseline_estimate",
    "baselines",
    "default_partial_input",
    "describe_baselines",
    "pair_full_input",
    "partial_input_choices",
    "prepare_baselines",
    "stored_baselines",
]

#: classifier families of the Baselines page, cheap ones first, with their labels from the core's registry
BASELINE_MODELS = {name: CLASSIFIER_LABELS[name] for name in ("logistic", "knn", "rbf", "mlp")}
BASELINE_DEFAULT_MODELS = ("logistic", "knn")
#: reports estimated to take longer than this wait for the page's Compute button
BASELINE_AUTO_SECONDS = settings.load().baseline_auto_seconds
#: AFLite's family (Filter page) -> the classifier family of the one-shot filter
_ONE_SHOT_FAMILY = {"linear": "logistic", "logistic": "logistic", "knn": "knn"}


@dataclass(frozen=True)
class BaselineOptions:
    """What the Baselines page compares (with the run's FilterSpec, the cache key of a report)."""

    models: tuple[str, ...] = BASELINE_DEFAULT_MODELS
    partial: str | None = None  # a second representation scored as the partial input
    # the representation scored as the full input (None: the run's Φ); a pair's own view when AFLite ran on the
    # hypothesis alone (:func:`aflite_app.compute.datasets.pair_full_input`); the one-shot filter and the bias
    # are always on the run's Φ
    full: str | None = None
    n_splits: int = 5
    max_train_rows: int = 2000
    seed: int = 0


@dataclass(frozen=True)
class BaselineReport:
    """Accuracies and representation bias of the four subsets (tables for the page's charts)."""

    accuracies: Any  # DataFrame: subset, features, model, n_rows, accuracy, accuracy_std, n_splits, majority_rate, note
    bias: Any  # DataFrame: subset, n_rows, n_scored, mean_predictability, note
    sizes: dict
    notes: tuple
    seconds: float
    train_size: int
    bias_partitions: int
    bias_model: str
    one_shot_model: str
    grouped_by: str | None


def baseline_estimate(
    n_rows: int,
    options: BaselineOptions,
    n_features: int = 64,
    partial_features: int | None = None,
    *,
    n_kept: int | None = None,
    train_size: int | None = None,
    n_partitions: int = 64,
    n_classes: int = 3,
) -> float:
    """Seconds a report takes on this server: the Baselines shape model × the calibrated rates.

    :func:`aflite_core.engine.estimates.estimate_seconds` (``"baselines"``): every family cross-validated on the
    four subsets (kNN's distances of every held-out row dominate at 550,000 rows), the one-shot filter and the
    representation bias, at the rates this process measured (:func:`~aflite_core.engine.estimates.calibrate`
    runs when the first report is computed, inside its heavy-job turn; until then the reference machine's rates
    stand in, so the page's render never waits for a calibration). Decides whether the page computes at once or
    waits for its Compute button. ``n_kept`` defaults to a third of the rows, ``train_size`` to a tenth.
    """
    return estimates.estimate_seconds(
        "baselines",
        calibrated=False,
        **_shape(n_rows, options, n_features, partial_features, n_kept, train_size, n_partitions, n_classes),
    )


def _shape(n_rows, options, n_features, partial_features, n_kept, train_size, n_partitions, n_classes) -> dict:
    return {
        "n_rows": int(n_rows),
        "n_kept": int(n_rows) // 3 if n_kept is None else int(n_kept),
        "train_size": max(int(n_rows) // 10, 1) if train_size is None else int(train_size),
        "n_features": int(n_features),
        "models": tuple(options.models),
        "n_splits": options.n_splits,
        "max_train_rows": options.max_train_rows,
        "n_partitions": int(n_partitions),
        "partial_features": (partial_features or n_features) if options.partial else None,
        "n_classes": max(int(n_classes), 2),
    }


BASELINE_STORE_SIZE = settings.load().baseline_store_size


def _baseline_store() -> _stores.Store:
    """Finished reports by (FilterSpec, BaselineOptions)."""
    return _stores.store("baseline_store", BASELINE_STORE_SIZE)


def stored_baselines(spec: FilterSpec, options: BaselineOptions) -> BaselineReport | None:
    """The report for this run and these options if it was computed before (no computation)."""
    return _baseline_store().recall((spec, options))


def _baseline_groups(data: Dataset):
    """Premise of a sentence pair: kept on one side of every fold (a premise never trains and tests)."""
    if data.pair is None:
        return None, None
    return data.frame[data.pair[0]].astype(str).to_numpy(), data.pair[0]


# -- the pieces, here or in the comparison's child process --------------------------------------------------------
class _Pieces:
    """Where a comparison's pieces run: here, or - with a ``stop`` - in one child process that ``stop()`` ends.

    The child (:class:`aflite_core._child_process.Worker`) starts with the first piece and receives the
    representations, labels and groups once; each piece then sends only its subset's mask. ``stop()`` is asked
    every :data:`~aflite_core._child_process.POLL_S` seconds while a piece runs: True ends the child and raises
    :class:`~aflite_app.jobs.Stopped`. Without a stop, with child processes off (``AFLITE_CHILD_PROCESSES``),
    below :data:`~aflite_core._child_process.MIN_CELLS` feature cells, or where no process can be started, the
    pieces run here (Stop then ends the comparison between pieces, as before). A piece's size is the largest
    representation's cells × ``repeats`` (the folds).
    """

    def __init__(
        self, views: dict[str, Any], y: Any, groups: Any, stop: Callable[[], bool] | None, repeats: int = 1
    ) -> None:
        # a piece's size: the largest representation × its folds (a cross-validation fits one model per fold)
        cells = max((int(np.asarray(X).size) for X in views.values()), default=0) * max(int(repeats), 1)
        self.stop = stop if cells >= _child_process.MIN_CELLS else None
        self.views, self.y, self.groups = views, y, groups
        self.worker: _child_process.Worker | None = None

    def run(self, here: Callable[[], Any], there: Callable[..., Any], rep: str | None, *args: Any) -> Any:
        """``there(state, rep, *args)`` in the child process, else ``here()`` in this thread (the same value)."""
        if self.stop is not None and _child_process.ENABLED:
            if self.worker is None:
                self.worker = _child_process.Worker(
                    pieces_.child_state, self.views, self.y, self.groups, what="the Baselines comparison"
                )
            try:
                return self.worker.call(there, rep or "", *args, stop=self.stop)
            except _child_process.ChildStopped:
                raise Stopped("Stopped.") from None
            except _child_process.NoChildProcess:
                self.stop = None  # no child process here: every piece runs in this thread
        return here()

    def close(self) -> None:
        """End the child process (if one was started)."""
        if self.worker is not None:
            self.worker.close()


@_stores.memo("baseline_subsets", 16)
def _baseline_subsets(
    spec: FilterSpec, seed: int, *, _session: SessionData = NO_SESSION, _pieces: _Pieces | None = None
) -> dict:
    """Masks of the four subsets of one run (same size except the full data) and a note per subset."""
    result = run_filter(spec, session=_session)
    data = dataset(spec.dataset, session=_session)
    n, kept = data.n_rows, np.asarray(result.kept, dtype=bool)
    n_kept = int(kept.sum())
    masks = {
        "full": np.ones(n, dtype=bool),
        "aflite": kept,
        "random": core_baselines.random_subset(n, n_kept, y=data.y, random_state=seed),
    }
    notes = {}
    t = int(result.params["train_size"])
    family = _ONE_SHOT_FAMILY.get(spec.model, "logistic")
    if n_kept >= n:
        masks["one-shot"] = masks["full"]
        notes["one-shot"] = "nothing removed: the one-shot filter keeps every row too"
    else:
        try:
            X, rep = data.representation(spec.dataset.representation), spec.dataset.representation or ""
            args = (n_kept, t, family, seed)
            local = lambda: pieces_.one_shot_piece(X, data.y, *args)  # noqa: E731
            masks["one-shot"] = (
                local() if _pieces is None else _pieces.run(local, pieces_.one_shot_in_child, rep, *args)
            )
        except ValueError as exc:  # e.g. a kept set too small for its training part: compare without it
            notes["one-shot"] = f"one-shot filter not possible here: {exc}"
    return {"masks": masks, "notes": notes, "train_size": t, "one_shot_model": family}


def _subset_key(name: str, spec: FilterSpec, n_kept: int, t: int) -> tuple:
    """What determines a subset's rows (with the dataset and the seed): the cache key of its numbers."""
    if name == "full":
        return ("full",)
    if name == "random":
        return ("random", n_kept)
    if name == "one-shot":
        return ("one-shot", spec.dataset.representation, n_kept, t, spec.model)
    return ("aflite", spec)


@_stores.memo("subset_accuracy", 512)
def _subset_accuracy(
    data_key: str, subset: tuple, view: str, model: str, n_splits: int, cap: int, seed: int, _X, _y, _mask, _groups,
    _pieces: _Pieces | None = None,
) -> dict:  # fmt: skip
    local = lambda: pieces_.cv_piece(_X, _y, _mask, _groups, model, n_splits, cap, seed)  # noqa: E731
    return (
        local() if _pieces is None else _pieces.run(local, pieces_.cv_in_child, view, _mask, model, n_splits, cap, seed)
    )


@_stores.memo("subset_bias", 128)
def _subset_bias(
    data_key: str, subset: tuple, rep: str | None, family: str, t: int, m: int, seed: int, _X, _y, _mask,
    _pieces: _Pieces | None = None,
) -> dict:  # fmt: skip
    """Mean out-of-sample predictability of one subset (aflite_core.predictability: one AFLite scoring phase)."""
    local = lambda: pieces_.bias_piece(_X, _y, _mask, family, t, m, seed)  # noqa: E731
    return (
        local() if _pieces is None else _pieces.run(local, pieces_.bias_in_child, rep or "", _mask, family, t, m, seed)
    )


class _Progress:
    """The report's progress: pieces done over the shape model's estimate, with the time left (RunningEstimate)."""

    def __init__(self, report, n_rows, options, n_features, partial_features, n_classes, n_partitions) -> None:
        self.report = report
        self.rates = estimates.calibrate()
        shape = _shape(n_rows, options, n_features, partial_features, None, None, n_partitions, n_classes)
        self.options, self.n_classes = options, shape["n_classes"]
        self.total = estimates.estimate_seconds("baselines", **shape)
        self.running = estimates.RunningEstimate(total=self.total, prior_seconds_per_unit=1.0)
        self.start, self.done = time.perf_counter(), 0.0

    def cv_seconds(self, model: str, rows: int, d: int) -> float:
        o = self.options
        key, units = estimates.cv_units(
            model, rows, d, n_splits=o.n_splits, max_train_rows=o.max_train_rows, n_classes=self.n_classes
        )
        return self.rates[key] * units

    def one_shot_seconds(self, t: int, d: int) -> float:
        return self.rates["logistic"] * estimates.one_shot_units(t, d, self.n_classes)

    def bias_seconds(self, rows: int, t: int, m: int, d: int) -> float:
        key, units = estimates.bias_units(rows, t, m, d, self.n_classes)
        return self.rates[key] * units + self.rates.get("warmup", 0.0)

    def __call__(self, seconds: float, what: str, total: float | None = None) -> None:
        """``seconds``: the estimate of the piece just finished; ``total``: a revised estimate of the whole."""
        self.done += max(seconds, 0.0)
        elapsed = time.perf_counter() - self.start
        left = self.running.update(self.done, elapsed, total=max(total or self.running.total, self.done))
        fraction = self.done / self.running.total if self.running.total > 0 else 1.0
        text = f"{what} · {elapsed:.0f} s"
        if left is not None and fraction < 1:
            text += f" · about {left:,.0f} s left" if left >= 1 else " · finishing"
        self.report(min(max(fraction, 0.0), 1.0), text)


def baselines(
    spec: FilterSpec,
    options: BaselineOptions,
    *,
    session: SessionData = NO_SESSION,
    progress: Callable[[float, str], Any] | None = None,
    stop: Callable[[], bool] | None = None,
) -> BaselineReport:
    """Compute (or fetch) the Baselines report of a run: accuracies of every family on every subset + bias.

    ``progress(fraction, text)`` is called after every piece (the subsets, each family on each subset, each
    subset's bias): the share done by the shape model's estimate and a line with the time left
    (:class:`aflite_core.engine.estimates.RunningEstimate`, refined by the pieces' actual times). With ``stop``
    (``stop() -> bool``) the pieces run in a child process that ``stop()`` ending True terminates at once, raising
    :class:`~aflite_app.jobs.Stopped` (:class:`_Pieces`); the numbers are the same.
    """
    hit = stored_baselines(spec, options)
    if hit is not None:
        return hit
    if not options.models:
        raise ValueError("Choose at least one model family to compare.")
    unknown = [m for m in options.models if m not in BASELINE_MODELS]
    if unknown:
        raise ValueError(f"Unknown model families {unknown}; choose among {list(BASELINE_MODELS)}.")
    start = time.perf_counter()
    data = dataset(spec.dataset, session=session)
    if options.full is not None and options.full not in data.representations:
        raise ValueError(
            f"Dataset '{data.name}' has no representation {options.full!r} to use as the full input; available: "
            f"{list(data.representations)}."
        )
    if options.partial is not None and options.partial not in data.representations:
        raise ValueError(
            f"Dataset '{data.name}' has no representation {options.partial!r} to use as the partial "
            f"input; available: {list(data.representations)}."
        )
    d_full = int(data.representation(spec.dataset.representation).shape[1])
    d_partial = int(data.representation(options.partial).shape[1]) if options.partial else None
    d_view = int(data.representation(options.full).shape[1]) if options.full else d_full  # the full view's CV
    m = int(spec.n_partitions) if spec.model == "linear" else min(int(spec.n_partitions), 16)
    groups, grouped_by = _baseline_groups(data)
    reps = {spec.dataset.representation, options.full or spec.dataset.representation, options.partial} - {None, ""}
    views_x = {r: data.representation(r) for r in reps}
    if spec.dataset.representation in (None, ""):  # the dataset's default representation
        views_x[""] = data.representation(spec.dataset.representation)
    pieces = _Pieces(views_x, data.y, groups, stop, repeats=options.n_splits)
    try:
        tracker = None
        if progress is not None:
            tracker = _Progress(progress, data.n_rows, options, d_full, d_partial, len(data.classes), m)
            tracker(0.0, "Drawing the random subset and the one-shot filter")
        subsets = _baseline_subsets(spec, options.seed, _session=session, _pieces=pieces)
        masks, t = subsets["masks"], subsets["train_size"]
        n_kept = int(masks["aflite"].sum())
        if tracker is not None:  # the subsets' sizes and t are known now: the estimate of the whole is revised
            first = tracker.one_shot_seconds(t, d_full)
            rest = sum(
                tracker.cv_seconds(model, int(mask.sum()), d)
                for mask in masks.values()
                for d in (d_view, d_partial)
                if d
                for model in options.models
            ) + sum(tracker.bias_seconds(int(mask.sum()), t, m, d_full) for mask in masks.values())
            tracker(first, "Subsets drawn", total=first + rest)
        views = {"full input": options.full or spec.dataset.representation}
        if options.partial:
            views["partial input"] = options.partial
        rows = []
        for name, mask in masks.items():
            skey = _subset_key(name, spec, n_kept, t)
            for view, rep in views.items():
                X = data.representation(rep)
                for model in options.models:
                    rec = _subset_accuracy(
                        data.name + ":" + spec.dataset.key,
                        skey,
                        rep or "",
                        model,
                        options.n_splits,
                        options.max_train_rows,
                        options.seed,
                        X,
                        data.y,
                        mask,
                        groups,
                        _pieces=pieces,
                    )
                    if tracker is not None:
                        label = BASELINE_MODELS.get(model, model)
                        tracker(
                            tracker.cv_seconds(model, int(mask.sum()), int(X.shape[1])),
                            f"{label} on the {name} subset ({view})",
                        )
                    note = "; ".join(x for x in (subsets["notes"].get(name, ""), rec.get("note", "")) if x)
                    rows.append(
                        {
                            "subset": name,
                            "features": view,
                            "model": model,
                            "n_rows": int(rec["n_rows"]),
                            "accuracy": float(rec["accuracy"]),
                            "accuracy_std": float(rec["accuracy_std"]),
                            "n_splits": int(rec["n_splits"]),
                            "majority_rate": float(rec["majority_rate"]),
                            "note": note,
                        }
                    )
        X = data.representation(spec.dataset.representation)
        bias_rows = []
        for name, mask in masks.items():
            rec = _subset_bias(
                data.name + ":" + spec.dataset.key,
                _subset_key(name, spec, n_kept, t),
                spec.dataset.representation,
                spec.model,
                t,
                m,
                options.seed,
                X,
                data.y,
                mask,
                _pieces=pieces,
            )
            bias_rows.append({"subset": name, **rec})
            if tracker is not None:
                tracker(
                    tracker.bias_seconds(int(mask.sum()), t, m, d_full), f"Representation bias of the {name} subset"
                )
        notes = [note for name, note in subsets["notes"].items() if name not in masks]
        if n_kept >= data.n_rows:
            notes.append("AFLite removed no rows in this run: every subset is the full data.")
        report = BaselineReport(
            accuracies=pd.DataFrame(rows),
            bias=pd.DataFrame(bias_rows),
            sizes={name: int(mask.sum()) for name, mask in masks.items()},
            notes=tuple(notes),
            seconds=time.perf_counter() - start,
            train_size=t,
            bias_partitions=m,
            bias_model=spec.model,
            one_shot_model=subsets["one_shot_model"],
            grouped_by=grouped_by,
        )
        _baseline_store().keep((spec, options), report)
        return report
    finally:
        pieces.close()  # the comparison's child process ends with it


def prepare_baselines(
    spec: FilterSpec, options: BaselineOptions, *, session: SessionData = NO_SESSION
) -> Callable[[Callable], Outcome]:
    """The comparison of :func:`baselines` as a heavy background job (:func:`aflite_app.jobs.run_in_background`).

    It waits its turn in the server's heavy-job queue; every piece reports ``(fraction, text)`` to the job's
    callback, and a Stop ends the piece that runs (a family's cross-validation on one subset, a subset's bias, the
    one-shot filter: in the comparison's child process, :class:`_Pieces`) at once; pieces already computed stay
    cached, the report is stored once complete.
    The job's result is an :class:`~aflite_app.jobs.Outcome`: the report, stopped, or a one-sentence error.
    """

    def target(callback: Callable) -> Outcome:
        def report(fraction: float, text: str) -> None:
            if not callback((fraction, text)):
                raise Stopped("Stopped.")

        # Stop answers at once: a stopped comparison's outcome is known before its piece has ended (issue 29)
        offer = getattr(callback, "offer_partial", None)
        if offer is not None:
            offer(lambda: True, lambda _: Outcome(stopped=True))
        stop = getattr(callback, "stopping", None)  # each piece in a child process that Stop ends
        return as_outcome(
            lambda: baselines(spec, options, session=session, progress=report, stop=stop), "The Baselines comparison"
        )

    return heavy(target, "a Baselines comparison")


def describe_baselines(estimate: float) -> Callable[[Any, float, Any], tuple[float, str]]:
    """The progress bar of a Baselines job: ``describe(progress, elapsed, step) -> (fraction, text)``.

    ``progress`` is the last ``(fraction, text)`` the comparison reported; before its first, and while a report
    has no time left yet, the time left is the page's estimate (``estimate`` seconds) less the time so far.
    """

    def describe(progress: Any, elapsed: float, step: Any) -> tuple[float, str]:
        fraction, text = progress if progress is not None else (0.0, f"Preparing the comparison · {elapsed:.0f} s")
        if "left" not in text and "finishing" not in text:
            left = estimate - elapsed
            text += (
                f" · about {left:,.0f} s left" if left >= 1 else " · taking longer than estimated (the server is busy)"
            )
        return float(fraction), text

    return describe
