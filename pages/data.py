import streamlit as st

from aflite_app import state, ui
from aflite_app.charts import data as charts
from aflite_app.compute import datasets, rundirs, uploads
from aflite_app.state import BUNDLED, DATASET, RUN_DIR, RUN_DIRS, RUN_ERROR, RUN_FEATURES_FILE, RUN_LABELS_FILE, UPLOADS

ui.page_guard()  # a direct link on a fresh server runs inside the app

st.title("Data")
st.caption(
    "Choose what AFLite filters: a bundled dataset, or your own table with labels and features. The "
    "dataset you pick here is the one in the sidebar, used by every page."
)


current = st.session_state.get(DATASET)
bundled_tab, upload_tab, run_tab = st.tabs(["Bundled datasets", "Upload your own", "Open a run directory"])

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
                st.plotly_chart(
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
        st.subheader("Uploaded in this session")
        for key, data in session_uploads.items():
            left, right = st.columns([4, 1])
            left.markdown(
                f"**{data.name}** — {data.n_rows:,} rows, {data.n_classes} classes, representations: "
                + ", ".join(data.representations)
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
    st.session_state[RUN_ERROR] = None
    try:
        opened = rundirs.open_run_directory(
            st.session_state.get(RUN_DIR) or "", _upload(RUN_FEATURES_FILE), _upload(RUN_LABELS_FILE)
        )
    except (ValueError, TypeError, OSError) as exc:
        st.session_state[RUN_ERROR] = str(exc).strip().splitlines()[0] if str(exc).strip() else "It cannot be opened."
        return
    except Exception:  # never a traceback in the browser, whatever the folder holds
        st.session_state[RUN_ERROR] = "This run directory cannot be opened: one of its files is damaged."
        return
    state.register_run_directory(st.session_state, *opened)


with run_tab:
    root = rundirs.run_root_folder()
    st.markdown(
        "Open a run made with the command line — for example on a cluster: `python -m aflite_core filter ... "
        "--out RUN_DIR` — and look at it on every page. The app opens runs only below its **run root** "
        f"(`{rundirs.RUN_ROOT_ENV}`, here the folder `{root.name}`): save runs there, or start the app with "
        f"`{rundirs.RUN_ROOT_ENV}=/path/to/runs`. The run's features are memory-mapped when they lie below the "
        "run root too, so even very large runs open quickly (the embedding map then works on a sample)."
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
        with st.expander("Its features or labels are not below the run root? Upload the ones it was run on"):
            st.file_uploader("Features (.npy)", type=["npy"], key=RUN_FEATURES_FILE)
            st.file_uploader("Labels (.npy, .txt, .csv, .tsv)", type=["npy", "txt", "csv", "tsv"], key=RUN_LABELS_FILE)
        st.button("Open run", key="open-run", on_click=_open_run, type="primary")
    if st.session_state.get(RUN_ERROR):
        st.error(st.session_state[RUN_ERROR])
    for key, entry in st.session_state.get(RUN_DIRS, {}).items():
        result = entry["result"]
        with st.container(border=True):
            st.markdown(
                f"**{datasets.dataset(key).name}** — {result.n_rows:,} rows, {result.n_rounds} rounds, "
                f"kept {result.n_kept:,}. {result.stop_message}"
            )
            if key == st.session_state.get(DATASET):
                st.caption("This is the dataset and run every page shows now.")
            else:
                st.button(
                    "Show this run",
                    key=f"show-{key}",
                    on_click=state.register_run_directory,
                    args=(st.session_state, key, datasets.dataset(key), entry["spec"], result),
                )


# (the upload tab comes last in the code: it stops the script until a file is uploaded)
with upload_tab:
    limit_bytes, max_rows = uploads.upload_limits()
    st.markdown(
        "Upload a table with **one row per example** and a label column, and give AFLite features Φ(X) in one of "
        "three ways: aligned **.npy** feature files (row i describes row i of the table; one representation each), "
        "**numeric columns** of "
        "the table, or **TF-IDF features** built here from text columns (with a sentence pair also a "
        f"hypothesis-only view). Files up to {limit_bytes // 2**20} MB and {max_rows:,} rows; larger data "
        "goes through the command line (`python -m aflite_core filter ...`). Files are parsed safely (never "
        "unpickled)."
    )
    u1, u2 = st.columns(2)
    table_file = u1.file_uploader(
        "Table (CSV, TSV, Parquet or JSON Lines)", type=list(uploads.UPLOAD_TABLE_TYPES), key="upload-table"
    )
    feature_files = u2.file_uploader(
        "Features (optional .npy files, one row per table row)",
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

    st.markdown(f"**{table_file.name}**: {len(frame):,} rows, {len(columns)} columns.")
    c1, c2 = st.columns(2)
    label_column = c1.selectbox("Label column", columns, index=columns.index(guess["label"]), key=f"up-label-{tag}")
    others = [c for c in columns if c != label_column]
    id_choice = c2.selectbox(
        "Id column (optional, unique values)",
        ["(row position)", *others],
        index=1 + others.index(guess["id"]) if guess["id"] in others else 0,
        key=f"up-id-{tag}",
    )
    id_column = None if id_choice == "(row position)" else id_choice
    free = [c for c in others if c != id_column]
    is_pair = st.checkbox(
        "Sentence pair (premise / hypothesis), e.g. NLI",
        value=guess["pair"] is not None,
        key=f"up-pair-{tag}",
        disabled=len(free) < 2,
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
        "Text columns (shown on the Inspect page; TF-IDF uses them)",
        text_choices,
        default=[c for c in guess["texts"] if c in text_choices],
        key=f"up-text-{tag}",
    )
    has_text = bool(text_columns or pair)
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
        "features or numeric columns are given.",
    )
    partial_columns: list[str] = []
    if has_text and len(text_columns) + (2 if pair else 0) > 1:
        partial_columns = st.multiselect(
            "Extra partial-input view: TF-IDF of only these text columns (optional)",
            [*text_columns, *(pair or ())],
            key=f"up-partial-{tag}",
            help="A representation that sees only part of the input, for the Baselines page.",
        )

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
        table_bytes, table_file.name, options, [(f.name, f.getvalue()) for f in feature_files or []]
    )
    if not outcome.ok:
        st.error(outcome.error)
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
        st.plotly_chart(charts.class_count_chart(data.class_counts()), width="stretch", key="up-classes")
        ui.caption(f"Rows per class in '{label_column}'. AFLite needs at least 2 rows in every class.")
    with right:
        st.dataframe(datasets.representation_table(data), hide_index=True, width="stretch")
        ui.caption("The representations Φ(X) AFLite can filter with (chosen in the sidebar once in use).")
    if outcome.seconds > 0.5:
        st.caption(f"Built in {outcome.seconds:.1f} s.")
