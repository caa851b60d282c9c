"""AFOptimum against AFLite on tiny data: the exact optimum of the paper's objective (ICML 2020 §2, eq. 1 and 5).

Le Bras et al. define the representation bias R(Φ, S, M) as the expected held-out accuracy of a model of family M
trained on part of S (eq. 2) and AFOptimum as the subset S of size at least n that minimises it (eq. 1); AFLite
is the greedy approximation. On a handful of rows both can be computed exactly and compared:

* the **exact bias** here is R with q = the uniform distribution over the |S| leave-one-out splits: the mean
  leave-one-out accuracy of a ridge classifier (least squares on one-hot labels, intercept not penalised), in
  closed form from the hat matrix, so it is a deterministic function of S (:func:`exact_bias`). Its per-row terms
  (eq. 5) are the exact predictability scores: 1 when the classifier trained on the other rows of S predicts the
  row's label, else 0 (:func:`exact_scores`);
* **AFOptimum** searches every subset of exactly ``target_size`` rows (:func:`exhaustive_optimum`);
* **AFLite's strategies** (ICLR version §2: A = ``"greedy"``, one row per step; B = ``"slice"``, the k most
  predictable rows per step; C = ``"sample"``, k rows drawn with probability ∝ score by the Gumbel top-k trick)
  run with the *exact* scores instead of AFLite's estimate over random partitions, recomputed on the current set
  after every step, until the target size (:func:`greedy_filter`). Rows of equal score (the scores are 0 or 1)
  are ordered by their leave-one-out margin (gold score minus the best other class's score; larger = more
  predictable); the margin only orders rows, it never enters the objective. There is no early stop by τ: the
  comparison is at |S| = n.

So the comparison is exact against exact: it measures what greedy slicing itself costs, not the noise of
AFLite's random-partition estimate (which :func:`aflite_core.aflite` adds on real data).

References
----------
.. [1] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020, §2 (eq. 1-5, Algorithm 1).
.. [2] The ICLR 2020 submission of the same paper, §2 (the three strategies A, B, C).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v

__all__ = [
    "OPTIMUM_STRATEGIES",
    "ExactProblem",
    "GreedyRun",
    "OptimumComparison",
    "OptimumResult",
    "compare_with_optimum",
    "exact_bias",
    "exact_scores",
    "exhaustive_optimum",
    "greedy_filter",
    "optimum_cases",
    "optimum_table",
]

#: AFLite's strategies (ICLR version §2): A, B, C
OPTIMUM_STRATEGIES: tuple[str, ...] = ("greedy", "slice", "sample")
#: the most subsets :func:`exhaustive_optimum` enumerates (C(22, 11) = 705,432)
MAX_SUBSETS = 2_000_000
#: subsets scored per vectorised batch
_BATCH = 8192


@dataclass(frozen=True, eq=False)
class ExactProblem:
    """A tiny classification problem with its exact-bias settings (see :func:`exact_bias`).

    Attributes
    ----------
    X : ndarray of float64, shape (n_rows, n_features)
    codes : ndarray of int64, shape (n_rows,)
        Label codes 0 … n_classes − 1.
    n_classes : int
    penalty : float
        λ of the ridge classifier, fixed for the problem: ``alpha · trace(Σ) / d`` with Σ the centred Gram matrix
        of all rows (the default family's scaling, computed once so the bias depends on S only).
    name : str
    """

    X: NDArray[np.float64]
    codes: NDArray[np.int64]
    n_classes: int
    penalty: float
    name: str = "problem"

    @property
    def n_rows(self) -> int:
        """Rows."""
        return int(self.X.shape[0])


def _problem(X: ArrayLike, y: ArrayLike, alpha: float, func: str, name: str = "problem") -> ExactProblem:
    Xv = np.asarray(v.check_features(X, "X", func), dtype=np.float64)
    labels = v.check_labels(y, "y", func, n_rows=Xv.shape[0], min_per_class=1)
    if not v._is_real(alpha) or not math.isfinite(float(alpha)) or float(alpha) < 0:
        raise v.param_error("alpha", func, "a float in [0, inf)", alpha)
    centred = Xv - Xv.mean(axis=0)
    d = Xv.shape[1]
    penalty = float(alpha) * float(np.einsum("ij,ij->", centred, centred)) / max(d, 1)
    return ExactProblem(Xv, labels.codes.astype(np.int64), int(labels.n_classes), penalty, name)


def _loo(problem: ExactProblem, subsets: NDArray[np.intp]) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Leave-one-out correctness and margin of every row of every subset (batch × subset size), vectorised.

    The ridge fit on a subset S is W = (ZᵀZ + Λ)⁻¹ZᵀY with Z = [1, X_S], Y the one-hot labels and Λ = diag(0,
    λ, …, λ); its hat matrix H = Z(ZᵀZ + Λ)⁻¹Zᵀ gives every leave-one-out prediction in closed form:
    ŷ₋ᵢ = (ŷᵢ − hᵢᵢ yᵢ) / (1 − hᵢᵢ). A row is correct when its gold class scores strictly more than every other
    class (a tie is wrong); a row with hᵢᵢ = 1 (no other row informs its prediction) is counted wrong.
    """
    X, codes, C = problem.X, problem.codes, problem.n_classes
    B, s = subsets.shape
    Z = np.concatenate([np.ones((B, s, 1)), X[subsets]], axis=2)  # (B, s, p)
    p = Z.shape[2]
    Y = np.eye(C)[codes[subsets]]  # (B, s, C)
    G = np.einsum("bip,biq->bpq", Z, Z)
    G[:, np.arange(1, p), np.arange(1, p)] += problem.penalty
    G[:, 0, 0] += 1e-12  # keeps a degenerate subset solvable; changes nothing measurable
    Ginv_Zt = np.linalg.solve(G, np.transpose(Z, (0, 2, 1)))  # (B, p, s)
    h = np.einsum("bip,bpi->bi", Z, Ginv_Zt)
    fitted = np.einsum("bip,bpc->bic", Z, Ginv_Zt @ Y)
    denom = 1.0 - h
    ok = denom > 1e-10
    loo = (fitted - h[..., None] * Y) / np.where(ok, denom, 1.0)[..., None]
    gold = np.take_along_axis(loo, codes[subsets][..., None], axis=2)[..., 0]
    others = np.where(Y > 0, -np.inf, loo).max(axis=2)
    margin = gold - others
    correct = (margin > 0) & ok
    margin = np.where(ok, margin, -np.inf)
    return correct, margin


def exact_scores(X: ArrayLike, y: ArrayLike, subset: ArrayLike | None = None, *, alpha: float = 1e-3) -> pd.DataFrame:
    """Exact leave-one-out predictability of every row of a subset (the per-row terms of eq. 5).

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        Features Φ(X) of the whole problem.
    y : array-like of shape (n_rows,)
        Labels.
    subset : array-like of int or bool, optional
        Rows of S (positions or a mask); default all rows.
    alpha : float, default=1e-3
        Ridge strength relative to the feature scale (λ = alpha · trace(Σ)/d over all rows, as the default
        family scales it).

    Returns
    -------
    pandas.DataFrame
        One row per row of S (index: position in X): ``score`` (1.0 when the ridge classifier trained on the
        other rows of S predicts its label, else 0.0; higher means more predictable, removed first) and
        ``margin`` (gold score minus the best other class's score, leave-one-out).

    Examples
    --------
    >>> X = [[0.0], [1.0], [2.0], [3.0]]
    >>> exact_scores(X, [0, 1, 0, 1])["score"].tolist()  # alternating labels: every left-out row is misread
    [0.0, 0.0, 0.0, 0.0]
    """
    func = "exact_scores"
    problem = _problem(X, y, alpha, func)
    rows = _subset_rows(subset, problem.n_rows, func)
    correct, margin = _loo(problem, rows[None, :])
    return pd.DataFrame({"score": correct[0].astype(np.float64), "margin": margin[0]}, index=pd.Index(rows, name="row"))


def _subset_rows(subset: Any, n: int, func: str) -> NDArray[np.intp]:
    if subset is None:
        return np.arange(n)
    arr = np.asarray(subset)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise v.param_error("subset", func, f"a bool mask of length {n} or row positions", subset)
        rows = np.flatnonzero(arr)
    else:
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer) or len(np.unique(arr)) != len(arr):
            raise v.param_error("subset", func, f"distinct row positions in [0, {n}) or a bool mask", subset)
        rows = np.sort(arr.astype(np.intp))
        if len(rows) and (rows[0] < 0 or rows[-1] >= n):
            raise v.param_error("subset", func, f"distinct row positions in [0, {n}) or a bool mask", subset)
    if len(rows) < 2:
        raise v.param_error("subset", func, "at least 2 rows", subset)
    return rows


