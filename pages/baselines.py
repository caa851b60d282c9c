import streamlit as st

from aflite_app import plotly_once, state, ui
from aflite_app.charts import baselines as charts
from aflite_app.charts.theme import MISSING
from aflite_app.compute import baselines as compute
from aflite_app.state import MODEL_FAMILIES

ui.page_guard()  # a direct link on a fresh server runs inside the app
session_data = ui.session_data()  # this session's uploads and opened runs: every compute call gets them

st.title("Baselines")
st.caption(
    "Is AFLite's subset harder because of *which* rows it kept, or only because it is smaller? The same "
    "model families are cross-validated on the full data, on AFLite's kept rows, on a random subset of the "
    "same size and on the subset a one-shot filter keeps (one model, one split, one pass; ICML 2020 §4.2)."
)

spec, result, data = ui.current_run("this page compares that run's kept rows with equal-size baselines")

used = spec.dataset.representation or data.default_representation
# AFLite run on one side of a premise/hypothesis pair: the pair's own view is the full input, the run's the partial
full = compute.pair_full_input(data, used)
partials = compute.partial_input_choices(data, full)
if full != used:
    partials = [used, *[r for r in partials if r != used]]
default_partial = used if full != used else compute.default_partial_input(data, used)

c1, c2 = st.columns([3, 2])
models = c1.multiselect(
    "Model families",
    list(compute.BASELINE_MODELS),
    default=list(compute.BASELINE_DEFAULT_MODELS),
    format_func=compute.BASELINE_MODELS.get,
    key="bl-models",
    help="Each family is trained and tested by k-fold cross-validation inside every subset. RBF SVM and the "
    "MLP are slower; their training folds are capped (see Options).",
)
none_label = "none"
partial = c2.selectbox(
    "Partial input (second representation)",
    [none_label, *partials],
    index=1 + partials.index(default_partial) if default_partial else 0,
    key=f"bl-partial-{spec.dataset.key}",
    format_func=lambda r: r if r == none_label else data.representation_descriptions.get(r, r),
    help="A model that sees only part of the input (e.g. the hypothesis of a premise/hypothesis pair) should not "
    "beat chance on a good benchmark. Datasets without a text pair have no partial input; you can still "
    "compare with another representation of the same rows.",
)
with st.expander("Options: folds, training-row cap, seed"):
    o1, o2, o3 = st.columns(3)
    n_splits = o1.number_input("Folds (k-fold cross-validation)", 2, 10, 5, key="bl-folds")
    cap = o2.number_input(
        "Max training rows per fold",
        100,
        20_000,
        2000,
        step=500,
        key="bl-cap",
        help="Every model trains on a seeded random sample of at most this many rows of each "
        "training fold (test folds are untouched): keeps RBF SVM and MLP responsive.",
    )
    seed = o3.number_input("Seed (random subset, one-shot split, folds)", 0, 2**31 - 1, 0, key="bl-seed")

if not models:
    st.warning("Choose at least one model family.")
    st.stop()

options = compute.BaselineOptions(
    models=tuple(m for m in compute.BASELINE_MODELS if m in models),
    partial=None if partial == none_label else partial,
    full=None if full == used else full,
    n_splits=int(n_splits),
    max_train_rows=int(cap),
    seed=int(seed),
)
report = compute.stored_baselines(spec, options)
if report is None:
    estimate = compute.baseline_estimate(
        data.n_rows,
        options,
        data.representation(full).shape[1],
        None if options.partial is None else data.representation(options.partial).shape[1],
        n_kept=int(result.n_kept),
        train_size=int(result.params["train_size"]),
        n_partitions=int(spec.n_partitions) if spec.model == "linear" else min(int(spec.n_partitions), 16),
        n_classes=len(data.classes),
    )
    page = st.session_state.setdefault(state.BASELINES_PAGE, {})
    request = (spec, options)
    run = page.get("run")
    stopped = run is not None and run.key == request and run.done and run.stop_requested
    # asked already (Compute pressed, or small enough to start by itself): the job runs in the background
    asked = page.get("asked") == request and run is not None and run.key == request and not stopped
    if estimate > compute.BASELINE_AUTO_SECONDS and not asked:
        gate = st.empty()
        with gate.container():
            if stopped:
                st.info("The comparison was stopped before it finished; what it computed is cached.")
            st.info(
                f"This comparison trains {len(options.models)} model "
                f"famil{'ies' if len(options.models) > 1 else 'y'} × {options.n_splits} folds × 4 subsets"
                f"{' × 2 representations' if options.partial else ''} on {data.n_rows:,} rows: roughly "
                f"{estimate:.0f} s. It is cached once computed."
            )
            clicked = st.button("Compute", type="primary", key="bl-compute")
        if not clicked:
            st.stop()
        gate.empty()
        page.pop("run", None)  # a new job (a stopped one starts over; finished pieces come from the cache)
    page["asked"] = request
    # a heavy background job (it waits its turn in the server's queue): progress, time left and Stop at once
    outcome = ui.run_in_background(
        (state.BASELINES_PAGE, "run"),
        request,
        lambda r: compute.prepare_baselines(r[0], r[1], session=session_data),
        compute.describe_baselines(estimate),
        stop_key="bl-stop",
        stop_help="Stop the comparison (the families and subsets already computed stay cached)",
        stopping="Stopping after the model that is training now…",
    )
    if outcome.stopped:
        st.info("The comparison was stopped before it finished; what it computed is cached.")
        st.button("Compute again", key="bl-again", on_click=page.pop, args=("run", None))
        st.stop()
    if outcome.error is not None:
        st.error(ui.message(outcome.error))
        st.stop()
    report = outcome.value

