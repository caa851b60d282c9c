"""One run, every higher τ: the result of AFLite at τ read off a finished run at a lower τ, without refitting.

Why it is exact (ICML 2020, Algorithm 1 lines 12-14, as :mod:`aflite_core.engine.loop` implements them): a round
removes the k most predictable rows among those with p ≥ τ, ordered by (-p, a seeded tie-break), and the run stops
after the first round in which fewer than k rows reach τ. The random stream does not depend on the scores
(:func:`aflite_core.engine.row_selection.select_rows` draws its tie-break every round), so two runs with the same seed
and every other parameter equal, at τ₀ ≤ τ, score the same rows with the same models for as long as they remove the
same rows. The tie-break is the same in both runs in either mode: ``tie_break="position"`` orders ties by that round's
draw over S, and ``tie_break="row"`` by keys drawn from the seed, the round and the row's index
(:func:`aflite_core.engine.row_selection.row_priorities`), never from the scores. While at least k rows reach τ, those
rows are also the k most predictable at τ₀, so both remove the same rows. In the first round where fewer than k rows
reach τ, the run at τ removes exactly the rows the run at τ₀ removed with p ≥ τ, and stops. Everything the run at τ
records follows from the run at τ₀'s per-round score matrix: :func:`narrow_to_tau` rebuilds it, and the tests compare
it with a direct run field by field.


Only for the top-k strategy (``strategy="slice"``, the default) without an evaluation set: strategy C samples
among the qualified rows (a smaller candidate set is not a prefix of the larger one), and an evaluation set loses
every row with p ≥ τ each round.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .result import AFLiteResult

__all__ = ["narrow_to_tau"]


def narrow_to_tau(result: AFLiteResult, tau: float) -> AFLiteResult:
    """The result :func:`aflite_core.aflite` would return at ``tau``, from a finished run at a lower or equal τ.

    Parameters
    ----------
    result : AFLiteResult
        A complete run (not stopped on request) of the top-k strategy with its score matrix and no evaluation set.
    tau : float
        The threshold wanted, at least ``result.params["tau"]`` and at most 1.

    Returns
    -------
    AFLiteResult
        Equal to a direct run at ``tau`` with the same data, seed and other parameters in every field except the
        creation time in ``provenance`` and the per-round ``seconds`` of ``history`` (those of ``result``).
        ``provenance["narrowed_from_tau"]`` records the τ of the run it was read off. Its ``scores`` and
        ``n_predictions`` are read-only views of ``result``'s (the first rounds), so narrowing costs no copy of
        the score matrix. Its null (``null_counts``, recorded per round on the τ grid and independent of τ) is
        that of the rounds it keeps, equal to a direct run's; so are its recorded ``votes`` (the rounds it keeps:
        the rounds up to the stop score the same rows with the same models, a read-only view too).

    Raises
    ------
    ValueError
        If ``result`` cannot be narrowed (other strategy, no score matrix, evaluation set, partial run) or ``tau``
        is below its τ or above 1.

    Examples
    --------
    >>> from aflite_core import aflite
    >>> from aflite_core.data.planted_bias import make_biased_circles
    >>> X, y, *_ = make_biased_circles(400, separation=0.6, random_state=0)
    >>> kw = dict(target_size=50, train_size=40, slice_size=20, n_partitions=16, random_state=0)
    >>> low = aflite(X, y, tau=0.5, **kw)
    >>> bool((narrow_to_tau(low, 0.8).removed_round == aflite(X, y, tau=0.8, **kw).removed_round).all())
    True
    """
    func = "narrow_to_tau"
    p = result.params
    base_tau = float(p["tau"])
    try:
        tau = float(tau)
    except (TypeError, ValueError):
        raise ValueError(f"The 'tau' parameter of {func} must be a number in [{base_tau:g}, 1]. Got {tau!r}.") from None
    if not base_tau <= tau <= 1.0:
        raise ValueError(
            f"The 'tau' parameter of {func} must be in [{base_tau:g}, 1] (the run's τ or above). Got {tau!r} instead."
        )
    why = (
        f"it used strategy {p.get('strategy')!r}, not the top-k slices ('slice')"
        if p.get("strategy") != "slice"
        else "it has no per-round score matrix"
        if result.scores is None or result.n_predictions is None
        else "it filtered an evaluation set too"
        if result.eval_y is not None
        else "it was stopped on request, so its last rounds are missing"
        if result.stop_reason == "stopped_by_callback"
        else ""
    )
    if why:
        raise ValueError(f"This AFLite result cannot be narrowed to another τ: {why}.")
    k, target = int(p["slice_size"]), int(p["target_size"])
    scores, rr = result.scores, result.removed_round
    stop_round, stop_reason = result.n_rounds, result.stop_reason
    n_qualified = result.history["n_qualified"].to_numpy().copy()
    for r in range(1, result.n_rounds + 1):
        with np.errstate(invalid="ignore"):
            n_qualified[r - 1] = int((scores[r - 1] >= tau).sum())  # NaN (not in the set, unscored) never qualifies
        if n_qualified[r - 1] < k:  # Algorithm 1 line 14: the run at τ stops after this round
            stop_round = r
            break
    removed_round = rr.copy()
    removed_round[rr > stop_round] = -1
    with np.errstate(invalid="ignore"):
        dropped = (rr == stop_round) & ~(scores[stop_round - 1] >= tau)  # removed at τ₀ but below τ: they stay
    removed_round[dropped] = -1
    gone = removed_round == stop_round
    history = result.history.iloc[:stop_round].copy()
    history["n_qualified"] = n_qualified[:stop_round]
    last = history.index[-1]
    history.loc[last, "n_removed"] = int(gone.sum())
    history.loc[last, "size_after"] = int(history.loc[last, "size_before"]) - int(gone.sum())
    history.loc[last, "min_removed_score"] = float(scores[stop_round - 1][gone].min()) if gone.any() else float("nan")
    if stop_round < result.n_rounds or dropped.any():
        size = int(history.loc[last, "size_after"])
        stop_reason = "target_size_reached" if size <= target else "fewer_than_k_qualified"
    last_score = np.full(result.n_rows, np.nan, dtype=np.float32)
    for r in range(stop_round):  # each row's score in the last round it was scored (engine: last_score[S[scored]])
        row = scores[r]
        seen = ~np.isnan(row)
        last_score[seen] = row[seen]
    removal_score = np.where(removed_round > 0, result.removal_score, np.float32(np.nan)).astype(np.float32)
    provenance = dict(result.provenance, narrowed_from_tau=base_tau)
    return AFLiteResult(
        params=dict(p, tau=tau),
        classes=result.classes,
        y=result.y,
        kept=removed_round < 0,
        removed_round=removed_round,
        scores=_read_only(scores[:stop_round]),
        n_predictions=_read_only(result.n_predictions[:stop_round]),
        first_score=result.first_score.copy(),
        last_score=last_score,
        removal_score=removal_score,
        history=pd.DataFrame(history).reset_index(drop=True),
        stop_reason=stop_reason,
        provenance=provenance,
        ids=result.ids,
        null_counts=None if result.null_counts is None else _read_only(result.null_counts[:stop_round]),
        votes=None if result.votes is None else _read_only(result.votes[:stop_round]),
    )


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view
