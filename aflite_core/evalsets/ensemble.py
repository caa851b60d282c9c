"""An ensemble of adversaries (Phang et al. §7): one AFLite run over several representations.

The m models of a round are pooled over the representations, so a row must be predictable from all of them
together to be removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from ..engine.filtering import _check_run_args, _resolve, check_tie_break
from ..engine.partitions import RoundScores
from ..engine.registry import resolve_model
from ..engine.result import AFLiteResult, RoundProgress, StepProgress

__all__ = ["EnsembleResult", "ensemble_aflite", "ensemble_name"]


def ensemble_name(members: Sequence[str]) -> str:
    """Name of the ensemble adversary, e.g. ``"ensemble(pca+mlp)"``.

    Parameters
    ----------
    members : sequence of str
        Adversary names, in order.

    Returns
    -------
    str
    """
    return "ensemble(" + "+".join(members) + ")"


@dataclass(eq=False)
class EnsembleResult:
    """An AFLite run whose predictability pools several adversaries, with each member's share of it.

    Attributes
    ----------
    result : AFLiteResult
        The run, exactly as :func:`aflite_core.aflite` records one (``params["adversaries"]`` lists the
        members; ``scores`` hold the pooled predictability).
    members : tuple of str
        Adversary (representation) names.
    member_scores : dict of str to ndarray of float32, shape (rounds, N)
        Each member's own predictability of the training rows per round (NaN where not scored).
    member_n_predictions : dict of str to ndarray of int32, shape (rounds, N)
        Each member's out-of-sample predictions per row and round. The pooled score is
        ``sum(score · n) / sum(n)`` over members.
    member_eval_scores : dict of str to ndarray of float32, shape (rounds, n_eval), or None
        Each member's predictability of the evaluation rows (all its m models predict every remaining row,
        so the pooled evaluation score is the mean of the members').
    """

    result: AFLiteResult
    members: tuple[str, ...]
    member_scores: dict[str, NDArray[np.float32]]
    member_n_predictions: dict[str, NDArray[np.int32]]
    member_eval_scores: dict[str, NDArray[np.float32]] | None = None

    @property
    def name(self) -> str:
        """``"ensemble(a+b+...)"``."""
        return ensemble_name(self.members)

    def __repr__(self) -> str:
        return f"EnsembleResult(name={self.name!r}, result={self.result!r})"


def _check_mapping(
    X: Any,
    name: str,
    func: str,
    *,
    n_rows: int | None = None,
    n_cols: Mapping[str, int] | None = None,
    keys: Sequence[str] | None = None,
) -> dict[str, NDArray[np.float32]]:
    """A mapping name → 2-D float32 matrix, all with the same number of rows."""
    if not isinstance(X, Mapping) or not X:
        raise v.param_error(
            name,
            func,
            "a non-empty mapping from representation names to feature matrices",
            X,
            TypeError if not isinstance(X, Mapping) else ValueError,
        )
    out: dict[str, NDArray[np.float32]] = {}
    wanted = list(X) if keys is None else list(keys)
    for key in wanted:
        if not isinstance(key, str) or not key:
            raise v.param_error(name, func, "a mapping with non-empty str keys", key, TypeError)
        if key not in X:
            raise ValueError(
                f"The '{name}' parameter of {func} must hold the representation {key!r} too (it has "
                f"{sorted(map(str, X))}). Got no {key!r} instead."
            )
        M = v.check_features(X[key], f"{name}[{key!r}]", func, n_cols=None if n_cols is None else n_cols[key])
        if n_rows is None:
            n_rows = M.shape[0]
        elif M.shape[0] != n_rows:
            raise ValueError(
                f"The '{name}' parameter of {func} must hold matrices with the same rows ({n_rows}). "
                f"Got {M.shape[0]} rows in {key!r} instead."
            )
        out[key] = M
    return out


class _EnsembleBackend:
    """An engine backend that scores every round with several adversaries and pools their counts.

    Each member is an ordinary :class:`~aflite_core.engine.local_backend.LocalBackend` on its own representation;
    a round's "plan" is the list of the members' plans. The run's ``n_partitions`` is ``m × n_members`` (so the engine's
    evaluation score ``eval_correct / n_partitions`` is the pooled share), while each member fits m models.
    """

    def __init__(
        self,
        names: Sequence[str],
        Xs: Mapping[str, NDArray[np.float32]],
        EXs: Mapping[str, NDArray[np.float32]] | None,
        m: int,
    ) -> None:
        self.names = tuple(names)
        self.Xs, self.EXs, self.m = Xs, EXs, m
        self.members: list[Any] = []
        self.member_scores: dict[str, list[NDArray]] = {a: [] for a in self.names}
        self.member_counts: dict[str, list[NDArray]] = {a: [] for a in self.names}
        self.member_eval: dict[str, list[NDArray]] = {a: [] for a in self.names}
        self.mode = "exact"
        self.rows_per_block = 1
        #: ``on_step(phase, done, total)`` inside a round, set by the engine's run (each member reports to it)
        self.on_step: Callable[[str, int, int], bool | None] | None = None

    def open(self, X, codes, n_classes, family, *, train_size, n_partitions, rng, eval_X=None, eval_codes=None) -> None:
        """Open one local backend per member, in order (each draws its per-run randomness from ``rng``)."""
        from ..engine.local_backend import LocalBackend

        self.N = X.shape[0]
        self.n_eval = 0 if eval_X is None else eval_X.shape[0]
        self.members = []
        for a in self.names:
            b = LocalBackend()
            b.open(
                self.Xs[a],
                codes,
                n_classes,
                family,
                train_size=train_size,
                n_partitions=self.m,
                rng=rng,
                eval_X=None if self.EXs is None else self.EXs[a],
                eval_codes=eval_codes,
            )
            self.members.append(b)
        self.mode = self.members[0].mode
        self.rows_per_block = self.members[0].rows_per_block

    def draw_plan(self, rows, rng) -> list:
        """One plan per member (each its own m random partitions of the same rows)."""
        return [b.draw_plan(rows, rng) for b in self.members]

    def score(self, rows, plan, rng, eval_rows, round_no) -> RoundScores:
        """Score with every member and add the counts (pooled predictability = Σ correct / Σ predictions)."""
        n = len(rows)
        correct = np.zeros(n, dtype=np.int32)
        n_pred = np.zeros(n, dtype=np.int32)
        eval_correct = None if eval_rows is None else np.zeros(len(eval_rows), dtype=np.int32)
        model_correct, model_total = [], []
        for i, (a, b, pl) in enumerate(zip(self.names, self.members, plan)):
            b.on_step = None if self.on_step is None else self._member_step(i)
            try:
                rs = b.score(rows, pl, rng, eval_rows, round_no)
            finally:
                b.on_step = None
            correct += rs.correct
            n_pred += rs.n_predictions
            model_correct.append(rs.model_correct)
            model_total.append(rs.model_total)
            row = np.full(self.N, np.nan, dtype=np.float32)
            row[rows] = np.where(rs.n_predictions > 0, rs.predictability, np.nan)
            self.member_scores[a].append(row)
            cnt = np.zeros(self.N, dtype=np.int32)
            cnt[rows] = rs.n_predictions
            self.member_counts[a].append(cnt)
            if eval_correct is not None:
                eval_correct += rs.eval_correct
                erow = np.full(self.n_eval, np.nan, dtype=np.float32)
                erow[eval_rows] = (rs.eval_correct / self.m).astype(np.float32)
                self.member_eval[a].append(erow)
        return RoundScores(correct, n_pred, np.concatenate(model_correct), np.concatenate(model_total), eval_correct)

    def _member_step(self, i: int) -> Callable[[str, int, int], bool | None]:
        """Member i's steps as steps of the whole round: each member is one share of both phases."""
        outer, A = self.on_step, len(self.members)

        def step(phase: str, done: int, total: int) -> bool | None:
            return outer(phase, i * total + done, A * total) if outer is not None else None

        return step

    def remove(self, rows, round_no) -> None:
        """Every member forgets the removed rows (the same S for all)."""
        for b in self.members:
            b.remove(rows, round_no)

    def close(self) -> None:
        """Close the members."""
        for b in self.members:
            b.close()


