"""Chart builders of the Inspect page, without Streamlit: traces, counts, titles, colours."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aflite_app.charts import inspect as charts_inspect
from aflite_app.charts.theme import KEPT, REMOVED
from aflite_core.measures.removed_artifacts import feature_artifacts, token_artifacts
from aflite_core.measures.stability import class_impact


def _values(v):
    """Plotly 7 may hold arrays as typed arrays; give a plain list."""
    return list(np.asarray(v).tolist()) if v is not None else []


def test_class_status_chart_stacks_kept_and_removed():
    y = np.repeat(["a", "b", "c"], 10)
    kept = np.ones(30, bool)
    kept[:9] = False  # class a decimated
    kept[10:12] = False
    impact = class_impact(y, kept)
    fig = charts_inspect.class_status_chart(impact)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [t.name for t in bars] == ["kept", "removed"]
    assert bars[0].marker.color == KEPT and bars[1].marker.color == REMOVED
    assert _values(bars[0].y) == [1, 8, 10] and _values(bars[1].y) == [9, 2, 0]
    assert fig.layout.barmode == "stack"
    assert fig.layout.xaxis.title.text == "class" and fig.layout.yaxis.title.text == "rows"
    labels = next(t for t in fig.data if t.type == "scatter").text
    assert "!" in labels[0] and "!" not in labels[1]  # the flagged class is marked


def test_stability_chart():
    counts = pd.DataFrame({"k": [0, 1, 2, 3], "removed": [0, 1, 2, 7], "kept": [9, 2, 1, 0]})
    fig = charts_inspect.stability_chart(counts, 3)
    assert [t.marker.color for t in fig.data] == [REMOVED, KEPT]
    assert _values(fig.data[0].x) == ["0 of 3", "1 of 3", "2 of 3", "3 of 3"]
    assert "seeds" in fig.layout.xaxis.title.text and fig.layout.yaxis.title.text == "rows"


def test_artifact_chart_tokens():
    texts = ["nobody sleeps"] * 6 + ["a man sleeps"] * 6
    frame = token_artifacts(texts, ["c"] * 12, [False] * 6 + [True] * 6, min_count=3, top_k=3)
    fig = charts_inspect.artifact_chart(frame, "c", kind="token")
    bar = fig.data[0]
    tokens = _values(bar.y)
    assert "nobody" in tokens and "man" in tokens
    colours = dict(zip(tokens, bar.marker.color))
    assert colours["nobody"] == REMOVED and colours["man"] == KEPT
    assert "log-odds" in fig.layout.xaxis.title.text and fig.layout.yaxis.title.text == "token"
    assert {t.name for t in fig.data[1:]} == {"skewed toward removed rows", "skewed toward kept rows"}


def test_artifact_chart_features_and_max_bars():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 12))
    kept = np.ones(200, bool)
    kept[:60] = False
    X[:60, 3] += 2
    frame = feature_artifacts(X, kept, top_k=12)
    frame.insert(3, "feature", [f"f{j}" for j in frame["dimension"]])
    fig = charts_inspect.artifact_chart(frame, "all", kind="feature", max_bars=5)
    bar = fig.data[0]
    assert len(_values(bar.y)) == 5
    assert _values(bar.y)[-1] == "f3"  # the strongest on top
    assert bar.marker.color[-1] == REMOVED
    assert "AUC" in fig.layout.xaxis.title.text
    with pytest.raises(ValueError, match="kind"):
        charts_inspect.artifact_chart(frame, "all", kind="pixels")


def test_pixel_artifact_chart_has_three_image_panels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 16))
    kept = np.ones(100, bool)
    kept[:40] = False
    X[:40, 5] += 3
    frame = feature_artifacts(X, kept, y=np.repeat(["a", "b"], 50), top_k=16)
    fig = charts_inspect.pixel_artifact_chart(frame, "a", (4, 4))
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 3
    z = np.asarray(heat[2].z, dtype=float)
    assert z.shape == (4, 4) and np.unravel_index(np.nanargmax(z), z.shape) == (1, 1)  # pixel 5 = row 1, col 1
    assert fig.layout.xaxis.title.text == "pixel column" and fig.layout.yaxis.title.text == "pixel row"
    assert heat[2].colorscale[0][1] == KEPT and heat[2].colorscale[-1][1] == REMOVED


def test_status_cells_use_the_kept_and_removed_colours():
    assert charts_inspect.status_cell_style("removed") == f"color: {REMOVED}; font-weight: 600"
    assert charts_inspect.status_cell_style("kept") == f"color: {KEPT}"


def test_artifact_shares_chart_kept_and_removed_per_pair():
    from aflite_core.measures.artifact_statistics import artifact_shares, artifact_statistics

    texts = ["nobody sleeps"] * 12 + ["a man sleeps outside"] * 12 + ["a woman eats"] * 12
    labels = ["c"] * 12 + ["e"] * 12 + ["n"] * 12
    kept = np.ones(36, dtype=bool)
    kept[:9] = False  # most "nobody" rows removed
    stats = artifact_statistics(texts, labels, min_count=6)
    shares = artifact_shares(texts, labels, kept, stats)
    fig = charts_inspect.artifact_shares_chart(shares, z_critical=stats.attrs["z_critical"], max_pairs=4)
    kept_trace = next(t for t in fig.data if t.name and "kept" in t.name)
    removed_trace = next(t for t in fig.data if t.name and "removed" in t.name)
    assert kept_trace.marker.color == KEPT and removed_trace.marker.color == REMOVED
    assert fig.layout.meta["n_pairs"] == min(4, len(shares))
    top = shares.sort_values("z", ascending=False).head(4)
    assert list(kept_trace.y)[-1] == f"{top['token'].iloc[0]} → {top['label'].iloc[0]}"  # strongest at the top
    nobody = list(removed_trace.y).index("nobody → c")
    assert removed_trace.x[nobody] == 1.0 and kept_trace.x[nobody] == pytest.approx(3 / 27)
    assert set(kept_trace.customdata[:, 7]) <= {"still significant", "no longer significant"}