def exact_bias(X: ArrayLike, y: ArrayLike, subset: ArrayLike | None = None, *, alpha: float = 1e-3) -> float:
    """R(Φ, S, M) computed exactly: the mean leave-one-out accuracy of the ridge classifier on S.

    This is eq. 2 of Le Bras et al. with q uniform over the |S| leave-one-out splits (|T| = 1), which eq. 5 writes
    as the sum over i ∈ S of p̃(i) = (1/|S|)·[the model trained on S − {i} predicts y_i]. In [0, 1]; higher means
    the representation makes S more predictable (more biased).

    Parameters
    ----------
    X, y : array-like
        The whole problem.
    subset : array-like of int or bool, optional
        Rows of S (default all).
    alpha : float, default=1e-3
        Ridge strength (see :func:`exact_scores`).

    Returns
    -------
    float

    Examples
    --------
    >>> exact_bias([[0.0], [1.0], [2.0], [3.0], [10.0], [11.0]], [0, 1, 0, 1, 0, 0], [0, 1, 2, 3])
    0.0
    """
    return float(exact_scores(X, y, subset, alpha=alpha)["score"].mean())


@dataclass(frozen=True, eq=False)
class OptimumResult:
    """The exhaustive search's outcome (see :func:`exhaustive_optimum`).

    Attributes
    ----------
    subset : ndarray of intp
        Rows of the optimal subset (the first in lexicographic order when several tie).
    bias : float
        Its exact bias (the minimum).
    n_optimal : int
        How many subsets reach that minimum.
    n_subsets : int
        Subsets searched, C(n_rows, target_size).
    seconds : float
    """

    subset: NDArray[np.intp]
    bias: float
    n_optimal: int
    n_subsets: int
    seconds: float


