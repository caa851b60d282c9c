"""The engine's thread pool: independent pieces of a round run on every core, with the same bits as one thread.

A run (:meth:`aflite_core.engine.loop.Run.execute`) opens :func:`engine_threads`: BLAS/LAPACK are limited to one thread
and, with ``n_threads > 1``, a ``ThreadPoolExecutor`` is installed for the families' sessions. They hand it only
*independent* pieces - column tiles of the Gram sums, shards, partition groups, scoring pieces - each computed
by exactly the calls one thread makes, and they combine the results in a fixed order. A run's result is
therefore the same, bit for bit, for any thread count (numpy and single-threaded BLAS release the GIL inside
the calls that carry the work).

Pieces never submit pieces of their own (no nested waiting on the same pool), and the run's step callback is
only ever called from the thread that drives the run (:func:`map_ordered` reports between results).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from .._utils import blas_threads

__all__ = [
    "Deferred",
    "available_cores",
    "background",
    "engine_threads",
    "map_ordered",
    "n_workers",
    "resolve_threads",
    "split",
]

T = TypeVar("T")
R = TypeVar("R")

_STATE = threading.local()


def available_cores() -> int:
    """Cores this process may run on (``os.sched_getaffinity`` where present, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def resolve_threads(n_threads: int | None) -> int:
    """The engine's thread count: ``n_threads``, or every available core for ``None``."""
    return available_cores() if n_threads is None else max(1, int(n_threads))


@contextlib.contextmanager
def engine_threads(n_threads: int | None) -> Iterator[int]:
    """Run the ``with`` block with single-threaded BLAS and, for more than one thread, the engine's pool.

    Yields the resolved thread count. The pool belongs to the calling thread (two runs in two threads each
    have their own).
    """
    n = resolve_threads(n_threads)
    previous = getattr(_STATE, "pool", None)
    # load SciPy's own BLAS now: thread limits reach only the libraries loaded when they are set, and an
    # unlimited BLAS spinning its threads on a loaded machine made the fused downdates 10-100x slower
    import scipy.linalg.blas  # noqa: F401

    with blas_threads(1), contextlib.ExitStack() as stack:
        pool = stack.enter_context(ThreadPoolExecutor(n, thread_name_prefix="aflite")) if n > 1 else None
        _STATE.pool = pool
        try:
            yield n
        finally:
            _STATE.pool = previous


def _pool() -> ThreadPoolExecutor | None:
    return getattr(_STATE, "pool", None)


def n_workers() -> int:
    """Threads of the current run's pool (1 without one)."""
    pool = _pool()
    return 1 if pool is None else pool._max_workers


def map_ordered(
    fn: Callable[[T], R], items: Sequence[T], *, report: Callable[[int, int], Any] | None = None
) -> list[R]:
    """``[fn(x) for x in items]``, on the run's pool when there is one; results in the order of ``items``.

    ``report(done, total)`` is called before each result is taken, in this thread (it may raise to abandon the
    rest: pieces not yet started are cancelled, running ones are waited for).
    """
    pool = _pool()
    if pool is None or len(items) <= 1:
        out = []
        for i, item in enumerate(items):
            if report is not None:
                report(i, len(items))
            out.append(fn(item))
        return out
    futures = [pool.submit(fn, item) for item in items]
    try:
        out = []
        for i, fut in enumerate(futures):
            if report is not None:
                report(i, len(items))
            out.append(fut.result())
        return out
    finally:
        for fut in futures:
            fut.cancel()
        for fut in futures:
            if not fut.cancelled():
                fut.exception()  # wait: no piece outlives the call that submitted it


def background(fn: Callable[[], R]) -> Callable[[], R]:
    """Start ``fn()`` on the run's pool (inline without one); returns a function that gives its result.

    For a piece of work the thread driving the run would otherwise do alone while the pool waits (e.g. a
    round's preconditioner, computed while the Gram sums' tiles run).
    """
    pool = _pool()
    if pool is None:
        value = fn()
        return lambda: value
    return pool.submit(fn).result


def split(n_items: int, n_parts: int) -> list[range]:
    """``range(n_items)`` cut into ``n_parts`` contiguous, nearly equal, non-empty ranges (fewer if needed)."""
    n_parts = max(1, min(n_parts, n_items))
    bounds = [(i * n_items) // n_parts for i in range(n_parts + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(n_parts)]


class Deferred:
    """``fn()`` computed in a daemon thread of its own, started now; :meth:`result` waits for it.

    For work a run needs only later and that leaves the GIL free most of the time (hashing gigabytes of features
    with ``hashlib``), so it overlaps the first rounds instead of delaying them. Not the run's pool: it must not
    take a slot the round's pieces are waiting for. An error raised by ``fn`` is raised again by :meth:`result`.
    """

    def __init__(self, fn: Callable[[], R]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), name="aflite-deferred", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # kept for whoever asks for the value
            self._error = exc

    def result(self) -> Any:
        """The value of ``fn()`` (waits for it; raises what ``fn`` raised)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
