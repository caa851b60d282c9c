import streamlit as st

from aflite_app import plotly_once, ui
from aflite_app.charts import synthetic as charts
from aflite_app.charts import synthetic_studies as studies
from aflite_app.charts.theme import fmt_pct
from aflite_app.compute import synthetic as compute
from aflite_app.compute.synthetic import (
    CIRCLES_LIVE_FOLDS,
    CIRCLES_OOD_SEEDS,
    CirclesOODSpec,
    CirclesRunSpec,
    CirclesSpec,
)
from aflite_app.state import SYN_PAGE, SYN_ROUND, SYN_STEP_DATA, page_state

ui.page_guard()  # a direct link on a fresh server runs inside the app

STEP_SECONDS = 1.2  # the stepper shows the next round after this long while playing

st.title("Synthetic circles")
st.markdown(
    "**The paper's Figure 2, live:** two rings are the *real task*, bias features a *shortcut*; AFLite should "
    "remove the shortcut, so the linear model falls while the RBF SVM stays."
)
with st.expander("Explain: the task, the shortcut and what to watch"):
    st.markdown(
        "**What this page shows (the paper's Figure 2, live).** Every dataset is a two-class problem with a "
        "*real task* and a *shortcut*. The real task: class 0 lies on an outer ring, class 1 on an inner ring "
        "(from left to right the rings get closer, so the task gets harder). A straight line cannot separate two "
        "rings, an RBF-kernel SVM can. The shortcut: most rows (75 % by default) carry two extra *bias features* "
        "placed according to the label, so a linear model can read the label off them without looking at the rings "
        "at all. In the most separated dataset some of those rows also have a *flipped* label (their bias features "
        "follow the new label, but they sit on the other class's ring)."
    )
    st.markdown(
        "AFLite scores how easily simple linear models predict each row and removes the easiest. Watch the bottom "
        "row: the shortcut rows (open diamonds) and the flipped rows (crosses) disappear, the **linear model's "
        "accuracy falls** — toward chance (0.5) while the shortcut leaves, and sometimes *below* it when AFLite keeps "
        "filtering (the notes under the figure say which, from the numbers) — while the **RBF SVM stays high** "
        "because the real task is still there. Only the two ring coordinates are drawn; AFLite and both models also "
        "see the bias features. This page builds its own data: the dataset chosen in the sidebar is not used here."
    )

# -- parameters --------------------------------------------------------------------------------------------------
with st.expander("Advanced: points, bias and flip fractions, ring gaps, m, t, n, folds, seed"), st.form("syn-advanced"):
    a1, a2, a3 = st.columns(3)
    n_samples = a1.number_input("Points per dataset", min_value=200, max_value=6000, value=2000, step=100, key="syn-n")
    bias_fraction = a2.slider(
        "Bias fraction (rows with bias features)",
        0.0,
        1.0,
        0.75,
        0.05,
        key="syn-bias",
        help="Share of each class that carries the label-revealing bias features.",
    )
    flip_fraction = a3.slider(
        "Flip fraction (of the biased rows, first dataset)",
        0.0,
        0.5,
        0.1,
        0.01,
        key="syn-flip",
        help="Share of the biased rows whose label is flipped, in the most separated dataset only (as in the paper).",
    )
    b1, b2, b3 = st.columns(3)
    seps_text = b1.text_input(
        "Ring gaps (separation levels)",
        value="1.0, 0.6, 0.4, 0.2",
        key="syn-seps",
        help="Comma-separated, each in [0, 2), one dataset per value (at most 6). "
        "Larger gaps are easier for the RBF SVM.",
    )
    n_partitions = b2.number_input("m — models per round", min_value=4, max_value=256, value=64, step=8, key="syn-m")
    train_size = b3.number_input(
        "t — training rows per model (share of rows)",
        min_value=0.01,
        max_value=0.9,
        value=0.05,
        step=0.01,
        format="%.2f",
        key="syn-t",
    )
    c1, c2, c3 = st.columns(3)
    target_size = c1.number_input(
        "n — target size (share of rows, never go below)",
        min_value=0.02,
        max_value=0.95,
        value=0.10,
        step=0.01,
        format="%.2f",
        key="syn-target",
        help="Below the share of rows without bias features, so the run usually ends "
        "by the τ early stop. The command line's default is 0.27.",
    )
    n_splits = c2.number_input(
        "Accuracy CV folds",
        min_value=2,
        max_value=10,
        value=CIRCLES_LIVE_FOLDS,
        step=1,
        key="syn-folds",
        help="The paper's protocol uses 5 folds; 3 keeps a τ change under about 1 s and a k change under about 2 s.",
    )
    seed = c3.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, step=1, key="syn-seed")
    st.form_submit_button("Apply", type="primary")

