"""The Compare runs page: which runs this session can compare, each loaded with its texts, and their diff.

A run to compare is a :class:`RunChoice`: the Filter page's current run (``"filter"``), another complete run the
result store holds for the same dataset (``"stored"``: each τ, seed or parameter set run on the Filter page),
a run directory opened on the Data page (``"rundir"``, this session's) or any run directory below the run root
(``"root"``, :mod:`aflite_app.run_root`: chosen from the listing, never a typed path; read with
:meth:`AFLiteResult.load`, which checks it in full, and its recorded table). The diff itself is
:func:`aflite_core.measures.run_diff.diff_runs`, run as a background job (progress, Stop; queued as heavy above
the interactive size) and stored by the two choices (:class:`CompareRequest`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult, load_run_table
from aflite_core.data import budget
from aflite_core.measures.run_diff import RunDiff, diff_runs

from ..admission import heavy
from ..jobs import Outcome, as_outcome, remaining_text, stoppable
from ..run_root import inside_root, list_run_directories, run_root
from ..specs import NO_SESSION, FilterSpec, SessionData
from . import _stores
from .datasets import dataset
from .rundirs import without_server_paths
from .runs import _result_store, result

__all__ = [
    "GROUP_LABELS",
    "CompareProgress",
    "CompareRequest",
    "RunChoice",
    "choice_label",
    "compare_request",
    "compare_runs",
    "describe_compare",
    "inspect_rows",
    "load_choice",
    "prepare_compare",
    "rows_view",
    "run_choices",
    "stored_compare",
]

#: what the page calls each group of rows (``RunDiff.rows["group"]``)
GROUP_LABELS = {
    "changed": "status or round differs",
    "a_only": "removed by A only",
    "b_only": "removed by B only",
    "both": "removed by both",
    "neither": "kept by both",
    "all": "all rows",
}


@dataclass(frozen=True)
class RunChoice:
    """One run the page may compare: ``kind`` "filter", "stored", "rundir" or "root", and what names it."""

    kind: str
    spec: FilterSpec | None = None
    key: str | None = None  # "rundir": the session's run-directory key; "root": the path below the run root

    @property
    def ident(self) -> str:
        """A stable text id (the page keeps it across reruns)."""
        return f"{self.kind}:{self.key or ''}:{self.spec!r}"


def _spec_text(spec: FilterSpec) -> str:
    k = "1 (greedy)" if spec.strategy == "greedy" else str(spec.slice_size)
    rep = spec.dataset.representation or "default representation"
    return f"τ = {spec.tau:g}, k = {k}, m = {spec.n_partitions}, seed {spec.seed}, {spec.model}, {rep}"


def choice_label(choice: RunChoice, names: dict[str, str] | None = None) -> str:
    """The choice in words (plain text; the page escapes it)."""
    if choice.kind == "filter":
        return f"The Filter page's run ({_spec_text(choice.spec)})"
    if choice.kind == "stored":
        return f"Stored run: {_spec_text(choice.spec)}"
    if choice.kind == "rundir":
        name = (names or {}).get(choice.key or "", choice.key)
        return f"Opened run directory '{name}'"
    return f"Run root: '{choice.key}'"


def run_choices(current: FilterSpec | None, dataset_key: str, *, session: SessionData = NO_SESSION) -> list[RunChoice]:
    """Every run this session may compare, the Filter page's run first.

    ``current`` is the Filter page's run on the sidebar's dataset (None: none yet); stored runs are those of the
    same dataset in the result store (complete ones, not read off another run); then this session's opened run
    directories and the run directories below the run root (listed afresh).
    """
    out: list[RunChoice] = []
    if current is not None and result(current, session=session) is not None:
        out.append(RunChoice("filter", spec=current))
    for spec, run in _result_store().items():
        if spec == current or not isinstance(spec, FilterSpec) or spec.dataset.key != dataset_key:
            continue
        if isinstance(run, AFLiteResult) and not run.stopped:
            out.append(RunChoice("stored", spec=spec))
    for key in session.run_dirs:
        out.append(RunChoice("rundir", key=key))
    for path in list_run_directories(run_root()):
        out.append(RunChoice("root", key=path))
    return out


def _text_table(data) -> pd.DataFrame | None:
    """The dataset's text column to compare words on (the hypothesis of a pair), as a one-column table."""
    if data is None:
        return None
    cols = list(data.pair[1:] if data.pair else ()) + [c for c in data.text_columns]
    cols = [c for c in dict.fromkeys(cols) if c in data.frame.columns]
    if not cols:
        return None
    return data.frame[[cols[0]]].reset_index(drop=True)


