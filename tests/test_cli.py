"""The command line as a user runs it: python -m aflite_core filter ..."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from aflite_core import AFLiteResult
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias


@pytest.fixture
def files(tmp_path):
    X, y, _ = make_planted_bias(600, 8, random_state=0)
    np.save(tmp_path / "X.npy", X[:500])
    np.save(tmp_path / "E.npy", X[500:])
    names = np.array(["cat", "dog"])[y]
    (tmp_path / "labels.txt").write_text("\n".join(names[:500]) + "\n")
    pd.DataFrame({"id": [f"r{i}" for i in range(500)], "label": names[:500]}).to_csv(
        tmp_path / "table.csv", index=False
    )
    np.save(tmp_path / "E_labels.npy", y[500:])
    np.save(tmp_path / "E_names.npy", names[500:].astype(str))
    return tmp_path


ARGS = ["--target-size", "250", "--train-size", "100", "--slice-size", "40", "--partitions", "16", "--seed", "0"]


def test_filter_writes_the_run_and_prints_one_json_line(files, capsys):
    out = files / "run"
    code = main(
        ["filter", "--features", str(files / "X.npy"), "--labels", str(files / "labels.txt"), *ARGS, "--out", str(out)]
    )
    assert code == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert len(lines) == 1
    summary = json.loads(lines[0])
    assert set(summary) >= {"kept", "removed", "rounds", "seconds", "stop_reason"}
    assert "round 1" in captured.err  # progress on stderr
    res = AFLiteResult.load(out)
    assert res.n_kept == summary["kept"] and res.classes == ("cat", "dog")


def test_filter_with_csv_labels_ids_and_evaluation_set(files, capsys):
    out = files / "run2"
    code = main(
        [
            "filter",
            "--features",
            str(files / "X.npy"),
            "--labels",
            str(files / "table.csv"),
            "--ids",
            str(files / "table.csv"),
            "--eval-features",
            str(files / "E.npy"),
            "--eval-labels",
            str(files / "E_names.npy"),
            *ARGS,
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    res = AFLiteResult.load(out)
    assert res.ids[0] == "r0"
    assert res.eval_kept is not None and len(res.eval_kept) == 100
    assert json.loads(capsys.readouterr().out)["eval_kept"] == int(res.eval_kept.sum())


def test_same_run_as_the_api(files):
    from aflite_core import aflite
    from aflite_core.data.readers import read_labels

    main(
        [
            "filter",
            "--features",
            str(files / "X.npy"),
            "--labels",
            str(files / "labels.txt"),
            *ARGS,
            "--out",
            str(files / "r"),
            "--quiet",
        ]
    )
    api = aflite(
        np.load(files / "X.npy"),
        read_labels(files / "labels.txt"),
        target_size=250,
        train_size=100,
        slice_size=40,
        n_partitions=16,
        random_state=0,
    )
    assert AFLiteResult.load(files / "r").equals(api)


def test_mmap_gives_the_same_run(files):
    main(
        [
            "filter",
            "--features",
            str(files / "X.npy"),
            "--labels",
            str(files / "labels.txt"),
            *ARGS,
            "--out",
            str(files / "a"),
            "--quiet",
        ]
    )
    main(
        [
            "filter",
            "--features",
            str(files / "X.npy"),
            "--labels",
            str(files / "labels.txt"),
            *ARGS,
            "--out",
            str(files / "b"),
            "--quiet",
            "--mmap",
        ]
    )
    assert AFLiteResult.load(files / "a").equals(AFLiteResult.load(files / "b"))


def test_predictability_command(files, capsys):
    code = main(
        [
            "predictability",
            "--features",
            str(files / "X.npy"),
            "--labels",
            str(files / "labels.txt"),
            "--train-size",
            "100",
            "--out",
            str(files / "p.csv"),
        ]
    )
    assert code == 0
    frame = pd.read_csv(files / "p.csv")
    assert list(frame.columns) == ["row", "label", "predictability"] and len(frame) == 500
    assert json.loads(capsys.readouterr().out)["rows"] == 500


def _write_object_npy(path):
    np.save(path, np.array([{"a": 1}] * 500, dtype=object), allow_pickle=True)


BAD = [
    ("missing features", ["--features", "nope.npy"], "does not exist"),
    ("train too big", ["--train-size", "400"], "--train-size option must be an int in (n_classes, target_size)"),
    ("tau", ["--tau", "2"], "--tau option must be a float in [0, 1]"),
    ("labels length", ["--labels", "E_labels.npy"], "one label per row of X (500)"),
    ("object npy", ["--features", "obj.npy"], "holds Python objects"),
    ("not a number", ["--target-size", "many"], "expected a number"),
    ("eval alone", ["--eval-features", "E.npy"], "--eval-features and --eval-labels must be given together"),
]


@pytest.mark.parametrize("name,override,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_exit_2(files, capsys, name, override, message):
    _write_object_npy(files / "obj.npy")
    base = {"--features": "X.npy", "--labels": "labels.txt"}
    args = ["filter"]
    for flag, value in base.items():
        if flag not in override:
            args += [flag, str(files / value)]
    for i in range(0, len(override), 2):
        value = override[i + 1]
        args += [override[i], str(files / value) if value.endswith(".npy") else value]
    rest = [a for a in ARGS]
    for i in range(0, len(override), 2):
        if override[i] in rest:
            j = rest.index(override[i])
            del rest[j : j + 2]
    code = main([*args, *rest, "--out", str(files / "bad")])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_module_entry_point_runs_in_a_subprocess(files):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "aflite_core",
            "filter",
            "--features",
            str(files / "X.npy"),
            "--labels",
            str(files / "labels.txt"),
            "--target-size",
            "250",
            "--train-size",
            "999",
            "--out",
            str(files / "x"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: The --train-size option")
    assert "Traceback" not in proc.stderr
