"""Small Streamlit helpers shared by the pages: the error boundary, the current dataset and run, the sidebar.

Pages import only this module, :mod:`aflite_app.state` and their own compute and chart modules; what several
pages need of the shared compute modules (the sidebar's dataset, the Filter page's run) comes through here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import streamlit as st

from aflite_core import AFLiteResult
from aflite_core.data.datasets import Dataset
from aflite_core.engine import estimates

from . import links, state

# the background-job modules (admission, jobs): pages call these through ui (ui.run_in_background, ui.heavy_turn, …)
from .admission import HeavyJob, heavy_turn, session_alive  # noqa: F401
from .compute import datasets, run_costs, run_devices, runs
from .jobs import errors, remaining_text, run_in_background, sync_wait, time_left_text  # noqa: F401

# the one escape helper: user text (names, labels, ids) in Markdown goes through ui.md, messages through
# ui.message, in a Plotly text through ui.plotly_text
from .markup import md, message, plotly_text  # noqa: F401
from .state import (
    DATASET,
    FILTER_PAGE,
    FILTER_WIDGETS,
    LAST,
    LINK,
    REPRESENTATION,
    RUN,
    TAU,
    DatasetSpec,
    FilterSpec,
    SessionData,
    filter_key,
    page_state,
    set_last_run,
)

#: the sidebar's "Current run" box of the script run in progress (a script run is one thread): the Filter run's
#: start writes "Running" into it before the page stops for the progress bar (issue 29: one truth per run)
_SCRIPT = threading.local()


def session_data() -> SessionData:
    """The session's own data (uploads, opened run directories) for compute: every page passes it as ``session=``.

    Compute never imports the session module or reads ``st.session_state``; what it needs of the session is this
    argument (:func:`aflite_app.state.session_data`).
    """
    return state.session_data()


@st.cache_resource(max_entries=1)
def upload_vault() -> links.UploadVault:
    """The server-wide :class:`~aflite_app.links.UploadVault` (uploads reopened by a link or a reload)."""
    return links.UploadVault.from_env()


def page_guard() -> None:
    """Make a page opened by a direct link run inside the app, with its navigation and sidebar.

    Streamlit keeps its legacy "pages/ folder" mode until ``st.navigation`` has run once in the server
    process, so on a fresh server a deep link such as ``/filter`` would run the page file alone (no sidebar,
    no wide layout). Every page calls this first: it switches that mode off and reruns, and the rerun goes
    through ``app.py`` to the same page.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the legacy mode: nothing to do
        return
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def current_run(what: str) -> tuple[FilterSpec, AFLiteResult, Dataset]:
    """The Filter page's current run on the sidebar's dataset: ``(spec, result, dataset)``.

    A shared link or a reload carries the Filter parameters (:mod:`aflite_app.links`): the run they describe is
    fetched (stored, or read off a stored run at a lower τ), or run here with the Filter page's progress bar and
    Stop button (:func:`filter_run_spec`, :func:`filter_result`). Without any parameters, shows ``Run AFLite on
    the Filter page first; <what>.`` with a link and stops the page.
    """
    spec = filter_run_spec(what)
    if spec is None:
        st.info(f"Run AFLite on the Filter page first; {what}.")
        st.page_link("pages/filter.py", label="Go to Filter")
        st.stop()
    with errors():
        mine = session_data()
        result = runs.run_filter(spec, session=mine)  # the session's partial current run too: never run again
        partial_note(result)
        return spec, result, datasets.dataset(spec.dataset, session=mine)


def partial_note(result: AFLiteResult | None) -> None:
    """Say on a page that the current run it shows is partial (stopped on the Filter page); nothing otherwise."""
    if result is not None and result.stopped:
        st.info(
            f"The current run is partial: it was stopped after round {result.n_rounds} on the Filter page "
            f"({result.n_removed:,} rows removed, {result.n_kept:,} kept). Run it to the end there for the full run."
        )


def filter_run_spec(what: str) -> FilterSpec | None:
    """The spec of the Filter page's run on the sidebar's dataset and representation; None when there is none.

    The run shown last when it is on this dataset; else the run a shared link or a reload named (its Filter
    parameters are in the URL): fetched from the store, or run here with the Filter page's progress bar and Stop
    button, and then recorded as the run shown on every page. A linked run that was stopped says so (``what``
    says what the page does with a run) and stops the page. For pages that also work without a run (Inspect,
    Training dynamics) and show their own "no run" hint; :func:`current_run` for the others.
    """
    spec = st.session_state.get(LAST)
    dspec = current_dataset_spec()
    if spec is not None and spec.dataset == dspec:
        partial_note(runs.result(spec, session=session_data()))
        return spec
    if (st.session_state.get(LINK) or {}).get("run") != dspec.key:  # no link named this dataset's run
        return None
    spec = filter_spec_from_widgets(dspec)
    if spec is None:
        return None
    with errors():
        result = filter_result(spec, datasets.dataset(dspec, session=session_data()).n_rows)
    if result.stopped and result.n_rounds == 0:
        st.info(f"That run was stopped before its first round finished; {what} once it has run on the Filter page.")
        st.page_link("pages/filter.py", label="Go to Filter")
        st.stop()
    record_current_run(spec, result)
    partial_note(result)
    return spec


