"""The Embedding map page: a 2-D map of the run's representation Φ, the rows selected on it, Figure 1 and Table 3.

The map places every row. PCA comes at once (memoised by DatasetSpec, :func:`._stores.memo`; its axes are fitted on
at most :data:`~aflite_core.measures.projection.PCA_FIT_ROWS` rows and every row is projected) and UMAP from a
background thread started once per DatasetSpec (a store entry holding the BackgroundRun; above
:data:`EMBED_MAX_ROWS` rows it is fitted on a seeded sample of that many rows and applied to every other row with
``transform``, reporting progress per chunk); the page polls until UMAP is ready and swaps it in. Both come from
:mod:`aflite_core.measures.projection`.

What the map draws is a :class:`MapLayer` (:func:`map_layer`): the rows in view as points once there are at most
:data:`EMBED_MAX_ROWS` of them, else a density image (a 2-D histogram per category: O(bins²) numbers whatever the rows).
A box or lasso is evaluated over every row from its geometry (:func:`aflite_app.selection.rows_in_geometry`).
The colourings by a per-row field are :mod:`aflite_app.compute.map_fields`; the Figure 1 similarity matrices and
the Table 3 kNN distances :mod:`aflite_app.compute.neighbourhoods`. The selection's state machine is
:mod:`aflite_app.selection`, re-exported here for the page.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult, _child_process
from aflite_core._child_process import ChildStopped, run_stoppable
from aflite_core.measures.map_grids import DensityGrid, ValueGrid, density_grid, density_values, points_in_box
from aflite_core.measures.projection import (
    PCA_FIT_ROWS,
    pca_2d_all,
    sample_rows,
    umap_2d,
    umap_2d_all,
)

from .. import settings
from ..admission import heavy
from ..jobs import BackgroundRun, Stopped, remaining_text, time_left_text
from ..map_table import class_counts, selection_table, thumbnails
from ..selection import (
    MAX_LASSO_VERTICES,
    MapSelection,
    after_event,
    cleared,
    for_figure,
    prepare_lasso,
    redrawn,
    restored,
)
from ..specs import NO_SESSION, DatasetSpec, FilterSpec, SessionData
from . import _stores
from .datasets import class_names, dataset
from .map_fields import MapField
from .runs import run_filter

__all__ = [
    "EMBED_MAX_ROWS",
    "EMBED_SEED",
    "MAP_BINS",
    "MAX_LASSO_VERTICES",
    "EmbeddingView",
    "MapLayer",
    "MapSelection",
    "Projection",
    "after_event",
    "class_names",
    "cleared",
    "describe_umap",
    "embedding_frame",
    "embedding_rows",
    "embedding_selection",
    "embedding_view",
    "for_figure",
    "map_layer",
    "prepare_lasso",
    "redrawn",
    "restart_umap",
    "restored",
    "rows_in_view",
    "selection_extent",
    "stop_umap",
    "thumbnails",
    "umap_estimate",
    "umap_off_reason",
]

#: rows the map draws as points at most (more in view: a density image); rows above which UMAP is fitted on a
#: seeded sample of this many rows (and applied to the others) and the kNN table uses such a sample
EMBED_MAX_ROWS = settings.load().embed_max_rows
#: bins along each axis of the density image
MAP_BINS = 200
#: seed of that sample and of the UMAP fit
EMBED_SEED = 0
#: UMAP (umap-learn) takes an exact neighbour search below this many rows, NN-descent from it on
_UMAP_EXACT_BELOW = 4096
#: seconds of the first UMAP fit of each path in a server process (numba compiling, not interruptible), measured
#: on a busy 2-core machine with NUMBA_CACHE_DIR set: 1,438 rows 21 s (92 s with an empty cache), 5,000 rows 79 s
_UMAP_FIRST_FIT = {"exact": 20.0, "nndescent": 75.0}
#: seconds of a UMAP fit once compiled: a + b · rows (1,438 rows: 5.7 s; 12,000 × 128: 13.7 s, same machine)
_UMAP_FIT = (4.6, 7.6e-4)
#: seconds per row of UMAP's ``transform`` of the rows outside the fitted sample, in chunks of 32,768 rows (30
#: epochs each): 9-11 s per chunk of 384 features on the same busy 2-core machine (load 5-10)
_UMAP_TRANSFORM = 3.2e-4
#: the paths fitted once in this process (their code is compiled)
_umap_compiled: set[str] = set()
_umap_compiled_lock = threading.Lock()


@dataclass(frozen=True, eq=False)
class Projection:
    """2-D coordinates of (a seeded sample of) a dataset's rows.

    ``rows`` are row positions in the dataset, ``xy`` their coordinates (one row each), ``n_rows`` the
    dataset's size (more than ``len(rows)`` when the projection used a sample).
    """

    method: str
    rows: np.ndarray
    xy: np.ndarray
    n_rows: int
    axis_titles: tuple[str, str]
    #: rows the projection was fitted on (PCA's axes, UMAP's fit); every row is placed either way
    fit_rows: int = 0

    @property
    def sampled(self) -> bool:
        """True when only a sample of the rows was projected."""
        return len(self.rows) < self.n_rows

    @property
    def fitted_on_sample(self) -> bool:
        """True when the projection was fitted on a sample of the rows and applied to the others."""
        return 0 < self.fit_rows < self.n_rows


@dataclass(frozen=True, eq=False)
class EmbeddingView:
    """The projection the page shows and the state of its UMAP job.

    ``umap_status`` is "ready", "running", "stopping", "stopped", "failed" or "off";
    ``elapsed`` is the UMAP job's seconds so far (or in all, once ready); ``estimate`` its expected seconds.
    """

    projection: Projection
    umap_status: str
    message: str = ""
    elapsed: float = 0.0
    estimate: float = 0.0
    #: share of the rows UMAP has placed so far (None until its fit on the sample is done)
    fraction: float | None = None


def _umap_path(n_rows: int) -> str:
    return "exact" if n_rows < _UMAP_EXACT_BELOW else "nndescent"


def umap_estimate(n_rows: int, compiled: bool | None = None, *, n_total: int | None = None) -> float:
    """Rough seconds of a UMAP fit of ``n_rows`` rows on this server (its first fit also compiles, with numba).

    ``compiled`` says whether this process has fitted that size class before (default: as it has);
    ``n_total`` (more than ``n_rows``) adds the ``transform`` of the other rows.
    """
    path = _umap_path(n_rows)
    if compiled is None:
        with _umap_compiled_lock:
            compiled = path in _umap_compiled
    a, b = _UMAP_FIT
    rest = max(0, (n_total or n_rows) - n_rows)
    return float(a + b * n_rows + _UMAP_TRANSFORM * rest + (0.0 if compiled else _UMAP_FIRST_FIT[path]))


def describe_umap(view: EmbeddingView) -> tuple[float, str]:
    """The progress bar of a running UMAP fit: ``(fraction, text)`` from its elapsed seconds and the estimate.

    The fit cannot report from inside numba, so the fraction is elapsed / estimate (held below 1 until done).
    """
    if view.message:  # waiting for its turn in the heavy-job queue: its place in line
        return 0.0, view.message
    fraction = min(0.97, view.elapsed / view.estimate) if view.estimate > 0 else 0.0
    if view.fraction is not None:  # fitted on the sample; the other rows are placed chunk by chunk
        fraction = min(0.99, max(fraction, view.fraction))
        left = remaining_text(view.elapsed, fraction)
        return (
            fraction,
            f"Computing UMAP in the background: {view.fraction:.0%} of the rows placed, {view.elapsed:.0f} s{left}",
        )
    if view.elapsed > view.estimate:
        left = " · taking longer than estimated (the server is busy)"
    else:  # from the first report: the estimate (the calibrated fit + transform model) less the time so far
        left = time_left_text(view.estimate - view.elapsed, view.elapsed, fraction) or " · finishing"
    return fraction, f"Computing UMAP in the background: {view.elapsed:.0f} s{left}"


def embedding_rows(n_rows: int, max_rows: int | None = None, seed: int = EMBED_SEED) -> np.ndarray:
    """Row positions the map uses: all rows, or above ``max_rows`` (default EMBED_MAX_ROWS) a seeded sample."""
    return sample_rows(n_rows, EMBED_MAX_ROWS if max_rows is None else max_rows, random_state=seed)


def _umap_enabled() -> bool:
    return settings.load().umap


#: why the Embedding page offers PCA only when the server's settings turn UMAP off
UMAP_OFF = "UMAP is turned off on this server (AFLITE_APP_UMAP=0)."


def umap_off_reason() -> str | None:
    """Why this server computes no UMAP (one sentence), or None when it does (``AFLITE_APP_UMAP``, read now)."""
    return None if _umap_enabled() else UMAP_OFF


@_stores.memo("pca_projection", 8, spinner="Projecting the representation (PCA)…")
def _pca_projection(dspec: DatasetSpec, _X: np.ndarray) -> Projection:
    n = _X.shape[0]
    xy, ratio, n_fit = pca_2d_all(_X, max_fit_rows=PCA_FIT_ROWS, random_state=EMBED_SEED, n_threads=1)
    titles = [f"PCA component {i + 1} ({r:.0%} of variance)" for i, r in enumerate(ratio)]
    if len(titles) == 1:
        titles.append("(Φ has a single direction of variance)")
    return Projection("PCA", np.arange(n), xy, n, (titles[0], titles[1]), fit_rows=n_fit)


@_stores.memo("umap_job", 8)
def _umap_job(dspec: DatasetSpec, _X: np.ndarray, attempt: int = 0):
    """The UMAP fit of ``dspec`` in a daemon thread, started once per (dataset, representation), and its estimate.

    the memo computes a key once even when several sessions ask at the same time (a lock per key), so
    every rerun and session asking for this projection joins the one thread. ``attempt`` counts the restarts after
    a Stop (:func:`restart_umap`): each is a new job.
    """
    rows = embedding_rows(_X.shape[0])
    n_rows = _X.shape[0]
    titles = ("UMAP 1 (arbitrary units)", "UMAP 2 (arbitrary units)")
    small = n_rows <= EMBED_MAX_ROWS
    cells = int(n_rows) * int(_X.shape[1])
    # a child process (Stop ends it at once) unless child processes are off or a small fit ends soon anyway
    in_child = settings.load().child_processes and not (small and cells < _child_process.MIN_CELLS)

    def target(callback) -> Projection:
        # Stop ends the fit at once: it runs in a child process that a stop terminates (aflite_core._child_process)
        def stop() -> bool:
            return not callback.step(None)

        if small:
            xy = run_stoppable(
                umap_2d,
                np.array(_X, dtype=np.float32),
                random_state=EMBED_SEED,
                stop=stop,
                what="the UMAP fit",
                cells=cells,
            )
        else:  # fitted on the seeded sample, every other row placed by transform (progress per chunk)
            xy, _ = umap_2d_all(
                _X,
                max_fit_rows=EMBED_MAX_ROWS,
                random_state=EMBED_SEED,
                progress=lambda done, total: callback(done / total),
                stop=stop,
            )
        if not in_child:  # compiled in this process (a child's compiled code ends with it)
            with _umap_compiled_lock:
                _umap_compiled.add(_umap_path(len(rows)))
        return Projection("UMAP", np.arange(n_rows), xy, n_rows, titles, fit_rows=len(rows))

    # a heavy job: it waits its turn in the server's queue (aflite_app.admission.heavy), its place shown on the page
    job = BackgroundRun(dspec, heavy(target, "a UMAP projection")).start()
    compiled = False if in_child else None
    return job, umap_estimate(len(rows), compiled, n_total=n_rows)  # the estimate as it starts


#: restarts of each dataset's UMAP job after a Stop (the memo key's ``attempt``)
_umap_attempts: dict[DatasetSpec, int] = {}
_umap_attempts_lock = threading.Lock()


def _umap_attempt(dspec: DatasetSpec) -> int:
    with _umap_attempts_lock:
        return _umap_attempts.get(dspec, 0)


def stop_umap(dspec: DatasetSpec, *, session: SessionData = NO_SESSION) -> None:
    """Stop ``dspec``'s running UMAP job (for every session: it is one job per server; PCA stays on the map)."""
    X = dataset(dspec, session=session).representation(dspec.representation)
    job, _ = _umap_job(dspec, X, _umap_attempt(dspec))
    job.stop()


