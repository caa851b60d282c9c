r"""Random partitions of the current set S and the per-round scoring unit.

Algorithm 1 (Le Bras et al., 2020, lines 5-11) trains m models per round, each on a random part
``S \\ T_j`` of ``|S \\ T_j| = t`` rows, and asks each to predict its held-out rows ``T_j``. This module owns:

* :class:`PartitionPlan` - which rows train which of the m models in a round. Rows are grouped into
  *blocks*; a partition's training part is a union of randomly chosen blocks. With blocks of one row this is
  exactly the paper's uniformly random subset of size t; with larger blocks (the fast linear family) the
  training part is a random union of blocks whose size is within half a block of t.
* with ``groups`` (one label per row, :func:`group_blocks` and :func:`grouped_exact_plan`) every training part
  is a union of *whole groups*, so no partition trains on a row whose group it also predicts;
* :func:`score_round` - the one unit every backend runs: fit the m partition models, predict every row of S
  (and every evaluation row) with them, and count, per row, the correct out-of-sample predictions. Its inputs
  are index arrays and its outputs are small count arrays, so a distributed backend can run it per partition
  group / row chunk and add the counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from . import piece_counts
from ._parallel import background, map_ordered, n_workers, split
from .round_counts import RoundScores, _Merged, merge_pieces

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Sequence

__all__ = [
    "FamilySession",
    "PartitionPlan",
    "RoundInterrupted",
    "RoundScores",
    "count_votes",
    "draw_block_plan",
    "exact_plan",
    "group_blocks",
    "grouped_exact_plan",
    "merge_pieces",
    "open_session",
    "report_step",
    "run_pieces",
    "score_round",
    "scoring_pieces",
]

#: bytes of features predicted per chunk: small enough to stay in cache, so peak memory stays near X
PREDICT_CHUNK_BYTES = 4 * 2**20


class RoundInterrupted(Exception):
    """Raised inside a round when its step callback asked the run to stop (the round is abandoned)."""


def report_step(session: object, phase: str, done: int, total: int) -> None:
    """Tell the run's step callback (``session.on_step``, if any) how far the round is; stop if it says so.

    Families call this between their groups of partition fits (``phase="fit"``), :func:`score_round` between
    its prediction pieces (``phase="predict"``): a run asked to stop ends within one such step, not at the end
    of the round. Raises :class:`RoundInterrupted` when the callback returns ``False``.
    """
    callback = getattr(session, "on_step", None)
    if callback is not None and callback(phase, done, total) is False:
        raise RoundInterrupted


@dataclass(frozen=True)
class PartitionPlan:
    """Which rows of S train each of the m partition models in one round.

    Attributes
    ----------
    block_of : ndarray of int32, shape (n_S,)
        Block id of each position of S (positions index the round's sorted row array).
    membership : ndarray of bool, shape (m, n_blocks)
        ``membership[j, b]`` is True when block ``b`` is in the training part of partition ``j``.
    """

    block_of: NDArray[np.int32]
    membership: NDArray[np.bool_]

    @property
    def n_partitions(self) -> int:
        """Number of partitions m."""
        return int(self.membership.shape[0])

    def train_mask(self, j: int) -> NDArray[np.bool_]:
        """Boolean mask over positions of S: True for rows that train partition ``j``."""
        return self.membership[j, self.block_of]

    def heldout(self, positions: NDArray[np.intp] | slice, partitions: Sequence[int] | None = None):
        """Boolean matrix (len(positions), m): True where the model did *not* train on the row."""
        member = self.membership if partitions is None else self.membership[np.asarray(partitions)]
        return ~member[:, self.block_of[positions]].T

    def train_sizes(self) -> NDArray[np.int64]:
        """Number of training rows of each partition."""
        sizes = np.bincount(self.block_of, minlength=self.membership.shape[1])
        return self.membership.astype(np.int64) @ sizes


def draw_block_plan(
    block_sizes: NDArray[np.int64], block_of: NDArray[np.int32], n_partitions: int, train_size: int, rng
) -> PartitionPlan:
    """Draw m training parts as random unions of blocks, each of size as close to ``train_size`` as possible.

    For each partition the blocks are put in a random order and the shortest prefix whose total size is
    closest to ``train_size`` is taken (at least one block, never all of them, so every partition has
    held-out rows).

    Parameters
    ----------
    block_sizes : ndarray of shape (n_blocks,)
        Current number of rows in each block (blocks may have shrunk as rows were removed).
    block_of : ndarray of shape (n_S,)
        Block id of each position of S.
    n_partitions : int
        m.
    train_size : int
        t.
    rng : numpy.random.Generator
        The run's generator (the only source of randomness).

    Returns
    -------
    PartitionPlan
    """
    n_blocks = len(block_sizes)
    order = np.argsort(rng.random((n_partitions, n_blocks)), axis=1)
    cum = np.cumsum(block_sizes[order], axis=1)
    # index of the prefix whose cumulative size is closest to t; ties go to the smaller prefix
    take = np.argmin(np.abs(cum - train_size), axis=1)
    take = np.clip(take, 0, max(n_blocks - 2, 0))
    membership = np.zeros((n_partitions, n_blocks), dtype=bool)
    ranks = np.arange(n_blocks)[None, :] <= take[:, None]
    rows = np.repeat(np.arange(n_partitions), n_blocks)
    membership[rows, order.ravel()] = ranks.ravel()
    return PartitionPlan(block_of=np.ascontiguousarray(block_of, dtype=np.int32), membership=membership)


def exact_plan(n_rows: int, n_partitions: int, train_size: int, rng) -> PartitionPlan:
    """Uniformly random training parts of exactly ``train_size`` rows (blocks of one row)."""
    membership = np.zeros((n_partitions, n_rows), dtype=bool)
    for j in range(n_partitions):
        membership[j, rng.permutation(n_rows)[:train_size]] = True
    return PartitionPlan(block_of=np.arange(n_rows, dtype=np.int32), membership=membership)


def grouped_exact_plan(group_of: NDArray[np.int32], n_partitions: int, train_size: int, rng) -> PartitionPlan:
    """Exact-subset mode with groups: each training part is a random set of whole groups of about t rows.

    For each partition the groups present in S are put in a random order and the prefix whose total size is
    closest to ``train_size`` is taken (:func:`draw_block_plan` with one block per group: at least one group,
    never all of them). t is therefore met within half the size of the group at the boundary. The plan is
    expanded to rows (``block_of`` is the identity, as :func:`exact_plan` gives), so every family that takes
    exact plans takes it unchanged.

    Parameters
    ----------
    group_of : ndarray of int, shape (n_S,)
        Group code of each position of S (any integers; only equality matters).
    n_partitions, train_size : int
        m and t.
    rng : numpy.random.Generator
        The run's generator.

    Returns
    -------
    PartitionPlan
    """
    _, local = np.unique(np.asarray(group_of), return_inverse=True)
    local = local.astype(np.int32).ravel()
    sizes = np.bincount(local).astype(np.int64)
    by_group = draw_block_plan(sizes, local, n_partitions, train_size, rng)
    membership = np.ascontiguousarray(by_group.membership[:, local])
    return PartitionPlan(block_of=np.arange(len(local), dtype=np.int32), membership=membership)


def open_session(family, X, codes, n_classes: int, *, train_size: int, n_partitions: int, rng, groups=None, **kw):
    """``family.session(...)``, with ``groups=`` passed only when given (families without groups stay as they were).

    Raises
    ------
    ValueError
        When ``groups`` is given and the family's session takes no groups (one sentence).
    """
    if groups is not None:
        import inspect

        if "groups" not in inspect.signature(family.session).parameters:
            raise ValueError(
                f"The model family {type(family).__name__} cannot keep groups together (its session takes no "
                "'groups'); use model='linear', 'ridge' or a scikit-learn classifier, or pass groups=None."
            )
        kw["groups"] = groups
    return family.session(X, codes, n_classes, train_size=train_size, n_partitions=n_partitions, rng=rng, **kw)


def group_blocks(group_of_row: NDArray[np.int32], n_blocks: int, rng) -> NDArray[np.int32]:
    """The persistent blocks of a run with groups: whole groups, in a random order, cut into ``n_blocks`` runs.

    Groups are shuffled and laid end to end; a group goes to the block its first row would fall in with
    ``n_blocks`` equal cuts of the rows, so blocks are as even as whole groups allow (a group larger than a
    block makes its block larger; block ids are renumbered so none is empty).

    Parameters
    ----------
    group_of_row : ndarray of int, shape (n_rows,)
        Group code of every row of the run (0 .. n_groups - 1).
    n_blocks : int
        Blocks wanted.
    rng : numpy.random.Generator
        The run's generator.

    Returns
    -------
    ndarray of int32, shape (n_rows,)
        Block id of every row (0 .. n_blocks' - 1, n_blocks' <= n_blocks).
    """
    codes = np.asarray(group_of_row, dtype=np.int64)
    n = len(codes)
    sizes = np.bincount(codes)
    order = rng.permutation(len(sizes))
    start = np.zeros(len(sizes), dtype=np.int64)
    start[order] = np.concatenate([[0], np.cumsum(sizes[order])[:-1]])
    block_of_group = (start * n_blocks) // max(n, 1)
    _, dense = np.unique(block_of_group[sizes > 0], return_inverse=True)
    out = np.zeros(len(sizes), dtype=np.int64)
    out[sizes > 0] = dense.ravel()
    return out[codes].astype(np.int32)


class FamilySession(Protocol):
    """A model family bound to one run's data: what :func:`score_round` needs from it."""

    def draw_plan(self, rows: NDArray[np.intp], rng) -> PartitionPlan:
        """Draw this round's partitions of the current rows."""

    def fit(self, rows: NDArray[np.intp], plan: PartitionPlan, partitions: Sequence[int], rng) -> object:
        """Fit the models of ``partitions`` on their training parts."""

    def predict(self, fitted: object, X_rows: NDArray[np.float32], mask: NDArray[np.bool_] | None) -> NDArray:
        """Predict class codes, shape (n_rows, n_fitted); entries outside ``mask`` may be anything."""

    def remove(self, rows: NDArray[np.intp]) -> None:
        """Forget rows removed from S (e.g. downdate cached statistics)."""

    @property
    def predict_chunk_rows(self) -> int:
        """Rows per prediction call."""


def count_votes(preds: NDArray, heldout: NDArray[np.bool_] | None, n_classes: int) -> NDArray[np.int32]:
    """Per row, the held-out predictions that went to each class: shape (rows, ``n_classes``).

    ``preds`` holds class codes (rows, models); ``heldout`` (same shape, or None for all) marks the predictions
    that count - a model votes only on the rows it did not train on (Algorithm 1, lines 8-9).
    """
    n = len(preds)
    if n_classes <= 32:  # one pass per class, the row sums as a matrix-vector product: a few classes fast
        out = np.empty((n, n_classes), dtype=np.int32)
        ones = np.ones(np.shape(preds)[1], dtype=np.float32)  # float32 counts are exact below 2**24 models
        for c in range(n_classes):
            hit = preds == c
            if heldout is not None:
                hit &= heldout
            out[:, c] = hit.astype(np.float32) @ ones
        return out
    flat = np.arange(n, dtype=np.intp)[:, None] * n_classes + np.asarray(preds, dtype=np.intp)
    flat = flat.ravel() if heldout is None else flat[heldout]
    return np.bincount(flat, minlength=n * n_classes).reshape(n, n_classes).astype(np.int32)


def _count(preds, codes_chunk, heldout, out_correct, out_n, model_correct, model_total) -> None:
    right = (preds == codes_chunk[:, None]) & heldout
    out_correct += right.sum(axis=1, dtype=np.int32)
    out_n += heldout.sum(axis=1, dtype=np.int32)
    model_correct += right.sum(axis=0, dtype=np.int64)
    model_total += heldout.sum(axis=0, dtype=np.int64)


# -- scoring pieces ------------------------------------------------------------------------------------------
# A round's scoring is cut into self-contained *pieces*: a block of rows with the models that held it out, a
# chunk of rows with its held-out matrix, or a chunk of evaluation rows. Each piece's arithmetic depends only
# on the piece, so pieces can be grouped into any number of tasks (on any machine) with identical results.


def scoring_pieces(
    session: FamilySession,
    rows: NDArray[np.intp],
    plan: PartitionPlan,
    eval_rows: NDArray[np.intp] | None,
    *,
    votes: bool = False,
) -> list[dict]:
    """The pieces of one round's scoring, in a fixed order (see the comment above).

    ``votes=True`` asks each row piece to count its held-out predictions per class as well (a session without
    ``n_classes`` counts none).
    """
    pieces: list[dict] = []
    n = len(rows)
    n_blocks = plan.membership.shape[1]
    if getattr(session, "mode", "exact") == "blocks" and hasattr(session, "score_block") and n_blocks * 16 <= n:
        order = np.argsort(plan.block_of, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(plan.block_of, minlength=n_blocks))])
        for blk in range(n_blocks):
            pos = order[bounds[blk] : bounds[blk + 1]]
            models = np.flatnonzero(~plan.membership[:, blk])
            if len(pos) and len(models):
                pieces.append({"kind": "block", "positions": pos, "rows": rows[pos], "models": models})
    else:
        step = max(1, session.predict_chunk_rows)
        for start in range(0, n, step):
            sl = slice(start, min(start + step, n))
            pieces.append(
                {
                    "kind": "chunk",
                    "positions": np.arange(sl.start, sl.stop),
                    "rows": rows[sl],
                    "heldout": plan.heldout(sl),
                }
            )
    if votes and getattr(session, "n_classes", None):
        for piece in pieces:
            piece["votes"] = int(session.n_classes)
    if eval_rows is not None:
        step = max(1, session.predict_chunk_rows)
        for start in range(0, len(eval_rows), step):
            pieces.append({"kind": "eval", "start": start, "rows": eval_rows[start : start + step]})
    return pieces


