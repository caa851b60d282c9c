"""The browser side of ``bench_app_scale.py``: :class:`Bench` times a step (wall seconds, the server's CPU-seconds
and peak memory, the renderer's seconds) and the helpers that act on a page and wait for what it shows (a page
link, a slider's key presses, a background job's progress with its time left and Stop, a caption's change).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from served_app import PeakRSS, cpu_seconds, mapped_file_gap, rss_bytes

# --------------------------------------------------------------------------------------------------- the browser
RUNNING = '[data-testid="stStatusWidgetRunningIcon"]'
#: the Filter page's caption under its chart
FILTER_DRAWN = "Top: rows removed so far"


def _click_if(locator) -> None:
    """Click the first match if there is one (a small run starts without asking for confirmation)."""
    with contextlib.suppress(Exception):
        if locator.count():
            locator.first.click(timeout=5000)


SETTLED_JS = """
([quiet]) => {
  const now = performance.now();
  if (document.querySelector('RUNNING')) { window.__busyAt = now; return false; }
  return now - (window.__busyAt || 0) > quiet;
}
""".replace("RUNNING", RUNNING)
#: the open tab's panel shows something: a job's progress, a chart, a table, a message, a button or text
TAB_SHOWN_JS = """
() => {
  const panel = [...document.querySelectorAll('[role="tabpanel"]')].find(e => !e.hidden && e.offsetParent !== null);
  return !!(panel && panel.querySelector('[data-testid="stProgress"], .js-plotly-plot, [data-testid="stDataFrame"], '
    + '[data-testid="stAlert"], [data-testid="stButton"], [data-testid="stMarkdownContainer"], '
    + '[data-testid="stCaptionContainer"], [data-testid="stDownloadButton"]'));
}
"""


class Bench:
    """One browser page against one server: steps timed with the server's CPU, memory and the renderer's time."""

    def __init__(self, page, cdp, pid: int, features: Path, size: str, shots: Path | None, timeout_s: float) -> None:
        self.page, self.cdp, self.pid, self.features, self.size = page, cdp, pid, features, size
        self.shots, self.timeout = shots, timeout_s * 1000
        self.rss = PeakRSS(pid)
        self.base: int | None = None
        self._page, self._entry = "", 0
        self.rows: list[dict] = []
        cdp.send("Performance.enable")

    def _task(self) -> float:
        metrics = {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")["metrics"]}
        return float(metrics.get("TaskDuration", 0.0))

    def step(self, page_name: str, what: str, kind: str, act: Callable[[], None], done: Callable[[], object]) -> dict:
        """Run ``act`` then wait for ``done``; record wall s, server CPU s, renderer s, peak memory over the base."""
        if page_name != self._page:  # the resident size as this page is entered: its own peak is read against it
            self._page, self._entry = page_name, rss_bytes(self.pid)
        self.rss.reset()
        cpu0, task0, load = cpu_seconds(self.pid), self._task(), os.getloadavg()[0]
        self.page.evaluate("window.__busyAt = performance.now()")  # a later settled() waits for this step's rerun
        t0 = time.perf_counter()
        act()
        note = ""
        try:
            got = done()
            note = got if isinstance(got, str) else ""
            wall = time.perf_counter() - t0
        except Exception as exc:  # a timeout: the step is recorded as not reached
            wall = float("nan")
            note = f"not reached: {type(exc).__name__}"
            self.shot(f"failed-{page_name}-{what}")
        rec = {
            "size": self.size,
            "page": page_name,
            "what": what,
            "kind": kind,
            "wall_s": round(wall, 2),
            "server_cpu_s": round(cpu_seconds(self.pid) - cpu0, 2),
            "renderer_s": round(self._task() - task0, 2),
            "peak_over_base_gb": None if self.base is None else round((self.rss.peak - self.base) / 1e9, 2),
            "peak_over_page_entry_gb": round((self.rss.peak - self._entry) / 1e9, 2),
            "load1": round(load, 2),
            "note": note,
        }
        self.rows.append(rec)
        print(json.dumps(rec, ensure_ascii=False), flush=True)
        return rec

    def set_base(self) -> None:
        """The memory base: resident size now, plus the features' bytes the server has not read into it yet."""
        self.base = rss_bytes(self.pid) + mapped_file_gap(self.pid, self.features)
        print(json.dumps({"size": self.size, "memory_base_gb": round(self.base / 1e9, 2)}), flush=True)

    def after_job(self, page_name: str, what: str, before: int, settle_s: float) -> None:
        """Resident size ``settle_s`` after a job ended minus before it started."""
        time.sleep(settle_s)
        rec = {"size": self.size, "page": page_name, "what": what, "kind": "after job",
               "rss_change_mb": round((rss_bytes(self.pid) - before) / 1e6), "settle_s": settle_s,
               "load1": round(os.getloadavg()[0], 2)}  # fmt: skip
        self.rows.append(rec)
        print(json.dumps(rec, ensure_ascii=False), flush=True)

    def settled(self, quiet_ms: int = 400) -> None:
        self.page.wait_for_function(SETTLED_JS, arg=[quiet_ms], timeout=self.timeout, polling=50)

    def shot(self, name: str, *, narrow: bool = False) -> None:
        if self.shots is None:
            return
        self.shots.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):
            self.page.screenshot(path=str(self.shots / f"{self.size}-{name}-1500.png"), full_page=True)
            if narrow:
                self.page.set_viewport_size({"width": 390, "height": 844})
                self.page.wait_for_timeout(800)
                self.page.screenshot(path=str(self.shots / f"{self.size}-{name}-390.png"), full_page=True)
                self.page.set_viewport_size({"width": 1500, "height": 1000})
                self.page.wait_for_timeout(800)