def restart_umap(dspec: DatasetSpec, *, session: SessionData = NO_SESSION) -> None:
    """Start ``dspec``'s UMAP job again after a Stop (the next :func:`embedding_view` starts it)."""
    with _umap_attempts_lock:
        _umap_attempts[dspec] = _umap_attempts.get(dspec, 0) + 1


def embedding_view(dspec: DatasetSpec, method: str = "UMAP", *, session: SessionData = NO_SESSION) -> EmbeddingView:
    """The map to show for ``dspec``: UMAP once its background fit is done, PCA until then (or on request).

    The UMAP job starts on the first call for a (dataset, representation); a Stop (:func:`stop_umap`) ends it
    ("stopped": PCA stays) until :func:`restart_umap`. Setting ``AFLITE_APP_UMAP=0`` turns it off (PCA only).
    """
    X = dataset(dspec, session=session).representation(dspec.representation)
    pca = _pca_projection(dspec, X)
    if not _umap_enabled():
        return EmbeddingView(pca, "off", UMAP_OFF)
    job, estimate = _umap_job(dspec, X, _umap_attempt(dspec))
    if job.done and job.error is None:
        return EmbeddingView(job.result if method == "UMAP" else pca, "ready", elapsed=job.elapsed)
    if job.done and (job.stop_requested or isinstance(job.error, Stopped | ChildStopped)):
        return EmbeddingView(pca, "stopped", "UMAP was stopped.", elapsed=job.elapsed)
    if job.done:
        return EmbeddingView(pca, "failed", f"UMAP failed ({type(job.error).__name__}: {job.error}).")
    if job.stop_requested:
        return EmbeddingView(pca, "stopping", "Stopping UMAP…", elapsed=job.elapsed, estimate=estimate)
    fraction = job.progress if isinstance(job.progress, float) else None
    return EmbeddingView(pca, "running", job.waiting or "", elapsed=job.elapsed, estimate=estimate, fraction=fraction)


