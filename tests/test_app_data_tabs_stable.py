"""The Data page's tabs keep their place whatever the groups panel above them shows.

Streamlit identifies ``st.tabs`` by its position on the page: an element more or less above it (the premise line and
checkbox of a pair dataset, a duplicate search's progress or finding) redraws the tabs on the first one, so a user who
had just pressed "Use this dataset" in "Upload your own" lost that tab and its "Filter it now" link.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("data_text", ROOT / "test_app_data_text.py")
data_text = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(data_text)


def _tabs_place(at) -> int:
    """The index, among the main area's top-level children, of the block that holds the page's tabs."""
    places = [i for i, node in at.main.children.items() if any(True for _ in _tabs_in(node))]
    assert len(places) == 1, places
    return places[0]


def _tabs_in(node):
    if type(node).__name__ == "Tab":
        yield node
    for child in getattr(node, "children", {}).values():
        yield from _tabs_in(child)


def test_the_tabs_keep_their_place_when_the_groups_panel_changes(app_test):
    at = app_test(page="pages/data.py")
    assert not at.exception, at.exception
    before = _tabs_place(at)
    data_text._upload(at, "pairs.csv", data_text._csv(data_text.nli_frame(150)))
    at.button(key="use-upload").click().run()
    assert not at.exception, at.exception
    assert at.checkbox(key="data-keep-premise").value is True  # the panel now shows the premise line and checkbox
    assert _tabs_place(at) == before


def _place_of(at, key: str) -> int:
    """The index, among the main area's top-level children, of the block holding the widget ``key``."""

    def holds(node) -> bool:
        return getattr(node, "key", None) == key or any(holds(c) for c in getattr(node, "children", {}).values())

    places = [i for i, node in at.main.children.items() if holds(node)]
    assert len(places) == 1, places
    return places[0]


def test_the_groups_panel_sits_under_the_tabs_after_the_upload_form(app_test):
    """The premise checkbox and the duplicates' finding of the dataset in use come after the tabs, not above them."""
    at = app_test(page="pages/data.py")
    data_text._upload(at, "pairs.csv", data_text._csv(data_text.nli_frame(150)))
    at.button(key="use-upload").click().run()
    assert not at.exception, at.exception
    key = at.session_state["dataset_key"]
    tabs = _tabs_place(at)
    assert _place_of(at, "data-keep-premise") > tabs
    assert _place_of(at, f"data-group-dups-{key}") > tabs
