import streamlit as st

from aflite_app import plotly_once, ui
from aflite_app.charts import dynamics as charts
from aflite_app.charts import level_checks as checks
from aflite_app.compute import dynamics as compute
from aflite_app.compute import level_checks
from aflite_app.compute.dynamics import DYN_LEVEL_SOURCES
from aflite_app.compute.level_checks import ValidationSpec
from aflite_app.state import DYN_PAGE, page_state

ui.page_guard()
session_data = ui.session_data()  # this session's uploads and opened runs: every compute call gets them

NONE = "none"
SOURCES = {"record": "Record them on this dataset", "upload": "Upload dynamics (allenai/cartography JSONL)"}

st.title("Training dynamics")
st.caption(
    "A second way to find the easy rows (Cosma et al., EMNLP 2024): train a small model for a few epochs "
    "on the rows themselves and watch how it learns each one. Four numbers summarise a row's trajectory "
    "(confidence, variability, correctness, area under the margin), once for the full input and once for a "
    "partial input; clustering them gives the levels easy, ambiguous and hard. Below, the levels are checked on "
    "held-out rows the way the paper checks them, and set against the rows AFLite removes."
)

dspec, data = ui.current_dataset()
key = dspec.key
# the full input: the sidebar's representation, or the pair's own view when the sidebar's is the hypothesis alone
full_spec = compute.dynamics_full_input(dspec, data)
swapped = full_spec != dspec
class_names = compute.class_names(data)

# -- where the dynamics come from ----------------------------------------------------------------------------
st.subheader("Record or bring the dynamics")
source = st.radio(
    "Where the dynamics come from", list(SOURCES), format_func=SOURCES.get, horizontal=True, key="dyn-source"
)
seed = 0
if source == "record":
    partials = compute.partial_input_choices(data, full_spec.representation)
    if swapped:  # the sidebar's partial view first: it is what AFLite ran on
        partials = [dspec.representation, *[r for r in partials if r != dspec.representation]]
    natural = [r for r in partials if compute.is_partial_input(data, r)]
    c1, c2, c3 = st.columns([3, 1, 1])
    partial = c1.selectbox(
        "Partial input (a second model sees only this)",
        [*partials, NONE],
        key=f"dyn-partial-{key}-{full_spec.representation}",
        format_func=lambda r: (
            "none: full input only (four features)"
            if r == NONE
            else f"{r}: {data.representation_descriptions.get(r, r)}"
        ),
        help="The paper trains one model on premise + hypothesis and one on the hypothesis alone; a row the "
        "hypothesis-only model learns easily is likely to carry an annotation artifact.",
    )
    epochs = c2.number_input(
        "Epochs", 1, compute.DYN_MAX_EPOCHS, 5, key="dyn-epochs", help="Passes over the data; the paper uses 5."
    )
    seed = int(
        c3.number_input(
            "Seed", 0, 2**31 - 1, 0, key="dyn-seed", help="Initial weights, shuffles and the Gaussian mixture."
        )
    )
    full_desc = data.representation_descriptions.get(full_spec.representation, full_spec.representation)
    if partial == NONE:
        note = (
            "Only the full input is recorded, so the levels use its four features."
            if partials
            else f"'{ui.md(data.name)}' has a single representation, so there is no partial input: the levels "
            "use the four full-input features."
        )
    elif natural and partial in natural:
        note = (
            f"Partial input '{ui.md(partial)}' is a natural one (part of each example, such as the hypothesis of a "
            "premise/hypothesis pair): rows its model learns easily carry cues that need no reasoning."
        )
    elif data.pair is not None:
        note = (
            f"'{ui.md(partial)}' is not one side of the premise/hypothesis pair"
            + (f" (the hypothesis alone is {', '.join(repr(ui.md(r)) for r in natural)})" if natural else "")
            + ", so read the partial_ features as how easily a model on a second view learns a row, not as an "
            "annotation artifact."
        )
    else:
        note = (
            f"'{ui.md(data.name)}' has no natural partial input (it is not a premise/hypothesis pair), so "
            f"'{ui.md(partial)}' is "
            "simply a second, weaker view of the same rows: read the partial_ features as how easily a weaker "
            "model learns a row, not as an annotation artifact."
        )
    full_text = (
        f"Full input: '{ui.md(full_spec.representation)}' ({ui.md(full_desc)}), the whole premise/hypothesis pair: the "
        f"sidebar's representation '{ui.md(dspec.representation)}' is one side of it only, so it is offered as the "
        "partial input instead."
        if swapped
        else f"Full input: the sidebar's representation '{ui.md(dspec.representation)}' ({ui.md(full_desc)})."
    )
    st.caption(
        f"{full_text} {note} "
        "A softmax "
        "model is trained with Adam (batch 32, learning rate 0.01 decaying to 0) on all rows, in-sample, as "
        "the paper does on the test set."
    )
    spec = compute.DynamicsSpec(full_spec, None if partial == NONE else partial, int(epochs), seed)
