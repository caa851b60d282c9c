"""A null for predictability: how many rows would reach p ≥ τ if the labels carried no information about Φ(X).

AFLite removes the rows whose out-of-sample predictability p(i) reaches τ (Algorithm 1, lines 11-14). With many
features per training row, or a small training part t, a linear model fitted on labels that are pure noise still
predicts some held-out rows right in most of the m partitions, so some rows reach τ by chance alone (with random
labels, 600 rows, d = 500 and t = 300, about a quarter of the rows reach p ≥ 0.75). The null answers "how many of
the rows above τ would chance put there?":

* :func:`null_predictability` scores every row exactly as :func:`~aflite_core.engine.filtering.predictability`
  does - the same model family, the same partitions (the same seed draws the same blocks and training parts) -
  after a uniform permutation of the rows' labels (class counts unchanged), ``n_permutations`` times;
* :func:`chance_share` turns such a null into E_null[#rows at p ≥ τ] / observed #rows at p ≥ τ, for any subset
  of rows;
* ``aflite(..., null_permutations=K)`` (:class:`~aflite_core.engine.loop.Run`) does the same in every round, on
  the round's current set and partitions, and records per round and per class the mean null count at p ≥ τ for
  every τ on :data:`TAU_GRID` (``AFLiteResult.null_counts``).

The permutations come from their own random stream, a child of the run's seed
(``np.random.SeedSequence(seed).spawn(1)[0]``, whose r-th child serves round r; :func:`null_rng`): the run's own
generator never sees them, so asking for a null never changes what a run removes, and the null of round r does
not depend on τ (so :func:`~aflite_core.engine.tau_path.narrow_to_tau` narrows it by dropping rounds).

How a permuted copy of a family session is made (:func:`relabelled`): the session is copied with the permuted
labels; statistics that involve the labels (the ridge family's block Gram matrices of ``[x, 1, onehot(y)]``, on
the CPU or a torch device) are rebuilt from the current rows, and label-free ones (the preconditioners' Gram
matrix of ``[x, 1]``) are shared. Every model is then fitted and scored by the engine's own batched code, one
permutation at a time (so the ridge family's block Grams take one more copy of their memory while a permutation
is scored; the logistic family's fit memo keys the permuted fits by their labels, apart from the run's own).
The Dask backend does not compute the null (:func:`check_null_backend` refuses it).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from ._inputs import predictability_inputs
from ._parallel import engine_threads
from .partitions import RoundScores, open_session, score_round

__all__ = [
    "TAU_GRID",
    "chance_share",
    "chance_table",
    "check_null_backend",
    "grid_counts",
    "null_predictability",
    "null_rng",
    "relabelled",
    "round_null",
    "suggest_tau",
]

#: the thresholds the per-round null is recorded at: 0.00, 0.01, …, 1.00
TAU_GRID = np.round(np.arange(101) / 100.0, 2)


def null_rng(seed: int, round_no: int = 1) -> np.random.Generator:
    """The null's generator for round ``round_no`` of a run seeded ``seed`` (independent of the run's own stream).

    It is child ``round_no - 1`` of ``np.random.SeedSequence(seed).spawn(1)[0]`` (spawn key ``(0, round_no - 1)``);
    the run draws from ``np.random.default_rng(seed)``, the root, which spawning never advances.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, round_no - 1)))


def grid_counts(p: NDArray[np.floating], labels: NDArray[np.integer], n_classes: int) -> NDArray[np.int64]:
    """Rows of each class with ``p >= τ`` for every τ of :data:`TAU_GRID`, shape (n_classes, 101).

    The comparison is the engine's: float32 scores against τ in float32; unscored rows (NaN) never count.
    """
    p = np.asarray(p, dtype=np.float32)
    labels = np.asarray(labels)
    thresholds = TAU_GRID.astype(np.float32)
    out = np.zeros((n_classes, len(TAU_GRID)), dtype=np.int64)
    scored = ~np.isnan(p)
    for c in range(n_classes):
        pc = np.sort(p[scored & (labels == c)])
        out[c] = len(pc) - np.searchsorted(pc, thresholds, side="left")
    return out


