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
The Figure 1 similarity matrices and the Table 3 kNN distances are small tables (memoised by FilterSpec + view
parameters); Table 3 uses a seeded sample of :data:`EMBED_MAX_ROWS` rows (brute-force neighbours over every row
would grow as rows²). The selection's state machine is :mod:`aflite_app.selection`, re-exported here for the page.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult
from aflite_core.measures.geometry import knn_distance_table, knn_table_wide, similarity_matrices
from aflite_core.measures.projection import (
    PCA_FIT_ROWS,
    DensityGrid,
    ValueGrid,
    density_grid,
    density_values,
    pca_2d_all,
    points_in_box,
    sample_rows,
    umap_2d,
    umap_2d_all,
)

from .. import inspect_tables, selection, settings
from ..admission import heavy
from ..jobs import BackgroundRun, remaining_text
from ..selection import (
    MAX_LASSO_VERTICES,
    MapSelection,
    after_event,
    class_counts,
    cleared,
    for_figure,
    redrawn,
    restored,
    thumbnails,
)
from ..specs import NO_SESSION, DatasetSpec, FilterSpec, SessionData
from . import _stores
from .datasets import class_names, dataset
from .dynamics import DynamicsSpec, LevelSpec, dynamics_levels, stored_dynamics
from .inspect import inspect_stability, missing_stability_runs
from .runs import run_filter