def exhaustive_optimum(
    X: ArrayLike, y: ArrayLike, *, target_size: int, alpha: float = 1e-3, max_subsets: int = MAX_SUBSETS
) -> OptimumResult:
    """AFOptimum by brute force: the subset of exactly ``target_size`` rows with the lowest exact bias (eq. 1).

    Every subset is scored by :func:`exact_bias` (vectorised, in batches). Eq. 1 allows |S| ≥ n; the search is at
    |S| = n, the size AFLite stops at, so the two are compared at the same size.

    Parameters
    ----------
    X, y : array-like
        The problem (a handful of rows: C(n_rows, target_size) subsets are scored).
    target_size : int
        n, rows of the subset, in [2, n_rows].
    alpha : float, default=1e-3
        Ridge strength (see :func:`exact_scores`).
    max_subsets : int, default=2,000,000
        Refuse larger searches (C(22, 11) = 705,432 takes a few seconds).

    Returns
    -------
    OptimumResult

    Examples
    --------
    >>> X = [[0.0], [1.0], [2.0], [3.0], [10.0], [11.0]]
    >>> opt = exhaustive_optimum(X, [0, 1, 0, 1, 0, 0], target_size=4)
    >>> opt.subset.tolist(), opt.bias, opt.n_subsets
    ([0, 1, 2, 3], 0.0, 15)
    """
    func = "exhaustive_optimum"
    problem = _problem(X, y, alpha, func)
    n = problem.n_rows
    size = v.check_int(target_size, "target_size", func, low=2, high=n)
    limit = v.check_int(max_subsets, "max_subsets", func, low=1)
    total = math.comb(n, size)
    if total > limit:
        raise ValueError(
            f"The 'target_size' parameter of {func} gives C({n}, {size}) = {total:,} subsets, more than "
            f"max_subsets = {limit:,}. Use fewer rows (the exact search is for tiny data)."
        )
    started = time.perf_counter()
    best, best_rows, n_best = np.inf, None, 0
    it = combinations(range(n), size)
    while True:
        chunk = np.array(list(_take(it, _BATCH)), dtype=np.intp)
        if not len(chunk):
            break
        correct, _ = _loo(problem, chunk)
        bias = correct.mean(axis=1)
        low = float(bias.min())
        hits = np.isclose(bias, low, rtol=0, atol=1e-12)
        if low < best - 1e-12:
            best, best_rows, n_best = low, chunk[int(np.argmax(hits))], int(hits.sum())
        elif abs(low - best) <= 1e-12:
            n_best += int(hits.sum())
    return OptimumResult(np.asarray(best_rows), float(best), n_best, total, time.perf_counter() - started)


