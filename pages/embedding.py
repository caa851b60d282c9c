import streamlit as st

from aflite_app import page_views, plotly_once, ui
from aflite_app.charts import embedding as charts
from aflite_app.charts import map_fields as field_charts
from aflite_app.charts.theme import MISSING
from aflite_app.compute import embedding as compute
from aflite_app.compute import map_fields as fields
from aflite_app.compute import neighbourhoods
from aflite_app.state import (
    DYN_PAGE,
    INSPECT_N_SEEDS,
    embedding_map_key,
    embedding_selection_key,
    page_state,
)

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
# colourings by a per-row field that another page computed: Training dynamics of these rows, Inspect's stability
dynamics = page_state(st.session_state, DYN_PAGE).get("record_request")
stability_seeds = int(st.session_state.get(INSPECT_N_SEEDS, 5))
modes = fields.colour_modes(spec, dynamics=dynamics, stability_seeds=stability_seeds, session=session_data)
if st.session_state.get(page_views.EMB_COLOUR) not in modes:  # e.g. a link's colouring this session cannot offer
    st.session_state.pop(page_views.EMB_COLOUR, None)
c1, c2 = st.columns([3, 2])
colour = c1.selectbox(
    "Colour by",
    modes,
    format_func=charts.COLOUR_MODES.get,
    key=page_views.EMB_COLOUR,
    help="Kept / removed, the round a row was removed in, its class, its predictability (last round scored, or in "
    "the round it was removed), a word's presence in its text, its difficulty level from Training dynamics (once "
    "recorded there for this dataset) or how often other seeds removed it (once computed in Inspect).",
)
word = ""
if colour == "word":
    word = c1.text_input(
        "Word",
        key=page_views.EMB_WORD,
        max_chars=fields.MAX_WORD_CHARS,
        placeholder="e.g. sleeping",
        help="Whole word, any case, looked for in " + ui.md(", ".join(fields.word_columns(data))) + ".",
    )
umap_off = compute.umap_off_reason()
if umap_off:  # the server computes no UMAP: the radio says PCA (a link's or an earlier choice of UMAP included)
    st.session_state[page_views.EMB_METHOD] = "PCA"
method = c2.radio(
    "Projection",
    ["UMAP", "PCA"],
    horizontal=True,
    key=page_views.EMB_METHOD,
    disabled=bool(umap_off),
    help=umap_off
    or "UMAP keeps neighbourhoods (clusters); PCA keeps the two directions of largest variance. "
    "UMAP is computed in the background the first time; PCA is shown until it is ready.",
)
if umap_off:
    c2.caption(f"{umap_off} The map uses PCA.")

map_key = embedding_map_key(spec.dataset.key, rep)
sel_key = embedding_selection_key(map_key)
zoom_key = f"{map_key}-zoom"
with ui.errors():
    view = compute.embedding_view(spec.dataset, method, session=session_data)
proj = view.projection
field = None
if colour in fields.FIELD_MODES:
    try:
        field = fields.map_field(
            spec, colour, word=word, dynamics=dynamics, stability_seeds=stability_seeds, session=session_data
        )
    except ValueError as exc:  # e.g. no word typed yet: say what to do, colour by kept / removed meanwhile
        st.info(ui.message(str(exc)))
drawn_colour = colour if colour not in fields.FIELD_MODES or field is not None else "status"

# a link's selection drawn on UMAP waits for it too (the page switches to it by itself)
waits_for_umap = (page_views.pending_selection(st.session_state) or {}).get("on") == "UMAP"
if (method == "UMAP" or waits_for_umap) and view.umap_status in ("running", "stopping"):

    @st.fragment(run_every=1.0)
    def umap_progress() -> None:
        current = compute.embedding_view(spec.dataset, "UMAP", session=session_data)
        if current.umap_status not in ("running", "stopping"):
            st.rerun(scope="app")
        if current.umap_status == "stopping":
            st.progress(0.0, text=ui.message(current.message))
            return
        fraction, text = compute.describe_umap(current)
        st.progress(fraction, text=ui.message(text))
        st.caption(
            "Computing UMAP once for every session (the first map after the server starts also compiles its "
            "code). Showing PCA until then; the map switches by itself. Stop ends it for every session."
        )

    umap_progress()
    if view.umap_status == "running":
        # a script button, not the fragment's (a fragment click during a full rerun can be lost: aflite_app.jobs)
        st.button(
            "Stop",
            key="emb-umap-stop",
            help="Stop computing UMAP now (the map stays on PCA; it can be started again)",
            on_click=lambda: compute.stop_umap(spec.dataset, session=session_data),
        )
