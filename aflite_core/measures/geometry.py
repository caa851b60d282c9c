"""Where the kept and removed rows lie: kNN distances and cosine-similarity heatmaps.

The kNN-distance table is the ICLR version's Table 3; the heatmaps are ICML 2020's Figure 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from .._utils import blas_threads
from ..engine.result import AFLiteResult
from ._args import (
    _check_groups,
    _check_ks,
    _encode_labels,
    _kept_mask,
    _normalise_rows,
    _rng,
)

__all__ = ["DEFAULT_KS", "ClassSimilarity", "knn_distance_table", "knn_table_wide", "similarity_matrices"]


#: the k of the kNN-distance table (ICLR version, Table 3: Top1, Top5, Top10, Top50)
DEFAULT_KS = (1, 5, 10, 50)


#: bytes of the similarity block computed at once by the kNN table
_KNN_CHUNK_BYTES = 32 * 2**20


# -- kNN distances (ICLR version, Table 3) -------------------------------------------------------------------
def _heldout_split(n: int, codes: NDArray, groups: NDArray | None, test_size: float, rng) -> NDArray[np.bool_]:
    """Seeded held-out side: stratified by class, or whole groups until ``test_size`` of the rows."""
    if groups is None:
        counts = np.bincount(codes)
        take = np.round(counts * test_size).astype(int)
        keys = rng.random(n)
        order = np.lexsort((keys, codes))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - np.repeat(starts, counts)
        return rank < take[codes]
    n_groups = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=n_groups)
    perm = rng.permutation(n_groups)
    cum = np.cumsum(sizes[perm])
    chosen = perm[: int(np.searchsorted(cum, test_size * n)) + 1]
    held = np.zeros(n_groups, dtype=bool)
    held[chosen] = True
    return held[groups]


def _topk_distances(Q: NDArray[np.float32], T: NDArray[np.float32], K: int, chunk_bytes: int) -> NDArray[np.float32]:
    """Sorted cosine distances (ascending) of every row of Q to its K nearest rows of T (both L2-normalised)."""
    out = np.empty((Q.shape[0], K), dtype=np.float32)
    if K == 0:
        return out
    step = max(1, chunk_bytes // max(1, 4 * T.shape[0]))
    for start in range(0, Q.shape[0], step):
        sims = Q[start : start + step] @ T.T
        if K < sims.shape[1]:
            part = np.argpartition(-sims, K - 1, axis=1)[:, :K]
            sims = np.take_along_axis(sims, part, axis=1)
        sims = -np.sort(-sims, axis=1)
        out[start : start + step] = 1.0 - sims
    return out


def knn_distance_table(
    X: ArrayLike,
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    test_size: float = 0.2,
    heldout: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    control: bool = True,
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
) -> pd.DataFrame:
    """Cosine distances from held-out rows to their k nearest training rows, before and after AFLite.

    The ICLR version's Table 3: for every held-out row, the sum of the cosine distances (1 − cos) to its k
    nearest training rows (the table's magnitudes grow with k, so they are sums), averaged over the held-out
    rows of a class; within the same class ("entailment") and against the training rows of all other classes
    ("entailment vs others"). Larger means held-out rows are farther from anything in training: a more
    diverse, less redundant set.

    What "before" and "after" mean here: the rows are split once (seeded) into a training side and a
    held-out side, and that split is shared by every stage, so stages differ only by the filtering.
    ``before``: all training-side rows as neighbours, all held-out-side rows as queries (the full data).
    ``after``: only *kept* training-side rows as neighbours and only *kept* held-out-side rows as queries
    (the filtered data split the same way: AFLite filters train and held-out data alike, as the paper's
    filtered benchmarks do). ``random`` (with ``control``): a random subset of each side of the same size as
    the kept part of that side, to separate the effect of *which* rows AFLite keeps from the effect of
    having fewer rows (fewer neighbours are farther away even without any selection).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features; they are L2-normalised (a zero row has distance 1 to everything).
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    ks : sequence of int, default=(1, 5, 10, 50)
        Neighbour counts. A k larger than the training pool of a class uses the whole pool (``k_used``).
    test_size : float, default=0.2
        Share of rows on the held-out side (stratified by class, or whole groups with ``groups``).
    heldout : boolean array of shape (n_samples,), optional
        The held-out side, instead of a random split.
    groups : array-like of shape (n_samples,), optional
        Group ids kept on one side (e.g. premises), for the random split.
    control : bool, default=True
        Add the ``random`` stage.
    random_state : int, numpy Generator or None
        Seed of the split and of the control subset.
    n_threads : int or None, default=1
        BLAS threads for the similarity products.

    Returns
    -------
    pandas.DataFrame
        One row per (stage, class, comparison, k): ``stage`` ("before", "after", "random"), ``label`` (class
        of the held-out rows), ``comparison`` ("same class" or "other classes"), ``row`` (the table's row name,
        "entailment" or "entailment vs others"), ``k, k_used, distance_sum`` (mean over held-out rows of the
        sum over the k nearest), ``distance_mean`` (= distance_sum / k_used), ``n_heldout`` (query rows),
        ``n_pool`` (candidate neighbours). Rows with no query or no pool are left out.
        :func:`knn_table_wide` lays it out like the paper.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 0], [0.6, 0.8], [0, 1], [1, 0], [0, 1]])   # the last two rows are held out
    >>> y = np.array(["a", "a", "b", "a", "b"]); held = np.array([0, 0, 0, 1, 1], bool)
    >>> t = knn_distance_table(X, y, np.ones(5, bool), ks=[1, 2], heldout=held, control=False)
    >>> wide = knn_table_wide(t)["before"].round(2)
    >>> wide.index.tolist(), wide.values.tolist()
    (['a', 'b', 'a vs others', 'b vs others'], [[0.0, 0.4], [0.0, 0.0], [1.0, 1.0], [0.2, 1.2]])
    """
    func = "knn_distance_table"
    Xv = v.check_features(X, "X", func)
    n = Xv.shape[0]
    labels = _encode_labels(y, func, n)
    mask = _kept_mask(kept, n, func)
    K_list = _check_ks(ks, func)
    tsize = v.check_open_fraction(test_size, "test_size", func)
    grp = _check_groups(groups, n, func)
    held = None if heldout is None else _kept_mask(heldout, n, func, "heldout")
    threads = v.check_n_threads(n_threads, func)
    rng = _rng(random_state, func)
    codes = labels.codes
    C = labels.n_classes
    if held is None:
        held = _heldout_split(n, codes, grp, tsize, rng)
    if held.all() or not held.any():
        raise ValueError(
            f"The 'heldout' parameter of {func} must leave rows on both sides. Got "
            f"{int(held.sum())} held-out rows of {n} instead."
        )
    stages: dict[str, NDArray[np.bool_]] = {"before": np.ones(n, dtype=bool), "after": mask}
    if control:
        ctrl = np.zeros(n, dtype=bool)
        for side in (held, ~held):
            idx = np.flatnonzero(side)
            ctrl[idx[rng.permutation(len(idx))[: int(mask[side].sum())]]] = True
        stages["random"] = ctrl
    Z = _normalise_rows(Xv)
    q_rows = np.flatnonzero(held)
    t_rows = np.flatnonzero(~held)
    Kmax = max(K_list)
    records = []
    with blas_threads(threads):
        Q = Z[q_rows]
        for stage, sel in stages.items():
            q_sel = sel[q_rows]
            t_sel = sel[t_rows]
            # nearest neighbours of every query within each class pool of this stage
            per_class: list[NDArray[np.float32]] = []
            for c in range(C):
                pool = t_rows[t_sel & (codes[t_rows] == c)]
                per_class.append(_topk_distances(Q[q_sel], Z[pool], min(Kmax, len(pool)), _KNN_CHUNK_BYTES))
            q_codes = codes[q_rows[q_sel]]
            pool_counts = np.bincount(codes[t_rows[t_sel]], minlength=C)
            records += _stage_records(stage, per_class, q_codes, pool_counts, labels.classes, K_list)
    return pd.DataFrame.from_records(
        records,
        columns=[
            "stage",
            "label",
            "comparison",
            "row",
            "k",
            "k_used",
            "distance_sum",
            "distance_mean",
            "n_heldout",
            "n_pool",
        ],
    )


def _stage_records(
    stage: str,
    per_class: list[NDArray[np.float32]],
    q_codes: NDArray,
    pool_counts: NDArray,
    classes: Sequence,
    K_list: list[int],
) -> list[dict]:
    """The rows of :func:`knn_distance_table` for one stage: per class of the queries, same class and other classes.

    ``per_class[c]`` holds every query's sorted distances to its nearest rows of class ``c`` in the stage's pool.
    """
    Kmax = max(K_list)
    records = []
    for c in range(len(per_class)):
        qi = q_codes == c
        if not qi.any():
            continue
        others = [per_class[o][qi] for o in range(len(per_class)) if o != c]
        other = np.sort(np.concatenate(others, axis=1), axis=1)[:, :Kmax] if others else np.empty((qi.sum(), 0))
        for comparison, D, n_pool in (
            ("same class", per_class[c][qi], int(pool_counts[c])),
            ("other classes", other, int(pool_counts.sum() - pool_counts[c])),
        ):
            if D.shape[1] == 0:
                continue
            csum = np.cumsum(D, axis=1, dtype=np.float64)
            for k in K_list:
                k_used = min(k, D.shape[1])
                total = float(csum[:, k_used - 1].mean())
                records.append(
                    {
                        "stage": stage,
                        "label": classes[c],
                        "comparison": comparison,
                        "row": str(classes[c]) + (" vs others" if comparison == "other classes" else ""),
                        "k": k,
                        "k_used": k_used,
                        "distance_sum": total,
                        "distance_mean": total / k_used,
                        "n_heldout": int(qi.sum()),
                        "n_pool": n_pool,
                    }
                )
    return records


def knn_table_wide(table: pd.DataFrame, *, value: str = "distance_sum") -> pd.DataFrame:
    """Lay a :func:`knn_distance_table` frame out like the paper: one row per class, columns (stage, TopK).

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`knn_distance_table`.
    value : {"distance_sum", "distance_mean"}, default="distance_sum"
        The number shown.

    Returns
    -------
    pandas.DataFrame
        Index: the table's row names, same-class rows first, then the "vs others" rows; columns: a
        MultiIndex (stage, "Top{k}").
    """
    if value not in ("distance_sum", "distance_mean"):
        raise v.param_error("value", "knn_table_wide", "'distance_sum' or 'distance_mean'", value)
    if not isinstance(table, pd.DataFrame) or not {"stage", "row", "k", value} <= set(table.columns):
        raise v.param_error("table", "knn_table_wide", "a frame returned by knn_distance_table", table, TypeError)
    wide = table.assign(top=lambda f: "Top" + f["k"].astype(str)).pivot_table(
        index="row", columns=["stage", "top"], values=value, sort=False
    )
    stage_order = [s for s in ("before", "after", "random") if s in wide.columns.get_level_values(0)]
    top_order = ["Top" + str(k) for k in sorted(table["k"].unique())]
    wide = wide.reindex(columns=pd.MultiIndex.from_product([stage_order, top_order]))
    same = table.loc[table["comparison"] == "same class", "row"].unique().tolist()
    other = table.loc[table["comparison"] == "other classes", "row"].unique().tolist()
    wide = wide.reindex([*same, *other])
    wide.index.name = None
    return wide


# -- cosine-similarity heatmaps (Figure 1) -------------------------------------------------------------------
@dataclass(frozen=True)
class ClassSimilarity:
    """Pairwise cosine similarities of sampled retained and removed rows of one class (Figure 1).

    Attributes
    ----------
    label : object
        The class.
    retained_rows, removed_rows : ndarray of int
        Row indices sampled (into X), retained first in ``matrix``.
    matrix : ndarray of float32, shape (n_r + n_m, n_r + n_m)
        Cosine similarities of ``[retained_rows, removed_rows]``; the top-left block is retained vs retained,
        the bottom-right removed vs removed.
    mean_retained_all, mean_removed_all : float
        Mean pairwise cosine similarity (off-diagonal) over *all* retained / removed rows of the class, not
        only the sample; lower means more diverse. NaN with fewer than 2 rows.
    """

    label: Any
    retained_rows: NDArray[np.intp]
    removed_rows: NDArray[np.intp]
    matrix: NDArray[np.float32]
    mean_retained_all: float
    mean_removed_all: float

    @property
    def retained(self) -> NDArray[np.float32]:
        """Retained vs retained block."""
        r = len(self.retained_rows)
        return self.matrix[:r, :r]

    @property
    def removed(self) -> NDArray[np.float32]:
        """Removed vs removed block."""
        r = len(self.retained_rows)
        return self.matrix[r:, r:]

    @property
    def mean_retained(self) -> float:
        """Mean off-diagonal similarity of the sampled retained rows."""
        return _mean_offdiag(self.retained)

    @property
    def mean_removed(self) -> float:
        """Mean off-diagonal similarity of the sampled removed rows."""
        return _mean_offdiag(self.removed)


def _mean_offdiag(S: NDArray) -> float:
    n = S.shape[0]
    if n < 2:
        return float("nan")
    return float((S.sum(dtype=np.float64) - np.trace(S, dtype=np.float64)) / (n * (n - 1)))


def _mean_pairwise_cosine(Z: NDArray[np.float32]) -> float:
    """Mean off-diagonal cosine similarity of L2-normalised rows in O(n·d): (‖Σz‖² − Σ‖z‖²) / (n(n−1))."""
    n = Z.shape[0]
    if n < 2:
        return float("nan")
    s = Z.sum(axis=0, dtype=np.float64)
    sq = float(np.einsum("ij,ij->", Z, Z, dtype=np.float64))
    return float((s @ s - sq) / (n * (n - 1)))


def similarity_matrices(
    X: ArrayLike,
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    n_per_group: int = 10,
    classes: Sequence[Any] | None = None,
    random_state: int | np.random.Generator | None = None,
) -> list[ClassSimilarity]:
    """Cosine-similarity matrices of a seeded sample of retained and removed rows, per class (Figure 1).

    Figure 1 of the paper shows, per class, retained images next to removed ones with their pairwise cosine
    similarity: retained rows are more diverse (lower similarity). Per class this samples up to
    ``n_per_group`` retained and ``n_per_group`` removed rows without replacement and returns their
    similarity matrix, plus the mean pairwise similarity over *all* retained and removed rows of the class.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features (cosine similarity of the rows).
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    n_per_group : int, default=10
        Rows sampled per class and side.
    classes : sequence, optional
        Classes to include, in this order; default: all, in the label order.
    random_state : int, numpy Generator or None
        Seed of the sample.

    Returns
    -------
    list of ClassSimilarity
        One per class.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 0], [0, 1], [1, 1], [1, 0.1], [1, 0.2], [1, 0]])
    >>> y = np.zeros(6, int); y[5] = 1
    >>> kept = np.array([1, 1, 1, 0, 0, 0], bool)
    >>> s = similarity_matrices(X, y, kept, random_state=0)[0]
    >>> s.matrix.shape, bool(s.mean_retained_all < s.mean_removed_all)
    ((5, 5), True)
    """
    func = "similarity_matrices"
    Xv = v.check_features(X, "X", func)
    n = Xv.shape[0]
    labels = _encode_labels(y, func, n)
    mask = _kept_mask(kept, n, func)
    per = v.check_int(n_per_group, "n_per_group", func, low=1)
    if classes is None:
        wanted = list(range(labels.n_classes))
    else:
        lookup = {c: i for i, c in enumerate(labels.classes)}
        wanted = []
        for c in classes:
            key = c.item() if isinstance(c, np.generic) else c
            if key not in lookup:
                raise v.param_error("classes", func, f"a sequence of classes among {list(labels.classes)[:10]}", c)
            wanted.append(lookup[key])
    rng = _rng(random_state, func)
    Z = _normalise_rows(Xv)
    out = []
    for c in wanted:
        ret = np.flatnonzero(mask & (labels.codes == c))
        rem = np.flatnonzero(~mask & (labels.codes == c))
        r_s = np.sort(ret[rng.permutation(len(ret))[:per]])
        m_s = np.sort(rem[rng.permutation(len(rem))[:per]])
        rows = np.concatenate([r_s, m_s])
        S = Z[rows] @ Z[rows].T
        out.append(
            ClassSimilarity(
                label=labels.classes[c],
                retained_rows=r_s,
                removed_rows=m_s,
                matrix=S.astype(np.float32),
                mean_retained_all=_mean_pairwise_cosine(Z[ret]),
                mean_removed_all=_mean_pairwise_cosine(Z[rem]),
            )
        )
    return out
