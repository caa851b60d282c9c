"""The server's rates (seconds per work unit), measured once per process: :func:`calibrate` and :func:`rates`.

About 1.5 s: a small AFLite run, the same forced onto the ridge fallback, a scikit-learn logistic fit and a kNN
prediction on seeded synthetic data, each priced in the units of :mod:`aflite_core.engine.work_units`. Before a
calibration, :func:`rates` gives the reference (development) machine's rates.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from .work_units import (
    _REFERENCE,
    KNN_DISTANCE_WEIGHT,
    aflite_round_units,
    aflite_units,
)

__all__ = ["calibrate", "rates"]

#: the seconds an AFLite call pays once on the reference machine (its first round's one-off costs besides the
#: process's first compilations: 0.02-0.1 s measured)
_WARMUP_SECONDS = 0.05

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
