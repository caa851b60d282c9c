"""The real-browser tests' shared pieces: Chromium's path and flags, the check that it is there, ``served_app``
and the module-scoped ``server`` / ``browser`` fixtures every ``tests/test_browser*.py`` file uses.

Registered for the whole test folder by ``tests/conftest.py``. A module changes its served app's environment by
overriding ``server_env`` (module scope; ``server_dir`` is that module's temporary folder, where the server's log
``streamlit.log`` goes), e.g. a fresh cache and no UMAP::

    @pytest.fixture(scope="module")
    def server_env(server_dir):
        return {"AFLITE_CACHE_DIR": str(server_dir / "cache"), "AFLITE_APP_UMAP": "0"}

Without a browser the tests are skipped, or fail when ``CI`` is set (:func:`_require_browser`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("AFLITE_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _require_browser() -> None:
    missing = []
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        missing.append(f"Chromium at {CHROMIUM} (apt-get install chromium, or set AFLITE_CHROMIUM)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing.append("the playwright package (pip install -r requirements-dev.txt)")
    if missing:
        message = "browser test needs " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served_app(
    *, env: dict[str, str] | None = None, log: Path | None = None, timeout: float = 60, app: Path | None = None
) -> Iterator[str]:
    """``streamlit run app.py`` on a free port of 127.0.0.1 (``env`` on top of this environment); yields its URL
    once it answers its health check, and always terminates it. Every browser test module serves the app this way
    (``app``: another script, served from this checkout's folder with its settings).
    """
    port = _free_port()
    full_env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache")))
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "streamlit", "run", str(app or ROOT / "app.py"), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false"]  # fmt: skip
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(log, "w")) if log is not None else subprocess.DEVNULL
        proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    pytest.fail(f"streamlit exited with code {proc.returncode}")
                try:
                    if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                        break
                except OSError:
                    time.sleep(0.3)
            else:
                pytest.fail(f"streamlit did not answer /_stcore/health within {timeout:.0f} s")
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


@pytest.fixture(scope="module")
def server_dir(request, tmp_path_factory) -> Path:
    """This module's temporary folder for its served app (its log, and a cache where ``server_env`` puts one)."""
    return tmp_path_factory.mktemp(request.module.__name__.removeprefix("test_"))


@pytest.fixture(scope="module")
def server_env() -> dict[str, str]:
    """Environment variables of this module's served app, on top of the tests' own (override per module)."""
    return {}


@pytest.fixture(scope="module")
def server(server_env, server_dir) -> Iterator[str]:
    """The app served for this module (``server_env`` on top of the environment): its URL."""
    _require_browser()
    with served_app(env=server_env, log=server_dir / "streamlit.log", timeout=90) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for this module (a test opens its own page or context in it and closes it)."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
