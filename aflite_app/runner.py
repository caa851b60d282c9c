"""Run AFLite in a background thread so the page can show progress and a Stop button that really stops it.

The engine reports after every round (its ``callback``) and inside every round, after each group of partition
fits and each block of predictions (its ``on_step``); :class:`BackgroundRun` records both and answers
``False`` once :meth:`BackgroundRun.stop` was called or the session that asked for the run is gone, which ends
the run within one such step with a partial result (``result.stop_reason == "stopped_by_callback"``). No
Streamlit here: pages poll the object, and pass ``alive`` (is the browser session still there?).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class BackgroundRun:
    """One engine run in a daemon thread.

    Parameters
    ----------
    key : hashable
        What was asked for (the page compares it with the current request).
    target : callable
        ``target(callback) -> result``; it must pass ``callback`` on to the engine as its ``callback`` and
        ``callback.step`` as its ``on_step``.
    alive : callable, optional
        ``alive() -> bool``; once it answers False (the session is gone) the run is cancelled.
    """

    key: Any
    target: Callable[[Callable], Any]
    alive: Callable[[], bool] | None = None
    progress: Any = None
    step: Any = None
    result: Any = None
    error: BaseException | None = None
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None
    cancelled: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> BackgroundRun:
        """Start the thread (returns self)."""
        self._thread = threading.Thread(target=self._run, name=f"aflite-run-{id(self)}", daemon=True)
        self._thread.start()
        return self

    def _keep_going(self) -> bool:
        if self._stop.is_set():
            return False
        if self.alive is not None and not self.alive():  # nobody is waiting for this run any more
            self.cancelled = True
            self._stop.set()
            return False
        return True

    def _callback(self, progress) -> bool:
        self.progress = progress
        return self._keep_going()

    def _step(self, step) -> bool:
        self.step = step
        return self._keep_going()

    def _run(self) -> None:
        try:
            self.result = self.target(_Reporter(self._callback, self._step))
        except BaseException as exc:  # surfaced to the page as st.error
            self.error = exc
        finally:
            self.finished = time.perf_counter()

    def stop(self) -> None:
        """Ask the engine to stop at its next step (within one group of fits or block of predictions)."""
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stop.is_set()

    @property
    def done(self) -> bool:
        """True when the thread has finished (with a result or an error)."""
        return self.finished is not None

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True if the run is done."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.done

    @property
    def elapsed(self) -> float:
        """Seconds since the start (until the end once finished)."""
        return (self.finished or time.perf_counter()) - self.started


@dataclass(frozen=True)
class _Reporter:
    """The engine's ``callback`` (per round), with its ``on_step`` (inside rounds) as ``.step``."""

    per_round: Callable[[Any], bool]
    step: Callable[[Any], bool]

    def __call__(self, progress: Any) -> bool:
        return self.per_round(progress)


def remaining_text(elapsed: float, done_fraction: float) -> str:
    """'about 40 s left' from the share done so far (empty until there is enough to estimate from)."""
    if done_fraction <= 0.02 or elapsed < 1.0:
        return ""
    left = elapsed * (1 - done_fraction) / done_fraction
    return f" · about {left:,.0f} s left" if left >= 1 else " · finishing"
