"""Uploads of the Data page: "bytes + column choices -> Dataset or error message", cached by content.

Plain functions, so tests can call them without a file uploader. Parsing goes through aflite_core's loaders,
which never unpickle and raise ValueError with one sentence naming the file and the problem; rows and columns
are counted before anything is parsed, so a huge upload is refused cheaply (:func:`_stores.check_rows`). The
page registers a parsed upload with :func:`aflite_app.state.register_upload`.
"""

from __future__ import annotations

import hashlib
import io
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from aflite_core.datasets import Dataset
from aflite_core.features import tfidf_features
from aflite_core.io import read_table
from aflite_core.preflight import RowLimitError
from aflite_core.tables import load_table_dataset

from . import _stores

__all__ = [
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

#: table files the uploader accepts (aflite_core.io.TABLE_FORMATS)
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


@st.cache_resource(max_entries=2, show_spinner="Reading the table…")
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
    table: bytes, name: str, options: UploadOptions, features: Any = None, features_name: str | None = None
) -> str:
    """The session key of an upload: :func:`upload_key` of the table bytes and every option (features by hash).

    ``features``: the bytes of one .npy file (named by ``features_name``) or a sequence of (file name, bytes).
    """
    files = _feature_files(features, features_name)
    opts = {k: v for k, v in asdict(options).items()}
    opts.update(table_name=name, features=tuple((n, hashlib.sha256(b).hexdigest()) for n, b in files))
    return upload_key(table, opts)


def load_upload(
    table: bytes, name: str, options: UploadOptions, features: Any = None, features_name: str | None = None
) -> UploadOutcome:
    """Bytes of a table (+ optional aligned .npy features) and the column choices -> a Dataset or an error.

    ``features`` is the bytes of one .npy file (named by ``features_name``) or a sequence of (file name, bytes),
    one representation per file (named by :func:`feature_representation_names`). Never raises for bad input: the
    loader's ValueError/TypeError message comes back in ``error`` (missing label column, one class, duplicate ids,
    not UTF-8, malformed JSONL, misaligned or pickled .npy, no features, too many rows …). Cached by
    :func:`upload_options_key` (bounded).
    """
    files = _feature_files(features, features_name)
    key = upload_options_key(table, name, options, files)
    return _load_upload(key, name, options, table, files)


@st.cache_resource(max_entries=4, show_spinner="Building the dataset (TF-IDF features may take a few seconds)…")
def _load_upload(
    key: str, name: str, options: UploadOptions, _table: bytes, _files: tuple[tuple[str, bytes], ...]
) -> UploadOutcome:
    start = time.perf_counter()
    limit = _stores.upload_limit_bytes()
    try:
        frame = upload_table(_table, name)  # fast refusal of huge tables before any feature is built
        del frame
        feats = {}
        for rep, (fname, payload) in zip(feature_representation_names([f for f, _ in _files], name), _files):
            fh = io.BytesIO(payload)
            fh.name = fname
            feats[rep] = fh
        texts = tuple(options.text_columns) + tuple(c for c in (options.pair or ()) if c not in options.text_columns)
        described = [f"label column '{options.label_column}'"]
        if _files:
            described.append("features from " + ", ".join(f"'{f}'" for f, _ in _files))
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
        if data.n_classes < 2:  # pragma: no cover - the loader refuses one class already
            raise ValueError(f"'{name}' has only one class; AFLite needs at least 2.")
        small = data.class_counts()
        small = small[small < 2]
        if len(small):
            raise ValueError(
                f"'{name}' has classes with a single row ({', '.join(map(str, small.index[:5]))}); "
                "AFLite needs at least 2 rows per class. Remove or merge them."
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


def guess_columns(frame) -> dict[str, Any]:
    """Starting choices for an uploaded table: label, id, text columns, pair and numeric feature columns."""
    cols = [str(c) for c in frame.columns]
    lower = {c.lower(): c for c in cols}
    label = next((lower[n] for n in ("label", "labels", "gold_label", "y", "target", "class") if n in lower), cols[-1])
    ident = next((lower[n] for n in ("id", "pairid", "uid", "guid", "example_id") if n in lower), None)
    if ident is not None and frame[ident].duplicated().any():
        ident = None
    texts = []
    for c in cols:
        if c in (label, ident) or pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c]):
            continue
        # ids and label metadata are not text to learn from (SNLI's pair_id even ends in the label's initial)
        if re.search(r"(^|[^a-z])(id|ids|label|labels|gold)($|[^a-z])", c.lower()) or c.lower().endswith("id"):
            continue
        sample = frame[c].dropna().head(200)
        if (
            len(sample) and sample.map(lambda x: isinstance(x, str)).all() and sample.str.split().str.len().mean() >= 3
        ):  # sentences, not codes
            texts.append(c)
    pair = None
    for a, b in (("premise", "hypothesis"), ("sentence1", "sentence2")):
        if a in lower and b in lower:
            pair = (lower[a], lower[b])
            break
    numeric = [
        c
        for c in cols
        if c not in (label, ident)
        and pd.api.types.is_numeric_dtype(frame[c])
        and not pd.api.types.is_bool_dtype(frame[c])
    ]
    return {
        "label": label,
        "id": ident,
        "texts": [t for t in texts if not pair or t not in pair],
        "pair": pair,
        "numeric": numeric,
    }
