"""A run's small JSON records are size-checked before they are read (issue 24: a budget before every parse)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aflite_core.cli import main
from aflite_core.data import budget
from aflite_core.data.preflight import MAX_SMALL_JSON_BYTES, read_small_json


def test_a_record_over_its_size_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "cli_args.json"
    path.write_bytes(b"[" * (MAX_SMALL_JSON_BYTES + 1))
    reads = []
    original = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or original(self))
    with pytest.raises(ValueError, match=r"^cli_args.json is 1,048,577 bytes, more than the 1,048,576") as info:
        read_small_json(path, "cli_args.json")
    assert "\n" not in str(info.value) and str(tmp_path) not in str(info.value)
    assert reads == []  # refused on its size alone


def test_a_record_whose_values_exceed_the_budget_is_refused_by_the_budget(tmp_path):
    path = tmp_path / "cli_args.json"
    path.write_text("[" + ",".join(["{}"] * 20_000) + "]")
    old = budget.set_budgets(parse_bytes=1 << 20)
    try:
        with pytest.raises(budget.MemoryBudgetError):
            read_small_json(path, "cli_args.json")
    finally:
        budget.set_budgets(**old.as_dict())


def test_damaged_records_are_one_sentence(tmp_path):
    path = tmp_path / "cli_args.json"
    path.write_bytes(b'{"m": 6')
    with pytest.raises(ValueError, match=r"^x is not valid JSON \(truncated or edited\)\.$"):
        read_small_json(path, "x")
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ValueError, match=r"not valid JSON"):
        read_small_json(path, "x")


def test_resume_on_a_folder_with_a_huge_cli_args_is_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "cli_args.json").write_bytes(b" " * (MAX_SMALL_JSON_BYTES + 10))
    code = main(["filter", "--resume", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1
    assert "more than the 1,048,576" in err


def test_the_app_opens_a_run_whose_cli_args_is_huge_by_asking_for_its_files(tmp_path, monkeypatch):
    from aflite_app.compute import rundirs
    from aflite_core import aflite

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    y = rng.integers(0, 2, size=120)
    res = aflite(X, y, target_size=100, train_size=60, n_partitions=4, slice_size=5, random_state=0)
    run = tmp_path / "r"
    res.save(run)
    (run / "cli_args.json").write_bytes(b"{" * (MAX_SMALL_JSON_BYTES + 1))
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(tmp_path))
    with pytest.raises(ValueError) as info:
        rundirs.open_run_directory("r")
    text = str(info.value)
    assert "does not say where its features are" in text and str(tmp_path) not in text
    assert "\n" not in text and len(text) < 400  # one sentence, nothing of the file quoted
