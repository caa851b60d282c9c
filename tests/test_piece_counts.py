"""A block's counts in one compiled call (``aflite_core.engine.piece_counts``): the integers numpy's path gives.

Predicted classes (largest score difference to class 0, ties to the lower class, NaN as ``np.maximum`` treats
it), correct predictions per row and per model, and votes per row and class must equal those of
``models._predict_codes`` and ``partitions.count_votes``, for any number of classes, including exact ties.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aflite_core import aflite
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine import piece_counts
from aflite_core.engine.models import _predict_codes
from aflite_core.engine.partitions import count_votes

pytestmark = pytest.mark.skipif(not piece_counts.available(), reason="numba is a dependency (umap-learn)")


def _numpy_counts(scores, n_classes, codes, rows):
    n_models = scores.shape[1] // (n_classes - 1)
    preds = _predict_codes(scores.reshape(len(rows), n_classes - 1, n_models), n_classes)
    right = preds == codes[rows][:, None]
    return right.sum(axis=1, dtype=np.int32), right.sum(axis=0, dtype=np.int64), count_votes(preds, None, n_classes)


def _check(scores, n_classes, codes, rows):
    correct, model_correct, votes = piece_counts.count_block(scores, n_classes, codes, rows, True)
    want = _numpy_counts(scores, n_classes, codes, rows)
    assert correct.dtype == np.int32 and model_correct.dtype == np.int64 and votes.dtype == np.int32
    assert np.array_equal(correct, want[0])
    assert np.array_equal(model_correct, want[1])
    assert np.array_equal(votes, want[2])
    assert piece_counts.count_block(scores, n_classes, codes, rows, False)[2] is None


@settings(max_examples=80, deadline=None)
@given(
    n_classes=st.integers(2, 12),
    n_rows=st.integers(1, 30),
    n_models=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    ties=st.booleans(),
    nans=st.booleans(),
)
def test_counts_equal_numpys(n_classes, n_rows, n_models, seed, ties, nans):
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values: exact ties between classes and with class 0's zero
        scores = rng.integers(-2, 3, (n_rows, (n_classes - 1) * n_models)).astype(np.float32)
    else:
        scores = rng.standard_normal((n_rows, (n_classes - 1) * n_models)).astype(np.float32)
    if nans:
        scores[rng.random(scores.shape) < 0.1] = np.nan
    codes = rng.integers(0, n_classes, 100).astype(np.int32)
    rows = rng.choice(100, n_rows, replace=False).astype(np.intp)
    _check(scores, n_classes, codes, rows)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_label_codes_of_any_integer_type(dtype):
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((7, 2 * 5)).astype(np.float32)
    _check(scores, 3, rng.integers(0, 3, 20).astype(dtype), np.arange(3, 10, dtype=np.intp))


def test_scores_that_do_not_fit_are_refused_in_one_sentence():
    with pytest.raises(ValueError, match="do not fit"):
        piece_counts.count_block(np.zeros((3, 5), np.float32), 3, np.zeros(3, np.int32), np.arange(3), True)


def test_runs_are_the_same_with_and_without_the_compiled_counts(monkeypatch):
    X, y, _ = make_planted_bias(3_000, 16, n_classes=3, spectrum_decay=0.5, random_state=2)
    kw = dict(target_size=1_500, train_size=1_000, slice_size=200, n_partitions=32, tau=0.75, random_state=0)
    compiled = aflite(X, y, **kw)
    for n_threads in (1, 2):
        monkeypatch.setattr(piece_counts, "available", lambda n_classes=2: False)
        plain = aflite(X, y, **kw, n_threads=n_threads)
        assert np.array_equal(compiled.removed_round, plain.removed_round)
        assert np.array_equal(compiled.scores, plain.scores, equal_nan=True)
        assert np.array_equal(compiled.n_predictions, plain.n_predictions)
        assert np.array_equal(compiled.votes, plain.votes)


def _merge_one_by_one(results, n_rows, n_partitions):
    """merge_pieces as it was: every piece's counts added to the round's arrays as it comes."""
    correct, n_pred = np.zeros(n_rows, np.int32), np.zeros(n_rows, np.int32)
    model_correct, model_total = np.zeros(n_partitions, np.int64), np.zeros(n_partitions, np.int64)
    with_votes = all(res.get("votes") is not None for res in results)
    votes = np.zeros((n_rows, results[0]["votes"].shape[1]), np.int32) if with_votes else None
    for res in results:
        if with_votes:
            votes[res["positions"]] += res["votes"]
        if res["kind"] == "block":
            correct[res["positions"]] = res["correct"]
            n_pred[res["positions"]] = res["n_pred"]
            model_correct[res["models"]] += res["model_correct"]
            model_total[res["models"]] += res["model_total"]
        else:
            correct[res["positions"]] += res["correct"]
            n_pred[res["positions"]] += res["n_pred"]
            model_correct += res["model_correct"]
            model_total += res["model_total"]
    return correct, n_pred, model_correct, model_total, votes


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(["block", "chunk"]), votes=st.booleans())
def test_merged_counts_equal_adding_piece_by_piece(seed, kind, votes):
    """Blocks' counts are written with one scatter per field at the end: the same arrays as piece by piece."""
    from aflite_core.engine.partitions import merge_pieces

    rng = np.random.default_rng(seed)
    n_rows, m, C = int(rng.integers(5, 80)), int(rng.integers(1, 9)), 3
    cuts = np.sort(rng.choice(np.arange(1, n_rows), int(rng.integers(0, min(6, n_rows - 1))), replace=False))
    order = rng.permutation(n_rows) if kind == "block" else np.arange(n_rows)
    results = []
    for pos in np.split(order, cuts):
        n = len(pos)
        res = {"kind": kind, "positions": pos, "votes": rng.integers(0, 5, (n, C)).astype(np.int32) if votes else None}
        if kind == "block":
            models = np.sort(rng.choice(m, int(rng.integers(1, m + 1)), replace=False))
            res |= {
                "models": models,
                "correct": rng.integers(0, 9, n).astype(np.int32),
                "n_pred": len(models),
                "model_correct": rng.integers(0, 50, len(models)).astype(np.int64),
                "model_total": n,
            }
        else:
            res |= {
                "correct": rng.integers(0, 9, n).astype(np.int32),
                "n_pred": rng.integers(0, 9, n).astype(np.int32),
                "model_correct": rng.integers(0, 50, m).astype(np.int64),
                "model_total": rng.integers(0, 50, m).astype(np.int64),
            }
        results.append(res)
    got = merge_pieces(results, n_rows, m, None)
    want = _merge_one_by_one(results, n_rows, m)
    for a, b in zip((got.correct, got.n_predictions, got.model_correct, got.model_total), want[:4]):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert (got.votes is None) == (want[4] is None)
    if votes:
        assert np.array_equal(got.votes, want[4])


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_classes=st.sampled_from([2, 3, 9, 12]),
    votes=st.booleans(),
    threads=st.sampled_from([1, 3]),
)
def test_block_pieces_writing_their_counts_in_place_give_the_round_s_scores(seed, n_classes, votes, threads):
    """Block pieces that write their rows' counts into the round's arrays themselves (from the pool's threads at
    once) give the counts the returned-and-merged pieces give: the same integers, votes and models' counts."""
    from aflite_core.engine._parallel import engine_threads
    from aflite_core.engine.partitions import _Merged, run_pieces, scoring_pieces
    from aflite_core.engine.round_counts import merge_pieces

    if not piece_counts.available(n_classes):
        pytest.skip("numba is not importable")
    rng = np.random.default_rng(seed)
    n, d, m = int(rng.integers(2600, 3400)), 5, 8  # blocks mode, scored block by block
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, n_classes, n)
    y[:n_classes] = np.arange(n_classes)
    from aflite_core.engine.models import LinearFamily
    from aflite_core.engine.partitions import open_session

    session = open_session(LinearFamily(), X, y, n_classes, train_size=n // 5, n_partitions=m, rng=rng)
    rows = np.arange(n)
    plan = session.draw_plan(rows, rng)
    with engine_threads(threads):
        fitted = session.fit(rows, plan, range(m), rng)
        pieces = scoring_pieces(session, rows, plan, None, votes=votes)
        assert pieces and all(p["kind"] == "block" for p in pieces)
        returned = merge_pieces(run_pieces(session, fitted, pieces, X, y), n, m, None)
        merged = _Merged(n, m, None, n_classes)
        results = run_pieces(session, fitted, pieces, X, y, into=merged)
        assert all(r.get("scattered") for r in results)
        for r in results:
            merged.add(r)
        in_place = merged.scores()
    for field in ("correct", "n_predictions", "model_correct", "model_total"):
        a, b = getattr(in_place, field), getattr(returned, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field
    assert (in_place.votes is None) == (returned.votes is None) == (not votes)
    if votes:
        assert np.array_equal(in_place.votes, returned.votes)
        assert np.array_equal(in_place.votes.sum(axis=1), in_place.n_predictions)


def test_a_block_target_that_does_not_fit_is_refused_before_any_write():
    """Positions beyond the round's arrays, or votes of the wrong shape, are refused: nothing is written."""
    if not piece_counts.available(3):
        pytest.skip("numba is not importable")
    scores = np.zeros((4, 2 * 5), dtype=np.float32)
    codes, rows = np.zeros(10, np.int64), np.arange(4)
    correct, n_pred = np.zeros(6, np.int32), np.zeros(6, np.int32)
    bad = piece_counts.BlockTarget(np.array([0, 1, 2, 6]), correct, n_pred, None)
    with pytest.raises(ValueError, match="do not fit"):
        piece_counts.count_block(scores, 3, codes, rows, False, bad)
    wrong_votes = piece_counts.BlockTarget(np.arange(4), correct, n_pred, np.zeros((6, 2), np.int32))
    with pytest.raises(ValueError, match="do not fit"):
        piece_counts.count_block(scores, 3, codes, rows, True, wrong_votes)
    assert not correct.any() and not n_pred.any()
