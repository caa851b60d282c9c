"""Training dynamics: measures, recording, the cartography reader, difficulty levels, baselines and the CLI."""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aflite_core.cli.dynamics import add_cli
from aflite_core.dynamics import (
    LEVELS,
    MEASURES,
    DifficultyLevels,
    DynamicsRecord,
    TrainingDynamics,
    aum_levels,
    data_maps_levels,
    difficulty_levels,
    read_cartography_dynamics,
    record_dynamics,
    train_dynamics,
    training_measures,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "cartography_example"
NLI = ("entailment", "neutral", "contradiction")


# ------------------------------------------------------------------------------------------- the four measures
def test_measures_on_hand_made_dynamics():
    p = np.array(
        [
            [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.9, 0.05, 0.05]],  # gold 0: always right
            [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]],  # gold 2: right in the last epoch only
        ]
    )
    logits = np.log(p) + np.array([0.0, 3.0, -1.0])[None, :, None]  # a shift per epoch changes nothing
    m = training_measures(logits, [0, 2])
    assert list(m.columns) == list(MEASURES)
    np.testing.assert_allclose(m["confidence"], [0.7, (0.1 + 0.3 + 0.7) / 3])
    # population standard deviation (divide by E): sqrt(((0)^2 + 0.2^2 + 0.2^2) / 3)
    np.testing.assert_allclose(m["variability"], [math.sqrt(0.08 / 3), np.std([0.1, 0.3, 0.7])])
    np.testing.assert_allclose(m["correctness"], [1.0, 1 / 3])
    aum0 = np.mean([math.log(0.7 / 0.2), math.log(0.5 / 0.3), math.log(0.9 / 0.05)])
    aum1 = np.mean([math.log(0.1 / 0.6), math.log(0.3 / 0.5), math.log(0.7 / 0.2)])
    np.testing.assert_allclose(m["aum"], [aum0, aum1])


def test_measures_match_a_plain_loop(rng):
    logits = rng.normal(size=(40, 4, 5))
    gold = rng.integers(0, 5, 40)
    m = training_measures(logits, gold, prefix="partial_")
    for i in range(40):
        z = logits[i]
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        pg = p[:, gold[i]]
        other = np.delete(z, gold[i], axis=1).max(axis=1)
        assert m["partial_confidence"][i] == pytest.approx(pg.mean())
        assert m["partial_variability"][i] == pytest.approx(math.sqrt(((pg - pg.mean()) ** 2).sum() / 4))
        assert m["partial_correctness"][i] == pytest.approx((p.argmax(axis=1) == gold[i]).mean())
        assert m["partial_aum"][i] == pytest.approx((z[:, gold[i]] - other).mean())


@given(
    logits=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=3, max_dims=3, min_side=2, max_side=5),
        elements=st.floats(-30, 30, allow_nan=False),
    ),
    data=st.data(),
)
def test_measure_invariants(logits, data):
    n, _, n_classes = logits.shape
    gold = np.array(data.draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n)))
    m = training_measures(logits, gold)
    assert m["confidence"].between(0, 1).all() and m["correctness"].between(0, 1).all()
    assert (m["variability"] >= 0).all() and (m["variability"] <= 0.5 + 1e-12).all()
    assert (m.loc[m["correctness"] == 1, "aum"] > 0).all()
    assert (m.loc[m["correctness"] == 0, "aum"] <= 0).all()


