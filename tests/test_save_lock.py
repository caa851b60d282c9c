"""Saves into one folder from several processes: one lock file beside the folder, never a mix, never a raw error.

Issue 24: two processes ``save()``-ing into one folder crashed with a raw ``FileNotFoundError`` (19 of 60) and
once left one run's ``result.json`` beside the other's ``rows.parquet``. Now a save holds ``.NAME.lock`` (created
with ``O_CREAT | O_EXCL``, holding its PID) beside the folder: the second save waits for the first (up to
``LOCK_TIMEOUT_S``) and then refuses in one sentence; a lock whose process is dead is taken over.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from aflite_core import AFLiteResult, _folder_lock, aflite
from aflite_core._folder_lock import FolderBusyError, folder_lock, lock_path
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias

ROUNDS = 30

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from aflite_core import AFLiteResult

    me, src, root, rounds = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    other = "b" if me == "a" else "a"
    result = AFLiteResult.load(src)
    outcomes = []
    for i in range(rounds):
        (root / f"ready-{i}-{me}").touch()  # a two-process barrier: both saves of round i start together
        deadline = time.monotonic() + 60
        while not (root / f"ready-{i}-{other}").exists() and time.monotonic() < deadline:
            time.sleep(0.0002)
        try:
            result.save(root / "runs" / f"run-{i}")
            outcomes.append(None)
        except ValueError as exc:
            outcomes.append(["ValueError", type(exc).__name__, str(exc)])
        except Exception as exc:
            outcomes.append(["raw", type(exc).__name__, str(exc)])
    print(json.dumps(outcomes))
    """
)


def _tiny(seed: int) -> AFLiteResult:
    X, y, _ = make_planted_bias(80, 4, random_state=seed)
    return aflite(X, y, target_size=40, train_size=20, slice_size=10, n_partitions=4, tau=0.5, random_state=seed)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    a, b = _tiny(1), _tiny(2)
    assert not a.equals(b)
    root = tmp_path_factory.mktemp("sources")
    a.save(root / "a")
    b.save(root / "b")
    return a, b, root


def _one_sentence(message: str) -> bool:
    return "\n" not in message and "Traceback" not in message and message.endswith(".") and message.count(". ") == 0


