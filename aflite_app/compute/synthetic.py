"""The Synthetic circles page (the paper's Figure 2, live): datasets, "before" accuracies and AFLite runs.

Three caches, from slowest-changing to fastest: the datasets (cache_resource, keyed by :class:`CirclesSpec`),
their "before" accuracies (cache_data, keyed by CirclesSpec + folds; independent of τ and k) and the AFLite runs
with the "after" accuracies (cache_resource, keyed by :class:`CirclesRunSpec` = CirclesSpec + AFLite parameters).
The page builds its own data: the sidebar's dataset is not used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from aflite_core import synthetic, synthetic_experiment

__all__ = [
    "CIRCLES_LIVE_FOLDS",
    "CIRCLES_MAX_LEVELS",
    "CirclesRunSpec",
    "CirclesSpec",
    "circles_before",
    "circles_datasets",
    "circles_experiment",
    "circles_headline",
    "circles_round",
    "parse_separations",
]

#: CV folds of the accuracies in the live view (the paper's protocol uses 5; 3 keeps a τ/k change under ~2 s)
CIRCLES_LIVE_FOLDS = 3
#: how many separation levels the page accepts
CIRCLES_MAX_LEVELS = 6


@dataclass(frozen=True)
class CirclesSpec:
    """The concentric-circles datasets of the Synthetic page: the cache key of the datasets and "before" numbers."""

    n_samples: int = 2000
    bias_fraction: float = 0.75
    flip_fraction: float = 0.1
    separations: tuple[float, ...] = synthetic.PAPER_SEPARATIONS
    seed: int = 0


@dataclass(frozen=True)
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
    hint = (
        f"Separations must be a comma-separated list of 1 to {CIRCLES_MAX_LEVELS} distinct numbers in [0, 2), "
        f'e.g. "1.0, 0.6, 0.4, 0.2". Got {text!r} instead.'
    )
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
def circles_datasets(spec: CirclesSpec) -> tuple[synthetic.BiasedCircles, ...]:
    """The datasets of ``spec`` (``paper_circles``' seeds and names, with ``spec.bias_fraction``)."""
    base = synthetic.paper_circles(
        spec.n_samples, separations=list(spec.separations), flip_fraction=spec.flip_fraction, random_state=spec.seed
    )
    out = []
    for d in base:  # paper_circles has no bias_fraction: regenerate each with its own seed (same data at 0.75)
        params = {k: val for k, val in d.params.items() if k not in ("seed", "n_samples")}
        params["bias_fraction"] = spec.bias_fraction
        again = synthetic.make_biased_circles(d.n_samples, **params, random_state=d.params["seed"])
        out.append(replace(again, name=d.name))
    return tuple(out)


@st.cache_data(max_entries=16, show_spinner="Measuring the accuracies before filtering…")
def circles_before(spec: CirclesSpec, n_splits: int) -> dict[str, dict[str, float]]:
    """Linear and RBF-SVM accuracy of every dataset before filtering (they depend on neither τ nor k)."""
    return synthetic_experiment.before_accuracies(
        list(circles_datasets(spec)), n_splits=n_splits, random_state=spec.seed, n_threads=1
    )


@st.cache_resource(max_entries=32, show_spinner="Running AFLite on every dataset…")
def circles_experiment(run: CirclesRunSpec) -> synthetic_experiment.SyntheticExperiment:
    """AFLite on every dataset plus the "after" accuracies and planted-truth counts (``synthetic_experiment``)."""
    data = list(circles_datasets(run.data))
    before = circles_before(run.data, run.n_splits)
    return synthetic_experiment.synthetic_experiment(
        data,
        target_size=run.target_size,
        train_size=run.train_size,
        slice_size=int(run.slice_size),
        tau=run.tau,
        n_partitions=run.n_partitions,
        n_splits=run.n_splits,
        before=before,
        random_state=run.data.seed,
        n_threads=1,
    )


def circles_headline(exp: synthetic_experiment.SyntheticExperiment) -> dict[str, float]:
    """Averages over the datasets for the page's metrics: accuracies and biased share before/after."""
    t = exp.table
    flipped = t["flipped_removed_share"].dropna()
    return {
        "linear_before": float(t["linear_before"].mean()),
        "linear_after": float(t["linear_after"].mean()),
        "rbf_before": float(t["rbf_before"].mean()),
        "rbf_after": float(t["rbf_after"].mean()),
        "biased_share_before": float(t["biased_share_before"].mean()),
        "biased_share_after": float(t["biased_share_after"].mean()),
        "flipped_removed_share": float(flipped.mean()) if len(flipped) else float("nan"),
        "rows_after": float(t["n_after"].mean()),
    }


def circles_round(exp: synthetic_experiment.SyntheticExperiment, name: str, rnd: int) -> dict[str, float]:
    """What round ``rnd`` of the run on dataset ``name`` did, with the planted truth (for the round stepper)."""
    data = next(d for d in exp.datasets if d.name == name)
    res = exp.results[name]
    rr = np.asarray(res.removed_round)
    now = rr == rnd
    left = (rr < 1) | (rr > rnd)
    row = res.history.iloc[rnd - 1]
    return {
        "removed": int(now.sum()),
        "removed_biased": int((now & data.is_biased).sum()),
        "removed_flipped": int((now & data.is_flipped).sum()),
        "size_after": int(left.sum()),
        "biased_left": int((left & data.is_biased).sum()),
        "flipped_left": int((left & data.is_flipped).sum()),
        "mean_p": float(row["mean_predictability"]),
        "qualified": int(row["n_qualified"]),
        "scored": int(row["n_scored"]),
    }