def test_a_tie_with_the_gold_class_is_not_correct():
    m = training_measures(np.array([[[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]]), [0])
    assert m["correctness"][0] == 0.5
    assert m["aum"][0] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("logits", "gold", "exc", "match"),
    [
        (np.zeros((3, 2)), [0, 0, 0], ValueError, "shape \\(n_examples, n_epochs, n_classes\\)"),
        (np.zeros((2, 1, 1)), [0, 0], ValueError, "at least 1 example, 1 epoch and 2 classes"),
        (np.full((1, 1, 2), np.nan), [0], ValueError, "finite"),
        (np.zeros((2, 1, 2)), [0, 2], ValueError, "class indices in \\[0, 1\\]"),
        (np.zeros((2, 1, 2)), [0.0, 1.0], TypeError, "'gold' parameter of training_measures"),
        (np.zeros((2, 1, 2)), [0], ValueError, "one class index per example"),
        ([["a"]], [0], TypeError, "'logits' parameter of training_measures"),
    ],
)
def test_training_measures_rejects_bad_input(logits, gold, exc, match):
    with pytest.raises(exc, match=match):
        training_measures(logits, gold)


def test_training_dynamics_checks_classes_and_ids():
    z = np.zeros((2, 1, 3))
    with pytest.raises(ValueError, match="'classes' parameter of TrainingDynamics must name the 3 classes"):
        TrainingDynamics(z, [0, 1], classes=("a", "b"))
    with pytest.raises(ValueError, match=r"unique ids. Got 'x' twice"):
        TrainingDynamics(z, [0, 1], ids=["x", "x"])
    td = TrainingDynamics(z, [0, 2], classes=NLI, ids=["p", "q"])
    assert td.labels.tolist() == ["entailment", "contradiction"]
    assert td.probabilities.shape == (2, 1, 3)
    np.testing.assert_allclose(td.probabilities, 1 / 3)


# ------------------------------------------------------------------------------------------- recording
def _blobs(rng, n=150, d=6, shift=3.0):
    y = np.repeat(np.array(["a", "b", "c"]), n // 3)
    centres = rng.normal(size=(3, d)) * shift
    X = centres[np.searchsorted(["a", "b", "c"], y)] + rng.normal(size=(n, d))
    return X.astype(np.float32), y


@pytest.mark.parametrize("hidden_size", [None, 16])
@pytest.mark.parametrize("record", ["epoch_end", "train_pass"])
def test_train_dynamics_is_deterministic_and_learns(rng, hidden_size, record):
    X, y = _blobs(rng)
    kw = dict(epochs=4, hidden_size=hidden_size, record=record, batch_size=16)
    a = train_dynamics(X, y, random_state=7, **kw)
    b = train_dynamics(X, y, random_state=7, **kw)
    c = train_dynamics(X, y, random_state=8, **kw)
    assert a.logits.shape == (150, 4, 3) and a.classes == ("a", "b", "c")
    np.testing.assert_array_equal(a.logits, b.logits)
    assert not np.array_equal(a.logits, c.logits)
    last = a.probabilities[:, -1, :].argmax(axis=1)
    assert (last == a.gold).mean() > 0.9
    gold_prob = a.probabilities[np.arange(150), :, a.gold].mean(axis=0)  # per epoch
    assert np.all(np.diff(gold_prob) > 0) and gold_prob[-1] > 0.5


def test_train_dynamics_takes_a_generator_and_reports_progress(rng):
    X, y = _blobs(rng, n=60)
    seen = []
    td = train_dynamics(
        X,
        y,
        epochs=3,
        random_state=np.random.default_rng(0),
        ids=[f"r{i}" for i in range(60)],
        callback=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert td.ids[0] == "r0" and td.to_frame().index.name == "id"


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"epochs": 0}, ValueError, "The 'epochs' parameter of train_dynamics must be an int in \\[1, inf\\)"),
        ({"epochs": 1.5}, TypeError, "'epochs' parameter"),
        ({"batch_size": 0}, ValueError, "'batch_size' parameter"),
        ({"hidden_size": 0}, ValueError, "'hidden_size' parameter"),
        ({"learning_rate": 0.0}, ValueError, "'learning_rate' parameter of train_dynamics must be a float in \\(0"),
        ({"learning_rate": "fast"}, TypeError, "'learning_rate' parameter"),
        ({"weight_decay": -1.0}, ValueError, "'weight_decay' parameter"),
        ({"record": "batch"}, ValueError, "'record' parameter of train_dynamics must be one of"),
        ({"random_state": "x"}, TypeError, "'random_state' parameter"),
        ({"ids": [1, 2]}, ValueError, "one id per example"),
        ({"callback": 3}, TypeError, "'callback' parameter"),
    ],
)
def test_train_dynamics_rejects_bad_parameters(kwargs, exc, match):
    X = np.zeros((6, 2))
    y = [0, 1, 0, 1, 0, 1]
    with pytest.raises(exc, match=match):
        train_dynamics(X, y, **kwargs)


