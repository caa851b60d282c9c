"""Uploads of the Data page: "bytes + column choices -> Dataset or error message", cached by content.

Plain functions, so tests can call them without a file uploader. Parsing goes through aflite_core's loaders,
which never unpickle and raise ValueError with one sentence naming the file and the problem; rows and columns
are counted before anything is parsed, so a huge upload is refused cheaply (:func:`_stores.check_rows`). The
page registers a parsed upload with :func:`aflite_app.state.register_upload`.
"""

from __future__ import annotations

import gc
import hashlib
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from aflite_core.data import embeddings as _embeddings
from aflite_core.data.datasets import Dataset
from aflite_core.data.embeddings import load_sentence_model
from aflite_core.data.features import _texts_of, tfidf_features
from aflite_core.data.preflight import RowLimitError
from aflite_core.data.readers import read_table
from aflite_core.data.user_tables import _read_npy, guess_id_column, load_table_dataset

from .. import settings
from ..jobs import Outcome, as_outcome, heavy, shared_jobs, stoppable
from . import _stores

__all__ = [
    "FEATURES_FIELD",
    "LABEL_FIELD",
    "UPLOAD_TABLE_TYPES",
    "EmbedSpec",
    "UploadOptions",
    "UploadOutcome",
    "cli_hint",
    "content_tag",
    "describe_embedding",
    "embedding_outlook",
    "embedding_spec",
    "embedding_views",
    "embeddings_status",
    "feature_representation_names",
    "guess_columns",
    "load_upload",
    "prepare_embedding",
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


# -- sentence embeddings of an upload ---------------------------------------------------------------------------
def embeddings_status() -> _embeddings.EmbeddingsStatus:
    """Whether the optional embeddings extra is installed, and the install command (looked up, not imported)."""
    return _embeddings.embeddings_status()


def embedding_views(pair: tuple[str, str] | None, text_columns: tuple[str, ...] | list[str]) -> dict[str, tuple]:
    """The views to embed: for a sentence pair the full pair and the hypothesis alone, else the text columns."""
    if pair:
        return {"embedding": (pair[0], pair[1]), "embedding_hypothesis": (pair[1],)}
    if text_columns:
        return {"embedding": tuple(text_columns)}
    return {}


def _view_description(view: str, cols: tuple[str, ...], dim: int) -> str:
    joined = " [SEP] ".join(cols)
    if view == "embedding_hypothesis":
        return f"partial input: sentence embedding (all-MiniLM-L6-v2) of '{cols[0]}' alone ({dim}-d)"
    return f"sentence embedding (all-MiniLM-L6-v2) of {joined} ({dim}-d)"


@dataclass(frozen=True)
class EmbedSpec:
    """Sentence embeddings of an uploaded table: which table (sha256 of its bytes), which views, which model."""

    table: str
    name: str
    views: tuple[tuple[str, tuple[str, ...]], ...]
    model_id: str


def embedding_spec(payload: bytes, name: str, views: Mapping[str, tuple[str, ...]]) -> EmbedSpec:
    """The spec of embedding ``views`` of the uploaded table ``payload`` (needs the embeddings extra)."""
    try:
        model_id = _embeddings.model_identity()
    except ImportError as exc:
        raise ValueError(str(exc)) from None
    return EmbedSpec(
        hashlib.sha256(payload).hexdigest(), name, tuple((v, tuple(c)) for v, c in views.items()), model_id
    )


#: the separator between the columns of a view (embed_views' default: [CLS] premise [SEP] hypothesis [SEP])
_JOIN = " [SEP] "


def _view_texts(frame: pd.DataFrame, cols: tuple[str, ...]) -> list[str]:
    parts, _ = _texts_of(frame, list(cols), "embed_views")
    return [_JOIN.join(p) for p in zip(*parts)]


#: what the model is given (stated on the Data page): blank runs collapsed, each text cut at EMBED_TEXT_CHARS
#: (100 × the 256 word pieces all-MiniLM-L6-v2 reads), and at most EMBED_MAX_CHARS characters a job
EMBED_TEXT_CHARS, EMBED_MAX_CHARS = _embeddings.max_text_chars(), _embeddings.MAX_EMBED_CHARS


@_stores.memo("view_plan", 8)
def _view_plan(spec: EmbedSpec, _frame: pd.DataFrame) -> list[tuple[str, str, float, int]]:
    """Per view: cache key, seconds to embed, characters given to the model (hashed once per table and views)."""
    plan = []
    for view, cols in spec.views:
        texts = _view_texts(_frame, cols)
        view_id = f"columns={list(cols)!r} join={_JOIN!r}"  # as embed_views names a view in its cache key
        key = _embeddings.embedding_cache_key(texts, model_id=spec.model_id, view=view_id)
        given = _embeddings.model_texts(texts, max_chars=EMBED_TEXT_CHARS)  # as embed_texts gives them the model
        seconds = _embeddings.estimate_embedding_seconds(given, model_loaded=True)
        plan.append((view, key, seconds, sum(len(t) for t in given)))
    return plan


def embedding_outlook(frame: pd.DataFrame, spec: EmbedSpec) -> dict[str, Any]:
    """What embedding will cost, before starting: ``seconds`` (rough), the views ``cached`` on disk already.

    And ``refusal``: the sentence refusing a job over :data:`EMBED_MAX_CHARS` characters (None when it fits).
    """
    cache = _embeddings.default_cache_dir() / "embeddings"
    plan = _view_plan(spec, frame)
    done = _embedding_store().recall(spec) is not None
    todo = [(view, secs, chars) for view, key, secs, chars in plan if not done and not (cache / f"{key}.npy").is_file()]
    seconds = sum(secs for _, secs, _ in todo)
    if todo and not _sentence_model().loaded:
        seconds += _embeddings.estimate_embedding_seconds([], model_loaded=False)  # loading the model
    todo_views = {view for view, _, _ in todo}
    chars = sum(chars for _, _, chars in todo)
    refusal = _embeddings.embed_chars_refusal(
        chars, max_chars=EMBED_MAX_CHARS, remedy="upload fewer rows or shorter texts"
    )
    return {
        "seconds": seconds,
        "cached": [view for view, _, _, _ in plan if view not in todo_views],
        "cache_dir": str(cache.parent),
        "refusal": refusal,
    }


class _SharedModel:
    """all-MiniLM-L6-v2, loaded once per server process on first use (9 s, 450 MB); one batch at a time.

    Handed to :func:`aflite_core.data.embeddings.embed_views` as a loaded model: it is loaded only when a view is not
    in the disk cache, and two sessions' jobs take turns chunk by chunk instead of competing for the CPU.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def max_seq_length(self) -> int:  # the word pieces the model reads of a text (embed_texts cuts texts by it)
        return int(getattr(self._model, "max_seq_length", None) or _embeddings.DEFAULT_MAX_SEQ_LENGTH)

    def encode(self, texts: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._model is None:
                model = load_sentence_model()
                # torch and the model add ~400k objects that live as long as the process. Streamlit runs a full
                # garbage collection after every script run (runner.postScriptGC), also after each 0.4 s poll
                # of a progress fragment: with them that took 1.3-2.8 s holding the GIL, which slowed embedding
                # (and every page of every session) about tenfold. Frozen objects are left out of those scans.
                gc.collect()
                gc.freeze()
                self._model = model
            return self._model.encode(texts, **kwargs)


@st.cache_resource(max_entries=1, show_spinner=False)
def _sentence_model() -> _SharedModel:
    return _SharedModel()


def _embedding_store() -> _stores.Store:
    """Finished embeddings by :class:`EmbedSpec`, shared by every session (the disk cache outlives it)."""
    return _stores.store("embedding_store", settings.load().embedding_store_size)


def prepare_embedding(spec: EmbedSpec, frame: pd.DataFrame) -> Callable[[Callable], Outcome]:
    """The job :func:`aflite_app.jobs.run_in_background` runs to embed ``frame`` as ``spec`` says.

    Checked here, in the page's thread. The job reads every view it can from the disk cache
    (:func:`aflite_core.data.embeddings.embed_views`), so a second session, or the same table uploaded again, is
    not embedded again; a job in progress is joined, never started twice (``SharedJobs``). The wait gives an
    ``Outcome``: the matrices by view, or why not.
    """
    status = embeddings_status()
    if not status.available:
        raise ValueError(status.message)
    for _, cols in spec.views:
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise ValueError(f"The table has no column {missing[0]!r} to embed; choose its text columns again.")
    store, jobs, model = _embedding_store(), shared_jobs(), _sentence_model()
    cache_dir = _embeddings.default_cache_dir()

    refusal = embedding_outlook(frame, spec)["refusal"]
    if refusal is not None:
        raise ValueError(refusal)

    def job(callback: Callable) -> dict[str, NDArray]:
        out = _embeddings.embed_views(
            frame,
            {view: cols for view, cols in spec.views},
            model=model,
            model_id=spec.model_id,
            cache_dir=cache_dir,
            join=_JOIN,
            progress=stoppable(callback),
            max_chars=EMBED_MAX_CHARS,
        )
        store.keep(spec, out)
        return out

    queued = heavy(job, f"sentence embeddings of {len(frame):,} rows")  # it waits its turn in the server's queue

    def target(callback: Callable) -> Outcome:
        hit = store.recall(spec)
        if hit is not None:
            return Outcome(hit)
        return as_outcome(lambda: jobs.follow(spec, queued, callback), "Embedding")

    return target


def describe_embedding(
    progress: _embeddings.EmbeddingProgress | None, elapsed: float, _step: Any = None
) -> tuple[float, str]:
    """The progress bar of an embedding job: ``(fraction, text)`` with the time left.

    Takes (and ignores) the step argument :func:`aflite_app.jobs.run_in_background` passes to every describe.
    """
    if progress is None:
        return 0.0, f"Starting: loading the sentence model (about 9 s the first time)… {elapsed:.0f} s"
    return min(progress.fraction, 1.0), f"{progress.message} · {elapsed:.0f} s so far"
