"""AFLite runs of the Filter page: started in the page's thread or a background thread, kept in one store.

One τ path (issue 23): :func:`result` is the one answer to "the run for this spec" that the Filter page, the
sidebar and Inspect ask for - the run itself when stored (a run directory opened on the Data page first, then the
store), else the run read off a complete stored run of the same spec at a lower τ
(:func:`aflite_core.engine.tau_path.narrow_to_tau`, exact, no AFLite run), else None: the caller then runs it
(:func:`prepare_run`, in the background), and the finished run is stored, so every higher τ is read off it.
Only complete top-k runs with their score matrix and no evaluation set are read off (:func:`can_narrow`); the
greedy and sampling strategies, and a stopped run, always run. Other pages that need a run whatever it costs
call :func:`run_filter` (the same look-up, else a run in their thread).

Any size the machine can hold is run (issue 25): no row limit here (uploads keep theirs, on the upload path), a
run refused only when :func:`aflite_app.compute.run_costs.check_memory` finds too little memory free, and a run
above the interactive size (``_stores.MAX_INTERACTIVE_ROWS``) is a heavy job that waits its turn in the server's
queue (:func:`aflite_app.admission.heavy`). Where a run computes is :mod:`aflite_app.compute.run_devices`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult
from aflite_core.engine.filtering import execute_run, plan_run
from aflite_core.engine.null import chance_table, grid_counts, suggest_tau
from aflite_core.engine.result import round_half
from aflite_core.engine.tau_path import narrow_to_tau
from aflite_core.measures.stability import class_impact as _class_impact

from .. import settings
from ..admission import heavy
from ..jobs import app_threads
from ..specs import NO_SESSION, FilterSpec, SessionData
from . import _stores
from .datasets import dataset, stored_duplicates
from .run_costs import check_memory
from .run_devices import app_device  # re-exported only for benchmarks/bench_run_table.py: import it from run_devices

__all__ = [
    "DEFAULT_NULL_PERMUTATIONS",
    "MAX_NULL_PERMUTATIONS",
    "RESULT_STORE_SIZE",
    "app_device",
    "can_narrow",
    "change_since_round_1",
    "check_form",
    "check_null_permutations",
    "class_impact",
    "filter_defaults",
    "groups_choice",
    "narrowed_from",
    "null_by_class",
    "null_result",
    "null_sentence",
    "null_summary",
    "prepare_null",
    "prepare_run",
    "removed_null_sentence",
    "result",
    "run_filter",
    "run_groups",
    "stored_result",
    "suggested_tau",
    "tau_source",
    "with_class_names",
]

RESULT_STORE_SIZE = settings.load().result_store_size
#: runs read off a stored run at a lower τ, by spec (they share the stored run's score matrix: cheap to keep)
NARROWED_STORE_SIZE = 16


def _result_store() -> _stores.Store:
    """Finished runs by spec, shared by the cached path and background runs."""
    return _stores.store("result_store", RESULT_STORE_SIZE)


def _narrowed_store() -> _stores.Store:
    """Runs read off a stored run (:func:`result`), by spec: a rerun at the same τ does not narrow again."""
    return _stores.store("narrowed_store", NARROWED_STORE_SIZE)


def stored_result(spec: FilterSpec, *, session: SessionData = NO_SESSION) -> AFLiteResult | None:
    """A finished run for this spec, if any (no computation): ``session``'s opened run directories, then the store."""
    return _stored(spec, session.run_dirs)


def _stored(spec: FilterSpec, run_dirs) -> AFLiteResult | None:
    for entry in run_dirs.values():  # an opened run is this session's answer wherever the page would run it
        if replace(entry["spec"], device=spec.device) == spec:
            return entry["result"]
    return _result_store().recall(spec)


