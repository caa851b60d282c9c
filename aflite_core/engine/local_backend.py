"""Where a round's work runs: the :class:`Backend` protocol and :class:`LocalBackend`, this process (the default).

A backend fits and scores the m partition models of one round for :class:`aflite_core.engine.loop.Run`;
``aflite_core.engine.distributed.DaskBackend`` and ``aflite_core.engine.torch_backend.TorchBackend`` are the
others. All of them run the same partition unit (:func:`aflite_core.engine.partitions.score_round`), so they give
identical results for the same seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from .partitions import PartitionPlan, RoundScores, open_session, score_round

__all__ = ["Backend", "LocalBackend"]


class Backend(Protocol):
    """Where a round's partition models are fitted and scored."""

    mode: str
    rows_per_block: int

    def open(
        self,
        X,
        codes,
        n_classes: int,
        family: Any,
        *,
        train_size: int,
        n_partitions: int,
        rng,
        eval_X=None,
        eval_codes=None,
    ) -> None:
        """Bind the data and the model family (draws any per-run randomness, e.g. blocks, from ``rng``)."""

    def draw_plan(self, rows: NDArray[np.intp], rng) -> PartitionPlan:
        """Draw the partitions of the current rows for this round."""

    def score(
        self, rows: NDArray[np.intp], plan: PartitionPlan, rng, eval_rows: NDArray[np.intp] | None, round_no: int
    ) -> RoundScores:
        """Fit and score one round."""

    def remove(self, rows: NDArray[np.intp], round_no: int) -> None:
        """Rows removed in round ``round_no`` (in order; replayed on resume)."""

    def close(self) -> None:
        """Release resources."""


class LocalBackend:
    """Run every round in this process (the default)."""

    def open(
        self,
        X,
        codes,
        n_classes,
        family,
        *,
        train_size,
        n_partitions,
        rng,
        eval_X=None,
        eval_codes=None,
        groups=None,
    ) -> None:
        """Create the family's session (its per-run randomness comes from ``rng`` first; ``groups``: whole groups)."""
        self.X, self.codes = X, codes
        self.eval_X, self.eval_codes = eval_X, eval_codes
        self.session = open_session(
            family, X, codes, n_classes, train_size=train_size, n_partitions=n_partitions, rng=rng, groups=groups
        )
        prepare = getattr(self.session, "prepare", None)
        if prepare is not None:
            prepare()
        self.mode = getattr(self.session, "mode", "exact")
        self.rows_per_block = int(getattr(self.session, "rows_per_block", 1))

    def draw_plan(self, rows, rng) -> PartitionPlan:
        """Delegate to the session."""
        return self.session.draw_plan(rows, rng)

    #: ``on_step(phase, done, total)`` inside a round (set by the run; see :func:`aflite_core.aflite`)
    on_step: Callable[[str, int, int], bool | None] | None = None
    #: count each row's held-out predictions per class too (set by the run: ``aflite(record_votes=...)``)
    record_votes: bool = False

    def score(self, rows, plan, rng, eval_rows, round_no) -> RoundScores:
        """One round with :func:`aflite_core.engine.partitions.score_round`."""
        return score_round(
            self.session,
            self.X,
            self.codes,
            rows,
            plan,
            rng,
            on_step=self.on_step,
            eval_X=self.eval_X,
            eval_codes=self.eval_codes,
            eval_rows=eval_rows,
            votes=self.record_votes,
        )

    def remove(self, rows, round_no) -> None:
        """Forget removed rows (downdates cached statistics)."""
        self.session.remove(rows)

    def close(self) -> None:
        """Nothing to release."""