def test_two_processes_saving_into_the_same_folders_30_times_leave_exactly_one_run_each(two_runs, tmp_path):
    a, b, sources = two_runs
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    (tmp_path / "runs").mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = {
        me: subprocess.Popen(
            [sys.executable, str(script), me, str(sources / me), str(tmp_path), str(ROUNDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for me in ("a", "b")
    }
    outcomes = {}
    for me, proc in procs.items():
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        outcomes[me] = json.loads(out.strip().splitlines()[-1])
    failures = [o for me in outcomes for o in outcomes[me] if o is not None]
    assert all(kind == "ValueError" and _one_sentence(text) for kind, _, text in failures), failures
    for i in range(ROUNDS):
        if outcomes["a"][i] is not None and outcomes["b"][i] is not None:
            continue  # both refused (never seen: the second save waits for the first)
        loaded = AFLiteResult.load(tmp_path / "runs" / f"run-{i}")
        assert loaded.equals(a) != loaded.equals(b), f"round {i}: not exactly one of the two runs"
    # no lock file, scratch folder or stale-lock leftover stays beside the runs
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(f"run-{i}" for i in range(ROUNDS))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_lock_left_by_a_dead_process_is_taken_over(two_runs, tmp_path):
    a, _, _ = two_runs
    out = tmp_path / "run"
    lock = lock_path(out)
    assert lock == tmp_path / ".run.lock"
    lock.write_text(f"{_dead_pid()} {_folder_lock._HOST}\n")
    t0 = time.monotonic()
    a.save(out)
    assert time.monotonic() - t0 < _folder_lock.LOCK_TIMEOUT_S / 2  # taken over, not waited out
    assert AFLiteResult.load(out).equals(a)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_lock_this_process_left_behind_is_taken_over(two_runs, tmp_path):
    # e.g. a crash injected at the unlink of the lock (tests/test_crash_consistency.py), or a killed thread
    a, _, _ = two_runs
    out = tmp_path / "run"
    lock_path(out).write_text(f"{os.getpid()} {_folder_lock._HOST}\n")
    a.save(out)
    assert AFLiteResult.load(out).equals(a)
    assert not lock_path(out).exists()


def test_a_lock_never_written_is_taken_over_once_old(two_runs, tmp_path):
    a, _, _ = two_runs
    out = tmp_path / "run"
    lock = lock_path(out)
    lock.write_text("")
    old = time.time() - 60
    os.utime(lock, (old, old))
    a.save(out)
    assert AFLiteResult.load(out).equals(a)


def test_a_live_holder_makes_the_save_wait_then_refuse_in_one_sentence(two_runs, tmp_path, monkeypatch):
    a, b, _ = two_runs
    out = tmp_path / "run"
    b.save(out)
    monkeypatch.setattr(_folder_lock, "LOCK_TIMEOUT_S", 0.3)
    live = os.getppid()  # alive for as long as this test runs
    lock_path(out).write_text(f"{live} {_folder_lock._HOST}\n")
    t0 = time.monotonic()
    with pytest.raises(FolderBusyError) as info:
        a.save(out)
    assert 0.25 < time.monotonic() - t0 < 5
    message = str(info.value)
    assert _one_sentence(message), message
    assert message == (
        f"'{out}' is being written by another process (PID {live}) and was still locked after 0.3 s; try again "
        "when it has finished, or save into another folder (if no such process runs, delete '.run.lock' beside it)."
    )
    assert isinstance(info.value, ValueError)
    assert AFLiteResult.load(out).equals(b)  # nothing was written
    assert lock_path(out).read_text().split()[0] == str(live)  # the holder's lock is left alone


def test_a_save_waits_for_the_holder_and_then_writes(two_runs, tmp_path):
    a, b, _ = two_runs
    out = tmp_path / "run"
    held, released = threading.Event(), threading.Event()

    def hold() -> None:
        with folder_lock(out):
            b.save(out)  # re-entrant in the holding thread
            held.set()
            time.sleep(0.3)
            released.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(30)
    a.save(out)  # another thread of this process: waits for the holder
    assert released.is_set()
    holder.join()
    assert AFLiteResult.load(out).equals(a)
    assert not lock_path(out).exists()


def test_two_threads_time_out_in_one_sentence(tmp_path):
    out = tmp_path / "run"
    with folder_lock(out):
        box = {}

        def other() -> None:
            try:
                with folder_lock(out, timeout=0.2):
                    pass
            except FolderBusyError as exc:
                box["error"] = str(exc)

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert box["error"] == (
        f"'{out}' is being written by another save in this process and was still locked after 0.2 s; try again "
        "when it has finished, or save into another folder."
    )


def test_the_lock_is_released_when_the_save_fails(two_runs, tmp_path):
    a, _, _ = two_runs
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not part of a run"):
        a.save(out)
    assert not lock_path(out).exists()


def test_the_run_root_listing_never_shows_the_lock(two_runs, tmp_path):
    from aflite_app.run_root import list_run_directories

    a, _, _ = two_runs
    a.save(tmp_path / "run")
    with folder_lock(tmp_path / "other"):
        assert lock_path(tmp_path / "other").is_file()
        assert list_run_directories(tmp_path) == ["run"]


def test_cli_filter_force_over_a_locked_folder_refuses_in_one_line(small_filter, tmp_path, monkeypatch, capsys):
    out = tmp_path / "cli-run"
    assert small_filter(out, "--quiet") == 0
    before = AFLiteResult.load(out)
    monkeypatch.setattr(_folder_lock, "LOCK_TIMEOUT_S", 0.2)
    lock_path(out).write_text(f"{os.getppid()} {_folder_lock._HOST}\n")
    capsys.readouterr()
    assert small_filter(out, "--quiet", "--force") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "still locked after 0.2 s" in err, err
    assert AFLiteResult.load(out).equals(before)
    assert main(["filter", "--resume", str(out), "--quiet"]) == 2
    assert "still locked" in capsys.readouterr().err
    lock_path(out).unlink()
    assert small_filter(out, "--quiet", "--force") == 0
    assert not lock_path(out).exists()


def test_cli_filter_holds_the_lock_for_the_whole_run(small_filter, tmp_path, monkeypatch):
    from aflite_core import _durable

    out = tmp_path / "cli-run"
    seen = []
    real = _durable.write_file

    def spy(path, *args, **kwargs):
        seen.append((Path(path).name, lock_path(out).is_file()))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_durable, "write_file", spy)
    assert small_filter(out, "--quiet") == 0
    names = {name for name, _ in seen}
    assert {"cli_args.json", "result.json"} <= names  # the arguments, the checkpoints and the saved run
    assert all(held for _, held in seen), seen
    assert not lock_path(out).exists()


def test_a_folder_where_the_lock_file_goes_is_never_removed_and_refused_in_one_sentence(tmp_path):
    lock_path(tmp_path / "run").mkdir()
    with pytest.raises(FolderBusyError) as info:
        with folder_lock(tmp_path / "run", timeout=0.1):
            pass
    assert _one_sentence(str(info.value)) and "delete '.run.lock' beside it" in str(info.value)
    assert lock_path(tmp_path / "run").is_dir()


def test_an_evaluation_set_study_save_holds_the_folder_lock(tmp_path, monkeypatch):
    """eval-filter --out (AdversaryStudy.save) is a writer too: it waits for the folder's holder, then refuses."""
    from aflite_core import _folder_lock
    from aflite_core.evalsets.result import AdversaryStudy

    out = tmp_path / "study"
    seen = []
    monkeypatch.setattr(_folder_lock, "LOCK_TIMEOUT_S", 0.3)
    monkeypatch.setattr(AdversaryStudy, "_write", lambda self, where: seen.append(where) or where)
    with _folder_lock.folder_lock(out):
        holder = threading.Thread(target=lambda: seen.append(_try_save(AdversaryStudy, out)))
        holder.start()
        holder.join()
    assert isinstance(seen[0], _folder_lock.FolderBusyError) and "\n" not in str(seen[0])
    assert AdversaryStudy.save(object.__new__(AdversaryStudy), out) == out and seen[-1] == out


def _try_save(cls, out):
    try:
        return cls.save(object.__new__(cls), out)
    except ValueError as exc:
        return exc