def result(spec: FilterSpec, *, session: SessionData = NO_SESSION) -> AFLiteResult | None:
    """The run for ``spec`` without running AFLite: stored, else read off a stored run at a lower τ, else None.

    The one source of truth for "the current run" (the Filter page, the sidebar, Inspect). A run read off
    another carries ``provenance["narrowed_from_tau"]`` (:func:`narrowed_from`) and equals a direct run at
    ``spec.tau`` in every field but the creation time and the per-round seconds (:mod:`aflite_core.engine.tau_path`).
    The session's stopped (partial) current run is its own answer too (:attr:`SessionData.partial`), so every page
    reads the one current run, partial or not (issue 29).
    None: nothing stored covers ``spec`` (another strategy, a stored run only above its τ, another session's stopped
    run); the caller runs it (:func:`prepare_run` stores the finished run). ``session``: the page's session data (its
    opened run directories and uploads; compute never reads the session itself).
    """
    run_dirs = session.run_dirs
    hit = _stored(spec, run_dirs)
    if hit is not None:
        return hit
    partial = session.partial.get(spec)  # the session's stopped current run (issue 29): never stored, never narrowed
    if partial is not None:
        return partial
    base = _narrowing_base(spec, run_dirs)
    if base is None:
        return None
    # keyed by the base's score matrix too (the narrowed run holds a view of it, so its id stays unique): a run
    # directory is this session's own, and another session's spec may name another run with the same key
    key = (spec, id(base.scores))
    narrowed = _narrowed_store().recall(key)
    if narrowed is None:
        narrowed = narrow_to_tau(base, spec.tau)
        _narrowed_store().keep(key, narrowed)
    return narrowed


def can_narrow(spec: FilterSpec, run: AFLiteResult) -> bool:
    """True when ``run`` holds the run of ``spec``: same spec but τ, a τ at or below, and narrowable.

    Narrowable as :func:`aflite_core.engine.tau_path.narrow_to_tau` requires: the top-k strategy ("slice"), the
    per-round score matrix, no evaluation set, and a complete run (stopped by the target or by τ, not on
    request).
    """
    return (
        spec.strategy == "slice"
        and run.params.get("strategy") == "slice"
        and float(run.params.get("tau", 2.0)) <= spec.tau
        and run.scores is not None
        and run.n_predictions is not None
        and run.eval_y is None
        and run.stop_reason in ("target_size_reached", "fewer_than_k_qualified")
    )


def _narrowing_base(spec: FilterSpec, run_dirs) -> AFLiteResult | None:
    """The stored run of ``spec`` at the highest τ at or below ``spec.tau`` that holds it (None if there is none)."""
    if spec.strategy != "slice":
        return None
    same = replace(spec, tau=0.0)
    found = [(replace(entry["spec"], device=spec.device), entry["result"]) for entry in run_dirs.values()]
    found += list(_result_store().items())  # at most RESULT_STORE_SIZE: a look at each spec, no computation
    usable = [
        (other.tau, run)
        for other, run in found
        if isinstance(other, FilterSpec) and replace(other, tau=0.0) == same and can_narrow(spec, run)
    ]
    return max(usable, key=lambda pair: pair[0])[1] if usable else None


def narrowed_from(run: AFLiteResult) -> float | None:
    """The τ of the stored run ``run`` was read off (None: ``run`` is a run of its own)."""
    value = run.provenance.get("narrowed_from_tau")
    return None if value is None else float(value)


def tau_source(run: AFLiteResult) -> str:
    """One sentence for the Filter page: read off a stored run (no AFLite run) or a run at this τ."""
    tau = float(run.params["tau"])
    base = narrowed_from(run)
    if base is not None:
        return (
            f"Read off the run at τ = {base:.2f}: no AFLite run for τ = {tau:.2f}. A run at a lower τ holds the run "
            "at every higher τ exactly (each round's scores decide which rows reach τ)."
        )
    if run.params.get("strategy") != "slice" or run.scores is None or run.eval_y is not None:
        return f"An AFLite run at τ = {tau:.2f} (this strategy is run for each τ; only top-k slicing is read off)."
    if run.stopped:
        return f"An AFLite run at τ = {tau:.2f}, stopped: a partial run is never read off for another τ."
    return (
        f"An AFLite run at τ = {tau:.2f}. Every higher τ is read off this run without running AFLite again; "
        "a lower τ runs AFLite."
    )


def change_since_round_1(change: float, fmt: str) -> dict[str, str]:
    """A Filter metric's delta, colour and arrow (``st.metric`` keywords) for a change since round 1.

    A change that rounds to zero in ``fmt`` reads "no change", uncoloured and without an arrow - never "-0%".

    Examples
    --------
    >>> change_since_round_1(-0.0031, ".0%")
    {'delta': 'no change', 'delta_color': 'off', 'delta_arrow': 'off'}
    >>> change_since_round_1(-0.031, ".0%")
    {'delta': '-3% since round 1', 'delta_color': 'inverse', 'delta_arrow': 'auto'}
    """
    text = format(change, "+" + fmt)
    if float(change) == 0 or text.lstrip("+-").strip("0.%") == "":
        return {"delta": "no change", "delta_color": "off", "delta_arrow": "off"}
    return {"delta": f"{text} since round 1", "delta_color": "inverse", "delta_arrow": "auto"}


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


