"""How many times a Plotly figure is drawn per change: ``st.plotly_chart`` (theme "streamlit" / None) or ours.

Usage::

    python benchmarks/bench_plotly_once.py                       # every mode, 8 changes each
    python benchmarks/bench_plotly_once.py --modes streamlit,once --changes 4 --json out.json
    python benchmarks/bench_plotly_once.py --tiny                # one change per mode: checks that it runs

Serves a small Streamlit app (written to a temporary folder) with six themed SVG scatter figures of 500 points
each (``aflite_app.charts.theme.style``, as the app's panels), drawn by ``st.plotly_chart(theme="streamlit")``
("streamlit"), ``st.plotly_chart(theme=None)`` ("none") or ``aflite_app.plotly_once.plotly_chart`` ("once"),
with ``on_select="rerun"`` as the Filter chart and the map use it. A "Next" button draws six new figures. For the
first render and each change it reports the wall time (click -> every figure shows the new figures and the plots
are quiet), the ``plotly_afterplot`` events per figure (each one full draw; counted by wrapping every graph
div's ``emit``, bench_app.OBSERVER_JS), the renderer main thread's busy time (CDP ``TaskDuration``, and
``ScriptDuration``) and the CPU seconds of the Streamlit server and the Chromium renderer. Nothing asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import ARGS, CHROMIUM, OBSERVER_JS, QUIET_MS, ROOT, Meters, free_port, load1, start_server

N_FIGURES = 6
N_POINTS = 500

APP = f"""
import numpy as np
import plotly.graph_objects as go
import streamlit as st

from aflite_app.charts import theme
from aflite_app.plotly_once import plotly_chart

mode = st.query_params.get("mode", "streamlit")
if st.button("Next"):
    st.session_state["n"] = st.session_state.get("n", 0) + 1
n = st.session_state.get("n", 0)
rng = np.random.default_rng(n)
cols = st.columns(3)
for i in range({N_FIGURES}):
    x, y = rng.normal(size=(2, {N_POINTS}))
    fig = go.Figure(go.Scatter(x=x, y=y, mode="markers", customdata=np.arange({N_POINTS})))
    theme.style(fig, height=300, title=f"panel {{i}}")
    fig.update_layout(meta={{"n": n}}, margin=dict(l=40, r=10, t=40, b=30))
    with cols[i % 3]:
        if mode == "once":
            plotly_chart(fig, key=f"p{{i}}", on_select="rerun", selection_mode=("points", "box", "lasso"))
        else:
            st.plotly_chart(
                fig, key=f"p{{i}}", theme=None if mode == "none" else "streamlit", width="stretch",
                on_select="rerun", selection_mode=("points", "box", "lasso"),
            )
"""

DONE_JS = """
([n, nFig, t0, quiet]) => {
  if (document.querySelector('[data-testid="stStatusWidgetRunningIcon"]')) return false;
  const now = performance.now();
  if (window.__plotMut <= t0 || now - window.__plotMut < quiet || window.__plotFrame < window.__plotMut) return false;
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return plots.length === nFig && plots.every(p => p.layout && p.layout.meta && p.layout.meta.n === n);
}
"""

PER_FIGURE_JS = """
() => [...document.querySelectorAll('.js-plotly-plot')].map(p => p.__afterplotCount || 0)
"""


def run_mode(page, meters: Meters, base: str, mode: str, changes: int) -> dict:
    """First render and ``changes`` clicks on Next in one mode; a fresh page (and session) per mode."""
    m0, l0 = meters.read(), load1()
    page.goto(f"{base}/?mode={mode}")
    page.wait_for_function(DONE_JS, arg=[0, N_FIGURES, 0, QUIET_MS], timeout=180_000, polling=50)
    first = {
        "wall_s": page.evaluate("window.__plotFrame") / 1000,
        "afterplots_per_figure": page.evaluate(PER_FIGURE_JS),
        **Meters.delta(m0, meters.read()),
        "load1": (l0 + load1()) / 2,
    }
    rows = []
    for n in range(1, changes + 1):
        page.wait_for_timeout(500)
        m0, l0 = meters.read(), load1()
        a0 = page.evaluate("window.__afterplots")
        t0 = page.evaluate("performance.now()")
        page.get_by_role("button", name="Next").click()
        page.wait_for_function(DONE_JS, arg=[n, N_FIGURES, t0, QUIET_MS], timeout=120_000, polling=50)
        rows.append(
            {
                "wall_s": (page.evaluate("window.__plotFrame") - t0) / 1000,
                "afterplots": page.evaluate("window.__afterplots") - a0,
                "afterplots_per_figure": page.evaluate(PER_FIGURE_JS),
                **Meters.delta(m0, meters.read()),
                "load1": (l0 + load1()) / 2,
            }
        )
    out = {"first": first, "changes": rows}
    keys = ("wall_s", "afterplots", "cdp_TaskDuration", "cdp_ScriptDuration", "chromium_renderer_cpu", "server_cpu")
    out["median"] = {k: statistics.median(r[k] for r in rows) for k in keys} if rows else {}
    print(
        f"{mode:9s} first render {first['wall_s']:.2f} s, afterplot per figure {first['afterplots_per_figure']}, "
        f"main thread {first['cdp_TaskDuration']:.2f} s, renderer {first['chromium_renderer_cpu']:.2f} CPU-s, "
        f"server {first['server_cpu']:.2f} CPU-s (load {first['load1']:.1f})"
    )
    if rows:
        med = out["median"]
        print(
            f"{'':9s} per change (median of {len(rows)}): {med['wall_s']:.2f} s, {med['afterplots']:.0f} afterplot "
            f"for {N_FIGURES} figures, main thread {med['cdp_TaskDuration']:.3f} s (script "
            f"{med['cdp_ScriptDuration']:.3f}), renderer {med['chromium_renderer_cpu']:.2f} CPU-s, server "
            f"{med['server_cpu']:.2f} CPU-s (load {statistics.mean(r['load1'] for r in rows):.1f})"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="streamlit,none,once", help="comma-separated: streamlit, none, once")
    ap.add_argument("--changes", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=1, help="run the modes this many times, alternating")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--tiny", action="store_true", help="one change per mode")
    args = ap.parse_args()
    if args.tiny:
        args.changes = 1
    modes = args.modes.split(",")
    from playwright.sync_api import sync_playwright

    report: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": []}
    tmp = Path(tempfile.mkdtemp(prefix="bench-plotly-once-"))
    (tmp / "app.py").write_text(APP, encoding="utf-8")
    shutil.copytree(ROOT / ".streamlit", tmp / ".streamlit")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    port = free_port()
    proc, _ = start_server(tmp, port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            for _ in range(args.rounds):
                for mode in modes:
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    page.add_init_script(OBSERVER_JS)
                    meters = Meters(proc.pid, page.context.new_cdp_session(page))
                    report["runs"].append(
                        {"mode": mode, **run_mode(page, meters, f"http://127.0.0.1:{port}", mode, args.changes)}
                    )
                    page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
