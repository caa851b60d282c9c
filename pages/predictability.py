import streamlit as st

from aflite_app import plotly_once, state, ui
from aflite_app.charts import runs as charts
from aflite_app.compute import runs

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
numbers = st.container(horizontal=True, gap="medium")  # two a row on a phone (columns stacked them one a row)
numbers.metric("Rows scored", f"{int(row['n_scored']):,}", width=160)
numbers.metric("Reached τ", f"{int(row['n_qualified']):,}", width=160)
numbers.metric("Removed this round", f"{int(row['n_removed']):,}", width=160)
numbers.metric("Mean p (R estimate)", f"{row['mean_predictability']:.3f}", width=160)
mine = ui.session_data()
page = state.page_state(st.session_state, state.PRED_PAGE)
with ui.errors():
    nulled = runs.null_result(spec, session=mine)
hist_slot = st.container()  # the histogram, drawn once the null below is known (it draws the null too)

st.subheader("Chance: the null for predictability")
if nulled is None:
    control = st.empty()  # the K input and its button, cleared once the null is there
    with control.container():
        k = st.number_input(
            "Label permutations K",
            min_value=1,
            max_value=runs.MAX_NULL_PERMUTATIONS,
            value=runs.DEFAULT_NULL_PERMUTATIONS,
            step=1,
            key="pred-null-k",
            help="Each permutation shuffles the labels (class counts kept) and scores every round again with the same "
            "partitions: the rows removed stay exactly the same.",
        )
        if st.button(
            f"Compute the null ({int(k)} label permutations, about {int(k) + 1}× the run's time)",
            key="pred-null-compute",
        ):
            page["null_request"] = spec.with_(null_permutations=int(k))
    request = page.get("null_request")
    if request is not None and request.with_(null_permutations=0) == spec.with_(null_permutations=0):
        job = ui.run_in_background(
            (state.PRED_PAGE, "null_run"),
            request,
            lambda s: runs.prepare_null(s, session=mine),
            ui.describe_filter_run(request, data.n_rows),
            stop_key="pred-null-stop",
            stop_help="Stop the null now (nothing partial is kept; the run itself is unchanged)",
            stopping="Stopping…",
            block=False,
        )
        if job is not None and job.stopped:
            st.warning(
                "The null was stopped before it finished, so nothing of it was kept. Compute it again to start over."
            )
            page.pop("null_request", None)
            page.pop("null_run", None)  # the next click starts over
        elif job is not None:
            nulled = job
            control.empty()
    else:
        st.caption(
            "How many of the rows at p ≥ τ would reach τ with labels that carry no signal? The null scores every "
            "round again under K label permutations, in the background (it waits its turn with the server's "
            "other large jobs)."
        )
if nulled is not None and nulled.null_counts is not None and rnd <= len(nulled.null_counts):
    st.markdown(ui.message(runs.null_sentence(nulled, rnd)))
    st.dataframe(runs.null_by_class(nulled, rnd), hide_index=True, key="pred-null-table")
    share = st.number_input(
        "Highest chance share you accept (%)",
        min_value=0.0,
        max_value=100.0,
        value=10.0,
        step=1.0,
        key="pred-null-share",
        help="The share of the rows at p ≥ τ that shuffled labels would put there too.",
    )
    with ui.errors():
        suggestion = runs.suggested_tau(nulled, share / 100, rnd)
    if suggestion is None:
        st.info(f"No τ keeps chance under {share:g} % of the rows at p ≥ τ in round {rnd}.")
    else:
        tau_now = float(result.params["tau"])
        st.markdown(
            ui.message(
                f"τ = {suggestion:.2f} keeps chance under {share:g} % of the rows removed in round {rnd} "
                f"(the rows at p ≥ τ). "
                + (
                    f"At or above the run's τ = {tau_now:.2f} it is read off this run, with no new AFLite run."
                    if runs.can_narrow(spec.with_(tau=suggestion), result)
                    else f"The Filter page runs AFLite again at τ = {suggestion:.2f} (this run is at {tau_now:.2f})."
                )
            )
        )
        st.button(
            f"Set the Filter τ to {suggestion:.2f}",
            key="pred-null-set-tau",
            on_click=state.set_filter_tau,
            args=(st.session_state, suggestion),
        )
elif nulled is not None:
    st.info("This run's null has no score for this round; pick an earlier round.")

has_null = nulled is not None and nulled.null_counts is not None
with hist_slot:
    with ui.errors():
        clicked = plotly_once.plotly_chart(
            charts.predictability_histogram(result, rnd, null=nulled if has_null else None),
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
        f"{result.params['tau']:g}. Rows right of τ that stayed were not needed to fill the slice. "
        + (
            f"The dotted step is the null: the mean rows per bin under shuffled labels "
            f"({int(nulled.params.get('null_permutations', 0))} permutations, the same models and partitions); "
            "bars well above it right of τ are rows Φ makes predictable, not chance."
            if has_null
            else "Compute the null below to draw, over the bars, how many rows shuffled labels would put in each bin."
        )
    )

st.subheader("All rounds")
with ui.errors():
    plotly_once.plotly_chart(
        charts.predictability_small_multiples(result, null=nulled if has_null else None),
        width="stretch",
        key="pred-multiples",
    )
ui.caption(
    "One histogram per round (all classes together). As biased rows leave, the mass moves left of τ; "
    "the run stops when fewer than k rows remain right of it."
    + (" Dotted: the null, the mean rows per bin under shuffled labels." if has_null else "")
)
