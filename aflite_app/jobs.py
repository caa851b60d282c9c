"""Every background job of the app in one place: start, progress, Stop, outcome.

A long action (an AFLite run, a fetch, an embedding, a recording, a study, the warm-up) never runs in the page's
script thread. Its life:

1. **start** - the page asks :func:`run_in_background` for ``prepare(spec)`` (checked in the page's thread, so a
   bad parameter shows at once); a :class:`BackgroundRun` daemon thread runs it, one per session and page
   (kept in the session under the page's key). Jobs that several sessions may ask for at once (a fetch, an
   embedding, a recording, a validation, a stability report) are *followed* through :class:`SharedJobs`: one job
   per spec for the whole server;
2. **progress** - the engine (or the job) reports after every round (``callback``) and inside rounds
   (``callback.step``); the page waits :func:`sync_wait` seconds, then a fragment polls the progress every 0.4 s;
3. **Stop** - a script button (not the fragment's: a fragment click during a full rerun was lost) stops the
   current run; the click's time is kept on that run for one rerun (:attr:`BackgroundRun.stop_clicked`), so
   a run started by the same rerun (τ moved and Stop pressed at once) stops too. The engine answers within one
   step (a group of fits or a block of predictions: well under a second on an idle server, seconds under load);
   a job that offered its result so far (:meth:`_Reporter.offer_partial`: the Filter's AFLite run, the
   Baselines comparison) answers at once instead (issue 29: Stop within 2 s everywhere) - the page shows that
   result while the job's thread ends in the background at its next step (:meth:`BackgroundRun.abandon`; it
   holds its heavy-job slot and counts in :func:`running_jobs` until it really ends). A job whose browser
   session is gone is cancelled (:func:`~aflite_app.admission.session_alive`);
4. **outcome** - the result (a stopped AFLite run is partial, ``stop_reason == "stopped_by_callback"``), or for
   shared jobs an :class:`Outcome` (value, one-sentence error, or stopped); the job's own ``prepare`` stores a
   finished result in its compute store, so the next rerun finds it there.

**Admission control** (:mod:`aflite_app.admission`): a :class:`BackgroundRun` whose target is marked
:func:`~aflite_app.admission.heavy` waits for its turn in the server's one heavy-job queue before it starts, and
shows its place in line meanwhile; Stop takes it out of the line.

Also here: :func:`start_daemon` (the server's warm-up thread) and :func:`app_threads`, the thread count of
in-app runs (available cores ÷ concurrent jobs, at least 1).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from aflite_core import _child_process

from . import settings
from .admission import HeavyJob, Ticket, session_alive
from .markup import message

_LOG = logging.getLogger(__name__)

__all__ = [
    "BackgroundRun",
    "Outcome",
    "SharedJobs",
    "Stopped",
    "StoppedWaiting",
    "app_threads",
    "as_outcome",
    "available_cores",
    "errors",
    "remaining_text",
    "run_in_background",
    "running_jobs",
    "shared_jobs",
    "start_daemon",
    "stoppable",
    "sync_wait",
    "time_left_text",
]

#: every BackgroundRun started and not yet finished in this process (for :func:`app_threads`)
_LIVE: set[BackgroundRun] = set()
_LIVE_LOCK = threading.Lock()


@contextmanager
def errors() -> Iterator[None]:
    """The app's one error boundary: a core ValueError/TypeError becomes ``st.error`` and the page stops."""
    try:
        yield
    except (ValueError, TypeError, FileNotFoundError, MemoryError) as exc:
        text = os_error_text(exc) if isinstance(exc, OSError) else str(exc) or type(exc).__name__
        st.error(message(text))  # it may quote the user's names: shown literally
        st.stop()


