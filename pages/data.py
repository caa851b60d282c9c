import streamlit as st

from aflite_app import plotly_once, state, ui
from aflite_app.charts import data as charts
from aflite_app.compute import datasets, rundirs, upload_sentences, uploads
from aflite_app.state import BUNDLED, DATA_PAGE, DATASET, RUN_DIR, RUN_DIRS, RUN_FEATURES_FILE, RUN_LABELS_FILE, UPLOADS

ui.page_guard()  # a direct link on a fresh server runs inside the app
session_data = ui.session_data()  # this session's uploads and opened runs: every compute call gets them

st.title("Data")
st.caption(
    "Choose what AFLite filters: a bundled dataset, SNLI or MultiNLI fetched by name, or your own table with "
    "labels and features. The dataset you pick here is the one in the sidebar, used by every page."
)

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


def _start_embedding(espec) -> None:
    """'Start embedding' (and 'Embed again'): ask for this table's embeddings; a finished wait is dropped first."""
    _forget_finished("embed_run")
    state.page_state(st.session_state, DATA_PAGE)["embed_request"] = espec


def _forget_finished(entry: str) -> None:
    """Widget callback: drop a finished background wait, so asking again starts afresh (e.g. after Stop)."""
    page = state.page_state(st.session_state, DATA_PAGE)
    run = page.get(entry)
    if run is not None and run.done:
        del page[entry]


def _groups_panel() -> None:
    """Issue 28: what Filter runs on the current dataset keep together - its premise groups, its duplicates."""
    gspec, gdata = ui.current_dataset()
    page = state.page_state(st.session_state, DATA_PAGE)
    line = datasets.groups_sentence(gdata)
    if line is not None:
        keep = st.checkbox(
            "Keep each premise's hypotheses together", value=page.get("keep_premise", True), key="data-keep-premise"
        )
        page["keep_premise"] = keep
        if keep:
            ui.caption(line)
    found = ui.run_in_background(
        (DATA_PAGE, "dup_run"),
        gspec,
        lambda spec: datasets.prepare_duplicates(spec, session=session_data),
        datasets.describe_duplicates,
        stop_key="dup-stop",
        stop_help="Stop looking for duplicate rows",
        stopping="Stopping…",
        block=False,
    )
    if found is not None and found.ok and found.value.n_with_duplicate:
        st.warning(ui.message(found.value.message()))
        chosen = page.setdefault("group_duplicates", set())
        on = st.checkbox(
            "Group the duplicates in the run", value=gspec.key in chosen, key=f"data-group-dups-{gspec.key}"
        )
        (chosen.add if on else chosen.discard)(gspec.key)


current = st.session_state.get(DATASET)
_groups_panel()
bundled_tab, nli_tab, upload_tab, run_tab, art_tab = st.tabs(
    ["Bundled datasets", "SNLI / MultiNLI by name", "Upload your own", "Open a run directory", "Label-revealing words"]
)

with bundled_tab:
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


with run_tab:
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


