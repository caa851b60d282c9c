"""The fuzzing harness of the readers: hostile files of every accepted format, each read in a child process.

:func:`read_in_child` runs one reader on one file in a process forked from a server that imported everything
first (``multiprocessing``'s forkserver: a child starts in milliseconds, not the second a fresh interpreter
with pandas and pyarrow takes), and reports:

* the outcome: the type of what the reader returned, or the exception's type and message;
* ``extra``: the child's peak resident memory (``getrusage(RUSAGE_SELF).ru_maxrss``) minus its resident size
  when it started, i.e. right after the imports - what the read itself cost.

An address-space limit (``RLIMIT_AS``) is set in the child only as a safety net, far above its size at start
(allocators and BLAS reserve virtual memory they never touch), so a reader that escapes its budget fails the
test with a MemoryError instead of taking the machine down.

The strategies draw :class:`Hostile` recipes (what hypothesis prints and shrinks: a few parameters, never the
bytes), each built into a ``(file name, bytes)`` pair small enough for CI but shaped like the issue's bombs:
compressed Parquet with wide or repetitive columns, dictionary- and delta-encoded strings, lists and structs; JSON
Lines nested or deep, with huge or infinite numbers and huge texts; CSV / TSV with giant cells or many tiny ones;
``.npy`` files whose headers lie; training-dynamics files with huge logits rows.
"""

from __future__ import annotations

import io
import json
import math
import multiprocessing
import os
import resource
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

MiB = 2**20
#: the per-read budget the harness runs the readers at (CI: small, so bombs are cheap to build)
BUDGET = 64 * MiB
#: the address-space safety net, above the child's size at start
SAFETY_NET = 3 * 2**30
#: the readers the harness calls, by name
READERS = ("table", "features", "labels", "dynamics")


# -- the child -----------------------------------------------------------------------------------------------
def _resident() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _read(reader: str, path: str) -> Any:
    from aflite_core.data.readers import read_features, read_labels, read_table
    from aflite_core.dynamics.cartography import read_cartography_dynamics

    if reader == "table":
        return read_table(path, max_bytes=200 * MiB, max_rows=60_000, max_columns=10_000)
    if reader == "features":
        return read_features(path)
    if reader == "labels":
        return read_labels(path)
    if reader == "dynamics":
        return read_cartography_dynamics([path])
    raise AssertionError(reader)


def _child(reader: str, path: str, budget_bytes: int, conn: Any) -> None:
    """Run one read and send back its outcome and memory (runs in the forked child)."""
    from aflite_core.data import budget

    start_resident = _resident()
    start_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space() + SAFETY_NET
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    budget.set_budgets(parse_bytes=budget_bytes, parses_bytes=4 * budget_bytes, advice="raise it")
    out: dict[str, Any] = {"error_type": None, "message": None}
    try:
        value = _read(reader, path)
        out["returned"] = type(value).__name__
        del value
    except ValueError as exc:
        out.update(error_type=type(exc).__name__, message=str(exc), is_value_error=True)
    except BaseException as exc:  # every other outcome is a finding, reported in full
        out.update(error_type=type(exc).__name__, message="".join(traceback.format_exception(exc))[-2000:])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out.update(extra=peak - start_resident, start_resident=start_resident, start_peak=start_peak, peak=peak)
    conn.send(out)
    conn.close()


_CONTEXT: Any = None


def _context() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        _CONTEXT = multiprocessing.get_context(method)
        if method == "forkserver":
            _CONTEXT.set_forkserver_preload(
                [
                    "numpy",
                    "pandas",
                    "pyarrow",
                    "pyarrow.parquet",
                    "pyarrow.compute",
                    "aflite_core.data.readers",
                    "aflite_core.dynamics.cartography",
                    __name__,
                ]
            )
    return _CONTEXT


def read_in_child(reader: str, path: Path, budget_bytes: int = BUDGET, timeout: float = 60.0) -> dict[str, Any]:
    """Read ``path`` with ``reader`` (one of :data:`READERS`) in a fresh child; its outcome and ``extra`` memory."""
    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(reader, str(path), budget_bytes, child))
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            proc.kill()
            return {"error_type": "Timeout", "message": f"no answer in {timeout:g} s", "extra": 0}
        return parent.recv()
    except EOFError:
        proc.join(5)
        return {"error_type": "Died", "message": f"the child exited with {proc.exitcode}", "extra": 0}
    finally:
        proc.join(10)
        parent.close()


def one_sentence(message: str) -> bool:
    """A message a user can be shown: one line, no traceback, ends like a sentence."""
    return bool(message) and "\n" not in message and "Traceback" not in message and message.rstrip().endswith(".")


# -- hostile files -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hostile:
    """A hostile file as its recipe (what hypothesis prints and shrinks); :meth:`build` makes the bytes."""

    kind: str
    params: tuple

    def build(self) -> tuple[str, bytes]:
        """The file's name and bytes."""
        return _MAKERS[self.kind](*self.params)


