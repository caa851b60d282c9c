"""Chart builders of the Embedding map page (no Streamlit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aflite_app.charts.embedding import COLOUR_MODES, WEBGL_POINTS, embedding_scatter, similarity_heatmap
from aflite_app.charts.theme import KEPT, REMOVED, class_colour_map
from aflite_core.measures.geometry import similarity_matrices


def _frame(n: int = 60, n_rounds: int = 3, seed: int = 0, classes=("cat", "dog", "emu")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rr = rng.integers(0, n_rounds + 1, n)
    rr[rr == 0] = -1
    rows = rng.permutation(n) + 1000  # positions need not be 0..n-1 nor sorted
    return pd.DataFrame(
        {
            "row": rows,
            "x": rng.normal(size=n),
            "y": rng.normal(size=n),
            "id": [f"r{r}" for r in rows],
            "label": rng.choice(list(classes), n),
            "kept": rr < 0,
            "removed_round": rr,
            "first_score": np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
        }
    )


def _rows(fig) -> list[int]:
    return [int(r) for t in fig.data for r in np.asarray(t.customdata).ravel()]


@pytest.mark.parametrize("colour", [c for c in COLOUR_MODES if c in ("status", "round", "class")])
def test_scatter_has_every_row_once_with_its_id_in_customdata(colour):
    frame = _frame()
    fig = embedding_scatter(frame, colour, classes=["cat", "dog", "emu"], n_rounds=3)
    assert sum(len(t.x) for t in fig.data) == len(frame)
    assert sorted(_rows(fig)) == sorted(frame["row"].tolist())
    # each point's coordinates belong to the row in its customdata
    by_row = frame.set_index("row")
    for t in fig.data:
        rows = np.asarray(t.customdata).ravel()
        np.testing.assert_allclose(np.asarray(t.x), by_row.loc[rows, "x"].to_numpy())
        np.testing.assert_allclose(np.asarray(t.y), by_row.loc[rows, "y"].to_numpy())
    assert fig.layout.dragmode == "lasso"
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_status_colours_are_kept_blue_and_removed_vermillion():
    frame = _frame()
    fig = embedding_scatter(frame, "status")
    assert [t.marker.color for t in fig.data] == [KEPT, REMOVED]
    assert len(fig.data[0].x) == frame["kept"].sum()
    assert fig.data[0].name.startswith("kept") and fig.data[1].name.startswith("removed")


def test_round_colours_removed_rows_by_round_on_a_sequential_scale():
    frame = _frame(n_rounds=5)
    fig = embedding_scatter(frame, "round", n_rounds=5)
    kept_trace, removed_trace = fig.data
    assert kept_trace.marker.color == KEPT
    removed = frame.loc[~frame["kept"]]
    np.testing.assert_array_equal(np.asarray(removed_trace.marker.color), removed["removed_round"].to_numpy())
    assert removed_trace.marker.cmin == 1 and removed_trace.marker.cmax == 5
    assert len(removed_trace.marker.colorscale) >= 2
    assert "round" in removed_trace.marker.colorbar.title.text


def test_round_mode_with_nothing_removed_and_one_round():
    frame = _frame().assign(kept=True, removed_round=-1)
    fig = embedding_scatter(frame, "round", n_rounds=1)
    assert sum(len(t.x) for t in fig.data) == len(frame)


def test_class_colours_follow_the_theme_and_class_order():
    frame = _frame()
    classes = ["cat", "dog", "emu"]
    fig = embedding_scatter(frame, "class", classes=classes)
    colours = class_colour_map(classes)
    assert [t.name.split(" (")[0] for t in fig.data] == classes
    assert [t.marker.color for t in fig.data] == [colours[c] for c in classes]
    for t in fig.data:
        assert set(frame.set_index("row").loc[np.asarray(t.customdata).ravel(), "label"]) == {t.name.split(" (")[0]}


def test_ten_classes_and_many_points_use_webgl():
    frame = _frame(n=WEBGL_POINTS + 10, classes=tuple(str(i) for i in range(10)))
    fig = embedding_scatter(frame, "class", classes=[str(i) for i in range(10)])
    assert len(fig.data) == 10
    assert all(t.type == "scattergl" for t in fig.data)
    assert sum(len(t.x) for t in fig.data) == len(frame)


def test_selected_rows_are_drawn_as_selected_in_every_trace():
    frame = _frame()
    chosen = frame["row"].iloc[[0, 5, 7]].tolist()
    fig = embedding_scatter(frame, "status", selected=chosen)
    marked = [int(np.asarray(t.customdata)[i]) for t in fig.data for i in t.selectedpoints]
    assert sorted(marked) == sorted(chosen)
    assert all(t.selectedpoints is None for t in embedding_scatter(frame, "status").data)


def test_revision_changes_the_figure():
    frame = _frame()
    a, b = embedding_scatter(frame, revision=0), embedding_scatter(frame, revision=1)
    assert a.to_json() != b.to_json() and b.layout.meta["selection_revision"] == 1


def test_hover_names_id_class_and_outcome():
    frame = _frame()
    fig = embedding_scatter(frame, "status")
    text = fig.data[1].hovertext[0]
    assert text.startswith("id r") and "class" in text and "removed in round" in text


def test_unknown_colour_mode_is_a_value_error():
    with pytest.raises(ValueError, match="colour"):
        embedding_scatter(_frame(), "rainbow")


def _similarity(n_removed_class0: int = 6, n_per_group: int = 4):
    rng = np.random.default_rng(1)
    X = rng.random((40, 5))
    y = np.repeat([0, 1], 20)
    kept = np.ones(40, bool)
    kept[:n_removed_class0] = False
    return similarity_matrices(X, y, kept, n_per_group=n_per_group, random_state=0)[0]


def test_heatmap_shape_blocks_and_labels():
    sim = _similarity()
    ids = np.array([f"id{i}" for i in range(40)])
    fig = similarity_heatmap(sim, class_name="cat", ids=ids)
    (hm,) = fig.data
    assert np.asarray(hm.z).shape == (8, 8)
    assert list(fig.layout.xaxis.ticktext) == ["retained (4)", "removed (4)"]
    assert list(fig.layout.yaxis.ticktext) == ["retained (4)", "removed (4)"]
    assert [s.line.color for s in fig.layout.shapes] == [KEPT, REMOVED]
    assert "cat" in fig.layout.title.text and "cat" in fig.layout.xaxis.title.text
    assert "retained id id" in hm.text[0][0] and "removed id id" in hm.text[-1][-1]
    assert "cosine" in hm.colorbar.title.text


def test_heatmap_without_removed_rows_has_one_block():
    sim = _similarity(n_removed_class0=0)
    fig = similarity_heatmap(sim, class_name="dog")
    assert np.asarray(fig.data[0].z).shape == (4, 4)
    assert list(fig.layout.xaxis.ticktext) == ["retained (4)"]
    assert len(fig.layout.shapes) == 1


# -- the density image of every row -------------------------------------------------------------------------------
def _grid(n: int, n_codes: int, seed: int = 0):
    from aflite_core.measures.map_grids import density_grid

    rng = np.random.default_rng(seed)
    return density_grid(rng.normal(size=(n, 2)), bins=80, codes=rng.integers(0, n_codes, n), n_codes=n_codes)


def _numbers_in(fig) -> int:
    """How many numbers the figure's traces carry (arrays flattened)."""
    total = 0
    for t in fig.data:
        for name in ("x", "y", "z", "customdata", "text"):
            value = getattr(t, name, None)
            if value is not None:
                total += np.asarray(value, dtype=object).size
    return total


