import streamlit as st

from aflite_app import ui
from aflite_app.charts import embedding as charts
from aflite_app.charts.theme import MISSING
from aflite_app.compute import embedding as compute
from aflite_app.state import embedding_map_key, embedding_selection_key

ui.page_guard()  # a direct link on a fresh server runs inside the app
session_data = ui.session_data()  # this session's uploads and opened runs: every compute call gets them

st.title("Embedding map")
st.caption(
    "Where the rows AFLite removed sit in the representation Φ the models saw: a 2-D map of every row, "
    "the rows you select on it, and how alike the retained and the removed rows are."
)

spec, result, data = ui.current_run("this page maps that run's rows")
names = compute.class_names(data)
rep = spec.dataset.representation or data.default_representation
rep_text = data.representation_descriptions.get(rep, rep)

# -- the map -------------------------------------------------------------------------------------------------
c1, c2 = st.columns([3, 2])
colour = c1.radio(
    "Colour by", list(charts.COLOUR_MODES), format_func=charts.COLOUR_MODES.get, horizontal=True, key="emb-colour"
)
method = c2.radio(
    "Projection",
    ["UMAP", "PCA"],
    horizontal=True,
    key="emb-method",
    help="UMAP keeps neighbourhoods (clusters); PCA keeps the two directions of largest variance. "
    "UMAP is computed in the background the first time; PCA is shown until it is ready.",
)

map_key = embedding_map_key(spec.dataset.key, rep)
sel_key = embedding_selection_key(map_key)
with ui.errors():
    view = compute.embedding_view(spec.dataset, method, session=session_data)
    frame = compute.embedding_frame(spec, view, session=session_data)
proj = view.projection

if method == "UMAP" and view.umap_status == "running":

    @st.fragment(run_every=1.0)
    def umap_progress() -> None:
        current = compute.embedding_view(spec.dataset, "UMAP", session=session_data)
        if current.umap_status != "running":
            st.rerun(scope="app")
        fraction, text = compute.describe_umap(current)
        st.progress(fraction, text=text)
        st.caption(
            "Computing UMAP once for every session (it cannot be stopped once started; the first map after the "
            "server starts also compiles its code). Showing PCA until then; the map switches by itself."
        )

    umap_progress()
elif method == "UMAP" and view.umap_status in ("failed", "off"):
    st.warning(f"{view.message} Showing PCA instead.")

# the selection survives a new colouring, projection or run (Streamlit resets a chart whose figure changes)
sel = compute.for_figure(st.session_state.get(sel_key), (repr(spec), colour, proj.method))
st.session_state[sel_key] = sel


def _on_select() -> None:
    st.session_state[sel_key] = compute.after_event(
        st.session_state.get(sel_key), st.session_state.get(map_key), n_rows=data.n_rows
    )


fig = charts.embedding_scatter(
    frame,
    colour,
    classes=names,
    n_rounds=result.n_rounds,
    axis_titles=proj.axis_titles,
    selected=sel.baked,
    revision=sel.revision,
    title=f"{proj.method} of Φ = {ui.plotly_text(rep_text)}",
)
st.plotly_chart(fig, key=map_key, on_select=_on_select, selection_mode=("points", "box", "lasso"), width="stretch")
shown = proj.method
if method == "UMAP" and proj.method == "PCA":
    shown += " (UMAP not ready yet)" if view.umap_status == "running" else " (UMAP unavailable)"
colour_text = {
    "status": "blue rows were kept, vermillion rows removed",
    "round": "removed rows are coloured by the round they left in (dark = early, the most predictable first); "
    "kept rows are blue",
    "class": "one colour per class; hover a point for whether it was kept",
}[colour]
ui.caption(
    f"Shown: {shown} of the representation Φ ({ui.md(rep_text)}). Each point is one row, placed so that rows "
    f"with similar Φ are close; {colour_text}. Drag a lasso around points (box select and zoom are in "
    "the chart's toolbar) to list them below; double-click the map to clear the selection. A selection "
    "stays when you change the colouring or the projection."
)
if proj.sampled:
    st.caption(
        f"Note: for speed the map shows a seeded random sample of {len(proj.rows):,} of the "
        f"{proj.n_rows:,} rows; the kNN table below uses the same sample."
    )

# -- the selection -------------------------------------------------------------------------------------------
st.subheader("Selected rows")
rows = [r for r in st.session_state[sel_key].rows if r < data.n_rows]
if not rows:
    st.info("Nothing selected yet: drag a lasso around points on the map above to list those rows here.")