def _root_stamp(path: str) -> tuple[str, int, int]:
    """The run below the run root and its result.json's size and time: a changed run is another store entry."""
    run_dir = inside_root(run_root(), path, what="That run directory")
    meta = run_dir / "result.json"
    if not meta.is_file():
        raise ValueError(f"'{path}' below the run root is not a run directory (it has no result.json).")
    info = meta.stat()
    return str(run_dir), info.st_size, info.st_mtime_ns


@_stores.memo("compare_root_runs", 8, spinner="Reading the run…")
def _load_root(stamp: tuple[str, int, int], path: str) -> tuple[AFLiteResult, pd.DataFrame | None]:
    run_dir = stamp[0]
    try:
        run = AFLiteResult.load(run_dir)
        try:
            table = load_run_table(run_dir, result=run)
        except budget.MemoryBudgetError:
            table = None
    except (ValueError, OSError) as exc:
        text = str(exc) if isinstance(exc, ValueError) else f"one of its files cannot be opened ({type(exc).__name__})"
        raise ValueError(without_server_paths(text, run_root())) from None
    return run, table


def load_choice(choice: RunChoice, *, session: SessionData = NO_SESSION) -> tuple[AFLiteResult, pd.DataFrame | None]:
    """The run a choice names and its texts (a one-column table, or its recorded table; None without text).

    Raises
    ------
    ValueError
        One sentence: a stored run that is no longer in the store, a run directory closed or damaged.
    """
    if choice.kind in ("filter", "stored"):
        run = result(choice.spec, session=session)
        if run is None:
            raise ValueError(
                "That run is no longer stored on this server (the store keeps the latest runs); run it again on "
                "the Filter page to compare it."
            )
        return run, _text_table(dataset(choice.spec.dataset, session=session))
    if choice.kind == "rundir":
        entry = session.run_dirs.get(choice.key)
        if entry is None:
            raise ValueError("That run directory is no longer open in this session; open it again on the Data page.")
        return entry["result"], _text_table(session.uploads.get(choice.key))
    return _load_root(_root_stamp(choice.key), choice.key)


@dataclass(frozen=True)
class CompareRequest:
    """Two runs to compare and what tells their versions apart (:func:`compare_request`): the job's and store's key."""

    a: RunChoice
    b: RunChoice
    stamps: tuple


@dataclass(frozen=True)
class CompareProgress:
    """Where a comparison is: ``done`` of ``total`` texts tokenised for the words' test."""

    done: int
    total: int
    what: str


def _stamp(choice: RunChoice, *, session: SessionData = NO_SESSION) -> tuple | None:
    """What tells two versions of a chosen run apart: a run root's file stamp, an opened run's creation and data."""
    if choice.kind == "root":
        return _root_stamp(choice.key)
    if choice.kind == "rundir":
        entry = session.run_dirs.get(choice.key)
        prov = {} if entry is None else entry["result"].provenance
        return (prov.get("created"), prov.get("x_sha256"), prov.get("y_sha256"))
    return None


def compare_request(a: RunChoice, b: RunChoice, *, session: SessionData = NO_SESSION) -> CompareRequest:
    """The request comparing run A with run B (a run below the run root that changed is another request)."""
    return CompareRequest(a, b, tuple(_stamp(c, session=session) for c in (a, b)))


def _diff_store() -> _stores.Store:
    """Finished comparisons, by :class:`CompareRequest`."""
    return _stores.store("compare_diffs", 16)


def stored_compare(request: CompareRequest) -> RunDiff | None:
    """The comparison of ``request`` when it is computed already (no computation), else None."""
    return _diff_store().recall(request)


