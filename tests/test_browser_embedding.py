"""Real-browser test of the Embedding map: run AFLite, lasso points on the map, see them listed beneath.

Drives Debian's Chromium through Playwright's sync API against ``streamlit run app.py`` on a free port.
``AFLITE_CHROMIUM`` overrides the browser path. Without a browser the test is skipped, or fails when ``CI``
is set. UMAP is turned off on the test server (``AFLITE_APP_UMAP=0``): the map is PCA, which keeps the
test deterministic and fast; the swap to UMAP is covered by tests/test_app_embedding.py.
"""

from __future__ import annotations

import os
import re
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from browser_fixtures import CHROMIUM, LAUNCH_ARGS

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server_env(server_dir):
    """This module's served app (``server``: browser_fixtures): a numba cache of its own and no UMAP."""
    return {"NUMBA_CACHE_DIR": str(server_dir / "numba_cache"), "AFLITE_APP_UMAP": "0"}


def test_lasso_on_the_map_lists_the_selected_rows(server, tmp_path):
    started = time.monotonic()
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install playwright; never `playwright install`)")
    if not Path(CHROMIUM).exists():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set AFLITE_CHROMIUM)")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            # The home page first: a fresh server runs app.py's st.navigation only once "/" was opened
            # (a first deep link runs the page file alone, in Streamlit's pages/-folder mode).
            page.goto(server + "/")
            expect(
                page.get_by_test_id("stSidebarNavItems").get_by_role("link", name="Filter", exact=True)
            ).to_be_visible(timeout=30_000)

            # Filter: run AFLite with the defaults and wait for its chart and the sidebar's run summary
            page.goto(server + "/filter")
            expect(page.locator("[data-testid=stPlotlyChart] .js-plotly-plot").first).to_be_visible(timeout=45_000)
            sidebar = page.get_by_test_id("stSidebar")
            expect(sidebar.get_by_text("Current run")).to_be_visible(timeout=20_000)
            expect(sidebar.get_by_test_id("stMetricLabel").filter(has_text="kept")).to_be_visible(timeout=20_000)

            # Embedding map (same session, through the navigation): wait for the scatter's points
            page.get_by_test_id("stSidebarNavItems").get_by_role("link", name="Embedding map").click()
            expect(page.get_by_text("Nothing selected yet")).to_be_visible(timeout=30_000)
            page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .scatterlayer .point').length > 100", timeout=20_000
            )
            assert urllib.parse.urlsplit(page.url).path.rstrip("/").endswith("/embedding")  # (the view is in the query)

            # lasso: the figure starts in lasso mode; click the modebar's lasso button too, as a user would
            plot = page.locator("[data-testid=stPlotlyChart]").first
            plot.hover()
            lasso_button = plot.locator(".modebar-btn[data-val='lasso']")
            if lasso_button.count():
                lasso_button.first.click()
            box = plot.locator(".nsewdrag").first.bounding_box()
            cx, cy = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5
            w, h = box["width"] * 0.25, box["height"] * 0.3
            page.mouse.move(cx - w, cy - h)
            page.mouse.down()
            for x, y in ((cx + w, cy - h), (cx + w, cy + h), (cx - w, cy + h), (cx - w, cy - h)):
                page.mouse.move(x, y, steps=10)
            page.mouse.up()

            # the selected rows are listed beneath, with a count
            count = page.get_by_text(re.compile(r"^[\d,]+ rows selected"))
            expect(count).to_be_visible(timeout=30_000)
            n_selected = int(count.inner_text().split()[0].replace(",", ""))
            assert n_selected > 0
            expect(page.get_by_text("Nothing selected yet")).to_have_count(0)
            page.screenshot(path=str(tmp_path / "embedding_selection.png"), full_page=True)
            assert page.get_by_test_id("stException").count() == 0
        finally:
            browser.close()
    assert time.monotonic() - started < 90
