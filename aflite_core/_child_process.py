"""Run one library call that cannot be interrupted (a scikit-learn fit, a clustering) so that a stop ends it at once.

A single ``MLPClassifier.fit`` or ``GaussianMixture.fit`` runs in compiled code for seconds without a point where
a stop callback could be asked. :func:`run_stoppable` runs such a call in a child process (multiprocessing's
``forkserver`` context where the platform has it, else ``spawn``; never ``fork``, which is unsafe in a threaded
server), asks ``stop()`` every :data:`POLL_S` seconds while it runs, and terminates the child when the answer is
yes - so a stop is answered within a fraction of a second whatever the call does.

* **Only with a stop callback**: without one (a library call, a script) the call runs in this process, as before;
  with :data:`ENABLED` False (:func:`set_enabled`; the app's ``AFLITE_CHILD_PROCESSES``) too.
* **The same result**: the child calls the same function on the same arguments under the same BLAS/OpenMP
  thread limits as this thread has (read with ``threadpoolctl``), so a seeded fit gives bit-identical results.
* **Arrays travel as raw bytes**: arguments and the result are pickled with protocol 5, and every contiguous
  numpy buffer goes through the pipe out of band, as its bytes (no pickling copy; one copy into the child,
  received into a writable buffer). A read-only memory-mapped array (``np.load(..., mmap_mode="r")``, an opened
  run's features) travels as its file instead - the child maps the same file, nothing is copied - and any other
  memory-mapped array as its bytes (numpy would pickle one into a full in-memory copy first).
* **A crash is one sentence**: a child that dies (killed, out of memory, a segfault) raises
  :class:`ChildProcessFailed` (a ValueError) naming the step and the exit code; an exception the call raises is
  raised here again (its type and message; the child's traceback is not kept).
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "ENABLED",
    "MIN_CELLS",
    "POLL_S",
    "ChildProcessFailed",
    "ChildStopped",
    "NoChildProcess",
    "Worker",
    "run_stoppable",
    "set_enabled",
]

#: run stoppable calls in a child process (False: always in this process; the app's ``AFLITE_CHILD_PROCESSES``)
ENABLED: bool = True
#: seconds between two questions to ``stop()`` while the child runs (10 Hz or more)
POLL_S: float = 0.05
#: work below this size (a caller's ``cells``: rows × features × repeats) runs here even with a stop callback: a
#: child costs about 0.1-0.5 s to start and answer on a busy 2-core machine, and such a call ends within about a
#: second anyway (an MLP on 2,000 × 50 rows took 0.9 s there; a logistic regression on 5,000 × 100, 0.7 s)
MIN_CELLS: int = 100_000
#: modules the fork server imports once, so each child starts without importing them again
_PRELOAD = (
    "__main__",
    "numpy",
    "sklearn.neural_network",
    "sklearn.linear_model",
    "sklearn.mixture",
    "aflite_core._child_process",
)

_CONTEXT: Any = None
_CONTEXT_LOCK = threading.Lock()

#: how much lower a child's CPU priority is than its parent's (an ``os.nice`` increment): a computation in a child
#: (UMAP, a Baselines piece, a fit) runs at full speed on an idle machine but yields the cores to the server's own
#: interactive work (a box selection while UMAP runs took 2.5 s at 550,000 rows on 2 cores without it)
CHILD_NICENESS = 5


class ChildStopped(Exception):
    """``stop()`` answered True while the call ran in its child process: the child was terminated."""


class NoChildProcess(RuntimeError):
    """No child process can be started here (e.g. the host forbids new processes): run the work in this one."""


class ChildProcessFailed(ValueError):
    """The child process running a call ended without a result (killed, out of memory, a crash)."""


def set_enabled(enabled: bool) -> None:
    """Allow (True) or forbid (False) child processes for stoppable calls (where processes may not be started)."""
    global ENABLED
    ENABLED = bool(enabled)


def _context() -> Any:
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
            if ctx.get_start_method() == "forkserver":
                ctx.set_forkserver_preload(list(_PRELOAD))
            _CONTEXT = ctx
        return _CONTEXT


def _thread_limits() -> dict[str, int]:
    """BLAS/OpenMP thread counts of the calling thread per API (``{"blas": 1, "openmp": 2}``), to apply in the child."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return {}
    limits: dict[str, int] = {}
    for info in threadpool_info():
        api, n = info.get("user_api"), info.get("num_threads")
        if api and n:
            limits[api] = min(limits.get(api, n), int(n))
    return limits


