"""``filter --groups-column COL`` / ``--no-groups`` and the NLI premise default (issue 28)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import SMALL_RUN_ARGS

from aflite_core import AFLiteResult, aflite
from aflite_core.cli import main


def _nli_table(n: int = 300) -> pd.DataFrame:
    premise = [f"premise {i // 3}" for i in range(n)]  # three hypotheses per premise, as in SNLI
    return pd.DataFrame({"premise": premise, "hypothesis": [f"h {i}" for i in range(n)], "doc": np.arange(n) % 50})


def _filter(files, out, *extra) -> int:
    argv = ["filter", "--features", str(files / "X.npy"), "--labels", str(files / "y.txt"), *SMALL_RUN_ARGS]
    return main([*argv, "--out", str(out), *extra])


def test_groups_column_round_trip_equals_the_api(small_files, capsys):
    """--groups-column doc: recorded in the run's parameters, the same removals as aflite(groups=...)."""
    _nli_table().to_csv(small_files / "t.csv", index=False)
    out = small_files / "run"
    assert _filter(small_files, out, "--table", str(small_files / "t.csv"), "--groups-column", "doc") == 0
    capsys.readouterr()
    res = AFLiteResult.load(out)
    assert res.params["groups"]["source"] == "doc" and res.params["groups"]["n_groups"] == 50
    X = np.load(small_files / "X.npy")
    y = np.loadtxt(small_files / "y.txt", dtype=int)
    kw = dict(target_size=150, train_size=60, slice_size=40, n_partitions=16, tau=0.5, random_state=1)
    api = aflite(X, y, **kw, groups=np.arange(300) % 50)
    assert np.array_equal(res.removed_round, api.removed_round)
    assert json.loads((out / "cli_args.json").read_text())["groups_column"] == "doc"


def test_an_nli_pair_table_gets_premise_groups_unless_no_groups(small_files, capsys):
    _nli_table().to_csv(small_files / "t.csv", index=False)
    assert _filter(small_files, small_files / "a", "--table", str(small_files / "t.csv")) == 0
    assert _filter(small_files, small_files / "b", "--table", str(small_files / "t.csv"), "--no-groups") == 0
    capsys.readouterr()
    grouped, free = AFLiteResult.load(small_files / "a"), AFLiteResult.load(small_files / "b")
    assert grouped.params["groups"]["source"] == "premise" and grouped.params["groups"]["n_groups"] == 100
    assert "groups" not in free.params
    # a table that is no NLI pair table gets no groups
    pd.DataFrame({"text": [f"t{i}" for i in range(300)]}).to_csv(small_files / "p.csv", index=False)
    assert _filter(small_files, small_files / "c", "--table", str(small_files / "p.csv")) == 0
    assert "groups" not in AFLiteResult.load(small_files / "c").params


def test_a_grouped_run_resumes_with_its_groups(small_files, capsys):
    _nli_table().to_csv(small_files / "t.csv", index=False)
    full = small_files / "full"
    assert _filter(small_files, full, "--table", str(small_files / "t.csv")) == 0
    part = small_files / "part"
    assert _filter(small_files, part, "--table", str(small_files / "t.csv"), "--max-rounds", "1") == 0
    assert main(["filter", "--resume", str(part), "--quiet"]) == 0
    capsys.readouterr()
    assert AFLiteResult.load(part).equals(AFLiteResult.load(full))


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--groups-column", "doc"], "--groups-column needs --table"),
        (["--table", "T", "--groups-column", "nope"], "not a column"),
        (["--table", "T", "--groups-column", "doc", "--no-groups"], "cannot be combined"),
    ],
)
def test_group_option_errors_are_one_line(small_files, capsys, extra, words):
    _nli_table().to_csv(small_files / "t.csv", index=False)
    extra = [str(small_files / "t.csv") if e == "T" else e for e in extra]
    assert _filter(small_files, small_files / "x", *extra) != 0
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