else:
    st.caption(
        "allenai/cartography writes one file per epoch, dynamics_epoch_0.jsonl, dynamics_epoch_1.jsonl, …, "
        'each line {"guid": id, "logits_epoch_<e>": [one logit per class], "gold": class index}. The guid must '
        f"be the row's id in the dataset selected in the sidebar ('{ui.md(data.name)}': ids "
        f"{ui.md(', '.join(str(i) for i in data.ids[:3]))}, …). At most {compute.DYN_MAX_UPLOAD_FILES} epochs and "
        f"{compute.DYN_MAX_UPLOAD_BYTES // 2**20} MB per input."
    )
    u1, u2 = st.columns(2)
    full_files = u1.file_uploader(
        "Full-input dynamics (dynamics_epoch_*.jsonl, all epochs)",
        type=["jsonl"],
        accept_multiple_files=True,
        key=f"dyn-up-full-{key}",
    )
    partial_files = u2.file_uploader(
        "Partial-input dynamics (optional, e.g. hypothesis only)",
        type=["jsonl"],
        accept_multiple_files=True,
        key=f"dyn-up-partial-{key}",
    )
    order = st.text_input(
        "Class names in logit order (comma-separated)",
        ", ".join(class_names),
        key=f"dyn-classes-{key}",
        help="Logit j of every line is the j-th class named here; gold may be its index or name.",
    )
    if not full_files:
        st.info("Upload the full-input epoch files to see the levels, or record the dynamics on this dataset.")
        st.stop()
    with ui.errors():
        spec = compute.dynamics_upload(
            dspec,
            [(f.name, f.getvalue()) for f in full_files],
            [(f.name, f.getvalue()) for f in partial_files or []],
            order,
            session=session_data,
        )

# -- level method --------------------------------------------------------------------------------------------
st.subheader("Difficulty levels")
m1, m2 = st.columns([2, 3])
method = m1.radio(
    "Level method", list(compute.DYN_LEVEL_METHODS), format_func=compute.DYN_LEVEL_METHODS.get, key="dyn-method"
)
if method == "data_maps":
    frac = m2.slider("Ambiguous share (the most variable rows)", 0.05, 0.90, 0.33, 0.01, key="dyn-ambiguous")
    m2.caption(
        "Data Maps (Swayamdipta et al., 2020) define the *ambiguous* region: the rows in the top variability share. "
        "They define no three-level split: splitting the other rows at their median confidence into easy (above) "
        "and hard (below) is this project's choice."
    )
    level = compute.LevelSpec("data_maps", ambiguous_fraction=float(frac))
elif method == "aum":
    lo, hi = m2.slider("AUM percentiles bounding 'ambiguous'", 0.01, 0.99, (0.33, 0.66), 0.01, key="dyn-aum")
    m2.caption(
        "The area under the margin (AUM) is Pleiss et al.'s (2020), for spotting mislabeled rows; they propose no "
        "bands. The percentile bands follow Cosma et al.'s baseline (2024): below the lower percentile hard, above "
        "the upper one easy, in between ambiguous."
    )
    level = compute.LevelSpec("aum", lower=float(lo), upper=float(hi))
else:
    m2.caption(
        "Cosma et al. (2024): a 3-component Gaussian mixture over the standardised features (four per input); the "
        "clusters are ranked by their mean full-input confidence: highest easy, lowest hard. No thresholds to "
        "choose; levels need not be equal in size (in the paper ~70 % easy, ~10 % hard)."
    )
    level = compute.LevelSpec("gmm", seed=seed)


def _page() -> dict:
    """This page's own entries: the requests of the Record and Validate buttons and this session's waits."""
    return page_state(st.session_state, DYN_PAGE)


def _forget(entry: str) -> None:
    """Drop this session's finished wait (``"record_run"``, ``"validate_run"``), so the next run starts it over."""
    _page().pop(entry, None)


