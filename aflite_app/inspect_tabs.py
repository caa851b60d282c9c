"""The Inspect page's tabs other than the rows: their drawing code, so the page stays thin (issue 28).

Each function draws one tab of :mod:`pages.inspect` for an :class:`InspectView` (the run shown, its dataset and
this session's data, resolved once by the page): "Label-revealing words", "What the removed rows share",
"Classes", "Stability across seeds" and "Download / open a run" (with the uploader of a saved run, also shown
when there is no run yet). Widget keys and messages are those the page had.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from aflite_core import AFLiteResult
from aflite_core.data.datasets import Dataset

from . import inspect_columns, plotly_once, settings, state, ui
from .charts import inspect as charts
from .compute import inspect as compute
from .compute import inspect_artifacts, inspect_stability
from .specs import DatasetSpec, SessionData
from .state import INSPECT_N_SEEDS, INSPECT_PAGE, INSPECT_STABILITY_ON, INSPECT_UPLOAD

__all__ = [
    "InspectView",
    "classes_tab",
    "downloads_tab",
    "open_run_panel",
    "removed_share_tab",
    "stability_tab",
    "words_tab",
]


@dataclass(frozen=True)
class InspectView:
    """What every tab draws from: the run shown and where it came from (resolved once by the page)."""

    ref: Any
    result: AFLiteResult
    data: Dataset
    dspec: DatasetSpec
    session: SessionData
    representation: str | None
    which: str
    loaded: dict | None


# -- opening a saved run ---------------------------------------------------------------------------------------


def _on_upload(session: SessionData) -> None:
    """Open an uploaded run before the page runs (so the page shows it at once); never raises."""
    up = st.session_state.get(INSPECT_UPLOAD)
    page = state.page_state(st.session_state, INSPECT_PAGE)
    if up is None:
        page["seen"] = None
        return
    try:
        record = compute.open_run_archive(up.getvalue(), up.name, ui.current_dataset_spec(), session=session)
    except ValueError as exc:  # exports.RunArchiveError and dataset mismatches: a message, never a traceback
        page["seen"] = (up.file_id, f"Could not open '{up.name}': {exc}")
        return
    state.keep_inspect_run(st.session_state, record, up.file_id)


def open_run_panel(data_label: str, session: SessionData) -> None:
    """The uploader of a saved run (a zip of a run directory); a refused file shows its reason as st.error."""
    up = st.file_uploader(
        "A run record (.zip) made on this dataset",
        type=["zip"],
        key=INSPECT_UPLOAD,
        on_change=_on_upload,
        args=(session,),
        help="The 'Run record' zip this page downloads, or a zip of the folder the CLI wrote with --out. "
        f"It must have been made on the dataset selected in the sidebar ({ui.md(data_label)}).",
    )
    seen = state.page_state(st.session_state, INSPECT_PAGE).get("seen")
    if up is not None and seen is not None and seen[0] == up.file_id and seen[1]:
        st.error(ui.message(seen[1]))


# -- label-revealing words (Gardner et al.) and whether this run removed them -----------------------------------
def _words_result(v: InspectView, request: inspect_artifacts.WordsRequest):
    """The request's (statistics, shares): stored, or computed in the background (progress and Stop); None meanwhile."""
    return _tab_job(
        "words",
        request,
        inspect_artifacts.stored_words,
        lambda r: inspect_artifacts.prepare_words(r, v.result, session=v.session),
        inspect_artifacts.describe_words,
        keys=("inspect-words-stop", "inspect-words-again"),
        stop_help="Stop testing the tokens; open this tab again to start over.",
        stopped="Stopped before the tokens were tested.",
        quick=v.data.n_rows > settings.load().max_interactive_rows,
    )


