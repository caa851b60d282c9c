"""The null for predictability (issue 27, first item): p(i) under shuffled labels, its calibration, its record."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from aflite_core import (
    AFLiteResult,
    LinearFamily,
    LogisticFamily,
    aflite,
    chance_share,
    narrow_to_tau,
    null_predictability,
    predictability,
)
from aflite_core.engine.null import TAU_GRID, grid_counts, null_rng
from aflite_core.engine.run_record import _canonical, _sha


def random_labels(seed: int, n: int = 300, d: int = 100):
    rng = np.random.default_rng(1000 + seed)
    return rng.normal(size=(n, d)).astype(np.float32), rng.integers(0, 2, n)


def planted(seed: int, n: int = 800, d: int = 50, share: float = 0.25):
    """Labels independent of X, except on a known quarter whose feature 0 reveals the label (0 elsewhere)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, 2, n)
    rows = np.zeros(n, dtype=bool)
    rows[rng.choice(n, int(share * n), replace=False)] = True
    X[:, 0] = 0.0
    X[rows, 0] = 4.0 * (2 * y[rows] - 1)
    return X, y, rows


# -- calibration --------------------------------------------------------------------------------------------
def test_random_labels_observed_count_lies_in_the_null():
    """20 seeds of labels independent of X: the round-1 count at p ≥ τ is inside the null's 5-95 % range in ≥ 15."""
    tau, inside, observed, null_means = 0.75, 0, [], []
    for seed in range(20):
        X, y = random_labels(seed)
        kw = dict(train_size=100, n_partitions=16, random_state=seed)
        obs = int((predictability(X, y, **kw) >= tau).sum())
        counts = (null_predictability(X, y, n_permutations=10, **kw) >= tau).sum(axis=1)
        lo, hi = np.percentile(counts, [5, 95])
        inside += bool(lo <= obs <= hi)
        observed.append(obs)
        null_means.append(counts.mean())
    ratio = np.mean(observed) / np.mean(null_means)
    print(f"inside the 5-95 % range: {inside} of 20; mean observed / mean null = {ratio:.3f}")
    assert inside >= 15
    assert 0.85 <= ratio <= 1.15


def test_planted_rows_observed_minus_null_estimates_the_planted_count():
    """Observed − null ≈ the planted count (within 10 %); chance share low on planted rows, near 1 on the rest."""
    tau, estimates = 0.75, []
    exp_planted = obs_planted = exp_rest = obs_rest = 0.0
    for seed in range(8):
        X, y, rows = planted(seed)
        kw = dict(train_size=100, n_partitions=32, random_state=seed)
        p = predictability(X, y, **kw)
        null = null_predictability(X, y, n_permutations=5, **kw)
        estimates.append(((p >= tau).sum() - (null >= tau).sum(axis=1).mean()) / rows.sum())
        exp_planted += chance_share(null, p, tau, rows) * (p[rows] >= tau).sum()
        obs_planted += (p[rows] >= tau).sum()
        exp_rest += (null[:, ~rows] >= tau).sum(axis=1).mean()
        obs_rest += (p[~rows] >= tau).sum()
    print(f"(observed - null) / planted per seed: {np.round(estimates, 3)}")
    assert abs(np.mean(estimates) - 1.0) <= 0.10
    assert exp_planted / obs_planted < 0.15
    assert 0.67 <= exp_rest / obs_rest <= 1.5


