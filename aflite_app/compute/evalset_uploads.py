"""Evaluation tables uploaded for an uploaded training dataset, and the adversary setup built from one.

The tables are parsed, aligned with the training table and stored by content digest (the Evaluation sets
page; re-exported by :mod:`aflite_app.compute.evalsets`).
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pandas as pd

from aflite_core.data.datasets import Dataset
from aflite_core.data.features import text_representations
from aflite_core.data.readers import read_features, read_table
from aflite_core.engine.filtering import predictability
from aflite_core.evalsets import (
    TEXT_STUDY_FRACTIONS,
    AdversarySetup,
)
from aflite_core.measures.adversary_strength import backbone_strength, linear_backbones

from .. import settings
from ..specs import NO_SESSION, SessionData
from . import _stores
from .datasets import dataset
from .evalset_specs import EvalSetSpec, EvalUpload

__all__ = [
    "EVALSET_TEXT_REPRESENTATIONS",
    "evalsets_annotator_columns",
    "evalsets_upload",
    "evalsets_uploaded",
]

EVALSET_UPLOAD_STORE_SIZE = settings.load().evalset_upload_store_size
#: representations an uploaded evaluation table can rebuild from its text (TF-IDF over training + evaluation text)
EVALSET_TEXT_REPRESENTATIONS = ("tfidf", "tfidf_hypothesis")


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
    dataset_key: str,
    table: bytes,
    name: str,
    features: dict[str, tuple[str, bytes]] | None = None,
    *,
    session: SessionData = NO_SESSION,
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
    data = dataset(dataset_key, session=session)
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


def _evalsets_upload_setup(spec: EvalSetSpec, *, session: SessionData = NO_SESSION):
    """An AdversarySetup for a training dataset and an uploaded evaluation table (the split is given)."""
    up = evalsets_uploaded(spec)
    data = dataset(spec.dataset, session=session)
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
