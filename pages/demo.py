import streamlit as st

from aflite_app import plotly_once, state, ui
from aflite_app.charts import demo as demo_charts
from aflite_app.charts import synthetic as syn_charts
from aflite_app.compute import demo as compute
from aflite_app.markup import md
from aflite_app.state import DEMO_PAGE, page_state

ui.page_guard()  # a direct link on a fresh server runs inside the app

N_STEPS = len(compute.DEMO_STEPS)


def _page() -> dict:
    """This page's own entries: the step (in the URL), the word of step 2, the row of step 3, τ of step 1."""
    return page_state(st.session_state, DEMO_PAGE)


def _go(step: int) -> None:
    _page()["step"] = min(max(int(step), 1), N_STEPS)


def _next_row() -> None:
    _page()["row"] = int(_page().get("row", 0)) + 1


step = min(max(int(_page().get("step") or 1), 1), N_STEPS)
_page()["step"] = step
title, action = compute.DEMO_STEPS[step - 1]

st.title("AFLite in 10 minutes")
st.caption(  # the steps, the current one in bold (no progress bar: at 390 px each line above the figure counts)
    f"Step {step} of {N_STEPS}: "
    + " → ".join(f"**{t}**" if i == step else t for i, (t, _) in enumerate(compute.DEMO_STEPS, start=1))
)
if _page().get("shown") != step:  # a new step starts at the top of the page (Next was pressed at its bottom)
    _page()["shown"] = step
    st.iframe(  # the step in the text: another step's script is a new frame, so it runs again
        f"<script>/* step {step} */ const toTop = () => {{ const m = window.parent.document.querySelector("
        "'[data-testid=\"stMain\"]'); if (m) m.scrollTo(0, 0); }; toTop(); setTimeout(toTop, 300); "
        "setTimeout(toTop, 1000);</script>",
        height=1,
    )


def _nav(where: str) -> None:
    """Back / Next side by side, also on a phone (at the top short, at the bottom naming the next step)."""
    row = st.container(horizontal=True, gap="small")
    row.button("← Back", key=f"demo-back-{where}", on_click=_go, args=(step - 1,), disabled=step == 1, width="stretch")
    fwd = row
    if step < N_STEPS:
        fwd.button(
            "Next →" if where == "top" else f"Next: {compute.DEMO_STEPS[step][0]} →",
            key=f"demo-next-{where}",
            on_click=_go,
            args=(step + 1,),
            type="primary",
            width="stretch",
        )
    else:
        fwd.button("Start again", key=f"demo-restart-{where}", on_click=_go, args=(1,), width="stretch")


_nav("top")

# -- step 1: the shortcut on the circles -------------------------------------------------------------------------
if step == 1:
    # at 390 px the figure must start on the first screen: one line of heading, a short lead, a one-line slider
    st.subheader("1 · The shortcut")
    st.markdown("AFLite removes the rows linear models find easy: the **linear model falls**, the **RBF SVM stays**.")
    tau = st.slider(
        "**Try it:** move τ",
        compute.DEMO_TAU_FLOOR,
        1.0,
        float(_page().get("tau", compute.DEMO_TAU)),
        0.01,
        key="demo-tau",
        help="AFLite removes only rows whose predictability (the share of linear models, not trained on the row, "
        "that get its label right) is at least τ.",
    )
    _page()["tau"] = float(tau)
    with ui.errors():
        bar = st.empty()
        shown = compute.circles_step(tau, lambda f, t: bar.progress(min(max(f, 0.0), 1.0), text=t))
        bar.empty()
        row = shown["row"]
        plotly_once.plotly_chart(
            syn_charts.circles_legend(), width="stretch", key="demo-legend", config={"displayModeBar": False}
        )
        before, after = st.columns(2)  # side by side on a wide screen, stacked on a phone
        plotly_once.plotly_chart(
            demo_charts.circles_panel(shown["data"], shown["result"], row, part="original", height=500),
            width="stretch",
            key="demo-circles-original",
            container=before,
        )
        plotly_once.plotly_chart(
            demo_charts.circles_panel(shown["data"], shown["result"], row, part="after", webgl=False, height=540),
            width="stretch",
            key="demo-circles",
            container=after,
        )
        numbers = st.container(horizontal=True, gap="medium")  # side by side, also on a phone
        numbers.metric(
            "Linear model",
            f"{row['linear_after']:.2f}",
            f"{row['linear_after'] - row['linear_before']:+.2f} from {row['linear_before']:.2f}",
            delta_color="off",
            width=160,
        )
        numbers.metric(
            "RBF SVM",
            f"{row['rbf_after']:.2f}",
            f"{row['rbf_after'] - row['rbf_before']:+.2f} from {row['rbf_before']:.2f}",
            delta_color="off",
            width=160,
        )
    st.markdown(
        "Two classes lie on two rings: the *real task*, which a straight line cannot solve but an RBF-kernel SVM "
        "can. Three rows in four also carry *bias features* that give the label away: a *shortcut* a linear model "
        "uses instead. Removing the easy rows removes the shortcut."
    )
    ui.caption(
        f"{shown['data'].name}: all rows (left, first on a phone) and the rows AFLite kept at τ = {tau:g} (right); "
        "the titles give each model's held-out accuracy on the set shown. The Synthetic circles page has all four "
        "datasets."
    )

