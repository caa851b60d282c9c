"""Training dynamics in allenai/cartography's layout: one dynamics_epoch_<E>.jsonl per epoch."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._validation import MAX_SHOWN_VALUES, bounded_int, param_error, shown, shown_list
from ..data import budget
from .measures import TrainingDynamics
from .recorder import MAX_EPOCH

__all__ = ["MAX_EPOCH", "read_cartography_dynamics"]


_EPOCH_FILE = re.compile(r"^dynamics_epoch_(\d+)\.jsonl$")


_LOGITS_KEY = re.compile(r"^logits_epoch_(\d+)$")


# --------------------------------------------------------------------------------------------------- reading
def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(
            f"'{path}' is not UTF-8 text (line {line}, byte {exc.start} cannot be decoded); save it as UTF-8."
        ) from None


def _finite(value: float) -> bool:
    """A finite number that fits a float (an integer of 400 digits does not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _epoch_files(source: Any) -> list[tuple[Path, int | None]]:
    """(path, epoch number from the file name or None) in epoch order."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_file():
            return [(path, None)]
        if not path.is_dir():
            raise ValueError(f"Training-dynamics directory '{path}' does not exist.")
        found = {}
        for folder in (path, path / "training_dynamics"):
            if folder.is_dir():
                for f in folder.iterdir():
                    m = _EPOCH_FILE.match(f.name)
                    if m and f.is_file():
                        what = f"The epoch number of a dynamics_epoch_<e>.jsonl file in '{path}'"
                        found[bounded_int(m.group(1), 0, MAX_EPOCH, what=what)] = f
            if found:
                break
        if not found:
            raise ValueError(
                f"Training-dynamics directory '{path}' holds no dynamics_epoch_<e>.jsonl files "
                "(allenai/cartography format)."
            )
        epochs = sorted(found)
        missing = sorted(set(range(epochs[-1] + 1)) - set(epochs))
        if missing:
            have = ", ".join(found[e].name for e in epochs[:MAX_SHOWN_VALUES])
            more = f", … ({len(epochs):,} files)" if len(epochs) > MAX_SHOWN_VALUES else ""
            raise ValueError(
                f"Training-dynamics directory '{path}' is missing epoch(s) {shown_list(missing)}: expected "
                f"dynamics_epoch_0.jsonl … dynamics_epoch_{epochs[-1]}.jsonl, found {have}{more}."
            )
        return [(found[e], e) for e in epochs]
    if isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray)):
        if not source:
            raise ValueError(
                "The 'source' parameter of read_cartography_dynamics must name at least one file. "
                "Got an empty list instead."
            )
        out = []
        for item in source:
            if not isinstance(item, (str, os.PathLike)):
                raise param_error(
                    "source", "read_cartography_dynamics", "a directory or a list of file paths", item, TypeError
                )
            if not Path(item).is_file():
                raise ValueError(f"Training-dynamics file '{item}' does not exist.")
            out.append((Path(item), None))
        return out
    raise param_error("source", "read_cartography_dynamics", "a directory or a list of file paths", source, TypeError)


def _read_epoch(
    path: Path, epoch: int, named_epoch: int | None, classes: tuple | None
) -> tuple[list[Hashable], list[list[float]], list[Any], int, dict[Hashable, int]]:
    """Parse one epoch file: guids, logits rows, gold indices, number of classes, guid → line number.

    Under the memory budget of the read in progress (:func:`read_cartography_dynamics` opens it): the file's
    bytes, its text and its lines are reserved before it is read, each record's logits as it is parsed.
    """
    parse = budget.current()
    if parse is not None:  # the bytes, the text (up to 4 bytes a character) and one string per line
        size = path.stat().st_size
        parse.reserve(6 * size, f"'{path.name}' and its text")
    text = _decode(path.read_bytes(), path)
    n_classes: int | None = None
    guids: list[Hashable] = []
    rows: list[list[float]] = []
    golds: list[Any] = []
    where: dict[Hashable, int] = {}
    key = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"'{path}' line {lineno} is not valid JSON: {exc.msg} (column {exc.colno}).") from None
        if not isinstance(rec, dict):
            raise ValueError(
                f"'{path}' line {lineno} must be a JSON object with guid, logits_epoch_<e> and gold. "
                f"Got {type(rec).__name__} instead."
            )
        if key is None or key not in rec:
            wanted = f"logits_epoch_{named_epoch}" if named_epoch is not None else None
            if wanted is not None and wanted in rec:
                key = wanted
            else:
                keys = [k for k in rec if _LOGITS_KEY.match(k)]
                if len(keys) != 1 or (wanted is not None and keys):
                    expected = wanted or "logits_epoch_<e>"
                    raise ValueError(
                        f"'{path}' line {lineno} must have one '{expected}' field (the logits). "
                        f"Got fields {sorted(rec)} instead."
                    )
                key = keys[0]
        guid = rec.get("guid", rec.get("id"))
        if guid is None or isinstance(guid, (list, dict, bool, float)):
            raise ValueError(
                f"'{path}' line {lineno} must have a 'guid' (a string or an integer). Got {shown(guid)} instead."
            )
        if guid in where:
            raise ValueError(f"'{path}' has guid {shown(guid)} twice (lines {where[guid]} and {lineno}).")
        where[guid] = lineno
        z = rec[key]
        if not isinstance(z, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in z):
            raise ValueError(f"'{path}' line {lineno}: '{key}' must be a list of numbers. Got {shown(z)} instead.")
        if n_classes is None:
            if len(z) < 2:
                raise ValueError(
                    f"'{path}' line {lineno}: '{key}' must have at least 2 logits (one per class). "
                    f"Got {len(z)} instead."
                )
            n_classes = len(z)
        elif len(z) != n_classes:
            raise ValueError(
                f"'{path}' line {lineno} has {len(z)} logits, but earlier lines have {n_classes}: every "
                "line must have one logit per class."
            )
        if not all(_finite(v) for v in z):
            raise ValueError(f"'{path}' line {lineno}: '{key}' must hold finite numbers. Got {shown(z)} instead.")
        if "gold" not in rec:
            raise ValueError(f"'{path}' line {lineno} must have a 'gold' field (the gold class).")
        gold = rec["gold"]
        if isinstance(gold, bool) or not isinstance(gold, (int, str)):
            raise ValueError(
                f"'{path}' line {lineno}: 'gold' must be a class index or a class name. Got {shown(gold)} instead."
            )
        if isinstance(gold, str):
            if classes is None:
                raise ValueError(
                    f"'{path}' line {lineno}: 'gold' is the class name {shown(gold)}; pass classes=[...] "
                    "(the class names in logit order) to read named gold labels."
                )
            if gold not in classes:
                raise ValueError(
                    f"'{path}' line {lineno}: 'gold' {shown(gold)} is not one of the classes {list(classes)}."
                )
            gold = classes.index(gold)
        elif not 0 <= gold < n_classes:
            raise ValueError(
                f"'{path}' line {lineno}: 'gold' must be a class index in [0, {n_classes - 1}]. Got {gold} instead."
            )
        if parse is not None:  # the record's Python objects, then a row of the logits array (and its stacked copy)
            parse.reserve(len(z) * (32 + 16) + 200, f"counted up to '{path.name}' line {lineno:,}", partial=True)
        guids.append(guid)
        rows.append(z)
        golds.append(gold)
    if not guids:
        raise ValueError(f"Training-dynamics file '{path}' (epoch {epoch}) has no records.")
    return guids, rows, golds, n_classes, where


def read_cartography_dynamics(
    source: str | os.PathLike | Sequence[str | os.PathLike], *, classes: Sequence[Hashable] | None = None
) -> TrainingDynamics:
    """Read training dynamics written in allenai/cartography's format (one JSONL file per epoch).

    Every line of ``dynamics_epoch_<e>.jsonl`` is ``{"guid": ..., "logits_epoch_<e>": [z_1, ..., z_C],
    "gold": g}``. Rows are aligned across epochs by ``guid`` (``"id"`` is accepted too); the row order is
    that of epoch 0.

    Parameters
    ----------
    source : path or list of paths
        A directory holding ``dynamics_epoch_0.jsonl``, ``dynamics_epoch_1.jsonl``, … (or a
        ``training_dynamics/`` sub-directory holding them, cartography's layout), every epoch from 0 on; or
        the epoch files themselves, in epoch order (then each line needs exactly one ``logits_epoch_<e>``
        field, whatever ``e``).
    classes : sequence, optional
        Class names in logit order. Required when ``gold`` holds class names; otherwise it names the classes
        (default ``0 .. C-1``).

    Returns
    -------
    TrainingDynamics
        Logits of shape (n_examples, n_epochs, n_classes); ``ids`` are the guids.

    Raises
    ------
    ValueError
        Naming the file (and line) for: a missing directory, file or epoch; text that is not UTF-8; a line that
        is not valid JSON or lacks a field; logits of different lengths; an unknown or out-of-range gold class;
        a guid repeated in one file, missing from an epoch, or with different gold labels across epochs.

    Examples
    --------
    >>> from pathlib import Path
    >>> folder = Path(__file__).parents[2] / "sample_data" / "cartography_example"
    >>> td = read_cartography_dynamics(folder, classes=["entailment", "neutral", "contradiction"])
    >>> td.n_examples, td.n_epochs, td.n_classes
    (6, 3, 3)
    """
    func = "read_cartography_dynamics"
    if classes is not None:
        if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence):
            raise param_error("classes", func, "a sequence of class names in logit order", classes, TypeError)
        classes = tuple(classes)
        if len(set(classes)) != len(classes) or len(classes) < 2:
            raise param_error("classes", func, "at least 2 distinct class names", classes)
    files = _epoch_files(source)
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():  # named as the other messages name it
        label = f"Training-dynamics directory '{Path(source)}'"
    else:
        label = f"Training-dynamics file '{files[0][0]}'"
    with budget.parse(label):
        return _read_epochs(files, classes)


def _read_epochs(files: list[tuple[Path, int | None]], classes: tuple | None) -> TrainingDynamics:
    n_classes: int | None = None
    first_path = files[0][0]
    logits_by_epoch: list[NDArray] = []
    guids0: list[Hashable] = []
    gold0: NDArray = np.empty(0, dtype=np.int64)
    for epoch, (path, named) in enumerate(files):
        guids, rows, golds, file_classes, where = _read_epoch(path, epoch, named, classes)
        if classes is not None and file_classes != len(classes):
            raise ValueError(
                f"'{path}' has {file_classes} logits per line, but {len(classes)} classes were given ({list(classes)})."
            )
        if n_classes is None:
            n_classes = file_classes
        elif file_classes != n_classes:
            raise ValueError(
                f"'{path}' has {file_classes} logits per line, but '{first_path}' has {n_classes}: "
                "every epoch must have one logit per class."
            )
        z = np.asarray(rows, dtype=np.float64)
        g = np.asarray(golds, dtype=np.int64)
        if epoch == 0:
            guids0, gold0 = guids, g
            logits_by_epoch.append(z)
            continue
        if guids != guids0:
            position = {gid: i for i, gid in enumerate(guids)}
            missing = [gid for gid in guids0 if gid not in position]
            if missing:
                raise ValueError(
                    f"guid {missing[0]!r} of epoch 0 ('{first_path}') is missing from epoch {epoch} "
                    f"('{path}'){f' along with {len(missing) - 1} more' if len(missing) > 1 else ''}."
                )
            if len(guids) != len(guids0):
                known = set(guids0)
                extra = next(gid for gid in guids if gid not in known)
                raise ValueError(
                    f"'{path}' line {where[extra]} has guid {extra!r}, which is not in epoch 0 ('{first_path}')."
                )
            order = np.array([position[gid] for gid in guids0])
            z, g = z[order], g[order]
        differ = np.flatnonzero(g != gold0)
        if len(differ):
            i = int(differ[0])
            raise ValueError(
                f"guid {guids0[i]!r} has gold {int(g[i])} in epoch {epoch} ('{path}') but {int(gold0[i])} "
                f"in epoch 0 ('{first_path}'): the gold label must not change across epochs."
            )
        logits_by_epoch.append(z)
    logits = np.stack(logits_by_epoch, axis=1)
    return TrainingDynamics(logits, gold0, classes if classes is not None else (), pd.Index(guids0, name="id"))
