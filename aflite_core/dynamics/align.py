"""Uploaded training dynamics made to fit a dataset: parse allenai/cartography epoch files, align rows and classes.

Epoch files arrive as ``(file name, bytes)``; the dynamics they hold are re-ordered to the dataset's rows
(guid ↔ id) and classes (by name), and checked against its labels.

Pure functions (no Streamlit, no files kept): the app reads uploads with them, and anything else holding
``(file name, bytes)`` pairs can too. Reading itself is :func:`aflite_core.dynamics.read_cartography_dynamics`.

==========================================  =================================================================
step                                        function
==========================================  =================================================================
class names typed as text, in logit order   :func:`parse_class_order`
epoch number from a file name               :func:`epoch_of_file`
``(name, bytes)`` epoch files -> dynamics   :func:`read_epoch_files`
dynamics -> the dataset's rows and classes  :func:`align_dynamics`
==========================================  =================================================================
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Hashable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .cartography import read_cartography_dynamics
from .measures import TrainingDynamics

__all__ = ["EPOCH_FILE_PATTERN", "align_dynamics", "epoch_of_file", "parse_class_order", "read_epoch_files"]

#: how allenai/cartography names the file of epoch ``e`` (at most four digits)
EPOCH_FILE_PATTERN = re.compile(r"dynamics_epoch_(\d{1,4})\.jsonl")


def parse_class_order(text: str, default: Sequence[Hashable]) -> list[str]:
    """Class names in logit order from comma-separated text; ``default`` (as strings) when the text names none.

    Parameters
    ----------
    text : str
        E.g. ``"entailment, neutral, contradiction"``; blanks around names are dropped.
    default : sequence
        The classes to use when ``text`` is empty (typically the dataset's classes, in code order).

    Returns
    -------
    list of str

    Examples
    --------
    >>> parse_class_order(" b, a ,", ["a", "b"]), parse_class_order("", [0, 1])
    (['b', 'a'], ['0', '1'])
    """
    return [c.strip() for c in str(text).split(",") if c.strip()] or [str(c) for c in default]


def epoch_of_file(name: str) -> int:
    """The epoch of a file named ``dynamics_epoch_<e>.jsonl`` (any folder part of ``name`` is ignored).

    Parameters
    ----------
    name : str
        The file name as uploaded.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        When the name does not follow allenai/cartography's naming (the epoch would be unknown).

    Examples
    --------
    >>> epoch_of_file("run/dynamics_epoch_12.jsonl")
    12
    """
    base = Path(str(name)).name
    match = EPOCH_FILE_PATTERN.fullmatch(base)
    if match is None:
        raise ValueError(
            f"'{base}' is not named dynamics_epoch_<e>.jsonl (allenai/cartography's naming), so its "
            "epoch is unknown. Rename the files dynamics_epoch_0.jsonl, dynamics_epoch_1.jsonl, …"
        )
    return int(match.group(1))


def read_epoch_files(
    files: Sequence[tuple[str, bytes]], *, classes: Sequence[Hashable] | None = None, what: str = "uploaded"
) -> TrainingDynamics:
    """Parse allenai/cartography epoch files given as ``(file name, bytes)``, in any order.

    The files are written to a private temporary folder (removed afterwards) and read with
    :func:`aflite_core.dynamics.read_cartography_dynamics`; its messages name the file and line but never the
    temporary folder.

    Parameters
    ----------
    files : sequence of (str, bytes)
        One ``dynamics_epoch_<e>.jsonl`` per epoch, every epoch from 0 on.
    classes : sequence, optional
        Class names in logit order (see ``read_cartography_dynamics``).
    what : str, default="uploaded"
        How the messages call these files, e.g. ``"full-input"``: errors read
        ``"Full-input dynamics: 'dynamics_epoch_0.jsonl' line 3 ..."``.

    Returns
    -------
    TrainingDynamics
        In the row order of epoch 0; ``ids`` are the guids.

    Raises
    ------
    ValueError
        A file not named ``dynamics_epoch_<e>.jsonl``, an epoch given twice, or anything
        ``read_cartography_dynamics`` refuses (missing epoch, invalid JSON, a guid missing from an epoch …).

    Examples
    --------
    >>> folder = Path(__file__).parents[2] / "sample_data" / "cartography_example"
    >>> files = [(p.name, p.read_bytes()) for p in sorted(folder.glob("dynamics_epoch_*.jsonl"))]
    >>> td = read_epoch_files(files[::-1], classes=["entailment", "neutral", "contradiction"])
    >>> td.n_examples, td.n_epochs, td.n_classes
    (6, 3, 3)
    """
    epochs: dict[int, bytes] = {}
    for name, payload in files:
        e = epoch_of_file(name)
        if e in epochs:
            raise ValueError(f"Epoch {e} was uploaded twice among the {what} files.")
        epochs[e] = bytes(payload)
    with tempfile.TemporaryDirectory(prefix="aflite-dynamics-") as tmp:
        for e, payload in epochs.items():
            (Path(tmp) / f"dynamics_epoch_{e}.jsonl").write_bytes(payload)
        try:
            return read_cartography_dynamics(tmp, classes=classes)
        except ValueError as exc:  # the temporary folder means nothing to the user
            text = str(exc).replace(f"Training-dynamics directory '{tmp}'", "The upload")
            raise ValueError(f"{what[:1].upper()}{what[1:]} dynamics: " + text.replace(tmp + os.sep, "")) from None


def align_dynamics(
    dynamics: TrainingDynamics,
    *,
    ids: ArrayLike,
    y: ArrayLike,
    classes: Sequence[Hashable],
    dataset_name: str = "the dataset",
    what: str = "uploaded",
) -> TrainingDynamics:
    """Re-order training dynamics to a dataset's rows (guid ↔ id, compared as text) and classes (by name).

    Parameters
    ----------
    dynamics : TrainingDynamics
        E.g. from :func:`read_epoch_files`; its ``ids`` are the guids and its ``classes`` name the logits.
    ids : array-like of shape (n_rows,)
        The dataset's row ids, in row order. Every guid must be one of them, and every id a guid.
    y : array-like of int, shape (n_rows,)
        The dataset's class codes (indices into ``classes``).
    classes : sequence
        The dataset's class names in code order.
    dataset_name : str, default="the dataset"
        How messages call the dataset.
    what : str, default="uploaded"
        How messages call the dynamics, e.g. ``"full-input"``.

    Returns
    -------
    TrainingDynamics
        Row ``i`` is the dataset's row ``i``; logit ``j`` is class ``classes[j]``; ``gold`` is ``y``; ``ids``
        the dataset's ids (index named ``"id"``).

    Raises
    ------
    ValueError
        A guid repeated once written as text, guids that are not ids (or ids without dynamics), logits that
        name other classes, or gold classes that disagree with ``y`` (a sign of a wrong class order).

    Examples
    --------
    >>> td = TrainingDynamics(np.zeros((2, 1, 2)), [1, 0], classes=("b", "a"), ids=["r1", "r0"])
    >>> out = align_dynamics(td, ids=["r0", "r1"], y=[1, 0], classes=["a", "b"])
    >>> list(out.ids), out.gold.tolist(), out.classes
    (['r0', 'r1'], [1, 0], ('a', 'b'))
    """
    y = np.asarray(y)
    row_ids = np.asarray(ids)
    ids = [str(i) for i in row_ids]
    if y.shape != (len(ids),):
        raise ValueError(f"'y' must hold one class code per id: got shape {y.shape} for {len(ids)} ids.")
    guids = [str(g) for g in dynamics.ids]
    position = {g: i for i, g in enumerate(guids)}
    if len(position) != len(guids):
        raise ValueError(f'The {what} dynamics repeat a guid once written as text (e.g. 7 and "7").')
    wanted = set(ids)
    missing = [i for i in ids if i not in position]
    extra = [g for g in guids if g not in wanted]
    if missing or extra:
        parts = []
        if extra:
            parts.append(f"{len(extra):,} guid(s) are not ids of the dataset (e.g. {extra[0]!r})")
        if missing:
            parts.append(f"{len(missing):,} of its {len(ids):,} rows have no dynamics (e.g. id {missing[0]!r})")
        raise ValueError(
            f"The uploaded {what} dynamics do not match the rows of '{dataset_name}': " + " and ".join(parts) + ". "
            f"The guid of every line must be the id of its row ('{dataset_name}' ids start {', '.join(ids[:3])}, …: "
            "the dataset's id column, or the row position 0, 1, … when its table has none)."
        )
    order = np.array([position[i] for i in ids], dtype=np.intp)
    names = [str(c) for c in classes]
    code = {n: j for j, n in enumerate(names)}
    file_names = [str(c) for c in dynamics.classes]
    unknown = [c for c in file_names if c not in code]
    if len(file_names) != len(names) or unknown:
        raise ValueError(
            f"The {what} dynamics have {len(file_names)} logits per line named {file_names}, but "
            f"'{dataset_name}' has the classes {names}: give the class names in logit order."
        )
    to_code = np.array([code[c] for c in file_names])
    logits = np.empty_like(dynamics.logits)
    logits[:, :, to_code] = dynamics.logits[order]
    gold = to_code[dynamics.gold[order]]
    differ = np.flatnonzero(gold != y)
    if len(differ):
        i = int(differ[0])
        raise ValueError(
            f"The {what} dynamics disagree with the dataset's labels on {len(differ):,} rows (e.g. id {ids[i]!r}: gold "
            f"{names[gold[i]]!r} in the files, {names[y[i]]!r} in the dataset). Check the class order of the logits."
        )
    return TrainingDynamics(logits, np.asarray(y, dtype=np.int64), tuple(classes), pd.Index(row_ids, name="id"))
