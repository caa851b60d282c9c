"""Session-state keys, defaults and the small frozen specs that key every cache."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

#: bundled datasets the sidebar offers (uploaded ones and opened runs are added per session)
BUNDLED = {
    "digits": "Handwritten digits (bundled)",
    "planted": "Synthetic: Gaussian classes + planted bias (2,000 rows)",
    "circles": "Synthetic: concentric circles + bias features (1,000 rows)",
}

#: model families offered on the Filter page
MODEL_FAMILIES = {
    "linear": "Linear (fast batched ridge, default)",
    "logistic": "Logistic regression (scikit-learn, slower)",
    "knn": "k-nearest neighbours (scikit-learn, k=15)",
}

STRATEGY_LABELS = {
    "slice": "Greedy slicing (AFLite, top-k per round)",
    "sample": "Slice sampling (Gumbel top-k ∝ p)",
    "greedy": "Greedy, one row per round (slow)",
}

# session-state keys
DATASET = "dataset_key"  # str: key of the chosen dataset
REPRESENTATION = "representation"  # str or None
UPLOADS = "uploads"  # dict: key -> Dataset (this session's uploads)
RUN_DIRS = "run_dirs"  # dict: key -> loaded CLI run (AFLiteResult + metadata)
RUN = "background_run"  # BackgroundRun of the Filter page
LAST = "last_result_spec"  # FilterSpec of the result shown last


@dataclass(frozen=True)
class DatasetSpec:
    """Which dataset and representation: the cache key of everything computed on it."""

    key: str
    representation: str | None = None


@dataclass(frozen=True)
class FilterSpec:
    """Every AFLite parameter of a run on the app's current data (hashable, so it keys the result cache)."""

    dataset: DatasetSpec
    target_size: float
    train_size: float
    slice_size: int
    tau: float
    n_partitions: int = 64
    strategy: str = "slice"
    model: str = "linear"
    seed: int = 0

    def with_(self, **changes: Any) -> FilterSpec:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`aflite_core.aflite` (without data, model and seed)."""
        d = asdict(self)
        return {k: d[k] for k in ("target_size", "train_size", "tau", "n_partitions", "strategy")} | {
            "slice_size": None if self.strategy == "greedy" else self.slice_size
        }


def init_session(st) -> None:
    """Set every session default once (app.py calls this before the pages run)."""
    defaults = {
        DATASET: "digits",
        REPRESENTATION: None,
        UPLOADS: {},
        RUN_DIRS: {},
        RUN: None,
        LAST: None,
    }
    for key, value in defaults.items():
        if key not in st.session_state:
            st.session_state[key] = value
