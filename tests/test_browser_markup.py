"""Real-browser test of the escape helper: what Streamlit and Plotly draw from hostile text is that text, as typed.

AppTest sees the Markdown source only; this serves a tiny Streamlit script that shows hostile names through
:func:`aflite_app.markup.md` (in ``st.markdown``, ``st.caption``, ``st.error`` and a widget label),
:func:`aflite_app.markup.message` and a figure styled by :func:`aflite_app.charts.theme.style`, and reads the page
in Chromium: every text reads exactly as typed (the invisible word joiners aside), with no bold, link, image,
heading, emoji, formula or tag made of it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from browser_fixtures import CHROMIUM, LAUNCH_ARGS, _require_browser, served_app

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

HOSTILE = [
    "**bold** __under__ _em_ a*b*c",
    "[link](http://e.example) ![img](http://e.example/i.png) <http://e.example>",
    "<b>x</b><script>alert(1)</script><img src=x onerror=alert(1)>",
    "# heading",
    "1. list",
    "- item",
    "> quote",
    ":smile: :red[red] :material/home: x:smile:y",
    "$x^2$ $$y$$",
    "~~strike~~ ~s~ | a | b |",
    "`code` ``two``",
    "http://e.example www.e.example a@e.example",
    "&lt;b&gt; &amp; &#42;",
    "back\\slash\\ [x]: http://e.example",
]

#: what Markdown or Streamlit would have made of the text: bold, emphasis, links, images, headings, strikes, code,
#: emoji and icon spans, formulas, lists
MADE = ("<strong", "<em", "<a ", "<img", "<h1", "<del", "<code", "<span", "katex", "<ol", "<ul", "<li", "<blockquote")

SCRIPT = """
import sys
sys.path.insert(0, {root!r})
import plotly.graph_objects as go
import streamlit as st
from aflite_app.charts.theme import style
from aflite_app.markup import md, message

HOSTILE = {hostile!r}
for i, text in enumerate(HOSTILE):
    st.markdown(f"CASE{{i}}: " + md(text))
    st.caption(f"CAPTION{{i}}: " + md(text))
    st.error(f"ERROR{{i}}: " + message(text))
st.checkbox("LABEL: " + md(HOSTILE[0] + " " + HOSTILE[1]))
st.error(message("Run `python -m aflite_core filter` on '" + HOSTILE[1] + "'."))
fig = go.Figure(go.Bar(x=HOSTILE[:4], y=[1, 2, 3, 4], name=HOSTILE[2], showlegend=True))
st.plotly_chart(style(fig), key="figure")
st.markdown("THE END")
"""


@contextlib.contextmanager
def served_script(path: Path, timeout: float = 60):
    """The hostile-text script served as the app is (browser_fixtures.served_app)."""
    with served_app(app=path, timeout=timeout) as url:
        yield url


def _typed(text: str) -> str:
    """How the text reads once drawn: whitespace runs as one space."""
    return " ".join(text.split())


def test_hostile_text_reads_as_typed_in_a_real_browser(tmp_path):
    _require_browser()
    from playwright.sync_api import sync_playwright

    script = tmp_path / "markup_app.py"
    script.write_text(SCRIPT.format(root=str(ROOT), hostile=HOSTILE), encoding="utf-8")
    with served_script(script) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page()
            page.goto(url)
            page.wait_for_selector("text=THE END", timeout=90_000)
            page.wait_for_selector(".xtick text", timeout=60_000)
            blocks = page.query_selector_all("[data-testid=stMarkdownContainer], [data-testid=stCaptionContainer]")
            drawn = {}
            for block in blocks:
                text = block.text_content().replace("\u2060", "")
                for prefix in ("CASE", "CAPTION", "ERROR"):
                    if text.startswith(prefix):
                        number = text[len(prefix) : text.index(":")]
                        drawn[(prefix, int(number))] = (text.split(": ", 1)[1], block.inner_html())
            for i, hostile in enumerate(HOSTILE):
                for prefix in ("CASE", "CAPTION", "ERROR"):
                    text, html = drawn[(prefix, i)]
                    made = MADE
                    if prefix == "ERROR" and "`" in hostile:  # message() keeps code spans: literal, in code
                        text, hostile, made = text.replace("`", ""), hostile.replace("`", ""), MADE[:6] + MADE[7:]
                    assert text == _typed(hostile), (prefix, hostile, html)
                    for tag in made:
                        assert tag not in html, (prefix, hostile, html)
            label = page.get_by_text("LABEL:", exact=False).first.text_content().replace("\u2060", "")
            assert label == "LABEL: " + _typed(HOSTILE[0] + " " + HOSTILE[1])
            command = next(b for b in blocks if "Run " in b.text_content())
            assert command.inner_html().count("<code") == 1  # the message's own code span stays code
            assert command.text_content().replace("\u2060", "").endswith(f"on '{HOSTILE[1]}'.")
            ticks = [t.text_content() for t in page.query_selector_all(".xtick text")]
            assert ticks == [_typed(t) for t in HOSTILE[:4]]
            legend = [t.text_content() for t in page.query_selector_all(".legendtext")]
            assert legend == [HOSTILE[2]]
            assert not page.query_selector_all(".main-svg a, .main-svg b, .main-svg i")
        finally:
            browser.close()
