import streamlit as st

from aflite_app import plotly_once, state, ui
from aflite_app.charts import runs as charts
from aflite_app.compute import run_costs, run_devices
from aflite_app.compute import runs as compute
from aflite_app.state import MODEL_FAMILIES, STRATEGY_LABELS, TAU, FilterSpec, filter_key

ui.page_guard()  # a direct link on a fresh server runs inside the app

st.title("Filter")
st.caption(
    f"τ and k apply as you move them (a run over {run_costs.CONFIRM_SECONDS:.0f} s asks first); the other "
    "parameters when you press Run."
)

dspec, data = ui.current_dataset()
n = data.n_rows
key = dspec.key
# widget state starts from the defaults (or from an opened run's parameters, set by the Data page); the widgets
# keep their values for the whole session (persist_state): Streamlit otherwise drops them when another page runs,
# and a bar click that opened Inspect came back to digits at τ 0.75
state.init_filter_widgets(st.session_state, key, compute.filter_defaults(n, data.n_classes))

with (
    st.expander("Parameters: target size n, partitions m, training size t, strategy, model, seed", expanded=False),
    st.form(f"form-{key}"),
):
    c1, c2, c3 = st.columns(3)
    target = c1.number_input(
        "Target size n (never go below)",
        min_value=data.n_classes + 2,
        max_value=n - 1,
        step=10,
        key=filter_key("target", key),
        persist_state="session",
    )
    train = c2.number_input(
        "Training rows per model t (below the target size n)",
        min_value=data.n_classes + 1,
        max_value=n - 2,
        step=10,
        key=filter_key("train", key),
        persist_state="session",
    )
    parts = c3.number_input(
        "Partitions m (models per round)",
        min_value=1,
        max_value=256,
        step=8,
        key=filter_key("m", key),
        persist_state="session",
    )
    c4, c5, c6 = st.columns(3)
    strategy = c4.selectbox(
        "Strategy",
        list(STRATEGY_LABELS),
        format_func=STRATEGY_LABELS.get,
        key=filter_key("strategy", key),
        persist_state="session",
    )
    model = c5.selectbox(
        "Model family M",
        list(MODEL_FAMILIES),
        format_func=MODEL_FAMILIES.get,
        key=filter_key("model", key),
        persist_state="session",
    )
    seed = c6.number_input(
        "Seed", min_value=0, max_value=2**31 - 1, step=1, key=filter_key("seed", key), persist_state="session"
    )
    st.form_submit_button("Run", type="primary")

# τ and k side by side at every width (columns would stack them on a phone and push the chart down)
sliders = st.container(horizontal=True, gap="medium")
tau = sliders.slider(
    "τ — remove only rows with predictability ≥ τ", 0.0, 1.0, step=0.01, key=TAU, persist_state="session"
)
k = sliders.slider(
    "k — rows removed per round at most",
    1,
    max(2, n // 4, st.session_state[filter_key("k", key)]),
    key=filter_key("k", key),
    persist_state="session",
    disabled=strategy == "greedy",
    help="Strategy 'greedy' always removes one row per round.",
)

spec = FilterSpec(
    dataset=dspec,
    target_size=int(target),
    train_size=int(train),
    slice_size=int(k),
    tau=float(tau),
    n_partitions=int(parts),
    strategy=strategy,
    model=model,
    seed=int(seed),
    device=run_devices.app_device(model),  # a present GPU runs the default family; the store keeps runs by device
    groups=compute.groups_choice(data, **state.group_options(st.session_state, key)),  # Data page's choice (issue 28)
)


result = ui.filter_result(spec, n)  # stored, read off a stored run at a lower τ, or run in the background

ui.record_current_run(spec, result)  # the one current run (a stopped one too): the sidebar and every page read it

if result.stopped and result.n_rounds == 0:
    st.warning(
        "Stopped during round 1, before any round finished: this partial result has nothing removed yet. "
        "Change a parameter or press Run to start again."
    )
    st.button("Run it to the end", key="restart-run", on_click=ui.restart_run, args=(spec,))
    st.stop()
if result.stopped:  # one sentence (the engine's stop message said the same again)
    w1, w2 = st.columns([4, 1], vertical_alignment="center")
    w1.warning(
        f"Stopped after round {result.n_rounds}: this is a partial result ({result.n_kept:,} rows left). "
        "It is the current run in the sidebar and on the other pages until another run replaces it."
    )
    w2.button("Run it to the end", key="restart-run", on_click=ui.restart_run, args=(spec,))
else:
    st.success(result.stop_message)

hist = result.history
r0, r1 = hist["mean_predictability"].iloc[0], hist["mean_predictability"].iloc[-1]
q = hist["n_qualified"] / hist["n_scored"].clip(lower=1)
# the metrics side by side in a row that wraps (two a line on a phone, not one per line as in columns), so the
# chart starts within the first screen at 390 px
with st.container(horizontal=True, gap="small"):  # 2 × 165 px + a small gap fit a phone's 358 px
    st.metric(
        "Rows kept",
        f"{result.n_kept:,}",
        f"{result.n_kept / n:.0%} of {n:,}",
        delta_color="off",
        delta_arrow="off",
        width=165,
    )
    st.metric(
        "Rows removed",
        f"{result.n_removed:,}",
        f"in {result.n_rounds} round{'s' * (result.n_rounds != 1)}",
        delta_color="off",
        delta_arrow="off",
        width=165,
    )
    st.metric(
        "Bias R (mean p)",
        f"{r1:.3f}",
        help="The representation bias R(Φ, S, M): the mean predictability of the rows scored in the last round.",
        **compute.change_since_round_1(r1 - r0, ".3f"),
        width=165,
    )
    st.metric(
        "Rows at p ≥ τ (last round)",
        f"{q.iloc[-1]:.0%}",
        **compute.change_since_round_1(q.iloc[-1] - q.iloc[0], ".0%"),
        width=165,
    )

clicked = plotly_once.plotly_chart(
    charts.removal_chart(result),
    width="stretch",
    key="removal-chart",
    on_select="rerun",
    selection_mode="points",
    config=charts.CHART_CONFIG,
)
target_rows = charts.clicked_round_and_class(clicked.selection.points if clicked else [], result, "removal")
if target_rows is not None:  # a bar was clicked: show those rows on the Inspect page
    state.open_in_inspect(st.session_state, *target_rows)
    st.switch_page("pages/inspect.py")
ui.caption(
    "Top: rows removed so far, by class, after each round (click a bar to see the rows of that class removed in "
    "that round on Inspect). Middle: rows left after the round, and how many of the rows scored in it reached τ "
    "(the run stops early once fewer than k do). Bottom: the mean predictability of the rows scored in that "
    "round - AFLite's estimate of the representation bias R(Φ, S, M) - against τ. Filtering works when it falls."
)
ui.caption(compute.tau_source(result))  # read off a stored run (no AFLite run), or a run at this τ
ui.caption(f"Computed {run_devices.device_caption(result)}.")  # which device ran it (issue 26)

with ui.errors():  # issue 27: the null beside the removed rows (computed on the Predictability page)
    ui.caption(compute.removed_null_sentence(result, compute.null_result(spec, session=ui.session_data())))

impact = compute.class_impact(result)
if impact["warning"].any():
    for msg in impact.loc[impact["warning"], "message"]:
        st.warning(ui.message(msg))  # it names a class
with st.expander("Per-round table"):
    st.dataframe(
        hist.drop(columns=[c for c in ("eval_size_before", "eval_removed") if c in hist]),
        hide_index=True,
        width="stretch",
    )
