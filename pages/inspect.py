import streamlit as st

from aflite_app import inspect_columns, inspect_explain, state, ui
from aflite_app import inspect_tabs as tabs
from aflite_app.charts import inspect as charts
from aflite_app.charts.theme import MISSING
from aflite_app.compute import inspect as compute
from aflite_app.compute import inspect_stability
from aflite_app.state import (
    INSPECT_FILTER,
    INSPECT_N_SEEDS,
    INSPECT_PAGE,
    INSPECT_STABILITY_ON,
    INSPECT_TAB_LABELS,
    INSPECT_WHICH,
    STRATEGY_LABELS,
)

ui.page_guard()  # a direct link on a fresh server runs inside the app
session_data = ui.session_data()  # this session's uploads and opened runs: every compute call gets them

#: rows the table shows at most (the filters narrow it; downloads always hold every row)
MAX_ROWS_SHOWN = 5_000

st.title("Inspect")
st.caption(
    "Every row of a run: kept or removed, in which round, how predictable it was, how stable that decision "
    "is across seeds, and what the removed rows have in common."
)

dspec, data = ui.current_dataset()
data_label = ui.dataset_label(dspec.key)


def _open_run_panel() -> None:
    tabs.open_run_panel(data_label, session_data)


# -- which run ---------------------------------------------------------------------------------------------
spec = ui.filter_run_spec("this page shows that run row by row")  # a link's run, too
# compare fields, not objects: a spec made before a module reload (while developing) is of another class
same_data = spec is not None and (spec.dataset.key, spec.dataset.representation) == (dspec.key, dspec.representation)
filter_ref = compute.InspectRef(spec.dataset, spec=spec) if same_data else None
loaded = state.page_state(st.session_state, INSPECT_PAGE).get("loaded")
loaded_ref = (
    compute.InspectRef(dspec, digest=loaded["digest"])
    if loaded is not None and loaded["dataset"] == dspec.key
    else None
)

if filter_ref is None and loaded_ref is None:
    st.info(
        "Run AFLite on the Filter page first; this page shows that run row by row. You can also open a run "
        "saved earlier (its 'Run record' zip) below."
    )
    st.page_link("pages/filter.py", label="Go to Filter")
    if loaded is not None:
        st.caption(
            f"The run opened from '{ui.md(loaded['name'])}' belongs to another dataset "
            f"({ui.md(ui.dataset_label(loaded['dataset']))}); pick that one in the "
            "sidebar to see it."
        )
    st.markdown("**Open a saved run**")
    _open_run_panel()
    st.stop()

names = {"filter": "the Filter page's current run"}
if loaded_ref is not None:
    names["loaded"] = f"the run opened from '{ui.md(loaded['name'])}'"  # a radio option is Markdown
if filter_ref is not None and loaded_ref is not None:
    if st.session_state.get(INSPECT_WHICH) not in names:
        st.session_state[INSPECT_WHICH] = "loaded"
    which = st.radio(
        "Run shown",
        list(names),
        format_func=lambda k: names[k][0].upper() + names[k][1:],
        horizontal=True,
        key=INSPECT_WHICH,
    )
else:
    which = "filter" if filter_ref is not None else "loaded"
ref = filter_ref if which == "filter" else loaded_ref

with ui.errors():
    result = compute.inspect_result(ref, loaded, session=session_data)
    table = compute.inspect_table(ref, result, session=session_data)
    representation = compute.inspect_representation(ref, result, session=session_data)

p = result.params
k_text = "1 (greedy)" if p.get("strategy") == "greedy" else f"{p.get('slice_size')}"
rep_text = f"representation {ui.md(representation)}" if representation else "representation unknown"
st.markdown(
    f"**Showing {names[which]}** on {ui.md(data_label)} · {rep_text} · τ = {p['tau']:g}, k = {k_text}, "
    f"target n = {p['target_size']:,}, m = {p['n_partitions']}, t = {p['train_size']:,}, "
    f"strategy '{ui.md(p['strategy'])}', seed {p.get('seed', '?')}",
    help=STRATEGY_LABELS.get(p["strategy"], p["strategy"]),
)
m1, m2, m3, m4 = st.columns(4)
m1.metric(
    "Rows kept",
    f"{result.n_kept:,}",
    f"{result.n_kept / result.n_rows:.0%} of {result.n_rows:,}",
    delta_color="off",
    delta_arrow="off",
)
m2.metric("Rows removed", f"{result.n_removed:,}")
m3.metric("Rounds", f"{result.n_rounds}")
m4.metric("Classes", f"{data.n_classes}")
st.caption(result.stop_message)

busy = compute.running_jobs_text(state.page_state(st.session_state, INSPECT_PAGE))
if busy:
    st.caption(ui.message(busy))
# lazy tabs: only the open tab's content is computed and sent (a tab click reruns the page); .open is None where
# Streamlit tracks no tab state (then every tab is drawn, as before)
tab_rows, tab_words, tab_art, tab_classes, tab_stab, tab_io = st.tabs(
    list(INSPECT_TAB_LABELS), key="inspect-tab", on_change="rerun"
)

