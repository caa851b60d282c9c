"""The Data page: bundled datasets, uploads (the bytes -> Dataset step directly, and through the uploader)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from conftest import plotly_figures

from aflite_app.compute import _stores, datasets, uploads
from aflite_app.state import BUNDLED, DATASET, REPRESENTATION, UPLOADS

pytestmark = pytest.mark.slow


def _table(n: int = 50, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 4)).round(4), columns=["x0", "x1", "x2", "x3"])
    frame["label"] = np.where(frame["x0"] + rng.normal(size=n) > 0, "yes", "no")
    return frame


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def _npy(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return buf.getvalue()


# -- the bytes + options -> Dataset step ------------------------------------------------------------------------
def test_load_upload_numeric_columns():
    frame = _table()
    options = uploads.UploadOptions(label_column="label", feature_columns=("x0", "x1", "x2", "x3"))
    outcome = uploads.load_upload(_csv(frame), "small.csv", options)
    assert outcome.ok and outcome.error is None
    data = outcome.dataset
    assert data.n_rows == 50 and data.classes == ("no", "yes")
    assert data.representation("columns").shape == (50, 4)
    assert outcome.key == uploads.upload_options_key(_csv(frame), "small.csv", options)
    assert outcome.key.startswith("upload-")
    other = uploads.load_upload(
        _csv(frame), "small.csv", uploads.UploadOptions(label_column="label", feature_columns=("x0",))
    )
    assert other.key != outcome.key


def test_load_upload_with_aligned_npy_and_pair_text_features():
    frame = pd.DataFrame(
        {
            "premise": ["A man sleeps on a couch.", "Two dogs run in a field.", "A woman reads."] * 10,
            "hypothesis": ["Nobody sleeps.", "Animals are outside.", "A person reads."] * 10,
            "label": ["contradiction", "entailment", "neutral"] * 10,
        }
    )
    jsonl = frame.to_json(orient="records", lines=True).encode()
    feats = np.random.default_rng(0).normal(size=(30, 5)).astype(np.float32)
    options = uploads.UploadOptions(label_column="label", pair=("premise", "hypothesis"), text_features=True)
    outcome = uploads.load_upload(jsonl, "nli.jsonl", options, _npy(feats), "emb.npy")
    assert outcome.ok, outcome.error
    assert list(outcome.dataset.representations) == ["emb", "tfidf", "tfidf_hypothesis"]
    assert datasets.default_partial_input(outcome.dataset, "emb") == "tfidf_hypothesis"
    assert outcome.dataset.pair == ("premise", "hypothesis")


def test_several_npy_files_become_named_representations():
    frame = _table()
    files = [
        ("small.pair_emb.npy", _npy(np.ones((50, 3), np.float32))),
        ("small.hyp_emb.npy", _npy(np.zeros((50, 2), np.float32))),
    ]
    assert uploads.feature_representation_names([f for f, _ in files], "small.csv") == ["pair_emb", "hyp_emb"]
    assert uploads.feature_representation_names(["a.npy", "a.npy"], "t.csv") == ["a", "a_2"]
    outcome = uploads.load_upload(_csv(frame), "small.csv", uploads.UploadOptions(label_column="label"), files)
    assert outcome.ok, outcome.error
    assert {k: X.shape[1] for k, X in outcome.dataset.representations.items()} == {"pair_emb": 3, "hyp_emb": 2}
    assert datasets.partial_input_choices(outcome.dataset, "pair_emb") == ["hyp_emb"]
    assert datasets.default_partial_input(outcome.dataset, "pair_emb") == "hyp_emb"
    assert datasets.default_partial_input(outcome.dataset, "hyp_emb") is None


@pytest.mark.shared_data
def test_real_snli_sample_with_pair_and_hypothesis_embeddings(shared_data):
    files = [
        (f"snli_sample.{k}_minilm.npy", (shared_data / f"snli_sample.{k}_minilm.npy").read_bytes())
        for k in ("pair", "hyp")
    ]
    guess = uploads.guess_columns(
        uploads.upload_table((shared_data / "snli_sample.jsonl").read_bytes(), "snli_sample.jsonl")
    )
    assert guess["pair"] == ("premise", "hypothesis") and guess["label"] == "label"
    outcome = uploads.load_upload(
        (shared_data / "snli_sample.jsonl").read_bytes(),
        "snli_sample.jsonl",
        uploads.UploadOptions(label_column="label", pair=guess["pair"]),
        files,
    )
    assert outcome.ok, outcome.error
    data = outcome.dataset
    assert data.n_rows == 6891 and data.n_classes == 3 and data.pair == ("premise", "hypothesis")
    assert list(data.representations) == ["pair_minilm", "hyp_minilm"]
    assert datasets.default_partial_input(data, "pair_minilm") == "hyp_minilm"


@pytest.mark.parametrize(
    ("table", "name", "options", "features", "message"),
    [
        (_csv(_table()), "t.csv", {"label_column": "nope"}, None, "has no label column 'nope'"),
        (b"\xff\xfe\x00bad" + _csv(_table()), "t.csv", {"label_column": "label"}, None, "not UTF-8"),
        (
            _csv(_table()),
            "t.csv",
            {"label_column": "label"},
            _npy(np.zeros((40, 3), np.float32)),
            "has 40 rows but 't.csv' has 50",
        ),
        (
            _csv(_table()),
            "t.csv",
            {"label_column": "label"},
            _npy(np.array([{"a": 1}] * 50, dtype=object), True),
            "Python objects",
        ),
        (_csv(_table()), "t.csv", {"label_column": "label"}, None, "gives no features"),
        (
            _csv(_table().assign(label="same")),
            "t.csv",
            {"label_column": "label", "feature_columns": ("x0",)},
            None,
            "only one class",
        ),
        (b'{"x": 1, "label": "a"}\n{oops\n', "t.jsonl", {"label_column": "label"}, None, "line 2"),
        (b"a,b\n1,2\n", "t.xlsx", {"label_column": "b"}, None, ".csv, .tsv, .parquet or .jsonl"),
    ],
    ids=[
        "missing-label-column",
        "not-utf8",
        "misaligned-npy",
        "pickled-npy",
        "no-features",
        "one-class",
        "bad-jsonl",
        "unknown-extension",
    ],
)
def test_load_upload_errors_are_messages(table, name, options, features, message):
    outcome = uploads.load_upload(
        table, name, uploads.UploadOptions(**options), features, None if features is None else "f.npy"
    )
    assert not outcome.ok and outcome.dataset is None
    assert message in outcome.error


def test_too_many_rows_points_to_the_cli(monkeypatch):
    monkeypatch.setattr(_stores, "MAX_INTERACTIVE_ROWS", 20)
    outcome = uploads.load_upload(_csv(_table(25, seed=3)), "big.csv", uploads.UploadOptions(label_column="label"))
    assert not outcome.ok
    assert "more than the app filters interactively" in outcome.error
    assert "python -m aflite_core filter" in outcome.error


def test_guess_columns():
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3],
            "premise": ["A long sentence here."] * 3,
            "hypothesis": ["Another long sentence."] * 3,
            "score": [0.1, 0.2, 0.3],
            "gold_label": ["a", "b", "a"],
        }
    )
    g = uploads.guess_columns(frame)
    assert g["label"] == "gold_label" and g["id"] == "id" and g["pair"] == ("premise", "hypothesis")
    assert g["numeric"] == ["score"] and g["texts"] == []


# -- the page --------------------------------------------------------------------------------------------------
def test_data_page_shows_bundled_datasets_and_digit_samples(app_test):
    at = app_test(page="pages/data.py")
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader][: len(BUNDLED)] == list(BUNDLED.values())
    text = " ".join(m.value for m in at.markdown)
    assert "Handwritten digits" in text and "planted" in text.lower()
    grids = [f for f in plotly_figures(at) if f["data"] and f["data"][0]["type"] == "heatmap"]
    assert len(grids) == 1
    assert grids[0]["layout"]["meta"]["n_images"] == 120  # 12 per class, 10 classes
    use = [b.key for b in at.button if (b.key or "").startswith("use-")]
    assert use == ["use-planted", "use-circles", "use-snli-sample"]  # digits is in use
    assert any(s.value == "In use" for s in at.success)


def test_choosing_a_bundled_dataset_switches_the_sidebar(app_test):
    at = app_test(page="pages/data.py")
    at.button(key="use-planted").click().run()
    assert not at.exception, at.exception
    assert at.session_state[DATASET] == "planted"
    assert at.selectbox(key=DATASET).value == "planted"  # the sidebar
    assert at.selectbox(key=REPRESENTATION).value == "features"
    assert [b.key for b in at.button if (b.key or "").startswith("use-")] == [
        "use-digits",
        "use-circles",
        "use-snli-sample",
    ]


def test_upload_through_the_uploader_registers_the_dataset_and_filters_end_to_end(app_test):
    at = app_test(page="pages/data.py")
    assert at.file_uploader(key="upload-table")
    at.file_uploader(key="upload-table").set_value(("small.csv", _csv(_table()), "text/csv")).run()
    assert not at.exception, at.exception
    assert not at.error
    assert {m.label: m.value for m in at.metric} == {"Rows": "50", "Classes": "2", "Representations": "1"}
    label = next(s for s in at.selectbox if s.key.startswith("up-label-"))
    assert label.value == "label"
    at.button(key="use-upload").click().run()
    assert not at.exception, at.exception
    key = at.session_state[DATASET]
    assert key.startswith("upload-") and key in at.session_state[UPLOADS]
    assert at.selectbox(key=DATASET).value == key
    assert "Uploaded: small" in at.selectbox(key=DATASET).format_func(key)
    assert any(s.value == "In use" for s in at.success)

    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows kept"] and int(metrics["Rows kept"]) + int(metrics["Rows removed"]) == 50
    at.switch_page("pages/baselines.py").run()
    assert not at.exception, at.exception
    assert plotly_figures(at)


@pytest.mark.parametrize(
    ("table", "features", "message"),
    [
        (b"\xff\xfe\x00bad" + _csv(_table()), None, "not UTF-8"),
        (_csv(_table()), _npy(np.zeros((40, 3), np.float32)), "has 40 rows"),
        (_csv(_table().assign(label="same")), None, "only one class"),
    ],
    ids=["not-utf8", "misaligned-npy", "one-class"],
)
def test_bad_uploads_show_the_loader_message(app_test, table, features, message):
    at = app_test(page="pages/data.py")
    at.file_uploader(key="upload-table").set_value(("bad.csv", table, "text/csv"))
    if features is not None:
        at.file_uploader(key="upload-features").set_value(("f.npy", features, "application/octet-stream"))
    at.run()
    assert not at.exception, at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "use-upload"]
    assert at.session_state[DATASET] == "digits"


def test_too_large_upload_is_refused_with_the_cli_command(app_test, monkeypatch):
    monkeypatch.setattr(_stores, "MAX_INTERACTIVE_ROWS", 30)
    at = app_test(page="pages/data.py")
    at.file_uploader(key="upload-table").set_value(("big.csv", _csv(_table(40)), "text/csv")).run()
    assert not at.exception, at.exception
    (error,) = at.error
    assert "40 rows" in error.value and "python -m aflite_core filter" in error.value
    assert not at.selectbox(key=DATASET).value.startswith("upload-")
