"""The user's own table as a :class:`~aflite_core.data.datasets.Dataset` (CSV, TSV, Parquet, JSONL; never unpickled).

Labels, ids, texts, a premise/hypothesis pair, images, and features from aligned .npy files, numeric columns or
the text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from .datasets import Dataset
from .readers import _NamedBytesIO, _read_bytes, _too_large, read_features, read_table, source_name

__all__ = [
    "ID_COLUMN_NAMES",
    "FeatureSpec",
    "dataset_from_table",
    "guess_id_column",
    "id_column_candidates",
    "id_column_problem",
    "load_table_dataset",
]


FeatureSpec = ArrayLike | tuple[ArrayLike, str]

#: column names read as row ids, in order of preference; compared ignoring case, "_", "-" and spaces, so
#: ``pairID``, ``pair_id`` and ``Pair ID`` are the same name. The one list of the library, the CLI and the app.
ID_COLUMN_NAMES = (
    "id",
    "guid",
    "uid",
    "uuid",
    "pair_id",
    "example_id",
    "sample_id",
    "item_id",
    "row_id",
    "idx",
)


def _name_key(name: Any) -> str:
    return "".join(ch for ch in str(name).lower() if ch not in "_- ")


def id_column_candidates(columns: Sequence[Any]) -> list[str]:
    """The columns named like ids (:data:`ID_COLUMN_NAMES`), in that list's order of preference.

    Examples
    --------
    >>> id_column_candidates(["premise", "pairID", "label", "guid"])
    ['guid', 'pairID']
    """
    rank = {_name_key(n): i for i, n in enumerate(ID_COLUMN_NAMES)}
    found = [(rank[_name_key(c)], i, str(c)) for i, c in enumerate(columns) if _name_key(c) in rank]
    return [c for _, _, c in sorted(found)]


def id_column_problem(frame: pd.DataFrame, column: str) -> str | None:
    """Why ``column`` cannot serve as row ids (missing values or repeated values), in words; None when it can.

    Examples
    --------
    >>> id_column_problem(pd.DataFrame({"pair_id": ["a", None, "b", None]}), "pair_id")
    "'pair_id' is empty in 2 of 4 rows (first: row 1)"
    >>> id_column_problem(pd.DataFrame({"id": [1, 2, 1]}), "id") is None
    False
    """
    series = frame[column]
    missing = _missing_mask(series)
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        return f"'{column}' is empty in {int(missing.sum()):,} of {len(series):,} rows (first: row {first})"
    dup = series.duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        value = _plain(series.iloc[rows[0]])
        other = int(np.flatnonzero((series == value).to_numpy())[1])
        shown = str(value) if len(str(value)) <= 32 else str(value)[:31] + "…"
        return f"'{column}' repeats values (first: {shown!r} in rows {int(rows[0])} and {other})"
    return None


def guess_id_column(frame: pd.DataFrame) -> tuple[str | None, dict[str, str]]:
    """The id column of a table: the first column named like an id that has a unique value in every row.

    Returns
    -------
    column : str or None
        None when no column named like an id can be used (rows are then identified by their position).
    refused : dict of str to str
        Each id-like column that cannot be used, with why (:func:`id_column_problem`), so a caller can say so
        instead of silently dropping it.

    Examples
    --------
    >>> frame = pd.DataFrame({"pairID": ["p1", "p2"], "id": ["a", None], "label": [0, 1]})
    >>> guess_id_column(frame)
    ('pairID', {'id': "'id' is empty in 1 of 2 rows (first: row 1)"})
    """
    refused: dict[str, str] = {}
    for col in id_column_candidates(list(frame.columns)):
        problem = id_column_problem(frame, col)
        if problem is None:
            return col, refused
        refused[col] = problem
    return None, refused


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
                f"'{src}' has {v.with_article(type(x).__name__)} as the label in row {i} of column {column!r}; "
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
    ``"tfidf_hypothesis"`` for a ``pair``; see :func:`aflite_core.data.features.text_representations`). Text
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
    >>> from aflite_core.data.user_tables import dataset_from_table
    >>> df = pd.DataFrame({"text": ["good", "bad", "fine", "awful"], "label": ["pos", "neg", "pos", "neg"]})
    >>> ds = dataset_from_table(df, label_column="label", text_columns=["text"], features=np.eye(4))
    >>> ds.classes, ds.y.tolist(), ds.representation_names
    (('neg', 'pos'), [1, 0, 1, 0], ('features',))
    """
    src = source or name
    if not isinstance(frame, pd.DataFrame):
        raise v.param_error("frame", "dataset_from_table", "a pandas DataFrame", frame, TypeError)
    n = len(frame)
    if n < 2:
        raise ValueError(f"'{src}' has {n} row(s); AFLite needs at least 2.")
    if not (isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1):
        frame = frame.reset_index(drop=True)

    def need(col: str, role: str) -> None:
        _need_column(frame, col, role, src)

    need(label_column, "label column")
    labels = _encode_labels(frame[label_column], src, label_column)
    if id_column is not None:
        need(id_column, "id column")
        ids = _ids_from_column(frame, id_column, src)
    else:
        ids = np.arange(n, dtype=np.int64)
    texts = _text_columns(frame, text_columns, pair, src)

    reps, descs = _representations(
        frame,
        src,
        texts,
        pair,
        features=features,
        feature_columns=feature_columns,
        text_features=text_features,
        skip=(label_column, id_column),
        n_components=n_components,
        random_state=random_state,
    )

    image_array = None
    if image_column is not None:
        need(image_column, "image column")
        image_array = _parse_images(frame, image_column, image_shape, src)
    elif images is not None:
        image_array = np.asarray(images)
    info = {
        "source": src,
        "n_rows": n,
        "label_column": label_column,
        "id_column": id_column,
        "ids": f"column {id_column!r}" if id_column else "row position in the source (0-based)",
    }
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