def _tab_job(entry, request, stored, prepare, describe, *, keys, stop_help, stopped, quick=False):
    """A lazy tab's result: stored, or its background job (progress, Stop, "Compute again"); None while it runs.

    ``entry`` is the job's place in Inspect's page dict; ``prepare(request)`` the job (the session bound by the
    caller); ``keys`` the Stop and "Compute again" widget keys; ``quick``: show the progress bar and Stop at once
    (a run above the interactive size), not after the sync wait.
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
        quick=quick,  # a large run's job: its progress and Stop at once (issue 25), not after the sync wait
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


def _draw_words(v: InspectView, word_stats, shares) -> None:
    """The statistics chart on all rows, and whether this run removed the significant pairs (``shares``)."""
    st.caption(compute.artifact_summary(word_stats))
    word_chart(word_stats, key="inspect-words-chart")
    st.subheader("Did this run remove them?")
    n_significant = int(word_stats["significant"].sum())
    if v.result.n_removed == 0 or v.result.n_kept == 0:
        st.info("Nothing to compare: the run " + ("removed no row." if v.result.n_removed == 0 else "kept no row."))
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
        plotly_once.plotly_chart(
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


def word_test_controls(choices: dict[str, str], *, keys: tuple[str, str, str], **widget: Any) -> tuple[str, int, float]:
    """The word test's three controls in a row (Data and Inspect pages): the texts, the least count and α.

    ``keys`` are the widgets' keys (texts, least count, α); ``widget`` goes to each (e.g. ``persist_state``).
    Returns the chosen text source, the least number of texts a tested token is in, and α.
    """
    c1, c2, c3 = st.columns([2, 1, 1])
    source = c1.selectbox(
        "Tokens of",
        list(choices),
        format_func=choices.get,
        key=keys[0],
        help="Annotation artifacts of NLI live in the hypothesis, which annotators wrote.",
        **widget,
    )
    least = c2.number_input(
        "Test tokens in at least … texts",
        min_value=2,
        max_value=100_000,
        value=10,
        step=5,
        key=keys[1],
        help="Rarer tokens are not tested (and could not reach significance anyway).",
        **widget,
    )
    alpha = c3.selectbox(
        "Significance level α", [0.05, 0.01, 0.001], index=1, key=keys[2], help="Family-wise.", **widget
    )
    return source, int(least), float(alpha)


def word_chart(stats, *, key: str) -> None:
    """The word test's chart of every (token, label) pair and its caption (Data and Inspect pages)."""
    plotly_once.plotly_chart(charts.artifact_statistics_chart(stats), width="stretch", key=key)
    ui.caption(
        "Each point is a (token, label) pair: x = n, the texts containing the token (log scale); y = p̂, the "
        "share of them with that label; colour = label. Above the dashed curve a pair is significant (large, "
        "outlined points; the strongest are named); the dotted line is 1/|Y|, what a token that says nothing "
        "gives. z grows with n, so a frequent word can be significant with p̂ only a little above 1/|Y| "
        "(e.g. 'for' → neutral in SNLI): read p̂ next to z. Hover for example texts."
    )


def words_tab(v: InspectView) -> None:
    """The tab "Label-revealing words"."""
    word_choices = compute.artifact_text_choices(v.data)
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
        word_source, word_min, word_alpha = word_test_controls(
            word_choices,
            keys=(f"inspect-words-source-{v.dspec.key}", "inspect-words-min", "inspect-words-alpha"),
            persist_state="page",
        )
        words = _words_result(
            v, inspect_artifacts.WordsRequest(v.ref, word_source, min_count=word_min, alpha=word_alpha)
        )
        if words is not None:
            _draw_words(v, *words)


# -- artifacts -----------------------------------------------------------------------------------------------
def _artifact_table(v: InspectView, request: inspect_artifacts.ArtifactRequest):
    """The request's table: stored, or computed in the background (progress and Stop); None while it runs."""
    return _tab_job(
        "artifacts",
        request,
        inspect_artifacts.stored_artifacts,
        lambda r: inspect_artifacts.prepare_artifacts(r, v.result, session=v.session),
        inspect_artifacts.describe_artifacts,
        keys=("inspect-art-stop", "inspect-art-again"),
        stop_help="Stop comparing the removed and kept rows; open this tab again to start over.",
        stopped="Stopped before the comparison was done.",
        quick=v.data.n_rows > settings.load().max_interactive_rows,
    )