elif method == "UMAP" and view.umap_status == "stopped":
    st.info("UMAP was stopped; showing PCA instead.")
    st.button(
        "Compute UMAP",
        key="emb-umap-restart",
        help="Start computing UMAP again, in the background",
        on_click=lambda: compute.restart_umap(spec.dataset, session=session_data),
    )
elif method == "UMAP" and view.umap_status in ("failed", "off"):
    st.warning(f"{view.message} Showing PCA instead.")

# the selection survives a new colouring, projection or run (Streamlit resets a chart whose figure changes)
sel = compute.for_figure(
    st.session_state.get(sel_key), (repr(spec), drawn_colour, None if field is None else field.key, proj.method)
)
# a link's selection: its box / lasso evaluated over every row of the projection it was drawn on (once it is ready)
pending = page_views.pending_selection(st.session_state)
if pending is not None:
    drawn_on = pending["on"]
    on_view = view if drawn_on == proj.method else compute.embedding_view(spec.dataset, drawn_on, session=session_data)
    if on_view.projection.method == drawn_on:
        sel = compute.restored(sel, pending["shapes"], pending["points"], xy=on_view.projection.xy, drawn_on=drawn_on)
        page_views.drop_pending_selection(st.session_state)
    elif on_view.umap_status in ("failed", "off"):
        st.warning("This link's map selection was drawn on UMAP, which this server cannot compute; it is not shown.")
        page_views.drop_pending_selection(st.session_state)
    else:
        st.caption("This link's map selection was drawn on UMAP: it is selected once UMAP is ready.")
st.session_state[sel_key] = sel
# the view: every row, or the box the user zoomed to (map coordinates of this projection)
zoom = st.session_state.get(zoom_key)
extent = zoom[1] if zoom and zoom[0] == (repr(spec.dataset), proj.method) else None

with ui.errors():
    layer = compute.map_layer(spec, view, drawn_colour, extent, field=field, session=session_data)


def _on_select() -> None:
    st.session_state[sel_key] = compute.after_event(
        st.session_state.get(sel_key),
        st.session_state.get(map_key),
        n_rows=data.n_rows,
        xy=proj.xy,
        drawn_on=proj.method,
    )


title = f"{proj.method} of Φ = {ui.plotly_text(rep_text)}"
if layer.field is not None and layer.kind == "points":
    fig = field_charts.embedding_field_scatter(
        layer.frame,
        layer.field,
        axis_titles=proj.axis_titles,
        selected=sel.baked,
        revision=sel.revision,
        title=title,
        extent=extent,
    )
elif layer.field is not None:
    fig = field_charts.embedding_field_density(
        layer, axis_titles=proj.axis_titles, revision=sel.revision, title=title, extent=extent
    )
elif layer.kind == "points":
    fig = charts.embedding_scatter(
        layer.frame,
        drawn_colour,
        classes=names,
        n_rounds=result.n_rounds,
        axis_titles=proj.axis_titles,
        selected=sel.baked,
        revision=sel.revision,
        title=title,
        extent=extent,
    )
else:
    fig = charts.embedding_density(
        layer.grid,
        drawn_colour,
        codes=layer.codes,
        classes=names,
        n_rounds=result.n_rounds,
        axis_titles=proj.axis_titles,
        revision=sel.revision,
        title=title,
        extent=extent,
    )
plotly_once.plotly_chart(
    fig, key=map_key, on_select=_on_select, selection_mode=("points", "box", "lasso"), width="stretch"
)
compute.prepare_lasso(proj.xy)  # the rows sorted by y in the background, once per map: a first lasso need not