# -- the same computation as predictability ----------------------------------------------------------------
@pytest.mark.parametrize("family", [LinearFamily(block_rows=1), LogisticFamily(block_rows=1)], ids=["ridge", "linear"])
def test_null_matches_an_explicit_loop_over_partitions(family):
    """Each partition fitted alone by the family's fit/predict on the permuted labels gives the null's p."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(160, 12)).astype(np.float32)
    y = rng.integers(0, 3, 160)
    m, t, seed = 8, 60, 3
    null = null_predictability(X, y, n_permutations=2, n_partitions=m, train_size=t, model=family, random_state=seed)
    run_rng = np.random.default_rng(seed)  # what predictability draws: the session (no blocks here), the partitions
    codes = y.astype(np.int32)
    session = family.session(X, codes, 3, train_size=t, n_partitions=m, rng=run_rng)
    rows = np.arange(len(y))
    plan = session.draw_plan(rows, run_rng)
    perm_rng = null_rng(seed, 1)
    for k in range(2):
        permuted = codes[perm_rng.permutation(len(y))]
        mine = family.session(X, permuted, 3, train_size=t, n_partitions=m, rng=np.random.default_rng(0))
        correct = np.zeros(len(y))
        held = np.zeros(len(y))
        for j in range(m):
            fitted = mine.fit(rows, plan, [j], perm_rng)
            out = ~plan.train_mask(j)
            pred = mine.predict(fitted, X[out])[:, 0]
            correct[out] += pred == permuted[out]
            held[out] += 1
        with np.errstate(invalid="ignore"):
            expected = (correct / held).astype(np.float32)
        assert np.array_equal(null[k], expected, equal_nan=True)


def test_same_seed_same_null_and_threads_do_not_matter():
    X, y, _ = planted(1, n=300, d=20)
    kw = dict(n_permutations=3, train_size=80, n_partitions=16)
    a = null_predictability(X, y, random_state=7, n_threads=1, **kw)
    b = null_predictability(X, y, random_state=7, n_threads=2, **kw)
    c = null_predictability(X, y, random_state=8, **kw)
    assert a.shape == (3, 300) and a.dtype == np.float32
    assert np.array_equal(a, b, equal_nan=True)
    assert not np.array_equal(a, c, equal_nan=True)
    # asking for a null changes nothing predictability computes with that seed
    assert np.array_equal(
        predictability(X, y, train_size=80, n_partitions=16, random_state=7),
        predictability(X, y, train_size=80, n_partitions=16, random_state=7),
        equal_nan=True,
    )


def test_null_on_torch_cpu_device():
    pytest.importorskip("torch")
    X, y, _ = planted(2, n=400, d=20)
    kw = dict(n_permutations=2, train_size=100, n_partitions=16, random_state=0)
    numpy_null = null_predictability(X, y, **kw)
    torch_null = null_predictability(X, y, device="torch:cpu", **kw)
    assert torch_null.shape == numpy_null.shape
    # another arithmetic, the same partitions and permutations: the counts at τ agree closely
    assert abs(int((torch_null >= 0.75).sum()) - int((numpy_null >= 0.75).sum())) <= 0.05 * (numpy_null >= 0.75).sum()


# -- inside aflite --------------------------------------------------------------------------------------------
KW = dict(target_size=250, train_size=120, slice_size=40, n_partitions=16, random_state=0)


def test_a_null_never_changes_what_a_run_removes_and_round_one_is_null_predictability():
    X, y, _ = planted(3, n=600, d=20)
    plain = aflite(X, y, tau=0.6, **KW)
    with_null = aflite(X, y, tau=0.6, null_permutations=3, **KW)
    assert plain.null_counts is None
    assert with_null.equals(plain)  # the same decisions and records (the null aside)
    assert not with_null.equals(plain, null=True)
    assert with_null.null_counts.shape == (with_null.n_rounds, 2, len(TAU_GRID))
    assert with_null.params["null_permutations"] == 3
    # round 1's null is null_predictability's (same stream), summed over the classes
    null = null_predictability(X, y, n_permutations=3, train_size=120, n_partitions=16, random_state=0)
    per_tau = np.array([(null >= np.float32(t)).sum() for t in TAU_GRID])  # summed over the 3 permutations
    assert np.array_equal(np.rint(with_null.null_counts[0] * 3).sum(axis=0), per_tau)
    # counts never increase with τ; at τ = 0 every scored row counts
    assert (np.diff(with_null.null_counts, axis=2) <= 0).all()
    assert with_null.null_counts[0, :, 0].sum() == with_null.history["n_scored"].iloc[0]
    assert "under shuffled labels" in with_null.null_message


def test_evaluation_set_and_sampling_strategy_keep_their_removals():
    X, y, _ = planted(4, n=500, d=20)
    kw = dict(KW, target_size=150, train_size=100, eval_X=X[400:], eval_y=y[400:])
    plain = aflite(X[:400], y[:400], **kw)
    with_null = aflite(X[:400], y[:400], null_permutations=2, **kw)
    assert with_null.equals(plain)
    assert with_null.eval_null_counts.shape == (with_null.n_rounds, 2, len(TAU_GRID))
    sample = dict(KW, strategy="sample")
    assert aflite(X, y, null_permutations=2, **sample).equals(aflite(X, y, **sample))


def test_the_narrowed_null_equals_a_direct_runs():
    X, y, _ = planted(5, n=600, d=20)
    low = aflite(X, y, tau=0.55, null_permutations=2, **KW)
    for tau in (0.7, 0.85):
        direct = aflite(X, y, tau=tau, null_permutations=2, **KW)
        narrowed = narrow_to_tau(low, tau)
        assert narrowed.n_rounds == direct.n_rounds
        assert np.array_equal(narrowed.null_counts, direct.null_counts)
        assert np.array_equal(narrowed.removed_round, direct.removed_round)


def test_resume_keeps_the_null_and_refuses_another_k(tmp_path):
    X, y, _ = planted(6, n=600, d=20)
    kw = dict(KW, tau=0.55, slice_size=20, null_permutations=2)
    whole = aflite(X, y, **kw)
    cp = tmp_path / "cp"
    part = aflite(X, y, checkpoint=cp, callback=lambda p: p.round < 2, **kw)
    assert part.stopped and part.n_rounds == 2
    with pytest.raises(ValueError, match="null_permutations=2 and cannot be resumed with null_permutations=0"):
        aflite(X, y, checkpoint=cp, resume=True, **dict(kw, null_permutations=0))
    resumed = aflite(X, y, checkpoint=cp, resume=True, **kw)
    assert resumed.equals(whole, null=True)


def test_a_stop_request_inside_the_null_abandons_the_round():
    """The null's fits and predictions report through on_step like the round's own: a stop there ends the run."""
    X, y, _ = planted(13, n=600, d=20)
    steps = []
    aflite(X, y, on_step=lambda s: steps.append(s.round) and None, **dict(KW, tau=0.55))
    observed_round_one = steps.count(1)
    seen = []

    def stop_in_the_null(step):
        seen.append(step)
        return len(seen) <= observed_round_one  # the first step beyond the round's own is the null's

    res = aflite(X, y, on_step=stop_in_the_null, null_permutations=2, **dict(KW, tau=0.55))
    assert res.stopped and res.n_rounds == 0 and res.null_counts.shape == (0, 2, len(TAU_GRID))
    assert "no round completed" in res.null_message


def test_dask_backend_is_refused_in_one_sentence():
    pytest.importorskip("dask.distributed")
    X, y, _ = planted(7, n=200, d=5)
    with pytest.raises(ValueError, match="the Dask backend does not compute the null") as info:
        aflite(X, y, backend="dask", null_permutations=2, **dict(KW, target_size=100, train_size=50))
    assert "\n" not in str(info.value)


# -- the record -----------------------------------------------------------------------------------------------
def test_the_record_stores_the_null_and_old_records_say_not_computed(tmp_path):
    X, y, _ = planted(8, n=400, d=10)
    kw = dict(KW, target_size=200, train_size=100)
    res = aflite(X, y, null_permutations=2, **kw)
    res.save(tmp_path / "new")
    meta = json.loads((tmp_path / "new" / "result.json").read_text())
    assert meta["format_version"] == 5 and meta["null_permutations"] == 2  # 5: with its votes
    assert "null_counts.parquet" in meta["files"]
    back = AFLiteResult.load(tmp_path / "new")
    assert back.equals(res, null=True)
    # a changed null file is refused by its checksum
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "new", bad)
    (bad / "null_counts.parquet").write_bytes((bad / "null_counts.parquet").read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(ValueError, match=r"null_counts\.parquet is inconsistent"):
        AFLiteResult.load(bad)
    # a record of format 2 (written before the null existed) loads and says the null was not computed
    plain = aflite(X, y, record_votes=False, **kw)  # format 2 had no votes either
    old = tmp_path / "old"
    plain.save(old)
    meta = json.loads((old / "result.json").read_text())
    meta.pop("null_permutations")
    meta.pop("checksum")
    meta["format_version"] = 2
    meta["checksum"] = _sha(_canonical(meta))
    (old / "result.json").write_text(json.dumps(meta, indent=2))
    loaded = AFLiteResult.load(old)
    assert loaded.null_counts is None and loaded.equals(plain)
    assert loaded.null_message.startswith("null not computed")
    assert loaded.summary()["null"].startswith("null not computed")


def test_cli_filter_null_permutations(tmp_path, capsys):
    from aflite_core.cli import main

    X, y, _ = planted(9, n=400, d=10)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    args = ["filter", "--features", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy")]
    args += ["--target-size", "200", "--train-size", "100", "--slice-size", "40", "--partitions", "16", "--quiet"]
    assert main([*args, "--null-permutations", "2", "--out", str(tmp_path / "run")]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "under shuffled labels (2 permutations)" in summary["null"]
    res = AFLiteResult.load(tmp_path / "run")
    assert res.null_counts is not None and res.params["null_permutations"] == 2
    assert main([*args, "--out", str(tmp_path / "plain")]) == 0
    assert AFLiteResult.load(tmp_path / "plain").equals(res)
    code = main([*args, "--null-permutations", "2", "--dask-local", "1", "--out", str(tmp_path / "dask")])
    assert code != 0
    assert "--null-permutations runs in this process only" in capsys.readouterr().err


# -- chance_share, grid counts, arguments ----------------------------------------------------------------------
def test_chance_share_definition_and_edge_cases():
    null = np.array([[0.9, 0.1, 0.8, np.nan], [0.2, 0.1, 0.9, 0.95]], dtype=np.float32)
    scores = np.array([1.0, 0.9, 0.8, np.nan], dtype=np.float32)
    assert chance_share(null, scores, 0.75) == pytest.approx(((2 + 2) / 2) / 3)
    assert chance_share(null, scores, 0.75, rows=[0, 1]) == pytest.approx(0.5 / 2)
    assert chance_share(null, scores, 0.75, rows=np.array([True, True, False, False])) == pytest.approx(0.25)
    assert np.isnan(chance_share(null, np.zeros(4), 0.99))  # 0/0: nothing reaches τ, nothing would
    assert chance_share(null, np.zeros(4), 0.5) == np.inf  # none reaches τ, the null expects some
    with pytest.raises(ValueError, match="shapes"):
        chance_share(null, scores[:3], 0.5)
    with pytest.raises(ValueError, match="'tau' parameter of chance_share"):
        chance_share(null, scores, 1.5)


def test_grid_counts_compare_as_the_engine_does():
    p = np.array([0.29, 0.75, 0.7499, np.nan, 1.0], dtype=np.float32)
    counts = grid_counts(p, np.array([0, 1, 1, 0, 0]), 2)
    assert counts.shape == (2, 101)
    assert counts[:, 75].tolist() == [1, 1] and counts[:, 29].tolist() == [2, 2] and counts[:, 30].tolist() == [1, 2]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_permutations": 0}, "'n_permutations' parameter of null_predictability must be an int in \\[1, inf\\)"),
        ({"train_size": 5000}, "'train_size' parameter of null_predictability"),
        ({"device": "tpu"}, "'device' parameter of null_predictability"),
    ],
)
def test_null_predictability_arguments(kwargs, match):
    X, y = random_labels(0, n=60, d=4)
    with pytest.raises(ValueError, match=match):
        null_predictability(X, y, **{"train_size": 20, **kwargs})


def test_aflite_null_permutations_argument():
    X, y = random_labels(0, n=60, d=4)
    with pytest.raises(ValueError, match="'null_permutations' parameter of aflite must be an int in \\[0, inf\\)"):
        aflite(X, y, target_size=30, train_size=20, slice_size=5, null_permutations=-1)


# -- the engine's other paths: block Grams rebuilt for the permuted labels, threads, torch, evaluation data -----
RIDGE_BLOCKS = LinearFamily(block_rows=4)


def test_ridge_blocks_round_one_is_null_predictability_and_threads_do_not_matter():
    """Blocks mode: the run's null (Grams rebuilt from its prepared session) equals a fresh session's, any n_threads."""
    X, y, _ = planted(10, n=800, d=12)
    kw = dict(KW, target_size=400, train_size=200, slice_size=60, model=RIDGE_BLOCKS, tau=0.6, null_permutations=2)
    one = aflite(X, y, n_threads=1, **kw)
    two = aflite(X, y, n_threads=2, **kw)
    assert one.params["partition_mode"] == "blocks" and one.n_rounds >= 2
    assert one.equals(two, null=True)
    null = null_predictability(
        X, y, n_permutations=2, train_size=200, n_partitions=16, model=RIDGE_BLOCKS, random_state=0
    )
    per_tau = np.array([(null >= np.float32(t)).sum() for t in TAU_GRID])
    assert np.array_equal(np.rint(one.null_counts[0] * 2).sum(axis=0), per_tau)


def test_relabelled_block_grams_match_a_session_built_on_the_permuted_labels():
    """After removals, the permuted session's block Grams equal a session's built on those labels from the start."""
    from aflite_core.engine.null import relabelled

    X, y, _ = planted(11, n=600, d=8)
    codes = y.astype(np.int32)
    rng = np.random.default_rng(0)
    session = RIDGE_BLOCKS.session(X, codes, 2, train_size=150, n_partitions=8, rng=np.random.default_rng(0))
    session.prepare()
    gone = np.sort(rng.choice(600, 90, replace=False))
    session.remove(gone)
    rows = np.setdiff1d(np.arange(600), gone)
    permuted = codes.copy()
    permuted[rows] = codes[rows][rng.permutation(len(rows))]
    null_session = relabelled(session, permuted, rows)
    fresh = RIDGE_BLOCKS.session(X, permuted, 2, train_size=150, n_partitions=8, rng=np.random.default_rng(0))
    fresh.prepare()
    fresh.remove(gone)
    assert session.shards and set(null_session.shards) == set(fresh.shards)
    for s, sh in fresh.shards.items():
        mine = null_session.shards[s]
        upper = np.triu(np.ones(sh.stack.shape[1:], dtype=bool))
        assert np.allclose(mine.stack[:, upper], sh.stack[:, upper], rtol=1e-4, atol=1e-3)
        assert np.array_equal(mine.rows, sh.rows)
    # the original session still sees its own labels
    assert session.codes is codes and not np.shares_memory(null_session.shards[0].stack, session.shards[0].stack)


def test_torch_cpu_run_with_ridge_blocks_computes_the_null():
    pytest.importorskip("torch")
    X, y, _ = planted(12, n=800, d=12)
    kw = dict(KW, target_size=400, train_size=200, slice_size=60, model=RIDGE_BLOCKS, tau=0.6, null_permutations=2)
    numpy_run = aflite(X, y, **kw)
    torch_run = aflite(X, y, device="torch:cpu", **kw)
    assert torch_run.null_counts.shape[1:] == (2, len(TAU_GRID))
    a, b = numpy_run.null_at(0.75), torch_run.null_at(0.75)
    assert abs(a - b) <= 0.05 * max(a, 1.0)


def test_null_predictability_on_the_digits_evaluation_setup():
    """The evaluation-set filter's data (the bundled digits, 10 classes): the null runs and is far below observed."""
    from aflite_core import load_digits_dataset

    data = load_digits_dataset()
    X, y = data.representation("pca"), data.y
    kw = dict(train_size=300, n_partitions=16, random_state=0)
    null = null_predictability(X, y, n_permutations=2, **kw)
    p = predictability(X, y, **kw)
    assert null.shape == (2, len(y))
    assert chance_share(null, p, 0.75) < 0.05  # the digits are solvable from their pixels' components


