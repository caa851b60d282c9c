"""The Data page's tabs other than the upload: their drawing code, so the page stays thin.

Each function draws one part of :mod:`pages.data` - the duplicate and premise groups panel, "Bundled datasets",
"SNLI / MultiNLI by name", "Open a run directory" and "Label-revealing words" - with the widget callbacks they
use. The page passes this session's data (``session_data``) and the dataset in use (``current``); widget keys and
messages are those the page had.
"""

from __future__ import annotations

import streamlit as st

from . import inspect_tabs, plotly_once, state, ui
from .charts import data as charts
from .compute import datasets, rundirs, uploads
from .specs import SessionData
from .state import BUNDLED, DATA_PAGE, DATASET, RUN_DIR, RUN_DIRS, RUN_FEATURES_FILE, RUN_LABELS_FILE, UPLOADS

__all__ = ["ART_COLUMNS", "bundled_tab", "forget_finished", "groups_panel", "nli_tab", "run_directory_tab", "words_tab"]

#: how the token statistics' table names its columns (Data and Inspect pages)
ART_COLUMNS = {
    "token": st.column_config.TextColumn("token", width="small"),
    "label": st.column_config.TextColumn("label", width="medium"),
    "count": st.column_config.NumberColumn("n (texts with it)", format="%d", help="Texts containing the token."),
    "label_count": st.column_config.NumberColumn("with this label", format="%d"),
    "p_hat": st.column_config.NumberColumn(
        "p̂(label | token)", format="%.2f", help="Share of the texts with the token that have this label."
    ),
    "z": st.column_config.NumberColumn(
        "z", format="%.2f", help="(p̂ − 1/|Y|) / sqrt((1/|Y|)(1 − 1/|Y|)/n): grows with n, so read it next to p̂."
    ),
    "significant": st.column_config.CheckboxColumn("significant", help="z above the Bonferroni threshold z*."),
    "pmi": st.column_config.NumberColumn(
        "PMI", format="%.2f", help="log p(label | token) / p(label), smoothed (the Max-PPMI baseline's score)."
    ),
    "example": st.column_config.TextColumn("example text", width="large"),
}


def forget_finished(entry: str) -> None:
    """Widget callback: drop a finished background wait, so asking again starts afresh (e.g. after Stop)."""
    page = state.page_state(st.session_state, DATA_PAGE)
    run = page.get(entry)
    if run is not None and run.done:
        del page[entry]


def groups_panel(session_data: SessionData) -> None:
    """Issue 28: what Filter runs on the current dataset keep together - its premise groups, its duplicates.

    Up to the interactive size the duplicate search is awaited here, before the panel's widgets draw
    (:func:`~aflite_app.compute.datasets.duplicates_now`): the finding comes with the run that searched, and no
    progress fragment reruns the page when the search ends - a rerun that could swallow a click made meanwhile.
    Above it the search is a heavy background job that starts when asked.
    """
    gspec, gdata = ui.current_dataset()
    page = state.page_state(st.session_state, DATA_PAGE)
    st.markdown(f"**Rows kept together in Filter runs on {ui.md(gdata.name)}**")
    line = datasets.groups_sentence(gdata)
    if line is not None:
        keep = st.checkbox(
            "Keep each premise's hypotheses together", value=page.get("keep_premise", True), key="data-keep-premise"
        )
        page["keep_premise"] = keep
        if keep:
            ui.caption(line)
    if not datasets.duplicates_on_request(gdata):
        with st.spinner("Looking for exact and near-duplicate rows…"):
            found = datasets.duplicates_now(gspec, session=session_data)
    else:
        found = _duplicates_on_request(gspec, gdata, page, session_data)
    if found is not None and found.error is not None:
        st.error(ui.message(found.error))
    elif found is not None and found.ok and found.value.n_with_duplicate:
        st.warning(ui.message(found.value.message()))
        chosen = page.setdefault("group_duplicates", set())
        on = st.checkbox(
            "Group the duplicates in the run", value=gspec.key in chosen, key=f"data-group-dups-{gspec.key}"
        )
        (chosen.add if on else chosen.discard)(gspec.key)
    elif found is not None and found.ok:
        ui.caption(found.value.message())


