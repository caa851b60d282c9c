"""Batched preconditioned L-BFGS for logistic regression in PyTorch (:func:`.logistic.fit_logistic`, ported).

The same algorithm, step for step: 5 correction pairs (:data:`aflite_core.engine.logistic.LBFGS_MEMORY`), the shared
initial inverse Hessian ``H_inv`` scaled by γ = sᵀy / yᵀH_inv·y of the newest pair, a backtracking Armijo line
search from the unit step (at most :data:`aflite_core.engine.logistic.MAX_BACKTRACKS` halvings), and a model stops when
its largest gradient entry is at most ``tol`` times its number of training rows, or after ``max_iter`` iterations.
Every model iterates and stops on its own; the models of a batch share only the matrix products. Only the order
of floating-point sums differs from numpy, so converged models predict alike.
"""

from __future__ import annotations

from .logistic import LBFGS_MEMORY, MAX_BACKTRACKS

__all__ = ["fit_logistic_torch"]


class _TorchBatch:
    """The training data of g models and their objective: summed log-loss + 0.5·λ·||W||² (numpy ``_Batch``)."""

    def __init__(self, Xg, codes, mask, K: int, lam: float, d: int) -> None:
        g, T, _ = Xg.shape
        self.g, self.d, self.T, self.K = g, d, T, K
        self.Xg, self.mask, self.lam = Xg, mask, float(lam)
        self.evaluations = 0  # objective evaluations (each one batched product over the training rows)
        if K == 1:
            self.y = (codes == 1).float() * mask
        else:
            self.index = codes[:, None, :]  # (g, 1, T): each row's true class

    def objective(self, x):
        """Objective per model (float64) and the residual P - Y on the training rows, shape (g, K, T)."""
        import torch

        self.evaluations += 1
        Z = torch.matmul(x, self.Xg.transpose(1, 2))
        W = x[:, :, : self.d]
        penalty = (0.5 * self.lam) * (W * W).sum(dim=(1, 2)).double()
        if self.K == 1:
            z = Z[:, 0]
            soft = torch.logaddexp(torch.zeros_like(z), z)
            loss = (soft - self.y * z) * self.mask
            resid = torch.exp(z - soft) * self.mask - self.y
            return loss.sum(dim=1, dtype=torch.float64) + penalty, resid[:, None, :]
        Z = Z - Z.max(dim=1, keepdim=True).values
        true = Z.gather(1, self.index)[:, 0, :]
        E = torch.exp(Z)
        total = E.sum(dim=1)
        loss = (true - torch.log(total)) * self.mask
        E *= (self.mask / total)[:, None, :]
        E.scatter_(1, self.index, E.gather(1, self.index) - self.mask[:, None, :])
        return penalty - loss.sum(dim=1, dtype=torch.float64), E

    def gradient(self, resid, x):
        """Gradient of the objective, shape (g, K, width), from the residual at ``x``."""
        grad = resid @ self.Xg
        grad[:, :, : self.d] += self.lam * x[:, :, : self.d]
        return grad


def _dot(a, b):
    return (a * b).sum(dim=1)