def test_train_dynamics_rejects_bad_data():
    with pytest.raises(ValueError, match="'y' parameter of train_dynamics must have one label per row"):
        train_dynamics(np.zeros((4, 2)), [0, 1, 0])
    with pytest.raises(ValueError, match="at least 2 classes"):
        train_dynamics(np.zeros((4, 2)), [0, 0, 0, 0])
    with pytest.raises(ValueError, match="'X' parameter of train_dynamics must contain only finite"):
        train_dynamics(np.full((4, 2), np.nan), [0, 1, 0, 1])


def test_record_dynamics_full_and_partial(rng):
    X, y = _blobs(rng, n=90)
    rec = record_dynamics(X, y, X_partial=X[:, :2], epochs=2, random_state=3)
    again = record_dynamics(X, y, X_partial=X[:, :2], epochs=2, random_state=3)
    assert isinstance(rec, DynamicsRecord) and rec.random_state == 3
    frame = rec.to_frame()
    assert list(frame.columns) == ["label", *MEASURES, *(f"partial_{m}" for m in MEASURES)]
    np.testing.assert_array_equal(rec.partial.logits, again.partial.logits)
    assert rec.full.classes == rec.partial.classes
    solo = record_dynamics(X, y, epochs=2, random_state=3)
    assert solo.partial is None and list(solo.measures().columns) == list(MEASURES)
    with pytest.raises(ValueError, match="'X_partial' parameter of record_dynamics must have 90 rows"):
        record_dynamics(X, y, X_partial=X[:10])


def test_dynamics_record_aligns_partial_by_id_and_checks_gold():
    z = np.log(np.array([[[0.9, 0.1]], [[0.4, 0.6]], [[0.5, 0.5]]]))
    full = TrainingDynamics(z, [0, 1, 0], classes=("x", "y"), ids=["a", "b", "c"])
    partial = TrainingDynamics(z[[2, 0, 1]], [0, 0, 1], classes=("x", "y"), ids=["c", "a", "b"])
    rec = DynamicsRecord(full, partial)
    np.testing.assert_array_equal(rec.partial.logits, z)
    assert list(rec.partial.ids) == ["a", "b", "c"]
    wrong = TrainingDynamics(z, [1, 1, 0], classes=("x", "y"), ids=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"same gold labels as 'full'. Got 'y' instead of 'x' for id 'a'"):
        DynamicsRecord(full, wrong)
    other = TrainingDynamics(z, [0, 1, 0], classes=("x", "y"), ids=["a", "b", "d"])
    with pytest.raises(ValueError, match="no example with id 'c'"):
        DynamicsRecord(full, other)


# ------------------------------------------------------------------------------------------- cartography files
def _sample_rows() -> list[dict]:
    rows = []
    for e in range(3):
        for line in (SAMPLE / f"dynamics_epoch_{e}.jsonl").read_text().splitlines():
            rows.append({"epoch": e, **json.loads(line)})
    return rows


