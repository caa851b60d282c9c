"""Real-browser test: Playwright drives Debian's Chromium against the app served by `streamlit run`.

Opens the Filter page, moves the τ slider with the keyboard and waits until the chart redraws with a new
result. In CI (``CI`` set) a missing browser is a failure; elsewhere the test is skipped.
"""

from __future__ import annotations

import time

import pytest
from browser_fixtures import (  # noqa: F401 (older imports of these names from here keep working)
    CHROMIUM,
    LAUNCH_ARGS,
    ROOT,
    _free_port,
    _require_browser,
    served_app,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture
def chrome_page(browser):
    """A page in a new context of the module's Chromium (the ``server`` and ``browser`` fixtures: browser_fixtures)."""
    pg = browser.new_page(viewport={"width": 1400, "height": 1100})
    try:
        yield pg
    finally:
        pg.context.close()


def _kept_metric(pg) -> str:
    return pg.locator('[data-testid="stMain"] [data-testid="stMetric"]').first.inner_text()


def test_moving_tau_redraws_the_filter_chart(server, chrome_page, tmp_path):
    page = chrome_page
    from playwright.sync_api import expect

    page.goto(server + "/filter")
    chart = page.locator(".js-plotly-plot").first
    expect(chart).to_be_visible(timeout=90_000)
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .bars path').length > 0", timeout=60_000)
    before_metric = _kept_metric(page)
    before_bars = page.evaluate("document.querySelectorAll('.js-plotly-plot .bars path').length")

    thumb = page.get_by_role("slider").first  # τ is the first slider of the page
    thumb.focus()
    for _ in range(30):  # τ 0.75 -> 0.45: more rows qualify, the result changes
        page.keyboard.press("ArrowLeft")
    # the chart redraws for the new τ: its τ line is labelled with the new value
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot .annotation-text')]"
        ".some(e => e.textContent.includes('τ = 0.45'))",
        timeout=60_000,
    )
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    assert "0.45" in page.locator('[data-testid="stSlider"]').first.inner_text()
    page.screenshot(path=str(tmp_path / "filter_after_tau.png"), full_page=True)
    assert before_bars > 0 and before_metric.startswith("Rows kept")


def test_first_page_loads_without_errors(server, chrome_page, tmp_path):
    page = chrome_page
    from playwright.sync_api import expect

    t0 = time.perf_counter()
    page.goto(server + "/")
    expect(page.get_by_text("How AFLite works")).to_be_visible(timeout=30_000)
    elapsed = time.perf_counter() - t0
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    page.screenshot(path=str(tmp_path / "home.png"), full_page=True)
    assert elapsed < 60  # generous: a sanity bound, the latency figure lives in benchmarks/bench_app.py


def test_stop_pressed_right_after_a_tau_change_stops_the_new_run(server, chrome_page):
    """A user lowers τ twice and presses Stop at once, on the progress bar still on screen from the first change.

    That Stop button used to live inside the polling fragment, and a click on it while the page was rerunning for
    the new τ was dropped: the run went on to its end (4 of 5 such clicks, measured). Now it stops the new run.
    """
    from playwright.sync_api import expect

    page = chrome_page
    # scikit-learn's logistic regression on the digits: many seconds a run, so there is a run to stop
    page.goto(server + "/filter?dataset=digits&rep=mlp&n=719&t=360&k=72&m=64&seed=31&strategy=slice&model=logistic")
    expect(page.get_by_role("button", name="Stop")).to_be_visible(timeout=90_000)
    expect(page.locator('[data-testid="stAlertContentSuccess"]')).to_be_visible(timeout=180_000)  # first run done
    thumb = page.get_by_role("slider").first
    thumb.focus()
    # a lower τ: a new run (a higher τ is read off the finished run, with nothing to stop)
    page.keyboard.press("ArrowLeft")  # a new run ...
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible(timeout=60_000)
    page.wait_for_timeout(300)
    thumb.focus()
    page.keyboard.press("ArrowLeft")  # ... superseded by another one; the first one's Stop is still on screen
    stop.first.click()
    # the partial result, long before the run (≥ 10 s here) could have finished by itself
    expect(page.get_by_text("partial").first).to_be_visible(timeout=8_000)
    expect(page.locator('[data-testid="stAlertContentSuccess"]')).to_have_count(0)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def _direct_kept_tags(tau: float, k: int) -> dict[str, str]:
    """{dataset: kept-rows digest} of direct AFLite runs at (τ, k) on the Synthetic page's default datasets."""
    from aflite_app.charts.synthetic import kept_meta
    from aflite_app.compute.synthetic import CirclesRunSpec, CirclesSpec, circles_datasets
    from aflite_core.experiments.figure2 import synthetic_experiment

    run = CirclesRunSpec(CirclesSpec(), tau=tau, slice_size=k)
    data = list(circles_datasets(run.data))
    exp = synthetic_experiment(
        data,
        target_size=run.target_size,
        train_size=run.train_size,
        slice_size=k,
        tau=tau,
        n_partitions=run.n_partitions,
        random_state=run.data.seed,
        accuracies=False,
    )
    return {d.name: kept_meta(d, exp.results[d.name])["kept"] for d in data}