def record_current_run(spec: FilterSpec, result: AFLiteResult) -> None:
    """Make ``spec`` (its ``result``) the session's one current run: the sidebar and every page read it.

    A stopped run is the current run too, kept as this session's partial run (it is never stored server-wide);
    one stopped before its first round finished is no run at all.
    """
    if result.stopped and result.n_rounds == 0:
        set_last_run(st.session_state, None)
    else:
        set_last_run(st.session_state, spec, result if result.stopped else None)


def current_filter_result() -> tuple[FilterSpec, AFLiteResult] | None:
    """The session's current run and its result (a partial one included), None when there is none.

    The one reader of "the current run" for the sidebar (:func:`run_summary`): the spec the Filter page showed
    last (:data:`~aflite_app.state.LAST`) looked up by :func:`aflite_app.compute.runs.result`, which finds a stored
    run, one read off a stored run, or this session's stopped run - the Filter page, Inspect and the other pages
    read the same.
    """
    spec = st.session_state.get(LAST)
    if spec is None:
        return None
    result = runs.result(spec, session=session_data())
    return None if result is None else (spec, result)


def running_filter_spec() -> FilterSpec | None:
    """The spec of the Filter run this session is computing now (its progress is on the Filter page), else None."""
    run = st.session_state.get(RUN)
    if run is None or run.done or not isinstance(run.key, FilterSpec):
        return None
    return run.key


def _shape_of(spec: FilterSpec, mine: SessionData) -> tuple[int | None, int]:
    """The features' width and the classes of the run's dataset, for its time estimate (None, 3 if unknown)."""
    try:
        data = datasets.dataset(spec.dataset, session=mine)
        rep = spec.dataset.representation or data.default_representation
        return int(data.representation(rep).shape[1]), max(len(data.classes), 2)
    except Exception:  # the run itself reports what is wrong with the data; the estimate just goes without
        return None, 3


def filter_result(spec: FilterSpec, n_rows: int) -> AFLiteResult:
    """The Filter page's run for ``spec``: :func:`aflite_app.compute.runs.result`, else AFLite in the background.

    The one τ path of every page: a stored run, or one read off a stored run at a lower τ, comes back at once
    (no AFLite run); otherwise the run starts in the background with the Filter page's progress bar and Stop
    button (the page stops until it is done), and the finished run is stored, so every higher τ is read off it.
    """
    mine = session_data()
    hit = runs.result(spec, session=mine)
    if hit is not None:
        _stop_unwanted_heavy_run(spec)
        return hit
    n_features, n_classes = _shape_of(spec, mine)
    confirm_long_run(spec, n_rows, n_features, n_classes)

    def prepare(s: FilterSpec) -> Callable:
        target = runs.prepare_run(s, session=mine)  # checked here: a refused run never reads "Running"
        _show_running(s)
        return target

    return run_in_background(
        RUN,
        spec,
        prepare,
        describe_filter_run(spec, n_rows, n_features, n_classes),
        stop_key="stop-run",
        stop_help="Stop now and keep the rounds completed so far",
        stopping="Stopping…",
    )


def _duration(seconds: float) -> str:
    """'about 45 s', 'about 3 min', 'about 1 h 20 min' (rounded as a person would say it)."""
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 3600:
        return f"about {seconds / 60:.0f} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"about {hours} h {minutes} min" if minutes else f"about {hours} h"


