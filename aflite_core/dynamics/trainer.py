"""Record training dynamics on features: a small softmax/MLP model trained with Adam, logits kept per epoch."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._utils import blas_threads
from .._validation import (
    check_features,
    check_int,
    check_labels,
    check_nonnegative_float,
    check_optional_callable,
    check_positive_float,
    check_random_state,
    param_error,
)
from .measures import DynamicsRecord, TrainingDynamics, _as_index, _softmax

__all__ = ["RECORD_MODES", "TrainingInterrupted", "TrainingStep", "record_dynamics", "train_dynamics"]


#: when :func:`train_dynamics` records the logits of an epoch
RECORD_MODES: tuple[str, ...] = ("epoch_end", "train_pass")


_CHUNK = 65_536  # rows per block when standardising and scoring the whole matrix


class TrainingInterrupted(Exception):
    """Raised when a training's ``on_step`` callback returned ``False``: the recording was abandoned.

    Nothing partial is returned: dynamics of fewer epochs than asked for would give other measures and levels.
    """


@dataclass(frozen=True)
class TrainingStep:
    """How far a recording is, reported to ``on_step`` after every mini-batch.

    ``model`` is ``"full"`` or ``"partial"``; ``epoch`` (from 1) of ``epochs``; ``batch`` (from 1) of
    ``batches`` within the epoch; ``done`` of ``total`` mini-batches over the whole recording (both models).
    """

    model: str
    epoch: int
    epochs: int
    batch: int
    batches: int
    done: int
    total: int

    @property
    def fraction(self) -> float:
        """Share of the recording's mini-batches done, in [0, 1]."""
        return self.done / self.total if self.total else 1.0


# --------------------------------------------------------------------------------------------------- training
def _check_training(
    func: str, *, epochs, hidden_size, batch_size, learning_rate, weight_decay, record, n_threads
) -> dict[str, Any]:
    out = {
        "epochs": check_int(epochs, "epochs", func, low=1),
        "hidden_size": None if hidden_size is None else check_int(hidden_size, "hidden_size", func, low=1),
        "batch_size": check_int(batch_size, "batch_size", func, low=1),
        "learning_rate": check_positive_float(learning_rate, "learning_rate", func),
        "weight_decay": check_nonnegative_float(weight_decay, "weight_decay", func),
    }
    if record not in RECORD_MODES:
        raise param_error("record", func, f"one of {list(RECORD_MODES)}", record)
    out["record"] = record
    if n_threads is not None:
        check_int(n_threads, "n_threads", func, low=1)
    return out


class _Adam:
    """Adam (Kingma & Ba) on a list of float32 arrays, updated in place."""

    def __init__(self, params: list[NDArray], lr: float, total_steps: int, b1=0.9, b2=0.999, eps=1e-8) -> None:
        self.params, self.lr, self.total = params, lr, max(total_steps, 1)
        self.b1, self.b2, self.eps, self.t = b1, b2, eps, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, grads: list[NDArray]) -> None:
        lr = self.lr * (1.0 - self.t / self.total)  # linear decay to 0 over the run, no warm-up
        self.t += 1
        c1, c2 = 1.0 - self.b1**self.t, 1.0 - self.b2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= self.b1
            m += (1.0 - self.b1) * g
            v *= self.b2
            v += (1.0 - self.b2) * (g * g)
            p -= (lr / c1) * m / (np.sqrt(v / c2) + self.eps)


