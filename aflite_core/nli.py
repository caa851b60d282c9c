"""SNLI / MultiNLI: from a local file in their original format, or by name with the optional ``datasets`` library."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from . import _validation as v
from .datasets import Dataset
from .io import read_table, source_name
from .tables import dataset_from_table

__all__ = ["NLI_LABELS", "fetch_nli_records", "load_nli_dataset", "nli_dataset_from_records", "normalize_nli_frame"]


#: NLI class names, in the integer order of the Hugging Face SNLI / MultiNLI releases (0, 1, 2)
NLI_LABELS = ("entailment", "neutral", "contradiction")


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
