"""Cheap checks before expensive reads: how many rows and columns a file holds, learnt without parsing it.

A file of a few kilobytes can declare a hundred million rows (a Parquet column of one repeated value
compresses to nothing), and a text file's rows are only known once it is parsed. The readers of
:mod:`aflite_core.data.readers` and :meth:`aflite_core.AFLiteResult.load` therefore ask these functions first and refuse
a file whose size in rows, columns or values exceeds a limit — or disagrees with the dataset it belongs to —
before anything is materialised:

* ``.npy``: the header (shape, dtype) is read alone and checked against the file's length;
* CSV / TSV / JSON Lines: newlines are counted in 1 MB chunks; only when that bound exceeds the limit are
  records counted exactly (quoted cells may hold newlines), stopping one past the limit;
* Parquet: :mod:`aflite_core.data.parquet_reads` checks the footer's row, column and per-column value counts
  (nested lists included) with :func:`check_rows` and its helpers here, and reads string columns
  dictionary-encoded, their decoded size computed before they are expanded.

Every refusal is a ``ValueError`` with one sentence naming the file.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from . import budget

__all__ = [
    "RowLimitError",
    "check_rows",
    "count_rows_up_to",
    "json_bound",
    "npy_header",
    "read_small_json",
    "text_columns",
]

#: bytes read at a time when counting lines of a file on disk
CHUNK_BYTES = 1 << 20
#: a JSON Lines file may hold this many lines (blank ones included) per allowed row
MAX_LINES_PER_ROW = 16
#: a run's small JSON records (``cli_args.json``, a checkpoint's legacy meta) are never larger than this
MAX_SMALL_JSON_BYTES = 1 << 20
#: bytes each column of a table costs whatever its rows (Arrow's and pandas' objects, headers, blocks)
COLUMN_BYTES = 8 * 1024


class RowLimitError(ValueError):
    """A file with more rows than the limit it was read with; ``n_rows`` is its count when known."""

    def __init__(self, message: str, n_rows: int | None = None) -> None:
        super().__init__(message)
        self.n_rows = n_rows


class SizeLimitError(ValueError):
    """A file larger than the byte limit it was read with; ``size`` is its size in bytes when known.

    The message ends with the advice of the app (where the limits are small): filter large files from the
    command line. A command line that reads with a byte limit of its own says something else.
    """

    def __init__(self, message: str, size: int | None = None) -> None:
        super().__init__(message)
        self.size = size


def _human_rows(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")


def check_rows(
    n_rows: int,
    name: str,
    *,
    max_rows: int | None = None,
    expected_rows: int | None = None,
    what: str = "",
    exact: bool = True,
) -> None:
    """Refuse ``n_rows`` above ``max_rows`` or different from ``expected_rows`` (one sentence).

    ``exact=False`` says ``n_rows`` is only a lower bound (counting stopped there).
    """
    label = f"{what} '{name}'".strip() if what else f"'{name}'"
    if expected_rows is not None and n_rows != expected_rows:
        raise ValueError(f"{label} has {_human_rows(n_rows)}, but its dataset has {_human_rows(expected_rows)}.")
    if max_rows is not None and n_rows > max_rows:
        count = _human_rows(n_rows) if exact else f"more than {_human_rows(n_rows - 1)}"
        raise RowLimitError(
            f"{label} has {count}, more than the {max_rows:,} allowed here; use the command line "
            "(python -m aflite_core ...) for larger data.",
            n_rows if exact else None,
        )


# -- .npy ------------------------------------------------------------------------------------------------------
def npy_header(source: Any, name: str, what: str = "") -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of a ``.npy`` file from its header alone (path, bytes or binary file-like).

    Raises
    ------
    ValueError
        When the bytes are not a ``.npy`` file, hold Python objects, or are shorter than the header says.
    """
    fmt = np.lib.format
    label = f"{what} '{name}'".strip() if what else f"'{name}'"
    if isinstance(source, (str, Path)):
        fh: Any = open(source, "rb")
        total = Path(source).stat().st_size
        close = True
    elif isinstance(source, (bytes, bytearray, memoryview)):
        fh, total, close = io.BytesIO(bytes(source)), len(source), True
    else:
        fh, close = source, False
        start = fh.tell() if hasattr(fh, "tell") else 0
        fh.seek(0, io.SEEK_END)
        total = fh.tell()
        fh.seek(start)
    try:
        magic = fh.read(6)
        if magic != b"\x93NUMPY":
            raise ValueError(f"{label} is not a .npy file (numpy.save writes them; it starts with other bytes).")
        fh.seek(fh.tell() - 6)
        try:
            version = fmt.read_magic(fh)
            read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read_header(fh, max_header_size=10_000)
        except (ValueError, SyntaxError, EOFError):
            raise ValueError(f"{label} is not a readable .npy file: its header is damaged.") from None
        header_end = fh.tell()
    finally:
        if close:
            fh.close()
        elif hasattr(fh, "seek"):
            fh.seek(0)
    if dtype.hasobject:
        raise ValueError(f"{label} holds Python objects (object dtype); save a numeric array instead.")
    need = header_end + math.prod(int(d) for d in shape) * dtype.itemsize  # Python ints: no overflow
    if total < need:
        raise ValueError(
            f"{label} is truncated: its header declares shape {tuple(shape)} ({need:,} bytes), but the "
            f"file has {total:,} bytes."
        )
    del fortran
    return tuple(int(s) for s in shape), dtype


