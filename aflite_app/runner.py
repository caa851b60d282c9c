"""Run AFLite in a background thread so the page can show progress and a Stop button that really stops it.

The engine reports after every round through its callback; :class:`BackgroundRun` records that progress and
answers ``False`` once :meth:`BackgroundRun.stop` was called, which ends the run cleanly with a partial
result (``result.stop_reason == "stopped_by_callback"``). No Streamlit here: pages poll the object.
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
        ``target(callback) -> result``; it must pass ``callback`` on to the engine.
    """

    key: Any
    target: Callable[[Callable], Any]
    progress: Any = None
    result: Any = None
    error: BaseException | None = None
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> BackgroundRun:
        """Start the thread (returns self)."""
        self._thread = threading.Thread(target=self._run, name=f"aflite-run-{id(self)}", daemon=True)
        self._thread.start()
        return self

    def _callback(self, progress) -> bool:
        self.progress = progress
        return not self._stop.is_set()

    def _run(self) -> None:
        try:
            self.result = self.target(self._callback)
        except BaseException as exc:  # surfaced to the page as st.error
            self.error = exc
        finally:
            self.finished = time.perf_counter()

    def stop(self) -> None:
        """Ask the engine to stop after the round in progress."""
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
