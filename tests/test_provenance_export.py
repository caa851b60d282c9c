"""Provenance export (issue 28): Parquet, a dataset card and a manifest that ``datasets.load_dataset`` reads.

``datasets`` is in requirements-dev.txt (installed by tests/run.sh): these tests import it and never skip.
"""

from __future__ import annotations

import io
import json

import datasets
import numpy as np
import pandas as pd
import pytest

from aflite_core import AFLiteResult, aflite, load_digits_dataset
from aflite_core._utils import hash_array
from aflite_core.cli import main
from aflite_core.engine.provenance import (
    DATA_FILE,
    MANIFEST_FILE,
    ROWS_FILE,
    aflite_arguments,
    export_dataset,
    read_manifest,
)


@pytest.fixture(scope="module")
def digits_run():
    data = load_digits_dataset()
    X = data.representation()
    run = aflite(
        X,
        data.y,
        target_size=1100,
        train_size=700,
        slice_size=80,
        tau=0.7,
        n_partitions=8,
        random_state=5,
        ids=data.ids,
    )
    assert run.n_removed > 0
    return data, X, run


def _load(folder, tmp_path, cache="hf-cache"):
    return datasets.load_dataset(str(folder), cache_dir=str(tmp_path / cache))


def test_the_export_loads_with_datasets_and_rerunning_its_manifest_equals_the_run(digits_run, tmp_path):
    data, X, run = digits_run
    table = data.frame[["label", "pixel_0_3", "pixel_4_4"]].reset_index(drop=True)
    out = export_dataset(run, tmp_path / "export", table=table, representation={"name": "pixels"})
    loaded = _load(out, tmp_path)
    assert list(loaded) == ["train"]
    train = loaded["train"]
    assert train.num_rows == run.n_kept
    assert {"label", "pixel_0_3", "aflite_id", "aflite_status", "aflite_p_last"} <= set(train.column_names)
    assert set(train["aflite_status"]) == {"kept"}
    assert train["aflite_id"] == [int(i) for i in np.asarray(data.ids)[run.kept]]

    manifest = read_manifest(out)
    assert manifest["seed"] == 5 and manifest["parameters"]["tau"] == 0.7
    assert manifest["representation"]["name"] == "pixels"
    assert manifest["representation"]["x_sha256"] == hash_array(np.ascontiguousarray(X, dtype=np.float32)) or (
        manifest["representation"]["x_sha256"] == run.provenance["x_sha256"]
    )
    assert manifest["package_versions"]["at_export"]["numpy"] == np.__version__
    code = manifest["code_version"]
    assert code["aflite_core"] and (code["git_commit"] is None or len(code["git_commit"]) == 40)
    assert manifest["null"] is None and manifest["run"]["n_kept"] == run.n_kept

    rerun = aflite(X, data.y, ids=data.ids, **aflite_arguments(manifest))
    assert rerun.equals(run)
    assert rerun.equals(AFLiteResult.load(out / "run"))
    rows = pd.read_parquet(out / ROWS_FILE)
    assert (rows["aflite_status"] == np.where(rerun.kept, "kept", "removed")).all()
    assert rows["aflite_removed_round"].fillna(-1).astype(int).tolist() == rerun.removed_round.tolist()
    assert np.allclose(rows["p_round_1"], rerun.scores[0], equal_nan=True)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n")
    assert f"    path: {DATA_FILE}\n" in card


def test_the_cli_exports_a_run_directory_with_its_table_and_removed_rows(digits_run, tmp_path, capsys):
    data, _, run = digits_run
    texts = pd.DataFrame({"caption": [f"digit {c} number {i}" for i, c in enumerate(np.asarray(data.y))]})
    run.save(tmp_path / "run", table=texts)
    out = tmp_path / "exported"
    assert main(["export", str(tmp_path / "run"), "--out", str(out), "--include-removed"]) == 0
    assert f"Exported {run.n_rows:,} rows" in capsys.readouterr().out
    train = _load(out, tmp_path)["train"]
    assert train.num_rows == run.n_rows and train["caption"][:2] == texts["caption"][:2].tolist()
    assert sorted(set(train["aflite_status"])) == ["kept", "removed"]
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert manifest["include_removed"] is True and manifest["table_columns"] == ["caption"]
    # exporting again replaces the export whole, leaving no hidden sibling behind
    assert main(["export", str(tmp_path / "run"), "--out", str(out)]) == 0
    assert _load(out, tmp_path, "hf-cache-2")["train"].num_rows == run.n_kept
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".exported")) == []