def _take(it, k: int):
    for _, item in zip(range(k), it):
        yield item


@dataclass(frozen=True, eq=False)
class GreedyRun:
    """One run of AFLite's greedy filtering with the exact scores (see :func:`greedy_filter`).

    Attributes
    ----------
    subset : ndarray of intp
        Rows kept.
    bias : float
        Exact bias of the kept rows.
    removed_step : ndarray of int
        Per row, the step it was removed in (-1 = kept).
    history : pandas.DataFrame
        One row per step: ``step, size_before, removed, bias_before``.
    strategy : str
    seed : int or None
        The seed of strategy C (None for A and B, which draw nothing).
    """

    subset: NDArray[np.intp]
    bias: float
    removed_step: NDArray[np.int64]
    history: pd.DataFrame
    strategy: str
    seed: int | None = None


def greedy_filter(
    X: ArrayLike,
    y: ArrayLike,
    *,
    target_size: int,
    strategy: str = "slice",
    slice_size: int = 2,
    alpha: float = 1e-3,
    random_state: int | np.random.Generator | None = None,
) -> GreedyRun:
    """AFLite's filtering loop with the exact leave-one-out scores, down to ``target_size`` rows.

    Every step scores the current set exactly (:func:`exact_scores`) and removes rows: A (``"greedy"``) the
    single most predictable row; B (``"slice"``) the ``slice_size`` most predictable; C (``"sample"``)
    ``slice_size`` rows drawn without replacement with probability ∝ score (Gumbel top-k on log score: rows
    scoring 0 come last, in random order). Ties in score are ordered by the leave-one-out margin (larger first).
    The last step never goes below the target. No τ: the run always reaches the target.

    Parameters
    ----------
    X, y : array-like
        The problem.
    target_size : int
        n, in [2, n_rows].
    strategy : {"greedy", "slice", "sample"}, default="slice"
        A, B or C.
    slice_size : int, default=2
        k for B and C (A removes one row per step).
    alpha : float, default=1e-3
        Ridge strength (see :func:`exact_scores`).
    random_state : int, numpy Generator or None
        Seed of C's draws (A and B are deterministic).

    Returns
    -------
    GreedyRun

    Examples
    --------
    >>> run = greedy_filter([[0.0], [1.0], [2.0], [3.0], [10.0], [11.0]], [0, 1, 0, 1, 0, 0], target_size=4)
    >>> run.subset.tolist(), run.bias
    ([0, 1, 2, 3], 0.0)
    """
    func = "greedy_filter"
    problem = _problem(X, y, alpha, func)
    n = problem.n_rows
    size = v.check_int(target_size, "target_size", func, low=2, high=n)
    if strategy not in OPTIMUM_STRATEGIES:
        raise v.param_error("strategy", func, f"one of {list(OPTIMUM_STRATEGIES)}", strategy)
    k = 1 if strategy == "greedy" else v.check_int(slice_size, "slice_size", func, low=1)
    seed = v.check_random_state(random_state, func) if strategy == "sample" else None
    rng = np.random.default_rng(seed) if strategy == "sample" else None
    rows = np.arange(n)
    removed = np.full(n, -1, dtype=np.int64)
    history = []
    step = 0
    while len(rows) > size:
        step += 1
        correct, margin = _loo(problem, rows[None, :])
        score, margin = correct[0].astype(np.float64), margin[0]
        take = min(k, len(rows) - size)
        if strategy == "sample":
            tie = rng.random(len(rows))
            with np.errstate(divide="ignore"):
                keys = np.log(score) + rng.gumbel(size=len(rows))
            order = np.lexsort((tie, -keys))
        else:
            order = np.lexsort((rows, -margin, -score))
        gone = rows[order[:take]]
        removed[gone] = step
        history.append({"step": step, "size_before": len(rows), "removed": take, "bias_before": float(score.mean())})
        rows = np.setdiff1d(rows, gone)
    correct, _ = _loo(problem, rows[None, :])
    return GreedyRun(
        subset=rows,
        bias=float(correct[0].mean()),
        removed_step=removed,
        history=pd.DataFrame(history, columns=["step", "size_before", "removed", "bias_before"]),
        strategy=strategy,
        seed=seed,
    )


