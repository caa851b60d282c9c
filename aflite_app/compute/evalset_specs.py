"""The specs that key the Evaluation sets page's stores: the split, the study, a parsed evaluation upload.

Re-exported by :mod:`aflite_app.compute.evalsets` (the page's compute module).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["EvalSetSpec", "EvalStudySpec", "EvalUpload"]


@dataclass(frozen=True)
class EvalSetSpec:
    """Where the evaluation rows come from: the cache key of the split and its adversaries.

    ``source`` is ``"split"`` (a seeded share of the sidebar's dataset becomes the evaluation set) or ``"upload"``
    (the dataset is the training set and ``upload`` is the digest of an evaluation table stored by
    :func:`evalsets_upload`).
    """

    dataset: str
    source: str = "split"
    eval_fraction: float = 0.3
    seed: int = 0
    upload: str | None = None
    annotator_column: str | None = None
    annotator_source_column: str | None = None
    embeddings: bool = False


@dataclass(frozen=True)
class EvalStudySpec:
    """Every option of one adversary study (hashable: the key of the study store)."""

    setup: EvalSetSpec
    adversaries: tuple[str, ...]
    evaluated: tuple[str, ...]  # "family:representation", as the core names evaluated models
    n_seeds: int = 1
    tau: float = 0.75
    target_size: int = 400
    train_size: int = 100
    slice_size: int = 100
    n_partitions: int = 64
    model: str = "linear"
    ensemble: bool = False
    annotator_sources: tuple[str, ...] | None = ("random_subset",)

    @property
    def seeds(self) -> tuple[int, ...]:
        """AFLite seeds 0 … n_seeds − 1."""
        return tuple(range(int(self.n_seeds)))


@dataclass(frozen=True)
class EvalUpload:
    """A parsed evaluation table aligned with a training dataset (see :func:`evalsets_upload`)."""

    digest: str
    dataset: str
    name: str
    frame: Any  # DataFrame of the evaluation rows (all its columns)
    train_X: dict
    eval_X: dict
    descriptions: dict
    eval_y: Any
    eval_ids: Any
    notes: tuple[str, ...]
