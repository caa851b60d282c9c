"""The default model family: scikit-learn's ``LogisticRegression()``, all m partition models fitted together.

AFLite's adversary is "typically a linear classifier"; the loop everyone writes fits one scikit-learn
``LogisticRegression()`` (L-BFGS, ``C=1``) per partition. :class:`LogisticFamily` fits the same models - the
same objective, so the same held-out predictions - batched:

* **objective**: per partition, the sum over its t training rows of the multinomial log-loss (the binomial one
  for two classes, as scikit-learn does) plus ``0.5 * ||W||² / C``; the intercept is not penalised. Features
  are centred by the column mean of X, which only moves the (free) intercept;
* **solver**: L-BFGS (5 correction pairs, backtracking Armijo line search) for every model of a batch at once,
  each iteration's products shared as batched matrix products. The initial inverse-Hessian approximation is
  the inverse of ``κ · (t/n) · [x, 1]ᵀ[x, 1] + diag(1/C, …, 1/C, 0)`` over the current set - the Hessian at
  uniform class probabilities (κ = 1/C for C classes, 1/4 for two), one label-free matrix per round - so the
  first step from zero is a closed-form ridge solution and the rest take few iterations (3-17 on the
  benchmark data, against scikit-learn's 20-100). A model stops when its largest gradient entry is at most
  ``tol`` times its number of training rows (scikit-learn's ``tol`` on the mean loss) or after ``max_iter``
  iterations. Each model sees only its own training rows' labels (no warm start from a model that saw its
  held-out rows, which would leak them into its predictions);
* **where ridge stands in** (:meth:`LogisticFamily.solver`, a function of the shapes only, so every backend
  and every resumed run makes the same choice): with at most 3 classes, at least 20 training rows per feature
  and more than ``max_work`` multiply-adds per pass over the training parts (``m · t · (d + 1) · K``, K = 1
  for two classes, C otherwise; default 5e8), the closed-form ridge classifier of
  :class:`~aflite_core.engine.models.LinearFamily` is fitted instead: there it predicts what logistic regression
  predicts (``benchmarks/README.md``) and keeps the paper-scale runs within minutes. Many classes (least
  squares masks classes) or few rows per feature (its ridge term is then far too small) always get logistic
  regression.

Partitions, blocks, scoring and the Dask backend are those of :class:`~aflite_core.engine.models.LinearFamily`: a fitted
logistic model is stored in the same form (score differences to class 0), so prediction is one matrix product
per block of rows for every model that held it out. Small runs memoise their fitted partition groups
(:class:`_FitMemo`), so a run that repeats a round's inputs - another τ with the same data and seed, as the
app's slider makes - reuses them instead of refitting.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._utils import hash_array
from ._parallel import map_ordered
from .models import LinearFamily, _LinearSession, _LinearWeights
from .partitions import PartitionPlan, report_step

__all__ = ["LogisticFamily"]

#: bytes of gathered training rows fitted together (bounds the batch of partition models)
GATHER_BYTES = 96 * 2**20
#: the ridge fallback is used only for this many classes at most (least squares masks classes beyond)
RIDGE_MAX_CLASSES = 3
#: ... and only with at least this many training rows per feature (with fewer it is a weaker adversary)
RIDGE_MIN_ROWS_PER_FEATURE = 20
#: runs on feature matrices up to this size memoise their fitted partition groups (see :class:`_FitMemo`)
MEMO_MAX_X_BYTES = 64 * 2**20
#: bytes of fitted weights the memo keeps (least recently used first out)
MEMO_BYTES = 64 * 2**20
#: L-BFGS correction pairs kept (5 needed no more iterations than scipy's 10 on the benchmark data)
LBFGS_MEMORY = 5
#: step halvings tried before a model stops (its objective cannot decrease further in float32)
MAX_BACKTRACKS = 12


@dataclass(frozen=True)
class LogisticFamily(LinearFamily):
    """Batched L2-regularised logistic regression (scikit-learn's ``LogisticRegression(C=C)`` objective).

    The default model family. Inherits the block partitions and the ridge machinery of
    :class:`~aflite_core.engine.models.LinearFamily` (its parameters keep their meaning for the ridge fallback).

    Parameters
    ----------
    alpha, block_rows, max_gram_bytes, iterative, partition_group
        As in :class:`~aflite_core.engine.models.LinearFamily` (``alpha`` applies only above ``max_work``).
    C : float, default=1.0
        Inverse regularisation strength, as in scikit-learn: the penalty is ``0.5 * ||W||² / C`` against the
        *sum* of the training rows' log-losses; the intercept is not penalised.
    tol : float, default=1e-3
        A model has converged when ``max |gradient| <= tol * n_train`` (scikit-learn's ``tol`` on its mean
        loss; its default 1e-4 takes 2-3x the iterations and changed no measured figure beyond the
        seed-to-seed noise of the scikit-learn loop, see ``benchmarks/README.md``).
    max_iter : int, default=100
        L-BFGS iterations at most (scikit-learn's default).
    max_work : float, default=5e8
        Work (``m · t · (d + 1) · K`` multiply-adds per pass over the training parts) above which the
        closed-form ridge classifier stands in where it predicts like logistic regression (see
        :meth:`solver`); ``float("inf")`` always fits logistic regression.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core import predictability
    >>> from aflite_core.engine.logistic import LogisticFamily
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 600)
    >>> X = rng.normal(size=(600, 5)) + np.eye(5)[y]
    >>> p = predictability(X, y, train_size=200, model=LogisticFamily(), random_state=0)
    >>> LogisticFamily().solver(64, 200, 5, 3)
    'logistic'
    """

    C: float = 1.0
    tol: float = 1e-3
    max_iter: int = 100
    max_work: float = 5e8

    name = "linear"

    def __post_init__(self) -> None:
        for key in ("C", "tol", "max_work"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and (math.isfinite(value) or key == "max_work") and value > 0):
                raise ValueError(
                    f"The '{key}' parameter of LogisticFamily must be a float in (0, inf). Got {value!r} instead."
                )
        if not (isinstance(self.max_iter, int) and self.max_iter >= 1):
            raise ValueError(
                f"The 'max_iter' parameter of LogisticFamily must be an int in [1, inf). Got {self.max_iter!r} instead."
            )

    def spec(self) -> dict[str, Any]:
        """JSON-serialisable description of the family (recorded in results and checkpoints)."""
        return {
            "family": "linear",
            "class": "aflite_core.logistic.LogisticFamily",
            "params": {f.name: getattr(self, f.name) for f in fields(self)},
        }

    def solver(self, n_partitions: int, train_size: int, n_features: int, n_classes: int) -> str:
        """``"logistic"`` or ``"ridge"``: what this family fits for a run of these shapes (the documented rule).

        Ridge only where it was measured to predict what logistic regression predicts *and* logistic
        regression would be expensive: at most :data:`RIDGE_MAX_CLASSES` classes, at least
        :data:`RIDGE_MIN_ROWS_PER_FEATURE` training rows per feature, and one pass over the training parts
        (``m · t · (d + 1) · K`` multiply-adds) above ``max_work``.
        """
        K = 1 if n_classes == 2 else n_classes
        work = n_partitions * train_size * (n_features + 1) * K
        ridge_is_enough = n_classes <= RIDGE_MAX_CLASSES and train_size >= RIDGE_MIN_ROWS_PER_FEATURE * (n_features + 1)
        return "ridge" if ridge_is_enough and work > self.max_work else "logistic"

    def session(
        self,
        X,
        codes,
        n_classes: int,
        *,
        train_size: int,
        n_partitions: int,
        rng,
        layout: dict | None = None,
        groups: NDArray[np.int32] | None = None,
    ) -> _LogisticSession:
        """Bind the family to one run's data (draws the persistent blocks from ``rng``; ``groups``: whole groups)."""
        return _LogisticSession(self, X, codes, n_classes, train_size, n_partitions, rng, layout=layout, groups=groups)


class _LogisticSession(_LinearSession):
    """The logistic family bound to one run: the linear session's blocks, plus the rows still present."""

    def __init__(
        self,
        family: LogisticFamily,
        X,
        codes,
        n_classes: int,
        train_size: int,
        n_partitions: int,
        rng,
        layout: dict | None = None,
        groups: NDArray[np.int32] | None = None,
    ) -> None:
        self.solver = family.solver(n_partitions, train_size, X.shape[1], n_classes)
        self.K = 1 if n_classes == 2 else n_classes
        # a cluster worker gets no row list in blocks mode: it knows the current set from the removals
        self.present = np.ones(X.shape[0], dtype=bool)
        self._memo_base: str | None = None
        super().__init__(family, X, codes, n_classes, train_size, n_partitions, rng, layout=layout, groups=groups)

    # -- set-up -------------------------------------------------------------------------------------
    @property
    def fit_group(self) -> int:
        """Partitions fitted together (the same on every backend: a function of the shapes only)."""
        if self.solver != "logistic":
            return super().fit_group
        longest = self.train_size + (self.rows_per_block if self.mode == "blocks" else 0)
        return int(max(1, min(self.n_partitions, GATHER_BYTES // (8 * longest * (self.d + 1)))))

    @property
    def uses_stack(self) -> bool:
        """Block Gram matrices only for the ridge fallback."""
        return self.solver != "logistic" and self.mode == "blocks"

    @property
    def uses_total(self) -> bool:
        """Logistic regression's preconditioner is built from the Gram matrix of the whole current set."""
        return self.solver == "logistic" or super().uses_total

    def forget(self, rows: NDArray[np.intp]) -> None:
        """Forget removed rows: the rows present and the block sizes."""
        rows = np.asarray(rows, dtype=np.intp)
        self.present[rows] = False
        super().forget(rows)

    def _preconditioner(self, n_rows: int, total: NDArray[np.float64] | None = None) -> NDArray[np.float32] | None:
        if self.solver != "logistic":
            return super()._preconditioner(n_rows, total)
        if self._precond_cache is None or self._precond_cache[0] != n_rows:
            self._precond_cache = (
                n_rows,
                self.preconditioner_from_total(self._total() if total is None else total, n_rows),
            )
        return self._precond_cache[1]

    def preconditioner_from_total(self, total: NDArray[np.float64], n_rows: int) -> NDArray[np.float32] | None:
        """Logistic solver: inverse of κ·(t/n)·[x, 1]ᵀ[x, 1] + diag(1/C, …, 1/C, 0) over the current set."""
        if self.solver != "logistic":
            return super().preconditioner_from_total(total, n_rows)
        d = self.d
        kappa = 0.25 if self.K == 1 else 1.0 / self.K
        H = total[: d + 1, : d + 1] * (kappa * self.train_size / max(n_rows, 1))
        H[np.arange(d), np.arange(d)] += 1.0 / self.family.C
        try:
            H_inv = np.linalg.inv(H)
        except np.linalg.LinAlgError:
            H_inv = np.linalg.pinv(H)
        return np.ascontiguousarray(H_inv.astype(np.float32))

    # -- FamilySession ------------------------------------------------------------------------------
    def fit(
        self, rows: NDArray[np.intp], plan: PartitionPlan, partitions: Sequence[int], rng, precond=None
    ) -> _LinearWeights:
        """Fit the partitions' logistic regressions (or, above ``max_work``, their ridge classifiers).

        ``precond``: this round's preconditioner when another process computed it (a cluster worker), else it
        is computed from this session's shards.
        """
        if self.solver != "logistic":
            return super().fit(rows, plan, partitions, rng)
        parts = np.asarray(list(partitions), dtype=np.intp)
        d, C, K = self.d, self.n_classes, self.K
        if self.mode == "blocks":  # the current set, from the removals (a worker's ``rows`` is only a length)
            current = np.flatnonzero(self.present)
            if len(current) != len(rows):
                raise RuntimeError("The logistic family's view of the current set is out of date.")
            block = self.block_of_row[current]

            def training_rows(j: int) -> NDArray[np.intp]:
                return current[plan.membership[j, block]]

            sizes = plan.membership.astype(np.int64) @ self.block_sizes
        else:
            current = np.asarray(rows)

            def training_rows(j: int) -> NDArray[np.intp]:
                return current[plan.membership[j]]

            sizes = plan.membership.sum(axis=1)
        longest = int(sizes.max())  # one padded length for the whole round: every batch computes alike
        if precond is None:
            started = self._take_pending(len(current))  # by the last removals, on a pool of threads
            precond = started() if started is not None else self._preconditioner(len(current))
        H_inv = precond
        step = self.fit_group
        mu = self.mu.astype(np.float64)
        round_key = self._round_key(current, plan, H_inv)

        def fit_group(group: NDArray[np.intp]) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
            key = None if round_key is None else f"{round_key}:{','.join(map(str, group.tolist()))}"
            hit = _MEMO.get(key)
            if hit is not None:
                return hit
            Xg = np.zeros((len(group), longest, d + 1), dtype=np.float32)
            codes = np.zeros((len(group), longest), dtype=np.intp)
            mask = np.zeros((len(group), longest), dtype=np.float32)
            for i, j in enumerate(group):
                train = training_rows(j)
                np.subtract(self.X[train], self.mu, out=Xg[i, : len(train), :d])
                Xg[i, : len(train), d] = 1.0
                codes[i, : len(train)] = self.codes[train]
                mask[i, : len(train)] = 1.0
            Wg, bg, _ = fit_logistic(
                Xg, codes, mask, K, H_inv, C=self.family.C, tol=self.family.tol, max_iter=self.family.max_iter
            )
            Wg, bg = Wg.astype(np.float64), bg.astype(np.float64)
            if K == 1:
                Wdiff, bdiff = Wg, bg
            else:
                Wdiff, bdiff = Wg[:, :, 1:] - Wg[:, :, :1], bg[:, 1:] - bg[:, :1]
            bdiff = bdiff - np.einsum("d,gdc->gc", mu, Wdiff)  # fitted on x - μ: fold the centring into b
            out = (Wdiff.transpose(1, 2, 0).astype(np.float32), bdiff.T.astype(np.float32))
            _MEMO.put(key, (out[0].copy(), out[1].copy()))
            return out

        def report(u: int, _: int) -> None:
            report_step(self, "fit", u * step, len(parts))

        # groups are independent: on the run's thread pool they are fitted at once, each by the same calls
        groups = [parts[g0 : g0 + step] for g0 in range(0, len(parts), step)]
        fitted = map_ordered(fit_group, groups, report=report)
        W = np.concatenate([w for w, _ in fitted], axis=2)
        b = np.concatenate([bb for _, bb in fitted], axis=1)
        return _LinearWeights(W, b, C)

    def _round_key(self, current: NDArray[np.intp], plan: PartitionPlan, H_inv: NDArray[np.float32]) -> str | None:
        """Everything this round's fits are a function of, hashed (None: too large to memoise).

        The data and family (once per run), the current rows, the partitions and the preconditioner's bytes
        (the one piece of floating-point state carried from earlier rounds): equal keys mean refitting would
        repeat exactly the same operations on exactly the same numbers.
        """
        if self.X.nbytes > MEMO_MAX_X_BYTES:
            return None
        if self._memo_base is None:
            parts = [
                json.dumps(self.family.spec(), sort_keys=True, default=repr),
                hash_array(self.X),
                hash_array(np.asarray(self.codes)),
                repr((self.n_classes, self.train_size, self.n_partitions, self.mode, self.rows_per_block)),
            ]
            if self.block_of_row is not None:
                parts.append(hash_array(self.block_of_row))
            self._memo_base = hashlib.sha256("|".join(parts).encode()).hexdigest()
        h = hashlib.sha256(self._memo_base.encode())
        h.update(H_inv.tobytes())
        h.update(np.ascontiguousarray(current, dtype=np.int64).tobytes())
        h.update(repr(plan.membership.shape).encode() + np.packbits(plan.membership).tobytes())
        return h.hexdigest()


class _FitMemo:
    """Fitted weights of recent partition groups, by everything they are a function of.

    A group's fit is a pure function of the features and labels, the family, the run's shapes and blocks, the
    current rows, the round's partitions and its preconditioner. A run that repeats a round's inputs - the same
    data and seed with another τ, k or target, as the app's sliders make - takes the stored weights, which are
    bit-identical to refitting, instead of refitting. Bounded by bytes, least recently used out, thread-safe.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: OrderedDict[str, tuple] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()

    def get(self, key: str | None) -> tuple | None:
        if key is None:
            return None
        with self.lock:
            value = self.entries.get(key)
            if value is not None:
                self.entries.move_to_end(key)
            return value

    def put(self, key: str | None, value: tuple) -> None:
        size = sum(a.nbytes for a in value)
        if key is None or size > self.max_bytes:
            return
        for a in value:
            a.flags.writeable = False
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = value
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, old = self.entries.popitem(last=False)
                self.bytes -= sum(a.nbytes for a in old)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.bytes = 0


_MEMO = _FitMemo(MEMO_BYTES)


# ---------------------------------------------------------------------------------------------------------
# Layout: a batch of g models with parameters x of shape (g, K, d + 1) (weights, then the intercept). The
# features carry a last column holding the row mask, so one matrix product gives the logits with their
# intercepts, and one gives the gradient of weights and intercept together. Per-row quantities are (g, K, T):
# a reduction over the K classes is an element-wise operation across K rows of length T.


class _Batch:
    """The training data of g models and their objective: summed log-loss + 0.5·λ·||W||²."""

    def __init__(
        self, Xg: NDArray[np.float32], codes: NDArray[np.intp], mask: NDArray[np.float32], K: int, lam: float
    ) -> None:
        g, T, d1 = Xg.shape
        self.g, self.d, self.T, self.K = g, d1 - 1, T, K
        # both layouts: the forward product wants (d + 1, T) per model, the gradient (T, d + 1) (2-3x faster)
        self.Xg, self.XgT = Xg, np.ascontiguousarray(Xg.transpose(0, 2, 1))
        self.mask, self.lam = mask, np.float32(lam)
        if K == 1:
            self.y = (codes == 1).astype(np.float32) * mask
        else:  # flat positions of each row's true-class logit in a (g, K, T) array
            self.true = (np.arange(g)[:, None] * (K * T) + codes * T + np.arange(T)[None, :]).ravel()
            self.mask_flat = mask.ravel()

    def objective(self, x: NDArray[np.float32]) -> tuple[NDArray[np.float64], NDArray[np.float32]]:
        """Objective per model (float64) and the residual P - Y on the training rows, shape (g, K, T)."""
        Z = np.matmul(x, self.XgT)
        W = x[:, :, : self.d]
        penalty = (0.5 * self.lam) * np.einsum("gkd,gkd->g", W, W).astype(np.float64)
        if self.K == 1:  # binomial: log(1 + e^z) - y·z; residual σ(z) - y
            z = Z[:, 0]
            soft = np.logaddexp(np.float32(0.0), z)
            loss = soft - self.y * z
            loss *= self.mask
            z -= soft
            np.exp(z, out=z)
            z *= self.mask
            z -= self.y
            return loss.sum(axis=1, dtype=np.float64) + penalty, Z
        Z -= Z.max(axis=1)[:, None, :]
        flat = Z.reshape(-1)
        loss = flat[self.true].reshape(self.g, self.T)
        np.exp(Z, out=Z)
        total = Z.sum(axis=1)
        loss -= np.log(total)
        loss *= self.mask
        np.divide(self.mask, total, out=total)
        Z *= total[:, None, :]
        flat[self.true] -= self.mask_flat
        return penalty - loss.sum(axis=1, dtype=np.float64), Z

    def gradient(self, resid: NDArray[np.float32], x: NDArray[np.float32]) -> NDArray[np.float32]:
        """Gradient of the objective, shape (g, K, d + 1), from the residual at ``x``."""
        grad = np.matmul(resid, self.Xg)
        grad[:, :, : self.d] += self.lam * x[:, :, : self.d]
        return grad


def _dot(a: NDArray, b: NDArray) -> NDArray:
    return np.einsum("gp,gp->g", a, b)


def fit_logistic(
    Xg: NDArray[np.float32],
    codes: NDArray[np.intp],
    mask: NDArray[np.float32],
    K: int,
    H_inv: NDArray[np.float32],
    *,
    C: float = 1.0,
    tol: float = 1e-4,
    max_iter: int = 100,
) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.intp]]:
    """Fit g logistic regressions at once by preconditioned L-BFGS.

    Parameters
    ----------
    Xg : ndarray of float32, shape (g, T, d + 1)
        Each model's training rows (centred), zero-padded to a common length T, with a last column equal to
        ``mask`` (the intercept's feature).
    codes : ndarray of int, shape (g, T)
        Class codes of those rows (anything on padding).
    mask : ndarray of float32, shape (g, T)
        1 on training rows, 0 on padding.
    K : int
        1 for a binomial model (two classes), otherwise the number of classes.
    H_inv : ndarray of float32, shape (d + 1, d + 1)
        Initial inverse-Hessian approximation, shared by the models (weights, then the intercept).
    C, tol, max_iter
        See :class:`LogisticFamily`.

    Returns
    -------
    W : ndarray of float32, shape (g, d, K)
    b : ndarray of float32, shape (g, K)
    n_iter : ndarray of int, shape (g,)
        Iterations each model ran.

    Notes
    -----
    Every model iterates, searches its line and stops on its own; the models of a batch share only the
    matrix products. Starting from zero with ``H_inv`` the first step is a ridge regression on the labels.
    """
    batch = _Batch(Xg, codes, mask, K, 1.0 / C)
    g, d = batch.g, batch.d
    P = K * (d + 1)
    x = np.zeros(g * P, dtype=np.float32).reshape(g, P)  # flat per model; viewed as (g, K, d + 1)

    def view(v: NDArray) -> NDArray:
        return v.reshape(g, K, d + 1)

    def precondition(v: NDArray[np.float32]) -> NDArray[np.float32]:  # H_inv on every (model, class) row
        return (v.reshape(g * K, d + 1) @ H_inv).reshape(g, P)

    f, resid = batch.objective(view(x))
    grad = batch.gradient(resid, view(x)).reshape(g, P)
    limit = tol * mask.sum(axis=1)
    active = np.abs(grad).max(axis=1) > limit
    n_iter = np.zeros(g, dtype=np.intp)
    S = np.zeros((LBFGS_MEMORY, g, P), dtype=np.float32)  # correction pairs, a ring buffer
    Yc = np.zeros((LBFGS_MEMORY, g, P), dtype=np.float32)
    rho = np.zeros((LBFGS_MEMORY, g), dtype=np.float32)
    n_pairs = head = 0
    for _ in range(max_iter):
        if not active.any():
            break
        n_iter += active
        # two-loop recursion with H0 = γ·H_inv (γ = sᵀy / yᵀH_inv·y of the newest pair; 1 before there is one)
        q = grad.copy()
        newest_first = [(head - 1 - i) % LBFGS_MEMORY for i in range(n_pairs)]
        alphas = []
        for i in newest_first:
            a = rho[i] * _dot(S[i], q)
            alphas.append(a)
            q -= a[:, None] * Yc[i]
        r = precondition(q)
        if n_pairs:
            i = newest_first[0]
            r *= (_dot(S[i], Yc[i]) / np.maximum(_dot(Yc[i], precondition(Yc[i])), np.float32(1e-30)))[:, None]
        for i, a in zip(reversed(newest_first), reversed(alphas)):
            r += (a - rho[i] * _dot(Yc[i], r))[:, None] * S[i]
        np.negative(r, out=r)
        r[~active] = 0.0
        slope = _dot(grad, r)
        bad = active & (slope >= 0)  # not a descent direction (lost curvature): restart from H0
        if bad.any():
            r[bad] = -precondition(grad)[bad]
            slope = _dot(grad, r)
        # backtracking line search from the unit step (Armijo), per model
        trial = x + r
        f_try, resid_try = batch.objective(view(trial))
        todo = active & ~(f_try <= f + np.float32(1e-4) * slope)
        if not todo.any():
            x_new, f_new, resid_new = trial, f_try, resid_try
        else:
            take = ~todo
            x_new = np.where(take[:, None], trial, x)
            f_new = np.where(take, f_try, f)
            resid_new = np.where(take[:, None, None], resid_try, resid)
            step = np.ones(g, dtype=np.float32)
            for _ in range(MAX_BACKTRACKS):
                step[todo] *= np.float32(0.5)
                trial = x + step[:, None] * r
                f_try, resid_try = batch.objective(view(trial))
                ok = todo & (f_try <= f + np.float32(1e-4) * step * slope)
                x_new[ok], f_new[ok], resid_new[ok] = trial[ok], f_try[ok], resid_try[ok]
                todo &= ~ok
                if not todo.any():
                    break
            active &= ~todo  # no decrease found: this model is as good as float32 allows
        grad_new = batch.gradient(resid_new, view(x_new)).reshape(g, P)
        s, yv = S[head], Yc[head]
        np.subtract(x_new, x, out=s)
        np.subtract(grad_new, grad, out=yv)
        sy = _dot(s, yv)
        keep = sy > 1e-10 * np.sqrt(_dot(s, s) * _dot(yv, yv))
        s[~keep] = 0.0
        yv[~keep] = 0.0
        rho[head] = np.where(keep, 1.0 / np.where(keep, sy, 1.0), 0.0)
        head = (head + 1) % LBFGS_MEMORY
        n_pairs = min(n_pairs + 1, LBFGS_MEMORY)
        x, f, resid, grad = x_new, f_new, resid_new, grad_new
        active &= np.abs(grad).max(axis=1) > limit
    x = view(x)
    return x[:, :, :d].transpose(0, 2, 1), x[:, :, d], n_iter
