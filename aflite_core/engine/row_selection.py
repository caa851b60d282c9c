"""Which rows leave a round: Algorithm 1's top-k of the predictable rows, with a seeded tie-break.

:func:`select_rows` is the selection every backend's run uses (line 12 of Algorithm 1, or the ICLR version's
strategy C); :func:`row_priorities` are the per-row tie-break keys of a ``tie_break="row"`` run.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["row_priorities", "select_rows"]


def row_priorities(seed: int, n_rows: int, round_no: int) -> NDArray[np.float64]:
    """Round ``round_no``'s tie-break key of every row of a ``tie_break="row"`` run, indexed by the row's index.

    Drawn from ``np.random.SeedSequence(seed, spawn_key=(1, round_no))``: a child of the run's seed that neither
    the run's own generator (the root, which spawning never advances) nor the null's streams (spawn keys
    ``(0, r)``, :mod:`aflite_core.engine.null`) draw from, so every other random draw of the run is unchanged.
    A row's key depends on its index, the seed and the round only - not on which other rows are still in S - so
    a row that differs in one round (a rounding error on another device) moves no other row's key; and a fresh
    key every round keeps the default's statistics (among tied rows, a uniformly random order each round).

    Examples
    --------
    >>> a = row_priorities(0, 5, 1)
    >>> bool((a == row_priorities(0, 5, 1)).all()), bool((row_priorities(0, 3, 1) == a[:3]).all())
    (True, True)
    >>> bool((a == row_priorities(0, 5, 2)).any())
    False
    """
    seq = np.random.SeedSequence(int(seed), spawn_key=(1, int(round_no)))
    return np.random.default_rng(seq).random(int(n_rows))


def select_rows(
    p: NDArray[np.float32],
    qualified: NDArray[np.bool_],
    k: int,
    strategy: str,
    rng,
    priority: NDArray[np.float64] | None = None,
) -> NDArray[np.intp]:
    """Positions to remove this round (Algorithm 1 line 12, or strategy C).

    Both random draws happen every round whatever the outcome, so the random stream does not depend on the
    scores: a seeded random order breaks ties (never the index), and for ``"sample"`` Gumbel noise on log p
    turns top-k into k draws without replacement with probability ∝ p (ICLR version §2, C).

    ``priority`` (one key per position of S, e.g. :func:`row_priorities` at S) replaces the round's drawn
    tie-break: a ``tie_break="row"`` run passes its per-row keys, so which of the tied rows leave does not depend
    on where they sit in S (one row that differs in one round shifts no other row's key). The round's draw still
    happens, and is discarded, so the random stream is the same in both modes. ``None`` (``"position"``): the
    draw orders the ties, as it always has. Strategy C's Gumbel noise stays drawn per position in both modes.
    """
    n = len(p)
    tie_break = rng.random(n)
    gumbel = rng.gumbel(size=n) if strategy == "sample" else None
    if priority is not None:
        if len(priority) != n:
            raise ValueError(f"select_rows got {len(priority)} priorities for {n} scores; give one per position.")
        tie_break = priority
    cand = np.flatnonzero(qualified)
    if len(cand) == 0 or k == 0:
        return cand[:0]
    if strategy == "sample":
        with np.errstate(divide="ignore"):
            keys = np.log(p[cand].astype(np.float64)) + gumbel[cand]
        order = np.lexsort((tie_break[cand], -keys))
        return np.sort(cand[order[:k]])
    return _top_k(p[cand], tie_break[cand], cand, k)


def _top_k(values: NDArray, tie_break: NDArray, cand: NDArray[np.intp], k: int) -> NDArray[np.intp]:
    """``np.sort(cand[np.lexsort((tie_break, -values))[:k]])`` without sorting every candidate.

    The k-th largest value splits the candidates: all above it are taken, and of those equal to it the ones
    first in (tie-break, position) order - what the stable lexsort of all of them takes. One partition and a
    sort of the tied group only (a full lexsort of |S| rows was ~6 ms of a round's serial time at the mid shape).
    """
    n = len(values)
    if k <= 0:
        return cand[:0]
    if k >= n:
        return cand.copy()
    v = np.partition(values, n - k)[n - k]  # the k-th largest value
    above = np.flatnonzero(values > v)
    tied = np.flatnonzero(values == v)
    need = k - len(above)
    # the first ``need`` of the tied group in (tie-break, position) order, as a set: those below the need-th
    # smallest key, then those at it by position. (A lexsort of the group took ~30 ms a round at the SNLI shape,
    # where ~10^5 rows tie at p = 1: serial time on the driving thread.)
    keys = tie_break[tied]
    if need < len(tied):
        cut = np.partition(keys, need - 1)[need - 1]
        below = tied[keys < cut]
        chosen = np.concatenate([below, tied[keys == cut][: need - len(below)]])
    else:
        chosen = tied
    return np.sort(cand[np.concatenate([above, chosen])])
