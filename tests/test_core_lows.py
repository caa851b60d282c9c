"""Issue 24's Lows of the core, each one sentence now (each test failed on the code before).

* ``aflite artifacts`` on an empty text column, one row, or two rows with a huge cell printed a traceback
  (``KeyError: 'label'``: nothing was tested, and the empty result's float ``significant`` column made
  ``stats[stats["significant"]]`` select columns);
* one label: ``artifact_statistics`` returned NaN z-scores while the CLI printed "1 labels (p0 = 1.000)"; one
  rule now (at least two labels, refused in one sentence by both);
* the NLI loader said "StopIteration" for an empty local file and "An error occurred while generating the
  dataset" for a CSV that is not UTF-8;
* ``filter --resume`` on a missing folder said "no cli_args.json";
* "a estimator" (and "a ndarray"-style articles) in messages built as "a {name}".
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aflite_core.cli import main
from aflite_core.measures.artifact_statistics import STAT_COLUMNS, artifact_shares, artifact_statistics

ROOT = Path(__file__).resolve().parents[1]


def _one_line_error(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err[len("error: ") :].strip()


def _csv(path: Path, texts, labels) -> Path:
    pd.DataFrame({"hypothesis": texts, "label": labels}).to_csv(path, index=False)
    return path


# -- aflite artifacts ------------------------------------------------------------------------------------------------
def test_artifacts_on_an_empty_text_column_says_so_in_one_sentence(tmp_path, capsys):
    path = _csv(tmp_path / "t.csv", ["", "", "", "..."], ["a", "b", "a", "b"])
    assert main(["artifacts", "--table", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out == (
        f"Column 'hypothesis' of '{path}' holds no tokens (its 4 texts are empty or only punctuation), so "
        "nothing was tested; choose the text column with --text-column.\n"
    )


def test_artifacts_when_no_token_reaches_min_count_says_so_and_json_is_an_empty_list(tmp_path, capsys):
    path = _csv(tmp_path / "t.csv", ["a man sleeps", "a dog barks"], ["x", "y"])
    assert main(["artifacts", "--table", str(path)]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"No token of column 'hypothesis' of '{path}' is in at least 10 of its 2 texts, so nothing was tested; "
        "lower --min-count to test rarer tokens.\n"
    )
    assert main(["artifacts", "--table", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_artifacts_on_two_rows_with_a_huge_cell_prints_one_sentence_not_a_traceback(tmp_path):
    # the case was a 50 MB cell; 2 MB fails the same way (nothing reaches --min-count) at a test's cost
    path = _csv(tmp_path / "big.csv", ["x " * 1_000_000, "y"], ["a", "b"])
    proc = subprocess.run(
        [sys.executable, "-m", "aflite_core", "artifacts", "--table", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr == ""
    assert proc.stdout.count("\n") == 1 and "is in at least 10 of its 2 texts, so nothing was tested" in proc.stdout


def test_artifacts_on_one_row_is_refused_by_the_one_label_rule(tmp_path, capsys):
    path = _csv(tmp_path / "t.csv", ["a man sleeps"], ["entailment"])
    assert main(["artifacts", "--table", str(path)]) == 2
    assert _one_line_error(capsys.readouterr().err) == (
        f"Table '{path}' has one label only ('entailment') in column 'label' (--label-column); the "
        "competency-problems test needs at least two labels."
    )


def test_artifacts_on_a_table_without_rows_is_one_sentence(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text("", encoding="utf-8")
    assert main(["artifacts", "--table", str(path)]) == 2
    assert "Traceback" not in _one_line_error(capsys.readouterr().err)


def test_one_label_is_refused_alike_by_the_api_and_the_cli(tmp_path, capsys):
    texts, labels = ["a man sleeps", "a dog sleeps"] * 10, ["same"] * 20
    with pytest.raises(ValueError) as info:
        artifact_statistics(texts, labels, min_count=1)
    assert str(info.value) == (
        "The 'labels' parameter of artifact_statistics must hold at least 2 distinct labels (with one, p0 = 1 and "
        "no token can give the label away). Got only 'same' instead."
    )
    path = _csv(tmp_path / "t.csv", texts, labels)
    for extra in ([], ["--min-count", "1", "--all"], ["--json"]):
        assert main(["artifacts", "--table", str(path), *extra]) == 2
        assert "has one label only ('same')" in _one_line_error(capsys.readouterr().err)
    # two labels: both run (the rule is the number of distinct labels, not of rows)
    assert len(artifact_statistics(texts, ["a", "b"] * 10, min_count=1)) > 0
    assert main(["artifacts", "--table", str(_csv(tmp_path / "two.csv", texts, ["a", "b"] * 10))]) == 0
    # shares need no second label (counts among kept / removed rows); their z is NaN with one label
    shares = artifact_shares(texts, labels, [True, False] * 10, ["man"])
    assert shares.loc[0, "count"] == 10 and np.isnan(shares.loc[0, "z"])


def test_an_empty_statistics_table_has_the_dtypes_of_a_full_one():
    s = artifact_statistics(["a b", "c d"], ["x", "y"], min_count=5)
    full = artifact_statistics(["a b"] * 5 + ["a d"] * 5, ["x", "y"] * 5, min_count=5)
    numbers = [c for c in STAT_COLUMNS if c not in ("token", "label")]  # the text columns follow pandas' inference
    assert tuple(s.columns) == STAT_COLUMNS and s[numbers].dtypes.to_dict() == full[numbers].dtypes.to_dict()
    assert list(s[s["significant"]].columns) == list(STAT_COLUMNS)  # selected rows, not columns
    assert s.attrs["n_tokens"] == 4 and s.attrs["n_tests"] == 0
    assert artifact_statistics(["", "!"], ["x", "y"]).attrs["n_tokens"] == 0


# -- the NLI loader's local files -------------------------------------------------------------------------------------
def _need_datasets() -> None:
    if importlib.util.find_spec("datasets") is None:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("the 'datasets' package is not installed")


def _fetch(tmp_path: Path, path: Path):
    from aflite_core.data.nli import load_nli_dataset

    return load_nli_dataset("snli", split="validation", data_files=path, cache_dir=tmp_path / "hf")


@pytest.mark.parametrize("content", [b"", b"\n  \n\n"])
def test_an_empty_local_nli_file_is_one_sentence_not_stopiteration(tmp_path, content):
    _need_datasets()
    folder = tmp_path / "secret-server-folder"
    folder.mkdir()
    (folder / "validation.jsonl").write_bytes(content)
    with pytest.raises(ValueError) as info:
        _fetch(tmp_path, folder)
    message = str(info.value)
    assert "StopIteration" not in message and "secret-server-folder" not in message
    assert message.startswith("The local NLI file 'validation.jsonl' of split 'validation' ")
    assert ("is empty;" in message) == (content == b"") and message.count(". ") == 0 and message.endswith(".")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_local_nli_file_that_is_not_utf8_names_the_byte(tmp_path, suffix):
    _need_datasets()
    head = b"premise,hypothesis,label\n" if suffix == ".csv" else b'{"premise": "'
    tail = b",x,1\n" if suffix == ".csv" else b'", "hypothesis": "x", "label": 1}\n'
    path = tmp_path / f"validation{suffix}"
    path.write_bytes(head + "été".encode("latin-1") + tail)
    with pytest.raises(ValueError) as info:
        _fetch(tmp_path, path)
    assert str(info.value) == (
        f"The local NLI file 'validation{suffix}' of split 'validation' is not UTF-8 text (byte {len(head):,} "
        "cannot be decoded); save it as UTF-8."
    )


def test_the_utf8_check_finds_a_bad_byte_across_chunks(tmp_path, monkeypatch):
    from aflite_core.data import nli

    monkeypatch.setattr(nli, "_UTF8_CHUNK", 4)
    path = tmp_path / "validation.jsonl"
    path.write_bytes("aé".encode() * 5 + b"\xff" + "é".encode())  # 'é' split across chunks is fine
    with pytest.raises(ValueError, match=r"byte 15 cannot be decoded"):
        nli._check_local_file(path, "validation", text=True)
    path.write_bytes("aé".encode() * 5)
    nli._check_local_file(path, "validation", text=True)


# -- filter --resume ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("given", ["runs/missing", "missing-run"])
def test_resume_of_a_missing_folder_says_it_does_not_exist(tmp_path, capsys, monkeypatch, given):
    monkeypatch.chdir(tmp_path)
    assert main(["filter", "--resume", given, "--quiet"]) == 2
    message = _one_line_error(capsys.readouterr().err)
    assert message == (
        f"--resume '{given}' does not exist; give the folder that 'filter --out' wrote (or start a new run with --out)"
    )
    assert str(tmp_path) not in message  # only what the user typed
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no folder and no lock file left behind


def test_resume_of_a_file_says_it_is_not_a_run_directory(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert main(["filter", "--resume", str(tmp_path / "notes.txt"), "--quiet"]) == 2
    assert _one_line_error(capsys.readouterr().err).endswith("is a file, not a run directory")


# -- a / an ------------------------------------------------------------------------------------------------------------
def test_a_non_classifier_estimator_is_an_estimator():
    from sklearn.base import BaseEstimator

    from aflite_core.engine.registry import resolve_model

    class Scorer(BaseEstimator):
        def fit(self, X, y):
            return self

        def predict(self, X):
            return X

    with pytest.raises(TypeError) as info:
        resolve_model(Scorer(), "aflite")
    assert "Got Scorer, an estimator that is not a classifier, instead" in str(info.value)
    assert "a estimator" not in str(info.value)


def test_messages_built_as_a_name_take_their_article_by_vowel(tmp_path):
    from aflite_core._validation import with_article
    from aflite_core.data.user_tables import load_table_dataset

    assert [with_article(w) for w in ("estimator", "int", "regressor", "ndarray", "Object", "")] == [
        "an estimator",
        "an int",
        "a regressor",
        "a ndarray",
        "an Object",
        "a ",
    ]
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "a", "label": {"k": 1}}\n{"text": "b", "label": {"k": 2}}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"has a dict as the label in row 0"):
        load_table_dataset(path, label_column="label")


def test_no_message_in_the_repository_says_a_before_a_vowel_sound_of_a_name():
    out = subprocess.run(
        ["git", "grep", "-n", "-I", "-E", r"\ba (estimator|int|object|array|element|item|integer)\b", "--", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    hits = [line for line in out.stdout.splitlines() if not line.startswith("tests/test_core_lows.py")]
    assert hits == []