def test_the_evaluation_set_study_reports_the_null_of_round_one():
    """adversary_study(null_permutations=K): the same runs, and eval_null_round_1 beside removed_in_round_1."""
    from aflite_core.evalsets import adversary_study

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 700)
    strong = rng.normal(size=(700, 6)).astype(np.float32)
    strong[:, 0] += 2.0 * (2 * y - 1)
    weak = rng.normal(size=(700, 6)).astype(np.float32)
    tr, ev = slice(0, 500), slice(500, 700)
    args = ({"weak": weak[tr], "strong": strong[tr]}, y[tr], {"weak": weak[ev], "strong": strong[ev]}, y[ev])
    kw = dict(target_size=200, train_size=100, slice_size=50, seeds=(0,), n_partitions=16, ensemble=True)
    plain = adversary_study(*args, **kw)
    study = adversary_study(*args, null_permutations=2, **kw)
    runs = study.runs.set_index("adversary")
    assert study.params["null_permutations"] == 2
    assert np.isnan(plain.runs["eval_null_round_1"]).all()
    assert runs.loc["weak", "eval_null_round_1"] > 0.5 * runs.loc["weak", "removed_in_round_1"]  # chance, mostly
    assert runs.loc["strong", "eval_null_round_1"] < 0.2 * runs.loc["strong", "removed_in_round_1"]
    assert np.isnan(runs.loc["ensemble(weak+strong)", "eval_null_round_1"])
    for key, res in plain.runs_detail.items():
        assert study.runs_detail[key].equals(res)
    with pytest.raises(ValueError, match="'null_permutations' parameter of adversary_study"):
        adversary_study(*args, null_permutations=-1, **kw)