def _mapped(filename: str, dtype: str, shape: tuple, offset: int, order: str) -> np.memmap:
    """The child's side of a memory-mapped array sent by file (:class:`_Pickler`): the same file, read-only."""
    return np.memmap(filename, dtype=np.dtype(dtype), mode="r", offset=offset, shape=shape, order=order)


class _Pickler(pickle.Pickler):
    """Protocol 5 with memory-mapped arrays sent by file (read-only, whole mapping) or as out-of-band bytes."""

    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, np.memmap):
            return NotImplemented
        whole = getattr(obj, "_mmap", None) is not None and obj.base is obj._mmap  # not a slice of one
        if whole and obj.mode == "r" and obj.filename and (obj.flags.c_contiguous or obj.flags.f_contiguous):
            order = "C" if obj.flags.c_contiguous else "F"
            return _mapped, (str(obj.filename), obj.dtype.str, obj.shape, int(obj.offset), order)
        return np.asarray, (obj.view(np.ndarray),)  # a plain array's bytes go out of band (no in-memory copy)


def _send(conn: Any, obj: Any) -> None:
    """Pickle ``obj`` (protocol 5) and send it, its contiguous buffers as raw bytes after it."""
    buffers: list[pickle.PickleBuffer] = []
    out = io.BytesIO()
    _Pickler(out, protocol=5, buffer_callback=buffers.append).dump(obj)
    head = out.getvalue()
    raws = [b.raw() for b in buffers]
    conn.send((len(head), [r.nbytes for r in raws]))
    conn.send_bytes(head)
    for raw in raws:
        conn.send_bytes(raw)


def _receive(conn: Any) -> Any:
    """The object :func:`_send` sent (its buffers received into writable memory)."""
    _head_size, sizes = conn.recv()
    head = conn.recv_bytes()
    buffers = []
    for size in sizes:
        buf = bytearray(size)
        if size:
            conn.recv_bytes_into(buf)
        else:
            conn.recv_bytes()
        buffers.append(buf)
    return pickle.loads(head, buffers=buffers)


def _outcome(func: Callable[..., Any], args: tuple, kwargs: dict, limits: dict[str, int]) -> tuple[bool, Any]:
    """``(True, value)`` of ``func(*args, **kwargs)`` under ``limits``, or ``(False, exception)`` (picklable)."""
    try:
        if limits:
            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=limits):
                return True, func(*args, **kwargs)
        return True, func(*args, **kwargs)
    except BaseException as exc:  # raised again in the parent
        try:
            pickle.dumps(exc)
            return False, exc
        except Exception:
            return False, RuntimeError(f"{type(exc).__name__}: {exc}")


def _child_main(conn: Any, serve: bool = False) -> None:
    """The child's side: receive a call, run it under the parent's thread limits, send the outcome.

    With ``serve`` (a :class:`Worker`) the first call's value is kept as the state, and every later call is
    ``func(state, *args, **kwargs)``, until the parent closes the pipe.
    """
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: a platform without os.nice
        os.nice(CHILD_NICENESS)
    state: Any = None
    first = True
    try:
        while True:
            try:
                func, args, kwargs, limits = _receive(conn)
            except BaseException:  # the parent is gone (or closed the pipe): nothing more to answer
                return
            if serve and not first:
                args = (state, *args)
            ok, value = _outcome(func, args, kwargs, limits)
            if serve and first:
                state, value = value, None  # the state stays here; the parent learns it is ready
            first = False
            _send(conn, (ok, value))
            if not serve or not ok:
                return
    except (BrokenPipeError, OSError):
        return
    finally:
        conn.close()