# -- CSV / TSV / JSON Lines -------------------------------------------------------------------------------------
def _chunks(source: Any):
    if isinstance(source, (str, Path)):
        with open(source, "rb") as fh:
            while block := fh.read(CHUNK_BYTES):
                yield block
    else:
        data = memoryview(source)
        for start in range(0, len(data), CHUNK_BYTES):
            yield data[start : start + CHUNK_BYTES]


def _newline_bound(source: Any) -> int:
    """Lines in the file (an upper bound of its records): newlines, plus one for an unterminated last line."""
    count, last = 0, b"\n"
    for block in _chunks(source):
        count += bytes(block).count(b"\n") if isinstance(block, memoryview) else block.count(b"\n")
        if len(block):
            last = bytes(block[-1:])
    return count + (last != b"\n")


def _binary_stream(source: Any):
    if isinstance(source, (str, Path)):
        return open(source, "rb")
    return io.BytesIO(bytes(source))


def count_rows_up_to(source: str | Path | bytes, fmt: str, limit: int) -> tuple[int, bool]:
    """Data rows of a CSV/TSV (header excluded) or JSON Lines file, counted without parsing any value.

    Newlines are counted first (in chunks); only when they exceed ``limit`` are records counted exactly —
    quoted CSV cells may hold newlines, blank JSON Lines lines are no rows — up to
    :data:`MAX_LINES_PER_ROW` × ``limit``. Memory stays at about one chunk whatever the file's size.

    Returns
    -------
    (int, bool)
        The count and whether it is exact (False: there are at least that many rows, counting stopped).
        A count at most ``limit`` is always an upper bound of the true count, which is all a limit needs.
    """
    header = 0 if fmt == "jsonl" else 1
    lines = _newline_bound(source)
    if lines - header <= limit:
        return max(0, lines - header), True
    cap = MAX_LINES_PER_ROW * limit + 1000
    if fmt == "jsonl" and lines > cap:
        return cap + 1, False  # lines are rows or blank: a file this long is refused without counting one by one
    rows = _exact_rows(source, fmt, cap + 1)
    return rows, rows <= cap


def _exact_rows(source: Any, fmt: str, stop: int | None) -> int:
    rows = 0
    with _binary_stream(source) as raw:
        if fmt == "jsonl":
            for line in raw:
                if line.strip():
                    rows += 1
                    if stop is not None and rows >= stop:
                        break
            return rows
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text, delimiter="\t" if fmt == "tsv" else ",")
        try:
            for _record in reader:
                rows += 1
                if stop is not None and rows > stop:  # the header is one of the records
                    break
        except csv.Error:  # a malformed or huge cell: fall back on the newline count (an upper bound)
            return stop if stop is not None else max(0, rows - 1)
        return max(0, rows - 1)


def text_columns(source: str | Path | bytes, fmt: str) -> int:
    """Columns of a CSV/TSV file's header record (read alone)."""
    with _binary_stream(source) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text, delimiter="\t" if fmt == "tsv" else ",")
        try:
            return len(next(reader, []))
        except csv.Error:
            return 0


def read_small_json(path: str | Path, label: str, *, max_bytes: int = MAX_SMALL_JSON_BYTES) -> Any:
    """Parse a small JSON record file (a run's ``cli_args.json``), its size checked before it is read.

    Parameters
    ----------
    path : str or Path
        The file.
    label : str
        How messages name it (e.g. ``"The run 'a/b''s cli_args.json"``): never the server path.
    max_bytes : int, default=MAX_SMALL_JSON_BYTES
        Refuse a larger file unread.

    Returns
    -------
    Any
        The parsed value.

    Raises
    ------
    ValueError
        One sentence: larger than ``max_bytes``, not UTF-8 or not valid JSON (or over the memory budget).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "cli_args.json"
    >>> _ = p.write_text('{"m": 64}')
    >>> read_small_json(p, "cli_args.json")
    {'m': 64}
    >>> _ = p.write_text(" " * 2048)
    >>> read_small_json(p, "it", max_bytes=1024)
    Traceback (most recent call last):
    ...
    ValueError: it is 2,048 bytes, more than the 1,024 a record of this kind ever holds; it is not one this tool wrote.
    """
    size = Path(path).stat().st_size
    if size > max_bytes:
        raise ValueError(
            f"{label} is {size:,} bytes, more than the {max_bytes:,} a record of this kind ever holds; it is not "
            "one this tool wrote."
        )
    raw = Path(path).read_bytes()
    with budget.parse(label) as parse:
        parse.reserve(json_bound(raw), "its JSON values")
        try:
            import json

            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ValueError(f"{label} is not valid JSON (truncated or edited).") from None


def json_bound(text: bytes) -> int:
    """An upper bound of the bytes ``json.loads(text)`` builds as Python objects, counted without parsing.

    Every value but the first follows a ``,``, ``[`` or ``:``; an object opens with ``{``. Each counts a
    pointer and the largest object a few bytes of JSON make (an empty list, a float; a dict per ``{``), and the
    text counts 4 bytes a character (a string of wide characters).

    >>> json_bound(b'[1, 2, 3]'), json_bound(b'{"a": []}')
    (356, 516)
    """
    values = text.count(b",") + text.count(b"[") + text.count(b":") + 1
    return len(text) * 4 + 80 * values + 240 * text.count(b"{")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return _short(text[0] if text else type(exc).__name__, 160)


def _short(value: Any, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
