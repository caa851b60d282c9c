"""Uploads of the Data page: "bytes + column choices -> Dataset or error message", cached by content.

Plain functions, so tests can call them without a file uploader. Parsing goes through aflite_core's loaders,
which never unpickle and raise ValueError with one sentence naming the file and the problem; rows and columns
are counted before anything is parsed, so a huge upload is refused cheaply (:func:`_stores.check_rows`). The
page registers a parsed upload with :func:`aflite_app.state.register_upload`.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from aflite_core.data.datasets import Dataset
from aflite_core.data.features import tfidf_features
from aflite_core.data.preflight import RowLimitError
from aflite_core.data.readers import read_table
from aflite_core.data.user_tables import _read_npy, guess_id_column, load_table_dataset

from . import _stores
from .datasets import partial_first_last
from .upload_sentences import EmbedSpec, _view_description

__all__ = [
    "FEATURES_FIELD",
    "LABEL_FIELD",
    "UPLOAD_TABLE_TYPES",
    "UploadOptions",
    "UploadOutcome",
    "cli_hint",
    "content_tag",
    "feature_representation_names",
    "guess_columns",
    "load_upload",
    "upload_key",
    "upload_limits",
    "upload_options_key",
    "upload_table",
]

#: how the Data page names its fields, so messages can point at them
LABEL_FIELD = "Label column"
FEATURES_FIELD = "Features (optional .npy files, one row per table row)"

#: table files the uploader accepts (aflite_core.data.readers.TABLE_FORMATS)
UPLOAD_TABLE_TYPES = ("csv", "tsv", "tab", "parquet", "pq", "jsonl", "ndjson")


def upload_limits() -> tuple[int, int]:
    """What an upload may hold: ``(bytes, rows)`` (the server's upload limit and the app's row limit)."""
    return _stores.upload_limit_bytes(), _stores.MAX_INTERACTIVE_ROWS


def content_tag(payload: bytes) -> str:
    """A short digest of a file's bytes: widget keys built with it start afresh for every new file."""
    return hashlib.sha256(payload).hexdigest()[:10]


def upload_key(payload: bytes, options: dict[str, Any]) -> str:
    """Stable key of an upload (content + parsing options)."""
    h = hashlib.sha256(payload)
    h.update(repr(sorted(options.items())).encode())
    return "upload-" + h.hexdigest()[:12]


def cli_hint(name: str = "TABLE.csv", label_column: str = "label") -> str:
    """The command that filters data too large for the app (the CLI reads .npy features and a label file)."""
    return (
        f"python -m aflite_core filter --features FEATURES.npy --labels {name} --label-column {label_column} "
        "--train-size 0.25 --target-size 0.5 --out RUN_DIR"
    )


@dataclass(frozen=True)
class UploadOptions:
    """How to read an uploaded table: which columns are what, which features to build."""

    label_column: str
    id_column: str | None = None
    text_columns: tuple[str, ...] = ()
    pair: tuple[str, str] | None = None  # (premise, hypothesis)
    feature_columns: tuple[str, ...] = ()  # numeric columns used as one representation
    text_features: bool = False  # TF-IDF + SVD of the text columns (and hypothesis-only for a pair)
    partial_columns: tuple[str, ...] = ()  # an extra partial-input TF-IDF view of only these text columns
    n_components: int = 128