@dataclass(frozen=True, eq=False)
class OptimumComparison:
    """AFOptimum against AFLite's strategies on several tiny problems (see :func:`compare_with_optimum`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per case and strategy: ``case, strategy, rows, target_size, slice_size, bias_full, bias_aflite``
        (strategy C: mean over its seeds), ``bias_aflite_min``, ``bias_aflite_max``, ``bias_optimum``, ``gap``
        (AFLite minus optimum), ``found_optimum`` (share of runs that reached the optimal bias), ``n_optimal``
        (optimal subsets), ``n_subsets``, ``n_seeds``.
    optima : dict of str to OptimumResult
    runs : dict of (str, str) to list of GreedyRun
    problems : dict of str to ExactProblem
    params : dict
    """

    table: pd.DataFrame
    optima: dict
    runs: dict
    problems: dict
    params: dict = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        """The table as JSON-friendly records (what ``aflite optimum --json`` prints)."""
        frame = self.table.astype(object).where(self.table.notna(), None)
        return [
            {k: (val.item() if isinstance(val, np.generic) else val) for k, val in r.items()}
            for r in frame.to_dict(orient="records")
        ]


def optimum_cases(random_state: int | np.random.Generator | None = 0) -> dict[str, tuple[NDArray, NDArray, int]]:
    """The teaching cases: ``{name: (X, y, target_size)}``, each small enough for the exhaustive search.

    * ``"worked example (6 rows)"`` - six points on a line, x = 0, 1, 2, 3, −5, 8 with labels 0, 1, 0, 1, 0, 1: the
      two far points make the trend "class 1 to the right" easy to learn (bias 4/6 on all rows); the unique
      optimum keeps the four alternating points, where every left-out point is misread (bias 0);
    * ``"circles (16 rows)"`` - :func:`aflite_core.data.planted_bias.make_biased_circles` (ring gap 0.6, 75 % of rows
      with bias features), target 8;
    * ``"planted bias (20 rows)"`` - :func:`aflite_core.data.planted_bias.make_planted_bias` with 4 features, half of
      the rows shifted along their class's direction, target 10.

    Parameters
    ----------
    random_state : int, numpy Generator or None, default=0
        Seed of the two generated cases.

    Returns
    -------
    dict
    """
    from ..data.planted_bias import make_biased_circles, make_planted_bias

    rng = np.random.default_rng(v.check_random_state(random_state, "optimum_cases"))
    s1, s2 = (int(s) for s in rng.integers(0, 2**31 - 1, size=2))
    worked = (np.array([[0.0], [1.0], [2.0], [3.0], [-5.0], [8.0]]), np.array([0, 1, 0, 1, 0, 1]), 4)
    circles = make_biased_circles(16, separation=0.6, random_state=s1)
    Xp, yp, _ = make_planted_bias(20, 4, class_sep=0.5, bias_fraction=0.5, bias_strength=6.0, random_state=s2)
    return {
        "worked example (6 rows)": worked,
        "circles (16 rows)": (circles.X.astype(np.float64), circles.y, 8),
        "planted bias (20 rows)": (Xp.astype(np.float64), yp, 10),
    }