def _points_frame(data, proj: Projection, result: AFLiteResult, rows: np.ndarray) -> pd.DataFrame:
    """The map's per-point table for some rows (positions into the projection, which places every row)."""
    return pd.DataFrame(
        {
            "row": rows,
            "x": proj.xy[rows, 0],
            "y": proj.xy[rows, 1],
            "id": data.ids[rows],
            "label": data.class_names_of(data.y[rows]),
            "kept": result.kept[rows],
            "removed_round": result.removed_round[rows],
            "first_score": result.first_score[rows],
            "removal_score": result.removal_score[rows],
        }
    )


@_stores.memo("embedding_frame", 16)
def _embedding_frame(
    spec: FilterSpec, method: str, _proj: Projection, _result: AFLiteResult, *, _session: SessionData = NO_SESSION
):
    data = dataset(spec.dataset, session=_session)
    rows = _proj.rows
    return pd.DataFrame(
        {
            "row": rows,
            "x": _proj.xy[:, 0],
            "y": _proj.xy[:, 1],
            "id": data.ids[rows],
            "label": data.class_names_of(data.y[rows]),
            "kept": _result.kept[rows],
            "removed_round": _result.removed_round[rows],
            "first_score": _result.first_score[rows],
            "removal_score": _result.removal_score[rows],
        }
    )