__all__ = [
    "EMBED_KNN_KS",
    "EMBED_MAX_ROWS",
    "EMBED_SEED",
    "FIELD_MODES",
    "MAP_BINS",
    "MAX_LASSO_VERTICES",
    "MAX_WORD_CHARS",
    "EmbeddingView",
    "MapField",
    "MapLayer",
    "MapSelection",
    "Projection",
    "after_event",
    "class_names",
    "cleared",
    "colour_modes",
    "describe_umap",
    "embedding_frame",
    "embedding_knn",
    "embedding_rows",
    "embedding_selection",
    "embedding_similarity",
    "embedding_view",
    "for_figure",
    "map_field",
    "map_layer",
    "redrawn",
    "restored",
    "rows_in_view",
    "selection_extent",
    "thumbnails",
    "umap_estimate",
    "word_columns",
    "word_rows",
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

#: neighbour counts of the kNN-distance table (the ICLR version's Table 3)
EMBED_KNN_KS = (1, 5, 10, 50)


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
    """The projection the page shows and the state of the UMAP job ("ready", "running", "failed", "off").

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
    else:
        left = remaining_text(view.elapsed, fraction)
    return fraction, f"Computing UMAP in the background: {view.elapsed:.0f} s{left}"


def embedding_rows(n_rows: int, max_rows: int | None = None, seed: int = EMBED_SEED) -> np.ndarray:
    """Row positions the map uses: all rows, or above ``max_rows`` (default EMBED_MAX_ROWS) a seeded sample."""
    return sample_rows(n_rows, EMBED_MAX_ROWS if max_rows is None else max_rows, random_state=seed)


def _umap_enabled() -> bool:
    return settings.load().umap


@_stores.memo("pca_projection", 8, spinner="Projecting the representation (PCA)…")
def _pca_projection(dspec: DatasetSpec, _X: np.ndarray) -> Projection:
    n = _X.shape[0]
    xy, ratio, n_fit = pca_2d_all(_X, max_fit_rows=PCA_FIT_ROWS, random_state=EMBED_SEED, n_threads=1)
    titles = [f"PCA component {i + 1} ({r:.0%} of variance)" for i, r in enumerate(ratio)]
    if len(titles) == 1:
        titles.append("(Φ has a single direction of variance)")
    return Projection("PCA", np.arange(n), xy, n, (titles[0], titles[1]), fit_rows=n_fit)


@_stores.memo("umap_job", 8)
def _umap_job(dspec: DatasetSpec, _X: np.ndarray):
    """The UMAP fit of ``dspec`` in a daemon thread, started once per (dataset, representation), and its estimate.

    the memo computes a key once even when several sessions ask at the same time (a lock per key), so
    every rerun and session asking for this projection joins the one thread.
    """
    rows = embedding_rows(_X.shape[0])
    n_rows = _X.shape[0]
    titles = ("UMAP 1 (arbitrary units)", "UMAP 2 (arbitrary units)")

    def target(callback) -> Projection:
        if n_rows <= EMBED_MAX_ROWS:
            xy = umap_2d(np.array(_X, dtype=np.float32), random_state=EMBED_SEED)
        else:  # fitted on the seeded sample, every other row placed by transform (progress per chunk)
            xy, _ = umap_2d_all(
                _X,
                max_fit_rows=EMBED_MAX_ROWS,
                random_state=EMBED_SEED,
                progress=lambda done, total: callback(done / total),
            )
        with _umap_compiled_lock:
            _umap_compiled.add(_umap_path(len(rows)))
        return Projection("UMAP", np.arange(n_rows), xy, n_rows, titles, fit_rows=len(rows))

    # a heavy job: it waits its turn in the server's queue (aflite_app.admission.heavy), its place shown on the page
    job = BackgroundRun(dspec, heavy(target, "a UMAP projection")).start()
    return job, umap_estimate(len(rows), n_total=n_rows)  # the estimate as it starts


def embedding_view(dspec: DatasetSpec, method: str = "UMAP", *, session: SessionData = NO_SESSION) -> EmbeddingView:
    """The map to show for ``dspec``: UMAP once its background fit is done, PCA until then (or on request).

    The UMAP job starts on the first call for a (dataset, representation) and is never restarted; setting
    ``AFLITE_APP_UMAP=0`` turns it off (PCA only).
    """
    X = dataset(dspec, session=session).representation(dspec.representation)
    pca = _pca_projection(dspec, X)
    if not _umap_enabled():
        return EmbeddingView(pca, "off", "UMAP is turned off on this server (AFLITE_APP_UMAP=0).")
    job, estimate = _umap_job(dspec, X)
    if job.done and job.error is None:
        return EmbeddingView(job.result if method == "UMAP" else pca, "ready", elapsed=job.elapsed)
    if job.done:
        return EmbeddingView(pca, "failed", f"UMAP failed ({type(job.error).__name__}: {job.error}).")
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

    The counts (see :func:`aflite_app.selection.selection_table`) get ``per_class``: the selected, kept and removed
    rows of each class (:func:`aflite_app.selection.class_counts`).
    """
    data, result = dataset(spec.dataset, session=session), run_filter(spec, session=session)
    table, counts = selection.selection_table(data, result, rows, cap=cap, offset=offset)
    counts["per_class"] = class_counts(data, result, rows)
    return table, counts


#: the map's colourings by a per-row field (beyond kept / removed, round removed and class): key -> label
FIELD_MODES = {
    "p_last": "predictability (last round)",
    "p_removal": "predictability at removal",
    "word": "a word's presence",
    "difficulty": "difficulty level (Training dynamics)",
    "stability": "stability across seeds",
}
#: characters of a typed word at most
MAX_WORD_CHARS = 50
#: the difficulty levels, in order
DIFFICULTY_LEVELS = ("easy", "ambiguous", "hard")


@dataclass(frozen=True, eq=False)
class MapField:
    """A per-row field the map is coloured by (one of :data:`FIELD_MODES`).

    ``values`` has one number per row: a float (NaN: the row has none) for ``kind`` "number" (a cell shows the
    mean) and "share" (0/1: a cell shows the share of its rows with a 1), or a category code for ``kind``
    "category" (``categories`` names them; a cell shows the most common one). ``title`` heads the colour bar or
    legend; ``meaning`` says in words what a point's and a cell's colour mean; ``key`` identifies the field (memo key).
    """

    values: np.ndarray
    kind: str
    title: str
    meaning: str
    key: tuple
    categories: tuple[str, ...] = ()
    value_name: str = ""


def word_columns(data) -> list[str]:
    """The text columns a typed word is looked for in (premise / hypothesis first; [] without text)."""
    frame = getattr(data, "frame", None)
    if frame is None:
        return []
    return [c for c in inspect_tables.text_display_columns(data) if c in frame.columns]


def word_rows(data, word: str) -> np.ndarray:
    """Which rows contain ``word`` in any of :func:`word_columns`: whole words, case-insensitive (bool per row).

    ``word`` may be a phrase ("is sleeping"); it matches where it is not part of a longer word ("sleep" does not
    match "sleeping"). ValueError (one sentence) without text columns or for an empty or too long word.
    """
    columns = word_columns(data)
    if not columns:
        raise ValueError("This dataset has no text column, so the map cannot be coloured by a word.")
    word = " ".join(str(word).split())
    if not word:
        raise ValueError("Type a word to colour the map by the rows that contain it.")
    if len(word) > MAX_WORD_CHARS:
        raise ValueError(
            f"The word to colour by has {len(word):,} characters, more than the {MAX_WORD_CHARS} allowed; type a "
            "shorter one."
        )
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(part) for part in word.split(" ")) + r"(?!\w)"
    hit = np.zeros(data.n_rows, dtype=bool)
    for col in columns:
        text = data.frame[col].astype("string").fillna("")
        hit |= text.str.contains(pattern, case=False, regex=True).to_numpy(dtype=bool)
    return hit


def _dynamics_ready(dspec: DatasetSpec, dynamics: DynamicsSpec | None) -> bool:
    return dynamics is not None and dynamics.dataset.key == dspec.key and stored_dynamics(dynamics) is not None


def _stability_ready(spec: FilterSpec, n_seeds: int | None, *, session: SessionData = NO_SESSION) -> bool:
    return bool(n_seeds) and n_seeds >= 2 and not missing_stability_runs(spec, int(n_seeds), session=session)


