"""SNLI / MultiNLI by name through the ``datasets`` library, tested offline on local files in the same layout."""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

from aflite_core.data.nli import NLI_SPLITS, FetchProgress, fetch_nli_records, load_nli_dataset


def _need_datasets() -> None:
    """Skip without the datasets library - but in CI (which installs it from requirements-dev.txt) fail."""
    if importlib.util.find_spec("datasets") is None:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("the 'datasets' package is not installed")


def _hf_rows(split: str, n: int) -> pd.DataFrame:
    """Rows in the Hugging Face SNLI layout: premise, hypothesis, integer label (-1 = no gold label)."""
    labels = [(i % 4) - 1 for i in range(n)]  # -1, 0, 1, 2, -1, ...
    return pd.DataFrame(
        {
            "premise": [f"{split} premise {i}" for i in range(n)],
            "hypothesis": [f"{split} hypothesis {i}" for i in range(n)],
            "label": np.array(labels, dtype=np.int64),
        }
    )


@pytest.fixture
def snli_folder(tmp_path):
    """A local copy in the layout of the Hub's SNLI repository: plain_text/<split>-00000-of-00001.parquet."""
    folder = tmp_path / "snli" / "plain_text"
    folder.mkdir(parents=True)
    for split, n in (("train", 40), ("validation", 12), ("test", 8)):
        _hf_rows(split, n).to_parquet(folder / f"{split}-00000-of-00001.parquet", index=False)
    return tmp_path / "snli"


def test_fetch_local_parquet_through_the_datasets_library(snli_folder, tmp_path):
    _need_datasets()
    seen: list[FetchProgress] = []
    raw = fetch_nli_records(
        "snli", "validation", data_files=snli_folder, cache_dir=tmp_path / "hf", progress=seen.append
    )
    assert len(raw) == 12 and raw["premise"].str.startswith("validation").all()
    assert raw["label"].tolist() == [(i % 4) - 1 for i in range(12)]
    assert [p.stage for p in seen] == ["load", "convert", "done"]
    assert seen[-1].fraction == 1.0 and "12 rows" in seen[-1].message


def test_row_cap_is_a_seeded_sample_of_gold_rows_in_order(snli_folder, tmp_path):
    _need_datasets()
    kw = {"data_files": snli_folder, "cache_dir": tmp_path / "hf"}
    a = fetch_nli_records("snli", "train", max_rows=10, random_state=1, **kw)
    b = fetch_nli_records("snli", "train", max_rows=10, random_state=1, **kw)
    c = fetch_nli_records("snli", "train", max_rows=10, random_state=2, **kw)
    assert len(a) == 10 and (a["label"] >= 0).all()  # only rows with a gold label
    assert a.equals(b) and not a["premise"].equals(c["premise"])
    positions = [int(p.rsplit(" ", 1)[1]) for p in a["premise"]]
    assert positions == sorted(positions)  # original order kept
    # a cap above the gold rows keeps them all (30 of the 40 train rows have a gold label)
    assert len(fetch_nli_records("snli", "train", max_rows=1000, **kw)) == 30


def test_multinli_validation_means_matched_and_jsonl_works(tmp_path):
    _need_datasets()
    folder = tmp_path / "mnli"
    folder.mkdir()
    for split in NLI_SPLITS["mnli"]:
        rows = _hf_rows(split, 6).to_dict(orient="records")
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    raw = fetch_nli_records("mnli", "validation", data_files=folder, cache_dir=tmp_path / "hf")
    assert raw["premise"].str.startswith("validation_matched ").all() and len(raw) == 6
    ds = load_nli_dataset(
        "multinli", split="validation_mismatched", data_files=folder, cache_dir=tmp_path / "hf", n_components=2
    )
    assert ds.meta["split"] == "validation_mismatched" and len(ds.y) == 4  # 2 of 6 rows have no gold label
    assert ds.frame["premise"].str.startswith("validation_mismatched ").all()


def test_original_snli_jsonl_through_load_nli_dataset(tmp_path):
    _need_datasets()
    rows = [
        {"sentence1": f"A man {i}.", "sentence2": f"Nobody {i}.", "gold_label": g, "pairID": f"p{i}"}
        for i, g in enumerate(["contradiction", "-", "entailment", "neutral", "contradiction", "entailment"])
    ]
    path = tmp_path / "snli_1.0_dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ds = load_nli_dataset(
        "snli",
        split="validation",
        data_files=path,
        cache_dir=tmp_path / "hf",
        max_rows=3,
        n_components=2,
        random_state=0,
    )
    assert len(ds.y) == 3 and "-" not in set(ds.labels)
    assert set(ds.ids) <= {"p0", "p2", "p3", "p4", "p5"}
    again = load_nli_dataset(
        "snli",
        split="validation",
        data_files=path,
        cache_dir=tmp_path / "hf",
        max_rows=3,
        n_components=2,
        random_state=0,
    )
    assert list(again.ids) == list(ds.ids)


@pytest.mark.parametrize("name, split", [("snli", "validation_matched"), ("mnli", "test"), ("snli", "dev")])
def test_unknown_split_is_refused_before_anything_is_fetched(monkeypatch, name, split):
    monkeypatch.setitem(sys.modules, "datasets", None)  # would raise ImportError if it got that far
    with pytest.raises(ValueError, match=rf"Unknown split '{split}' of {name}; use one of"):
        fetch_nli_records(name, split)


def test_missing_local_files_and_bad_options(tmp_path):
    with pytest.raises(ValueError, match=r"The local NLI data '.*nowhere' does not exist"):
        fetch_nli_records("snli", "train", data_files=tmp_path / "nowhere")
    (tmp_path / "other.parquet").write_bytes(b"")
    with pytest.raises(ValueError, match=r"No file of split 'train' in"):
        fetch_nli_records("snli", "train", data_files=tmp_path)
    with pytest.raises(ValueError, match=r"The 'max_rows' parameter of fetch_nli_records must be an int in \[1, inf\)"):
        fetch_nli_records("snli", "train", max_rows=0)
    with pytest.raises(ValueError, match=r"'data_files' parameter of load_nli_dataset goes with a dataset name"):
        load_nli_dataset(tmp_path / "other.parquet", data_files=tmp_path)


def test_missing_datasets_library_is_one_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError) as info:
        fetch_nli_records("snli", "test")
    message = str(info.value)
    assert "pip install datasets" in message and message.count(". ") == 0 and message.endswith(".")


def test_offline_and_not_cached_is_one_clear_sentence(tmp_path):
    _need_datasets()
    import huggingface_hub.constants

    if not huggingface_hub.constants.HF_HUB_OFFLINE:  # never touch the network from a test
        pytest.skip("HF_HUB_OFFLINE is not set (tests/run.sh sets it)")
    with pytest.raises(ValueError) as info:
        fetch_nli_records("snli", "validation", cache_dir=tmp_path / "empty-cache")
    message = str(info.value)
    assert message.startswith("Could not fetch snli (stanfordnlp/snli, split 'validation') with the datasets library:")
    assert "not in the local cache and the Hub cannot be reached (offline)" in message
    assert "\n" not in message
