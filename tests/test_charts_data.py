"""Chart builders of the Data page: sample images per class, rows per class."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aflite_app.charts import data as cb


def test_sample_grid_one_row_per_class():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 17, size=(30, 8, 8))
    y = np.repeat(np.arange(3), 10)
    y[-8:] = 1  # class 2 has only 2 images now
    fig = cb.sample_grid(images, y, ["zero", "one", "two"], per_class=5)
    (heat,) = fig.data
    z = np.asarray(heat.z, dtype=float)
    assert z.shape == (3 * 9, 5 * 9)
    assert fig.layout.meta["n_images"] == 5 + 5 + 2
    assert list(fig.layout.yaxis.ticktext) == ["zero", "one", "two"]
    assert fig.layout.yaxis.title.text == "class" and "pixels" in fig.layout.xaxis.title.text
    with pytest.raises(ValueError, match="shape"):
        cb.sample_grid(images.reshape(30, 64), y, ["a", "b", "c"])


def test_class_count_chart():
    counts = pd.Series([30, 20], index=["no", "yes"])
    fig = cb.class_count_chart(counts)
    (bar,) = fig.data
    assert list(bar.y) == ["no", "yes"] and list(bar.x) == [30, 20]
    assert len(set(bar.marker.color)) == 2
    assert fig.layout.xaxis.title.text == "rows" and fig.layout.yaxis.title.text == "class"


def test_artifact_statistics_chart_points_curve_and_names():
    from aflite_core.measures.artifact_statistics import artifact_statistics, significance_curve

    texts = ["nobody sleeps"] * 12 + ["a man sleeps outside"] * 12 + ["a woman eats"] * 12 + ["a cat <b>"] * 6
    labels = ["c"] * 12 + ["e"] * 12 + ["n"] * 12 + ["c", "e", "n"] * 2
    stats = artifact_statistics(texts, labels, min_count=6)
    stats["examples"] = [["nobody sleeps"] if t == "nobody" else [] for t in stats["token"]]
    fig = cb.artifact_statistics_chart(stats, n_labelled=3)
    points = [t for t in fig.data if t.mode == "markers"]
    legend = [t for t in points if t.showlegend]
    assert [t.name for t in legend] == ["c", "e", "n"]  # one colour per label, in label order, in the legend
    assert len({t.marker.color for t in legend}) == 3 and all(t.marker.size == 10 for t in legend)
    assert all(t.marker.opacity < 0.5 for t in points if not t.showlegend)  # the others faint, same colours
    shown = stats[stats["label_count"] > 0]
    assert sum(len(t.x) for t in points) == len(shown) == fig.layout.meta["n_points"]  # p̂ = 0 left out
    assert fig.layout.meta["n_significant"] == int(stats["significant"].sum()) > 0
    (curve,) = [t for t in fig.data if t.mode == "lines"]
    expected = significance_curve(
        np.asarray(curve.x), n_labels=3, n_tests=stats.attrs["n_tests"], alpha=stats.attrs["alpha"]
    )
    np.testing.assert_allclose(curve.y, expected)
    assert (np.asarray(curve.y) <= 1.0).all()  # only where a token can still reach significance
    (names,) = [t for t in fig.data if t.mode == "text"]
    assert len(names.text) == min(3, fig.layout.meta["n_significant"])
    assert fig.layout.xaxis.type == "log" and "p̂" in fig.layout.yaxis.title.text
    hover = " ".join(str(v) for t in points for v in t.customdata[:, 5])
    assert "nobody sleeps" in hover
    assert all("<b>" not in str(tok) for t in points for tok in t.customdata[:, 0])  # texts are escaped
    empty = cb.artifact_statistics_chart(stats.iloc[:0])
    assert empty.layout.meta["n_points"] == 0
