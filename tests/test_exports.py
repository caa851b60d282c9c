"""The Inspect page's pure layer: rows table, filters, download bytes and the safe loader of run archives."""

from __future__ import annotations

import base64
import io
import stat
import zipfile

import numpy as np
import pandas as pd
import pytest

from aflite_app import exports
from aflite_core import aflite, dataset_from_table

WORDS = ["nobody", "sleeps", "a", "man", "is", "outside", "cat", "never", "plays", "the"]


@pytest.fixture(scope="module")
def text_data():
    """120 rows, 2 classes, a text column whose word 'nobody' reveals class 'c' in a third of its rows."""
    rng = np.random.default_rng(0)
    y = np.repeat(["c", "e"], 60)
    texts = []
    for i, label in enumerate(y):
        words = list(rng.choice(WORDS[2:], size=4))
        if label == "c" and i % 3 == 0:
            words.insert(0, "nobody")
        texts.append(" ".join(words))
    X = rng.normal(size=(120, 6)).astype(np.float32)
    X[(y == "c") & (np.arange(120) % 3 == 0), 0] += 6.0  # the same rows are easy for the models
    frame = pd.DataFrame({"label": y, "text": texts, "score": rng.normal(size=120), "n": rng.integers(0, 9, 120)})
    return dataset_from_table(frame, label_column="label", text_columns=["text"], features=X, name="text")


@pytest.fixture(scope="module")
def text_run(text_data):
    return aflite(
        text_data.representation(),
        text_data.y,
        target_size=80,
        train_size=40,
        slice_size=10,
        tau=0.6,
        n_partitions=16,
        random_state=0,
        ids=text_data.ids,
    )


@pytest.fixture(scope="module")
def image_data():
    rng = np.random.default_rng(1)
    images = rng.integers(0, 17, size=(60, 8, 8)).astype(np.uint8)
    frame = pd.DataFrame(images.reshape(60, -1), columns=[f"pixel_{r}_{c}" for r in range(8) for c in range(8)])
    frame.insert(0, "label", np.repeat([0, 1, 2], 20))
    return dataset_from_table(
        frame, label_column="label", features=images.reshape(60, -1) / 16.0, images=images, name="img"
    )


def _zip(entries: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        if symlink is not None:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def _members(payload: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


# -- images --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 7), (4, 3, 3), (2, 6, 4)])
def test_png_bytes_decodes_to_the_same_pixels(shape):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=shape).astype(np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(exports.png_bytes(pixels))))
    assert np.array_equal(decoded, pixels)


def test_png_bytes_rejects_bad_input():
    with pytest.raises(TypeError, match="uint8"):
        exports.png_bytes(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="shape"):
        exports.png_bytes(np.zeros((2, 2, 2), np.uint8))


def test_thumbnails_are_crisp_inverted_data_uris(image_data):
    Image = pytest.importorskip("PIL.Image")
    uris = exports.image_thumbnails(image_data.images)
    assert len(uris) == 60 and all(u.startswith("data:image/png;base64,") for u in uris)
    img = np.asarray(Image.open(io.BytesIO(base64.b64decode(uris[0].split(",", 1)[1]))))
    assert img.shape == (32, 32)  # 8x8 enlarged 4x by pixel repetition
    src = image_data.images[0].astype(float)
    expected = np.round(255 - (src - 0) / (image_data.images.max() - image_data.images.min()) * 255)
    assert np.array_equal(img[::4, ::4], expected.astype(np.uint8))  # high values (ink) drawn dark


# -- rows table and filters -----------------------------------------------------------------------------------
def test_rows_table_has_one_row_per_example(text_data, text_run):
    table = exports.rows_table(text_run, text_data)
    assert len(table) == 120
    assert {"row", "id", "text", "class", "status", "round", "p_first", "p_removal", "p_last", "p_rounds"} <= set(
        table.columns
    )
    assert (table["status"] == "removed").sum() == text_run.n_removed
    assert table.loc[table["status"] == "kept", "round"].isna().all()
    assert (table.loc[table["status"] == "removed", "round"] >= 1).all()
    assert set(table["class"]) == {"c", "e"}  # class names, not codes
    lens = table["p_rounds"].map(len)
    assert (lens.loc[table["status"] == "removed"] == table.loc[table["status"] == "removed", "round"]).all()


