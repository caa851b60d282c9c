"""The shape model of each job: its work in *units* its time is proportional to, from the job's shape alone.

An AFLite round (:func:`aflite_round_units`: batched logistic fits on t rows and predictions of the rest, or
the ridge fallback's multiply-adds above the family's ``max_work``), the rounds a run still does
(:func:`aflite_rounds_left`, capped by τ), opening a run (:func:`setup_units`), and the Baselines page's pieces
(:func:`cv_units`, :func:`one_shot_units`, :func:`bias_units`, :func:`baselines_units`). Seconds are units × a rate
(:mod:`aflite_core.engine.rate_calibration`); :mod:`aflite_core.engine.estimates` multiplies the two.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "KNN_DISTANCE_WEIGHT",
    "PREDICT_WEIGHT",
    "RIDGE_ROW_WEIGHT",
    "ROW_WEIGHT",
    "SETUP_WEIGHT",
    "aflite_round_units",
    "aflite_rounds_left",
    "aflite_solver",
    "aflite_units",
    "aflite_units_left",
    "baselines_units",
    "bias_units",
    "cv_units",
    "family_solver",
    "one_shot_units",
    "rate_kind",
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
#: an MLP fit (64 units, up to 200 epochs) costs about this many logistic units per row × feature (the digits:
#: 1,150 × 64 in 0.6 s; the calibrated logistic rate about 6e-9 s a unit)
_MLP_FACTOR = 1400.0
#: an RBF SVM's fit and prediction: units are rows² × d, at about this many kNN distance units each (the digits:
#: a fit on 1,150 rows in 0.03 s)
_RBF_FACTOR = 4.0


# --- AFLite --------------------------------------------------------------------------------------------------


def aflite_solver(n_partitions: int, train_size: int, n_features: int, n_classes: int = 3) -> str:
    """``"logistic"`` or ``"ridge"``: what the default family fits for these shapes (its own documented rule)."""
    from .logistic import LogisticFamily

    return LogisticFamily().solver(int(n_partitions), int(train_size), int(n_features), int(n_classes))


#: the families an AFLite run is priced for by name (the app's and the CLI's adversary names), besides "linear"
FAMILY_SOLVERS = {"ridge": "ridge", "logistic": "sklearn_logistic", "knn": "knn"}


def family_solver(model: str, n_partitions: int, train_size: int, n_features: int, n_classes: int = 3) -> str:
    """What a run of the adversary family ``model`` fits, as it is priced here.

    The default family's rule for ``"linear"``; else ``"ridge"`` (batched least squares), ``"sklearn_logistic"``
    (one scikit-learn fit per model) or ``"knn"``.

    Examples
    --------
    >>> family_solver("knn", 64, 1000, 32)
    'knn'
    >>> family_solver("linear", 64, 1000, 32)
    'logistic'
    """
    if model in FAMILY_SOLVERS:
        return FAMILY_SOLVERS[model]
    return aflite_solver(n_partitions, train_size, n_features, n_classes)


def aflite_round_units(
    size: int, train_size: int, n_partitions: int, n_features: int, *, solver: str = "logistic", n_classes: int = 3
) -> float:
    """Units of one AFLite round that starts with ``size`` rows: m fits on t rows and the predictions of the rest.

    ``solver="logistic"`` (batched L-BFGS; rate kind ``"aflite"``): ``m × d × (t + PREDICT_WEIGHT × rest) +
    ROW_WEIGHT × size``. ``"sklearn_logistic"`` (rate kind ``"logistic"``, as the Baselines page's fits): m fits of
    ``t × d × C`` units and a fold's fixed cost each, predictions at ``PREDICT_WEIGHT`` of a fitted row; ``"knn"``
    (rate kind ``"knn"``): every held-out row's distances to the m training parts, ``m × rest × t × (d +
    KNN_DISTANCE_WEIGHT)``. Both add the round's per-row work (``ROW_WEIGHT``) converted to their rate.
    ``solver="ridge"`` (the fallback above ``max_work``; rate kind ``"ridge"``): its multiply-adds, the predictions
    of every row by every model (``m × size × (d + 1) × K``) and each partition's Gram matrix summed from about ``32
    × size / t`` block Grams (``m × 32 size / t × D²``, D = d + 1 + K), plus ``RIDGE_ROW_WEIGHT × size`` for the
    per-row work of a round.

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
    if solver in ("sklearn_logistic", "knn"):
        kind = rate_kind(solver)
        per_round = (ROW_WEIGHT * size * _REFERENCE["aflite"] + _ROUND_SECONDS) / _REFERENCE[kind]
        fold = _FOLD_SECONDS / _REFERENCE[kind]
        if solver == "knn":
            return float(m * (rest * t * (d + KNN_DISTANCE_WEIGHT) + fold) + per_round)
        C = max(int(n_classes), 2)
        return float(m * (t * d * C + PREDICT_WEIGHT * rest * d * C + fold) + per_round)
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
    """The rate an AFLite unit of this solver is priced at.

    ``"ridge"``, ``"aflite"`` (batched logistic), or the Baselines page's ``"logistic"`` (scikit-learn fits) and
    ``"knn"``.
    """
    return {"ridge": "ridge", "sklearn_logistic": "logistic", "knn": "knn"}.get(solver, "aflite")


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
    units = SETUP_WEIGHT * int(n_rows) * int(n_features)
    kind = rate_kind(solver)
    return units * _REFERENCE["aflite"] / _REFERENCE[kind] if kind != "aflite" else units


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
