"""The streamed, budgeted parsing of the text tables (CSV, TSV, JSON Lines) :func:`.readers.read_table` reads.

Each parser runs inside the caller's :func:`aflite_core.data.budget.parse` and reserves what it materialises
before it holds it: a CSV / TSV file is counted in chunks of rows (each dropped once counted) and then parsed in
one piece, a JSON Lines file line by line (values nested more than :data:`MAX_JSON_DEPTH` levels deep are
refused). Bytes that are not UTF-8 are refused naming the first bad byte. Every refusal is a ``ValueError``
with one sentence naming the file.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from . import budget
from .preflight import COLUMN_BYTES, _binary_stream, _chunks, json_bound

__all__ = ["MAX_JSON_DEPTH", "is_blank", "parse_delimited", "parse_jsonl"]

#: JSON values nested deeper than this (an object in a list in an object ... counts each level) are refused
MAX_JSON_DEPTH = 64


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"'{name}' is not UTF-8 text (byte {exc.start} cannot be decoded); save it as UTF-8."
        ) from None


def _check_utf8(source: Path | bytes, name: str) -> None:
    """Refuse bytes that are not UTF-8, naming the first bad byte; decoded a block at a time (nothing kept)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    for block in _chunks(source):
        pending = len(decoder.getstate()[0])
        try:
            decoder.decode(bytes(block), final=False)
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"'{name}' is not UTF-8 text (byte {offset - pending + exc.start} cannot be decoded); save it as UTF-8."
            ) from None
        offset += len(block)
    pending = len(decoder.getstate()[0])
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"'{name}' is not UTF-8 text (byte {offset - pending + exc.start} cannot be decoded); save it as UTF-8."
        ) from None


