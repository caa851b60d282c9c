"""Shared test configuration: a bounded hypothesis profile, paths, and optional real data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

# the real-browser tests' served app and Chromium, one definition for every tests/test_browser*.py file
from browser_fixtures import browser, server, server_dir, server_env  # noqa: F401
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
# the app's background warm-up of the Synthetic page (one per server process) would add its CPU to every AppTest
# and served app of the suite; tests/test_app_synthetic.py runs it on purpose
os.environ.setdefault("AFLITE_WARM_UP", "0")
SHARED_DATA = Path(os.environ.get("AFLITE_SHARED_DATA", ROOT.parent / "shared" / "data"))

# CI: few, bounded examples; a deadline per example keeps the suite inside its time budget.
settings.register_profile(
    "ci", max_examples=25, deadline=5000, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=60, deadline=10000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    """Skip tests that read ../shared/data when it is absent (it is present in CI)."""
    if SHARED_DATA.is_dir():
        return
    skip = pytest.mark.skip(reason=f"shared data not found at {SHARED_DATA}")
    for item in items:
        if "shared_data" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Folder of the real NLI samples (tests using it are marked ``shared_data``)."""
    return SHARED_DATA


@pytest.fixture
def planted():
    """Small planted-bias data: 25 % of rows carry a label-revealing shift (is_biased)."""
    from aflite_core.data.planted_bias import make_planted_bias

    X, y, is_biased = make_planted_bias(1200, 12, random_state=0)
    return X, y, is_biased


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def app_test(monkeypatch):
    """Factory of AppTests on app.py: caches cleared, runs awaited within one script run.

    ``app_test(page="pages/filter.py", **session_state)`` returns an AppTest that has run the page.
    AppTest, like a fresh server, starts in Streamlit's legacy "pages/ folder" mode and would run a page file
    without app.py after ``switch_page``; the patch below makes every run go through app.py's navigation, as
    the server does once the app has started.
    """
    import streamlit as st
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    class NavigationPagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    monkeypatch.setattr(app_test_module, "PagesManager", NavigationPagesManager)
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "120")
    st.cache_data.clear()
    st.cache_resource.clear()

    def make(page: str | None = None, **state):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
        for key, value in state.items():
            at.session_state[key] = value
        at.run()
        if page is not None:
            at.switch_page(page).run()
        return at

    yield make
    st.cache_data.clear()
    st.cache_resource.clear()


def plotly_figures(at) -> list[dict]:
    """The Plotly figure specs an AppTest rendered (decoded JSON): ``st.plotly_chart``'s and ``plotly_once``'s."""
    import json

    from plotly_figures import plotly_elements

    return [json.loads(el.proto.spec) for el in plotly_elements(at)]


#: a small `filter` run (300 rows, a few rounds): the arguments after --features/--labels
SMALL_RUN_ARGS = [
    "--target-size",
    "150",
    "--train-size",
    "60",
    "--slice-size",
    "40",
    "--partitions",
    "16",
    "--tau",
    "0.5",
    "--seed",
    "1",
    "--quiet",
]


@pytest.fixture
def small_files(tmp_path):
    """Folder with X.npy (300 × 6, planted bias) and y.txt, for CLI runs of a few rounds."""
    from aflite_core.data.planted_bias import make_planted_bias

    X, y, _ = make_planted_bias(300, 6, random_state=0)
    np.save(tmp_path / "X.npy", X)
    np.savetxt(tmp_path / "y.txt", y, fmt="%d")
    return tmp_path


@pytest.fixture
def small_filter(small_files):
    """``small_filter(out, *extra, labels="y.txt")``: run `filter` on :func:`small_files` into ``out``."""
    from aflite_core.cli import main

    def run(out, *extra, labels="y.txt"):
        return main(
            [
                "filter",
                "--features",
                str(small_files / "X.npy"),
                "--labels",
                str(small_files / labels),
                *SMALL_RUN_ARGS,
                "--out",
                str(out),
                *extra,
            ]
        )

    return run
