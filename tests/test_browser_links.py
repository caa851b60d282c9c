"""Real-browser tests of links and reloads (issue #17): what a user sees after a bar click, a reload or a shared link.

Playwright drives Debian's Chromium against ``streamlit run app.py`` on a free port (one server and one browser
for the module; every "fresh browser" is a new browser context, i.e. a new Streamlit session without cookies or
state). Waits are on what the user sees (a chart's bars, a sentence) and then on Streamlit's own running
indicator (``data-test-script-state`` on the app's root), never on the clock. Screenshots of each flow go to
``$AFLITE_SHOTS_DIR`` (default ``<tmp>/shots-links``). Without a browser the tests are skipped, or fail when
``CI`` is set (see tests/test_browser.py).
"""

from __future__ import annotations

import os
import re
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = Path(os.environ.get("AFLITE_SHOTS_DIR", Path(tempfile.gettempdir()) / "shots-links"))
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
MAIN = '[data-testid="stMain"]'
SIDEBAR = '[data-testid="stSidebar"]'
#: a Filter page's bars are drawn (the chart of the page's run)
BARS_DRAWN = "document.querySelectorAll('.js-plotly-plot .bars .point path').length > 0"


@pytest.fixture(scope="module")
def server_env():
    """The Embedding map as PCA: deterministic and fast (UMAP is tested elsewhere; ``server``: browser_fixtures)."""
    return {"AFLITE_APP_UMAP": "0"}


@pytest.fixture(scope="module")
def browser(browser):
    """The shared module Chromium (browser_fixtures), with a long ``expect`` timeout."""
    from playwright.sync_api import expect

    expect.set_options(timeout=90_000)  # a first run on a busy CI machine; each test has its own timeout mark
    return browser


@pytest.fixture
def fresh(browser):
    """``fresh()``: a page in a new browser context (a new session: a reload by another user, or a shared link)."""
    contexts = []

    def make():
        context = browser.new_context(viewport={"width": 1400, "height": 1100})
        context.set_default_timeout(90_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


# -- what the user sees ------------------------------------------------------------------------------------------
def settle(page) -> None:
    """Wait until Streamlit has finished the script run in progress (its running indicator is off)."""
    page.wait_for_selector(IDLE, state="attached")


def no_traceback(page) -> None:
    from playwright.sync_api import expect

    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def shot(page, name: str, at=None) -> None:
    """Screenshot of what the user sees (scrolled to the locator ``at`` first: the main area scrolls, not the page)."""
    if at is not None:
        at.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def query(page) -> dict[str, str]:
    """The address bar's parameters."""
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(page.url).query))


def filter_chart(page, tau: float) -> None:
    """Wait for the Filter page's chart of the run at ``tau`` (its τ line's label), then for the script run to end."""
    from playwright.sync_api import expect

    page.wait_for_url(re.compile(r"/filter\?"))
    expect(page.locator(MAIN).get_by_text("Rows kept")).to_be_visible()  # the Filter page, not the one before
    page.wait_for_function(BARS_DRAWN)
    page.wait_for_function(
        "t => [...document.querySelectorAll('.js-plotly-plot .annotation-text')]"
        ".some(e => e.textContent.includes('τ = ' + t))",
        arg=f"{tau:g}",
    )
    settle(page)


