"""AFLiteResult.load refuses every damaged, tampered or inconsistent record with one ValueError sentence.

Hypothesis tampers with a saved run — truncations, deleted files, edited JSON fields, tables of other shapes —
and the load must raise ``ValueError`` or give back exactly the saved run, never any other exception.
A second test forges records whose checksums were recomputed (a hostile archive), so the checks behind the
checksums are exercised too.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aflite_core import AFLiteResult, aflite
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine.run_record import RUN_FILES, _canonical


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X, y, _ = make_planted_bias(300, 6, class_sep=0.3, random_state=2)
    names = np.array(["neg", "pos"])[y]
    ids = np.array([f"ex-{i}" for i in range(300)], dtype=object)
    res = aflite(
        X[:240],
        names[:240],
        target_size=120,
        train_size=50,
        slice_size=30,
        n_partitions=8,
        tau=0.5,
        random_state=4,
        eval_X=X[240:],
        eval_y=names[240:],
        ids=ids[:240],
        eval_ids=ids[240:],
        null_permutations=2,
    )
    folder = tmp_path_factory.mktemp("saved") / "run"
    table = pd.DataFrame({"id": ids[:240], "text": [f"row {i}" for i in range(240)]})  # the recorded table
    res.save(folder, table=table, table_id_column="id")
    return res, folder


#: every file a run record may hold: the fixture's run writes all of them (checked below), so a file a later
#: feature adds to the record is tampered with here too
FILES = list(RUN_FILES)
JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def _parquet(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def _tamper(folder: Path, data) -> None:
    kind = data.draw(st.sampled_from(["truncate", "delete", "json_field", "json_key", "reshape", "garbage"]))
    name = data.draw(st.sampled_from(FILES))
    path = folder / name
    if kind == "truncate":
        size = path.stat().st_size
        path.write_bytes(path.read_bytes()[: data.draw(st.integers(0, max(0, size - 1)))])
    elif kind == "delete":
        path.unlink()
    elif kind in ("json_field", "json_key"):
        meta = json.loads((folder / "result.json").read_text())
        target = meta
        key = data.draw(st.sampled_from(sorted(meta)))
        if kind == "json_field" and isinstance(meta[key], dict) and meta[key]:
            target, key = meta[key], data.draw(st.sampled_from(sorted(meta[key])))
        if kind == "json_key":
            del target[key]
        else:
            target[key] = data.draw(JSON_VALUES)
        (folder / "result.json").write_text(json.dumps(meta))
    elif kind == "reshape" and name.endswith(".parquet"):
        frame = pd.read_parquet(path)
        how = data.draw(st.sampled_from(["drop_row", "drop_column", "add_row", "retype"]))
        if how == "drop_row" and len(frame):
            frame = frame.iloc[1:]
        elif how == "drop_column" and frame.shape[1]:
            frame = frame.drop(columns=frame.columns[data.draw(st.integers(0, frame.shape[1] - 1))])
        elif how == "add_row" and len(frame):
            frame = pd.concat([frame, frame.iloc[:1]], ignore_index=True)
        elif frame.shape[1]:
            col = frame.columns[0]
            frame[col] = frame[col].astype(str)
        path.write_bytes(_parquet(frame))
    else:
        path.write_bytes(data.draw(st.binary(max_size=64)))


def _tampered_copy(folder: Path, factory, data) -> Path:
    work = factory.mktemp("tamper") / "run"
    shutil.copytree(folder, work)
    _tamper(work, data)
    return work


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_tampered_records_are_refused_or_exact(saved, tmp_path_factory, data):
    res, folder = saved
    work = _tampered_copy(folder, tmp_path_factory, data)
    try:
        back = AFLiteResult.load(work)
    except ValueError as exc:
        assert str(exc).count("\n") == 0 and str(exc).strip()
        return
    assert back.equals(res, timings=True)


def _forge(folder: Path) -> None:
    """Recompute the manifest and checksum, as a hostile archive would."""
    meta = json.loads((folder / "result.json").read_text())
    meta.pop("checksum", None)
    files = {}
    for name in sorted(meta.get("files") or {}):
        if (folder / name).is_file():
            data = (folder / name).read_bytes()
            files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    meta["files"] = files
    meta["checksum"] = hashlib.sha256(_canonical(meta)).hexdigest()
    (folder / "result.json").write_text(json.dumps(meta))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_forged_records_are_refused_or_consistent(saved, tmp_path_factory, data):
    work = _tampered_copy(saved[1], tmp_path_factory, data)
    if (work / "result.json").is_file():
        try:
            json.loads((work / "result.json").read_text())
            _forge(work)
        except (ValueError, UnicodeDecodeError, AttributeError, TypeError):
            pass
    try:
        back = AFLiteResult.load(work)
    except ValueError as exc:
        assert str(exc).count("\n") == 0
        return
    # a record that passes every check is one the product can show: nothing raises later
    back.to_frame(round_scores=True)
    back.eval_frame()
    assert back.stop_message and back.summary()
    assert len(back.kept) == len(back.y) == len(back.removed_round)


def test_format_1_records_still_load(saved, tmp_path):
    res, folder = saved
    old = tmp_path / "old"
    shutil.copytree(folder, old)
    meta = json.loads((old / "result.json").read_text())
    for key in ("files", "checksum"):
        meta.pop(key)
    meta["format_version"] = 1
    (old / "result.json").write_text(json.dumps(meta))
    assert AFLiteResult.load(old).equals(res)


def test_a_row_count_other_than_the_datasets_is_refused_before_reading(saved):
    _, folder = saved
    with pytest.raises(ValueError, match="made on 240 rows, but the dataset it is opened for has 100 rows"):
        AFLiteResult.load(folder, expected_rows=100)
    with pytest.raises(ValueError, match="more than the 200 allowed here"):
        AFLiteResult.load(folder, max_rows=200)


def test_save_refuses_a_folder_of_other_files(saved, tmp_path):
    res, _ = saved
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not part of a run"):
        res.save(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    res.save(tmp_path / "fresh")
    res.save(tmp_path / "fresh")  # over a run: replaced
    assert AFLiteResult.load(tmp_path / "fresh").equals(res)


def test_every_record_file_is_written_listed_and_checked(saved, tmp_path):
    """New record files stay checked (issue 24): each file of a run is in the manifest with its checksum, and one
    changed byte in any of them makes the load refuse in one sentence."""
    _, folder = saved
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(RUN_FILES), "the fixture's run must write every file a run record may hold"
    meta = json.loads((folder / "result.json").read_text())
    assert sorted(meta["files"]) == sorted(set(RUN_FILES) - {"result.json"})
    for name, entry in meta["files"].items():
        data = (folder / name).read_bytes()
        assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    for name in sorted(set(RUN_FILES) - {"result.json"}):
        work = tmp_path / name / "run"
        shutil.copytree(folder, work)
        raw = bytearray((work / name).read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        (work / name).write_bytes(bytes(raw))
        with pytest.raises(ValueError) as info:
            AFLiteResult.load(work)
        assert "\n" not in str(info.value) and name in str(info.value)
