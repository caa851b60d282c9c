"""A saved run as an in-memory zip, and the safe loader back (pure; no Streamlit).

* :func:`run_zip_bytes` / :func:`load_run_zip` - a run's :meth:`~aflite_core.AFLiteResult.save` directory as
  an in-memory zip, and back, refusing anything that is not a small, well-formed run archive
  (:class:`RunArchiveError`); :func:`check_run_matches` checks a loaded run belongs to a dataset;
* :func:`human_bytes` - a byte count for people (the limits in the refusals).
"""

from __future__ import annotations

import io
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

import numpy as np
from numpy.typing import NDArray

from aflite_core import AFLiteResult
from aflite_core.data.datasets import Dataset
from aflite_core.engine.run_loading import RunRecordError
from aflite_core.engine.run_record import RUN_FILES  # nothing else is ever extracted

from . import settings

__all__ = [
    "MAX_ARCHIVE_BYTES",
    "MAX_ENTRIES",
    "MAX_MEMBER_BYTES",
    "MAX_TOTAL_BYTES",
    "RUN_FILES",
    "RunArchiveError",
    "check_run_matches",
    "human_bytes",
    "load_run_zip",
    "run_zip_bytes",
]

#: size limits of an uploaded run archive: the zip itself, any one file in it, all files together
MAX_ARCHIVE_BYTES = settings.load().archive_max_bytes
MAX_MEMBER_BYTES = settings.load().archive_max_member_bytes
MAX_TOTAL_BYTES = settings.load().archive_max_total_bytes
#: entries a run archive may list at all (a run has at most six files)
MAX_ENTRIES = settings.load().archive_max_entries
#: entries that archivers add and that are skipped silently
_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")


class RunArchiveError(ValueError):
    """An uploaded run archive was refused; the message says why in words."""


def run_zip_bytes(result: AFLiteResult) -> bytes:
    """The run's :meth:`~aflite_core.AFLiteResult.save` directory, zipped in memory (files at the root)."""
    with tempfile.TemporaryDirectory(prefix="aflite-run-") as tmp:
        folder = result.save(Path(tmp) / "run")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(folder.iterdir()):
                if path.is_file():
                    zf.write(path, arcname=path.name)
    return buf.getvalue()