z1, z2, z3 = st.columns([2, 2, 3])
# the selected rows as one read-only array (aflite_app.selection.Rows): no Python loop over 418,000 rows
selected_now = st.session_state[sel_key].rows.below(data.n_rows)
if z1.button(
    "Zoom to the selection",
    key="emb-zoom",
    disabled=not selected_now,
    width="stretch",
    help="Redraw the map on the server for the box around the selected rows; at most "
    f"{compute.EMBED_MAX_ROWS:,} rows in view are drawn as points.",
):
    st.session_state[zoom_key] = ((repr(spec.dataset), proj.method), compute.selection_extent(proj, selected_now))
    st.session_state[sel_key] = compute.redrawn(st.session_state.get(sel_key))
    st.rerun()
if z2.button("Show every row", key="emb-unzoom", disabled=extent is None, width="stretch"):
    st.session_state.pop(zoom_key, None)
    st.session_state[sel_key] = compute.redrawn(st.session_state.get(sel_key))
    st.rerun()
in_view = "every row" if extent is None else f"the zoomed box ({layer.n_in_view:,} of {proj.n_rows:,} rows)"
z3.caption(f"Showing {in_view}.")

shown = proj.method
if method == "UMAP" and proj.method == "PCA":
    shown += " (UMAP not ready yet)" if view.umap_status == "running" else " (UMAP unavailable)"
if layer.field is not None and layer.kind == "points":
    colour_text = f"a point's colour is {ui.md(layer.field.meaning)}"
    drawn = "Each point is one row"
elif layer.field is not None:
    how = {"number": "the mean, over the cell's rows that have one, of", "share": "the share of the cell's rows by"}
    colour_text = (
        f"a cell's colour is {how.get(layer.field.kind, 'the most common value among its rows of')} "
        f"{ui.md(layer.field.meaning)}"
    )
    drawn = (
        f"{layer.n_in_view:,} rows are more than the {compute.EMBED_MAX_ROWS:,} the map draws as points, so each "
        f"cell of this {compute.MAP_BINS} × {compute.MAP_BINS} density image stands for the rows at that place "
        "(hover a cell for its rows); zoom to a selection to see the rows as points"
    )
elif layer.kind == "points":
    colour_text = {
        "status": "blue rows were kept, vermillion rows removed",
        "round": "removed rows are coloured by the round they left in (dark = early, the most predictable first); "
        "kept rows are blue",
        "class": "one colour per class; hover a point for whether it was kept",
    }[drawn_colour]
    drawn = "Each point is one row"
else:
    colour_text = {
        "status": "a cell's colour is the share of its rows AFLite removed (blue = all kept, vermillion = all removed)",
        "round": "cells with removed rows are coloured by the mean round they left in (dark = early); cells with "
        "only kept rows are blue",
        "class": "a cell's colour is its most common class",
    }[drawn_colour]
    drawn = (
        f"{layer.n_in_view:,} rows are more than the {compute.EMBED_MAX_ROWS:,} the map draws as points, so each "
        f"cell of this {compute.MAP_BINS} × {compute.MAP_BINS} density image counts the rows at that place (hover "
        "a cell for its counts); zoom to a selection to see the rows as points"
    )
ui.caption(
    f"Shown: {shown} of the representation Φ ({ui.md(rep_text)}), placed so that rows with similar Φ are close. "
    f"{drawn}; {colour_text}. Drag a lasso or a box (in the chart's toolbar) to select rows: the selection is "
    "evaluated over every row of the run, drawn or not, and listed below; double-click the map to clear it. "
    "A selection stays when you change the colouring or the projection, and the page's link carries it: its box "
    "or lasso (in the shortest form that selects the same rows: a lasso thinned to 48 points and rounded to 4 "
    f"digits where that changes no row, at most {compute.MAX_LASSO_VERTICES} points) and the projection it was drawn "
    "on."
)
if proj.fitted_on_sample:
    fitted = (
        f"UMAP fitted on {proj.fit_rows:,} rows (a seeded sample), applied to all {proj.n_rows:,} with its transform."
        if proj.method == "UMAP"
        else f"PCA's axes fitted on {proj.fit_rows:,} rows (a seeded sample), every one of the {proj.n_rows:,} "
        "rows projected onto them."
    )
    st.caption(fitted)