def ensemble_aflite(
    X: Mapping[str, ArrayLike],
    y: ArrayLike,
    *,
    target_size: int | float,
    n_partitions: int = 64,
    train_size: int | float,
    slice_size: int,
    tau: float = 0.75,
    model: Any = "linear",
    eval_X: Mapping[str, ArrayLike] | None = None,
    eval_y: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
    callback: Callable[[RoundProgress], bool | None] | None = None,
    ids: ArrayLike | None = None,
    eval_ids: ArrayLike | None = None,
    n_threads: int | None = 1,
    on_step: Callable[[StepProgress], bool | None] | None = None,
    tie_break: str = "position",
) -> EnsembleResult:
    """AFLite with an ensemble of adversaries: a row's predictability pools every adversary's partition models.

    Each round, every adversary (representation) draws its own m partitions of the *same* current set S and
    scores it with :func:`aflite_core.engine.partitions.score_round`. A training row's predictability is the sum of
    its correct out-of-sample predictions over all adversaries divided by the sum of its predictions; an
    evaluation row's is its correct predictions over all ``m × n_adversaries`` models. The loop is the
    engine's (:class:`aflite_core.engine.loop.Run`, strategy B, greedy slicing): up to ``slice_size`` training rows
    with the highest p ≥ ``tau`` leave (seeded tie-break, see ``tie_break``; never below ``target_size``), every
    evaluation row with p ≥ ``tau`` leaves, and the run stops when S reached the target or fewer than
    ``slice_size`` rows qualified. Evaluation rows are never used for fitting and never change which training rows
    are removed.

    Parameters
    ----------
    X : mapping of str to array-like of shape (n_samples, d_a)
        The adversaries' representations Φ_a(X) of the training rows, in order.
    y : array-like of shape (n_samples,)
        Training labels.
    target_size, n_partitions, train_size, slice_size, tau, model
        As in :func:`aflite_core.aflite` (n, m per adversary, t, k, τ, the model family).
    eval_X : mapping of str to array-like of shape (n_eval, d_a), optional
        The same representations of the evaluation rows (every key of ``X``).
    eval_y : array-like of shape (n_eval,), optional
        Evaluation labels.
    random_state : int, numpy Generator or None
        The one seed. With a single adversary the run equals ``aflite(...)`` with the same seed.
    callback : callable, optional
        Called after every round with a :class:`~aflite_core.engine.result.RoundProgress`; ``False`` stops.
    ids, eval_ids : array-like, optional
        Row ids carried into the result.
    n_threads : int or None, default=1
        BLAS threads.
    on_step : callable, optional
        Called inside every round, after each group of partition fits and each block of predictions of every
        member, with a :class:`~aflite_core.engine.result.StepProgress` (``done`` / ``total`` over all members);
        ``False`` abandons the round and ends the run with the rounds completed so far, as in
        :func:`aflite_core.aflite`.
    tie_break : {"position", "row"}, default="position"
        How rows of equal pooled p are ordered for removal, as in :func:`aflite_core.aflite` (the engine's
        :func:`aflite_core.engine.row_selection.select_rows` makes the selection); recorded in ``params["tie_break"]``.

    Returns
    -------
    EnsembleResult
        The pooled run (an :class:`~aflite_core.engine.result.AFLiteResult` whose ``params["n_partitions"]`` is m per
        adversary and ``params["adversaries"]`` the members) and each member's per-round scores.

    Notes
    -----
    The paper (§7) suggests ensembling "a diverse set of adversary models when running AFLite". Pooling the
    counts weighs every adversary by the predictions it made, so a row must be predictable to the ensemble
    as a whole: one adversary that finds a row trivial cannot remove it alone. The run's features (hashed in
    ``provenance``) are the members' matrices side by side.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core.evalsets import ensemble_aflite
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> A = rng.normal(size=(400, 4)); A[:150, 0] += 3 * (2 * y[:150] - 1)
    >>> B = rng.normal(size=(400, 4)); B[100:250, 1] += 3 * (2 * y[100:250] - 1)
    >>> ens = ensemble_aflite({"a": A, "b": B}, y, target_size=200, train_size=100, slice_size=40,
    ...                       random_state=0)
    >>> ens.name, ens.result.n_kept >= 200
    ('ensemble(a+b)', True)
    """
    func = "ensemble_aflite"
    Xs = _check_mapping(X, "X", func)
    names = tuple(Xs)
    if (eval_X is None) != (eval_y is None):
        raise ValueError(
            f"The 'eval_X' and 'eval_y' parameters of {func} must be given together. "
            f"Got {'eval_X' if eval_y is None else 'eval_y'} alone instead."
        )
    EXs = None
    if eval_X is not None:
        EXs = _check_mapping(eval_X, "eval_X", func, keys=names, n_cols={k: M.shape[1] for k, M in Xs.items()})
    r = _resolve(
        Xs[names[0]],
        y,
        func=func,
        target_size=target_size,
        n_partitions=n_partitions,
        train_size=train_size,
        slice_size=slice_size,
        tau=tau,
        strategy="slice",
        eval_X=None if EXs is None else EXs[names[0]],
        eval_y=eval_y,
        ids=ids,
        eval_ids=eval_ids,
    )
    family = resolve_model(model, func)
    n_threads, seed = _check_run_args(callback, n_threads, random_state, func, on_step)
    tie_break = check_tie_break(tie_break, func)
    from ..engine.loop import Run, RunConfig

    labels = r["labels"]
    m, A = r["m"], len(names)
    backend = _EnsembleBackend(names, Xs, EXs, m)
    config = RunConfig(
        target_size=r["n_target"],
        train_size=r["t"],
        slice_size=r["k"],
        n_partitions=m * A,
        tau=r["tau"],
        strategy="slice",
        seed=seed,
        n_threads=n_threads,
    )
    wide = Xs[names[0]] if A == 1 else np.hstack([Xs[a] for a in names])
    wide_eval = None if EXs is None else (EXs[names[0]] if A == 1 else np.hstack([EXs[a] for a in names]))
    extra = _recorded_params(names, Xs, m, target_size, train_size)
    run = Run(
        X=wide,
        codes=labels.codes,
        classes=labels.classes,
        config=config,
        family=family,
        backend=backend,
        callback=callback,
        on_step=on_step,
        eval_X=wide_eval,
        eval_codes=r.get("eval_codes"),
        ids=r["ids"],
        eval_ids=r["eval_ids"],
        extra_state={"params": extra},
        tie_break=tie_break,
    )
    result = run.execute()
    n_eval = None if EXs is None else len(r["eval_codes"])
    return _ensemble_result(result, backend, names, len(labels.codes), n_eval)


