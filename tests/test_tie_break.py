"""``tie_break``: ``"position"`` (the default, today's bits) and ``"row"`` (keys per row and round, issue 26).

Many rows can tie (at p = 1 most often). ``"position"`` orders them by a fresh draw per position in S each round,
so one row that differs by a rounding error in one round (the torch device, another BLAS build) shifts the keys
of every later position; ``"row"`` keys them by the row's index and the round, so it moves no other row's key.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aflite_core import AFLiteResult, aflite
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine.row_selection import row_priorities, select_rows
from aflite_core.engine.run_record import _canonical, _sha
from aflite_core.engine.tau_path import narrow_to_tau
from aflite_core.evalsets import ensemble_aflite

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_spec = importlib.util.spec_from_file_location("make_engine_fixtures", FIXTURES / "make_engine_fixtures.py")
_maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_maker)


@pytest.fixture(scope="module")
def tied():
    """Anisotropic planted-bias data whose rounds have hundreds of rows tied at p = 1."""
    X, y, biased = make_planted_bias(3000, 16, n_classes=3, spectrum_decay=0.5, random_state=0)
    return X, y, biased


KW = dict(target_size=1500, train_size=600, slice_size=150, n_partitions=16, tau=0.75, random_state=0, n_threads=1)


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def test_explicit_position_is_the_default_and_keeps_the_stored_bits():
    """tie_break="position" reproduces commit 4293819's stored run (setting a) and is what params record."""
    X, y, kw = _maker.cases()["setting_a"]
    res = aflite(X, y, **kw, tau=0.75, random_state=0, n_threads=1, tie_break="position")
    with np.load(FIXTURES / "engine_setting_a.npz") as stored:
        assert np.array_equal(res.removed_round, stored["removed_round"])
        assert np.array_equal(res.scores, stored["scores"], equal_nan=True)
    assert res.params["tie_break"] == "position"
    assert aflite(X, y, **kw, tau=0.75, random_state=0, n_threads=1).params["tie_break"] == "position"


def test_row_mode_same_seed_same_result_and_other_ties_than_position(tied):
    X, y, _ = tied
    a = aflite(X, y, **KW, tie_break="row")
    b = aflite(X, y, **KW, tie_break="row")
    assert a.equals(b) and a.params["tie_break"] == "row"
    pos = aflite(X, y, **KW)
    assert int((a.scores[0] == 1).sum()) > KW["slice_size"]  # round 1 already has more rows at p = 1 than k
    # round 1 is scored identically (same partitions, same draws); only which tied rows leave differs
    assert np.array_equal(a.scores[0], pos.scores[0], equal_nan=True)
    assert not np.array_equal(a.removed_round, pos.removed_round)


def test_bad_tie_break_is_one_sentence(tied):
    X, y, _ = tied
    with pytest.raises(ValueError, match=r"^The 'tie_break' parameter of aflite must be a str among") as err:
        aflite(X, y, **KW, tie_break="index")
    assert str(err.value).count(". ") <= 1


def _replay(scores_of, n_rows: int, k: int, rounds: int, seed: int, mode: str) -> list[np.ndarray]:
    """The engine's selection over several rounds of given scores: the rows removed in each round."""
    rng = np.random.default_rng(seed)
    S = np.arange(n_rows)
    removed = []
    for r in range(1, rounds + 1):
        p = scores_of(r, S)
        priority = row_priorities(seed, n_rows, r)[S] if mode == "row" else None
        pos = select_rows(p, p >= 0.75, k, "slice", rng, priority)
        removed.append(S[pos])
        S = np.delete(S, pos)
    return removed


@pytest.mark.parametrize("mode", ["position", "row"])
def test_one_row_that_differs_in_one_round_moves_no_other_tied_row_in_row_mode(mode):
    """Every row ties at p = 1 except one row lowered to 0.99 in round 1 of the second run (a rounding error):
    with keys per row the later rounds remove the same rows up to that row and the one that left in its place;
    with keys per position every row behind the difference gets another key, and the removals drift apart."""
    n, k, rounds, seed = 4000, 200, 6, 0
    same = _replay(lambda r, S: np.ones(len(S), np.float32), n, k, rounds, seed, mode)
    victim = same[0][0]  # a row the first run removes in round 1

    def perturbed(r, S):
        p = np.ones(len(S), np.float32)
        if r == 1:
            p[S == victim] = 0.99
        return p

    other = _replay(perturbed, n, k, rounds, seed, mode)
    assert victim not in other[0] and len(set(same[0]) ^ set(other[0])) == 2  # round 1: one row swapped
    later = [len(set(a) ^ set(b)) for a, b in zip(same[1:], other[1:])]
    gone_a, gone_b = set(np.concatenate(same)), set(np.concatenate(other))
    if mode == "row":
        assert max(later) <= 2 and len(gone_a ^ gone_b) <= 2
    else:  # today's default: the cascade the row keys remove
        assert min(later) > 50 and len(gone_a ^ gone_b) > 100


