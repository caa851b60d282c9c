"""Issue 25's job starts only: how soon each heavy job shows progress, a time left and Stop, and how soon Stop ends it.

Drives the same served app and Chromium as ``bench_app_scale.py`` (its run B, 550,000 × 384, built by it under
``--work``; built here if missing), but only the jobs: Baselines' Compute, the Embedding map's UMAP job, the
Filter's τ below the run and k + 1. Per job: *start* = click (or navigation) to its progress bar, then up to 6 s
more for a time left and Stop (``bench_app_scale._job_started``); *stop* = Stop click to the progress bar gone
(a job without Stop is waited for up to ``--stop-timeout`` seconds and reported as not stopped).

    python benchmarks/bench_job_starts.py --work /tmp/aflite-scale            # B (550,000 × 384)
    python benchmarks/bench_job_starts.py --tiny                              # 3,000 × 16, seconds
    python benchmarks/bench_job_starts.py --stop-timing 3                     # Stop → stopped state, 3 times each
    python benchmarks/bench_job_starts.py --stop-timing 3 --rows 100000 --dim 128 --work /tmp/aflite-stop

``--stop-timing N`` (issue 29: Stop answers within 2 s) times only Stop, on the bundled digits: N times a slow
Filter run (scikit-learn's logistic regression, seconds a round) stopped mid-round after its first round (inside
round 1 if that takes longer than ``--stop-timeout``), and N times a Baselines comparison (logistic, kNN and the
MLP) stopped while its MLP cross-validates; *stop* = Stop click (timed from before the click: its own checks and
round trip count too) to the stopped state on the page (the partial result's warning, or the Baselines "stopped"
note). Run it under the load you want to measure at; each record has the 1-minute load average. With ``--work``
the Filter run is instead a run of ``--rows`` × ``--dim`` built there (as above) and opened on the Data page, τ
moved one step below it and the run started: at that size a round's steps take seconds under load, and Stop lands
inside one of them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_app_scale as scale

#: the Filter page's run shown (its early-stop line, drawn above the metrics and chart)
FILTER_SHOWN = re.compile(r"^Early stop \(τ\): in round \d+")


def _click_if(locator) -> None:
    """Click the first match if there is one (at --tiny size a job may start without asking)."""
    with contextlib.suppress(Exception):
        if locator.count():
            locator.first.click(timeout=5000)


def _stop(b: scale.Bench, what: str, timeout_s: float) -> dict:
    """Click Stop (if there is one) and time until the progress bar is gone."""
    page = b.page
    has_stop = page.get_by_role("button", name="Stop").count() > 0
    t0 = time.perf_counter()
    if has_stop:
        with contextlib.suppress(Exception):
            page.get_by_role("button", name="Stop").first.click(timeout=5000)
    try:
        page.locator('[data-testid="stProgress"]').first.wait_for(state="hidden", timeout=timeout_s * 1000)
        wall, note = round(time.perf_counter() - t0, 2), "stopped" if has_stop else "ran to its end (no Stop)"
    except Exception:
        wall, note = float("nan"), f"still running after {timeout_s:.0f} s (no Stop)"
    rec = {"size": b.size, "page": what, "what": "Stop → progress gone", "kind": "job stop", "wall_s": wall,
           "load1": round(os.getloadavg()[0], 2), "note": note}  # fmt: skip
    b.rows.append(rec)
    print(json.dumps(rec, ensure_ascii=False), flush=True)
    with contextlib.suppress(Exception):
        b.settled()
    return rec


def open_run(b: scale.Bench, n: int) -> None:
    """Open the built run on the Data page and wait for its duplicate search (a heavy job) to end."""
    page = b.page
    page.goto(page.url)
    b.settled()
    scale._nav(b, "Data")()
    page.get_by_role("tab", name="Open a run directory").first.wait_for(timeout=b.timeout)
    page.get_by_role("tab", name="Open a run directory").click()
    page.get_by_role("button", name="Open run").click()
    page.get_by_test_id("stSidebar").get_by_text(re.compile(rf"^{n:,} rows · ")).first.wait_for(timeout=b.timeout)
    b.settled()
    # the Data page's duplicate search of the opened run (a heavy job) runs first: the jobs below would wait behind it
    t0 = time.perf_counter()
    with contextlib.suppress(Exception):
        page.locator('[data-testid="stProgress"]').first.wait_for(state="hidden", timeout=600_000)
    print(json.dumps({"duplicate_search_s": round(time.perf_counter() - t0, 1)}), flush=True)
    b.settled()


#: a button labelled ``label`` ("Start the run": a run estimated over 30 s asks first; Baselines' "Compute"), a
#: progress bar, or the app idle ``quiet`` ms
START_OR_IDLE_JS = """
([quiet, label]) => {
  if ([...document.querySelectorAll('button')].some(e => e.innerText.trim() === label)) return true;
  if (document.querySelector('[data-testid="stProgress"]')) return true;
  const now = performance.now();
  if (document.querySelector('RUNNING')) { window.__busyAt = now; return false; }
  return now - (window.__busyAt || 0) > quiet;
}
""".replace("RUNNING", scale.RUNNING)


def _wait_for_start(b: scale.Bench, start, tiny: bool) -> None:
    """Wait (up to 10 s) for "Start the run"; ``tiny``: only until the run started or ended without asking."""
    with contextlib.suppress(Exception):  # a small run starts without asking
        if tiny:  # the key press's rerun: timed from here, as Bench.step does
            b.page.evaluate("window.__busyAt = performance.now()")
            b.page.wait_for_function(
                START_OR_IDLE_JS, arg=[1000, "Start the run"], timeout=min(b.timeout, 10_000), polling=50
            )
        else:
            start.first.wait_for(timeout=min(b.timeout, 10_000))


def drive(b: scale.Bench, n: int, stop_timeout_s: float, *, tiny: bool = False) -> None:
    """Every job's start and Stop; ``tiny`` (3,000 rows: most jobs end inside the click's rerun, with no progress
    bar): a wait for "Start the run" or a progress bar ends once the app has been idle a second, not at its timeout.
    """
    page = b.page
    started = functools.partial(scale._job_started, idle_ends=tiny)
    open_run(b, n)
    b.set_base()
    # -- Filter: τ below the run, k + 1
    b.step(
        "Filter",
        "page",
        "first render",
        scale._nav(b, "Filter"),
        scale._visible(b, page.get_by_text(FILTER_SHOWN)),
    )
    b.settled()
    # a run estimated over 30 s asks first (issue 29): the job starts with "Start the run", timed from that click
    start = page.get_by_role("button", name="Start the run")
    scale._press(scale._slider(b, "τ — remove only rows"), "ArrowLeft")()
    _wait_for_start(b, start, tiny)
    b.step("Filter", "τ below the run (0.75 → 0.74): Start the run", "job start", lambda: _click_if(start),
           started(b))  # fmt: skip
    _stop(b, "Filter τ below", stop_timeout_s)
    scale._press(scale._slider(b, "τ — remove only rows"), "ArrowRight")()
    with contextlib.suppress(Exception):
        page.get_by_text(FILTER_SHOWN).first.wait_for(timeout=b.timeout)
    b.settled()
    scale._press(scale._slider(b, "k — rows removed"), "ArrowRight")()
    _wait_for_start(b, start, tiny)
    b.step("Filter", "k + 1: Start the run", "job start", lambda: _click_if(start), started(b))
    _stop(b, "Filter k + 1", stop_timeout_s)
    scale._press(scale._slider(b, "k — rows removed"), "ArrowLeft")()
    b.settled()
    # -- Inspect: the two tab jobs
    b.step("Inspect", "page (rows table)", "first render", scale._nav(b, "Inspect"),
           scale._visible(b, page.get_by_text("One row per example. p is predictability")))  # fmt: skip
    b.settled()
    for label in ("Label-revealing words", "What the removed rows share"):
        b.step("Inspect", f"tab '{label}': progress, time left, Stop", "job start",
               lambda label=label: page.get_by_role("tab", name=label, exact=True).click(),
               started(b))  # fmt: skip
        _stop(b, f"Inspect {label}", stop_timeout_s)

    # -- Baselines (at --tiny size the comparison starts by itself, without a Compute button: its progress or the
    # page idle ends the wait then)
    def compute_shown() -> None:
        if tiny:
            page.wait_for_function(START_OR_IDLE_JS, arg=[1000, "Compute"], timeout=b.timeout, polling=50)
        else:
            page.get_by_role("button", name="Compute").first.wait_for(state="visible", timeout=b.timeout)

    b.step("Baselines", "page (controls)", "first render", scale._nav(b, "Baselines"), compute_shown)
    b.settled()
    b.step("Baselines", "Compute: progress, time left, Stop", "job start",
           lambda: _click_if(page.get_by_role("button", name="Compute")), started(b))  # fmt: skip
    _stop(b, "Baselines", stop_timeout_s)
    # -- Embedding map: the UMAP job starts with the page
    b.step("Embedding map", "page → UMAP progress, time left, Stop", "job start", scale._nav(b, "Embedding map"),
           started(b))  # fmt: skip
    _stop(b, "Embedding map", stop_timeout_s)


#: a slow Filter run on the digits: scikit-learn's logistic regression fits m = 16 models a round (seconds a round)
SLOW_FILTER = "/filter?dataset=digits&rep=mlp&n=719&t=360&k=72&m=16&seed={seed}&strategy=slice&model=logistic"
#: the Filter page's stopped state: the partial result's warning (or nothing-removed-yet's)
FILTER_STOPPED = re.compile(r"this is a partial result|Stopped during round 1")


def _stop_record(what: str, t0: float, note: str) -> dict:
    wall = round(time.perf_counter() - t0, 2)
    rec = {"page": what, "what": "Stop → stopped state", "kind": "stop timing", "wall_s": wall,
           "load1": round(os.getloadavg()[0], 2), "note": note}  # fmt: skip
    print(json.dumps(rec, ensure_ascii=False), flush=True)
    return rec


def filter_stop_timing(b: scale.Bench, n: int, repeats: int, timeout_s: float) -> list[dict]:
    """Stop a Filter run on the opened run (τ one step lower each time) mid-round, ``repeats`` times; the records.

    At this size a round's steps (the Gram sums of every partition, a block of predictions) take seconds under
    load: Stop lands inside one of them.
    """
    page, rows = b.page, []
    open_run(b, n)
    scale._nav(b, "Filter")()
    page.get_by_text(FILTER_SHOWN).first.wait_for(timeout=b.timeout)
    b.settled()
    start = page.get_by_role("button", name="Start the run")
    progress = page.locator('[data-testid="stMain"] [data-testid="stProgress"]').first
    for _ in range(repeats):
        scale._press(scale._slider(b, "τ — remove only rows"), "ArrowLeft")()  # τ − 0.01: a new run below
        deadline = time.monotonic() + b.timeout / 1000
        while not page.get_by_role("button", name="Stop").count():  # a run estimated over 30 s asks first
            if time.monotonic() > deadline:
                raise TimeoutError("the run below τ showed no Stop")
            _click_if(start)
            page.wait_for_timeout(300)
        with contextlib.suppress(Exception):  # a round done, or 20 s into round 1
            progress.wait_for(timeout=b.timeout)
            page.locator('[data-testid="stMain"] [data-testid="stProgress"]', has_text="removed").first.wait_for(
                timeout=20_000
            )
        page.wait_for_timeout(1500)  # inside the next round's steps
        t0 = time.perf_counter()  # before the click: its own checks and round trip count too (an upper bound)
        page.get_by_role("button", name="Stop").first.click()
        try:
            page.get_by_text(FILTER_STOPPED).first.wait_for(timeout=timeout_s * 1000)
            rows.append(_stop_record("Filter", t0, f"partial result shown ({n:,} rows)"))
        except Exception:
            rows.append(_stop_record("Filter", t0, f"no stopped state within {timeout_s:.0f} s"))
        with contextlib.suppress(Exception):
            b.settled()
    return rows


def stop_timing(page, url: str, repeats: int, timeout_s: float, *, filter_on_digits: bool = True) -> list[dict]:
    """Stop during a slow Filter round and during a Baselines MLP piece, ``repeats`` times each; the records."""
    from playwright.sync_api import expect

    rows = []
    for i in range(repeats if filter_on_digits else 0):
        page.goto(url + SLOW_FILTER.format(seed=100 + i))
        stop = page.get_by_role("button", name="Stop")
        progress = page.locator('[data-testid="stMain"] [data-testid="stProgress"]').first
        stop.first.wait_for(timeout=timeout_s * 1000)
        with contextlib.suppress(Exception):  # a round done (under a heavy load round 1 may take minutes: then in it)
            expect(progress).to_contain_text(re.compile(r"removed"), timeout=timeout_s * 1000)
        page.wait_for_timeout(700)  # well inside the next round
        t0 = time.perf_counter()
        stop.first.click()
        try:
            page.get_by_text(FILTER_STOPPED).first.wait_for(timeout=timeout_s * 1000)
            rows.append(_stop_record("Filter", t0, "partial result shown"))
        except Exception:
            rows.append(_stop_record("Filter", t0, f"no stopped state within {timeout_s:.0f} s"))
    # Baselines on the stopped run: logistic, kNN and the MLP; Stop once the MLP is cross-validating
    for i in range(repeats):
        page.get_by_test_id("stSidebarNav").get_by_text("Baselines", exact=True).first.click()
        page.get_by_role("heading", name="Baselines").first.wait_for(timeout=timeout_s * 1000)
        page.wait_for_timeout(500)
        with contextlib.suppress(Exception):
            page.get_by_role("button", name="Compute again").first.click(timeout=2000)
        if i == 0:
            page.locator('[data-testid="stMultiSelect"]').first.click()
            page.keyboard.type("MLP")
            page.keyboard.press("Enter")
            page.keyboard.press("Escape")
        page.wait_for_timeout(500)
        seed = page.get_by_label("Seed (random subset, one-shot split, folds)")
        with contextlib.suppress(Exception):  # a new seed each time: nothing cached
            if not seed.is_visible():
                page.get_by_text("Options: folds, training-row cap, seed").first.click()
            seed.fill(str(200 + i))
            seed.press("Enter")
        page.wait_for_timeout(800)
        _click_if(page.get_by_role("button", name="Compute"))
        progress = page.locator('[data-testid="stMain"] [data-testid="stProgress"]').first
        try:  # the MLP runs once kNN on the full subset has reported
            expect(progress).to_contain_text(re.compile(r"kNN \(k = 15\) on the full subset"), timeout=timeout_s * 1000)
        except Exception:
            rows.append({"page": "Baselines", "kind": "stop timing", "note": "the MLP piece was not reached"})
            continue
        page.wait_for_timeout(300)
        t0 = time.perf_counter()
        page.get_by_role("button", name="Stop").first.click()
        try:
            page.get_by_text("The comparison was stopped before it finished").first.wait_for(timeout=timeout_s * 1000)
            rows.append(_stop_record("Baselines", t0, "stopped note shown"))
        except Exception:
            rows.append(_stop_record("Baselines", t0, f"no stopped state within {timeout_s:.0f} s"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=scale.SIZES["B"])
    parser.add_argument("--dim", type=int, default=scale.DIM)
    parser.add_argument("--tiny", action="store_true", help="3,000 × 16: seconds")
    parser.add_argument("--work", type=Path, default=None, help="where bench_app_scale.py keeps its runs")
    parser.add_argument("--screenshots", type=Path, default=None, help="a PNG of each step that failed")
    parser.add_argument("--timeout", type=float, default=180.0, help="longest wait for one step (s)")
    parser.add_argument("--stop-timeout", type=float, default=60.0, help="longest wait for a job to end after Stop")
    parser.add_argument("--stop-timing", type=int, default=0, metavar="N",
                        help="only time Stop → stopped state on the digits, N times a job")  # fmt: skip
    args = parser.parse_args(argv)
    if args.stop_timing:
        return _main_stop_timing(args)
    n, d, m = (scale.TINY[0], scale.TINY[1], 16) if args.tiny else (args.rows, args.dim, 64)
    if args.tiny:  # jobs end within the sync wait at this size: steps that wait for a progress bar time out fast
        args.timeout, args.stop_timeout = min(args.timeout, 8.0), min(args.stop_timeout, 5.0)
    print(f"# job starts · {os.cpu_count()} cores · load {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    with contextlib.ExitStack() as stack:
        work = args.work or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="aflite-job-starts-")))
        work.mkdir(parents=True, exist_ok=True)
        run = scale.build(work, n, d, m=m)
        run_root = work / run.split("/")[0]
        from playwright.sync_api import sync_playwright

        with scale.served(run_root, work / "streamlit-jobs.log") as (url, pid), sync_playwright() as p:
            browser = p.chromium.launch(executable_path=scale.CHROMIUM, headless=True, args=scale.ARGS)
            try:
                page = browser.new_page(viewport={"width": 1500, "height": 1000})
                page.goto(url)
                b = scale.Bench(page, page.context.new_cdp_session(page), pid, run_root / "data" / "X.npy",
                                f"{n:,}", args.screenshots, args.timeout)  # fmt: skip
                drive(b, n, args.stop_timeout, tiny=args.tiny)
                b.rss.stop()
            finally:
                browser.close()
    print(f"\nload average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


def _main_stop_timing(args) -> int:
    """``--stop-timing N``: Stop timed N times per job, on a fresh cache (the Filter on a built run with ``--work``)."""
    print(f"# stop timing · {os.cpu_count()} cores · load {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    with contextlib.ExitStack() as stack:
        cache = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="aflite-stop-timing-")))
        work = args.work or cache
        os.environ["AFLITE_CACHE_DIR"] = str(cache / "cache")
        os.environ.setdefault("AFLITE_APP_UMAP", "0")
        if args.work is not None:  # the Filter on a run of --rows × --dim (built once under --work)
            work.mkdir(parents=True, exist_ok=True)
            run_root = work / scale.build(work, args.rows, args.dim, m=64).split("/")[0]
        else:
            run_root = work
        from playwright.sync_api import sync_playwright

        with scale.served(run_root, cache / "streamlit.log") as (url, pid), sync_playwright() as p:
            browser = p.chromium.launch(executable_path=scale.CHROMIUM, headless=True, args=scale.ARGS)
            try:
                page = browser.new_page(viewport={"width": 1500, "height": 1000})
                page.goto(url)
                rows = []
                if args.work is not None:
                    b = scale.Bench(page, page.context.new_cdp_session(page), pid, run_root / "data" / "X.npy",
                                    f"{args.rows:,}", None, args.timeout)  # fmt: skip
                    rows += filter_stop_timing(b, args.rows, args.stop_timing, args.stop_timeout)
                    b.rss.stop()
                rows += stop_timing(page, url, args.stop_timing, args.stop_timeout, filter_on_digits=args.work is None)
            finally:
                browser.close()
    for what in ("Filter", "Baselines"):
        walls = sorted(r["wall_s"] for r in rows if r["page"] == what and "wall_s" in r)
        if walls:
            listed = ", ".join(f"{w:.2f}" for w in walls)
            print(f"{what}: Stop → stopped state {listed} s (median {walls[len(walls) // 2]:.2f})")
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