def check_null_backend(backend: Any, null_permutations: int, func: str) -> None:
    """Refuse, in one sentence, a null on a backend that cannot compute it (Dask: ``"dask"``, a Client, DaskBackend)."""
    dask = (isinstance(backend, str) and backend == "dask") or type(backend).__name__ in ("DaskBackend", "Client")
    if null_permutations and dask:
        raise ValueError(
            f"The 'null_permutations' parameter of {func} is {null_permutations}, but the Dask backend does not "
            "compute the null; run it with the local backend (backend=None) or with null_permutations=0."
        )


# -- permuted copies of a session ----------------------------------------------------------------------------
def relabelled(session: Any, codes: NDArray[np.int32], rows: NDArray[np.intp]) -> Any:
    """A copy of a family session that sees ``codes`` as the labels; ``rows``: the current set (sorted).

    The original session is not changed. Label-dependent cached statistics are rebuilt from ``rows``; everything
    else (blocks, the rows present, label-free Gram matrices) is shared, read-only.
    """
    if not hasattr(session, "codes"):
        raise ValueError(
            f"The model family's session {type(session).__name__} keeps no labels to permute, so no null can be "
            "computed for it; use the 'linear', 'ridge', 'logistic' or 'knn' family."
        )
    new = copy.copy(session)
    new.codes = codes
    if hasattr(new, "_memo_base"):  # the logistic family's fit memo is keyed by the labels too
        new._memo_base = None
    if hasattr(new, "codes_dev"):  # a torch session: labels and the ridge block Grams live on the device
        new.codes_dev = new.torch.as_tensor(np.asarray(codes, dtype=np.int64), device=new.device)
        if getattr(new, "stack", None) is not None:
            base = new.base
            new.stack = new._grams_by_group(rows, base.block_of_row[rows], len(base.block_sizes), True)
        return new
    if hasattr(new, "shards"):
        new._precond_cache = getattr(session, "_precond_cache", None)
        if new.uses_stack:  # block Grams of [x, 1, onehot(y)]: rebuilt from the current rows with the new labels
            new.shards = {s: _relabelled_shard(new, sh) for s, sh in session.shards.items()}
        else:  # only label-free parts are read (the preconditioners' [x, 1] block)
            new.shards = dict(session.shards)
    return new


def _relabelled_shard(session: Any, shard: Any) -> Any:
    """A shard with the same current rows and label-free total, its block Grams rebuilt with the session's labels."""
    sh = copy.copy(shard)
    lo, hi = sh.blocks
    block = session.block_of_row[sh.rows] - lo
    order = np.argsort(block, kind="stable")
    cuts = np.cumsum(np.bincount(block, minlength=hi - lo))[:-1]
    sh.stack, _ = session.block_stack(np.split(sh.rows[order], cuts))
    return sh


def _score(session, X, codes, rows, plan, rng, precision, eval_X, eval_codes, eval_rows, on_step) -> RoundScores:
    """One round's counts with ``session`` (numpy sessions through score_round, torch sessions their own)."""
    if hasattr(session, "codes_dev"):
        from .torch_devices import torch_context

        with torch_context(precision):
            return session.score_round(rows, plan, rng, eval_rows=eval_rows, eval_codes=eval_codes, on_step=on_step)
    return score_round(
        session, X, codes, rows, plan, rng, eval_X=eval_X, eval_codes=eval_codes, eval_rows=eval_rows, on_step=on_step
    )