def _duplicates_on_request(gspec, gdata, page: dict, session_data: SessionData):
    """Above the interactive size: a button starts the search, a heavy background job (None until it is done)."""
    asked = page.setdefault("dup_asked", set())
    run = page.get("dup_run")
    if gspec.key not in asked and (run is None or run.key != gspec) and datasets.stored_duplicates(gspec) is None:
        if st.button(
            f"Look for duplicate rows ({gdata.n_rows:,} rows; a background job that waits its turn)",
            key="data-dup-start",
        ):
            asked.add(gspec.key)
            st.rerun()
        return None
    return ui.run_in_background(
        (DATA_PAGE, "dup_run"),
        gspec,
        lambda spec: datasets.prepare_duplicates(spec, session=session_data),
        datasets.describe_duplicates,
        stop_key="dup-stop",
        stop_help="Stop looking for duplicate rows",
        stopping="Stopping…",
        block=False,
    )


def bundled_tab(current: str | None) -> None:
    """The tab "Bundled datasets" (and this session's uploads): each with its description, counts and Use button."""
    for key, label in BUNDLED.items():
        with st.container(border=True), ui.errors():
            data = datasets.bundled_dataset(key)
            head, button = st.columns([4, 1])
            head.subheader(label)
            if key == current:
                button.success("In use")
            else:
                button.button(
                    "Use this dataset", key=f"use-{key}", on_click=state.select_dataset, args=(st.session_state, key)
                )
            st.markdown(data.description)
            counts = data.class_counts()
            st.caption(
                f"{data.n_rows:,} rows · {data.n_classes} classes ("
                + ", ".join(f"{c}: {n:,}" for c, n in counts.items())
                + ")"
                + (
                    f" · planted truth columns: {', '.join(data.meta['planted_truth'])}"
                    if data.meta.get("planted_truth")
                    else ""
                )
            )
            st.dataframe(datasets.representation_table(data), hide_index=True, width="stretch")
            if data.images is not None:
                plotly_once.plotly_chart(
                    charts.sample_grid(data.images, data.y, data.classes, per_class=12),
                    width="stretch",
                    key=f"grid-{key}",
                )
                ui.caption(
                    f"Twelve randomly chosen images of each class ({data.images.shape[1]}×"
                    f"{data.images.shape[2]} pixels, darker = more ink), as AFLite sees them before any "
                    "representation is computed."
                )
    session_uploads = st.session_state.get(UPLOADS, {})
    if session_uploads:
        st.subheader("Uploaded or fetched in this session")
        for key, data in session_uploads.items():
            left, right = st.columns([4, 1])
            left.markdown(
                f"**{ui.md(data.name)}** — {data.n_rows:,} rows, {data.n_classes} classes, representations: "
                + ui.md(", ".join(data.representations))
            )
            if key == current:
                right.success("In use")
            else:
                right.button(
                    "Use this dataset", key=f"use-{key}", on_click=state.select_dataset, args=(st.session_state, key)
                )


def _upload(key: str):
    file = st.session_state.get(key)
    return None if file is None else (file.name, file.getvalue())


def _open_run() -> None:
    """Button callback: open the chosen run directory (before the sidebar renders, so it can select it)."""
    page = state.page_state(st.session_state, DATA_PAGE)
    page["run_error"] = None
    try:
        opened = rundirs.open_run_directory(
            st.session_state.get(RUN_DIR) or "", _upload(RUN_FEATURES_FILE), _upload(RUN_LABELS_FILE)
        )
    except (ValueError, TypeError, OSError) as exc:
        page["run_error"] = str(exc).strip().splitlines()[0] if str(exc).strip() else "It cannot be opened."
        return
    except Exception:  # never a traceback in the browser, whatever the folder holds
        page["run_error"] = "This run directory cannot be opened: one of its files is damaged."
        return
    state.register_run_directory(st.session_state, *opened)