@dataclass(frozen=True)
class UploadOutcome:
    """A parsed upload: the Dataset and its session key, or the loader's error message."""

    key: str
    dataset: Dataset | None
    error: str | None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the upload gave a Dataset."""
        return self.dataset is not None


def _row_limit(name: str) -> dict[str, str]:
    """How the row guard words its refusal of the uploaded table ``name``."""
    return {
        "subject": f"'{name}' has",
        "instead": f"Filter it from the command line instead: `{cli_hint(name)}` (features as an aligned .npy file).",
    }


@_stores.memo("read_upload_table", 2, spinner="Reading the table…")
def _read_upload_table(digest: str, name: str, _payload: bytes):
    try:  # rows and columns are counted before anything is parsed: a huge upload is refused cheaply
        return read_table(
            _payload,
            name=name,
            max_bytes=_stores.upload_limit_bytes(),
            max_rows=_stores.MAX_INTERACTIVE_ROWS,
            max_columns=_stores.MAX_UPLOAD_COLUMNS,
        )
    except RowLimitError as exc:
        raise _stores.too_many_rows(exc.n_rows, **_row_limit(name)) from None


def upload_table(payload: bytes, name: str):
    """The uploaded table as a DataFrame (cached by content; treat it as read-only).

    Raises
    ------
    ValueError
        The reader's message (not UTF-8, malformed, empty, unknown extension …), or too many rows for
        interactive use (with the CLI command to use instead).
    """
    frame = _read_upload_table(hashlib.sha256(payload).hexdigest(), name, payload)
    _stores.check_rows(len(frame), **_row_limit(name))
    return frame


def _feature_files(features: Any, features_name: str | None) -> tuple[tuple[str, bytes], ...]:
    """``bytes`` (+ its name) or a sequence of ``(file name, bytes)`` -> a tuple of (file name, bytes)."""
    if features is None:
        return ()
    if isinstance(features, (bytes, bytearray, memoryview)):
        return ((features_name or "features.npy", bytes(features)),)
    return tuple((str(n), bytes(b)) for n, b in features)


def feature_representation_names(file_names: list[str], table_name: str) -> list[str]:
    """A representation name per .npy file: its stem without the table's stem (``snli.hyp.npy`` -> ``hyp``)."""
    table_stem = Path(table_name).stem
    names: list[str] = []
    for fname in file_names:
        stem = Path(fname).name
        stem = stem[:-4] if stem.lower().endswith(".npy") else stem
        if stem.startswith(table_stem + ".") or stem.startswith(table_stem + "_"):
            stem = stem[len(table_stem) + 1 :]
        base = stem or "features"
        candidate, i = base, 2
        while candidate in names:
            candidate, i = f"{base}_{i}", i + 1
        names.append(candidate)
    return names


def upload_options_key(
    table: bytes,
    name: str,
    options: UploadOptions,
    features: Any = None,
    features_name: str | None = None,
    embedded: EmbedSpec | None = None,
) -> str:
    """The session key of an upload: :func:`upload_key` of the table bytes and every option (features by hash).

    ``features``: the bytes of one .npy file (named by ``features_name``) or a sequence of (file name, bytes);
    ``embedded``: the sentence embeddings added (they follow from the spec: table, views and model).
    """
    files = _feature_files(features, features_name)
    opts = {k: v for k, v in asdict(options).items()}
    opts.update(table_name=name, features=tuple((n, hashlib.sha256(b).hexdigest()) for n, b in files))
    if embedded is not None:
        opts["embedded"] = repr(embedded)
    return upload_key(table, opts)


def load_upload(
    table: bytes,
    name: str,
    options: UploadOptions,
    features: Any = None,
    features_name: str | None = None,
    *,
    embedded: tuple[EmbedSpec, Mapping[str, NDArray]] | None = None,
) -> UploadOutcome:
    """Bytes of a table (+ optional aligned .npy features) and the column choices -> a Dataset or an error.

    ``features`` is the bytes of one .npy file (named by ``features_name``) or a sequence of (file name, bytes),
    one representation per file (named by :func:`feature_representation_names`). ``embedded`` adds the
    sentence embeddings computed for the table (:func:`prepare_embedding`: its spec and the matrices by view)
    as representations named after the views. Never raises for bad input: the message comes back in
    ``error``, in the user's words, naming the field to change (missing label column, one class, duplicate ids,
    not UTF-8, malformed JSONL, a file that is not .npy, misaligned, pickled or empty features, no features,
    too many rows …). Cached by :func:`upload_options_key` (bounded).
    """
    files = _feature_files(features, features_name)
    spec = embedded[0] if embedded is not None else None
    key = upload_options_key(table, name, options, files, embedded=spec)
    return _load_upload(key, name, options, table, files, embedded)


def _feature_file_advice(fname: str, fix: str = "upload the features saved with numpy.save instead") -> str:
    return f"Remove '{fname}' from '{FEATURES_FIELD}', or {fix}."


