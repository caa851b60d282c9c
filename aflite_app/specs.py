"""The frozen specs that key the app's stores, and the session's own data as compute receives it (no Streamlit).

Pages build specs from their widgets and pass them to :mod:`aflite_app.compute`; compute keys its stores by them.
The session's uploaded datasets and opened run directories reach compute as a :class:`SessionData` value, passed
by the page as an argument (``session=``) to every compute function that reads them (built by
:func:`aflite_app.state.session_data`): compute never imports the session module (:mod:`aflite_app.state`) or
reads Streamlit's session state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from types import MappingProxyType
from typing import Any

__all__ = ["BUNDLED", "NO_SESSION", "DatasetSpec", "FilterSpec", "SessionData"]

#: bundled datasets the sidebar offers (uploaded ones and opened runs are added per session)
BUNDLED = {
    "digits": "Handwritten digits (bundled)",
    "planted": "Synthetic: Gaussian classes + planted bias (2,000 rows)",
    "circles": "Synthetic: concentric circles + bias features (1,000 rows)",
    "snli-sample": "SNLI sample: 1,496 real sentence pairs (bundled)",
}


@dataclass(frozen=True)
class DatasetSpec:
    """Which dataset and representation: the cache key of everything computed on it."""

    key: str
    representation: str | None = None


@dataclass(frozen=True)
class FilterSpec:
    """Every AFLite parameter of a run on the app's current data (hashable, so it keys the result store).

    ``device`` is where the run goes (``"cpu"``: the numpy engine; ``"cuda"``: the torch backend on a GPU, see
    :func:`aflite_app.compute.run_devices.app_device`): runs on different devices are different store entries.
    """

    dataset: DatasetSpec
    target_size: float
    train_size: float
    slice_size: int
    tau: float
    n_partitions: int = 64
    strategy: str = "slice"
    model: str = "linear"
    seed: int = 0
    device: str = "cpu"
    #: label permutations of the run's null (issue 27; 0: none): a run with a null removes the same rows, but
    #: it is a store entry of its own (it costs about K + 1 times the fits)
    null_permutations: int = 0
    #: which rows the partitions keep together (issue 28): "" none, "premise" (an NLI pair's premise: the default
    #: for pair datasets, :func:`aflite_app.compute.runs.groups_choice`), "duplicates" (the Data page's duplicate
    #: groups), or both joined by "+"; the group codes are made from it by :func:`aflite_app.compute.runs.run_groups`
    groups: str = ""

    def with_(self, **changes: Any) -> FilterSpec:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`aflite_core.aflite` (without data, model, seed and device)."""
        d = asdict(self)
        kwargs = {k: d[k] for k in ("target_size", "train_size", "tau", "n_partitions", "strategy")} | {
            "slice_size": None if self.strategy == "greedy" else self.slice_size
        }
        if self.null_permutations:  # only a spec that asks for a null passes it (every other call stays the same)
            kwargs["null_permutations"] = int(self.null_permutations)
        return kwargs


def _empty() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True)
class SessionData:
    """The session's own data, read-only: all the compute layer may see of a session."""

    uploads: Mapping[str, Any] = field(default_factory=_empty)  # key -> Dataset: uploads, fetched NLI, opened runs
    run_dirs: Mapping[str, dict] = field(default_factory=_empty)  # key -> {"spec": FilterSpec, "result": ...}
    #: the Filter page's stopped (partial) run, when it is the current run: FilterSpec -> its AFLiteResult (issue 29)
    partial: Mapping[Any, Any] = field(default_factory=_empty)


#: no session (a test, a script, a background thread): bundled datasets and the server-wide stores only
NO_SESSION = SessionData()
