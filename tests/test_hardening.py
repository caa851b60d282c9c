"""The holes a hostile or unlucky user found, one test each: the run root, secrets in messages, the CLI's
--force / --out / --dask-local, model families that are not classifiers, complex features, duplicate ids,
and damaged or torn checkpoints."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import SMALL_RUN_ARGS

from aflite_core import AFLiteResult, aflite
from aflite_core.cli import main
from aflite_core.data.readers import read_labels

SECRET = "sk_live_" + "7d1e0c9b5a3f8e2d" * 4  # 72 characters, like a real token


@pytest.fixture
def files(small_files):
    return small_files


# -- the run root -------------------------------------------------------------------------------------------------
@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "team" / "run1").mkdir(parents=True)
    (root / "team" / "run1" / "result.json").write_text("{}")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "result.json").write_text("{}")
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    return root


def test_the_run_root_refuses_dotdot_absolute_paths_and_symlinks_out(root, tmp_path):
    from aflite_app.run_root import OutsideRoot, inside_root

    assert inside_root(root, "team/run1") == (root / "team" / "run1").resolve()
    (root / "link-in").symlink_to(root / "team")
    assert inside_root(root, "link-in/run1") == (root / "team" / "run1").resolve()
    (root / "link-out").symlink_to(tmp_path / "outside")
    messages = set()
    for path in [
        "../outside",
        "team/../../outside",
        str(tmp_path / "outside"),
        "/etc",
        "/proc/self/environ",
        "link-out",
        "link-out/result.json",
        "does-not-exist",
        "/does/not/exist",
        "",
        "a\x00b",
    ]:
        with pytest.raises(OutsideRoot) as info:
            inside_root(root, path)
        messages.add(str(info.value))
    assert len(messages) == 1  # the same sentence whether it exists or not: nothing about other files leaks


def test_listing_finds_runs_below_the_root_only(root, tmp_path):
    from aflite_app.run_root import list_run_directories

    (root / "link-out").symlink_to(tmp_path / "outside")
    (root / ".hidden" / "run").mkdir(parents=True)
    (root / ".hidden" / "run" / "result.json").write_text("{}")
    deep = root.joinpath(*"abcdefg")
    deep.mkdir(parents=True)
    (deep / "result.json").write_text("{}")
    assert list_run_directories(root) == ["team/run1"]


def test_opening_outside_the_root_is_refused_in_one_sentence(root, tmp_path):
    from aflite_app.compute import rundirs

    for path in ["../outside", str(tmp_path / "outside"), "/etc", "link/../.."]:
        with pytest.raises(ValueError, match="not below the app's run root"):
            rundirs.open_run_directory(path)


def test_recorded_input_paths_outside_the_root_are_never_read(root, files, small_filter):
    from aflite_app.compute import rundirs

    run = root / "cli-run"
    assert small_filter(run) == 0
    record = json.loads((run / "cli_args.json").read_text())
    record["labels"] = "/etc/passwd"
    (run / "cli_args.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="not below the app's run root") as info:
        rundirs.open_run_directory("cli-run")
    assert "root:" not in str(info.value)


def test_a_secret_labels_file_below_the_root_is_refused_without_quoting_it(root, files, small_filter):
    from aflite_app.compute import rundirs

    run = root / "cli-run"
    assert small_filter(run, "--copy-inputs") == 0
    (run / "inputs" / "labels.txt").unlink()
    (run / "inputs" / "labels.txt").write_text(SECRET + "\n")
    with pytest.raises(ValueError, match="are not the ones the run") as info:
        rundirs.open_run_directory("cli-run")
    assert SECRET[:24] not in str(info.value)


# -- secrets never appear in messages -----------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".txt", ".csv", ".tsv", ""])
def test_a_secret_labels_file_never_appears_in_api_or_cli_messages(files, suffix, capsys):
    secret = files / f"secret{suffix}"
    secret.write_text(SECRET + "\n")
    X = np.load(files / "X.npy")
    messages = []
    for column in (None, "label"):
        try:
            y = read_labels(secret, column=column)
            aflite(X, np.resize(y, len(X)), target_size=150, train_size=60, slice_size=40)
        except (ValueError, TypeError) as exc:
            messages.append(str(exc))
        code = main(
            [
                "filter",
                "--features",
                str(files / "X.npy"),
                "--labels",
                str(secret),
                *SMALL_RUN_ARGS,
                "--out",
                str(files / "out"),
                *(["--label-column", column] if column else []),
            ]
        )
        assert code == 2
        messages.append(capsys.readouterr().err)
    assert messages
    for text in messages:
        assert SECRET not in text and SECRET[:40] not in text, text


def test_unknown_evaluation_classes_are_quoted_short(files):
    X, y = np.load(files / "X.npy"), np.loadtxt(files / "y.txt", dtype=int)
    with pytest.raises(ValueError) as info:
        aflite(X, y, target_size=150, train_size=60, slice_size=40, eval_X=X[:5], eval_y=[SECRET] * 5)
    assert SECRET not in str(info.value) and "…" in str(info.value)


# -- the CLI's run directories --------------------------------------------------------------------------------------
def test_force_replaces_only_a_run_directory(files, capsys, small_filter):
    mine = files / "my-folder"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    assert small_filter(mine, "--force") == 2
    assert "not an AFLite run directory" in capsys.readouterr().err
    assert (mine / "thesis.tex").read_text() == "years of work"
    (mine / "result.json").write_text("{}")  # a result.json alone does not make a run directory
    assert small_filter(mine, "--force") == 2
    assert (mine / "thesis.tex").exists()
    run = files / "run"
    assert small_filter(run) == 0
    assert small_filter(run) == 2  # not empty, no --force
    assert small_filter(run, "--force") == 0
    interrupted = files / "interrupted"
    assert small_filter(interrupted, "--max-rounds", "1") == 0
    (interrupted / "result.json").unlink()  # killed before its final save: only arguments and checkpoint
    assert small_filter(interrupted, "--force") == 0
    assert AFLiteResult.load(interrupted).equals(AFLiteResult.load(run))


def test_invalid_arguments_leave_no_out_folder(files, capsys, small_filter):
    out = files / "never"
    assert (
        main(
            [
                "filter",
                "--features",
                str(files / "X.npy"),
                "--labels",
                str(files / "y.txt"),
                "--target-size",
                "150",
                "--train-size",
                "200",
                "--slice-size",
                "40",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "--train-size" in capsys.readouterr().err
    assert not out.exists()
    assert small_filter(out) == 0  # a retry needs no --force


def test_dask_local_below_one_is_refused(files, capsys, small_filter):
    for n in ("0", "-2"):
        assert small_filter(files / f"d{n}", "--dask-local", n) == 2
        assert "--dask-local must be a number of workers >= 1" in capsys.readouterr().err
        assert not (files / f"d{n}").exists()


# -- model families, features, ids ----------------------------------------------------------------------------------
def test_model_families_must_be_classifier_instances(files):
    from sklearn.cluster import KMeans
    from sklearn.linear_model import LinearRegression, LogisticRegression

    X, y = np.load(files / "X.npy"), np.loadtxt(files / "y.txt", dtype=int)
    kw = dict(target_size=150, train_size=60, slice_size=40, n_partitions=4)
    for model, words in ((LinearRegression(), "a regressor"), (KMeans(n_clusters=2), "a clusterer")):
        with pytest.raises(TypeError, match=f"must be a classifier.*{words}"):
            aflite(X, y, model=model, **kw)
    with pytest.raises(TypeError, match=r"not the class LogisticRegression: pass LogisticRegression\(\)"):
        aflite(X, y, model=LogisticRegression, **kw)


def test_complex_features_are_refused(files):
    X, y = np.load(files / "X.npy"), np.loadtxt(files / "y.txt", dtype=int)
    with pytest.raises(TypeError, match=r"real numbers\. Got complex"):
        aflite(X + 1j, y, target_size=150, train_size=60, slice_size=40)


def test_duplicate_ids_are_refused_in_the_api_and_the_cli(files, capsys, small_filter):
    X, y = np.load(files / "X.npy"), np.loadtxt(files / "y.txt", dtype=int)
    ids = [f"ex-{i}" for i in range(300)]
    ids[200] = "ex-17"
    with pytest.raises(ValueError, match=r"own id. Got 'ex-17' in rows 17 and 200"):
        aflite(X, y, target_size=150, train_size=60, slice_size=40, ids=ids)
    (files / "ids.txt").write_text("\n".join(ids) + "\n")
    assert small_filter(files / "dup", "--ids", str(files / "ids.txt")) == 2
    err = capsys.readouterr().err
    assert "'ex-17' in rows 17 and 200" in err and err.count("\n") == 1
    assert not (files / "dup").exists()


# -- damaged and torn checkpoints -----------------------------------------------------------------------------------
def _resume(out, capsys):
    code = main(["filter", "--resume", str(out), "--quiet"])
    return code, capsys.readouterr().err


def test_resume_refuses_a_damaged_checkpoint_in_one_line(files, capsys, small_filter):
    out = files / "part"
    assert small_filter(out, "--max-rounds", "2") == 0
    capsys.readouterr()
    state = out / "checkpoint" / "state.npz"
    state.write_bytes(state.read_bytes()[:-100])
    code, err = _resume(out, capsys)
    assert code == 2 and err.count("\n") == 1 and "damaged or inconsistent" in err
    (out / "checkpoint" / "round_00002.npz").unlink()
    assert small_filter(files / "part2", "--max-rounds", "2") == 0
    capsys.readouterr()
    (files / "part2" / "checkpoint" / "round_00002.npz").unlink()
    code, err = _resume(files / "part2", capsys)
    assert code == 2 and "the file of round 2 is missing" in err


def _legacy_checkpoint(src: Path, dest: Path, meta_round_dir: Path) -> None:
    """A format-1 checkpoint: state.npz's arrays from ``src``, state.json from ``meta_round_dir``'s state."""
    dest.mkdir(parents=True)
    for f in src.glob("round_*.npz"):
        with np.load(f) as z:
            np.savez(dest / f.name, scores=z["scores"], counts=z["counts"])
    with np.load(src / "state.npz") as z:
        np.savez(dest / "state.npz", **{k: z[k] for k in z.files if k != "meta"})
    with np.load(meta_round_dir / "state.npz") as z:
        meta = json.loads(z["meta"].tobytes().decode())
    meta["version"] = 1
    (dest / "state.json").write_text(json.dumps(meta))


def test_a_torn_format_1_checkpoint_is_refused_and_a_whole_one_resumes(files, capsys, small_filter):
    assert small_filter(files / "full") == 0
    full = AFLiteResult.load(files / "full")
    assert small_filter(files / "r1", "--max-rounds", "1") == 0
    assert small_filter(files / "r2", "--max-rounds", "2") == 0
    capsys.readouterr()
    for name, arrays_from, meta_from in (("torn", "r2", "r1"), ("whole", "r2", "r2")):
        out = files / name
        out.mkdir()
        (out / "cli_args.json").write_text((files / "r2" / "cli_args.json").read_text())
        _legacy_checkpoint(files / arrays_from / "checkpoint", out / "checkpoint", files / meta_from / "checkpoint")
        code, err = _resume(out, capsys)
        if name == "torn":  # state of round 2, history and random state of round 1: never continued
            assert code == 2 and "damaged or inconsistent" in err, err
        else:
            assert code == 0, err
            assert AFLiteResult.load(out).equals(full)


def test_load_of_a_damaged_run_directory_is_one_sentence_in_the_cli(files, capsys, small_filter):
    out = files / "run"
    assert small_filter(out) == 0
    meta = json.loads((out / "result.json").read_text())
    meta["n_rounds"] = 99
    (out / "result.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="changed since it was saved"):
        AFLiteResult.load(out)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for f in out.iterdir():
            if f.is_file():
                zf.write(f, f.name)
    from aflite_app import exports

    with pytest.raises(exports.RunArchiveError) as info:
        exports.load_run_zip(buf.getvalue(), name="'run.zip'")
    assert str(info.value).count("\n") == 0 and os.sep + "tmp" not in str(info.value)
