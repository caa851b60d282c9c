"""The Embedding map coloured by any per-row field (issue 28): a typed word, predictability, difficulty, stability.

Compute and chart level, no browser: the rows a word colours are exactly the rows whose text contains it, as points
(one trace of the rows with the word) and as a density image (the share per cell equals a count over the rows).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from aflite_app.charts import embedding as charts
from aflite_app.charts import map_fields as field_charts
from aflite_app.compute import embedding as compute
from aflite_app.compute import map_fields as fields
from aflite_app.compute import uploads
from aflite_app.specs import DatasetSpec, FilterSpec, SessionData
from aflite_core.measures.map_grids import density_grid, density_values

WORDS = ["a", "man", "dog", "is", "sleeping", "sleep", "Sleeping,", "near", "the", "park", "nobody", "asleep"]


def _nli(n: int = 240, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.choice(["entailment", "neutral", "contradiction"], n)
    text = [" ".join(rng.choice(WORDS, 6)) for _ in range(n)]
    frame = pd.DataFrame(
        {
            "hypothesis": text,
            "f0": rng.normal(size=n).round(3),
            "f1": (rng.normal(size=n) + (labels == "contradiction")).round(3),
            "label": labels,
        }
    )
    out = uploads.load_upload(
        frame.to_csv(index=False).encode(),
        "nli.csv",
        uploads.UploadOptions(label_column="label", feature_columns=("f0", "f1"), text_columns=("hypothesis",)),
    )
    assert out.ok, out
    return out.key, out.dataset, text


def _contains(texts, word: str) -> np.ndarray:
    """The reference: the word as a whole word, any case (a plain token scan, not the code's regex)."""
    tokens = [[t.strip(",.").lower() for t in re.split(r"\s+", s)] for s in texts]
    return np.array([word.lower() in row for row in tokens])


@pytest.mark.parametrize("word", ["sleeping", "SLEEP", "nobody", "cat"])
def test_a_typed_word_colours_exactly_the_rows_that_contain_it(word):
    key, data, texts = _nli()
    session = SessionData(uploads={key: data}, run_dirs={})
    spec = FilterSpec(DatasetSpec(key, None), target_size=150, train_size=60, slice_size=20, tau=0.6, n_partitions=8)
    expected = _contains(texts, word)
    field = fields.map_field(spec, "word", word=word, session=session)
    assert field.kind == "share" and np.array_equal(field.values > 0, expected)
    assert f"{int(expected.sum()):,} of {len(texts):,} rows" in field.meaning
    view = compute.embedding_view(spec.dataset, "PCA", session=session)
    # points: the "with" trace holds exactly the rows with the word
    layer = compute.map_layer(spec, view, "word", field=field, session=session)
    assert layer.kind == "points"
    fig = field_charts.embedding_field_scatter(layer.frame, field, title="PCA of Φ")
    without, with_ = fig.data
    assert with_.name.startswith(f"with '{word}'") and with_.marker.color == field_charts.WORD_COLOURS[1]
    assert sorted(np.asarray(with_.customdata).tolist()) == np.flatnonzero(expected).tolist()
    assert sorted(np.asarray(without.customdata).tolist()) == np.flatnonzero(~expected).tolist()
    # the density image: each cell's share is the share of its rows with the word
    dense = compute.map_layer(spec, view, "word", max_points=10, bins=8, field=field, session=session)
    assert dense.kind == "density" and dense.values is not None
    hits = density_grid(view.projection.xy, bins=8, codes=expected.astype(int), n_codes=2).counts
    with np.errstate(invalid="ignore"):
        share = hits[..., 1] / hits.sum(axis=2)
    np.testing.assert_allclose(dense.values.mean, share, equal_nan=True)
    fig = field_charts.embedding_field_density(dense, title="PCA of Φ")
    assert fig.data[-1].colorbar.title.text == f"share of rows<br>with '{word}'"  # the colour bar says what it means


def test_a_word_is_refused_in_one_sentence_without_text_or_when_empty():
    spec = FilterSpec(DatasetSpec("circles", "features"), target_size=500, train_size=250, slice_size=50, tau=0.6)
    assert "word" not in fields.colour_modes(spec)
    with pytest.raises(ValueError, match=r"^This dataset has no text column"):
        fields.map_field(spec, "word", word="x")
    key, data, _ = _nli()
    session = SessionData(uploads={key: data}, run_dirs={})
    spec = FilterSpec(DatasetSpec(key, None), target_size=150, train_size=60, slice_size=20, tau=0.6, n_partitions=8)
    assert "word" in fields.colour_modes(spec, session=session)
    with pytest.raises(ValueError, match=r"^Type a word"):
        fields.map_field(spec, "word", word="  ", session=session)
    with pytest.raises(ValueError, match=r"more than the 50 allowed"):
        fields.word_rows(data, "x" * 51)


def test_predictability_colours_points_by_value_and_cells_by_their_mean():
    spec = FilterSpec(DatasetSpec("circles", "features"), target_size=500, train_size=250, slice_size=50, tau=0.6)
    view = compute.embedding_view(spec.dataset, "PCA")
    for mode, attr in (("p_last", "last_score"), ("p_removal", "removal_score")):
        field = fields.map_field(spec, mode)
        result = compute.run_filter(spec)
        np.testing.assert_array_equal(field.values, np.asarray(getattr(result, attr), dtype=float))
        layer = compute.map_layer(spec, view, mode, field=field)
        fig = field_charts.embedding_field_scatter(layer.frame, field, title="PCA")
        valued = fig.data[-1]
        assert valued.marker.colorbar.title.text == field.title and valued.marker.cmin == 0 and valued.marker.cmax == 1
        n_none = int(np.isnan(field.values).sum())
        assert sum(len(t.x) for t in fig.data) == result.kept.size and len(valued.x) == result.kept.size - n_none
        dense = compute.map_layer(spec, view, mode, max_points=10, bins=16, field=field)
        ref = density_values(view.projection.xy, field.values, bins=16)
        np.testing.assert_allclose(dense.values.mean, ref.mean, equal_nan=True)
        field_charts.embedding_field_density(dense, title="PCA")
    assert np.isnan(fields.map_field(spec, "p_removal").values[compute.run_filter(spec).kept]).all()


def test_density_values_is_the_mean_per_cell_of_a_brute_force_count():
    rng = np.random.default_rng(1)
    xy = rng.normal(size=(3_000, 2))
    values = np.where(rng.random(3_000) < 0.2, np.nan, rng.random(3_000))
    grid = density_values(xy, values, bins=5, extent=(-1, 1, -1, 1))
    edges = np.linspace(-1, 1, 6)
    for j in range(5):
        for i in range(5):
            inside = (
                (xy[:, 0] >= edges[i])
                & ((xy[:, 0] < edges[i + 1]) | ((i == 4) & (xy[:, 0] <= 1)))
                & (xy[:, 1] >= edges[j])
                & ((xy[:, 1] < edges[j + 1]) | ((j == 4) & (xy[:, 1] <= 1)))
            )
            assert grid.counts[j, i] == inside.sum()
            v = values[inside & ~np.isnan(values)]
            assert grid.n_valued[j, i] == len(v)
            if len(v):
                assert grid.mean[j, i] == pytest.approx(v.mean())


def test_difficulty_and_stability_are_offered_only_once_computed():
    spec = FilterSpec(DatasetSpec("circles", "features"), target_size=500, train_size=250, slice_size=50, tau=0.6)
    modes = fields.colour_modes(spec, dynamics=None, stability_seeds=5)
    assert "difficulty" not in modes and "stability" not in modes
    with pytest.raises(ValueError, match=r"^No Training dynamics of these rows"):
        fields.map_field(spec, "difficulty")
    with pytest.raises(ValueError, match=r"^Stability across seeds is not computed"):
        fields.map_field(spec, "stability", stability_seeds=5)


def test_the_map_title_starts_below_the_toolbar_and_is_wrapped():
    """Issue 29 item 7: at 390 px the chart's toolbar covered the map's title."""
    frame = pd.DataFrame(
        {
            "row": [0, 1],
            "x": [0.0, 1.0],
            "y": [0.0, 1.0],
            "label": ["a", "b"],
            "kept": [True, False],
            "removed_round": [-1, 1],
        }
    )
    title = "UMAP of Φ = partial input: sentence embedding (all-MiniLM-L6-v2) of the hypothesis"
    fig = charts.embedding_scatter(frame, "status", title=title, height=600)
    lines = fig.layout.title.text.split("<br>")
    assert all(len(line) <= charts.TITLE_CHARS for line in lines) and " ".join(lines) == title
    top_px = (1 - fig.layout.title.y) * 600
    assert fig.layout.title.yref == "container" and top_px == pytest.approx(charts.TOOLBAR_BAND)
    legend_px = (1 - fig.layout.legend.y) * 600
    assert legend_px >= top_px + 20 * len(lines) and fig.layout.margin.t > legend_px


def test_difficulty_and_stability_colour_the_map_once_computed_elsewhere():
    """Training dynamics recorded on the same dataset (its page's request) and Inspect's stability seeds: the map
    offers both and colours each row by its level / by the share of seeds that removed it."""
    from aflite_app.compute import dynamics, inspect_stability

    spec = FilterSpec(DatasetSpec("circles", "features"), target_size=500, train_size=250, slice_size=50, tau=0.6)
    dyn = dynamics.DynamicsSpec(spec.dataset, None, epochs=2, seed=0)
    dynamics.dynamics_record(dyn)
    inspect_stability.run_stability(spec, 2)
    modes = fields.colour_modes(spec, dynamics=dyn, stability_seeds=2)
    assert {"difficulty", "stability"} <= set(modes)
    level = fields.map_field(spec, "difficulty", dynamics=dyn)
    levels = dynamics.dynamics_levels(dyn, dynamics.LevelSpec()).levels.astype(str).to_numpy()
    assert level.kind == "category" and level.categories == ("easy", "ambiguous", "hard")
    assert [level.categories[int(c)] for c in level.values] == list(levels)
    view = compute.embedding_view(spec.dataset, "PCA")
    fig = field_charts.embedding_field_scatter(compute.map_layer(spec, view, "difficulty", field=level).frame, level)
    assert [t.name.split(" (")[0] for t in fig.data] == [n for n in level.categories if (levels == n).any()]
    dense = compute.map_layer(spec, view, "difficulty", max_points=10, bins=8, field=level)
    assert dense.grid.counts.sum() == 1_000 and dense.codes[-1] == "none"
    field_charts.embedding_field_density(dense)
    stable = fields.map_field(spec, "stability", stability_seeds=2)
    frame, _, _ = inspect_stability.inspect_stability(spec, 2)
    np.testing.assert_array_equal(stable.values, frame["removal_frequency"].to_numpy(dtype=float))
    assert set(np.unique(stable.values)) <= {0.0, 0.5, 1.0}
    other = dynamics.DynamicsSpec(DatasetSpec("digits", "mlp"), None, epochs=2, seed=0)
    assert "difficulty" not in fields.colour_modes(spec, dynamics=other)  # another dataset's rows: not offered