# -- the selection -------------------------------------------------------------------------------------------
st.subheader("Selected rows")
rows = selected_now
if not rows:
    st.info("Nothing selected yet: drag a lasso around points on the map above to list those rows here.")
else:
    page_rows = 200
    n_pages = (len(rows) + page_rows - 1) // page_rows
    t1, t2, t3 = st.columns([4, 1, 1])
    page = 1
    if n_pages > 1:
        page = t2.number_input(
            f"Page (of {n_pages:,})",
            min_value=1,
            max_value=n_pages,
            value=1,
            step=1,
            key=f"emb-page-{map_key}-{len(rows)}",
        )
    table, counts = compute.embedding_selection(
        spec, rows, cap=page_rows, offset=(int(page) - 1) * page_rows, session=session_data
    )
    first = (int(page) - 1) * page_rows
    more = f" · rows {first + 1:,}-{first + counts['shown']:,} listed" if counts["shown"] < counts["selected"] else ""
    t1.markdown(
        f"**{counts['selected']:,} rows selected**: {counts['kept']:,} kept, {counts['removed']:,} removed{more}"
    )
    if t3.button("Clear selection", key="emb-clear", width="stretch"):
        st.session_state[sel_key] = compute.cleared(st.session_state.get(sel_key))
        st.rerun()
    per_class = counts["per_class"]
    st.dataframe(per_class.loc[per_class["selected"] > 0], width="stretch")
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


def _computed(compute, what: str):
    """``compute()`` (a memoised table) computed in a worker thread, awaited where a rerun can stop it.

    The first visit computes Figure 1 and Table 3 over every row (seconds at 550,000 rows); a box drawn on the map
    meanwhile starts its rerun at once instead of waiting for them, and the computation goes on in its thread
    and is kept in its store, where the next run finds it (issue 25: the box's rows listed within 2 s).
    """
    slot = st.empty()
    try:
        return neighbourhoods.in_worker(compute, yield_point=lambda: slot.caption(what))
    finally:
        slot.empty()


# -- Figure 1: similarity of retained vs removed rows -------------------------------------------------------
st.subheader("Are the retained rows more diverse? Cosine similarity per class")
s1, s2, s3 = st.columns(3)
code = s1.selectbox("Class", range(len(names)), format_func=lambda i: names[i], key=f"emb-sim-class-{map_key}")
per = s2.slider("Rows sampled per side", 3, 30, 10, key="emb-sim-n")
seed = s3.number_input("Sample seed", min_value=0, max_value=1_000_000, value=0, step=1, key="emb-sim-seed")
with ui.errors():
    out = _computed(
        lambda: neighbourhoods.embedding_similarity(spec, code, n_per_group=per, seed=seed, session=session_data),
        "Computing cosine similarities…",
    )
sim = out["sim"]
h1, h2 = st.columns([3, 2])
plotly_once.plotly_chart(
    charts.similarity_heatmap(sim, class_name=names[code], ids=data.ids, height=480),
    width="stretch",
    key="emb-sim-heatmap",
    container=h1,
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
    knn = _computed(
        lambda: neighbourhoods.embedding_knn(spec, session=session_data), "Computing nearest-neighbour distances…"
    )
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
sampled_text = (
    f"Computed on a seeded random sample of {knn['n_rows']:,} of the {data.n_rows:,} rows (seed "
    f"{compute.EMBED_SEED}; exact neighbour search over every row would grow with the square of the rows). "
    if knn["sampled"]
    else ""
)
ui.caption(
    sampled_text
    + f"The paper's Table 3 (ICLR version) on this run: {knn['n_rows']:,} rows split once (seeded) into 80 % "
    f"neighbours and 20 % held-out queries ({knn['n_heldout']:,} rows). Each cell is the sum of the cosine "
    "distances (1 − cos in Φ) from a held-out row to its k nearest neighbours, averaged over the held-out rows "
    "of the class; rows named '<class>' compare with the same class, '<class> vs others' with all other "
    "classes. before = all rows; after = only the rows AFLite kept (queries and neighbours); random = a random "
    "subset of the same size (control: fewer rows alone also makes neighbours farther). Distances usually grow "
    "after filtering, beyond the random control: AFLite keeps a more diverse, less redundant set."
)