def _read_feature_file(fname: str, payload: bytes, table_name: str, n_rows: int, limit: int) -> NDArray:
    """One uploaded .npy file as a matrix, every problem said in the user's words (file name, field, remedy)."""
    try:
        arr, _ = _read_npy(payload, name=fname, max_bytes=limit)
    except ValueError as exc:  # not a .npy file, pickled objects, too large …: the reader's sentence, plus a remedy
        raise ValueError(f"{str(exc).rstrip()} {_feature_file_advice(fname)}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"Feature file '{fname}' holds an array of shape {arr.shape}; features must be a 2-D array with one row "
            f"per table row and one column per feature. {_feature_file_advice(fname)}"
        )
    if arr.shape[0] != n_rows:
        raise ValueError(
            f"Feature file '{fname}' has {arr.shape[0]:,} rows but '{table_name}' has {n_rows:,}; row i of the "
            f"features must describe row i of the table. {_feature_file_advice(fname)}"
        )
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"Feature file '{fname}' holds {arr.dtype} values, not numbers. {_feature_file_advice(fname)}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr).all(axis=1)
        if bad.all():
            advice = _feature_file_advice(fname, "save features that hold numbers")
            raise ValueError(
                f"Feature file '{fname}' has no usable values: every row holds missing (NaN) or infinite values, "
                f"so AFLite has nothing to filter with. {advice}"
            )
        if bad.any():
            raise ValueError(
                f"Feature file '{fname}' has missing (NaN) or infinite values in {int(bad.sum()):,} of {n_rows:,} "
                f"rows (first: row {int(np.flatnonzero(bad)[0])}); AFLite needs a number in every cell. Fill them "
                "in (e.g. with 0), or remove those rows from both the table and the features."
            )
    return arr


@_stores.memo("load_upload", 4, spinner="Building the dataset (TF-IDF features may take a few seconds)…")
def _load_upload(
    key: str,
    name: str,
    options: UploadOptions,
    _table: bytes,
    _files: tuple[tuple[str, bytes], ...],
    _embedded: tuple[EmbedSpec, Mapping[str, NDArray]] | None = None,
) -> UploadOutcome:
    start = time.perf_counter()
    limit = _stores.upload_limit_bytes()
    try:
        frame = upload_table(_table, name)  # fast refusal of huge tables before any feature is built
        n_rows = len(frame)
        del frame
        feats: dict[str, tuple[NDArray, str]] = {}
        for rep, (fname, payload) in zip(feature_representation_names([f for f, _ in _files], name), _files):
            arr = _read_feature_file(fname, payload, name, n_rows, limit)
            feats[rep] = (arr, f"from {fname} ({arr.shape[1]}-d)")
        if _embedded is not None:
            spec, matrices = _embedded
            for view, cols in spec.views:
                rep = view if view not in feats else f"{view}_minilm"
                feats[rep] = (matrices[view], _view_description(view, cols, matrices[view].shape[1]))
        texts = tuple(options.text_columns) + tuple(c for c in (options.pair or ()) if c not in options.text_columns)
        described = [f"label column '{options.label_column}'"]
        if _files:
            described.append("features from " + ", ".join(f"'{f}'" for f, _ in _files))
        if _embedded is not None:
            described.append("sentence embeddings (all-MiniLM-L6-v2)")
        if options.feature_columns:
            described.append(f"{len(options.feature_columns)} numeric feature columns")
        if texts and options.text_features:
            described.append("TF-IDF of " + ", ".join(f"'{c}'" for c in texts))
        data = load_table_dataset(
            _table,
            name=name,
            label_column=options.label_column,
            features=feats or None,
            max_bytes=limit,
            max_rows=_stores.MAX_INTERACTIVE_ROWS,
            id_column=options.id_column,
            text_columns=list(options.text_columns),
            pair=options.pair,
            feature_columns=list(options.feature_columns) or None,
            text_features=bool(options.text_features) if texts else None,
            n_components=options.n_components,
            description=f"Uploaded table '{name}': " + "; ".join(described) + ".",
        )
        if options.partial_columns:
            X = tfidf_features(
                data.frame,
                columns=list(options.partial_columns),
                n_components=options.n_components,
                random_state=1,
                n_threads=1,
            )
            cols = " + ".join(f"'{c}'" for c in options.partial_columns)
            data = data.with_representation(
                "tfidf_partial", X, f"partial input: TF-IDF + SVD of {cols} alone ({X.shape[1]}-d)"
            )
        data = partial_first_last(data)  # a pair's default view is the whole pair, never the hypothesis alone
        if data.n_classes < 2:  # pragma: no cover - the loader refuses one class already
            raise ValueError(f"'{name}' has only one class; AFLite needs at least 2.")
        small = data.class_counts()
        small = small[small < 2]
        if len(small):
            raise ValueError(
                f"'{name}' has {len(small):,} classes with a single row in '{options.label_column}' "
                f"({', '.join(map(str, small.index[:5]))}{', …' if len(small) > 5 else ''}); AFLite needs at least "
                f"2 rows per class. If '{options.label_column}' is not the label, choose the right one in "
                f"'{LABEL_FIELD}'; otherwise remove or merge those rows."
            )
        return UploadOutcome(key=key, dataset=data, error=None, seconds=time.perf_counter() - start)
    except (ValueError, TypeError, MemoryError) as exc:
        return UploadOutcome(
            key=key, dataset=None, error=str(exc) or type(exc).__name__, seconds=time.perf_counter() - start
        )
    except UnicodeError as exc:  # pragma: no cover - the readers turn decoding errors into ValueError
        return UploadOutcome(
            key=key,
            dataset=None,
            error=f"'{Path(name).name}' is not UTF-8 text: {exc}",
            seconds=time.perf_counter() - start,
        )


