"""AppTest of the guided demo (issue 29): three steps, Next / Back, the step in the URL, each step's figure."""

from __future__ import annotations

import json

import pytest
from plotly_figures import plotly_elements

from aflite_app import links
from aflite_app.compute import demo as compute
from aflite_app.state import DEMO_PAGE

pytestmark = pytest.mark.slow

PAGE = "pages/demo.py"


def _chart(at, key: str) -> dict | None:
    for el in plotly_elements(at):
        if key in str(el.proto.id):
            return json.loads(el.proto.spec)
    return None


def _step(at) -> int:
    return int(at.session_state[DEMO_PAGE]["step"])


def _text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def test_the_demo_steps_forward_and_back_with_one_figure_each(app_test):
    at = app_test(page=PAGE)
    assert not at.exception, at.exception
    assert at.title[0].value == "AFLite in 10 minutes" and _step(at) == 1
    assert at.slider(key="demo-tau").value == compute.DEMO_TAU
    assert _chart(at, "demo-circles") is not None and "shortcut" in _text(at)
    assert {m.label for m in at.metric} == {"Linear model", "RBF SVM"}
    linear = float(next(m.value for m in at.metric if m.label == "Linear model"))
    rbf = float(next(m.value for m in at.metric if m.label == "RBF SVM"))
    assert linear < rbf  # the linear model falls, the RBF SVM stays
    at.slider(key="demo-tau").set_value(0.9).run()  # the step's action
    assert not at.exception, at.exception
    assert at.session_state[DEMO_PAGE]["tau"] == 0.9

    at.button(key="demo-next-bottom").click().run()
    assert not at.exception, at.exception
    assert _step(at) == 2 and at.query_params.get("step") in ("2", ["2"])
    assert _chart(at, "demo-words") is not None and _chart(at, "demo-circles") is None
    word = at.selectbox(key="demo-word")
    assert word.value == "eating → contradiction"  # the pair AFLite removed most of (measured on the sample)
    assert "removed" in _text(at) and "'eating'" in _text(at)

    at.button(key="demo-next-bottom").click().run()
    assert not at.exception, at.exception
    assert _step(at) == 3
    row = _chart(at, "demo-row")
    assert row is not None and row["layout"]["meta"]["tau"] == compute.DEMO_TAU
    text = _text(at)
    assert "**Premise:**" in text and "'eating' → contradiction" in text
    first = text
    at.button(key="demo-another").click().run()
    assert not at.exception, at.exception
    assert _text(at) != first  # another removed row

    at.button(key="demo-back-bottom").click().run()
    assert _step(at) == 2 and _chart(at, "demo-words") is not None
    at.button(key="demo-back-bottom").click().run()
    assert _step(at) == 1 and at.slider(key="demo-tau").value == 0.9  # τ kept from before


def test_a_link_opens_its_step(app_test):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["step"] = "3"  # a fresh session opened on the demo's link (the URL applies once, at its start)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert _step(at) == 3 and _chart(at, "demo-row") is not None


def test_the_step_parameter_is_read_once_clamped_and_written_back():
    """The demo's step travels through the app's one link registry (page_views.PAGE_VIEWS), like every page's view."""
    from aflite_app.compute.datasets import bundled_dataset

    session: dict = {}
    links.apply_url(session, {"step": "2"}, None, bundled_dataset, "filter")  # another page: nothing of the demo
    assert "step" not in session.get(DEMO_PAGE, {})
    session = {}
    links.apply_url(session, {"step": "7"}, None, bundled_dataset, "demo")
    assert session[DEMO_PAGE]["step"] == 3  # clamped
    links.apply_url(session, {"step": "1"}, None, bundled_dataset, "demo")  # once per session
    assert session[DEMO_PAGE]["step"] == 3
    other: dict = {}
    notice = links.apply_url(other, {"step": "two"}, None, bundled_dataset, "demo")
    assert "step" not in other.get(DEMO_PAGE, {}) and notice and "step" in notice
    assert links.view_params(session, None, "demo") == {"step": "3"}
    assert "step" not in links.view_params(session, None, "filter")
    assert compute.parse_step("2") == 2 and compute.parse_step("x") == 1


def test_home_starts_the_demo_and_its_end_opens_the_same_run_on_the_filter_page(app_test):
    from aflite_app.state import DATASET, LAST

    at = app_test(page="pages/home.py", **{DEMO_PAGE: {"step": 3}})  # left at step 3 earlier: starts over
    assert not at.exception, at.exception
    at.button(key="home-demo").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "AFLite in 10 minutes" and _step(at) == 1
    at.switch_page(PAGE).run()  # AppTest reruns the page it was last switched to (a browser stays on the demo)
    at.button(key="demo-next-bottom").click().run()
    at.button(key="demo-next-bottom").click().run()
    assert _chart(at, "demo-row") is not None
    at.button(key="demo-filter").click().run()
    assert not at.exception, at.exception
    assert at.session_state[DATASET] == "snli-sample"
    assert at.title[0].value != "AFLite in 10 minutes"  # the Filter page
    words = compute.words_step()
    assert at.session_state[LAST] == words["spec"]  # the very run the demo showed
