"""No interrupted run or save is ever silently wrong: a failure injected at every disk-changing OS call, in turn.

Every write of a run record goes through ``aflite_core._durable``'s module-level ``os``. The tests replace it
with a proxy that counts the calls that change the disk (open, write, fsync, rename, replace, mkdir, link,
unlink, rmdir) and raises :class:`Crash` — a ``BaseException``, which nothing in the library catches, like a
SIGKILL — at call number i, for every i an uninterrupted run makes. Then:

* ``filter --resume`` must finish with the uninterrupted result bit for bit, or refuse with one line;
* after ``save()`` over an older run, a reader must see the old run, the new run, or no run — never a mix.
"""

from __future__ import annotations

import os

import pytest

from aflite_core import AFLiteResult, _durable, aflite
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias

MUTATING = {"open", "write", "fsync", "rename", "replace", "mkdir", "link", "unlink", "rmdir"}


class Crash(BaseException):
    """The process dies here."""


class FailingOS:
    """``os`` with the disk-changing calls counted, and call number ``fail_at`` raising :class:`Crash`."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at
        self.calls: list[str] = []

    def __getattr__(self, name):
        real = getattr(os, name)
        if name not in MUTATING:
            return real

        def wrapped(*args, **kwargs):
            if self.fail_at is not None and len(self.calls) == self.fail_at:
                self.calls.append(name)
                raise Crash(f"{name} #{self.fail_at}")
            self.calls.append(name)
            return real(*args, **kwargs)

        return wrapped


@pytest.fixture
def files(small_files):
    return small_files


def test_resume_after_a_crash_at_every_write_fsync_and_rename(files, monkeypatch, capsys, small_filter):
    assert small_filter(files / "reference") == 0
    reference = AFLiteResult.load(files / "reference")
    assert reference.n_rounds >= 3  # checkpoints of several rounds, then the final save
    counter = FailingOS()
    monkeypatch.setattr(_durable, "os", counter)
    assert small_filter(files / "counted") == 0
    steps = list(counter.calls)
    assert {"write", "fsync", "rename", "replace"} <= set(steps)
    capsys.readouterr()
    outcomes = {"resumed": 0, "refused": 0}
    for i, call in enumerate(steps):
        out = files / f"crash-{i:03d}"
        monkeypatch.setattr(_durable, "os", FailingOS(fail_at=i))
        with pytest.raises(Crash):
            small_filter(out)
        monkeypatch.setattr(_durable, "os", os)
        capsys.readouterr()
        code = main(["filter", "--resume", str(out), "--quiet"])
        err = capsys.readouterr().err
        if code == 0:
            assert AFLiteResult.load(out).equals(reference), f"step {i} ({call}): resumed to another result"
            outcomes["resumed"] += 1
        else:
            assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), (i, call, err)
            assert "Traceback" not in err
            outcomes["refused"] += 1
    # most crash points leave a resumable run; only those before the arguments are recorded cannot be resumed
    assert outcomes["resumed"] > outcomes["refused"] > 0, outcomes


def _run(seed: int):
    X, y, _ = make_planted_bias(240, 6, random_state=seed)
    return aflite(X, y, target_size=120, train_size=50, slice_size=30, n_partitions=8, tau=0.5, random_state=seed)


def test_save_over_an_older_run_leaves_the_old_run_the_new_run_or_none(tmp_path, monkeypatch):
    old, new = _run(0), _run(1)
    counter = FailingOS()
    monkeypatch.setattr(_durable, "os", counter)
    old.save(tmp_path / "probe")
    new.save(tmp_path / "probe")
    monkeypatch.setattr(_durable, "os", os)
    n_first = len(counter.calls) // 2
    steps = counter.calls[n_first:]  # the calls of a save over an existing run
    seen = {"old": 0, "new": 0, "none": 0}
    for i in range(len(steps) + 1):
        target = tmp_path / f"run-{i:03d}"
        old.save(target)
        monkeypatch.setattr(_durable, "os", FailingOS(fail_at=i))
        try:
            new.save(target)
        except Crash:
            pass
        monkeypatch.setattr(_durable, "os", os)
        try:
            back = AFLiteResult.load(target)
        except ValueError:
            seen["none"] += 1
        else:
            if back.equals(old):
                seen["old"] += 1
            else:
                assert back.equals(new), f"step {i}: a mix of two runs"
                seen["new"] += 1
        # a later save (or resume) completes an interrupted swap; the folder then holds the new run
        new.save(target)
        assert AFLiteResult.load(target).equals(new)
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(f".run-{i:03d}.")], "leftovers remain"
    assert seen["old"] > 0 and seen["new"] > 0, seen


def test_an_interrupted_swap_is_completed_by_the_next_resume(files, monkeypatch, capsys, small_filter):
    assert small_filter(files / "reference") == 0
    reference = AFLiteResult.load(files / "reference")
    counter = FailingOS()
    monkeypatch.setattr(_durable, "os", counter)
    assert small_filter(files / "counted") == 0
    renames = [i for i, c in enumerate(counter.calls) if c == "rename"]
    out = files / "swap"
    monkeypatch.setattr(_durable, "os", FailingOS(fail_at=renames[-1]))  # the new run renamed into place
    with pytest.raises(Crash):
        small_filter(out)
    monkeypatch.setattr(_durable, "os", os)
    assert not out.exists()  # the moment with no run
    assert main(["filter", "--resume", str(out), "--quiet"]) == 0
    assert AFLiteResult.load(out).equals(reference)


def test_concurrent_writers_of_one_file_never_mix_their_bytes(tmp_path):
    """Two sessions filling the same cache entry at once: each writes its own temporary file, the file ends
    whole (one writer's bytes, all of them), and no temporary file is left behind."""
    import threading

    target = tmp_path / "entry.npy"
    payloads = [bytes([i]) * 3_000_000 for i in range(1, 5)]
    errors: list[BaseException] = []

    def write(data: bytes) -> None:
        try:
            for _ in range(5):
                _durable.write_file(target, data)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert target.read_bytes() in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["entry.npy"]
