"""The datasets every page works on: the bundled ones (cached for everyone) and this session's own.

The sidebar picks one (:func:`dataset_choices`); every page then gets it with :func:`dataset`. Uploaded
datasets and opened run directories are read from the session through :func:`aflite_app.state.session_data`.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import streamlit as st

from aflite_core import synthetic
from aflite_core.datasets import Dataset
from aflite_core.digits import load_digits_dataset

from ..state import BUNDLED, DatasetSpec, session_data

__all__ = [
    "bundled_dataset",
    "class_names",
    "dataset",
    "dataset_choices",
    "default_partial_input",
    "is_partial_input",
    "partial_input_choices",
    "representation_table",
]


@st.cache_resource(max_entries=8, show_spinner="Loading the dataset…")
def bundled_dataset(key: str) -> Dataset:
    """A bundled dataset by key (see :data:`aflite_app.state.BUNDLED`)."""
    if key == "digits":
        return load_digits_dataset()
    if key == "planted":
        X, y, biased = synthetic.make_planted_bias(2000, 16, class_sep=0.3, bias_fraction=0.25, random_state=0)
        return _synthetic_dataset(
            "planted",
            X,
            y,
            {"planted bias": biased},
            "Two Gaussian classes a linear model separates only weakly; 25 % of the rows "
            "carry a label-revealing shift (the planted bias AFLite should remove).",
        )
    if key == "circles":
        data = synthetic.make_biased_circles(1000, separation=0.5, flip_fraction=0.1, random_state=0)
        return _synthetic_dataset(
            "circles",
            data.X,
            data.y,
            {"planted bias": data.is_biased, "flipped label": data.is_flipped},
            "Two classes on concentric circles; 75 % of each class carry class-specific "
            "bias features, some biased rows have flipped labels (ICML 2020, §3).",
        )
    raise ValueError(f"Unknown bundled dataset {key!r}; choose one of {list(BUNDLED)}.")


def _synthetic_dataset(name: str, X, y, truth: dict[str, np.ndarray], description: str) -> Dataset:
    frame = pd.DataFrame({"label": np.asarray(y)})
    for col, values in truth.items():
        frame[col] = np.asarray(values, dtype=bool)
    for j in range(min(X.shape[1], 4)):
        frame[f"x{j}"] = X[:, j]
    classes = tuple(sorted(set(np.asarray(y).tolist())))
    return Dataset(
        name=name,
        frame=frame,
        label_column="label",
        classes=classes,
        y=np.searchsorted(classes, y).astype(np.int32),
        ids=np.arange(len(y)),
        representations={"features": np.asarray(X, dtype=np.float32)},
        representation_descriptions={"features": f"raw features ({X.shape[1]}-d)"},
        description=description,
        meta={"planted_truth": list(truth)},
    )


def dataset(spec: DatasetSpec | str) -> Dataset:
    """The dataset behind a spec: bundled (cached for everyone) or uploaded in this session."""
    key = spec.key if isinstance(spec, DatasetSpec) else spec
    uploads = session_data().uploads
    if key in uploads:
        return uploads[key]
    return bundled_dataset(key)


def dataset_choices() -> dict[str, str]:
    """Key -> label of every dataset this session can pick."""
    out = dict(BUNDLED)
    for key, data in session_data().uploads.items():
        kind = "Opened" if key.startswith("run-") else "Uploaded"
        out[key] = f"{kind}: {data.name} ({data.n_rows:,} rows)"
    return out


def representation_table(data: Dataset) -> pd.DataFrame:
    """The representations Φ(X) of a dataset: name, dimensions and what each is (for a table on the Data page)."""
    return pd.DataFrame(
        {
            "representation": list(data.representations),
            "dimensions": [X.shape[1] for X in data.representations.values()],
            "what it is": [data.representation_descriptions.get(r, r) for r in data.representations],
        }
    )


def class_names(data: Dataset) -> list[str]:
    """Class names as strings, in code order."""
    return [str(c) for c in data.classes]


def is_partial_input(data: Dataset, rep: str) -> bool:
    """A partial-input view: described so (TF-IDF of the hypothesis alone), or named after the hypothesis."""
    desc = data.representation_descriptions.get(rep, "").lower()
    return desc.startswith("partial input") or re.search(r"(^|[^a-z])hyp", rep.lower()) is not None


def partial_input_choices(data: Dataset, used: str | None) -> list[str]:
    """Representations that can serve as the partial input (all but the one AFLite used), natural ones first.

    A representation described as a partial input (e.g. the hypothesis-only TF-IDF of a sentence pair) comes
    first (:func:`is_partial_input`).
    """
    used = used or data.default_representation
    others = [r for r in data.representations if r != used]
    return sorted(others, key=lambda r: not is_partial_input(data, r))


def default_partial_input(data: Dataset, used: str | None) -> str | None:
    """The partial-input representation to show by default: a natural partial input when the data has one."""
    choices = partial_input_choices(data, used)
    return choices[0] if choices and is_partial_input(data, choices[0]) else None