def parse_delimited(source: Path | bytes, name: str, sep: str, parse: budget.Parse, n_columns: int) -> pd.DataFrame:
    """A CSV / TSV file: first counted in chunks of rows (each dropped once counted), then parsed in one piece.

    The count reserves what the parse will hold - each chunk's memory twice (the frame, and the parser's
    columns it is built from) plus each column's fixed cost - before a row more is read, so a file over the
    budget is refused after at most one chunk; within it, the one ``pandas.read_csv`` that follows gives what
    it always gave.

    Parameters
    ----------
    source : Path or bytes
        The file (its rows and columns already checked against the caller's limits).
    name : str
        How messages name it.
    sep : str
        ``","`` (CSV) or a tab (TSV).
    parse : budget.Parse
        The caller's open parse, which the count reserves into.
    n_columns : int
        Columns of the header record (:func:`aflite_core.data.preflight.text_columns`).

    Returns
    -------
    pandas.DataFrame
        What ``pandas.read_csv`` reads (only empty cells missing).

    Raises
    ------
    ValueError
        One sentence: not UTF-8, empty, not readable as CSV / TSV, or over the memory budget.
    """
    kind = "TSV" if sep == "\t" else "CSV"
    _check_utf8(source, name)
    options = dict(sep=sep, keep_default_na=False, na_values=[""], encoding="utf-8-sig")
    step = max(4 * 2**20, parse.limit // 16)
    try:
        with _binary_stream(source) as raw:
            parse.reserve(COLUMN_BYTES * max(1, n_columns), f"{n_columns:,} columns")
            reader = pd.read_csv(raw, iterator=True, **options)
            rows, done = 1, 0  # then 4, 16, … as long as a chunk stays a small part of the budget
            while True:
                try:
                    chunk = reader.get_chunk(rows)
                except StopIteration:
                    break
                held = int(chunk.memory_usage(deep=True, index=False).sum())
                done += len(chunk)
                del chunk
                parse.reserve(2 * held, f"counted up to row {done:,}", partial=True)
                rows = int(max(1, min(4 * rows, 2**20, step // max(1, held // max(1, rows)))))
            reader.close()
            raw.seek(0)
            return pd.read_csv(raw, **options)
    except budget.MemoryBudgetError:
        raise
    except pd.errors.EmptyDataError:
        raise ValueError(f"'{name}' is empty.") from None
    except (pd.errors.ParserError, ValueError) as exc:
        detail = " ".join(str(exc).split())
        raise ValueError(f"'{name}' is not a readable {kind} file: {detail}") from None


#: JSON lines shorter than this are parsed before their memory is counted (they cannot build much)
_JSON_BOUND_FROM = 64 * 1024


def _json_cost(value: Any) -> tuple[int, int, int]:
    """(bytes the parsed value holds as Python objects, its nesting depth, bytes of its top-level strings).

    Stops counting below :data:`MAX_JSON_DEPTH` + 1 levels (the depth then says it is too deep).
    """
    size, deepest, text = 0, 0, 0
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            break
        size += sys.getsizeof(v)
        if isinstance(v, dict):
            for k, x in v.items():
                size += sys.getsizeof(k)
                if depth == 1 and isinstance(x, str):
                    text += len(x)
                stack.append((x, depth + 1))
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
    return size, deepest, text


def parse_jsonl(source: Path | bytes, name: str, parse: budget.Parse, max_columns: int | None = None) -> pd.DataFrame:
    """A JSON Lines file parsed line by line, what each line holds in memory reserved as it is read.

    Counted: the Python objects of each record (nested ones included) and the frame pandas builds of them
    (a pointer and a converted value per cell, cells = rows × all keys seen, and the text of string columns).

    Parameters
    ----------
    source : Path or bytes
        The file.
    name : str
        How messages name it.
    parse : budget.Parse
        The caller's open parse, which each line reserves into.
    max_columns : int, optional
        Refuse more distinct keys than this.

    Returns
    -------
    pandas.DataFrame
        One row per non-blank line, one column per key.

    Raises
    ------
    ValueError
        One sentence with the line number: not UTF-8, not JSON, not an object, a number too long, nested more
        than :data:`MAX_JSON_DEPTH` levels, too many keys, or over the memory budget.
    """
    rows: list[dict] = []
    keys: dict = {}
    pending, framed, text = 0, 0, 0
    # split on newlines only (lazily): JSON strings may hold U+2028 and other characters str.splitlines() splits on
    with _binary_stream(source) as raw:
        for lineno, line in enumerate(raw, start=1):
            line = line.strip()
            if not line:
                continue
            ahead = json_bound(line) if len(line) >= _JSON_BOUND_FROM else 0  # reserved before it is parsed
            if ahead:
                parse.reserve(ahead, f"line {lineno:,} of {len(line):,} bytes", partial=True)
            try:
                value = json.loads(_decode(line, name) if lineno == 1 else line.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"'{name}' is not UTF-8 text (line {lineno}, byte {exc.start} cannot be decoded); save it as UTF-8."
                ) from None
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"'{name}' is not valid JSON Lines: line {lineno} is not valid JSON ({exc.msg}, column "
                    f"{exc.colno})."
                ) from None
            except RecursionError:
                raise _too_deep(name, lineno) from None
            except ValueError:  # e.g. an integer of more digits than Python converts
                raise ValueError(
                    f"'{name}' is not valid JSON Lines: line {lineno} holds a number too long to read "
                    f"(more than {sys.get_int_max_str_digits() if hasattr(sys, 'get_int_max_str_digits') else 4300:,} "
                    "digits)."
                ) from None
            if not isinstance(value, dict):
                raise ValueError(
                    f"'{name}' is not valid JSON Lines: line {lineno} holds a JSON {type(value).__name__}, "
                    'not an object ({"column": value, ...}).'
                )
            parse.release(ahead)
            size, depth, strings = _json_cost(value)
            if depth > MAX_JSON_DEPTH:
                raise _too_deep(name, lineno)
            keys.update(dict.fromkeys(value))
            if max_columns is not None and len(keys) > max_columns:
                raise ValueError(f"'{name}' has more than {max_columns:,} columns (keys), the limit here.")
            rows.append(value)
            text += strings
            pending += size + 8
            frame = (24 * len(rows) + COLUMN_BYTES) * len(keys) + text  # the frame pandas builds: grows with every key
            if pending + frame - framed > 2**20:
                parse.reserve(pending + frame - framed, f"counted up to line {lineno:,}", partial=True)
                pending, framed = 0, frame
    frame = (24 * len(rows) + COLUMN_BYTES) * len(keys) + text
    parse.reserve(pending + max(0, frame - framed), "its records and their frame")
    return pd.DataFrame(rows)


def _too_deep(name: str, lineno: int) -> ValueError:
    return ValueError(
        f"'{name}' line {lineno} nests JSON values more than {MAX_JSON_DEPTH} levels deep, the limit here; flatten "
        "those values."
    )


def is_blank(source: Path | bytes) -> bool:
    """Whether the file (a path, or its bytes) holds only whitespace; read a block at a time."""
    return all(_blank(bytes(block)) for block in _chunks(source))


def _blank(data: bytes) -> bool:
    return re.search(rb"\S", data) is None