def _prepared(spec: FilterSpec, data, *, session: SessionData = NO_SESSION):
    X = data.representation(spec.dataset.representation)
    n_features = int(X.shape[1]) if X.ndim == 2 else 1
    check_memory(spec, data.n_rows, n_features, n_classes=data.n_classes, session=session)
    return X, data.y, data.ids


def prepare_run(spec: FilterSpec, *, session: SessionData = NO_SESSION) -> Callable[[Callable], AFLiteResult]:
    """Everything a background thread needs to run ``spec``, validated now (threads see no session state).

    The form and the memory are checked here, in the page's thread (a refused run shows as ``st.error`` at once);
    the run is planned (every feature checked) in the job, so its progress and Stop show at once. ``session``: the
    page's session data (for an uploaded dataset).
    """
    target, n_rows = _run_target(spec, session=session)
    if n_rows > _stores.MAX_INTERACTIVE_ROWS:  # above the interactive size: it waits its turn in the queue
        return heavy(target, f"an AFLite run on {n_rows:,} rows")
    return target


def _run_target(spec: FilterSpec, *, session: SessionData) -> tuple[Callable[[Callable], AFLiteResult], int]:
    """The planned run of ``spec`` as a background job's target, and the dataset's number of rows."""
    data = dataset(spec.dataset, session=session)
    check_form(spec, data.n_rows, data.n_classes)
    X, y, ids = _prepared(spec, data, session=session)
    names = tuple(data.classes)
    store = _result_store()
    groups, source = run_groups(spec, data)
    grouped = {} if groups is None else {"groups": groups, "groups_source": source}

    def target(callback: Callable) -> AFLiteResult:
        hit = store.recall(spec)  # another session ran this spec while this one waited its turn in the queue
        if hit is not None:
            return hit
        # planned here, in the job (issue 25): the plan checks every feature (1.3 s at 550,000 × 384), which in
        # the page's thread held back the progress bar and Stop; a parameter it refuses shows as the job's error
        run = plan_run(
            X,
            y,
            model=spec.model,
            random_state=spec.seed,
            ids=ids,
            device=spec.device,
            n_threads=app_threads(),  # cores ÷ the jobs running now, this one included
            **spec.as_kwargs(),
            **grouped,
        )
        run.callback, run.on_step = callback, getattr(callback, "step", None)
        offer = getattr(callback, "offer_partial", None)  # Stop shows the rounds finished so far at once (issue 29)
        if offer is not None:
            offer(run.snapshot, lambda frozen: with_class_names(frozen.result(), names))
        result = with_class_names(execute_run(run), names)
        if not result.stopped:  # a partial run is shown, but never served as the answer to the full request
            store.keep(spec, result)
        return result

    return target, data.n_rows


# -- group-aware partitions (issue 28) -------------------------------------------------------------------------
#: :attr:`FilterSpec.groups` parts: an NLI pair's premise, the Data page's duplicate groups
GROUPS_PREMISE, GROUPS_DUPLICATES = "premise", "duplicates"


def groups_choice(data, *, keep_premise: bool = True, group_duplicates: bool = False) -> str:
    """The :attr:`FilterSpec.groups` of a run on ``data``: premise groups by default for an NLI pair dataset.

    ``keep_premise`` / ``group_duplicates`` are the Data page's two checkboxes (kept in its page dict): the
    premise part only where the dataset is a sentence pair, the duplicates part only when asked for.
    """
    parts = []
    if keep_premise and getattr(data, "pair", None) is not None:
        parts.append(GROUPS_PREMISE)
    if group_duplicates:
        parts.append(GROUPS_DUPLICATES)
    return "+".join(parts)


