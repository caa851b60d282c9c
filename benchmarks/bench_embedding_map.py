"""The Embedding map over every row of a large run: first render of the density layer, and a lasso over all rows.

Usage::

    python benchmarks/bench_embedding_map.py              # 550,000 × 384 (issue 25's run B; a few minutes, ~3 GB disk)
    python benchmarks/bench_embedding_map.py --rows 200000
    python benchmarks/bench_embedding_map.py --tiny       # 30,000 × 16: every code path in seconds

Builds seeded planted-bias data (3 classes, 25 % of rows with a planted shortcut; nothing large in the repo) in a
temporary folder, writes a run with the CLI (cheap settings: the run is not what is timed), then times, in this one
process:

* **layer** (the pieces of the map's first render, each cold): PCA of every row from the memory-mapped features
  (axes fitted on a 50,000-row sample), the 200 × 200 density grid, the Plotly figure and its JSON (the bytes the
  browser gets);
* **lasso**: a lasso polygon (300 vertices, about 40 % of the rows inside) evaluated over every row from its
  geometry, the counts per class and the first page (200 rows) of the selection table;
* **page** (AppTest, ``AFLITE_APP_UMAP=0``): the run opened on the Data page, the Embedding page's first full run
  (map, Figure 1 and the kNN table on its 20,000-row sample), and the rerun after a lasso;
* **browser** (``--browser``: ``streamlit run`` driven in headless Chromium through Playwright): from the click on
  "Embedding map" to the density image on screen, and from releasing a drawn lasso to "N rows selected".

Wall seconds depend on the machine's load: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def build(folder: Path, n: int, d: int) -> tuple[Path, Path]:
    """Seeded features (float32 .npy) and labels for ``n`` rows, 3 classes, 25 % of rows with a planted shortcut."""
    from aflite_core.data.planted_bias import make_planted_bias

    X, y, _ = make_planted_bias(n, d, n_classes=3, random_state=0)
    np.save(folder / "X.npy", np.asarray(X, dtype=np.float32))
    del X
    (folder / "y.txt").write_text("\n".join(np.array(["alpha", "beta", "gamma"])[y]) + "\n")
    return folder / "X.npy", folder / "y.txt"


def write_run(features: Path, labels: Path, out: Path, n: int) -> None:
    from aflite_core.cli import main

    args = ["filter", "--features", str(features), "--labels", str(labels), "--target-size", str(int(n * 0.9)),
            "--train-size", "2000", "--slice-size", str(max(500, n // 40)), "--partitions", "4", "--seed", "2",
            "--quiet", "--out", str(out)]  # fmt: skip
    assert main(args) == 0


def lasso_polygon(xy: np.ndarray, vertices: int = 300) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = np.percentile(xy, [5, 95], axis=0)
    t = np.linspace(0, 2 * np.pi, vertices, endpoint=False)
    r = 0.5 * (1 + 0.25 * np.sin(5 * t))
    return (lo[0] + hi[0]) / 2 + (hi[0] - lo[0]) * r * np.cos(t), (lo[1] + hi[1]) / 2 + (hi[1] - lo[1]) * r * np.sin(t)


def time_layer(features: Path, run_dir: Path) -> tuple[dict, np.ndarray]:
    from aflite_app.charts.embedding import embedding_density
    from aflite_app.map_table import class_counts
    from aflite_app.selection import rows_in_geometry
    from aflite_core import AFLiteResult
    from aflite_core.measures.map_grids import density_grid
    from aflite_core.measures.projection import PCA_FIT_ROWS, pca_2d_all

    out = {}
    X = np.load(features, mmap_mode="r")
    result = AFLiteResult.load(run_dir)
    t = time.perf_counter()
    xy, _, _ = pca_2d_all(X, max_fit_rows=PCA_FIT_ROWS, random_state=0, n_threads=1)
    out["PCA of every row (s)"] = time.perf_counter() - t
    t = time.perf_counter()
    codes = (~np.asarray(result.kept)).astype(np.int64)
    grid = density_grid(xy, bins=200, codes=codes, n_codes=2)
    out["density grid (s)"] = time.perf_counter() - t
    t = time.perf_counter()
    fig = embedding_density(grid, "status", codes=("kept", "removed"))
    spec = fig.to_json()
    out["figure + JSON (s)"] = time.perf_counter() - t
    out["figure JSON (MB)"] = len(spec) / 1e6
    px, py = lasso_polygon(xy)
    event = {"selection": {"points": [], "box": [], "lasso": [{"x": px.tolist(), "y": py.tolist()}]}}
    t = time.perf_counter()
    rows = rows_in_geometry(event, xy)
    out["lasso over every row (s)"] = time.perf_counter() - t
    out["rows in the lasso"] = len(rows)

    class _Data:  # the two fields class_counts reads
        classes = np.array(["alpha", "beta", "gamma"])
        y = np.unique(np.loadtxt(features.parent / "y.txt", dtype=str), return_inverse=True)[1]
        n_rows = len(xy)

    t = time.perf_counter()
    class_counts(_Data, result, rows)
    out["per-class counts (s)"] = time.perf_counter() - t
    return out, xy


def time_page(root: Path, relative: str, xy: np.ndarray) -> dict:
    """AppTest timings; ``xy`` is the page's PCA map (the same seeded computation as :func:`time_layer`)."""
    import conftest  # noqa: F401 - the AppTest helpers of the test suite
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    from aflite_app.compute import embedding as compute
    from aflite_app.state import embedding_map_key, embedding_selection_key

    class NavigationPagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    app_test_module.PagesManager = NavigationPagesManager
    os.environ.update(AFLITE_RUN_ROOT=str(root), AFLITE_APP_UMAP="0", AFLITE_APP_SYNC_WAIT="600")
    out = {}
    at = AppTest.from_file(str(HERE.parent / "app.py"), default_timeout=900)
    at.run()
    at.switch_page("pages/data.py").run()
    at.selectbox(key="run-dir").set_value(relative)
    t = time.perf_counter()
    next(b for b in at.button if b.label == "Open run").click().run()
    out["open the run (s)"] = time.perf_counter() - t
    assert not at.exception, at.exception
    t = time.perf_counter()
    at.switch_page("pages/embedding.py").run()
    out["Embedding page, first full run (s)"] = time.perf_counter() - t
    assert not at.exception, at.exception
    spec = at.session_state["last_result_spec"]
    sel_key = embedding_selection_key(embedding_map_key(spec.dataset.key, spec.dataset.representation or "features"))
    px, py = lasso_polygon(xy)
    event = {"selection": {"points": [], "box": [], "lasso": [{"x": px.tolist(), "y": py.tolist()}]}}
    t = time.perf_counter()
    at.session_state[sel_key] = compute.after_event(at.session_state[sel_key], event, n_rows=len(xy), xy=xy)
    at.run()
    out["lasso: callback + rerun listing it (s)"] = time.perf_counter() - t
    assert not at.exception, at.exception
    out["rows selected (page)"] = len(at.session_state[sel_key].rows)
    t = time.perf_counter()
    at.run()
    out["a rerun with nothing new (s)"] = time.perf_counter() - t
    return out


