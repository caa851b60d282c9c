"""Record training dynamics of your own training runs, in the layout :func:`read_cartography_dynamics` reads.

One file per epoch, ``dynamics_epoch_<E>.jsonl``, one line per training example::

    {"guid": "snli-17", "logits_epoch_0": [1.2, 0.1, -0.9], "gold": 0}

(allenai/cartography's layout). Three ways to write it, all through one writer:

* :func:`write_epoch` - framework-free: any loop that has the epoch's logits of every example as an array;
* :func:`add_cartography_callback` - a Hugging Face ``transformers.TrainerCallback`` that, at the end of every
  epoch, predicts the whole training set with the current model (``trainer.predict``) and writes the file;
* :func:`write_torch_epoch` - a plain PyTorch loop: run the model over a data loader in eval mode, no
  gradients, and write the file.

Nothing here imports torch or transformers until a function that needs them is called. Every file is written
crash-consistently (temporary file, fsync, rename): a reader sees the previous file or the complete new one.
The logits are taken at the *end* of each epoch, after its last optimiser step (as the original cartography
code does), not averaged over the epoch's mini-batches.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _durable
from .._validation import param_error, shown

__all__ = ["MAX_EPOCH", "add_cartography_callback", "epoch_file", "write_epoch", "write_torch_epoch"]

#: the largest epoch number a ``dynamics_epoch_<e>.jsonl`` may carry (the app's uploads allow four digits too):
#: :func:`aflite_core.dynamics.read_cartography_dynamics` checks that every epoch from 0 to the largest is there,
#: so the number sizes what it allocates; it refuses a larger one, and :func:`write_epoch` never writes one
MAX_EPOCH = 9_999


def epoch_file(directory: str | os.PathLike, epoch: int) -> Path:
    """The path of epoch ``epoch``'s file in ``directory``: ``dynamics_epoch_<epoch>.jsonl``."""
    return Path(directory) / f"dynamics_epoch_{int(epoch)}.jsonl"


def _guid(value: Any, i: int, func: str) -> str | int:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(
            f"The 'guids' parameter of {func} must hold str or int ids. Got {shown(value)} (example {i}) instead."
        )
    return value