def run_groups(spec: FilterSpec, data) -> tuple[np.ndarray | None, str | None]:
    """The group codes of a run of ``spec`` on ``data`` and their source in words, or (None, None) without groups.

    Raises
    ------
    ValueError
        When the spec asks for premise groups on data without a premise, or for duplicate groups before the Data
        page's duplicate search of this dataset has finished (one sentence).
    """
    if not spec.groups:
        return None, None
    from aflite_core.data.groups import groups_from_table, merge_groups

    labelings, names = [], []
    parts = spec.groups.split("+")
    if GROUPS_PREMISE in parts:
        if getattr(data, "pair", None) is None:
            raise ValueError(
                f"{data.name} has no premise to group its rows by; untick the premise groups on the Data page."
            )
        labelings.append(groups_from_table(data.frame, data.pair[0], data.name))
        names.append(data.pair[0])
    if GROUPS_DUPLICATES in parts:
        found = stored_duplicates(spec.dataset)
        if found is None:
            raise ValueError(
                "The duplicate search of this dataset has not finished yet; wait for it on the Data page, or untick "
                "'Group the duplicates in the run' there."
            )
        labelings.append(found.groups)
        names.append(f"duplicates (cosine ≥ {found.threshold:g})")
    codes = labelings[0] if len(labelings) == 1 else merge_groups(*labelings)
    return codes, " + ".join(names)


# -- the null for predictability (issue 27): the same run with K label permutations, a heavy background job ------
#: the most label permutations the Predictability page asks for (each costs about one more run's fits)
MAX_NULL_PERMUTATIONS = 50
#: the page's default number of permutations
DEFAULT_NULL_PERMUTATIONS = 5


def null_result(spec: FilterSpec, *, session: SessionData = NO_SESSION) -> AFLiteResult | None:
    """The run of ``spec`` with a null (``result.null_counts``), without running anything; None if there is none.

    The run of ``spec`` itself when it carries a null (a run directory written with ``--null-permutations K``),
    else the stored run of the same spec with the most label permutations (``spec.null_permutations = K``: a
    store entry of its own, or read off one at a lower τ, which narrows its null too). A run with a null removes
    exactly the rows the run without one removes; only the null is added.
    """
    own = result(spec, session=session)
    if own is not None and own.null_counts is not None:
        return own
    base = replace(spec, null_permutations=0, tau=0.0)
    found = [entry["spec"] for entry in session.run_dirs.values()] + [key for key, _ in _result_store().items()]
    ks = {
        int(other.null_permutations)
        for other in found
        if isinstance(other, FilterSpec)
        and other.null_permutations > 0
        and replace(other, null_permutations=0, tau=0.0, device=spec.device) == base
    }
    for k in sorted(ks, reverse=True):
        hit = result(replace(spec, null_permutations=k), session=session)
        if hit is not None and hit.null_counts is not None:
            return hit
    return None


def check_null_permutations(k: int) -> int:
    """``k`` when it is a whole number in 1..:data:`MAX_NULL_PERMUTATIONS`, else ValueError in one sentence."""
    if isinstance(k, bool) or not isinstance(k, (int, float)) or int(k) != k or not 1 <= k <= MAX_NULL_PERMUTATIONS:
        raise ValueError(
            f"The number of label permutations is {k!r}, but it must be a whole number from 1 to "
            f"{MAX_NULL_PERMUTATIONS}: lower it (each permutation costs about one more run's fits)."
        )
    return int(k)


def prepare_null(spec: FilterSpec, *, session: SessionData = NO_SESSION) -> Callable[[Callable], AFLiteResult]:
    """The run of ``spec`` (``spec.null_permutations`` = K ≥ 1) as a heavy background job: it waits its turn.

    It costs about K + 1 times the run's fits, so it always queues (:func:`aflite_app.admission.heavy`), whatever the
    dataset's size. The finished run is stored under ``spec`` (:func:`null_result` finds it).
    """
    k = check_null_permutations(spec.null_permutations)
    target, _ = _run_target(spec, session=session)
    return heavy(target, f"a null of {k} permutation{'s' if k != 1 else ''}")


def null_summary(result: AFLiteResult, rnd: int) -> dict:
    """The null at the run's τ in round ``rnd``: ``k``, ``tau``, ``null`` (mean count), ``observed``, ``share``.

    ``observed`` counts the round's rows at p ≥ τ (:func:`aflite_core.engine.null.chance_table`), ``null`` is
    :meth:`AFLiteResult.null_at`; ``share`` is null / observed (None when no row reaches τ).
    """
    tau = float(result.params["tau"])
    table = chance_table(result, rnd)
    at = table.iloc[round_half(tau * 100)]
    observed, null = int(at["observed"]), result.null_at(tau, rnd)
    return {
        "k": int(result.params.get("null_permutations", 0)),
        "tau": tau,
        "null": float(null),
        "observed": observed,
        "share": null / observed if observed else None,
    }