def run_pieces(
    session: FamilySession,
    fitted: object,
    pieces: list[dict],
    X,
    codes,
    eval_X=None,
    eval_codes=None,
    into: _Merged | None = None,
) -> list[dict]:
    """Score pieces with fitted models; returns one small dict of counts per piece, in the order of ``pieces``.

    On the run's thread pool (:mod:`aflite_core.engine._parallel`) contiguous batches of pieces are scored at once;
    each piece's arithmetic is the same whichever thread scores it. With ``into`` (the round's counts, in this
    process), block pieces counted by the compiled kernel write their rows' counts there themselves; their
    dicts then carry only the models' counts (``"scattered": True``). Add every dict to ``into`` afterwards.
    """
    workers = n_workers()
    batches = split(len(pieces), 8 * workers) if workers > 1 else [range(i, i + 1) for i in range(len(pieces))]

    def run(batch: range) -> list[dict]:
        return [_score_piece(session, fitted, pieces[i], X, codes, eval_X, eval_codes, into) for i in batch]

    def report(u: int, _: int) -> None:
        report_step(session, "predict", batches[u].start, len(pieces))

    return [res for batch in map_ordered(run, batches, report=report) for res in batch]


def _score_piece(
    session: FamilySession, fitted: object, piece: dict, X, codes, eval_X, eval_codes, into: _Merged | None = None
) -> dict:
    """Counts of one scoring piece (see :func:`scoring_pieces`; ``into``: see :func:`run_pieces`)."""
    kind = piece["kind"]
    n_classes = piece.get("votes")
    if kind == "block":
        votes = None
        if hasattr(session, "block_scores") and piece_counts.available(session.n_classes):  # one GIL-free call
            rows = piece["rows"]
            scores = session.block_scores(fitted, rows, piece["models"])
            target = None if into is None else into.target(piece["positions"], bool(n_classes))
            correct, model_correct, votes = piece_counts.count_block(
                scores, session.n_classes, codes, rows, bool(n_classes), target
            )
            if target is not None:
                return {
                    "kind": kind,
                    "scattered": True,
                    "models": piece["models"],
                    "model_correct": model_correct,
                    "model_total": len(rows),
                }
            return {
                "kind": kind,
                "votes": votes,
                "positions": piece["positions"],
                "models": piece["models"],
                "correct": correct,
                "n_pred": len(piece["models"]),
                "model_correct": model_correct,
                "model_total": len(rows),
            }
        if n_classes and hasattr(session, "block_predictions"):
            preds = session.block_predictions(fitted, piece["rows"], piece["models"])
            right = preds == codes[piece["rows"]][:, None]
            votes = count_votes(preds, None, n_classes)
        else:
            right = session.score_block(fitted, piece["rows"], piece["models"])
        return {
            "kind": kind,
            "votes": votes,
            "positions": piece["positions"],
            "models": piece["models"],
            "correct": right.sum(axis=1, dtype=np.int32),
            "n_pred": len(piece["models"]),
            "model_correct": right.sum(axis=0, dtype=np.int64),
            "model_total": len(piece["rows"]),
        }
    if kind == "chunk":
        r = piece["rows"]
        heldout = piece["heldout"]
        preds = session.predict(fitted, X[r], heldout)
        m = heldout.shape[1]
        c, nn = np.zeros(len(r), np.int32), np.zeros(len(r), np.int32)
        mc, mt = np.zeros(m, np.int64), np.zeros(m, np.int64)
        _count(preds, codes[r], heldout, c, nn, mc, mt)
        return {
            "kind": kind,
            "votes": count_votes(preds, heldout, n_classes) if n_classes else None,
            "positions": piece["positions"],
            "correct": c,
            "n_pred": nn,
            "model_correct": mc,
            "model_total": mt,
        }
    r = piece["rows"]
    preds = session.predict(fitted, eval_X[r], None)
    return {
        "kind": kind,
        "start": piece["start"],
        "eval_correct": (preds == eval_codes[r][:, None]).sum(axis=1).astype(np.int32),
    }