with art_tab:
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
        a1, a2, a3 = st.columns([2, 1, 1])
        art_source = a1.selectbox(
            "Tokens of",
            list(art_choices),
            format_func=art_choices.get,
            key=f"data-art-source-{art_spec.key}",
            help="Annotation artifacts of NLI live in the hypothesis, which annotators wrote.",
        )
        art_min = a2.number_input(
            "Test tokens in at least … texts",
            min_value=2,
            max_value=100_000,
            value=10,
            step=5,
            key="data-art-min",
            help="Rarer tokens are not tested (and could not reach significance anyway).",
        )
        art_alpha = a3.selectbox(
            "Significance level α", [0.05, 0.01, 0.001], index=1, key="data-art-alpha", help="Family-wise."
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
            plotly_once.plotly_chart(charts.artifact_statistics_chart(art_stats), width="stretch", key="data-art-chart")
            ui.caption(
                "Each point is a (token, label) pair: x = n, the texts containing the token (log scale); y = p̂, the "
                "share of them with that label; colour = label. Above the dashed curve a pair is significant (large, "
                "outlined points; the strongest are named); the dotted line is 1/|Y|, what a token that says nothing "
                "gives. z grows with n, so a frequent word can be significant with p̂ only a little above 1/|Y| "
                "(e.g. 'for' → neutral in SNLI): read p̂ next to z. Hover for example texts."
            )
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
    _forget_finished("nli_run")


with nli_tab:
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


# (the upload tab comes last in the code: it stops the script until a file is uploaded)
with upload_tab:
    limit_bytes, max_rows = uploads.upload_limits()
    st.markdown(
        "Upload a table with **one row per example** and a label column, and give AFLite features Φ(X) in one of "
        "four ways: aligned **.npy** feature files (row i describes row i of the table; one representation each), "
        "**numeric columns** of the table, **sentence embeddings** of its text columns computed here (with the "
        "optional embeddings extra), or **TF-IDF features** built here from text columns (with a sentence pair "
        f"also a hypothesis-only view). Files up to {limit_bytes // 2**20} MB and {max_rows:,} rows; larger data "
        "goes through the command line (`python -m aflite_core filter ...`). Files are parsed safely (never "
        "unpickled)."
    )
    u1, u2 = st.columns(2)
    table_file = u1.file_uploader(
        "Table (CSV, TSV, Parquet or JSON Lines)", type=list(uploads.UPLOAD_TABLE_TYPES), key="upload-table"
    )
    feature_files = u2.file_uploader(
        uploads.FEATURES_FIELD,
        type=["npy"],
        key="upload-features",
        accept_multiple_files=True,
        help="Each file becomes one representation, named after the file (e.g. "
        "'snli.hyp_minilm.npy' next to 'snli.jsonl' gives 'hyp_minilm'). A "
        "hypothesis-only file is offered as the partial input on Baselines.",
    )
    if table_file is None:
        st.info("Choose a table file to see its columns and a preview.")
        st.stop()

    table_bytes = table_file.getvalue()
    with ui.errors():
        frame = uploads.upload_table(table_bytes, table_file.name)
    guess = uploads.guess_columns(frame)
    tag = uploads.content_tag(table_bytes)  # new file, fresh choices
    columns = [str(c) for c in frame.columns]

    st.markdown(f"**{ui.md(table_file.name)}**: {len(frame):,} rows, {len(columns)} columns.")
    c1, c2 = st.columns(2)
    label_column = c1.selectbox(
        uploads.LABEL_FIELD,
        columns,
        index=columns.index(guess["label"]) if guess["label"] is not None else None,
        placeholder="Choose the column that holds each row's class",
        key=f"up-label-{tag}",
    )
    if label_column is None:
        c1.warning(
            f"No column of '{ui.md(table_file.name)}' looks like a label: none is named like one (label, gold_label, "
            "class …) and none has a few values shared by many rows. AFLite needs the class of every row: choose "
            f"the column that holds it in '{uploads.LABEL_FIELD}', or add one to the file."
        )
    others = [c for c in columns if c != label_column]
    id_choice = c2.selectbox(
        "Id column (optional, unique values)",
        ["(row position)", *others],
        index=1 + others.index(guess["id"]) if guess["id"] in others else 0,
        key=f"up-id-{tag}",
    )
    for col, why in guess["id_refused"].items():
        if col != label_column:
            c2.caption(
                f"Not used as the id: {ui.message(why)}, so it cannot tell every row apart. Rows are identified by "
                "their position (0, 1, 2, …) instead; fill in the ids in the file, or choose another column here."
            )
    if label_column is None:
        st.stop()
    id_column = None if id_choice == "(row position)" else id_choice
    free = [c for c in others if c != id_column]
    is_pair = st.checkbox(
        "Sentence pair (premise / hypothesis), e.g. NLI",
        value=guess["pair"] is not None,
        key=f"up-pair-{tag}",
        disabled=len(free) < 2,
        help=None if len(free) >= 2 else "Needs two text columns besides the label and the id.",
    )
    pair = None
    if is_pair and len(free) >= 2:
        p1, p2 = st.columns(2)
        g = guess["pair"] or (free[0], free[1])
        premise = p1.selectbox(
            "Premise column", free, index=free.index(g[0]) if g[0] in free else 0, key=f"up-premise-{tag}"
        )
        rest = [c for c in free if c != premise]
        hypothesis = p2.selectbox(
            "Hypothesis column", rest, index=rest.index(g[1]) if g[1] in rest else 0, key=f"up-hyp-{tag}"
        )
        pair = (premise, hypothesis)
    text_choices = [c for c in free if not pair or c not in pair]
    text_columns = st.multiselect(
        "Text columns (shown on the Inspect page; TF-IDF and embeddings use them)",
        text_choices,
        default=[c for c in guess["texts"] if c in text_choices],
        key=f"up-text-{tag}",
    )
    has_text = bool(text_columns or pair)

    # sentence embeddings (the optional extra): computed in a background job, cached on disk by content
    emb_status = upload_sentences.embeddings_status()
    views = upload_sentences.embedding_views(pair, tuple(text_columns))
    espec = None
    if emb_status.available and views:
        espec = upload_sentences.embedding_spec(table_bytes, table_file.name, views)
    outlook = upload_sentences.embedding_outlook(frame, espec) if espec is not None else {}
    asked = espec is not None and state.page_state(st.session_state, DATA_PAGE).get("embed_request") == espec
    # sentence embeddings run only on an explicit Start (issue 29 item 5), on the checkbox's row; their progress and
    # Stop appear right under it (the page stops below them while they run), within the first screen at 1,500 px
    row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    embed = row.checkbox(
        "Sentence embeddings (all-MiniLM-L6-v2) of "
        + (
            f"the full pair and of '{ui.md(pair[1])}' alone (the partial input)"
            if pair
            else (", ".join(f"'{ui.md(c)}'" for c in text_columns) if text_columns else "the text columns")
        ),
        value=False,
        key=f"up-emb-{tag}",
        disabled=not emb_status.available or not views,
        on_change=_forget_finished,
        args=("embed_run",),
        width="stretch",  # its long label wraps on a phone (a content-width label is cut)
        help="384-d embeddings from a small sentence encoder, computed on this machine (no network). A stronger "
        "representation than TF-IDF: AFLite's models find more of the bias with it.",
    )
    embedded = None
    if embed and espec is not None:
        if outlook["refusal"]:
            st.error(ui.message(outlook["refusal"]))
            st.stop()
        if outlook["seconds"] and not asked:
            row.button("Start embedding", type="primary", key="up-emb-start", on_click=_start_embedding, args=(espec,))
        else:  # asked for, or already computed (read from the cache: no wait)
            emb_outcome = ui.run_in_background(
                (DATA_PAGE, "embed_run"),
                espec,
                lambda s: upload_sentences.prepare_embedding(s, frame),
                upload_sentences.describe_embedding,
                stop_key="up-emb-stop",
                stop_help="Stop embedding after the current chunk (what is finished stays cached).",
                stopping="Stopping after the current chunk…",
            )
            if not emb_outcome.ok:
                if emb_outcome.stopped:
                    st.info("Embedding was stopped; the views finished before it stopped are kept on disk.")
                else:
                    st.error(ui.message(emb_outcome.error))
                st.button("Embed again", key="up-emb-again", on_click=_start_embedding, args=(espec,))
                st.stop()
            embedded = (espec, emb_outcome.value)
    if not emb_status.available:
        st.caption(f"Needs the optional embeddings extra, which is not installed here: `{emb_status.install_command}`")
    elif not views:
        st.caption("Choose text columns (or a sentence pair) to embed.")
    elif outlook["refusal"]:
        st.warning(ui.message(outlook["refusal"]))
    elif not outlook["seconds"]:
        st.caption("Already computed: read from the server's embedding cache, no waiting.")
    elif embedded is None:
        st.caption(upload_sentences.embedding_caption(outlook, len(views), len(frame)))

    numeric = [c for c in guess["numeric"] if c in free]
    f1, f2 = st.columns(2)
    feature_columns = f1.multiselect(
        "Numeric feature columns (one representation)",
        numeric,
        default=numeric if (not feature_files and not has_text) else [],
        key=f"up-num-{tag}-{len(feature_files or [])}",
    )
    text_features = f2.checkbox(
        "Build TF-IDF features from the text" + (" (+ hypothesis-only partial input)" if pair else ""),
        value=has_text and not feature_files and not feature_columns,
        disabled=not has_text,
        key=f"up-tfidf-{tag}-{len(feature_files or [])}-{len(feature_columns)}",
        help="TF-IDF of each text column, reduced to 128 dimensions by a seeded SVD. Off by default when .npy "
        "features or numeric columns are given. It may be on together with sentence embeddings: each becomes "
        "its own representation, chosen in the sidebar.",
    )
    partial_columns: list[str] = []
    if has_text and len(text_columns) + (2 if pair else 0) > 1:
        partial_columns = st.multiselect(
            "Extra partial-input view: TF-IDF of only these text columns (optional)",
            [*text_columns, *(pair or ())],
            key=f"up-partial-{tag}",
            help="A representation that sees only part of the input, for the Baselines page.",
        )

    if embed and embedded is None:  # ticked, not started: the dataset would come without them
        st.info("Press 'Start embedding' above to add the sentence embeddings, or untick them to use the dataset now.")
        st.stop()

    options = uploads.UploadOptions(
        label_column=label_column,
        id_column=id_column,
        text_columns=tuple(text_columns),
        pair=pair,
        feature_columns=tuple(feature_columns),
        text_features=bool(text_features and has_text),
        partial_columns=tuple(partial_columns),
    )
    outcome = uploads.load_upload(
        table_bytes,
        table_file.name,
        options,
        [(f.name, f.getvalue()) for f in feature_files or []],
        embedded=embedded,
    )
    if not outcome.ok:
        st.error(ui.message(outcome.error))
        st.stop()

    data = outcome.dataset
    registered = outcome.key in st.session_state.get(UPLOADS, {})
    b1, b2 = st.columns([1, 3])
    if registered and current == outcome.key:
        b1.success("In use")
        b2.page_link("pages/filter.py", label="Filter it now")
    else:
        b1.button(
            "Use this dataset",
            type="primary",
            key="use-upload",
            on_click=state.register_upload,
            args=(st.session_state, outcome.key, data),
        )
        b2.caption("Adds it to the sidebar's dataset list and selects it for every page.")

    st.subheader("Preview")
    m1, m2, m3 = st.columns(3)
    m1.metric("Rows", f"{data.n_rows:,}")
    m2.metric("Classes", f"{data.n_classes}")
    m3.metric("Representations", f"{len(data.representations)}")
    st.dataframe(data.frame.head(20), width="stretch")
    ui.caption("The first 20 rows, every column as read from the file.")
    left, right = st.columns(2)
    with left:
        plotly_once.plotly_chart(charts.class_count_chart(data.class_counts()), width="stretch", key="up-classes")
        ui.caption(f"Rows per class in '{ui.md(label_column)}'. AFLite needs at least 2 rows in every class.")
    with right:
        st.dataframe(datasets.representation_table(data), hide_index=True, width="stretch")
        ui.caption("The representations Φ(X) AFLite can filter with (chosen in the sidebar once in use).")
    if outcome.seconds > 0.5:
        st.caption(f"Built in {outcome.seconds:.1f} s.")
