"""The Embedding page's tables of kept and removed rows' neighbourhoods (no widget, no session): Figure 1, Table 3.

The Figure 1 cosine similarity matrices of a class's kept and removed rows (:func:`embedding_similarity`) and the
Table 3 nearest-neighbour distances (:func:`embedding_knn`) are small tables, memoised by FilterSpec + view
parameters (:func:`._stores.memo`); Table 3 uses a seeded sample of
:data:`~aflite_app.compute.embedding.EMBED_MAX_ROWS` rows (brute-force neighbours over every row would grow as
rows²). Both come from :mod:`aflite_core.measures.geometry`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aflite_core import AFLiteResult
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
]


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
