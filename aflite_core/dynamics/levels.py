"""Difficulty levels: a Gaussian mixture over the measures (the paper's method) and the Data Maps / AUM baselines."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._child_process import run_stoppable
from .._utils import blas_threads
from .._validation import check_int, check_open_fraction, check_random_state, param_error
from .measures import _KNOWN_COLUMNS, DynamicsRecord, TrainingDynamics

__all__ = ["LEVELS", "DifficultyLevels", "aum_levels", "data_maps_levels", "difficulty_levels"]


#: the difficulty levels, from easiest to hardest
LEVELS: tuple[str, ...] = ("easy", "ambiguous", "hard")


# --------------------------------------------------------------------------------------------------- levels
@dataclass(frozen=True, eq=False)
class DifficultyLevels:
    """Per-example difficulty levels, with the measures they were derived from.

    Attributes
    ----------
    levels : pandas.Series
        Ordered categorical with categories ``("easy", "ambiguous", "hard")``, one per example (index: ids).
    measures : pandas.DataFrame
        The measures used (one row per example, same index).
    method : str
        ``"gmm"`` (:func:`difficulty_levels`), ``"data_maps"`` or ``"aum"`` (the baselines).
    thresholds : dict of str to float
        Cut points used by a percentile baseline (empty for ``"gmm"``).
    random_state : int or None
        The seed of the Gaussian mixture (``None`` for the baselines, which are deterministic).
    """

    levels: pd.Series
    measures: pd.DataFrame
    method: str
    thresholds: dict[str, float] = field(default_factory=dict)
    random_state: int | None = None

    @property
    def level_means(self) -> pd.DataFrame:
        """Mean of every measure per level (the cluster means, in the measures' own units); rows easy → hard."""
        return self.measures.groupby(self.levels, observed=False).mean().reindex(list(LEVELS))

    def counts(self) -> pd.Series:
        """Examples per level (all three levels, zeros included)."""
        return self.levels.value_counts().reindex(list(LEVELS), fill_value=0).rename("count")

    def to_frame(self) -> pd.DataFrame:
        """The measures and a ``level`` column, one row per example."""
        return self.measures.assign(level=self.levels)


def _level_series(codes: NDArray, index: pd.Index) -> pd.Series:
    cat = pd.Categorical.from_codes(codes, categories=list(LEVELS), ordered=True)
    return pd.Series(cat, index=index, name="level")


def _measure_frame(data: Any, func: str, required: Sequence[str], columns: Sequence[str] | None = None) -> pd.DataFrame:
    if isinstance(data, (DynamicsRecord, TrainingDynamics)):
        frame = data.measures()
    elif isinstance(data, pd.DataFrame):
        frame = data
    else:
        raise param_error("data", func, "a DynamicsRecord, TrainingDynamics or DataFrame of measures", data, TypeError)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(
            f"The 'data' parameter of {func} must have the measure column(s) {missing}. "
            f"Got columns {list(frame.columns)} instead."
        )
    if columns is None:
        columns = [c for c in _KNOWN_COLUMNS if c in frame.columns]
    else:
        if isinstance(columns, str):
            columns = [columns]
        columns = list(columns)
        unknown = [c for c in columns if c not in frame.columns]
        if unknown:
            raise ValueError(
                f"The 'columns' parameter of {func} must name columns of the measures "
                f"{list(frame.columns)}. Got {unknown!r} instead."
            )
        lacking = [c for c in required if c not in columns]
        if lacking:
            raise ValueError(f"The 'columns' parameter of {func} must include {lacking}. Got {columns!r} instead.")
    out = frame[list(columns)]
    bad = [
        c for c in out.columns if not (pd.api.types.is_numeric_dtype(out[c]) and not pd.api.types.is_bool_dtype(out[c]))
    ]
    if bad:
        raise ValueError(
            f"The 'data' parameter of {func} must hold numeric measures. Got non-numeric column(s) {bad} instead."
        )
    values = out.to_numpy(dtype=np.float64)
    if len(out) == 0:
        raise ValueError(f"The 'data' parameter of {func} must have at least one example. Got none instead.")
    if not np.isfinite(values).all():
        row = int(np.flatnonzero(~np.isfinite(values).all(axis=1))[0])
        raise ValueError(
            f"The 'data' parameter of {func} must hold finite measures. Got NaN or infinity in row {row} instead."
        )
    return out.astype(np.float64)


def _fit_mixture(gmm: Any, X: NDArray) -> tuple[Any, NDArray]:
    """The fitted mixture and each row's component (module level: it runs in a child process when stoppable)."""
    return gmm, gmm.fit(X).predict(X)


def difficulty_levels(
    data: DynamicsRecord | TrainingDynamics | pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    n_init: int = 10,
    covariance_type: str = "full",
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = 1,
    stop: Callable[[], bool] | None = None,
) -> DifficultyLevels:
    """Cluster examples into easy / ambiguous / hard with a 3-component Gaussian mixture (the paper's method).

    The features (default: the eight measures, or the four of a single input) are standardised (mean 0,
    standard deviation 1 per column), a :class:`sklearn.mixture.GaussianMixture` with three components is
    fitted, and every example goes to its most likely component. Components are ranked by the mean full-input
    ``confidence`` of their members: highest = ``"easy"``, middle = ``"ambiguous"``, lowest = ``"hard"``.

    Parameters
    ----------
    data : DynamicsRecord, TrainingDynamics or pandas.DataFrame
        The dynamics, or their measures (one row per example; needs a ``confidence`` column).
    columns : sequence of str, optional
        Feature columns to cluster on (default: every column of :data:`MEASURES` and its ``partial_`` version
        that is present).
    n_init : int, default=10
        Initialisations of the mixture; the best likelihood is kept (the authors' code uses 10).
    covariance_type : {"full", "tied", "diag", "spherical"}, default="full"
        Passed to the mixture.
    random_state : int, numpy Generator or None
        Seed of the mixture; the integer used is kept in ``result.random_state``.
    n_threads : int or None, default=1
        BLAS/OpenMP threads during the fit (``None`` leaves the library default). On a busy 2-core machine two
        threads made the fit several times slower.
    stop : callable, optional
        ``stop() -> bool`` (or raising to stop): the mixture is then fitted in a child process that a stop ends
        at once (:func:`aflite_core._child_process.run_stoppable`; the same levels), and True raises
        :class:`aflite_core._child_process.ChildStopped`. Without it, here.

    Returns
    -------
    DifficultyLevels
        ``levels`` per example, ``level_means`` (the cluster means), ``counts()``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> conf = np.r_[rng.normal(0.9, 0.02, 30), rng.normal(0.5, 0.02, 30), rng.normal(0.1, 0.02, 30)]
    >>> m = pd.DataFrame({"confidence": conf, "variability": rng.normal(0.1, 0.01, 90)})
    >>> difficulty_levels(m, random_state=0).counts().tolist()
    [30, 30, 30]
    """
    from sklearn.mixture import GaussianMixture

    func = "difficulty_levels"
    frame = _measure_frame(data, func, ("confidence",), columns)
    n_init = check_int(n_init, "n_init", func, low=1)
    if covariance_type not in ("full", "tied", "diag", "spherical"):
        raise param_error("covariance_type", func, "one of ['full', 'tied', 'diag', 'spherical']", covariance_type)
    if len(frame) < len(LEVELS):
        raise ValueError(
            f"The 'data' parameter of {func} must have at least {len(LEVELS)} examples to form three "
            f"clusters. Got {len(frame)} instead."
        )
    if n_threads is not None:
        check_int(n_threads, "n_threads", func, low=1)
    seed = check_random_state(random_state, func)
    values = frame.to_numpy()
    std = values.std(axis=0)
    std[std == 0] = 1.0
    standardised = (values - values.mean(axis=0)) / std
    gmm = GaussianMixture(
        n_components=len(LEVELS), covariance_type=covariance_type, n_init=n_init, random_state=seed % 2**32
    )
    with blas_threads(n_threads):
        cells = standardised.size * n_init
        gmm, component = run_stoppable(
            _fit_mixture, gmm, standardised, stop=stop, what="the Gaussian mixture", cells=cells
        )
    conf = frame["confidence"].to_numpy()
    conf_col = list(frame.columns).index("confidence")
    mean_conf = np.array(
        [
            conf[component == k].mean()
            if np.any(component == k)
            else gmm.means_[k, conf_col] * std[conf_col] + values[:, conf_col].mean()
            for k in range(len(LEVELS))
        ]
    )
    rank = np.empty(len(LEVELS), dtype=np.int64)
    rank[np.argsort(-mean_conf, kind="stable")] = np.arange(len(LEVELS))  # component → level code
    return DifficultyLevels(_level_series(rank[component], frame.index), frame, "gmm", {}, seed)


def data_maps_levels(
    data: DynamicsRecord | TrainingDynamics | pd.DataFrame, *, ambiguous_fraction: float = 0.33
) -> DifficultyLevels:
    """Data Maps baseline (Swayamdipta et al., 2020): ambiguous = most variable; the rest split by confidence.

    ``"ambiguous"``: full-input ``variability`` at or above its (1 − ``ambiguous_fraction``) quantile (the top
    33 % by default: the paper's "top 33 %" and "above the 66 % percentile"). The remaining examples are split
    at their median ``confidence``: at or above it ``"easy"`` (easy-to-learn: high confidence, low
    variability), below it ``"hard"`` (hard-to-learn: low confidence, low variability). The paper only
    defines the ambiguous cut; the median split of the rest is our choice, giving three near-equal levels.

    Parameters
    ----------
    data : DynamicsRecord, TrainingDynamics or pandas.DataFrame
        The dynamics or their measures (needs ``confidence`` and ``variability``).
    ambiguous_fraction : float, default=0.33
        Share of examples (before ties) called ambiguous, in (0, 1).

    Returns
    -------
    DifficultyLevels
        With ``thresholds = {"variability": v, "confidence": c}``.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame({"confidence": [0.9, 0.8, 0.5, 0.2, 0.1, 0.6],
    ...                   "variability": [0.01, 0.02, 0.30, 0.03, 0.04, 0.25]})
    >>> data_maps_levels(m).levels.tolist()
    ['easy', 'easy', 'ambiguous', 'hard', 'hard', 'ambiguous']
    """
    func = "data_maps_levels"
    frame = _measure_frame(data, func, ("confidence", "variability"), ["confidence", "variability"])
    fraction = check_open_fraction(ambiguous_fraction, "ambiguous_fraction", func)
    var = frame["variability"].to_numpy()
    conf = frame["confidence"].to_numpy()
    v_cut = float(np.quantile(var, 1.0 - fraction))
    ambiguous = var >= v_cut
    rest = ~ambiguous
    c_cut = float(np.median(conf[rest])) if rest.any() else float("nan")
    codes = np.where(ambiguous, 1, np.where(conf >= c_cut, 0, 2))
    return DifficultyLevels(
        _level_series(codes, frame.index), frame, "data_maps", {"variability": v_cut, "confidence": c_cut}, None
    )


def aum_levels(
    data: DynamicsRecord | TrainingDynamics | pd.DataFrame, *, lower: float = 0.33, upper: float = 0.66
) -> DifficultyLevels:
    """AUM percentile bands (after Pleiss et al., 2020, as the paper's baseline): hard / ambiguous / easy.

    With ``lo`` and ``hi`` the ``lower`` and ``upper`` quantiles of the full-input ``aum``: below ``lo`` is
    ``"hard"``, above ``hi`` is ``"easy"``, from ``lo`` to ``hi`` (inclusive) is ``"ambiguous"``.

    Parameters
    ----------
    data : DynamicsRecord, TrainingDynamics or pandas.DataFrame
        The dynamics or their measures (needs ``aum``).
    lower, upper : float, default=0.33, 0.66
        Quantiles bounding the ambiguous band, ``0 < lower < upper < 1``.

    Returns
    -------
    DifficultyLevels
        With ``thresholds = {"aum_lower": lo, "aum_upper": hi}``.

    Examples
    --------
    >>> import pandas as pd
    >>> aum_levels(pd.DataFrame({"aum": [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0]})).levels.tolist()
    ['hard', 'hard', 'ambiguous', 'ambiguous', 'easy', 'easy']
    """
    func = "aum_levels"
    frame = _measure_frame(data, func, ("aum",), ["aum"])
    lo_q = check_open_fraction(lower, "lower", func)
    hi_q = check_open_fraction(upper, "upper", func)
    if not lo_q < hi_q:
        raise ValueError(
            f"The 'upper' parameter of {func} must be a float in (lower, 1) = ({lo_q}, 1). Got {upper!r} instead."
        )
    aum = frame["aum"].to_numpy()
    lo, hi = (float(v) for v in np.quantile(aum, [lo_q, hi_q]))
    codes = np.where(aum < lo, 2, np.where(aum > hi, 0, 1))
    return DifficultyLevels(_level_series(codes, frame.index), frame, "aum", {"aum_lower": lo, "aum_upper": hi}, None)
