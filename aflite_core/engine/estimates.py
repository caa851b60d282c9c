"""Honest time estimates: a shape model of each job (work units per phase) times a rate measured on this server.

A job's work is counted in *units* that its time is proportional to, from the job's shape alone:

- ``"aflite"`` (the default ``"linear"`` family): a round fits m models on t rows and predicts the other rows
  with them. Batched logistic regression: ``m × d × (t + PREDICT_WEIGHT × (size − t)) + ROW_WEIGHT × size``
  units (the fits dominate: measured on 100,000 × 128 with t from 10 % to 40 %, a round's time grows with t, m
  and d; a predicted row costs about a twentieth of a fitted one); opening a run reads X once,
  ``SETUP_WEIGHT × n × d``. Above the family's ``max_work`` its ridge fallback is priced in multiply-adds
  instead (predictions of every row by every model, partition Grams summed from block Grams, a per-row term;
  opening: every block's Gram, n × D²), at a rate of its own. Rounds go from N down to the target by k, or fewer
  when τ stops the run (:func:`aflite_rounds_left`).
- ``"baselines"``: what the Baselines page computes (:func:`baselines_units`): cross-validated fits of every
  family on the four subsets (kNN: the distances of every held-out row to the capped training fold, which
  dominate at 550,000 rows), the one-shot filter's single fit and the representation bias (one AFLite scoring
  phase per subset).
- ``"stability"``: seeds × an AFLite run; ``"umap"``: ``n log₂ n``; ``"embedding"``: the word pieces and
  characters of :func:`aflite_core.data.embed_status.estimate_embedding_seconds`.

The rate (seconds per unit) is measured once per process by :func:`calibrate` (about 1.5 s: a small AFLite run,
the same forced onto the ridge fallback, a scikit-learn logistic fit and a kNN prediction on seeded synthetic
data); kinds without a measurement of their own (UMAP, embeddings) scale their reference rate by how fast this
server ran the AFLite calibration. Once a job reports progress, :class:`RunningEstimate` blends the measured
rate in, so the time left follows the server's actual speed (load included) rather than the calibration's;
:class:`AFLiteTimeLeft` does so for an AFLite run and caps its rounds by what τ allowed.
``benchmarks/bench_estimates.py`` prints estimate / actual at three sizes.

For pages that have yet to use it: the Embedding map's UMAP, ``estimate_seconds("umap", n_rows=n)``; an
embedding job, ``estimate_seconds("embedding", texts=texts, model_loaded=...)``; any job's progress line,
``RunningEstimate(total=estimate, prior_seconds_per_unit=1.0).update(estimated_seconds_done, elapsed)``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "KNN_DISTANCE_WEIGHT",
    "PREDICT_WEIGHT",
    "RIDGE_ROW_WEIGHT",
    "ROW_WEIGHT",
    "SETUP_WEIGHT",
    "AFLiteTimeLeft",
    "RunningEstimate",
    "aflite_round_units",
    "aflite_rounds_left",
    "aflite_solver",
    "aflite_units",
    "aflite_units_left",
    "baselines_units",
    "bias_units",
    "calibrate",
    "cv_units",
    "estimate_seconds",
    "one_shot_units",
    "rate_kind",
    "rates",
    "setup_units",
]

#: a predicted row costs this share of a fitted row (measured: the default family, 100,000-200,000 × 128)
PREDICT_WEIGHT = 0.05
#: a round also costs this many units per row of S whatever m and d (indexing, scores, selection, bookkeeping;
#: measured at 3,000-12,000 × 8, m 8, where it dominates, and 20,000 × 32, m 64)
ROW_WEIGHT = 72.0
#: the ridge fallback's cost per row of S a round whatever m and d (scores, selection, block bookkeeping), in its
#: multiply-adds (measured at 40,000-120,000 × 64-256, m 32-96: about 0.4 µs a row, a multiply-add 0.04 ns)
RIDGE_ROW_WEIGHT = 10_000.0
#: a kNN distance costs this many feature units besides its d (the neighbour search over each row's distances;
#: measured: 10,000-200,000 rows at d 32-256 grow less than in proportion to d)
KNN_DISTANCE_WEIGHT = 64.0
#: opening a run (blocks, float32 copy, first statistics) costs about this many units per feature value
SETUP_WEIGHT = 2.0
#: seconds per unit measured on the 2-core development machine (typical calibrations at load 1.5-3.5): what
#: :func:`rates` gives before :func:`calibrate` ran, and the reference the kinds without a calibration of their
#: own (UMAP, embeddings) are scaled from
_REFERENCE = {"aflite": 1.0e-8, "ridge": 3.8e-11, "logistic": 6.0e-9, "knn": 3.8e-11}
#: fixed costs on the reference machine: an AFLite round (plan, selection, bookkeeping; measured at 12,000 × 8, m 8:
#: about 1 ms a round besides the per-row work), and one fold of a scikit-learn fit and its prediction (about 3 ms)
_ROUND_SECONDS = 0.001
_FOLD_SECONDS = 0.003
#: the seconds an AFLite call pays once on the reference machine (its first round's one-off costs besides the
#: process's first compilations: 0.02-0.1 s measured)
_WARMUP_SECONDS = 0.05
#: loading all-MiniLM-L6-v2 in a fresh process (torch and sentence-transformers imported, files in the page cache) on
#: the reference machine: 4.6 s measured where the calibration gave speed 1.07; 36 s at load 15 where it gave 0.11
#: (issue 25; the uncalibrated :func:`~aflite_core.data.embed_status.estimate_embedding_seconds` assumes ~9 s)
_MODEL_LOAD_REFERENCE = 5.0
#: UMAP (n_neighbors 15, 2-D): seconds per n·log₂ n on the reference machine (issue 25: 41-85 s at 550,000 rows)
_UMAP_RATE = 6.0e-6
#: an MLP fit (64 units, up to 200 epochs) costs about this many logistic units per row × feature (the digits:
#: 1,150 × 64 in 0.6 s; the calibrated logistic rate about 6e-9 s a unit)
_MLP_FACTOR = 1400.0
#: an RBF SVM's fit and prediction: units are rows² × d, at about this many kNN distance units each (the digits:
#: a fit on 1,150 rows in 0.03 s)
_RBF_FACTOR = 4.0

_lock = threading.Lock()
_rates: dict[str, float] | None = None
#: calibrations so far in this process: each draws new data (seed + _SEED_STEP × calls), so a forced one never
#: times fits the family memoised from an earlier one
_calls = 0
_SEED_STEP = 10


def _synthetic(n: int, d: int, seed: int = 0, signal: float = 1.5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[:, :3] += np.eye(3, dtype=np.float32)[y] * signal
    return X, y


def _measure_aflite() -> tuple[float, float]:
    """Seconds per unit of rounds 2-4 of a small run (the first pays the process's one-off compilations)."""
    from .filtering import aflite

    n, d, m, t, k = 24_000, 64, 32, 6_000, 480
    X, y = _synthetic(n, d, seed=_SEED_STEP * _calls)
    ends: list[float] = []
    start = time.perf_counter()
    aflite(
        X,
        y,
        target_size=n - 4 * k,
        train_size=t,
        slice_size=k,
        tau=0.0,
        n_partitions=m,
        random_state=0,
        n_threads=1,
        callback=lambda progress: ends.append(time.perf_counter()) and None,
    )
    if len(ends) < 4:
        return (time.perf_counter() - start) / aflite_units(n, n - 4 * k, k, t, m, d), 0.0
    rate = (ends[3] - ends[0]) / sum(aflite_round_units(n - r * k, t, m, d) for r in (1, 2, 3))
    return rate, 0.0


def _measure_ridge() -> float:
    """Seconds per ridge unit: the default family forced onto its ridge fallback (``max_work`` 1), rounds 2-3."""
    from .filtering import aflite
    from .logistic import LogisticFamily

    n, d, m, t, k = 40_000, 64, 32, 8_000, 800
    X, y = _synthetic(n, d, seed=3 + _SEED_STEP * _calls)
    ends: list[float] = []
    aflite(
        X,
        y,
        target_size=n - 3 * k,
        train_size=t,
        slice_size=k,
        tau=0.0,
        n_partitions=m,
        model=LogisticFamily(max_work=1.0),
        random_state=0,
        n_threads=1,
        callback=lambda progress: ends.append(time.perf_counter()) and None,
    )
    if len(ends) < 3:
        return _REFERENCE["ridge"]
    units = sum(aflite_round_units(n - r * k, t, m, d, solver="ridge") for r in (1, 2))
    return (ends[2] - ends[0]) / units


def _measure_logistic() -> float:
    from sklearn.linear_model import LogisticRegression

    from ._parallel import engine_threads

    n, d = 3000, 64
    X, y = _synthetic(n, d, seed=1 + _SEED_STEP * _calls, signal=0.5)  # overlapping: lbfgs iterates as on real data
    with engine_threads(1):
        LogisticRegression(max_iter=1000).fit(X[:200], y[:200])  # the first fit's lazy imports are not the rate
        start = time.perf_counter()
        LogisticRegression(C=1.0, max_iter=1000).fit(X, y)
        seconds = time.perf_counter() - start
    return seconds / (n * d * 3)


def _measure_knn() -> float:
    from sklearn.neighbors import KNeighborsClassifier

    from ._parallel import engine_threads

    n, d, held_out = 2000, 64, 6000
    X, y = _synthetic(n + held_out, d, seed=2 + _SEED_STEP * _calls)
    with engine_threads(1):
        model = KNeighborsClassifier(n_neighbors=15, weights="distance").fit(X[:n], y[:n])
        model.predict(X[n : n + 100])  # the first prediction's one-off costs are not the rate
        start = time.perf_counter()
        model.predict(X[n:])
        seconds = time.perf_counter() - start
    return seconds / (held_out * n * (d + KNN_DISTANCE_WEIGHT))


def calibrate(force: bool = False) -> dict[str, float]:
    """Measure this server's rates (seconds per unit) once per process, about a second; cached afterwards.

    Parameters
    ----------
    force : bool, default=False
        Measure again (e.g. after the machine's load changed a lot).

    Returns
    -------
    dict
        ``{"aflite", "ridge", "logistic", "knn", "speed", "warmup"}``: seconds per unit of each measured kind;
        ``speed``, the reference AFLite rate over the measured one (> 1: faster than the development machine),
        which scales the kinds without a measurement of their own; ``warmup``, the seconds every AFLite call
        (a run, a subset's bias) pays once.
    """
    global _rates, _calls
    with _lock:
        if _rates is None or force:
            aflite_rate, _ = _measure_aflite()
            measured = {
                "aflite": aflite_rate,
                "ridge": _measure_ridge(),
                "logistic": _measure_logistic(),
                "knn": _measure_knn(),
            }
            measured = {key: max(value, 1e-15) for key, value in measured.items()}
            measured["speed"] = _REFERENCE["aflite"] / measured["aflite"]
            measured["warmup"] = _WARMUP_SECONDS / measured["speed"]
            _rates = measured
            _calls += 1
        return dict(_rates)


def rates() -> dict[str, float]:
    """The calibrated rates if :func:`calibrate` ran in this process, else the reference machine's (no measuring)."""
    current = _rates
    return dict(current) if current is not None else {**_REFERENCE, "speed": 1.0, "warmup": _WARMUP_SECONDS}


# --- AFLite --------------------------------------------------------------------------------------------------


def aflite_solver(n_partitions: int, train_size: int, n_features: int, n_classes: int = 3) -> str:
    """``"logistic"`` or ``"ridge"``: what the default family fits for these shapes (its own documented rule)."""
    from .logistic import LogisticFamily

    return LogisticFamily().solver(int(n_partitions), int(train_size), int(n_features), int(n_classes))


def aflite_round_units(
    size: int, train_size: int, n_partitions: int, n_features: int, *, solver: str = "logistic", n_classes: int = 3
) -> float:
    """Units of one AFLite round that starts with ``size`` rows: m fits on t rows and the predictions of the rest.

    ``solver="logistic"`` (batched L-BFGS; rate kind ``"aflite"``): ``m × d × (t + PREDICT_WEIGHT × rest) +
    ROW_WEIGHT × size``. ``solver="ridge"`` (the fallback above ``max_work``; rate kind ``"ridge"``): its
    multiply-adds, the predictions of every row by every model (``m × size × (d + 1) × K``) and each partition's
    Gram matrix summed from about ``32 × size / t`` block Grams (``m × 32 size / t × D²``, D = d + 1 + K), plus
    ``RIDGE_ROW_WEIGHT × size`` for the per-row work of a round.

    Examples
    --------
    >>> round(aflite_round_units(1000, 100, 10, 8) - aflite_round_units(0, 0, 10, 8))  # fits, predictions, rows
    83600
    """
    size = max(int(size), 0)
    t = min(max(int(train_size), 0), size)
    m, d = int(n_partitions), int(n_features)
    if solver == "ridge":
        K = 1 if n_classes == 2 else int(n_classes)
        blocks = 32.0 * size / max(t, 1)
        D = d + 1 + K
        fixed = _ROUND_SECONDS / _REFERENCE["ridge"]
        return float(m * (size * (d + 1) * K + blocks * D * D) + RIDGE_ROW_WEIGHT * size + fixed)
    rest = size - t
    fixed = _ROUND_SECONDS / _REFERENCE["aflite"]
    return float(m * d * (t + PREDICT_WEIGHT * rest) + ROW_WEIGHT * size + fixed)


def aflite_rounds_left(
    size: int,
    target_size: int,
    slice_size: int,
    qualified: int | None = None,
    removed: int | None = None,
) -> int:
    """Rounds an AFLite run still does: to the target by k, capped by what τ allows.

    Without τ, ``ceil((size − target) / k)``. After a round, ``qualified`` rows had predictability ≥ τ and
    ``removed`` of them were removed: the others (``qualified − removed``) are the pool later rounds remove from,
    k a round, and the round after the pool runs dry finds fewer than k and ends the run, so at most
    ``1 + (qualified − removed) // k`` more rounds (an estimate from the last scores: rows can rise above τ as S
    shrinks, and the estimate is refined each round). A round that removed nothing, or found fewer than k rows
    at p ≥ τ, ended the run: 0.

    Examples
    --------
    >>> aflite_rounds_left(1000, 700, 100)
    3
    >>> aflite_rounds_left(1000, 700, 100, qualified=150, removed=100)  # 50 left at p ≥ τ: one more round
    1
    >>> aflite_rounds_left(1000, 700, 100, qualified=90, removed=90)  # fewer than k qualified: the run ended
    0
    """
    k = max(int(slice_size), 1)
    if size <= target_size:
        return 0
    rounds = -(-(int(size) - int(target_size)) // k)
    if qualified is not None:
        if qualified < k or (removed is not None and removed <= 0):
            return 0
        pool = max(int(qualified) - int(removed if removed is not None else k), 0)
        rounds = min(rounds, 1 + pool // k)
    return max(rounds, 0)


def rate_kind(solver: str) -> str:
    """The rate an AFLite unit of this solver is priced at: ``"ridge"`` or ``"aflite"`` (batched logistic)."""
    return "ridge" if solver == "ridge" else "aflite"


def aflite_units_left(
    size: int,
    target_size: int,
    slice_size: int,
    train_size: int,
    n_partitions: int,
    n_features: int,
    qualified: int | None = None,
    removed: int | None = None,
    *,
    solver: str = "logistic",
    n_classes: int = 3,
) -> float:
    """Units of the rounds an AFLite run still does (:func:`aflite_rounds_left` rounds of size, size − k, …)."""
    k = max(int(slice_size), 1)
    rounds = aflite_rounds_left(size, target_size, slice_size, qualified, removed)
    return float(
        sum(
            aflite_round_units(
                max(size - r * k, 0), train_size, n_partitions, n_features, solver=solver, n_classes=n_classes
            )
            for r in range(rounds)
        )
    )


def setup_units(n_rows: int, n_features: int, *, solver: str = "logistic", n_classes: int = 3) -> float:
    """Units of opening a run: reading X (logistic), or every block's Gram matrix (ridge: n × D²)."""
    if solver == "ridge":
        D = int(n_features) + 1 + (1 if n_classes == 2 else int(n_classes))
        return float(int(n_rows) * D * D)
    return SETUP_WEIGHT * int(n_rows) * int(n_features)


def aflite_units(
    n_rows: int,
    target_size: int,
    slice_size: int,
    train_size: int,
    n_partitions: int,
    n_features: int,
    *,
    solver: str = "logistic",
    n_classes: int = 3,
) -> float:
    """Units of a whole AFLite run going to the target (opening the run included)."""
    setup = setup_units(n_rows, n_features, solver=solver, n_classes=n_classes)
    return setup + aflite_units_left(
        n_rows, target_size, slice_size, train_size, n_partitions, n_features, solver=solver, n_classes=n_classes
    )


def _rows(value: int | float, n: int) -> int:
    """A count or a fraction of n, as rows (what the engine resolves ``target_size`` / ``train_size`` to)."""
    if isinstance(value, float) and 0 < value < 1:
        return round(value * n)
    return int(value)


# --- Baselines -----------------------------------------------------------------------------------------------


def cv_units(
    model: str,
    n_rows: int,
    n_features: int,
    *,
    n_splits: int = 5,
    max_train_rows: int | None = 2000,
    n_classes: int = 3,
) -> tuple[str, float]:
    """The rate kind and units of cross-validating one family on ``n_rows`` rows (every row held out once).

    A logistic fit is rows × d × classes units per fold, an MLP rows × d × 1,400; kNN's units are the distances
    of every held-out row to its training fold (held-out rows × training rows × d); an RBF SVM's, its kernel
    evaluations (folds × training rows² plus held-out rows × training rows, × d). kNN's d is counted plus
    :data:`KNN_DISTANCE_WEIGHT`.
    """
    folds = max(int(n_splits), 2)
    train = n_rows * (folds - 1) / folds
    if max_train_rows is not None:
        train = min(train, int(max_train_rows))
    d = int(n_features)
    if model in ("logistic", "mlp"):
        per_row = _MLP_FACTOR if model == "mlp" else n_classes
        return "logistic", folds * (train * d * per_row + _FOLD_SECONDS / _REFERENCE["logistic"])
    fixed = folds * _FOLD_SECONDS / _REFERENCE["knn"]
    if model == "rbf":
        return "knn", _RBF_FACTOR * (folds * train * train + n_rows * train) * d + fixed
    return "knn", float(n_rows * train * (d + KNN_DISTANCE_WEIGHT) + fixed)


def one_shot_units(train_size: int, n_features: int, n_classes: int = 3) -> float:
    """Logistic units of the one-shot filter: one scikit-learn logistic fit on t rows (its predictions are cheap)."""
    return float(int(train_size) * int(n_features) * int(n_classes) + _FOLD_SECONDS / _REFERENCE["logistic"])


def bias_units(
    n_rows: int, train_size: int, n_partitions: int, n_features: int, n_classes: int = 3
) -> tuple[str, float]:
    """The rate kind and units of scoring one subset's representation bias: one AFLite scoring phase, opened."""
    t = min(int(train_size), max(int(n_rows) - 1, 0))
    solver = aflite_solver(n_partitions, t, n_features, n_classes)
    units = setup_units(n_rows, n_features, solver=solver, n_classes=n_classes) + aflite_round_units(
        n_rows, t, n_partitions, n_features, solver=solver, n_classes=n_classes
    )
    return rate_kind(solver), units


def baselines_units(
    n_rows: int,
    n_kept: int,
    train_size: int,
    n_features: int,
    models: Sequence[str] = ("logistic", "knn"),
    *,
    n_splits: int = 5,
    max_train_rows: int | None = 2000,
    n_partitions: int = 64,
    partial_features: int | None = None,
    n_classes: int = 3,
) -> dict[str, float]:
    """Units of the Baselines page's report by rate kind: ``{"aflite", "logistic", "knn"}``.

    The four subsets (the full data and three of ``n_kept`` rows) are cross-validated with every family on the
    full (and the partial) input (:func:`cv_units`); the one-shot filter fits one logistic model on t rows; the
    representation bias scores every subset with ``n_partitions`` models of the default family
    (:func:`bias_units`).
    """
    units = {"aflite": 0.0, "ridge": 0.0, "logistic": 0.0, "knn": 0.0}
    sizes = [int(n_rows)] + [int(n_kept)] * 3
    views = [int(n_features)] + ([int(partial_features)] if partial_features else [])
    for d in views:
        for s in sizes:
            for model in models:
                key, value = cv_units(
                    model, s, d, n_splits=n_splits, max_train_rows=max_train_rows, n_classes=n_classes
                )
                units[key] += value
    units["logistic"] += one_shot_units(min(int(train_size), max(int(n_rows) - 1, 0)), n_features, n_classes)
    for s in sizes:
        key, value = bias_units(s, train_size, n_partitions, n_features, n_classes)
        units[key] += value
    return units


# --- the public estimate -------------------------------------------------------------------------------------


def estimate_seconds(kind: str, *, calibrated: bool = True, **shape) -> float:
    """Seconds a job of this kind and shape takes on this server (shape model × the calibrated rate).

    Parameters
    ----------
    kind : {"aflite", "baselines", "stability", "umap", "embedding"}
        ``aflite``: ``n_rows, target_size, slice_size, train_size, n_partitions, n_features`` (target and train
        as counts or fractions of n_rows); ``baselines``: the arguments of :func:`baselines_units`;
        ``stability``: those of ``aflite`` and ``seeds``; ``umap``: ``n_rows``; ``embedding``: ``texts`` (and
        ``model_loaded``).
    calibrated : bool, default=True
        Measure this server's rates first (once per process, about a second); False uses what is known
        (:func:`rates`).
    **shape
        The job's shape.

    Returns
    -------
    float
        Seconds, finite and >= 0.
    """
    rate = calibrate() if calibrated else rates()
    if kind in ("aflite", "stability"):
        n = int(shape["n_rows"])
        t, m, d = _rows(shape.get("train_size", 0.1), n), int(shape.get("n_partitions", 64)), int(shape["n_features"])
        classes = int(shape.get("n_classes", 3))
        solver = aflite_solver(m, t, d, classes)
        seconds = rate[rate_kind(solver)] * aflite_units(
            n,
            _rows(shape.get("target_size", n // 3), n),
            max(_rows(shape.get("slice_size", max(n // 50, 1)), n), 1),
            t,
            m,
            d,
            solver=solver,
            n_classes=classes,
        )
        seconds += rate.get("warmup", 0.0)
        if kind == "stability":
            seconds *= max(int(shape.get("seeds", 1)), 1)
    elif kind == "baselines":
        units = baselines_units(**shape)
        seconds = sum(rate[key] * value for key, value in units.items()) + 4 * rate.get("warmup", 0.0)
    elif kind == "umap":
        n = max(int(shape["n_rows"]), 2)
        seconds = _UMAP_RATE / rate["speed"] * n * math.log2(n)
    elif kind == "embedding":
        from ..data.embed_status import estimate_embedding_seconds

        seconds = (
            estimate_embedding_seconds(
                shape["texts"],
                model_loaded=bool(shape.get("model_loaded")),
                model_load_seconds=_MODEL_LOAD_REFERENCE,
            )
            / rate["speed"]
        )
    else:
        raise ValueError(f"Unknown estimate kind {kind!r}; choose among aflite, baselines, stability, umap, embedding.")
    return float(max(seconds, 0.0)) if math.isfinite(seconds) else 0.0


@dataclass
class RunningEstimate:
    """Time left of a job as its work is reported: the prior rate at first, the measured rate as work gets done.

    The rate used is ``(prior_rate × prior_weight + elapsed) / (prior_weight + done)``: the calibration's rate
    until some work is done, then mostly what this job measured (a tenth of the total work weighs as much as
    the prior). The total may be revised (``total=`` in :meth:`update`, e.g. when τ caps AFLite's rounds).

    Parameters
    ----------
    total : float
        Units of work of the whole job.
    prior_seconds_per_unit : float or None
        The calibrated rate; None: no prior (nothing is said until some work is done).

    Examples
    --------
    >>> job = RunningEstimate(total=100.0, prior_seconds_per_unit=1.0)
    >>> job.update(0.0, 0.0)
    100.0
    >>> job.update(50.0, 100.0) > 50.0  # slower than the prior: more than 50 s left
    True
    >>> job.update(100.0, 200.0)
    0.0
    """

    total: float
    prior_seconds_per_unit: float | None = None
    prior_share: float = 0.1
    done: float = field(default=0.0, init=False)
    elapsed: float = field(default=0.0, init=False)

    @property
    def seconds_per_unit(self) -> float | None:
        """The blended rate, None while there is neither a prior nor any work done."""
        weight = self.prior_share * max(self.total, 0.0)
        if self.prior_seconds_per_unit is None or weight <= 0:
            return self.elapsed / self.done if self.done > 0 and self.elapsed > 0 else None
        return (self.prior_seconds_per_unit * weight + self.elapsed) / (weight + self.done)

    def update(self, done: float, elapsed: float, total: float | None = None) -> float | None:
        """Report the work done so far and the seconds it took; returns the seconds left (>= 0, None if unknown)."""
        if total is not None and math.isfinite(total):
            self.total = max(float(total), 0.0)
        self.done = min(max(float(done), 0.0), self.total) if math.isfinite(done) else self.done
        self.elapsed = max(float(elapsed), 0.0) if math.isfinite(elapsed) else self.elapsed
        return self.seconds_left

    @property
    def seconds_left(self) -> float | None:
        """Seconds left at the blended rate (0 once the work is done)."""
        left = max(self.total - self.done, 0.0)
        if left <= 0:
            return 0.0
        rate = self.seconds_per_unit
        if rate is None or not math.isfinite(rate):
            return None
        return max(left * rate, 0.0)


class AFLiteTimeLeft:
    """The time left of an AFLite run from its round (and step) progress: the Filter page's and the CLI's.

    The work is :func:`aflite_units` of the run's shape; the work done is the opening plus the rounds done (their
    starting sizes from the rows removed so far) plus the current round's share; the work left, the rounds
    :func:`aflite_rounds_left` allows - to the target by k, capped by what τ allowed in the last round (the rows
    at p ≥ τ not yet removed) - so the estimate does not assume rounds τ will not run. The rate is the
    calibrated one at first (``prior``), then the run's own (:class:`RunningEstimate`).

    Parameters
    ----------
    n_rows, target_size, slice_size, train_size, n_partitions, n_features : int
        The run's shape (target and train as counts or fractions of n_rows).
    n_classes : int, default=3
        Classes (the ridge fallback's outputs).
    prior : dict or None
        Seconds per unit by rate kind (:func:`calibrate` or :func:`rates`); None: say nothing until work is done.

    Examples
    --------
    >>> left = AFLiteTimeLeft(1000, 700, 100, 100, 8, 4, prior=None)
    >>> left.update(0.0, rounds_done=0, size=1000) is None  # nothing measured, no prior
    True
    >>> left.update(3.0, rounds_done=1, size=900, qualified=400, removed=100) > 0
    True
    >>> left.update(9.0, rounds_done=3, size=700, qualified=300, removed=100)  # at the target
    0.0
    """

    def __init__(
        self,
        n_rows: int,
        target_size: int | float,
        slice_size: int | float,
        train_size: int | float,
        n_partitions: int,
        n_features: int,
        *,
        n_classes: int = 3,
        prior: dict[str, float] | None = None,
    ) -> None:
        n = int(n_rows)
        self.n_rows, self.target = n, _rows(target_size, n)
        self.k = max(_rows(slice_size, n), 1)
        self.t, self.m, self.d, self.classes = _rows(train_size, n), int(n_partitions), int(n_features), n_classes
        self.solver = aflite_solver(self.m, self.t, self.d, n_classes) if self.d > 0 else "logistic"
        self.setup = setup_units(n, self.d, solver=self.solver, n_classes=n_classes)
        total = self.setup + self._left(n, None, None)
        rate = None if prior is None else prior.get(rate_kind(self.solver))
        self.running = RunningEstimate(total=total, prior_seconds_per_unit=rate)
        self.fraction = 0.0

    def _round(self, size: int) -> float:
        return aflite_round_units(size, self.t, self.m, self.d, solver=self.solver, n_classes=self.classes)

    def _left(self, size: int, qualified: int | None, removed: int | None) -> float:
        return aflite_units_left(
            size,
            self.target,
            self.k,
            self.t,
            self.m,
            self.d,
            qualified,
            removed,
            solver=self.solver,
            n_classes=self.classes,
        )

    def update(
        self,
        elapsed: float,
        *,
        rounds_done: int,
        size: int,
        qualified: int | None = None,
        removed: int | None = None,
        round_fraction: float = 0.0,
    ) -> float | None:
        """Seconds left (>= 0; None while unknown) after ``rounds_done`` rounds left ``size`` rows in S.

        ``qualified`` and ``removed`` are the last round's (rows at p ≥ τ, rows removed); ``round_fraction`` the
        share of the round in progress done (its step progress). Also sets :attr:`fraction`, the share done.
        """
        rounds_done, size = max(int(rounds_done), 0), max(int(size), 0)
        per_round = (self.n_rows - size) / rounds_done if rounds_done else 0.0
        done = self.setup * (1.0 if rounds_done or round_fraction > 0 else 0.0)
        done += sum(self._round(round(self.n_rows - r * per_round)) for r in range(rounds_done))
        left = self._left(size, qualified if rounds_done else None, removed if rounds_done else None)
        current = self._round(size) * min(max(round_fraction, 0.0), 1.0) if left > 0 else 0.0
        done += current
        total = done + max(left - current, 0.0)
        seconds = self.running.update(done, elapsed, total=total)
        self.fraction = min(1.0, done / total) if total > 0 else 1.0
        return seconds