def _fit_and_record(
    X: NDArray[np.float32],
    codes: NDArray,
    n_classes: int,
    rng: np.random.Generator,
    *,
    epochs: int,
    hidden_size: int | None,
    batch_size: int,
    learning_rate: float,
    weight_decay: float,
    record: str,
    callback: Callable[[int, int], Any] | None,
    on_step: Callable[[int, int, int, int], bool | None] | None = None,
) -> NDArray[np.float64]:
    n, d = X.shape
    mean = X.mean(axis=0, dtype=np.float64)
    std = X.std(axis=0, dtype=np.float64)
    std[std == 0] = 1.0
    Z = np.empty(X.shape, dtype=np.float32)  # standardised copy: the optimiser sees unit-scale features
    for start in range(0, n, _CHUNK):
        Z[start : start + _CHUNK] = (X[start : start + _CHUNK] - mean) / std
    onehot = np.eye(n_classes, dtype=np.float32)[codes]
    if hidden_size is None:
        params = [
            (rng.standard_normal((d, n_classes)) * 0.01).astype(np.float32),
            np.zeros(n_classes, dtype=np.float32),
        ]
    else:
        params = [
            (rng.standard_normal((d, hidden_size)) * math.sqrt(2.0 / d)).astype(np.float32),
            np.zeros(hidden_size, dtype=np.float32),
            (rng.standard_normal((hidden_size, n_classes)) * math.sqrt(1.0 / hidden_size)).astype(np.float32),
            np.zeros(n_classes, dtype=np.float32),
        ]
    batch_size = min(batch_size, n)
    steps = math.ceil(n / batch_size)
    adam = _Adam(params, learning_rate, epochs * steps)
    logits = np.empty((n, epochs, n_classes), dtype=np.float32)

    def forward(rows: NDArray) -> tuple[NDArray, NDArray | None]:
        if hidden_size is None:
            return rows @ params[0] + params[1], None
        h = rows @ params[0] + params[1]
        np.maximum(h, 0, out=h)
        return h @ params[2] + params[3], h

    for epoch in range(epochs):
        order = rng.permutation(n)
        for s in range(steps):
            idx = order[s * batch_size : (s + 1) * batch_size]
            xb = Z[idx]
            z, h = forward(xb)
            if record == "train_pass":
                logits[idx, epoch] = z
            g = _softmax(z.copy())
            g -= onehot[idx]
            g /= len(idx)
            if hidden_size is None:
                grads = [xb.T @ g, g.sum(axis=0)]
                if weight_decay:
                    grads[0] += weight_decay * params[0]
            else:
                dh = g @ params[2].T
                dh *= h > 0
                grads = [xb.T @ dh, dh.sum(axis=0), h.T @ g, g.sum(axis=0)]
                if weight_decay:
                    grads[0] += weight_decay * params[0]
                    grads[2] += weight_decay * params[2]
            adam.step(grads)
            if on_step is not None and on_step(epoch + 1, s + 1, steps, epoch * steps + s + 1) is False:
                raise TrainingInterrupted
        if record == "epoch_end":
            for start in range(0, n, _CHUNK):
                logits[start : start + _CHUNK, epoch] = forward(Z[start : start + _CHUNK])[0]
        if callback is not None:
            callback(epoch + 1, epochs)
    return logits.astype(np.float64)