def _exit_text(code: int | None) -> str:
    if code is None:
        return "did not end"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (perhaps out of memory)" if -code == signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"ended with exit code {code}"


def _failed(what: str, code: int | None) -> ChildProcessFailed:
    return ChildProcessFailed(
        f"The worker process of {what} {_exit_text(code)} before it answered: nothing was computed; "
        "try again, or run it in the server's own process (child processes off)."
    )


def run_stoppable(
    func: Callable[..., Any],
    *args: Any,
    stop: Callable[[], bool] | None = None,
    what: str = "the computation",
    cells: int | None = None,
    **kwargs: Any,
) -> Any:
    """``func(*args, **kwargs)``, in a child process that ``stop()`` ends within :data:`POLL_S` seconds.

    Parameters
    ----------
    func : callable
        A module-level function (it is pickled by reference); its arguments and result must pickle.
    *args, **kwargs
        Its arguments (numpy arrays travel as raw bytes).
    stop : callable, optional
        ``stop() -> bool``, asked every :data:`POLL_S` seconds while the child runs: True terminates the child
        and raises :class:`ChildStopped`; an exception it raises (e.g. a caller's own "interrupted") terminates
        the child and propagates. None (or :data:`ENABLED` False): ``func`` runs here, in this thread, and
        ``stop`` is not asked.
    what : str, default="the computation"
        Names the call in the one-sentence error of a child that crashed ("the MLP fit").
    cells : int, optional
        The call's size (rows × features × repeats): below :data:`MIN_CELLS` it runs here (it ends soon
        anyway). None: a child whatever the size.

    Returns
    -------
    object
        What ``func`` returned (bit-identical to an in-process call with the same seeds).

    Raises
    ------
    ChildStopped
        ``stop()`` said True.
    ChildProcessFailed
        The child ended without an answer (killed, a crash).

    Examples
    --------
    >>> import operator
    >>> run_stoppable(operator.add, 2, 3)  # no stop callback: runs here
    5
    """
    if stop is None or not ENABLED or (cells is not None and cells < MIN_CELLS):
        return func(*args, **kwargs)
    child = _Child(what, serve=False)
    try:
        return child.ask(func, args, kwargs, stop)
    except _NotStarted:  # no child process here: the call runs in this process, as without a stop callback
        return func(*args, **kwargs)
    finally:
        child.close()


class _NotStarted(Exception):
    """The child process could not be started (e.g. the host forbids new processes)."""


class _Child:
    """One child process and its pipe: started in a thread with its first call; answers asked with ``stop()``."""

    def __init__(self, what: str, serve: bool) -> None:
        ctx = _context()
        self.what = what
        self.parent, self._child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_child_main, args=(self._child, serve), name="aflite-stoppable", daemon=True)
        self._lock = threading.Lock()
        self._started, self._closed = threading.Event(), threading.Event()
        self._unstarted: list[BaseException] = []
        self._launched = False

    def _launch(self, payload: tuple) -> None:
        """Start the child, then send it the call - in a thread, so stop() is asked from the first moment.

        The first child of a process waits for the fork server to start (seconds: it imports scikit-learn once),
        and a large argument fills the pipe until the child has read it.
        """
        try:
            self.proc.start()
        except BaseException as exc:  # e.g. the host forbids new processes
            self._unstarted.append(exc)
            return
        finally:
            self._child.close()
        with self._lock:
            if self._closed.is_set():  # stopped while it started
                _end(self.proc)
                return
            self._started.set()
        self._send(payload)

    def _send(self, payload: tuple) -> None:
        try:
            _send(self.parent, payload)
        except BaseException:  # the child died before it read everything: reported by the wait in ask()
            return

    def ask(self, func: Callable[..., Any], args: tuple, kwargs: dict, stop: Callable[[], bool]) -> Any:
        """Send ``func(*args, **kwargs)`` and wait for its answer, asking ``stop()`` every :data:`POLL_S` s."""
        payload = (func, args, kwargs, _thread_limits())
        if not self._launched:
            self._launched = True
            threading.Thread(target=self._launch, args=(payload,), name="aflite-stoppable-start", daemon=True).start()
        else:
            threading.Thread(target=self._send, args=(payload,), name="aflite-stoppable-send", daemon=True).start()
        proc, parent = self.proc, self.parent
        while True:
            if self._started.is_set() and parent.poll(POLL_S):
                try:
                    ok, value = _receive(parent)
                except (EOFError, OSError):
                    proc.join(1.0)
                    raise _failed(self.what, proc.exitcode) from None
                if ok:
                    return value
                raise value
            if not self._started.is_set():
                if self._unstarted:
                    raise _NotStarted from self._unstarted[0]
                time.sleep(POLL_S)
            if stop():
                raise ChildStopped(f"{self.what} was stopped.")
            if self._started.is_set() and not proc.is_alive() and not parent.poll(0):
                proc.join(0.1)
                raise _failed(self.what, proc.exitcode)

    @property
    def usable(self) -> bool:
        """True while the child runs (or is starting) and was not closed."""
        return (
            not self._closed.is_set() and not self._unstarted and (not self._started.is_set() or self.proc.is_alive())
        )

    def close(self) -> None:
        """End the child (terminated if it still runs) and close the pipe."""
        with self._lock:
            self._closed.set()
            if self._started.is_set():
                _end(self.proc)
        self.parent.close()