def test_round_lists_for_the_rows_shown_equal_the_whole_tables(text_data, text_run):
    """Inspect builds its table without p_rounds and adds it to the rows it shows: the same lists, row by row."""
    from aflite_app.inspect_tables import with_round_lists

    full = exports.rows_table(text_run, text_data)
    lean = exports.rows_table(text_run, text_data, round_lists=False)
    assert "p_rounds" not in lean.columns and list(lean.columns) == [c for c in full.columns if c != "p_rounds"]
    shown = with_round_lists(lean[lean["status"] == "removed"].iloc[::-1].head(30), text_run)
    assert list(shown.columns) == list(full.columns)  # p_rounds where rows_table puts it
    assert shown["p_rounds"].tolist() == full.loc[shown.index, "p_rounds"].tolist()
    assert with_round_lists(lean.head(0), text_run)["p_rounds"].tolist() == []


def test_rows_table_greedy_has_no_per_round_column(text_data):
    run = aflite(
        text_data.representation(),
        text_data.y,
        target_size=110,
        train_size=40,
        tau=0.6,
        n_partitions=8,
        strategy="greedy",
        random_state=0,
    )
    table = exports.rows_table(run, text_data)
    assert "p_rounds" not in table.columns and len(table) == 120


def test_filter_rows(text_data, text_run):
    table = exports.rows_table(text_run, text_data)
    removed = exports.filter_rows(table, status="removed")
    assert len(removed) == text_run.n_removed and (removed["status"] == "removed").all()
    assert len(exports.filter_rows(table, status="kept")) == text_run.n_kept
    only_c = exports.filter_rows(table, classes=["c"])
    assert len(only_c) == 60
    first = exports.filter_rows(table, status="removed", rounds=(1, 1))
    assert len(first) == int((text_run.removed_round == 1).sum())
    with_kept = exports.filter_rows(table, rounds=(1, 1))
    assert len(with_kept) == len(first) + text_run.n_kept  # kept rows are not narrowed by rounds
    hits = exports.filter_rows(table, query="NOBODY", text_columns=["text"])
    assert len(hits) == 20 and hits["text"].str.contains("nobody").all()
    assert len(exports.filter_rows(table, query="zzz", text_columns=["text"])) == 0
    with pytest.raises(ValueError, match="status"):
        exports.filter_rows(table, status="gone")


def test_stability_frame_and_counts():
    removed = np.array([[1, 1, 0, 0, 1], [1, 0, 0, 1, 1], [1, 1, 0, 0, 1]], dtype=bool)
    kept = np.array([False, False, True, True, False])
    frame, summary = exports.stability_frame(removed, kept)
    assert frame["n_runs_removed"].tolist() == [3, 2, 0, 1, 3]
    assert summary["robust"] == 2 and summary["sometimes"] == 1 and summary["kept_but_removed_elsewhere"] == 1
    assert summary["robust_share"] == pytest.approx(2 / 3)
    counts = exports.stability_counts(frame, kept, 3)
    assert counts["removed"].tolist() == [0, 0, 1, 2] and counts["kept"].tolist() == [1, 1, 0, 0]
    table = pd.DataFrame({"row": [4, 0]})
    assert exports.with_stability(table, frame)["seed_frequency"].tolist() == [1.0, 1.0]


def test_artifact_inputs(text_data, image_data):
    texts, where = exports.artifact_texts(text_data)
    assert len(texts) == 120 and "'text'" in where
    assert exports.artifact_texts(image_data) is None
    sources = exports.feature_sources(image_data)
    assert next(iter(sources)) == "table"
    X, names = exports.feature_matrix(image_data, "table")
    assert X.shape == (60, 64) and names[0] == "pixel_0_0"
    assert exports.pixel_grid(image_data, "table") == (8, 8)
    assert exports.pixel_grid(text_data, "table") is None


