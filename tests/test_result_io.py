"""AFLiteResult: the record users export, reload and inspect."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aflite_core import AFLiteResult, aflite
from aflite_core.data.planted_bias import make_planted_bias


@pytest.fixture(scope="module")
def run_with_eval():
    X, y, _ = make_planted_bias(900, 8, class_sep=0.2, random_state=1)
    names = np.array(["neg", "pos"])[y]
    ids = np.array([f"ex-{i:04d}" for i in range(900)], dtype=object)
    return aflite(
        X[:700],
        names[:700],
        target_size=350,
        train_size=150,
        slice_size=60,
        random_state=3,
        eval_X=X[700:],
        eval_y=names[700:],
        ids=ids[:700],
        eval_ids=ids[700:],
    )


def test_save_load_round_trip_is_exact(tmp_path, run_with_eval):
    res = run_with_eval
    path = res.save(tmp_path / "run")
    assert sorted(p.name for p in path.iterdir()) == [
        "eval_rows.parquet",
        "eval_scores.parquet",
        "history.parquet",
        "result.json",
        "rows.parquet",
        "scores.parquet",
        "votes.npy",  # the models' votes (run format 5)
    ]
    back = AFLiteResult.load(path)
    assert back.equals(res, timings=True)
    for name in ("scores", "n_predictions", "eval_scores", "first_score", "kept", "removed_round"):
        a, b = getattr(res, name), getattr(back, name)
        assert a.dtype == b.dtype and a.shape == b.shape
    assert back.history.equals(res.history)
    assert back.classes == ("neg", "pos")
    assert list(back.ids[:2]) == ["ex-0000", "ex-0001"]
    assert back.to_frame().equals(res.to_frame())
    assert back.eval_frame().equals(res.eval_frame())


def test_no_pickle_in_the_run_directory(tmp_path, run_with_eval):
    path = run_with_eval.save(tmp_path / "run")
    meta = json.loads((path / "result.json").read_text())
    assert meta["format"] == "aflite-studio-run"
    assert meta["params"]["model"]["family"] == "linear"
    for f in path.iterdir():
        assert f.suffix in (".json", ".parquet", ".npy")
        if f.suffix == ".npy":  # plain numbers: it loads without pickle
            assert np.load(f, allow_pickle=False).dtype.kind in "iuf"


def test_greedy_and_int_ids_round_trip(tmp_path):
    X, y, _ = make_planted_bias(160, 6, random_state=0)
    res = aflite(
        X,
        y,
        target_size=150,
        train_size=40,
        strategy="greedy",
        n_partitions=8,
        tau=0.5,
        random_state=0,
        ids=np.arange(1000, 1160),
    )
    back = AFLiteResult.load(res.save(tmp_path / "g"))
    assert back.scores is None
    assert back.equals(res)
    assert back.ids.dtype.kind == "i"


def test_sklearn_model_is_recorded_by_name_and_params(tmp_path):
    from sklearn.linear_model import LogisticRegression

    X, y, _ = make_planted_bias(300, 6, random_state=0)
    res = aflite(
        X,
        y,
        target_size=200,
        train_size=80,
        slice_size=20,
        n_partitions=4,
        model=LogisticRegression(C=0.5),
        random_state=0,
    )
    meta = json.loads((res.save(tmp_path / "s") / "result.json").read_text())
    assert meta["params"]["model"]["class"].endswith("LogisticRegression")
    assert meta["params"]["model"]["params"]["C"] == 0.5


def test_provenance(run_with_eval):
    prov = run_with_eval.provenance
    assert len(prov["x_sha256"]) == 64 and len(prov["y_sha256"]) == 64
    assert prov["eval_x_sha256"] and prov["seed"] == run_with_eval.params["seed"] == 3
    assert {"numpy", "scikit-learn", "aflite_core"} <= set(prov["versions"])
    assert prov["ids_given"] is True


def test_tables_for_users(run_with_eval):
    res = run_with_eval
    frame = res.to_frame(round_scores=True)
    assert list(frame.columns[:4]) == ["id", "label", "kept", "removed_round"]
    assert f"p_round_{res.n_rounds}" in frame.columns
    assert (frame["removed_round"] == -1).sum() == res.n_kept
    ev = res.eval_frame()
    assert set(ev["category"]) <= {"removed in round 1", "removed later", "selected"}
    assert (ev["category"] == "selected").sum() == res.eval_kept.sum()
    assert set(res.history.columns) >= {
        "round",
        "size_before",
        "n_scored",
        "n_removed",
        "min_removed_score",
        "mean_predictability",
        "mean_model_accuracy",
        "seconds",
    }
    assert res.representation_bias.index.name == "round"
    s = res.summary()
    assert s["kept"] + s["removed"] == 700 and s["rounds"] == res.n_rounds
    assert "AFLiteResult(kept=" in repr(res)


@pytest.mark.parametrize("damage", ["missing_json", "bad_json", "missing_rows", "other_format"])
def test_load_reports_what_is_wrong(tmp_path, run_with_eval, damage):
    path = run_with_eval.save(tmp_path / "run")
    if damage == "missing_json":
        (path / "result.json").unlink()
        match = "no result.json"
    elif damage == "bad_json":
        (path / "result.json").write_text("{not json")
        match = "not valid JSON"
    elif damage == "missing_rows":
        (path / "rows.parquet").unlink()
        match = "incomplete or damaged"
    else:
        (path / "result.json").write_text(json.dumps({"format": "something-else"}))
        match = "does not hold an AFLite Studio run"
    with pytest.raises(ValueError, match=match):
        AFLiteResult.load(path)


def test_stop_message_counts_rows_in_words():
    from aflite_core import aflite

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 4)), rng.integers(0, 2, 300)  # labels unrelated to X: few rows qualify
    res = aflite(X, y, target_size=150, tau=0.95, slice_size=50, n_partitions=8, train_size=100, random_state=0)
    assert res.stop_reason == "fewer_than_k_qualified"
    message = res.stop_message
    assert "row(s)" not in message
    qualified = int(res.history.iloc[-1]["n_qualified"])
    assert f"only {qualified:,} row{'' if qualified == 1 else 's'} had" in message
