"""Inspect and Predictability on a large opened run, timed with Streamlit's AppTest (a proxy for the browser).

Usage::

    python benchmarks/bench_inspect_scale.py                      # 550,000 × 384 (builds the run once, ~2-4 min)
    python benchmarks/bench_inspect_scale.py --tiny               # 20,000 × 16: checks that it runs
    python benchmarks/bench_inspect_scale.py --root /tmp/old      # the same measurements on another checkout
    python benchmarks/bench_inspect_scale.py --work /tmp/big      # where the features and the run live (kept)

Builds seeded random features (3 classes, 25 % of rows with a planted label-revealing shift:
``aflite_core.data.planted_bias.make_planted_bias``), writes the run with ``python -m aflite_core filter ... --out``
(m 64, t 10 %, k 2 %, τ 0.75, target N/3, as issue 25's run B) below a temporary run root, opens it on the Data page
("Open a run directory") and times, in one AppTest session:

* Inspect's first render (the script run that draws the rows table);
* opening the tab "What the removed rows share" (until its table is there: the script run, plus the background
  job's wait where the page computes it in the background);
* Predictability's first render (the round-1 histogram) and a change of round.

Times are the wall time of ``AppTest.run()`` (the server's script run: no browser, no websocket, no rendering
in Chromium); the resident size of this process is sampled at 20 Hz and reported as the peak above its size just
after the run was opened and its features touched. Nothing asserts; the 1-minute load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class PeakRSS:
    """Samples this process's resident size at 20 Hz; ``peak_since()`` is the highest since the last ``reset``."""

    def __init__(self) -> None:
        self._peak = _rss()
        self._stop = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            self._peak = max(self._peak, _rss())

    def reset(self) -> None:
        self._peak = _rss()

    def peak(self) -> int:
        return max(self._peak, _rss())


