"""A run's recorded votes on disk (``votes.npy``, run format 5): written as one plain ``.npy``, read back checked.

``AFLiteResult.votes`` holds, per round, row and class, how many of the models that held the row out predicted
that class (:mod:`aflite_core.engine.loop` counts them while the round runs). :mod:`~aflite_core.engine.run_record`
writes them with :func:`npy_bytes` and describes them in ``result.json`` (``"votes": {"shape", "dtype"}``);
:mod:`~aflite_core.engine.run_loading` checks that entry with :func:`votes_meta_of` and, after the file's size and
SHA-256, opens it with :func:`read_votes`: memory-mapped and read-only (135 MB at 550,000 rows × 41 rounds ×
3 classes stay on disk until read), its header checked before any value, never unpickled.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["VOTE_DTYPES", "VotesError", "npy_bytes", "read_votes", "votes_meta_of"]

#: the dtypes votes are recorded in (int16 below m = 32,768 models, int32 above)
VOTE_DTYPES = ("int16", "int32")


class VotesError(ValueError):
    """A sentence fragment saying what is wrong with a run's recorded votes (the loader names the folder)."""


def npy_bytes(array: NDArray) -> bytes:
    """``array`` as the bytes of a ``.npy`` file (C order, no pickle)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def votes_meta_of(
    meta: dict, version: int, n_rounds: int, n_rows: int, n_classes: int, has_scores: bool
) -> dict | None:
    """``result.json``'s entry of the recorded votes, checked against the run's counts (None: no votes).

    Records before format 5 have none (whatever their ``result.json`` says).

    Raises
    ------
    VotesError
        A sentence fragment when the entry does not describe (rounds, rows, classes) counts of a known dtype.
    """
    entry = meta.get("votes") if version >= 5 else None
    if entry is None:
        return None
    shape_ok = isinstance(entry, dict) and entry.get("shape") == [n_rounds, n_rows, n_classes]
    if not has_scores or not shape_ok or entry.get("dtype") not in VOTE_DTYPES:
        raise VotesError("its votes entry in result.json is malformed")
    return entry


def read_votes(path: Path, entry: dict, counts: NDArray | None) -> NDArray:
    """The votes in ``path`` (memory-mapped, read-only), checked against ``entry`` and the prediction counts.

    Raises
    ------
    VotesError
        A sentence fragment: the header is not the recorded shape and dtype, a count is negative, or a row's
        votes do not add up to its prediction count in some round.
    """
    with open(path, "rb") as fh:  # the header first: a plain array of the recorded shape and dtype, no objects
        try:
            major, _ = np.lib.format.read_magic(fh)
            reader = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = reader(fh)
            offset = fh.tell()
        except (ValueError, EOFError, OSError):
            raise VotesError(f"{path.name} is not a .npy array") from None
    want = tuple(entry["shape"])
    if shape != want or fortran or dtype != np.dtype(entry["dtype"]):
        raise VotesError(f"{path.name} holds an array of shape {shape} and dtype {dtype}, not the recorded votes")
    if path.stat().st_size != offset + int(np.prod(want)) * dtype.itemsize:
        raise VotesError(f"{path.name} is not as long as its header says (truncated or changed)")
    votes = np.load(path, mmap_mode="r", allow_pickle=False)
    for r in range(want[0]):
        v = np.asarray(votes[r])
        total = v.sum(axis=1, dtype=np.int64)
        if (v.size and v.min() < 0) or (counts is not None and not np.array_equal(total, counts[r])):
            raise VotesError(f"{path.name}'s votes of round {r + 1} disagree with its prediction counts")
    return votes