# -- downloads ------------------------------------------------------------------------------------------------
def test_export_frame_csv_and_parquet_round_trip(text_data, text_run):
    kept = exports.export_frame(text_run, text_data)
    assert len(kept) == text_run.n_kept
    assert list(kept.columns[:4]) == list(text_data.frame.columns)  # every original column first
    assert {"aflite_id", "aflite_label", "aflite_status", "aflite_removed_round"} <= set(kept.columns)
    assert (kept["aflite_status"] == "kept").all() and kept["aflite_removed_round"].isna().all()
    back = pd.read_parquet(io.BytesIO(exports.parquet_bytes(kept)))
    pd.testing.assert_frame_equal(back, kept)
    csv = pd.read_csv(io.BytesIO(exports.csv_bytes(kept)))
    pd.testing.assert_frame_equal(csv, kept, check_dtype=False)

    removed = exports.export_frame(text_run, text_data, "removed")
    assert len(removed) == text_run.n_removed and (removed["aflite_removed_round"] >= 1).all()
    csv = pd.read_csv(io.BytesIO(exports.csv_bytes(removed)))
    assert csv["aflite_removed_round"].tolist() == removed["aflite_removed_round"].astype(int).tolist()
    assert csv["text"].tolist() == removed["text"].tolist()


def test_parquet_bytes_writes_mixed_object_columns_as_text():
    frame = pd.DataFrame({"a": [1, "x", None], "b": [1.0, 2.0, 3.0]})
    back = pd.read_parquet(io.BytesIO(exports.parquet_bytes(frame)))
    assert back["a"].tolist()[:2] == ["1", "x"] and back["b"].tolist() == [1.0, 2.0, 3.0]


# -- run archives ---------------------------------------------------------------------------------------------
def test_run_zip_loads_back_exactly(text_data, text_run):
    payload = exports.run_zip_bytes(text_run)
    assert "result.json" in _members(payload)
    loaded = exports.load_run_zip(payload)
    assert loaded.equals(text_run, timings=True)
    exports.check_run_matches(loaded, text_data)


def test_greedy_run_zip_loads_back_exactly(text_data):
    run = aflite(
        text_data.representation(),
        text_data.y,
        target_size=115,
        train_size=40,
        tau=0.6,
        n_partitions=8,
        strategy="greedy",
        random_state=0,
    )
    assert exports.load_run_zip(exports.run_zip_bytes(run)).equals(run, timings=True)


def test_a_zipped_run_folder_with_extra_files_loads(text_run):
    files = _members(exports.run_zip_bytes(text_run))
    nested = {f"my run/{k}": v for k, v in files.items()}
    nested["my run/notes.txt"] = b"ignored"
    nested["__MACOSX/my run/._result.json"] = b"junk"
    assert exports.load_run_zip(_zip(nested)).equals(text_run)


@pytest.mark.parametrize(
    "payload, match",
    [
        (b"this is not a zip", "not a zip archive"),
        (b"", "empty"),
        (b"PK\x03\x04" + b"\x00" * 40, "not a zip archive"),
    ],
)
def test_loader_rejects_non_zip_bytes(payload, match):
    with pytest.raises(exports.RunArchiveError, match=match):
        exports.load_run_zip(payload)


@pytest.mark.parametrize(
    "name", ["../result.json", "run/../../rows.parquet", "/etc/result.json", "C:/result.json", "run\\result.json"]
)
def test_loader_rejects_path_traversal(text_run, name):
    files = _members(exports.run_zip_bytes(text_run))
    files[name] = b"{}"
    with pytest.raises(exports.RunArchiveError, match="Refused"):
        exports.load_run_zip(_zip(files))


def test_loader_rejects_symbolic_links(text_run):
    payload = _zip(_members(exports.run_zip_bytes(text_run)), symlink="link")
    with pytest.raises(exports.RunArchiveError, match="symbolic link"):
        exports.load_run_zip(payload)


def test_loader_rejects_an_oversized_member(text_run):
    files = _members(exports.run_zip_bytes(text_run))
    files["scores.parquet"] = b"\x00" * 2_000_000  # compresses to a few KB: a small zip bomb
    payload = _zip(files)
    assert len(payload) < 100_000
    with pytest.raises(exports.RunArchiveError, match="per file"):
        exports.load_run_zip(payload, max_member_bytes=1_000_000)
    with pytest.raises(exports.RunArchiveError, match="would unpack to"):
        exports.load_run_zip(payload, max_member_bytes=10_000_000, max_total_bytes=1_500_000)


