"""Session state in one place: every key and its default, and the writers (the specs live in :mod:`.specs`).

Who touches ``st.session_state``: pages (their own widgets and the keys below), :mod:`aflite_app.ui` (the
sidebar) and the writer functions here, which take the session as an argument (``st.session_state`` from a
widget callback, or a plain dict in a test). The compute layer never imports this module: it gets this session's own
data (uploaded datasets, opened run directories) as a :class:`~aflite_app.specs.SessionData` value, built by
:func:`session_data` and handed over by the page layer (:mod:`aflite_app.ui`).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import streamlit as st

from aflite_core.engine.registry import ADVERSARY_LABELS

from . import settings
from .specs import BUNDLED, DatasetSpec, FilterSpec, SessionData  # noqa: F401 (re-exported: pages import them here)

if TYPE_CHECKING:  # only for type hints: state stays importable before the core's heavier modules
    from aflite_core import AFLiteResult
    from aflite_core.data.datasets import Dataset

#: adversary families offered on the Filter page: the core registry's names and labels
MODEL_FAMILIES = dict(ADVERSARY_LABELS)

STRATEGY_LABELS = {
    "slice": "Greedy slicing (AFLite, top-k per round)",
    "sample": "Slice sampling (Gumbel top-k ∝ p)",
    "greedy": "Greedy, one row per round (slow)",
}

# -- session-state keys every page may read ----------------------------------------------------------------------
DATASET = "dataset_key"  # str: key of the chosen dataset
REPRESENTATION = "representation"  # str or None
UPLOADS = "uploads"  # dict: key -> Dataset (this session's uploads and opened run directories)
RUN_DIRS = "run_dirs"  # dict: key -> {"spec": FilterSpec, "result": AFLiteResult} of opened CLI runs
RUN = "background_run"  # BackgroundRun of the Filter page
# dict {"round": int | None, "class": str | None, "status": "removed" | "stayed"}: a chart bar clicked, for Inspect;
# or {"rows": [row positions], "what": str}: rows picked on the Compare runs page (open_rows_in_inspect)
INSPECT_FILTER = "inspect-filter"
LAST = "last_result_spec"  # FilterSpec of the current run: the result shown last (a stopped one too: issue 29)
# dict (aflite_app.links, through link_state): "applied" - the URL's view was applied to this session (once, at
# its start); "run" - the dataset whose Filter parameters came with a link (its run shows on every page);
# "tokens" - upload key -> its token in the server's upload vault
LINK = "link"

#: how many uploaded datasets a session keeps (the oldest unused one is dropped first)
MAX_SESSION_UPLOADS = settings.load().max_session_uploads

# -- widgets of one page whose key is read or written outside the widget (a callback, a writer below) -----------
# Filter: the form's widgets are keyed per dataset (filter_key); an opened run directory pre-sets them
TAU = "tau"
FILTER_WIDGETS = ("target", "train", "m", "seed", "k", "strategy", "model")
# Data: the run-directory tab (read by the "Open run" callback)
RUN_DIR = "run-dir"  # selectbox: the run directory chosen below the run root
RUN_FEATURES_FILE = "run-features-file"  # file uploaders of a run's inputs
RUN_LABELS_FILE = "run-labels-file"
# Data: the SNLI / MultiNLI tab (read by the Fetch callback)
NLI_WHICH = "nli-which"  # selectbox: (dataset, split) to fetch
NLI_ROWS = "nli-rows"  # number input: the row cap of the fetch
NLI_SEED = "nli-seed"  # number input: the seed of the capped sample
# Inspect
INSPECT_UPLOAD = "inspect-upload"  # file uploader of a run's zip (read by its on_change callback)
INSPECT_WHICH = "inspect-which"  # radio: which run is shown, "filter" or "loaded" (set when a zip is opened)
INSPECT_STABILITY_ON = "inspect-stability-on"  # checkbox: compute removal stability (read above the checkbox)
INSPECT_N_SEEDS = "inspect-n-seeds"  # number input: seeds of the stability report (read above it)
#: the Inspect page's tabs, in order: st.tabs(key="inspect-tab", on_change="rerun") keeps the open tab's label under
#: that key and only the open tab is computed (a test opens one by setting the key to its label)
INSPECT_TAB_LABELS = (
    "Rows",
    "Label-revealing words",
    "What the removed rows share",
    "Classes",
    "Stability across seeds",
    "Download / open a run",
)
# Synthetic circles: the round stepper (set by the Play button and the stepper's timer)
SYN_ROUND = "syn-round"  # slider: the round shown
SYN_STEP_DATA = "syn-step-data"  # radio: the dataset stepped through
# Evaluation sets: the page's study run (jobs.run_in_background; the tests wait on it)
EVALSETS_RUN = "evalsets_run"  # BackgroundRun of the study

# -- what one page keeps between reruns that is no widget: one dict per page (state.page_state), entries below -----
# A background wait of a page is kept under ``(page key, entry)`` (jobs.run_in_background stores it in that dict).
# Data: "run_error" - str or None: why the last "Open run" failed; "nli_request" - the NliSpec the Fetch button
# asked for last (None: nothing asked yet); "nli_run" / "embed_run" - BackgroundRun: this session's wait for the
# fetch / for its embedding job; "keep_premise" - bool (default True): Filter runs on an NLI pair dataset keep
# each premise's rows together (issue 28); "group_duplicates" - set of dataset keys whose Filter runs also keep the
# duplicate groups the Data page found together; "dup_run" - BackgroundRun: this session's duplicate search;
# "dup_asked" - set of dataset keys whose duplicate search was asked for (above the interactive size it waits for that);
# "embed_request" - the EmbedSpec whose 'Start embedding' was pressed (issue 29)
DATA_PAGE = "data-page"
# Inspect: "loaded" - {"result", "name", "digest", "dataset"} of the run opened from a zip; "seen" - (file id,
# error message or None) of the last upload processed; "stability_run" - BackgroundRun: the stability seeds;
# "artifacts" - BackgroundRun: the job of "What the removed rows share" (its Outcome: the table or stopped);
# "words" - BackgroundRun: the job of "Label-revealing words" (its Outcome: (statistics, shares) or stopped);
# "explain_picked" - the id of the row last clicked in the rows table (a new click fills the explained row's id)
INSPECT_PAGE = "inspect-page"
# Evaluation sets: "shown" - EvalSetSpec -> the EvalStudySpec submitted last for it; "uploaded" - dataset key ->
# EvalSetSpec of its uploaded evaluation table; "setup_run" - BackgroundRun building a split with sentence
# embeddings (issue #17; its Outcome: the setup or stopped)
EVALSETS_PAGE = "evalsets_page"
# Synthetic circles: "playing" - the round stepper is playing; "timer" - whether the stepper fragment was declared
# with a timer in this script run; "ood_request" - the CirclesOODSpec the out-of-distribution button asked for last
SYN_PAGE = "syn-page"
# Training dynamics (issue #17: Stop, progress, one job per request): "record_request" / "validate_request" - the
# DynamicsSpec / ValidationSpec the Record / "Validate the levels" button asked for; "record_run" /
# "validate_run" - BackgroundRun: this session's wait for the recording / the validation
DYN_PAGE = "dyn-page"
# Filter (issue 29): "partial" - (FilterSpec, AFLiteResult) of the current run when it was stopped (partial runs
# are never stored server-wide: this is how the sidebar and the other pages find it); "confirmed" - the FilterSpec
# whose long run the user agreed to start (the confirmation before a run estimated over CONFIRM_SECONDS)
FILTER_PAGE = "filter-page"
# Predictability (issue 27, the null): "null_request" - the FilterSpec (null_permutations = K) the "Compute the
# null" button asked for last; "null_run" - BackgroundRun: this session's wait for that run
PRED_PAGE = "pred-page"
# Compare runs (issue 28): "a" / "b" - the ident of the run chosen as A / B (kept while another page is open);
# "job" - BackgroundRun: the comparison (its Outcome: the RunDiff, stopped, or why the runs cannot be compared)
COMPARE_PAGE = "compare-page"
# Guided demo (issue 29): "step" - the step shown (1-3; in the URL as ?step=, aflite_app.page_views.PAGE_VIEWS);
# "url_applied" - the link's step was read (once per session); "tau" - step 1's τ; "word" - the "token → label" pair
# picked in step 2; "row" - which removed row step 3 explains (an index into its candidates); "shown" - the step the
# page last scrolled to the top for
DEMO_PAGE = "demo-page"
# Baselines (issue 25: the comparison in the background, with Stop): "asked" - the (FilterSpec, BaselineOptions)
# whose Compute was pressed (or that started without asking); "run" - BackgroundRun: this session's comparison
BASELINES_PAGE = "bl-page"


def page_state(session: MutableMapping, page: str) -> dict:
    """The dict a page keeps its own entries in (:data:`DATA_PAGE`, :data:`INSPECT_PAGE`, …), created on first use."""
    return session.setdefault(page, {})


def group_options(session: MutableMapping, dataset_key: str) -> dict[str, bool]:
    """The Data page's group choices for Filter runs on a dataset (``keep_premise``, ``group_duplicates``)."""
    page = session.get(DATA_PAGE) or {}
    return {
        "keep_premise": bool(page.get("keep_premise", True)),
        "group_duplicates": dataset_key in page.get("group_duplicates", ()),
    }


