"""The Evaluation sets page (Phang et al.): AFLite filters an evaluation set with several adversaries and seeds.

"Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be Fair": evaluated models are
scored on what each adversary (a representation) selects. Caches: the split with its adversaries ordered by
strength (keyed by :class:`EvalSetSpec`); finished studies in a bounded store keyed by
:class:`EvalStudySpec` (shared by the page's background run and the synchronous path, like the Filter page's
results); uploaded evaluation files parsed once and kept in a bounded store by content digest.
"""

from __future__ import annotations

import gc
import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from aflite_core.data.datasets import Dataset
from aflite_core.data.embeddings import (
    EMBEDDINGS_INSTALL_COMMAND,
    EmbeddingProgress,
    embeddings_status,
    sentence_model_loaded,
)
from aflite_core.data.features import text_representations
from aflite_core.data.readers import read_features, read_table
from aflite_core.engine.filtering import predictability
from aflite_core.engine.registry import CLASSIFIER_LABELS
from aflite_core.evalsets import (
    TEXT_STUDY_FRACTIONS,
    AdversarySetup,
    SetupStopped,
    StudyProgress,
    StudyStep,
    annotator_agreement,
    digits_adversary_setup,
    study_overview,
    study_reading,
    text_adversary_setup,
)
from aflite_core.measures.adversary_strength import backbone_strength, linear_backbones

from .. import settings
from ..jobs import Outcome
from ..specs import SessionData
from . import _stores
from .datasets import dataset, session
from .uploads import UPLOAD_TABLE_TYPES

__all__ = [
    "EMBEDDINGS_INSTALL_COMMAND",
    "EVALSET_FAMILIES",
    "EVALSET_MAX_SEEDS",
    "EVALSET_SLOW_FAMILIES",
    "EVALSET_TEXT_REPRESENTATIONS",
    "UPLOAD_TABLE_TYPES",
    "EvalSetSpec",
    "EvalStudySpec",
    "EvalUpload",
    "describe_evalsets_setup",
    "describe_evalsets_study",
    "evalsets_annotator_columns",
    "evalsets_default_models",
    "evalsets_embeddings_available",
    "evalsets_is_upload",
    "evalsets_key",
    "evalsets_kind",
    "evalsets_model_choices",
    "evalsets_reading",
    "evalsets_setup",
    "evalsets_setup_is_slow",
    "evalsets_source_counts",
    "evalsets_upload",
    "evalsets_uploaded",
    "prepare_evalsets_setup",
    "prepare_evalsets_study",
    "run_evalsets_study",
    "stored_evalsets_setup",
    "stored_evalsets_study",
]

#: classifier families of evaluated models, with their labels from the core's registry
EVALSET_FAMILIES = dict(CLASSIFIER_LABELS)
#: families left out of the default choice of evaluated models (seconds each on the digits)
EVALSET_SLOW_FAMILIES = ("mlp", "forest")
EVALSET_MAX_SEEDS = settings.load().evalset_max_seeds
EVALSET_STORE_SIZE = settings.load().evalset_store_size
EVALSET_SETUP_STORE_SIZE = settings.load().evalset_setup_store_size
EVALSET_UPLOAD_STORE_SIZE = settings.load().evalset_upload_store_size
#: representations an uploaded evaluation table can rebuild from its text (TF-IDF over training + evaluation text)
EVALSET_TEXT_REPRESENTATIONS = ("tfidf", "tfidf_hypothesis")


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


def evalsets_is_upload(key: str, session_data: SessionData | None = None) -> bool:
    """True when ``key`` is a table uploaded in this session (only those accept an evaluation file)."""
    return key in session(session_data).uploads


def evalsets_embeddings_available() -> bool:
    """True when the optional sentence-embedding packages (the ``embeddings`` extra) are installed."""
    return embeddings_status().available


