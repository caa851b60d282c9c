"""Safe readers for features, labels and ids (no pickle, clear messages, optional size limits).

Every reader raises ``ValueError`` with one sentence naming the file and what is wrong, so the CLI and the
app can show it as is.
"""

from __future__ import annotations

import io as _io
import math
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._validation import shown, shown_list
from . import budget
from .parquet_reads import read_parquet_checked
from .preflight import (
    SizeLimitError,
    _first_line,
    _newline_bound,
    check_rows,
    count_rows_up_to,
    npy_header,
    text_columns,
)
from .text_tables import is_blank, parse_delimited, parse_jsonl

__all__ = [
    "LABEL_COLUMN_NAMES",
    "TABLE_FORMATS",
    "read_features",
    "read_labels",
    "read_table",
    "source_name",
]

#: numpy reads a file-like (not a real file) through a buffer of at most this many bytes on top of the array
_NPY_READ_BUFFER = 256 * 2**20

#: header cells recognised as naming the label column of a one-column file
LABEL_COLUMN_NAMES = ("label", "labels", "y", "target", "class", "gold_label")


def _name(source: Any) -> str:
    return str(getattr(source, "name", source))


def _check_size(source: Any, max_bytes: int | None) -> None:
    if max_bytes is None:
        return
    size = None
    if isinstance(source, (str, Path)):
        size = Path(source).stat().st_size
    elif hasattr(source, "getbuffer"):
        size = source.getbuffer().nbytes
    elif hasattr(source, "size"):
        size = source.size
    if size is not None and size > max_bytes:
        raise SizeLimitError(
            f"'{_name(source)}' is {size / 2**20:.1f} MB, more than the {max_bytes / 2**20:.0f} MB allowed here; "
            "use the command line (python -m aflite_core filter ...) for large files.",
            size,
        )


def read_features(
    source: str | Path | BinaryIO, *, mmap: bool = False, max_bytes: int | None = None, max_rows: int | None = None
) -> NDArray:
    """Read a 2-D numeric feature matrix from a ``.npy`` file (never unpickles).

    The header (shape, dtype) is checked before any data is read: a file that is not ``.npy``, holds Python
    objects, is shorter than its header says, or has more than ``max_rows`` rows is refused at once.

    Parameters
    ----------
    source : path or binary file-like
        The ``.npy`` file.
    mmap : bool, default=False
        Memory-map the file read-only instead of reading it (paths only); nothing is copied.
    max_bytes : int, optional
        Refuse larger files.
    max_rows : int, optional
        Refuse more rows.

    Returns
    -------
    ndarray
        2-D numeric array (float32 when memory-mapped from a float32 file).

    Raises
    ------
    ValueError
        When the file is missing, not a ``.npy`` file, holds Python objects, or is not 2-D numeric.
    """
    name = _name(source)
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"Feature file '{name}' does not exist.")
        if path.suffix.lower() != ".npy":
            raise ValueError(f"Feature file '{name}' must be a .npy file (numpy.save); got '{path.suffix}'.")
    _check_size(source, max_bytes)
    shape, dtype = npy_header(source, name, "Feature file")
    if dtype.kind not in "fiub":
        raise ValueError(f"Feature file '{name}' must hold numbers; it holds dtype {dtype}.")
    if len(shape) != 2:
        raise ValueError(f"Feature file '{name}' must hold a 2-D array (rows × features); its shape is {shape}.")
    check_rows(shape[0], name, max_rows=max_rows, what="Feature file")
    mapped = mmap and isinstance(source, (str, Path))
    with budget.parse(f"Feature file '{name}'") as parse:
        if not mapped:  # a memory map copies nothing
            _reserve_npy(parse, source, shape, dtype)
        try:
            if mapped:
                arr = np.load(source, mmap_mode="r", allow_pickle=False)
            else:
                arr = np.load(source, allow_pickle=False)
        except budget.MemoryBudgetError:
            raise
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(f"Feature file '{name}' is not a readable .npy file: {_first_line(exc)}") from None
    return arr


