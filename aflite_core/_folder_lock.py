"""One writer per folder: an exclusive lock file ``.NAME.lock`` beside the folder, across processes and threads.

A save of a run (:meth:`AFLiteResult.save`) and the CLI's ``filter --out`` / ``--force`` / ``--resume`` hold the
lock of their folder while they write it, so two writers never interleave (which left a raw
``FileNotFoundError``, or one run's ``result.json`` beside another's ``rows.parquet``):

* the lock file is created with ``O_CREAT | O_EXCL`` and holds ``"PID HOST"``; it is hidden (a dot name) and a
  file, so a listing of run folders never shows it, and it is removed when the writer is done (``finally``);
* a second writer waits, polling, up to :data:`LOCK_TIMEOUT_S` seconds, then refuses with one sentence
  (:class:`FolderBusyError`, a ``ValueError``);
* a lock whose process is gone (``os.kill(pid, 0)`` raises ``ProcessLookupError``) is taken over, and so is one
  this process left behind (a writer of this process that died between its write and its unlink) and one that was
  never written (empty for more than :data:`UNWRITTEN_STALE_S` seconds). A lock of another host, or on a platform
  without ``os.kill(pid, 0)`` (Windows), is never taken over: the refusal names the file to delete;
* threads of one process (the app's sessions) are ordered by an in-process lock per lock file first, and the
  holding thread may take the lock again (re-entrant: the CLI holds it for a whole run, and the run's save inside).

The lock is advisory: it orders the writers that take it (every writer of a run folder in this package does).
"""

from __future__ import annotations

import os
import secrets
import socket
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import _durable

__all__ = ["LOCK_TIMEOUT_S", "UNWRITTEN_STALE_S", "FolderBusyError", "folder_lock", "lock_path"]

#: how long a writer waits for the folder's lock before it refuses
LOCK_TIMEOUT_S = 10.0
#: a lock file still empty after this many seconds belongs to a writer that died between creating and writing it
UNWRITTEN_STALE_S = 5.0
_POLL_S = 0.01
_HOST = socket.gethostname()


class FolderBusyError(ValueError):
    """Another writer held the folder's lock for longer than the wait allowed."""


class _Slot:
    """The claim of this process on one lock file: a re-entrant thread lock, its depth and how many threads use it."""

    __slots__ = ("depth", "lock", "users")

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.users = 0


_SLOTS: dict[str, _Slot] = {}
_SLOTS_GUARD = threading.Lock()


def _forget_slots_in_child() -> None:  # a forked child holds none of its parent's locks
    global _SLOTS_GUARD
    _SLOTS.clear()
    _SLOTS_GUARD = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_slots_in_child)


def lock_path(folder: str | Path) -> Path:
    """The lock file of ``folder``: ``.NAME.lock`` in its parent (the parent's real path, so aliases share it)."""
    absolute = Path(os.path.abspath(folder))
    return Path(os.path.realpath(absolute.parent)) / f".{absolute.name}.lock"


@contextmanager
def folder_lock(folder: str | Path, *, timeout: float | None = None) -> Iterator[Path]:
    """Hold the lock of ``folder`` for the ``with`` block (waiting for another holder first).

    Parameters
    ----------
    folder : str or Path
        The folder about to be written; it need not exist. Its parent is created if missing.
    timeout : float, optional
        Seconds to wait for another holder; default :data:`LOCK_TIMEOUT_S` (read at the call).

    Yields
    ------
    Path
        The lock file.

    Raises
    ------
    FolderBusyError
        When another process or thread still held the lock after ``timeout`` seconds (one sentence).
    """
    wait = LOCK_TIMEOUT_S if timeout is None else float(timeout)
    deadline = time.monotonic() + max(wait, 0.0)
    path = lock_path(folder)
    key = str(path)
    with _SLOTS_GUARD:
        slot = _SLOTS.setdefault(key, _Slot())
        slot.users += 1
    try:
        got = slot.lock.acquire(timeout=wait) if wait > 0 else slot.lock.acquire(blocking=False)
        if not got:
            raise FolderBusyError(_busy(folder, wait, "another save in this process", None))
        try:
            if slot.depth == 0:
                _create(path, folder, deadline, wait)
            slot.depth += 1
            try:
                yield path
            finally:
                slot.depth -= 1
                if slot.depth == 0:
                    _remove(path)
        finally:
            slot.lock.release()
    finally:
        with _SLOTS_GUARD:
            slot.users -= 1
            if slot.users == 0 and _SLOTS.get(key) is slot:
                del _SLOTS[key]


def _busy(folder: str | Path, wait: float, holder: str, name: str | None) -> str:
    hint = f" (if no such process runs, delete '{name}' beside it)" if name else ""
    return (
        f"'{folder}' is being written by {holder} and was still locked after {wait:g} s; try again when it has "
        f"finished, or save into another folder{hint}."
    )


def _stamp() -> bytes:
    return f"{os.getpid()} {_HOST}\n".encode()


def _create(path: Path, folder: str | Path, deadline: float, wait: float) -> None:
    """Create the lock file exclusively, taking over a stale one, waiting for a live one until ``deadline``."""
    _durable.make_dirs(path.parent)
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            holder = _read(path)
            if holder == "gone":
                continue
            if _stale(path, holder):
                _take_over(path, holder)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                pid = holder[0] if isinstance(holder, tuple) else None
                who = "another process" + (f" (PID {pid})" if pid is not None else "")
                raise FolderBusyError(_busy(folder, wait, who, path.name)) from None
            time.sleep(min(_POLL_S, left))
            continue
        try:
            os.write(fd, _stamp())
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)
        return


def _read(path: Path) -> tuple[int, str] | str | None:
    """``(pid, host)`` of a lock file, None when it holds neither (being written, or damaged), "gone" if missing."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(200).decode("ascii", "replace")
    except FileNotFoundError:
        return "gone"
    except OSError:
        return None
    parts = text.split()
    if len(parts) == 2 and parts[0].isdigit() and len(parts[0]) < 12:
        return int(parts[0]), parts[1]
    return None


def _stale(path: Path, holder: tuple[int, str] | None) -> bool:
    """True when the lock's writer is gone (see the module docstring); never for what is not a plain file."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):  # a folder or link of that name: the refusal says to delete it
        return False
    if holder is None:
        return time.time() - info.st_mtime > UNWRITTEN_STALE_S
    pid, host = holder
    if host != _HOST:
        return False
    if pid == os.getpid():  # this thread holds the in-process lock of this file: no writer of ours has it
        return True
    if os.name != "posix" or pid <= 0:  # Windows' os.kill(pid, 0) would send CTRL_C_EVENT, not probe
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: alive, another user's
        return False
    return False


def _take_over(path: Path, holder: tuple[int, str] | None) -> None:
    """Remove a stale lock, unless another writer replaced it meanwhile (then it is put back)."""
    grabbed = path.with_name(f"{path.name}.stale-{secrets.token_hex(4)}")
    try:
        os.rename(path, grabbed)
    except FileNotFoundError:
        return
    if _read(grabbed) != holder:  # a live lock, created after the stale one was read: restore it
        try:
            os.link(grabbed, path)
        except OSError:
            pass
    os.unlink(grabbed)


def _remove(path: Path) -> None:
    """Delete the lock file if it is still ours."""
    holder = _read(path)
    if holder == (os.getpid(), _HOST):
        os.unlink(path)