def confirm_long_run(spec: FilterSpec, n_rows: int, n_features: int | None, n_classes: int) -> None:
    """Ask before a run estimated over :data:`~aflite_app.compute.run_costs.CONFIRM_SECONDS` starts (issue 29 item 4).

    Moving τ or k (the slider's Home key jumps to k = 1: thousands of rounds) must not start a very long run at
    once. The estimate is :func:`aflite_app.compute.run_costs.estimate_run_seconds` (the calibrated shape model). The
    page stops with the estimate, a "Start the run" button and a "Keep the current run" button (which puts τ, k and
    the other parameters back); the sidebar keeps the current run meanwhile. Nothing is asked for a run already
    running or agreed to.
    """
    page = page_state(st.session_state, FILTER_PAGE)
    if page.get("confirmed") == spec or running_filter_spec() == spec:
        return
    run = st.session_state.get(RUN)
    if run is not None and run.key == spec and run.done:  # its outcome is on screen already (e.g. an error)
        return
    seconds = run_costs.estimate_run_seconds(spec, n_rows, n_features or 1, n_classes)
    if seconds <= run_costs.CONFIRM_SECONDS:
        return
    rounds = run_costs.run_rounds(spec, n_rows)
    st.warning(
        f"This run would take {_duration(seconds)} on this server: up to {rounds:,} rounds of "
        f"{spec.n_partitions} models to take {n_rows:,} rows down to the target size of {spec.target_size:,}, "
        f"k = {spec.slice_size:,} row{'s' * (spec.slice_size != 1)} a round (τ may end it sooner). "
        "Start it, or keep the current run (a larger k runs fewer rounds)."
    )
    c1, c2 = st.columns(2)
    c1.button("Start the run", type="primary", key="confirm-run", on_click=_confirm, args=(spec,))
    last = st.session_state.get(LAST)
    if last is not None and last.dataset == spec.dataset:
        c2.button("Keep the current run", key="keep-run", on_click=_keep_current, args=(last,))
    st.stop()


def _confirm(spec: FilterSpec) -> None:
    page_state(st.session_state, FILTER_PAGE)["confirmed"] = spec


def _keep_current(spec: FilterSpec) -> None:
    """Put the Filter page's τ, k and parameters back to the current run's (the long run is not started)."""
    state.set_filter_widgets(st.session_state, spec)


def restart_run(spec: FilterSpec) -> None:
    """'Run it to the end' of a stopped run: forget the partial result, so the page runs ``spec`` again."""
    page = page_state(st.session_state, FILTER_PAGE)
    page.pop("partial", None)
    page["confirmed"] = spec  # asked for explicitly: no second question
    run = st.session_state.get(RUN)
    if run is not None and run.done:
        st.session_state[RUN] = None


def _show_running(spec: FilterSpec) -> None:
    """Write "Running" into this script run's sidebar box before the page stops for the progress bar."""
    box = getattr(_SCRIPT, "summary_box", None)
    if box is None:
        return
    _SCRIPT.running = spec
    run_summary(box)


def _stop_unwanted_heavy_run(spec: FilterSpec) -> None:
    """Stop this session's heavy Filter run (waiting or running) once the page shows another run without it.

    τ moved back up onto a stored run while a large rerun (a lower τ, another k) was queued or running: nobody
    waits for it any more, and it would hold the server's heavy-job slot (:func:`aflite_app.admission.heavy`).
    """
    run = st.session_state.get(RUN)
    if run is not None and not run.done and run.key != spec and isinstance(run.target, HeavyJob):
        run.stop()


def filter_spec_from_widgets(dspec: DatasetSpec) -> FilterSpec | None:
    """The run the Filter page's widgets of this dataset describe (set by a link), None if they were never set."""
    values = {name: st.session_state.get(filter_key(name, dspec.key)) for name in FILTER_WIDGETS}
    if any(value is None for value in values.values()) or st.session_state.get(TAU) is None:
        return None
    return FilterSpec(
        dataset=dspec,
        target_size=int(values["target"]),
        train_size=int(values["train"]),
        slice_size=int(values["k"]),
        tau=float(st.session_state[TAU]),
        n_partitions=int(values["m"]),
        strategy=str(values["strategy"]),
        model=str(values["model"]),
        seed=int(values["seed"]),
        device=run_devices.app_device(str(values["model"])),
        groups=runs.groups_choice(
            datasets.dataset(dspec, session=session_data()), **state.group_options(st.session_state, dspec.key)
        ),
    )


def describe_filter_run(spec: FilterSpec, n_rows: int, n_features: int | None = None, n_classes: int = 3) -> Callable:
    """The progress text of a Filter run: rounds done, where the current round is, and the time left.

    The time left is :class:`aflite_core.engine.estimates.AFLiteTimeLeft`: the run's shape model (``n_features``
    when known) at this server's rate - the calibrated one until the run has measured its own - over the rounds
    still to run, capped by what τ allowed in the last round (rows at p ≥ τ not yet removed), so it does not
    count rounds τ will stop before.
    """
    d = int(n_features) if n_features else 0
    timer = estimates.AFLiteTimeLeft(
        n_rows,
        spec.target_size,  # counts or fractions of n_rows, as the engine reads them
        spec.slice_size,
        spec.train_size,
        int(spec.n_partitions),
        d or 1,
        n_classes=n_classes,
        model=str(spec.model),
        prior=estimates.rates() if d else None,
    )

    def describe(p, elapsed: float, step=None) -> tuple[float, str]:
        left = timer.update(
            elapsed,
            rounds_done=p.round if p is not None else 0,
            size=p.size if p is not None else n_rows,
            qualified=p.qualified if p is not None else None,
            removed=p.removed if p is not None else None,
            round_fraction=step.fraction_of_round if step is not None else 0.0,
        )
        fraction = timer.fraction
        where = ""
        if step is not None:
            what = "fitting the models" if step.phase == "fit" else "predicting held-out rows"
            where = f"Round {step.round}: {what} ({step.done}/{step.total}) · "
        elif p is None:
            where = "Round 1 starting · "
        so_far = f"{p.total_removed:,} removed, {p.size:,} rows left · " if p is not None else ""
        left_text = time_left_text(left, elapsed, fraction) or (" · time left: estimating…" if fraction < 1 else "")
        return fraction, f"{where}{so_far}{elapsed:.0f} s{left_text}"

    return describe


