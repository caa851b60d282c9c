"""The m models' votes a run records (``AFLiteResult.votes``): counted while each round runs, never derived from p.

Each round's votes are compared with a replay of that round: an explicit loop over the round's partitions that
fits the same family on the same training rows, predicts the rows it held out and counts the predicted classes.
The votes then add up to the number of times a row was held out, and their gold-class share is the recorded p.
They survive a save and load, a checkpoint and resume, and narrowing to a higher τ (tests/test_tau_path.py
compares them with a direct run); an older record, or a run asked for none, says "votes not recorded".
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from aflite_core import AFLiteResult, aflite
from aflite_core.engine.local_backend import LocalBackend
from aflite_core.engine.models import LinearFamily
from aflite_core.engine.partitions import RoundScores


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X.astype(np.float32), y


def _recording_rounds(monkeypatch, replay):
    """Patch the local backend so every round is also replayed (``replay(backend, rows, plan)``) and kept."""
    rounds: list[tuple[np.ndarray, np.ndarray]] = []
    original = LocalBackend.score

    def score(self, rows, plan, rng, eval_rows, round_no) -> RoundScores:
        rounds.append((rows.copy(), replay(self, rows, plan)))
        return original(self, rows, plan, rng, eval_rows, round_no)

    monkeypatch.setattr(LocalBackend, "score", score)
    return rounds


def _check_against_replay(result: AFLiteResult, rounds) -> None:
    N, C = result.n_rows, len(result.classes)
    assert result.votes is not None and result.votes.shape == (result.n_rounds, N, C)
    assert result.votes.dtype == np.int16
    assert len(rounds) == result.n_rounds
    for r, (rows, replayed) in enumerate(rounds):
        votes = result.votes[r]
        np.testing.assert_array_equal(votes[rows], replayed, err_msg=f"round {r + 1}")
        outside = np.setdiff1d(np.arange(N), rows)
        assert not votes[outside].any(), "rows no longer in the set get no votes"
        # the sum over classes is the number of models that held the row out
        np.testing.assert_array_equal(votes.sum(axis=1), result.n_predictions[r].astype(np.int64))
        # p = votes for the gold class / held-out count, as the engine computes it (float64 division, float32)
        held = result.n_predictions[r][rows].astype(np.float64)
        gold = votes[rows, result.y[rows]]
        with np.errstate(invalid="ignore", divide="ignore"):
            p = (gold / held).astype(np.float32)
        np.testing.assert_array_equal(p, result.scores[r][rows])
    # the round a removed row left in: its votes there are the ones that removed it
    gone = np.flatnonzero(~result.kept)
    gold = result.votes[result.removed_round[gone] - 1, gone, result.y[gone]]
    held = result.n_predictions[result.removed_round[gone] - 1, gone].astype(np.float64)
    np.testing.assert_array_equal((gold / held).astype(np.float32), result.removal_score[gone])


def test_votes_equal_a_replay_of_every_round_linear_family_exact(digits, monkeypatch):
    """The linear family with blocks of one row (the paper's uniformly random t rows): each partition refitted."""
    X, y = digits

    def replay(backend, rows, plan):
        votes = np.zeros((len(rows), 10), dtype=np.int64)
        for j in range(plan.n_partitions):  # an explicit loop: one model per partition, its held-out rows only
            fitted = backend.session.fit(rows, plan, [j], np.random.default_rng(0))
            held = ~plan.train_mask(j)
            preds = backend.session.predict(fitted, X[rows[held]])[:, 0]
            np.add.at(votes, (np.flatnonzero(held), preds.astype(np.intp)), 1)
        return votes

    rounds = _recording_rounds(monkeypatch, replay)
    kw = dict(target_size=900, train_size=400, slice_size=150, n_partitions=12, tau=0.6, random_state=3)
    result = aflite(X, y, model=LinearFamily(block_rows=1), **kw)
    assert result.params["partition_mode"] == "exact" and result.n_rounds >= 2
    _check_against_replay(result, rounds)


def test_votes_equal_an_independent_scikit_learn_replay(digits, monkeypatch):
    """A scikit-learn family replayed with scikit-learn itself (nothing of the engine's fitting or counting)."""
    X, y = digits
    X, y = X[:600], y[:600]
    est = LogisticRegression(max_iter=200)

    def replay(backend, rows, plan):
        votes = np.zeros((len(rows), 10), dtype=np.int64)
        for j in range(plan.n_partitions):
            train = plan.train_mask(j)
            model = clone(est).fit(X[np.sort(rows[train])], y[np.sort(rows[train])])
            for pos, pred in zip(np.flatnonzero(~train), model.predict(X[rows[~train]]), strict=True):
                votes[pos, pred] += 1
        return votes

    rounds = _recording_rounds(monkeypatch, replay)
    kw = dict(target_size=350, train_size=300, slice_size=80, n_partitions=6, tau=0.5, random_state=1)
    result = aflite(X, y, model=est, **kw)
    assert result.n_rounds >= 2
    _check_against_replay(result, rounds)


def test_blocks_mode_votes_add_up(digits):
    """The default family's blocks mode predicts each block with the models that held it out: same identities."""
    X, y = digits
    result = aflite(X, y, target_size=900, train_size=400, slice_size=150, n_partitions=16, tau=0.6, random_state=0)
    assert result.params["partition_mode"] == "blocks"
    np.testing.assert_array_equal(result.votes.sum(axis=2), result.n_predictions.astype(np.int64))
    r, rows = 0, np.arange(len(y))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (result.votes[r, rows, y] / result.n_predictions[r].astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(p, result.scores[r])


def test_recording_votes_changes_no_decision_and_can_be_turned_off(digits):
    X, y = digits
    kw = dict(target_size=900, train_size=400, slice_size=150, n_partitions=16, tau=0.6, random_state=0)
    with_votes, without = aflite(X, y, **kw), aflite(X, y, record_votes=False, **kw)
    assert without.votes is None and without.votes_message.startswith("votes not recorded")
    assert with_votes.votes_message.startswith("votes recorded: ")
    assert with_votes.equals(without)
    greedy = aflite(X[:300], y[:300], target_size=290, train_size=100, n_partitions=4, strategy="greedy")
    assert greedy.votes is None and "greedy" in greedy.votes_message
    with pytest.raises(ValueError, match="'record_votes' parameter of aflite must be True or False"):
        aflite(X, y, record_votes="yes", **kw)


def test_votes_survive_save_and_load_memory_mapped(digits, tmp_path):
    X, y = digits
    kw = dict(target_size=900, train_size=400, slice_size=150, n_partitions=16, tau=0.6, random_state=0)
    result = aflite(X, y, **kw)
    result.save(tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "result.json").read_text())
    assert meta["format_version"] == 5 and "votes.npy" in meta["files"]
    assert meta["votes"] == {"shape": list(result.votes.shape), "dtype": "int16"}
    back = AFLiteResult.load(tmp_path / "run")
    assert isinstance(back.votes, np.memmap) and not back.votes.flags.writeable
    np.testing.assert_array_equal(back.votes, result.votes)
    assert back.equals(result, timings=True)


def test_a_record_without_votes_loads_saying_votes_not_recorded(digits, tmp_path):
    """Older records (format 3 and 4, before votes) and runs asked for none load with votes None."""
    X, y = digits
    kw = dict(target_size=900, train_size=400, slice_size=150, n_partitions=16, tau=0.6, random_state=0)
    aflite(X, y, record_votes=False, **kw).save(tmp_path / "old")
    meta = json.loads((tmp_path / "old" / "result.json").read_text())
    assert meta["format_version"] == 3 and "votes" not in meta and "votes.npy" not in meta["files"]
    back = AFLiteResult.load(tmp_path / "old")
    assert back.votes is None
    assert back.votes_message.startswith("votes not recorded")


def test_votes_that_disagree_with_the_counts_are_refused(digits, tmp_path):
    """A forged votes.npy (manifest recomputed) whose votes do not add up to the prediction counts is refused."""
    import hashlib

    from aflite_core.engine.run_record import _canonical

    X, y = digits
    kw = dict(target_size=900, train_size=400, slice_size=150, n_partitions=16, tau=0.6, random_state=0)
    result = aflite(X, y, **kw)
    result.save(tmp_path / "run")
    work = tmp_path / "forged"
    shutil.copytree(tmp_path / "run", work)
    votes = np.array(result.votes)
    votes[0, 5, 0] += 1
    np.save(work / "votes.npy", votes)
    meta = json.loads((work / "result.json").read_text())
    data = (work / "votes.npy").read_bytes()
    meta["files"]["votes.npy"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    meta.pop("checksum")
    meta["checksum"] = hashlib.sha256(_canonical(meta)).hexdigest()
    (work / "result.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"votes\.npy's votes of round 1 disagree with its prediction counts\.$"):
        AFLiteResult.load(work)


def test_resume_keeps_the_votes(digits, tmp_path):
    X, y = digits
    kw = dict(target_size=700, train_size=400, slice_size=100, n_partitions=16, tau=0.5, random_state=0)
    full = aflite(X, y, **kw)
    part = aflite(X, y, checkpoint=tmp_path / "cp", callback=lambda p: p.round < 2, **kw)
    assert part.n_rounds == 2 and np.array_equal(part.votes, full.votes[:2])
    resumed = aflite(X, y, checkpoint=tmp_path / "cp", resume=True, **kw)
    assert resumed.n_rounds == full.n_rounds > 2
    np.testing.assert_array_equal(resumed.votes, full.votes)
    # a checkpoint written without votes (an older writer) resumes into a run that says it recorded none
    aflite(X, y, checkpoint=tmp_path / "old", callback=lambda p: p.round < 2, record_votes=False, **kw)
    resumed_old = aflite(X, y, checkpoint=tmp_path / "old", resume=True, **kw)
    assert resumed_old.votes is None and resumed_old.equals(full)


@pytest.mark.parametrize("n_classes", [2, 3, 40])  # one boolean pass per class, and the bincount above 32 classes
def test_count_votes_counts_only_the_held_out_predictions(n_classes):
    from aflite_core.engine.partitions import count_votes

    rng = np.random.default_rng(n_classes)
    preds = rng.integers(0, n_classes, (300, 11)).astype(np.int8)
    held = rng.random((300, 11)) < 0.5
    expected = np.zeros((300, n_classes), dtype=np.int64)
    for i, j in zip(*np.nonzero(held), strict=True):
        expected[i, preds[i, j]] += 1
    np.testing.assert_array_equal(count_votes(preds, held, n_classes), expected)
    np.testing.assert_array_equal(count_votes(preds, None, n_classes).sum(axis=1), np.full(300, 11))


@pytest.mark.slow
def test_the_dask_backend_records_no_votes_and_says_so():
    """Its workers count no votes: the result says "votes not recorded" and equals the local run otherwise."""
    pytest.importorskip("distributed")
    from aflite_core.data.planted_bias import make_planted_bias
    from aflite_core.engine.distributed import local_cluster

    X, y, _ = make_planted_bias(1500, 8, random_state=0)
    kw = dict(target_size=600, train_size=300, slice_size=150, tau=0.5, random_state=3)
    cluster, client = local_cluster(1)
    try:
        remote = aflite(X, y, backend=client, **kw)
    finally:
        client.close()
        cluster.close()
    local = aflite(X, y, **kw)
    assert local.votes is not None and remote.votes is None
    assert remote.votes_message.startswith("votes not recorded") and remote.equals(local)
