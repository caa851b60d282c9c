"""Figure 1 of the Embedding map computed over one class's rows equals the same figure computed over every row."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from aflite_app.compute import _stores, neighbourhoods
from aflite_core import aflite
from aflite_core.measures.geometry import similarity_matrices


@pytest.mark.parametrize("code", [0, 1, 2])
def test_figure_1_over_the_class_rows_equals_it_over_every_row(monkeypatch, code):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    X = (rng.normal(size=(300, 6)) + y[:, None]).astype(np.float32)
    result = aflite(X, y, target_size=200, n_partitions=4, train_size=40, slice_size=20, random_state=0)

    class Data:
        def representation(self, rep):
            return X

    Data.y = y
    monkeypatch.setattr(neighbourhoods, "dataset", lambda dspec, session=None: Data())
    monkeypatch.setattr(_stores, "budget", lambda: _stores.Budget(limit_bytes=1 << 24))
    spec = namedtuple("Spec", "dataset")(namedtuple("DSpec", "key representation")("toy", None))  # a memo key
    got = neighbourhoods._embedding_similarity(spec, code, 5, 3, result)
    want = similarity_matrices(X, y, result.kept, n_per_group=5, classes=[code], random_state=3)[0]
    sim = got["sim"]
    assert np.array_equal(sim.retained_rows, want.retained_rows) and np.array_equal(sim.removed_rows, want.removed_rows)
    assert np.array_equal(sim.matrix, want.matrix) and sim.label == want.label
    assert sim.mean_retained_all == pytest.approx(want.mean_retained_all, abs=1e-12)
    assert sim.mean_removed_all == pytest.approx(want.mean_removed_all, abs=1e-12)
    assert got["n_retained"] + got["n_removed"] == int((y == code).sum())