def build_run(work: Path, n: int, d: int) -> tuple[Path, str]:
    """The run root and the run's path below it (built once per (n, d), kept in ``work``)."""
    root = work / "runs"
    run = root / f"planted-{n}x{d}" / "run"
    if (run / "result.json").exists():
        return root, f"planted-{n}x{d}/run"
    data = root / f"planted-{n}x{d}" / "data"
    data.mkdir(parents=True, exist_ok=True)
    from aflite_core.data.planted_bias import make_planted_bias

    t0 = time.perf_counter()
    X, y, _ = make_planted_bias(n, d, n_classes=3, bias_fraction=0.25, random_state=0)
    np.save(data / "X.npy", X.astype(np.float32))
    (data / "y.txt").write_text("\n".join(np.array(["ant", "bee", "cat"])[y]) + "\n", encoding="utf-8")
    del X
    print(f"features {n:,} × {d}: {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "aflite_core", "filter", "--features", str(data / "X.npy")]
    cmd += ["--labels", str(data / "y.txt"), "--mmap", "--partitions", "64", "--train-size", "0.1"]
    cmd += ["--slice-size", str(max(1, n // 50)), "--tau", "0.75", "--target-size", str(n // 3), "--quiet"]
    cmd += ["--threads", "1", "--out", str(run)]
    subprocess.run(cmd, check=True, cwd=sys.path[0])
    print(f"CLI run: {time.perf_counter() - t0:.1f} s", flush=True)
    return root, f"planted-{n}x{d}/run"


def _app_test(root: Path):
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    class NavigationPagesManager(PagesManager):  # as tests/conftest.py: every run goes through app.py
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    app_test_module.PagesManager = NavigationPagesManager
    return AppTest.from_file(str(root / "app.py"), default_timeout=900)


def _timed(rss: PeakRSS, base: int, fn) -> tuple[float, float]:
    rss.reset()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0, (rss.peak() - base) / 2**30


def _wait_job(at, done, limit: float = 600.0) -> None:
    """Rerun until ``done(at)`` (a background job's result drawn), at most ``limit`` seconds."""
    t0 = time.perf_counter()
    while not done(at) and time.perf_counter() - t0 < limit:
        time.sleep(0.2)
        at.run()


def measure(checkout: Path, run_root: Path, relative: str) -> dict:
    os.environ["AFLITE_RUN_ROOT"] = str(run_root)
    os.environ["AFLITE_APP_UMAP"] = "0"
    os.environ.setdefault("AFLITE_APP_SYNC_WAIT", "1.5")
    os.chdir(checkout)
    rss = PeakRSS()
    at = _app_test(checkout)
    at.run()
    at.switch_page("pages/data.py").run()
    at.selectbox(key="run-dir").set_value(relative)
    t_open = time.perf_counter()
    next(b for b in at.button if b.label == "Open run").click().run()
    t_open = time.perf_counter() - t_open
    assert not at.exception, at.exception
    data = at.session_state["uploads"][at.session_state["dataset_key"]]  # touch the features once
    for X in data.representations.values():
        float(np.asarray(X[:: max(1, len(X) // 1000)]).sum())
    base = _rss()
    out = {"open_run_s": round(t_open, 2), "rss_after_open_gib": round(base / 2**30, 2)}

    at.switch_page("pages/inspect.py")
    s, g = _timed(rss, base, at.run)
    assert not at.exception, at.exception
    out["inspect_first_render_s"], out["inspect_first_render_peak_gib"] = round(s, 2), round(g, 2)
    out["inspect_rows_shown"] = len(at.dataframe[0].value) if at.dataframe else 0

    def art_done(a) -> bool:
        return any("AUC" in c.value for c in a.caption) or any("separates the rows" in i.value for i in a.info)

    def open_art():
        at.session_state["inspect-tab"] = "What the removed rows share"  # the tab's key (unused where tabs are eager)
        at.run()
        _wait_job(at, art_done)

    s, g = _timed(rss, base, open_art)
    assert not at.exception, at.exception
    out["inspect_removed_share_tab_s"], out["inspect_removed_share_tab_peak_gib"] = round(s, 2), round(g, 2)
    out["inspect_removed_share_tab_done"] = art_done(at)

    at.switch_page("pages/predictability.py")
    s, g = _timed(rss, base, at.run)
    assert not at.exception, at.exception
    out["predictability_first_render_s"], out["predictability_first_render_peak_gib"] = round(s, 2), round(g, 2)
    # the page's figures, drawn by st.plotly_chart or by aflite_app.plotly_once (tests/plotly_figures.py reads both)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from plotly_figures import plotly_elements

    elements = plotly_elements(at)
    figs = [json.loads(el.proto.spec) for el in elements]
    out["predictability_figure_bytes"] = sum(len(el.proto.spec) for el in elements)
    rounds = at.slider(key="pred-round")
    out["rounds"] = rounds.max
    rounds.set_value(min(2, rounds.max))
    s, g = _timed(rss, base, at.run)
    out["predictability_round_change_s"], out["predictability_round_change_peak_gib"] = round(s, 2), round(g, 2)
    out["predictability_figures"] = len(figs)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tiny", action="store_true", help="20,000 × 16: checks that the script runs")
    parser.add_argument("--rows", type=int, default=550_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout whose app is measured")
    parser.add_argument("--work", type=Path, default=None, help="where the features and the run live (kept there)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    n, d = (20_000, 16) if args.tiny else (args.rows, args.dim)
    sys.path.insert(0, str(args.root.resolve()))  # the measured checkout's packages, the generator included
    with tempfile.TemporaryDirectory(prefix="aflite-inspect-scale-") as tmp:
        run_root, relative = build_run(args.work or Path(tmp), n, d)
        out = {"rows": n, "dim": d, "checkout": str(args.root), "load_1min": round(os.getloadavg()[0], 2)}
        out.update(measure(args.root.resolve(), run_root, relative))
    out["load_1min_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