# -- column guesses ------------------------------------------------------------------------------------------
#: column names taken as the label, in order of preference (compared ignoring case)
LABEL_NAMES = ("label", "labels", "gold_label", "gold", "y", "target", "class", "category")
#: premise / hypothesis column names of a sentence pair
PAIR_NAMES = (("premise", "hypothesis"), ("sentence1", "sentence2"), ("text_a", "text_b"))


def _is_sentences(series: pd.Series) -> bool:
    sample = series.dropna().head(200)
    return bool(
        len(sample) and sample.map(lambda x: isinstance(x, str)).all() and sample.str.split().str.len().mean() >= 3
    )


def _could_be_label(series: pd.Series) -> bool:
    """A column a person would call the label: a few values, each shared by several rows; not sentences."""
    values = series.dropna()
    if len(values) < 2 or len(values) < len(series):
        return False
    if pd.api.types.is_float_dtype(values) and not np.all(np.mod(values.to_numpy(dtype=float), 1) == 0):
        return False  # measurements, not classes
    n_unique = values.nunique()
    return 2 <= n_unique <= min(100, len(series) // 2) and not _is_sentences(values)


def guess_columns(frame) -> dict[str, Any]:
    """Starting choices for an uploaded table: label, id, text columns, pair and numeric feature columns.

    ``label`` is None when no column looks like a label (none is named like one, and none has a few values
    each shared by several rows): the page then asks instead of guessing. ``id`` is the first column named like
    an id (:data:`aflite_core.data.user_tables.ID_COLUMN_NAMES`) with a unique value in every row; ``id_refused`` says
    why each other id-like column cannot be used (empty cells, repeats).
    """
    cols = [str(c) for c in frame.columns]
    lower = {c.lower(): c for c in cols}
    ident, refused = guess_id_column(frame)
    id_like = {ident, *refused}
    label = next((lower[n] for n in LABEL_NAMES if n in lower), None)
    if label is None:
        plausible = [c for c in cols if c not in id_like and _could_be_label(frame[c])]
        label = plausible[-1] if plausible else None  # the label usually comes last
    texts = []
    for c in cols:
        if c in (label, *id_like) or pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c]):
            continue
        # ids and label metadata are not text to learn from (SNLI's pair_id even ends in the label's initial)
        if re.search(r"(^|[^a-z])(id|ids|label|labels|gold)($|[^a-z])", c.lower()) or c.lower().endswith("id"):
            continue
        if _is_sentences(frame[c]):  # sentences, not codes
            texts.append(c)
    pair = None
    for a, b in PAIR_NAMES:
        if a in lower and b in lower and label not in (lower[a], lower[b]):
            pair = (lower[a], lower[b])
            break
    numeric = [
        c
        for c in cols
        if c not in (label, *id_like)
        and pd.api.types.is_numeric_dtype(frame[c])
        and not pd.api.types.is_bool_dtype(frame[c])
    ]
    return {
        "label": label,
        "id": ident,
        "id_refused": refused,
        "texts": [t for t in texts if not pair or t not in pair],
        "pair": pair,
        "numeric": numeric,
    }
