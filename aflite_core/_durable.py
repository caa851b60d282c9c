"""Crash-consistent writes: every byte of a run record reaches the disk through these few functions.

* A **file** is written under a hidden temporary name in its folder, fsynced, and renamed over its final name;
  then the folder is fsynced. A reader sees the old file or the new one, never a part of one.
* A **folder of files** (a saved run) is built as a hidden temporary sibling and swapped in by renames: the old
  folder is renamed aside, the new one renamed in, the old one deleted. A reader sees the old run, no run for a
  moment, or the new run, never a mix of two.

Every operating-system call that changes the disk goes through the module-level name ``os``, so the crash tests
(``tests/test_crash_consistency.py``) can fail each write, fsync, rename … in turn and check what is left.
Nothing here cleans up after a failure: a process killed at any point leaves what a failure here leaves.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "carry_into",
    "clear_leftovers",
    "discard_dir",
    "finish_swap",
    "fsync_dir",
    "link_or_copy",
    "make_dirs",
    "remove_tree",
    "replace_dir",
    "scratch_sibling",
    "write_file",
    "write_stream",
]


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(path: str | Path) -> None:
    """Make the entries of a folder (renames, new files) durable."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:  # a platform without directory handles (Windows): the renames are still atomic
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: str | Path, data: bytes, *, atomic: bool = True) -> Path:
    """Write ``data`` to ``path`` durably.

    Parameters
    ----------
    path : str or Path
        The file. Its folder must exist.
    data : bytes
        The whole content.
    atomic : bool, default=True
        Write to a hidden temporary name of its own (``.NAME.RANDOM.tmp``, so two writers of the same file,
        e.g. two sessions filling one cache entry, never write into each other's temporary file) and rename it
        over ``path``: readers never see a partial file, and the last rename wins whole. False writes ``path``
        in place: only for files inside a folder no reader sees yet (see :func:`replace_dir`).

    Returns
    -------
    Path
        ``path``.
    """
    return write_stream(path, (data,), atomic=atomic)


def write_stream(path: str | Path, chunks: Iterable[bytes | memoryview], *, atomic: bool = True) -> Path:
    """Write the concatenation of ``chunks`` to ``path`` durably, one chunk in memory at a time.

    As :func:`write_file` (the same hidden temporary name, fsync, rename and folder fsync), for files too large
    to hold as one ``bytes`` (e.g. a 1.5 GB feature matrix assembled from its parts).

    Parameters
    ----------
    path : str or Path
        The file. Its folder must exist.
    chunks : iterable of bytes-like
        The content, in order.
    atomic : bool, default=True
        As in :func:`write_file`.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    if atomic:
        target = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    else:
        target = path
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for chunk in chunks:
            _write_all(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    if atomic:
        os.replace(target, path)
        fsync_dir(path.parent)
    return path


def make_dirs(path: str | Path) -> Path:
    """Create ``path`` and its missing parents (each new folder made durable in its parent)."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            if not folder.is_dir():
                raise
        fsync_dir(folder.parent)
    return path


def scratch_sibling(path: str | Path, tag: str) -> Path:
    """A fresh hidden name beside ``path`` (``.NAME.TAG-RANDOM``); nothing is created."""
    path = Path(path)
    return path.with_name(f".{path.name}.{tag}-{secrets.token_hex(4)}")


def remove_tree(path: str | Path) -> None:
    """Delete a folder and everything in it (symbolic links are removed, never followed)."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        return
    with os.scandir(path) as entries:
        children = [Path(e.path) for e in entries]
    for child in children:
        remove_tree(child)
    os.rmdir(path)


def link_or_copy(src: Path, dst: Path) -> None:
    """Give ``dst`` the content of file ``src``: a hard link when possible, else a durable copy."""
    try:
        os.link(src, dst)
    except OSError:
        write_file(dst, src.read_bytes(), atomic=False)


def carry_into(src_dir: Path, names: Iterable[str], dst_dir: Path) -> None:
    """Hard-link (or copy) the named files and folders of ``src_dir`` into ``dst_dir``, recursively."""
    for name in names:
        src = src_dir / name
        if src.is_symlink() or not src.exists():
            continue
        if src.is_dir():
            make_dirs(dst_dir / name)
            carry_into(src, sorted(p.name for p in src.iterdir()), dst_dir / name)
        else:
            link_or_copy(src, dst_dir / name)
    fsync_dir(dst_dir)


def replace_dir(new: str | Path, target: str | Path) -> Path:
    """Swap the finished folder ``new`` in as ``target`` (a hidden sibling of it, made by the caller).

    If ``target`` exists it is renamed aside first and deleted once ``new`` is in place. A crash leaves
    ``target`` as the old folder, missing, or as the new folder; hidden ``.NAME.new-*`` / ``.NAME.old-*``
    siblings may be left behind and are removed by the next :func:`clear_leftovers`.
    """
    new, target = Path(new), Path(target)
    fsync_dir(new)
    old = None
    if target.exists() or target.is_symlink():
        old = scratch_sibling(target, "old")
        os.rename(target, old)
    os.rename(new, target)
    fsync_dir(target.parent)
    if old is not None:
        remove_tree(old)
    return target


def finish_swap(target: str | Path) -> bool:
    """Complete a :func:`replace_dir` interrupted between its two renames; True when it did.

    Then ``target`` is missing and its finished replacement waits as the one hidden ``.NAME.new-*`` sibling
    (a replacement is renamed in only after every file in it was written and fsynced, and the old folder is
    renamed aside only after that). Call before :func:`clear_leftovers`, which would delete it.
    """
    target = Path(target)
    parent = target.parent
    if target.exists() or target.is_symlink() or not parent.is_dir():
        return False
    prefix = f".{target.name}.new-"
    with os.scandir(parent) as entries:
        pending = [Path(e.path) for e in entries if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)]
    if len(pending) != 1:
        return False
    os.rename(pending[0], target)
    fsync_dir(parent)
    return True


def discard_dir(target: str | Path) -> None:
    """Remove a folder so that no reader ever sees it half deleted: renamed aside first, then deleted."""
    target = Path(target)
    old = scratch_sibling(target, "old")
    os.rename(target, old)
    fsync_dir(target.parent)
    remove_tree(old)


def clear_leftovers(target: str | Path) -> None:
    """Delete the hidden siblings an interrupted :func:`replace_dir` of ``target`` may have left."""
    target = Path(target)
    parent = target.parent
    if not parent.is_dir():
        return
    prefixes = (f".{target.name}.new-", f".{target.name}.old-")
    with os.scandir(parent) as entries:
        stale = [Path(e.path) for e in entries if e.name.startswith(prefixes)]
    for path in stale:
        remove_tree(path)
