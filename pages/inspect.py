import streamlit as st

from aflite_app import inspect_columns, state, ui
from aflite_app.charts import inspect as charts
from aflite_app.charts.theme import MISSING
from aflite_app.compute import inspect as compute
from aflite_app.state import (
    INSPECT_FILTER,
    INSPECT_N_SEEDS,
    INSPECT_PAGE,
    INSPECT_STABILITY_ON,
    INSPECT_TAB_LABELS,
    INSPECT_UPLOAD,
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


def _on_upload() -> None:
    """Open an uploaded run before the page runs (so the page shows it at once); never raises."""
    up = st.session_state.get(INSPECT_UPLOAD)
    page = state.page_state(st.session_state, INSPECT_PAGE)
    if up is None:
        page["seen"] = None
        return
    try:
        record = compute.open_run_archive(up.getvalue(), up.name, ui.current_dataset_spec(), session=session_data)
    except ValueError as exc:  # exports.RunArchiveError and dataset mismatches: a message, never a traceback
        page["seen"] = (up.file_id, f"Could not open '{up.name}': {exc}")
        return
    state.keep_inspect_run(st.session_state, record, up.file_id)


def open_run_panel() -> None:
    """The uploader of a saved run (a zip of a run directory); a refused file shows its reason as st.error."""
    up = st.file_uploader(
        "A run record (.zip) made on this dataset",
        type=["zip"],
        key=INSPECT_UPLOAD,
        on_change=_on_upload,
        help="The 'Run record' zip this page downloads, or a zip of the folder the CLI wrote with --out. "
        f"It must have been made on the dataset selected in the sidebar ({ui.md(data_label)}).",
    )
    seen = state.page_state(st.session_state, INSPECT_PAGE).get("seen")
    if up is not None and seen is not None and seen[0] == up.file_id and seen[1]:
        st.error(ui.message(seen[1]))


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
    open_run_panel()
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
        view = compute.filter_rows(
            table, status=status, classes=classes, rounds=rounds, query=query, text_columns=text_cols
        )
        if link_text is not None:
            view = compute.link_rows(view, link)
        if stab_on and not compute.missing_stability_runs(ref.spec, n_seeds, session=session_data):
            freq, _, _ = compute.inspect_stability(ref.spec, n_seeds, session=session_data)
            view = compute.with_stability(view, freq)
        shown = compute.with_round_lists(view.head(MAX_ROWS_SHOWN), result)  # per-round p for these rows only
        st.caption(
            f"{len(view):,} of {len(table):,} rows match the filters"
            + (
                f"; the first {MAX_ROWS_SHOWN:,} are shown (narrow the filters, or download)."
                if len(view) > MAX_ROWS_SHOWN
                else "."
            )
            + " Click a column header to sort."
        )
        config, first = inspect_columns.rows_columns(data, text_cols, shown.columns, n_seeds)
        st.dataframe(
            shown.style.map(charts.status_cell_style, subset=["status"]),
            hide_index=True,
            width="stretch",
            column_order=first + [c for c in shown.columns if c not in first],
            height=520,
            column_config=config,
            row_height=36 if "image" in shown.columns else None,
            placeholder=MISSING,
            key="inspect-table",
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


# -- label-revealing words (Gardner et al.) and whether this run removed them -----------------------------------
def _words_result(request: compute.WordsRequest):
    """The request's (statistics, shares): stored, or computed in the background (progress and Stop); None meanwhile."""
    return _tab_job(
        "words",
        request,
        compute.stored_words,
        lambda r: compute.prepare_words(r, result, session=session_data),
        compute.describe_words,
        keys=("inspect-words-stop", "inspect-words-again"),
        stop_help="Stop testing the tokens; open this tab again to start over.",
        stopped="Stopped before the tokens were tested.",
    )


def _tab_job(entry, request, stored, prepare, describe, *, keys, stop_help, stopped):
    """A lazy tab's result: stored, or its background job (progress, Stop, "Compute again"); None while it runs.

    ``entry`` is the job's place in Inspect's page dict; ``prepare(request)`` the job (the session bound by the
    caller); ``keys`` the Stop and "Compute again" widget keys.
    """
    done = stored(request)
    if done is not None:
        return done
    outcome = ui.run_in_background(
        (INSPECT_PAGE, entry),
        request,
        prepare,
        describe(request),
        stop_key=keys[0],
        stop_help=stop_help,
        stopping="Stopping…",
        block=False,  # the rest of the page is drawn while it runs
    )
    if outcome is None:
        return None
    if outcome.ok:
        return outcome.value
    if outcome.error:
        st.error(ui.message(outcome.error))
    else:
        st.info(stopped)
    st.button(
        "Compute again",
        key=keys[1],
        on_click=state.page_state(st.session_state, INSPECT_PAGE).pop,
        args=(entry, None),
    )
    return None


def _draw_words(word_stats, shares) -> None:
    """The statistics chart on all rows, and whether this run removed the significant pairs (``shares``)."""
    st.caption(compute.artifact_summary(word_stats))
    st.plotly_chart(charts.artifact_statistics_chart(word_stats), width="stretch", key="inspect-words-chart")
    ui.caption(
        "Each point is a (token, label) pair: x = n, the texts containing the token (log scale); y = p̂, the "
        "share of them with that label; colour = label. Above the dashed curve a pair is significant (large, "
        "outlined points; the strongest are named); the dotted line is 1/|Y|. z grows with n, so a frequent "
        "word can be significant with p̂ only a little above 1/|Y|: read p̂ next to z. Hover for examples."
    )
    st.subheader("Did this run remove them?")
    n_significant = int(word_stats["significant"].sum())
    if result.n_removed == 0 or result.n_kept == 0:
        st.info("Nothing to compare: the run " + ("removed no row." if result.n_removed == 0 else "kept no row."))
    elif n_significant == 0:
        st.info("No (token, label) pair is significant at these settings, so there is no artifact to follow.")
    else:
        gone = int((~shares["still_significant"]).sum())
        removed_share = shares.attrs["removed_share"]
        s1, s2, s3 = st.columns(3)
        s1.metric("Significant pairs (all rows)", f"{len(shares):,}")
        s2.metric(
            "No longer significant among kept rows",
            f"{gone:,}",
            f"{gone / len(shares):.0%} of them",
            delta_color="off",
            delta_arrow="off",
            help="z computed on the kept rows alone is at most the same threshold z*.",
        )
        s3.metric("Rows the run removed", f"{removed_share:.0%}", help="Compare each token's share removed.")
        st.plotly_chart(
            charts.artifact_shares_chart(shares, z_critical=shares.attrs["z_critical"]),
            width="stretch",
            key="inspect-shares-chart",
        )
        ui.caption(
            "The significant pairs with the largest z (strongest at the top): the share of kept rows (blue "
            "circle) and of removed rows (vermillion diamond) whose text contains the token. A token far more "
            "common among removed rows is one AFLite's removals went after. z among the kept rows falls partly "
            "because fewer rows remain; p̂ on the kept rows (in the table and the hover) shows whether the "
            "token still gives the label away."
        )
        st.dataframe(
            shares,
            hide_index=True,
            width="stretch",
            height=320,
            column_order=list(inspect_columns.SHARES_ORDER),
            column_config=inspect_columns.shares_columns(removed_share),
        )
    with st.expander("Every significant pair (statistics on all rows)"):
        st.dataframe(compute.artifact_table(word_stats), hide_index=True, width="stretch")


if tab_words.open is not False:  # drawn only while open
    with tab_words:
        word_choices = compute.artifact_text_choices(data)
        if not word_choices:
            st.info(
                "This dataset has no text, so there are no words to test. 'What the removed rows share' compares its "
                "features between removed and kept rows instead."
            )
        else:
            st.markdown(
                "**Which words give the label away, on all rows of the dataset** (Gardner et al., 2021): for every "
                "(token, label) pair, p̂(label | token) among the n texts containing the token, tested against 1/|Y| "
                "with z = (p̂ − 1/|Y|) / sqrt((1/|Y|)(1 − 1/|Y|)/n), Bonferroni-corrected over all tests. Below: "
                "whether this run's removals took the significant ones away."
            )
            w1, w2, w3 = st.columns([2, 1, 1])
            word_source = w1.selectbox(
                "Tokens of",
                list(word_choices),
                format_func=word_choices.get,
                key=f"inspect-words-source-{dspec.key}",
                persist_state="page",
            )
            word_min = w2.number_input(
                "Test tokens in at least … texts",
                min_value=2,
                max_value=100_000,
                value=10,
                step=5,
                key="inspect-words-min",
                persist_state="page",
            )
            word_alpha = w3.selectbox(
                "Significance level α", [0.05, 0.01, 0.001], index=1, key="inspect-words-alpha", persist_state="page"
            )
            words = _words_result(
                compute.WordsRequest(ref, word_source, min_count=int(word_min), alpha=float(word_alpha))
            )
            if words is not None:
                _draw_words(*words)


# -- artifacts -----------------------------------------------------------------------------------------------
def _artifact_table(request: compute.ArtifactRequest):
    """The request's table: stored, or computed in the background (progress and Stop); None while it runs."""
    return _tab_job(
        "artifacts",
        request,
        compute.stored_artifacts,
        lambda r: compute.prepare_artifacts(r, result, session=session_data),
        compute.describe_artifacts,
        keys=("inspect-art-stop", "inspect-art-again"),
        stop_help="Stop comparing the removed and kept rows; open this tab again to start over.",
        stopped="Stopped before the comparison was done.",
    )


def removed_share_tab() -> None:
    """The tab "What the removed rows share": tokens (text) or features (no text) of removed vs kept rows."""
    if result.n_removed == 0 or result.n_kept == 0:
        st.info("Nothing to compare: the run " + ("removed no row." if result.n_removed == 0 else "kept no row."))
        return
    texts = compute.artifact_texts(data)
    grid = None
    if texts is not None:
        min_count = 5 if data.n_rows >= 500 else 2
        request = compute.ArtifactRequest(ref, "token", top_k=15, min_count=min_count)
        kind, where = "token", ui.message(texts[1])
        st.markdown(
            f"**Removed vs kept rows, within each class (log-odds test).** Tokens in {where} whose share among "
            "the removed rows of a class differs most from their share among its kept rows. A different "
            "question from 'Label-revealing words' (does a token predict its label over all rows?): here, what "
            "did the rows AFLite removed have that the kept rows of the same class lack?"
        )
    else:
        sources = compute.feature_sources(data)
        default = (
            "table" if "table" in sources else (representation if representation in sources else next(iter(sources)))
        )
        c1, c2 = st.columns(2)
        source = c1.selectbox(
            "Features compared",
            list(sources),
            format_func=sources.get,
            index=list(sources).index(default),
            key=f"inspect-source-{dspec.key}",
            persist_state="page",  # kept while another tab is open
            help="This dataset has no text; compare its numeric features instead.",
        )
        grid = compute.pixel_grid(data, source)
        request = compute.ArtifactRequest(
            ref, "feature", source, top_k=grid[0] * grid[1] if grid else 10, max_rows=compute.ARTIFACT_SAMPLE_ROWS
        )
        kind, where = "feature", sources[source]
    art = _artifact_table(request)
    if art is None:
        return
    present = [c for c in compute.class_names(data) if (art["label"].astype(str) == c).any()] if len(art) else []
    if not present:
        st.info(
            "No "
            + ("token appears often enough" if kind == "token" else "feature separates the rows")
            + " within a class that has both removed and kept rows."
        )
        return
    slot = c2 if kind == "feature" else st.columns(2)[0]
    label = slot.selectbox("Class", present, key=f"inspect-art-class-{dspec.key}", persist_state="page")
    cls = ui.md(label)  # in the captions
    if kind == "feature" and grid is not None:
        st.plotly_chart(charts.pixel_artifact_chart(art, label, grid), width="stretch", key="inspect-pixel-chart")
        ui.caption(
            f"Class {cls}: the average image of the rows AFLite kept (left) and removed (middle), and for "
            "each pixel the AUC of telling a removed row from a kept one by that pixel alone (right; 0.5 = "
            "no difference). Vermillion pixels are inked more among removed rows, blue ones among kept "
            "rows: the pixel patterns that made rows easy for AFLite's models."
        )
    st.plotly_chart(
        charts.artifact_chart(art, label, kind=kind, max_bars=10 if grid else 15),
        width="stretch",
        key="inspect-art-chart",
    )
    if kind == "token":
        ui.caption(
            f"Class {cls}: each bar is a token's smoothed log-odds ratio of appearing in a removed row vs a "
            "kept row of this class (0 = equally common). Vermillion bars are skewed toward removed rows: "
            "the cues AFLite's models found easy, candidate annotation artifacts (e.g. negation words in "
            "contradictions). Blue bars are more common among the rows that stayed. Ranked by z (log-odds / "
            "its standard error), so rare tokens need a larger gap."
        )
    else:
        ui.caption(
            f"Class {cls}: the features that best tell a removed row from a kept row of this class, by "
            "AUC (0.5 = no difference; 1 = every removed row has a higher value; 0 = lower). Vermillion "
            "bars are higher among removed rows, blue bars higher among kept rows. Compared within the "
            "class, so features that merely separate classes do not show up."
        )
        sampled = compute.artifact_sample_text(art)
        if sampled:
            st.caption(ui.message(sampled))
    with st.expander("Full table (all classes)"):
        st.dataframe(art, hide_index=True, width="stretch")


if tab_art.open is not False:  # drawn only while open
    with tab_art:
        removed_share_tab()

# -- classes -------------------------------------------------------------------------------------------------
if tab_classes.open is not False:  # drawn only while open
    with tab_classes:
        with ui.errors():
            impact = compute.inspect_class_impact(ref, result, session=session_data)
        for msg in impact.loc[impact["warning"], "message"]:
            st.warning(ui.message(msg) + " The filtered set may be too small in this class to train or evaluate on.")
        st.plotly_chart(charts.class_status_chart(impact), width="stretch", key="inspect-class-chart")
        ui.caption(
            "Rows per class before filtering (whole bar), split into kept (blue) and removed (vermillion); the "
            "number above each bar is the share of the class removed. '!' marks a flagged class: it lost most of "
            "its rows, clearly more than the data overall, or kept too few rows to train on."
        )
        st.dataframe(
            impact.drop(columns=["message"]),
            hide_index=True,
            width="stretch",
            column_config=inspect_columns.class_columns(),
        )

# -- stability -----------------------------------------------------------------------------------------------
if tab_stab.open is not False:  # drawn only while open
    with tab_stab:
        if ref.spec is None:
            st.info(
                "Stability across seeds re-runs AFLite with the Filter page's parameters and other seeds, so it is "
                "available for the Filter page's run only, not for a run opened from a file."
            )
        else:
            st.markdown(
                "Would another seed remove the same rows? AFLite's partitions are random: rows removed by "
                "every seed are robust removals; rows removed by only some seeds are borderline."
            )
            c1, c2 = st.columns([1, 3])
            n_seeds = c1.number_input(
                "Seeds",
                min_value=2,
                max_value=compute.MAX_STABILITY_SEEDS,
                value=5,
                step=1,
                key=INSPECT_N_SEEDS,
                persist_state="page",  # kept while another tab is open: the rows table reads it
                help="This run's seed and the next ones.",
            )
            missing = compute.missing_stability_runs(ref.spec, int(n_seeds), session=session_data)
            cost = (
                f"{len(missing)} more AFLite run{'s' * (len(missing) != 1)} (about as long as the Filter run each)"
                if missing
                else "already computed"
            )
            stab_on = c2.checkbox(
                f"Compute removal stability over {int(n_seeds)} seeds ({cost})",
                key=INSPECT_STABILITY_ON,
                persist_state="page",
            )
            only_finished = False
            if stab_on and missing:
                request = compute.StabilityRequest(ref.spec, int(n_seeds))
                outcome = ui.run_in_background(
                    (INSPECT_PAGE, "stability_run"),
                    request,
                    lambda s: compute.prepare_stability(s, session=session_data),
                    compute.describe_stability(request, session=session_data),
                    stop_key="inspect-stab-stop",
                    stop_help="Stop after the current step; the seeds finished so far are kept.",
                    stopping="Stopping after the current step…",
                    block=False,  # the other tabs stay drawn while the seeds run
                )
                if outcome is None:  # still running: the progress bar above, the report once it is done
                    stab_on = False
                elif outcome.ok:
                    st.rerun()  # the rows table above now gets its frequency column
                else:
                    if outcome.error:
                        st.error(ui.message(outcome.error))
                    finished = compute.finished_stability_specs(ref.spec, int(n_seeds), session=session_data)
                    if not outcome.error:
                        st.warning(
                            f"Stopped: {len(finished)} of {int(n_seeds)} seeds finished (the seed in progress was "
                            "dropped). "
                            + (
                                f"Below: stability over the {len(finished)} seeds finished."
                                if len(finished) >= 2
                                else "Stability needs at least two finished seeds."
                            )
                        )
                    st.button(
                        f"Continue: run the {int(n_seeds) - len(finished)} missing seed"
                        + "s" * (int(n_seeds) - len(finished) != 1),
                        key="inspect-stab-continue",
                        on_click=state.page_state(st.session_state, INSPECT_PAGE).pop,
                        args=("stability_run", None),
                    )
                    stab_on, only_finished = len(finished) >= 2, True
            if stab_on:
                with ui.errors():
                    freq, summary, counts = compute.inspect_stability(
                        ref.spec, int(n_seeds), only_finished, session=session_data
                    )
                if only_finished:
                    st.markdown(f"**Stability over the {summary['n_runs']} seeds finished** (of {int(n_seeds)} asked)")
                s1, s2, s3, s4 = st.columns(4)
                robust = summary["robust_share"]
                s1.metric(
                    "Robust removals",
                    f"{summary['robust']:,}",
                    "no removals" if summary["removed_here"] == 0 else f"{robust:.0%} of this run's removals",
                    delta_color="off",
                    delta_arrow="off",
                    help="Removed by every seed.",
                )
                s2.metric(
                    "Sometimes removed",
                    f"{summary['sometimes']:,}",
                    "removed here, kept by some seed",
                    delta_color="off",
                    delta_arrow="off",
                )
                s3.metric(
                    "Kept here, removed elsewhere",
                    f"{summary['kept_but_removed_elsewhere']:,}",
                    help="Rows this run kept that at least one other seed removed.",
                )
                s4.metric(
                    "Mean Jaccard of removed sets",
                    f"{summary['mean_jaccard']:.2f}",
                    help="Overlap of two seeds' removed sets (1 = identical), averaged over pairs of seeds.",
                )
                st.plotly_chart(
                    charts.stability_chart(counts, summary["n_runs"]), width="stretch", key="inspect-stab-chart"
                )
                ui.caption(
                    f"Seeds {', '.join(map(str, summary['seeds']))}: how many rows (y) were removed by 0, 1, … "
                    f"{summary['n_runs']} of the runs (x), split by what this run did (vermillion: removed here, "
                    "blue: kept here). A tall right-most vermillion bar means this run's removals are robust; the "
                    "Rows tab shows each row's share in the column 'removed by seeds'."
                )

# -- downloads and opening a run ------------------------------------------------------------------------------
if tab_io.open is not False:  # drawn only while open
    with tab_io:
        st.markdown(
            f"**Download** the filtered dataset ({result.n_kept:,} kept rows), the {result.n_removed:,} removed "
            "rows, or the whole run record."
        )
        run_tag = "opened" if which == "loaded" else f"seed{p.get('seed', 0)}"
        stem = f"aflite-{data.name}-{run_tag}"
        d1, d2, d3, d4 = st.columns(4)
        # the files are built only when a button is clicked (callables), from this run and dataset
        d1.download_button(
            "Kept rows · CSV",
            lambda: compute.download_bytes(result, data, "kept", "csv"),
            file_name=f"{stem}-kept.csv",
            mime="text/csv",
            on_click="ignore",
            key="inspect-dl-kept-csv",
            help=f"The {result.n_kept:,} kept rows with every original column plus aflite_* columns.",
        )
        d2.download_button(
            "Kept rows · Parquet",
            lambda: compute.download_bytes(result, data, "kept", "parquet"),
            file_name=f"{stem}-kept.parquet",
            mime="application/vnd.apache.parquet",
            on_click="ignore",
            key="inspect-dl-kept-parquet",
            help="The same kept rows as Parquet (types preserved).",
        )
        d3.download_button(
            "Removed rows · CSV",
            lambda: compute.download_bytes(result, data, "removed", "csv"),
            file_name=f"{stem}-removed.csv",
            mime="text/csv",
            on_click="ignore",
            key="inspect-dl-removed-csv",
            help=f"The {result.n_removed:,} removed rows with the round and score of their removal.",
        )
        d4.download_button(
            "Run record · zip",
            lambda: compute.run_zip_bytes(result),
            file_name=f"{stem}-run.zip",
            mime="application/zip",
            on_click="ignore",
            key="inspect-dl-run",
            help="Everything the run recorded (parameters, per-row and per-round tables): open it here "
            "later, or with AFLiteResult.load after unzipping.",
        )
        ui.caption(
            "Added columns: aflite_id, aflite_label (class), aflite_status, aflite_removed_round, and the "
            "predictability in round 1, at removal and in the last round scored."
        )
        st.download_button(  # issue 28: the kept rows as a dataset datasets.load_dataset reads, with its manifest
            "Dataset + manifest · zip",
            lambda: compute.provenance_zip_bytes(result, data, representation),
            file_name=f"{stem}-dataset.zip",
            mime="application/zip",
            on_click="ignore",
            key="inspect-dl-provenance",
            help="The kept rows as Parquet with a dataset card (README.md) that Hugging Face datasets.load_dataset "
            "reads once unzipped, and manifest.json: parameters, seed, representation, package and code versions, "
            "every row's round, p and status (aflite_rows.parquet) and the run record.",
        )
        st.divider()
        st.markdown("**Open a saved run**")
        open_run_panel()
        if loaded is not None:
            st.caption(
                f"Opened: '{loaded['name']}' ({loaded['result'].n_rows:,} rows, {loaded['result'].n_rounds} "
                f"rounds). It stays in this session until you close it."
            )
            st.button(
                "Close the opened run",
                on_click=state.forget_inspect_run,
                args=(st.session_state,),
                key="inspect-forget",
            )