def test_read_the_sample_folder_aligns_epochs_by_guid():
    td = read_cartography_dynamics(SAMPLE, classes=list(NLI))
    assert (td.n_examples, td.n_epochs, td.n_classes) == (6, 3, 3)
    assert list(td.ids) == [101, 102, 103, 104, 105, 106]  # order of epoch 0
    assert td.classes == NLI
    for row in _sample_rows():
        i = list(td.ids).index(row["guid"])
        np.testing.assert_array_equal(td.logits[i, row["epoch"]], row[f"logits_epoch_{row['epoch']}"])
        assert td.gold[i] == row["gold"]
    m = td.measures()
    assert m.loc[101, "correctness"] == 1.0 and m.loc[102, "correctness"] == 1.0
    assert m.loc[105, "correctness"] == 0.0 and m.loc[106, "correctness"] == 0.0
    assert m.loc[103, "correctness"] == pytest.approx(1 / 3)
    assert td.labels[106] == "contradiction"
    assert difficulty_levels(td, random_state=0).levels.tolist() == ["easy"] * 2 + ["ambiguous"] * 2 + ["hard"] * 2


def test_read_a_list_of_files_and_a_training_dynamics_subfolder(tmp_path):
    files = [SAMPLE / f"dynamics_epoch_{e}.jsonl" for e in range(3)]
    from_list = read_cartography_dynamics([str(f) for f in files])
    assert from_list.classes == (0, 1, 2)
    sub = tmp_path / "model" / "training_dynamics"
    sub.mkdir(parents=True)
    for f in files:
        shutil.copy(f, sub)
    from_dir = read_cartography_dynamics(tmp_path / "model")
    np.testing.assert_array_equal(from_list.logits, from_dir.logits)


def test_save_and_read_back(tmp_path, rng):
    td = TrainingDynamics(rng.normal(size=(5, 2, 3)), [0, 1, 2, 0, 1], classes=NLI, ids=list("abcde"))
    td.save_cartography(tmp_path)
    back = read_cartography_dynamics(tmp_path, classes=NLI)
    np.testing.assert_allclose(back.logits, td.logits)
    assert list(back.ids) == list("abcde") and back.classes == NLI


