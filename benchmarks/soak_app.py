"""Keep one app server busy for a long time and watch whether it slows down (issue #17: "runs that do not stop").

Reported: on a server up ~45 minutes, the logistic-regression family took ~300 s per round on the digits
(a plain ``aflite(model="logistic")``: ~2 s per round), Stop waited for the round in progress, and a closed
tab left its run running. This script reproduces that usage in headless Chromium (Debian's /usr/bin/chromium,
driven by Playwright) against one ``streamlit run`` server, for ``--minutes``:

* a teacher's session opens the Filter page with the scikit-learn logistic-regression family on the digits
  and moves τ every few seconds (each change supersedes the run in progress), sometimes presses Stop,
  sometimes waits for the run to finish (timed: key press to the result drawn);
* every few cycles the tab is closed and a new one opened (a new session; the old one's run must end).

Every 15 s it samples the server process (CPU seconds, threads, RSS, threads named ``aflite-run-*`` that are
alive) and, at the end, records a py-spy profile of the server for ``--profile-seconds`` (when py-spy is on
PATH: ``pip install py-spy``). It prints one JSON line per sample and a summary (first vs last quarter of
the finished-run times) and writes them with ``--json-out``.

    python benchmarks/soak_app.py --minutes 60 --json-out soak.jsonl
    python benchmarks/soak_app.py --tiny     # one Stop, one short cycle: checks that it runs (tests/test_benchmarks.py)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("AFLITE_CHROMIUM", "/usr/bin/chromium")
LAUNCH = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
# the digits with scikit-learn's logistic regression: a few seconds a round, as in the report
RUN = dict(n=719, t=360, k=72, m=64)
#: ``--tiny``: two rounds a run (long enough for the page to show its Stop button, short enough for a test)
TINY_RUN = dict(n=1_150, t=360, k=100, m=64)  # three rounds of the app's digits (1,438 rows)
QUERY = "dataset=digits&rep=mlp&n={n}&t={t}&k={k}&m={m}&seed={seed}&strategy=slice&model=logistic&tau={tau}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache")))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not start")


def sample(proc: psutil.Process, started: float) -> dict:
    with proc.oneshot():
        cpu = proc.cpu_times()
        threads = proc.num_threads()
        rss = proc.memory_info().rss
    return {
        "minute": round((time.time() - started) / 60, 2),
        "server_cpu_s": round(cpu.user + cpu.system, 1),
        "threads": threads,
        "rss_mb": round(rss / 2**20),
        "load": round(os.getloadavg()[0], 2),
    }


REFERENCE = """
import sys, time
from aflite_core import aflite
from aflite_core.data.digits import load_digits_dataset
d = load_digits_dataset()
X = d.representation("mlp")
n, t, k, m = (int(a) for a in sys.argv[2:6])
t0 = time.perf_counter()
aflite(X, d.y, target_size=n, train_size=t, n_partitions=m, slice_size=k, tau=0.75, model="logistic",
       random_state=int(sys.argv[1]))
