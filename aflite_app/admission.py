"""Admission control: the server's one queue of heavy jobs, and whether a job's browser session is still open.

A heavy job (an AFLite run above the interactive size, UMAP, a stability report, sentence embeddings) is marked
with :func:`heavy` where it is prepared (Baselines, computed in the page's thread, hold a slot with
:func:`heavy_turn`), and waits for its turn in the server's one :class:`HeavyQueue` (:func:`heavy_queue`;
``AFLITE_HEAVY_JOBS`` run at once, default one) before it starts (:class:`aflite_app.jobs.BackgroundRun` does the
waiting). While it waits its page shows its place ("Waiting: 2nd in line, behind a UMAP projection"); Stop takes
it out of the line, and a job whose browser session is gone (:func:`session_alive`) is dropped from it. Light jobs
(an AFLite run of the interactive size, a fetch) never wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from . import settings
from .markup import message

__all__ = ["HeavyJob", "HeavyQueue", "Ticket", "heavy", "heavy_queue", "heavy_turn", "session_alive"]


def session_alive() -> Callable[[], bool] | None:
    """``alive() -> bool`` for a background run: False once this browser session is gone (tab closed, reload).

    None outside a running Streamlit server (tests, scripts): such runs are never cancelled this way.
    """
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return None
    session_id = ctx.session_id

    def alive() -> bool:
        try:
            if not Runtime.exists():
                return True
            return bool(Runtime.instance().is_active_session(session_id))
        except Exception:  # a Streamlit without this API: never cancel on its behalf
            return True

    return alive


# -- admission control: one server-wide queue of heavy jobs -------------------------------------------------------
_ORDINALS = {1: "next", 2: "2nd", 3: "3rd"}


def _ordinal(n: int) -> str:
    return _ORDINALS.get(n, f"{n}th")


class Ticket:
    """A heavy job's place in the :class:`HeavyQueue`: waiting, then admitted (running), then gone."""

    def __init__(self, queue: HeavyQueue, what: str, keep_going: Callable[[], bool]) -> None:
        self.queue, self.what, self.keep_going = queue, what, keep_going
        self.admitted = False
        self.dropped = False
        self.since = time.monotonic()

    def wait(self, poll: float = 0.1) -> bool:
        """Wait for this job's turn; False (and out of the line) once ``keep_going()`` says stop."""
        return self.queue.wait(self, poll)

    def leave(self) -> None:
        """Out of the queue (waiting or running); the next in line may start."""
        self.queue.leave(self)

    def describe(self) -> str | None:
        """'Waiting: 2nd in line, behind a UMAP projection …' (None once admitted)."""
        return self.queue.describe(self)


