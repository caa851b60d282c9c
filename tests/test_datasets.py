"""Dataset layer: bundled digits, user tables (CSV/TSV/Parquet/JSONL + .npy), NLI normalisation, errors."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
import string
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aflite_core.data.datasets import Dataset
from aflite_core.data.digits import DIGITS_REPRESENTATIONS, build_digits_arrays, load_digits_dataset
from aflite_core.data.nli import (
    NLI_LABELS,
    fetch_nli_records,
    load_nli_dataset,
    nli_dataset_from_records,
    normalize_nli_frame,
)
from aflite_core.data.readers import read_table
from aflite_core.data.user_tables import dataset_from_table, load_table_dataset

DIGITS_DIR = Path(__file__).resolve().parents[1] / "sample_data" / "digits"


# ---------------------------------------------------------------------------------------------------------------
# digits
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits() -> Dataset:
    return load_digits_dataset()


def test_digits_loads_offline_from_the_shipped_arrays(digits):
    assert digits.meta["source"] == "shipped", digits.meta["recompute_reason"]
    assert digits.n_rows == 1438 and digits.n_classes == 10
    assert digits.classes == tuple(range(10))
    assert digits.representation_names == ("mlp", "mlp_small", "pca", "pixels")
    dims = {k: digits.representation(k).shape for k in digits.representation_names}
    assert dims == {"mlp": (1438, 64), "mlp_small": (1438, 8), "pca": (1438, 16), "pixels": (1438, 64)}
    for k in digits.representation_names:
        X = digits.representation(k)
        assert X.dtype == np.float32 and X.flags.c_contiguous and np.isfinite(X).all()
        assert digits.representation_descriptions[k] == DIGITS_REPRESENTATIONS[k]
    assert digits.default_representation == "mlp"
    assert digits.images.shape == (1438, 8, 8)
    assert list(digits.frame.columns[:3]) == ["id", "label", "pixel_0_0"] and digits.frame.shape == (1438, 66)


def test_digits_shipped_load_is_fast():
    load_digits_dataset()  # warm the imports
    t0 = time.perf_counter()
    ds = load_digits_dataset()
    assert ds.meta["source"] == "shipped"
    assert time.perf_counter() - t0 < 1.0  # ~0.05 s here; loose for busy CI machines


def test_warmup_rows_never_enter_the_filtering_set(digits):
    from sklearn.datasets import load_digits

    warm = np.asarray(digits.meta["warmup_indices"])
    assert len(warm) == digits.meta["n_warmup"] == 359
    assert not set(digits.ids.tolist()) & set(warm.tolist())
    assert sorted(digits.ids.tolist() + warm.tolist()) == list(range(1797))
    assert np.all(np.diff(digits.ids) > 0)
    # rows trace back to scikit-learn's dataset by id
    bunch = load_digits()
    assert np.array_equal(digits.y, bunch.target[digits.ids])
    assert np.array_equal(digits.frame["id"].to_numpy(), digits.ids)
    assert np.array_equal(digits.images, bunch.images[digits.ids].astype(np.uint8))
    assert np.allclose(digits.representation("pixels"), bunch.data[digits.ids] / 16)
    # the warm-up split is stratified: ~20 % of every class
    per_class = np.bincount(bunch.target[warm], minlength=10) / np.bincount(bunch.target, minlength=10)
    assert np.all(np.abs(per_class - 0.2) < 0.02)


def test_shipped_arrays_match_a_recompute(digits):
    fresh = build_digits_arrays()
    assert np.array_equal(fresh["ids"], digits.ids)
    assert np.array_equal(fresh["warmup_indices"], digits.meta["warmup_indices"])
    for k in ("mlp", "mlp_small", "pca"):
        np.testing.assert_allclose(fresh[k], digits.representation(k), atol=1e-4, rtol=0)
    manifest = json.loads((DIGITS_DIR / "manifest.json").read_text())
    assert manifest["recipe"] == fresh["recipe"] and manifest["digits_sha256"] == fresh["digits_sha256"]
    assert set(manifest["files"]) == {"ids.npy", "warmup_indices.npy", "mlp.npy", "mlp_small.npy", "pca.npy"}


def test_digits_recomputes_when_a_file_is_corrupted_or_missing(tmp_path, digits):
    folder = tmp_path / "digits"
    shutil.copytree(DIGITS_DIR, folder)
    arr = np.load(folder / "mlp.npy")
    arr[0, 0] += 1
    np.save(folder / "mlp.npy", arr)
    t0 = time.perf_counter()
    ds = load_digits_dataset(data_dir=folder)
    assert time.perf_counter() - t0 < 10  # ~0.2-1.5 s; loose for busy machines
    assert ds.meta["source"] == "recomputed" and "sha256" in ds.meta["recompute_reason"]
    np.testing.assert_allclose(ds.representation("mlp"), digits.representation("mlp"), atol=1e-4)
    (folder / "pca.npy").unlink()
    assert load_digits_dataset(data_dir=folder).meta["recompute_reason"].startswith("mlp.npy")  # checked in order
    ds = load_digits_dataset(data_dir=tmp_path / "nowhere")
    assert ds.meta["source"] == "recomputed" and "no manifest" in ds.meta["recompute_reason"]
    assert np.array_equal(ds.ids, digits.ids)


def test_digits_other_recipe_is_recomputed_and_deterministic():
    a = load_digits_dataset(warmup_fraction=0.3, random_state=1)
    b = load_digits_dataset(warmup_fraction=0.3, random_state=1)
    assert a.meta["source"] == "recomputed" and a.n_rows == 1797 - len(a.meta["warmup_indices"])
    assert abs(len(a.meta["warmup_indices"]) - 0.3 * 1797) < 1
    for k in a.representation_names:
        assert np.array_equal(a.representation(k), b.representation(k))


@pytest.mark.parametrize("bad", [0.0, 1.0, 1, "0.2"])
def test_digits_rejects_bad_warmup_fraction(bad):
    with pytest.raises((ValueError, TypeError), match="'warmup_fraction' parameter of load_digits_dataset"):
        load_digits_dataset(warmup_fraction=bad)


def test_digits_warmup_representations_are_real_adversaries(digits):
    """The bigger warm-up MLP is the stronger adversary (5-fold logistic regression on the kept rows)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    acc = {
        k: cross_val_score(LogisticRegression(max_iter=2000), digits.representation(k), digits.y, cv=cv).mean()
        for k in ("mlp", "mlp_small")
    }
    assert acc["mlp"] > 0.93 and 0.8 < acc["mlp_small"] < acc["mlp"] - 0.03


