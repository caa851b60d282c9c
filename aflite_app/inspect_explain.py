"""Inspect's explanation of one row (issue 28): why the selected row was removed, or kept.

The row is the one selected in the rows table (a click on its row) or typed by its id. The panel draws the core's
:class:`~aflite_core.measures.explain.RowExplanation` (computed and memoised by
:func:`aflite_app.compute.inspect_explanation.inspect_explanation`): the row's text in full with its
label-revealing words highlighted and their z, its p per round against τ, the null of its class, the held-out
models' votes in its removal round, and its nearest kept and removed rows in Φ. Every user text goes through
:mod:`aflite_app.markup` (``ui.md``) before it is Markdown.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import streamlit as st

from aflite_core.measures.artifact_statistics import tokenize
from aflite_core.measures.explain import RowExplanation

from . import plotly_once, state, ui
from .charts import inspect as charts
from .charts.theme import MISSING
from .compute import inspect as compute
from .compute import inspect_artifacts, inspect_explanation
from .state import INSPECT_PAGE

__all__ = [
    "EXPLAIN_ID_KEY",
    "SEARCH_COLUMNS_KEY",
    "explanation_panel",
    "highlighted",
    "row_panel",
    "rows_height",
    "search_columns",
    "search_hits",
    "words_request",
]

#: the text input naming the row explained (a selection in the rows table fills it)
EXPLAIN_ID_KEY = "inspect-explain-id"
#: the multiselect of the text columns the rows table's search covers
SEARCH_COLUMNS_KEY = "inspect-query-columns"
#: background of a cell of the rows table holding the search term
HIT_BACKGROUND = "background-color: #FFE08A"
#: rows of the rows table tall enough for three lines of wrapped text (Streamlit wraps text above 4rem = 64 px)
TEXT_ROW_HEIGHT = 80


def search_columns(text_cols: list[str], query: str) -> list[str]:
    """The text columns the search covers: all, or those chosen (a multiselect when there are several), said.

    The search looks in these columns only, and a caption names them while a term is typed.
    """
    if len(text_cols) <= 1:
        chosen = list(text_cols)
    else:
        chosen = st.multiselect(
            "Search in",
            text_cols,
            default=text_cols,
            key=SEARCH_COLUMNS_KEY,
            persist_state="page",
            help="The text columns the search looks in (and only these).",
        )
    if str(query or "").strip():
        where = ", ".join(f"'{c}'" for c in chosen) if chosen else "no column (choose one under 'Search in')"
        st.caption(f"Searching {ui.md(where)} for '{ui.md(str(query).strip())}'; matching cells are highlighted.")
    return list(chosen)


def search_hits(styler: Any, columns: list[str], query: str) -> Any:
    """``styler`` with the cells of ``columns`` that contain ``query`` (case-insensitive) highlighted."""
    q = str(query or "").strip().lower()
    cols = [c for c in columns if c in styler.data.columns]
    if not q or not cols:
        return styler
    return styler.map(lambda value: HIT_BACKGROUND if q in str(value).lower() else "", subset=cols)


def rows_height(columns: Any, text_cols: list[str]) -> int | None:
    """The rows table's row height: room for a thumbnail, for wrapped text, or Streamlit's one line."""
    if "image" in columns:
        return 36
    return TEXT_ROW_HEIGHT if text_cols else None


def highlighted(text: str, words: pd.DataFrame) -> str:
    """``text`` as literal Markdown with each word that holds a significant token highlighted, its z after it.

    Words giving the row's own label away are on an orange background, those of another label on a blue one.
    """
    best: dict[str, Any] = {}
    for w in words.itertuples():  # sorted by z: the first pair of a token is its strongest
        best.setdefault(w.token, w)
    out = []
    for piece in re.split(r"(\s+)", text):
        if not piece:
            continue
        if piece.isspace():
            out.append(" ")
            continue
        hit = next((best[t] for t in tokenize(piece) if t in best), None)
        shown = ui.md(piece)
        if hit is None:
            out.append(shown)
        else:
            colour = "orange" if hit.for_its_label else "blue"
            out.append(f":{colour}-background[**{shown}**] :{colour}[z {hit.z:.1f}]")
    return "".join(out)


def words_request(view: Any) -> inspect_artifacts.WordsRequest | None:
    """The tab "Label-revealing words"'s current request (its source and settings), or None without text."""
    choices = compute.artifact_text_choices(view.data)
    if not choices:
        return None
    source = st.session_state.get(f"inspect-words-source-{view.dspec.key}")  # the tab's choice, once made
    if source not in choices:  # else the hypothesis, where NLI's label-revealing words live
        source = "hypothesis" if "hypothesis" in choices else next(iter(choices))
    return inspect_artifacts.WordsRequest(
        view.ref,
        source,
        min_count=int(st.session_state.get("inspect-words-min", 10)),
        alpha=float(st.session_state.get("inspect-words-alpha", 0.01)),
    )


def _null_text(ex: RowExplanation) -> str | None:
    if "null_at_tau" not in ex.rounds.columns or not len(ex.rounds):
        return None
    last = ex.rounds.iloc[-1]
    return (
        f"Chance: with shuffled labels, about {last['null_at_tau']:,.1f} of the {int(last['class_rows']):,} "
        f"{ex.label} rows of round {int(last['round'])} reach p ≥ τ = {ex.tau:g} "
        f"({last['null_share_at_tau']:.1%}): the share of rows like this one chance alone would remove."
    )


