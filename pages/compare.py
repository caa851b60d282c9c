import streamlit as st

from aflite_app import plotly_once, state, ui
from aflite_app.charts import compare as charts
from aflite_app.charts.theme import MISSING
from aflite_app.compute import compare as compute
from aflite_app.state import COMPARE_PAGE

ui.page_guard()  # a direct link on a fresh server runs inside the app
session_data = ui.session_data()  # this session's opened runs: every compute call gets them

#: rows the table shows at most (narrow by group; the CLI's `diff --json` lists them all)
MAX_ROWS_SHOWN = 2_000

st.title("Compare runs")
st.caption(
    "Two runs of the same rows (two seeds, two τ, two representations, hypothesis-only against the pair) side by "
    "side: which rows one removed and the other kept, in which classes and rounds, and which words set them apart."
)

dspec, data = ui.current_dataset()
current = ui.filter_run_spec("this page compares it with other runs")
choices = compute.run_choices(current, dspec.key, session=session_data)
if len(choices) < 2:
    st.info(
        "Comparing needs two runs: run AFLite on the Filter page (every seed, τ or setting you run is kept and "
        "listed here), open a run directory on the Data page, or save runs below the run root with "
        "`python -m aflite_core filter --out`."
    )
    st.page_link("pages/filter.py", label="Go to Filter")
    st.stop()

by_ident = {c.ident: c for c in choices}
idents = list(by_ident)
dir_names = {key: ui.dataset_label(key) for key in session_data.run_dirs}
page = state.page_state(st.session_state, COMPARE_PAGE)
for which, fallback in (("a", idents[0]), ("b", idents[1])):  # the runs chosen last, while they are still here
    if st.session_state.get(f"compare-{which}") not in by_ident:
        st.session_state[f"compare-{which}"] = page.get(which) if page.get(which) in by_ident else fallback


def _remember(which: str) -> None:
    """Selectbox callback: keep the run chosen as A or B for the next visit of the page."""
    page[which] = st.session_state[f"compare-{which}"]


c1, c2 = st.columns(2)
for which, col, label in (("a", c1, "Run A"), ("b", c2, "Run B")):
    col.selectbox(
        label,
        idents,
        format_func=lambda i: compute.choice_label(by_ident[i], dir_names),
        key=f"compare-{which}",
        on_change=_remember,
        args=(which,),
        help="The Filter page's run, the other runs stored for this dataset, the run directories opened on the "
        "Data page, and the run directories below the run root.",
    )
a = by_ident[st.session_state["compare-a"]]
b = by_ident[st.session_state["compare-b"]]
if a == b:
    st.info("Run A and run B are the same run: choose another run for B.")
    st.stop()

request = compute.compare_request(a, b, session=session_data)
diff = compute.stored_compare(request)
if diff is None:  # matched and tested in the background: progress, Stop, and the page waits for it
    outcome = ui.run_in_background(
        (COMPARE_PAGE, "job"),
        request,
        lambda r: compute.prepare_compare(r, session=session_data),
        compute.describe_compare(request),
        stop_key="compare-stop",
        stop_help="Stop comparing; choose the runs again to start over.",
        stopping="Stopping…",
    )
    if not outcome.ok:  # runs over other rows: one sentence
        if outcome.error:
            st.error(ui.message(outcome.error))
        else:
            st.info("Stopped before the runs were compared; choose the runs again to start over.")
        page.pop("job", None)
        st.stop()
    diff = outcome.value

s = diff.summary()
m1, m2, m3, m4, m5 = st.columns(5)
m1.metric("Removed by A", f"{s['removed_a']:,}", f"of {s['rows']:,} rows", delta_color="off", delta_arrow="off")
m2.metric("Removed by B", f"{s['removed_b']:,}")
m3.metric("Removed by both", f"{s['removed_both']:,}")
m4.metric(
    "By one run only",
    f"{s['removed_a_only'] + s['removed_b_only']:,}",
    f"A only {s['removed_a_only']:,} · B only {s['removed_b_only']:,}",
    delta_color="off",
    delta_arrow="off",
)
m5.metric(
    "Jaccard of the removed sets",
    f"{s['jaccard']:.2f}",
    help="Rows removed by both / rows removed by either (1 = the same rows removed).",
)
if diff.empty:
    st.success("The two runs removed the same rows in the same rounds.")
elif s["changed_round"]:
    st.caption(f"{s['changed_round']:,} rows were removed by both runs, in different rounds.")

st.subheader("By class and by round")
g1, g2 = st.columns(2)
plotly_once.plotly_chart(
    charts.class_groups_chart(diff.by_class), width="stretch", key="compare-class-chart", container=g1
)
if len(diff.by_round):
    plotly_once.plotly_chart(
        charts.round_groups_chart(diff.by_round), width="stretch", key="compare-round-chart", container=g2
    )