_AFTER_PANELS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter(p => p.layout && p.layout.meta && p.layout.meta.kept !== undefined)
  .map(p => ({dataset: p.layout.meta.dataset, kept: p.layout.meta.kept, rows: p.layout.meta.rows,
              drawn: p.querySelectorAll('.scatterlayer path.point').length,
              mountedBefore: !!(p._fullLayout && p._fullLayout.__mark)}))"""


def test_synthetic_tau_slider_shows_the_direct_runs_and_redraws_only_changed_panels(server, chrome_page):
    """The Synthetic page reads every τ off one run at τ = 0.5: in the browser, after each τ step every after-panel
    shows the rows a direct AFLite run at that τ keeps, draws every one of them, and a panel whose rows did not
    change is the same plot as before (not mounted again)."""
    page = chrome_page
    page.goto(server + "/synthetic")
    page.wait_for_function(f"({_AFTER_PANELS_JS})().length === 4", timeout=150_000)
    thumb = page.locator('[data-testid="stSlider"]').filter(has_text="τ — remove only rows").get_by_role("slider")
    kept_same = changed = 0
    previous = {p["dataset"]: p["kept"] for p in page.evaluate(_AFTER_PANELS_JS)}
    assert previous == _direct_kept_tags(0.75, 100)
    for tau in (0.74, 0.73, 0.72, 0.71):
        expected = _direct_kept_tags(tau, 100)
        page.evaluate("document.querySelectorAll('.js-plotly-plot').forEach(p => p._fullLayout.__mark = 1)")
        thumb.first.focus()
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(
            f"([want, tau]) => !document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')"
            f" && ({_AFTER_PANELS_JS})().every(p => want[p.dataset] === p.kept)"
            " && [...document.querySelectorAll('.js-plotly-plot')].some(p => p.layout && p.layout.meta"
            " && p.layout.meta.tau === tau)",
            arg=[expected, tau],
            timeout=60_000,
        )
        page.wait_for_timeout(500)  # plotly finishes drawing
        panels = page.evaluate(_AFTER_PANELS_JS)
        assert sorted(p["dataset"] for p in panels) == sorted(expected)
        for p in panels:
            assert p["kept"] == expected[p["dataset"]]
            assert p["drawn"] == p["rows"] > 0  # every kept row is a point on the screen (SVG)
            if p["kept"] == previous[p["dataset"]]:
                assert p["mountedBefore"], f"{p['dataset']}: same rows, yet drawn again"
                kept_same += 1
            else:
                changed += 1
        previous = {p["dataset"]: p["kept"] for p in panels}
    assert changed > 0 and kept_same > 0  # both cases were exercised over the four steps
    assert page.locator('[data-testid="stException"]').count() == 0
