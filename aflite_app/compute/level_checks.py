"""Checking the Training dynamics page's difficulty levels (no widget, no session): one validation, as a shared job.

:func:`prepare_validation` runs :func:`aflite_core.dynamics.validation.validate_levels` on the sidebar's dataset
(accuracy per level of models trained on other rows, training on a fraction chosen by level, and the controls:
one-shot confidence and random levels of the same sizes) over seeds that re-draw everything, one job per
:class:`ValidationSpec` for the whole server; the result is kept in the dynamics store
(:mod:`aflite_app.compute.dynamics`) and :func:`dynamics_findings` says what it found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aflite_core.dynamics.level_controls import validation_findings
from aflite_core.dynamics.validation import VALIDATION_STAGES, LevelValidation, ValidationStep, validate_levels

from ..jobs import Outcome, remaining_text
from ..jobs import shared_jobs as _shared_jobs
from ..specs import NO_SESSION, DatasetSpec, SessionData
from .datasets import dataset
from .dynamics import _dyn_check_size, _dynamics_store, _shared

__all__ = [
    "ValidationSpec",
    "describe_validation",
    "dynamics_findings",
    "dynamics_validation",
    "prepare_validation",
    "stored_validation",
]


@dataclass(frozen=True)
class ValidationSpec:
    """The validation of the levels on a dataset: its representation (full input), a partial input, epochs, seed."""

    dataset: DatasetSpec
    partial: str | None = None
    epochs: int = 5
    seed: int = 0


def stored_validation(spec: ValidationSpec) -> LevelValidation | None:
    """The finished validation of ``spec``, if any (no computation)."""
    return _dynamics_store().recall(("validation", spec))


def dynamics_validation(spec: ValidationSpec, progress=None, *, session: SessionData = NO_SESSION) -> LevelValidation:
    """Validate the levels on the sidebar's dataset (:func:`aflite_core.dynamics.validation.validate_levels`).

    Half the rows (by premise for a text pair) are characterised, the other half trains the independent models;
    each half gets its own recorded dynamics. Independent of uploaded dynamics: the validation records its own.
    ``progress(fraction, text)`` reports the fraction experiment's steps. Remembered in the page's store.
    """
    hit = stored_validation(spec)
    if hit is not None:
        return hit

    def step(i: int, total: int, what: str) -> None:
        if progress is not None:
            progress(i / total, f"Training on fractions: {what} ({i} of {total})")

    return _validation_job(spec, step, session=session)()


def _validation_job(
    spec: ValidationSpec, callback=None, *, session: SessionData = NO_SESSION
) -> Callable[..., LevelValidation]:
    """``job(on_step=None) -> LevelValidation`` for ``spec`` (checked here); stored only once complete."""
    data = dataset(spec.dataset, session=session)
    _dyn_check_size(data)
    X = data.representation(spec.dataset.representation)
    Xp = None
    if spec.partial is not None:
        if spec.partial not in data.representations:
            raise ValueError(f"Dataset '{data.name}' has no representation {spec.partial!r} for the partial input.")
        Xp = data.representation(spec.partial)
    groups = data.frame[data.pair[0]].astype(str).to_numpy() if data.pair is not None else None
    y = data.y
    store = _dynamics_store()

    def job(on_step: Callable[[ValidationStep], bool | None] | None = None) -> LevelValidation:
        result = validate_levels(
            X,
            y,
            X_partial=Xp,
            groups=groups,
            epochs=int(spec.epochs),
            random_state=int(spec.seed),
            n_threads=1,
            callback=callback,
            on_step=on_step,
        )
        store.keep(("validation", spec), result)
        return result

    return job


def prepare_validation(spec: ValidationSpec, *, session: SessionData = NO_SESSION) -> Callable[[Callable], Outcome]:
    """The validation :func:`aflite_app.jobs.run_in_background` runs for ``spec`` (checked in the page's thread).

    One job for the whole server, joined by every session asking for the same spec; it checks for a stop after
    every mini-batch of its two recordings and every model fit. A stopped validation gives
    ``Outcome(stopped=True)`` and stores nothing; a finished one is stored (:func:`stored_validation`).
    """
    store, jobs, key = _dynamics_store(), _shared_jobs(), ("validation", spec)
    job = None if store.recall(key) is not None else _validation_job(spec, session=session)

    def target(callback: Callable) -> Outcome:
        done = store.recall(key)
        if done is not None or job is None:
            return Outcome(done) if done is not None else Outcome(error="The validation is no longer in memory.")
        return _shared(key, job, callback, "The validation", lambda: store.recall(key), jobs)

    return target


def describe_validation(_progress, elapsed: float, step: ValidationStep | None = None) -> tuple[float, str]:
    """The progress text of a validation: the stage and step, elapsed seconds and a time estimate."""
    if step is None:
        return 0.0, f"Splitting the rows… {elapsed:.0f} s"
    stages = list(VALIDATION_STAGES)
    where = f"Step {stages.index(step.stage) + 1} of {len(stages)}, {step.stage}"
    detail = f": {step.detail}" if step.detail else ""
    return step.fraction, (
        f"{where}{detail} ({step.done:,} of {step.total:,}) · {elapsed:.0f} s{remaining_text(elapsed, step.fraction)}"
    )


def dynamics_findings(validation: LevelValidation) -> list[str]:
    """What the training-dynamics levels add over their controls, in sentences computed from the validation.

    :func:`aflite_core.dynamics.level_controls.validation_findings` of the validation's ``level_controls`` and
    ``fractions`` (the numbers the page shows): the easy − hard gap of every kind of levels per model, whether
    the dynamics beat one-shot out-of-fold confidence by more than the seeds' spread, the random levels' flatness
    and the fraction experiment against the confidence selections.
    """
    return validation_findings(getattr(validation, "level_controls", None), validation.fractions)