@pytest.mark.parametrize(
    ("colour", "codes"),
    [("status", ("kept", "removed")), ("round", ("kept", "round 1", "round 2")), ("class", ("cat", "dog", "emu"))],
)
def test_density_figure_holds_bins_squared_numbers_not_rows(colour, codes):
    from aflite_app.charts.embedding import embedding_density

    sizes = []
    for n in (2_000, 500_000):
        fig = embedding_density(_grid(n, len(codes)), colour, codes=codes, classes=["cat", "dog", "emu"], n_rounds=2)
        assert {t.type for t in fig.data} == {"heatmap"} and fig.layout.dragmode == "lasso"
        sizes.append(_numbers_in(fig))
    assert sizes[0] == sizes[1] <= 80 * 80 * 8  # the same figure size at 2,000 and 500,000 rows


def test_density_status_cells_are_the_removed_share_with_counts_in_the_hover():
    from aflite_app.charts.embedding import embedding_density

    grid = _grid(10_000, 2)
    fig = embedding_density(grid, "status", codes=("kept", "removed"))
    z = np.asarray(fig.data[0].z, dtype=float)
    total = grid.counts.sum(axis=2)
    np.testing.assert_allclose(z[total > 0], (grid.counts[..., 1] / np.maximum(total, 1))[total > 0])
    assert np.isnan(z[total == 0]).all()  # empty bins are gaps
    assert np.asarray(fig.data[0].customdata)[..., 0].sum() == 10_000
    with pytest.raises(ValueError, match="'colour' parameter"):
        embedding_density(grid, "size", codes=("kept", "removed"))


def test_density_class_names_are_escaped_for_plotly():
    from aflite_app.charts.embedding import embedding_density
    from aflite_app.charts.theme import plotly_text

    names = ["<b>cat</b>", "dog", "emu"]
    fig = embedding_density(_grid(5_000, 3), "class", codes=names, classes=names)
    ticks = list(fig.data[0].colorbar.ticktext)
    assert ticks[0] == plotly_text("<b>cat</b>") and "<b>" not in ticks[0]
    assert all("<b>" not in str(t) for t in np.asarray(fig.data[0].text, dtype=object).ravel())