@dataclass(eq=False)
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
    #: time.monotonic() of a Stop click on this run whose rerun has not yet run the page (the run that rerun
    #: starts, if the click came with new parameters, stops too)
    stop_clicked: float | None = None
    #: its place in the heavy-job queue while it waits there (None: not queued, or admitted)
    ticket: Ticket | None = None
    #: the shared job this run follows (:meth:`SharedJobs.follow`): its place in the queue is this run's too
    following: BackgroundRun | None = None
    #: True once Stop was answered with the job's result so far while its thread still ran (:meth:`abandon`)
    abandoned: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    #: ``(freeze, build)`` the job offered (:meth:`_Reporter.offer_partial`), and the last ``freeze()`` taken
    _partial: tuple[Callable[[], Any], Callable[[Any], Any]] | None = None
    _frozen: Any = None
    _abandoned_at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> BackgroundRun:
        """Start the thread (returns self)."""
        self._thread = threading.Thread(target=self._run, name=f"aflite-run-{id(self)}", daemon=True)
        with _LIVE_LOCK:
            _LIVE.add(self)
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
        self._freeze()  # a round ended: the job's state is the one a stop now would give
        return self._keep_going()

    def _step(self, step) -> bool:
        self.step = step
        if self._partial is not None and self._frozen is None:
            self._freeze()  # its first step: nothing finished yet, but the partial result (none) is ready
        return self._keep_going()

    def _offer(self, freeze: Callable[[], Any], build: Callable[[Any], Any]) -> None:
        self._partial, self._frozen = (freeze, build), None

    def _freeze(self) -> None:
        if self._partial is None:
            return
        try:
            self._frozen = self._partial[0]()
        except Exception:  # no result so far to show: a Stop waits for the job's own ending, as before
            _LOG.exception("the result so far of a job could not be kept")
            self._partial = self._frozen = None

    def _run(self) -> None:
        admitted = None
        result, error = None, None
        try:
            if isinstance(self.target, HeavyJob):  # wait for a turn in the server's queue first
                admitted = self.target.queue.enter(self.target.what, self._keep_going)
                self.ticket = admitted
                if not admitted.wait():
                    raise StoppedWaiting(
                        f"Stopped before it started: {self.target.what} was waiting for its turn "
                        "(change a parameter to ask again)."
                    )
                self.ticket = None
                self.started = time.perf_counter()  # its time (and time left) counts from its turn, not the wait
            _child_process.set_enabled(settings.load().child_processes)  # a long fit: a child process Stop ends
            result = self.target(_Reporter(self._callback, self._step, self._offer, self._keep_going))
        except BaseException as exc:  # surfaced to the page as st.error
            error = exc
        finally:
            if admitted is not None:
                admitted.leave()  # its slot goes to the next in line
            self.ticket = None
            with self._lock:
                if not self.abandoned:  # an abandoned run's page shows the result it had at Stop (the same rounds)
                    self.result, self.error = result, error
                elif error is not None and not isinstance(error, Stopped | _child_process.ChildStopped):
                    _LOG.warning("a stopped job ended with %s after its page moved on", type(error).__name__)
                self.finished = time.perf_counter()
                self._partial = self._frozen = None  # its outcome is there: the copy of its state is not needed
            with _LIVE_LOCK:
                _LIVE.discard(self)

    @property
    def queued(self) -> bool:
        """True while it (or the shared job it follows) waits for its turn in the heavy-job queue."""
        run = self.following if self.following is not None else self
        ticket = run.ticket
        return ticket is not None and not ticket.admitted and not self.done

    @property
    def waiting(self) -> str | None:
        """Its place in the heavy-job queue in words while it (or the shared job it follows) waits, else None."""
        run = self.following if self.following is not None else self
        ticket = run.ticket
        return None if ticket is None or self.done else ticket.describe()

    def stop(self) -> None:
        """Ask the engine to stop at its next step (within one group of fits or block of predictions)."""
        self._stop.set()

    def abandon(self) -> bool:
        """After :meth:`stop`: take the job's result so far as its result now, and let its thread end on its own.

        Possible once the job offered its result so far (:meth:`_Reporter.offer_partial`) and reached a point
        where it took it: the result is what the job itself returns when it stops there (an AFLite run's
        completed rounds; a stopped Baselines comparison), so the page shows it at once instead of waiting for
        the step that runs (seconds under load). The thread goes on to that step, then ends; it holds its
        heavy-job slot and counts in :func:`running_jobs` until then; what it returns is dropped.

        Returns
        -------
        bool
            True when the run is done now (abandoned, or its thread had ended); False when it cannot be
            abandoned (not stopped, no result so far offered, or building it failed): wait for it as before.
        """
        with self._lock:
            if self.finished is not None or self.abandoned:
                return True
            partial, frozen = self._partial, self._frozen
            if not self._stop.is_set() or partial is None or frozen is None:
                return False
            try:
                self.result = partial[1](frozen)
            except Exception:  # the job's own stop gives the result when it ends: wait for it as before
                _LOG.exception("the result so far of a stopped job could not be built")
                return False
            self.abandoned, self._abandoned_at = True, time.perf_counter()
            return True

    @property
    def stop_requested(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stop.is_set()

    @property
    def done(self) -> bool:
        """True when the run has its outcome: its thread finished (with a result or an error), or it was abandoned."""
        return self.finished is not None or self.abandoned

    @property
    def ended(self) -> bool:
        """True when its thread has ended (an abandoned run's thread may still be finishing its step)."""
        return self.finished is not None

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True if the run is done."""
        if self._thread is not None and not self.abandoned:
            self._thread.join(timeout)
        return self.done

    @property
    def elapsed(self) -> float:
        """Seconds since the start (until the end once finished, or until it was abandoned)."""
        return (self._abandoned_at or self.finished or time.perf_counter()) - self.started


@dataclass(frozen=True)
class _Reporter:
    """The engine's ``callback`` (per round), with its ``on_step`` (inside rounds) as ``.step``."""

    per_round: Callable[[Any], bool]
    step: Callable[[Any], bool]
    offer: Callable[[Callable[[], Any], Callable[[Any], Any]], None] | None = None
    keep_going: Callable[[], bool] | None = None

    def offer_partial(self, freeze: Callable[[], Any], build: Callable[[Any], Any]) -> None:
        """Let Stop answer at once with the job's result so far (:meth:`BackgroundRun.abandon`).

        ``freeze()`` is called in the job's thread at every point where the job's state is the one its own stop
        would return - after each round's callback, and at its first step - and must copy what later work
        changes in place; ``build(frozen)`` makes the result from the last one, in the page's thread, when Stop
        is pressed while a step still runs. The job must return the same result when it stops there itself.
        """
        if self.offer is not None:
            self.offer(freeze, build)

    def stopping(self) -> bool:
        """True once the job was asked to stop (Stop, or its session gone): a ``stop()`` for a child process."""
        return self.keep_going is not None and not self.keep_going()

    @property
    def run(self) -> BackgroundRun | None:
        """The BackgroundRun reporting (for :meth:`SharedJobs.follow`)."""
        return getattr(self.per_round, "__self__", None)

    def __call__(self, progress: Any) -> bool:
        return self.per_round(progress)


def remaining_text(elapsed: float, done_fraction: float) -> str:
    """'about 40 s left' from the share done so far (empty until there is enough to estimate from)."""
    if done_fraction <= 0.02 or elapsed < 1.0:
        return ""
    left = elapsed * (1 - done_fraction) / done_fraction
    return f" · about {left:,.0f} s left" if left >= 1 else " · finishing"


def time_left_text(seconds_left: float | None, elapsed: float, done_fraction: float) -> str:
    """' · about 40 s left' from an estimate of the seconds left, else :func:`remaining_text`'s extrapolation.

    The estimate is a shape model's (e.g. :class:`aflite_core.engine.estimates.RunningEstimate`); never negative.
    """
    if seconds_left is None:
        return remaining_text(elapsed, done_fraction)
    if done_fraction >= 1.0 or seconds_left <= 0:
        return " · finishing" if done_fraction < 1.0 else ""
    return f" · about {seconds_left:,.0f} s left" if seconds_left >= 1 else " · finishing"


class Stopped(ValueError):
    """A background job was stopped on request (the page says so; it is not an error of the data)."""


class StoppedWaiting(Stopped):
    """A heavy job left the queue before its turn (Stop, or its session gone): it never ran."""


class SharedJobs:
    """Slow jobs (a fetch, an embedding) shared by every session: one job per spec at a time.

    A session does not run the job itself: its own :class:`~aflite_app.jobs.BackgroundRun` (started by
    :func:`aflite_app.jobs.run_in_background`) *follows* the shared job with :meth:`follow`, so a rerun, a second
    tab or a second session asking for the same spec joins the job already running instead of starting it
    again. A follower that is stopped leaves; the job itself is stopped when nobody follows it any more.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[Hashable, BackgroundRun] = {}
        self._followers: dict[Hashable, int] = {}

    def running(self, spec: Hashable) -> bool:
        """True while a job for ``spec`` runs (and is not being stopped)."""
        with self._lock:
            job = self._jobs.get(spec)
            return job is not None and not job.done and not job.stop_requested

    def follow(self, spec: Hashable, target: Callable[[Callable], Any], callback: Callable, poll: float = 0.1) -> Any:
        """Join (or start) the job for ``spec`` and wait for its result, passing its progress to ``callback``.

        ``target(callback)`` is the job (as for :class:`BackgroundRun`); ``callback(progress) -> bool`` is the
        follower's, and False ends the wait with :class:`Stopped`. A follower's ``callback.step`` (a
        :class:`BackgroundRun`'s reporter has one) gets the job's step progress too. The job's error is raised
        here.
        """
        with self._lock:
            job = self._jobs.get(spec)
            if job is None or job.done or job.stop_requested:
                job = BackgroundRun(spec, target).start()
                self._jobs[spec] = job
                self._followers[spec] = 0
            self._followers[spec] += 1
        owner = getattr(callback, "run", None)  # the follower's BackgroundRun: it shows the job's place in line
        if owner is not None:
            owner.following = job
        try:
            step = getattr(callback, "step", None)
            while not job.wait(poll):
                if step is not None and job.step is not None and not step(job.step):
                    raise Stopped("Stopped.")
                if not callback(job.progress):
                    raise Stopped("Stopped.")
            if job.error is not None:
                raise job.error
            return job.result
        finally:
            with self._lock:
                if self._jobs.get(spec) is job:
                    self._followers[spec] -= 1
                    if job.done:
                        del self._jobs[spec], self._followers[spec]
                    elif self._followers[spec] == 0:
                        job.stop()  # nobody waits for it any more


@st.cache_resource(max_entries=1)
def shared_jobs() -> SharedJobs:
    """The server's one registry of shared background jobs."""
    return SharedJobs()


@dataclass(frozen=True)
class Outcome:
    """What a shared job gave a session: its ``value``, or the ``error`` in one sentence, or ``stopped``.

    The background wait returns this instead of raising, so the page shows the message next to the control
    that asked for the job and goes on drawing the rest of the page.
    """

    value: Any = None
    error: str | None = None
    stopped: bool = False

    @property
    def ok(self) -> bool:
        """True when the job gave a value."""
        return self.error is None and not self.stopped


def os_error_text(exc: OSError) -> str:
    """One sentence for a failed file operation: Python's own text names the file by its path on the server.

    An ``OSError`` raised with a sentence of its own (no file name, no error number) keeps it.
    """
    if exc.filename is None and exc.errno is None and str(exc):
        return str(exc)
    return f"A file on the server could not be read or written ({type(exc).__name__}); try again, or tell its admin."


def as_outcome(run: Callable[[], Any], what: str) -> Outcome:
    """Run ``run()`` and wrap its result, its stop or its error (``what`` names the job in a failure)."""
    try:
        return Outcome(value=run())
    except Stopped:
        return Outcome(stopped=True)
    except OSError as exc:
        return Outcome(error=os_error_text(exc))
    except (ValueError, TypeError, ImportError, MemoryError) as exc:
        return Outcome(error=str(exc).strip() or type(exc).__name__)
    except Exception as exc:  # never a traceback in the browser: one sentence, the details on the console
        # an unexpected exception's own text may hold anything (a server path, a value of a file): not shown
        _LOG.exception("%s failed", what)
        return Outcome(error=f"{what} failed unexpectedly ({type(exc).__name__}); the details are in the server's log.")


def stoppable(callback: Callable[[Any], bool]) -> Callable[[Any], None]:
    """A core progress callback (its return value is ignored) that ends the job once ``callback`` says stop."""

    def report(progress: Any) -> None:
        if not callback(progress):
            raise Stopped("Stopped.")

    return report


def sync_wait() -> float:
    """Seconds a page waits for a run before showing the progress bar (fast runs then appear at once).

    ``AFLITE_APP_SYNC_WAIT`` overrides the default 1.5 s (tests set it high so runs finish within one script run).
    """
    return settings.load().sync_wait_s


#: seconds a stopped run is awaited before its result so far is taken instead (:meth:`BackgroundRun.abandon`): a
#: run that ends at once keeps its own ending; one in a long step answers Stop within this plus the page's render
STOP_GRACE_S = 0.25

#: seconds a heavy job (or one asked ``quick``) is awaited before its progress bar and Stop show (issue 25: a
#: job shows progress, time left and Stop within 2 s; such a job never ends within the default sync wait anyway)
HEAVY_SYNC_WAIT_S = 0.3


def _first_wait(target: Any, quick: bool) -> float:
    """Seconds to await a job before its progress bar: :func:`sync_wait`, at most HEAVY_SYNC_WAIT_S for a heavy one.

    A sync wait raised above its default (tests that await runs within one script run) is kept as it is.
    """
    wait = sync_wait()
    if (quick or isinstance(target, HeavyJob)) and wait <= settings.Settings.sync_wait_s:
        return min(wait, HEAVY_SYNC_WAIT_S)
    return wait


def run_in_background(
    state_key: str | tuple[str, str],
    spec: Any,
    prepare: Callable[[Any], Callable],
    describe: Callable,
    *,
    stop_key: str,
    stop_help: str,
    stopping: str,
    restart: bool = False,
    block: bool = True,
    quick: bool = False,
) -> Any:
    """The result for ``spec``, computed in a background thread with a progress bar and a Stop button.

    Starts (or keeps) a :class:`~aflite_app.jobs.BackgroundRun` in ``st.session_state[state_key]`` (or, for a
    ``(page key, entry)`` pair, in that entry of the page's dict: :func:`aflite_app.state.page_state`) running
    ``prepare(spec)``; a run asked for with other parameters is stopped. Fast runs are simply awaited
    (:func:`sync_wait`); slower ones show a fragment that polls the progress
    (``describe(round_progress_or_None, elapsed_seconds, step_progress_or_None) -> (fraction, text)``) with a
    Stop button, and the page stops until the result is there. Stop, or a run asked for with other parameters,
    ends the old run within one step of its round; a run whose browser session is gone is cancelled
    (:func:`~aflite_app.admission.session_alive`). Errors show as ``st.error``. ``restart`` starts over a
    finished run. With ``block=False`` the page goes on below the progress bar while the job runs (the call
    returns None), and reruns once it is done. A heavy job (:func:`~aflite_app.admission.heavy`), or any with
    ``quick``, shows its progress and Stop after at most :data:`HEAVY_SYNC_WAIT_S` (issue 25: within 2 s).
    """
    holder, entry = _slot(state_key)
    run = holder.get(entry)
    asked = None if run is None else run.stop_clicked
    if run is not None:
        run.stop_clicked = None  # a click counts for the one rerun it started
    stop_now = asked is not None and time.monotonic() - asked < 10  # Stop clicked in the rerun that got here
    stale = run is None or run.key != spec or (run.done and run.error is None and run.result is None)
    if stale or (restart and run.done):
        if run is not None and not run.done:
            run.stop()  # other parameters were asked for: the old run is no longer wanted (stops within a step)
        with errors():
            run = BackgroundRun(spec, prepare(spec), alive=session_alive())
            if stop_now:  # τ moved and Stop pressed at once: the click stopped the old run; this one stops too
                run.stop()
            run.start()
        holder[entry] = run
    first = _first_wait(run.target, quick)
    deadline = time.perf_counter() + (min(first, STOP_GRACE_S) if run.stop_requested else first)
    while not run.wait(min(0.05, max(0.0, deadline - time.perf_counter()))):
        if time.perf_counter() >= deadline or run.waiting is not None:
            break  # slow, or waiting for its turn in the heavy-job queue: show its progress (or place) now
    if run.stop_requested:
        run.abandon()  # stopped in a step that runs on: its result so far now, the thread ends by itself
    if isinstance(run.error, StoppedWaiting):  # Stop pressed while it waited its turn: said, not an error
        st.warning(message(str(run.error)))
        st.stop()
    if run.error is not None:
        with errors():
            raise run.error
    if run.done:
        return run.result

    @st.fragment(run_every=0.4)
    def progress_panel() -> None:
        holder, entry = _slot(state_key)
        current = holder[entry]
        if current.done or (current.stop_requested and current.abandon()):
            st.rerun(scope="app")
        waiting = current.waiting
        if waiting is not None:  # a heavy job waiting for its turn: its place in line, Stop takes it out
            st.progress(0.0, text=message(waiting))
        else:
            fraction, text = describe(current.progress, current.elapsed, current.step)
            st.progress(fraction, text=message(text))  # it may name a column or a representation
        if current.stop_requested:
            st.caption(stopping)

    progress_panel()
    if not run.stop_requested:
        # The Stop button belongs to the script, not to the polling fragment: a click on a fragment's button that
        # arrives while the whole page is rerunning (e.g. just after a τ change, when the previous run's Stop is
        # still on screen) was dropped by Streamlit - measured: 4 of 5 such clicks lost, the run went on to its
        # end. A script button's click interrupts the rerun, and its callback stops whichever run is current.
        st.button("Stop", key=stop_key, help=stop_help, on_click=_stop_current, args=(state_key,))
    if block:
        st.stop()
    return None


def _slot(state_key: str | tuple[str, str]) -> tuple[MutableMapping, str]:
    """Where a page keeps its run: ``st.session_state`` under ``state_key``, or a page's dict under its entry."""
    if isinstance(state_key, tuple):
        page, entry = state_key
        return st.session_state.setdefault(page, {}), entry
    return st.session_state, state_key


def _stop_current(state_key: str | tuple[str, str]) -> None:
    """Stop button callback: stop the run now kept under ``state_key`` (the newest one asked for)."""
    holder, entry = _slot(state_key)
    current = holder.get(entry)
    if current is not None and not current.done:
        current.stop()  # the rerun this click starts waits for the partial result like any run (sync_wait)
    # the click may come with new parameters (τ moved just before): the run this rerun starts must stop as well
    if current is not None:
        current.stop_clicked = time.monotonic()


def start_daemon(target: Callable[[], Any], name: str) -> threading.Thread:
    """Start ``target`` in a daemon thread named ``name`` that nobody waits for (the server's warm-up)."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def running_jobs() -> int:
    """Background runs of this process that have started and not finished (every session's), queued ones aside.

    An abandoned run (:meth:`BackgroundRun.abandon`) counts until its thread really ends: it still uses a core.
    """
    with _LIVE_LOCK:
        return sum(1 for run in _LIVE if not run.ended and not run.queued)  # a queued job uses no core


def available_cores() -> int:
    """CPU cores this process may use (its affinity where the platform says, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def app_threads(starting: int = 1) -> int:
    """Threads for an in-app AFLite run on the CPU: available cores ÷ concurrent jobs, at least 1.

    ``starting`` counts the job about to start (it is not running yet).
    """
    return max(1, available_cores() // max(1, running_jobs() + starting))