def run_directory_tab(session_data: SessionData) -> None:
    """The tab "Open a run directory": the run root's runs, the optional uploads of their inputs, the opened runs."""
    root = rundirs.run_root_folder()
    st.markdown(
        "Open a run made with the command line — for example on a cluster: `python -m aflite_core filter ... "
        "--out RUN_DIR` — and look at it on every page. The app opens runs only below its **run root** "
        f"(`{rundirs.RUN_ROOT_ENV}`, here the folder `{root.name}`): save runs there, or start the app with "
        f"`{rundirs.RUN_ROOT_ENV}=/path/to/runs`. The run's features are memory-mapped when they lie below the "
        f"run root too, or below a folder the server lists in `{rundirs.DATA_ROOTS_ENV}`, so even very large runs "
        "open quickly (the embedding map then works on a sample). A run written with `--table T --id-column ID` "
        "opens with its table: its texts and metadata show on Inspect, under the map and in the exports."
    )
    run_dirs = rundirs.run_directories()
    if not run_dirs:
        st.info(
            f"No run directories below the run root yet. Write one there, e.g. `python -m aflite_core filter "
            f"... --out {root.name}/my-run --copy-inputs`, then reload this page."
        )
    else:
        st.selectbox(
            "Run directory (below the run root)",
            run_dirs,
            key=RUN_DIR,
            help="Folders below the run root that hold a result.json, found at most "
            f"{rundirs.RUN_ROOT_DEPTH} levels deep.",
        )
        with st.expander("Its features or labels are not below the run root or a data root? Upload them"):
            st.file_uploader("Features (.npy)", type=["npy"], key=RUN_FEATURES_FILE)
            st.file_uploader("Labels (.npy, .txt, .csv, .tsv)", type=["npy", "txt", "csv", "tsv"], key=RUN_LABELS_FILE)
        st.button("Open run", key="open-run", on_click=_open_run, type="primary")
    run_error = state.page_state(st.session_state, DATA_PAGE).get("run_error")
    if run_error:
        st.error(ui.message(run_error))
    for key, entry in st.session_state.get(RUN_DIRS, {}).items():
        result = entry["result"]
        run_data = datasets.dataset(key, session=session_data)
        with_table, table_refused = rundirs.table_summary(run_data)
        with st.container(border=True):
            st.markdown(
                f"**{ui.md(run_data.name)}** — {result.n_rows:,} rows, {result.n_rounds} rounds, "
                f"kept {result.n_kept:,}{', ' + ui.md(with_table) if with_table else ''}. {result.stop_message}"
            )
            if table_refused:
                st.warning(ui.message(table_refused))
            if key == st.session_state.get(DATASET):
                st.caption("This is the dataset and run every page shows now.")
            else:
                st.button(
                    "Show this run",
                    key=f"show-{key}",
                    on_click=state.register_run_directory,
                    args=(st.session_state, key, datasets.dataset(key, session=session_data), entry["spec"], result),
                )


def _art_started() -> set:
    """Datasets whose token statistics this session asked for (large ones wait for the button)."""
    return state.page_state(st.session_state, DATA_PAGE).setdefault("art_started", set())


def _start_art(key: str) -> None:
    _art_started().add(key)


def words_tab(session_data: SessionData) -> None:
    """The tab "Label-revealing words": the current dataset's token statistics (Gardner et al., 2021)."""
    art_spec, art_data = ui.current_dataset()
    art_name = ui.dataset_label(art_spec.key)
    st.markdown(
        "Which single words give the label away? Gardner et al. (2021) test every (token, label) pair: among "
        "the n texts containing the token, the share with the label, p̂(label | token), should be 1/|Y| if the "
        "token says nothing about the label. z = (p̂ − 1/|Y|) / sqrt((1/|Y|)(1 − 1/|Y|)/n) measures how far "
        "above, and a Bonferroni correction over all tests sets the threshold z*. Such tokens are the "
        "annotation artifacts AFLite should remove; after a Filter run, the Inspect page shows which it did."
    )
    art_choices = datasets.artifact_text_choices(art_data)
    if not art_choices:
        st.info(
            f"{ui.md(art_name)} has no text to count tokens in. Fetch SNLI or MultiNLI by name, or upload a table with "
            "text columns, and use it."
        )
    else:
        art_source, art_min, art_alpha = inspect_tabs.word_test_controls(
            art_choices, keys=(f"data-art-source-{art_spec.key}", "data-art-min", "data-art-alpha")
        )
        art_waits = datasets.artifact_statistics_wait(art_data) and art_spec.key not in _art_started()
        if art_waits:
            st.info(
                f"{ui.md(art_name)} has {art_data.n_rows:,} texts: testing every token against the labels takes "
                "several seconds at this size, so it starts when you ask."
            )
            st.button("Test the tokens", key=f"data-art-go-{art_spec.key}", on_click=_start_art, args=(art_spec.key,))
        else:
            with ui.errors():
                art_stats = datasets.artifact_statistics(
                    art_spec.key, art_source, min_count=int(art_min), alpha=float(art_alpha), session=session_data
                )
            st.markdown(
                f"**{ui.md(art_name)}**, tokens of {ui.md(art_choices[art_source])}: "
                + ui.message(datasets.artifact_summary(art_stats))
            )
            inspect_tabs.word_chart(art_stats, key="data-art-chart")
            art_every = st.toggle("Show every tested pair, not only the significant ones", key="data-art-every")
            st.dataframe(
                datasets.artifact_table(art_stats, every_pair=art_every),
                hide_index=True,
                width="stretch",
                column_config=ART_COLUMNS,
                height=360,
            )


