"""AFLite runs of the Filter page: started in the page's thread or a background thread, kept in one store.

Every other page shows the Filter page's current run; they fetch it here by its
:class:`~aflite_app.state.FilterSpec` (:func:`run_filter`). A run directory opened on the Data page is found
first (:func:`stored_result`), so its result is never recomputed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from aflite_core import AFLiteResult
from aflite_core.filtering import execute_run, plan_run
from aflite_core.stability import class_impact as _class_impact

from .. import settings
from ..state import FilterSpec, session_data
from . import _stores
from .datasets import dataset

__all__ = [
    "RESULT_STORE_SIZE",
    "check_form",
    "class_impact",
    "filter_defaults",
    "prepare_run",
    "run_filter",
    "stored_result",
    "with_class_names",
]

RESULT_STORE_SIZE = settings.load().result_store_size


@st.cache_resource(max_entries=1)
def _result_store() -> _stores.LRUStore:
    """Finished runs by spec, shared by the cached path and background runs."""
    return _stores.LRUStore(RESULT_STORE_SIZE)


def stored_result(spec: FilterSpec) -> AFLiteResult | None:
    """A finished run for this spec, if any (no computation): opened run directories first, then the store."""
    for entry in session_data().run_dirs.values():
        if entry["spec"] == spec:
            return entry["result"]
    return _result_store().recall(spec)


def filter_defaults(n_rows: int, n_classes: int) -> dict[str, int]:
    """Starting values of the Filter form for a dataset of ``n_rows`` rows."""
    target = max(n_classes + 2, round(0.5 * n_rows))
    train = max(n_classes + 1, min(round(0.25 * n_rows), target - 1))
    return {
        "target_size": int(target),
        "train_size": int(train),
        "n_partitions": 64,
        "slice_size": int(max(1, round(0.05 * n_rows))),
    }


def _prepared(spec: FilterSpec):
    data = dataset(spec.dataset)
    _stores.check_rows(
        data.n_rows,
        instead="Run `python -m aflite_core filter ... --out RUN_DIR` and open the run directory on the Data page.",
    )
    return data.representation(spec.dataset.representation), data.y, data.ids


def prepare_run(spec: FilterSpec) -> Callable[[Callable], AFLiteResult]:
    """Everything a background thread needs to run ``spec``, validated now (threads see no session state).

    The run is planned here, in the page's thread (every argument checked once, so bad parameters show as
    ``st.error`` at once); the thread only executes it.
    """
    X, y, ids = _prepared(spec)
    data = dataset(spec.dataset)
    check_form(spec, data.n_rows, data.n_classes)
    names = tuple(data.classes)
    store = _result_store()
    run = plan_run(X, y, model=spec.model, random_state=spec.seed, ids=ids, **spec.as_kwargs())

    def target(callback: Callable) -> AFLiteResult:
        run.callback, run.on_step = callback, getattr(callback, "step", None)
        result = with_class_names(execute_run(run), names)
        if not result.stopped:  # a partial run is shown, but never served as the answer to the full request
            store.keep(spec, result)
        return result

    return target


def check_form(spec: FilterSpec, n_rows: int, n_classes: int) -> None:
    """The Filter form's rules, checked with its own field names (ValueError with what to change)."""
    n, t = int(spec.target_size), int(spec.train_size)
    if not n_classes < n < n_rows:
        raise ValueError(
            f"Target size n is {n:,}, but it must lie between {n_classes + 1:,} and {n_rows - 1:,} (the dataset has "
            f"{n_rows:,} rows and {n_classes} classes). Change it under Parameters."
        )
    if not n_classes < t < n:
        raise ValueError(
            f"Training rows per model t is {t:,}, but it must be below the target size n ({n:,}) and above the "
            f"number of classes ({n_classes}): every model trains on fewer rows than the filter keeps. Lower t "
            "or raise n under Parameters."
        )


def with_class_names(result: AFLiteResult, names: tuple) -> AFLiteResult:
    """The run with its classes named as the dataset names them (the engine runs on the label codes 0..C-1).

    Every page, chart, warning and export then shows class names, never codes; the codes (``result.y``) and
    every array stay exactly as computed.
    """
    if tuple(result.classes) != tuple(range(len(names))) or tuple(result.classes) == names:
        return result
    return replace(result, classes=names)


def run_filter(spec: FilterSpec, callback: Callable | None = None) -> AFLiteResult:
    """Run (or fetch) AFLite for ``spec`` in this thread."""
    hit = stored_result(spec)
    if hit is not None:
        return hit
    return prepare_run(spec)(callback or (lambda _p: True))


def class_impact(result: AFLiteResult, threshold: float = 0.5):
    """Per-class counts before/after with a warning flag (see :func:`aflite_core.stability.class_impact`).

    Takes the result the page already has — a stopped (partial) run is never stored, so fetching it again by
    its spec would re-run the whole filter. Not cached: a group-by over at most 60k rows costs milliseconds,
    and a cache keyed by the spec would serve a partial run's counts for the full run of the same spec.
    """
    return _class_impact(result.labels, result.kept, threshold=threshold)