# ---------------------------------------------------------------------------------------------------------------
# the Dataset object
# ---------------------------------------------------------------------------------------------------------------


def test_dataset_representation_error_lists_available_names(digits):
    with pytest.raises(ValueError, match=r"has no representation 'bert'; available: 'mlp' \(warm-up MLP"):
        digits.representation("bert")


def test_dataset_subset_keeps_alignment_and_classes(digits):
    mask = digits.y < 3
    sub = digits.subset(mask)
    assert sub.n_rows == int(mask.sum()) and sub.classes == digits.classes
    assert np.array_equal(sub.ids, digits.ids[mask])
    assert np.array_equal(sub.frame["id"].to_numpy(), sub.ids)
    assert np.array_equal(sub.representation("pca"), digits.representation("pca")[mask])
    assert sub.images.shape == (sub.n_rows, 8, 8)
    assert sub.meta["parent"] == {"name": "digits", "n_rows": 1438}
    assert sub.meta["warmup_indices"] == digits.meta["warmup_indices"]
    rows = np.array([5, 0, 7])
    assert np.array_equal(digits.subset(rows).ids, digits.ids[rows])
    assert sub.class_counts().index.tolist() == list(range(10))


@pytest.mark.parametrize(
    "rows, match",
    [
        (np.ones(3, dtype=bool), "boolean mask of 1438 rows"),
        (np.array([0, 5000]), r"positions in \[0, 1438\)"),
        (np.array([0.5]), "boolean mask or integer positions"),
    ],
)
def test_dataset_subset_rejects_bad_rows(digits, rows, match):
    with pytest.raises((ValueError, TypeError), match=match):
        digits.subset(rows)


