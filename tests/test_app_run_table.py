"""Runs opened with their data (issue 25): a run recorded with its table (``filter --table``) shows the table's
texts on Inspect and in the exports; a run's features open from the data roots (``AFLITE_DATA_ROOTS``), checked
like the run root; a run whose features lie below no root gets advice that works, and never a server path."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from plotly_figures import plotly_elements

from aflite_core import AFLiteResult
from aflite_core.cli import main

pytestmark = pytest.mark.slow

N_ROWS, N_FEATURES = 2000, 8
CLASSES = np.array(["neg", "neu", "pos"])


def _text(i: int) -> str:
    """A text with Markdown in it: shown literally, never rendered."""
    return f"**bold {i}** [a link](http://example.test/{i}) # not a heading _{i}_"


def _write_inputs(folder: Path) -> Path:
    """Seeded features (2,000 × 8), labels, string ids and a shuffled table with a Markdown text column."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    y = rng.integers(0, 3, N_ROWS)
    X = rng.normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
    X[:, 0] += 1.5 * y
    np.save(folder / "X.npy", X)
    (folder / "y.txt").write_text("\n".join(CLASSES[y]) + "\n")
    ids = np.array([f"doc-{i:04d}" for i in range(N_ROWS)])
    pd.DataFrame({"id": ids}).to_csv(folder / "ids.csv", index=False)
    order = rng.permutation(N_ROWS)
    pd.DataFrame(
        {
            "doc": ids[order],
            "text": [_text(i) for i in order],
            "topic": np.array(["sport", "news"])[order % 2],
            "score": order * 0.5,
        }
    ).to_csv(folder / "t.csv", index=False)
    return folder


def _filter(inputs: Path, out: Path, *extra: str) -> Path:
    argv = ["filter", "--features", str(inputs / "X.npy"), "--labels", str(inputs / "y.txt")]
    argv += ["--ids", str(inputs / "ids.csv"), "--target-size", "1200", "--train-size", "400"]
    argv += ["--slice-size", "100", "--seed", "1", "--quiet", "--out", str(out), *extra]
    assert main(argv) == 0
    return out


def _with_table(inputs: Path) -> list[str]:
    return ["--table", str(inputs / "t.csv"), "--id-column", "doc"]


@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    monkeypatch.delenv("AFLITE_DATA_ROOTS", raising=False)
    return root


def _open_on_page(at, relative: str):
    at.selectbox(key="run-dir").set_value(relative)
    next(b for b in at.button if b.label == "Open run").click().run()
    return at


