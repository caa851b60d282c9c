"""Shared test configuration: a bounded hypothesis profile, paths, and optional real data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
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
    from aflite_core.synthetic import make_planted_bias

    X, y, is_biased = make_planted_bias(1200, 12, random_state=0)
    return X, y, is_biased


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
