"""The adversary study's argument checks: every parameter validated, and resolved, before any work."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _validation as v
from ..engine.filtering import _resolve
from ..engine.registry import resolve_model
from .agreement import _used_rows, annotator_agreement
from .ensemble import _check_mapping
from .evaluated import _check_evaluated
from .tables import NONE


def _check_names(value: Any, name: str, func: str, available: Sequence[str]) -> tuple[str, ...]:
    allowed = f"a non-empty sequence of distinct representation names among {list(available)}"
    if isinstance(value, str):
        value = (value,)
    try:
        values = tuple(value)
    except TypeError:
        raise v.param_error(name, func, allowed, value, TypeError) from None
    if not values or len(set(values)) != len(values) or not all(isinstance(x, str) and x in available for x in values):
        raise v.param_error(name, func, allowed, value)
    return values


@dataclass
class _StudyInputs:
    """What :func:`_check_study_args` resolved: the inputs :func:`~aflite_core.evalsets.adversary_study` works on."""

    TX: dict[str, Any]
    EX: dict[str, Any]
    adv: tuple[str, ...]
    members: tuple[str, ...]
    models: list[tuple[Any, str, str]]
    seed_list: tuple[int, ...]
    bb: dict[str, str]
    used_reps: list[str]
    resolved: dict[str, Any]
    eval_labels: np.ndarray
    agreement_rows: Any
    n_threads: int | None
    model_seed_draw: np.random.Generator

    @property
    def labels(self) -> Any:
        """The training labels' encoding (classes and codes)."""
        return self.resolved["labels"]

    @property
    def codes(self) -> np.ndarray:
        """Training label codes."""
        return self.labels.codes

    @property
    def eval_codes(self) -> np.ndarray:
        """Evaluation label codes."""
        return self.resolved["eval_codes"]


def _check_study_args(
    func: str,
    train_X: Mapping[str, ArrayLike],
    train_y: ArrayLike,
    eval_X: Mapping[str, ArrayLike],
    eval_y: ArrayLike,
    *,
    target_size: Any,
    train_size: Any,
    slice_size: Any,
    adversaries: Any,
    evaluated: Any,
    backbones: Any,
    seeds: Any,
    tau: Any,
    n_partitions: Any,
    model: Any,
    ensemble: Any,
    annotator_labels: Any,
    annotator_source: Any,
    annotator_sources: Any,
    ids: Any,
    eval_ids: Any,
    random_state: Any,
    n_threads: Any,
    callback: Any,
    on_step: Any,
) -> _StudyInputs:
    """Validate :func:`~aflite_core.evalsets.adversary_study`'s arguments in its order; raise on the first bad one."""
    TX = _check_mapping(train_X, "train_X", func)
    reps = tuple(TX)
    adv = reps if adversaries is None else _check_names(adversaries, "adversaries", func, reps)
    models = _check_evaluated(evaluated, reps, func)
    seed_list = v.check_seeds(seeds, func)
    members: tuple[str, ...] = ()
    if ensemble is True:
        members = adv
    elif ensemble is not False and ensemble is not None:
        members = _check_names(ensemble, "ensemble", func, reps)
    if members and len(members) < 2:
        raise ValueError(
            f"The 'ensemble' parameter of {func} must name at least 2 adversaries to pool. Got {list(members)} instead."
        )
    if NONE in adv:
        raise ValueError(
            f"The 'adversaries' parameter of {func} must not name an adversary {NONE!r} (the name of the "
            "unfiltered evaluation set). Rename that representation."
        )
    bb = dict(backbones or {})
    names_given = {name for _, _, name in models}
    bad_bb = [(a, m) for a, m in bb.items() if a not in adv or m not in names_given]
    if bad_bb:
        raise ValueError(
            f"The 'backbones' parameter of {func} must map adversaries to evaluated models' names. Got "
            f"{bad_bb[0]!r}, which is not one (adversaries {list(adv)}, models {sorted(names_given)})."
        )
    used_reps = list(dict.fromkeys([*adv, *members, *(rep for _, rep, _ in models)]))
    EX = _check_mapping(eval_X, "eval_X", func, keys=used_reps, n_cols={k: TX[k].shape[1] for k in used_reps})
    # validate the AFLite parameters, labels and ids once, before any work
    resolved = _resolve(
        TX[adv[0]],
        train_y,
        func=func,
        target_size=target_size,
        n_partitions=n_partitions,
        train_size=train_size,
        slice_size=slice_size,
        tau=tau,
        strategy="slice",
        eval_X=EX[adv[0]],
        eval_y=eval_y,
        ids=ids,
        eval_ids=eval_ids,
    )
    resolve_model(model, func)
    labels = resolved["labels"]
    eval_codes = resolved["eval_codes"]
    n_eval = len(eval_codes)
    if callback is not None and not callable(callback):
        raise v.param_error("callback", func, "a callable or None", callback, TypeError)
    if n_threads is not None:
        n_threads = v.check_int(n_threads, "n_threads", func, low=1)
    eval_labels = np.empty(n_eval, dtype=object)
    eval_labels[:] = [labels.classes[c] for c in eval_codes]
    agreement_rows = None
    if annotator_labels is not None:
        agreement_rows = annotator_agreement(eval_labels, annotator_labels)
        _used_rows(n_eval, agreement_rows, annotator_source, annotator_sources, func)  # validate early
    elif annotator_source is not None:
        raise ValueError(f"The 'annotator_source' parameter of {func} needs 'annotator_labels' too.")
    rng = np.random.default_rng(v.check_random_state(random_state, func))
    model_seed_draw = np.random.default_rng(int(rng.integers(0, 2**63 - 1)))
    if on_step is not None and not callable(on_step):
        raise v.param_error("on_step", func, "a callable or None", on_step, TypeError)
    return _StudyInputs(
        TX=TX,
        EX=EX,
        adv=adv,
        members=members,
        models=models,
        seed_list=seed_list,
        bb=bb,
        used_reps=used_reps,
        resolved=resolved,
        eval_labels=eval_labels,
        agreement_rows=agreement_rows,
        n_threads=n_threads,
        model_seed_draw=model_seed_draw,
    )