n = int(n_samples)
s1, s2 = st.columns(2)
tau = s1.slider(
    "τ — remove only rows with predictability ≥ τ",
    compute.CIRCLES_TAU_FLOOR,  # one AFLite run at the lowest τ gives every τ above it (compute.circles_experiment)
    1.0,
    0.75,
    0.01,
    key="syn-tau",
    help="A run stops early once fewer than k rows reach τ. On two balanced classes p = 0.5 is "
    "chance, so values below 0.5 mean nothing here.",
)
k_step = max(1, n // 200)
k = s2.slider(
    "k — rows removed per round at most",
    max(1, n // 50),
    max(2, n // 4),
    max(1, n // 20),
    k_step,
    key=f"syn-k-{n}",
    help="Smaller k means more rounds (finer steps, slower).",
)

with ui.errors():
    separations = compute.parse_separations(seps_text)
    data_spec = CirclesSpec(
        n_samples=n,
        bias_fraction=float(bias_fraction),
        flip_fraction=float(flip_fraction),
        separations=separations,
        seed=int(seed),
    )
    run = CirclesRunSpec(
        data=data_spec,
        tau=float(tau),
        slice_size=int(k),
        n_partitions=int(n_partitions),
        train_size=float(train_size),
        target_size=float(target_size),
        n_splits=int(n_splits),
    )
    bar = st.empty()  # a progress bar while something is computed (the first load takes seconds)

    def _progress(fraction: float, text: str) -> None:
        bar.progress(min(max(fraction, 0.0), 1.0), text=text)

    exp = compute.circles_experiment(run, _progress)
    bar.empty()

# -- Figure 2 --------------------------------------------------------------------------------------------------
plotly_once.plotly_chart(charts.circles_legend(), width="stretch", key="syn-legend", config={"displayModeBar": False})
with ui.errors():
    # two datasets per row (issue 29 item 9: bigger scatters); a phone stacks them
    per_row = min(2, len(exp.datasets))
    slots = [col for _ in range(0, len(exp.datasets), per_row) for col in st.columns(per_row)]
    for i, (col, d) in enumerate(zip(slots, exp.datasets)):
        # two figures: a τ/k change leaves the original's byte-identical, so the browser keeps it as drawn (WebGL);
        # the after-panel changes with every run, so it stays SVG (a changed chart is mounted anew: see charts)
        result, row = exp.results[d.name], exp.table.iloc[i]
        # the original panel is built once per data and cached in compute (with the builder passed in)
        original = compute.circles_original_figure(run.data, run.n_splits, i, d, row, charts.circles_column)
        after = charts.circles_column(d, result, row, part="after", webgl=False)
        plotly_once.plotly_chart(original, width="stretch", key=f"syn-orig-{i}", container=col)
        plotly_once.plotly_chart(after, width="stretch", key=f"syn-col-{i}", container=col)
ui.caption("Each dataset: all rows on top, the rows AFLite kept below, both models' accuracy in the titles.")
head = compute.circles_headline(exp)
# the headline numbers under the panels, so that on a phone (where the four stack) the panels start within the
# first screen (issue 29 item 7)
m1, m2, m3, m4 = st.columns(4)
m1.metric(
    "Linear accuracy after (mean)",
    f"{head['linear_after']:.3f}",
    f"{head['linear_after'] - head['linear_before']:+.3f} from {head['linear_before']:.3f}",
    delta_color="off",
)
m2.metric(
    "RBF-SVM accuracy after (mean)",
    f"{head['rbf_after']:.3f}",
    f"{head['rbf_after'] - head['rbf_before']:+.3f} from {head['rbf_before']:.3f}",
    delta_color="off",
)
m3.metric(
    "Share of rows with bias features",
    f"{head['biased_share_after']:.0%}",
    f"from {head['biased_share_before']:.0%}",
    delta_color="off",
    delta_arrow="off",
)
flipped = head["flipped_removed_share"]
m4.metric(
    "Flipped rows removed",
    fmt_pct(flipped),
    f"{head['rows_after']:,.0f} rows kept on average",
    delta_color="off",
    delta_arrow="off",
)
notes = compute.circles_notes(exp)
with st.expander("Explain: the panels and the accuracies"):
    ui.caption(
        f"One pair of panels per dataset. Top: all {n:,} rows; bottom: the rows AFLite kept. Axes: the two ring "
        "coordinates (the bias features are not drawn). Colour = class (orange: class 0, outer ring; green: class 1, "
        "inner ring); filled dots = no bias features, open diamonds = bias features (the shortcut), black-outlined "
        "crosses = flipped labels (coloured by their new label, so they sit on the other ring). Titles: held-out "
        "accuracy of a linear model (logistic regression) and an RBF-kernel SVM, mean of "
        f"{int(n_splits)}-fold cross-validation on the set shown"
        + (
            " (fewer folds than the paper's 5 keep the live view fast; change it under Advanced)"
            if int(n_splits) < 5
            else ""
        )
        + ", and how many rows carry bias features, before → after."
    )
    if notes:
        st.markdown("**Reading the accuracies**  \n" + "\n".join(f"- {line}" for line in notes))


def _seed_counts(spec, entry: str, label: str, key: str, unit: str) -> None:
    """The narrative counted over seeds, computed on request in the background (issue 27)."""
    mine = page_state(st.session_state, SYN_PAGE)
    counts = compute.stored_seed_counts(spec)
    if counts is None:
        if st.button(label, key=key):
            mine[f"{entry}_request"] = spec
        if mine.get(f"{entry}_request") != spec:
            return
        job = ui.run_in_background(
            (SYN_PAGE, f"{entry}_run"),
            spec,
            compute.prepare_seed_counts,
            compute.describe_seed_counts,
            stop_key=f"{key}-stop",
            stop_help="Stop counting after the current seed (nothing partial is kept)",
            stopping="Stopping after the current seed…",
            block=False,
        )
        if job is None:
            return
        if not job.ok:
            st.warning("Stopped before every seed was counted; nothing partial was kept." if job.stopped else job.error)
            mine.pop(f"{entry}_request", None)
            mine.pop(f"{entry}_run", None)
            return
        counts = job.value
    with st.container(border=True):
        st.markdown(
            f"**Over {compute.SEED_COUNT_SEEDS} {unit}** (computed in {counts.seconds:.0f} s)  \n"
            + "\n".join(f"- {ui.message(line)}" for line in counts.narrative)
        )


# issue 27: the notes above are one seed's; the counts over seeds on request
ui.caption(compute.one_seed_note(int(seed)))
_seed_counts(
    compute.SeedCountsSpec(run),
    "seed_counts",
    f"Count over {compute.SEED_COUNT_SEEDS} seeds (a new dataset and AFLite run per seed, in the background)",
    "syn-seed-counts",
    "seeds",
)

with st.expander("Figure 2 summary table"):
    st.dataframe(charts.summary_frame(exp.table), hide_index=True, width="stretch")
    st.caption(
        f"AFLite: τ = {tau:g}, k = {int(k)}, m = {int(n_partitions)}, t = {float(train_size):.0%} and target "
        f"n = {float(target_size):.0%} of the rows, seed {int(seed)}. Accuracies: mean of {int(n_splits)}-fold "
        "CV on the set before / after. 'Unbiased rows removed' is the price: rows without bias features that "
        "AFLite removed too."
    )

# -- round stepper ---------------------------------------------------------------------------------------------
st.subheader("Round by round")
st.caption(
    "Pick a dataset and step through AFLite's rounds (or press Play): the rows removed in the chosen round "
    "light up, earlier removals turn grey."
)


def _page() -> dict:
    """This page's own entries (the stepper's play state and timer, the out-of-distribution request)."""
    return page_state(st.session_state, SYN_PAGE)


def _play(n_rounds: int) -> None:
    _page()["playing"] = True
    if int(st.session_state.get(SYN_ROUND, 1)) >= n_rounds:
        st.session_state[SYN_ROUND] = 0  # start over; the first step shows round 1


def _pause() -> None:
    _page()["playing"] = False


playing = bool(_page().get("playing", False))
_page()["timer"] = playing


@st.fragment(run_every=STEP_SECONDS if playing else None)
def round_stepper(exp) -> None:
    if bool(_page().get("playing", False)) != _page().get("timer"):
        st.rerun()  # Play / Pause changed: re-declare the fragment with (or without) its timer
    names = [d.name for d in exp.datasets]
    if st.session_state.get(SYN_STEP_DATA) not in names:
        st.session_state[SYN_STEP_DATA] = names[0]
    name = st.radio("Dataset", names, horizontal=True, key=SYN_STEP_DATA)
    data = next(d for d in exp.datasets if d.name == name)
    result = exp.results[name]
    n_rounds = result.n_rounds
    if n_rounds < 1:
        st.info("AFLite removed nothing on this dataset: there is no round to show.")
        return
    current = int(st.session_state.get(SYN_ROUND, 1))
    if _page().get("playing"):
        current += 1
        if current >= n_rounds:
            _page()["playing"] = False  # the next run stops the timer
    st.session_state[SYN_ROUND] = min(max(current, 1), n_rounds)
    c1, c2 = st.columns([5, 1], vertical_alignment="bottom")
    rnd = c1.slider(
        "Round",
        1,
        max(n_rounds, 2),
        key=SYN_ROUND,
        disabled=n_rounds < 2,
        help="Rows scored and removed in this round; earlier removals are grey.",
    )
    rnd = min(int(rnd), n_rounds)
    if _page().get("playing"):
        c2.button("Pause", key="syn-pause", on_click=_pause, width="stretch")
    else:
        c2.button(
            "Play",
            key="syn-play",
            on_click=_play,
            args=(n_rounds,),
            width="stretch",
            disabled=n_rounds < 2,
            help="Step through the rounds automatically.",
        )
    info = compute.circles_round(exp, name, rnd)
    r1, r2, r3, r4 = st.columns(4)
    r1.metric(
        "Removed this round",
        f"{info['removed']:,}",
        f"{info['removed_biased']:,} with bias features",
        delta_color="off",
        delta_arrow="off",
    )
    r2.metric(
        "Rows left after the round",
        f"{info['size_after']:,}",
        f"of {data.n_samples:,}",
        delta_color="off",
        delta_arrow="off",
    )
    flips = f" · {info['flipped_left']:,} flipped" if data.is_flipped.any() else ""
    r3.metric(
        "Rows with bias features left",
        f"{info['biased_left']:,}",
        f"of {int(data.is_biased.sum()):,}{flips}",
        delta_color="off",
        delta_arrow="off",
    )
    r4.metric(
        "Mean predictability this round",
        f"{info['mean_p']:.3f}",
        f"{info['qualified']:,} of {info['scored']:,} rows reached τ",
        delta_color="off",
        delta_arrow="off",
    )
    with ui.errors():
        fig_map = charts.round_stepper(data, result, rnd, panel="map", webgl=False)  # redrawn every step: SVG
        fig_hist = charts.round_stepper(data, result, rnd, panel="histogram")
    g1, g2 = st.columns([11, 9])  # side by side on a wide screen, stacked on a phone
    plotly_once.plotly_chart(fig_map, width="stretch", key="syn-stepper", container=g1)
    plotly_once.plotly_chart(fig_hist, width="stretch", key="syn-stepper-hist", container=g2)
    ui.caption(f"Highlighted: the rows removed in round {rnd}; grey: earlier removals; dashed: τ.")
    with st.expander("Explain: the map and the histogram"):
        ui.caption(
            f"Map: {name}, ring coordinates. Vermillion, outlined: the rows removed in round {rnd}; grey: rows "
            "removed in earlier rounds; class colours: rows still in the set (open diamonds = bias features, crosses "
            "= flipped labels). Histogram: how predictable every row still in the set was in this round — the share "
            "of linear models, not trained on it, that predicted its label correctly. AFLite removes the k most "
            "predictable rows at or above τ (dashed); hatched bars are rows with bias features. " + result.stop_message
        )
    if st.checkbox(
        "Accuracy over the rounds (linear model and RBF SVM on the set left after each round)",
        key="syn-curve",
        help="Measures both models on the set left after every round of this dataset's run (about half a "
        "second, once per run).",
    ):
        with ui.errors():
            curve = compute.circles_curve(run, name)
        plotly_once.plotly_chart(studies.accuracy_rounds_chart(curve, rnd), width="stretch", key="syn-curve-chart")
        lines = compute.circles_notes(exp, name, curve)
        ui.caption("Both models on the set left after each round; the grey band is chance.")
        with st.expander("Explain: reading the accuracy curve"):
            ui.caption(
                f"{name}: held-out accuracy ({int(run.n_splits)}-fold CV) of the set left after each round; the "
                "dotted line is the round shown above, the grey band chance ± two binomial standard errors on that "
                "many rows. " + " ".join(lines)
            )


round_stepper(exp)

# -- out of distribution (ICML §5's claim) ---------------------------------------------------------------------
st.subheader("Out of distribution: does training on the filtered set generalise better?")
st.markdown("Train on all rows, on AFLite's rows or on a random subset, and test where the shortcut is gone.")
with st.expander("Explain: the out-of-distribution test"):
    st.markdown(
        "The paper's headline (§4.1, §5): models trained on AFLite's rows generalise better *out of distribution* "
        "than models trained on all rows or on a random subset of the same size. Here each model family is trained "
        "on the three training sets of every dataset above and tested on fresh rows from the same generator (*in "
        "distribution*) and on the same rows with the bias features **removed** (pure noise) or **flipped** "
        "(pointing to the other class). A planted shift like this favours the filtered set almost by construction; "
        "`python -m aflite_core ood --real` runs the same test from SNLI to MultiNLI (see the README)."
    )
ood_spec = CirclesOODSpec(run)
if st.button(
    f"Run the out-of-distribution test ({len(CIRCLES_OOD_SEEDS)} AFLite seeds, a few seconds)", key="syn-ood-run"
):
    _page()["ood_request"] = ood_spec
asked = _page().get("ood_request")
if asked is None:
    st.caption("Not computed yet: it trains 2 model families × 3 training sets per dataset and seed.")
else:
    with ui.errors():
        ood_bar = st.empty()
        ood_result = compute.circles_ood(asked, lambda f, t: ood_bar.progress(min(f, 1.0), text=t))
        ood_bar.empty()
    names = ["all datasets (mean)", *dict.fromkeys(ood_result.table["dataset"])]
    which = st.radio("Dataset", names, horizontal=True, key="syn-ood-data")
    chosen = None if which == names[0] else which
    model_cols = st.columns(len(asked.models))  # one figure per model family: a narrow screen stacks them
    for i, (col, fam) in enumerate(zip(model_cols, asked.models)):
        key = "syn-ood-chart" if i == 0 else f"syn-ood-chart-{fam}"
        plotly_once.plotly_chart(
            studies.ood_chart(ood_result.table, chosen, model=fam), width="stretch", key=key, container=col
        )
    lost = studies.ood_loss_text(ood_result, chosen)
    stale = (
        "" if asked == ood_spec else " Computed with other parameters than the ones above; press the button to update."
    )
    ui.caption("Test accuracy of each training set's models, from in distribution to the bias features flipped.")
    with st.expander("Explain: reading the out-of-distribution chart"):
        ui.caption(
            f"Test accuracy ({asked.run.data.n_samples:,} fresh rows per test set; mean over {len(asked.seeds)} "
            "AFLite seeds, whiskers: spread over "
            + ("datasets" if chosen is None else "seeds")
            + f"; dashed: chance). Accuracy lost from in distribution to flipped bias features — {lost} "
            "(positive = lost). The filtered set's models pay for it in distribution: they no longer use the "
            "shortcut that the fresh in-distribution rows still carry. Where two training sets score alike, the "
            "wide solid line lies under the narrower or dashed one." + stale
        )

# -- AFOptimum vs AFLite (ICML §2) -------------------------------------------------------------------------------
st.subheader("AFOptimum vs AFLite on tiny data")
st.markdown("On a handful of rows the best possible subset can be found exactly: how close does AFLite get?")
with st.expander("Explain: AFOptimum and the three strategies"):
    st.markdown(
        "AFLite approximates an intractable objective (§2, eq. 1): the subset S of size n with the lowest "
        "*representation bias* R — how well a model trained on part of S predicts the rest. On a handful of rows "
        "both can be computed exactly: R as the mean leave-one-out accuracy of a ridge classifier (in closed form, "
        "no random splits), the optimum by trying every subset, and AFLite's three strategies (A one row per step, "
        "B the k most predictable per step — AFLite —, C k rows sampled ∝ score) run with the same exact scores."
    )
if st.toggle("Compute the exact comparison (about a second)", key="syn-optimum-on"):
    with ui.errors():
        opt = compute.circles_optimum()
    plotly_once.plotly_chart(studies.optimum_chart(opt), width="stretch", key="syn-optimum-chart")
    ui.caption("Every bar names its strategy (A, B, C) and its bias; lower is less biased.")
    with st.expander("Explain: reading the AFOptimum chart"):
        ui.caption(
            "Exact bias reached at the target size (lower = less predictable); strategy C: mean of 20 seeds, best to "
            f"worst in brackets; a bias of 0 is drawn as a short stub. {studies.optimum_text(opt)} "
            "`python -m aflite_core optimum` prints the table."
        )
    # issue 27: one generated instance
    ui.caption(compute.one_seed_note(0, "this comparison and its sentence", "generated instances"))
    _seed_counts(
        compute.OptimumCountsSpec(),
        "optimum_counts",
        f"Count over {compute.SEED_COUNT_SEEDS} generated instances (in the background)",
        "syn-optimum-counts",
        "generated instances",
    )
    with st.expander("The table"):
        st.dataframe(opt, hide_index=True, width="stretch")