def current_dataset() -> tuple[DatasetSpec, Dataset]:
    """The dataset chosen in the sidebar: its spec (with the representation) and the Dataset.

    Inside the error boundary: a dataset that cannot be loaded shows as ``st.error`` and stops the page.
    """
    with errors():
        dspec = current_dataset_spec()
        return dspec, datasets.dataset(dspec, session=session_data())


def dataset_label(key: str) -> str:
    """How the sidebar names the dataset ``key``."""
    return datasets.dataset_choices(session=session_data()).get(key, key)


def caption(text: str) -> None:
    """The short 'what am I looking at' line under a chart."""
    st.caption(text)


def current_dataset_spec() -> DatasetSpec:
    """The dataset and representation chosen in the sidebar."""
    key = st.session_state.get(DATASET, "digits")
    data = datasets.dataset(key, session=session_data())
    rep = st.session_state.get(REPRESENTATION)
    if rep not in data.representations:
        rep = data.default_representation
    return DatasetSpec(key, rep)


def _on_dataset_change() -> None:
    st.session_state[REPRESENTATION] = None  # the sidebar then picks the new dataset's default representation


def sidebar() -> None:
    """Dataset picker and the current run's summary, on every page."""
    with st.sidebar:
        st.markdown("### Dataset")
        choices = datasets.dataset_choices(session=session_data())
        if st.session_state.get(DATASET) not in choices:
            st.session_state[DATASET] = "digits"
        with errors():  # persist_state: a page switched to by st.switch_page must not drop the choice
            st.selectbox(
                "Data",
                options=list(choices),
                format_func=choices.get,
                key=DATASET,
                on_change=_on_dataset_change,
                persist_state="session",
                help="Upload your own on the Data page.",
            )
            data = datasets.dataset(st.session_state[DATASET], session=session_data())
            reps = list(data.representations)
            if st.session_state.get(REPRESENTATION) not in reps:
                st.session_state[REPRESENTATION] = data.default_representation
            st.selectbox(
                "Representation Φ(X)",
                options=reps,
                key=REPRESENTATION,
                persist_state="session",
                format_func=lambda r: data.representation_descriptions.get(r, r),
                help="The features AFLite's models see. Stronger representations find more bias.",
            )
        counts = ", ".join(f"{c}: {n:,}" for c, n in data.class_counts().items())
        short = counts[:120] + ("…" if len(counts) > 120 else "")
        st.caption(f"{data.n_rows:,} rows · {data.n_classes} classes ({md(short)})")


def run_summary(box: Any) -> None:
    """The current run's headline numbers, in a sidebar container (filled after the page ran).

    The one current run (:func:`current_filter_result`), as the Filter page shows it: a stopped run labelled
    partial; a run in progress as running (its progress is on the Filter page); else "No run yet".
    """
    _SCRIPT.summary_box = box
    running = getattr(_SCRIPT, "running", None) or running_filter_spec()
    _SCRIPT.running = None
    current = None if running is not None else current_filter_result()
    with box.container():
        st.markdown("### Current run")
        if running is not None:
            st.caption(
                f"Running on the Filter page: τ = {running.tau:g}, k = {running.slice_size:,} on "
                f"{md(dataset_label(running.dataset.key))}; its numbers show here once it has a result."
            )
            return
        if current is None:
            st.caption("No run yet: open the Filter page.")
            return
        last, result = current
        name = dataset_label(last.dataset.key)
        if result.stopped:
            st.caption(f":orange[**Partial run**: stopped after round {result.n_rounds}]")
        st.caption(
            f"On {md(name)} · {md(last.dataset.representation)}"
            f" · τ = {last.tau:g}, k = {last.slice_size}, target {result.params['target_size']:,}, "
            f"m = {last.n_partitions}, t = {result.params['train_size']:,}, {last.model}, seed {last.seed}"
        )
        c1, c2 = st.columns(2)
        c1.metric("kept", f"{result.n_kept:,}")
        c2.metric("removed", f"{result.n_removed:,}")
        st.caption(result.stop_message)
