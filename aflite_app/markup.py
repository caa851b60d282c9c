r"""User text made literal for Streamlit's Markdown: the app's one escape helper (no Streamlit).

Everything Streamlit draws as Markdown - ``st.markdown``, ``st.caption``, ``st.error`` / ``warning`` / ``info`` /
``success``, titles, widget labels and help, metric labels, tab and expander labels - interprets ``**bold**``,
``[links](…)``, images, headings, ``$LaTeX$``, ``:red[colours]`` and ``:emoji:`` shortcodes, and turns bare
``http://…``, ``www.…`` and ``a@b.c`` into links. A folder, file, column or class name, an id or a text that the
user chose must show as typed. So every such value that goes into Markdown goes through :func:`md` first, and
every message that may quote one (an error from the core or a compute module) through :func:`message`; values
shown in ``st.text``, ``st.code``, a dataframe cell or a selectbox option need nothing. Plotly draws its texts as
HTML of its own (``<b>``, ``<a href>``, ``<span style>`` in legends, ticks, hover texts and titles): a user's value
goes into a figure through :func:`plotly_text`.

>>> print(md("# **bold** [x](y)"))
\# \*\*bold\*\* \[x\](y)
>>> print(message("Run `aflite_core filter` on '<b>x</b>'."))
Run `aflite_core filter` on '\<b\>x\</b\>'.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["md", "message", "plotly_text"]

#: backslash-escaped wherever they stand: emphasis, strikethrough, links and images, HTML and autolinks, code,
#: LaTeX, tables, entities (an ASCII punctuation character escaped by a backslash is always literal)
_ALWAYS = set("\\`*[]<>$~|&")
#: a line starting with one of these (after the collapse, the value's own start) would be a heading, a list item,
#: a quote, a setext underline or a thematic break
_LINE_START = re.compile(r"^(\s*)([#>+=\-])|^(\s*\d+)([.)])(?=\s|$)")
#: Streamlit turns ``:smile:`` shortcodes, ``:material/icons:`` and bare URLs and e-mail addresses into emoji, icons
#: and links after parsing (no backslash escape stops that): an invisible word joiner (U+2060) after a ':' that
#: starts a name (``http://`` too), after ``www`` and after ``@`` breaks each pattern and shows the same text
_JOIN_AFTER = re.compile(r"(?<=:)(?=[\w+\-/])|(?i:(?<=\bwww)(?=\.))|(?<=@)")
_CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_WORD_JOINER = "\u2060"


def _collapse(text: str) -> str:
    """Control characters and whitespace runs (newlines included) as one space."""
    text = "".join(" " if unicodedata.category(c) == "Cc" else c for c in text)
    return re.sub(r"\s+", " ", text)


def _escape(text: str) -> str:
    text = _JOIN_AFTER.sub(_WORD_JOINER, text)
    out = []
    n = len(text)
    for i, c in enumerate(text):
        if c in _ALWAYS:
            out.append("\\" + c)
        elif c == "_" and not (0 < i < n - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()):
            out.append("\\_")  # intraword underscores (snake_case) never emphasise
        else:
            out.append(c)
    return "".join(out)


def _block_start(text: str) -> str:
    """``text`` with the character that would start a block (heading, list, quote) escaped."""
    m = _LINE_START.match(text)
    if m is None:
        return text
    lead, mark = (m.group(1), m.group(2)) if m.group(2) else (m.group(3), m.group(4))
    return lead + "\\" + mark + text[m.end() :]


def md(value: object) -> str:
    """``value`` as text that Streamlit's Markdown shows literally, on one line.

    Parameters
    ----------
    value : object
        A name, label, id or text the user chose (``str()`` is taken).

    Returns
    -------
    str
        Newlines and control characters become spaces; every character Markdown (or Streamlit's extensions)
        would interpret is escaped; bare links get an invisible word joiner so they are not linked.
    """
    text = _escape(_collapse(str(value)))
    return _block_start(text)


def message(text: object) -> str:
    """A message of the app or the core for ``st.error`` / ``warning`` / ``info``: literal except its code spans.

    The app's messages mark commands as code (`` `python -m aflite_core …` ``) and quote the user's names
    (``'my file.csv'``); code spans stay code (their content is literal anyway), everything else goes through
    :func:`md`'s escape, so a quoted name never renders as Markdown. Line breaks are kept.
    """
    lines = []
    for line in str(text).splitlines() or [""]:
        parts, last = [], 0
        for m in _CODE_SPAN.finditer(line):
            parts += [_escape(_collapse(line[last : m.start()])), m.group(0)]
            last = m.end()
        parts.append(_escape(_collapse(line[last:])))
        joined = "".join(parts)
        lines.append(_block_start(joined))
    return "\n".join(lines)


def plotly_text(value: object) -> str:
    """``value`` for a Plotly text (a legend name, a tick, a hover text, a title): its tags shown as typed.

    Plotly reads ``<b>``, ``<i>``, ``<a href=…>``, ``<span style=…>`` and ``<br>`` in every text it draws, and
    decodes entities; ``<`` becomes ``&lt;`` (so a tag is shown, not applied) and nothing else changes, so a
    value escaped twice is escaped once (already escaped texts, e.g. ``html.escape``'s, pass through).

    >>> plotly_text("<b>dog</b> & cat")
    '&lt;b>dog&lt;/b> & cat'
    """
    return str(value).replace("<", "&lt;")