def train_dynamics(
    X: ArrayLike,
    y: ArrayLike,
    *,
    epochs: int = 5,
    hidden_size: int | None = None,
    batch_size: int = 32,
    learning_rate: float = 1e-2,
    weight_decay: float = 0.0,
    record: str = "epoch_end",
    ids: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
    callback: Callable[[int, int], Any] | None = None,
    n_threads: int | None = 1,
    on_step: Callable[[TrainingStep], bool | None] | None = None,
) -> TrainingDynamics:
    """Train a small model on ``(X, y)`` for E epochs and record every example's logits after each epoch.

    The model is trained in-sample, on the very rows being characterised (as the paper does on the test set):
    mini-batch Adam on the mean cross-entropy, features standardised per column first, one shuffle per epoch.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The representation (e.g. sentence-pair embeddings).
    y : array-like of shape (n_samples,)
        Labels of any hashable type; at least 2 classes.
    epochs : int, default=5
        E, passes over the data (the paper trains 5 epochs).
    hidden_size : int, optional
        Units of one ReLU hidden layer; ``None`` (default) trains a softmax (multinomial logistic) model.
    batch_size : int, default=32
        Mini-batch size (the paper's 32).
    learning_rate : float, default=1e-2
        Adam's initial step size; it decays linearly to 0 over the run (as the paper's schedule, no warm-up).
        With 1e-3 the softmax model on the SNLI sample embeddings stopped improving after 2-3 epochs and the
        per-example variability was close to 0; 1e-2 keeps it learning through all 5 epochs.
    weight_decay : float, default=0.0
        L2 penalty on the weights (not the biases), added to the gradient.
    record : {"epoch_end", "train_pass"}, default="epoch_end"
        ``"epoch_end"``: after each epoch, the logits of every example from the model at that point.
        ``"train_pass"``: the logits each example received in its mini-batch's forward pass during the epoch,
        before that batch's update, as allenai/cartography records them (epoch 0 then starts from an untrained
        model).
    ids : array-like, optional
        Unique example ids (default ``0 .. n_samples - 1``).
    random_state : int, numpy Generator or None
        The one source of randomness (initial weights and shuffles).
    callback : callable, optional
        Called as ``callback(epochs_done, epochs)`` after every epoch.
    n_threads : int or None, default=1
        BLAS threads during training (``None`` leaves the library default).
    on_step : callable, optional
        Called as ``on_step(TrainingStep)`` after every mini-batch; returning ``False`` stops the training
        there with :class:`TrainingInterrupted` (so a caller can stop it within one mini-batch).

    Returns
    -------
    TrainingDynamics
        Logits of shape (n_samples, epochs, n_classes); classes sorted as in :func:`aflite` (``check_labels``).

    Raises
    ------
    TrainingInterrupted
        When ``on_step`` returned ``False``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(-2, 1, (20, 2)), rng.normal(2, 1, (20, 2))]
    >>> y = np.repeat(["a", "b"], 20)
    >>> td = train_dynamics(X, y, epochs=3, learning_rate=0.05, random_state=0)
    >>> td.logits.shape, td.classes
    ((40, 3, 2), ('a', 'b'))
    >>> bool(td.measures()["correctness"].mean() > 0.9)
    True
    """
    func = "train_dynamics"
    opts = _check_training(
        func,
        epochs=epochs,
        hidden_size=hidden_size,
        batch_size=batch_size,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        record=record,
        n_threads=n_threads,
    )
    Xc = check_features(X, "X", func)
    enc = check_labels(y, "y", func, n_rows=Xc.shape[0], min_per_class=1)
    index = _as_index(ids, Xc.shape[0], "ids", func)
    if callback is not None and not callable(callback):
        raise param_error("callback", func, "a callable or None", callback, TypeError)
    check_optional_callable(on_step, "on_step", func)
    seed = check_random_state(random_state, func)
    return _train(Xc, enc.codes, enc.classes, index, seed, opts, callback, n_threads, on_step)


def _batches_per_epoch(n_rows: int, batch_size: int) -> int:
    return math.ceil(n_rows / min(batch_size, n_rows))


def _train(
    X, codes, classes, index, seed, opts, callback, n_threads, on_step=None, model="full", offset=0, total=None
) -> TrainingDynamics:
    rng = np.random.default_rng(seed)
    step = None
    if on_step is not None:
        epochs = opts["epochs"]
        batches = _batches_per_epoch(X.shape[0], opts["batch_size"])
        whole = total if total is not None else epochs * batches

        def step(epoch: int, batch: int, n_batches: int, done: int) -> bool | None:
            return on_step(TrainingStep(model, epoch, epochs, batch, n_batches, offset + done, whole))

    with blas_threads(n_threads):
        logits = _fit_and_record(X, codes, len(classes), rng, callback=callback, on_step=step, **opts)
    return TrainingDynamics(logits, codes.astype(np.int64), classes, index)