def test_gold_as_class_names_needs_the_class_list(tmp_path):
    lines = [
        {"guid": "g1", "logits_epoch_0": [2.0, 0.0, -1.0], "gold": "entailment"},
        {"guid": "g2", "logits_epoch_0": [0.0, 0.5, 1.0], "gold": "contradiction"},
    ]
    (tmp_path / "dynamics_epoch_0.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    td = read_cartography_dynamics(tmp_path, classes=list(NLI))
    assert td.gold.tolist() == [0, 2]
    with pytest.raises(ValueError, match="line 1: 'gold' is the class name 'entailment'; pass classes="):
        read_cartography_dynamics(tmp_path)
    with pytest.raises(ValueError, match="'gold' 'contradiction' is not one of the classes"):
        read_cartography_dynamics(tmp_path, classes=["entailment", "neutral", "other"])


def _copy_sample(tmp_path: Path) -> Path:
    folder = tmp_path / "dyn"
    shutil.copytree(SAMPLE, folder)
    return folder


def _rewrite(path: Path, line_no: int, text: str | bytes) -> None:
    lines = path.read_bytes().splitlines()
    lines[line_no - 1] = text.encode() if isinstance(text, str) else text
    path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (
            lambda d: _rewrite(d / "dynamics_epoch_1.jsonl", 3, '{"guid": 106, "logits_epoch_1": [1.1, 0.2'),
            r"dynamics_epoch_1.jsonl' line 3 is not valid JSON",
        ),
        (lambda d: (d / "dynamics_epoch_1.jsonl").unlink(), r"missing epoch\(s\) \[1\]"),
        (
            lambda d: _rewrite(d / "dynamics_epoch_2.jsonl", 2, b'{"guid": 105, "gold": 1, "x": "\xff"}'),
            r"dynamics_epoch_2.jsonl' is not UTF-8 text \(line 2",
        ),
        (
            lambda d: _rewrite(d / "dynamics_epoch_0.jsonl", 4, '{"guid":104,"logits_epoch_0":[0.1,0.3],"gold":0}'),
            r"line 4 has 2 logits, but earlier lines have 3",
        ),
        (
            lambda d: _rewrite(d / "dynamics_epoch_2.jsonl", 1, '{"guid":999,"logits_epoch_2":[1,2,3],"gold":2}'),
            r"guid 106 of epoch 0 .* is missing from epoch 2",
        ),
        (
            lambda d: (d / "dynamics_epoch_1.jsonl").write_text(
                (d / "dynamics_epoch_1.jsonl").read_text() + '{"guid":"new","logits_epoch_1":[0,0,0],"gold":0}\n'
            ),
            r"dynamics_epoch_1.jsonl' line 7 has guid 'new', which is not in epoch 0",
        ),
        (
            lambda d: _rewrite(
                d / "dynamics_epoch_1.jsonl", 1, '{"guid":104,"logits_epoch_1":[0.8,0.2,-0.5],"gold":1}'
            ),
            r"guid 104 has gold 1 in epoch 1 .* but 0 in epoch 0",
        ),
        (
            lambda d: _rewrite(d / "dynamics_epoch_0.jsonl", 2, '{"guid":101,"logits_epoch_0":[0,0,0],"gold":2}'),
            r"has guid 101 twice \(lines 1 and 2\)",
        ),
        (
            lambda d: _rewrite(d / "dynamics_epoch_0.jsonl", 2, '{"guid":102,"logits_epoch_0":[0,0,0],"gold":3}'),
            r"line 2: 'gold' must be a class index in \[0, 2\]. Got 3",
        ),
        (
            lambda d: _rewrite(d / "dynamics_epoch_1.jsonl", 1, '{"guid":104,"logits_epoch_0":[0,0,0],"gold":0}'),
            r"line 1 must have one 'logits_epoch_1' field",
        ),
        (
            lambda d: _rewrite(d / "dynamics_epoch_0.jsonl", 1, '{"guid":101,"logits_epoch_0":[1,"a",0],"gold":0}'),
            r"'logits_epoch_0' must be a list of numbers",
        ),
        (lambda d: _rewrite(d / "dynamics_epoch_0.jsonl", 1, "[1, 2, 3]"), r"line 1 must be a JSON object"),
    ],
    ids=[
        "malformed-json",
        "missing-epoch",
        "not-utf8",
        "class-count",
        "missing-guid",
        "extra-guid",
        "gold-changes",
        "duplicate-guid",
        "gold-range",
        "wrong-logits-key",
        "non-numeric-logit",
        "not-an-object",
    ],
)
def test_bad_cartography_files_are_reported_clearly(tmp_path, damage, match):
    folder = _copy_sample(tmp_path)
    damage(folder)
    with pytest.raises(ValueError, match=match):
        read_cartography_dynamics(folder)


def test_inconsistent_class_counts_across_epochs(tmp_path):
    folder = _copy_sample(tmp_path)
    lines = [json.loads(x) for x in (folder / "dynamics_epoch_2.jsonl").read_text().splitlines()]
    for rec in lines:
        rec["logits_epoch_2"] = rec["logits_epoch_2"][:2]
        rec["gold"] = min(rec["gold"], 1)
    (folder / "dynamics_epoch_2.jsonl").write_text("\n".join(json.dumps(r) for r in lines))
    with pytest.raises(ValueError, match=r"has 2 logits per line, but .*dynamics_epoch_0.jsonl' has 3"):
        read_cartography_dynamics(folder)
    with pytest.raises(ValueError, match="has 3 logits per line, but 2 classes were given"):
        read_cartography_dynamics(SAMPLE, classes=["a", "b"])