def _request_nli() -> None:
    """Fetch button: remember what was asked for (the page fetches it in the background)."""
    name, split = st.session_state[state.NLI_WHICH]
    state.page_state(st.session_state, DATA_PAGE)["nli_request"] = datasets.NliSpec(
        name, split, int(st.session_state[state.NLI_ROWS]), int(st.session_state[state.NLI_SEED])
    )
    forget_finished("nli_run")


def nli_tab(current: str | None) -> None:
    """The tab "SNLI / MultiNLI by name": the fetch form, its background fetch and the fetched sample."""
    nli_max_rows = uploads.upload_limits()[1]  # the app's one row limit
    st.markdown(
        "Fetch **SNLI** (Bowman et al., 2015) or **MultiNLI** (Williams et al., 2018) by name with the optional "
        "`datasets` library. The first fetch of a split downloads it (SNLI: about 100 MB for all splits, "
        "MultiNLI: about 220 MB) into that library's cache; later fetches read the cache, also offline. Pairs "
        "without a gold label are dropped, a seeded random sample of at most the row cap is kept (in the "
        "original order), and TF-IDF features of the pair and of the hypothesis alone (the partial input) are "
        "built for it."
    )
    nli_missing = datasets.nli_unavailable()
    if nli_missing:
        st.warning(nli_missing)
    nli_local = datasets.nli_local_folder()
    if nli_local is not None:
        st.caption(f"Reading the server's local copy ({datasets.NLI_DATA_DIR_ENV}), not the Hugging Face Hub.")
    with st.form("nli-form", border=True):
        n1, n2, n3 = st.columns([2, 1, 1])
        n1.selectbox(
            "Dataset and split",
            [(name, split) for name in datasets.NLI_DATASETS for split in datasets.NLI_SPLITS[name]],
            index=1,
            format_func=lambda ns: f"{datasets.NLI_DATASETS[ns[0]]} · {ns[1]}",
            key=state.NLI_WHICH,
        )
        n2.number_input(
            "Row cap",
            min_value=min(100, nli_max_rows),
            max_value=nli_max_rows,
            value=min(datasets.DEFAULT_NLI_ROWS, nli_max_rows),
            step=1_000,
            key=state.NLI_ROWS,
            help=f"At most this many pairs are kept (the app works on up to {nli_max_rows:,} rows; "
            "SNLI's training split has 550k). Filter a whole split from the command line.",
        )
        n3.number_input("Seed of the sample", min_value=0, max_value=2**31 - 2, value=0, step=1, key=state.NLI_SEED)
        st.form_submit_button("Fetch", type="primary", disabled=bool(nli_missing), on_click=_request_nli)
    nli_spec = state.page_state(st.session_state, DATA_PAGE).get("nli_request")
    fetched = None
    if nli_spec is None:
        st.caption("Choose a dataset, a split and a row cap, then Fetch.")
    else:
        nli_outcome = ui.run_in_background(
            (DATA_PAGE, "nli_run"),
            nli_spec,
            datasets.prepare_nli_fetch,
            datasets.describe_nli_fetch,
            stop_key="nli-stop",
            stop_help="Stop the fetch after its current step.",
            stopping="Stopping after the current step…",
        )
        if nli_outcome.stopped:
            st.info(f"Fetching {nli_spec.label} was stopped. Fetch again to start over.")
        elif nli_outcome.error:
            st.error(ui.message(nli_outcome.error))
        else:
            fetched = nli_outcome.value
    if fetched is not None:
        with st.container(border=True):
            f1, f2 = st.columns([4, 1])
            f1.subheader(fetched.name)
            if nli_spec.key in st.session_state.get(UPLOADS, {}) and current == nli_spec.key:
                f2.success("In use")
                f1.page_link("pages/filter.py", label="Filter it now")
            else:
                f2.button(
                    "Use this dataset",
                    type="primary",
                    key="use-nli",
                    on_click=state.register_upload,
                    args=(st.session_state, nli_spec.key, fetched),
                )
            st.markdown(fetched.description)
            st.caption(
                f"{fetched.n_rows:,} rows · {fetched.n_classes} classes ("
                + ", ".join(f"{c}: {n:,}" for c, n in fetched.class_counts().items())
                + f") · source: {fetched.meta.get('source', fetched.name)}"
            )
            st.dataframe(datasets.representation_table(fetched), hide_index=True, width="stretch")
            st.dataframe(fetched.frame.head(20), width="stretch", key="nli-preview")
            ui.caption("The first 20 rows of the sample. The 'Label-revealing words' tab tests its hypotheses.")
