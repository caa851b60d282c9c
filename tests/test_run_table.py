"""``filter --table T --id-column ID``: the table a run's rows came from, recorded (checksummed) and read back;
and the time left on ``filter``'s progress line."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SMALL_RUN_ARGS

from aflite_core import AFLiteResult, load_run_table, run_table_info
from aflite_core.cli import main
from aflite_core.cli._common import Progress, rounds_left_seconds
from aflite_core.engine.result import RoundProgress
from aflite_core.engine.run_table import align_table


def _texts(n: int, order=None) -> pd.DataFrame:
    order = np.arange(n) if order is None else np.asarray(order)
    return pd.DataFrame({"doc": order, "text": [f"text of row {i}" for i in order], "source": ["a", "b"] * (n // 2)})


def _filter(files: Path, out: Path, *extra: str) -> int:
    argv = ["filter", "--features", str(files / "X.npy"), "--labels", str(files / "y.txt"), *SMALL_RUN_ARGS]
    return main([*argv, "--out", str(out), *extra])


def test_a_shuffled_table_with_extra_rows_is_recorded_in_the_runs_row_order(small_files, capsys):
    rng = np.random.default_rng(0)
    order = rng.permutation(310)  # ten rows the run does not have
    _texts(310, order).to_json(small_files / "t.jsonl", orient="records", lines=True)
    out = small_files / "run"
    assert _filter(small_files, out, "--table", str(small_files / "t.jsonl"), "--id-column", "doc") == 0
    assert json.loads(capsys.readouterr().out)["table"].endswith("table.parquet")
    result = AFLiteResult.load(out)
    meta = json.loads((out / "result.json").read_text())
    assert meta["format_version"] == 5 and "table.parquet" in meta["files"]  # 5: the run records its votes too
    assert run_table_info(out) == {
        "rows": 300,
        "columns": ["doc", "text", "source"],
        "id_column": "doc",
        "bytes": (out / "table.parquet").stat().st_size,
    }
    table = load_run_table(out, result=result)
    assert table["doc"].tolist() == list(range(300)) and table.attrs["id_column"] == "doc"
    assert table["text"].iloc[17] == "text of row 17"
    joined = result.to_frame().join(table, suffixes=("", "_table"))
    assert len(joined) == 300 and joined.loc[5, "text"] == "text of row 5"
    assert json.loads((out / "cli_args.json").read_text())["table_id_column"] == "doc"


def test_ids_file_and_string_ids_match_and_a_table_without_id_column_goes_row_for_row(small_files):
    ids = [f"ex-{i}" for i in range(300)]
    pd.DataFrame({"id": ids}).to_csv(small_files / "ids.csv", index=False)
    frame = pd.DataFrame({"key": ids[::-1], "text": [f"t{i}" for i in range(300)][::-1]})
    frame.to_parquet(small_files / "t.parquet")
    out = small_files / "run"
    extra = ["--ids", str(small_files / "ids.csv"), "--table", str(small_files / "t.parquet"), "--id-column", "key"]
    assert _filter(small_files, out, *extra) == 0
    result = AFLiteResult.load(out)
    table = load_run_table(out, result=result)
    assert table["key"].tolist() == ids and table["text"].iloc[3] == "t3"
    pd.DataFrame({"text": [f"row {i}" for i in range(300)]}).to_csv(small_files / "plain.csv", index=False)
    out2 = small_files / "run2"
    assert _filter(small_files, out2, "--table", str(small_files / "plain.csv")) == 0
    assert load_run_table(out2)["text"].iloc[299] == "row 299" and run_table_info(out2)["id_column"] is None


@pytest.mark.parametrize(
    "table, extra, message",
    [
        (pd.DataFrame({"doc": [0, 1, 1, *range(3, 300)]}), ["--id-column", "doc"], "repeats the id 1"),
        (pd.DataFrame({"doc": range(1, 301)}), ["--id-column", "doc"], "lacks 1 of the 300 row numbers"),
        (pd.DataFrame({"doc": range(300)}), ["--id-column", "nope"], "has no column 'nope'"),
        (pd.DataFrame({"doc": range(299)}), [], "has 299 rows and the run 300"),
        (pd.DataFrame({"doc": [None, *range(1, 300)]}), ["--id-column", "doc"], "has a missing id"),
    ],
)
def test_a_table_that_does_not_match_the_run_is_refused_in_one_sentence_before_the_run(
    small_files, capsys, table, extra, message
):
    table.to_csv(small_files / "t.csv", index=False)
    out = small_files / "run"
    assert _filter(small_files, out, "--table", str(small_files / "t.csv"), *extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_id_column_needs_table_and_resume_keeps_the_recorded_table(small_files, capsys):
    out = small_files / "run"
    assert _filter(small_files, out, "--id-column", "doc") == 2
    assert "--id-column needs --table" in capsys.readouterr().err
    _texts(300).to_csv(small_files / "t.csv", index=False)
    table = ["--table", str(small_files / "t.csv"), "--id-column", "doc"]
    assert _filter(small_files, out, *table, "--max-rounds", "1") == 0
    assert (out / "table.parquet").is_file() and load_run_table(out) is not None
    (small_files / "t.csv").unlink()  # the resumed run needs only its own folder
    assert main(["filter", "--resume", str(out), *table]) == 2
    assert "drop --table" in capsys.readouterr().err
    assert main(["filter", "--resume", str(out), "--quiet"]) == 0
    result = AFLiteResult.load(out)
    assert load_run_table(out, result=result)["text"].iloc[0] == "text of row 0"
    assert run_table_info(out)["id_column"] == "doc"


def test_a_damaged_table_is_refused_and_old_records_still_load(small_files, tmp_path):
    _texts(300).to_csv(small_files / "t.csv", index=False)
    out = small_files / "run"
    assert _filter(small_files, out, "--table", str(small_files / "t.csv"), "--id-column", "doc") == 0
    result = AFLiteResult.load(out)
    data = (out / "table.parquet").read_bytes()
    (out / "table.parquet").write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    for load in (lambda: AFLiteResult.load(out), lambda: load_run_table(out)):
        with pytest.raises(ValueError, match=r"table\.parquet is inconsistent with result\.json") as err:
            load()
        assert len(str(err.value).splitlines()) == 1
    (out / "table.parquet").unlink()
    with pytest.raises(ValueError, match=r"it has no table\.parquet"):
        AFLiteResult.load(out)
    meta = json.loads((out / "result.json").read_text())
    meta["table"]["id_column"] = "text"  # an edit of result.json: its checksum no longer holds
    (out / "result.json").write_text(json.dumps(meta))
    for read in (run_table_info, load_run_table):
        with pytest.raises(ValueError, match="its checksum differs"):
            read(out)
    with pytest.raises(ValueError, match=r"it has no result\.json"):
        load_run_table(tmp_path)
    old = result.save(tmp_path / "plain")  # saved without a table: format 5 for its votes (3 without them)
    assert json.loads((old / "result.json").read_text())["format_version"] == 5
    assert load_run_table(old) is None and run_table_info(old) is None
    assert AFLiteResult.load(old).equals(result)


def test_the_text_budget_applies_to_the_table(small_files):
    _texts(300).to_csv(small_files / "t.csv", index=False)
    out = small_files / "run"
    assert _filter(small_files, out, "--table", str(small_files / "t.csv")) == 0
    with pytest.raises(ValueError, match="holds more than 100 bytes of text"):
        load_run_table(out, max_text_bytes=100)


def test_save_records_a_data_frame_table_and_checks_its_rows(small_files, tmp_path):
    _filter(small_files, small_files / "run")
    result = AFLiteResult.load(small_files / "run")
    table = align_table(_texts(300, np.arange(299, -1, -1)), n_rows=300, id_column="doc")
    result.save(tmp_path / "r", table=table, table_id_column="doc")
    assert load_run_table(tmp_path / "r", result=result)["doc"].tolist() == list(range(300))
    with pytest.raises(ValueError, match="has 10 rows and the run 300"):
        result.save(tmp_path / "r2", table=_texts(10))


# -- time left on the progress line ---------------------------------------------------------------------------------
def _progress(round_, size, removed, seconds, target=100, n=1000):
    return RoundProgress(round_, size, removed, n - size, target, n, removed, None, seconds)


def test_progress_line_has_a_finite_non_negative_time_left_from_the_rounds_done():
    stream = io.StringIO()
    bar = Progress(stream=stream)
    bar(_progress(1, 900, 100, 2.0))  # 1000 rows took 2 s: 0.002 s per row
    bar(_progress(2, 800, 100, 1.8))
    line = stream.getvalue().splitlines()[-1]
    match = re.search(r"\| left ≤(\d+)(?:m(\d\d))?s", line)
    assert match, line
    seconds = int(match.group(1)) * (60 if match.group(2) else 1) + int(match.group(2) or 0)
    assert math.isfinite(bar.seconds_left) and bar.seconds_left >= 0
    # 7 more rounds of 800, 700, ..., 200 rows at 3.8 s / 1,900 rows
    assert bar.seconds_left == pytest.approx(3.8 / 1900 * sum(range(200, 900, 100)))
    assert seconds == round(bar.seconds_left)
    bar(_progress(3, 800, 0, 1.0))  # nothing removed: the run stops
    assert bar.seconds_left == 0 and stream.getvalue().splitlines()[-1].count("left ≤0s") == 1


def test_rounds_left_model_is_finite_and_non_negative_at_the_edges():
    assert rounds_left_seconds(100, 100, 10, 0.5) == 0
    assert rounds_left_seconds(105, 100, 10, 0.5) == pytest.approx(52.5)  # one clamped round of 105 rows
    assert rounds_left_seconds(1000, 0, 1, float("inf")) == 0
    assert rounds_left_seconds(10**6, 1, 10, 1e-3) > 0
    for args in [(5, 0, 0, 1.0), (7, 3, 100, 0.0), (7, 3, 2, -1.0)]:
        value = rounds_left_seconds(*args)
        assert math.isfinite(value) and value >= 0


def test_the_cli_progress_line_of_a_real_run_carries_time_left(small_files, capsys):
    argv = [a for a in SMALL_RUN_ARGS if a != "--quiet"]
    files = ["--features", str(small_files / "X.npy"), "--labels", str(small_files / "y.txt")]
    code = main(["filter", *files, *argv, "--out", str(small_files / "run")])
    assert code == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "round" in ln]
    # the filter command's line is the shape model's estimate (issue 25), marked "~" (not an upper bound)
    assert lines and all(re.search(r"\| left ~\d+(m\d\ds)?s?", ln) for ln in lines)
    assert lines[-1].endswith("left ~0s")  # the last round: nothing left


def test_reading_the_table_goes_through_the_memory_budget(small_files):
    from aflite_core.data import budget

    pd.DataFrame({"doc": range(300), "text": ["x" * 2000] * 300}).to_parquet(small_files / "t.parquet")
    out = small_files / "run"
    assert _filter(small_files, out, "--table", str(small_files / "t.parquet"), "--id-column", "doc") == 0
    old = budget.set_budgets(parse_bytes=100_000, advice="raise it", wait_seconds=0.2)
    try:
        with pytest.raises(ValueError, match=r"^Run file 'table\.parquet' needs .* memory to read") as info:
            load_run_table(out)
        assert len(str(info.value).splitlines()) == 1
    finally:
        budget.set_budgets(**old.as_dict())
    assert load_run_table(out)["text"].str.len().eq(2000).all()
