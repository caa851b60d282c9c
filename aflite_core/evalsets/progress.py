"""The adversary study's progress: what its callbacks receive, and the tracker that sends it and hears a stop."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..engine.result import RoundProgress, StepProgress

__all__ = ["StudyProgress", "StudyStep"]


@dataclass(frozen=True)
class StudyProgress:
    """What the progress callback of :func:`adversary_study` receives after every step.

    Attributes
    ----------
    step : int
        Steps done (1-based).
    n_steps : int
        Steps in total: one for the evaluated models, one per AFLite run.
    stage : str
        ``"evaluated models"``, ``"aflite"`` or ``"ensemble"``.
    adversary : str or None
        Adversary of the run just finished.
    seed : int or None
        Its seed.
    seconds : float
        Wall time since the study started.
    """

    step: int
    n_steps: int
    stage: str
    adversary: str | None
    seed: int | None
    seconds: float

    @property
    def fraction_done(self) -> float:
        """Share of the steps done, in [0, 1]."""
        return self.step / max(self.n_steps, 1)


@dataclass(frozen=True)
class StudyStep:
    """Where :func:`adversary_study` is *inside* a step: what its ``on_step`` callback receives, often.

    Sent at the start of every step, before each evaluated model's fit, and inside every AFLite run after each
    group of partition fits, each block of predictions and each round, so a progress bar moves within a step
    and a stop request is seen within one such piece of work.

    Attributes
    ----------
    step : int
        The step in progress (1-based; :class:`StudyProgress` counts the steps finished).
    n_steps : int
        Steps in total.
    stage : str
        ``"evaluated models"``, ``"aflite"`` or ``"ensemble"``.
    adversary : str or None
        Adversary of the run in progress.
    seed : int or None
        Its seed.
    share : float
        Rough share of this step done, in [0, 1]: models fitted out of all, or AFLite rounds done (with the
        share of the round in progress) out of the most the run can take (τ often ends it sooner).
    round : int or None
        AFLite round in progress.
    phase : str or None
        ``"fit"`` or ``"predict"`` inside a round (None between rounds).
    model : str or None
        The evaluated model about to be fitted.
    model_index : int or None
        Its position (0-based) among the ``n_models`` evaluated models.
    n_models : int
        Evaluated models in all.
    seconds : float
        Wall time since the study started.
    """

    step: int
    n_steps: int
    stage: str
    adversary: str | None
    seed: int | None
    share: float
    round: int | None = None
    phase: str | None = None
    model: str | None = None
    model_index: int | None = None
    n_models: int = 0
    seconds: float = 0.0

    @property
    def fraction_done(self) -> float:
        """Share of the whole study done, in [0, 1] (every step counts the same)."""
        return min(1.0, (self.step - 1 + min(max(self.share, 0.0), 1.0)) / max(self.n_steps, 1))


class _Tracker:
    """Counts the study's steps, tells ``callback`` / ``on_step`` where it is, and remembers a stop request.

    ``step`` is the steps finished; ``stopped`` turns True once a callback returns ``False`` (and stays so).
    """

    def __init__(
        self,
        *,
        n_steps: int,
        n_models: int,
        max_rounds: int,
        started: float,
        callback: Callable[[StudyProgress], bool | None] | None,
        on_step: Callable[[StudyStep], bool | None] | None,
    ) -> None:
        self.n_steps = n_steps
        self.n_models = n_models
        self.max_rounds = max_rounds
        self.started = started
        self.callback = callback
        self.on_step = on_step
        self.step = 0
        self.stopped = False

    def report(self, stage: str, adversary: str | None, seed: int | None) -> None:
        """One step finished: count it and tell ``callback``."""
        self.step += 1
        if self.callback is not None:
            prog = StudyProgress(
                step=self.step,
                n_steps=self.n_steps,
                stage=stage,
                adversary=adversary,
                seed=seed,
                seconds=time.perf_counter() - self.started,
            )
            if self.callback(prog) is False:
                self.stopped = True

    def inside(self, stage: str, adversary: str | None, seed: int | None, share: float, **where: Any) -> bool:
        """Tell ``on_step`` where the step in progress is; False (and the study stops) once it says stop."""
        if self.on_step is None or self.stopped:
            return not self.stopped
        info = StudyStep(
            step=self.step + 1,
            n_steps=self.n_steps,
            stage=stage,
            adversary=adversary,
            seed=seed,
            share=share,
            n_models=self.n_models,
            seconds=time.perf_counter() - self.started,
            **where,
        )
        if self.on_step(info) is False:
            self.stopped = True
        return not self.stopped

    def run_hooks(self, stage: str, adversary: str, seed: int) -> dict[str, Any]:
        """The engine's ``callback`` and ``on_step`` for one run, as :class:`StudyStep` s (empty without on_step)."""
        if self.on_step is None:
            return {}
        done = [0.0]  # share of the run, never going back
        max_rounds = self.max_rounds

        def share(value: float) -> float:
            done[0] = max(done[0], min(value, 1.0))
            return done[0]

        def per_round(p: RoundProgress) -> bool:
            return self.inside(stage, adversary, seed, share(p.round / max_rounds), round=p.round)

        def in_round(p: StepProgress) -> bool:
            part = share((p.round - 1 + p.fraction_of_round) / max_rounds)
            return self.inside(stage, adversary, seed, part, round=p.round, phase=p.phase)

        return {"callback": per_round, "on_step": in_round}

    def before_fit(self, j: int, name: str) -> bool:
        """Before the evaluated model ``j`` is fitted (``j`` = their number: all fitted); False to stop."""
        if j >= self.n_models:
            return self.inside("evaluated models", None, None, 1.0)
        return self.inside("evaluated models", None, None, j / self.n_models, model=name or None, model_index=j)