def human_bytes(n: float) -> str:
    """A byte count for people: "512 bytes", "1.5 KB", "200.0 MB", "1.2 GB" (powers of 1024)."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _unsafe_name(name: str) -> str | None:
    """Why an archive member name is unsafe, or None."""
    if not name or "\x00" in name:
        return "an empty or NUL-containing name"
    if "\\" in name:
        return "a backslash in its name"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if any(part == ".." for part in name.split("/")):
        return "'..' in its path (it would be written outside the folder)"
    return None


def _is_junk(name: str) -> bool:
    return name.startswith(_JUNK[0]) or PurePosixPath(name).name in _JUNK[1:]


def _plan(infos: list[zipfile.ZipInfo], max_member: int, max_total: int) -> dict[str, zipfile.ZipInfo]:
    """The run files to extract (base name -> entry), after every safety check of the listing."""
    if len(infos) > MAX_ENTRIES:
        raise RunArchiveError(
            f"The archive lists {len(infos):,} entries; a saved run has at most "
            f"{len(RUN_FILES)} files. It is not a run archive."
        )
    chosen: dict[str, zipfile.ZipInfo] = {}
    folders: set[str] = set()
    for info in infos:
        name = info.filename
        why = _unsafe_name(name)
        if why is not None:
            raise RunArchiveError(f"Refused: the archive entry {name!r} has {why}.")
        mode = (info.external_attr >> 16) & 0xFFFF
        if stat.S_ISLNK(mode):
            raise RunArchiveError(f"Refused: the archive entry {name!r} is a symbolic link.")
        if info.flag_bits & 0x1:
            raise RunArchiveError(f"The archive entry {name!r} is encrypted; save the run without a password.")
        if info.is_dir() or _is_junk(name):
            continue
        path = PurePosixPath(name)
        if path.name not in RUN_FILES:
            continue  # never extracted
        if len(path.parts) > 2:
            raise RunArchiveError(
                f"The run file {name!r} is nested too deep; put the run's files at the top of "
                "the archive or in one folder."
            )
        if path.name in chosen:
            raise RunArchiveError(
                f"The archive holds '{path.name}' twice ({chosen[path.name].filename!r} and "
                f"{name!r}); it must hold one run."
            )
        if info.file_size > max_member:
            raise RunArchiveError(
                f"Refused: '{name}' would unpack to {human_bytes(info.file_size)}, more than the "
                f"limit of {human_bytes(max_member)} per file."
            )
        chosen[path.name] = info
        folders.add(str(path.parent))
    if "result.json" not in chosen:
        raise RunArchiveError(
            "The archive has no result.json: it is not a saved AFLite run. Download one with "
            "'Run record · zip' on the Inspect page, or zip the folder the CLI wrote with --out."
        )
    if len(folders) > 1:
        raise RunArchiveError(
            f"The run files are spread over several folders ({sorted(folders)}); the archive must hold one run."
        )
    total = sum(i.file_size for i in chosen.values())
    if total > max_total:
        raise RunArchiveError(
            f"Refused: the run files would unpack to {human_bytes(total)}, more than the limit of "
            f"{human_bytes(max_total)}."
        )
    return chosen


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, budget: int) -> int:
    """Copy one member to ``dest`` reading at most its declared size (a lying header cannot inflate more)."""
    limit = min(info.file_size, budget)
    written = 0
    with zf.open(info) as src, open(dest, "xb") as out:
        while True:
            block = src.read(min(1 << 20, limit - written + 1))
            if not block:
                break
            written += len(block)
            if written > limit:
                raise RunArchiveError(
                    f"Refused: '{info.filename}' unpacks to more than it declares ({human_bytes(info.file_size)})."
                )
            out.write(block)
    return written


def load_run_zip(
    payload: bytes,
    *,
    name: str = "the archive",
    max_archive_bytes: int = MAX_ARCHIVE_BYTES,
    max_member_bytes: int = MAX_MEMBER_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_rows: int | None = None,
    expected_rows: int | None = None,
) -> AFLiteResult:
    """Read a run from the bytes of a zip written by :func:`run_zip_bytes` (or a zipped CLI ``--out`` folder).

    Safe with untrusted bytes: only the known run files (:data:`RUN_FILES`, at the top or in one folder) are
    extracted, into a fresh temporary directory, by base name; entries with absolute paths, ``..``, backslashes
    or symbolic links, encrypted entries, more than ``max_member_bytes`` in one file or ``max_total_bytes`` in
    all (as declared, and enforced while unpacking) refuse the whole archive. The result is loaded with
    :meth:`AFLiteResult.load` (Parquet + JSON, never pickle) and checked for consistency.

    Parameters
    ----------
    payload : bytes
        The archive.
    name : str
        How to call it in messages (the file name).
    max_archive_bytes, max_member_bytes, max_total_bytes : int
        Limits of the archive, of one unpacked file, of all unpacked files.
    max_rows, expected_rows : int, optional
        Refuse runs on more rows, or on another number of rows than the dataset's: checked from result.json and
        the Parquet footers before any table is read, so a tiny archive declaring 10⁸ rows costs milliseconds.

    Returns
    -------
    AFLiteResult

    Raises
    ------
    RunArchiveError
        (a ValueError) saying in words why the bytes are not a usable run.
    """
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise RunArchiveError(f"Expected the bytes of a zip archive. Got {type(payload).__name__}.")
    payload = bytes(payload)
    if len(payload) > max_archive_bytes:
        raise RunArchiveError(
            f"Refused: {name} is {human_bytes(len(payload))}, more than the limit of {human_bytes(max_archive_bytes)}."
        )
    if not payload:
        raise RunArchiveError(f"{name} is empty.")
    try:
        zf = zipfile.ZipFile(io.BytesIO(payload))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        raise RunArchiveError(
            f"{name} is not a zip archive (or it is damaged). Upload the 'Run record' zip the Inspect page downloads."
        ) from None
    with zf, tempfile.TemporaryDirectory(prefix="aflite-upload-") as tmp:
        plan = _plan(zf.infolist(), max_member_bytes, max_total_bytes)
        budget = max_total_bytes
        folder = Path(tmp) / "run"
        folder.mkdir()
        try:
            for base, info in plan.items():
                budget -= _extract(zf, info, folder / base, budget)
        except RunArchiveError:
            raise
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError, zlib.error) as exc:
            detail = type(exc).__name__ if isinstance(exc, OSError) else exc  # an OSError names the server's path
            raise RunArchiveError(f"{name} could not be unpacked: {detail}") from None
        try:
            result = AFLiteResult.load(folder, max_rows=max_rows, expected_rows=expected_rows)
        except RunRecordError as exc:
            raise RunArchiveError(f"{name} does not hold a readable AFLite run: {exc.reason}.") from None
    return result


def _same_ids(a: NDArray, b: NDArray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iuf" and b.dtype.kind in "iuf":
        return bool(np.array_equal(a, b))
    return [str(v) for v in a.tolist()] == [str(v) for v in b.tolist()]


def check_run_matches(result: AFLiteResult, data: Dataset, *, data_label: str = "the current dataset") -> None:
    """Raise ValueError, in words, when a loaded run was not made on ``data``'s rows.

    Checks the number of rows, the ids (when the run has ids) and the labels of every row.
    """
    if result.n_rows != data.n_rows:
        raise ValueError(
            f"This run was made on {result.n_rows:,} rows, but {data_label} has {data.n_rows:,} rows. "
            "Pick the dataset the run was made on in the sidebar, then open the run again."
        )
    if result.ids is not None and not _same_ids(result.ids, data.ids):
        n_diff = int(
            np.sum(
                np.asarray([str(v) for v in result.ids.tolist()], dtype=object)
                != np.asarray([str(v) for v in np.asarray(data.ids).tolist()], dtype=object)
            )
        )
        raise ValueError(
            f"This run has the same number of rows as {data_label}, but {n_diff:,} of its row ids "
            "differ: it was made on other rows (or in another order)."
        )
    names = np.asarray([str(c) for c in result.classes], dtype=object)[result.y]
    if tuple(str(c) for c in result.classes) == tuple(str(c) for c in range(data.n_classes)):
        same = np.array_equal(result.y, data.y)  # a run on label codes (what the app and most callers pass)
    else:
        same = bool((names == np.asarray([str(c) for c in data.labels], dtype=object)).all())
    if not same:
        raise ValueError(f"This run's labels differ from {data_label}'s: it was made on other data.")