def fit_logistic_torch(
    Xg,
    codes,
    mask,
    K: int,
    H_inv,
    *,
    C: float = 1.0,
    tol: float = 1e-4,
    max_iter: int = 100,
    stats=None,
    n_features: int | None = None,
):
    """Fit g logistic regressions at once by preconditioned L-BFGS on a torch device.

    Parameters
    ----------
    Xg : torch.Tensor of float32, shape (g, T, width)
        Each model's centred training rows, zero-padded to T: d feature columns, then a column equal to ``mask``,
        then ``width - d - 1`` zero columns (none by default). The zero columns only align the rows in memory:
        their weights start at zero, their gradient is zero and ``H_inv`` keeps them there, so the fit is that of
        the unpadded rows.
    codes : torch.Tensor of int64, shape (g, T)
        Class codes (anything on padding).
    mask : torch.Tensor of float32, shape (g, T)
        1 on training rows, 0 on padding.
    K : int
        1 for a binomial model (two classes), otherwise the number of classes.
    H_inv : torch.Tensor of float32, shape (width, width)
        Initial inverse-Hessian approximation shared by the models (zero in the padding's rows and columns).
    C, tol, max_iter
        See :class:`aflite_core.engine.logistic.LogisticFamily`.
    n_features : int, optional
        d; ``width - 1`` (no padding) when omitted.
    stats : dict, optional
        Receives ``"evaluations"``: the objective evaluations of the batch (one per iteration's trial step,
        one more per backtracking halving, one at the start) - what a fit costs beyond its iterations.

    Returns
    -------
    W : torch.Tensor of float32, shape (g, d, K)
    b : torch.Tensor of float32, shape (g, K)
    n_iter : torch.Tensor of int64, shape (g,)
    """
    import torch

    width = Xg.shape[2]
    d = width - 1 if n_features is None else int(n_features)
    batch = _TorchBatch(Xg, codes, mask, K, 1.0 / C, d)
    g = batch.g
    P = K * width
    dev = Xg.device
    x = torch.zeros((g, P), dtype=torch.float32, device=dev)

    def view(v):
        return v.reshape(g, K, width)

    def precondition(v):
        return (v.reshape(g * K, width) @ H_inv).reshape(g, P)

    f, resid = batch.objective(view(x))
    grad = batch.gradient(resid, view(x)).reshape(g, P)
    limit = tol * mask.sum(dim=1)
    active = grad.abs().amax(dim=1) > limit
    n_iter = torch.zeros(g, dtype=torch.int64, device=dev)
    S = torch.zeros((LBFGS_MEMORY, g, P), dtype=torch.float32, device=dev)
    Yc = torch.zeros((LBFGS_MEMORY, g, P), dtype=torch.float32, device=dev)
    rho = torch.zeros((LBFGS_MEMORY, g), dtype=torch.float32, device=dev)
    n_pairs = head = 0
    tiny = torch.tensor(1e-30, dtype=torch.float32, device=dev)
    for _ in range(max_iter):
        if not bool(active.any()):
            break
        n_iter += active.long()
        q = grad.clone()
        newest_first = [(head - 1 - i) % LBFGS_MEMORY for i in range(n_pairs)]
        alphas = []
        for i in newest_first:
            a = rho[i] * _dot(S[i], q)
            alphas.append(a)
            q -= a[:, None] * Yc[i]
        r = precondition(q)
        if n_pairs:
            i = newest_first[0]
            r *= (_dot(S[i], Yc[i]) / torch.maximum(_dot(Yc[i], precondition(Yc[i])), tiny))[:, None]
        for i, a in zip(reversed(newest_first), reversed(alphas)):
            r += (a - rho[i] * _dot(Yc[i], r))[:, None] * S[i]
        r = -r
        r[~active] = 0.0
        slope = _dot(grad, r)
        bad = active & (slope >= 0)
        if bool(bad.any()):
            r[bad] = -precondition(grad)[bad]
            slope = _dot(grad, r)
        trial = x + r
        f_try, resid_try = batch.objective(view(trial))
        todo = active & ~(f_try <= f + 1e-4 * slope.double())
        if not bool(todo.any()):
            x_new, f_new, resid_new = trial, f_try, resid_try
        else:
            take = ~todo
            x_new = torch.where(take[:, None], trial, x)
            f_new = torch.where(take, f_try, f)
            resid_new = torch.where(take[:, None, None], resid_try, resid)
            step = torch.ones(g, dtype=torch.float32, device=dev)
            for _ in range(MAX_BACKTRACKS):
                step[todo] *= 0.5
                trial = x + step[:, None] * r
                f_try, resid_try = batch.objective(view(trial))
                ok = todo & (f_try <= f + 1e-4 * (step * slope).double())
                x_new[ok], f_new[ok], resid_new[ok] = trial[ok], f_try[ok], resid_try[ok]
                todo &= ~ok
                if not bool(todo.any()):
                    break
            active &= ~todo
        grad_new = batch.gradient(resid_new, view(x_new)).reshape(g, P)
        s = x_new - x
        yv = grad_new - grad
        sy = _dot(s, yv)
        keep = sy > 1e-10 * torch.sqrt(_dot(s, s) * _dot(yv, yv))
        s[~keep] = 0.0
        yv[~keep] = 0.0
        S[head], Yc[head] = s, yv
        rho[head] = torch.where(keep, 1.0 / torch.where(keep, sy, torch.ones_like(sy)), torch.zeros_like(sy))
        head = (head + 1) % LBFGS_MEMORY
        n_pairs = min(n_pairs + 1, LBFGS_MEMORY)
        x, f, resid, grad = x_new, f_new, resid_new, grad_new
        active &= grad.abs().amax(dim=1) > limit
    if stats is not None:
        stats["evaluations"] = batch.evaluations
    x = view(x)
    return x[:, :, :d].transpose(1, 2), x[:, :, d], n_iter
