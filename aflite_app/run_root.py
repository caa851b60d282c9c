"""The one folder the app may open run directories from (``AFLITE_RUN_ROOT``, default ``./runs``).

Anyone who can reach the app's port can use its pages, so the app never opens a path a visitor types: the Data
page lists the run directories found below the run root, and every path — the chosen run, and the feature and
label files its ``cli_args.json`` records — is opened only when its real location (symbolic links resolved)
lies inside the root. A refusal never says whether something outside the root exists. No Streamlit here.

The server's administrator may name further folders in ``AFLITE_DATA_ROOTS`` (:func:`data_roots`): the feature
and label files a run recorded may also lie below one of them (:func:`inside_any_root`), checked the same way.
Run directories themselves are opened from the run root only.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import settings
from .settings import DATA_ROOTS_ENV, RUN_ROOT_ENV

__all__ = [
    "DATA_ROOTS_ENV",
    "DEFAULT_RUN_ROOT",
    "MAX_DEPTH",
    "RUN_ROOT_ENV",
    "data_roots",
    "inside_any_root",
    "inside_root",
    "list_run_directories",
    "run_root",
]

#: the run root when the variable is not set, relative to the folder the app is started in
DEFAULT_RUN_ROOT = str(settings.Settings().run_root)
#: how deep below the root run directories are looked for
MAX_DEPTH = settings.load().run_root_max_depth
#: folders looked at, at most, when listing (a huge tree is listed in part, never scanned for minutes)
MAX_FOLDERS_SCANNED = settings.load().run_root_max_folders


def run_root() -> Path:
    """The run root: ``$AFLITE_RUN_ROOT`` or ``./runs``, as an absolute real path (it may not exist yet)."""
    return settings.load().run_root.expanduser().resolve()


def data_roots() -> tuple[Path, ...]:
    """The folders of ``$AFLITE_DATA_ROOTS`` as absolute real paths, in order (none when it is unset)."""
    return tuple(dict.fromkeys(p.expanduser().resolve() for p in settings.load().data_roots))


class OutsideRoot(ValueError):
    """A path that is not below the run root (or does not exist there)."""


def inside_root(root: Path, path: str | Path, *, base: Path | None = None, what: str = "The path") -> Path:
    """The real path of ``path`` when it exists below ``root``; otherwise :class:`OutsideRoot`.

    Parameters
    ----------
    root : Path
        The run root (a real path, see :func:`run_root`).
    path : str or Path
        Relative to ``base`` (default: the root), or absolute.
    base : Path, optional
        Folder a relative ``path`` is relative to (e.g. the run directory for files it recorded).
    what : str
        How to call the path in the message.

    Raises
    ------
    OutsideRoot
        The same sentence whether the path is outside the root, leaves it through ``..`` or a symbolic link,
        or does not exist: nothing about the server's other files is revealed.
    """
    text = str(path).strip()
    refusal = OutsideRoot(
        f"{what} is not below the app's run root ({RUN_ROOT_ENV}); only runs and files inside it can be opened here."
    )
    if not text or "\x00" in text:
        raise refusal
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        candidate = (base or root) / candidate
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        raise refusal from None
    real_root = root.resolve()
    if real != real_root and real_root not in real.parents:
        raise refusal
    return real


def inside_any_root(
    roots: tuple[Path, ...] | list[Path], path: str | Path, *, base: Path | None = None, what: str = "The path"
) -> Path:
    """The real path of ``path`` when it exists below one of ``roots`` (the run root first, then the data roots).

    Each root is checked exactly as :func:`inside_root` checks the run root; ``base`` (the run directory) is
    what a relative ``path`` is relative to, whichever root it then lies below.

    Raises
    ------
    OutsideRoot
        One sentence naming the variables that set the roots, the same whether the path exists or not.
    """
    for root in roots:
        try:
            return inside_root(root, path, base=base, what=what)
        except OutsideRoot:
            continue
    raise OutsideRoot(
        f"{what} is not below the app's run root ({RUN_ROOT_ENV}) or one of its data roots ({DATA_ROOTS_ENV}); "
        "only files inside them can be opened here."
    )


def list_run_directories(root: Path, *, max_depth: int = MAX_DEPTH) -> list[str]:
    """Run directories (folders with a ``result.json``) below ``root``, as sorted relative POSIX paths.

    Symbolic links to folders are not followed (a link may point out of the root); at most
    :data:`MAX_FOLDERS_SCANNED` folders are looked at.
    """
    real_root = root.resolve()
    if not real_root.is_dir():
        return []
    found: list[str] = []
    queue: list[tuple[Path, int]] = [(real_root, 0)]
    scanned = 0
    while queue and scanned < MAX_FOLDERS_SCANNED:
        folder, depth = queue.pop(0)
        scanned += 1
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        if any(e.name == "result.json" and e.is_file(follow_symlinks=False) for e in entries):
            found.append(folder.relative_to(real_root).as_posix() or ".")
        if depth >= max_depth:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            queue.append((Path(entry.path), depth + 1))
    return sorted(found)
