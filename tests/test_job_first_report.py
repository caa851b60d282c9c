"""Issue 25: a job shows progress, a time left and Stop within 2 s of the action.

What held the first report back: the Filter's run was planned (every feature checked: 1.3 s at 550,000 × 384) in
the page's thread before its job started, and every job was awaited for the sync wait (1.5 s) before its progress
bar; token counting in "What the removed rows share" reported no blocks, so its bar had no time left.
"""

from __future__ import annotations

import pytest

from aflite_app import jobs
from aflite_app.admission import heavy
from aflite_app.compute import inspect_artifacts, runs
from aflite_app.state import DatasetSpec, FilterSpec


def test_a_heavy_or_quick_job_is_awaited_at_most_a_moment_before_its_progress_bar(monkeypatch):
    monkeypatch.delenv("AFLITE_APP_SYNC_WAIT", raising=False)
    plain, big = (lambda cb: None), heavy(lambda cb: None, "a test job")
    assert jobs._first_wait(plain, quick=False) == pytest.approx(1.5)  # a small job: awaited, it may end at once
    assert jobs._first_wait(big, quick=False) <= jobs.HEAVY_SYNC_WAIT_S
    assert jobs._first_wait(plain, quick=True) <= jobs.HEAVY_SYNC_WAIT_S
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "120")  # tests awaiting runs within one script run keep that
    assert jobs._first_wait(big, quick=True) == 120


def test_the_filter_run_is_planned_in_its_job_not_in_the_page_thread(monkeypatch):
    """The plan (which checks every feature) runs once the job starts: the page shows progress and Stop first."""
    planned = []
    real = runs.plan_run
    monkeypatch.setattr(runs, "plan_run", lambda *a, **k: planned.append(1) or real(*a, **k))
    spec = FilterSpec(DatasetSpec("circles"), 500, 200, 100, 0.5, 8, "slice", "logistic", 0)
    target = runs.prepare_run(spec)
    assert planned == []  # nothing planned in the page's thread
    result = target(lambda progress: True)
    assert planned == [1] and result.n_kept > 0


def test_bad_parameters_still_refuse_the_run_in_the_page_thread():
    spec = FilterSpec(DatasetSpec("circles"), 500, 200, 100, 0.5, 8, "slice", "logistic", 0)
    with pytest.raises(ValueError):
        runs.prepare_run(spec.with_(train_size=10**9))


def test_token_counting_shows_a_time_left_from_its_first_report():
    describe = inspect_artifacts.describe_artifacts(None)
    n = 550_000
    p = inspect_artifacts.ArtifactProgress(
        0, 1, f"Counting the tokens of {n:,} texts", seconds=inspect_artifacts.TOKEN_COUNT_SECONDS_PER_TEXT * n
    )
    fraction, text = describe(p, 0.4)
    assert "left" in text and 0 <= fraction < 1
    assert "finishing" in describe(p, 1e6)[1]  # past its estimate: never a negative time left
    # blocks reported: the time left comes from the share done, as before
    assert "left" in describe(inspect_artifacts.ArtifactProgress(5, 10, "Comparing"), 10.0)[1]
