"""Parquet read within limits: the footer checked first, then the values read batch by batch under the memory budget.

A Parquet file of a few kilobytes can declare a hundred million rows, and run-length or dictionary encoding makes
megabytes of strings out of a few bytes. :func:`read_parquet_checked` therefore checks the footer's row, column
and per-column value counts (nested lists included) against the limits before anything is decompressed, reserves
the fixed-width columns from the footer, and reads the columns of variable width one at a time, dictionary-encoded
and batch by batch, reserving each batch's expanded size (and its pandas copy) before it is decoded.

Every refusal is a ``ValueError`` with one sentence naming the file (a
:class:`~aflite_core.data.budget.MemoryBudgetError` over the budget).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._validation import shown
from . import budget
from .preflight import COLUMN_BYTES, _first_line, _short, check_rows

__all__ = ["BATCH_ROWS", "MAX_VALUES_PER_CELL", "read_parquet_checked"]

#: list cells of a Parquet table may hold this many values per row on average (e.g. annotator labels)
MAX_VALUES_PER_CELL = 64
#: rows read at a time from a column of variable width (one batch is counted before it is decoded)
BATCH_ROWS = 65_536


def read_parquet_checked(
    source: str | Path | bytes,
    name: str,
    *,
    max_rows: int | None = None,
    expected_rows: int | None = None,
    max_columns: int | None = None,
    flat: bool = False,
    max_text_bytes: int | None = None,
    what: str = "",
    pandas_copy: bool = True,
):
    """Read a Parquet file as a pyarrow Table, after checking its footer against the limits and the memory budget.

    Within one :func:`aflite_core.data.budget.parse`, before anything is decompressed: the footer's declared
    uncompressed size, and the fixed-width columns' rows × width (plus their pandas copy), are reserved. Columns
    of variable width (strings, binary, lists, structs) cannot be bounded by the footer - run-length or
    dictionary encoding makes megabytes of values out of a few bytes - so they are read one column at a time,
    batch by batch and dictionary-encoded, and each batch's expanded size (the values, their offsets and the
    objects pandas will make of them) is reserved before it is decoded. Over the budget, a
    :class:`~aflite_core.data.budget.MemoryBudgetError` names the file, the bytes and the limit.

    Parameters
    ----------
    source : path or bytes
        The file.
    name : str
        How to call it in messages.
    max_rows, expected_rows : int, optional
        Refuse more rows than ``max_rows``, or a row count other than ``expected_rows``.
    max_columns : int, optional
        Refuse more columns.
    flat : bool, default=False
        Refuse nested columns (lists, structs): a run record's tables are flat.
    max_text_bytes : int, optional
        Refuse string / binary columns whose values, expanded, exceed this many bytes in all.
    what : str
        A word put before the name in messages (e.g. "Table file").
    pandas_copy : bool, default=True
        The caller converts the table to pandas while the parse is open (reserve that copy too).

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    ValueError
        One sentence: not Parquet, damaged, over a row, column or text limit, or over the memory budget
        (:class:`~aflite_core.data.budget.MemoryBudgetError`).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    label = f"{what} '{name}'".strip() if what else f"'{name}'"
    reader = pa.BufferReader(bytes(source)) if isinstance(source, (bytes, bytearray, memoryview)) else str(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        magic = bytes(source[:4])
    else:
        with open(source, "rb") as fh:
            magic = fh.read(4)
    if magic != b"PAR1":
        raise ValueError(f"{label} is not a Parquet file (it does not start with the Parquet magic bytes).")
    try:
        pf = pq.ParquetFile(reader)
        md = pf.metadata
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ValueError(f"{label} is not a readable Parquet file: {_first_line(exc)}") from None
    check_rows(int(md.num_rows), name, max_rows=max_rows, expected_rows=expected_rows, what=what)
    if max_columns is not None and len(schema) > max_columns:
        raise ValueError(f"{label} has {len(schema):,} columns, more than the {max_columns:,} allowed here.")
    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if flat and nested:
        raise ValueError(
            f"{label} has nested columns ({', '.join(_short(n) for n in nested[:3])}); expected a flat table."
        )
    # every leaf column's value count, as the footer declares it (a list column may hold more than its rows)
    for g in range(md.num_row_groups):
        group = md.row_group(g)
        rows = group.num_rows
        for j in range(group.num_columns):
            col = group.column(j)
            cap = rows * (MAX_VALUES_PER_CELL if "." in col.path_in_schema else 1)
            if col.num_values > cap:
                raise ValueError(
                    f"{label} is inconsistent or too large: column {_short(col.path_in_schema)} "
                    f"declares {col.num_values:,} values in {rows:,} rows."
                )
    try:
        with budget.parse(label) as parse:
            table = _read_within_budget(reader, pf, md, schema, label, parse, max_text_bytes, pandas_copy)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{label} is not a readable Parquet file: {_first_line(exc)}") from None
    if table.num_rows != md.num_rows:
        raise ValueError(f"{label} is damaged: its footer declares {md.num_rows:,} rows, its data {table.num_rows:,}.")
    return table


# -- Parquet within the memory budget ---------------------------------------------------------------------------
#: bytes of pandas' object of one Python str: ASCII (plus its length) and otherwise (plus 4 per character)
_STR_ASCII, _STR_WIDE = 49, 80
#: bytes of one bytes object (plus its length), of a numpy array object (a list cell), of a dict (a struct cell)
_BYTES_OBJ, _ARRAY_OBJ, _DICT_OBJ = 33, 112, 240


def _strings_are_objects() -> bool:
    """Whether pandas holds strings as Python objects (pandas < 3) rather than in Arrow buffers."""
    import pandas as pd

    dtype = pd.Series(["a"]).dtype
    return not (isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow")


def _fixed_cost(t: Any) -> tuple[float, int] | None:
    """(Arrow bytes, pandas bytes) per value of a fixed-width type; None for a type of variable width."""
    import pyarrow as pa

    if pa.types.is_null(t):
        return 0.0, 8
    if pa.types.is_boolean(t):
        return 0.125, 8  # a bit; a byte in pandas, a pointer with missing values
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return t.bit_width / 8, 8  # integers with missing values become float64
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return t.bit_width / 8, 8
    if pa.types.is_temporal(t) or pa.types.is_decimal(t):
        return t.bit_width / 8, 8 + 112  # dates, times and decimals become Python objects
    if pa.types.is_fixed_size_binary(t):
        return t.byte_width, 8 + _BYTES_OBJ + t.byte_width
    return None


def _byte_cost(arr: Any, *, objects: bool) -> tuple[int, int, int]:
    """(Arrow bytes decoded, pandas bytes, text bytes) of a string or binary array, plain or dictionary-encoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values, index = (arr.dictionary, arr.indices) if isinstance(arr, pa.DictionaryArray) else (arr, None)
    t = values.type
    n_valid = len(arr) - arr.null_count
    lengths = pc.binary_length(values)
    size = pc.sum(lengths if index is None else pc.take(lengths, index)).as_py() or 0
    offsets = (8 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else 4) * (len(arr) + 1)
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return offsets + size, 8 * len(arr) + n_valid * _BYTES_OBJ + size, size
    if not objects:
        return offsets + size, 8 * (len(arr) + 1) + size, size
    wide = pc.invert(pc.string_is_ascii(values))
    chars = pc.if_else(wide, pc.utf8_length(values), 0)
    if index is not None:
        wide, chars = pc.take(wide, index), pc.take(chars, index)
    n_wide = pc.sum(wide).as_py() or 0
    n_chars = pc.sum(chars).as_py() or 0
    pandas = 8 * len(arr) + n_valid * _STR_ASCII + size + n_wide * (_STR_WIDE - _STR_ASCII) + 4 * n_chars
    return offsets + size, pandas, size


def _array_cost(arr: Any, target: Any, *, nested: bool, objects: bool) -> tuple[int, int, int]:
    """(Arrow bytes decoded, pandas bytes, text bytes) of ``arr`` once cast to ``target`` and converted to pandas.

    Dictionary-encoded strings are counted from their dictionary and indices, without being expanded; lists,
    structs and maps are counted through their children; values inside lists are Python objects in pandas.
    """
    import pyarrow as pa

    n = len(arr)
    t = arr.type
    if pa.types.is_dictionary(target):  # a categorical column stays one: indices plus the dictionary
        values = arr.dictionary if isinstance(arr, pa.DictionaryArray) else arr
        a, p, txt = _array_cost(values, target.value_type, nested=nested, objects=True)
        return a + 8 * n, p + 8 * n, txt
    if pa.types.is_dictionary(t) or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        return _byte_cost(arr, objects=objects or nested)
    if pa.types.is_large_binary(t):
        return _byte_cost(arr, objects=True)
    fixed = _fixed_cost(t)
    if fixed is not None:
        width, pandas = fixed
        return int(n * width) + n // 8 + 1, n * (8 if nested else pandas), 0
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_map(t):
        child = _list_values(arr)
        a, p, txt = _array_cost(
            child, target.value_type if not pa.types.is_map(t) else _map_entries(target), nested=True, objects=True
        )
        return a + 8 * (n + 1), p + n * (8 + _ARRAY_OBJ) + 8 * len(child), txt
    if pa.types.is_struct(t):
        a_sum, p_sum, txt_sum = n // 8 + 1, n * (8 + _DICT_OBJ + 8 * t.num_fields), 0
        for i in range(t.num_fields):
            a, p, txt = _array_cost(arr.field(i), target.field(i).type, nested=True, objects=True)
            a_sum, p_sum, txt_sum = a_sum + a, p_sum + p, txt_sum + txt
        return a_sum, p_sum, txt_sum
    size = int(arr.get_total_buffer_size())  # other types (views, unions): as read, twice in pandas
    return size, 8 * n + 2 * size, 0


def _list_values(arr: Any) -> Any:
    """The values the cells of a list or map array hold (its slice of them only)."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(arr.type) or len(arr) == 0:
        return arr.flatten() if len(arr) else arr.values.slice(0, 0)
    start, end = arr.offsets[0].as_py(), arr.offsets[len(arr)].as_py()
    return arr.values.slice(start, end - start)


def _map_entries(target: Any) -> Any:
    import pyarrow as pa

    return pa.struct([pa.field("key", target.key_type, False), pa.field("value", target.item_type)])


def _read_within_budget(
    reader: Any, pf: Any, md: Any, schema: Any, label: str, parse: budget.Parse, max_text: int | None, pandas: bool
):
    """The table, read under ``parse``: fixed-width columns reserved from the footer, the others batch by batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = int(md.num_rows)
    leaves = [md.schema.column(i) for i in range(md.num_columns)]
    declared = sum(
        md.row_group(g).column(j).total_uncompressed_size
        for g in range(md.num_row_groups)
        for j in range(md.num_columns)
    )
    parse.reserve(declared, f"{_human_bytes(declared)} uncompressed, as its footer declares")
    parse.release(declared)  # decompressed a page at a time: a bound to check, not memory to hold
    fixed = {f.name: _fixed_cost(f.type) for f in schema}
    fixed = {k: v for k, v in fixed.items() if v is not None}
    per_row = sum(a + (p if pandas else 0) for a, p in fixed.values())
    if schema:
        n = len(schema)
        cost = int(per_row * rows) + COLUMN_BYTES * n
        parse.reserve(cost, f"{len(fixed):,} column{'s' if len(fixed) != 1 else ''} × {rows:,} rows" if fixed else "")
    columns: dict[str, Any] = {}
    if fixed:
        part = pf.read(columns=list(fixed), use_pandas_metadata=False)
        columns.update({name: part.column(name) for name in fixed})
        del part
    others = [f for f in schema if f.name not in fixed]
    if others:
        objects = _strings_are_objects()
        # dictionary-encoded reading keeps repeated values once (counted before they are expanded); pyarrow cannot
        # read delta-encoded strings so, and those are read plainly, in batches small enough to count one by one
        delta = _delta_columns(md)
        byte_leaves = [c.path for c in leaves if c.physical_type == "BYTE_ARRAY" and c.path not in delta]
        dict_pf = pq.ParquetFile(reader, read_dictionary=byte_leaves) if byte_leaves else pf
        step = max(1 << 20, parse.limit // 32)
        counter = _Counter(parse, label, max_text, pandas, objects)
        for field in others:
            try:
                chunks = counter.column(dict_pf, md, field, step, plain=False)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # e.g. a nested column whose dictionary changes
                chunks = counter.column(pf, md, field, step, plain=True)
            columns[field.name] = pa.chunked_array(chunks, type=field.type)
    return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)


class _Counter:
    """Reads the columns of variable width one at a time, row group by row group, counting every batch."""

    def __init__(self, parse: budget.Parse, label: str, max_text: int | None, pandas: bool, objects: bool) -> None:
        self.parse, self.label, self.max_text, self.pandas, self.objects = parse, label, max_text, pandas, objects
        self.text = 0

    def column(self, pf: Any, md: Any, field: Any, step: int, *, plain: bool) -> list:
        """The column's arrays (cast to its type), each batch reserved before it is decoded (or, plain, kept)."""
        rows = _batch_rows(md, field.name, step, plain=plain)
        chunks = []
        for group in range(md.num_row_groups):
            for batch in pf.iter_batches(
                batch_size=rows, row_groups=[group], columns=[field.name], use_pandas_metadata=False
            ):
                arr = batch.column(0)
                del batch
                a, p, txt = _array_cost(arr, field.type, nested=False, objects=self.objects)
                self.parse.reserve(
                    a + (p if self.pandas else 0), f"counted up to column {shown(field.name)}", partial=True
                )
                self.text += txt
                if self.max_text is not None and self.text > self.max_text:
                    raise ValueError(
                        f"{self.label} holds more than {self.max_text:,} bytes of text, the limit allowed here."
                    )
                chunks.append(arr.cast(field.type) if arr.type != field.type else arr)
                del arr
        return chunks


def _delta_columns(md: Any) -> set[str]:
    """Leaf paths of the columns some row group stores delta-encoded (pyarrow reads those decoded only)."""
    return {
        md.row_group(g).column(j).path_in_schema
        for g in range(md.num_row_groups)
        for j in range(md.num_columns)
        if {"DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY"} & set(md.row_group(g).column(j).encodings)
    }


def _batch_rows(md: Any, column: str, step: int, *, plain: bool = False) -> int:
    """Rows per batch of ``column``: many, unless its values are decoded as they are read.

    Many when its strings are read dictionary-encoded (counted before they are decoded); few when they are
    decoded as they are read (``plain``, or delta-encoded: a few bytes may then make long values), so that one
    batch stays within ``step`` bytes however long its values (each at most the largest column chunk's
    uncompressed size, :data:`MAX_VALUES_PER_CELL` a row).
    """
    longest = 0
    decoded = plain
    for g in range(md.num_row_groups):
        group = md.row_group(g)
        for j in range(group.num_columns):
            col = group.column(j)
            if col.path_in_schema == column or col.path_in_schema.startswith(column + "."):
                if "DELTA_BYTE_ARRAY" in col.encodings:
                    decoded = True
                if col.physical_type == "BYTE_ARRAY":
                    longest = max(longest, col.total_uncompressed_size)
    if not decoded or not longest:
        return BATCH_ROWS
    return int(max(1, min(BATCH_ROWS, step // longest // MAX_VALUES_PER_CELL)))


def _human_bytes(n: float) -> str:
    return budget.human_bytes(n)
