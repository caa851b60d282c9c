"""Every reader knows its memory budget before it decompresses or parses (issue 24, "a budget before every read").

The three bombs of the issue - a 4.6 MB zstd Parquet of 60,000 rows × 10,000 zero columns (9.0 GB once read), a
Parquet of four columns of near-identical 30 KB dictionary-encoded strings (GBs once decoded), JSON Lines of
nested objects (~24 MB of memory per MB of file) - are refused by the budget's sentence, through the API, the
CLI and the app's upload path, while legitimate files near the limits (a 60,000 × 384 float32 Parquet, the SNLI
sample) still load. Before this, each bomb was read whole: the first two took a server down.
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aflite_core.data import budget
from aflite_core.data.budget import MemoryBudgetError
from aflite_core.data.readers import read_features, read_labels, read_table
from aflite_core.data.user_tables import load_table_dataset

MiB = 2**20
UPLOAD_LIMITS = dict(max_bytes=200 * MiB, max_rows=60_000, max_columns=10_000)  # the app's, unchanged
ONE_SENTENCE = re.compile(r"^[^\n]+ needs (at least )?[\d.]+ [KMG]B of memory to read[^\n]*; [^\n]+\.$")
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def small_budget():
    """A 64 MB budget for one test (restored afterwards), with a fixed way of saying how to raise it."""
    old = budget.set_budgets(parse_bytes=64 * MiB, parses_bytes=256 * MiB, advice="raise it", wait_seconds=0.2)
    yield 64 * MiB
    budget.set_budgets(**old.as_dict())


@pytest.fixture
def default_budget():
    old = budget.set_budgets(
        parse_bytes=budget.DEFAULT_PARSE_BYTES, parses_bytes=budget.DEFAULT_PARSES_BYTES, advice="raise it"
    )
    yield
    budget.set_budgets(**old.as_dict())


def _refused(exc_info) -> str:
    message = str(exc_info.value)
    assert isinstance(exc_info.value, MemoryBudgetError), message
    assert ONE_SENTENCE.match(message), message
    assert "Traceback" not in message
    return message


# -- the bombs -----------------------------------------------------------------------------------------------
def zero_columns_parquet(rows: int = 60_000, columns: int = 10_000) -> bytes:
    """zstd Parquet of zero float columns: 4.6 MB for 60,000 × 10,000 (9.0 GB once read with its pandas copy)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    zero = pa.array(np.zeros(rows, dtype=np.float64))
    table = pa.Table.from_arrays([zero] * columns, names=[f"c{i}" for i in range(columns)])
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def repeated_strings_parquet(rows: int = 60_000, width: int = 30_000, columns: int = 4, distinct: int = 30) -> bytes:
    """Four columns of near-identical ``width``-byte strings, dictionary-encoded (30 distinct values) and zstd."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = "x" * (width - 6)
    values = pa.array([f"{base}{i:06d}" for i in range(distinct)])
    codes = pa.array(np.random.default_rng(0).integers(0, distinct, rows).astype(np.int32))
    column = pa.DictionaryArray.from_arrays(codes, values)
    table = pa.table({f"s{j}": column for j in range(columns)})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", store_schema=False)  # read back as plain strings
    return buf.getvalue()


def nested_jsonl(rows: int = 20_000) -> bytes:
    """JSON Lines of nested objects: ~25 MB of memory per MB of file once parsed."""
    line = json.dumps({"label": 1, "x": [{"a": [1, 2, {"b": "c"}]}] * 50}).encode() + b"\n"
    return line * rows


@pytest.fixture(scope="module")
def zero_bomb() -> bytes:
    return zero_columns_parquet()


@pytest.fixture(scope="module")
def string_bomb() -> bytes:
    return repeated_strings_parquet()


def test_the_real_size_zero_column_parquet_is_refused_by_the_budget_from_its_footer(zero_bomb, default_budget):
    assert len(zero_bomb) < 6 * MiB  # passes the 200 MB upload limit, and 10,000 columns is the column limit
    start = time.perf_counter()
    with pytest.raises(ValueError) as info:
        read_table(zero_bomb, name="zeros.parquet", **UPLOAD_LIMITS)
    message = _refused(info)
    assert time.perf_counter() - start < 2.0
    assert message.startswith("Table file 'zeros.parquet' needs 9.0 GB of memory to read (10,000 columns × 60,000")
    assert "more than the 2.0 GB one read may use; raise it." in message


def test_the_real_size_dictionary_string_parquet_is_refused_before_it_is_decoded(string_bomb, default_budget):
    assert len(string_bomb) < 2 * MiB
    start = time.perf_counter()
    with pytest.raises(ValueError) as info:
        read_table(string_bomb, name="strings.parquet", **UPLOAD_LIMITS)
    message = _refused(info)
    assert time.perf_counter() - start < 5.0
    assert message.startswith("Table file 'strings.parquet' needs at least ")
    assert "(counted up to column 's0')" in message


def test_nested_jsonl_is_refused_by_the_budget_as_it_is_parsed(small_budget):
    data = nested_jsonl()
    assert len(data) < 30 * MiB
    with pytest.raises(ValueError) as info:
        read_table(data, name="nested.jsonl", **UPLOAD_LIMITS)
    assert _refused(info).startswith("Table file 'nested.jsonl' needs at least ")
    assert "(counted up to line " in str(info.value)


@pytest.mark.parametrize(
    "name, data",
    [
        ("zeros.parquet", lambda: zero_columns_parquet(6_000, 1_000)),
        ("strings.parquet", lambda: repeated_strings_parquet(4_000, 30_000)),
        ("nested.jsonl", lambda: nested_jsonl(20_000)),
        ("cells.csv", lambda: b"text,label\n" + (b"x" * 5_000_000 + b",1\n") * 20),
        ("cells.tsv", lambda: b"text\tlabel\n" + (b"y" * 5_000_000 + b"\t1\n") * 20),
        ("many.csv", lambda: b"a,b\n" + b"1,x\n" * 3_000_000),
    ],
)
def test_every_bomb_is_refused_by_the_budget_through_the_api(tmp_path, small_budget, name, data):
    payload = data()
    path = tmp_path / name
    path.write_bytes(payload)
    for source in (path, payload, io.BytesIO(payload)):
        with pytest.raises(ValueError) as info:
            read_table(source, name=name, max_bytes=200 * MiB)
        assert f"Table file '{name}' needs" in _refused(info)
    with pytest.raises(ValueError) as info:
        load_table_dataset(path, label_column="label")
    _refused(info)
    assert budget.in_flight_bytes() == 0  # every reservation was released, refusals included


def test_deep_json_and_huge_numbers_are_refused_in_one_sentence():
    for depth in (65, 1_000, 100_000):
        data = b'{"label": 1, "x": ' + b"[" * depth + b"]" * depth + b"}\n"
        with pytest.raises(ValueError, match=r"^'d.jsonl' line 1 nests JSON values more than 64 levels deep"):
            read_table(data, name="d.jsonl")
    ok = b'{"label": 1, "x": ' + b"[" * 62 + b"]" * 62 + b"}\n"
    assert len(read_table(ok + ok, name="ok.jsonl")) == 2
    with pytest.raises(ValueError, match=r"line 2 holds a number too long to read \(more than [\d,]+ digits\)\.$"):
        read_table(b'{"a": 1}\n{"a": ' + b"9" * 5_000 + b"}\n", name="n.jsonl")


def test_a_lying_npy_header_and_a_large_array_are_refused_by_the_budget(tmp_path, small_budget):
    big = np.zeros((3_000, 3_000), dtype=np.float64)  # 68.7 MB > 64 MB
    np.save(tmp_path / "big.npy", big)
    for source in (tmp_path / "big.npy", io.BytesIO((tmp_path / "big.npy").read_bytes())):
        with pytest.raises(ValueError) as info:
            read_features(source)
        assert _refused(info).startswith("Feature file ")
        assert "(3,000 × 3,000 values of float64)" in str(info.value)
    assert read_features(tmp_path / "big.npy", mmap=True).shape == (3_000, 3_000)  # a map copies nothing
    np.save(tmp_path / "labels.npy", np.zeros(9_000_000, dtype=np.int64))
    with pytest.raises(ValueError) as info:
        read_labels(tmp_path / "labels.npy")
    assert _refused(info).startswith("Label file ")


def test_a_run_record_goes_through_the_budget(tmp_path, small_budget):
    from aflite_core import AFLiteResult, aflite

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((200, 4)).astype(np.float32), rng.integers(0, 2, 200)
    folder = aflite(X, y, target_size=100, train_size=50, slice_size=20, random_state=0).save(tmp_path / "run")
    assert AFLiteResult.load(folder).kept.shape == (200,)
    budget.set_budgets(parse_bytes=4_000)
    with pytest.raises(ValueError) as info:
        AFLiteResult.load(folder)
    assert _refused(info).startswith("Run file '")
    budget.set_budgets(parse_bytes=64 * MiB)
    (folder / "result.json").write_bytes(b"[" + b"[]," * 1_000_000 + b"[]]")  # 3 MB that parse to ~100 MB
    with pytest.raises(ValueError) as info:
        AFLiteResult.load(folder)
    assert _refused(info).startswith("Run file 'result.json' needs ")


# -- legitimate files near the limits still load ---------------------------------------------------------------
def test_a_60000_by_384_float32_parquet_loads_under_the_default_budget(default_budget):
    import pyarrow as pa
    import pyarrow.parquet as pq

    X = np.random.default_rng(0).standard_normal((60_000, 384)).astype(np.float32)
    table = pa.table({**{f"f{i}": X[:, i] for i in range(384)}, "label": np.arange(60_000) % 3})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    frame = read_table(buf.getvalue(), name="wide.parquet", **UPLOAD_LIMITS)
    assert frame.shape == (60_000, 385)
    np.testing.assert_array_equal(frame["f383"].to_numpy(), X[:, 383])
    assert budget.in_flight_bytes() == 0


@pytest.mark.skipif(not (SHARED / "snli_sample.jsonl").is_file(), reason="needs ../shared/data")
def test_the_snli_sample_loads_the_same_as_before(default_budget):
    path = SHARED / "snli_sample.jsonl"
    frame = read_table(path, **UPLOAD_LIMITS)
    lines = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    pd.testing.assert_frame_equal(frame, pd.DataFrame(lines))


def test_chunked_csv_parsing_gives_what_one_read_csv_gives(tmp_path, small_budget):
    n = 200_000  # many chunks; column b is numbers first and text at the end, column c has an empty cell
    rows = [f"{i},{i if i < n - 5 else 'x'},{'' if i == 7 else i / 3},t{i % 7}" for i in range(n)]
    data = ("a,b,c,d\n" + "\n".join(rows) + "\n").encode()
    expected = pd.read_csv(io.BytesIO(data), keep_default_na=False, na_values=[""])
    pd.testing.assert_frame_equal(read_table(data, name="t.csv"), expected)


@pytest.mark.slow
def test_a_150_mb_csv_loads_under_the_default_budget(tmp_path, default_budget):
    rng = np.random.default_rng(0)
    n = 60_000
    frame = pd.DataFrame(
        {
            "text": ["A man plays a guitar on stage " + "x" * int(k) for k in rng.integers(2_000, 3_200, n)],
            "label": rng.integers(0, 3, n),
            "score": rng.standard_normal(n),
        }
    )
    path = tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    assert path.stat().st_size > 150 * MiB
    start = time.perf_counter()
    back = read_table(path, **UPLOAD_LIMITS)
    assert time.perf_counter() - start < 30
    assert back.shape == (n, 3) and back["text"].tolist() == frame["text"].tolist()


# -- the budget itself -------------------------------------------------------------------------------------------
def test_reservations_are_released_when_the_parse_ends_even_on_error():
    with pytest.raises(RuntimeError):
        with budget.parse("'x'") as p:
            p.reserve(1_000)
            assert budget.in_flight_bytes() >= 1_000
            raise RuntimeError("boom")
    assert budget.in_flight_bytes() == 0


def test_a_parse_inside_a_parse_joins_it():
    with budget.parse("'outer'") as outer:
        outer.reserve(10)
        with budget.parse("'inner'") as inner:
            assert inner is outer
            inner.reserve(5)
        assert outer.reserved == 15 and budget.current() is outer
    assert budget.current() is None and budget.in_flight_bytes() == 0


def test_the_server_wide_ledger_waits_then_refuses_in_one_sentence():
    old = budget.set_budgets(parse_bytes=100, parses_bytes=150, wait_seconds=0.3, server_advice="try later")
    try:
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            with budget.parse("'first.csv'") as p:
                p.reserve(100)
                holding.set()
                release.wait(5)

        t = threading.Thread(target=hold)
        t.start()
        holding.wait(5)
        start = time.perf_counter()
        with pytest.raises(MemoryBudgetError) as info:
            with budget.parse("'second.csv'") as p:
                p.reserve(80)
        assert time.perf_counter() - start >= 0.25  # it waited for the first read
        assert info.value.scope == "server"
        assert str(info.value) == (
            "'second.csv' needs 80 bytes of memory to read, but the reads in progress already hold 100 bytes of the "
            "150 bytes all reads may use together; try later."
        )
        # a read that waits gets its turn once the other ends
        waiter_done = []

        def wait_for_room() -> None:
            with budget.parse("'third.csv'") as p:
                p.reserve(80)
                waiter_done.append(p.reserved)

        budget.set_budgets(wait_seconds=5)
        w = threading.Thread(target=wait_for_room)
        w.start()
        time.sleep(0.1)
        release.set()
        t.join(5)
        w.join(5)
        assert waiter_done == [80]
    finally:
        budget.set_budgets(**old.as_dict())
    assert budget.in_flight_bytes() == 0


def test_the_ledger_is_thread_safe():
    def work() -> None:
        for _ in range(200):
            with budget.parse("'t'") as p:
                p.reserve(3)
                p.reserve(4)
                p.release(2)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.in_flight_bytes() == 0


@pytest.mark.parametrize(
    "kwargs", [{"parse_bytes": 0}, {"parses_bytes": -1}, {"parse_bytes": 1.5}, {"wait_seconds": float("inf")}]
)
def test_invalid_budgets_are_refused(kwargs):
    with pytest.raises(ValueError, match="The budget's"):
        budget.set_budgets(**kwargs)
    assert budget.limits().parse_bytes >= 1


# -- the CLI ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, data",
    [
        ("zeros.parquet", lambda: zero_columns_parquet(6_000, 1_000)),
        ("strings.parquet", lambda: repeated_strings_parquet(4_000, 30_000)),
        ("nested.jsonl", lambda: nested_jsonl(20_000)),
    ],
)
def test_the_cli_refuses_each_bomb_with_the_budget_sentence(tmp_path, capsys, name, data):
    from aflite_core.cli import main

    path = tmp_path / name
    path.write_bytes(data())
    argv = ["artifacts", "--table", str(path), "--text-column", "s0", "--label-column", "label"]
    assert main([*argv, "--parse-budget-mb", "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: Table file '{path}' needs ")
    assert err.endswith(
        "more than the 64.0 MB one read may use; pass a larger --parse-budget-mb (megabytes) to read it."
    )
    assert "\n" not in err and "Traceback" not in err
    assert budget.limits().advice != "pass a larger --parse-budget-mb (megabytes) to read it"  # restored


def test_the_cli_refuses_a_bad_budget(capsys):
    from aflite_core.cli import main

    assert main(
        ["artifacts", "--table", "x.csv", "--text-column", "t", "--label-column", "l", "--parse-budget-mb", "0"]
    )
    assert "--parse-budget-mb option must be a positive number" in capsys.readouterr().err


# -- the app's upload path -------------------------------------------------------------------------------------
@pytest.fixture
def app_budget():
    from aflite_app import settings
    from aflite_app.compute import _stores

    old = budget.limits()
    _stores.apply_parse_budgets(settings.Settings(parse_budget_mb=64))
    yield
    budget.set_budgets(**old.as_dict())


@pytest.mark.parametrize(
    "name, data",
    [
        ("zeros.parquet", lambda: zero_columns_parquet(6_000, 1_000)),
        ("strings.parquet", lambda: repeated_strings_parquet(4_000, 30_000)),
        ("nested.jsonl", lambda: nested_jsonl(20_000)),
    ],
)
def test_the_upload_path_refuses_each_bomb_with_the_budget_sentence(app_budget, name, data):
    from aflite_app.compute import uploads

    payload = data()
    with pytest.raises(MemoryBudgetError) as info:
        uploads.upload_table(payload, name)
    message = _refused(info)
    assert message.startswith(f"Table file '{name}' needs ")
    assert "the server's administrator can raise AFLITE_PARSE_BUDGET_MB (megabytes)" in message
    outcome = uploads.load_upload(payload, name, uploads.UploadOptions(label_column="label"))
    assert not outcome.ok and outcome.error == message


def test_the_app_applies_the_budget_settings(monkeypatch):
    from aflite_app import settings
    from aflite_app.compute import _stores

    old = budget.limits()
    try:
        monkeypatch.setenv("AFLITE_PARSE_BUDGET_MB", "100")
        monkeypatch.setenv("AFLITE_PARSES_BUDGET_MB", "300")
        _stores.apply_parse_budgets()
        assert (budget.limits().parse_bytes, budget.limits().parses_bytes) == (100 * MiB, 300 * MiB)
        assert settings.parse_budget_bytes(settings.Settings()) == (2048 * MiB, 4096 * MiB)
    finally:
        budget.set_budgets(**old.as_dict())


# -- what the budgeted Parquet reader reads is what pyarrow reads ----------------------------------------------
def _every_type_table():
    import datetime
    import decimal

    import pyarrow as pa

    n = 300
    rng = np.random.default_rng(1)
    words = ["a cat", "é", "😀 dog", "", "NA"]
    text = [words[i % 5] if i % 7 else None for i in range(n)]
    return pa.table(
        {
            "i8": pa.array(rng.integers(-5, 5, n).astype(np.int8)),
            "i64": pa.array([int(i) if i % 9 else None for i in range(n)], type=pa.int64()),
            "f32": pa.array(rng.standard_normal(n).astype(np.float32)),
            "b": pa.array([bool(i % 2) if i % 5 else None for i in range(n)]),
            "s": pa.array(text),
            "ls": pa.array(text, type=pa.large_string()),
            "bin": pa.array([t.encode() if t is not None else None for t in text]),
            "cat": pa.array(text).dictionary_encode(),
            "lst": pa.array([[words[i % 5], words[(i + 1) % 5]] if i % 4 else None for i in range(n)]),
            "lnum": pa.array([list(range(i % 4)) for i in range(n)]),
            "st": pa.array([{"t": words[i % 5], "n": i} for i in range(n)]),
            "mp": pa.array([[("k", words[i % 5])] for i in range(n)], type=pa.map_(pa.string(), pa.string())),
            "d": pa.array([datetime.date(2020, 1, 1 + i % 28) for i in range(n)]),
            "ts": pa.array(np.arange(n).astype("datetime64[s]")),
            "dec": pa.array([decimal.Decimal(i) / 4 for i in range(n)], type=pa.decimal128(10, 2)),
        }
    )


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"compression": "zstd", "row_group_size": 64},
        {"use_dictionary": False, "column_encoding": {"s": "DELTA_BYTE_ARRAY", "bin": "DELTA_LENGTH_BYTE_ARRAY"}},
        {"store_schema": False},
    ],
    ids=["plain", "groups", "delta", "no-schema"],
)
def test_every_column_type_reads_as_pyarrow_reads_it(options):
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(_every_type_table(), buf, **options)
    data = buf.getvalue()
    expected = pq.read_table(io.BytesIO(data)).to_pandas()
    pd.testing.assert_frame_equal(read_table(data, name="types.parquet"), expected)
    assert budget.in_flight_bytes() == 0


def test_a_pandas_written_parquet_keeps_its_index_and_categories(tmp_path):
    frame = pd.DataFrame({"x": [1.5, 2.5, 3.5], "c": pd.Categorical(["a", "b", "a"])}, index=["r1", "r2", "r3"])
    frame.to_parquet(tmp_path / "f.parquet")
    pd.testing.assert_frame_equal(read_table(tmp_path / "f.parquet"), pd.read_parquet(tmp_path / "f.parquet"))


def test_a_lying_npy_shape_that_overflows_int64_is_refused_as_truncated(tmp_path):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (2**40, 2**40)})
    (tmp_path / "lie.npy").write_bytes(buf.getvalue() + b"\0" * 64)
    with pytest.raises(ValueError, match=r"is truncated: its header declares shape \(1099511627776, 1099511627776\)"):
        read_features(tmp_path / "lie.npy")


def test_one_long_json_line_is_counted_before_it_is_parsed(small_budget):
    line = b'{"label": 1, "x": [' + b",".join([b"[]"] * 2_000_000) + b"]}\n"  # 6 MB that parse to ~130 MB
    with pytest.raises(ValueError) as info:
        read_table(line, name="long.jsonl")
    assert "(line 1 of 6,000,020 bytes)" in _refused(info)


def test_dynamics_logits_too_large_for_a_float_are_one_sentence(tmp_path):
    from aflite_core.dynamics.cartography import read_cartography_dynamics

    (tmp_path / "dynamics_epoch_0.jsonl").write_text(
        '{"guid": 1, "logits_epoch_0": [%s, 1], "gold": 0}\n' % ("1" * 400), encoding="utf-8"
    )
    with pytest.raises(ValueError, match=r"must hold finite numbers\. Got \[1111.{1,40} instead\.$"):
        read_cartography_dynamics(tmp_path)


def test_dynamics_files_are_read_under_the_budget(tmp_path, small_budget):
    from aflite_core.dynamics.cartography import read_cartography_dynamics

    logits = "[" + ",".join(["0.5"] * 5_000) + "]"
    lines = [f'{{"guid": {i}, "logits_epoch_0": {logits}, "gold": 0}}' for i in range(400)]
    (tmp_path / "dynamics_epoch_0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        read_cartography_dynamics(tmp_path)
    assert _refused(info).startswith(f"Training-dynamics directory '{tmp_path}' needs at least ")
    from aflite_core.dynamics.align import read_epoch_files

    with pytest.raises(ValueError) as info:  # uploaded: the temporary folder is never named
        read_epoch_files([("dynamics_epoch_0.jsonl", (tmp_path / "dynamics_epoch_0.jsonl").read_bytes())])
    assert str(info.value).startswith("Uploaded dynamics: The upload needs at least ")
    assert "aflite-dynamics-" not in str(info.value)
