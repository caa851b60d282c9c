"""Real-browser tests of issue 29's teaching path: the guided demo start to finish, and the Synthetic page at 390 px.

Served and driven like tests/test_browser.py (Playwright + Debian's Chromium; skipped without them, a failure in CI).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

#: the rows the demo's after-panel shows (its layout.meta)
_KEPT_ROWS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .find(p => p.layout.meta && p.layout.meta.kept).layout.meta.rows"""
#: the top of the first chart of the main area, in px from the top of the viewport (the page scrolled to its top)
_FIRST_CHART_TOP = """() => Math.min(...[...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .map(e => e.getBoundingClientRect().top))"""


def _idle(page) -> None:
    page.wait_for_timeout(600)
    page.wait_for_function(
        "!document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')"
        " && !document.querySelector('[data-stale=\"true\"]')",
        timeout=120_000,
    )


def _chart_with(page, js_test: str, timeout: int = 120_000) -> None:
    page.wait_for_function(
        f"() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.layout && ({js_test}))", timeout=timeout
    )


def test_the_guided_demo_runs_start_to_finish(server, browser, tmp_path):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server + "/")
    page.get_by_role("button", name="Show me in 10 minutes").click()
    expect(page.get_by_role("heading", name="AFLite in 10 minutes")).to_be_visible(timeout=60_000)
    assert "/demo" in page.url

    # step 1: the circles; the action: move τ, the after-panel shows the rows kept at the new τ
    _chart_with(page, "p.layout.meta && p.layout.meta.kept !== undefined")
    _idle(page)
    rows_before = page.evaluate(_KEPT_ROWS)
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="move τ").get_by_role("slider")
    slider.focus()
    for _ in range(10):  # τ 0.75 -> 0.85: fewer rows reach τ, more are kept
        page.keyboard.press("ArrowRight")
    expect(page.get_by_text("kept at τ = 0.85")).to_be_visible(timeout=60_000)
    _idle(page)
    rows_after = page.evaluate(_KEPT_ROWS)
    assert rows_after > rows_before
    page.screenshot(path=str(tmp_path / "demo-1.png"))

    # step 2: the words of the bundled SNLI sample
    page.get_by_role("button", name="Next: A real NLI sample").click()
    _chart_with(page, "String(p.layout.xaxis?.title?.text ?? '').startsWith('share of rows whose text')")
    _idle(page)
    assert "step=2" in page.url
    expect(page.get_by_text("eating → contradiction").first).to_be_visible()
    expect(page.get_by_text("of them", exact=False).first).to_be_visible()
    page.screenshot(path=str(tmp_path / "demo-2.png"))

    # step 3: one removed row, explained; the action: another row
    page.get_by_role("button", name="Next: One removed row").click()
    _chart_with(page, "p.layout.meta && p.layout.meta.removed_round !== undefined")
    _idle(page)
    assert "step=3" in page.url
    row_text = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="Hypothesis:").first
    first = row_text.inner_text()
    assert "Premise:" in first
    page.get_by_role("button", name="show another removed row").click()
    _idle(page)
    assert row_text.inner_text() != first
    page.screenshot(path=str(tmp_path / "demo-3.png"))

    # a reload (a new session) opens the same step; Back goes to step 2
    page.reload()
    _chart_with(page, "p.layout.meta && p.layout.meta.removed_round !== undefined")
    expect(page.get_by_text("Step 3 of 3").first).to_be_visible()
    page.get_by_role("button", name="← Back").last.click()
    _chart_with(page, "String(p.layout.xaxis?.title?.text ?? '').startsWith('share of rows whose text')")
    _idle(page)
    assert "step=2" in page.url
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def test_at_phone_width_the_charts_start_on_the_first_screen_and_the_ood_legend_is_inside(server, browser):
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(server + "/demo?step=1")
    _chart_with(page, "p.layout.meta && p.layout.meta.kept !== undefined")
    _idle(page)
    assert page.evaluate(_FIRST_CHART_TOP) < 844

    page.goto(server + "/synthetic")
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 8", timeout=180_000)
    _idle(page)
    assert page.evaluate(_FIRST_CHART_TOP) < 844
    page.get_by_role("button", name="Run the out-of-distribution test").click()
    _chart_with(page, "String(p.layout.yaxis?.title?.text ?? '').startsWith('test accuracy')")
    _idle(page)
    boxes = page.evaluate(
        """() => [...document.querySelectorAll('.js-plotly-plot')]
          .filter(p => p.layout && String(p.layout.yaxis?.title?.text ?? '').startsWith('test accuracy'))
          .map(p => { const f = p.getBoundingClientRect(), l = p.querySelector('.legend').getBoundingClientRect(),
                            a = p.querySelector('.annotation'), t = a ? a.getBoundingClientRect() : null;
                      return {fig: [f.left, f.top, f.right, f.bottom], legend: [l.left, l.top, l.right, l.bottom],
                              title: t ? [t.top, t.bottom] : null}; })"""
    )
    assert len(boxes) == 2
    for b in boxes:
        (fl, ft, fr, fb), (ll, lt, lr, lb) = b["fig"], b["legend"]
        assert fl - 1 <= ll and lr <= fr + 1 and ft - 1 <= lt and lb <= fb + 1, b  # the legend inside its figure
        if b["title"]:
            assert b["title"][0] >= lb - 1, b  # the panel title below the legend, not under it