def compare_with_optimum(
    cases: dict[str, tuple[ArrayLike, ArrayLike, int]] | None = None,
    *,
    strategies: Sequence[str] = OPTIMUM_STRATEGIES,
    slice_size: int = 2,
    n_seeds: int = 20,
    alpha: float = 1e-3,
    random_state: int | np.random.Generator | None = 0,
) -> OptimumComparison:
    """How close AFLite's greedy strategies get to AFOptimum on tiny problems, with the exact bias on both sides.

    For every case: the bias of all rows, the exhaustive optimum at the target size, and each strategy's exact-score
    run (:func:`greedy_filter`; strategy C once per seed, ``n_seeds`` seeds).

    Parameters
    ----------
    cases : dict, optional
        ``{name: (X, y, target_size)}``; default :func:`optimum_cases`.
    strategies : sequence of str, default=("greedy", "slice", "sample")
    slice_size : int, default=2
        k of strategies B and C.
    n_seeds : int, default=20
        Runs of strategy C per case.
    alpha : float, default=1e-3
        Ridge strength (see :func:`exact_scores`).
    random_state : int, numpy Generator or None, default=0
        Seed of the default cases and of C's runs.

    Returns
    -------
    OptimumComparison

    Examples
    --------
    >>> cmp = compare_with_optimum(n_seeds=3)
    >>> bool((cmp.table["bias_aflite"] >= cmp.table["bias_optimum"] - 1e-12).all())
    True
    """
    func = "compare_with_optimum"
    seed = v.check_random_state(random_state, func)
    data = optimum_cases(seed) if cases is None else dict(cases)
    if not data:
        raise v.param_error("cases", func, "None or a non-empty dict", cases)
    strategies = tuple(strategies)
    bad = [s for s in strategies if s not in OPTIMUM_STRATEGIES]
    if not strategies or bad:
        raise v.param_error("strategies", func, f"a non-empty sequence among {list(OPTIMUM_STRATEGIES)}", strategies)
    k = v.check_int(slice_size, "slice_size", func, low=1)
    seeds_n = v.check_int(n_seeds, "n_seeds", func, low=1)
    rng = np.random.default_rng(seed)
    rows, optima, runs, problems = [], {}, {}, {}
    for name, (X, y, target) in data.items():
        problems[name] = _problem(X, y, alpha, func, name)
        opt = exhaustive_optimum(X, y, target_size=target, alpha=alpha)
        optima[name] = opt
        full = exact_bias(X, y, alpha=alpha)
        case_seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=seeds_n)]
        for strategy in strategies:
            seeds = case_seeds if strategy == "sample" else [None]
            these = [
                greedy_filter(X, y, target_size=target, strategy=strategy, slice_size=k, alpha=alpha, random_state=s)
                for s in seeds
            ]
            runs[(name, strategy)] = these
            biases = np.array([r.bias for r in these])
            rows.append(
                {
                    "case": name,
                    "strategy": strategy,
                    "rows": problems[name].n_rows,
                    "target_size": int(target),
                    "slice_size": 1 if strategy == "greedy" else k,
                    "bias_full": full,
                    "bias_aflite": float(biases.mean()),
                    "bias_aflite_min": float(biases.min()),
                    "bias_aflite_max": float(biases.max()),
                    "bias_optimum": opt.bias,
                    "gap": float(biases.mean() - opt.bias),
                    "found_optimum": float(np.mean(np.isclose(biases, opt.bias, rtol=0, atol=1e-12))),
                    "n_optimal": opt.n_optimal,
                    "n_subsets": opt.n_subsets,
                    "n_seeds": len(seeds) if strategy == "sample" else 1,
                }
            )
    params = {"slice_size": k, "n_seeds": seeds_n, "alpha": float(alpha), "seed": seed, "strategies": strategies}
    return OptimumComparison(pd.DataFrame(rows), optima, runs, problems, params)


def optimum_table(comparison: OptimumComparison) -> str:
    """The comparison as readable text (what ``aflite optimum`` prints)."""
    t = comparison.table
    out = pd.DataFrame(
        {
            "case": t["case"],
            "strategy": t["strategy"],
            "rows → n": [f"{a} → {b}" for a, b in zip(t["rows"], t["target_size"])],
            "k": t["slice_size"],
            "bias (all rows)": t["bias_full"].map("{:.3f}".format),
            "AFLite (exact scores)": [
                f"{m:.3f}" if n == 1 else f"{m:.3f} ({lo:.3f}–{hi:.3f}, {n} seeds)"
                for m, lo, hi, n in zip(t["bias_aflite"], t["bias_aflite_min"], t["bias_aflite_max"], t["n_seeds"])
            ],
            "AFOptimum": t["bias_optimum"].map("{:.3f}".format),
            "gap": t["gap"].map("{:+.3f}".format),
            "optimal subsets": [f"{a:,} of {b:,}" for a, b in zip(t["n_optimal"], t["n_subsets"])],
        }
    )
    return out.to_string(index=False)