if compute.stored_dynamics(spec) is None:
    estimate = compute.dynamics_estimate(spec, session=session_data)
    if estimate > compute.DYN_AUTO_SECONDS and _page().get("record_request") != spec:
        st.info(
            f"Recording trains {'two models' if spec.partial else 'a model'} for {spec.epochs} epochs on "
            f"{data.n_rows:,} rows: roughly {estimate:.0f} s. It is cached once recorded."
        )
        if not st.button("Record training dynamics", type="primary", key="dyn-record"):
            st.stop()
        _page()["record_request"] = spec
    recorded = ui.run_in_background(
        (DYN_PAGE, "record_run"),
        spec,
        lambda s: compute.prepare_record(s, session=session_data),
        compute.describe_record(spec),
        stop_key="dyn-record-stop",
        stop_help="Stop the recording after the current mini-batch (nothing partial is kept).",
        stopping="Stopping after the current mini-batch…",
    )
    if not recorded.ok:
        if recorded.stopped:
            st.warning(
                "The recording was stopped before it finished, so there are no levels: dynamics of fewer epochs "
                "than asked for would give other levels, and nothing of it was kept. Record again starts over."
            )
        else:
            st.error(ui.message(recorded.error))
        st.button("Record again", type="primary", key="dyn-record-again", on_click=_forget, args=("record_run",))
        st.stop()
with ui.errors():
    frame = compute.dynamics_frame(spec, level, session=session_data)

counts = charts.level_counts(frame)
cols = st.columns(4)
for col, (_, row) in zip(cols, counts.iterrows()):
    col.metric(
        f"{row['level']} rows",
        f"{int(row['rows']):,}",
        f"{row['share']:.0%} of {len(frame):,}",
        delta_color="off",
        delta_arrow="off",
    )
has_partial = "partial_confidence" in frame.columns
cols[3].metric(
    "Features clustered" if method == "gmm" else "Features used",
    ("8" if has_partial else "4") if method == "gmm" else ("AUM" if method == "aum" else "conf. + var."),
    "full + partial input" if has_partial and method == "gmm" else "full input",
    delta_color="off",
    delta_arrow="off",
)

plotly_once.plotly_chart(charts.data_map(frame), width="stretch", key="dyn-map")
ui.caption(
    "The data map: each point is a row; up = the model gave its gold class a high probability on average "
    "(confidence), right = that probability changed a lot across epochs (variability). Colour = difficulty "
    "level, symbol = in how many epochs the model got the row right. Easy rows sit top-left, hard rows "
    "bottom-left, ambiguous ones to the right."
)

ui.caption(f"Levels by: {DYN_LEVEL_SOURCES[method]}.")

# -- are the levels real? ----------------------------------------------------------------------------------------
st.subheader("Are the levels real? Checked on held-out rows")
st.markdown(
    "The paper's evidence is not the clustering but what *independently trained* models do with it: a model trained "
    "on other rows should score high on the easy level and low on the hard one, and training on a fraction of the "
    "rows chosen by level should match the full data better than Data Maps' or AUM's selections (its Tables 5/6). "
    "This check splits the rows in two"
    + (" (every premise on one side)" if data.pair is not None else "")
    + ", records new training dynamics on each half (the full input"
    + (f" '{ui.md(full_spec.representation)}'" if source == "record" else "")
    + (f" and the partial input '{ui.md(spec.partial)}'" if source == "record" and spec.partial else "")
    + "), and tests both."
)
vspec = ValidationSpec(
    full_spec if source == "record" else dspec,
    spec.partial if source == "record" else None,
    int(spec.epochs or 5),
    seed,
)


def _ask_validation(asked: ValidationSpec) -> None:
    """The button asks for ``asked``; a wait that ended without levels (stopped, failed) starts over."""
    _page()["validate_request"] = asked
    waited = _page().get("validate_run")
    if waited is not None and waited.done and not (waited.result is not None and waited.result.ok):
        _forget("validate_run")


st.button("Validate the levels on held-out rows", key="dyn-validate", on_click=_ask_validation, args=(vspec,))
asked = _page().get("validate_request")
val = None
if asked is None or asked.dataset != vspec.dataset:
    st.caption(
        "Not computed yet: it records dynamics twice and trains about 100 small models (seconds on the digits, "
        "tens of seconds on a few thousand sentence pairs)."
    )
else:
    checked = ui.run_in_background(
        (DYN_PAGE, "validate_run"),
        asked,
        lambda s: level_checks.prepare_validation(s, session=session_data),
        level_checks.describe_validation,
        stop_key="dyn-validate-stop",
        stop_help="Stop the validation after the current mini-batch or model fit (nothing partial is kept).",
        stopping="Stopping after the current step…",
        block=False,  # the rest of the page goes on below the progress bar
    )
    val = checked.value if checked is not None and checked.ok else None
    if checked is not None and not checked.ok:
        if checked.stopped:
            st.warning("The validation was stopped before it finished; nothing of it was kept.")
        else:
            st.error(ui.message(checked.error))
        st.button("Validate again", key="dyn-validate-again", on_click=_forget, args=("validate_run",))
