"""A rerun that interrupts a page's first-time computation neither waits for it nor throws it away (issue 25).

A box drawn on the Embedding map while the page's first visit still computed Figure 1 and Table 3 over 550,000
rows waited for that computation (Streamlit stops a script only where it sends an element), and the memo then
lost the value (the stop came as the spinner closed, before the value was kept), so the next run computed it
again: the box's rows were listed after 2.5 s instead of well under 2 s.
"""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

from aflite_app.compute import _stores
from aflite_app.compute.neighbourhoods import in_worker


class _Rerun(Exception):
    """Stands for Streamlit's RerunException, raised where the script sends an element."""


@pytest.fixture()
def pool(monkeypatch):
    pool = _stores.Budget(limit_bytes=1 << 20)
    monkeypatch.setattr(_stores, "budget", lambda: pool)
    return pool


def test_a_value_computed_when_a_rerun_stops_the_spinner_is_kept(pool, monkeypatch):
    @contextlib.contextmanager
    def spinner_stopped_on_close(text):
        yield
        raise _Rerun  # closing the spinner sends an element: a rerun asked for meanwhile stops the run here

    monkeypatch.setattr(_stores.st, "spinner", spinner_stopped_on_close)
    monkeypatch.setattr(_stores, "get_script_run_ctx", lambda suppress_warning=False: object())
    calls = []

    @_stores.memo("slow", 4, spinner="Computing…")
    def slow(n: int) -> np.ndarray:
        calls.append(n)
        return np.arange(n)

    with pytest.raises(_Rerun):
        slow(5)
    assert slow(5).tolist() == [0, 1, 2, 3, 4] and calls == [5]  # the next run finds it: not computed again


def test_a_rerun_ends_the_wait_at_once_and_the_computation_goes_on_and_is_kept(pool):
    release, started = threading.Event(), threading.Event()
    calls = []

    @_stores.memo("table", 4)
    def table(n: int) -> np.ndarray:
        calls.append(n)
        started.set()
        release.wait(30)
        return np.full(3, n)

    polls = []

    def rerun_asked() -> None:
        polls.append(time.monotonic())
        raise _Rerun

    t0 = time.monotonic()
    with pytest.raises(_Rerun):
        in_worker(table, 7, yield_point=rerun_asked, poll=0.05)
    assert started.wait(10) and len(polls) == 1 and polls[0] - t0 < 5  # the wait ended, the computation did not
    release.set()
    assert in_worker(table, 7, yield_point=lambda: None, poll=0.05).tolist() == [7, 7, 7]  # joined, then kept
    never = []
    assert in_worker(table, 7, yield_point=lambda: never.append(1)).tolist() == [7, 7, 7]
    assert calls == [7] and never == []  # computed once; a kept value comes back without a wait


def test_an_error_of_the_computation_is_raised_in_the_waiting_thread():
    def fails() -> None:
        raise ValueError("One sentence for the page.")

    with pytest.raises(ValueError, match="One sentence"):
        in_worker(fails, yield_point=lambda: None, poll=0.01)
