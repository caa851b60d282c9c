"""Datasets for AFLite: one object holding the rows, their labels and one or more representations Φ(X).

* :class:`Dataset` - a table (all original columns), integer label codes with class names, stable ids,
  display fields (text columns, a premise/hypothesis pair, images) and named float32 representations;
* :func:`load_digits_dataset` - scikit-learn's bundled handwritten digits with representations built the
  paper's way (a seeded warm-up MLP trained on 20 % of the rows, which are then left out);
* :func:`dataset_from_table` / :func:`load_table_dataset` - the user's own table (CSV, TSV, Parquet,
  JSONL) with features from an aligned ``.npy`` file, numeric columns or the text columns;
* :func:`load_nli_dataset` - SNLI / MultiNLI from a local file in their original format, or fetched by
  name with the optional ``datasets`` library; :func:`nli_dataset_from_records` is the offline part;

The warm-up recipe follows Le Bras et al. (ICML 2020, §2 "Implementation"): "to obtain Φ(X), we train a first
'warm-up' model on a small fraction of the data ... and do not reuse this data for the rest of our
experiments"; Φ is the model's last hidden layer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import platform
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from . import _validation as v
from .io import _NamedBytesIO, _read_bytes, _too_large, read_features, read_table, source_name

__all__ = [
    "DIGITS_REPRESENTATIONS",
    "NLI_LABELS",
    "SAMPLE_DATA_DIR",
    "Dataset",
    "build_digits_arrays",
    "dataset_from_table",
    "fetch_nli_records",
    "load_digits_dataset",
    "load_nli_dataset",
    "load_table_dataset",
    "nli_dataset_from_records",
    "normalize_nli_frame",
    "write_digits_arrays",
]

#: the folder of the bundled sample data (next to the package in a source checkout; may be absent)
SAMPLE_DATA_DIR = Path(__file__).resolve().parents[1] / "sample_data"

#: NLI class names, in the integer order of the Hugging Face SNLI / MultiNLI releases (0, 1, 2)
NLI_LABELS = ("entailment", "neutral", "contradiction")


# --------------------------------------------------------------------------------------------------------------
# the Dataset object
# --------------------------------------------------------------------------------------------------------------


def _readonly(a: NDArray) -> NDArray:
    view = a.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """Rows to filter, their labels and one or more representations Φ(X), all aligned row by row.

    Build one with a loader (:func:`load_digits_dataset`, :func:`load_table_dataset`, ...) or with
    :func:`dataset_from_table`. Arrays are read-only and the object is frozen: derive new datasets with
    :meth:`subset` or :meth:`with_representation` (do not modify ``frame`` in place).

    Parameters
    ----------
    name : str
        Short name shown in the app.
    frame : DataFrame
        Every original column, one row per example (exports keep them); its index is reset to 0..n-1.
    label_column : str
        Column of ``frame`` holding the labels.
    classes : tuple
        Class names in code order: ``classes[y[i]]`` is row i's label.
    y : ndarray of int32, shape (n_rows,)
        Integer label codes.
    ids : ndarray, shape (n_rows,)
        Unique, stable row ids (from an id column, or generated: the row's position in the source).
    representations : dict of str to ndarray of float32, shape (n_rows, d)
        Named representations Φ(X); the first is the default.
    representation_descriptions : dict of str to str, optional
        One short description per representation (default: ``"<name> (<d>-d)"``).
    description : str, default=""
        What the dataset is, where it comes from, its licence.
    id_column : str, optional
        Column of ``frame`` the ids come from (None when generated).
    text_columns : tuple of str, default=()
        Columns to show as text.
    pair : (str, str), optional
        Premise and hypothesis columns of a sentence-pair task (NLI).
    images : ndarray, shape (n_rows, h, w), optional
        Images for display.
    meta : dict, default={}
        Provenance: source file, recipe, dropped rows, warm-up indices ...
    """

    name: str
    frame: pd.DataFrame
    label_column: str
    classes: tuple
    y: NDArray[np.int32]
    ids: NDArray
    representations: dict[str, NDArray[np.float32]]
    representation_descriptions: dict[str, str] = field(default_factory=dict)
    description: str = ""
    id_column: str | None = None
    text_columns: tuple[str, ...] = ()
    pair: tuple[str, str] | None = None
    images: NDArray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        func = "Dataset"
        put = object.__setattr__
        if not isinstance(self.frame, pd.DataFrame):
            raise v.param_error("frame", func, "a pandas DataFrame", self.frame, TypeError)
        n = len(self.frame)
        if n < 2:
            raise ValueError(f"The 'frame' parameter of {func} must have at least 2 rows. Got {n} instead.")
        frame = self.frame
        if not (isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1):
            frame = frame.reset_index(drop=True)
        put(self, "frame", frame)
        if self.label_column not in frame.columns:
            raise ValueError(
                f"The 'label_column' parameter of {func} must be a column of the frame {list(frame.columns)}. "
                f"Got {self.label_column!r} instead."
            )
        classes = tuple(self.classes)
        y = np.asarray(self.y)
        if y.shape != (n,) or y.dtype.kind not in "iu":
            raise ValueError(f"The 'y' parameter of {func} must be {n} integer codes. Got {v._short_repr(y)} instead.")
        if n and (y.min() < 0 or y.max() >= len(classes)):
            raise ValueError(f"The 'y' parameter of {func} must hold codes in [0, {len(classes)}). Got other codes.")
        put(self, "classes", classes)
        put(self, "y", _readonly(y.astype(np.int32, copy=False)))
        ids = np.asarray(self.ids)
        if ids.shape != (n,):
            raise ValueError(f"The 'ids' parameter of {func} must hold {n} ids. Got shape {ids.shape} instead.")
        put(self, "ids", _readonly(ids))
        if not isinstance(self.representations, Mapping) or not self.representations:
            raise ValueError(
                f"The 'representations' parameter of {func} must map at least one name to a feature matrix. "
                f"Got {v._short_repr(self.representations)} instead."
            )
        reps: dict[str, NDArray[np.float32]] = {}
        descs: dict[str, str] = {}
        for key, X in self.representations.items():
            if not isinstance(key, str) or not key:
                raise v.param_error("representations", func, "a dict with non-empty str names", key, TypeError)
            Xv = v.check_features(X, f"representations[{key!r}]", func, n_rows=n)
            reps[key] = _readonly(np.ascontiguousarray(Xv))
            descs[key] = str(self.representation_descriptions.get(key) or f"{key} ({Xv.shape[1]}-d)")
        put(self, "representations", reps)
        put(self, "representation_descriptions", descs)
        put(self, "text_columns", tuple(self.text_columns))
        for col in self.text_columns + tuple(self.pair or ()):
            if col not in frame.columns:
                raise ValueError(
                    f"The text column {col!r} of {func} is not a column of the frame {list(frame.columns)}."
                )
        if self.pair is not None:
            put(self, "pair", (str(self.pair[0]), str(self.pair[1])))
        if self.images is not None:
            images = np.asarray(self.images)
            if images.ndim not in (3, 4) or images.shape[0] != n:
                raise ValueError(
                    f"The 'images' parameter of {func} must have shape (n_rows, h, w) with n_rows={n}. "
                    f"Got shape {images.shape} instead."
                )
            put(self, "images", _readonly(images))
        put(self, "meta", dict(self.meta))

    # ---- basic facts -------------------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        """Number of rows (examples)."""
        return len(self.frame)

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return len(self.classes)

    @property
    def labels(self) -> NDArray:
        """Class name of every row (``classes[y]``)."""
        names = np.empty(len(self.classes), dtype=object)
        names[:] = list(self.classes)
        return names[self.y]

    @property
    def representation_names(self) -> tuple[str, ...]:
        """Names of the representations, the default first."""
        return tuple(self.representations)

    @property
    def default_representation(self) -> str:
        """Name of the default representation (the first)."""
        return next(iter(self.representations))

    def class_counts(self) -> pd.Series:
        """Rows per class, indexed by class name in code order."""
        counts = np.bincount(self.y, minlength=self.n_classes)
        return pd.Series(counts, index=pd.Index(list(self.classes), name=self.label_column), name="rows")

    def representation(self, name: str | None = None) -> NDArray[np.float32]:
        """The feature matrix Φ(X) called ``name`` (default: the first), read-only float32 (n_rows, d).

        Raises
        ------
        ValueError
            When there is no representation of that name; the message lists the available ones.
        """
        key = self.default_representation if name is None else name
        if key not in self.representations:
            available = ", ".join(f"'{k}' ({d})" for k, d in self.representation_descriptions.items())
            raise ValueError(f"Dataset '{self.name}' has no representation {key!r}; available: {available}.")
        return self.representations[key]

    def summary(self) -> dict[str, Any]:
        """Name, size, classes with counts and representations with dimensions (JSON-friendly)."""
        return {
            "name": self.name,
            "n_rows": self.n_rows,
            "n_classes": self.n_classes,
            "class_counts": {str(k): int(c) for k, c in self.class_counts().items()},
            "representations": {k: int(X.shape[1]) for k, X in self.representations.items()},
            "text_columns": list(self.text_columns),
            "pair": list(self.pair) if self.pair else None,
            "has_images": self.images is not None,
        }

    def __repr__(self) -> str:
        reps = ", ".join(f"{k}:{X.shape[1]}" for k, X in self.representations.items())
        return (
            f"Dataset(name={self.name!r}, n_rows={self.n_rows}, n_classes={self.n_classes}, "
            f"representations=[{reps}])"
        )

    # ---- derived datasets --------------------------------------------------------------------------------
    def subset(self, rows: ArrayLike) -> Dataset:
        """The dataset restricted to some rows (a boolean mask of n_rows, or integer positions).

        Classes and their codes are kept even when a class loses all its rows, so codes stay comparable.
        ``meta`` records the parent's name and size.
        """
        func = "Dataset.subset"
        arr = np.asarray(rows)
        if arr.dtype == bool:
            if arr.shape != (self.n_rows,):
                raise ValueError(
                    f"The 'rows' parameter of {func} must be a boolean mask of {self.n_rows} rows or integer "
                    f"positions. Got a mask of shape {arr.shape} instead."
                )
            idx = np.flatnonzero(arr)
        elif arr.dtype.kind in "iu" and arr.ndim == 1:
            if arr.size and (arr.min() < -self.n_rows or arr.max() >= self.n_rows):
                raise ValueError(
                    f"The 'rows' parameter of {func} must hold positions in [0, {self.n_rows}). "
                    f"Got positions from {arr.min()} to {arr.max()} instead."
                )
            idx = arr
        else:
            raise v.param_error("rows", func, "a boolean mask or integer positions", rows, TypeError)
        meta = dict(self.meta)
        meta["parent"] = {"name": self.name, "n_rows": self.n_rows}
        return dataclasses.replace(
            self,
            frame=self.frame.iloc[idx].reset_index(drop=True),
            y=self.y[idx],
            ids=self.ids[idx],
            representations={k: X[idx] for k, X in self.representations.items()},
            images=None if self.images is None else self.images[idx],
            meta=meta,
        )

    def with_representation(self, name: str, X: ArrayLike, description: str | None = None) -> Dataset:
        """A copy with one more (or a replaced) representation, aligned with the rows."""
        reps = dict(self.representations)
        descs = dict(self.representation_descriptions)
        reps[name] = X
        descs.pop(name, None)
        if description:
            descs[name] = description
        return dataclasses.replace(self, representations=reps, representation_descriptions=descs)


# --------------------------------------------------------------------------------------------------------------
# user tables
# --------------------------------------------------------------------------------------------------------------

FeatureSpec = ArrayLike | tuple[ArrayLike, str]


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _missing_mask(series: pd.Series) -> NDArray[np.bool_]:
    mask = series.isna().to_numpy()
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        blank = series.map(lambda x: isinstance(x, str) and not x.strip()).to_numpy(dtype=bool)
        mask = mask | blank
    return mask


def _encode_labels(series: pd.Series, src: str, column: str) -> v.EncodedLabels:
    missing = _missing_mask(series)
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"'{src}' has no label in {int(missing.sum())} row(s) of column {column!r} (first: row {first}, "
            "counting from 0); fill them in or remove those rows."
        )
    values = series.to_numpy()
    for i, x in enumerate(values[: min(len(values), 10_000)]):
        if isinstance(x, (list, dict, np.ndarray)):
            raise ValueError(
                f"'{src}' has a {type(x).__name__} as the label in row {i} of column {column!r}; "
                "labels must be single values (a class name or number)."
            )
    if values.dtype == object:
        # a float column with integral values (e.g. from JSON) and ints name the same classes
        values = np.array([x.item() if isinstance(x, np.generic) else x for x in values], dtype=object)
    classes = pd.unique(pd.Series(values, dtype=object if values.dtype == object else None))
    if len(classes) < 2:
        raise ValueError(
            f"'{src}' has only one class in column {column!r} ({_plain(classes[0])!r}); AFLite needs at least 2 "
            "classes."
        )
    return v.check_labels(values, column, "dataset_from_table", n_rows=len(values), min_per_class=1)


def _ids_from_column(frame: pd.DataFrame, column: str, src: str) -> NDArray:
    series = frame[column]
    missing = _missing_mask(series)
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise ValueError(f"'{src}' has no id in row {first} of id column {column!r}; every row needs an id.")
    dup = series.duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        value = _plain(series.iloc[rows[0]])
        other = int(np.flatnonzero((series == value).to_numpy())[1])
        raise ValueError(
            f"'{src}' has duplicate ids in column {column!r} (first: {value!r} in rows {int(rows[0])} and "
            f"{other}); ids must be unique."
        )
    values = series.to_numpy()
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    out = np.empty(len(values), dtype=object)
    out[:] = [str(x) for x in values]
    return out


def _parse_images(frame: pd.DataFrame, column: str, shape: tuple[int, int] | None, src: str) -> NDArray:
    rows = []
    for i, cell in enumerate(frame[column].tolist()):
        if isinstance(cell, str):
            try:
                values = [float(t) for t in cell.replace(",", " ").split()]
            except ValueError:
                raise ValueError(
                    f"'{src}' has a non-numeric image in row {i} of column {column!r}; an image cell must hold "
                    "pixel values (a list, or numbers separated by spaces)."
                ) from None
        elif isinstance(cell, (list, tuple, np.ndarray)):
            values = np.asarray(cell, dtype=float).ravel()
        else:
            raise ValueError(
                f"'{src}' has no image in row {i} of column {column!r}; an image cell must hold pixel values "
                "(a list, or numbers separated by spaces)."
            )
        rows.append(np.asarray(values, dtype=np.float32))
    sizes = {len(r) for r in rows}
    if len(sizes) != 1:
        raise ValueError(f"'{src}' has images of different sizes in column {column!r} ({sorted(sizes)[:5]} pixels).")
    size = sizes.pop()
    if shape is None:
        side = math.isqrt(size)
        if side * side != size:
            raise ValueError(
                f"'{src}' has images of {size} pixels in column {column!r}, which is not square; give image_shape."
            )
        shape = (side, side)
    if int(np.prod(shape)) != size:
        raise ValueError(f"'{src}' has images of {size} pixels in column {column!r}, not {shape[0]}×{shape[1]}.")
    return np.stack(rows).reshape(len(rows), *shape)


def _feature_items(features: Any) -> list[tuple[str, Any, str | None]]:
    if features is None:
        return []
    if isinstance(features, Mapping):
        items = []
        for key, spec in features.items():
            if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str):
                items.append((str(key), spec[0], spec[1]))
            else:
                items.append((str(key), spec, None))
        return items
    return [("features", features, None)]


def dataset_from_table(
    frame: pd.DataFrame,
    *,
    label_column: str,
    id_column: str | None = None,
    text_columns: Sequence[str] = (),
    pair: tuple[str, str] | None = None,
    features: ArrayLike | Mapping[str, FeatureSpec] | None = None,
    feature_columns: Sequence[str] | None = None,
    text_features: bool | None = None,
    image_column: str | None = None,
    image_shape: tuple[int, int] | None = None,
    images: ArrayLike | None = None,
    n_components: int = 128,
    name: str = "table",
    description: str = "",
    source: str | None = None,
    meta: Mapping[str, Any] | None = None,
    random_state: int | np.random.Generator | None = 0,
) -> Dataset:
    """Build a :class:`Dataset` from a table: labels, ids, display columns and representations.

    Representations come from, in this order: ``features`` (arrays aligned with the rows), ``feature_columns``
    (numeric columns, as ``"columns"``), and TF-IDF + SVD of the text (``"tfidf"``, plus the hypothesis-only
    ``"tfidf_hypothesis"`` for a ``pair``; see :func:`aflite_core.features.text_representations`). Text
    features are computed when ``text_features=True``, or by default when nothing else gives features.

    Parameters
    ----------
    frame : DataFrame
        One row per example; every column is kept.
    label_column : str
        Column holding the labels (required, no missing values, at least 2 classes).
    id_column : str, optional
        Column of unique ids; default: the row position (0, 1, ...).
    text_columns : sequence of str, default=()
        Columns to show as text (and to compute text features from).
    pair : (str, str), optional
        Premise and hypothesis columns of a sentence-pair task.
    features : array or dict, optional
        One matrix (named ``"features"``) or ``{name: matrix}`` / ``{name: (matrix, description)}``; each
        must have one row per table row.
    feature_columns : sequence of str, optional
        Numeric columns used as a representation named ``"columns"``.
    text_features : bool, optional
        Compute TF-IDF representations from the text columns (default: only when nothing else gives any).
    image_column : str, optional
        Column of images: pixel lists (JSONL, Parquet) or numbers separated by spaces (CSV).
    image_shape : (int, int), optional
        Shape of each image (default: square).
    images : array of shape (n_rows, h, w), optional
        Images given directly (instead of ``image_column``).
    n_components : int, default=128
        Dimensions of computed text features.
    name, description : str
        Shown in the app.
    source : str, optional
        File name used in messages (default: ``name``).
    meta : dict, optional
        Extra provenance.
    random_state : int, numpy Generator or None, default=0
        Seed of computed text features.

    Returns
    -------
    Dataset
        Aligned with ``frame`` row by row.

    Raises
    ------
    ValueError
        One sentence naming the file and the problem (missing column, missing label, one class, duplicate
        ids, misaligned features, no features at all).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from aflite_core.datasets import dataset_from_table
    >>> df = pd.DataFrame({"text": ["good", "bad", "fine", "awful"], "label": ["pos", "neg", "pos", "neg"]})
    >>> ds = dataset_from_table(df, label_column="label", text_columns=["text"], features=np.eye(4))
    >>> ds.classes, ds.y.tolist(), ds.representation_names
    (('neg', 'pos'), [1, 0, 1, 0], ('features',))
    """
    src = source or name
    if not isinstance(frame, pd.DataFrame):
        raise v.param_error("frame", "dataset_from_table", "a pandas DataFrame", frame, TypeError)
    columns = list(frame.columns)
    n = len(frame)
    if n < 2:
        raise ValueError(f"'{src}' has {n} row(s); AFLite needs at least 2.")
    if not (isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1):
        frame = frame.reset_index(drop=True)

    def need(col: str, role: str) -> None:
        if col not in frame.columns:
            raise ValueError(f"'{src}' has no {role} {col!r}; its columns are {columns}. Choose the {role}.")

    need(label_column, "label column")
    labels = _encode_labels(frame[label_column], src, label_column)
    if id_column is not None:
        need(id_column, "id column")
        ids = _ids_from_column(frame, id_column, src)
    else:
        ids = np.arange(n, dtype=np.int64)
    texts = list(text_columns)
    for col in texts:
        need(col, "text column")
    if pair is not None:
        if len(pair) != 2:
            raise ValueError(f"The pair for '{src}' must name two columns (premise, hypothesis). Got {pair!r}.")
        for col in pair:
            need(col, "text column")
        texts += [c for c in pair if c not in texts]

    reps: dict[str, NDArray] = {}
    descs: dict[str, str] = {}
    for key, X, desc in _feature_items(features):
        arr = X if isinstance(X, np.ndarray) else np.asarray(X)
        if arr.ndim >= 1 and arr.shape[0] != n:
            raise ValueError(
                f"Features {key!r} have {arr.shape[0]} rows but '{src}' has {n}; row i of the features must "
                "describe row i of the table."
            )
        reps[key] = v.check_features(arr, key, "dataset_from_table", n_rows=n)
        descs[key] = desc or f"{key} ({reps[key].shape[1]}-d)"
    if feature_columns:
        cols = list(feature_columns)
        for col in cols:
            need(col, "feature column")
            if not pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
                raise ValueError(f"'{src}' feature column {col!r} is not numeric (dtype {frame[col].dtype}).")
        block = frame[cols].to_numpy(dtype=np.float64)
        if not np.isfinite(block).all():
            row = int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
            raise ValueError(f"'{src}' has a missing or infinite value in its feature columns (first in row {row}).")
        reps["columns"] = block.astype(np.float32)
        descs["columns"] = f"numeric columns {', '.join(cols[:6])}{', ...' if len(cols) > 6 else ''} ({len(cols)}-d)"
    compute_text = text_features if text_features is not None else not reps
    if compute_text:
        if not texts:
            numeric = [c for c in columns if c not in (label_column, id_column)
                       and pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]
            hint = f" (numeric columns here: {numeric[:10]})" if numeric else ""
            raise ValueError(
                f"'{src}' gives no features: add an aligned .npy feature file, choose text columns to compute "
                f"TF-IDF features from, or choose numeric feature columns{hint}."
            )
        from .features import text_representations

        for key, (X, desc) in text_representations(frame, texts, pair=pair, n_components=n_components,
                                                    random_state=random_state).items():
            reps.setdefault(key, X)
            descs.setdefault(key, desc)

    image_array = None
    if image_column is not None:
        need(image_column, "image column")
        image_array = _parse_images(frame, image_column, image_shape, src)
    elif images is not None:
        image_array = np.asarray(images)
    info = {"source": src, "n_rows": n, "label_column": label_column, "id_column": id_column,
            "ids": f"column {id_column!r}" if id_column else "row position in the source (0-based)"}
    info.update(meta or {})
    return Dataset(
        name=name,
        frame=frame,
        label_column=label_column,
        classes=labels.classes,
        y=labels.codes,
        ids=ids,
        representations=reps,
        representation_descriptions=descs,
        description=description,
        id_column=id_column,
        text_columns=tuple(texts),
        pair=tuple(pair) if pair is not None else None,
        images=image_array,
        meta=info,
    )


def _read_npy(source: Any, *, name: str | None, max_bytes: int | None) -> tuple[NDArray, str]:
    if isinstance(source, np.ndarray):
        if source.ndim != 2:
            raise ValueError(f"Features must be a 2-D array (rows × features); got shape {source.shape}.")
        return source, name or "array"
    shown = source_name(source, name)
    if isinstance(source, (str, Path)):
        path = Path(source)
        if max_bytes is not None and path.is_file() and path.stat().st_size > max_bytes:
            raise _too_large(path.name, path.stat().st_size, max_bytes)
        return read_features(source), path.name
    data = _read_bytes(source, name=shown, max_bytes=max_bytes, what="Feature file")
    return read_features(_NamedBytesIO(data, shown)), Path(shown).name


def load_table_dataset(
    source: str | Path | bytes | BinaryIO,
    *,
    label_column: str,
    features: Any = None,
    name: str | None = None,
    dataset_name: str | None = None,
    format: str | None = None,
    max_bytes: int | None = None,
    max_rows: int | None = None,
    **options: Any,
) -> Dataset:
    """Load a table file (CSV, TSV, Parquet, JSONL) and optional aligned ``.npy`` features as a Dataset.

    The shared NLI samples' layout (``x.jsonl`` with premise / hypothesis / label columns plus ``x.*.npy``
    embeddings, row i of the array = line i of the file) is read by this generic path.

    Parameters
    ----------
    source : path, bytes or binary file-like
        The table (see :func:`aflite_core.io.read_table`).
    label_column : str
        Column holding the labels.
    features : path, bytes, file-like, ndarray, or dict of name to one of those, optional
        ``.npy`` feature files (never unpickled), one row per table row. One source is named ``"features"``.
        Uploaded bytes should come as a file-like with a ``name``.
    name : str, optional
        File name (needed for bytes; default: the path or ``source.name``), used in messages.
    dataset_name : str, optional
        The dataset's name (default: the file name without its extension).
    format : {"csv", "tsv", "parquet", "jsonl"}, optional
        Overrides the format the file name implies.
    max_bytes : int, optional
        Refuse a table or feature file larger than this.
    max_rows : int, optional
        Refuse a table with more rows, before its values are read.
    **options
        Passed to :func:`dataset_from_table` (``id_column``, ``text_columns``, ``pair``, ``feature_columns``,
        ``text_features``, ``image_column``, ``description``, ``random_state`` ...).

    Returns
    -------
    Dataset
        With ``meta["source"]`` the table's file name and ``meta["feature_files"]`` the feature files.

    Raises
    ------
    ValueError
        One sentence naming the file and the problem.
    """
    shown = source_name(source, name)
    frame = read_table(source, name=shown, format=format, max_bytes=max_bytes, max_rows=max_rows)
    feats: dict[str, tuple[NDArray, str]] = {}
    files: dict[str, str] = {}
    for key, spec, desc in _feature_items(features):
        arr, fname = _read_npy(spec, name=None, max_bytes=max_bytes)
        if arr.shape[0] != len(frame):
            raise ValueError(
                f"Feature file '{fname}' has {arr.shape[0]} rows but '{shown}' has {len(frame)}; row i of the "
                "features must describe row i of the table."
            )
        if isinstance(spec, np.ndarray):
            feats[key] = (arr, desc or f"{key} ({arr.shape[1]}-d)")
        else:
            feats[key] = (arr, desc or f"from {fname} ({arr.shape[1]}-d)")
            files[key] = fname
    meta = dict(options.pop("meta", None) or {})
    meta["feature_files"] = files
    ds_name = dataset_name or Path(shown).stem
    return dataset_from_table(frame, label_column=label_column, features=feats or None, name=ds_name,
                              source=shown, meta=meta, **options)


# --------------------------------------------------------------------------------------------------------------
# digits: the bundled real dataset
# --------------------------------------------------------------------------------------------------------------

#: representations of :func:`load_digits_dataset`, strongest warm-up adversary first
DIGITS_REPRESENTATIONS = {
    "mlp": "warm-up MLP hidden layer (64-d, tanh; trained on the 20 % warm-up rows)",
    "mlp_small": "small warm-up MLP hidden layer (8-d, tanh): a weaker adversary",
    "pca": "PCA of the pixels fitted on the warm-up rows (16-d)",
    "pixels": "raw pixels / 16 (64-d)",
}
_DIGITS_DIR = "digits"
_DIGITS_FILES = ("ids.npy", "warmup_indices.npy", "mlp.npy", "mlp_small.npy", "pca.npy")
_DIGITS_FORMAT = 1
_MLP_SIZES = {"mlp": 64, "mlp_small": 8}
_PCA_COMPONENTS = 16


def _digits_raw() -> tuple[NDArray[np.float64], NDArray[np.int64], str]:
    """Pixels, targets and their sha256, exactly as ``sklearn.datasets.load_digits()`` returns them.

    Reads the CSV that scikit-learn ships (the file ``load_digits`` reads) without importing scikit-learn,
    whose first import takes seconds on a busy machine; falls back to ``load_digits`` when the file is not
    where it used to be. The sha256 compared with the manifest guards against any difference.
    """
    import gzip
    import importlib.util

    spec = importlib.util.find_spec("sklearn")  # locates the package without importing it
    path = None
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "digits.csv.gz"
    if path is not None and path.is_file():
        with gzip.open(path, "rt", encoding="ascii") as fh:
            table = np.loadtxt(fh, delimiter=",")
        data, target = table[:, :-1], table[:, -1].astype(np.int64)
    else:  # pragma: no cover - depends on scikit-learn's layout
        from sklearn.datasets import load_digits

        bunch = load_digits()
        data, target = bunch.data, bunch.target
    data = np.ascontiguousarray(data, dtype=np.float64)
    target = np.ascontiguousarray(target, dtype=np.int64)
    h = hashlib.sha256(data.tobytes())
    h.update(target.tobytes())
    return data, target, h.hexdigest()


def _digits_recipe(warmup_fraction: float, seed: int) -> dict[str, Any]:
    return {
        "source": "sklearn.datasets.load_digits()",
        "random_state": seed,
        "warmup_fraction": warmup_fraction,
        "scaling": "pixels / 16",
        "split": "sklearn.model_selection.train_test_split(idx, train_size=warmup_fraction, stratify=y, "
                 "random_state=<seed 0 drawn from random_state>)",
        "mlp": {"estimator": "sklearn.neural_network.MLPClassifier", "hidden_layer_sizes": [_MLP_SIZES["mlp"]],
                "activation": "tanh", "solver": "lbfgs", "alpha": 1e-3, "max_iter": 1000,
                "random_state": "<seed 2 drawn from random_state>", "features": "tanh(X @ W1 + b1)"},
        "mlp_small": {"estimator": "sklearn.neural_network.MLPClassifier",
                      "hidden_layer_sizes": [_MLP_SIZES["mlp_small"]], "activation": "tanh", "solver": "lbfgs",
                      "alpha": 1e-3, "max_iter": 1000, "random_state": "<seed 1 drawn from random_state>",
                      "features": "tanh(X @ W1 + b1)"},
        "pca": {"estimator": "sklearn.decomposition.PCA", "n_components": _PCA_COMPONENTS, "svd_solver": "full",
                "fitted_on": "warm-up rows"},
        "threads": 1,
    }


def build_digits_arrays(
    *, warmup_fraction: float = 0.2, random_state: int | np.random.Generator | None = 0
) -> dict[str, Any]:
    """Compute the digits representations the paper's way (warm-up model on held-out rows).

    A stratified, seeded ``warmup_fraction`` of scikit-learn's 1,797 digits trains two MLPs (64 and 8 tanh
    hidden units, L-BFGS) and a 16-component PCA; Φ of every *other* row is the MLPs' hidden activations or the
    PCA projection. The warm-up rows are left out of the dataset. Runs single-threaded, so the result is the
    same on every run on one machine (and equal up to float rounding across machines).

    Parameters
    ----------
    warmup_fraction : float, default=0.2
        Share of rows used to train the warm-up models, in (0, 1).
    random_state : int, numpy Generator or None, default=0
        The one seed; the split, both MLPs and the PCA each get an integer seed drawn from it.

    Returns
    -------
    dict
        ``ids`` (int64 positions in ``load_digits()`` of the kept rows, increasing), ``warmup_indices``,
        float32 ``mlp``, ``mlp_small``, ``pca``, plus ``recipe``, ``digits_sha256`` and ``warmup_accuracy``
        (each warm-up model's accuracy on the kept rows).
    """
    func = "build_digits_arrays"
    if not isinstance(warmup_fraction, float) or not 0.0 < warmup_fraction < 1.0:
        raise v.param_error("warmup_fraction", func, "a float in (0, 1)", warmup_fraction)
    seed = v.check_random_state(random_state, func)
    seeds = [int(s) for s in np.random.default_rng(seed).integers(0, 2**31 - 1, size=4)]

    from sklearn.decomposition import PCA
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    data, target, digest = _digits_raw()
    X = data / 16.0
    idx = np.arange(len(target))
    warm, rest = train_test_split(idx, train_size=warmup_fraction, stratify=target, random_state=seeds[0])
    warm, rest = np.sort(warm), np.sort(rest)
    out: dict[str, Any] = {"ids": rest.astype(np.int64), "warmup_indices": warm.astype(np.int64)}
    accuracy = {}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for key, seed_i in (("mlp_small", seeds[1]), ("mlp", seeds[2])):
            mlp = MLPClassifier(hidden_layer_sizes=(_MLP_SIZES[key],), activation="tanh", solver="lbfgs",
                                alpha=1e-3, max_iter=1000, random_state=seed_i)
            mlp.fit(X[warm], target[warm])
            out[key] = np.tanh(X[rest] @ mlp.coefs_[0] + mlp.intercepts_[0]).astype(np.float32)
            accuracy[key] = round(float(mlp.score(X[rest], target[rest])), 4)
        pca = PCA(n_components=_PCA_COMPONENTS, svd_solver="full", random_state=seeds[3]).fit(X[warm])
        out["pca"] = pca.transform(X[rest]).astype(np.float32)
    out["recipe"] = _digits_recipe(warmup_fraction, seed)
    out["digits_sha256"] = digest
    out["warmup_accuracy"] = accuracy
    return out


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _versions() -> dict[str, str]:
    import sklearn

    return {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__}


def write_digits_arrays(directory: str | Path | None = None, **kwargs: Any) -> Path:
    """Compute :func:`build_digits_arrays` and write the ``.npy`` files and ``manifest.json`` to ``directory``.

    Used by ``sample_data/build_digits.py``; writing the same arrays twice gives byte-identical files.

    Parameters
    ----------
    directory : path, optional
        Target folder (default: ``sample_data/digits``).
    **kwargs
        Passed to :func:`build_digits_arrays`.

    Returns
    -------
    Path
        The manifest's path.
    """
    folder = Path(directory) if directory is not None else SAMPLE_DATA_DIR / _DIGITS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    arrays = build_digits_arrays(**kwargs)
    files = {}
    for fname in _DIGITS_FILES:
        key = fname[: -len(".npy")]
        arr = np.ascontiguousarray(arrays[key])
        path = folder / fname
        np.save(path, arr, allow_pickle=False)
        files[fname] = {"sha256": _sha256_file(path), "shape": list(arr.shape), "dtype": arr.dtype.str}
    manifest = {
        "name": "digits",
        "format": _DIGITS_FORMAT,
        "description": "Representations of scikit-learn's bundled handwritten digits for AFLite Studio. Rebuild "
                       "with `python sample_data/build_digits.py`.",
        "recipe": arrays["recipe"],
        "digits_sha256": arrays["digits_sha256"],
        "warmup_accuracy": arrays["warmup_accuracy"],
        "representations": DIGITS_REPRESENTATIONS,
        "files": files,
        "versions": _versions(),
    }
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def _read_shipped_digits(folder: Path, warmup_fraction: float, seed: int, digest: str) -> tuple[dict | None, str]:
    """The shipped arrays if they exist, match the recipe asked for and pass their hashes; else a reason."""
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        return None, f"no manifest at {manifest_path}"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        recipe = manifest["recipe"]
        if manifest.get("format") != _DIGITS_FORMAT:
            return None, "manifest format differs"
        if recipe["random_state"] != seed or recipe["warmup_fraction"] != warmup_fraction:
            return None, "recipe differs from the one asked for"
        if recipe != _digits_recipe(warmup_fraction, seed):
            return None, "recipe differs from this version's"
        if manifest["digits_sha256"] != digest:
            return None, "scikit-learn's digits differ from the ones the arrays were built from"
        out: dict[str, Any] = {}
        for fname in _DIGITS_FILES:
            path = folder / fname
            info = manifest["files"][fname]
            if not path.is_file():
                return None, f"{fname} is missing"
            if _sha256_file(path) != info["sha256"]:
                return None, f"{fname} does not match its sha256"
            arr = np.load(path, allow_pickle=False)
            if list(arr.shape) != info["shape"] or arr.dtype.str != info["dtype"]:
                return None, f"{fname} has an unexpected shape or dtype"
            out[fname[: -len(".npy")]] = arr
        out["warmup_accuracy"] = manifest.get("warmup_accuracy", {})
        out["versions"] = manifest.get("versions", {})
        return out, ""
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"unreadable ({type(exc).__name__}: {exc})"


def load_digits_dataset(
    *,
    warmup_fraction: float = 0.2,
    random_state: int | np.random.Generator | None = 0,
    data_dir: str | Path | None = None,
    recompute: bool = False,
) -> Dataset:
    """Scikit-learn's handwritten digits (offline) with warm-up representations, ready to filter.

    scikit-learn ships the 1,797 8×8 digit images (the UCI "Optical Recognition of Handwritten Digits" test
    set, CC BY 4.0). Following the paper, a seeded, stratified 20 % warm-up split trains the models that
    define Φ; those rows are **not** in the returned dataset (their positions are in
    ``meta["warmup_indices"]``), so 1,438 rows remain with default settings.

    Representations (see :data:`DIGITS_REPRESENTATIONS`), default first: ``"mlp"`` (64-d hidden layer of a
    warm-up MLP), ``"mlp_small"`` (8-d, a weaker adversary), ``"pca"`` (16 components fitted on the warm-up
    rows) and ``"pixels"`` (64 raw pixels / 16).

    The arrays are read from ``sample_data/digits`` when present and their sha256 and recipe match (fast);
    otherwise they are recomputed (about a second). ``meta["source"]`` says which happened.

    Parameters
    ----------
    warmup_fraction : float, default=0.2
        Share of rows used for the warm-up models.
    random_state : int, numpy Generator or None, default=0
        The one seed of the split and the models (the shipped arrays use 0).
    data_dir : path, optional
        Folder with the shipped arrays (default: ``sample_data/digits``).
    recompute : bool, default=False
        Ignore the shipped arrays.

    Returns
    -------
    Dataset
        ``frame`` has columns ``id`` (position in ``load_digits()``), ``label`` (0-9) and the 64 pixel columns
        ``pixel_0_0`` ... ``pixel_7_7`` (0-16); ``ids`` are the same positions; ``images`` is (n, 8, 8).

    Examples
    --------
    >>> from aflite_core.datasets import load_digits_dataset
    >>> ds = load_digits_dataset()
    >>> ds.n_rows, ds.representation("mlp").shape, len(ds.meta["warmup_indices"])
    (1438, (1438, 64), 359)
    """
    func = "load_digits_dataset"
    if not isinstance(warmup_fraction, float) or not 0.0 < warmup_fraction < 1.0:
        raise v.param_error("warmup_fraction", func, "a float in (0, 1)", warmup_fraction)
    seed = v.check_random_state(random_state, func)
    data, target, digest = _digits_raw()
    folder = Path(data_dir) if data_dir is not None else SAMPLE_DATA_DIR / _DIGITS_DIR
    arrays, reason = (None, "recompute=True") if recompute else _read_shipped_digits(folder, warmup_fraction, seed,
                                                                                     digest)
    if arrays is None:
        arrays = build_digits_arrays(warmup_fraction=warmup_fraction, random_state=seed)
        arrays["versions"] = _versions()
        source = "recomputed"
    else:
        source = "shipped"
    ids = np.asarray(arrays["ids"], dtype=np.int64)
    warm = np.asarray(arrays["warmup_indices"], dtype=np.int64)
    pixels = data[ids]
    frame = pd.DataFrame(pixels.astype(np.int64), columns=[f"pixel_{r}_{c}" for r in range(8) for c in range(8)])
    frame.insert(0, "label", target[ids])
    frame.insert(0, "id", ids)
    reps = {
        "mlp": arrays["mlp"],
        "mlp_small": arrays["mlp_small"],
        "pca": arrays["pca"],
        "pixels": (pixels / 16.0).astype(np.float32),
    }
    meta = {
        "source": source,
        "recompute_reason": reason if source == "recomputed" else None,
        "data_dir": str(folder),
        "warmup_indices": warm.tolist(),
        "n_warmup": len(warm),
        "warmup_fraction": warmup_fraction,
        "random_state": seed,
        "warmup_accuracy": dict(arrays.get("warmup_accuracy", {})),
        "ids": "position of the row in sklearn.datasets.load_digits()",
        "digits_sha256": digest,
        "versions": dict(arrays.get("versions", {})),
        "licence": "CC BY 4.0 (UCI Optical Recognition of Handwritten Digits, E. Alpaydin and C. Kaynak)",
    }
    return Dataset(
        name="digits",
        frame=frame,
        label_column="label",
        classes=tuple(range(10)),
        y=target[ids].astype(np.int32),
        ids=ids,
        representations=reps,
        representation_descriptions=dict(DIGITS_REPRESENTATIONS),
        description=(
            f"Handwritten digits 0-9 (8×8 pixels) shipped with scikit-learn: {len(ids):,} rows to filter; "
            f"{len(warm):,} others ({warmup_fraction:.0%}) trained the warm-up models and are left out."
        ),
        id_column="id",
        text_columns=(),
        images=data[ids].reshape(-1, 8, 8).astype(np.uint8),
        meta=meta,
    )


# --------------------------------------------------------------------------------------------------------------
# NLI: SNLI / MultiNLI
# --------------------------------------------------------------------------------------------------------------

#: Hugging Face dataset names, by the names :func:`load_nli_dataset` accepts
_HF_NLI = {"snli": "stanfordnlp/snli", "mnli": "nyu-mll/multi_nli", "multinli": "nyu-mll/multi_nli",
           "multi_nli": "nyu-mll/multi_nli"}
_NLI_ALIASES = {"premise": ("premise", "sentence1"), "hypothesis": ("hypothesis", "sentence2"),
                "label": ("label", "gold_label")}
_NO_GOLD = {"-", "", "none", "null"}


def normalize_nli_frame(frame: pd.DataFrame, *, source: str = "records", id_prefix: str = "nli") -> pd.DataFrame:
    """Bring NLI rows of any common layout to ``id, premise, hypothesis, label`` + the other original columns.

    Accepted layouts: SNLI / MultiNLI's original JSONL (``sentence1``, ``sentence2``, ``gold_label``,
    ``pairID`` ...), the Hugging Face releases (``premise``, ``hypothesis``, integer ``label`` with -1 for no
    gold label) and AFLite Studio's own (``premise``, ``hypothesis``, string ``label``). Rows without a gold
    label (``-`` or -1) are dropped; their number is in ``frame.attrs["n_dropped_no_gold_label"]``. Parse-tree
    columns (``*_parse``) are dropped. Ids come from ``id``, ``pairID`` or ``pair_id`` when present and unique,
    otherwise ``f"{id_prefix}-{position}"`` with the 0-based position in the input (before dropping).

    Parameters
    ----------
    frame : DataFrame
        Raw rows.
    source : str, default="records"
        Name used in messages.
    id_prefix : str, default="nli"
        Prefix of generated ids.

    Returns
    -------
    DataFrame
        Labels are the strings of :data:`NLI_LABELS`.
    """
    renamed: dict[str, str] = {}
    for target, names in _NLI_ALIASES.items():
        found = next((c for c in names if c in frame.columns), None)
        if found is None:
            raise ValueError(
                f"'{source}' is not NLI data: it has no {' or '.join(repr(c) for c in names)} column; its columns "
                f"are {list(frame.columns)}."
            )
        renamed[found] = target
    out = frame.drop(columns=[c for c in frame.columns if str(c).endswith("_parse")])
    clash = [t for s, t in renamed.items() if s != t and t in out.columns]
    out = out.drop(columns=clash).rename(columns=renamed)
    id_col = next((c for c in ("id", "pairID", "pair_id") if c in out.columns), None)
    if id_col is not None and out[id_col].notna().all() and out[id_col].is_unique:
        ids = out[id_col].astype(str).to_numpy()  # a pairID column is kept as well
    else:
        ids = np.array([f"{id_prefix}-{i}" for i in range(len(out))], dtype=object)
    if "id" in out.columns:
        out = out.drop(columns=["id"])
    out.insert(0, "id", ids)

    raw = out["label"].tolist()
    names: list[str | None] = []
    for i, value in enumerate(raw):
        if value is None or (isinstance(value, float) and np.isnan(value)):
            names.append(None)
        elif isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer()):
            code = int(value)
            if code == -1:
                names.append(None)
            elif 0 <= code < len(NLI_LABELS):
                names.append(NLI_LABELS[code])
            else:
                raise ValueError(f"'{source}' has an unknown NLI label {value!r} in row {i}; expected 0, 1, 2 or -1.")
        else:
            text = str(value).strip().lower()
            if text in _NO_GOLD:
                names.append(None)
            elif text in NLI_LABELS:
                names.append(text)
            else:
                raise ValueError(
                    f"'{source}' has an unknown NLI label {value!r} in row {i}; expected one of {list(NLI_LABELS)} "
                    "or '-' (no gold label)."
                )
    keep = np.array([x is not None for x in names], dtype=bool)
    out["label"] = names
    out = out.loc[keep].reset_index(drop=True)
    cols = ["id", "premise", "hypothesis", "label"]
    out = out[cols + [c for c in out.columns if c not in cols]]
    out.attrs["n_dropped_no_gold_label"] = int((~keep).sum())
    return out


def nli_dataset_from_records(
    records: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    name: str = "nli",
    split: str | None = None,
    source: str | None = None,
    features: Any = None,
    text_features: bool | None = None,
    n_components: int = 128,
    max_rows: int | None = None,
    random_state: int | np.random.Generator | None = 0,
) -> Dataset:
    """Turn NLI rows (any layout :func:`normalize_nli_frame` accepts) into a :class:`Dataset`. No network.

    Parameters
    ----------
    records : DataFrame or iterable of dicts
        Raw rows.
    name : str, default="nli"
        Dataset name (also the prefix of generated ids).
    split : str, optional
        Split name, recorded in ``meta``.
    source : str, optional
        Name used in messages.
    features : array or dict, optional
        Representations aligned with the rows *after* dropping rows without a gold label and sampling.
    text_features : bool, optional
        TF-IDF views (``"tfidf"`` of premise + hypothesis and the partial-input ``"tfidf_hypothesis"``);
        default: when no ``features`` are given.
    n_components : int, default=128
        Dimensions of the TF-IDF views.
    max_rows : int, optional
        Keep a seeded random sample of this many rows (in their original order).
    random_state : int, numpy Generator or None, default=0
        The one seed (sampling and TF-IDF).

    Returns
    -------
    Dataset
        Columns ``id, premise, hypothesis, label`` first; classes in the order of :data:`NLI_LABELS` that occur.
    """
    func = "nli_dataset_from_records"
    src = source or name
    frame = records if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))
    if len(frame) == 0:
        raise ValueError(f"'{src}' has no rows.")
    prefix = f"{name}-{split}" if split else name
    norm = normalize_nli_frame(frame, source=src, id_prefix=prefix)
    dropped = norm.attrs.get("n_dropped_no_gold_label", 0)
    seed = v.check_random_state(random_state, func)
    rng = np.random.default_rng(seed)
    feature_seed = int(rng.integers(0, 2**31 - 1))
    if max_rows is not None:
        v.check_int(max_rows, "max_rows", func, low=2)
        if max_rows < len(norm):
            keep = np.sort(rng.choice(len(norm), size=max_rows, replace=False))
            norm = norm.iloc[keep].reset_index(drop=True)
    ds = dataset_from_table(
        norm, label_column="label", id_column="id", pair=("premise", "hypothesis"), features=features,
        text_features=text_features, n_components=n_components, name=name, source=src, random_state=feature_seed,
        description=f"{name} natural-language inference pairs" + (f" ({split})" if split else ""),
        meta={"split": split, "n_dropped_no_gold_label": dropped, "max_rows": max_rows, "random_state": seed},
    )
    # classes in the canonical NLI order (entailment, neutral, contradiction), not alphabetical
    order = [c for c in NLI_LABELS if c in ds.classes]
    remap = np.array([order.index(c) for c in ds.classes], dtype=np.int32)
    return dataclasses.replace(ds, classes=tuple(order), y=remap[ds.y])


def fetch_nli_records(name: str, split: str = "validation") -> pd.DataFrame:
    """Fetch SNLI or MultiNLI rows with the optional ``datasets`` library (network, or its local cache).

    Parameters
    ----------
    name : {"snli", "mnli"}
        Dataset name.
    split : str, default="validation"
        SNLI: ``train``, ``validation``, ``test``; MultiNLI: ``train``, ``validation_matched``,
        ``validation_mismatched`` (``validation`` means ``validation_matched``).

    Returns
    -------
    DataFrame
        Raw rows in the Hugging Face layout (integer labels, -1 = no gold label).
    """
    key = name.lower()
    if key not in _HF_NLI:
        raise ValueError(f"Unknown NLI dataset {name!r}; use one of {sorted(_HF_NLI)} or a local file.")
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise ImportError(
            "Fetching SNLI / MultiNLI by name needs the optional 'datasets' package: pip install datasets. "
            "Without it (or offline), load a local copy of the original JSONL file instead."
        ) from exc
    hf_name = _HF_NLI[key]
    if hf_name.endswith("multi_nli") and split == "validation":
        split = "validation_matched"
    try:
        return load_dataset(hf_name, split=split).to_pandas()
    except Exception as exc:  # network, cache or unknown split: one clear message for the app and the CLI
        raise ValueError(
            f"Could not fetch {name} ({hf_name}, split {split!r}) with the datasets library: {exc}. Fetching needs "
            "network access once; offline, load a local copy of the original JSONL file instead."
        ) from None


def load_nli_dataset(
    name_or_path: str | Path | bytes | BinaryIO,
    *,
    split: str | None = None,
    format: str | None = None,
    file_name: str | None = None,
    max_bytes: int | None = None,
    **options: Any,
) -> Dataset:
    """SNLI / MultiNLI by name (fetched with ``datasets``) or from a local file in any supported layout.

    A local file (or upload) may be the original ``snli_1.0_dev.jsonl`` / ``multinli_1.0_dev_matched.jsonl``
    (``sentence1``, ``sentence2``, ``gold_label``), a Hugging Face export, or premise / hypothesis / label
    JSONL, CSV, TSV or Parquet. Both paths go through :func:`nli_dataset_from_records`.

    Parameters
    ----------
    name_or_path : str, path, bytes or file-like
        ``"snli"``, ``"mnli"`` or a file.
    split : str, optional
        Split to fetch by name (default ``"validation"``); for a file it is only recorded in ``meta``.
    format : str, optional
        Table format of a file, when its name does not say.
    file_name : str, optional
        Name of uploaded bytes.
    max_bytes : int, optional
        Refuse larger files.
    **options
        Passed to :func:`nli_dataset_from_records` (``features``, ``max_rows``, ``n_components``,
        ``random_state``, ``text_features``).

    Returns
    -------
    Dataset
        See :func:`nli_dataset_from_records`.
    """
    if isinstance(name_or_path, str) and name_or_path.lower() in _HF_NLI and not Path(name_or_path).exists():
        key = name_or_path.lower()
        split = split or "validation"
        raw = fetch_nli_records(key, split)
        return nli_dataset_from_records(raw, name=key if key == "snli" else "mnli", split=split,
                                        source=f"{key} ({split})", **options)
    if isinstance(name_or_path, (str, Path)) and not Path(name_or_path).is_file():
        raise ValueError(
            f"'{name_or_path}' is neither a known NLI dataset name ({', '.join(sorted(_HF_NLI))}) nor an existing file."
        )
    shown = source_name(name_or_path, file_name)
    frame = read_table(name_or_path, name=shown, format=format, max_bytes=max_bytes)
    return nli_dataset_from_records(frame, name=options.pop("name", Path(shown).stem), split=split, source=shown,
                                    **options)

