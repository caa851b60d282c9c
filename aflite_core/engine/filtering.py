"""AFLite: adversarial filtering of dataset biases (Le Bras et al., ICML 2020, Algorithm 1).

Symbols of the paper and their names here:

======  =====================  ======================================================
paper   here                   meaning
======  =====================  ======================================================
Φ(X)    ``X``                  pre-computed representation, one row per instance
M       ``model``              model family (default: fast batched linear classifiers)
n       ``target_size``        the filtered set never gets smaller than this
m       ``n_partitions``       random partitions (models) per round
t       ``train_size``         training rows per partition, t < n
k       ``slice_size``         rows removed per round at most
τ       ``tau``                early-stopping threshold on the predictability score
======  =====================  ======================================================
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from ._inputs import _check_device, check_groups, group_summary, predictability_inputs
from ._parallel import engine_threads
from .partitions import open_session, score_round
from .registry import resolve_model
from .result import AFLiteResult, RoundProgress, StepProgress
from .row_selection import select_rows
from .run_constants import HISTORY_COLUMNS, STRATEGIES, TIE_BREAKS  # noqa: F401  (re-exported: importable from here as before)

__all__ = ["STRATEGIES", "aflite", "predictability"]


#: kept for callers of the old private name
_select = select_rows


def _check_run_args(callback, n_threads, random_state, func: str, on_step=None) -> tuple[int | None, int]:
    """Validate the run arguments every entry point shares; returns ``(n_threads, seed)``."""
    for name, value in (("callback", callback), ("on_step", on_step)):
        if value is not None and not callable(value):
            raise v.param_error(name, func, "a callable or None", value, TypeError)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    return n_threads, v.check_random_state(random_state, func)


def _resolve(
    X, y, *, func, target_size, n_partitions, train_size, slice_size, tau, strategy, eval_X, eval_y, ids, eval_ids
) -> dict[str, Any]:
    """Validate every argument (first thing every public function does) and resolve counts."""
    if strategy not in STRATEGIES:
        raise ValueError(
            f"The 'strategy' parameter of {func} must be a str among {set(STRATEGIES)}. Got {strategy!r} instead."
        )
    Xv = v.check_features(X, "X", func)
    n_rows = Xv.shape[0]
    labels = v.check_labels(y, "y", func, n_rows=n_rows)
    C = labels.n_classes
    m = v.check_int(n_partitions, "n_partitions", func, low=1)
    tau_v = v.check_probability(tau, "tau", func)
    n_target = v.check_fraction_or_count(
        target_size, "target_size", func, n=n_rows, low=C, high=n_rows, range_text="(n_classes, n_samples)"
    )
    t = v.check_fraction_or_count(
        train_size, "train_size", func, n=n_rows, low=C, high=n_target, range_text="(n_classes, target_size)"
    )
    if strategy == "greedy":
        if slice_size not in (None, 1):
            raise ValueError(
                f"The 'slice_size' parameter of {func} must be 1 or None with strategy='greedy' (strategy A "
                f"removes one row per round). Got {slice_size!r} instead."
            )
        k = 1
    else:
        if slice_size is None:
            raise ValueError(
                f"The 'slice_size' parameter of {func} must be an int in [1, inf) with strategy={strategy!r}. "
                "Got None instead."
            )
        k = v.check_int(slice_size, "slice_size", func, low=1)
    out = {"X": Xv, "labels": labels, "m": m, "tau": tau_v, "n_target": n_target, "t": t, "k": k}
    if (eval_X is None) != (eval_y is None):
        raise ValueError(
            f"The 'eval_X' and 'eval_y' parameters of {func} must be given together. "
            f"Got {'eval_X' if eval_y is None else 'eval_y'} alone instead."
        )
    if eval_X is not None:
        EX = v.check_features(eval_X, "eval_X", func, n_cols=Xv.shape[1])
        if len(v._as_label_array(eval_y, "eval_y", func)) != EX.shape[0]:
            raise ValueError(
                f"The 'eval_y' parameter of {func} must have one label per row of eval_X ({EX.shape[0]}). "
                f"Got {len(v._as_label_array(eval_y, 'eval_y', func))} labels instead."
            )
        out["eval_X"] = EX
        out["eval_codes"] = labels.encode(eval_y, "eval_y", func)
    n_eval = None if eval_X is None else len(out["eval_X"])
    for name, value, n in (("ids", ids, n_rows), ("eval_ids", eval_ids, n_eval)):
        if value is None:
            out[name] = None
            continue
        if n is None:
            raise ValueError(f"The '{name}' parameter of {func} needs an evaluation set (eval_X, eval_y).")
        out[name] = v.check_ids(value, name, func, n_rows=n)
    return out


def aflite(
    X: ArrayLike,
    y: ArrayLike,
    *,
    target_size: int | float,
    n_partitions: int = 64,
    train_size: int | float,
    slice_size: int | None = None,
    tau: float = 0.75,
    strategy: str = "slice",
    model: Any = "linear",
    eval_X: ArrayLike | None = None,
    eval_y: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
    callback: Callable[[RoundProgress], bool | None] | None = None,
    ids: ArrayLike | None = None,
    eval_ids: ArrayLike | None = None,
    n_threads: int | None = None,
    backend: Any = None,
    checkpoint: str | Path | None = None,
    resume: bool = False,
    on_step: Callable[[StepProgress], bool | None] | None = None,
    device: str = "cpu",
    precision: str = "float32",
    max_device_bytes: int | None = None,
    null_permutations: int = 0,
    groups: ArrayLike | None = None,
    record_votes: bool = True,
    tie_break: str = "position",
) -> AFLiteResult:
    """Filter the rows a model family finds predictable from Φ(X), round by round (AFLite, Algorithm 1).

    Every round draws ``n_partitions`` random partitions of the current set S, trains one model per
    partition on ``train_size`` rows and lets it predict the rows it did not see. A row's predictability
    p(i) is the share of those out-of-sample predictions that are correct (in [0, 1]; higher means more
    predictable, removed first). Up to ``slice_size`` rows with the highest p(i) ≥ ``tau`` are removed; the
    run stops when fewer than ``slice_size`` rows reached ``tau`` or S reached ``target_size``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The representation Φ(X) (float32 is used throughout; a read-only memory-mapped array is not copied).
    y : array-like of shape (n_samples,)
        Labels of any hashable type (strings, ints …); each class needs at least 2 rows.
    target_size : int or float
        n: the filtered set never gets smaller. A float in (0, 1) is a fraction of n_samples.
    n_partitions : int, default=64
        m: models (random partitions) per round.
    train_size : int or float
        t: training rows per partition, ``n_classes < t < target_size``; a float in (0, 1) is a fraction of
        n_samples.
    slice_size : int
        k: rows removed per round at most. Required for ``strategy="slice"`` and ``"sample"``; must be 1 or
        None for ``"greedy"``.
    tau : float, default=0.75
        τ in [0, 1]: only rows with p(i) ≥ τ can be removed (early stop).
    strategy : {"slice", "greedy", "sample"}, default="slice"
        ``"slice"``: greedy slicing, remove the top-k (the paper's AFLite, strategy B). ``"greedy"``: one
        row per round (strategy A). ``"sample"``: sample k rows without replacement with probability ∝ p(i)
        among those with p(i) ≥ τ, by Gumbel top-k on log p (strategy C).
    model : {"linear", "ridge", "logistic", "knn"}, LinearFamily or scikit-learn classifier, default="linear"
        The model family M (:data:`aflite_core.engine.registry.ADVERSARIES`). ``"linear"`` fits scikit-learn's
        ``LogisticRegression(C=1)`` objective for all m models of a round together
        (:class:`aflite_core.engine.logistic.LogisticFamily`); ``"ridge"`` is the batched ridge classifier
        (:class:`aflite_core.engine.models.LinearFamily`); a scikit-learn classifier is cloned per partition.
    eval_X, eval_y : array-like, optional
        An evaluation set filtered alongside (appendix Algorithm 1 of the evaluation-set paper): never used
        for fitting, scored by all m models every round, and every evaluation row with p ≥ τ is removed in
        that round. Giving one never changes which training rows are removed.
    random_state : int, numpy Generator or None
        The one source of randomness; the integer seed used is recorded in ``result.params["seed"]``.
    callback : callable, optional
        Called after every round with a :class:`~aflite_core.engine.result.RoundProgress`; returning ``False``
        stops the run cleanly (``result.stop_reason == "stopped_by_callback"``).
    ids, eval_ids : array-like, optional
        Row ids carried into the result.
    n_threads : int or None, default=None
        Threads the engine uses; ``None`` means every core this process may run on
        (``os.sched_getaffinity``). Inside a run every BLAS/LAPACK call is single-threaded and the independent
        pieces of a round (column tiles of the Gram sums, shards, partition groups, scoring blocks) run on a
        pool of this many threads and are combined in a fixed order, so the result is bit-identical for any
        value (with the same libraries). Lower it to share the machine with other jobs.
    backend : None, "local", "dask" or dask.distributed.Client, default=None
        Where each round's partition fits and predictions run: in this process, or as Dask tasks (the
        current client for ``"dask"``). The same seed gives the same result on every backend.
    checkpoint : str or Path, optional
        Folder to write the run's state to after every round (see ``resume``).
    resume : bool, default=False
        Continue from the state in ``checkpoint`` if there is one (same data and parameters required);
        the final result is identical to an uninterrupted run.
    on_step : callable, optional
        Called often *inside* a round - after every group of partition fits and every block of predictions -
        with a :class:`~aflite_core.engine.result.StepProgress`; returning ``False`` stops the run at once: the round
        in progress is abandoned and the result holds the rounds completed so far
        (``stop_reason == "stopped_by_callback"``; a run with a checkpoint resumes from its last round).
        The local backend honours it; the Dask backend checks it between its tasks.
    device : {"cpu", "cuda", "cuda:N", "torch:cpu"}, default="cpu"
        Where the default family's fits and predictions run: ``"cpu"`` is the numpy engine; ``"cuda"`` a GPU
        through PyTorch (an optional dependency); ``"torch:cpu"`` the same PyTorch code on the CPU. The blocks
        and partitions are those of the numpy engine for the same seed (:mod:`aflite_core.engine.torch_backend`); only
        the default linear family runs on a torch device, and not with the Dask backend.
    precision : {"float32", "tf32"}, default="float32"
        On a torch device: float32 products with deterministic algorithms (two runs on one device are equal),
        or TF32 products on a GPU that has them (faster, rounds differently).
    max_device_bytes : int, optional
        On a torch device: features larger than this stay in host memory (a memory-mapped X too) and are
        streamed to the device in row chunks; the result is the same. None: half the GPU's free memory.
    null_permutations : int, default=0
        K > 0 also scores, in every round, K uniform permutations of the current set's labels with the round's
        own partitions and records per round and class the mean number of rows whose null p reaches each τ of
        0.00, 0.01, …, 1.00 (``result.null_counts``; with an evaluation set also ``result.eval_null_counts``):
        how many rows chance alone would put above τ (:mod:`aflite_core.engine.null`). Costs about K + 1 times
        the fits; never changes what the run removes (its own random stream). Not on the Dask backend.
    groups : array-like of shape (n_samples,), optional
        A group label per row (any hashable: a premise, a source document, a duplicate cluster). Every
        partition's training part is then made of whole groups, so no model predicts a row whose group it
        trained on (e.g. an NLI hypothesis whose sibling hypotheses of the same premise it saw). In exact-subset
        mode each training part is a random set of whole groups whose size is the closest to t a prefix of a
        random order of the groups gets (within half the size of the group at the boundary); the fast linear
        family's persistent blocks are whole groups laid end to end in a random order, so a training part is
        within half a block (or half a group, when groups exceed blocks) of t. ``None`` (default) partitions
        rows freely, with the same bits as before groups existed. Recorded in ``result.params["groups"]``
        (count, largest group, a hash of the labels). Every backend (local, Dask, torch) keeps groups together.
    record_votes : bool, default=True
        Record the m models' votes (``result.votes``): per round, row and class, how many held-out predictions
        went to that class, counted as the round runs (2 bytes per round, row and class: 135 MB at 550,000 rows
        × 41 rounds × 3 classes; a few percent of a round's time). Only with a per-round score matrix (not
        ``strategy="greedy"``) and not on the Dask backend (its result says "votes not recorded").
    tie_break : {"position", "row"}, default="position"
        How rows of equal p are ordered for removal (many rows can tie, e.g. at p = 1). ``"position"`` draws a fresh
        seeded random key per position in the current set every round (the engine's order since commit 4293819).
        ``"row"`` draws every round's keys per row, from the seed, the round and the row's index only
        (:func:`aflite_core.engine.row_selection.row_priorities`): a row whose p differs by a rounding error in one
        round (another BLAS build, a torch device) then changes at most its own fate, not which of the other tied rows
        leave in every later round. Both are a uniformly random order among tied rows each round, and every other
        random draw is the same in both modes; the same seed gives the same result on every backend in either.
        Recorded in ``result.params["tie_break"]``; a checkpoint resumes only with its own tie-break.

    Returns
    -------
    AFLiteResult
        Kept mask, round of removal, per-round scores and history, stop reason and provenance.

    Notes
    -----
    Deliberate deviations from the paper's pseudo-code, all documented in the README:

    * the last slice is clamped so the set never drops below ``target_size`` (the pseudo-code can overshoot);
    * rows with no out-of-sample prediction in a round are not scored in it and cannot be removed in it;
    * equal scores are ordered by a seeded random permutation (per position, or per row with
      ``tie_break="row"``), not by row index;
    * the fast linear family draws each training part as a random union of blocks of rows (size within half a
      block of t) rather than t independent rows.

    References
    ----------
    .. [1] R. Le Bras et al., "Adversarial Filters of Dataset Biases", ICML 2020.
    .. [2] A. Phang et al., "Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be
       Fair", appendix Algorithm 1 (evaluation data).

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core import aflite
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 600)
    >>> X = rng.normal(size=(600, 5))
    >>> X[:200, 0] += 4 * (2 * y[:200] - 1)          # a planted, label-revealing feature on 200 rows
    >>> res = aflite(X, y, target_size=300, train_size=150, slice_size=50, random_state=0)
    >>> res.n_kept >= 300, res.stop_reason in ("target_size_reached", "fewer_than_k_qualified")
    (True, True)
    >>> bool((~res.kept[:200]).mean() > 0.8)          # the planted rows are the ones removed
    True
    """
    run = plan_run(
        X,
        y,
        target_size=target_size,
        n_partitions=n_partitions,
        train_size=train_size,
        slice_size=slice_size,
        tau=tau,
        strategy=strategy,
        model=model,
        eval_X=eval_X,
        eval_y=eval_y,
        random_state=random_state,
        callback=callback,
        ids=ids,
        eval_ids=eval_ids,
        n_threads=n_threads,
        backend=backend,
        checkpoint=checkpoint,
        on_step=on_step,
        device=device,
        precision=precision,
        max_device_bytes=max_device_bytes,
        null_permutations=null_permutations,
        groups=groups,
        record_votes=record_votes,
        tie_break=tie_break,
    )
    return execute_run(run, resume=resume)


def plan_run(
    X: ArrayLike,
    y: ArrayLike,
    *,
    target_size: int | float,
    n_partitions: int = 64,
    train_size: int | float,
    slice_size: int | None = None,
    tau: float = 0.75,
    strategy: str = "slice",
    model: Any = "linear",
    eval_X: ArrayLike | None = None,
    eval_y: ArrayLike | None = None,
    random_state: int | np.random.Generator | None = None,
    callback: Callable[[RoundProgress], bool | None] | None = None,
    ids: ArrayLike | None = None,
    eval_ids: ArrayLike | None = None,
    n_threads: int | None = None,
    backend: Any = None,
    checkpoint: str | Path | None = None,
    on_step: Callable[[StepProgress], bool | None] | None = None,
    device: str = "cpu",
    precision: str = "float32",
    max_device_bytes: int | None = None,
    null_permutations: int = 0,
    groups: ArrayLike | None = None,
    groups_source: str | None = None,
    func: str = "aflite",
    record_votes: bool = True,
    tie_break: str = "position",
):
    """Validate every argument of :func:`aflite` and return the run, not yet started.

    Nothing is computed or written: callers that must prepare something only for valid arguments (the CLI
    creates its run directory) do it between this and :func:`execute_run`. ``groups_source`` names where
    ``groups`` came from (a table column such as ``"premise"``); it is recorded in ``params["groups"]``.

    Returns
    -------
    aflite_core.engine.loop.Run
    """
    r = _resolve(
        X,
        y,
        func=func,
        target_size=target_size,
        n_partitions=n_partitions,
        train_size=train_size,
        slice_size=slice_size,
        tau=tau,
        strategy=strategy,
        eval_X=eval_X,
        eval_y=eval_y,
        ids=ids,
        eval_ids=eval_ids,
    )
    family = resolve_model(model, func)
    n_threads, seed = _check_run_args(callback, n_threads, random_state, func, on_step)
    n_null = v.check_int(null_permutations, "null_permutations", func, low=0)
    from .loop import Run, RunConfig

    tie_break = check_tie_break(tie_break, func)
    from .null import check_null_backend, round_null

    check_null_backend(backend, n_null, func)

    labels = r["labels"]
    extra = {"target_size_given": target_size, "train_size_given": train_size}
    torch_device = _check_device(device, precision, max_device_bytes, family, func)
    if torch_device is None:
        run_backend = _resolve_backend(backend, func)
    else:
        from .torch_backend import TorchBackend

        if backend is not None and backend != "local":
            raise ValueError(
                f"The 'device' parameter of {func} is {device!r}, which runs in this process only; "
                "the Dask backend (backend='dask' or a Client) works with device='cpu' for now."
            )
        run_backend = TorchBackend(torch_device, precision, max_device_bytes)
        extra.update({"device": run_backend.device_name, "precision": precision})
    check_null_backend(run_backend, n_null, func)
    if n_null:
        extra["null_permutations"] = n_null
    group_codes = check_groups(groups, func, n_rows=r["X"].shape[0])
    if group_codes is not None:
        if not _takes_groups(run_backend):
            raise ValueError(
                f"The 'groups' parameter of {func} needs a backend that keeps groups together (local, Dask or a "
                f"torch device); {type(run_backend).__name__} does not, so pass groups=None."
            )
        extra["groups"] = group_summary(group_codes, groups_source)
    config = RunConfig(
        target_size=r["n_target"],
        train_size=r["t"],
        slice_size=r["k"],
        n_partitions=r["m"],
        tau=r["tau"],
        strategy=strategy,
        seed=seed,
        n_threads=n_threads,
    )
    return Run(
        X=r["X"],
        codes=labels.codes,
        classes=labels.classes,
        config=config,
        family=family,
        backend=run_backend,
        callback=callback,
        on_step=on_step,
        eval_X=r.get("eval_X"),
        eval_codes=r.get("eval_codes"),
        ids=r["ids"],
        eval_ids=r["eval_ids"],
        checkpoint_dir=None if checkpoint is None else Path(checkpoint),
        extra_state={"params": extra},
        null_permutations=n_null,
        null_round=round_null if n_null else None,
        groups=group_codes,
        record_votes=_check_flag(record_votes, "record_votes", func),
        tie_break=tie_break,
    )


def check_tie_break(value: Any, func: str) -> str:
    """``value`` if it names a tie-break (:data:`~aflite_core.engine.run_constants.TIE_BREAKS`), else an error."""
    if not isinstance(value, str) or value not in TIE_BREAKS:
        raise ValueError(
            f"The 'tie_break' parameter of {func} must be a str among {list(TIE_BREAKS)}. Got {value!r} instead."
        )
    return value


def _takes_groups(backend: Any) -> bool:
    """Whether a backend's ``open`` takes ``groups=`` (the local, Dask and torch backends do)."""
    import inspect

    open_ = getattr(backend, "open", None)
    return open_ is not None and "groups" in inspect.signature(open_).parameters