def removed_share_tab(v: InspectView) -> None:
    """The tab "What the removed rows share": tokens (text) or features (no text) of removed vs kept rows."""
    if v.result.n_removed == 0 or v.result.n_kept == 0:
        st.info("Nothing to compare: the run " + ("removed no row." if v.result.n_removed == 0 else "kept no row."))
        return
    texts = compute.artifact_texts(v.data)
    grid = None
    if texts is not None:
        min_count = 5 if v.data.n_rows >= 500 else 2
        request = inspect_artifacts.ArtifactRequest(v.ref, "token", top_k=15, min_count=min_count)
        kind, where = "token", ui.message(texts[1])
        st.markdown(
            f"**Removed vs kept rows, within each class (log-odds test).** Tokens in {where} whose share among "
            "the removed rows of a class differs most from their share among its kept rows. A different "
            "question from 'Label-revealing words' (does a token predict its label over all rows?): here, what "
            "did the rows AFLite removed have that the kept rows of the same class lack?"
        )
    else:
        sources = compute.feature_sources(v.data)
        default = (
            "table"
            if "table" in sources
            else (v.representation if v.representation in sources else next(iter(sources)))
        )
        c1, c2 = st.columns(2)
        source = c1.selectbox(
            "Features compared",
            list(sources),
            format_func=sources.get,
            index=list(sources).index(default),
            key=f"inspect-source-{v.dspec.key}",
            persist_state="page",  # kept while another tab is open
            help="This dataset has no text; compare its numeric features instead.",
        )
        grid = compute.pixel_grid(v.data, source)
        request = inspect_artifacts.ArtifactRequest(
            v.ref,
            "feature",
            source,
            top_k=grid[0] * grid[1] if grid else 10,
            max_rows=inspect_artifacts.ARTIFACT_SAMPLE_ROWS,
        )
        kind, where = "feature", sources[source]
    art = _artifact_table(v, request)
    if art is None:
        return
    present = [c for c in compute.class_names(v.data) if (art["label"].astype(str) == c).any()] if len(art) else []
    if not present:
        st.info(
            "No "
            + ("token appears often enough" if kind == "token" else "feature separates the rows")
            + " within a class that has both removed and kept rows."
        )
        return
    slot = c2 if kind == "feature" else st.columns(2)[0]
    label = slot.selectbox("Class", present, key=f"inspect-art-class-{v.dspec.key}", persist_state="page")
    cls = ui.md(label)  # in the captions
    if kind == "feature" and grid is not None:
        plotly_once.plotly_chart(
            charts.pixel_artifact_chart(art, label, grid), width="stretch", key="inspect-pixel-chart"
        )
        ui.caption(
            f"Class {cls}: the average image of the rows AFLite kept (left) and removed (middle), and for "
            "each pixel the AUC of telling a removed row from a kept one by that pixel alone (right; 0.5 = "
            "no difference). Vermillion pixels are inked more among removed rows, blue ones among kept "
            "rows: the pixel patterns that made rows easy for AFLite's models."
        )
    plotly_once.plotly_chart(
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
        sampled = inspect_artifacts.artifact_sample_text(art)
        if sampled:
            st.caption(ui.message(sampled))
    with st.expander("Full table (all classes)"):
        st.dataframe(art, hide_index=True, width="stretch")


# -- classes -------------------------------------------------------------------------------------------------
def classes_tab(v: InspectView) -> None:
    """The tab "Classes": what the run did to each class."""
    with ui.errors():
        impact = compute.inspect_class_impact(v.ref, v.result, session=v.session)
    for msg in impact.loc[impact["warning"], "message"]:
        st.warning(ui.message(msg) + " The filtered set may be too small in this class to train or evaluate on.")
    plotly_once.plotly_chart(charts.class_status_chart(impact), width="stretch", key="inspect-class-chart")
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
def stability_tab(v: InspectView) -> None:
    """The tab "Stability across seeds" (the Filter page's run only)."""
    if v.ref.spec is None:
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
            max_value=inspect_stability.MAX_STABILITY_SEEDS,
            value=5,
            step=1,
            key=INSPECT_N_SEEDS,
            persist_state="page",  # kept while another tab is open: the rows table reads it
            help="This run's seed and the next ones.",
        )
        missing = inspect_stability.missing_stability_runs(v.ref.spec, int(n_seeds), session=v.session)
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
            request = inspect_stability.StabilityRequest(v.ref.spec, int(n_seeds))
            outcome = ui.run_in_background(
                (INSPECT_PAGE, "stability_run"),
                request,
                lambda s: inspect_stability.prepare_stability(s, session=v.session),
                inspect_stability.describe_stability(request, session=v.session),
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
                finished = inspect_stability.finished_stability_specs(v.ref.spec, int(n_seeds), session=v.session)
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
                _freq, summary, counts = inspect_stability.inspect_stability(
                    v.ref.spec, int(n_seeds), only_finished, session=v.session
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
            plotly_once.plotly_chart(
                charts.stability_chart(counts, summary["n_runs"]), width="stretch", key="inspect-stab-chart"
            )
            ui.caption(
                f"Seeds {', '.join(map(str, summary['seeds']))}: how many rows (y) were removed by 0, 1, … "
                f"{summary['n_runs']} of the runs (x), split by what this run did (vermillion: removed here, "
                "blue: kept here). A tall right-most vermillion bar means this run's removals are robust; the "
                "Rows tab shows each row's share in the column 'removed by seeds'."
            )


# -- downloads and opening a run ------------------------------------------------------------------------------
def downloads_tab(v: InspectView) -> None:
    """The tab "Download / open a run"."""
    st.markdown(
        f"**Download** the filtered dataset ({v.result.n_kept:,} kept rows), the {v.result.n_removed:,} removed "
        "rows, or the whole run record."
    )
    run_tag = "opened" if v.which == "loaded" else f"seed{v.result.params.get('seed', 0)}"
    stem = f"aflite-{v.data.name}-{run_tag}"
    d1, d2, d3, d4 = st.columns(4)
    # the files are built only when a button is clicked (callables), from this run and dataset
    d1.download_button(
        "Kept rows · CSV",
        lambda: compute.download_bytes(v.result, v.data, "kept", "csv"),
        file_name=f"{stem}-kept.csv",
        mime="text/csv",
        on_click="ignore",
        key="inspect-dl-kept-csv",
        help=f"The {v.result.n_kept:,} kept rows with every original column plus aflite_* columns.",
    )
    d2.download_button(
        "Kept rows · Parquet",
        lambda: compute.download_bytes(v.result, v.data, "kept", "parquet"),
        file_name=f"{stem}-kept.parquet",
        mime="application/vnd.apache.parquet",
        on_click="ignore",
        key="inspect-dl-kept-parquet",
        help="The same kept rows as Parquet (types preserved).",
    )
    d3.download_button(
        "Removed rows · CSV",
        lambda: compute.download_bytes(v.result, v.data, "removed", "csv"),
        file_name=f"{stem}-removed.csv",
        mime="text/csv",
        on_click="ignore",
        key="inspect-dl-removed-csv",
        help=f"The {v.result.n_removed:,} removed rows with the round and score of their removal.",
    )
    d4.download_button(
        "Run record · zip",
        lambda: compute.run_zip_bytes(v.result),
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
        lambda: compute.provenance_zip_bytes(v.result, v.data, v.representation),
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
    open_run_panel(ui.dataset_label(v.dspec.key), v.session)
    if v.loaded is not None:
        st.caption(
            f"Opened: '{v.loaded['name']}' ({v.loaded['result'].n_rows:,} rows, {v.loaded['result'].n_rounds} "
            f"rounds). It stays in this session until you close it."
        )
        st.button(
            "Close the opened run",
            on_click=state.forget_inspect_run,
            args=(st.session_state,),
            key="inspect-forget",
        )