def null_sentence(result: AFLiteResult, rnd: int) -> str:
    """One sentence for the Predictability page: how many of the rows at p ≥ τ chance would put there."""
    s = null_summary(result, rnd)
    share = f"{100 * s['share']:.0f} %" if s["share"] is not None else "none: no row reaches τ"
    return (
        f"Under shuffled labels ({s['k']} permutations), about {s['null']:,.1f} of the {s['observed']:,} rows at "
        f"p ≥ {s['tau']:.2f} in round {rnd} would get there by chance (chance share {share})."
    )


def null_by_class(result: AFLiteResult, rnd: int) -> pd.DataFrame:
    """Per class: rows of round ``rnd`` at p ≥ τ, observed and under shuffled labels (the mean over permutations)."""
    tau = float(result.params["tau"])
    col = round_half(tau * 100)
    p = result.scores[rnd - 1] if result.scores is not None else result.first_score
    observed = grid_counts(p, np.asarray(result.y), len(result.classes))[:, col]
    return pd.DataFrame(
        {
            "class": [str(c) for c in result.classes],
            f"rows at p ≥ {tau:.2f}": observed.astype(int),
            "by chance (null)": np.round(result.null_counts[rnd - 1, :, col], 1),
        }
    )


def removed_null_sentence(result: AFLiteResult, nulled: AFLiteResult | None) -> str:
    """The Filter page's line on chance: how many of the run's removed rows shuffled labels would bring to τ.

    With a null (``nulled``, the same run with ``null_counts``): per round, the null's mean count at p ≥ τ, capped
    at the rows that round removed (AFLite removes at most that many), summed over the rounds the null covers.
    Without one: how to compute it.
    """
    counts = None if nulled is None else nulled.null_counts
    tau = float(result.params["tau"])
    if counts is None or not len(counts):
        return (
            f"How many of these {result.n_removed:,} removed rows would reach τ = {tau:.2f} by chance alone? Press "
            "'Compute the null' on the Predictability page (label permutations, in the background); this line then "
            "says it."
        )
    removed = result.history["n_removed"].to_numpy()
    rounds = min(len(counts), len(removed))
    chance = sum(min(float(nulled.null_at(tau, r)), float(removed[r - 1])) for r in range(1, rounds + 1))
    k = int(nulled.params.get("null_permutations", 0))
    share = f" ({100 * chance / result.n_removed:.0f} %)" if result.n_removed else ""
    return (
        f"Under shuffled labels ({k} permutation{'s' if k != 1 else ''}), about {chance:,.0f} of the "
        f"{result.n_removed:,} removed rows{share} would reach τ = {tau:.2f}: per round, the null's mean count at "
        "p ≥ τ, at most the rows that round removed."
    )


def suggested_tau(result: AFLiteResult, max_share: float, rnd: int) -> float | None:
    """The lowest τ whose chance share in round ``rnd`` is at most ``max_share`` (:func:`suggest_tau`)."""
    return suggest_tau(result, max_share, rnd)


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


def run_filter(
    spec: FilterSpec, callback: Callable | None = None, *, session: SessionData = NO_SESSION
) -> AFLiteResult:
    """The run for ``spec``: :func:`result` (stored or read off a stored run), else AFLite in this thread.

    ``session``: the page's session data (its uploads and opened run directories).
    """
    hit = result(spec, session=session)
    if hit is not None:
        return hit
    return prepare_run(spec, session=session)(callback or (lambda _p: True))


def class_impact(result: AFLiteResult, threshold: float = 0.5):
    """Per-class counts before/after with a warning flag (see :func:`aflite_core.measures.stability.class_impact`).

    Takes the result the page already has — a stopped (partial) run is never stored, so fetching it again by
    its spec would re-run the whole filter. Not cached: a group-by over the run's rows costs milliseconds (tens
    at 550,000), and a cache keyed by the spec would serve a partial run's counts for the full run of the same spec.
    """
    return _class_impact(result.labels, result.kept, threshold=threshold)