acc, bias = report.accuracies, report.bias
for note in report.notes:
    st.warning(ui.message(note))

m1, m2, m3, m4 = st.columns(4)
m1.metric("Full data", f"{report.sizes['full']:,} rows")
share = report.sizes["aflite"] / report.sizes["full"]
m2.metric(
    "AFLite kept",
    f"{report.sizes['aflite']:,} rows",
    f"{share:.0%} of the full data",
    delta_color="off",
    delta_arrow="off",
)
m3.metric("Random subset", f"{report.sizes['random']:,} rows")
m4.metric("One-shot filter", f"{report.sizes['one-shot']:,} rows" if "one-shot" in report.sizes else MISSING)

partial_label = None if options.partial is None else data.representation_descriptions.get(options.partial)
reading = charts.plain_reading(
    acc,
    bias,
    model_labels=compute.BASELINE_MODELS,
    partial_label=None if options.partial is None else f"'{ui.md(options.partial)}'",
)
if reading:
    st.markdown("\n".join(f"- {line}" for line in reading))

view_labels = {
    # two short lines: the two panels' titles side by side never run into each other on a phone
    "full input": f"full input<br>Φ = '{ui.plotly_text(full)}'",
    "partial input": f"partial input<br>'{ui.plotly_text(options.partial)}'",
}
fig = charts.accuracy_chart(acc, model_labels=compute.BASELINE_MODELS, view_labels=view_labels)
plotly_once.plotly_chart(fig, width="stretch", key="bl-accuracy")
groups_text = (
    f" Folds keep every '{ui.md(report.grouped_by)}' on one side (a premise never trains and tests)."
    if report.grouped_by
    else ""
)
ui.caption(
    f"Cross-validated accuracy ({options.n_splits}-fold, mean ± one fold sd) of each model family (x) inside each "
    f"subset: grey the full data, blue AFLite's kept rows, green a random subset of the same size (same class mix "
    f"as the full data), purple the rows a one-shot filter keeps (one {report.one_shot_model} model trained once on "
    f"t = {report.train_size:,} rows removes the held-out rows it predicts most confidently). Lower means the "
    f"family finds the subset harder. {charts.chance_text(acc, fig)}{groups_text}"
    + (
        f" The right panel scores the same four subsets with the partial input '{ui.md(options.partial)}' "
        f"({ui.md(partial_label)})."
        if options.partial
        else (
            " No partial input is chosen: pick one above (e.g. the hypothesis alone) to compare it."
            if data.pair is not None and partials
            else " This premise/hypothesis pair has no other representation to use as the partial input."
            if data.pair is not None
            else " This dataset has no partial input (no premise/hypothesis text pair); pick a second representation "
            "above to compare one."
            if partials
            else " This dataset has no partial input (no text pair) and only one representation."
        )
    )
    + (
        f" AFLite ran on '{ui.md(used)}', one side of the pair only: the full input here is the pair's own view "
        f"'{ui.md(full)}', and the run's representation is the partial input."
        if full != used
        else ""
    )
)

st.subheader("Accuracy table")
st.dataframe(
    charts.baseline_table(
        acc, model_labels=compute.BASELINE_MODELS, view_labels={"full input": "full", "partial input": "partial"}
    ),
    hide_index=True,
    width="stretch",
)
ui.caption(
    "Cross-validated accuracy of each model family in each subset (the column names give the subset sizes). "
    "'AFLite − random' below 0 means the AFLite subset is harder than choosing the same number of rows at "
    "random makes it."
)

st.subheader("Representation bias of each subset")
plotly_once.plotly_chart(charts.bias_chart(bias), width="stretch", key="bl-bias")
ui.caption(
    f"How predictable each subset is from Φ = '{ui.md(used)}' for AFLite's own model family "
    f"({MODEL_FAMILIES.get(report.bias_model, report.bias_model)}): one AFLite scoring phase "
    f"(aflite_core.predictability) inside the subset — m = {report.bias_partitions} models, each trained on "
    f"t = {report.train_size:,} rows of the subset, predict the subset's other rows — averaged over the rows "
    "(the estimate of R(Φ, S, M), ICML eq. 5). Lower is less biased; nothing is removed here."
)
with st.expander("All numbers"):
    st.dataframe(acc, hide_index=True, width="stretch")
    st.dataframe(bias, hide_index=True, width="stretch")
notes = sorted({n for n in acc["note"] if n})
if notes:
    st.caption("Notes: " + "; ".join(notes) + ".")
st.caption(
    f"Computed in {report.seconds:.1f} s (cached: changing pages or coming back is instant; adding a model "
    "family computes only that family)."
)
