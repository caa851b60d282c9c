"""The Embedding page's tables of kept and removed rows' neighbourhoods (no widget, no session): Figure 1, Table 3.

The Figure 1 cosine similarity matrices of a class's kept and removed rows (:func:`embedding_similarity`) and the
Table 3 nearest-neighbour distances (:func:`embedding_knn`) are small tables, memoised by FilterSpec + view
parameters (:func:`._stores.memo`); Table 3 uses a seeded sample of
:data:`~aflite_app.compute.embedding.EMBED_MAX_ROWS` rows (brute-force neighbours over every row would grow as
rows²). Both come from :mod:`aflite_core.measures.geometry`. The page computes them with :func:`in_worker`, so that a
rerun asked for meanwhile (a box drawn on the map) never waits for a first-time computation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from aflite_core import AFLiteResult, _child_process
from aflite_core.measures.geometry import knn_distance_table, knn_table_wide, similarity_matrices

from ..specs import NO_SESSION, FilterSpec, SessionData
from . import _stores
from .datasets import class_names, dataset
from .embedding import EMBED_SEED, embedding_rows
from .runs import run_filter

__all__ = [
    "EMBED_KNN_KS",
    "embedding_knn",
    "embedding_similarity",
    "in_worker",
]

#: how much lower the CPU priority of :func:`in_worker`'s thread is than the server's (as a child process's,
#: :data:`aflite_core._child_process.CHILD_NICENESS`): on a busy machine the rerun it no longer blocks gets the cores
WORKER_NICENESS = _child_process.CHILD_NICENESS


#: neighbour counts of the kNN-distance table (the ICLR version's Table 3)
EMBED_KNN_KS = (1, 5, 10, 50)


@_stores.memo("embedding_similarity", 64, spinner="Computing cosine similarities…")
def _embedding_similarity(
    spec: FilterSpec,
    label_code: int,
    n_per_group: int,
    seed: int,
    _result: AFLiteResult,
    *,
    _session: SessionData = NO_SESSION,
):
    data = dataset(spec.dataset, session=_session)
    X = data.representation(spec.dataset.representation)
    in_class = data.y == label_code
    # only the class's rows: the same matrices, samples (the seed's draws depend on the class's own rows only) and
    # means as over every row, for a third of the work at three classes (every row was normalised before: seconds
    # and 0.9 GB at 550,000 × 384, computed while the page's first visit was already answering a box)
    idx = np.flatnonzero(in_class)
    sim = similarity_matrices(
        X[idx], data.y[idx], _result.kept[idx], n_per_group=n_per_group, classes=[label_code], random_state=seed
    )[0]
    sim = dataclasses.replace(sim, retained_rows=idx[sim.retained_rows], removed_rows=idx[sim.removed_rows])
    return {
        "sim": sim,
        "n_retained": int((in_class & _result.kept).sum()),
        "n_removed": int((in_class & ~_result.kept).sum()),
    }


def embedding_similarity(
    spec: FilterSpec,
    label_code: int,
    *,
    n_per_group: int = 10,
    seed: int = EMBED_SEED,
    session: SessionData = NO_SESSION,
) -> dict[str, Any]:
    """Figure 1 for one class: a seeded sample's similarity matrix and the class's retained / removed counts.

    Returns ``sim`` (a :class:`aflite_core.measures.geometry.ClassSimilarity`), ``n_retained`` and ``n_removed``.
    """
    return _embedding_similarity(
        spec, int(label_code), int(n_per_group), int(seed), run_filter(spec, session=session), _session=session
    )


@_stores.memo("embedding_knn", 16, spinner="Computing nearest-neighbour distances…")
def _embedding_knn(spec: FilterSpec, _result: AFLiteResult, *, _session: SessionData = NO_SESSION) -> dict[str, Any]:
    data = dataset(spec.dataset, session=_session)
    X = data.representation(spec.dataset.representation)
    rows = embedding_rows(data.n_rows)
    long = knn_distance_table(
        X[rows], data.y[rows], _result.kept[rows], ks=EMBED_KNN_KS, control=True, random_state=spec.seed, n_threads=1
    )
    names = class_names(data)
    long["row"] = [
        names[c] + (" vs others" if comp == "other classes" else "")
        for c, comp in zip(long["label"], long["comparison"])
    ]
    wide = knn_table_wide(long)

    def change(stage: str) -> float:
        if stage not in wide.columns.get_level_values(0):
            return float("nan")
        ratio = (wide["after"] / wide[stage]).to_numpy(dtype=float)
        return float(np.nanmean(ratio) - 1) if np.isfinite(ratio).any() else float("nan")

    after_vs_before, after_vs_random = change("before"), change("random")
    wide.columns = [f"{stage} · {top}" for stage, top in wide.columns]
    wide.index.name = "held-out rows of"
    return {
        "table": wide,
        "n_rows": len(rows),
        "sampled": len(rows) < data.n_rows,
        "after_vs_before": after_vs_before,
        "after_vs_random": after_vs_random,
        "n_heldout": int(long.loc[long["stage"] == "before"].groupby("label")["n_heldout"].first().sum()),
    }


def embedding_knn(spec: FilterSpec, *, session: SessionData = NO_SESSION) -> dict[str, Any]:
    """Table 3 (ICLR version): kNN cosine distances before / after AFLite / random control, one row per class.

    Returns ``table`` (rows: class names, then "<class> vs others"; columns "<stage> · Top<k>"), ``n_rows``
    (rows used), ``sampled``, ``n_heldout`` (query rows), and the mean relative change of the distances
    after AFLite vs before and vs the random control (``after_vs_before``, ``after_vs_random``).
    """
    return _embedding_knn(spec, run_filter(spec, session=session), _session=session)


def in_worker(
    func: Callable[..., Any], *args: Any, yield_point: Callable[[], Any], poll: float = 0.1, **kwargs: Any
) -> Any:
    """``func(*args, **kwargs)`` computed in a daemon thread and awaited, calling ``yield_point()`` every ``poll`` s.

    The page's ``yield_point`` updates an element: Streamlit stops or reruns a script only where it sends one, so a
    rerun asked for while a first-time table is computed (a box drawn on the map while Figure 1 is computed over
    550,000 rows) starts within ``poll`` seconds instead of after the computation. The computation goes on in its
    thread and its memo (:func:`._stores.memo`) keeps the value, which the next run finds, or waits for (one
    computation per key). A value already kept comes back at once (``yield_point`` is then never called).

    Parameters
    ----------
    func : callable
        A memoised computation (its result is kept in its store whoever awaits it).
    *args, **kwargs
        Its arguments.
    yield_point : callable
        Called in the waiting thread every ``poll`` seconds while ``func`` runs; what it raises (Streamlit's stop
        or rerun) ends the wait, not the computation.
    poll : float, default=0.1
        Seconds between calls of ``yield_point``.

    Returns
    -------
    object
        What ``func`` returned; what it raised is raised here.

    Examples
    --------
    >>> in_worker(sum, [1, 2, 3], yield_point=lambda: None)
    6
    """
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def work() -> None:
        _lower_priority()
        try:
            outcome["value"] = func(*args, **kwargs)
        except BaseException as exc:  # handed to the waiting thread (a ValueError: the page's one sentence)
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name=f"aflite-{getattr(func, '__name__', 'table')}", daemon=True).start()
    while not done.wait(poll):
        yield_point()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _lower_priority() -> None:
    """Run the calling thread at :data:`WORKER_NICENESS` above the process's niceness (Linux: per thread)."""
    with contextlib.suppress(OSError, AttributeError, ValueError):  # another platform: as it is
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + WORKER_NICENESS))
