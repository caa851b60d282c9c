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

The shape model is :mod:`aflite_core.engine.work_units` and the calibration :mod:`aflite_core.engine.rate_calibration`;
this module multiplies the two and follows jobs as they run, and re-exports both (callers import from here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .rate_calibration import _WARMUP_SECONDS, calibrate, rates  # noqa: F401 (re-exported)
from .work_units import (  # noqa: F401 (re-exported: callers import the shape model from here)
    _REFERENCE,
    KNN_DISTANCE_WEIGHT,
    PREDICT_WEIGHT,
    RIDGE_ROW_WEIGHT,
    ROW_WEIGHT,
    SETUP_WEIGHT,
    _rows,
    aflite_round_units,
    aflite_rounds_left,
    aflite_solver,
    aflite_units,
    aflite_units_left,
    baselines_units,
    bias_units,
    cv_units,
    family_solver,
    one_shot_units,
    rate_kind,
    setup_units,
)

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

#: loading all-MiniLM-L6-v2 in a fresh process (torch and sentence-transformers imported, files in the page cache) on
#: the reference machine: 4.6 s measured where the calibration gave speed 1.07; 36 s at load 15 where it gave 0.11
#: (issue 25; the uncalibrated :func:`~aflite_core.data.embed_status.estimate_embedding_seconds` assumes ~9 s)
_MODEL_LOAD_REFERENCE = 5.0
#: UMAP (n_neighbors 15, 2-D): seconds per n·log₂ n on the reference machine (issue 25: 41-85 s at 550,000 rows)
_UMAP_RATE = 6.0e-6


def estimate_seconds(kind: str, *, calibrated: bool = True, **shape) -> float:
    """Seconds a job of this kind and shape takes on this server (shape model × the calibrated rate).

    Parameters
    ----------
    kind : {"aflite", "baselines", "stability", "umap", "embedding"}
        ``aflite``: ``n_rows, target_size, slice_size, train_size, n_partitions, n_features`` (target and train
        as counts or fractions of n_rows), ``n_classes`` and ``model`` (the adversary family's name, default
        ``"linear"``: :func:`~aflite_core.engine.work_units.family_solver` prices scikit-learn's logistic
        regression and kNN at the rates the calibration measures for them); ``baselines``: the arguments of
        :func:`baselines_units`; ``stability``: those of ``aflite`` and ``seeds``; ``umap``: ``n_rows``;
        ``embedding``: ``texts`` (and ``model_loaded``).
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
        solver = family_solver(str(shape.get("model", "linear")), m, t, d, classes)
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
    model : str, default="linear"
        The adversary family's name (:func:`~aflite_core.engine.work_units.family_solver`).
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
        model: str = "linear",
        prior: dict[str, float] | None = None,
    ) -> None:
        n = int(n_rows)
        self.n_rows, self.target = n, _rows(target_size, n)
        self.k = max(_rows(slice_size, n), 1)
        self.t, self.m, self.d, self.classes = _rows(train_size, n), int(n_partitions), int(n_features), n_classes
        self.solver = family_solver(model, self.m, self.t, self.d, n_classes) if self.d > 0 else "logistic"
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