def metric(page, label: str) -> str:
    """The value of the main area's metric ``label`` ("Rows kept" → "500")."""
    box = page.locator(f'{MAIN} [data-testid="stMetric"]', has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def sidebar_dataset(page) -> str:
    """The dataset the sidebar's "Data" box shows."""
    return page.locator(f"{SIDEBAR} input[role=combobox][aria-label='Data']").input_value()


def open_dataset_box(page) -> None:
    page.locator(f"{SIDEBAR} input[role=combobox][aria-label='Data']").click()


def trace(page, chart: int, index: int) -> dict:
    """Trace ``index`` of the page's ``chart``-th Plotly chart: its name, x and y as Plotly drew them."""
    return page.evaluate(
        """([c, i]) => { const t = document.querySelectorAll('.js-plotly-plot')[c]._fullData[i];
        return {name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || []),
                customdata: Array.from(t.customdata || [])}; }""",
        [chart, index],
    )


def click_bar(page, chart: int, bar_trace: int, point: int) -> None:
    """Click the middle of one bar (Plotly's drag layer covers the bars, so the mouse clicks where it is drawn)."""
    bar = page.locator(".js-plotly-plot").nth(chart).locator(".trace.bars").nth(bar_trace).locator(".point path")
    bar = bar.nth(point)
    bar.scroll_into_view_if_needed()
    box = bar.bounding_box()
    assert box is not None and box["height"] > 2, "the bar to click is not drawn"
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def table_rows(page) -> list[dict[str, str]]:
    """The rows the Inspect table shows on screen, as {column header: cell text} (from its accessible grid)."""
    page.wait_for_function("document.querySelector('[data-testid=\"stDataFrame\"] table tbody tr')")
    return page.evaluate(
        """() => { const grid = document.querySelector('[data-testid="stDataFrame"] table');
        if (!grid) return [];
        const head = [...grid.querySelectorAll('thead th')].map(th => th.innerText.trim());
        return [...grid.querySelectorAll('tbody tr')].map(tr => Object.fromEntries(
            [...tr.querySelectorAll('td')].map((td, j) => [head[j], td.innerText.trim()]))); }"""
    )


def matching(page) -> str:
    """Inspect's "N of M rows match the filters" caption."""
    return page.locator(f"{MAIN} [data-testid='stCaptionContainer']", has_text="rows match the filters").inner_text()


def open_a_filter_bar_in_inspect(page, n_rows: str, bar_trace: int = 0) -> None:
    """Click the bar of the round that removed the most of one class on the Filter chart; Inspect lists exactly that
    round's rows of the class."""
    from playwright.sync_api import expect

    bars = trace(page, 0, bar_trace)  # one class's bars, one per round: rows removed so far (issue 29)
    in_round = bars["customdata"]  # the rows of the class removed in that round
    point = int(np.argmax(in_round))
    rnd, count, cls = int(bars["x"][point]), int(in_round[point]), bars["name"].removeprefix("removed: ")
    click_bar(page, 0, bar_trace, point)
    page.wait_for_url(re.compile(r"/inspect\?"))
    link = page.get_by_text("Showing only the")
    expect(link).to_be_visible()
    settle(page)
    no_traceback(page)
    expect(link).to_contain_text(f"rows removed in round {rnd} of class '{cls}'")
    assert matching(page).startswith(f"{count:,} of {n_rows} rows match")
    rows = table_rows(page)
    assert rows and all(
        r["class"] == cls and r["status"] == "removed" and r["round removed"] == str(rnd) for r in rows
    ), rows[:3]


# -- 1. a chart bar opens Inspect on its rows --------------------------------------------------------------------
def test_a_chart_bar_opens_inspect_on_the_rows_behind_it(server, fresh):
    from playwright.sync_api import expect

    page = fresh()
    page.goto(server + "/filter?dataset=circles&tau=0.6")
    filter_chart(page, 0.6)
    shot(page, "1a_filter_before_click")
    open_a_filter_bar_in_inspect(page, "1,000")
    # the view is the one the user came from: same dataset and τ, in the sidebar and in the address bar
    assert "concentric circles" in sidebar_dataset(page)
    assert query(page)["dataset"] == "circles" and query(page)["tau"] == "0.6"
    shot(page, "1b_inspect_after_filter_bar")
    page.get_by_role("button", name="Show all rows").click()
    expect(page.get_by_text("Showing only the")).to_have_count(0)
    settle(page)
    assert matching(page).startswith("1,000 of 1,000 rows match")

    # the Predictability histogram: a blue "stayed" bar opens that class's rows that stayed in the round
    page.locator(f'{SIDEBAR} [data-testid="stSidebarNav"] a', has_text="Predictability").click()
    page.wait_for_url(re.compile(r"/predictability\?"))
    expect(page.get_by_text("Round 1: how many rows")).to_be_visible()
    page.wait_for_function(BARS_DRAWN)
    settle(page)
    stayed = trace(page, 0, 2)  # per class panel: "stayed", then "removed this round"; the second class
    removed = trace(page, 0, 3)
    assert stayed["name"] == "stayed" and removed["name"] == "removed this round"
    heights = page.evaluate(
        """() => [...document.querySelectorAll('.js-plotly-plot')[0].querySelectorAll('.trace.bars')[2]
        .querySelectorAll('.point path')].map(p => p.getBoundingClientRect().height)"""
    )
    shot(page, "1c_predictability_before_click")
    click_bar(page, 0, 2, int(np.argmax(heights)))
    page.wait_for_url(re.compile(r"/inspect\?"))
    link = page.get_by_text("Showing only the")
    expect(link).to_be_visible()
    settle(page)
    no_traceback(page)
    expect(link).to_contain_text("rows that stayed in round 1 of class '1'")
    assert matching(page).startswith(f"{int(sum(stayed['y'])):,} of 1,000 rows match")  # counts, binned on the server
    rows = table_rows(page)
    assert rows and all(r["class"] == "1" and r["round removed"] != "1" for r in rows), rows[:3]
    shot(page, "1d_inspect_after_predictability_bar")


# -- 2 and 4. a reload and a shared link keep the view; a link to another page shows that run ------------------------
def test_a_reload_and_a_shared_link_keep_the_dataset_tau_and_run(server, fresh):
    from playwright.sync_api import expect

    page = fresh()
    page.goto(server + "/")
    expect(page.get_by_text("How AFLite works")).to_be_visible()
    settle(page)
    open_dataset_box(page)  # the user picks a dataset ...
    page.get_by_role("option", name=re.compile("concentric circles")).click()
    expect(page.locator(SIDEBAR).get_by_text("1,000 rows · 2 classes")).to_be_visible()
    settle(page)
    page.locator(f'{SIDEBAR} [data-testid="stSidebarNav"] a', has_text="Filter").click()  # ... and filters it
    filter_chart(page, 0.75)
    page.get_by_role("slider").first.focus()  # τ 0.75 -> 0.7 with the keyboard
    for _ in range(5):
        page.keyboard.press("ArrowLeft")
    filter_chart(page, 0.7)
    no_traceback(page)
    seen = {label: metric(page, label) for label in ("Rows kept", "Rows removed", "Bias R (mean p)")}
    page.wait_for_url(re.compile(r"[?&]tau=0\.7(&|$)"))  # the address bar follows the run (it can lag the chart)
    params = query(page)
    assert params["dataset"] == "circles" and params["tau"] == "0.7"
    assert {"n", "t", "k", "m", "seed", "strategy", "model", "rep"} <= set(params)
    shot(page, "2a_filter_before_reload")

    page.reload()
    filter_chart(page, 0.7)
    no_traceback(page)
    assert "concentric circles" in sidebar_dataset(page)
    assert "0.70" in page.locator(f'{MAIN} [data-testid="stSlider"]').first.inner_text()
    assert {label: metric(page, label) for label in seen} == seen
    assert query(page) == params
    shot(page, "2b_filter_after_reload")

    shared = fresh()  # a colleague opens the link
    shared.goto(page.url)
    filter_chart(shared, 0.7)
    no_traceback(shared)
    assert "concentric circles" in sidebar_dataset(shared)
    assert {label: metric(shared, label) for label in seen} == seen
    shot(shared, "2c_filter_shared_link")

    # 4. the same link on the Embedding map and Training dynamics shows that run, not a dead end
    for path, shows in (("/embedding", "Nothing selected yet"), ("/dynamics", "AFLite removed ")):
        other = fresh()
        other.goto(f"{server}{path}?{urllib.parse.urlencode(params)}")
        seen_text = other.get_by_text(shows).first
        expect(seen_text).to_be_visible()
        settle(other)
        no_traceback(other)
        expect(other.get_by_text("Run AFLite on the Filter page")).to_have_count(0)
        expect(other.locator(SIDEBAR).get_by_text("τ = 0.7,")).to_be_visible()  # the sidebar's current run
        expect(other.locator(SIDEBAR).locator('[data-testid="stMetric"]', has_text="kept")).to_contain_text(
            seen["Rows kept"]
        )
        shot(other, f"4_{path.strip('/')}_from_a_filter_link", seen_text)
    # ... and on Inspect, with a hand-edited seed nobody has run yet: Inspect runs it (the Filter page's progress)
    other = fresh()
    other.goto(f"{server}/inspect?{urllib.parse.urlencode({**params, 'seed': '7'})}")
    expect(other.get_by_text("Showing the Filter page's current run")).to_be_visible()
    settle(other)
    no_traceback(other)
    expect(other.get_by_text("Run AFLite on the Filter page")).to_have_count(0)
    which = other.locator(f"{MAIN} [data-testid='stMarkdownContainer']", has_text="Showing the Filter page's")
    expect(which).to_contain_text("τ = 0.7, ")
    expect(which).to_contain_text("seed 7")
    expect(other.locator(SIDEBAR).get_by_text(re.compile(r"τ = 0\.7, .*seed 7"))).to_be_visible()  # the current run
    assert table_rows(other)  # the run's rows are listed
    shot(other, "4_inspect_runs_a_linked_run")


# -- 3. an upload survives a reload through its token; a wrong token says so in one sentence ----------------------
def _nli_like_csv() -> bytes:
    """120 sentence rows, string labels of unequal sizes, a text column and two numeric features."""
    rng = np.random.default_rng(0)
    labels = np.repeat(["entailment", "neutral", "contradiction"], [50, 40, 30])
    cue = {"entailment": "outdoors", "neutral": "maybe", "contradiction": "nobody"}
    words = ["a", "man", "dog", "is", "runs", "near", "the", "park", "woman", "sleeps"]
    text = [" ".join([*rng.choice(words, 5), cue[lab] if rng.random() < 0.6 else "today"]) for lab in labels]
    frame = pd.DataFrame(
        {
            "pair_id": [f"p{i:03d}" for i in range(len(labels))],
            "hypothesis": text,
            "f0": rng.normal(size=len(labels)).round(3),
            "f1": (rng.normal(size=len(labels)) + (labels == "contradiction")).round(3),
            "label": labels,
        }
    )
    return frame.sample(frac=1, random_state=0).to_csv(index=False).encode()


def test_an_upload_survives_a_reload_and_a_wrong_token_says_so(server, fresh):
    from playwright.sync_api import expect

    page = fresh()
    page.goto(server + "/data")
    settle(page)
    page.get_by_role("tab", name="Upload your own").click()
    page.locator('[data-testid="stFileUploader"]', has_text="Table (CSV").locator("input[type=file]").set_input_files(
        {"name": "small_nli.csv", "mimeType": "text/csv", "buffer": _nli_like_csv()}
    )
    use = page.get_by_role("button", name="Use this dataset")
    expect(use).to_be_visible()
    settle(page)
    use.click()
    expect(page.get_by_role("tabpanel", name="Upload your own").get_by_text("In use")).to_be_visible()
    settle(page)
    # the address bar follows the script run that chose the upload (it can lag the "In use" badge)
    page.wait_for_url(re.compile(r"[?&]dataset=upload(%3A|:)"))
    token = query(page)["dataset"]
    assert token.startswith("upload:") and "small_nli" not in token
    shot(page, "3a_data_upload_in_use")
    page.get_by_role("link", name="Filter it now").click()
    filter_chart(page, 0.75)
    no_traceback(page)
    name = sidebar_dataset(page)
    seen = {label: metric(page, label) for label in ("Rows kept", "Rows removed")}
    assert "small_nli" in name and query(page)["dataset"] == token

    page.reload()
    filter_chart(page, 0.75)
    no_traceback(page)
    assert sidebar_dataset(page) == name
    assert {label: metric(page, label) for label in seen} == seen
    assert query(page)["dataset"] == token
    expect(page.get_by_text("no longer kept")).to_have_count(0)
    shot(page, "3b_filter_upload_after_reload")
    busiest = int(np.argmax([sum(trace(page, 0, i)["y"]) for i in range(3)]))  # the class with most removals
    open_a_filter_bar_in_inspect(page, "120", busiest)
    assert table_rows(page)[0]["class"] in {"entailment", "neutral", "contradiction"}  # names, not codes
    shot(page, "3c_inspect_upload_bar")

    wrong = fresh()  # a link whose token the server does not know (expired, mistyped or guessed)
    wrong.goto(f"{server}/data?dataset=upload:{'A' * 22}")
    notice = wrong.locator(f'{MAIN} [data-testid="stAlert"]', has_text="no longer kept")
    expect(notice).to_have_count(1)
    settle(wrong)
    no_traceback(wrong)
    text = notice.inner_text().strip()
    assert text.startswith("The uploaded dataset of this link is no longer kept") and text.endswith("Data page.")
    assert len(re.findall(r"[.!?](\s|$)", text)) == 1  # one sentence
    assert "Handwritten digits" in sidebar_dataset(wrong)  # the bundled default, nothing of the upload
    open_dataset_box(wrong)
    options = wrong.get_by_role("option").all_inner_texts()
    assert options and not any("small_nli" in o for o in options)
    wrong.keyboard.press("Escape")
    shot(wrong, "3d_wrong_token")


# -- 5. issue 28: Inspect's filters and search, and a map selection, restore the same rows in a fresh browser --------
def _upload_nli(page) -> str:
    """Upload the NLI-like table on the Data page and filter it (defaults); returns the dataset's link value."""
    from playwright.sync_api import expect

    page.goto(server_url(page) + "/data")
    settle(page)
    page.get_by_role("tab", name="Upload your own").click()
    page.locator('[data-testid="stFileUploader"]', has_text="Table (CSV").locator("input[type=file]").set_input_files(
        {"name": "small_nli.csv", "mimeType": "text/csv", "buffer": _nli_like_csv()}
    )
    use = page.get_by_role("button", name="Use this dataset")
    expect(use).to_be_visible()
    settle(page)
    use.click()
    expect(page.get_by_role("tabpanel", name="Upload your own").get_by_text("In use")).to_be_visible()
    settle(page)
    page.wait_for_url(re.compile(r"[?&]dataset=upload(%3A|:)"))
    page.get_by_role("link", name="Filter it now").click()
    filter_chart(page, 0.75)
    return query(page)["dataset"]


#: every row of the page's first table shows ``arg`` (the grid has redrawn for a search)
TABLE_ALL_HAVE = """w => { const rows = [...document.querySelectorAll('[data-testid="stDataFrame"] table tbody tr')];
    return rows.length > 0 && rows.every(tr => tr.innerText.includes(w)); }"""


def server_url(page) -> str:
    parts = urllib.parse.urlsplit(page.url)
    return f"{parts.scheme}://{parts.netloc}"


def nav(page, name: str, path: str) -> None:
    page.locator(f'{SIDEBAR} [data-testid="stSidebarNav"] a', has_text=name).click()
    page.wait_for_url(re.compile(rf"/{path}(\?|$)"))


def ids_shown(page) -> list[tuple]:
    """The rows a table shows, each as its cells' texts (its id where the table shows one)."""
    return [(r["id"],) if "id" in r else tuple(r.values()) for r in table_rows(page)]


def selected_ids(page) -> list[str]:
    """The ids the map's table of selected rows lists (the grid with an "id" column, not the per-class counts)."""
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stDataFrame"] table')].some(g =>
        [...g.querySelectorAll('thead th')].some(th => th.innerText.trim() === 'id')
        && g.querySelectorAll('tbody tr').length > 0)"""
    )
    return page.evaluate(
        """() => { const g = [...document.querySelectorAll('[data-testid="stDataFrame"] table')].find(g =>
        [...g.querySelectorAll('thead th')].some(th => th.innerText.trim() === 'id'));
        const head = [...g.querySelectorAll('thead th')].map(th => th.innerText.trim());
        const j = head.indexOf('id');
        return [...g.querySelectorAll('tbody tr')].map(tr => tr.querySelectorAll('td')[j].innerText.trim()); }"""
    )


def selected_count(page) -> int:
    from playwright.sync_api import expect

    count = page.get_by_text(re.compile(r"^[\d,]+ rows selected"))
    expect(count).to_be_visible()
    return int(count.inner_text().split()[0].replace(",", ""))


def draw_lasso(page) -> None:
    """Drag a lasso over the middle of the map, as a user does (the figure starts in lasso mode)."""
    plot = page.locator("[data-testid=stPlotlyChart]").first
    plot.scroll_into_view_if_needed()
    plot.hover()
    box = plot.locator(".nsewdrag").first.bounding_box()
    cx, cy = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5
    w, h = box["width"] * 0.3, box["height"] * 0.3
    page.mouse.move(cx - w, cy - h)
    page.mouse.down()
    for x, y in ((cx + w, cy - h * 0.6), (cx + w * 0.8, cy + h), (cx - w, cy + h * 0.7), (cx - w, cy - h)):
        page.mouse.move(x, y, steps=12)
    page.mouse.up()


def test_a_link_with_inspect_filters_search_and_a_map_selection_restores_the_same_rows(server, fresh):
    from playwright.sync_api import expect

    page = fresh()
    page.goto(server + "/")
    settle(page)
    _upload_nli(page)

    # Inspect: kept rows of two classes whose text has "today" - the link follows every change
    nav(page, "Inspect", "inspect")
    expect(page.get_by_text("rows match the filters")).to_be_visible()
    settle(page)
    page.locator(f'{MAIN} [data-testid="stSelectbox"]', has_text="Status").locator("input").click()
    page.get_by_role("option", name="kept rows").click()
    settle(page)
    page.locator(f'{MAIN} [data-testid="stMultiSelect"]', has_text="Classes").locator("input").click()
    page.get_by_role("option", name="neutral").click()
    page.keyboard.press("Escape")
    settle(page)
    search = page.locator(f'{MAIN} [data-testid="stTextInput"]', has_text="Search the text").locator("input")
    search.fill("today")
    search.press("Enter")
    settle(page)
    page.wait_for_url(re.compile(r"[?&]q=today(&|$)"))  # set as the script run starts: wait for its end too
    settle(page)
    link = query(page)
    assert link["status"] == "kept" and link["q"] == "today" and link["cls"] in {"0", "1", "2"}
    page.wait_for_function(TABLE_ALL_HAVE, arg="today")  # the grid redraws after the caption
    caption, ids, rows = matching(page), ids_shown(page), table_rows(page)
    assert ids and not caption.startswith("120 of")
    # by column name: the table shows the text first and the id beside it (Inspect's explanation panel)
    assert rows and all(r["class"] == "neutral" and r["status"] == "kept" for r in rows)
    shot(page, "5a_inspect_filters_before_link")

    shared = fresh()  # a colleague opens the link: the same rows
    shared.goto(page.url)
    expect(shared.get_by_text("rows match the filters")).to_be_visible()
    settle(shared)
    no_traceback(shared)
    shared.wait_for_function(TABLE_ALL_HAVE, arg="today")
    assert matching(shared) == caption and ids_shown(shared) == ids
    assert query(shared) == link
    shot(shared, "5b_inspect_filters_from_link")

    # the Embedding map: a lasso; its link carries the geometry, re-evaluated on the server in a fresh browser
    nav(page, "Embedding map", "embedding")
    expect(page.get_by_text("Nothing selected yet")).to_be_visible()
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .scatterlayer .point').length > 50")
    settle(page)
    assert not {"status", "q", "cls"} & set(query(page))  # Inspect's state is not in the map's link
    draw_lasso(page)
    n_selected = selected_count(page)
    assert n_selected > 0
    settle(page)
    page.wait_for_url(re.compile(r"[?&]sel=l"))
    map_link = query(page)
    assert map_link["sel_on"] == "PCA" and len(page.url) < 4_000
    chosen = selected_ids(page)
    shot(page, "5c_map_selection_before_link")

    shared = fresh()
    shared.goto(page.url)
    expect(shared.get_by_text(re.compile(r"^[\d,]+ rows selected"))).to_be_visible()
    settle(shared)
    no_traceback(shared)
    assert selected_count(shared) == n_selected and selected_ids(shared) == chosen
    assert query(shared) == map_link
    shot(shared, "5d_map_selection_from_link")

    # the map coloured by predictability and by a word, through links, at 1,500 and 390 px
    for width in (1500, 390):
        for name, extra in (("p", {"colour": "p_last"}), ("word", {"colour": "word", "word": "today"})):
            view = fresh()
            view.set_viewport_size({"width": width, "height": 1100})
            view.goto(f"{server}/embedding?{urllib.parse.urlencode({**map_link, **extra})}")
            expect(view.get_by_text(re.compile(r"^[\d,]+ rows selected"))).to_be_visible()
            view.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .scatterlayer .point').length")
            settle(view)
            no_traceback(view)
            title = view.locator(".js-plotly-plot .gtitle").first.bounding_box()
            bar = view.locator(".js-plotly-plot .modebar").first.bounding_box()
            plot = view.locator(".js-plotly-plot").first.bounding_box()
            assert title["x"] >= plot["x"] - 1 and title["x"] + title["width"] <= plot["x"] + plot["width"] + 1
            if bar is not None and bar["height"] > 0:  # the toolbar (shown on hover) never covers the title
                assert bar["y"] + bar["height"] <= title["y"] + 1 or bar["x"] >= title["x"] + title["width"]
            if name == "word":
                legend = view.locator(".js-plotly-plot").first.locator(".legendtext", has_text="with 'today'")
                expect(legend).to_have_count(1)
            else:
                colorbar = view.locator(".js-plotly-plot").first.locator(".colorbar")
                expect(colorbar).to_have_count(1)
                expect(colorbar).to_contain_text("p, last")
            view.locator(".js-plotly-plot").first.hover()
            shot(view, f"5e_map_{name}_{width}px", view.locator(".js-plotly-plot").first)