def write_epoch(
    directory: str | os.PathLike,
    epoch: int,
    guids: Sequence[Hashable] | ArrayLike,
    logits: ArrayLike,
    gold: ArrayLike,
) -> Path:
    """Write one epoch of training dynamics: ``dynamics_epoch_<epoch>.jsonl`` in ``directory``.

    Call it once per epoch, from epoch 0 on, with the logits of *every* training example at the end of that
    epoch (examples in any order; every epoch must list the same guids). The folder is created if needed; an
    existing file of that epoch is replaced atomically.

    Parameters
    ----------
    directory : str or path
        Output folder (one per model: full input and partial input go to different folders).
    epoch : int
        Epoch number, from 0 to :data:`MAX_EPOCH` (9,999: the reader refuses
        larger ones).
    guids : sequence of str or int, length n_examples
        Unique example ids (the dataset's ids, so the levels can be joined back to the rows).
    logits : array-like of shape (n_examples, n_classes)
        Pre-softmax scores (log-probabilities work too), finite, at least 2 classes.
    gold : array-like of shape (n_examples,)
        Gold class index in ``[0, n_classes)`` (or class names; then read with ``classes=[...]``).

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    ValueError
        For an epoch outside [0, 9999], logits that are not a finite 2-D array, a guid that is repeated or not a
        str / int, a gold class out of range, lengths that differ, or a ``directory`` that is (or lies inside) a
        file.

    Examples
    --------
    >>> import tempfile
    >>> from aflite_core.dynamics import read_cartography_dynamics
    >>> folder = tempfile.mkdtemp()
    >>> for e in range(2):
    ...     _ = write_epoch(folder, e, ["a", "b"], [[2.0, 0.0], [0.0, 1.0 + e]], [0, 1])
    >>> td = read_cartography_dynamics(folder)
    >>> td.n_examples, td.n_epochs, list(td.ids)
    (2, 2, ['a', 'b'])
    """
    func = "write_epoch"
    if isinstance(epoch, bool) or not isinstance(epoch, int | np.integer) or not 0 <= epoch <= MAX_EPOCH:
        raise param_error(
            "epoch", func, f"an int in [0, {MAX_EPOCH}] (the epochs read_cartography_dynamics reads)", epoch
        )
    try:
        z = np.asarray(logits, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(
            "logits", func, "a numeric array of shape (n_examples, n_classes)", logits, TypeError
        ) from None
    if z.ndim != 2 or z.shape[0] < 1 or z.shape[1] < 2:
        raise ValueError(
            f"The 'logits' parameter of {func} must be an array of shape (n_examples, n_classes) with "
            f"at least 1 example and 2 classes. Got shape {z.shape} instead."
        )
    if not np.isfinite(z).all():
        bad = int(np.flatnonzero(~np.isfinite(z).all(axis=1))[0])
        raise ValueError(
            f"The 'logits' parameter of {func} must contain only finite values. Got NaN or infinity "
            f"(first in example {bad}) instead."
        )
    n, n_classes = z.shape
    ids = [_guid(g, i, func) for i, g in enumerate(guids.tolist() if isinstance(guids, np.ndarray) else guids)]
    if len(ids) != n:
        raise ValueError(
            f"The 'guids' parameter of {func} must have one id per row of logits ({n}). Got {len(ids)} ids instead."
        )
    seen: dict[str | int, int] = {}
    for i, g in enumerate(ids):
        if g in seen:
            raise ValueError(
                f"The 'guids' parameter of {func} must hold unique ids. Got {shown(g)} twice "
                f"(examples {seen[g]} and {i}) instead."
            )
        seen[g] = i
    golds = np.asarray(gold)
    if golds.ndim != 1 or len(golds) != n:
        raise ValueError(
            f"The 'gold' parameter of {func} must be 1-D with one class per example ({n}). "
            f"Got shape {golds.shape} instead."
        )
    if golds.dtype.kind in "iu":
        out_of_range = np.flatnonzero((golds < 0) | (golds >= n_classes))
        if len(out_of_range):
            i = int(out_of_range[0])
            raise ValueError(
                f"The 'gold' parameter of {func} must hold class indices in [0, {n_classes - 1}]. "
                f"Got {int(golds[i])} (example {i}) instead."
            )
        gold_values: list[Any] = golds.astype(np.int64).tolist()
    elif golds.dtype.kind in "UO" and all(isinstance(g, str) for g in golds.tolist()):
        gold_values = golds.tolist()
    else:
        raise param_error("gold", func, f"class indices in [0, {n_classes - 1}] or class names", gold, TypeError)
    key = f"logits_epoch_{int(epoch)}"
    lines = [json.dumps({"guid": g, key: row, "gold": y}) for g, row, y in zip(ids, z.tolist(), gold_values)]
    blocker = _file_in_the_way(Path(directory))
    if blocker is not None:
        raise ValueError(
            f"The 'directory' parameter of {func} must be a folder (it is created if missing). Got "
            f"{shown(str(directory), 80)}, but {'it' if blocker == Path(directory) else shown(str(blocker), 80)} "
            "is a file instead."
        )
    folder = _durable.make_dirs(directory)
    return _durable.write_file(epoch_file(folder, int(epoch)), ("\n".join(lines) + "\n").encode("utf-8"))


def _file_in_the_way(path: Path) -> Path | None:
    """The first existing part of ``path`` (itself or a parent) when it is not a folder, else None."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return None
        probe = probe.parent
    return None if probe.is_dir() else probe


# --------------------------------------------------------------------------------------------- Hugging Face
def _default_guids(dataset: Any) -> list[Any]:
    names = getattr(dataset, "column_names", None)
    if names:
        for col in ("guid", "id", "idx"):
            if col in names:
                return list(dataset[col])
    return list(range(len(dataset)))


def add_cartography_callback(
    trainer: Any,
    directory: str | os.PathLike,
    *,
    dataset: Any = None,
    guids: Sequence[Hashable] | None = None,
    gold: ArrayLike | None = None,
) -> Any:
    """Record training dynamics of a Hugging Face ``Trainer`` run: a callback that writes every epoch's file.

    At the end of each epoch the callback runs ``trainer.predict(dataset)`` (batched, no gradients, the
    trainer's devices and collator, results in dataset order) and writes the logits with :func:`write_epoch`
    (on the main process only). Add it before ``trainer.train()``.

    Parameters
    ----------
    trainer : transformers.Trainer
        The trainer; the callback is added to it.
    directory : str or path
        Output folder of the ``dynamics_epoch_<E>.jsonl`` files.
    dataset : Dataset, optional
        The examples to record (default ``trainer.train_dataset``). Unused columns such as ``guid`` are
        dropped by the trainer before the model sees them.
    guids : sequence of str or int, optional
        Example ids in dataset order (default: the dataset's ``guid``, ``id`` or ``idx`` column, else the
        row positions).
    gold : array-like of int, optional
        Gold classes in dataset order (default: the label ids ``trainer.predict`` returns).

    Returns
    -------
    transformers.TrainerCallback
        The callback (already added to ``trainer``).

    Raises
    ------
    ImportError
        When transformers is not installed.

    Examples
    --------
    ``trainer = Trainer(model=model, args=args, train_dataset=train)``;
    ``add_cartography_callback(trainer, "runs/dynamics")``; ``trainer.train()``; then
    ``python -m aflite_core dynamics --dynamics-dir runs/dynamics --out levels.csv``.
    """
    try:
        from transformers import TrainerCallback
    except ImportError as exc:
        raise ImportError(
            "add_cartography_callback needs the optional 'transformers' package: pip install transformers accelerate."
        ) from exc
    data = trainer.train_dataset if dataset is None else dataset
    if data is None:
        raise ValueError(
            "The 'dataset' parameter of add_cartography_callback is needed: the trainer has no train_dataset."
        )
    ids = list(guids) if guids is not None else _default_guids(data)
    if len(ids) != len(data):
        raise ValueError(
            f"The 'guids' parameter of add_cartography_callback must have one id per example "
            f"({len(data)}). Got {len(ids)} ids instead."
        )
    fixed_gold = None if gold is None else np.asarray(gold)
    out = Path(directory)

    class CartographyCallback(TrainerCallback):
        """Writes ``dynamics_epoch_<E>.jsonl`` at the end of every epoch (see add_cartography_callback)."""

        def on_epoch_end(self, args, state, control, **kwargs):
            prediction = trainer.predict(data)
            logits = prediction.predictions
            if isinstance(logits, tuple | list):
                logits = logits[0]
            labels = prediction.label_ids if fixed_gold is None else fixed_gold
            if isinstance(labels, tuple | list):
                labels = labels[0]
            if labels is None:
                raise ValueError(
                    "The training examples have no labels for trainer.predict to return; pass "
                    "gold=[...] to add_cartography_callback."
                )
            labels = np.asarray(labels)
            if labels.dtype.kind == "f":
                labels = labels.astype(np.int64)
            if state.is_world_process_zero:
                # state.epoch is e + 1 at the end of epoch e (a float; also when training stops mid-epoch)
                epoch = max(math.ceil(state.epoch - 1e-6) - 1, 0) if state.epoch is not None else 0
                write_epoch(out, epoch, ids, np.asarray(logits), labels)
            return control

    callback = CartographyCallback()
    trainer.add_callback(callback)
    return callback


# --------------------------------------------------------------------------------------------- PyTorch loop
def _to_numpy(value: Any) -> NDArray:
    if hasattr(value, "detach"):
        return value.detach().float().cpu().numpy() if value.is_floating_point() else value.detach().cpu().numpy()
    return np.asarray(value)


def _to_list(value: Any) -> list[Any]:
    if hasattr(value, "detach"):
        return value.detach().cpu().tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return list(value)


def _move(value: Any, device: Any) -> Any:
    if hasattr(value, "to") and hasattr(value, "detach"):
        return value.to(device)
    if isinstance(value, Mapping):
        return {k: _move(v, device) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_move(v, device) for v in value)
    return value


def _logits_of(output: Any) -> Any:
    if hasattr(output, "logits"):
        return output.logits
    if isinstance(output, tuple | list):
        return output[0]
    return output


def write_torch_epoch(
    directory: str | os.PathLike,
    epoch: int,
    model: Any,
    batches: Iterable[Any],
    *,
    guid_key: str = "guid",
    label_key: str = "labels",
    forward: Callable[[Any, Any], Any] | None = None,
) -> Path:
    """Predict every training example with a PyTorch model and write the epoch's file (for a plain loop).

    Call it after each epoch's last optimiser step. The model runs in eval mode under ``torch.no_grad()``
    (its previous mode is restored), on the device of its parameters.

    Parameters
    ----------
    directory : str or path
        Output folder.
    epoch : int
        Epoch number, from 0.
    model : torch.nn.Module
        The model being trained.
    batches : iterable
        Every training example once, e.g. a ``DataLoader`` (shuffling is fine: ids travel with the rows).
        Each batch is a dict holding ``guid_key`` (ids), ``label_key`` (gold classes) and the model's
        inputs (called as ``model(**inputs)``), or a tuple ``(inputs, labels, guids)`` (called as
        ``model(inputs)``).
    guid_key, label_key : str
        Keys of the ids and of the gold classes in dict batches.
    forward : callable, optional
        ``forward(model, inputs) -> logits`` instead of the default call.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    ImportError
        When torch is not installed.
    ValueError
        For a batch that is neither a dict with those keys nor a 3-tuple.
    """
    try:
        import torch
    except ImportError as exc:
        raise ImportError("write_torch_epoch needs torch: pip install torch==2.13.0 (the CPU build).") from exc
    func = "write_torch_epoch"
    params = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    device = params.device if params is not None else None
    ids: list[Any] = []
    golds: list[Any] = []
    rows: list[NDArray] = []
    was_training = bool(getattr(model, "training", False))
    if hasattr(model, "eval"):
        model.eval()
    try:
        with torch.no_grad():
            for i, batch in enumerate(batches):
                if isinstance(batch, Mapping):
                    missing = [k for k in (guid_key, label_key) if k not in batch]
                    if missing:
                        raise ValueError(
                            f"Batch {i} given to {func} has no {missing[0]!r} key; its keys are "
                            f"{sorted(map(str, batch))} (set guid_key / label_key)."
                        )
                    inputs = {k: val for k, val in batch.items() if k not in (guid_key, label_key)}
                    g, y = batch[guid_key], batch[label_key]
                    inputs = _move(inputs, device) if device is not None else inputs
                    out = forward(model, inputs) if forward is not None else model(**inputs)
                elif isinstance(batch, tuple | list) and len(batch) == 3:
                    inputs, y, g = batch
                    inputs = _move(inputs, device) if device is not None else inputs
                    out = forward(model, inputs) if forward is not None else model(inputs)
                else:
                    raise ValueError(
                        f"Batch {i} given to {func} must be a dict with {guid_key!r} and {label_key!r} "
                        f"or a tuple (inputs, labels, guids). Got {type(batch).__name__} instead."
                    )
                z = _to_numpy(_logits_of(out))
                rows.append(z.reshape(len(z), -1))
                ids += _to_list(g)
                golds += _to_list(y)
    finally:
        if hasattr(model, "train"):
            model.train(was_training)
    if not rows:
        raise ValueError(f"The 'batches' parameter of {func} yielded no batch.")
    return write_epoch(directory, epoch, ids, np.concatenate(rows, axis=0), np.asarray(golds))