def explanation_panel(ex: RowExplanation) -> None:
    """Draw one row's explanation."""
    st.markdown(f"**{ui.md(ex.headline)}**")
    for col, text in ex.text.items():
        st.markdown(f"**{ui.md(col)}:** " + (highlighted(text, ex.words) if text else "–"))
    if len(ex.words):
        z_star = ex.words.attrs.get("z_critical")
        ui.caption(
            f"Highlighted: the {len(ex.words)} significant label-revealing word(s) in its "
            f"{ex.words.attrs.get('column', 'text')} (Gardner et al.'s z-test on all rows, Bonferroni-corrected"
            + (f", z > z* = {z_star:.1f}" if z_star else "")
            + "); orange gives away its own label, blue another one."
        )
        st.dataframe(
            ex.words.rename(columns={"p_hat": "p̂", "count": "n", "for_its_label": "its label"}),
            hide_index=True,
            width="stretch",
            column_config={
                "z": st.column_config.NumberColumn("z", format="%.1f", help="The pair's z on all rows."),
                "p̂": st.column_config.NumberColumn("p̂", format="%.2f", help="Share of its texts with that label."),
                "n": st.column_config.NumberColumn("n", format="%d", help="Texts containing the token."),
            },
            key="inspect-explain-words",
        )
    elif ex.text and ex.words.attrs.get("tested"):
        st.caption(
            f"No significant label-revealing word in its {ui.md(ex.words.attrs.get('column', 'text'))} (at the "
            "settings of the tab 'Label-revealing words', where another text can be chosen)."
        )
    elif ex.text:
        st.caption(
            "Its words are not tested yet: the tab 'Label-revealing words' tests them in the background on a "
            "dataset this large; they are highlighted here once it is done."
        )
    c1, c2 = st.columns(2)
    with c1:
        if len(ex.rounds):
            plotly_once.plotly_chart(
                charts.explanation_rounds_chart(ex.rounds, ex.tau), width="stretch", key="inspect-explain-rounds"
            )
        null = _null_text(ex)
        if null:
            st.caption(ui.message(null))
    with c2:
        if ex.votes is not None:
            plotly_once.plotly_chart(
                charts.votes_chart(ex.votes, ex.votes_round), width="stretch", key="inspect-explain-votes"
            )
            n = int(ex.votes["votes"].sum())
            ui.caption(
                f"What the {n} models that held it out in round {ex.votes_round} predicted, as the run counted "
                "them; p is the share for its own class (vermillion)."
            )
    if ex.neighbours is not None and len(ex.neighbours):
        st.markdown("**Its nearest rows in Φ** (cosine similarity over every row; the closest kept and removed)")
        texts = [c for c in ex.neighbours.columns if c in ex.text]
        first = ex.words.attrs.get("column")
        texts = ([first] if first in texts else []) + [c for c in texts if c != first]  # the words' text first
        st.dataframe(
            ex.neighbours.style.map(charts.status_cell_style, subset=["status"]).format(
                {"similarity": "{:.3f}", "p": "{:.2f}"}
            ),
            hide_index=True,
            width="stretch",
            column_order=["similarity", "status", "class", *texts, "id", "round", "p", "row"],
            column_config={
                "similarity": st.column_config.NumberColumn("similarity", width=80),
                "status": st.column_config.TextColumn("status", width=80),
                **{c: st.column_config.TextColumn(c, width="medium") for c in texts},
            },
            row_height=TEXT_ROW_HEIGHT if texts else None,
            height=40 + (TEXT_ROW_HEIGHT if texts else 35) * len(ex.neighbours),  # every neighbour in view
            placeholder=MISSING,
            key="inspect-explain-neighbours",
        )
    for note in ex.notes:
        st.caption(ui.message(note))


def row_panel(view: Any, table: pd.DataFrame, shown: pd.DataFrame, selection: Any) -> None:
    """The panel below the rows table: the selected (or typed) row's explanation.

    ``selection`` is what the rows table's ``st.dataframe`` returned (its selected row, if any, names the row:
    a new selection fills the id input).
    """
    rows = list(getattr(getattr(selection, "selection", None), "rows", []) or [])
    page = state.page_state(st.session_state, INSPECT_PAGE)
    if rows and rows[0] < len(shown):
        picked = str(shown["id"].iloc[rows[0]])
        if page.get("explain_picked") != picked:  # a new click: it names the row (a typed id stays otherwise)
            page["explain_picked"] = picked
            st.session_state[EXPLAIN_ID_KEY] = picked
    st.subheader("Why was this row removed?")
    typed = st.text_input(
        "Row id",
        key=EXPLAIN_ID_KEY,
        placeholder="select a row in the table above, or type its id",
        help="The row's id (the 'id' column). Selecting a row in the table fills it in.",
    )
    if not str(typed).strip():
        st.caption("Select a row in the table (click it) or type its id to see why AFLite removed or kept it.")
        return
    position = inspect_explanation.explanation_row(table, typed)
    if position is None:
        st.warning(f"No row has the id '{ui.md(typed)}'; ids are in the table's 'id' column.")
        return
    with ui.errors():
        ex = inspect_explanation.inspect_explanation(
            view.ref,
            view.result,
            position,
            view.representation,
            words_request(view),
            session=view.session,
        )
    explanation_panel(ex)
