"""The Baselines page (ICML 2020 §4.2): AFLite's kept rows against equal-size random and one-shot subsets.

Is the subset harder because of *which* rows it kept, or only smaller? The same model families are
cross-validated on the full data, AFLite's kept rows, a random subset of the same size and the one-shot
single-model filter's subset, plus each subset's representation bias. Small pieces are memoised separately
(in the byte-bounded stores, :func:`._stores.memo`), so the full-data numbers are reused across runs and
adding a model family computes only that family; whole reports sit in a bounded store so the page can tell
"already computed" from "needs the Compute button".
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from aflite_core import predictability
from aflite_core.data.datasets import Dataset
from aflite_core.engine.registry import CLASSIFIER_LABELS
from aflite_core.measures import baselines as core_baselines

from .. import settings
from ..specs import NO_SESSION, FilterSpec, SessionData
from . import _stores
from .datasets import dataset, default_partial_input, partial_input_choices
from .runs import run_filter

__all__ = [
    "BASELINE_AUTO_SECONDS",
    "BASELINE_DEFAULT_MODELS",
    "BASELINE_MODELS",
    "BaselineOptions",
    "BaselineReport",
    "baseline_estimate",
    "baselines",
    "default_partial_input",
    "partial_input_choices",
    "stored_baselines",
]

#: classifier families of the Baselines page, cheap ones first, with their labels from the core's registry
BASELINE_MODELS = {name: CLASSIFIER_LABELS[name] for name in ("logistic", "knn", "rbf", "mlp")}
BASELINE_DEFAULT_MODELS = ("logistic", "knn")
#: seconds per family for the four subsets of the digits (1,438 rows × 64-d, one busy core), measured once;
#: used only to decide whether the page computes at once or behind a button
_BASELINE_COST = {"logistic": 1.2, "knn": 0.35, "rbf": 0.9, "mlp": 13.0}
_BASELINE_OVERHEAD = 0.3  # subsets, one-shot filter and representation bias
_BASELINE_COST_ROWS = 1438
#: reports estimated to take longer than this wait for the page's Compute button
BASELINE_AUTO_SECONDS = settings.load().baseline_auto_seconds
#: AFLite's family (Filter page) -> the classifier family of the one-shot filter
_ONE_SHOT_FAMILY = {"linear": "logistic", "logistic": "logistic", "knn": "knn"}


@dataclass(frozen=True)
class BaselineOptions:
    """What the Baselines page compares (with the run's FilterSpec, the cache key of a report)."""

    models: tuple[str, ...] = BASELINE_DEFAULT_MODELS
    partial: str | None = None  # a second representation scored as the partial input
    n_splits: int = 5
    max_train_rows: int = 2000
    seed: int = 0


@dataclass(frozen=True)
class BaselineReport:
    """Accuracies and representation bias of the four subsets (tables for the page's charts)."""

    accuracies: Any  # DataFrame: subset, features, model, n_rows, accuracy, accuracy_std, n_splits, majority_rate, note
    bias: Any  # DataFrame: subset, n_rows, n_scored, mean_predictability, note
    sizes: dict
    notes: tuple
    seconds: float
    train_size: int
    bias_partitions: int
    bias_model: str
    one_shot_model: str
    grouped_by: str | None


def baseline_estimate(
    n_rows: int, options: BaselineOptions, n_features: int = 64, partial_features: int | None = None
) -> float:
    """Rough seconds a report takes (scaled from the digits timings by rows and dimensions).

    Decides whether the page computes at once or waits for its Compute button. Measured: the digits (1,438 × 64,
    linear + kNN) ~1.8 s; SNLI sample (6,891 × 384, training folds capped at 2,000 rows, linear + kNN, with a
    384-d partial input) ~23 s on a busy 2-core machine.
    """
    rows = max(min(n_rows, int(options.max_train_rows * 1.25)) / _BASELINE_COST_ROWS, 0.05)

    def one_view(d: int) -> float:
        width = max(d / 64, 0.25) ** 0.8
        total = 0.0
        for m in options.models:
            power = 2.0 if m == "rbf" else 1.3 if m == "knn" else 1.0
            total += _BASELINE_COST.get(m, 5.0) * rows**power * width * (options.n_splits / 5)
        return total

    views = one_view(n_features) + (one_view(partial_features or n_features) if options.partial else 0.0)
    return float(views + _BASELINE_OVERHEAD)


BASELINE_STORE_SIZE = settings.load().baseline_store_size


def _baseline_store() -> _stores.Store:
    """Finished reports by (FilterSpec, BaselineOptions)."""
    return _stores.store("baseline_store", BASELINE_STORE_SIZE)


def stored_baselines(spec: FilterSpec, options: BaselineOptions) -> BaselineReport | None:
    """The report for this run and these options if it was computed before (no computation)."""
    return _baseline_store().recall((spec, options))


def _baseline_groups(data: Dataset):
    """Premise of a sentence pair: kept on one side of every fold (a premise never trains and tests)."""
    if data.pair is None:
        return None, None
    return data.frame[data.pair[0]].astype(str).to_numpy(), data.pair[0]


@_stores.memo("baseline_subsets", 16)
def _baseline_subsets(spec: FilterSpec, seed: int, *, _session: SessionData = NO_SESSION) -> dict:
    """Masks of the four subsets of one run (same size except the full data) and a note per subset."""
    result = run_filter(spec, session=_session)
    data = dataset(spec.dataset, session=_session)
    n, kept = data.n_rows, np.asarray(result.kept, dtype=bool)
    n_kept = int(kept.sum())
    masks = {
        "full": np.ones(n, dtype=bool),
        "aflite": kept,
        "random": core_baselines.random_subset(n, n_kept, y=data.y, random_state=seed),
    }
    notes = {}
    t = int(result.params["train_size"])
    family = _ONE_SHOT_FAMILY.get(spec.model, "logistic")
    if n_kept >= n:
        masks["one-shot"] = masks["full"]
        notes["one-shot"] = "nothing removed: the one-shot filter keeps every row too"
    else:
        try:
            one = core_baselines.one_shot_filter(
                data.representation(spec.dataset.representation),
                data.y,
                size=n_kept,
                train_size=t,
                model=family,
                random_state=seed,
                n_threads=1,
            )
            masks["one-shot"] = one.kept
        except ValueError as exc:  # e.g. a kept set too small for its training part: compare without it
            notes["one-shot"] = f"one-shot filter not possible here: {exc}"
    return {"masks": masks, "notes": notes, "train_size": t, "one_shot_model": family}


def _subset_key(name: str, spec: FilterSpec, n_kept: int, t: int) -> tuple:
    """What determines a subset's rows (with the dataset and the seed): the cache key of its numbers."""
    if name == "full":
        return ("full",)
    if name == "random":
        return ("random", n_kept)
    if name == "one-shot":
        return ("one-shot", spec.dataset.representation, n_kept, t, spec.model)
    return ("aflite", spec)


@_stores.memo("subset_accuracy", 512)
def _subset_accuracy(
    data_key: str, subset: tuple, view: str, model: str, n_splits: int, cap: int, seed: int, _X, _y, _mask, _groups
) -> dict:
    frame = core_baselines.model_accuracies(
        _X,
        _y,
        mask=_mask,
        models=[model],
        n_splits=n_splits,
        groups=_groups,
        max_train_rows=cap,
        random_state=seed,
        n_threads=1,
    )
    return frame.iloc[0].to_dict()


@_stores.memo("subset_bias", 128)
def _subset_bias(
    data_key: str, subset: tuple, rep: str | None, family: str, t: int, m: int, seed: int, _X, _y, _mask
) -> dict:
    """Mean out-of-sample predictability of one subset (aflite_core.predictability: one AFLite scoring phase)."""
    rows = np.flatnonzero(_mask)
    y = np.asarray(_y)[rows]
    counts = np.bincount(y) if len(y) else np.zeros(0, int)
    small = np.flatnonzero((counts > 0) & (counts < 2))
    note = ""
    if len(small):
        rows = rows[~np.isin(y, small)]
        y = np.asarray(_y)[rows]
        note = f"{len(small)} class(es) with a single row left out"
    out = {"n_rows": int(_mask.sum()), "n_scored": 0, "mean_predictability": float("nan"), "note": note}
    if len(np.unique(y)) < 2 or t >= len(rows):
        out["note"] = "fewer than 2 classes or too few rows to score"
        return out
    p = predictability(
        np.asarray(_X)[rows], y, n_partitions=m, train_size=t, model=family, random_state=seed, n_threads=1
    )
    scored = ~np.isnan(p)
    out.update(n_scored=int(scored.sum()), mean_predictability=float(np.nanmean(p)) if scored.any() else float("nan"))
    return out


def baselines(spec: FilterSpec, options: BaselineOptions, *, session: SessionData = NO_SESSION) -> BaselineReport:
    """Compute (or fetch) the Baselines report of a run: accuracies of every family on every subset + bias."""
    hit = stored_baselines(spec, options)
    if hit is not None:
        return hit
    if not options.models:
        raise ValueError("Choose at least one model family to compare.")
    unknown = [m for m in options.models if m not in BASELINE_MODELS]
    if unknown:
        raise ValueError(f"Unknown model families {unknown}; choose among {list(BASELINE_MODELS)}.")
    start = time.perf_counter()
    data = dataset(spec.dataset, session=session)
    if options.partial is not None and options.partial not in data.representations:
        raise ValueError(
            f"Dataset '{data.name}' has no representation {options.partial!r} to use as the partial "
            f"input; available: {list(data.representations)}."
        )
    subsets = _baseline_subsets(spec, options.seed, _session=session)
    masks, t = subsets["masks"], subsets["train_size"]
    n_kept = int(masks["aflite"].sum())
    groups, grouped_by = _baseline_groups(data)
    views = {"full input": spec.dataset.representation}
    if options.partial:
        views["partial input"] = options.partial
    rows = []
    for name, mask in masks.items():
        skey = _subset_key(name, spec, n_kept, t)
        for view, rep in views.items():
            X = data.representation(rep)
            for model in options.models:
                rec = _subset_accuracy(
                    data.name + ":" + spec.dataset.key,
                    skey,
                    rep or "",
                    model,
                    options.n_splits,
                    options.max_train_rows,
                    options.seed,
                    X,
                    data.y,
                    mask,
                    groups,
                )
                note = "; ".join(x for x in (subsets["notes"].get(name, ""), rec.get("note", "")) if x)
                rows.append(
                    {
                        "subset": name,
                        "features": view,
                        "model": model,
                        "n_rows": int(rec["n_rows"]),
                        "accuracy": float(rec["accuracy"]),
                        "accuracy_std": float(rec["accuracy_std"]),
                        "n_splits": int(rec["n_splits"]),
                        "majority_rate": float(rec["majority_rate"]),
                        "note": note,
                    }
                )
    m = int(spec.n_partitions) if spec.model == "linear" else min(int(spec.n_partitions), 16)
    X = data.representation(spec.dataset.representation)
    bias_rows = []
    for name, mask in masks.items():
        rec = _subset_bias(
            data.name + ":" + spec.dataset.key,
            _subset_key(name, spec, n_kept, t),
            spec.dataset.representation,
            spec.model,
            t,
            m,
            options.seed,
            X,
            data.y,
            mask,
        )
        bias_rows.append({"subset": name, **rec})
    notes = [note for name, note in subsets["notes"].items() if name not in masks]
    if n_kept >= data.n_rows:
        notes.append("AFLite removed no rows in this run: every subset is the full data.")
    report = BaselineReport(
        accuracies=pd.DataFrame(rows),
        bias=pd.DataFrame(bias_rows),
        sizes={name: int(mask.sum()) for name, mask in masks.items()},
        notes=tuple(notes),
        seconds=time.perf_counter() - start,
        train_size=t,
        bias_partitions=m,
        bias_model=spec.model,
        one_shot_model=subsets["one_shot_model"],
        grouped_by=grouped_by,
    )
    _baseline_store().keep((spec, options), report)
    return report
