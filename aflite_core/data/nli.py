"""SNLI / MultiNLI: from a local file in their original format, or by name with the optional ``datasets`` library."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _validation as v
from .datasets import Dataset
from .readers import read_table, source_name
from .user_tables import dataset_from_table, guess_id_column

__all__ = [
    "NLI_LABELS",
    "NLI_SPLITS",
    "FetchProgress",
    "fetch_nli_records",
    "load_nli_dataset",
    "nli_dataset_from_records",
    "normalize_nli_frame",
]


#: NLI class names, in the integer order of the Hugging Face SNLI / MultiNLI releases (0, 1, 2)
NLI_LABELS = ("entailment", "neutral", "contradiction")


#: Hugging Face dataset names, by the names :func:`load_nli_dataset` accepts
_HF_NLI = {
    "snli": "stanfordnlp/snli",
    "mnli": "nyu-mll/multi_nli",
    "multinli": "nyu-mll/multi_nli",
    "multi_nli": "nyu-mll/multi_nli",
}


_NLI_ALIASES = {
    "premise": ("premise", "sentence1"),
    "hypothesis": ("hypothesis", "sentence2"),
    "label": ("label", "gold_label"),
}


_NO_GOLD = {"-", "", "none", "null"}


def normalize_nli_frame(frame: pd.DataFrame, *, source: str = "records", id_prefix: str = "nli") -> pd.DataFrame:
    """Bring NLI rows of any common layout to ``id, premise, hypothesis, label`` + the other original columns.

    Accepted layouts: SNLI / MultiNLI's original JSONL (``sentence1``, ``sentence2``, ``gold_label``,
    ``pairID`` ...), the Hugging Face releases (``premise``, ``hypothesis``, integer ``label`` with -1 for no
    gold label) and AFLite Studio's own (``premise``, ``hypothesis``, string ``label``). Rows without a gold
    label (``-`` or -1) are dropped; their number is in ``frame.attrs["n_dropped_no_gold_label"]``. Parse-tree
    columns (``*_parse``) are dropped. Ids come from the first column named like an id
    (:data:`aflite_core.data.user_tables.ID_COLUMN_NAMES`: ``id``, ``guid``, ``pairID`` / ``pair_id`` ...) that has a
    unique value in every row, otherwise ``f"{id_prefix}-{position}"`` with the 0-based position in the input
    (before dropping).

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
    id_col, _ = guess_id_column(out)
    if id_col is not None:
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
        norm,
        label_column="label",
        id_column="id",
        pair=("premise", "hypothesis"),
        features=features,
        text_features=text_features,
        n_components=n_components,
        name=name,
        source=src,
        random_state=feature_seed,
        description=f"{name} natural-language inference pairs" + (f" ({split})" if split else ""),
        meta={"split": split, "n_dropped_no_gold_label": dropped, "max_rows": max_rows, "random_state": seed},
    )
    # classes in the canonical NLI order (entailment, neutral, contradiction), not alphabetical
    order = [c for c in NLI_LABELS if c in ds.classes]
    remap = np.array([order.index(c) for c in ds.classes], dtype=np.int32)
    return dataclasses.replace(ds, classes=tuple(order), y=remap[ds.y])


@dataclasses.dataclass(frozen=True)
class FetchProgress:
    """What the progress callback of :func:`fetch_nli_records` receives at each stage.

    Attributes
    ----------
    stage : {"load", "sample", "convert", "done"}
        ``load``: the ``datasets`` library is loading (downloading on first use, which it reports on its own
        progress bars); ``sample``: drawing the capped rows; ``convert``: building the table; ``done``.
    fraction : float
        Rough share of the work done, in [0, 1] (stages, not bytes).
    message : str
        One line for a progress bar.
    """

    stage: str
    fraction: float
    message: str


#: the splits of each dataset by name (MultiNLI's ``validation`` means ``validation_matched``)
NLI_SPLITS = {"snli": ("train", "validation", "test"), "mnli": ("train", "validation_matched", "validation_mismatched")}

#: the ``datasets`` builder of each local file type :func:`fetch_nli_records` reads through ``data_files``
_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}