def _recorded_params(
    names: tuple[str, ...], Xs: dict[str, NDArray], m: int, target_size: Any, train_size: Any
) -> dict[str, Any]:
    """What the run records beyond its config: the sizes as given and, for several adversaries, the pooling."""
    extra: dict[str, Any] = {"target_size_given": target_size, "train_size_given": train_size}
    if len(names) > 1:
        extra.update(
            {
                "n_partitions": m,
                "n_partitions_total": m * len(names),
                "adversaries": list(names),
                "member_n_features": {a: int(M.shape[1]) for a, M in Xs.items()},
                "pooling": "sum of correct out-of-sample predictions / sum of predictions, over all adversaries",
            }
        )
    return extra


def _ensemble_result(
    result: Any, backend: _EnsembleBackend, names: tuple[str, ...], n_rows: int, n_eval: int | None
) -> EnsembleResult:
    """The run with each adversary's own per-round scores and prediction counts (``n_eval`` None: no eval set)."""

    def stack(rows: list[NDArray], width: int, dtype) -> NDArray:
        return np.vstack(rows) if rows else np.empty((0, width), dtype=dtype)

    return EnsembleResult(
        result=result,
        members=names,
        member_scores={a: stack(backend.member_scores[a], n_rows, np.float32) for a in names},
        member_n_predictions={a: stack(backend.member_counts[a], n_rows, np.int32) for a in names},
        member_eval_scores={a: stack(backend.member_eval[a], n_eval, np.float32) for a in names}
        if n_eval is not None
        else None,
    )