# -- step 2: real words in a real NLI sample ----------------------------------------------------------------------
elif step == 2:
    st.subheader("2 · The same on real text")
    with ui.errors():
        words = compute.words_step(session=ui.session_data())
        st.markdown(
            f"{words['data'].n_rows:,} real SNLI sentence pairs ship with the app. A hypothesis alone should not "
            "reveal whether it follows from its premise, yet some words do."
        )
        shares = words["shares"]
        if words["word"] is None or shares.empty:
            st.info("The word test found no significant word in this sample.")
        else:
            pairs = [f"{t} → {lab}" for t, lab in zip(shares["token"], shares["label"])]
            best = f"{words['word']['token']} → {words['word']['label']}"
            saved = _page().get("word")
            choice = st.selectbox(
                "**Try it:** pick a word that gives the label away",
                pairs,
                index=pairs.index(saved) if saved in pairs else pairs.index(best),
                key="demo-word",
            )
            _page()["word"] = choice
            w = shares.iloc[pairs.index(choice)]
            fig = demo_charts.word_shares_panel(shares, z_critical=words["z_critical"])
            plotly_once.plotly_chart(fig, width="stretch", key="demo-words")  # the figure first: on a phone too
            st.markdown(
                f"**'{md(w['token'])}'** is in {int(w['count']):,} hypotheses, {w['p_hat']:.0%} of them labelled "
                f"*{md(w['label'])}* (significant, z = {w['z']:.1f}). AFLite, run on the hypothesis alone, removed "
                f"**{w['removed_fraction']:.0%} of them** against {words['removed_share']:.0%} of all rows; "
                f"among the rows it kept, z falls to {w['z_kept']:.1f}"
                + (" (no longer significant)." if w["z_kept"] <= words["z_critical"] else " (still significant).")
            )
            ui.caption(
                "Each significant (word → label) pair: the share of kept rows (blue) and of removed rows "
                "(vermillion) whose hypothesis contains the word. A word far more common among removed rows is "
                f"one AFLite went after. Run: τ = {words['spec'].tau:g}, k = {words['spec'].slice_size}, "
                f"m = {words['spec'].n_partitions}, on the MiniLM embedding of the hypothesis; the Filter page shows "
                "the same run when you pick the SNLI sample."
            )

# -- step 3: one removed row, explained -----------------------------------------------------------------------------
else:
    st.subheader("3 · One removed row")
    with ui.errors():
        words = compute.words_step(session=ui.session_data())
        token = label = None
        chosen = _page().get("word")
        if chosen is None and words["word"] is not None:
            chosen = f"{words['word']['token']} → {words['word']['label']}"
        if chosen:
            token, label = chosen.split(" → ", 1)
        rows = compute.removed_rows(words["data"], words["result"], token, label)
        index = int(_page().get("row", 0)) % len(rows)
        why = compute.explain_row(words["data"], words["result"], rows[index], words["stats"])
        scores = why["scores"]
        qualified = sum(1 for p in scores if p >= why["tau"])
        st.markdown(
            f"Why did AFLite remove this row? Its *predictability* in each round: the share of "
            f"{words['spec'].n_partitions} linear models, trained on other rows, that get its label right."
        )
        st.button(
            f"**Try it:** show another removed row ({index + 1} of {len(rows)})", key="demo-another", on_click=_next_row
        )
        # the figure beside the row on a wide screen; on a phone (columns stack) the figure comes first
        chart, text = st.columns([3, 2], gap="medium")
        fig = demo_charts.row_rounds_chart(why["rounds"], scores, why["tau"], why["removed_round"])
        plotly_once.plotly_chart(fig, width="stretch", key="demo-row", container=chart)
        chart.caption(
            "Vermillion points reached τ (dashed). A row can reach τ and stay a round: AFLite removes only the k "
            "most predictable rows per round."
        )
        with text.container(border=True):
            st.markdown(f"**Premise:** {md(why['premise'])}  \n**Hypothesis:** {md(why['hypothesis'])}")
            st.markdown(f"**Label:** {md(why['label'])} · row {md(why['id'])}")
            if len(why["words"]):
                st.markdown(
                    "**Words that give a label away:** "
                    + ", ".join(
                        f"'{md(t)}' → {md(lab)} (z = {z:.1f})"
                        for t, lab, z in zip(why["words"]["token"], why["words"]["label"], why["words"]["z"])
                    )
                )
            else:
                st.markdown("**Words that give a label away:** none of the significant ones.")
        text.markdown(
            f"This row reached τ = {why['tau']:g} in {qualified} of its {len(scores)} round(s) and was among the most "
            f"predictable in round {why['removed_round']}, so AFLite removed it."
        )
    if st.button(  # the callback picks the SNLI sample (before the sidebar draws); its default run is this one
        "Open this run on the Filter page",
        key="demo-filter",
        icon=":material/arrow_forward:",
        on_click=state.select_dataset,
        args=(st.session_state, compute.DEMO_DATASET.key),
    ):
        st.switch_page("pages/filter.py")

_nav("bottom")
st.caption(
    f"Step {step} of {N_STEPS}. {action} above, then "
    + ("Next." if step < N_STEPS else "go on to the Filter page, or start again.")
    + " The address bar keeps the step: a reload stays here."
)