def test_loader_rejects_an_oversized_archive(text_run):
    payload = exports.run_zip_bytes(text_run)
    with pytest.raises(exports.RunArchiveError, match="more than the limit"):
        exports.load_run_zip(payload, max_archive_bytes=len(payload) - 1)


def test_loader_rejects_a_zip_without_result_json(text_run):
    files = _members(exports.run_zip_bytes(text_run))
    del files["result.json"]
    with pytest.raises(exports.RunArchiveError, match=r"no result\.json"):
        exports.load_run_zip(_zip(files))
    with pytest.raises(exports.RunArchiveError, match=r"no result\.json"):
        exports.load_run_zip(_zip({"readme.txt": b"hello"}))


def test_loader_rejects_two_runs_and_deep_nesting(text_run):
    files = _members(exports.run_zip_bytes(text_run))
    two = dict(files) | {f"other/{k}": v for k, v in files.items()}
    with pytest.raises(exports.RunArchiveError, match="twice"):
        exports.load_run_zip(_zip(two))
    deep = {f"a/b/{k}": v for k, v in files.items()}
    with pytest.raises(exports.RunArchiveError, match="nested too deep"):
        exports.load_run_zip(_zip(deep))


def test_loader_rejects_damaged_runs(text_run):
    files = _members(exports.run_zip_bytes(text_run))
    bad_json = dict(files, **{"result.json": b"{not json"})
    with pytest.raises(exports.RunArchiveError, match="readable AFLite run"):
        exports.load_run_zip(_zip(bad_json), name="'x.zip'")
    bad_rows = dict(files, **{"rows.parquet": b"PAR1garbage"})
    with pytest.raises(exports.RunArchiveError, match="readable AFLite run") as info:
        exports.load_run_zip(_zip(bad_rows), name="'x.zip'")
    assert "/tmp" not in str(info.value)  # no temporary paths in messages
    short = text_run.history.iloc[:-1]
    buf = io.BytesIO()
    short.to_parquet(buf, index=False)
    inconsistent = dict(files, **{"history.parquet": buf.getvalue()})
    with pytest.raises(exports.RunArchiveError, match="inconsistent"):
        exports.load_run_zip(_zip(inconsistent))


def test_a_run_of_another_dataset_is_refused(text_data, text_run, image_data):
    loaded = exports.load_run_zip(exports.run_zip_bytes(text_run))
    with pytest.raises(ValueError, match="120 rows, but the dataset has 60 rows"):
        exports.check_run_matches(loaded, image_data, data_label="the dataset")
    other = dataset_from_table(
        text_data.frame.assign(key=[f"k{i}" for i in range(120)]),
        label_column="label",
        id_column="key",
        features=text_data.representation(),
    )
    with pytest.raises(ValueError, match="row ids"):
        exports.check_run_matches(loaded, other)
    flipped = dataset_from_table(
        text_data.frame.assign(label=text_data.frame["label"].iloc[::-1].to_numpy()),
        label_column="label",
        features=text_data.representation(),
    )
    with pytest.raises(ValueError, match="labels differ"):
        exports.check_run_matches(loaded, flipped)


def test_exports_write_scores_at_the_precision_they_were_computed_with(text_data, text_run):
    """float32 scores are written as float32 (0.7, not 0.699999988079071), in CSV and in Parquet."""
    import dataclasses

    scores = np.full(text_run.n_rows, 0.7, dtype=np.float32)
    scores[1] = np.float32(1 / 3)
    run = dataclasses.replace(text_run, first_score=scores, last_score=scores, removal_score=scores)
    frame = exports.export_frame(run, text_data, "all")
    text = exports.csv_bytes(frame).decode()
    assert ",0.7,0.7,0.7\n" in text and "0.6999" not in text and "0.33333334" in text
    back = pd.read_parquet(io.BytesIO(exports.parquet_bytes(frame)))
    assert back["aflite_first_score"].dtype == np.float32 and back["aflite_first_score"].iloc[0] == np.float32(0.7)
    assert exports.rows_table(run, text_data)["p_first"].dtype == np.float32
