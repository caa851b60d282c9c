"""The Baselines page's pieces as plain functions: what its child process runs (no Streamlit import).

:mod:`aflite_app.compute.baselines` runs each piece of a comparison - a family's cross-validation on one subset, a
subset's representation bias, the one-shot filter - either here or, in its background job, in a child process that
Stop ends (:class:`aflite_core._child_process.Worker`). The child imports only this module (numpy and the core), so
it starts in a fraction of a second; its state is :func:`child_state` (the representations, labels and groups,
sent once), and ``*_in_child(state, rep, ...)`` run the same functions on it as the page's thread would.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aflite_core import predictability
from aflite_core.measures import baselines as core_baselines

__all__ = [
    "bias_in_child",
    "bias_piece",
    "child_state",
    "cv_in_child",
    "cv_piece",
    "one_shot_in_child",
    "one_shot_piece",
]


def child_state(views: dict[str, Any], y: Any, groups: Any) -> dict:
    """The child's state: the representations a comparison uses (by name), the labels, the premise groups."""
    return {"views": views, "y": y, "groups": groups}


def cv_piece(X, y, mask, groups, model: str, n_splits: int, cap: int, seed: int) -> dict:
    """One family's cross-validated accuracy on one subset (a row of ``model_accuracies``)."""
    frame = core_baselines.model_accuracies(
        X, y, mask=mask, models=[model], n_splits=n_splits, groups=groups, max_train_rows=cap, random_state=seed,
        n_threads=1,
    )  # fmt: skip
    return frame.iloc[0].to_dict()


def cv_in_child(state: dict, rep: str, mask, model: str, n_splits: int, cap: int, seed: int) -> dict:
    """:func:`cv_piece` on the child's representation ``rep`` (its state: :func:`child_state`)."""
    return cv_piece(state["views"][rep], state["y"], mask, state["groups"], model, n_splits, cap, seed)


def bias_piece(X, y, mask, family: str, t: int, m: int, seed: int) -> dict:
    """Mean out-of-sample predictability of one subset (aflite_core.predictability: one AFLite scoring phase)."""
    rows = np.flatnonzero(mask)
    y = np.asarray(y)
    sub = y[rows]
    counts = np.bincount(sub) if len(sub) else np.zeros(0, int)
    small = np.flatnonzero((counts > 0) & (counts < 2))
    note = ""
    if len(small):
        rows = rows[~np.isin(sub, small)]
        sub = y[rows]
        note = f"{len(small)} class(es) with a single row left out"
    out = {"n_rows": int(mask.sum()), "n_scored": 0, "mean_predictability": float("nan"), "note": note}
    if len(np.unique(sub)) < 2 or t >= len(rows):
        out["note"] = "fewer than 2 classes or too few rows to score"
        return out
    p = predictability(
        np.asarray(X)[rows], sub, n_partitions=m, train_size=t, model=family, random_state=seed, n_threads=1
    )
    scored = ~np.isnan(p)
    out.update(n_scored=int(scored.sum()), mean_predictability=float(np.nanmean(p)) if scored.any() else float("nan"))
    return out


def bias_in_child(state: dict, rep: str, mask, family: str, t: int, m: int, seed: int) -> dict:
    """:func:`bias_piece` on the child's representation ``rep``."""
    return bias_piece(state["views"][rep], state["y"], mask, family, t, m, seed)


def one_shot_piece(X, y, n_kept: int, t: int, family: str, seed: int) -> np.ndarray:
    """The one-shot filter's kept rows (one model trained once on t rows)."""
    return core_baselines.one_shot_filter(
        X, y, size=n_kept, train_size=t, model=family, random_state=seed, n_threads=1
    ).kept


def one_shot_in_child(state: dict, rep: str, n_kept: int, t: int, family: str, seed: int) -> np.ndarray:
    """:func:`one_shot_piece` on the child's representation ``rep``."""
    return one_shot_piece(state["views"][rep], state["y"], n_kept, t, family, seed)
