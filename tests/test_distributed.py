"""Scale-out: the Dask backend, memory-mapped input, checkpoints and resumed CLI runs.

The same seed must give the identical result on a 2-worker LocalCluster as in-process, survive a worker
killed in the middle of a run, and an interrupted CLI run resumed must end exactly as an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from aflite_core import AFLiteResult, aflite
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine.checkpoint import peek_round

distributed = pytest.importorskip("distributed") if not os.environ.get("CI") else __import__("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client():
    from aflite_core.engine.distributed import local_cluster

    cluster, client = local_cluster(2)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_planted_bias(3000, 16, random_state=0)
    return X, y


KW = dict(target_size=1000, train_size=500, slice_size=200, tau=0.5, random_state=3)


def test_dask_gives_the_local_result(client, data):
    X, y = data
    local = aflite(X, y, **KW)
    remote = aflite(X, y, **KW, backend=client)
    assert remote.params["partition_mode"] == "blocks" and local.n_rounds >= 3
    assert remote.equals(local)
    assert remote.provenance["backend"] == "DaskBackend"


def test_local_cluster_workers_keep_glibcs_dynamic_malloc_thresholds(client):
    # Dask's default MALLOC_TRIM_THRESHOLD_ made the scoring ~1.5x slower in a worker than in-process
    env = client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OPENBLAS_NUM_THREADS")))
    assert len(env) == 2 and all(v == (None, "1") for v in env.values())


def test_dask_with_an_evaluation_set_and_exact_partitions(client, data):
    X, y = data
    kw = dict(KW, train_size=20)  # tiny t: exact random subsets, chunked scoring
    a = aflite(X[:2000], y[:2000], eval_X=X[2000:], eval_y=y[2000:], **kw)
    b = aflite(X[:2000], y[:2000], eval_X=X[2000:], eval_y=y[2000:], **kw, backend=client)
    assert a.params["partition_mode"] == "exact"
    assert b.equals(a)


def test_dask_with_a_scikit_learn_family(client, data):
    from sklearn.linear_model import LogisticRegression

    X, y = data
    kw = dict(
        target_size=300,
        train_size=100,
        slice_size=50,
        tau=0.5,
        random_state=1,
        n_partitions=6,
        model=LogisticRegression(),
    )
    assert aflite(X[:600], y[:600], **kw, backend=client).equals(aflite(X[:600], y[:600], **kw))


class _KillOnce(distributed.WorkerPlugin):
    """Kill the worker that starts the first fit task of round 2 (once: a flag file is consumed)."""

    def __init__(self, flag: str) -> None:
        self.flag = flag

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and "aflite-fit-r2-" in str(key):
            try:
                os.remove(self.flag)
            except FileNotFoundError:
                return
            os._exit(1)


def test_a_worker_killed_mid_run_changes_nothing(data, tmp_path):
    from aflite_core.engine.distributed import local_cluster

    X, y = data
    cluster, client = local_cluster(2)
    flag = tmp_path / "kill-once"
    flag.touch()
    try:
        client.register_plugin(_KillOnce(str(flag)), name="kill-once")
        survived = aflite(X, y, **KW, backend=client)
    finally:
        client.close()
        cluster.close()
    assert not flag.exists(), "the plugin killed a worker during round 2"
    assert survived.equals(aflite(X, y, **KW))


def test_memory_mapped_input_gives_the_in_memory_result(client, data, tmp_path):
    X, y = data
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    in_memory = aflite(X, y, **KW)
    assert aflite(mm, y, **KW).equals(in_memory)
    assert aflite(mm, y, **KW, backend=client).equals(in_memory)  # workers read the file themselves


@pytest.fixture
def files(tmp_path, data):
    X, y = data
    np.save(tmp_path / "X.npy", X)
    np.savetxt(tmp_path / "y.txt", y, fmt="%d")
    return tmp_path


ARGS = ["--target-size", "1000", "--train-size", "500", "--slice-size", "200", "--tau", "0.5", "--seed", "3", "--quiet"]


def _filter(files, out, *extra):
    return main(
        [
            "filter",
            "--features",
            str(files / "X.npy"),
            "--labels",
            str(files / "y.txt"),
            *ARGS,
            "--out",
            str(out),
            *extra,
        ]
    )


def test_cli_run_stopped_after_two_rounds_and_resumed_is_the_uninterrupted_run(files, capsys):
    assert _filter(files, files / "full") == 0
    full = AFLiteResult.load(files / "full")
    capsys.readouterr()
    assert _filter(files, files / "part", "--max-rounds", "2") == 0
    partial = json.loads(capsys.readouterr().out)
    assert partial["stop_reason"] == "stopped_by_callback" and "--resume" in partial["resume"]
    assert AFLiteResult.load(files / "part").n_rounds == 2
    assert main(["filter", "--resume", str(files / "part"), "--quiet"]) == 0
    assert AFLiteResult.load(files / "part").equals(full)


def test_cli_run_killed_hard_and_resumed_is_the_uninterrupted_run(files):
    assert _filter(files, files / "full") == 0
    full = AFLiteResult.load(files / "full")
    out = files / "killed"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aflite_core",
            "filter",
            "--features",
            str(files / "X.npy"),
            "--labels",
            str(files / "y.txt"),
            *ARGS,
            "--out",
            str(out),
            "--partitions",
            "256",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        if (peek_round(out / "checkpoint") or 0) >= 2:
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "result.json").exists() or AFLiteResult.load(out).n_rounds == peek_round(out / "checkpoint")
    # the resumed run uses the same --partitions: compare with an uninterrupted run of that setting
    reference = files / "ref256"
    assert (
        main(
            [
                "filter",
                "--features",
                str(files / "X.npy"),
                "--labels",
                str(files / "y.txt"),
                *ARGS,
                "--out",
                str(reference),
                "--partitions",
                "256",
            ]
        )
        == 0
    )
    assert main(["filter", "--resume", str(out), "--quiet"]) == 0
    assert AFLiteResult.load(out).equals(AFLiteResult.load(reference))
    assert full.n_rounds >= 3


def test_cli_on_a_local_dask_cluster_matches_the_local_run(files, capsys):
    assert _filter(files, files / "local") == 0
    assert _filter(files, files / "dask", "--dask-local", "2") == 0
    assert AFLiteResult.load(files / "dask").equals(AFLiteResult.load(files / "local"))
    out = capsys.readouterr()
    assert out.out.count("{") == 2


def test_resume_refuses_a_different_run(files, capsys):
    assert _filter(files, files / "r", "--max-rounds", "1") == 0
    args_file = files / "r" / "cli_args.json"
    saved = json.loads(args_file.read_text())
    saved["tau"] = 0.9
    args_file.write_text(json.dumps(saved))
    assert main(["filter", "--resume", str(files / "r"), "--quiet"]) == 2
    assert "belongs to a different run" in capsys.readouterr().err