def permuted_scores(
    session: Any,
    X: NDArray[np.float32],
    codes: NDArray[np.int32],
    rows: NDArray[np.intp],
    plan: Any,
    n_permutations: int,
    rng: np.random.Generator,
    *,
    precision: str = "float32",
    eval_X=None,
    eval_codes=None,
    eval_rows=None,
    on_step=None,
):
    """Yield ``(permuted codes of rows, RoundScores)`` for each permutation of the labels of ``rows``.

    Each permutation is a uniform shuffle of ``codes[rows]`` among ``rows`` (``rng.permutation``); the models see
    the permuted labels for fitting and scoring; evaluation rows keep their own labels (never used for fitting).
    ``on_step``: the run's step callback (its fits and predictions report as the round's do; returning False
    abandons the round by raising :class:`~aflite_core.engine.partitions.RoundInterrupted`).
    """
    for _ in range(n_permutations):
        shuffled = codes[rows][rng.permutation(len(rows))]
        full = np.array(codes, copy=True)
        full[rows] = shuffled
        null_session = relabelled(session, full, rows)
        rs = _score(null_session, X, full, rows, plan, rng, precision, eval_X, eval_codes, eval_rows, on_step)
        yield shuffled, rs


def round_null(run: Any, rows: NDArray[np.intp], plan: Any, eval_rows: NDArray[np.intp] | None, round_no: int):
    """The null of one round of ``run``: summed per-class grid counts over its permutations.

    Returns ``(train, eval)``: int64 arrays of shape (n_classes, 101), the rows (of the current set; of the
    remaining evaluation rows) whose null p reaches each τ of :data:`TAU_GRID`, summed over the
    ``run.null_permutations`` permutations (``eval`` is None without an evaluation set). Evaluation rows are
    counted by their own label; training rows by the permuted label they were scored with.
    """
    backend = run.backend
    session = getattr(backend, "session", None)
    if session is None:
        check_null_backend(backend, run.null_permutations, "aflite")
        raise ValueError(
            f"The 'null_permutations' parameter of aflite needs a backend that runs the family in this process; "
            f"{type(backend).__name__} does not."
        )
    C = len(run.classes)
    train = np.zeros((C, len(TAU_GRID)), dtype=np.int64)
    evals = None if eval_rows is None else np.zeros((C, len(TAU_GRID)), dtype=np.int64)
    for shuffled, rs in permuted_scores(
        session,
        run.X,
        run.codes,
        rows,
        plan,
        run.null_permutations,
        null_rng(run.config.seed, round_no),
        precision=getattr(backend, "precision", "float32"),
        eval_X=run.eval_X if eval_rows is not None else None,
        eval_codes=run.eval_codes,
        eval_rows=eval_rows,
        on_step=getattr(backend, "on_step", None),
    ):
        train += grid_counts(rs.predictability, shuffled, C)
        if evals is not None:
            pe = (rs.eval_correct / run.config.n_partitions).astype(np.float32)
            evals += grid_counts(pe, run.eval_codes[eval_rows], C)
    return train, evals