def filter_key(name: str, dataset_key: str) -> str:
    """Key of a Filter-page widget (one of :data:`FILTER_WIDGETS`) for a dataset: each dataset keeps its own."""
    return f"{name}-{dataset_key}"


def link_state(session: MutableMapping) -> dict:
    """The session's shared-link record (:data:`LINK`), created on first use."""
    return session.setdefault(LINK, {"applied": False, "run": None, "tokens": {}})


def embedding_map_key(dataset_key: str, representation: str | None) -> str:
    """Key of the Embedding map chart of a dataset and representation (its selection is keyed after it)."""
    return f"emb-map-{dataset_key}-{representation}"


def embedding_selection_key(map_key: str) -> str:
    """Key of the rows selected on a map (an :class:`aflite_app.selection.MapSelection`)."""
    return f"{map_key}-selection"


# -- defaults and the one reader of the compute layer ------------------------------------------------------------
def init_session(session: MutableMapping) -> None:
    """Set every session default once (app.py calls this with ``st.session_state`` before the pages run)."""
    defaults = {
        DATASET: "digits",
        REPRESENTATION: None,
        UPLOADS: {},
        RUN_DIRS: {},
        RUN: None,
        LAST: None,
    }
    for key, value in defaults.items():
        if key not in session:
            session[key] = value


