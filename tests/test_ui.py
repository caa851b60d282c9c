"""aflite_app.ui in tiny AppTest scripts: the one error boundary, and the sidebar's dataset for pages."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from aflite_app import markup

BOUNDARY = """
import streamlit as st
from aflite_app import ui

st.write("before")
with ui.errors():
    {raise_}
st.write("after")
"""


def _run(script: str) -> AppTest:
    at = AppTest.from_string(script, default_timeout=60)
    at.run()
    return at


def _texts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


@pytest.mark.parametrize(
    ("raise_", "message"),
    [
        (
            "raise ValueError(\"The 'tau' parameter of aflite must be a float in [0, 1]. Got 2 instead.\")",
            "The 'tau' parameter of aflite must be a float in [0, 1]. Got 2 instead.",
        ),
        (
            "raise TypeError(\"The 'X' parameter of aflite must be a 2-D numeric array.\")",
            "The 'X' parameter of aflite must be a 2-D numeric array.",
        ),
        ('raise FileNotFoundError("No such run")', "No such run"),
        ("raise MemoryError()", "MemoryError"),  # no message: the exception's name
    ],
    ids=["value-error", "type-error", "file-not-found", "memory-error-without-message"],
)
def test_a_core_error_becomes_one_error_line_and_stops_the_page(raise_, message):
    at = _run(BOUNDARY.format(raise_=raise_))
    assert not at.exception
    assert [e.value for e in at.error] == [markup.message(message)]  # Markdown that shows the message as typed
    assert _texts(at) == ["before"]  # the page stopped at the boundary


def test_without_an_error_the_page_goes_on():
    at = _run(BOUNDARY.format(raise_="st.write('inside')"))
    assert not at.exception and not at.error
    assert _texts(at) == ["before", "inside", "after"]


def test_other_errors_are_bugs_and_are_not_hidden():
    at = _run(BOUNDARY.format(raise_='raise RuntimeError("a bug")'))
    assert len(at.exception) == 1  # Streamlit's own exception element (details redacted by the app's config)
    assert not at.error and _texts(at) == ["before"]


def test_a_value_error_of_a_subclass_is_caught_too():
    raise_ = "from aflite_app.exports import RunArchiveError; raise RunArchiveError('refused')"
    at = _run(BOUNDARY.format(raise_=raise_))
    assert [e.value for e in at.error] == ["refused"] and not at.exception


def test_current_dataset_is_the_sidebar_choice_with_its_default_representation():
    at = _run("""
import streamlit as st
from aflite_app import state, ui

state.init_session(st.session_state)
dspec, data = ui.current_dataset()
st.write(f"{dspec.key}|{dspec.representation}|{data.default_representation}|{data.n_rows}")
st.write(ui.dataset_label("planted"))
""")
    assert not at.exception, at.exception
    key, rep, default, n_rows = _texts(at)[0].split("|")
    assert key == "digits" and rep == default and int(n_rows) > 1000
    assert _texts(at)[1] == "Synthetic: Gaussian classes + planted bias (2,000 rows)"


def test_current_dataset_shows_an_unknown_dataset_as_an_error():
    at = _run("""
import streamlit as st
from aflite_app import state, ui

st.session_state["dataset_key"] = "no-such-dataset"
ui.current_dataset()
st.write("never")
""")
    assert not at.exception
    assert len(at.error) == 1 and "Unknown bundled dataset 'no-such-dataset'" in at.error[0].value
    assert not _texts(at)


def test_sync_wait_reads_the_environment(monkeypatch):
    from aflite_app import ui

    monkeypatch.delenv("AFLITE_APP_SYNC_WAIT", raising=False)
    assert ui.sync_wait() == 1.5
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.25")
    assert ui.sync_wait() == 0.25


@pytest.mark.parametrize(
    ("raise_", "shown"),
    [
        ("raise ValueError(\"The file '**B0LD** [x](http://e)' is empty.\")", "'\\*\\*B0LD\\*\\* \\[x\\]"),
        ("open('/nonexistent/secret/path.txt')", "A file on the server could not be read or written"),
    ],
    ids=["markdown-in-a-name", "a-python-file-error"],
)
def test_the_boundary_shows_names_literally_and_never_a_server_path(raise_, shown):
    at = _run(BOUNDARY.format(raise_=raise_))
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert shown in error and "**B0LD**" not in error and "/nonexistent" not in error
