"""App latency benchmark in a real browser: cold home page, Filter τ changes, Synthetic τ and k changes.

Usage::

    python benchmarks/bench_app.py                  # needs Debian's chromium (or AFLITE_CHROMIUM) and playwright
    python benchmarks/bench_app.py --root /tmp/old  # the same measurements on another checkout (before/after)
    python benchmarks/bench_app.py --only synthetic --tau-changes 8 --k-changes 4 --json out.json
    python benchmarks/bench_app.py --tiny           # one Filter and one Synthetic τ change: checks that it runs

Measures, on the bundled digits and the Synthetic page's default circles:

* first page of a cold app: from starting ``streamlit run`` to the home page rendered in headless Chromium;
* Filter page: first render, and the time from a τ change (keyboard on the slider) until the chart shows the new τ;
* Synthetic page: first render (every panel drawn), and the time from a τ or a k change until **every** panel
  that depends on τ and k shows the new run: the stepper's histogram carries ``layout.meta = {"tau", "k"}`` and
  every after-panel ``{"dataset", "rows", "kept"}`` (a digest of the rows it draws); this script computes the
  digests a direct AFLite run at the new (τ, k) gives (``ExpectedPanels``, before the key press) and the detector
  waits until every panel shows them, Streamlit's status widget no longer shows the script as running, and no
  plot has changed in the DOM for ``QUIET_MS``; the time reported is the first animation frame after the last
  change to any plot (a MutationObserver records it), not the moment the detector polls. An after-panel whose
  rows did not change is not drawn again, and need not be. Older checkouts (``--root``): where every run figure
  carries τ and k, every one must show the new values; without tags, the stepper's histogram must show the new τ;
  then the script's end and quiet plots as above. Per change it also counts the figures drawn again and their SVG
  points, and fits the renderer's CPU per change as a fixed part plus a cost per SVG point.
* per change, besides the wall time: the CPU seconds of the Streamlit server process, of every Chromium process
  (renderer and GPU process apart: software WebGL rasterises in the GPU process) and the renderer main thread's
  own accounting from the Chrome DevTools Protocol (``Performance.getMetrics``: TaskDuration, ScriptDuration,
  LayoutDuration and RecalcStyleDuration deltas).
* WebGL check: headless Chromium runs with ``--disable-gpu``, so WebGL is SwiftShader (software). For every
  figure drawn with WebGL the script screenshots it with and without its canvases and counts the pixels the
  canvases paint; a figure whose WebGL panels draw nothing would make the timing a fake, so it is reported.

Prints the figures (and writes them as JSON with ``--json``); nothing asserts (shared machines are noisy).
The 1-minute load average is printed next to every figure. Copy them into benchmarks/README.md section 5.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("AFLITE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    # without a GPU, WebGL is SwiftShader's software rasteriser; recent Chromium only offers it with this flag
    "--enable-unsafe-swiftshader",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: a change counts as drawn when no plot changed in the DOM for this long after the script finished
QUIET_MS = 500
#: renderer metrics read per change (seconds of the renderer's main thread, from the DevTools protocol)
CDP_METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")

#: installed in every document: the time of the last DOM change inside any plot, and the frame after it
OBSERVER_JS = """
(() => {
  window.__plotMut = 0; window.__plotFrame = 0; window.__glLost = 0;
  // Chromium keeps 16 WebGL contexts per page and silently drops the oldest beyond that: count the drops
  document.addEventListener('webglcontextlost', () => { window.__glLost++; }, true);
  // count plotly_afterplot events (each is one full draw of a figure): plotly.js's Events.init sets gd.emit and
  // then adds a passive 'wheel' listener to the graph div; wrap that gd.emit (any plotly.js bundle, Streamlit's
  // own or the one aflite_app/plotly_once.py loads)
  window.__afterplots = 0;
  const addListener = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, fn, opts) {
    if (type === 'wheel' && typeof this.emit === 'function' && !this.__benchEmit) {
      const emit = this.emit;
      this.__benchEmit = true;
      this.emit = function (ev, data) {
        if (ev === 'plotly_afterplot') {
          window.__afterplots++;
          this.__afterplotCount = (this.__afterplotCount || 0) + 1;
        }
        return emit.call(this, ev, data);
      };
    }
    return addListener.call(this, type, fn, opts);
  };
  const install = () => {
    new MutationObserver((records) => {
      // cheap: a plot's drawing comes in thousands of records; look at a sample (first, last, every 64th)
      const now = performance.now();
      let hit = false;
      const last = records.length - 1;
      for (let i = 0; i <= last && !hit; i = i === last ? last + 1 : Math.min(i + 64, last)) {
        const r = records[i];
        const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
        hit = !!(el && el.closest && el.closest('.js-plotly-plot'));
        for (const n of r.addedNodes || []) {
          hit = hit || (n.nodeType === 1 && (n.matches('.js-plotly-plot') || !!n.querySelector('.js-plotly-plot')));
        }
      }
      if (hit) {
        window.__plotMut = now;
        requestAnimationFrame(() => setTimeout(() => { window.__plotFrame = performance.now(); }, 0));
      }
    }).observe(document.documentElement, {subtree: true, childList: true, attributes: true, characterData: true});
  };
  if (document.documentElement) install(); else document.addEventListener('readystatechange', install, {once: true});
})();
"""

#: the Synthetic page is drawn for (τ, k): every tagged figure shows them, the script is done, the plots are quiet.
#: ``kept`` ({dataset: digest}, for pages whose after-panels carry ``charts.kept_meta``): every after-panel shows
#: the rows a direct AFLite run at (τ, k) keeps - computed by this script, not read from the page.
SYNTHETIC_DONE_JS = """
([tau, k, nTagged, t0, quiet, legacy, kept]) => {
  if (document.querySelector('[data-testid="stStatusWidgetRunningIcon"]')) return false;
  const now = performance.now();
  if (window.__plotMut <= t0 || now - window.__plotMut < quiet || window.__plotFrame < window.__plotMut) return false;
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  if (legacy) {
    return [...document.querySelectorAll('.js-plotly-plot .annotation-text')]
      .some(e => e.textContent.includes('τ = ' + legacy));
  }
  const tagged = plots.filter(p => p.layout && p.layout.meta && p.layout.meta.tau !== undefined);
  const ok = tagged.length >= nTagged
    && tagged.every(p => Math.abs(p.layout.meta.tau - tau) < 1e-9 && (k === null || p.layout.meta.k === k));
  if (!ok || !kept) return ok;
  const panels = plots.filter(p => p.layout && p.layout.meta && p.layout.meta.kept !== undefined);
  return panels.length === Object.keys(kept).length
    && panels.every(p => kept[p.layout.meta.dataset] === p.layout.meta.kept);
}
"""


def load1() -> float:
    return os.getloadavg()[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(root: Path, port: int) -> tuple[subprocess.Popen, float]:
    t0 = time.perf_counter()
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(root / ".numba_cache")))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(root / "app.py"),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=root,
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


class Meters:
    """CPU seconds of the server and of every Chromium process, and the renderer's DevTools metrics."""

    def __init__(self, server_pid: int, cdp) -> None:
        import psutil

        self.psutil = psutil
        self.server = psutil.Process(server_pid)
        self.cdp = cdp
        cdp.send("Performance.enable")

    def _chromium(self) -> dict[str, float]:
        out = {"renderer": 0.0, "gpu": 0.0, "other": 0.0}
        for p in self.psutil.Process().children(recursive=True):
            try:
                if "chrom" not in p.name():
                    continue
                kind = next((a[7:] for a in p.cmdline() if a.startswith("--type=")), "browser")
                t = p.cpu_times()
                key = "renderer" if kind == "renderer" else "gpu" if kind == "gpu-process" else "other"
                out[key] += t.user + t.system
            except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
                continue
        return out

    def read(self) -> dict[str, float]:
        t = self.server.cpu_times()
        out = {"server_cpu": t.user + t.system}
        out.update({f"chromium_{k}_cpu": v for k, v in self._chromium().items()})
        metrics = {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")["metrics"]}
        out.update({f"cdp_{k}": float(metrics.get(k, 0.0)) for k in CDP_METRICS})
        return out

    @staticmethod
    def delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        return {k: b[k] - a[k] for k in a}


def summarise(name: str, rows: list[dict[str, float]]) -> dict[str, float]:
    """Median and max of every measured quantity over the changes; printed one line each."""
    out: dict[str, float] = {"n": len(rows)}
    print(f"{name} ({len(rows)} changes, load {statistics.mean(r['load1'] for r in rows):.1f}):")
    for key in rows[0]:
        vals = [r[key] for r in rows]
        out[f"{key}_median"] = statistics.median(vals)
        out[f"{key}_max"] = max(vals)
        if key != "load1":
            print(f"    {key:28s} median {statistics.median(vals):7.3f}   max {max(vals):7.3f}")
    out["changes"] = rows
    return out


def renderer_per_point(rows: list[dict[str, float]]) -> dict[str, float] | None:
    """Least squares over the Synthetic changes: renderer CPU-s = fixed + per_point × SVG points redrawn."""
    import numpy as np

    pts = np.array([r["svg_points_redrawn"] for r in rows], dtype=float)
    cpu = np.array([r["chromium_renderer_cpu"] for r in rows], dtype=float)
    if len(rows) < 3 or np.ptp(pts) == 0:
        return None
    slope, fixed = np.polyfit(pts, cpu, 1)
    fit = {"fixed_cpu_s": float(fixed), "ms_per_point": float(slope * 1e3), "n": len(rows)}
    print(
        f"renderer CPU per change ≈ {fixed:.2f} s + {slope * 1e3:.3f} ms × SVG points redrawn "
        f"(least squares over {len(rows)} changes)"
    )
    return fit


def slider_thumb(page, label: str):
    return page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").first


def filter_changes(page, base: str, n: int, meters: Meters) -> list[dict[str, float]]:
    """Press ArrowLeft ×5 on the Filter page's τ slider; time until the chart's τ annotation shows the new τ."""
    page.goto(base + "/filter")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    page.wait_for_timeout(1500)
    slider = page.get_by_role("slider").first
    has_tau = (
        "(t) => [...document.querySelectorAll('.js-plotly-plot .annotation-text')].some(e => e.textContent.includes(t))"
    )
    tau, rows = 0.75, []
    for _ in range(n):
        slider.focus()
        tau = round(tau - 0.05, 2)
        m0, l0 = meters.read(), load1()
        t0 = time.perf_counter()
        for _ in range(5):
            page.keyboard.press("ArrowLeft")
        page.wait_for_function(has_tau, arg=f"τ = {tau:g}", timeout=120_000)
        wall = time.perf_counter() - t0
        page.wait_for_timeout(300)  # the renderer finishes the frame before the CPU is read
        rows.append({"wall_s": wall, **Meters.delta(m0, meters.read()), "load1": (l0 + load1()) / 2})
        page.wait_for_timeout(300)
    return rows


def _synthetic_state(page) -> dict:
    return page.evaluate(
        """() => {
          const plots = [...document.querySelectorAll('.js-plotly-plot')];
          const tagged = plots.filter(p => p.layout && p.layout.meta && p.layout.meta.tau !== undefined);
          return {plots: plots.length, tagged: tagged.length,
                  gl: plots.filter(p => p.querySelector('canvas.gl-canvas-context, canvas')).length};
        }"""
    )


def synthetic_wait(
    page, tau: float, k: int | None, n_tagged: int, t0: float, legacy: bool, kept: dict | None = None
) -> float:
    """Wait until the page shows (τ, k) everywhere; the wall time (ms, page clock) from t0 to the frame drawn."""
    page.wait_for_function(
        SYNTHETIC_DONE_JS,
        arg=[tau, k, n_tagged, t0, QUIET_MS, f"{tau:g}" if legacy else "", kept],
        timeout=180_000,
        polling=50,
    )
    return page.evaluate("window.__plotFrame") - t0


class ExpectedPanels:
    """What each after-panel of the page's default Synthetic run must show at (τ, k), from direct AFLite runs.

    For a checkout whose after-panels carry ``charts.kept_meta`` (dataset, rows, digest of the kept rows): the
    page reads every τ off one run at the slider's lowest τ, this computes the run at τ itself
    (``synthetic_experiment`` without the accuracies), so the detector also checks the page's rows. Computed
    before the key press, outside the timed window.
    """

    def __init__(self, root: Path) -> None:
        sys.path.insert(0, str(root))
        from aflite_app.charts import synthetic as charts
        from aflite_app.compute import synthetic as compute
        from aflite_core.experiments.figure2 import synthetic_experiment

        self.enabled = hasattr(charts, "kept_meta")
        self.charts, self.compute, self.run = charts, compute, synthetic_experiment
        self.memo: dict[tuple[float, int], dict[str, str]] = {}

    def __call__(self, tau: float, k: int) -> dict[str, str] | None:
        if not self.enabled:
            return None
        key = (round(tau, 2), int(k))
        if key not in self.memo:
            spec = self.compute.CirclesRunSpec(self.compute.CirclesSpec(), tau=key[0], slice_size=key[1])
            data = list(self.compute.circles_datasets(spec.data))
            exp = self.run(
                data,
                target_size=spec.target_size,
                train_size=spec.train_size,
                slice_size=key[1],
                tau=key[0],
                n_partitions=spec.n_partitions,
                random_state=spec.data.seed,
                accuracies=False,
            )
            self.memo[key] = {d.name: self.charts.kept_meta(d, exp.results[d.name])["kept"] for d in data}
        return self.memo[key]


def synthetic_changes(
    page, which: str, n: int, meters: Meters, n_tagged: int, legacy: bool, expected: ExpectedPanels | None = None
) -> list[dict[str, float]]:
    """Press ArrowLeft once on the τ or k slider per change; time until every τ/k-dependent panel is redrawn."""
    label = "τ — remove only rows" if which == "tau" else "k — rows removed per round"
    thumb = slider_thumb(page, label)
    rows = []
    for _ in range(n):
        thumb.focus()
        tau_before = float(slider_thumb(page, "τ — remove only rows").input_value())
        k_before = int(float(slider_thumb(page, "k — rows removed per round").input_value()))
        guess = (round(tau_before - 0.01, 2), k_before) if which == "tau" else (tau_before, k_before - 10)
        if expected is not None:
            expected(*guess)  # the direct runs for the value the key press will set, before the clock starts
            page.wait_for_timeout(300)  # and the machine quiet again
        m0, l0 = meters.read(), load1()
        # a figure drawn again (mounted afresh, or re-plotted in the same graph div) has a new _fullLayout or
        # more plotly_afterplot events: mark the current ones
        t0 = page.evaluate(
            "() => { document.querySelectorAll('.js-plotly-plot').forEach(p => { if (p._fullLayout) "
            "p._fullLayout.__bench = 1; p.__benchDraws = p.__afterplotCount || 0; }); return performance.now(); }"
        )
        afterplots0 = page.evaluate("() => window.__afterplots")
        page.keyboard.press("ArrowLeft")
        page.wait_for_timeout(20)
        tau_now = float(slider_thumb(page, "τ — remove only rows").input_value())
        k_now = int(float(slider_thumb(page, "k — rows removed per round").input_value()))
        kept = expected(tau_now, k_now) if expected is not None else None
        ms = synthetic_wait(page, tau_now, None if legacy else k_now, n_tagged, t0, legacy, kept)
        redrawn, points = page.evaluate(
            "(() => { const r = [...document.querySelectorAll('.js-plotly-plot')]"
            ".filter(p => !(p._fullLayout && p._fullLayout.__bench) || (p.__afterplotCount || 0) > p.__benchDraws);"
            " return [r.length, r.reduce((s, p) => s + (p._fullData || []).filter(t => t.type === 'scatter')"
            ".reduce((a, t) => a + (t._length || 0), 0), 0)]; })()"
        )
        afterplots = page.evaluate("() => window.__afterplots") - afterplots0
        rows.append(
            {
                "wall_s": ms / 1000,
                "plots_redrawn": redrawn,
                "afterplots": afterplots,
                "afterplots_per_redrawn": afterplots / redrawn if redrawn else 0.0,
                "svg_points_redrawn": points,
                **Meters.delta(m0, meters.read()),
                "load1": (l0 + load1()) / 2,
            }
        )
        page.wait_for_timeout(300)
    return rows


def webgl_pixels(page) -> list[dict]:
    """Per figure with canvases: how many pixels its canvases paint (screenshot with and without them)."""
    import numpy as np
    from PIL import Image

    out = []
    plots = page.locator(".js-plotly-plot")
    for i in range(plots.count()):
        plot = plots.nth(i)
        n_canvas = plot.evaluate("(p) => p.querySelectorAll('canvas').length")
        if not n_canvas:
            continue
        plot.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        shot = np.asarray(Image.open(io.BytesIO(plot.screenshot())).convert("RGB"), dtype=np.int16)
        plot.evaluate("(p) => p.querySelectorAll('canvas').forEach(c => c.style.visibility = 'hidden')")
        page.wait_for_timeout(200)
        bare = np.asarray(Image.open(io.BytesIO(plot.screenshot())).convert("RGB"), dtype=np.int16)
        plot.evaluate("(p) => p.querySelectorAll('canvas').forEach(c => c.style.visibility = '')")
        points = plot.evaluate(
            "(p) => (p._fullData || []).filter(t => t.type === 'scattergl').reduce((s, t) => s + (t._length || 0), 0)"
        )
        painted = int((np.abs(shot - bare).sum(axis=2) > 30).sum()) if shot.shape == bare.shape else -1
        out.append({"figure": i, "webgl_points": points, "pixels_painted_by_webgl": painted})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose app.py is served (default: this one)")
    ap.add_argument("--only", default="home,filter,synthetic,compute", help="comma-separated parts to run")
    ap.add_argument("--filter-changes", type=int, default=6)
    ap.add_argument("--tau-changes", type=int, default=8)
    ap.add_argument("--k-changes", type=int, default=4)
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--screenshot", type=Path, help="save the Synthetic page after the last change here")
    ap.add_argument("--compute-taus", type=int, default=10, help="τ values of the compute-only part")
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="one Filter and one Synthetic τ change, 2 τ in the compute part: checks that it runs",
    )
    args = ap.parse_args()
    if args.tiny:
        args.filter_changes, args.tau_changes, args.k_changes, args.compute_taus = 1, 1, 0, 2
    parts = set(args.only.split(","))
    root = args.root.resolve()
    report: dict = {"root": str(root), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    from playwright.sync_api import sync_playwright

    port = free_port()
    l0 = load1()
    t_start = time.perf_counter()
    proc, health = start_server(root, port)
    base = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.add_init_script(OBSERVER_JS)
            meters = Meters(proc.pid, page.context.new_cdp_session(page))
            t0 = time.perf_counter()
            page.goto(base + "/")
            page.get_by_text("How AFLite works").wait_for(timeout=60_000)
            first = time.perf_counter() - t0
            cold = time.perf_counter() - t_start
            report["home"] = {"health_s": health, "first_s": first, "cold_s": cold, "load1": (l0 + load1()) / 2}
            print(
                f"cold app (load {report['home']['load1']:.1f}): server healthy after {health:.1f} s; home page "
                f"rendered {first:.1f} s after opening the URL; {cold:.1f} s from `streamlit run` to a rendered home"
            )
            if "filter" in parts:
                l0, t0 = load1(), time.perf_counter()
                page.goto(base + "/filter")
                page.wait_for_function(
                    "document.querySelectorAll('.js-plotly-plot .bars path').length > 0", timeout=120_000
                )
                report["filter_first_s"] = time.perf_counter() - t0
                print(f"Filter page first render (load {(l0 + load1()) / 2:.1f}): {report['filter_first_s']:.1f} s")
                rows = filter_changes(page, base, args.filter_changes, meters)
                report["filter_tau"] = summarise("Filter page, τ change -> chart shows the new τ", rows)
            if "synthetic" in parts:
                l0 = load1()
                m0 = meters.read()
                page.goto(base + "/synthetic")
                page.wait_for_selector(".js-plotly-plot", timeout=180_000)
                page.wait_for_function(
                    "(q) => !document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]') && "
                    "window.__plotMut > 0 && performance.now() - window.__plotMut > q && "
                    "window.__plotFrame >= window.__plotMut",
                    arg=QUIET_MS,
                    timeout=180_000,
                    polling=50,
                )
                first_ms = page.evaluate("window.__plotFrame")  # page clock starts at navigation
                state = _synthetic_state(page)
                legacy = state["tagged"] == 0
                report["synthetic_first"] = {
                    "wall_s": first_ms / 1000,
                    **Meters.delta(m0, meters.read()),
                    "load1": (l0 + load1()) / 2,
                    "afterplots": page.evaluate("window.__afterplots"),
                    **state,
                }
                print(
                    f"Synthetic page first render (load {report['synthetic_first']['load1']:.1f}): "
                    f"{first_ms / 1000:.2f} s to every panel drawn; {state['plots']} figures, {state['tagged']} "
                    f"tagged with τ/k{' (legacy detector)' if legacy else ''}; "
                    f"{report['synthetic_first']['afterplots']} plotly_afterplot events"
                )
                report["webgl"] = webgl_pixels(page)
                for w in report["webgl"]:
                    print(
                        f"    WebGL figure #{w['figure']}: {w['webgl_points']} points, "
                        f"{w['pixels_painted_by_webgl']} pixels painted by its canvases"
                    )
                page.wait_for_timeout(1000)
                expected = None if legacy else ExpectedPanels(root)
                for which, n in (("tau", args.tau_changes), ("k", args.k_changes)):
                    if n:
                        rows = synthetic_changes(page, which, n, meters, state["tagged"], legacy, expected)
                        report[f"synthetic_{which}"] = summarise(
                            f"Synthetic page, {which} change -> every panel redrawn", rows
                        )
                both = [c for w in ("tau", "k") for c in report.get(f"synthetic_{w}", {}).get("changes", [])]
                if both and "svg_points_redrawn" in both[0]:
                    report["renderer_per_point"] = renderer_per_point(both)
                lost = page.evaluate("window.__glLost")
                report["webgl_after_changes"] = webgl_pixels(page)
                report["webgl_contexts_lost"] = lost
                print(f"after the changes: {lost} WebGL contexts lost; pixels painted by each WebGL figure:")
                for w in report["webgl_after_changes"]:
                    print(f"    #{w['figure']}: {w['webgl_points']} points, {w['pixels_painted_by_webgl']} pixels")
                if args.screenshot:
                    page.screenshot(path=str(args.screenshot), full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)

    if "compute" in parts:  # the compute part alone, caches warm: a new τ on the digits
        import numpy as np

        sys.path.insert(0, str(root))
        from aflite_core import aflite, load_digits_dataset

        data = load_digits_dataset()
        X, y = data.representation("mlp"), data.y
        n = data.n_rows
        kw = dict(target_size=n // 2, train_size=n // 4, slice_size=round(0.05 * n), random_state=0)
        aflite(X, y, tau=0.75, **kw)
        comp = []
        for tau in np.linspace(0.5, 0.95, args.compute_taus):
            t0 = time.perf_counter()
            aflite(X, y, tau=float(tau), **kw)
            comp.append(time.perf_counter() - t0)
        report["compute_digits_s"] = {"median": statistics.median(comp), "max": max(comp), "load1": load1()}
        print(
            f"compute only, new τ on the digits (load {load1():.1f}): median {statistics.median(comp):.2f} s, "
            f"max {max(comp):.2f} s"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