# -- the public functions -------------------------------------------------------------------------------------
def null_predictability(
    X: ArrayLike,
    y: ArrayLike,
    *,
    n_permutations: int = 5,
    n_partitions: int = 64,
    train_size: int | float,
    model: Any = "linear",
    random_state: int | np.random.Generator | None = None,
    n_threads: int | None = None,
    device: str = "cpu",
    precision: str = "float32",
    max_device_bytes: int | None = None,
    groups: ArrayLike | None = None,
) -> NDArray[np.float32]:
    """Predictability under shuffled labels: what p(i) chance alone gives, with the same models and partitions.

    Every permutation shuffles the labels uniformly among the rows (class counts unchanged) and scores every row
    exactly as :func:`~aflite_core.engine.filtering.predictability` does with the same arguments and seed: the
    same model family, the same blocks and training parts (drawn from the same seed), the same batched fits.
    The permutations come from a child stream of the seed (:func:`null_rng`), so they never change what
    ``predictability`` or ``aflite`` compute with that seed. Compare the observed count at p ≥ τ with the null's
    (:func:`chance_share`): where they are close, p ≥ τ is chance, not something Φ(X) makes solvable.

    Parameters
    ----------
    X, y
        As for :func:`~aflite_core.engine.filtering.predictability`.
    n_permutations : int, default=5
        Label permutations scored (each costs one ``predictability``).
    n_partitions, train_size, model, random_state, n_threads, device, precision, max_device_bytes, groups
        As for :func:`~aflite_core.engine.filtering.predictability` (the same seed and groups give the same
        partitions: with ``groups`` every training part is made of whole groups).

    Returns
    -------
    ndarray of float32, shape (n_permutations, n_samples)
        Row k: p(i) in [0, 1] under permutation k, each row scored against the label it received; NaN where no
        model held the row out. Higher means more predictable.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core import chance_share, null_predictability, predictability
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(300, 40)), rng.integers(0, 2, 300)      # labels independent of X
    >>> kw = dict(train_size=60, n_partitions=16, random_state=0)
    >>> null = null_predictability(X, y, n_permutations=3, **kw)
    >>> null.shape
    (3, 300)
    >>> 0.5 < chance_share(null, predictability(X, y, **kw), 0.6) < 2    # about all of it is chance
    True
    """
    func = "null_predictability"
    K = v.check_int(n_permutations, "n_permutations", func, low=1)
    a = predictability_inputs(
        X,
        y,
        func=func,
        n_partitions=n_partitions,
        train_size=train_size,
        model=model,
        random_state=random_state,
        n_threads=n_threads,
        device=device,
        precision=precision,
        max_device_bytes=max_device_bytes,
        groups=groups,
    )
    Xv, codes, C = a["X"], a["labels"].codes, a["labels"].n_classes
    grouped = {} if a["groups"] is None else {"groups": a["groups"]}
    rng = np.random.default_rng(a["seed"])  # the draws predictability makes: blocks, then partitions
    rows = np.arange(Xv.shape[0])
    out = np.empty((K, Xv.shape[0]), dtype=np.float32)
    with engine_threads(a["n_threads"]):
        if a["torch_device"] is not None:
            from .torch_backend import TorchBackend

            backend = TorchBackend(a["torch_device"], precision, max_device_bytes)
            backend.open(Xv, codes, C, a["family"], train_size=a["t"], n_partitions=a["m"], rng=rng, **grouped)
            session = backend.session
            plan = backend.draw_plan(rows, rng)
        else:
            backend = None
            session = open_session(
                a["family"], Xv, codes, C, train_size=a["t"], n_partitions=a["m"], rng=rng, groups=a["groups"]
            )
            plan = session.draw_plan(rows, rng)
        try:
            scored = permuted_scores(session, Xv, codes, rows, plan, K, null_rng(a["seed"], 1), precision=precision)
            for k, (_, rs) in enumerate(scored):
                out[k] = rs.predictability
        finally:
            if backend is not None:
                backend.close()
    return out


def chance_share(null: ArrayLike, scores: ArrayLike, tau: float, rows: ArrayLike | None = None) -> float:
    """E_null[#rows in R with p ≥ τ] / observed #rows in R with p ≥ τ: the share of those rows chance explains.

    Parameters
    ----------
    null : array-like of shape (n_permutations, n_samples)
        Null scores, e.g. :func:`null_predictability`.
    scores : array-like of shape (n_samples,)
        Observed scores (e.g. :func:`~aflite_core.engine.filtering.predictability` with the same arguments).
    tau : float
        τ in [0, 1].
    rows : array-like, optional
        The subset R: row indices or a boolean mask over the rows (default: every row).

    Returns
    -------
    float
        Near 1 (or above): about as many rows reach τ under shuffled labels, so p ≥ τ is chance there; near 0:
        the rows above τ are predictable from Φ(X). ``nan`` when no row of R reaches τ and none would by chance
        (0/0: nothing to explain); ``inf`` when none reaches τ but the null expects some. NaN scores never count.

    Examples
    --------
    >>> import numpy as np
    >>> chance_share(np.array([[0.9, 0.1, 0.8], [0.2, 0.1, 0.9]]), np.array([1.0, 0.9, 0.8]), 0.75)
    0.5
    """
    func = "chance_share"
    null = np.asarray(null, dtype=np.float32)
    scores = np.asarray(scores, dtype=np.float32)
    if null.ndim == 1:
        null = null[None, :]
    if null.ndim != 2 or scores.ndim != 1 or null.shape[1] != scores.shape[0]:
        raise ValueError(
            f"The 'null' and 'scores' parameters of {func} must have shapes (n_permutations, n_samples) and "
            f"(n_samples,). Got {null.shape} and {scores.shape} instead."
        )
    tau_v = np.float32(v.check_probability(tau, "tau", func))
    if rows is not None:
        sel = np.asarray(rows)
        if sel.dtype == bool and sel.shape != scores.shape:
            raise ValueError(
                f"The 'rows' parameter of {func} must be a boolean mask of {scores.shape[0]} rows or row indices. "
                f"Got a mask of {sel.shape[0]} instead."
            )
        null, scores = null[:, sel], scores[sel]
    with np.errstate(invalid="ignore"):
        expected = float((null >= tau_v).sum(axis=1).mean()) if null.shape[0] else 0.0
        observed = int((scores >= tau_v).sum())
    if observed == 0:
        return float("nan") if expected == 0 else float("inf")
    return expected / observed