def _check_split(key: str, split: Any) -> str:
    family = "snli" if key == "snli" else "mnli"
    if family == "mnli" and split == "validation":
        split = "validation_matched"
    if split not in NLI_SPLITS[family]:
        raise ValueError(f"Unknown split {split!r} of {key}; use one of {list(NLI_SPLITS[family])}.")
    return split


def _local_files(data_files: Any, split: str) -> tuple[str, list[str]]:
    """The ``datasets`` builder and the files of ``split`` in a local file or folder (Hugging Face layout)."""
    paths = [Path(p) for p in data_files] if isinstance(data_files, list | tuple) else [Path(data_files)]
    files: list[Path] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            # <split>.<ext> or <split>-00000-of-00001.<ext>, in the folder or any sub-folder ("validation" does not
            # match "validation_matched")
            pattern = re.compile(rf"^{re.escape(split)}(?:[-.])")
            files += sorted(
                f for f in path.rglob("*") if f.is_file() and f.suffix.lower() in _BUILDERS and pattern.match(f.name)
            )
        else:
            raise ValueError(f"The local NLI data '{path}' does not exist.")
    if not files:
        raise ValueError(
            f"No file of split {split!r} in {', '.join(repr(str(p)) for p in paths)}: expected "
            f"{split}.jsonl, {split}.parquet or {split}-00000-of-00001.parquet."
        )
    kinds = {_BUILDERS.get(f.suffix.lower()) for f in files}
    if None in kinds or len(kinds) != 1:
        raise ValueError(
            f"The local NLI files of split {split!r} must all be .parquet, .jsonl / .json or .csv. Got "
            f"{sorted({f.suffix for f in files})}."
        )
    builder = kinds.pop()
    for f in files:
        _check_local_file(f, split, text=builder != "parquet")
    return builder, [str(f) for f in files]


#: bytes decoded at a time when a local text file is checked for UTF-8
_UTF8_CHUNK = 2**20


def _check_local_file(path: Path, split: str, *, text: bool) -> None:
    """Refuse, in one sentence naming only the file's name, an empty file or a text file that is not UTF-8.

    The ``datasets`` library says "StopIteration" for an empty JSONL file and "An error occurred while
    generating the dataset" for a CSV in another encoding; a file that fails here is never handed to it.
    """
    import codecs

    name = path.name
    if path.stat().st_size == 0:
        raise ValueError(
            f"The local NLI file '{name}' of split {split!r} is empty; it needs SNLI / MultiNLI rows (premise, "
            "hypothesis, label) as JSON Lines, CSV or Parquet."
        )
    if not text:
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, blank = 0, True
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_UTF8_CHUNK)
            pending = decoder.getstate()[0]  # the undecoded tail of the last chunk, decoded first now
            try:
                decoded = decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                where = offset - len(pending) + exc.start
                raise ValueError(
                    f"The local NLI file '{name}' of split {split!r} is not UTF-8 text (byte {where:,} cannot be "
                    "decoded); save it as UTF-8."
                ) from None
            blank = blank and not decoded.strip()
            if not chunk:
                break
            offset += len(chunk)
    if blank:
        raise ValueError(
            f"The local NLI file '{name}' of split {split!r} holds only white space; it needs SNLI / MultiNLI rows "
            "(premise, hypothesis, label) as JSON Lines, CSV or Parquet."
        )


def _gold_rows(ds: Any) -> NDArray[np.int64]:
    """Positions of the rows with a gold label, read from the Arrow column (nothing else is decoded)."""
    names = ds.column_names
    col = next((c for c in ("label", "gold_label") if c in names), None)
    if col is None:
        return np.arange(len(ds))
    values = ds.with_format("arrow")[col]
    arr = values.to_numpy(zero_copy_only=False) if hasattr(values, "to_numpy") else np.asarray(values)
    if arr.dtype.kind in "iuf":
        keep = arr >= 0
    else:
        keep = np.array([x is not None and str(x).strip().lower() not in _NO_GOLD for x in arr], dtype=bool)
    return np.flatnonzero(keep)


