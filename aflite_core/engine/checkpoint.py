"""Checkpoints of a running AFLite filter: written after every round, checked in full before a resume.

A checkpoint folder holds, per completed round r, ``round_<r>.npz`` (that round's score and prediction-count
rows, when the run keeps them, and its per-class vote counts ``votes`` (N, C) when it records them) and one
``state.npz`` with everything else: the per-row arrays and, as JSON in its ``meta`` array, the round number,
history, random-generator state and a fingerprint of the data and
parameters. Each file is written to a temporary name, fsynced and renamed (:mod:`aflite_core._durable`);
``state.npz`` is written last, in one piece, so it always describes one round completely. Every round file
carries its round number and the run's fingerprint digest, so a resume never mixes rounds or runs.

:func:`read_checkpoint` checks all of it — shapes, dtypes, round numbers, removals against the history, the
round files against the state — and refuses anything inconsistent with one sentence (``ValueError``); a
resume therefore continues from exactly the state an uninterrupted run had, or not at all. Checkpoints of
format 1 (``state.json`` beside ``state.npz``) are read with the same checks.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import _durable
from .._utils import json_default
from .run_constants import HISTORY_COLUMNS, STOP_REASONS

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_VERSION",
    "Checkpoint",
    "has_checkpoint",
    "peek_meta",
    "peek_round",
    "read_checkpoint",
    "write_checkpoint",
]

CHECKPOINT_FORMAT = "aflite-studio-checkpoint"
CHECKPOINT_VERSION = 2
STATE_FILE = "state.npz"
LEGACY_META_FILE = "state.json"
#: largest state file read (the per-row arrays of a 100M-row run are ~1.7 GB)
MAX_STATE_BYTES = 8 * 2**30

ROW_ARRAYS = {
    "removed_round": np.int32,
    "first_score": np.float32,
    "last_score": np.float32,
    "removal_score": np.float32,
}
EVAL_ARRAYS = {
    "eval_removed_round": np.int32,
    "eval_first": np.float32,
    "eval_last": np.float32,
    "eval_removal": np.float32,
}


def fingerprint_digest(fingerprint: dict) -> str:
    """Short sha256 of a run's fingerprint (its data hashes, parameters and model family)."""
    text = json.dumps(fingerprint, sort_keys=True, default=json_default, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def has_checkpoint(directory: str | Path) -> bool:
    """True when ``directory`` holds a checkpoint of either format (valid or not)."""
    d = Path(directory)
    return (d / STATE_FILE).is_file() or (d / LEGACY_META_FILE).is_file()


def peek_meta(directory: str | Path) -> dict | None:
    """A checkpoint's metadata (round, fingerprint …) without checking it; None when unreadable."""
    d = Path(directory)
    try:
        if _has_meta(d / STATE_FILE):
            with np.load(d / STATE_FILE, allow_pickle=False) as z:
                meta = json.loads(z["meta"].tobytes().decode("utf-8"))
        else:
            meta = json.loads((d / LEGACY_META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, TypeError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


def peek_round(directory: str | Path) -> int | None:
    """The round a checkpoint says it completed, without checking it (None when unreadable)."""
    meta = peek_meta(directory)
    value = None if meta is None else meta.get("round")
    return value if isinstance(value, int) else None


def _npz_bytes(arrays: dict[str, NDArray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def write_checkpoint(run: Any) -> None:
    """Write the state of ``run`` (an :class:`aflite_core.engine.loop.Run`) after its current round."""
    d = Path(run.checkpoint_dir)
    _durable.make_dirs(d)
    fingerprint = json.loads(json.dumps(run.fingerprint(), default=json_default))
    digest = fingerprint_digest(fingerprint)
    if run.keep_matrix and run.score_rows:
        arrays = {
            "scores": run.score_rows[-1],
            "counts": run.count_rows[-1],
            "round": np.int64(run.round),
            "run": np.str_(digest),
        }
        if run.has_eval:
            arrays["eval_scores"] = run.eval_score_rows[-1]
        if getattr(run, "record_votes", False) and run.vote_rows:
            arrays["votes"] = run.vote_rows[-1]
        _durable.write_file(d / f"round_{run.round:05d}.npz", _npz_bytes(arrays))
    meta = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "round": run.round,
        "finished": run.finished,
        "stop_reason": run.stop_reason,
        "history": run.history,
        "rng_state": run.rng.bit_generator.state,
        "fingerprint": fingerprint,
        "run": digest,
        "extra": run.extra_state,
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    state = {name: getattr(run, name) for name in ROW_ARRAYS}
    if run.has_eval:
        state.update({name: getattr(run, name) for name in EVAL_ARRAYS})
    text = json.dumps(meta, default=json_default)
    state["meta"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    _durable.write_file(d / STATE_FILE, _npz_bytes(state))


@dataclass
class Checkpoint:
    """A checkpoint read back and checked: the state after round ``round``."""

    round: int
    finished: bool
    stop_reason: str
    history: list[dict]
    rng_state: dict
    fingerprint: dict
    extra: dict
    arrays: dict[str, NDArray]
    score_rows: list[NDArray]
    count_rows: list[NDArray]
    eval_score_rows: list[NDArray]
    #: per round, the (N, C) vote counts; None when asked for none or a round file holds none (an older writer)
    vote_rows: list[NDArray] | None = None


class _Refuse(ValueError):
    pass


def _damaged(d: Path, what: str) -> ValueError:
    return ValueError(
        f"The checkpoint in '{d}' is damaged or inconsistent ({what}); it cannot be resumed. Start the run again "
        "(the CLI: --force; the API: resume=False)."
    )


def _load_npz(path: Path, what: str) -> dict[str, NDArray]:
    if not path.is_file():
        raise _Refuse(f"{what} is missing")
    if path.stat().st_size > MAX_STATE_BYTES:
        raise _Refuse(f"{what} is larger than any checkpoint")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise _Refuse(f"{what} is not readable: {type(exc).__name__}") from None


def read_checkpoint(
    directory: str | Path,
    *,
    n_rows: int,
    n_eval: int | None,
    keep_matrix: bool,
    count_dtype: np.dtype,
    fingerprint: dict,
    vote_shape: tuple[int, Any] | None = None,
) -> Checkpoint:
    """Read and check the checkpoint in ``directory`` for a run on ``n_rows`` rows with ``fingerprint``.

    ``vote_shape``: (classes, dtype) of the votes the run records, or None; the votes are read back when every
    round file holds them (checked against its prediction counts), else ``vote_rows`` is None.

    Raises
    ------
    ValueError
        One sentence: no checkpoint, a different run (what differs), or damaged / inconsistent (what).
    """
    d = Path(directory)
    if not has_checkpoint(d):
        raise ValueError(f"'{d}' has no checkpoint to resume from.")
    try:
        return _read(d, n_rows, n_eval, keep_matrix, np.dtype(count_dtype), fingerprint, vote_shape)
    except _Refuse as exc:
        raise _damaged(d, str(exc)) from None


def _read(
    d: Path,
    n_rows: int,
    n_eval: int | None,
    keep_matrix: bool,
    count_dtype: np.dtype,
    fingerprint: dict,
    vote_shape: tuple[int, Any] | None = None,
) -> Checkpoint:
    legacy = not _has_meta(d / STATE_FILE)  # format 1 kept the metadata in state.json
    arrays = _load_npz(d / STATE_FILE, "state.npz")
    if legacy:
        if not (d / LEGACY_META_FILE).is_file():
            raise _Refuse("the state's metadata is missing")
        try:
            meta = json.loads((d / LEGACY_META_FILE).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise _Refuse("state.json is not readable JSON") from None
    else:
        try:
            meta = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _Refuse("the state's metadata is not readable JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
        raise _Refuse("it is not an AFLite Studio checkpoint")
    version = meta.get("version")
    if not isinstance(version, int) or version > CHECKPOINT_VERSION or version < 1:
        raise _Refuse(f"format version {str(version)[:12]} is not one this version reads")
    mine = json.loads(json.dumps(fingerprint, default=json_default))
    theirs = meta.get("fingerprint")
    if not isinstance(theirs, dict):
        raise _Refuse("it records no fingerprint of its data and parameters")
    if theirs != mine and _without_threads(theirs) == _without_threads(mine):
        mine = theirs  # only the thread count differs: it never changes a result (tests/test_engine_bits.py)
    if theirs != mine:
        diff = [k for k in mine if mine[k] != theirs.get(k)] or ["the fingerprint"]
        raise ValueError(
            f"The checkpoint in '{d}' belongs to a different run ({', '.join(diff)} differ); "
            "resume with the same data and parameters, or start a new run directory."
        )
    digest = fingerprint_digest(mine)
    rounds = meta.get("round")
    history = meta.get("history")
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
        raise _Refuse("its round number is not a count")
    if not isinstance(history, list) or len(history) != rounds:
        raise _Refuse(
            f"its history has {len(history) if isinstance(history, list) else 'no'} rounds, its state says {rounds}"
        )
    for r, entry in enumerate(history, start=1):
        if not isinstance(entry, dict) or set(entry) != set(HISTORY_COLUMNS) or entry["round"] != r:
            raise _Refuse(f"history entry {r} is malformed")
    if meta.get("stop_reason") not in STOP_REASONS or not isinstance(meta.get("finished"), bool):
        raise _Refuse("its stop reason is unknown")
    if not isinstance(meta.get("rng_state"), dict) or not isinstance(meta.get("extra", {}), dict):
        raise _Refuse("its random-generator state is malformed")
    # the per-row state
    expected = dict(ROW_ARRAYS)
    if n_eval is not None:
        expected.update(EVAL_ARRAYS)
    if set(arrays) != set(expected):
        raise _Refuse("state.npz does not hold the arrays of this run")
    for name, dtype in expected.items():
        n = n_eval if name.startswith("eval") else n_rows
        a = arrays[name]
        if a.dtype != np.dtype(dtype) or a.shape != (n,):
            raise _Refuse(f"state array '{name}' has shape {a.shape} and dtype {a.dtype}")
    _check_removals(arrays["removed_round"], history, rounds, "n_removed", n_rows)
    if n_eval is not None:
        _check_removals(arrays["eval_removed_round"], history, rounds, "eval_removed", None)
    # the per-round score rows, 1..rounds (files of later rounds are leftovers of an interrupted write)
    score_rows, count_rows, eval_rows = [], [], []
    vote_rows: list[NDArray] | None = [] if vote_shape is not None and keep_matrix else None
    if keep_matrix:
        for r in range(1, rounds + 1):
            z = _load_npz(d / f"round_{r:05d}.npz", f"the file of round {r}")
            if not legacy:
                if "round" not in z or z["round"].shape != () or int(z["round"]) != r:
                    raise _Refuse(f"the file of round {r} holds another round")
                if "run" not in z or str(z["run"]) != digest:
                    raise _Refuse(f"the file of round {r} belongs to another run")
            need = {"scores": (np.float32, n_rows), "counts": (count_dtype, n_rows)}
            if n_eval is not None:
                need["eval_scores"] = (np.float32, n_eval)
            for name, (dtype, n) in need.items():
                if name not in z or z[name].dtype != np.dtype(dtype) or z[name].shape != (n,):
                    raise _Refuse(f"the file of round {r} lacks a proper '{name}' array")
            if int(np.count_nonzero(np.isfinite(z["scores"]))) != int(history[r - 1]["n_scored"]):
                raise _Refuse(f"the scores of round {r} disagree with its history")
            score_rows.append(z["scores"])
            count_rows.append(z["counts"])
            vote_rows = _votes_of_round(z, r, n_rows, vote_shape, vote_rows)
            if n_eval is not None:
                eval_rows.append(z["eval_scores"])
    return Checkpoint(
        round=rounds,
        finished=meta["finished"],
        stop_reason=meta["stop_reason"],
        history=history,
        rng_state=meta["rng_state"],
        fingerprint=theirs,
        extra=dict(meta.get("extra") or {}),
        arrays=arrays,
        score_rows=score_rows,
        count_rows=count_rows,
        eval_score_rows=eval_rows,
        vote_rows=vote_rows,
    )


def _votes_of_round(z: dict, r: int, n_rows: int, vote_shape, vote_rows: list | None) -> list | None:
    """Add round ``r``'s votes to ``vote_rows`` (checked); None from the first round file without votes."""
    if vote_rows is None or "votes" not in z:
        return None
    votes = z["votes"]
    if votes.dtype != np.dtype(vote_shape[1]) or votes.shape != (n_rows, vote_shape[0]):
        raise _Refuse(f"the file of round {r} lacks a proper 'votes' array")
    if not np.array_equal(votes.sum(axis=1, dtype=np.int64), z["counts"].astype(np.int64)):
        raise _Refuse(f"the votes of round {r} disagree with its prediction counts")
    vote_rows.append(votes)
    return vote_rows


def _has_meta(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return "meta.npy" in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _check_removals(removed_round: NDArray, history: list[dict], rounds: int, column: str, n_rows: int | None) -> None:
    """Rows removed in each round must be exactly what the history says (catches a state from another round)."""
    if removed_round.size and (removed_round.min() < -1 or removed_round.max() > rounds or (removed_round == 0).any()):
        raise _Refuse(
            f"rows were removed in rounds the history does not have (round {int(removed_round.max())} of {rounds})"
        )
    counts = np.bincount(removed_round[removed_round > 0], minlength=rounds + 1)[1:]
    recorded = np.array([int(h[column]) for h in history], dtype=np.int64)
    if len(counts) != len(recorded) or not np.array_equal(counts, recorded):
        bad = int(np.flatnonzero(counts != recorded)[0]) + 1 if len(counts) == len(recorded) else rounds
        raise _Refuse(f"the rows removed in round {bad} disagree with its history")
    if n_rows is not None and rounds and int(history[-1]["size_after"]) != int((removed_round < 0).sum()):
        raise _Refuse("the rows kept disagree with the history")


def _without_threads(fingerprint: dict) -> dict:
    """The fingerprint without ``config.n_threads``: the engine's bits do not depend on the thread count."""
    config = fingerprint.get("config")
    if not isinstance(config, dict):
        return fingerprint
    return {**fingerprint, "config": {k: v for k, v in config.items() if k != "n_threads"}}