def test_missing_or_empty_sources(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_cartography_dynamics(tmp_path / "nope")
    with pytest.raises(ValueError, match=r"holds no dynamics_epoch_<e>.jsonl files"):
        read_cartography_dynamics(tmp_path)
    with pytest.raises(ValueError, match=r"file '.*nope.jsonl' does not exist"):
        read_cartography_dynamics([tmp_path / "nope.jsonl"])
    with pytest.raises(TypeError, match="'source' parameter of read_cartography_dynamics"):
        read_cartography_dynamics(3)
    (tmp_path / "dynamics_epoch_0.jsonl").write_text("\n\n")
    with pytest.raises(ValueError, match="has no records"):
        read_cartography_dynamics(tmp_path)


# ------------------------------------------------------------------------------------------- difficulty levels
def _three_groups(rng, sizes=(60, 40, 20)):
    """Eight measures with three well-separated groups: planted easy, ambiguous, hard (rows shuffled)."""
    centres = {
        "easy": [0.9, 0.05, 1.0, 2.5, 0.85, 0.05, 1.0, 2.0],
        "ambiguous": [0.55, 0.25, 0.5, 0.2, 0.5, 0.2, 0.5, 0.1],
        "hard": [0.15, 0.05, 0.0, -2.0, 0.2, 0.05, 0.0, -1.5],
    }
    cols = [*MEASURES, *(f"partial_{m}" for m in MEASURES)]
    truth = np.repeat(list(centres), sizes)
    values = np.array([centres[t] for t in truth]) + rng.normal(scale=0.02, size=(len(truth), 8))
    order = rng.permutation(len(truth))
    frame = pd.DataFrame(values[order], columns=cols, index=pd.Index([f"x{i}" for i in order], name="id"))
    return frame, truth[order]


def test_gmm_levels_follow_the_planted_groups_ranked_by_confidence(rng):
    frame, truth = _three_groups(rng)
    res = difficulty_levels(frame, random_state=0)
    assert isinstance(res, DifficultyLevels) and res.method == "gmm" and res.random_state == 0
    assert res.levels.tolist() == truth.tolist()
    assert res.levels.index.equals(frame.index)
    assert list(res.levels.cat.categories) == list(LEVELS) and res.levels.cat.ordered
    assert res.counts().tolist() == [60, 40, 20]
    means = res.level_means
    assert list(means.index) == list(LEVELS)
    assert means["confidence"].is_monotonic_decreasing
    assert res.to_frame()["level"].equals(res.levels)
    again = difficulty_levels(frame, random_state=0)
    assert again.levels.equals(res.levels)


def test_gmm_levels_from_a_dynamics_record_use_all_eight_features(rng):
    X, y = _blobs(rng, n=90)
    rec = record_dynamics(X, y, X_partial=X[:, :1], epochs=3, random_state=0)
    res = difficulty_levels(rec, random_state=0, n_init=2)
    assert list(res.measures.columns) == list(rec.measures().columns)
    assert res.counts().sum() == 90


@pytest.mark.parametrize(
    ("data", "kwargs", "exc", "match"),
    [
        (pd.DataFrame({"aum": [1.0, 2.0, 3.0]}), {}, ValueError, r"must have the measure column\(s\) \['confidence'\]"),
        (pd.DataFrame({"confidence": [0.1, np.nan, 0.3]}), {}, ValueError, r"finite measures. Got NaN .* in row 1"),
        (pd.DataFrame({"confidence": [0.1, 0.2]}), {}, ValueError, "at least 3 examples"),
        (pd.DataFrame({"confidence": [0.1, 0.2, 0.3]}), {"n_init": 0}, ValueError, "'n_init' parameter"),
        (pd.DataFrame({"confidence": [0.1, 0.2, 0.3]}), {"covariance_type": "x"}, ValueError, "'covariance_type'"),
        (pd.DataFrame({"confidence": [0.1, 0.2, 0.3]}), {"columns": ["nope"]}, ValueError, "'columns' parameter"),
        ([0.1, 0.2, 0.3], {}, TypeError, "'data' parameter of difficulty_levels must be a DynamicsRecord"),
    ],
)
def test_difficulty_levels_rejects_bad_input(data, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        difficulty_levels(data, **kwargs)


def test_data_maps_baseline_on_hand_made_values():
    m = pd.DataFrame(
        {
            "confidence": [0.95, 0.90, 0.85, 0.60, 0.50, 0.40, 0.30, 0.20, 0.10],
            "variability": [0.01, 0.02, 0.03, 0.30, 0.31, 0.32, 0.04, 0.05, 0.06],
        }
    )
    res = data_maps_levels(m, ambiguous_fraction=1 / 3)
    assert res.levels.tolist() == ["easy"] * 3 + ["ambiguous"] * 3 + ["hard"] * 3
    assert res.thresholds["variability"] == pytest.approx(np.quantile(m["variability"], 2 / 3))
    assert res.thresholds["confidence"] == pytest.approx(np.median([0.95, 0.90, 0.85, 0.30, 0.20, 0.10]))
    wider = data_maps_levels(m, ambiguous_fraction=0.5)
    assert wider.counts()["ambiguous"] >= 4
    with pytest.raises(ValueError, match="'ambiguous_fraction' parameter of data_maps_levels must be a float in"):
        data_maps_levels(m, ambiguous_fraction=1.0)


def test_aum_baseline_on_hand_made_values():
    m = pd.DataFrame({"aum": [3.0, -2.0, 0.5, 1.0, -0.5, 2.0, -1.0, 0.0, 2.5]})
    res = aum_levels(m)
    lo, hi = np.quantile(m["aum"], [0.33, 0.66])
    assert res.thresholds == {"aum_lower": pytest.approx(lo), "aum_upper": pytest.approx(hi)}
    expected = ["easy" if a > hi else "hard" if a < lo else "ambiguous" for a in m["aum"]]
    assert res.levels.tolist() == expected
    assert res.counts().tolist() == [3, 3, 3]
    assert aum_levels(m, lower=0.1, upper=0.9).counts()["ambiguous"] == 7
    with pytest.raises(ValueError, match="'upper' parameter of aum_levels must be a float in \\(lower, 1\\)"):
        aum_levels(m, lower=0.6, upper=0.4)
    with pytest.raises(ValueError, match=r"measure column\(s\) \['aum'\]"):
        aum_levels(pd.DataFrame({"confidence": [0.1]}))


# ------------------------------------------------------------------------------------------- CLI
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aflite")
    add_cli(parser.add_subparsers(dest="command", required=True))
    return parser


def test_cli_records_dynamics_from_features(tmp_path, rng, capsys):
    X, y = _blobs(rng, n=90)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "P.npy", X[:, :2])
    (tmp_path / "labels.txt").write_text("\n".join(y) + "\n")
    out = tmp_path / "levels.csv"
    args = _parser().parse_args(
        [
            "dynamics",
            "--features",
            str(tmp_path / "X.npy"),
            "--partial-features",
            str(tmp_path / "P.npy"),
            "--labels",
            str(tmp_path / "labels.txt"),
            "--epochs",
            "2",
            "--seed",
            "1",
            "--n-init",
            "2",
            "--out",
            str(out),
        ]
    )
    assert args.func(args) == 0
    summary = json.loads(capsys.readouterr().out.strip())
    assert summary["rows"] == 90 and sum(summary["levels"].values()) == 90
    assert set(summary["levels"]) == set(LEVELS)
    frame = pd.read_csv(out)
    assert len(frame) == 90 and {"id", "label", "level", "partial_aum", "data_maps_level", "aum_level"} <= set(frame)
    assert frame["level"].value_counts().to_dict() == {k: v for k, v in summary["levels"].items() if v}


def test_cli_reads_cartography_and_measures_texts(tmp_path, capsys):
    out = tmp_path / "levels.parquet"
    tests_out = tmp_path / "tests.csv"
    args = _parser().parse_args(
        [
            "dynamics",
            "--dynamics-dir",
            str(SAMPLE),
            "--partial-dynamics-dir",
            str(SAMPLE),
            "--classes",
            ",".join(NLI),
            "--table",
            str(SAMPLE / "texts.jsonl"),
            "--id-column",
            "guid",
            "--tests-out",
            str(tests_out),
            "--n-init",
            "1",
            "--out",
            str(out),
        ]
    )
    assert args.func(args) == 0
    summary = json.loads(capsys.readouterr().out)
    frame = pd.read_parquet(out)
    assert frame["id"].tolist() == [101, 102, 103, 104, 105, 106]
    assert frame.set_index("id").loc[102, "contains_negation"]  # "Nobody is outside."
    assert frame.set_index("id").loc[106, "antonyms"] > 0  # night / day
    assert (frame["label"] == frame["label"]).all() and summary["rows"] == 6
    assert set(pd.read_csv(tests_out)["measure"]) == {
        "word_overlap",
        "antonyms",
        "length_mismatch",
        "misspelled_words",
        "contains_negation",
    }


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--out", "x.csv"], "either --features .* or --dynamics-dir"),
        (["--features", "X.npy", "--dynamics-dir", ".", "--out", "x.csv"], "exactly one of them"),
        (["--dynamics-dir", "DIR", "--out", "x.txt"], "must end in .parquet or .csv"),
        (["--features", "X.npy", "--out", "x.csv"], "--features needs --labels"),
        (["--dynamics-dir", "DIR", "--tests-out", "t.csv", "--out", "x.csv"], "--tests-out needs --table"),
        (["--dynamics-dir", "DIR", "--table", "nope.csv", "--out", "x.csv"], "Table file '.*nope.csv' does not exist"),
        (
            ["--dynamics-dir", "DIR", "--table", "TEXTS", "--text-a", "sentence1", "--out", "x.csv"],
            "has no column 'sentence1'",
        ),
    ],
)
def test_cli_bad_input_raises_value_error(tmp_path, argv, match):
    argv = [a.replace("DIR", str(SAMPLE)).replace("TEXTS", str(SAMPLE / "texts.jsonl")) for a in argv]
    argv = [str(tmp_path / a) if a.endswith((".csv", ".txt")) else a for a in argv]
    args = _parser().parse_args(["dynamics", *argv])
    with pytest.raises(ValueError, match=match):
        args.func(args)


