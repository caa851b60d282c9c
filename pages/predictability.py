import streamlit as st

from aflite_app import state, ui
from aflite_app.charts import runs as charts

ui.page_guard()  # a direct link on a fresh server runs inside the app

st.title("Predictability")
st.caption(
    "How predictable each row was in each round: p(i) is the share of correct out-of-sample predictions "
    "among the models that did not train on it."
)

spec, result, data = ui.current_run("this page shows that run's scores")
if result.scores is None:
    st.warning(
        "Strategy 'greedy' removes one row per round and keeps only each row's last score and its score "
        "when removed, not the full per-round table. Pick 'slice' or 'sample' on the Filter page to see "
        "histograms per round."
    )
    st.stop()

rnd = st.slider(
    "Round",
    1,
    max(result.n_rounds, 2),
    1,
    key="pred-round",
    disabled=result.n_rounds < 2,
    help="Only rows still in the set at that round were scored.",
)
rnd = min(rnd, result.n_rounds)
row = result.history.iloc[rnd - 1]
c1, c2, c3, c4 = st.columns(4)
c1.metric("Rows scored", f"{int(row['n_scored']):,}")
c2.metric("Reached τ", f"{int(row['n_qualified']):,}")
c3.metric("Removed this round", f"{int(row['n_removed']):,}")
c4.metric("Mean p (R estimate)", f"{row['mean_predictability']:.3f}")
with ui.errors():
    clicked = st.plotly_chart(
        charts.predictability_histogram(result, rnd),
        width="stretch",
        key="pred-hist",
        on_select="rerun",
        selection_mode="points",
    )
target_rows = charts.clicked_round_and_class(clicked.selection.points if clicked else [], result, "histogram", rnd)
if target_rows is not None:  # a bar was clicked: show that round's rows of that class on the Inspect page
    state.open_in_inspect(st.session_state, *target_rows)
    st.switch_page("pages/inspect.py")
ui.caption(
    f"Round {rnd}: how many rows (y) had each predictability (x), one panel per class (click a bar to see that "
    f"class's rows of this round on Inspect). Vermillion bars are the "
    f"rows removed in this round (the top k with p ≥ τ); blue bars stayed. The dashed line is τ = "
    f"{result.params['tau']:g}. Rows right of τ that stayed were not needed to fill the slice."
)

st.subheader("All rounds")
with ui.errors():
    st.plotly_chart(charts.predictability_small_multiples(result), width="stretch", key="pred-multiples")
ui.caption(
    "One histogram per round (all classes together). As biased rows leave, the mass moves left of τ; "
    "the run stops when fewer than k rows remain right of it."
)