else:
    g2.info("Neither run removed a row.")
ui.caption(
    "First chart: per class, the rows removed by both runs (vermillion), by A only (purple) and by B only (green); "
    "J is the Jaccard of the class's removed sets. Second chart: per run and round, the rows it removed then, "
    "split by what the other run did with them (removed too: vermillion; kept: blue)."
)

st.subheader("Words whose removal share differs")
if diff.words is None:
    st.info(
        "No words to compare: neither run has its rows' texts (a dataset with a text column, or a run recorded "
        "with its table, `filter --table`)."
    )
else:
    at = diff.words.attrs
    sig = diff.significant_words
    test = (
        f"z-test of each word's rows removed by one run only against the share of all such rows A removed "
        f"(p0 = {at['p0']:.2f}), Bonferroni over {at['n_tests']:,} tests: |z| > {at['z_critical']:.2f} at α = "
        f"{at['alpha']:g}; words with at least {at['min_count']} such rows in column '{ui.md(at['text_column'])}'"
    )
    if len(sig):
        plotly_once.plotly_chart(charts.word_shares_chart(diff.words), width="stretch", key="compare-words-chart")
        st.dataframe(
            sig,
            hide_index=True,
            width="stretch",
            key="compare-words-table",
            column_config={
                "token": "word",
                "count": st.column_config.NumberColumn("rows with it", format="%d"),
                "removed_a": st.column_config.NumberColumn("removed by A", format="%d"),
                "removed_b": st.column_config.NumberColumn("removed by B", format="%d"),
                "share_a": st.column_config.NumberColumn("share A", format="percent"),
                "share_b": st.column_config.NumberColumn("share B", format="percent"),
                "a_only": st.column_config.NumberColumn("A only", format="%d"),
                "b_only": st.column_config.NumberColumn("B only", format="%d"),
                "z": st.column_config.NumberColumn("z", format="%.2f"),
                "p_value": st.column_config.NumberColumn("p (one-sided)", format="%.1e"),
            },
        )
        ui.caption(
            f"{len(sig):,} significant words: each run's share of the rows containing the word that it removed "
            f"(purple circle: A, green diamond: B); z > 0 when A removed more of them. The test: {test}."
        )
    else:
        ui.caption(f"No word's removal share differs significantly. The test: {test}.")

st.subheader("Rows")
groups = ["changed", "a_only", "b_only", "both", "neither", "all"]
group = st.selectbox("Show", groups, format_func=compute.GROUP_LABELS.get, key="compare-group")
shown, n_match = compute.rows_view(diff, group, MAX_ROWS_SHOWN)
st.caption(
    f"{n_match:,} rows {compute.GROUP_LABELS[group]}"
    + (f"; the first {MAX_ROWS_SHOWN:,} are shown." if n_match > MAX_ROWS_SHOWN else ".")
    + " Select rows to open them in Inspect."
)
picked = st.dataframe(
    shown.drop(columns=["row_a", "row_b"]),
    hide_index=True,
    width="stretch",
    height=420,
    on_select="rerun",
    selection_mode="multi-row",
    key="compare-rows",
    placeholder=MISSING,
    column_config={
        "id": st.column_config.TextColumn("id", pinned=True),
        "text": st.column_config.TextColumn("text", width="medium"),
        "label": "class",
        "status_a": "A",
        "round_a": st.column_config.NumberColumn("round A", help="The round run A removed the row in."),
        "p_a": st.column_config.NumberColumn("p A", format="%.2f", help="p at removal (kept: in the last round)."),
        "status_b": "B",
        "round_b": st.column_config.NumberColumn("round B", help="The round run B removed the row in."),
        "p_b": st.column_config.NumberColumn("p B", format="%.2f", help="p at removal (kept: in the last round)."),
        "group": "difference",
    },
)
# Inspect shows the Filter page's run on the sidebar's dataset: rows link there when that run is A or B
target = next((w for w, c in (("a", a), ("b", b)) if c.kind == "filter"), None)
if target is not None and len(shown):
    selected = list(picked.selection.rows) if picked is not None else []
    positions = compute.inspect_rows(diff, shown, selected, target)
    what = f"{len(positions):,} rows " + (
        "you picked on Compare runs" if selected else f"{compute.GROUP_LABELS[group]} (Compare runs)"
    )
    if st.button(
        f"Show {'the selected' if selected else 'these'} {len(positions):,} rows in Inspect",
        key="compare-inspect",
        help=f"Inspect shows them in run {target.upper()}, the Filter page's run.",
    ):
        state.open_rows_in_inspect(st.session_state, positions, what)
        st.switch_page("pages/inspect.py")
elif len(shown):
    st.caption(
        "Inspect shows the Filter page's run: choose it as run A or B to open these rows there (a run directory "
        "opened on the Data page becomes the Filter page's run)."
    )