def _parquet(table: Any, **options: Any) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, **options)
    return buf.getvalue()


def _wide_parquet(rows: int, cols: int, dtype: str, value: int, compression: str) -> tuple[str, bytes]:
    import pyarrow as pa

    column = pa.array(np.full(rows, value, dtype=dtype))
    table = pa.Table.from_arrays([column] * cols, names=[f"c{i}" for i in range(cols)])
    return "wide.parquet", _parquet(table, compression=compression)


def _strings_parquet(
    kind: str, rows: int, width: int, distinct: int, cols: int, char: str, per_cell: int, compression: str
) -> tuple[str, bytes]:
    import pyarrow as pa

    base = char * width
    values = pa.array([f"{base}{i}" for i in range(distinct)])
    codes = pa.array(np.random.default_rng(rows).integers(0, distinct, rows).astype(np.int32))
    if kind == "delta":  # written from the decoded strings: kept under ~100 MB in the test process
        rows = max(1, min(rows, 100 * MiB // (len(base.encode()) + 8)))
        table = pa.table({f"s{j}": values.take(codes[:rows]) for j in range(cols)})
        options = dict(use_dictionary=False, column_encoding={f"s{j}": "DELTA_BYTE_ARRAY" for j in range(cols)})
        return "delta.parquet", _parquet(table, compression=compression, **options)
    column: Any = pa.DictionaryArray.from_arrays(codes, values)
    if kind == "list":
        offsets = pa.array(np.arange(0, rows * per_cell + 1, per_cell, dtype=np.int32))
        flat = pa.DictionaryArray.from_arrays(pa.array(np.resize(codes.to_numpy(), rows * per_cell)), values)
        column = pa.ListArray.from_arrays(offsets, flat)
    elif kind == "struct":
        column = pa.StructArray.from_arrays([column, pa.array(np.zeros(rows))], names=["text", "n"])
    table = pa.table({f"s{j}": column for j in range(cols)})
    return f"{kind}.parquet", _parquet(table, compression=compression, store_schema=False)


def _nested(depth: int, fanout: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] * fanout if level % 2 else {f"k{i}": value for i in range(fanout)}
    return value


def _jsonl(kind: str, rows: int, a: int, b: int, token: str, ascii_only: bool) -> tuple[str, bytes]:
    if kind == "nested":
        line = json.dumps({"label": 1, "x": _nested(a, b)}).encode()
        return "nested.jsonl", (line + b"\n") * max(1, min(rows, 8_000_000 // len(line)))
    if kind == "deep":
        line = b'{"label": 1, "x": ' + b"[" * a + b"]" * a + b"}"
        return "deep.jsonl", (line + b"\n") * min(rows, 20)
    if kind == "number":
        number = token.encode() if token else b"9" * a
        return "number.jsonl", (b'{"label": 1, "x": ' + number + b"}\n") * min(rows, 200)
    if kind == "text":
        line = json.dumps({"label": 1, "text": token * a}, ensure_ascii=ascii_only).encode()
        return "text.jsonl", (line + b"\n") * max(1, min(rows, 8_000_000 // max(1, len(line))))
    lines = [json.dumps({f"k{r}_{i}": i for i in range(b)}).encode() for r in range(rows)]
    return "keys.jsonl", b"\n".join(lines) + b"\n"


def _delimited(kind: str, sep: str, a: int, b: int, char: str) -> tuple[str, bytes]:
    name = "hostile.csv" if sep == "," else "hostile.tsv"
    if kind == "giant":
        cell = char * a
        rows = max(1, min(b, 12_000_000 // len(cell.encode())))
        return name, (f"text{sep}label\n" + f"{cell}{sep}1\n" * rows).encode()
    if kind == "quoted":
        cell = '"' + "line\n" * a + '"'
        return name, (f"text{sep}label\n" + f"{cell}{sep}1\n" * min(b, 8)).encode()
    if kind == "tiny":
        return name, f"a{sep}b\n".encode() + f"1{sep}x\n".encode() * a
    cols = a
    rows = max(1, min(b, 4_000_000 // (2 * cols)))
    header = sep.join(f"c{i}" for i in range(cols)) + "\n"
    return name, (header + (sep.join(["7"] * cols) + "\n") * rows).encode()


def _lying_npy(name: str, dtype: str, shape: tuple[int, ...], body: str) -> tuple[str, bytes]:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    n = math.prod(shape) * np.dtype(dtype).itemsize
    size = {"none": 0, "some": min(n // 2, 8 * MiB), "all": n if n <= 80 * MiB else 0}[body]
    return name, buf.getvalue() + b"\0" * size


def _dynamics(classes: int, rows: int, value: str) -> tuple[str, bytes]:
    classes = max(2, min(classes, 4_000_000 // (len(value) + 1)))  # at most ~8 MB in all
    rows = max(1, min(rows, 8_000_000 // (classes * (len(value) + 1))))
    logits = "[" + ",".join([value] * classes) + "]"
    lines = [f'{{"guid": {i}, "logits_epoch_0": {logits}, "gold": 0}}' for i in range(rows)]
    return "dynamics_epoch_0.jsonl", ("\n".join(lines) + "\n").encode()


_MAKERS = {
    "wide_parquet": _wide_parquet,
    "strings_parquet": _strings_parquet,
    "jsonl": _jsonl,
    "delimited": _delimited,
    "npy": _lying_npy,
    "dynamics": _dynamics,
}

COMPRESSION = st.sampled_from(["zstd", "snappy", "gzip", "none"])


def _hostile(kind: str, *params: Any) -> Any:
    return st.tuples(*params).map(lambda p: Hostile(kind, p))


#: many columns of one repeated number: kilobytes on disk, rows × columns × width in memory
wide_parquet = _hostile(
    "wide_parquet",
    st.integers(1, 40_000),
    st.integers(1, 2_000),
    st.sampled_from(["int8", "int64", "float32", "float64", "bool"]),
    st.sampled_from([0, 1]),
    COMPRESSION,
)
#: long strings, few distinct, dictionary- or delta-encoded, flat or in lists and structs
strings_parquet = _hostile(
    "strings_parquet",
    st.sampled_from(["dictionary", "delta", "list", "struct"]),
    st.integers(1, 30_000),
    st.integers(0, 60_000),
    st.integers(1, 8),
    st.integers(1, 4),
    st.sampled_from(["x", "é", "😀"]),  # a non-ASCII character makes Python strings 2 or 4 bytes a character
    st.integers(1, 8),
    COMPRESSION,
)
#: JSON Lines: nested objects, deep nesting, huge or infinite numbers, huge texts, many distinct keys
hostile_jsonl = _hostile(
    "jsonl",
    st.sampled_from(["nested", "deep", "number", "text", "keys"]),
    st.integers(1, 3_000),
    st.integers(1, 50_000),
    st.integers(1, 300),
    st.sampled_from(["", "a", "é", "😀", "a😀", "1e400", "-1e400", "1e-400", "NaN", "Infinity"]),
    st.booleans(),
).map(lambda h: _clip_jsonl(h))
#: CSV / TSV: giant cells, quoted newlines, many tiny cells, many columns
hostile_csv = _hostile(
    "delimited",
    st.sampled_from(["giant", "quoted", "tiny", "wide"]),
    st.sampled_from([",", "\t"]),
    st.integers(1, 2_000_000),
    st.integers(1, 100_000),
    st.sampled_from(["x", "é", "😀"]),
).map(lambda h: _clip_delimited(h))
#: .npy headers that lie about the data (or declare absurd shapes)
lying_npy = _hostile(
    "npy",
    st.sampled_from(["features.npy", "labels.npy"]),
    st.sampled_from(["<f8", "<f4", "<i8", "|u1", "<U64"]),
    st.one_of(
        st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)),
        st.tuples(st.integers(1, 4_000), st.integers(1, 4_000)),
        st.tuples(st.integers(0, 2**62)),
    ),
    st.sampled_from(["none", "some", "all"]),
)
#: training-dynamics epoch files with long logits rows, many records or huge numbers
hostile_dynamics = _hostile(
    "dynamics", st.integers(2, 200_000), st.integers(1, 100_000), st.sampled_from(["0.5", "1e308", "1" * 300])
)


def _clip_jsonl(h: Hostile) -> Hostile:
    kind, rows, a, b, token, ascii_only = h.params
    if kind == "nested":  # depth and fan-out, at most ~20,000 leaves a line
        a = 1 + a % 8
        b = max(1, min(1 + b % 6, int(20_000 ** (1 / a))))
    elif kind == "number" and token not in ("1e400", "-1e400", "1e-400", "NaN", "Infinity"):
        token, a = "", min(a * 4, 8_000)  # digits
    elif kind == "text":
        token, a = token or "a", a * 20  # up to a million characters
    return Hostile("jsonl", (kind, rows, a, b, token, ascii_only))


def _clip_delimited(h: Hostile) -> Hostile:
    kind, sep, a, b, char = h.params
    if kind == "giant":
        a = a * 2  # characters of a cell: up to 4 million
    elif kind == "quoted":
        a = min(a, 200_000)
    elif kind == "wide":
        a = 1 + a % 10_000
    return Hostile("delimited", (kind, sep, a, b, char))


def reader_for(name: str) -> str:
    """Which reader a hostile file goes to."""
    if name.startswith("dynamics_epoch_"):
        return "dynamics"
    if name == "features.npy":
        return "features"
    if name == "labels.npy":
        return "labels"
    return "table"


if __name__ == "__main__":  # pragma: no cover - a quick look at one child's outcome
    print(read_in_child(sys.argv[1], Path(sys.argv[2])))