if val is not None:
    st.markdown(f"**{checks.validation_sentence(val.level_accuracy, val.fractions)}**")
    plotly_once.plotly_chart(checks.level_accuracy_chart(val.level_accuracy), width="stretch", key="dyn-val-levels")
    ui.caption(
        f"Accuracy on the {val.params['n_eval']:,} characterised rows, by their GMM level (Cosma et al.), of models "
        f"trained on the other {val.params['n_train']:,} rows — which played no part in these levels; whiskers: 95 % "
        "binomial intervals. Hatched: a logistic regression on the partial input alone"
        + (" (the paper finds it near chance on the hard level)." if val.params["partial_input"] else ".")
    )
    # issue 27: the levels beside levels that need no training dynamics, of the same sizes
    st.markdown("**Against one-shot confidence and chance**")
    pairs = checks.level_control_pairs(getattr(val, "level_controls", None))
    if not pairs:
        st.caption("This validation has no control levels; press the button again to compute them.")
    else:
        findings = level_checks.dynamics_findings(val)
        with st.container(border=True):
            st.markdown(
                "**What the dynamics add over one-shot confidence**  \n"
                + "\n".join(f"- {ui.message(line)}" for line in findings)
            )
        labels = {p: checks.MODEL_INPUT_LABELS.get(p, f"{p[0]} ({p[1]} input)") for p in pairs}
        pick = st.selectbox("Model", pairs, format_func=labels.get, key="dyn-val-control-model")
        plotly_once.plotly_chart(
            checks.level_controls_chart(val.level_controls, *pick), width="stretch", key="dyn-val-controls"
        )
        n_seeds = len(val.params["seeds"])
        ui.caption(
            f"The same held-out predictions of {ui.md(labels[pick])}, scored on four kinds of levels of exactly the "
            "GMM levels' sizes: the training-dynamics levels (blue); one logistic regression's probability of the "
            "gold label, fitted once on the characterised rows (in-sample, orange) or by 5-fold cross-fitting "
            "(out-of-fold, vermillion): no training dynamics at all; and random levels (grey), flat up to chance. "
            f"Whiskers: the spread (sd) over {n_seeds} seed{'s' if n_seeds != 1 else ''}, each re-drawing the split, "
            "the recordings and the subsets. Levels that add something over one-shot confidence fall more "
            "steeply than it from easy to hard."
        )
        st.dataframe(
            checks.level_controls_gaps(val.level_controls), hide_index=True, width="stretch", key="dyn-val-gaps"
        )
        ui.caption("Easy − hard accuracy of every model on each kind of levels: mean ± sd over the seeds.")
    plotly_once.plotly_chart(checks.fraction_chart(val.fractions), width="stretch", key="dyn-val-fractions")
    st.dataframe(checks.fraction_table(val.fractions), hide_index=True, width="stretch")
    ui.caption(
        f"A logistic regression trained on 10-50 % of the {val.params['n_train']:,} training rows, chosen by "
        "GMM level (ours after Cosma et al.: a level first, random order within it), by Data Maps' ambiguous region "
        "(the most variable rows, Swayamdipta et al.), by an AUM band around the median (Pleiss et al.'s AUM, "
        f"Cosma et al.'s band), by one-shot confidence levels (the control: no dynamics) or at random; mean ± sd of "
        f"{len(val.params['seeds'])} seeds (whiskers: spread), tested on "
        "the characterised rows. Dashed: trained on all training rows. `python -m aflite_core dynamics ... "
        "--validate` prints the same tables."
    )
    if asked != vspec:
        st.caption("Computed with other settings than the ones above (partial input, epochs or seed); press again.")

# -- the comparison with AFLite ------------------------------------------------------------------------------
st.subheader("Levels vs AFLite")
fspec = ui.filter_run_spec("this section compares it with the levels")  # a link's run, too
if fspec is None or fspec.dataset != dspec:
    st.info(
        "Run AFLite on the Filter page on this dataset and representation; this section then shows how many "
        "easy, ambiguous and hard rows AFLite removed, with examples from each cell."
    )
    st.page_link("pages/filter.py", label="Go to Filter")