def test_select_rows_refuses_priorities_of_another_length():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="one per position"):
        select_rows(np.ones(5, np.float32), np.ones(5, bool), 2, "slice", rng, np.zeros(4))


def test_row_priorities_depend_on_seed_round_and_row_only_and_leave_the_run_stream_alone():
    a = row_priorities(3, 100, 2)
    assert np.array_equal(a[:40], row_priorities(3, 40, 2))  # a row's key is its own, not its position's
    assert not np.array_equal(a, row_priorities(3, 100, 3)) and not np.array_equal(a, row_priorities(4, 100, 2))
    rng = np.random.default_rng(3)
    first = rng.random(5)
    row_priorities(3, 100, 1)
    assert np.array_equal(np.random.default_rng(3).random(5), first)  # the run's root stream is not advanced


def test_narrow_to_tau_reproduces_a_row_run(tied):
    from test_tau_path import assert_same_run

    X, y, _ = tied
    kw = dict(KW, tie_break="row")
    low = aflite(X, y, **{**kw, "tau": 0.6})
    checked = 0
    for tau in (0.6, 0.75, 0.9, 0.97):
        direct = aflite(X, y, **{**kw, "tau": tau})
        assert_same_run(narrow_to_tau(low, tau), direct)
        assert direct.params["tie_break"] == "row"
        checked += direct.stop_reason == "fewer_than_k_qualified"
    assert checked  # the grid reaches the early stop too


def test_resume_keeps_the_tie_break_and_refuses_the_other(tied, tmp_path):
    X, y, _ = tied
    full = aflite(X, y, **KW, tie_break="row")
    assert full.n_rounds >= 3
    cp = tmp_path / "cp"
    part = aflite(X, y, **KW, tie_break="row", checkpoint=cp, callback=lambda p: p.round < 2)
    assert part.n_rounds == 2
    with pytest.raises(ValueError, match=r"tie_break='row' and cannot be resumed with tie_break='position'") as err:
        aflite(X, y, **KW, checkpoint=cp, resume=True)
    assert "\n" not in str(err.value) and str(err.value).count(". ") == 0
    resumed = aflite(X, y, **KW, tie_break="row", checkpoint=cp, resume=True)
    assert resumed.equals(full) and resumed.params["tie_break"] == "row"


def test_a_checkpoint_written_before_the_option_resumes_as_position(tied, tmp_path):
    """A checkpoint whose recorded parameters have no tie_break (written before it existed) is a position run."""
    X, y, _ = tied
    full = aflite(X, y, **KW)
    cp = tmp_path / "cp"
    aflite(X, y, **KW, checkpoint=cp, callback=lambda p: p.round < 2)
    state = cp / "state.npz"
    with np.load(state) as z:
        arrays = {name: z[name] for name in z.files}
    meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
    del meta["extra"]["params"]["tie_break"]
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    np.savez(state, **arrays)
    with pytest.raises(ValueError, match="tie_break='position' and cannot be resumed with tie_break='row'"):
        aflite(X, y, **KW, tie_break="row", checkpoint=cp, resume=True)
    resumed = aflite(X, y, **KW, checkpoint=cp, resume=True)
    assert resumed.equals(full) and resumed.params["tie_break"] == "position"


def test_a_record_saved_before_the_option_loads_as_position(tied, tmp_path):
    X, y, _ = tied
    res = aflite(X, y, **dict(KW, target_size=2700))
    res.save(tmp_path / "run")
    meta_path = tmp_path / "run" / "result.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    del meta["params"]["tie_break"]
    body = {key: value for key, value in meta.items() if key != "checksum"}
    meta["checksum"] = _sha(_canonical(body))
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    assert AFLiteResult.load(tmp_path / "run").params["tie_break"] == "position"
    meta["params"]["tie_break"] = "index"
    meta["checksum"] = _sha(_canonical({key: value for key, value in meta.items() if key != "checksum"}))
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match="tie-break 'index' is unknown"):
        AFLiteResult.load(tmp_path / "run")


@pytest.fixture
def files(tmp_path, tied):
    X, y, _ = tied
    np.save(tmp_path / "X.npy", X)
    np.savetxt(tmp_path / "y.txt", y, fmt="%d")
    return tmp_path


