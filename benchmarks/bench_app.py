"""App latency benchmark: cold first page in a real browser, and the time a τ or k change takes to show.

Usage::

    python benchmarks/bench_app.py            # needs Debian's chromium (or AFLITE_CHROMIUM) and playwright

Measures, on the bundled digits:

* first page of a cold app: from starting `streamlit run` to the home page rendered in headless Chromium,
  and from the browser opening the URL to the page rendered (server already up);
* Filter page: time from a τ change (keyboard on the slider) until the chart shows the new τ, in the
  browser, over several changes (median, max); and the compute part alone (a new τ, caches warm);
* Synthetic circles page: time from a τ change until the four panels are redrawn.

Prints the figures; nothing asserts (shared machines are noisy). Copy them into benchmarks/README.md.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHROMIUM = os.environ.get("AFLITE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> tuple[subprocess.Popen, float]:
    t0 = time.perf_counter()
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache")))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while True:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read() == b"ok":
                return proc, time.perf_counter() - t0
        except OSError:
            time.sleep(0.05)


def tau_change_latency(page, base: str, path: str, n: int, wait_js: str) -> list[float]:
    """Press ArrowLeft on the first slider (τ) and time until ``wait_js(expected τ)`` holds."""
    page.goto(base + path)
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    page.wait_for_timeout(1500)
    times = []
    slider = page.get_by_role("slider").first
    tau = 0.75
    for _ in range(n):
        slider.focus()
        tau = round(tau - 0.05, 2)
        t0 = time.perf_counter()
        for _ in range(5):
            page.keyboard.press("ArrowLeft")
        page.wait_for_function(wait_js, arg=f"τ = {tau:g}", timeout=120_000)
        times.append(time.perf_counter() - t0)
        page.wait_for_timeout(300)
    return times


def main() -> None:
    from playwright.sync_api import sync_playwright

    port = free_port()
    t_start = time.perf_counter()
    proc, health = start_server(port)
    base = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            t0 = time.perf_counter()
            page.goto(base + "/")
            page.get_by_text("How AFLite works").wait_for(timeout=60_000)
            first = time.perf_counter() - t0
            cold = time.perf_counter() - t_start
            print(
                f"cold app: server healthy after {health:.1f} s; home page rendered {first:.1f} s after "
                f"opening the URL; {cold:.1f} s from `streamlit run` to a rendered home page"
            )
            t0 = time.perf_counter()
            page.goto(base + "/filter")
            page.wait_for_function(
                "document.querySelectorAll('.js-plotly-plot .bars path').length > 0", timeout=120_000
            )
            print(f"Filter page first render (first AFLite run on digits): {time.perf_counter() - t0:.1f} s")
            has_tau = (
                "(t) => [...document.querySelectorAll('.js-plotly-plot .annotation-text')]"
                ".some(e => e.textContent.includes(t))"
            )
            times = tau_change_latency(page, base, "/filter", 6, has_tau)
            print(
                f"Filter page, τ change -> chart shows the new τ (browser, end to end): median "
                f"{statistics.median(times):.2f} s, max {max(times):.2f} s over {len(times)} changes"
            )
            t0 = time.perf_counter()
            page.goto(base + "/synthetic")
            page.wait_for_selector(".js-plotly-plot", timeout=180_000)
            print(f"Synthetic page first render (four runs + accuracies): {time.perf_counter() - t0:.1f} s")
            page.wait_for_timeout(1500)
            slider = page.get_by_role("slider").first
            stimes = []
            for _ in range(4):
                before = page.evaluate(
                    "[...document.querySelectorAll('.js-plotly-plot')].map(e => e.innerHTML.length).join(',')"
                )
                slider.focus()
                t0 = time.perf_counter()
                page.keyboard.press("ArrowLeft")
                page.wait_for_function(
                    "(b) => [...document.querySelectorAll('.js-plotly-plot')].map(e => e.innerHTML.length)"
                    ".join(',') !== b && !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                    arg=before,
                    timeout=120_000,
                )
                stimes.append(time.perf_counter() - t0)
                page.wait_for_timeout(500)
            print(
                f"Synthetic page, τ change -> panels redrawn (browser): median {statistics.median(stimes):.2f} s, "
                f"max {max(stimes):.2f} s"
            )
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)

    # the compute part alone, caches warm: a new τ on the digits
    import numpy as np

    from aflite_core import aflite, load_digits_dataset

    data = load_digits_dataset()
    X, y = data.representation("mlp"), data.y
    n = data.n_rows
    aflite(X, y, target_size=n // 2, train_size=n // 4, slice_size=round(0.05 * n), tau=0.75, random_state=0)
    comp = []
    for tau in np.linspace(0.5, 0.95, 10):
        t0 = time.perf_counter()
        aflite(X, y, target_size=n // 2, train_size=n // 4, slice_size=round(0.05 * n), tau=float(tau), random_state=0)
        comp.append(time.perf_counter() - t0)
    print(
        f"compute only, new τ on the digits (AFLite run): median {statistics.median(comp):.2f} s, max {max(comp):.2f} s"
    )


if __name__ == "__main__":
    main()