class HeavyQueue:
    """The server's one queue of heavy jobs: ``slots`` run at once, the others wait in the order they came.

    A waiting job is dropped when its ``keep_going()`` answers False - Stop was pressed, or its browser session is
    gone (:func:`session_alive`) - so a closed tab never holds a place, and the next job in line starts.

    Parameters
    ----------
    slots : int
        Heavy jobs running at once (``AFLITE_HEAVY_JOBS``, :attr:`aflite_app.settings.Settings.heavy_jobs`).
    """

    def __init__(self, slots: int = 1) -> None:
        self.slots = max(1, int(slots))
        self._cond = threading.Condition()
        self._running: list[Ticket] = []
        self._waiting: list[Ticket] = []

    def enter(self, what: str, keep_going: Callable[[], bool] = lambda: True) -> Ticket:
        """Join the line as ``what`` (e.g. "a UMAP projection"); admitted at once when a slot is free."""
        ticket = Ticket(self, what, keep_going)
        with self._cond:
            self._waiting.append(ticket)
            self._admit()
        return ticket

    def _admit(self) -> None:  # under the lock
        for ticket in list(self._waiting):
            if len(self._running) >= self.slots:
                break
            self._waiting.remove(ticket)
            ticket.admitted = True
            self._running.append(ticket)
        self._cond.notify_all()

    def wait(self, ticket: Ticket, poll: float = 0.1) -> bool:
        """Block until ``ticket`` is admitted (True), or its ``keep_going()`` says stop (False, out of the line)."""
        while True:
            with self._cond:
                if ticket.admitted:
                    break
                self._cond.wait(poll)
                if ticket.admitted:
                    break
            if not ticket.keep_going():  # asked outside the lock: it may ask Streamlit's runtime
                ticket.dropped = True
                self.leave(ticket)
                return False
        if not ticket.keep_going():  # admitted just as it was stopped: give the slot back at once
            ticket.dropped = True
            self.leave(ticket)
            return False
        return True

    def wait_turn(self, ticket: Ticket, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``ticket``'s turn; True once admitted (nothing else is asked)."""
        with self._cond:
            if not ticket.admitted:
                self._cond.wait(timeout)
            return ticket.admitted

    def leave(self, ticket: Ticket) -> None:
        """Take ``ticket`` out of the queue (waiting or running); the next in line is admitted."""
        with self._cond:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
            if ticket in self._running:
                self._running.remove(ticket)
            self._admit()

    def place(self, ticket: Ticket) -> int | None:
        """1 for the next in line, 2 for the one after it …; None once admitted or gone."""
        with self._cond:
            return self._waiting.index(ticket) + 1 if ticket in self._waiting else None

    def running(self) -> list[str]:
        """What runs now, oldest first (e.g. ``["a UMAP projection"]``)."""
        with self._cond:
            return [t.what for t in self._running]

    def waiting(self) -> list[str]:
        """What waits, in its order."""
        with self._cond:
            return [t.what for t in self._waiting]

    def describe(self, ticket: Ticket) -> str | None:
        """The page's line for a waiting job: its place, what runs before it, how many run at once."""
        with self._cond:
            if ticket not in self._waiting:
                return None
            place = self._waiting.index(ticket) + 1
            running = [t.what for t in self._running]
        behind = " and ".join(running[:2]) + (f" and {len(running) - 2} more" if len(running) > 2 else "")
        ahead = f" and {place - 1} more waiting" if place > 1 else ""
        at_once = "one heavy job runs" if self.slots == 1 else f"{self.slots} heavy jobs run"
        waited = time.monotonic() - ticket.since
        return (
            f"Waiting: {_ordinal(place)} in line, behind {behind or 'a job finishing'}{ahead} "
            f"({at_once} at a time on this server; waiting {waited:.0f} s; Stop leaves the line)"
        )


@dataclass(frozen=True)
class HeavyJob:
    """A background job's ``target`` that waits for its turn in ``queue`` before it runs (see :func:`heavy`)."""

    target: Callable[[Callable], Any]
    what: str
    queue: HeavyQueue

    def __call__(self, callback: Callable) -> Any:
        """Run the job (its :class:`BackgroundRun` has waited for its turn before calling this)."""
        return self.target(callback)


@st.cache_resource(max_entries=1)
def heavy_queue() -> HeavyQueue:
    """The server's one :class:`HeavyQueue` (``AFLITE_HEAVY_JOBS`` slots, read when the server first asks)."""
    return HeavyQueue(settings.load().heavy_jobs)


def heavy(target: Callable[[Callable], Any], what: str) -> HeavyJob:
    """Mark a job's ``target`` as heavy: its :class:`BackgroundRun` waits for a turn in :func:`heavy_queue` first.

    Call it where the job is prepared (the page's thread: the queue is a server resource). ``what`` names the
    job for the others in line, with its article: "an AFLite run on 200,000 rows", "a UMAP projection".
    """
    return HeavyJob(target, what, heavy_queue())


@contextmanager
def heavy_turn(what: str, *, stop_key: str, poll: float = 0.4) -> Iterator[None]:
    """Hold a slot of :func:`heavy_queue` while the page's own thread computes ``what`` (the Baselines page).

    Waits for its turn first, showing its place in line and a Stop button; each update of that line lets
    Streamlit end the wait (a click, another page, a closed tab interrupt the script there, and the slot is given
    back). A Stop click is remembered for the one rerun it starts, which says so and stops the page instead of
    joining the line again. Outside a running app (a script, a test without a session) the wait is not drawn.
    """
    flag = f"{stop_key}-stopped"
    if st.session_state.pop(flag, False):
        st.info(f"Stopped: {what} waited for its turn and did not run. Change an option to ask again.")
        st.stop()
    queue, alive = heavy_queue(), session_alive()
    ticket = queue.enter(what, alive or (lambda: True))
    try:
        if not ticket.admitted:
            holder = st.empty()
            with holder.container():
                line = st.empty()
                st.button("Stop", key=stop_key, on_click=_set_flag, args=(flag,), help="Leave the line; nothing runs")
            while not queue.wait_turn(ticket, poll):
                line.progress(0.0, text=message(ticket.describe() or f"{what} is starting"))  # a rerun ends it here
                if alive is not None and not alive():
                    st.stop()  # the tab is gone: nobody waits for this page
            holder.empty()
        yield
    finally:
        ticket.leave()


def _set_flag(flag: str) -> None:
    st.session_state[flag] = True