def fetch_nli_records(
    name: str,
    split: str = "validation",
    *,
    max_rows: int | None = None,
    random_state: int | np.random.Generator | None = 0,
    data_files: str | Path | Sequence[str | Path] | None = None,
    cache_dir: str | Path | None = None,
    progress: Callable[[FetchProgress], Any] | None = None,
) -> pd.DataFrame:
    """Fetch SNLI or MultiNLI rows with the optional ``datasets`` library (network, or its local cache).

    The first call downloads the split into the library's cache (SNLI: about 100 MB for all splits; MultiNLI:
    about 220 MB); later calls, also offline (``HF_HUB_OFFLINE=1``), read the cache. The rows stay
    memory-mapped Arrow data until the capped sample is converted, so capping a 550k-row split costs little.

    Parameters
    ----------
    name : {"snli", "mnli"}
        Dataset name (``multinli`` / ``multi_nli`` mean ``mnli``).
    split : str, default="validation"
        SNLI: ``train``, ``validation``, ``test``; MultiNLI: ``train``, ``validation_matched``,
        ``validation_mismatched`` (``validation`` means ``validation_matched``).
    max_rows : int, optional
        Keep a seeded random sample of this many rows *with a gold label* (in their original order).
    random_state : int, numpy Generator or None, default=0
        Seed of that sample.
    data_files : path or list of paths, optional
        Read local files through the same library path instead of the Hub: a file, or a folder holding the
        split as ``<split>.jsonl`` / ``<split>.parquet`` / ``<split>-00000-of-00001.parquet`` (the Hugging Face
        layout, e.g. a downloaded copy of the dataset repository), in the Hugging Face column layout or the
        original one (``sentence1``, ``sentence2``, ``gold_label``).
    cache_dir : path, optional
        The ``datasets`` cache folder (default: the library's, ``HF_DATASETS_CACHE``).
    progress : callable, optional
        Called with a :class:`FetchProgress` at each stage; its return value is ignored.

    Returns
    -------
    DataFrame
        Raw rows in the layout of the source (Hugging Face: integer labels, -1 = no gold label); pass them to
        :func:`nli_dataset_from_records` or :func:`normalize_nli_frame`.

    Raises
    ------
    ImportError
        When ``datasets`` is not installed (one sentence: what to install).
    ValueError
        For an unknown name or split, and, in one sentence, when the library cannot provide the split (offline
        and not cached, or a damaged cache).
    """
    func = "fetch_nli_records"
    key = name.lower() if isinstance(name, str) else name
    if key not in _HF_NLI:
        raise ValueError(f"Unknown NLI dataset {name!r}; use one of {sorted(_HF_NLI)} or a local file.")
    split = _check_split(key, split)
    if max_rows is not None:
        v.check_int(max_rows, "max_rows", func, low=1)
    seed = v.check_random_state(random_state, func)
    if progress is not None and not callable(progress):
        raise v.param_error("progress", func, "a callable or None", progress, TypeError)

    def report(stage: str, fraction: float, message: str) -> None:
        if progress is not None:
            progress(FetchProgress(stage, fraction, message))

    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise ImportError(
            "Fetching SNLI / MultiNLI by name needs the optional 'datasets' package: pip install datasets (or load "
            "a local copy of the original JSONL file instead)."
        ) from exc
    hf_name = _HF_NLI[key]
    kwargs: dict[str, Any] = {} if cache_dir is None else {"cache_dir": str(cache_dir)}
    if data_files is None:
        where, path, args = f"{name} ({hf_name}, split {split!r})", hf_name, {"split": split}
    else:
        builder, files = _local_files(data_files, split)
        where, path, args = (
            f"{name} from local files ({len(files)} {builder} file(s), split {split!r})",
            builder,
            {"data_files": {split: files}, "split": split},
        )
    report("load", 0.0, f"Loading {where} with the datasets library")
    try:
        ds = load_dataset(path, **args, **kwargs)
    except Exception as exc:  # network, cache or format: one clear sentence for the app and the CLI
        detail = " ".join(str(exc).split())
        if data_files is not None:  # a local file the checks above let through, but the library cannot parse
            for f in sorted(files, key=len, reverse=True):  # the server's folders stay out of the message
                detail = detail.replace(f, Path(f).name).replace(str(Path(f).parent), "…")
            detail = detail[:200].rstrip(" .") or type(exc).__name__
            raise ValueError(
                f"Could not read {where} with the datasets library ({detail}); check that each file holds SNLI / "
                "MultiNLI rows (premise, hypothesis, label) as JSON Lines, CSV or Parquet."
            ) from None
        detail = detail[:200] or type(exc).__name__
        offline = isinstance(exc, ConnectionError) or "offline" in detail.lower()
        hint = "it is not in the local cache and the Hub cannot be reached (offline)" if offline else detail
        raise ValueError(
            f"Could not fetch {where} with the datasets library: {hint}; fetching by name needs network access "
            "once, so offline load a local copy of the original JSONL file instead."
        ) from None
    if max_rows is None or not hasattr(ds, "select"):
        report("convert", 0.6, f"Building the table of {where}")
        frame = ds.to_pandas()
    else:
        gold = _gold_rows(ds)
        n_all = len(ds)
        if max_rows < len(gold):
            rng = np.random.default_rng(seed)
            rows = np.sort(rng.choice(gold, size=max_rows, replace=False))
        else:
            rows = gold
        report("sample", 0.5, f"Keeping {len(rows):,} of {n_all:,} rows ({len(gold):,} with a gold label)")
        report("convert", 0.6, f"Building the table of {len(rows):,} rows")
        frame = ds.select(rows).to_pandas()
    report("done", 1.0, f"{len(frame):,} rows of {where}")
    return frame