def record_dynamics(
    X: ArrayLike,
    y: ArrayLike,
    *,
    X_partial: ArrayLike | None = None,
    epochs: int = 5,
    hidden_size: int | None = None,
    batch_size: int = 32,
    learning_rate: float = 1e-2,
    weight_decay: float = 0.0,
    record: str = "epoch_end",
    ids: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
    callback: Callable[[int, int], Any] | None = None,
    n_threads: int | None = 1,
    on_step: Callable[[TrainingStep], bool | None] | None = None,
) -> DynamicsRecord:
    """Record training dynamics for the full input and a partial input of the same examples (the paper's setup).

    Two models of the same kind are trained separately, one on ``X`` (the paper's premise + hypothesis) and
    one on ``X_partial`` (hypothesis only), each in-sample for ``epochs`` epochs (see :func:`train_dynamics`).
    Each model gets its own integer seed drawn from ``random_state``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Full-input representation.
    y : array-like of shape (n_samples,)
        Labels of any hashable type; at least 2 classes.
    X_partial : array-like of shape (n_samples, n_partial_features), optional
        Partial-input representation; without it only the full-input dynamics are recorded.
    epochs : int, default=5
        E, passes over the data (the paper trains 5 epochs).
    hidden_size : int, optional
        Units of one ReLU hidden layer; ``None`` (default) trains a softmax (multinomial logistic) model.
    batch_size : int, default=32
        Mini-batch size (the paper's 32).
    learning_rate : float, default=1e-2
        Adam's initial step size; it decays linearly to 0 over the run (as the paper's schedule, no warm-up).
        With 1e-3 the softmax model on the SNLI sample embeddings stopped improving after 2-3 epochs and the
        per-example variability was close to 0; 1e-2 keeps it learning through all 5 epochs.
    weight_decay : float, default=0.0
        L2 penalty on the weights (not the biases), added to the gradient.
    record : {"epoch_end", "train_pass"}, default="epoch_end"
        ``"epoch_end"``: after each epoch, the logits of every example from the model at that point.
        ``"train_pass"``: the logits each example received in its mini-batch's forward pass during the epoch,
        before that batch's update, as allenai/cartography records them (epoch 0 then starts from an untrained
        model).
    ids : array-like, optional
        Unique example ids (default ``0 .. n_samples - 1``).
    random_state : int, numpy Generator or None
        The one source of randomness; the integer seed used is kept in ``result.random_state``.
    callback : callable, optional
        Called as ``callback(epochs_done, total_epochs)`` after every epoch of either model (the partial model's
        epochs count from ``epochs + 1``).
    n_threads : int or None, default=1
        BLAS threads during training.
    on_step : callable, optional
        Called as ``on_step(TrainingStep)`` after every mini-batch of either model (``done`` / ``total`` count
        over both); returning ``False`` abandons the recording with :class:`TrainingInterrupted`.

    Returns
    -------
    DynamicsRecord
        ``full`` and ``partial`` dynamics; ``measures()`` gives the eight features.

    Raises
    ------
    TrainingInterrupted
        When ``on_step`` returned ``False`` (nothing partial is returned).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4)); y = (X[:, 0] > 0).astype(int)
    >>> rec = record_dynamics(X, y, X_partial=X[:, 1:], epochs=2, random_state=0)
    >>> list(rec.measures().columns)  # doctest: +NORMALIZE_WHITESPACE
    ['confidence', 'variability', 'correctness', 'aum',
     'partial_confidence', 'partial_variability', 'partial_correctness', 'partial_aum']
    """
    func = "record_dynamics"
    opts = _check_training(
        func,
        epochs=epochs,
        hidden_size=hidden_size,
        batch_size=batch_size,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        record=record,
        n_threads=n_threads,
    )
    Xc = check_features(X, "X", func)
    Xp = None if X_partial is None else check_features(X_partial, "X_partial", func, n_rows=Xc.shape[0])
    enc = check_labels(y, "y", func, n_rows=Xc.shape[0], min_per_class=1)
    index = _as_index(ids, Xc.shape[0], "ids", func)
    if callback is not None and not callable(callback):
        raise param_error("callback", func, "a callable or None", callback, TypeError)
    check_optional_callable(on_step, "on_step", func)
    seed = check_random_state(random_state, func)
    seeds = np.random.default_rng(seed).integers(0, 2**63 - 1, size=2)
    total = epochs * (1 if Xp is None else 2)
    per_model = epochs * _batches_per_epoch(Xc.shape[0], opts["batch_size"])
    batches = per_model * (1 if Xp is None else 2)
    full = _train(
        Xc,
        enc.codes,
        enc.classes,
        index,
        int(seeds[0]),
        opts,
        None if callback is None else (lambda e, _: callback(e, total)),
        n_threads,
        on_step,
        "full",
        0,
        batches,
    )
    partial = None
    if Xp is not None:
        partial = _train(
            Xp,
            enc.codes,
            enc.classes,
            index,
            int(seeds[1]),
            opts,
            None if callback is None else (lambda e, _: callback(epochs + e, total)),
            n_threads,
            on_step,
            "partial",
            per_model,
            batches,
        )
    return DynamicsRecord(full=full, partial=partial, random_state=seed)
