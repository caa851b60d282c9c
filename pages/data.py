import streamlit as st

from aflite_app import data_tabs, plotly_once, state, ui
from aflite_app.charts import data as charts
from aflite_app.compute import datasets, upload_sentences, uploads
from aflite_app.state import DATA_PAGE, DATASET, UPLOADS

ui.page_guard()  # a direct link on a fresh server runs inside the app
session_data = ui.session_data()  # this session's uploads and opened runs: every compute call gets them

st.title("Data")
st.caption(
    "Choose what AFLite filters: a bundled dataset, SNLI or MultiNLI fetched by name, or your own table with "
    "labels and features. The dataset you pick here is the one in the sidebar, used by every page."
)


def _start_embedding(espec) -> None:
    """'Start embedding' (and 'Embed again'): ask for this table's embeddings; a finished wait is dropped first."""
    data_tabs.forget_finished("embed_run")
    state.page_state(st.session_state, DATA_PAGE)["embed_request"] = espec


current = st.session_state.get(DATASET)
bundled_tab, nli_tab, upload_tab, run_tab, art_tab = st.tabs(
    ["Bundled datasets", "SNLI / MultiNLI by name", "Upload your own", "Open a run directory", "Label-revealing words"]
)
# the groups panel of the dataset in use sits under the tabs (after the upload form and the dataset cards), in a
# container of its own: what it shows comes and goes (the premise checkbox of a pair dataset, the duplicates' finding)
# and an element more or less above the tabs would redraw them on the first one. It is drawn before the upload tab's
# code, which stops the script until a file is uploaded.
groups_box = st.container(border=True)

with bundled_tab:
    data_tabs.bundled_tab(current)
with run_tab:
    data_tabs.run_directory_tab(session_data)
with art_tab:
    data_tabs.words_tab(session_data)
with nli_tab:
    data_tabs.nli_tab(current)
with groups_box:
    data_tabs.groups_panel(session_data)

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
        on_change=data_tabs.forget_finished,
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
