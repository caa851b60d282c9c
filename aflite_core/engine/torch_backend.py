"""The default family's fits and scoring on a PyTorch device (a GPU, or torch's CPU device for CI).

:func:`aflite_core.aflite` with ``device="cuda"`` (or ``"cuda:N"``, or ``"torch:cpu"``) runs the same loop
(:class:`aflite_core.engine.loop.Run`: partition plans, row selection, the stop rule, history, checkpoints) with a
:class:`TorchBackend`, whose family session is a :class:`TorchSession`:

* everything random is the numpy session's: the session is built by the family itself
  (:meth:`~aflite_core.engine.models.LinearFamily.session`, which draws the persistent blocks from the run's generator
  and fixes ``mode``, ``rows_per_block`` and the centring μ) and its ``draw_plan`` draws the partitions. The same
  seed therefore gives the same blocks and the same partitions as the numpy path; the numpy session never
  builds its shard Gram matrices here;
* on the device the session keeps X (or streams it from host memory, a memory-mapped X included, in row
  chunks when it is larger than ``max_device_bytes``), the block Gram matrices of ``[x - μ, 1, onehot(y)]``
  for the ridge classifier (downdated when rows leave), and the Gram matrix of ``[x - μ, 1]`` over the current
  set for logistic regression's preconditioner;
* the ridge systems are those of :func:`aflite_core.engine.ridge_solve.ridge_system`, solved directly in float64;
  logistic regression is :func:`aflite_core.engine.torch_logistic.fit_logistic_torch`, a port of the numpy batched
  L-BFGS with the same preconditioner, memory, tolerance and iteration limit;
* every current row is predicted by every model in chunked matrix products; the held-out mask comes from the
  plan, and the counts are those of :func:`aflite_core.engine.partitions.score_round`.

Chunk sizes are functions of the shapes only, never of where X lives, so a streamed run equals a resident one
bit for bit on the same device. ``precision="float32"`` (default) turns TF32 off and asks for deterministic
algorithms while the backend computes (two runs on one device are equal); ``"tf32"`` allows TF32 products.
torch is imported only here and in :mod:`aflite_core.engine.torch_devices` (the checks of ``device`` and
``precision``), and only when a torch device is asked for.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .local_backend import LocalBackend
from .partitions import PartitionPlan, RoundScores, open_session, report_step
from .torch_devices import check_family, torch_context

__all__ = ["TorchBackend", "TorchSession"]

#: bytes of the (rows × models·(C-1)) score matrix computed at once when predicting
SCORE_CHUNK_BYTES = 256 * 2**20
#: bytes of padded rows per batched Gram product (building and downdating block Grams, the total Gram)
GRAM_CHUNK_BYTES = 256 * 2**20
#: bytes of gathered training rows fitted together by logistic regression
FIT_GATHER_BYTES = 2 * 2**30
#: bytes of per-row class scores of a batch of logistic models (g · K · T floats, several live at once)
FIT_RESID_BYTES = 1 * 2**30
#: logistic regression's training rows are padded with zero columns to a width that is a multiple of this (8 floats,
#: 32 bytes): at d + 1 = 2,561 columns the batched TF32 products ran CUDA's older unaligned kernels
FIT_ROW_ALIGN = 8
#: share of the GPU's free memory the features may take when ``max_device_bytes`` is None
DEVICE_SHARE = 0.5


class TorchSession:
    """The default family bound to one run, computing on a torch device.

    Parameters
    ----------
    family : LinearFamily or LogisticFamily
        The family (its ``solver`` rule picks ridge or logistic regression as on the numpy path).
    X, codes, n_classes, train_size, n_partitions, rng
        As for :meth:`~aflite_core.engine.models.LinearFamily.session` (the same draws from ``rng``).
    device : str
        A torch device name (``"cpu"``, ``"cuda:0"`` …).
    max_device_bytes : int or None
        Features (X and the evaluation rows) larger than this stay in host memory and are streamed in row
        chunks; None: half the GPU's free memory (no limit on torch's CPU device).
    eval_X : ndarray, optional
        Evaluation features (scored by every model every round).
    """

    def __init__(
        self,
        family: Any,
        X,
        codes,
        n_classes: int,
        *,
        train_size: int,
        n_partitions: int,
        rng,
        device: str,
        max_device_bytes: int | None = None,
        eval_X=None,
        groups=None,
    ) -> None:
        import torch

        self.torch = torch
        self.base = open_session(
            family, X, codes, n_classes, train_size=train_size, n_partitions=n_partitions, rng=rng, groups=groups
        )
        self.family = family
        self.X, self.codes, self.eval_X = X, codes, eval_X
        self.n_classes, self.train_size, self.n_partitions = n_classes, train_size, n_partitions
        self.d = X.shape[1]
        self.D = self.d + 1 + n_classes
        self.mode, self.rows_per_block = self.base.mode, self.base.rows_per_block
        self.solver = getattr(self.base, "solver", "ridge")
        self.K = 1 if n_classes == 2 else n_classes
        self.device = torch.device(device)
        self.present = np.ones(X.shape[0], dtype=bool)
        self.on_step = None
        self.n_iter: list[int] = []  # L-BFGS iterations of the last round's fits (the longest per batch)
        self.n_evaluations: list[int] = []  # objective evaluations of the last round's fits, per batch
        self.fit_seconds = 0.0  # wall time of the last round's fits (device synchronised)
        feature_bytes = X.nbytes + (0 if eval_X is None else eval_X.nbytes)
        if max_device_bytes is None and self.device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(self.device)
            max_device_bytes = int(free * DEVICE_SHARE)
        self.streamed = max_device_bytes is not None and feature_bytes > max_device_bytes
        self.max_device_bytes = max_device_bytes
        self.mu = torch.as_tensor(np.asarray(self.base.mu, dtype=np.float32), device=self.device)
        self.codes_dev = torch.as_tensor(np.asarray(codes, dtype=np.int64), device=self.device)
        self.X_dev = None if self.streamed else self._upload(X)
        self.eval_dev = None if (self.streamed or eval_X is None) else self._upload(eval_X)
        self.stack = None  # block Grams (n_blocks, D, D) float32: the ridge classifier in blocks mode
        self.total = None  # Gram of [x - μ, 1] over the current set (d + 1, d + 1) float64: logistic regression

    # -- data on the device ---------------------------------------------------------------------------
    def _upload(self, A):
        """The whole array on the device (torch's CPU device shares the host memory, no copy)."""
        torch = self.torch
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # a read-only (memory-mapped) array is never written
            host = torch.from_numpy(np.ascontiguousarray(A, dtype=np.float32))
        if self.device.type == "cpu":
            return host
        out = torch.empty(host.shape, dtype=torch.float32, device=self.device)
        step = max(1, GRAM_CHUNK_BYTES // (4 * max(1, A.shape[1])))
        for start in range(0, A.shape[0], step):
            out[start : start + step].copy_(host[start : start + step])
        return out

    def _index(self, rows: NDArray[np.intp]):
        """Row indices on the device (one host-to-device copy; reuse it for features and labels)."""
        return self.torch.as_tensor(rows, device=self.device)

    def _rows(self, rows: NDArray[np.intp], evaluation: bool = False, index=None):
        """Features of ``rows`` (sorted indices) on the device: gathered there, or streamed from the host.

        ``index``: the same rows already on the device (saves a copy when X is resident).
        """
        resident = self.eval_dev if evaluation else self.X_dev
        if resident is not None:
            return resident[self._index(rows) if index is None else index]
        torch = self.torch
        src = self.eval_X if evaluation else self.X
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            host = torch.from_numpy(np.ascontiguousarray(src[rows], dtype=np.float32))
        return host.to(self.device, non_blocking=False)

    def _z(self, rows: NDArray[np.intp], with_labels: bool = True):
        """``[x - μ, 1, onehot(y)]`` (or ``[x - μ, 1]``) for ``rows``, on the device."""
        torch = self.torch
        d = self.d
        width = self.D if with_labels else d + 1
        Z = torch.zeros((len(rows), width), dtype=torch.float32, device=self.device)
        idx = self._index(rows)
        Z[:, :d] = self._rows(rows, index=idx) - self.mu
        Z[:, d] = 1.0
        if with_labels:
            Z[torch.arange(len(rows), device=self.device), d + 1 + self.codes_dev[idx]] = 1.0
        return Z

    def _grams_by_group(self, rows: NDArray[np.intp], groups: NDArray[np.intp], n_groups: int, with_labels: bool):
        """ZᵀZ of each group's rows, (n_groups, W, W) float32: padded batched products in bounded chunks."""
        torch = self.torch
        width = self.D if with_labels else self.d + 1
        out = torch.zeros((n_groups, width, width), dtype=torch.float32, device=self.device)
        if len(rows) == 0:
            return out
        order = np.lexsort((rows, groups))
        rows, groups = rows[order], groups[order]
        counts = np.bincount(groups, minlength=n_groups)
        starts = np.concatenate([[0], np.cumsum(counts)])
        longest = int(counts.max())
        per = max(1, GRAM_CHUNK_BYTES // (4 * width * longest))
        present = np.flatnonzero(counts)
        for c0 in range(0, len(present), per):
            ids = present[c0 : c0 + per]
            sel = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in ids])
            local = np.repeat(np.arange(len(ids)), counts[ids])
            rank = sel - np.repeat(starts[ids], counts[ids])
            Z = self._z(rows[sel], with_labels)
            pad = torch.zeros((len(ids), longest, width), dtype=torch.float32, device=self.device)
            pad[torch.as_tensor(local, device=self.device), torch.as_tensor(rank, device=self.device)] = Z
            out[torch.as_tensor(ids, device=self.device)] = pad.transpose(1, 2) @ pad
        return out

    def _total_of(self, rows: NDArray[np.intp]):
        """Gram of ``[x - μ, 1]`` over ``rows`` in float64 (float32 products of fixed chunks, summed in float64)."""
        torch = self.torch
        d1 = self.d + 1
        total = torch.zeros((d1, d1), dtype=torch.float64, device=self.device)
        step = max(1, GRAM_CHUNK_BYTES // (4 * d1))
        for start in range(0, len(rows), step):
            Z = self._z(rows[start : start + step], with_labels=False)
            total += (Z.T @ Z).double()
        return total

    # -- FamilySession --------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Build the Gram statistics from all rows (before any removal, so a resume replays the same steps)."""
        rows = np.arange(self.X.shape[0])
        if self.solver == "logistic":
            self.total = self._total_of(rows)
        elif self.mode == "blocks":
            self.stack = self._grams_by_group(rows, self.base.block_of_row, len(self.base.block_sizes), True)

    def draw_plan(self, rows: NDArray[np.intp], rng) -> PartitionPlan:
        """The numpy session's partitions (same draws from ``rng``)."""
        return self.base.draw_plan(rows, rng)

    def remove(self, rows: NDArray[np.intp]) -> None:
        """Forget removed rows: block sizes, the rows present, and their share of the Gram statistics."""
        rows = np.sort(np.asarray(rows, dtype=np.intp))
        self.base.forget(rows)
        self.present[rows] = False
        if len(rows) == 0:
            return
        if self.total is not None:
            self.total -= self._total_of(rows)
        if self.stack is not None:
            blocks = self.base.block_of_row[rows]
            hit = np.unique(blocks)
            local = np.searchsorted(hit, blocks)
            grams = self._grams_by_group(rows, local, len(hit), True)
            self.stack[self.torch.as_tensor(hit, device=self.device)] -= grams

    def _training_rows(self, rows: NDArray[np.intp], plan: PartitionPlan):
        if self.mode == "blocks":
            current = np.flatnonzero(self.present)
            if len(current) != len(rows):
                raise RuntimeError("The torch session's view of the current set is out of date.")
            block = self.base.block_of_row[current]
            return lambda j: current[plan.membership[j, block]]
        return lambda j: rows[plan.membership[j]]

    def fit(self, rows: NDArray[np.intp], plan: PartitionPlan, partitions: Sequence[int]):
        """Weights (d, C-1, m) and biases (C-1, m) of the partitions' models, float32 on the device."""
        torch = self.torch
        parts = np.asarray(list(partitions), dtype=np.intp)
        d, C = self.d, self.n_classes
        W = torch.empty((d, C - 1, len(parts)), dtype=torch.float32, device=self.device)
        b = torch.empty((C - 1, len(parts)), dtype=torch.float32, device=self.device)
        if self.solver == "logistic":
            self._fit_logistic(rows, plan, parts, W, b)
        else:
            self._fit_ridge(rows, plan, parts, W, b)
        return W, b

    def _fold(self, Wg, bg, W, b, g0: int) -> None:
        """Store models fitted on x - μ as score differences to class 0 with the centring folded into b."""
        if Wg.shape[2] > 1:  # ridge (C columns) or multinomial; a binomial model has one
            Wdiff, bdiff = Wg[:, :, 1:] - Wg[:, :, :1], bg[:, 1:] - bg[:, :1]
        else:
            Wdiff, bdiff = Wg, bg
        bdiff = bdiff - self.torch.einsum("d,gdc->gc", self.mu.double(), Wdiff)
        n = Wg.shape[0]
        W[:, :, g0 : g0 + n] = Wdiff.permute(1, 2, 0).float()
        b[:, g0 : g0 + n] = bdiff.T.float()

    def _fit_ridge(self, rows, plan, parts, W, b) -> None:
        torch = self.torch
        if self.mode == "blocks" and self.stack is None:
            self.prepare()
        group = max(1, min(len(parts), GRAM_CHUNK_BYTES // (8 * self.D * self.D)))
        train = self._training_rows(rows, plan)
        for g0 in range(0, len(parts), group):
            report_step(self, "fit", g0, len(parts))
            ids = parts[g0 : g0 + group]
            if self.mode == "blocks":
                member = torch.as_tensor(plan.membership[ids], device=self.device).float()
                P = (member @ self.stack.reshape(self.stack.shape[0], -1)).reshape(len(ids), self.D, self.D)
            else:
                lists = [train(j) for j in ids]
                P = self._grams_by_group(
                    np.concatenate(lists), np.repeat(np.arange(len(ids)), [len(r) for r in lists]), len(ids), True
                )
            Wg, bg = self._solve_ridge(P)
            self._fold(Wg, bg, W, b, g0)
            del P
        report_step(self, "fit", len(parts), len(parts))

    def _solve_ridge(self, P):
        """:func:`aflite_core.engine.ridge_solve.ridge_system` on the device, then direct float64 solves."""
        torch = self.torch
        d = self.d
        s = P[:, :d, d].double()
        n = P[:, d, d].double().clamp_min(1.0)
        ysum = P[:, d, d + 1 :].double()
        rhs = P[:, :d, d + 1 :].double() - s[:, :, None] * (ysum / n[:, None])[:, None, :]
        A = P[:, :d, :d] - (s[:, :, None] * (s / n[:, None])[:, None, :]).float()  # centring in float32, as numpy
        A = A.double()
        trace = torch.diagonal(A, dim1=1, dim2=2).sum(dim=1) / d
        lam = self.family.alpha * torch.where(trace > 0, trace, torch.ones_like(trace))
        A = A + lam[:, None, None] * torch.eye(d, dtype=torch.float64, device=self.device)
        L, info = torch.linalg.cholesky_ex(A)
        w = torch.cholesky_solve(rhs, L)
        bad = info != 0
        if bool(bad.any()):
            w[bad] = torch.linalg.lstsq(A[bad].cpu(), rhs[bad].cpu()).solution.to(self.device)
        bias = (ysum - torch.einsum("gd,gdc->gc", s, w)) / n[:, None]
        return w, bias

    def _precond(self, n_rows: int):
        """Inverse of κ·(t/n)·[x, 1]ᵀ[x, 1] + diag(1/C, …, 1/C, 0) over the current set (float32)."""
        torch = self.torch
        if self.total is None:
            self.prepare()
        d = self.d
        kappa = 0.25 if self.K == 1 else 1.0 / self.K
        H = self.total * (kappa * self.train_size / max(n_rows, 1))
        idx = torch.arange(d, device=self.device)
        H[idx, idx] += 1.0 / self.family.C
        H_inv, info = torch.linalg.inv_ex(H)
        if int(info) != 0:
            H_inv = torch.linalg.pinv(H)
        return H_inv.float()

    def _fit_logistic(self, rows, plan, parts, W, b) -> None:
        from .torch_logistic import fit_logistic_torch

        torch = self.torch
        d, K = self.d, self.K
        train = self._training_rows(rows, plan)
        if self.mode == "blocks":
            sizes = plan.membership.astype(np.int64) @ self.base.block_sizes
        else:
            sizes = plan.membership.sum(axis=1)
        longest = int(sizes.max())
        width = -(-(d + 1) // FIT_ROW_ALIGN) * FIT_ROW_ALIGN  # zero columns after the bias column align the rows
        H_inv = torch.zeros((width, width), dtype=torch.float32, device=self.device)
        H_inv[: d + 1, : d + 1] = self._precond(len(rows))
        group = int(
            max(1, min(len(parts), FIT_GATHER_BYTES // (4 * longest * width), FIT_RESID_BYTES // (4 * K * longest)))
        )
        fam = self.family
        self.n_iter, self.n_evaluations = [], []
        for g0 in range(0, len(parts), group):
            report_step(self, "fit", g0, len(parts))
            ids = parts[g0 : g0 + group]
            Xg = torch.zeros((len(ids), longest, width), dtype=torch.float32, device=self.device)
            codes = torch.zeros((len(ids), longest), dtype=torch.int64, device=self.device)
            mask = torch.zeros((len(ids), longest), dtype=torch.float32, device=self.device)
            lists = [train(j) for j in ids]
            index = self._index(np.concatenate(lists))  # one copy to the device per group
            offset = 0
            for i, tr in enumerate(lists):
                idx = index[offset : offset + len(tr)]
                offset += len(tr)
                Xg[i, : len(tr), :d] = self._rows(tr, index=idx) - self.mu
                Xg[i, : len(tr), d] = 1.0
                codes[i, : len(tr)] = self.codes_dev[idx]
                mask[i, : len(tr)] = 1.0
            stats: dict = {}
            Wg, bg, n_iter = fit_logistic_torch(
                Xg, codes, mask, K, H_inv, C=fam.C, tol=fam.tol, max_iter=fam.max_iter, stats=stats, n_features=d
            )
            self.n_iter.append(int(n_iter.max()))
            self.n_evaluations.append(int(stats["evaluations"]))
            del Xg
            self._fold(Wg.double(), bg.double(), W, b, g0)
        report_step(self, "fit", len(parts), len(parts))

    # -- scoring ----------------------------------------------------------------------------------------
    def _votes(self, preds, held):
        """Held-out predictions per row and class, (rows, C) int32 (:func:`.partitions.count_votes`).

        A few classes: one comparison per class. Many classes (a loop of C small kernels per chunk took most of
        a 1,000-class round): one ``bincount`` of row·C + class over the held-out predictions - integer counts,
        exact and the same in any order.
        """
        torch = self.torch
        C = self.n_classes
        if C <= 32:
            return torch.stack([((preds == c) & held).sum(dim=1, dtype=torch.int32) for c in range(C)], dim=1)
        flat = torch.arange(len(preds), device=preds.device)[:, None] * C + preds
        counts = torch.bincount(flat[held], minlength=len(preds) * C)
        return counts.reshape(len(preds), C).to(torch.int32)

    def _chunk_rows(self) -> int:
        return int(max(256, SCORE_CHUNK_BYTES // (4 * max(1, (self.n_classes - 1) * self.n_partitions))))

    def _predict(self, W, b, Xc):
        """Class codes (rows, m) predicted by every model; ties go to the lower class, as the numpy path."""
        C, m = self.n_classes, W.shape[2]
        scores = Xc @ W.reshape(W.shape[0], -1)
        scores += b.reshape(-1)
        scores = scores.reshape(len(Xc), C - 1, m)
        if C == 2:
            return (scores[:, 0, :] > 0).long()
        best, idx = scores.max(dim=1)
        return self.torch.where(best > 0, idx + 1, self.torch.zeros_like(idx))

    def score_round(
        self, rows, plan: PartitionPlan, rng, *, eval_rows=None, eval_codes=None, on_step=None, votes: bool = False
    ) -> RoundScores:
        """Fit the m models, count correct out-of-sample predictions (and votes per class): as ``score_round``."""
        torch = self.torch
        m = plan.n_partitions
        self.on_step = on_step
        try:
            report_step(self, "fit", 0, m)
            started = time.perf_counter()
            W, b = self.fit(rows, plan, range(m))
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            self.fit_seconds = time.perf_counter() - started
            member = torch.as_tensor(plan.membership, device=self.device)
            block_of = torch.as_tensor(plan.block_of.astype(np.int64), device=self.device)
            n = len(rows)
            correct = torch.zeros(n, dtype=torch.int32, device=self.device)
            n_pred = torch.zeros(n, dtype=torch.int32, device=self.device)
            model_correct = torch.zeros(m, dtype=torch.int64, device=self.device)
            model_total = torch.zeros(m, dtype=torch.int64, device=self.device)
            vote = torch.zeros((n, self.n_classes), dtype=torch.int32, device=self.device) if votes else None
            step = self._chunk_rows()
            index = self._index(rows)
            n_eval = 0 if eval_rows is None else len(eval_rows)
            total_steps = math.ceil(n / step) + math.ceil(n_eval / step)
            done = 0
            for start in range(0, n, step):
                report_step(self, "predict", done, total_steps)
                done += 1
                sl = slice(start, min(start + step, n))
                r = rows[sl]
                preds = self._predict(W, b, self._rows(r, index=index[sl]))
                held = ~member[:, block_of[sl]].T
                right = (preds == self.codes_dev[index[sl]][:, None]) & held
                correct[sl] = right.sum(dim=1, dtype=torch.int32)
                n_pred[sl] = held.sum(dim=1, dtype=torch.int32)
                if vote is not None:
                    vote[sl] = self._votes(preds, held)
                model_correct += right.sum(dim=0)
                model_total += held.sum(dim=0)
            eval_correct = None
            if eval_rows is not None:
                eval_correct = np.zeros(n_eval, dtype=np.int32)
                ecodes = torch.as_tensor(np.asarray(eval_codes, dtype=np.int64), device=self.device)
                eval_index = self._index(eval_rows)
                for start in range(0, n_eval, step):
                    report_step(self, "predict", done, total_steps)
                    done += 1
                    r = eval_rows[start : start + step]
                    idx = eval_index[start : start + step]
                    preds = self._predict(W, b, self._rows(r, evaluation=True, index=idx))
                    hit = preds == ecodes[idx][:, None]
                    eval_correct[start : start + len(r)] = hit.sum(dim=1, dtype=torch.int32).cpu().numpy()
            report_step(self, "predict", total_steps, total_steps)
        finally:
            self.on_step = None
        counts = [t.cpu().numpy() for t in (correct, n_pred, model_correct, model_total)]
        return RoundScores(*counts, eval_correct, None if vote is None else vote.cpu().numpy())


class TorchBackend(LocalBackend):
    """Run every round in this process on a torch device (see the module docstring).

    Parameters
    ----------
    device : str
        A torch device name (``"cpu"`` for torch's CPU device, ``"cuda:0"`` …), as :func:`check_device` returns.
    precision : {"float32", "tf32"}
        Float32 products with deterministic algorithms, or TF32 products allowed.
    max_device_bytes : int or None
        See :class:`TorchSession`.
    """

    def __init__(self, device: str, precision: str = "float32", max_device_bytes: int | None = None) -> None:
        self.device, self.precision, self.max_device_bytes = device, precision, max_device_bytes

    @property
    def device_name(self) -> str:
        """The ``device`` as the user names it (``"torch:cpu"``, ``"cuda:0"`` …)."""
        return "torch:cpu" if self.device == "cpu" else self.device

    def open(
        self, X, codes, n_classes, family, *, train_size, n_partitions, rng, eval_X=None, eval_codes=None, groups=None
    ) -> None:
        """Create the torch session (the family's own draws from ``rng`` first; ``groups``: whole groups)."""
        check_family(family, "aflite")
        self.X, self.codes = X, codes
        self.eval_X, self.eval_codes = eval_X, eval_codes
        with torch_context(self.precision):
            self.session = TorchSession(
                family,
                X,
                codes,
                n_classes,
                train_size=train_size,
                n_partitions=n_partitions,
                rng=rng,
                device=self.device,
                max_device_bytes=self.max_device_bytes,
                eval_X=eval_X,
                groups=groups,
            )
            self.session.prepare()
        self.mode = self.session.mode
        self.rows_per_block = int(self.session.rows_per_block)

    def score(self, rows, plan, rng, eval_rows, round_no) -> RoundScores:
        """One round on the device."""
        with torch_context(self.precision):
            return self.session.score_round(
                rows,
                plan,
                rng,
                eval_rows=eval_rows if self.eval_X is not None else None,
                eval_codes=self.eval_codes,
                on_step=self.on_step,
                votes=self.record_votes,
            )

    def remove(self, rows, round_no) -> None:
        """Forget removed rows (downdates the Gram statistics on the device)."""
        with torch_context(self.precision):
            self.session.remove(rows)

    def close(self) -> None:
        """Release the device memory held by the session."""
        session = getattr(self, "session", None)
        if session is not None:
            session.X_dev = session.eval_dev = session.stack = session.total = None