def colour_modes(
    spec: FilterSpec,
    *,
    dynamics: DynamicsSpec | None = None,
    stability_seeds: int | None = None,
    session: SessionData = NO_SESSION,
) -> list[str]:
    """The colourings the map offers for ``spec``'s run (keys; labels: ``aflite_app.charts.embedding.COLOUR_MODES``).

    Always kept / removed, round removed, class and predictability (last round, at removal); a word's presence
    when the dataset has text; the difficulty level when ``dynamics`` (the Training dynamics page's request) was
    recorded on the same dataset; stability across seeds when Inspect computed ``stability_seeds`` seeds of this run.
    """
    data = dataset(spec.dataset, session=session)
    out = ["status", "round", "class", "p_last", "p_removal"]
    if word_columns(data):
        out.append("word")
    if _dynamics_ready(spec.dataset, dynamics):
        out.append("difficulty")
    if _stability_ready(spec, stability_seeds, session=session):
        out.append("stability")
    return out


@_stores.memo("map_word_rows", 16)
def _word_rows(dspec: DatasetSpec, word: str, *, _session: SessionData = NO_SESSION) -> np.ndarray:
    return word_rows(dataset(dspec, session=_session), word)


def map_field(
    spec: FilterSpec,
    colour: str,
    *,
    word: str = "",
    dynamics: DynamicsSpec | None = None,
    stability_seeds: int | None = None,
    session: SessionData = NO_SESSION,
) -> MapField | None:
    """The per-row field behind the colouring ``colour`` (None for kept / removed, round removed and class).

    Raises ValueError (one sentence) when the field is not available: no text for a word, no Training dynamics
    of these rows, stability not computed.
    """
    if colour not in FIELD_MODES:
        return None
    data, result = dataset(spec.dataset, session=session), run_filter(spec, session=session)
    if colour == "p_last":
        values = np.asarray(result.last_score, dtype=np.float64)
        return MapField(
            values,
            "number",
            "p, last<br>round scored",
            "predictability in the last round the row was scored (the share of out-of-sample models that predicted "
            "its label; dark = low, yellow = high)",
            ("p_last",),
            value_name="p (last round scored)",
        )
    if colour == "p_removal":
        values = np.asarray(result.removal_score, dtype=np.float64)
        return MapField(
            values,
            "number",
            "p at<br>removal",
            "predictability in the round the row was removed (dark = low, yellow = high; kept rows have none and "
            "are grey)",
            ("p_removal",),
            value_name="p at removal",
        )
    if colour == "word":
        word = " ".join(str(word).split())
        if not word:
            raise ValueError("Type a word to colour the map by the rows that contain it.")
        hit = _word_rows(spec.dataset, word.lower(), _session=session)
        cols = ", ".join(word_columns(data))
        return MapField(
            hit.astype(np.float64),
            "share",
            f"share of rows<br>with '{word}'",
            f"whether a row contains the word '{word}' (whole word, any case, in {cols}): {int(hit.sum()):,} of "
            f"{data.n_rows:,} rows do",
            ("word", word.lower()),
            categories=(f"without '{word}'", f"with '{word}'"),
            value_name=f"contains '{word}'",
        )
    if colour == "difficulty":
        if not _dynamics_ready(spec.dataset, dynamics):
            raise ValueError(
                "No Training dynamics of these rows in this session: record them on the Training dynamics page first."
            )
        levels = dynamics_levels(dynamics, LevelSpec(), session=session).levels
        if len(levels) == data.n_rows:
            named = levels.astype(str).to_numpy()
        else:
            named = levels.astype(str).reindex(np.asarray(data.ids)).fillna("").to_numpy()
        codes = np.full(data.n_rows, -1, dtype=np.int64)
        for i, name in enumerate(DIFFICULTY_LEVELS):
            codes[named == name] = i
        return MapField(
            codes.astype(np.float64),
            "category",
            "difficulty<br>level",
            "the row's difficulty level from its training dynamics (Gaussian mixture, as on the Training dynamics "
            "page's default)",
            ("difficulty", dynamics),
            categories=DIFFICULTY_LEVELS,
            value_name="difficulty level",
        )
    if not _stability_ready(spec, stability_seeds, session=session):
        raise ValueError(
            "Stability across seeds is not computed for this run: compute it in Inspect's 'Stability across seeds' "
            "tab first."
        )
    frame, _, _ = inspect_stability(spec, int(stability_seeds), session=session)
    values = np.asarray(frame["removal_frequency"], dtype=np.float64)
    return MapField(
        values,
        "number",
        "removed in<br>share of seeds",
        f"the share of {int(stability_seeds)} AFLite seeds that removed the row (dark = never, yellow = always)",
        ("stability", int(stability_seeds)),
        value_name="share of seeds removing it",
    )


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
    idx = np.asarray(rows if isinstance(rows, np.ndarray) else list(rows), dtype=np.intp)
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
    sim = similarity_matrices(
        X, data.y, _result.kept, n_per_group=n_per_group, classes=[label_code], random_state=seed
    )[0]
    in_class = data.y == label_code
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