# -- stability state (its controls live in their tab; the table shows the column once computed) ---------------
stab_on = bool(st.session_state.get(INSPECT_STABILITY_ON)) and ref.spec is not None
n_seeds = int(st.session_state.get(INSPECT_N_SEEDS, 5))


inspect_view = tabs.InspectView(ref, result, data, dspec, session_data, representation, which, loaded)


# -- rows ----------------------------------------------------------------------------------------------------
def _clear_link() -> None:
    """Button callback: drop the filter a chart bar set (the table shows every row again)."""
    st.session_state.pop(INSPECT_FILTER, None)


if tab_rows.open is not False:  # drawn only while open
    with tab_rows:
        link = st.session_state.get(INSPECT_FILTER)
        link_text = compute.describe_link(link)
        if link_text is not None:
            l1, l2 = st.columns([4, 1], vertical_alignment="center")
            l1.info(
                f"Showing only the **{ui.message(link_text)}**: {compute.link_origin(link)}. The filters below "
                "narrow it further."
            )
            l2.button("✕ Show all rows", key="inspect-clear-link", on_click=_clear_link, help="Remove this filter.")
        text_cols = [c for c in compute.text_display_columns(data) if c in table.columns]
        c1, c2, c3, c4 = st.columns(4)
        status = c1.selectbox(
            "Status",
            ["all", "removed", "kept"],
            key="inspect-status",
            persist_state="page",  # kept while another tab is open
            format_func={"all": "all rows", "removed": "removed rows", "kept": "kept rows"}.get,
        )
        classes = c2.multiselect(
            "Classes", compute.class_names(data), key="inspect-classes", placeholder="All classes", persist_state="page"
        )
        rounds = None
        if result.n_removed and result.n_rounds >= 2:
            rounds = c3.slider(
                "Removed in rounds",
                1,
                result.n_rounds,
                (1, result.n_rounds),
                key=f"inspect-rounds-{result.n_rounds}",
                persist_state="page",
                disabled=status == "kept",
                help="Narrows the removed rows to those removed in these rounds; kept rows are not "
                "affected (they were never removed).",
            )
        else:
            c3.caption(
                "Round filter: "
                + ("nothing was removed." if not result.n_removed else "all removals happened in round 1.")
            )
        query = ""
        if text_cols:
            query = c4.text_input(
                "Search the text",
                key="inspect-query",
                persist_state="page",
                placeholder="word or phrase",
                help=f"Case-insensitive, in {ui.md(', '.join(text_cols))}.",
            )
        searched = inspect_explain.search_columns(text_cols, query)  # says which columns the search covers
        view = compute.filter_rows(
            table, status=status, classes=classes, rounds=rounds, query=query, text_columns=searched
        )
        if link_text is not None:
            view = compute.link_rows(view, link)
        if stab_on and not inspect_stability.missing_stability_runs(ref.spec, n_seeds, session=session_data):
            freq, _, _ = inspect_stability.inspect_stability(ref.spec, n_seeds, session=session_data)
            view = compute.with_stability(view, freq)
        shown = compute.with_round_lists(view.head(MAX_ROWS_SHOWN), result)  # per-round p for these rows only
        st.caption(
            f"{len(view):,} of {len(table):,} rows match the filters"
            + (
                f"; the first {MAX_ROWS_SHOWN:,} are shown (narrow the filters, or download)."
                if len(view) > MAX_ROWS_SHOWN
                else "."
            )
            + " Click a column header to sort, a row to explain it below."
        )
        config, first = inspect_columns.rows_columns(data, text_cols, shown.columns, n_seeds)
        picked = st.dataframe(
            inspect_explain.search_hits(shown.style.map(charts.status_cell_style, subset=["status"]), searched, query),
            hide_index=True,
            width="stretch",
            column_order=first + [c for c in shown.columns if c not in first],
            height=520,
            column_config=config,
            row_height=inspect_explain.rows_height(shown.columns, text_cols),
            placeholder=MISSING,
            key="inspect-table",
            on_select="rerun",
            selection_mode="single-row",
        )
        ui.caption(
            "One row per example. p is predictability: the share of AFLite's out-of-sample models (trained on "
            "other rows) that predicted the row's label; AFLite removes rows with p ≥ τ, the highest first. "
            + (
                "'p per round' draws p over the rounds the row was scored."
                if result.scores is not None
                else "Strategy 'greedy' keeps no per-round scores, only round 1, removal and last."
            )
        )
        inspect_explain.row_panel(inspect_view, table, shown, picked)


if tab_words.open is not False:  # drawn only while open
    with tab_words:
        tabs.words_tab(inspect_view)
if tab_art.open is not False:
    with tab_art:
        tabs.removed_share_tab(inspect_view)
if tab_classes.open is not False:
    with tab_classes:
        tabs.classes_tab(inspect_view)
if tab_stab.open is not False:
    with tab_stab:
        tabs.stability_tab(inspect_view)
if tab_io.open is not False:
    with tab_io:
        tabs.downloads_tab(inspect_view)