def session_data() -> SessionData:
    """The session's uploaded datasets, opened run directories and partial current run (read-only views)."""
    partial = (st.session_state.get(FILTER_PAGE) or {}).get("partial")
    return SessionData(
        MappingProxyType(st.session_state.get(UPLOADS) or {}),
        MappingProxyType(st.session_state.get(RUN_DIRS) or {}),
        MappingProxyType({partial[0]: partial[1]} if partial else {}),
    )


# -- writers (from widget callbacks, before the sidebar renders) -------------------------------------------------
def select_dataset(session: MutableMapping, key: str) -> None:
    """Select a bundled or registered dataset; its default representation is chosen by the sidebar."""
    session[DATASET] = key
    session[REPRESENTATION] = None


def register_upload(session: MutableMapping, key: str, data: Dataset) -> None:
    """Add an uploaded dataset to this session and select it.

    The sidebar lists every registered upload; at most :data:`MAX_SESSION_UPLOADS` are kept (the oldest not
    selected is dropped first).
    """
    uploads = session.get(UPLOADS)
    if uploads is None:
        uploads = {}
        session[UPLOADS] = uploads
    uploads.pop(key, None)
    uploads[key] = data
    while len(uploads) > MAX_SESSION_UPLOADS:
        oldest = next(k for k in uploads if k != key)
        del uploads[oldest]
    select_dataset(session, key)


def register_run_directory(
    session: MutableMapping, key: str, data: Dataset, spec: FilterSpec, result: AFLiteResult
) -> None:
    """Make an opened run the current dataset and run of this session.

    The Filter page then shows this run: its widgets start at the run's parameters.
    """
    session.setdefault(UPLOADS, {})[key] = data
    session.setdefault(RUN_DIRS, {})[key] = {"spec": spec, "result": result}
    select_dataset(session, key)
    set_last_run(session, spec)
    set_filter_widgets(session, spec, key)