def time_browser(root: Path, n: int) -> dict:
    """Chromium: open the run on the Data page, then time the map's density image and a drawn lasso."""
    import re

    from browser_fixtures import served_app
    from playwright.sync_api import expect, sync_playwright

    out = {}
    env = {"AFLITE_APP_UMAP": "0", "AFLITE_RUN_ROOT": str(root)}
    chromium = os.environ.get("AFLITE_CHROMIUM", "/usr/bin/chromium")
    with served_app(env=env, log=root / "streamlit.log", timeout=60) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(base + "/")
            nav = page.get_by_test_id("stSidebarNavItems")
            nav.get_by_role("link", name="Data", exact=True).click()
            page.get_by_role("tab", name="Open a run directory").click()
            page.get_by_role("button", name="Open run").click()
            opened = page.get_by_test_id("stSidebar").get_by_text(re.compile(rf"^{n:,} rows · "))
            try:
                expect(opened.first).to_be_visible(timeout=300_000)
            except Exception:
                page.screenshot(
                    path=str(Path(tempfile.gettempdir()) / "bench_embedding_map_failed.png"), full_page=True
                )
                raise
            t = time.perf_counter()
            nav.get_by_role("link", name="Embedding map").click()
            try:
                page.wait_for_function(
                    "() => document.querySelectorAll('.js-plotly-plot .heatmaplayer image, .js-plotly-plot .hm image')"
                    ".length > 0",
                    timeout=180_000,
                )
            except Exception:
                page.screenshot(
                    path=str(Path(tempfile.gettempdir()) / "bench_embedding_map_failed.png"), full_page=True
                )
                raise
            out["browser: density image on screen (s)"] = time.perf_counter() - t
            expect(page.get_by_text("Nothing selected yet")).to_be_visible(timeout=300_000)
            box = page.locator("[data-testid=stPlotlyChart] .nsewdrag").first.bounding_box()
            cx, cy = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5
            w, h = box["width"] * 0.3, box["height"] * 0.3
            page.mouse.move(cx - w, cy - h)
            page.mouse.down()
            for x, y in ((cx + w, cy - h), (cx + w, cy + h), (cx - w, cy + h), (cx - w, cy - h)):
                page.mouse.move(x, y, steps=10)
            t = time.perf_counter()
            page.mouse.up()
            count = page.get_by_text(re.compile(r"^[\d,]+ rows selected"))
            expect(count).to_be_visible(timeout=120_000)
            out["browser: lasso to its rows listed (s)"] = time.perf_counter() - t
            out["browser: rows selected"] = int(count.inner_text().split()[0].replace(",", ""))
        finally:
            browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=550_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--tiny", action="store_true", help="30,000 × 16 (every code path in seconds)")
    parser.add_argument("--no-page", action="store_true", help="skip the AppTest timings")
    parser.add_argument("--browser", action="store_true", help="also time the page in headless Chromium")
    args = parser.parse_args(argv)
    n, d = (30_000, 16) if args.tiny else (args.rows, args.dims)  # tiny: still above the 20,000 points
    print(f"Embedding map at {n:,} × {d} · load average {os.getloadavg()[0]:.1f} · {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-embedding-map-") as tmp:
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        t = time.perf_counter()
        features, labels = build(data, n, d)
        print(f"  data built in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        write_run(features, labels, root / "big" / "run1", n)
        print(f"  run written by the CLI in {time.perf_counter() - t:.1f} s")
        rows, xy = time_layer(features, root / "big" / "run1")
        if not args.no_page:
            rows.update(time_page(root, "big/run1", xy))
        if args.browser:
            rows.update(time_browser(root, n))
        width = max(len(k) for k in rows)
        for key, value in rows.items():
            text = f"{value:,}" if isinstance(value, int) else f"{value:.2f}"
            print(f"  {key:<{width}}  {text}")
        print(f"  peak resident size of this process: {_rss_gb():.2f} GB · load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