def _nav(b: Bench, title: str) -> Callable[[], None]:
    return lambda: b.page.get_by_test_id("stSidebarNavItems").get_by_role("link", name=title, exact=True).click()


def _visible(b: Bench, locator) -> Callable[[], None]:
    def wait() -> None:
        locator.first.wait_for(state="visible", timeout=b.timeout)

    return wait


#: a progress bar shows, or the app has been idle ``quiet`` ms (since ``window.__busyAt``): a job that never shows one
PROGRESS_OR_IDLE_JS = """
([quiet]) => {
  if (document.querySelector('[data-testid="stProgress"]')) return true;
  const now = performance.now();
  if (document.querySelector('RUNNING')) { window.__busyAt = now; return false; }
  return now - (window.__busyAt || 0) > quiet;
}
""".replace("RUNNING", RUNNING)


def _progress_or_idle(b: Bench, quiet_ms: int = 1000) -> None:
    """Wait until a progress bar shows or the app has been idle ``quiet_ms`` since the step began (or the timeout).

    At toy sizes (``--tiny``) a job often ends inside the click's own rerun and never shows a progress bar: this
    ends the wait for it then instead of at the step's timeout (the step is still recorded as not reached).
    """
    b.page.wait_for_function(PROGRESS_OR_IDLE_JS, arg=[quiet_ms], timeout=b.timeout, polling=50)


def _job_started(b: Bench, scope=None, *, idle_ends: bool = False) -> Callable[[], str]:
    """A background job's progress bar with its time left and a Stop button (what is there is reported).

    ``idle_ends`` (the ``--tiny`` runs): the app idle for a second with no progress bar ends the wait at once (a
    ``TimeoutError``: the step is not reached, as at the timeout) instead of waiting out the whole timeout.
    """
    root = scope or b.page

    def wait() -> str:
        if idle_ends:
            _progress_or_idle(b)
            if not root.locator('[data-testid="stProgress"]').count():
                raise TimeoutError("the job ended before a progress bar showed")
        root.locator('[data-testid="stProgress"]').first.wait_for(state="visible", timeout=b.timeout)
        t_bar = time.perf_counter()
        text = ""
        while time.perf_counter() - t_bar < 6:  # the time left comes with the first report after the start
            text = " ".join(root.locator('[data-testid="stProgress"]').all_inner_texts())
            if "left" in text:
                break
            time.sleep(0.1)
        stop = root.get_by_role("button", name="Stop").count() > 0
        said = " ".join(text.split())[:90]
        has = f"progress {'with' if 'left' in text else 'WITHOUT'} time left, {'a' if stop else 'NO'} Stop button"
        return f"{has}: '{said}'"

    return wait


def _stop_job(b: Bench, job_timeout_s: float = 900.0) -> None:
    with contextlib.suppress(Exception):
        b.page.get_by_role("button", name="Stop").first.click(timeout=5000)
    b.page.locator('[data-testid="stProgress"]').first.wait_for(state="hidden", timeout=job_timeout_s * 1000)
    b.settled()


def _slider(b: Bench, label: str):
    return b.page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").first


def _press(locator, key: str, times: int = 1) -> Callable[[], None]:
    def act() -> None:
        locator.focus()
        for _ in range(times):
            locator.press(key)

    return act


def _caption_changes(b: Bench, pattern: str, before: str) -> Callable[[], str]:
    """Wait until the first text matching ``pattern`` differs from ``before``; returns it."""

    def wait() -> str:
        deadline = time.perf_counter() + b.timeout / 1000
        loc = b.page.get_by_text(re.compile(pattern)).first
        while time.perf_counter() < deadline:
            with contextlib.suppress(Exception):
                now = loc.inner_text(timeout=1000)
                if now != before:
                    return now
            time.sleep(0.05)
        raise TimeoutError(pattern)

    return wait


def _text(b: Bench, pattern: str) -> str:
    return b.page.get_by_text(re.compile(pattern)).first.inner_text(timeout=b.timeout)
