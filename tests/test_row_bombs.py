"""A tiny file cannot exhaust memory: row and column counts are checked before anything is materialised.

A Parquet file of 10⁸ constant rows compresses to a few hundred KB (a zip of it: ~2 KB). Before, reading it
as a run record took the server to 4.65 GB; a 50 MB JSON Lines upload cost ~1.8 GB before the row limit
refused it. Now the footer / a streamed line count refuses them first. Peak memory is measured in a fresh
subprocess (psutil for the baseline, the kernel's high-water RSS, VmHWM, for the maximum).
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from aflite_core.data.preflight import RowLimitError
from aflite_core.data.readers import read_labels, read_table
from aflite_core.engine.run_record import _canonical

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 60_000


def _parquet_bomb(n_rows: int = 100_000_000, columns=("y",)) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    step = 10_000_000
    chunk = pa.table({c: pa.array(np.zeros(step, dtype=np.int32)) for c in columns})
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, chunk.schema, compression="zstd", data_page_size=64 << 20) as w:
        for _ in range(n_rows // step):
            w.write_table(chunk, row_group_size=step)
    return buf.getvalue()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return _parquet_bomb()


def test_a_parquet_declaring_a_hundred_million_rows_is_refused_from_its_footer(bomb):
    assert len(bomb) < 1_000_000
    start = time.perf_counter()
    with pytest.raises(RowLimitError, match="100,000,000 rows, more than the 60,000 allowed"):
        read_table(bomb, name="bomb.parquet", max_rows=LIMIT)
    assert time.perf_counter() - start < 2.0  # the footer alone was read (typically < 1 ms)


def _record_zip(tmp_path, *, claimed_rows: int, rows_parquet: bytes) -> bytes:
    """A run-record zip whose result.json (with a recomputed checksum) claims ``claimed_rows``."""
    from aflite_core import aflite
    from aflite_core.data.planted_bias import make_planted_bias

    X, y, _ = make_planted_bias(240, 4, random_state=0)
    folder = aflite(X, y, target_size=120, train_size=50, slice_size=30, n_partitions=8, random_state=0).save(
        tmp_path / "run"
    )
    meta = json.loads((folder / "result.json").read_text())
    meta.pop("checksum")
    meta["n_rows"] = claimed_rows
    meta["files"]["rows.parquet"] = {"bytes": len(rows_parquet), "sha256": hashlib.sha256(rows_parquet).hexdigest()}
    meta["checksum"] = hashlib.sha256(_canonical(meta)).hexdigest()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("result.json", json.dumps(meta))
        zf.writestr("rows.parquet", rows_parquet)
        for name in sorted(meta["files"]):  # every other file the run wrote (votes.npy since format 5)
            if name != "rows.parquet":
                zf.write(folder / name, name)
    return out.getvalue()


def test_a_run_record_zip_of_a_hundred_million_rows_is_refused_in_milliseconds(tmp_path):
    from aflite_app import exports

    rows = _parquet_bomb(columns=("y", "kept", "removed_round"))
    for claimed in (100_000_000, 240):  # as declared in result.json, or hidden behind a small claim
        payload = _record_zip(tmp_path / str(claimed), claimed_rows=claimed, rows_parquet=rows)
        assert len(payload) < 64 * 1024
        start = time.perf_counter()
        with pytest.raises(exports.RunArchiveError, match="rows"):
            exports.load_run_zip(payload, name="'bomb.zip'", expected_rows=240)
        assert time.perf_counter() - start < 2.0


def test_text_files_over_the_row_limit_are_refused_before_parsing():
    jsonl = b'{"text": "a", "label": 1}\n' * (LIMIT + 1)
    with pytest.raises(RowLimitError, match=f"{LIMIT + 1:,} rows"):
        read_table(jsonl, name="big.jsonl", max_rows=LIMIT)
    blank = b'{"text": "a", "label": 1}\n' + b"\n" * (40 * LIMIT)  # mostly blank lines: refused without a slow count
    with pytest.raises(RowLimitError, match="more than"):
        read_table(blank, name="blank.jsonl", max_rows=LIMIT)
    csv = b"text,label\n" + b"a,1\n" * (LIMIT + 1)
    with pytest.raises(RowLimitError):
        read_table(csv, name="big.csv", max_rows=LIMIT)
    quoted = b"text,label\n" + b'"two\nlines",1\n' * LIMIT  # 2 lines a row: exactly the limit, accepted
    assert len(read_table(quoted, name="quoted.csv", max_rows=LIMIT)) == LIMIT
    wide = b",".join(b"c%d" % i for i in range(50)) + b"\n" + b",".join(b"1" for _ in range(50)) + b"\n"
    with pytest.raises(ValueError, match="more than 10 columns"):
        read_table(wide, name="wide.csv", max_columns=10)


def test_label_files_over_the_row_limit_are_refused_before_parsing(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_bytes(b"a\nb\n" * LIMIT)
    with pytest.raises(RowLimitError, match=f"{2 * LIMIT:,} rows"):
        read_labels(path, max_rows=LIMIT)


MEASURE = textwrap.dedent("""
    import sys, psutil
    from aflite_core.data.readers import read_table
    from aflite_core.data.preflight import RowLimitError

    def peak():  # this process's high-water RSS (VmHWM; getrusage's maximum can carry the parent's over exec)
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

    path, limit = sys.argv[1], int(sys.argv[2])
    baseline = psutil.Process().memory_info().rss
    try:
        read_table(path, max_rows=limit, max_bytes=200 * 2**20)
        print("accepted")
    except RowLimitError:
        print("refused")
    print(max(0, peak() - baseline))
""")


def _refusal_memory(path: Path) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path), str(LIMIT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc (Linux)")
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_refusing_a_file_at_the_upload_limit_costs_under_300_mb(tmp_path, fmt, bomb):
    path = tmp_path / f"big.{fmt}"
    if fmt == "parquet":
        path.write_bytes(bomb)
    else:
        line = (
            b'{"premise": "A man is playing a guitar on stage.", "label": "neutral"}\n'
            if fmt == "jsonl"
            else b"A man is playing a guitar on stage.,neutral\n"
        )
        block = line * 100_000
        with open(path, "wb") as fh:
            if fmt == "csv":
                fh.write(b"premise,label\n")
            while fh.tell() + len(block) <= 199 * 2**20:
                fh.write(block)
    verdict, extra = _refusal_memory(path)
    assert verdict == "refused"
    size_mb = path.stat().st_size / 2**20
    assert extra < 300 * 2**20, f"refusing {path.name} ({size_mb:.0f} MB) took {extra / 2**20:.0f} MB more"
