"""The three constants a run, its checkpoints and its saved record share: history columns, strategies, stop reasons.

They live here, below every module that reads them (:mod:`~aflite_core.engine.loop`,
:mod:`~aflite_core.engine.filtering`, :mod:`~aflite_core.engine.result`, :mod:`~aflite_core.engine.checkpoint`,
:mod:`~aflite_core.engine.run_loading`), so each imports them at its top and none imports another only for a
constant (those imports, inside functions, were what held the engine's modules in one import cycle). They stay
importable from where they were defined before (``loop.HISTORY_COLUMNS``, ``filtering.STRATEGIES``,
``result.STOP_REASONS``).
"""

from __future__ import annotations

__all__ = ["HISTORY_COLUMNS", "STOP_REASONS", "STRATEGIES", "TABLE_FILE", "TIE_BREAKS", "VOTES_FILE"]

#: the file name of a run's recorded table (the user's rows, :mod:`~aflite_core.engine.run_table`) in its directory
TABLE_FILE = "table.parquet"
#: the file name of a run's recorded votes (``AFLiteResult.votes``, one ``.npy`` array) in its directory
VOTES_FILE = "votes.npy"

#: one row of a run's history per round, in this order (the saved ``history.parquet`` and the checkpoints too)
HISTORY_COLUMNS = [
    "round", "size_before", "n_scored", "n_qualified", "n_removed", "size_after", "min_removed_score",
    "max_score", "mean_predictability", "mean_model_accuracy", "eval_size_before", "eval_removed", "seconds",
]  # fmt: skip

#: filtering strategies (ICLR version §2): A = greedy, B = greedy slicing (AFLite), C = slice sampling
STRATEGIES = ("slice", "greedy", "sample")

#: how rows of equal score are ordered (``aflite(tie_break=...)``,
#: :func:`aflite_core.engine.row_selection.row_priorities`):
#: ``"position"`` draws a fresh random key per position in S every round (the default, the engine's order since
#: commit 4293819); ``"row"`` draws every round's keys per row, keyed by the row's index and the round. A record or
#: checkpoint written before the option existed was a ``"position"`` run.
TIE_BREAKS = ("position", "row")

#: stop reasons and how they read in words (``AFLiteResult.stop_message``)
STOP_REASONS = {
    "target_size_reached": "The filtered set reached the target size of {target} rows.",
    "fewer_than_k_qualified": (
        "Early stop (τ): in round {round} only {qualified} had predictability ≥ τ = {tau}, fewer than "
        "the slice size k = {k}, so the filter stopped with {size} rows left."
    ),
    "stopped_by_callback": "Stopped on request after round {round}; this result is partial ({size} rows left).",
}