def test_the_null_stream_is_a_spawned_child_of_the_seed():
    for r in (1, 3):
        child = np.random.SeedSequence(42).spawn(1)[0]  # fresh: spawning advances a SeedSequence's count
        expected = np.random.default_rng(child.spawn(r)[r - 1]).random(4)
        assert np.array_equal(null_rng(42, r).random(4), expected)
    assert not np.array_equal(null_rng(42, 1).random(4), np.random.default_rng(42).random(4))


def test_chance_table_and_suggest_tau():
    from aflite_core import chance_table, suggest_tau

    X, y, _ = planted(14, n=800, d=50)
    res = aflite(X, y, target_size=400, train_size=100, slice_size=100, n_partitions=32, tau=0.5,
                 null_permutations=3, random_state=0)  # fmt: skip
    table = chance_table(res)
    assert list(table.columns) == ["tau", "observed", "null", "chance_share"] and len(table) == 101
    at = table.set_index(table["tau"].round(2))
    assert at.loc[0.5, "observed"] == res.history["n_qualified"].iloc[0]
    assert at.loc[0.75, "null"] == pytest.approx(res.null_at(0.75))
    tau = suggest_tau(res, 0.1)
    assert tau is not None and at.loc[tau, "chance_share"] <= 0.1
    lower = at.loc[: tau - 0.005]
    assert ((lower["chance_share"] > 0.1) | (lower["observed"] == 0)).all()
    assert suggest_tau(res, 0.0) is None or at.loc[suggest_tau(res, 0.0), "null"] == 0
    with pytest.raises(ValueError, match="has no null"):
        chance_table(aflite(X, y, target_size=400, train_size=100, slice_size=100, n_partitions=8, random_state=0))
    with pytest.raises(ValueError, match="'round' parameter of chance_table"):
        chance_table(res, round=99)