class Worker:
    """A child process that keeps a state across calls (a loaded model), and that a stop ends.

    ``Worker(setup, *setup_args, what=...)``: the first :meth:`call` starts the child, which computes
    ``state = setup(*setup_args)`` once (e.g. loads a model); each call then runs ``func(state, *args, **kwargs)``
    there. A stop (or a crash) ends the child; the next call starts a fresh one (and computes the state again).
    Calls take turns (one lock).

    Parameters
    ----------
    setup : callable
        A module-level function; its arguments must pickle (its value stays in the child).
    *setup_args
        Its arguments.
    what : str
        Names the work in the one-sentence error of a child that crashed.
    """

    def __init__(self, setup: Callable[..., Any], *setup_args: Any, what: str = "the computation") -> None:
        self.setup, self.setup_args, self.what = setup, setup_args, what
        self._lock = threading.Lock()
        self._child: _Child | None = None
        self._ready = False

    @property
    def ready(self) -> bool:
        """True while its child runs with its state computed (e.g. the model loaded): the next call starts at once."""
        child = self._child
        return self._ready and child is not None and child.usable

    def call(self, func: Callable[..., Any], *args: Any, stop: Callable[[], bool], **kwargs: Any) -> Any:
        """``func(state, *args, **kwargs)`` in the child, ``stop()`` asked every :data:`POLL_S` s.

        As in :func:`run_stoppable`: True terminates the child (:class:`ChildStopped`). Raises
        :class:`NoChildProcess` when no child process can be started here (the caller runs the work itself).
        """
        with self._lock:
            try:
                if self._child is None or not self._child.usable:
                    if self._child is not None:
                        self._child.close()
                    self._ready = False
                    self._child = _Child(self.what, serve=True)
                    self._child.ask(self.setup, self.setup_args, {}, stop)
                    self._ready = True
                return self._child.ask(func, args, kwargs, stop)
            except _NotStarted as exc:
                self._child, self._ready = None, False
                raise NoChildProcess("No child process can be started here.") from exc
            except BaseException:
                if self._child is not None:  # stopped, crashed or failed: the next call starts afresh
                    self._child.close()
                    self._child, self._ready = None, False
                raise

    def close(self) -> None:
        """End the child (the next call starts a fresh one)."""
        with self._lock:
            if self._child is not None:
                self._child.close()
                self._child, self._ready = None, False


def _end(proc: Any) -> None:
    """Terminate ``proc`` if it still runs (SIGTERM, then SIGKILL after a second) and release it."""
    if proc.is_alive():
        proc.terminate()
        proc.join(1.0)
        if proc.is_alive():  # pragma: no cover - SIGTERM ignored
            proc.kill()
            proc.join(1.0)
    if proc.exitcode is not None:
        proc.close()