# ------------------------------------------------------------------------------------------- real data
@pytest.mark.shared_data
def test_snli_negated_contradictions_are_easy_not_hard(shared_data):
    """Negation words are a hypothesis-only shortcut for 'contradiction' (Gururangan et al., 2018): both models
    learn it in the first epoch, so those pairs land in the easy level and the hard level keeps few of them."""
    from scipy.stats import mannwhitneyu

    from aflite_core.measures.spurious import spurious_measures

    table = pd.read_json(shared_data / "snli_sample.jsonl", lines=True)
    X_full = np.load(shared_data / "snli_sample.pair_minilm.npy")
    X_hyp = np.load(shared_data / "snli_sample.hyp_minilm.npy")
    rec = record_dynamics(X_full, table["label"], X_partial=X_hyp, ids=table["id"], random_state=0)
    levels = difficulty_levels(rec, random_state=0).levels.to_numpy()
    negation = spurious_measures(table["premise"], table["hypothesis"])["contains_negation"].to_numpy()
    contra = table["label"].to_numpy() == "contradiction"
    easy = negation[contra & (levels == "easy")]
    hard = negation[contra & (levels == "hard")]
    assert len(easy) > 200 and len(hard) > 100
    assert easy.mean() > hard.mean() + 0.03  # measured: about 0.09 vs 0.01 for seeds 0-4
    assert mannwhitneyu(easy, hard, alternative="two-sided").pvalue < 1e-3