def _text_columns(frame: pd.DataFrame, text_columns: Sequence[str], pair: tuple[str, str] | None, src: str) -> list:
    """The text columns, checked: ``text_columns`` and then the pair's two columns (premise, hypothesis)."""
    texts = list(text_columns)
    for col in texts:
        _need_column(frame, col, "text column", src)
    if pair is not None:
        if len(pair) != 2:
            raise ValueError(f"The pair for '{src}' must name two columns (premise, hypothesis). Got {pair!r}.")
        for col in pair:
            _need_column(frame, col, "text column", src)
        texts += [c for c in pair if c not in texts]
    return texts


def _need_column(frame: pd.DataFrame, col: str, role: str, src: str) -> None:
    if col not in frame.columns:
        raise ValueError(f"'{src}' has no {role} {col!r}; its columns are {list(frame.columns)}. Choose the {role}.")


def _representations(
    frame: pd.DataFrame,
    src: str,
    texts: list[str],
    pair: tuple[str, str] | None,
    *,
    features: ArrayLike | Mapping[str, FeatureSpec] | None,
    feature_columns: Sequence[str] | None,
    text_features: bool | None,
    skip: tuple,
    n_components: int,
    random_state: int | np.random.Generator | None,
) -> tuple[dict[str, NDArray], dict[str, str]]:
    """The table's representations Φ(X) and their descriptions (see :func:`dataset_from_table`).

    The given feature arrays (row i describes row i), the numeric ``feature_columns`` as one representation, and,
    when ``text_features`` asks for them (by default: when nothing else was given), TF-IDF + SVD of the text.
    """
    columns = list(frame.columns)
    n = len(frame)
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
            _need_column(frame, col, "feature column", src)
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
            numeric = [
                c
                for c in columns
                if c not in skip
                and pd.api.types.is_numeric_dtype(frame[c])
                and not pd.api.types.is_bool_dtype(frame[c])
            ]
            hint = f" (numeric columns here: {numeric[:10]})" if numeric else ""
            raise ValueError(
                f"'{src}' gives no features: add an aligned .npy feature file, choose text columns to compute "
                f"TF-IDF features from, or choose numeric feature columns{hint}."
            )
        from .features import text_representations

        for key, (X, desc) in text_representations(
            frame, texts, pair=pair, n_components=n_components, random_state=random_state
        ).items():
            reps.setdefault(key, X)
            descs.setdefault(key, desc)
    return reps, descs


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
        The table (see :func:`aflite_core.data.readers.read_table`).
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
    return dataset_from_table(
        frame, label_column=label_column, features=feats or None, name=ds_name, source=shown, meta=meta, **options
    )