def set_filter_widgets(session: MutableMapping, spec: FilterSpec, dataset_key: str | None = None) -> None:
    """Set the Filter page's τ and parameter widgets (of ``dataset_key``, default the spec's dataset) to ``spec``'s.

    An opened run directory starts them at its run's; "Keep the current run" (the confirmation before a long
    run) puts them back to the current run's.
    """
    values = (
        spec.target_size,
        spec.train_size,
        spec.n_partitions,
        spec.seed,
        spec.slice_size,
        spec.strategy,
        spec.model,
    )
    for name, value in zip(FILTER_WIDGETS, values, strict=True):
        session[filter_key(name, dataset_key or spec.dataset.key)] = value
    session[TAU] = spec.tau


def init_filter_widgets(session: MutableMapping, dataset_key: str, defaults: Mapping[str, int]) -> None:
    """Start the Filter page's widgets of a dataset at ``defaults`` unless set before (e.g. by an opened run).

    ``defaults`` are :func:`aflite_app.compute.runs.filter_defaults`; the seed starts at 0, τ at 0.75, the
    strategy at greedy slicing and the model family at the default (``linear``).
    """
    for name, value in (
        ("target", defaults["target_size"]),
        ("train", defaults["train_size"]),
        ("m", defaults["n_partitions"]),
        ("seed", 0),
        ("k", defaults["slice_size"]),
        ("strategy", "slice"),
        ("model", "linear"),
    ):
        session.setdefault(filter_key(name, dataset_key), value)
    session.setdefault(TAU, 0.75)


def set_filter_tau(session: MutableMapping, tau: float) -> None:
    """Set the Filter page's τ (its slider's value) to ``tau`` on the 0.01 grid (the Predictability page's button)."""
    session[TAU] = round(float(tau), 2)


def set_last_run(session: MutableMapping, spec: FilterSpec | None, partial: AFLiteResult | None = None) -> None:
    """Record the current run: the run the Filter page shows, for the sidebar and every other page.

    ``partial``: the stopped run's result when ``spec`` was stopped (a partial run is never stored server-wide, so
    it is kept here, in the Filter page's dict, until another run is current; :func:`session_data` hands it to
    the compute layer). None as ``spec``: no current run (a run stopped before its first round finished).
    Another run than before drops the rows a chart bar asked Inspect for (:data:`INSPECT_FILTER`): they were that
    run's round and class, and would narrow another run's table without the user knowing why.
    """
    if session.get(LAST) != spec:
        session.pop(INSPECT_FILTER, None)
    session[LAST] = spec
    page = session.get(FILTER_PAGE)
    if partial is not None and spec is not None:
        page_state(session, FILTER_PAGE)["partial"] = (spec, partial)
    elif page is not None and (page.get("partial") or (None,))[0] != spec:
        page.pop("partial", None)  # another run is current: the stopped one is gone


def keep_inspect_run(session: MutableMapping, record: dict, file_id: str) -> None:
    """Keep a run opened from a zip on the Inspect page (and show it)."""
    page = page_state(session, INSPECT_PAGE)
    page["loaded"] = record
    page["seen"] = (file_id, None)
    session[INSPECT_WHICH] = "loaded"


def forget_inspect_run(session: MutableMapping) -> None:
    """Close the run opened on the Inspect page; the page shows the Filter page's run again."""
    page_state(session, INSPECT_PAGE).pop("loaded", None)
    session[INSPECT_WHICH] = "filter"


def open_in_inspect(session: Any, round_no: int | None, class_name: str | None, status: str = "removed") -> None:
    """Ask the Inspect page to show the rows of one round and class (a bar clicked on Filter or Predictability).

    ``status`` "removed": the rows removed in that round; "stayed": the rows scored in it and not removed in it.
    """
    session[INSPECT_FILTER] = {
        "round": None if round_no is None else int(round_no),
        "class": class_name,
        "status": "stayed" if status == "stayed" else "removed",
    }


def open_rows_in_inspect(session: Any, rows: list[int], what: str) -> None:
    """Ask the Inspect page to show these rows (positions) of the Filter page's run, e.g. picked on Compare runs.

    ``what`` names them in Inspect's notice ("12 rows removed by A only"). Inspect shows the Filter run, not an
    opened zip, while the filter holds.
    """
    session[INSPECT_FILTER] = {"round": None, "class": None, "rows": [int(r) for r in rows], "what": str(what)}
    session[INSPECT_WHICH] = "filter"
