"""The bundled SNLI sample (sample_data/snli): it loads offline, its sizes, labels and premise groups, its artifacts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from aflite_core.data.bundled_snli import NLI_SAMPLE_DIR, load_nli_sample
from aflite_core.measures.artifact_statistics import artifact_statistics

ROOT = NLI_SAMPLE_DIR.parents[1]


@pytest.fixture(scope="module")
def sample():
    return load_nli_sample(text_features=False)


def test_the_bundled_sample_loads_from_its_own_folder_alone(tmp_path):
    """Nothing but sample_data/snli is read: a copy of that folder, with no ../shared anywhere near it, loads."""
    copy = tmp_path / "snli"
    shutil.copytree(NLI_SAMPLE_DIR, copy)
    code = (
        "import sys; from aflite_core.data.bundled_snli import load_nli_sample; "
        f"d = load_nli_sample(data_dir={str(copy)!r}); print(d.n_rows, list(d.representations))"
    )
    env = {"PATH": "/usr/bin:/bin", "AFLITE_SHARED_DATA": str(tmp_path / "no-shared"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "1496"
    assert "'hyp_minilm'" in out.stdout and "'tfidf_hypothesis'" in out.stdout


def test_sizes_labels_and_embeddings(sample):
    assert sample.n_rows == 1496
    assert sample.classes == ("entailment", "neutral", "contradiction")
    assert sample.class_counts().to_dict() == {"entailment": 505, "neutral": 492, "contradiction": 499}
    assert sample.pair == ("premise", "hypothesis")
    X = sample.representation("hyp_minilm")
    assert X.shape == (1496, 384) and X.dtype == np.float32
    assert np.allclose(np.linalg.norm(X, axis=1), 1, atol=1e-4)
    assert len(set(sample.ids)) == 1496 and list(sample.ids) == sorted(sample.ids)  # the source's order
    assert sample.frame["premise"].nunique() == 505
    manifest = json.loads((NLI_SAMPLE_DIR / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["rows"] == 1496 and "CC BY-SA 4.0" in manifest["licence"]
    size = sum((NLI_SAMPLE_DIR / f).stat().st_size for f in ("pairs.jsonl", "hyp_minilm.npy"))
    assert 2.0e6 < size < 3.0e6  # about 2.5 MB in the box


def test_its_artifact_statistics_name_significant_words(sample):
    texts = sample.frame["hypothesis"].tolist()
    stats = artifact_statistics(texts, sample.labels, min_count=10, alpha=0.01)
    significant = {(t, str(lab)) for t, lab in stats.loc[stats["significant"], ["token", "label"]].itertuples(False)}
    assert len(significant) >= 1
    # sample_data/README.md names these six (measured): it must stay true
    assert significant == {
        ("for", "neutral"),
        ("to", "neutral"),
        ("there", "entailment"),
        ("outside", "entailment"),
        ("they", "neutral"),
        ("eating", "contradiction"),
    }


def test_a_changed_file_is_refused_in_one_sentence(tmp_path):
    copy = tmp_path / "snli"
    shutil.copytree(NLI_SAMPLE_DIR, copy)
    with open(copy / "pairs.jsonl", "a", encoding="utf-8") as f:
        f.write("\n")
    with pytest.raises(ValueError, match=r"^The bundled SNLI sample's pairs.jsonl does not match its manifest"):
        load_nli_sample(data_dir=copy)
    with pytest.raises(ValueError, match="is missing from this install"):
        load_nli_sample(data_dir=tmp_path / "nothing")


def test_the_app_offers_it_as_a_bundled_dataset():
    from aflite_app.compute import datasets
    from aflite_app.specs import BUNDLED

    assert "snli-sample" in BUNDLED and "snli-sample" in datasets.dataset_choices()
    data = datasets.bundled_dataset("snli-sample")
    assert data.n_rows == 1496 and data.default_representation == "hyp_minilm"
    assert datasets.default_partial_input(data, "tfidf") in ("hyp_minilm", "tfidf_hypothesis")
    assert datasets.artifact_text_choices(data)["hypothesis"].startswith("the hypothesis")


@pytest.mark.shared_data
def test_whole_premise_groups_of_the_shared_sample_and_a_rebuild_matches(shared_data, sample):
    source = pd.read_json(shared_data / "snli_sample.jsonl", lines=True, dtype=False)
    kept = set(sample.frame["premise"])
    whole = source[source["premise"].isin(kept)]
    assert len(whole) == sample.n_rows  # every hypothesis of a kept premise is in the sample
    assert list(whole["id"]) == list(sample.ids)
    E = np.load(shared_data / "snli_sample.hyp_minilm.npy", mmap_mode="r")
    assert np.array_equal(np.asarray(E[whole.index.to_numpy()]), sample.representation("hyp_minilm"))
    out = subprocess.run(
        [sys.executable, str(ROOT / "sample_data" / "make_nli_sample.py"), "--source", str(shared_data), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
