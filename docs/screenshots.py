"""Screenshots of every page as a user sees it, at a desktop and a phone width, and the README's picture.

Usage::

    python docs/screenshots.py --out /tmp/shots            # every page at 1500 px and 390 px wide
    python docs/screenshots.py --out /tmp/shots --readme   # ... and docs/screenshot.png (Synthetic, 1500 px)

Starts ``streamlit run app.py`` on a free port of 127.0.0.1 (or uses ``--url``), opens it in headless Debian
Chromium (``/usr/bin/chromium`` or ``AFLITE_CHROMIUM``) through Playwright, runs the Filter page on the bundled
digits first (so the pages that show a run have one), then visits each page in the same browser session through
the navigation, waits until the app is idle (no running indicator, no progress bar) and saves a full-page PNG
``<width>-<page>.png``. Nothing is asserted: the pictures are for people to look at before a UI change lands.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("AFLITE_CHROMIUM", "/usr/bin/chromium")
LAUNCH = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader", "--disable-quic",
          "--no-first-run", "--disable-background-networking", "--disable-component-update",
          "--disable-sync"]  # fmt: skip
#: height of the README's picture at 1500 px: the Synthetic page down to its second row of panels
README_HEIGHT = 1540
#: (navigation title, file stem), in the order a user meets them; Filter first so later pages have its run
PAGES = [
    ("Filter", "filter"),
    ("Home", "home"),
    ("Synthetic circles", "synthetic"),
    ("Guided demo (10 min)", "demo"),
    ("Data", "data"),
    ("Predictability", "predictability"),
    ("Embedding map", "embedding"),
    ("Inspect", "inspect"),
    ("Compare runs", "compare"),
    ("Baselines", "baselines"),
    ("Evaluation sets", "evaluation_sets"),
    ("Training dynamics", "dynamics"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server() -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache")))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("streamlit did not answer /_stcore/health within 90 s")


def _idle(page, timeout: float = 240.0) -> None:
    """Wait until the script has finished and no background job shows a progress bar (then let charts draw)."""
    page.locator('[data-testid="stMain"] h1').first.wait_for(state="visible", timeout=timeout * 1000)
    deadline = time.time() + timeout
    quiet = 0
    while time.time() < deadline:
        busy = sum(page.locator(f'[data-testid="{t}"]').count() for t in ("stStatusWidget", "stProgress"))
        quiet = quiet + 1 if busy == 0 else 0
        if quiet >= 4:
            break
        time.sleep(0.5)
    time.sleep(1.5)


def _go(page, title: str, width: int) -> None:
    if width < 700:  # the sidebar is collapsed on a phone: open it, then follow the link
        opener = page.locator('[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"] button')
        if opener.count():
            opener.first.click()
            time.sleep(0.5)
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    time.sleep(1.0)
    if width < 700:  # ... and close it again, or it covers the page
        closer = page.locator('[data-testid="stSidebarCollapseButton"]')
        if closer.count() and closer.first.is_visible():
            closer.first.click()
            time.sleep(0.5)


def _whole_page(page, path: Path, width: int) -> None:
    """Streamlit scrolls inside its main section, so grow the window to that section's height for the picture."""
    height = page.viewport_size["height"]
    full = page.evaluate("() => Math.max(0, ...[...document.querySelectorAll('*')].map(e => e.scrollHeight))")
    page.set_viewport_size({"width": width, "height": int(min(max(full, height), 16000))})
    time.sleep(1.5)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": width, "height": height})
    _trim_bottom(path, keep=max(height, 400))


def _small_png(path: Path) -> None:
    """256 colours are plenty for a light page with a few chart colours: a third of the bytes in the repository."""
    from PIL import Image

    with Image.open(path) as im:
        small = im.convert("RGB").quantize(256)
    small.save(path, optimize=True)


def _trim_bottom(path: Path, keep: int) -> None:
    """Cut the blank band under the content (the window was grown to the tallest scrolling element)."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as im:
        rgb = np.asarray(im.convert("RGB"))
    main = rgb[:, rgb.shape[1] // 3 :]  # right of the sidebar, which runs to the bottom at desktop widths
    busy = np.flatnonzero((np.abs(main.astype(int) - main[-1:, :, :].astype(int)).sum(axis=2) > 30).any(axis=1))
    bottom = int(busy[-1]) + 40 if len(busy) else rgb.shape[0]
    if bottom < rgb.shape[0]:
        Image.fromarray(rgb[: max(bottom, keep)]).save(path)


def main() -> None:
    """Take the screenshots (see the module's docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the PNGs")
    ap.add_argument("--url", default=None, help="an app already running (default: start one)")
    ap.add_argument("--widths", default="1500,390")
    ap.add_argument("--pages", default=None, help="comma-separated file stems (default: all)")
    ap.add_argument("--readme", action="store_true", help="also write docs/screenshot.png (Synthetic, 1500 px)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = None if args.pages is None else set(args.pages.split(","))
    proc, url = (None, args.url) if args.url else _start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH)
            for width in (int(w) for w in args.widths.split(",")):
                page = browser.new_page(viewport={"width": width, "height": 1100 if width > 700 else 844})
                page.goto(url + "/filter", wait_until="domcontentloaded")
                _idle(page)
                for title, stem in PAGES:
                    if wanted is not None and stem not in wanted and stem != "filter":
                        continue
                    if stem != "filter":
                        _go(page, title, width)
                        _idle(page)
                    if wanted is None or stem in wanted:
                        path = out / f"{width}-{stem}.png"
                        _whole_page(page, path, width)
                        print(path)
                    if args.readme and stem == "synthetic" and width > 700:
                        # tall enough for both rows of panels (before and after AFLite) and the sliders above them
                        height = page.viewport_size["height"]
                        page.set_viewport_size({"width": width, "height": README_HEIGHT})
                        time.sleep(1.5)
                        page.screenshot(path=str(ROOT / "docs" / "screenshot.png"))
                        _small_png(ROOT / "docs" / "screenshot.png")
                        page.set_viewport_size({"width": width, "height": height})
                        print(ROOT / "docs" / "screenshot.png")
                page.close()
            browser.close()
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
