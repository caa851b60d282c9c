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