def embedding_frame(spec: FilterSpec, view: EmbeddingView, *, session: SessionData = NO_SESSION):
    """One row per mapped row: position ``row``, map coordinates ``x, y``, id, class name and the run's outcome."""
    return _embedding_frame(
        spec, view.projection.method, view.projection, run_filter(spec, session=session), _session=session
    )


def embedding_selection(spec: FilterSpec, rows, *, cap: int = 200, offset: int = 0, session: SessionData = NO_SESSION):
    """The selected rows as a display table (``cap`` rows from ``offset``) and their counts.

    The counts (see :func:`aflite_app.map_table.selection_table`) get ``per_class``: the selected, kept and removed
    rows of each class (:func:`aflite_app.map_table.class_counts`).
    """
    data, result = dataset(spec.dataset, session=session), run_filter(spec, session=session)
    table, counts = selection_table(data, result, rows, cap=cap, offset=offset)
    counts["per_class"] = class_counts(data, result, rows)
    return table, counts


@dataclass(frozen=True, eq=False)
class MapLayer:
    """What the map draws: ``kind`` "points" (``frame``: one row per point) or "density" (``grid`` or ``values``).

    ``extent`` is the view (x0, x1, y0, y1) or None for every row; ``n_in_view`` the rows inside it; ``codes`` names
    the grid's categories (class names, "kept"/"removed", "kept" and the rounds, or a field's categories). Coloured
    by a per-row field (``field``), the points' frame has its value in column ``value`` and a density image of a
    number or share is ``values`` (the mean per bin).
    """

    kind: str
    n_in_view: int
    extent: tuple[float, float, float, float] | None
    frame: pd.DataFrame | None = None
    grid: DensityGrid | None = None
    codes: tuple[str, ...] = ()
    field: MapField | None = None
    values: ValueGrid | None = None