# -- reading a run's null -------------------------------------------------------------------------------------
def chance_table(result: Any, round: int = 1) -> pd.DataFrame:
    """Observed and null counts at p ≥ τ for every τ of :data:`TAU_GRID` in one round of a run with a null.

    Parameters
    ----------
    result : AFLiteResult
        A run of ``aflite(..., null_permutations=K)`` (``result.null_counts`` not None).
    round : int, default=1
        The round (1-based). Rounds after the first need the per-round score matrix (not kept by
        ``strategy="greedy"``).

    Returns
    -------
    pandas.DataFrame
        One row per τ: ``tau``, ``observed`` (rows of the round's set with p ≥ τ), ``null`` (the mean null count)
        and ``chance_share`` (null / observed; NaN for 0 / 0, inf when only the null has rows there).

    Raises
    ------
    ValueError
        When the run has no null, no such round, or no scores for that round (one sentence).
    """
    func = "chance_table"
    if result.null_counts is None:
        raise ValueError(
            f"This run has no null to read ({func}): run aflite with null_permutations=K (CLI --null-permutations K)."
        )
    n_rounds = len(result.null_counts)
    if not (isinstance(round, (int, np.integer)) and 1 <= round <= n_rounds):
        raise ValueError(f"The 'round' parameter of {func} must be an int in [1, {n_rounds}]. Got {round!r} instead.")
    if result.scores is not None:
        p = result.scores[round - 1]
    elif round == 1:
        p = result.first_score
    else:
        raise ValueError(
            f"The 'round' parameter of {func} is {round}, but this run kept no per-round scores (strategy 'greedy'); "
            "only round 1 can be read."
        )
    observed = grid_counts(p, np.zeros(len(p), dtype=np.int64), 1)[0]
    null = result.null_counts[round - 1].sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(observed > 0, null / np.maximum(observed, 1), np.where(null > 0, np.inf, np.nan))
    return pd.DataFrame({"tau": TAU_GRID, "observed": observed, "null": null, "chance_share": share})


def suggest_tau(result: Any, max_share: float, round: int = 1) -> float | None:
    """The lowest τ of the 0.01 grid whose chance share in ``round`` (:func:`chance_table`) is at most ``max_share``.

    Only τ where some row of the round reaches p ≥ τ count; None when there is none (chance explains more than
    ``max_share`` of the rows at every τ). Round 1 does not depend on the run's τ, so its suggestion holds for a
    run at any τ; a suggestion at or above the run's τ can be read off it with
    :func:`~aflite_core.engine.tau_path.narrow_to_tau`.

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core import aflite
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> X = rng.normal(size=(400, 40)); X[:100, 0] += 4 * (2 * y[:100] - 1)
    >>> res = aflite(X, y, target_size=200, train_size=100, slice_size=50, n_partitions=16, tau=0.5,
    ...              null_permutations=2, random_state=0)
    >>> tau = suggest_tau(res, 0.1)
    >>> tau is not None and 0.5 <= tau <= 1.0
    True
    """
    share = v.check_probability(max_share, "max_share", "suggest_tau")
    table = chance_table(result, round)
    ok = (table["observed"] > 0) & (table["chance_share"] <= share)
    return float(table.loc[ok, "tau"].iloc[0]) if ok.any() else None