CLI = ["--target-size", "1500", "--train-size", "600", "--slice-size", "150", "--partitions", "16", "--seed", "0"]


def _filter(files, out, *extra) -> int:
    args = ["filter", "--features", str(files / "X.npy"), "--labels", str(files / "y.txt"), *CLI, "--quiet"]
    return main([*args, "--threads", "1", "--out", str(out), *extra])


def test_cli_tie_break_round_trips_through_the_run_record(files, tied, capsys):
    X, y, _ = tied
    assert _filter(files, files / "row", "--tie-break", "row") == 0
    loaded = AFLiteResult.load(files / "row")
    assert loaded.params["tie_break"] == "row"
    assert json.loads((files / "row" / "cli_args.json").read_text())["tie_break"] == "row"
    assert np.array_equal(loaded.removed_round, aflite(X, y, **KW, tie_break="row").removed_round)
    assert _filter(files, files / "default") == 0
    assert AFLiteResult.load(files / "default").params["tie_break"] == "position"


def test_cli_resume_keeps_the_run_s_tie_break_and_refuses_another(files, tied, capsys):
    X, y, _ = tied
    assert _filter(files, files / "part", "--tie-break", "row", "--max-rounds", "1") == 0
    capsys.readouterr()
    assert main(["filter", "--resume", str(files / "part"), "--tie-break", "position", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "started with --tie-break row" in err and "Traceback" not in err
    assert main(["filter", "--resume", str(files / "part"), "--quiet"]) == 0
    resumed = AFLiteResult.load(files / "part")
    assert resumed.params["tie_break"] == "row"
    assert np.array_equal(resumed.removed_round, aflite(X, y, **KW, tie_break="row").removed_round)


def test_ensemble_passes_the_tie_break_to_the_engine_s_selection(tied):
    """One adversary: the ensemble run is aflite's run, in either mode."""
    X, y, _ = tied
    kw = {k: v for k, v in KW.items() if k != "n_partitions"}
    ens = ensemble_aflite({"a": X}, y, **kw, n_partitions=16, tie_break="row")
    assert ens.result.params["tie_break"] == "row"
    assert np.array_equal(ens.result.removed_round, aflite(X, y, **KW, tie_break="row").removed_round)


def test_torch_cpu_agrees_with_numpy_in_row_mode(tied):
    """The torch path uses the engine's selection: the same seed and mode give the numpy engine's removals."""
    pytest.importorskip("torch")
    X, y, biased = tied
    for mode in ("row", "position"):
        ref = aflite(X, y, **KW, tie_break=mode)
        got = aflite(X, y, **KW, tie_break=mode, device="torch:cpu")
        assert got.params["tie_break"] == mode
        same_p = np.mean((ref.scores[0] == got.scores[0]) | np.isnan(ref.scores[0]) & np.isnan(got.scores[0]))
        assert same_p >= 0.999
        if np.array_equal(ref.scores, got.scores, equal_nan=True):  # equal scores: the selections are equal
            assert np.array_equal(ref.removed_round, got.removed_round)
        assert _jaccard(~ref.kept, ~got.kept) >= 0.95
        assert abs((~ref.kept[biased]).mean() - (~got.kept[biased]).mean()) <= 0.01


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_dask_gives_the_local_row_run(tied):
    pytest.importorskip("distributed")
    from aflite_core.engine.distributed import local_cluster

    X, y, _ = tied
    local = aflite(X, y, **KW, tie_break="row")
    cluster, client = local_cluster(2)
    try:
        remote = aflite(X, y, **KW, tie_break="row", backend=client)
    finally:
        client.close()
        cluster.close()
    assert remote.equals(local) and remote.params["tie_break"] == "row"


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 120),
    levels=st.integers(1, 6),
    k=st.integers(0, 130),
    tie_levels=st.integers(0, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_greedy_selection_is_the_full_lexsort_of_the_candidates(n, levels, k, tie_levels, seed):
    """select_rows' top k (one partition and a sort of the tied group) takes exactly the rows a stable lexsort
    of every candidate by (-p, tie-break) takes - with many equal p, and equal tie-break keys (position order)."""
    rng = np.random.default_rng(seed)
    p = (rng.integers(0, levels + 1, n) / levels).astype(np.float32)
    qualified = rng.random(n) < 0.7
    priority = rng.integers(0, tie_levels, n).astype(np.float64) if tie_levels else rng.random(n)
    got = select_rows(p, qualified, k, "greedy", np.random.default_rng(0), priority=priority)
    cand = np.flatnonzero(qualified)
    want = np.sort(cand[np.lexsort((priority[cand], -p[cand].astype(np.float64)))[:k]])
    assert np.array_equal(got, want)