def rows_in_view(proj: Projection, extent: tuple[float, float, float, float] | None) -> np.ndarray:
    """Row positions whose map position lies in ``extent`` (x0, x1, y0, y1); every row for None."""
    if extent is None:
        return np.arange(proj.n_rows)
    x0, x1, y0, y1 = extent
    return np.flatnonzero(points_in_box(proj.xy, (x0, x1), (y0, y1)))


def selection_extent(proj: Projection, rows, *, pad: float = 0.03) -> tuple[float, float, float, float] | None:
    """The box around some rows' map positions (padded by ``pad`` of its size), to zoom to; None without rows."""
    idx = np.asarray(rows if hasattr(rows, "__array__") else list(rows), dtype=np.intp)  # Rows: its array
    idx = idx[(idx >= 0) & (idx < proj.n_rows)]
    if not len(idx):
        return None
    xy = proj.xy[idx].astype(np.float64)
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.maximum(hi - lo, 1e-9 + 1e-6 * np.abs(hi))
    lo, hi = lo - pad * span, hi + pad * span
    return (float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1]))


@_stores.memo("map_layer", 16)
def _map_layer(
    spec: FilterSpec,
    method: str,
    colour: str,
    extent: tuple[float, float, float, float] | None,
    max_points: int,
    bins: int,
    field_key: tuple | None,
    _proj: Projection,
    _result: AFLiteResult,
    _field: MapField | None = None,
    *,
    _session: SessionData = NO_SESSION,
) -> MapLayer:
    data = dataset(spec.dataset, session=_session)
    rows = rows_in_view(_proj, extent)
    if len(rows) <= max_points:
        frame = _points_frame(data, _proj, _result, rows)
        if _field is not None:
            frame["value"] = _field.values[rows]
        return MapLayer("points", len(rows), extent, frame=frame, field=_field)
    if _field is not None and _field.kind != "category":
        grid = density_values(_proj.xy, _field.values, bins=bins, extent=extent)
        return MapLayer("density", len(rows), extent, field=_field, values=grid)
    if _field is not None:  # categories: the most common per cell; rows without one form a last category
        k = len(_field.categories)
        codes = np.where(_field.values >= 0, _field.values, k).astype(np.int64)
        names = (*_field.categories, "none")
    elif colour == "class":
        codes, names = np.asarray(data.y), tuple(class_names(data))
    elif colour == "round":
        codes = np.maximum(np.asarray(_result.removed_round), 0)
        last = int(max(_result.n_rounds, codes.max(initial=0)))
        names = ("kept", *(f"round {r}" for r in range(1, last + 1)))
    else:
        codes, names = (~np.asarray(_result.kept, dtype=bool)).astype(np.int64), ("kept", "removed")
    grid = density_grid(_proj.xy, bins=bins, extent=extent, codes=codes, n_codes=len(names))
    return MapLayer("density", len(rows), extent, grid=grid, codes=names, field=_field)


def map_layer(
    spec: FilterSpec,
    view: EmbeddingView,
    colour: str,
    extent: tuple[float, float, float, float] | None = None,
    *,
    max_points: int | None = None,
    bins: int = MAP_BINS,
    field: MapField | None = None,
    session: SessionData = NO_SESSION,
) -> MapLayer:
    """What the map draws for the view ``extent`` (None: every row).

    At most ``max_points`` (default :data:`EMBED_MAX_ROWS`) rows in view are drawn as points (a frame as
    :func:`embedding_frame`'s, for those rows only); more are binned into a ``bins × bins`` density image of every
    row in view, one layer per category of ``colour`` (class; kept / removed; kept and the round removed). Coloured
    by a per-row ``field`` (:func:`map_field`), the points carry its value and the density image holds its mean
    (a number), its share (0/1) or its most common category per cell (numpy 2-D binning on the server).
    """
    extent = None if extent is None else tuple(float(e) for e in extent)
    return _map_layer(
        spec,
        view.projection.method,
        colour,
        extent,
        EMBED_MAX_ROWS if max_points is None else int(max_points),
        int(bins),
        None if field is None else field.key,
        view.projection,
        run_filter(spec, session=session),
        field,
        _session=session,
    )