print(time.perf_counter() - t0)
"""


def reference_run(seed: int, run: dict) -> float:
    """Seconds of the same run as the app's (the digits, scikit-learn logistic regression) in a fresh process.

    Run at intervals while the soak goes on, it measures what the machine's load alone does to a run, so an
    in-app slowdown can be told from a busier machine."""
    sizes = [str(run[key]) for key in ("n", "t", "k", "m")]
    out = subprocess.run([sys.executable, "-c", REFERENCE, str(seed), *sizes], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"the reference run failed:\n{out.stderr[-2000:]}")
    return round(float(out.stdout.strip().splitlines()[-1]), 2)


def wait_result(page, timeout: float) -> float | None:
    """Seconds until the Filter page shows a result (success or partial warning) and is idle, None on timeout.

    A τ change that finishes within the first 0.3 s is indistinguishable here from the previous result still on
    screen: the summary reports τ changes separately, and reads a slowdown off the fresh page loads."""
    t0 = time.perf_counter()
    page.wait_for_timeout(300)  # the rerun has started (the old result may still be on screen until then)
    while time.perf_counter() - t0 < timeout:
        done = page.locator("[data-testid='stAlertContentSuccess'], [data-testid='stAlertContentWarning']")
        busy = page.locator("[data-testid='stProgress']").count() or page.get_by_text("Running...").count()
        if done.count() and not busy:
            return time.perf_counter() - t0
        page.wait_for_timeout(200)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--profile-seconds", type=int, default=60)
    ap.add_argument("--json-out", default=None)
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="one Stop on a fresh server, then one cycle of 3 steps on two-round runs, no profile: checks that it runs",
    )
    args = ap.parse_args()
    run = TINY_RUN if args.tiny else RUN
    stop_seeds = (1001,) if args.tiny else (1001, 1002, 1003)
    steps = 3 if args.tiny else 6  # a τ change waited for, one superseded, one stopped (then two more of each)
    min_cycles = 1 if args.tiny else 0
    if args.tiny:
        args.minutes = 0
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = start_server(port)
    sp = psutil.Process(server.pid)
    started = time.time()
    samples: list[dict] = []
    runs: list[dict] = []
    base = f"http://127.0.0.1:{port}/filter?"
    next_sample = 0.0
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH)
            stop_latency = []
            for seed in stop_seeds:  # first, on a fresh server: Stop pressed 2.5 s into a run
                page = browser.new_page(viewport={"width": 1300, "height": 900})
                page.goto(base + QUERY.format(tau="0.75", seed=seed, **RUN))  # a long run: Stop finds it going
                stop = page.get_by_role("button", name="Stop")
                stop.wait_for(timeout=120_000)
                page.wait_for_timeout(2500)
                t0 = time.perf_counter()
                stop.click()
                page.get_by_text("partial").first.wait_for(timeout=300_000)
                stop_latency.append(round(time.perf_counter() - t0, 2))
                page.close()
            print(json.dumps({"stop_latency_s": stop_latency}), flush=True)
            cycle = 0
            next_reference = 0.0
            while cycle < min_cycles or time.time() - started < args.minutes * 60:
                if time.time() >= next_reference + started:  # every ~5 minutes: the same run outside the app
                    seconds = reference_run(5000 + cycle, run)
                    minute = round((time.time() - started) / 60, 2)
                    runs.append({"minute": minute, "kind": "outside", "seconds": seconds})
                    print(json.dumps({"run": runs[-1]}), flush=True)
                    next_reference += 300
                page = browser.new_page(viewport={"width": 1300, "height": 900})
                tau = 0.60 + 0.01 * (cycle % 20)
                page.goto(base + QUERY.format(tau=f"{tau:.2f}", seed=cycle, **run))  # a new seed: nothing is cached
                first = wait_result(page, 600)
                runs.append({"minute": round((time.time() - started) / 60, 2), "kind": "page load", "seconds": first})
                print(json.dumps({"run": runs[-1]}), flush=True)
                slider = page.get_by_role("slider").first
                for step in range(steps):
                    if time.time() >= next_sample + started:
                        samples.append(sample(sp, started))
                        print(json.dumps({"sample": samples[-1]}), flush=True)
                        next_sample += 15
                    slider.focus()
                    # a lower τ every time: a new run (a higher τ is read off the finished run without one)
                    page.keyboard.press("ArrowLeft")
                    t0 = time.perf_counter()
                    if step == 2:  # press Stop while a run is in progress
                        # The page waits up to 1.5 s for a fast run before it shows the progress bar and its Stop
                        # button, so wait for the button (the run may finish first: then there is nothing to stop).
                        stop = page.get_by_role("button", name="Stop")
                        try:
                            stop.first.wait_for(state="visible", timeout=30_000)
                        except PlaywrightTimeout:
                            runs.append({"minute": round((time.time() - started) / 60, 2), "kind": "no stop button"})
                            print(json.dumps({"run": runs[-1]}), flush=True)
                        else:
                            page.wait_for_timeout(500)
                            t1 = time.perf_counter()
                            try:
                                stop.first.click(timeout=5_000)
                            except PlaywrightTimeout:  # the run finished in those 0.5 s: nothing to stop
                                runs.append(
                                    {"minute": round((time.time() - started) / 60, 2), "kind": "no stop button"}
                                )
                                print(json.dumps({"run": runs[-1]}), flush=True)
                                continue
                            took = wait_result(page, 120)
                            seconds = None if took is None else round(time.perf_counter() - t1, 2)
                            runs.append(
                                {"minute": round((time.time() - started) / 60, 2), "kind": "stop", "seconds": seconds}
                            )
                            print(json.dumps({"run": runs[-1]}), flush=True)
                        continue
                    if step in (1, 3):  # supersede the run in progress after a moment
                        page.wait_for_timeout(2000)
                        continue
                    took = wait_result(page, 600)
                    runs.append(
                        {
                            "minute": round((time.time() - started) / 60, 2),
                            "kind": "tau change",
                            "seconds": None if took is None else round(time.perf_counter() - t0, 2),
                        }
                    )
                    print(json.dumps({"run": runs[-1]}), flush=True)
                page.close()  # the session ends: its run must stop too
                cycle += 1
            browser.close()
        profile = None
        if shutil.which("py-spy") and not args.tiny:
            out = Path(args.json_out or "soak").with_suffix(".profile.txt")
            subprocess.run(["py-spy", "record", "--pid", str(server.pid), "--duration", str(args.profile_seconds),
                            "--format", "raw", "--output", str(out), "--nonblocking"], check=False,
                           capture_output=True)  # fmt: skip
            profile = str(out)
        samples.append(sample(sp, started))
    finally:
        server.terminate()
        server.wait(30)

    def by_quarter(kind: str) -> list[float | None]:
        """Median seconds of the runs of one kind in each quarter of the soak (None: none finished in it)."""
        total = max(r["minute"] for r in runs) if runs else 0.0
        out = []
        for q in range(4):
            lo, hi = q * total / 4, (q + 1) * total / 4
            xs = [
                r["seconds"] for r in runs if r["kind"] == kind and r["seconds"] is not None and lo <= r["minute"] <= hi
            ]
            out.append(round(statistics.median(xs), 2) if xs else None)
        return out

    summary = {
        "minutes": round((time.time() - started) / 60, 1),
        # a fresh page with a new seed: a whole run, nothing cached - the figure a slowdown would show in
        "full_run_in_app_median_s_by_quarter": by_quarter("page load"),
        # the same run in a fresh process at the same time: what the machine's load alone does
        "full_run_outside_median_s_by_quarter": by_quarter("outside"),
        "tau_change_median_s_by_quarter": by_quarter("tau change"),
        "full_runs": sum(r["kind"] == "page load" for r in runs),
        "load_start_end": (samples[0]["load"], samples[-1]["load"]) if samples else None,
        "stop_latency_fresh_s": stop_latency,
        "stops_during_soak_s": [r["seconds"] for r in runs if r["kind"] == "stop"],
        "stop_skipped_run_finished_first": sum(r["kind"] == "no stop button" for r in runs),
        "threads_start_end": (samples[0]["threads"], samples[-1]["threads"]) if samples else None,
        "rss_mb_start_end": (samples[0]["rss_mb"], samples[-1]["rss_mb"]) if samples else None,
        "server_cpu_s": samples[-1]["server_cpu_s"] if samples else None,
        "profile": profile,
    }
    print(json.dumps({"summary": summary}), flush=True)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            for s in samples:
                fh.write(json.dumps({"sample": s}) + "\n")
            for r in runs:
                fh.write(json.dumps({"run": r}) + "\n")
            fh.write(json.dumps({"summary": summary}) + "\n")


if __name__ == "__main__":
    main()