def _reserve_npy(parse: budget.Parse, source: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Reserve the array a ``.npy`` header declares (and numpy's read buffer for a file-like), before reading it."""
    nbytes = math.prod(int(d) for d in shape) * dtype.itemsize
    extra = 0 if isinstance(source, (str, Path)) else min(nbytes, _NPY_READ_BUFFER)
    dims = " × ".join(f"{d:,}" for d in shape) or "a scalar"
    parse.reserve(nbytes + extra, f"{dims} values of {dtype}")


def _read_text(source: Any, max_bytes: int | None) -> str:
    _check_size(source, max_bytes)
    raw = Path(source).read_bytes() if isinstance(source, (str, Path)) else source.read()
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"'{_name(source)}' is not UTF-8 text (byte {exc.start} cannot be decoded); save it as UTF-8."
        ) from None


def _maybe_numeric(values: list[str]) -> NDArray:
    try:
        return np.array([int(v) for v in values], dtype=np.int64)
    except ValueError:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out


def read_labels(
    source: str | Path | BinaryIO,
    *,
    column: str | None = None,
    max_bytes: int | None = None,
    max_rows: int | None = None,
) -> NDArray:
    """Read one label per row from ``.npy``, ``.txt`` (one per line) or ``.csv`` / ``.tsv``.

    Text labels that are all integers become ints, so ``labels.txt`` and ``labels.npy`` name classes alike.
    A one-column CSV may have a header (one of :data:`LABEL_COLUMN_NAMES`) or none; a CSV with several
    columns needs ``column`` (default: a column named ``label``).

    Parameters
    ----------
    source : path or file-like
        The labels file.
    column : str, optional
        Column holding the labels in a CSV/TSV with several columns.
    max_bytes : int, optional
        Refuse larger files.
    max_rows : int, optional
        Refuse more labels (counted before anything is parsed).

    Returns
    -------
    ndarray
        1-D array of labels.
    """
    name = _name(source)
    if isinstance(source, (str, Path)) and not Path(source).is_file():
        raise ValueError(f"Label file '{name}' does not exist.")
    suffix = Path(name).suffix.lower()
    if suffix == ".npy":
        _check_size(source, max_bytes)
        try:
            shape, _dtype = npy_header(source, name, "Label file")
        except ValueError as exc:
            if "Python objects" in str(exc):
                raise ValueError(
                    f"Label file '{name}' holds Python objects (object dtype); save numbers or fixed-width "
                    "strings (e.g. numpy.array(labels, dtype=str))."
                ) from None
            raise
        if shape:
            check_rows(shape[0], name, max_rows=max_rows, what="Label file")
        with budget.parse(f"Label file '{name}'") as parse:
            _reserve_npy(parse, source, shape, _dtype)
            try:
                arr = np.load(source, allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise ValueError(f"Label file '{name}' is not a readable .npy file: {_first_line(exc)}") from None
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1:
            raise ValueError(f"Label file '{name}' must hold a 1-D array; its shape is {arr.shape}.")
        return arr
    if max_rows is not None and isinstance(source, (str, Path)) and suffix in (".csv", ".tsv", ".txt", ""):
        fmt = {".csv": "csv", ".tsv": "tsv"}.get(suffix, "jsonl")  # one label per line counts like JSON Lines
        n, exact = count_rows_up_to(source, fmt, max_rows + (fmt != "jsonl"))  # a header line may come on top
        check_rows(n - (fmt != "jsonl"), name, max_rows=max_rows, what="Label file", exact=exact)
    with budget.parse(f"Label file '{name}'") as parse:
        size = _known_size(source) if hasattr(source, "read") or isinstance(source, (str, Path)) else None
        if size is not None:  # the bytes, their text (up to 4 bytes a character) and a string and a value per line
            lines = _newline_bound(source) if isinstance(source, (str, Path)) else size // 2 + 1
            parse.reserve(5 * size + 96 * lines, f"its text and {lines:,} labels")
        return _parse_labels(source, name, suffix, column, max_bytes)


def _parse_labels(source: Any, name: str, suffix: str, column: str | None, max_bytes: int | None) -> NDArray:
    text = _read_text(source, max_bytes)
    if not text.strip():
        raise ValueError(f"Label file '{name}' is empty.")
    if suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        try:
            table = pd.read_csv(_io.StringIO(text), sep=sep, header=None, dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, ValueError) as exc:
            raise ValueError(f"Label file '{name}' is not a readable {suffix[1:].upper()} file: {exc}") from None
        if table.shape[1] == 1 and column is None:
            values = table.iloc[:, 0].tolist()
            if values and values[0].strip().lower() in LABEL_COLUMN_NAMES:
                values = values[1:]
        else:
            header = [h.strip() for h in table.iloc[0].tolist()]
            want = column or "label"
            if want not in header:
                raise ValueError(
                    f"Label file '{name}' has no column {shown(want)}; its columns are {shown_list(header)}. "
                    "Name the label column (--label-column)."
                )
            values = table.iloc[1:, header.index(want)].tolist()
    elif suffix in (".txt", ""):
        values = text.splitlines()
        while values and not values[-1].strip():
            values.pop()
    else:
        raise ValueError(f"Label file '{name}' must be .npy, .txt, .csv or .tsv; got '{suffix}'.")
    values = [v.strip() for v in values]
    if not values:
        raise ValueError(f"Label file '{name}' has no labels.")
    if any(v == "" for v in values):
        first = values.index("")
        raise ValueError(f"Label file '{name}' has an empty label (row {first}).")
    return _maybe_numeric(values)


#: file-name endings of the tables :func:`read_table` reads, and the format each stands for
TABLE_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}


class _NamedBytesIO(_io.BytesIO):
    """Bytes with a file name, like an uploaded file."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name


def source_name(source: Any, name: str | None = None) -> str:
    """The file name shown in messages: ``name`` if given, else the path or the file-like's ``name``."""
    if name:
        return str(name)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "uploaded file"
    return _name(source)


def _human(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover


def _too_large(name: str, size: int | None, max_bytes: int) -> SizeLimitError:
    what = f"'{name}' is {_human(size)}, more" if size is not None else f"'{name}' is more"
    return SizeLimitError(
        f"{what} than the {_human(max_bytes)} allowed here; "
        "use the command line (python -m aflite_core filter ...) for large files.",
        size,
    )


def _known_size(source: Any) -> int | None:
    if isinstance(source, (str, Path)):
        return Path(source).stat().st_size
    if hasattr(source, "getbuffer"):
        return source.getbuffer().nbytes
    size = getattr(source, "size", None)
    return size if isinstance(size, int) else None


def _existing_file(source: str | Path, *, name: str, max_bytes: int | None, what: str = "") -> Path:
    """The path of an existing file no larger than ``max_bytes`` (nothing is read)."""
    label = f"{what} '{name}'" if what else f"'{name}'"
    path = Path(source)
    if not path.is_file():
        raise ValueError(f"{label[0].upper()}{label[1:]} does not exist.")
    size = path.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise _too_large(name, size, max_bytes)
    return path


def _read_bytes(source: Any, *, name: str, max_bytes: int | None, what: str = "") -> bytes:
    """All bytes of a path, bytes object or binary file-like, refusing more than ``max_bytes``."""
    label = f"{what} '{name}'" if what else f"'{name}'"
    if isinstance(source, (str, Path)):
        return _existing_file(source, name=name, max_bytes=max_bytes, what=what).read_bytes()
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif hasattr(source, "read"):
        size = _known_size(source)
        if max_bytes is not None and size is not None and size > max_bytes:
            raise _too_large(name, size, max_bytes)
        if hasattr(source, "seek"):
            try:
                source.seek(0)
            except (OSError, ValueError):  # pragma: no cover - unseekable streams are read from where they are
                pass
        data = source.read() if max_bytes is None else source.read(max_bytes + 1)
        if isinstance(data, str):
            data = data.encode("utf-8")
    else:
        raise TypeError(
            f"Cannot read {label}: expected a path, bytes or a binary file-like, got {type(source).__name__}."
        )
    if max_bytes is not None and len(data) > max_bytes:
        raise _too_large(name, len(data) if isinstance(source, (bytes, bytearray, memoryview)) else None, max_bytes)
    return data


def _table_format(name: str, format: str | None) -> str:
    if format is not None:
        fmt = format.lower().lstrip(".")
        fmt = TABLE_FORMATS.get("." + fmt, fmt)
        if fmt not in set(TABLE_FORMATS.values()):
            raise ValueError(f"Unknown table format {format!r} for '{name}'; use one of csv, tsv, parquet or jsonl.")
        return fmt
    suffix = Path(name).suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise ValueError(
            f"Table file '{name}' must be .csv, .tsv, .parquet or .jsonl; got '{suffix or 'no extension'}'."
        )
    return TABLE_FORMATS[suffix]


def read_table(
    source: str | Path | bytes | BinaryIO,
    *,
    name: str | None = None,
    format: str | None = None,
    max_bytes: int | None = None,
    max_rows: int | None = None,
    max_columns: int | None = None,
) -> pd.DataFrame:
    r"""Read a table (CSV, TSV, Parquet or JSON Lines) from a path, bytes or an uploaded file-like.

    Parsing is safe: CSV, TSV and JSONL are decoded as UTF-8 text, Parquet is read with pyarrow; nothing is
    ever unpickled. In CSV and TSV only empty cells count as missing (the texts ``NA`` or ``None`` stay text).

    Memory is bounded by the budget of :mod:`aflite_core.data.budget` (one read, and all reads in flight): the
    file is read within one parse that reserves what it materialises before it allocates it - Parquet from its
    footer and batch by batch (:func:`aflite_core.data.parquet_reads.read_parquet_checked`), CSV / TSV in chunks of
    rows and JSON Lines line by line (:mod:`aflite_core.data.text_tables`; values nested more than
    :data:`~aflite_core.data.text_tables.MAX_JSON_DEPTH` levels deep are refused) - and over it the read stops
    with a :class:`~aflite_core.data.budget.MemoryBudgetError`.

    Parameters
    ----------
    source : path, bytes or binary file-like
        The table. A file-like (e.g. Streamlit's ``UploadedFile``) is read from its start.
    name : str, optional
        File name used for the format and in messages (needed for bytes; default: the path or ``source.name``).
    format : {"csv", "tsv", "parquet", "jsonl"}, optional
        Overrides the format the file name implies.
    max_bytes : int, optional
        Refuse larger files.
    max_rows, max_columns : int, optional
        Refuse more rows or columns. Both are checked before the values are parsed (Parquet: its footer;
        text formats: a streamed count of lines and the header record), so refusing a large file costs
        little memory and time.

    Returns
    -------
    pandas.DataFrame
        One row per line / record, columns as in the file.

    Raises
    ------
    ValueError
        With one sentence naming the file and the problem: missing, too large, unknown extension, empty,
        not UTF-8, malformed (JSONL with the line number), without rows, or over the memory budget.

    Examples
    --------
    >>> from aflite_core.data.readers import read_table
    >>> read_table(b'{"text": "a cat", "label": 1}\n{"text": "a dog", "label": 0}\n', name="pets.jsonl")
        text  label
    0  a cat      1
    1  a dog      0
    """
    shown = source_name(source, name)
    fmt = _table_format(shown, format)
    src: Path | bytes  # a path is only read once its rows and columns have been counted
    if isinstance(source, (str, Path)):
        src = _existing_file(source, name=shown, max_bytes=max_bytes, what="Table file")
    else:
        src = _read_bytes(source, name=shown, max_bytes=max_bytes, what="Table file")
    with budget.parse(f"Table file '{shown}'") as parse:
        if fmt == "parquet":
            table = read_parquet_checked(src, shown, max_rows=max_rows, max_columns=max_columns)
            frame = table.to_pandas()
            del table
        else:
            if max_rows is not None:
                n, exact = count_rows_up_to(src, fmt, max_rows)
                check_rows(n, shown, max_rows=max_rows, exact=exact)
            n_columns = text_columns(src, fmt) if fmt != "jsonl" else 0
            if max_columns is not None and n_columns > max_columns:
                raise ValueError(f"'{shown}' has more than {max_columns:,} columns, the limit here.")
            if is_blank(src):
                raise ValueError(f"'{shown}' is empty.")
            if fmt == "jsonl":
                frame = parse_jsonl(src, shown, parse, max_columns)
            else:
                frame = parse_delimited(src, shown, "\t" if fmt == "tsv" else ",", parse, n_columns)
    if frame.shape[1] == 0:
        raise ValueError(f"'{shown}' has no columns.")
    if len(frame) == 0:
        raise ValueError(f"'{shown}' has no rows (only a header).")
    if max_rows is not None:
        check_rows(len(frame), shown, max_rows=max_rows)
    return frame