def test_dataset_is_immutable_and_picklable(digits):
    import pickle  # only to check Streamlit's st.cache_data can store a Dataset; no file is ever pickled

    with pytest.raises(dataclasses.FrozenInstanceError):
        digits.name = "x"
    with pytest.raises(ValueError, match="read-only"):
        digits.representation("mlp")[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        digits.y[0] = 1
    clone = pickle.loads(pickle.dumps(digits))
    assert np.array_equal(clone.representation("mlp"), digits.representation("mlp"))


def test_dataset_with_representation_and_summary(digits):
    extra = digits.with_representation("noise", np.zeros((digits.n_rows, 3)), "all zeros (3-d)")
    assert extra.representation_names[-1] == "noise" and extra.representation("noise").dtype == np.float32
    assert "noise" not in digits.representations
    s = extra.summary()
    assert s["representations"]["noise"] == 3 and s["n_rows"] == 1438 and s["has_images"]
    json.dumps(s)
    assert repr(digits).startswith("Dataset(name='digits', n_rows=1438")
    assert list(digits.labels[:3]) == [digits.classes[c] for c in digits.y[:3]]


def test_dataset_rejects_misaligned_representation(digits):
    with pytest.raises(ValueError, match=r"representations\['bad'\].* must have 1438 rows"):
        digits.with_representation("bad", np.zeros((10, 2)))
    with pytest.raises(ValueError, match="must contain only finite values"):
        digits.with_representation("bad", np.full((digits.n_rows, 2), np.nan))


# ---------------------------------------------------------------------------------------------------------------
# user tables
# ---------------------------------------------------------------------------------------------------------------

FRAME = pd.DataFrame(
    {
        "uid": ["a1", "a2", "a3", "a4", "a5", "a6"],
        "text": ["a good film", "NA", "a dull film", "None", "great acting", "bad plot, bad acting"],
        "x1": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        "x2": [1, 0, 1, 0, 1, 0],
        "label": ["pos", "neg", "neg", "pos", "pos", "neg"],
    }
)
X6 = np.arange(6 * 4, dtype=np.float32).reshape(6, 4)


def _encode(frame: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "csv":
        return frame.to_csv(index=False).encode()
    if fmt == "tsv":
        return frame.to_csv(index=False, sep="\t").encode()
    if fmt == "jsonl":
        return frame.to_json(orient="records", lines=True, force_ascii=False).encode()
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=arr.dtype == object)
    return buf.getvalue()


class _NamedIO(io.BytesIO):
    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name


class Upload(io.BytesIO):
    """Like Streamlit's UploadedFile: a BytesIO with a name and a size."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name
        self.size = len(data)


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "jsonl"])
@pytest.mark.parametrize("how", ["path", "upload", "bytes"])
def test_table_loaders_accept_every_format(tmp_path, fmt, how):
    data = _encode(FRAME, fmt)
    name = f"films.{fmt}"
    if how == "path":
        (tmp_path / name).write_bytes(data)
        (tmp_path / "x.npy").write_bytes(_npy(X6))
        source, feats, kw = tmp_path / name, tmp_path / "x.npy", {}
    elif how == "upload":
        source, feats, kw = Upload(data, name), Upload(_npy(X6), "x.npy"), {}
    else:
        source, feats, kw = data, io.BytesIO(_npy(X6)), {"name": name}
    ds = load_table_dataset(source, label_column="label", id_column="uid", text_columns=["text"], features=feats, **kw)
    assert ds.n_rows == 6 and ds.classes == ("neg", "pos") and ds.y.tolist() == [1, 0, 0, 1, 1, 0]
    assert ds.ids.tolist() == FRAME["uid"].tolist() and ds.id_column == "uid"
    assert list(ds.frame.columns) == list(FRAME.columns)  # every original column is kept
    assert ds.frame["text"].tolist()[1:4:2] == ["NA", "None"]  # stays text, not missing
    assert ds.representation_names == ("features",) and np.array_equal(ds.representation(), X6)
    assert ds.text_columns == ("text",) and ds.name == "films" and ds.meta["source"] == name


def test_table_features_from_several_npy_and_numeric_columns(tmp_path):
    (tmp_path / "t.csv").write_bytes(_encode(FRAME, "csv"))
    np.save(tmp_path / "a.npy", X6)
    np.save(tmp_path / "b.npy", X6[:, :2].astype(np.float64))
    ds = load_table_dataset(
        tmp_path / "t.csv",
        label_column="label",
        features={"a": tmp_path / "a.npy", "b": (tmp_path / "b.npy", "my B")},
        feature_columns=["x1", "x2"],
    )
    assert ds.representation_names == ("a", "b", "columns")
    assert ds.representation_descriptions["a"] == "from a.npy (4-d)" and ds.representation_descriptions["b"] == "my B"
    assert ds.representation("b").dtype == np.float32
    assert np.allclose(ds.representation("columns"), FRAME[["x1", "x2"]].to_numpy())
    assert ds.ids.tolist() == list(range(6)) and ds.id_column is None
    assert ds.meta["feature_files"] == {"a": "a.npy", "b": "b.npy"}


def test_table_text_features_are_computed_when_no_features_are_given():
    ds = dataset_from_table(FRAME, label_column="label", text_columns=["text"])
    assert ds.representation_names == ("tfidf",) and ds.representation("tfidf").shape[0] == 6
    ds2 = dataset_from_table(FRAME, label_column="label", text_columns=["text"], features=X6, text_features=True)
    assert ds2.representation_names == ("features", "tfidf")


def test_table_labels_keep_their_type_and_ints_sort_numerically():
    frame = pd.DataFrame({"label": [10, 2, 2, 10, 1], "t": list("abcde")})
    ds = dataset_from_table(frame, label_column="label", features=np.eye(5))
    assert ds.classes == (1, 2, 10) and ds.y.tolist() == [2, 1, 1, 2, 0]


def test_table_image_column(tmp_path):
    frame = pd.DataFrame({"label": [0, 1, 0], "img": [[0, 1, 2, 3], [4, 5, 6, 7], [1, 1, 1, 1]]})
    (tmp_path / "im.jsonl").write_bytes(_encode(frame, "jsonl"))
    ds = load_table_dataset(tmp_path / "im.jsonl", label_column="label", image_column="img", features=np.eye(3))
    assert ds.images.shape == (3, 2, 2) and ds.images[1, 1, 0] == 6
    csv = frame.assign(img=["0 1 2 3", "4 5 6 7", "1 1 1 1"])
    ds = dataset_from_table(csv, label_column="label", image_column="img", image_shape=(1, 4), features=np.eye(3))
    assert ds.images.shape == (3, 1, 4)
    with pytest.raises(ValueError, match="not square; give image_shape"):
        dataset_from_table(
            frame.assign(img=[[1, 2, 3]] * 3), label_column="label", image_column="img", features=np.eye(3)
        )


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


BAD_TABLES = [
    ("empty.csv", b"", {}, r"'empty.csv' is empty"),
    ("blank.jsonl", b"\n  \n", {}, r"'blank.jsonl' is empty"),
    ("header.csv", b"text,label\n", {}, r"'header.csv' has no rows"),
    (
        "latin1.csv",
        "text,label\ncaf\xe9,1\nthé,0\n".encode("latin-1"),
        {},
        r"'latin1.csv' is not UTF-8 text \(byte 14 cannot be decoded\)",
    ),
    (
        "bad.jsonl",
        b'{"text": "a", "label": 1}\n{"text": "b", "label": 0}\n{"text": "c", label: 1}\n',
        {},
        r"'bad.jsonl' is not valid JSON Lines: line 3 is not valid JSON",
    ),
    ("list.jsonl", b'{"text": "a", "label": 1}\n\n[1, 2]\n', {}, r"line 3 holds a JSON list, not an object"),
    ("ragged.csv", b"text,label\na,1\nb,0,7,8\n", {}, r"'ragged.csv' is not a readable CSV file"),
    ("fake.parquet", b"not parquet at all", {}, r"'fake.parquet' is not a Parquet file"),
    ("table.xlsx", b"whatever", {}, r"Table file 'table.xlsx' must be .csv, .tsv, .parquet or .jsonl; got '.xlsx'"),
    (
        "nolabel.csv",
        b"text,gold\na,1\nb,0\n",
        {},
        r"'nolabel.csv' has no label column 'label'; its columns are \['text', 'gold'\]\. Choose the label column\.",
    ),
    (
        "missing.csv",
        b"text,label\na,1\nb,\nc,0\n",
        {},
        r"'missing.csv' has no label in 1 row\(s\) of column 'label' \(first: row 1",
    ),
    ("one.csv", b"text,label\na,x\nb,x\n", {}, r"'one.csv' has only one class in column 'label' \('x'\)"),
    (
        "dup.csv",
        b"id,text,label\n1,a,x\n2,b,y\n1,c,x\n",
        {"id_column": "id"},
        r"'dup.csv' has duplicate ids in column 'id' \(first: 1 in rows 0 and 2\)",
    ),
    ("noid.csv", b"text,label\na,x\nb,y\n", {"id_column": "uid"}, r"'noid.csv' has no id column 'uid'; its columns"),
    ("notext.csv", b"text,label\na,x\nb,y\n", {"text_columns": ["body"]}, r"'notext.csv' has no text column 'body'"),
    (
        "nofeat.csv",
        b"n,label\n1,x\n2,y\n",
        {},
        r"'nofeat.csv' gives no features: add an aligned .npy feature file, .* \(numeric columns here: \['n'\]\)",
    ),
    ("listlabel.jsonl", b'{"label": [1, 2]}\n{"label": [3]}\n', {}, r"has a list as the label in row 0"),
]


@pytest.mark.parametrize("name, data, kw, match", BAD_TABLES, ids=[b[0] for b in BAD_TABLES])
def test_table_loaders_reject_bad_files_with_a_clear_message(tmp_path, name, data, kw, match):
    with pytest.raises(ValueError, match=match):
        load_table_dataset(_write(tmp_path, name, data), label_column="label", **kw)
    with pytest.raises(ValueError, match=match):  # the same message for an upload
        load_table_dataset(Upload(data, name), label_column="label", **kw)


def test_table_file_missing(tmp_path):
    with pytest.raises(ValueError, match=r"Table file '.*nothere.csv' does not exist"):
        read_table(tmp_path / "nothere.csv")


def test_table_and_features_too_large(tmp_path):
    data = _encode(FRAME, "csv")
    path = _write(tmp_path, "t.csv", data)
    n = len(data)
    sized = f"'t.csv' is {n} bytes, more"
    for source, shown in (
        (path, sized),
        (Upload(data, "t.csv"), sized),
        (data, sized),
        (io.BufferedReader(io.BytesIO(data)), "'t.csv' is more"),
    ):
        with pytest.raises(ValueError, match=rf"{shown} than the {n - 1} bytes allowed here; use the command line"):
            read_table(source, name="t.csv", max_bytes=n - 1)
    assert len(read_table(path, max_bytes=n)) == 6
    big = np.zeros((6, 400), dtype=np.float32)
    np.save(tmp_path / "x.npy", big)
    for feats in (tmp_path / "x.npy", Upload(_npy(big), "x.npy"), io.BufferedReader(_NamedIO(_npy(big), "x.npy"))):
        with pytest.raises(ValueError, match=r"'x.npy' is (9.5 KB, )?more than the 1.0 KB allowed here"):
            load_table_dataset(path, label_column="label", features=feats, max_bytes=1024)


def test_npy_features_misaligned_object_dtype_or_not_2d(tmp_path):
    path = _write(tmp_path, "t.jsonl", _encode(FRAME, "jsonl"))
    with pytest.raises(
        ValueError,
        match=r"Feature file 'short.npy' has 5 rows but 't.jsonl' has 6; row i of the "
        r"features must describe row i of the table",
    ):
        load_table_dataset(path, label_column="label", features=Upload(_npy(X6[:5]), "short.npy"))
    obj = np.empty((6, 2), dtype=object)
    obj[:] = "x"
    with pytest.raises(ValueError, match=r"Feature file 'obj.npy' holds Python objects \(object dtype\)"):
        load_table_dataset(path, label_column="label", features=Upload(_npy(obj), "obj.npy"))
    np.save(tmp_path / "obj.npy", obj, allow_pickle=True)
    with pytest.raises(ValueError, match=r"holds Python objects"):
        load_table_dataset(path, label_column="label", features=tmp_path / "obj.npy")
    with pytest.raises(ValueError, match=r"must hold a 2-D array"):
        load_table_dataset(path, label_column="label", features=Upload(_npy(np.zeros(6)), "flat.npy"))
    with pytest.raises(ValueError, match=r"Features 'features' have 4 rows but 'table' has 6"):
        dataset_from_table(FRAME, label_column="label", features=np.zeros((4, 2)))


def test_jsonl_keeps_unicode_line_separators_inside_strings():
    data = '{"text": "one\u2028two", "label": 1}\n{"text": "x", "label": 0}\n'.encode()
    assert read_table(data, name="u.jsonl")["text"].tolist() == ["one\u2028two", "x"]


TEXT = st.text(alphabet=string.ascii_letters + " ,;:'\"\t\\éü€😀\u2028", min_size=1, max_size=12).filter(
    lambda s: any(c.isalpha() for c in s)
)


@given(
    st.lists(st.tuples(TEXT, st.sampled_from(["a", "b", 3])), min_size=2, max_size=12),
    st.sampled_from(["csv", "tsv", "jsonl", "parquet"]),
)
def test_table_round_trip_keeps_text_and_labels(rows, fmt):
    frame = pd.DataFrame(rows, columns=["text", "label"]).astype({"label": str})
    back = read_table(_encode(frame, fmt), name=f"t.{fmt}")
    assert back["text"].tolist() == frame["text"].tolist()
    assert [str(x) for x in back["label"].tolist()] == frame["label"].tolist()


# ---------------------------------------------------------------------------------------------------------------
# NLI
# ---------------------------------------------------------------------------------------------------------------

SNLI_ORIGINAL = [  # the layout of snli_1.0_dev.jsonl (fields abridged, texts made up)
    {
        "annotator_labels": ["neutral", "neutral", "entailment"],
        "captionID": "c1",
        "gold_label": "neutral",
        "pairID": "p1n",
        "sentence1": "A man plays a guitar on stage.",
        "sentence1_parse": "(ROOT ...)",
        "sentence2": "The man is famous.",
        "sentence2_parse": "(ROOT ...)",
    },
    {
        "annotator_labels": ["contradiction"],
        "captionID": "c1",
        "gold_label": "contradiction",
        "pairID": "p1c",
        "sentence1": "A man plays a guitar on stage.",
        "sentence1_parse": "(ROOT ...)",
        "sentence2": "Nobody is playing music.",
        "sentence2_parse": "(ROOT ...)",
    },
    {
        "annotator_labels": ["neutral", "entailment", "contradiction"],
        "captionID": "c2",
        "gold_label": "-",
        "pairID": "p2x",
        "sentence1": "Two dogs run.",
        "sentence1_parse": "(ROOT ...)",
        "sentence2": "Pets outside.",
        "sentence2_parse": "(ROOT ...)",
    },
    {
        "annotator_labels": ["entailment"],
        "captionID": "c2",
        "gold_label": "entailment",
        "pairID": "p2e",
        "sentence1": "Two dogs run.",
        "sentence1_parse": "(ROOT ...)",
        "sentence2": "Animals are moving.",
        "sentence2_parse": "(ROOT ...)",
    },
    {
        "annotator_labels": ["contradiction"],
        "captionID": "c2",
        "gold_label": "contradiction",
        "pairID": "p2c",
        "sentence1": "Two dogs run.",
        "sentence1_parse": "(ROOT ...)",
        "sentence2": "No dog is running.",
        "sentence2_parse": "(ROOT ...)",
    },
    {
        "annotator_labels": ["entailment"],
        "captionID": "c3",
        "gold_label": "entailment",
        "pairID": "p3e",
        "sentence1": "A woman reads a book in a park.",
        "sentence1_parse": "(ROOT ...)",
        "sentence2": "A woman is reading.",
        "sentence2_parse": "(ROOT ...)",
    },
]


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_nli_original_snli_format_loads_offline(tmp_path):
    path = _write(tmp_path, "snli_1.0_dev.jsonl", _jsonl(SNLI_ORIGINAL))
    ds = load_nli_dataset(path, n_components=4)
    assert ds.n_rows == 5 and ds.meta["n_dropped_no_gold_label"] == 1
    assert ds.classes == NLI_LABELS  # canonical order, not alphabetical
    assert ds.labels.tolist() == ["neutral", "contradiction", "entailment", "contradiction", "entailment"]
    assert ds.ids.tolist() == ["p1n", "p1c", "p2e", "p2c", "p3e"]
    assert list(ds.frame.columns[:4]) == ["id", "premise", "hypothesis", "label"]
    assert "pairID" in ds.frame.columns and "annotator_labels" in ds.frame.columns
    assert not any(c.endswith("_parse") for c in ds.frame.columns)
    assert ds.pair == ("premise", "hypothesis") and ds.text_columns == ("premise", "hypothesis")
    assert ds.representation_names == ("tfidf", "tfidf_hypothesis")
    assert "partial input" in ds.representation_descriptions["tfidf_hypothesis"]
    assert ds.name == "snli_1.0_dev" and ds.meta["source"] == "snli_1.0_dev.jsonl"


def test_nli_hugging_face_layout_and_sampling():
    hf = pd.DataFrame(
        {"premise": ["p"] * 8, "hypothesis": [f"h {i}" for i in range(8)], "label": [0, 1, 2, -1, 2, 1, 0, 2]}
    )
    ds = nli_dataset_from_records(hf, name="snli", split="validation", features=None, n_components=3)
    assert ds.n_rows == 7 and ds.ids.tolist()[:3] == ["snli-validation-0", "snli-validation-1", "snli-validation-2"]
    assert ds.ids.tolist()[3] == "snli-validation-4"  # the position before dropping the no-gold row
    assert ds.labels.tolist()[:3] == ["entailment", "neutral", "contradiction"]
    a = nli_dataset_from_records(hf, name="snli", max_rows=4, random_state=3, n_components=3)
    b = nli_dataset_from_records(hf.to_dict("records"), name="snli", max_rows=4, random_state=3, n_components=3)
    assert a.n_rows == 4 and a.ids.tolist() == b.ids.tolist()
    assert a.ids.tolist() == sorted(a.ids.tolist(), key=lambda s: int(s.split("-")[-1]))  # original order kept


def test_nli_features_align_after_dropping():
    rows = pd.DataFrame(SNLI_ORIGINAL)
    E = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    ds = nli_dataset_from_records(rows, name="x", features={"emb": E})
    assert ds.representation_names == ("emb",) and np.array_equal(ds.representation("emb"), E)


@pytest.mark.parametrize(
    "frame, match",
    [
        (
            pd.DataFrame({"s1": ["a"], "hypothesis": ["b"], "label": [0]}),
            r"is not NLI data: it has no 'premise' or "
            r"'sentence1' column",
        ),
        (
            pd.DataFrame({"premise": ["a"], "hypothesis": ["b"], "label": ["maybe"]}),
            r"unknown NLI label 'maybe' in row 0",
        ),
        (pd.DataFrame({"premise": ["a"], "hypothesis": ["b"], "label": [7]}), r"unknown NLI label 7 in row 0"),
    ],
)
def test_nli_normaliser_rejects_bad_rows(frame, match):
    with pytest.raises(ValueError, match=match):
        normalize_nli_frame(frame, source="x.jsonl")


def test_nli_fetch_without_datasets_library_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r"needs the optional 'datasets' package: pip install datasets"):
        fetch_nli_records("snli")
    with pytest.raises(ImportError, match="pip install datasets"):
        load_nli_dataset("SNLI")


def test_nli_fetch_errors_become_one_clear_message(monkeypatch):
    class FakeDatasets:
        @staticmethod
        def load_dataset(name, split):
            raise ConnectionError("no network")

    monkeypatch.setitem(sys.modules, "datasets", FakeDatasets)
    with pytest.raises(ValueError, match=r"Could not fetch mnli \(nyu-mll/multi_nli, split 'validation_matched'\)"):
        fetch_nli_records("mnli", "validation")


def test_nli_fetch_goes_through_the_same_normaliser(monkeypatch):
    class Table:
        def to_pandas(self):
            return pd.DataFrame({"premise": ["a b", "c d", "e f"], "hypothesis": ["x", "y", "z"], "label": [0, 2, 1]})

    class FakeDatasets:
        @staticmethod
        def load_dataset(name, split):
            assert (name, split) == ("stanfordnlp/snli", "test")
            return Table()

    monkeypatch.setitem(sys.modules, "datasets", FakeDatasets)
    ds = load_nli_dataset("snli", split="test", n_components=2)
    assert ds.labels.tolist() == ["entailment", "contradiction", "neutral"] and ds.meta["split"] == "test"


def test_nli_unknown_name_or_missing_file():
    with pytest.raises(
        ValueError,
        match=r"'nope' is neither a known NLI dataset name \(mnli, multi_nli, multinli, "
        r"snli\) nor an existing file",
    ):
        load_nli_dataset("nope")


# ---------------------------------------------------------------------------------------------------------------
# the shared NLI samples, through the generic table + .npy path
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_shared_snli_sample_through_the_generic_path(shared_data):
    jsonl = shared_data / "snli_sample.jsonl"
    npy = shared_data / "snli_sample.hyp_minilm.npy"
    ds = load_table_dataset(
        jsonl, label_column="label", id_column="id", pair=("premise", "hypothesis"), features={"minilm_hyp": npy}
    )
    lines = jsonl.read_text(encoding="utf-8").splitlines()
    E = np.load(npy, allow_pickle=False)
    assert ds.n_rows == len(lines) == E.shape[0] == 6891
    assert ds.representation("minilm_hyp").shape == (6891, 384)
    assert ds.classes == ("contradiction", "entailment", "neutral")  # generic path: sorted class names
    assert ds.class_counts().to_dict() == {"contradiction": 2298, "entailment": 2327, "neutral": 2266}
    rng = np.random.default_rng(0)
    for i in rng.choice(len(lines), size=25, replace=False):
        row = json.loads(lines[i])  # row i of the npy <-> line i of the jsonl
        assert ds.ids[i] == row["id"] and ds.frame.at[i, "hypothesis"] == row["hypothesis"]
        assert ds.labels[i] == row["label"]
        assert np.array_equal(ds.representation("minilm_hyp")[i], E[i])
    norms = np.linalg.norm(ds.representation("minilm_hyp"), axis=1)
    assert np.allclose(norms, 1, atol=1e-4)
    mis = shared_data / "mnli_sample.hyp_minilm.npy"
    with pytest.raises(
        ValueError,
        match=r"Feature file 'mnli_sample.hyp_minilm.npy' has 3000 rows but "
        r"'snli_sample.jsonl' has 6891",
    ):
        load_table_dataset(jsonl, label_column="label", features=mis)


def test_nli_ids_come_from_the_one_id_list_and_skip_unusable_columns():
    frame = pd.DataFrame(
        {
            "sentence1": ["A man sleeps.", "A dog runs.", "Kids play."],
            "sentence2": ["Nobody sleeps.", "An animal moves.", "Kids are outside."],
            "gold_label": ["contradiction", "entailment", "neutral"],
            "id": ["a", None, "c"],  # not usable: the next id-like column is
            "guid": ["g0", "g1", "g2"],
        }
    )
    assert normalize_nli_frame(frame)["id"].tolist() == ["g0", "g1", "g2"]
    assert normalize_nli_frame(frame.drop(columns="guid"), id_prefix="x")["id"].tolist() == ["x-0", "x-1", "x-2"]