else:
    with ui.errors():
        vs = compute.dynamics_vs_aflite(spec, level, fspec, session=session_data)
    table = charts.level_crosstab(vs["level"], vs["kept"])
    st.markdown(f"**{charts.crosstab_sentence(table)}**")
    x1, x2 = st.columns([1, 1])
    plotly_once.plotly_chart(charts.crosstab_chart(table), width="stretch", key="dyn-crosstab", container=x1)
    x2.dataframe(
        charts.crosstab_display(table),
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(format="%.1f %%") for c in ("% removed", "% of all removed")},
    )
    ui.caption(
        f"Rows of each difficulty level that the Filter page's run (τ = {fspec.tau:g}, k = {fspec.slice_size}) "
        "kept (blue) or removed (vermillion). If both methods find the same artifacts, AFLite removes mostly "
        "easy rows and keeps the hard ones."
    )
    cells = {f"{lv} · {status}": (lv, status, n) for lv, status, n in charts.crosstab_cells(table)}
    pick = st.selectbox(
        "Example rows from the cell", list(cells), key="dyn-cell", format_func=lambda c: f"{c} ({cells[c][2]:,} rows)"
    )
    lv, status, n_cell = cells[pick]
    if n_cell == 0:
        st.caption(f"No {lv} row was {status}.")
    else:
        with ui.errors():
            examples = compute.dynamics_examples(spec, level, fspec, (lv, status), session=session_data)
        config = {"image": st.column_config.ImageColumn("image", width="small")}
        config.update(
            {c: st.column_config.TextColumn(c, width="medium") for c in data.text_columns if c in examples.columns}
        )
        config.update(
            {c: st.column_config.NumberColumn(format="%.3f") for c in examples.columns if examples[c].dtype.kind == "f"}
        )
        st.dataframe(examples, hide_index=True, width="stretch", column_config=config)
        ui.caption(
            f"{min(n_cell, compute.DYN_EXAMPLES)} of the {n_cell:,} {lv} rows AFLite {status} (a seeded random "
            "sample), with the class and the training-dynamics measures of each."
        )

# -- what the levels look like -------------------------------------------------------------------------------
st.subheader("Features per level")
measure_cols = [m for m in charts.MEASURE_LABELS if m in frame.columns]
for i, (col, measure) in enumerate(zip(st.columns(len(measure_cols)), measure_cols)):
    key = "dyn-features" if i == 0 else f"dyn-features-{measure}"
    plotly_once.plotly_chart(
        charts.feature_distributions(frame, measure=measure), width="stretch", key=key, container=col
    )
ui.caption(
    "Distribution of each training-dynamics feature within each level (green easy, orange ambiguous, purple hard; "
    "box: quartiles and median, whiskers: "
    "1.5 × IQR). Top row: the full-input model"
    + ("; bottom row: the partial-input model." if has_partial else "; no partial input was recorded.")
)

st.subheader("Classes per level")
scale = st.radio("Bar height", ["rows", "share of the level"], horizontal=True, key="dyn-class-scale")
plotly_once.plotly_chart(
    charts.class_counts_chart(frame, data.classes, share=scale != "rows"), width="stretch", key="dyn-classes"
)
ui.caption(
    "Rows of each class in each level"
    + (" (as shares, so small levels can be compared)" if scale != "rows" else "")
    + ". A class that is mostly easy is one the model picks up "
    "from shallow cues (in SNLI: contradiction and entailment; neutral rows dominate the hard level)."
)

st.subheader("Spurious correlations per level")
if data.pair is None:
    kind = "images" if data.images is not None else "rows of numbers" if not data.text_columns else "single texts"
    st.info(
        f"The spurious-correlation measures (word overlap, antonyms, length mismatch, misspelled words, "
        f"negation) compare the premise and the hypothesis of a text pair. '{ui.md(data.name)}' has no text pair (its "
        f"rows are {kind}), so they are not shown. Upload a table with premise and hypothesis columns on the Data "
        "page to see them."
    )
    st.page_link("pages/data.py", label="Go to Data")
else:
    with ui.errors():
        _, paper = compute.dynamics_spurious_tests(spec, level, session=session_data)
    shown = charts.spurious_display(paper)
    config = {c: st.column_config.NumberColumn(f"mean · {c}", format="%.3f") for c in class_names if c in shown.columns}
    config.update(
        {c: st.column_config.TextColumn(c, width=int(6.5 * len(c)) + 14) for c in shown.columns if " vs " in c}
    )
    st.dataframe(shown, hide_index=True, width="stretch", column_config=config, height=35 * (len(shown) + 1) + 3)
    ui.caption(
        "Per level and measure: whether two classes differ (the 'a vs b' columns: two-sided Mann-Whitney U, "
        "Bonferroni-corrected over the whole table; *** p ≤ .001, ** p ≤ .01, * p ≤ .05, ns not significant, "
        "blank = a class has no row in the level), then each class's mean. On SNLI the paper finds "
        "significant differences in the easy level and none in the hard one: the hard rows carry fewer "
        "shortcuts."
    )