# -- a run with its table ----------------------------------------------------------------------------------------
def test_a_run_with_its_table_shows_its_texts_literally_in_inspect(app_test, root, tmp_path, monkeypatch):
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    inputs = _write_inputs(tmp_path / "inputs")
    _filter(inputs, root / "news", "--copy-inputs", *_with_table(inputs))
    at = _open_on_page(app_test(page="pages/data.py"), "news")
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    said = " ".join(m.value for m in at.markdown)
    assert "with its table (4 columns: doc, text, topic, score)" in said
    at.switch_page("pages/inspect.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    rows = at.dataframe[0].value
    assert {"text", "topic"} <= set(rows.columns)  # the table's text columns, beside the run's own
    row = rows.set_index("id").loc["doc-0017"]
    assert row["text"] == _text(17)  # the cell holds the text as written: a data grid shows it literally
    assert row["topic"] == "news"
    rendered = " ".join(str(el.value) for kind in ("markdown", "caption", "info") for el in at.get(kind))
    assert "bold 17" not in rendered  # never passed through Markdown


def test_the_exports_of_a_run_with_its_table_hold_the_tables_columns(root, tmp_path):
    from aflite_app.compute import inspect as inspect_compute
    from aflite_app.compute import rundirs

    inputs = _write_inputs(tmp_path / "inputs")
    run_dir = _filter(inputs, root / "news", "--copy-inputs", *_with_table(inputs))
    _, data, _, result = rundirs.open_run_directory("news")
    assert data.text_columns == ("text", "topic") and data.id_column == "doc"
    assert data.meta["table_columns"] == ["doc", "text", "topic", "score"]
    assert rundirs.table_summary(data) == ("with its table (4 columns: doc, text, topic, score)", None)
    assert result.n_kept == AFLiteResult.load(run_dir).n_kept
    csv = pd.read_csv(io.BytesIO(inspect_compute.download_bytes(result, data, "all", "csv")))
    assert {"doc", "text", "topic", "score", "aflite_id", "aflite_status"} <= set(csv.columns)
    assert (csv["doc"] == csv["aflite_id"]).all()
    assert csv.set_index("doc").loc["doc-0017", "text"] == _text(17)
    assert csv.set_index("doc").loc["doc-0017", "score"] == 8.5
    kept = pd.read_parquet(io.BytesIO(inspect_compute.download_bytes(result, data, "kept", "parquet")))
    assert len(kept) == result.n_kept and kept["text"].str.startswith("**bold").all()
    from aflite_app.map_table import selection_table

    under_map, _ = selection_table(data, result, [17, 3])  # the map's table of selected rows: the same columns
    assert {"text", "topic"} <= set(under_map.columns) and _text(17) in under_map["text"].tolist()


def test_a_table_saved_with_the_runs_labels_is_not_given_them_twice(root, tmp_path):
    from aflite_app.compute import rundirs

    inputs = _write_inputs(tmp_path / "inputs")
    labels = (inputs / "y.txt").read_text().split()
    ids = pd.read_csv(inputs / "ids.csv")["id"].to_numpy()
    frame = pd.DataFrame({"label": labels, "text": [_text(i) for i in range(N_ROWS)], "id": ids})
    frame.to_parquet(inputs / "rows.parquet")  # row for row; its 'label' is the run's, its 'id' not its ids' column
    _filter(inputs, root / "plain", "--copy-inputs", "--table", str(inputs / "rows.parquet"))
    _, data, _, result = rundirs.open_run_directory("plain")
    assert data.label_column == "label" and list(data.frame.columns) == ["run_id", "label", "text", "id"]
    assert data.id_column == "run_id" and data.text_columns == ("text",)
    assert data.class_names_of(result.y).tolist() == labels


def test_a_table_larger_than_the_read_budget_is_left_out_with_advice_that_works(app_test, root, tmp_path, monkeypatch):
    from aflite_app.compute import _stores, rundirs

    inputs = _write_inputs(tmp_path / "inputs")
    table = pd.read_csv(inputs / "t.csv")
    table["body"] = [f"{i} " + "lorem ipsum " * 80 for i in range(N_ROWS)]  # ~2 MB of text
    table.to_csv(inputs / "t.csv", index=False)
    _filter(inputs, root / "news", "--copy-inputs", *_with_table(inputs))
    monkeypatch.setenv("AFLITE_PARSE_BUDGET_MB", "1")  # the run's own files fit in 1 MB; its table does not
    _stores.apply_parse_budgets()  # as a server started with it
    try:
        _, data, _, _ = rundirs.open_run_directory("news")
        summary, refused = rundirs.table_summary(data)
        assert summary == "" and data.text_columns == () and list(data.frame.columns) == ["id", "label"]
        assert refused.startswith("Its table was not loaded: it needs ")
        assert "AFLITE_PARSE_BUDGET_MB" in refused and refused.count(". ") == 0 and str(tmp_path) not in refused
        at = _open_on_page(app_test(page="pages/data.py"), "news")
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any("Its table was not loaded" in w.value for w in at.warning)
        monkeypatch.setenv("AFLITE_PARSE_BUDGET_MB", "16")  # the advice followed: the run opens with its table
        _stores.apply_parse_budgets()
        _, data, _, _ = rundirs.open_run_directory("news")
        assert rundirs.table_summary(data) == ("with its table (5 columns: doc, text, topic, score, body)", None)
    finally:
        monkeypatch.delenv("AFLITE_PARSE_BUDGET_MB")
        _stores.apply_parse_budgets()


# -- features below the data roots -------------------------------------------------------------------------------
def test_features_below_a_data_root_open_without_uploads(root, tmp_path, monkeypatch):
    from aflite_app.compute import rundirs

    inputs = _write_inputs(tmp_path / "corpus" / "embeddings")
    _filter(inputs, root / "news", *_with_table(inputs))
    with pytest.raises(ValueError, match="not below the app's run root"):
        rundirs.open_run_directory("news")
    monkeypatch.setenv("AFLITE_DATA_ROOTS", os.pathsep.join([str(tmp_path / "other"), str(tmp_path / "corpus")]))
    _, data, _, result = rundirs.open_run_directory("news")
    assert isinstance(data.representations["features"], np.ndarray) and data.n_rows == result.n_rows
    assert data.representation_descriptions["features"].endswith("memory-mapped)")
    assert data.text_columns == ("text", "topic")


def test_features_below_no_root_get_an_upload_when_an_upload_can_hold_them(root, tmp_path):
    from aflite_app.compute import rundirs

    inputs = _write_inputs(tmp_path / "secret-place")
    _filter(inputs, root / "news")
    with pytest.raises(ValueError) as err:
        rundirs.open_run_directory("news")
    text = str(err.value)
    assert "Upload the features the run was made on below" in text and "--copy-inputs" in text
    assert str(tmp_path) not in text and "secret-place" not in text
    X = (inputs / "X.npy").read_bytes()  # the advice works: the upload opens it
    with pytest.raises(ValueError, match=r"Upload the labels .* \(a \.txt or \.npy with one label per row will do\)"):
        rundirs.open_run_directory("news", ("X.npy", X))
    _, data, _, _ = rundirs.open_run_directory("news", ("X.npy", X), ("y.txt", (inputs / "y.txt").read_bytes()))
    assert data.n_rows == N_ROWS


def test_features_too_large_to_upload_name_the_data_roots_not_an_upload(root, tmp_path, monkeypatch):
    from aflite_app.compute import rundirs

    inputs = _write_inputs(tmp_path / "secret-place")
    _filter(inputs, root / "news")
    monkeypatch.setattr(rundirs, "upload_limit_bytes", lambda: 50_000)  # 2,000 × 8 float32 is 64 KB
    with pytest.raises(ValueError) as err:
        rundirs.open_run_directory("news")
    text = str(err.value)
    assert "larger than the 48.8 KB an upload may be" in text and "Upload" not in text
    assert "AFLITE_DATA_ROOTS" in text and "--copy-inputs" in text
    assert str(tmp_path) not in text and "secret-place" not in text
    monkeypatch.setenv("AFLITE_DATA_ROOTS", str(inputs))  # either advice works
    assert rundirs.open_run_directory("news")[1].n_rows == N_ROWS
    monkeypatch.delenv("AFLITE_DATA_ROOTS")
    _filter(inputs, root / "copied", "--copy-inputs")
    assert rundirs.open_run_directory("copied")[1].n_rows == N_ROWS


def test_the_data_page_says_why_features_outside_every_root_cannot_be_uploaded(app_test, root, tmp_path, monkeypatch):
    from aflite_app.compute import rundirs

    inputs = _write_inputs(tmp_path / "secret-place")
    _filter(inputs, root / "news")
    monkeypatch.setattr(rundirs, "upload_limit_bytes", lambda: 50_000)
    at = _open_on_page(app_test(page="pages/data.py"), "news")
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any("AFLITE\\_DATA\\_ROOTS" in e or "AFLITE_DATA_ROOTS" in e for e in errors), errors
    assert all("Upload" not in e and str(tmp_path) not in e for e in errors)


def test_a_symbolic_link_or_dotdot_out_of_a_data_root_is_refused(root, tmp_path, monkeypatch):
    from aflite_app.compute import rundirs

    data_root = tmp_path / "data"
    inputs = _write_inputs(data_root / "emb")
    run_dir = _filter(inputs, root / "news")
    monkeypatch.setenv("AFLITE_DATA_ROOTS", str(data_root))
    assert rundirs.open_run_directory("news")[1].n_rows == N_ROWS
    outside = tmp_path / "outside"
    outside.mkdir()
    (inputs / "X.npy").rename(outside / "X.npy")  # the same file, now outside every root ...
    (inputs / "X.npy").symlink_to(outside / "X.npy")  # ... reached through a link below the data root
    with pytest.raises(ValueError, match=r"not below the app.s run root .* or one of its data roots") as err:
        rundirs.open_run_directory("news")
    assert str(tmp_path) not in str(err.value)
    (inputs / "X.npy").unlink()
    (inputs / "X.npy").write_bytes((outside / "X.npy").read_bytes())
    record = json.loads((run_dir / "cli_args.json").read_text())
    record["features"] = str(data_root / ".." / "outside" / "X.npy")  # `..` out of the data root
    (run_dir / "cli_args.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="or one of its data roots"):
        rundirs.open_run_directory("news")
    linked_root = tmp_path / "data-link"
    linked_root.symlink_to(data_root)  # a data root that is itself a link is its real folder
    record["features"] = str(inputs / "X.npy")
    (run_dir / "cli_args.json").write_text(json.dumps(record))
    monkeypatch.setenv("AFLITE_DATA_ROOTS", str(linked_root))
    assert rundirs.open_run_directory("news")[1].n_rows == N_ROWS


def test_messages_name_files_below_a_data_root_relative_to_it(root, tmp_path, monkeypatch):
    from aflite_app.compute import rundirs

    monkeypatch.setenv("AFLITE_DATA_ROOTS", str(tmp_path / "data"))
    text = f"'{tmp_path / 'data' / 'emb' / 'X.npy'}' is damaged; '{tmp_path / 'data'}' holds it"
    shown = rundirs.without_server_paths(text, rundirs.run_root_folder())
    assert shown == "'emb/X.npy' is damaged; 'a data root' holds it"


def test_the_data_roots_setting_lists_folders_in_order():
    from aflite_app import settings

    raw = os.pathsep.join(["/srv/emb", "", " /srv/more ", "/srv/emb"])
    assert settings.load({"AFLITE_DATA_ROOTS": raw}).data_roots == (Path("/srv/emb"), Path("/srv/more"))
    assert settings.load({}).data_roots == ()
    with pytest.raises(ValueError, match="data_roots"):
        settings.Settings(data_roots=["/srv/emb"])


# -- what the table's texts cost elsewhere -----------------------------------------------------------------------
def test_texts_are_joined_column_wise_as_row_wise_joining_did():
    from aflite_app.compute import datasets
    from aflite_app.inspect_tables import joined_texts

    frame = pd.DataFrame({"a": ["x", None, "**y**", ""], "b": ["1.5", None, "é", "4"], "c": ["p", "q", None, "r"]})
    for cols in (["a"], ["a", "b"], ["c", "a", "b"]):
        old = frame[cols].fillna("").astype(str).agg(" ".join, axis=1).tolist()
        assert joined_texts(frame, cols) == old
    data = _tiny_text_data(frame)
    assert datasets.artifact_source_texts(data, "*all*") == frame[["a", "c"]].fillna("").agg(" ".join, axis=1).tolist()


def _tiny_text_data(frame):
    from aflite_core import dataset_from_table

    table = frame.assign(label=["u", "v", "u", "v"])
    return dataset_from_table(table, label_column="label", text_columns=["a", "c"], features=np.eye(4))


def test_the_data_pages_token_statistics_of_a_large_run_wait_for_the_button(app_test, root, tmp_path, monkeypatch):
    from aflite_app.compute import datasets

    calls = []
    real = datasets._artifact_statistics
    monkeypatch.setattr(datasets, "_artifact_statistics", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(datasets, "ARTIFACT_AUTO_ROWS", 1000)  # the run's 2,000 texts count as large here
    inputs = _write_inputs(tmp_path / "inputs")
    _filter(inputs, root / "news", "--copy-inputs", *_with_table(inputs))
    at = _open_on_page(app_test(page="pages/data.py"), "news")
    assert not at.exception, at.exception
    assert any("starts when you ask" in i.value for i in at.info)
    assert not calls and not any(c.key == "data-art-chart" for c in plotly_elements(at))
    next(b for b in at.button if b.label == "Test the tokens").click().run()
    assert not at.exception, at.exception
    assert calls and any("(token, label) pairs are significant" in m.value for m in at.markdown)