def _check_flag(value: Any, name: str, func: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise v.param_error(name, func, "True or False", value)
    return bool(value)


def execute_run(run: Any, *, resume: bool = False) -> AFLiteResult:
    """Run a planned run to its end (continuing from its checkpoint when ``resume`` and there is one)."""
    if resume:
        if run.checkpoint_dir is None:
            raise ValueError("The 'resume' parameter of aflite needs 'checkpoint' (the folder to resume from).")
        from .checkpoint import has_checkpoint

        if has_checkpoint(run.checkpoint_dir):
            run.restore(run.checkpoint_dir)
    return run.execute()


def _resolve_backend(backend: Any, func: str):
    """None / "local" -> in-process; "dask" -> the current dask.distributed client; a Client -> that client."""
    from .local_backend import LocalBackend

    if backend is None or backend == "local":
        return LocalBackend()
    if backend == "dask" or type(backend).__name__ == "Client" or hasattr(backend, "scatter"):
        from .distributed import DaskBackend

        return DaskBackend(None if backend == "dask" else backend)
    if hasattr(backend, "draw_plan") and hasattr(backend, "score"):
        return backend
    raise ValueError(
        f"The 'backend' parameter of {func} must be None, 'local', 'dask' or a dask.distributed.Client. "
        f"Got {backend!r} instead."
    )


def predictability(
    X: ArrayLike,
    y: ArrayLike,
    *,
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
    """Score every row's out-of-sample predictability once, without removing anything (an audit).

    This is one AFLite filtering phase (Algorithm 1, lines 3-11): m models, each trained on a random
    ``train_size``-row part, predict the rows they did not see. With the same arguments and seed it equals
    round 1 of :func:`aflite` (``aflite(...).scores[0]``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The representation Φ(X).
    y : array-like of shape (n_samples,)
        Labels of any hashable type.
    n_partitions : int, default=64
        m: models trained.
    train_size : int or float
        t: training rows per model, ``n_classes < t < n_samples``; a float in (0, 1) is a fraction.
    model : {"linear", "ridge", "logistic", "knn"}, LinearFamily or scikit-learn classifier, default="linear"
        The model family (see :func:`aflite`).
    random_state : int, numpy Generator or None
        Seed.
    n_threads : int or None, default=None
        Threads (``None``: every available core); the result does not depend on it (see :func:`aflite`).
    device, precision, max_device_bytes
        Where the models run (see :func:`aflite`).
    groups : array-like of shape (n_samples,), optional
        A group label per row: training parts are made of whole groups (see :func:`aflite`); None: rows.

    Returns
    -------
    ndarray of float32, shape (n_samples,)
        p(i) in [0, 1]: the share of correct out-of-sample predictions; higher means more predictable
        (AFLite removes those first). NaN for a row no model held out (raise ``n_partitions`` to avoid).

    Examples
    --------
    >>> import numpy as np
    >>> from aflite_core import predictability
    >>> rng = np.random.default_rng(1)
    >>> y = rng.integers(0, 2, 400)
    >>> X = rng.normal(size=(400, 3)); X[:100, 0] += 5 * (2 * y[:100] - 1)
    >>> p = predictability(X, y, train_size=100, random_state=0)
    >>> bool(np.nanmean(p[:100]) > np.nanmean(p[100:]))
    True
    """
    a = predictability_inputs(
        X,
        y,
        func="predictability",
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
    Xv, labels, t, m, family = a["X"], a["labels"], a["t"], a["m"], a["family"]
    grouped = {} if a["groups"] is None else {"groups": a["groups"]}
    n_threads, torch_device = a["n_threads"], a["torch_device"]
    rng = np.random.default_rng(a["seed"])
    if torch_device is not None:
        from .torch_backend import TorchBackend

        backend = TorchBackend(torch_device, precision, max_device_bytes)
        with engine_threads(n_threads):
            backend.open(Xv, labels.codes, labels.n_classes, family, train_size=t, n_partitions=m, rng=rng, **grouped)
            rows = np.arange(Xv.shape[0])
            rs = backend.score(rows, backend.draw_plan(rows, rng), rng, None, 1)
            backend.close()
        return rs.predictability
    with engine_threads(n_threads):
        session = open_session(
            family, Xv, labels.codes, labels.n_classes, train_size=t, n_partitions=m, rng=rng, groups=a["groups"]
        )
        rows = np.arange(Xv.shape[0])
        plan = session.draw_plan(rows, rng)
        rs = score_round(session, Xv, labels.codes, rows, plan, rng)
    return rs.predictability