def score_round(
    session: FamilySession,
    X: NDArray[np.float32],
    codes: NDArray[np.int32],
    rows: NDArray[np.intp],
    plan: PartitionPlan,
    rng,
    *,
    eval_X: NDArray[np.float32] | None = None,
    eval_codes: NDArray[np.int32] | None = None,
    eval_rows: NDArray[np.intp] | None = None,
    on_step: Callable[[str, int, int], bool | None] | None = None,
    votes: bool = False,
) -> RoundScores:
    """Fit the m partition models of a round and count each row's correct out-of-sample predictions.

    Algorithm 1, lines 5-11: every model predicts only the rows it did not train on; for evaluation rows
    (appendix Algorithm 1 of the evaluation-set paper) every model predicts every remaining row, and
    evaluation rows are never used for fitting.

    Parameters
    ----------
    session : FamilySession
        The model family bound to this run.
    X, codes : ndarray
        All training features (float32, possibly memory-mapped) and label codes.
    rows : ndarray of int
        Sorted row indices of the current S.
    plan : PartitionPlan
        This round's partitions (positions refer to ``rows``).
    rng : numpy.random.Generator
        Source of the model seeds (families that need them).
    eval_X, eval_codes, eval_rows : ndarray, optional
        Evaluation features, codes and the indices of the evaluation rows still remaining.
    on_step : callable, optional
        ``on_step(phase, done, total)`` after every group of partition fits and every prediction piece;
        returning ``False`` abandons the round by raising :class:`RoundInterrupted`.
    votes : bool, default=False
        Also count, per row and class, the held-out predictions that went to that class
        (:attr:`RoundScores.votes`).

    Returns
    -------
    RoundScores
    """
    m = plan.n_partitions
    session.on_step = on_step  # families report their fit groups through report_step
    try:
        report_step(session, "fit", 0, m)
        with_eval = eval_X is not None and eval_rows is not None
        # the pieces depend on the plan only: cut them on the run's pool while the models are fitted
        pieces_of = background(
            lambda: scoring_pieces(session, rows, plan, eval_rows if with_eval else None, votes=votes)
        )
        fitted = session.fit(rows, plan, range(m), rng)
        pieces = pieces_of()
        merged = _Merged(len(rows), m, None if eval_rows is None else len(eval_rows), getattr(session, "n_classes", 0))
        results = run_pieces(session, fitted, pieces, X, codes, eval_X, eval_codes, into=merged)
    finally:
        session.on_step = None
    for res in results:
        merged.add(res)
    return merged.scores()