def _compute(request: CompareRequest, report: Callable, *, session: SessionData = NO_SESSION) -> RunDiff:
    """The diff, with B's texts in A's row order when only B has them; the rows table gets the text column."""
    run_a, table_a = load_choice(request.a, session=session)
    run_b, table_b = load_choice(request.b, session=session)

    def progress(done: int, total: int) -> None:
        report(CompareProgress(done, total, f"Testing the words of {total:,} texts"))

    table = table_a
    if table is None and table_b is not None:  # B's texts, in A's row order (the rows matched first)
        order = diff_runs(run_a, run_b).rows["row_b"].to_numpy()
        table = table_b.iloc[order].reset_index(drop=True)
    diff = diff_runs(run_a, run_b, table=table, progress=progress)
    column = None if diff.words is None else diff.words.attrs.get("text_column")
    if column is not None and column in table.columns:  # the rows table shows the text the words came from
        diff.rows.insert(2, "text", table[column].astype("string").to_numpy())
    return diff


def compare_runs(a: RunChoice, b: RunChoice, *, session: SessionData = NO_SESSION) -> RunDiff:
    """The diff of run A and run B (:func:`aflite_core.measures.run_diff.diff_runs`), computed in this thread.

    Raises
    ------
    ValueError
        One sentence when the runs are not over the same rows, or a run cannot be read.
    """
    request = compare_request(a, b, session=session)
    hit = stored_compare(request)
    if hit is None:
        hit = _compute(request, lambda p: None, session=session)
        _diff_store().keep(request, hit)
    return hit


def prepare_compare(request: CompareRequest, *, session: SessionData = NO_SESSION) -> Callable[[Callable], Outcome]:
    """The job :func:`aflite_app.jobs.run_in_background` runs for ``request`` (the runs read in the page's thread).

    It reports :class:`CompareProgress` every 10,000 texts of the words' test and stops there when asked; above
    the interactive size (``_stores.MAX_INTERACTIVE_ROWS`` rows) it waits its turn in the server's queue of heavy
    jobs. The finished diff goes to the store (:func:`stored_compare`). Gives ``Outcome(value=diff)``,
    ``Outcome(stopped=True)``, or the error in one sentence (runs over other rows).
    """
    run_a, _ = load_choice(request.a, session=session)  # a closed or damaged run: one sentence, at once
    store = _diff_store()

    def job(callback: Callable) -> RunDiff:
        hit = store.recall(request)
        if hit is not None:
            return hit
        out = _compute(request, stoppable(callback), session=session)
        store.keep(request, out)
        return out

    n_rows = run_a.n_rows
    big = n_rows > _stores.MAX_INTERACTIVE_ROWS
    queued = heavy(job, f"a comparison of two runs of {n_rows:,} rows") if big else job

    def target(callback: Callable) -> Outcome:
        return as_outcome(lambda: queued(callback), "Comparing the runs")

    return target


def describe_compare(request: CompareRequest) -> Callable:
    """The progress text of a comparison: texts tokenised, elapsed seconds and time left."""

    def describe(p: CompareProgress | None, elapsed: float, step: object = None) -> tuple[float, str]:
        if p is None:
            return 0.0, f"Matching the rows of the two runs… {elapsed:.0f} s"
        fraction = min(1.0, p.done / max(p.total, 1))
        return fraction, f"{p.what} · {elapsed:.0f} s{remaining_text(elapsed, fraction)}"

    return describe


def rows_view(diff: RunDiff, group: str, limit: int) -> tuple[pd.DataFrame, int]:
    """The rows of one group (:data:`GROUP_LABELS`) as the page shows them (the first ``limit``), and how many match."""
    rows = diff.rows
    if group == "changed":
        rows = diff.changed
    elif group != "all":
        rows = rows.loc[rows["group"].to_numpy() == group]
    shown = rows.head(limit).copy()
    shown["group"] = shown["group"].map({k: v for k, v in GROUP_LABELS.items()})
    return shown.reset_index(drop=True), len(rows)


def inspect_rows(diff: RunDiff, shown: pd.DataFrame, selected: list[int], which: str) -> list[int]:
    """Row positions in run ``which`` ("a" or "b") of the selected table rows (every shown row when none is)."""
    picked = shown.iloc[selected] if selected else shown
    column = "row_a" if which == "a" else "row_b"
    return [int(x) for x in np.asarray(picked[column], dtype=np.int64)]