def test_an_export_never_overwrites_other_files(digits_run, tmp_path, capsys):
    _, _, run = digits_run
    run.save(tmp_path / "run")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "mine")]) == 2
    err = capsys.readouterr().err
    assert "holds files that are not an AFLite export (['notes.txt'])" in err and err.count("\n") == 1
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_a_damaged_export_is_refused(digits_run, tmp_path):
    _, _, run = digits_run
    out = export_dataset(run, tmp_path / "e")
    (out / ROWS_FILE).write_bytes(b"changed")
    with pytest.raises(ValueError, match=r"aflite_rows\.parquet changed since it was written"):
        read_manifest(out)


def test_the_null_counts_are_exported_when_the_run_has_them(planted, tmp_path):
    X, y, _ = planted
    run = aflite(
        X[:300],
        y[:300],
        target_size=200,
        train_size=100,
        slice_size=20,
        n_partitions=4,
        random_state=0,
        null_permutations=2,
    )
    out = export_dataset(run, tmp_path / "e")
    manifest = read_manifest(out)
    assert manifest["null"] == {"permutations": 2, "file": "null_counts.parquet"}
    null = pd.read_parquet(out / "null_counts.parquet")
    assert len(null) == run.n_rounds * len(run.classes)
    assert aflite_arguments(manifest)["null_permutations"] == 2


def test_the_apps_download_unzips_to_a_folder_datasets_loads(tmp_path):
    import zipfile

    from aflite_app import exports
    from aflite_core import dataset_from_table

    rng = np.random.default_rng(0)
    y = np.repeat(["c", "e"], 60)
    frame = pd.DataFrame({"label": y, "text": [f"row {i} says {lab}" for i, lab in enumerate(y)]})
    X = rng.normal(size=(120, 6)).astype(np.float32)
    X[y == "c", 0] += 3.0
    data = dataset_from_table(frame, label_column="label", text_columns=["text"], features=X, name="text")
    run = aflite(X, data.y, target_size=80, train_size=40, slice_size=10, tau=0.6, n_partitions=8, random_state=0)
    blob = exports.provenance_zip_bytes(run, data, "table")
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        zf.extractall(tmp_path)
    folder = tmp_path / exports.EXPORT_FOLDER
    train = _load(folder, tmp_path)["train"]
    assert train.num_rows == run.n_kept and train["text"][0] == frame["text"][np.flatnonzero(run.kept)[0]]
    manifest = read_manifest(folder)
    assert manifest["representation"]["name"] == "table" and manifest["representation"]["dataset"] == "text"
    half = dataset_from_table(frame.iloc[30:90], label_column="label", features=X[30:90])
    with pytest.raises(ValueError, match="The run has 120 rows but the dataset has 60"):
        exports.provenance_zip_bytes(run, half, None)


def test_an_export_waits_for_the_folders_other_writer_and_refuses_after_the_timeout(digits_run, tmp_path):
    import threading

    from aflite_core._folder_lock import FolderBusyError, folder_lock

    _, _, run = digits_run
    out = tmp_path / "busy"
    held, release = threading.Event(), threading.Event()

    def other_writer():  # another thread (a save, an export) holds the folder
        with folder_lock(out):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=other_writer)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(FolderBusyError):
            export_dataset(run, out, lock_timeout=0.2)
        assert not out.exists()
    finally:
        release.set()
        thread.join(30)
    assert export_dataset(run, out).is_dir()  # once it is free