def evalsets_key(spec: Any) -> str:
    """A short stable text key of a spec (for widget keys that must reset when the split changes)."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:10]


def evalsets_annotator_columns(frame) -> tuple[list[str], list[str]]:
    """Candidate columns of annotator labels (lists, JSON lists or ``a|b|c`` text) and of their source.

    The first candidates are the columns named like the shared SNLI sample's ``annotator_labels`` and
    ``annotator_labels_src``.
    """
    labels, sources = [], []
    for col in frame.columns:
        s = frame[col].dropna().head(200)
        if not len(s) or pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
            continue
        listy = s.map(
            lambda x: (
                isinstance(x, (list, tuple, np.ndarray))
                or (isinstance(x, str) and (x.strip().startswith("[") or "|" in x))
            )
        ).mean()
        name = str(col).lower()
        if listy > 0.8 or ("annotator" in name and "src" not in name and "source" not in name):
            labels.append(str(col))
        elif s.map(lambda x: isinstance(x, str)).all() and frame[col].nunique() <= 20:
            sources.append(str(col))
    labels.sort(key=lambda c: c.lower() != "annotator_labels")
    sources.sort(key=lambda c: not ("src" in c.lower() or "source" in c.lower()))
    return labels, sources


def _evalsets_check_size(data: Dataset) -> None:
    _stores.check_rows(
        data.n_rows,
        doing="handles",
        instead="Run the study from the command line: `python -m "
        "aflite_core eval-filter --train-table TRAIN --eval-table EVAL --adversary "
        "NAME=TRAIN.npy:EVAL.npy ... --out DIR`.",
    )


def _evalsets_upload_store() -> _stores.Store:
    """Parsed evaluation tables by digest."""
    return _stores.store("evalsets_upload_store", EVALSET_UPLOAD_STORE_SIZE)


def evalsets_upload(
    dataset_key: str, table: bytes, name: str, features: dict[str, tuple[str, bytes]] | None = None
) -> EvalSetSpec:
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
    frame = read_table(
        table,
        name=name,
        max_bytes=_stores.upload_limit_bytes(),
        max_rows=max(1, _stores.MAX_INTERACTIVE_ROWS - data.n_rows),
        max_columns=_stores.MAX_UPLOAD_COLUMNS,
    )
    _stores.check_rows(
        data.n_rows + len(frame),
        doing="handles",
        subject="Training and evaluation rows together have",
        instead="Use `python -m aflite_core eval-filter`.",
    )
    texts = list(dict.fromkeys([*data.text_columns, *(data.pair or ())]))
    need = [data.label_column, *texts] + ([data.id_column] if data.id_column else [])
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(
            f"'{name}' lacks the column(s) {missing} of the training table '{data.name}' (its columns: "
            f"{[str(c) for c in frame.columns][:20]}). The evaluation table needs the same label"
            f"{', text' if texts else ''}{' and id' if data.id_column else ''} columns."
        )
    if frame[data.label_column].isna().any():
        row = int(np.flatnonzero(frame[data.label_column].isna().to_numpy())[0])
        raise ValueError(f"'{name}' has a missing label in column {data.label_column!r} (first in row {row}).")
    known = {str(c) for c in data.classes}
    eval_y = np.empty(len(frame), dtype=object)
    by_text = {str(c): c for c in data.classes}
    unknown = sorted({str(x) for x in frame[data.label_column]} - known)
    if unknown:
        raise ValueError(
            f"'{name}' has labels the training table never uses: {unknown[:5]} (training classes: "
            f"{sorted(known)[:12]})."
        )
    eval_y[:] = [by_text[str(x)] for x in frame[data.label_column]]
    eval_ids = (
        frame[data.id_column].to_numpy()
        if data.id_column
        else np.array([f"eval-{i}" for i in range(len(frame))], dtype=object)
    )
    if data.id_column and pd.Series(eval_ids).duplicated().any():
        raise ValueError(f"'{name}' repeats ids in column {data.id_column!r}; every evaluation row needs its own id.")
    train_X, eval_X, descs, notes = {}, {}, {}, []
    n_train = data.n_rows
    text_reps = [r for r in data.representations if r in EVALSET_TEXT_REPRESENTATIONS]
    if text_reps and texts:
        both = pd.concat([data.frame[texts], frame[texts]], ignore_index=True)
        width = max(int(data.representation(r).shape[1]) for r in text_reps)
        built = text_representations(
            both,
            [c for c in data.text_columns if c in texts],
            pair=data.pair,
            n_components=width,
            random_state=0,
            n_threads=1,
        )
        for rep in text_reps:
            if rep in built:
                X, desc = built[rep]
                train_X[rep], eval_X[rep] = X[:n_train], X[n_train:]
                descs[rep] = desc + ", rebuilt on training + evaluation text"
        notes.append(
            "TF-IDF views were rebuilt on the training and evaluation text together (one vocabulary), so "
            "they differ slightly from the ones the other pages use."
        )
    for rep in data.representations:
        if rep in train_X:
            continue
        if rep not in features:
            notes.append(f"Representation '{rep}' is left out: no evaluation features were uploaded for it.")
            continue
        fname, payload = features[rep]
        fh = io.BytesIO(payload)
        fh.name = fname
        E = read_features(fh, max_bytes=_stores.upload_limit_bytes())
        T = data.representation(rep)
        if E.shape != (len(frame), T.shape[1]):
            raise ValueError(
                f"'{fname}' has shape {E.shape}; the evaluation features of '{rep}' must have one row per "
                f"evaluation row and the training width: ({len(frame)}, {T.shape[1]})."
            )
        if not np.isfinite(E).all():
            raise ValueError(f"'{fname}' holds missing or infinite values.")
        train_X[rep], eval_X[rep] = np.asarray(T, dtype=np.float32), np.ascontiguousarray(E, dtype=np.float32)
        descs[rep] = data.representation_descriptions.get(rep, rep)
    if not train_X:
        raise ValueError(
            f"No representation of '{data.name}' can describe the evaluation rows: upload an aligned .npy "
            "per representation, or use a table whose text columns give the TF-IDF views."
        )
    store.keep(
        digest,
        EvalUpload(
            digest=digest,
            dataset=dataset_key,
            name=name,
            frame=frame,
            train_X=train_X,
            eval_X=eval_X,
            descriptions=descs,
            eval_y=eval_y,
            eval_ids=eval_ids,
            notes=tuple(notes),
        ),
    )
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
            raise ValueError(
                f"The annotator-label column {spec.annotator_column!r} is not a column of the evaluation rows."
            )
        col = frame[spec.annotator_column]
        ann = list(col if rows is None else col.iloc[rows])
        if spec.annotator_source_column is not None:
            if spec.annotator_source_column not in frame.columns:
                raise ValueError(
                    f"The annotator-source column {spec.annotator_source_column!r} is not a column of the "
                    "evaluation rows."
                )
            scol = frame[spec.annotator_source_column]
            src = (scol if rows is None else scol.iloc[rows]).to_numpy()
    return ann, src


def _evalsets_upload_setup(spec: EvalSetSpec):
    """An AdversarySetup for a training dataset and an uploaded evaluation table (the split is given)."""
    up = evalsets_uploaded(spec)
    data = dataset(spec.dataset)
    n_train = data.n_rows
    params = {
        "target_size": round(TEXT_STUDY_FRACTIONS["target_size"] * n_train),
        "train_size": round(TEXT_STUDY_FRACTIONS["train_size"] * n_train),
        "slice_size": max(1, round(TEXT_STUDY_FRACTIONS["slice_size"] * n_train)),
        "tau": 0.75,
        "n_partitions": 64,
    }
    names = tuple(up.train_X)
    predictable = {}
    for a in names:
        p = predictability(
            up.train_X[a],
            data.y,
            n_partitions=16,
            train_size=params["train_size"],
            random_state=int(spec.seed),
            n_threads=1,
        )
        predictable[a] = round(float(np.nanmean(p)), 4)
    backbones = linear_backbones(names)
    table = backbone_strength(
        up.train_X, data.labels, up.eval_X, up.eval_y, backbones, random_state=int(spec.seed), n_threads=1
    )
    strength = {a: round(float(x), 4) for a, x in zip(table["adversary"], table["accuracy"])}
    full = next((k for k in names if "hypothesis" not in k and "partial" not in k), names[0])
    evaluated = tuple([("logistic", k) for k in names] + [("rbf", full), ("knn", full)])
    ann, src = _evalsets_annotators(up.frame, spec)
    return AdversarySetup(
        name=f"{data.name} + {up.name}",
        train_X=up.train_X,
        train_y=data.labels,
        eval_X=up.eval_X,
        eval_y=up.eval_y,
        adversaries=tuple(sorted(names, key=lambda a: (strength[a], predictable[a]))),
        evaluated=evaluated,
        params=params,
        train_ids=data.ids,
        eval_ids=up.eval_ids,
        annotator_labels=ann,
        annotator_source=src,
        descriptions=dict(up.descriptions),
        strength=strength,
        strength_table=table,
        predictability=predictable,
        backbones=backbones,
        meta={"source": "upload", "eval_file": up.name, "notes": list(up.notes)},
    )


def _evalsets_setup_store() -> _stores.Store:
    """Splits with their adversaries by EvalSetSpec (shared by the page's background run and the direct path)."""
    return _stores.store("evalsets_setup_store", EVALSET_SETUP_STORE_SIZE)


def stored_evalsets_setup(spec: EvalSetSpec):
    """The split of ``spec`` when it was built already (no computation), else None."""
    return _evalsets_setup_store().recall(spec)


def evalsets_setup_is_slow(spec: EvalSetSpec) -> bool:
    """True when building ``spec`` embeds text with the sentence model (the page runs it in the background).

    Only a split of a text pair with the sentence-embedding adversaries asked for; every other split takes
    seconds and is built while the page waits.
    """
    if spec.source != "split" or not spec.embeddings:
        return False
    return evalsets_kind(spec.dataset, dataset(spec.dataset)) == "pair"


def _build_setup(spec: EvalSetSpec, data: Dataset, progress: Callable[[Any], bool | None] | None = None):
    """The AdversarySetup of a split of ``data`` (see :func:`evalsets_setup`)."""
    _evalsets_check_size(data)
    kind = evalsets_kind(spec.dataset, data)
    if kind == "digits":
        return digits_adversary_setup(random_state=int(spec.seed), eval_fraction=float(spec.eval_fraction), n_threads=1)
    try:
        return text_adversary_setup(
            data,
            eval_fraction=float(spec.eval_fraction),
            group_column="auto" if kind == "pair" else None,
            tfidf=kind == "pair",
            embeddings=bool(spec.embeddings) if kind == "pair" else False,
            annotator_column=spec.annotator_column,
            annotator_source_column=spec.annotator_source_column,
            random_state=int(spec.seed),
            n_threads=1,
            progress=progress,
        )
    except ImportError as exc:  # the optional sentence-embedding packages
        raise ValueError(str(exc)) from None


def evalsets_setup(spec: EvalSetSpec):
    """The training / evaluation split of ``spec`` with its adversaries ordered weakest first (an AdversarySetup).

    Digits: :func:`aflite_core.evalsets.digits_adversary_setup`; a text pair: ``text_adversary_setup`` (TF-IDF
    views, premise kept on one side); any other dataset: a stratified split with the dataset's own representations
    as adversaries; an uploaded evaluation table: the dataset is the training set (:func:`evalsets_upload`).
    Built in this thread and kept in a bounded store; the page builds a slow split (sentence embeddings) with
    :func:`prepare_evalsets_setup` in the background instead.
    """
    hit = stored_evalsets_setup(spec)
    if hit is not None:
        return hit
    if spec.source == "upload":
        setup = _evalsets_upload_setup(spec)
    elif spec.source != "split":
        raise ValueError(f"Unknown evaluation source {spec.source!r}; choose 'split' or 'upload'.")
    else:
        setup = _build_setup(spec, dataset(spec.dataset))
    _evalsets_setup_store().keep(spec, setup)
    return setup


def prepare_evalsets_setup(spec: EvalSetSpec) -> Callable[[Callable], Outcome]:
    """A background job building the split of ``spec`` with its sentence embeddings (checked now, in this thread).

    The returned ``target(reporter)`` (:class:`aflite_app.jobs.BackgroundRun`) reports
    :class:`aflite_core.data.embeddings.EmbeddingProgress` es through ``reporter.step`` (the sentence model's load, then
    every piece of about a hundred texts, so Stop is seen within a second or so of embedding; the load itself
    cannot be interrupted) and gives an :class:`Outcome`: the setup, kept in the store, or ``stopped``.
    """
    if spec.source != "split":
        raise ValueError("Only a split of the dataset builds sentence embeddings here.")
    data = dataset(spec.dataset)  # the session's dataset, resolved in the page's thread
    store = _evalsets_setup_store()

    def target(reporter: Callable) -> Outcome:
        hit = store.recall(spec)
        if hit is not None:
            return Outcome(hit)
        was_loaded = sentence_model_loaded()
        try:
            setup = _build_setup(spec, data, progress=reporter.step)
        except SetupStopped:
            return Outcome(stopped=True)
        finally:
            if not was_loaded and sentence_model_loaded():
                # torch and the model add ~400k long-lived objects; Streamlit's full collection after every
                # script run (and every 0.4 s progress poll) would scan them holding the GIL (see uploads.py)
                gc.collect()
                gc.freeze()
        store.keep(spec, setup)
        return Outcome(setup)

    return target


def describe_evalsets_setup(_progress: Any, elapsed: float, step: EmbeddingProgress | None = None) -> tuple[float, str]:
    """The progress of building a split with sentence embeddings: ``(fraction, text)`` without the time left."""
    if step is None:
        return 0.0, f"Splitting the data and building the TF-IDF views · {elapsed:.0f} s"
    if step.stage == "load_model":
        return 0.0, f"Loading the sentence model… (about 10 s the first time; it cannot be stopped) · {elapsed:.0f} s"
    if step.stage == "done":
        return 1.0, f"Embeddings ready; measuring each adversary's strength… · {elapsed:.0f} s"
    left = f" · about {step.eta_seconds:,.0f} s left" if step.eta_seconds else ""
    return step.fraction, f"Embedding '{step.view}': {step.done:,} of {step.total:,} texts · {elapsed:.0f} s{left}"


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
    has = np.isfinite(annotator_agreement(setup.eval_y, setup.annotator_labels))
    out: dict[str, int] = {}
    for s in np.asarray(setup.annotator_source, dtype=object)[has]:
        key = "(missing)" if s is None or (isinstance(s, float) and np.isnan(s)) else str(s)
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _evalsets_store() -> _stores.Store:
    """Finished studies by EvalStudySpec."""
    return _stores.store("evalsets_store", EVALSET_STORE_SIZE)


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
        raise ValueError(
            "The ensemble pools at least two adversaries: choose two or more, or untick 'Also filter "
            "with the ensemble'."
        )
    if not 1 <= int(spec.n_seeds) <= EVALSET_MAX_SEEDS:
        raise ValueError(f"Seeds must be between 1 and {EVALSET_MAX_SEEDS}. Got {spec.n_seeds}.")
    chosen = [name.partition(":") for name in spec.evaluated]
    adversaries = tuple(a for a in setup.adversaries if a in spec.adversaries)  # weakest first
    # every chosen adversary's backbone is evaluated too: its strength and the paper's Figure 4 need it
    evaluated, backbones = setup.evaluated_with_backbones([(fam, rep) for fam, _, rep in chosen], adversaries)
    kw: dict[str, Any] = {
        "adversaries": adversaries,
        "evaluated": evaluated,
        "backbones": backbones,
        "seeds": spec.seeds,
        "tau": float(spec.tau),
        "target_size": int(spec.target_size),
        "train_size": int(spec.train_size),
        "slice_size": int(spec.slice_size),
        "n_partitions": int(spec.n_partitions),
        "model": spec.model,
        "ensemble": bool(spec.ensemble),
        "random_state": int(spec.setup.seed),
        "n_threads": 1,
    }
    if setup.annotator_labels is not None:
        kw["annotator_sources"] = None if spec.annotator_sources is None else tuple(spec.annotator_sources)
    return kw


def prepare_evalsets_study(spec: EvalStudySpec) -> Callable[[Callable], Any]:
    """Everything a background thread needs to run ``spec`` (resolved and checked now, in the page's thread).

    The returned ``target(reporter)`` runs :meth:`AdversarySetup.run` (``adversary_study``) with ``reporter`` as
    its ``callback`` (a :class:`aflite_core.evalsets.StudyProgress` after every step) and ``reporter.step`` as its
    ``on_step`` (a :class:`aflite_core.evalsets.StudyStep` before each evaluated model's fit and inside every
    AFLite run, after each group of partition fits and block of predictions): ``False`` from either stops the
    study within one such piece of work, and the partial study (``params["complete"]`` False) is returned. A
    complete study is stored.
    """
    setup = evalsets_setup(spec.setup)
    kw = _evalsets_kwargs(setup, spec)
    store = _evalsets_store()

    def target(reporter: Callable) -> Any:
        study = setup.run(callback=reporter, on_step=getattr(reporter, "step", None), **kw)
        if study.params.get("complete"):
            store.keep(spec, study)
        return study

    return target


def describe_evalsets_study(progress: StudyProgress | None, step: StudyStep | None, n_models: int) -> tuple[float, str]:
    """Where a running study is: ``(fraction done, text)``.

    E.g. "Step 2 of 5: AFLite with pixels, seed 0 — round 3, predicting, 40 %"; the page adds the elapsed time
    and the estimate of the time left.
    """
    if step is None or (progress is not None and progress.step >= step.step):
        if progress is None:
            return 0.0, f"Step 1: training the {n_models} evaluated models"
        return progress.fraction_done, f"Step {progress.step} of {progress.n_steps} done"
    head = f"Step {step.step} of {step.n_steps}: "
    if step.stage == "evaluated models":
        if step.model is None:
            what = f"training the {step.n_models} evaluated models"
        else:
            what = f"training the evaluated models — {step.model} ({(step.model_index or 0) + 1} of {step.n_models})"
    else:
        who = f"the ensemble {step.adversary}" if step.stage == "ensemble" else str(step.adversary)
        what = f"AFLite with {who}, seed {step.seed}"
        if step.round is not None:
            phase = {"fit": ", fitting", "predict": ", predicting"}.get(step.phase or "", "")
            what += f" — round {step.round}{phase}, {round(100 * step.share)} %"
    return step.fraction_done, head + what


def run_evalsets_study(spec: EvalStudySpec, callback: Callable | None = None):
    """Run (or fetch) the adversary study of ``spec`` in this thread."""
    hit = stored_evalsets_study(spec)
    if hit is not None:
        return hit
    return prepare_evalsets_study(spec)(callback or (lambda _p: True))


def evalsets_reading(study) -> tuple[list[str], dict[str, list[str]]]:
    """The study's plain-language reading: overview sentences, and per adversary the sentences for its heading.

    The per-adversary sentences do not repeat the adversary's name (the page shows it as the heading).
    """
    ran = set(study.runs["adversary"]) if len(study.runs) else set()  # a stopped study lacks the later ones
    per = {a: study_reading(study, a, named=False) for a in study.adversaries if a in ran}
    return study_overview(study), per
