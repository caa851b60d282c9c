"""Fuzzing the readers: every hostile file gives a table / an array or exactly one sentence, within the budget.

Each example is read in a child process (:mod:`fuzz_readers`, forked from a server that imported the readers)
at a 64 MB budget. The test asserts:

* the outcome is what the reader returns (a DataFrame, an ndarray, training dynamics) or a ValueError of one
  sentence (one line, no traceback) - never a MemoryError, a crash or another exception;
* the child's peak resident memory minus its resident memory at start (right after the imports) stays within
  the budget plus :data:`SLACK`.

:data:`SLACK` is what the budget does not count, on purpose: the file's bytes where a reader holds them whole
(a Parquet footer-and-pages buffer, a JSON line being decoded - at most the input, up to ~24 MB here), one
batch, chunk or record read before it is reserved (the budget counts before decoding where the format allows,
after parsing one line / one chunk of rows where it does not), and the allocators' and lazily imported
modules' own growth the first time a code path runs (pyarrow's memory pool, pandas' parser: ~40 MB measured on
a file of a few bytes).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.skipif(
    not __import__("pathlib").Path("/proc/self/statm").exists(), reason="memory is read from /proc (Linux)"
)

import fuzz_readers as fz  # noqa: E402  (tests/ is on sys.path when pytest collects this file)

MiB = 2**20
#: what the budget does not count (see the module docstring), plus the size of the input file
SLACK = 48 * MiB
#: examples per strategy: half the profile's (ci: 12), so the harness adds well under a minute
EXAMPLES = max(4, settings().max_examples // 2)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


def _check(tmp_path, hostile: fz.Hostile) -> dict:
    name, data = hostile.build()
    path = tmp_path / name
    path.write_bytes(data)
    out = fz.read_in_child(fz.reader_for(name), path)
    path.unlink()
    if out["error_type"] is not None:
        assert out.get("is_value_error"), f"{name} ({len(data):,} bytes): {out['error_type']}: {out['message']}"
        assert fz.one_sentence(out["message"]), f"{name}: not one sentence: {out['message']!r}"
    limit = fz.BUDGET + SLACK + len(data)
    assert out["extra"] <= limit, (
        f"{name} ({len(data) / MiB:.1f} MB) took {out['extra'] / MiB:.0f} MB, over the {fz.BUDGET / MiB:.0f} MB "
        f"budget + {(SLACK + len(data)) / MiB:.0f} MB slack ({out['error_type'] or out.get('returned')}: "
        f"{(out['message'] or '')[:200]})"
    )
    return out


@FUZZ
@given(st.one_of(fz.wide_parquet, fz.strings_parquet))
def test_hostile_parquet(tmp_path_factory, hostile):
    _check(tmp_path_factory.mktemp("fuzz"), hostile)


@FUZZ
@given(fz.hostile_jsonl)
def test_hostile_jsonl(tmp_path_factory, hostile):
    _check(tmp_path_factory.mktemp("fuzz"), hostile)


@FUZZ
@given(fz.hostile_csv)
def test_hostile_csv_and_tsv(tmp_path_factory, hostile):
    _check(tmp_path_factory.mktemp("fuzz"), hostile)


@FUZZ
@given(st.one_of(fz.lying_npy, fz.hostile_dynamics))
def test_hostile_npy_and_dynamics(tmp_path_factory, hostile):
    _check(tmp_path_factory.mktemp("fuzz"), hostile)


def test_the_harness_sees_a_read_over_budget_and_a_good_read(tmp_path):
    """The measurement works: a legitimate table is returned, and its cost is seen (not zero)."""
    import io

    import numpy as np
    import pandas as pd

    frame = pd.DataFrame(np.random.default_rng(0).standard_normal((50_000, 80)), columns=[f"f{i}" for i in range(80)])
    buf = io.BytesIO()
    frame.to_parquet(buf)
    path = tmp_path / "ok.parquet"
    path.write_bytes(buf.getvalue())
    out = fz.read_in_child("table", path, budget_bytes=256 * MiB)
    assert out["error_type"] is None and out["returned"] == "DataFrame"
    assert out["extra"] >= 50_000 * 80 * 8  # the frame's 32 MB were seen
    refused = fz.read_in_child("table", path, budget_bytes=8 * MiB)
    assert refused["error_type"] == "MemoryBudgetError" and fz.one_sentence(refused["message"])
    assert refused["extra"] < 8 * MiB + SLACK
