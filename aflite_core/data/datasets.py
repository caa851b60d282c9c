"""Datasets for AFLite: one object holding the rows, their labels and one or more representations Φ(X).

:class:`Dataset` holds a table (all original columns), integer label codes with class names, stable ids,
display fields (text columns, a premise/hypothesis pair, images) and named float32 representations. Where
datasets come from: :mod:`aflite_core.data.digits` (the bundled digits), :mod:`aflite_core.data.user_tables` (the user's
own table), :mod:`aflite_core.data.nli` (SNLI / MultiNLI) and :mod:`aflite_core.data.bundled_snli` (the bundled SNLI
sample).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v

__all__ = ["SAMPLE_DATA_DIR", "Dataset"]


#: the folder of the bundled sample data (next to the package in a source checkout; may be absent)
SAMPLE_DATA_DIR = Path(__file__).resolve().parents[2] / "sample_data"


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
    def class_names(self) -> list[str]:
        """Class names as strings, in code order (what every table, chart and export shows)."""
        return [str(c) for c in self.classes]

    def class_names_of(self, codes: NDArray) -> NDArray:
        """The class name (a str) of each label code in ``codes``, e.g. a run's ``result.y``.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> d = Dataset(name="toy", frame=pd.DataFrame({"label": [3, 7, 3]}), label_column="label", classes=(3, 7),
        ...             y=np.array([0, 1, 0]), ids=np.arange(3), representations={"x": np.zeros((3, 1), np.float32)})
        >>> d.class_names_of(np.array([1, 0])).tolist()
        ['7', '3']
        """
        names = np.empty(len(self.classes), dtype=object)
        names[:] = self.class_names
        return names[np.asarray(codes)]

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
            f"Dataset(name={self.name!r}, n_rows={self.n_rows}, n_classes={self.n_classes}, representations=[{reps}])"
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