def load_nli_dataset(
    name_or_path: str | Path | bytes | BinaryIO,
    *,
    split: str | None = None,
    format: str | None = None,
    file_name: str | None = None,
    max_bytes: int | None = None,
    data_files: str | Path | Sequence[str | Path] | None = None,
    cache_dir: str | Path | None = None,
    progress: Callable[[FetchProgress], Any] | None = None,
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
    data_files, cache_dir, progress
        By name only: see :func:`fetch_nli_records` (``data_files`` reads a local copy through the ``datasets``
        library instead of the Hub).
    **options
        Passed to :func:`nli_dataset_from_records` (``features``, ``max_rows``, ``n_components``,
        ``random_state``, ``text_features``). By name, ``max_rows`` and ``random_state`` also cap the fetch
        (a seeded sample of rows with a gold label, drawn before the table is built).

    Returns
    -------
    Dataset
        See :func:`nli_dataset_from_records`.

    Notes
    -----
    By name this is slow the first time (a download) and a few seconds after (reading the cache and building
    TF-IDF views); an app should cache the returned dataset by (name, split, max_rows, random_state).
    """
    if isinstance(name_or_path, str) and name_or_path.lower() in _HF_NLI and not Path(name_or_path).exists():
        key = name_or_path.lower()
        split = _check_split(key, split or "validation")
        options.pop("name", None)
        raw = fetch_nli_records(
            key,
            split,
            max_rows=options.get("max_rows"),
            random_state=options.get("random_state", 0),
            data_files=data_files,
            cache_dir=cache_dir,
            progress=progress,
        )
        return nli_dataset_from_records(
            raw, name=key if key == "snli" else "mnli", split=split, source=f"{key} ({split})", **options
        )
    if data_files is not None:
        raise ValueError(
            "The 'data_files' parameter of load_nli_dataset goes with a dataset name (snli or mnli); "
            "to read one local file, pass its path as the first argument."
        )
    if isinstance(name_or_path, (str, Path)) and not Path(name_or_path).is_file():
        raise ValueError(
            f"'{name_or_path}' is neither a known NLI dataset name ({', '.join(sorted(_HF_NLI))}) nor an existing file."
        )
    shown = source_name(name_or_path, file_name)
    frame = read_table(name_or_path, name=shown, format=format, max_bytes=max_bytes)
    return nli_dataset_from_records(
        frame, name=options.pop("name", Path(shown).stem), split=split, source=shown, **options
    )