else:
    table, counts = compute.embedding_selection(spec, rows, cap=200, session=session_data)
    more = f" · showing the first {counts['shown']:,}" if counts["shown"] < counts["selected"] else ""
    t1, t2 = st.columns([5, 1])
    t1.markdown(
        f"**{counts['selected']:,} rows selected**: {counts['kept']:,} kept, {counts['removed']:,} removed{more}"
    )
    if t2.button("Clear selection", key="emb-clear", width="stretch"):
        st.session_state[sel_key] = compute.cleared(st.session_state.get(sel_key))
        st.rerun()
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_order=[c for c in table.columns if c != "row"],
        row_height=44 if "image" in table else None,
        column_config={
            "image": st.column_config.ImageColumn("image", width="small"),
            "round removed": st.column_config.TextColumn("round removed", help="Empty for kept rows"),
            "first-round p": st.column_config.TextColumn(
                "first-round p", help="Predictability in round 1: the share of correct out-of-sample predictions"
            ),
            "removal score": st.column_config.TextColumn(
                "removal score", help="Predictability in the round the row was removed (empty for kept rows)"
            ),
        },
    )

# -- Figure 1: similarity of retained vs removed rows -------------------------------------------------------
st.subheader("Are the retained rows more diverse? Cosine similarity per class")
s1, s2, s3 = st.columns(3)
code = s1.selectbox("Class", range(len(names)), format_func=lambda i: names[i], key=f"emb-sim-class-{map_key}")
per = s2.slider("Rows sampled per side", 3, 30, 10, key="emb-sim-n")
seed = s3.number_input("Sample seed", min_value=0, max_value=1_000_000, value=0, step=1, key="emb-sim-seed")
with ui.errors():
    out = compute.embedding_similarity(spec, code, n_per_group=per, seed=seed, session=session_data)
sim = out["sim"]
h1, h2 = st.columns([3, 2])
h1.plotly_chart(
    charts.similarity_heatmap(sim, class_name=names[code], ids=data.ids, height=480),
    width="stretch",
    key="emb-sim-heatmap",
)


def _mean(x: float) -> str:
    return f"{MISSING} (fewer than 2 rows)" if x != x else f"{x:.3f}"


verdict = ""
if out["n_retained"] > 1 and out["n_removed"] > 1:
    less = sim.mean_retained_all < sim.mean_removed_all
    verdict = (
        " Here the retained rows are less alike than the removed ones, as in the paper's Figure 1: AFLite "
        "removed redundant rows."
        if less
        else " Here the retained rows are not less alike than the removed ones."
    )
with h2:
    st.metric(
        f"Mean similarity, retained rows of class {ui.md(names[code])}",
        _mean(sim.mean_retained_all),
        help=f"Mean pairwise cosine similarity in Φ over all {out['n_retained']:,} retained rows of the class",
    )
    st.metric(
        f"Mean similarity, removed rows of class {ui.md(names[code])}",
        _mean(sim.mean_removed_all),
        help=f"Mean pairwise cosine similarity in Φ over all {out['n_removed']:,} removed rows of the class",
    )
    if out["n_removed"] == 0:
        st.info(f"AFLite removed no rows of class {ui.md(names[code])}, so there is no removed block to compare.")
    if data.images is not None:
        for label, sample in (("Retained sample", sim.retained_rows), ("Removed sample", sim.removed_rows)):
            if len(sample):
                st.markdown(f"**{label}**")
                st.image(compute.thumbnails(data, sample), width=34)
ui.caption(
    f"Class {ui.md(names[code])}: pairwise cosine similarity in Φ of {len(sim.retained_rows)} retained (blue box) and "
    f"{len(sim.removed_rows)} removed (vermillion box) rows sampled with seed {seed}; darker = more alike. The "
    f"means on the right are over all {out['n_retained']:,} retained and all {out['n_removed']:,} removed rows of "
    f"the class (lower = more diverse).{verdict}"
)

# -- Table 3: kNN distances ----------------------------------------------------------------------------------
st.subheader("Nearest-neighbour distances before and after filtering")
with ui.errors():
    knn = compute.embedding_knn(spec, session=session_data)
k1, k2 = st.columns(2)
k1.metric(
    "After vs before",
    f"{knn['after_vs_before']:+.1%}",
    help="Mean relative change of the distances "
    "in the table: positive means held-out rows are farther from their neighbours after AFLite.",
)
k2.metric(
    "After vs random subset of the same size",
    f"{knn['after_vs_random']:+.1%}",
    help="Positive means AFLite's choice of rows, not just having fewer rows, made the set more spread out.",
)
st.dataframe(knn["table"].style.format("{:.3f}", na_rep=MISSING), width="stretch")
ui.caption(
    f"The paper's Table 3 (ICLR version) on this run: {knn['n_rows']:,} rows split once (seeded) into 80 % "
    f"neighbours and 20 % held-out queries ({knn['n_heldout']:,} rows). Each cell is the sum of the cosine "
    "distances (1 − cos in Φ) from a held-out row to its k nearest neighbours, averaged over the held-out rows "
    "of the class; rows named '<class>' compare with the same class, '<class> vs others' with all other "
    "classes. before = all rows; after = only the rows AFLite kept (queries and neighbours); random = a random "
    "subset of the same size (control: fewer rows alone also makes neighbours farther). Distances usually grow "
    "after filtering, beyond the random control: AFLite keeps a more diverse, less redundant set."
)
