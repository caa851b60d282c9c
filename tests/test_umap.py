"""The real UMAP projection behind the embedding map (one numba warm-up for the whole test process).

The page tests use a stand-in so they do not wait for numba; this test runs umap-learn itself once, on the
bundled digits' representation, with NUMBA_CACHE_DIR set by tests/run.sh (app.py sets it too).
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_umap_maps_the_digits_into_class_clusters():
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    from aflite_app.compute import _umap_2d
    from aflite_core import load_digits_dataset

    data = load_digits_dataset()
    X = data.representation("mlp")[:600]
    y = data.y[:600]
    xy = _umap_2d(X)
    assert xy.shape == (600, 2) and xy.dtype == np.float32 and np.isfinite(xy).all()
    again = _umap_2d(X)
    assert np.allclose(xy, again)  # seeded: the same map every time
    # neighbours in the 2-D map share their class, as they do in Φ
    score = cross_val_score(KNeighborsClassifier(5), xy, y, cv=3).mean()
    assert score > 0.8
    with pytest.raises(ValueError, match="at least 5 rows"):
        _umap_2d(X[:3])
