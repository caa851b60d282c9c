"""The Embedding map over every row of a 100,000-row run: density image, lasso over all rows, zoom to points, UMAP.

The run is written by the CLI in the test (seeded planted-bias data, 100,000 × 8; about 2 s) under a temporary
run root and opened through the Data page, as a researcher opens a large run. UMAP's fit is replaced by a fake (the
caption and the transform path are what is tested here; umap-learn itself is tested in tests/test_projection.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import plotly_figures

from aflite_app.compute import embedding as compute
from aflite_app.selection import Rows
from aflite_app.state import embedding_map_key, embedding_selection_key
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.measures.projection import PCA_FIT_ROWS, pca_2d_all

pytestmark = pytest.mark.slow

N_ROWS = 100_000


def _brute_in_polygon(xy: np.ndarray, px, py) -> np.ndarray:
    """Even-odd point-in-polygon over every row, one edge at a time (the reference the page must equal)."""
    x, y = xy[:, 0].astype(float), xy[:, 1].astype(float)
    inside = np.zeros(len(x), dtype=bool)
    for ax, ay, bx, by in zip(px, py, np.roll(px, -1), np.roll(py, -1)):
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = ax + (y - ay) * (bx - ax) / (by - ay)
        inside ^= ((ay > y) != (by > y)) & (x < cross)
    return inside


@pytest.fixture(scope="module")
def big_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    data = root / "data"
    data.mkdir()
    X, y, _ = make_planted_bias(N_ROWS, 8, random_state=0)
    X = X.astype(np.float32)
    np.save(data / "X.npy", X)
    (data / "y.txt").write_text("\n".join(np.array(["cat", "dog"])[y]) + "\n")
    args = ["filter", "--features", str(data / "X.npy"), "--labels", str(data / "y.txt"), "--target-size", "95000",
            "--train-size", "2000", "--slice-size", "2500", "--partitions", "4", "--seed", "2", "--quiet",
            "--out", str(root / "big" / "run1")]  # fmt: skip
    assert main(args) == 0
    return root, X


def _open_map(app_test, monkeypatch, root):
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    at = app_test(page="pages/data.py")
    at.selectbox(key="run-dir").set_value("big/run1")
    next(b for b in at.button if b.label == "Open run").click().run()
    assert not at.exception, at.exception
    at.switch_page("pages/embedding.py").run()
    assert not at.exception, at.exception
    return at


def _selection_key(at) -> str:
    spec = at.session_state["last_result_spec"]
    return embedding_selection_key(embedding_map_key(spec.dataset.key, spec.dataset.representation or "features"))


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_a_lasso_returns_every_row_inside_it_not_a_sample(app_test, monkeypatch, big_run):
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    root, X = big_run
    at = _open_map(app_test, monkeypatch, root)

    # every row is mapped: a density image of bins² cells, no per-row arrays
    fig = plotly_figures(at)[0]
    assert [t["type"] for t in fig["data"]] == ["heatmap"]
    assert "density image" in _captions(at) and "evaluated over every row" in _captions(at)
    assert f"PCA's axes fitted on {PCA_FIT_ROWS:,} rows" in _captions(at)

    # a lasso arrives as its geometry; the page's state machine evaluates it over all 100,000 rows
    xy, _, _ = pca_2d_all(X, max_fit_rows=PCA_FIT_ROWS, random_state=compute.EMBED_SEED)
    lo, hi = np.percentile(xy, [10, 90], axis=0)
    t = np.linspace(0, 2 * np.pi, 60, endpoint=False)
    px = (lo[0] + hi[0]) / 2 + (hi[0] - lo[0]) / 2 * np.cos(t)
    py = (lo[1] + hi[1]) / 2 + (hi[1] - lo[1]) / 2 * np.sin(t) * (1 + 0.3 * np.cos(3 * t))
    event = {"selection": {"points": [], "point_indices": [], "box": [], "lasso": [{"x": list(px), "y": list(py)}]}}
    sel_key = _selection_key(at)
    at.session_state[sel_key] = compute.after_event(at.session_state[sel_key], event, n_rows=N_ROWS, xy=xy)
    at.run()
    assert not at.exception, at.exception
    expected = _brute_in_polygon(xy, px, py)
    n = int(expected.sum())
    assert n > compute.EMBED_MAX_ROWS  # more than any 20,000-row sample could hold
    sampled = compute.embedding_rows(N_ROWS)
    assert np.setdiff1d(np.flatnonzero(expected), sampled).size > 0  # rows no sample drew
    assert list(at.session_state[sel_key].rows) == np.flatnonzero(expected).tolist()
    # kept as one read-only array of positions, not a Python int per row (issue 25: 418,000 of them at run B)
    held = at.session_state[sel_key]
    assert (
        isinstance(held.rows, Rows) and isinstance(held.baked, Rows) and isinstance(np.asarray(held.rows), np.ndarray)
    )
    assert any(f"**{n:,} rows selected**" in m.value for m in at.markdown)
    per_class = at.dataframe[0].value
    assert int(per_class["selected"].sum()) == n
    table = at.dataframe[1].value
    assert len(table) == 200  # a page of the selected rows

    # zoom to a small box: at most 20,000 rows in view are drawn as points (every one of them)
    box = {"selection": {"points": [], "box": [{"x": [lo[0], lo[0] + (hi[0] - lo[0]) / 6],
                                                 "y": [lo[1], lo[1] + (hi[1] - lo[1]) / 6]}], "lasso": []}}  # fmt: skip
    at.session_state[sel_key] = compute.after_event(at.session_state[sel_key], box, n_rows=N_ROWS, xy=xy)
    at.run()
    in_box = len(at.session_state[sel_key].rows)
    assert 0 < in_box <= compute.EMBED_MAX_ROWS
    at.button(key="emb-zoom").click().run()
    assert not at.exception, at.exception
    fig = plotly_figures(at)[0]
    assert {t["type"] for t in fig["data"]} <= {"scatter", "scattergl"}
    drawn = [int(r) for t in fig["data"] for r in _decoded(t["customdata"])]
    assert set(at.session_state[sel_key].rows) <= set(drawn)
    # the selection is drawn as selected on the zoomed points and still listed
    chosen = [int(_decoded(t["customdata"])[i]) for t in fig["data"] for i in t.get("selectedpoints", [])]
    assert sorted(chosen) == list(at.session_state[sel_key].rows)
    assert any(f"**{in_box:,} rows selected**" in m.value for m in at.markdown)
    assert "the zoomed box" in _captions(at)
    at.button(key="emb-unzoom").click().run()
    assert [t["type"] for t in plotly_figures(at)[0]["data"]] == ["heatmap"]


def _decoded(values) -> np.ndarray:
    if isinstance(values, dict):  # Plotly 7: base64 of the raw array
        import base64

        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values).ravel()


def test_umap_is_fitted_on_a_sample_and_applied_to_every_row(app_test, monkeypatch, big_run):
    monkeypatch.delenv("AFLITE_APP_UMAP", raising=False)
    calls = []

    def fake_umap_all(X, max_fit_rows, random_state=0, progress=None, **kw):
        calls.append((X.shape[0], max_fit_rows))
        if progress is not None:
            progress(X.shape[0], X.shape[0])
        return np.asarray(X[:, :2], dtype=np.float32) * 3, np.arange(max_fit_rows)

    monkeypatch.setattr(compute, "umap_2d_all", fake_umap_all)
    root, _ = big_run
    at = _open_map(app_test, monkeypatch, root)
    for _ in range(50):
        at.run()
        if plotly_figures(at)[0]["layout"]["title"]["text"].startswith("UMAP"):
            break
    assert not at.exception, at.exception
    assert calls == [(N_ROWS, compute.EMBED_MAX_ROWS)]
    assert f"UMAP fitted on {compute.EMBED_MAX_ROWS:,} rows" in _captions(at)
    assert f"applied to all {N_ROWS:,}" in _captions(at)
    assert f"seeded random sample of {compute.EMBED_MAX_ROWS:,} of the {N_ROWS:,} rows" in _captions(at)  # Table 3


def test_umap_progress_counts_the_rows_placed_by_transform():
    proj = compute.Projection("PCA", np.arange(3), np.zeros((3, 2), np.float32), 3, ("a", "b"), fit_rows=3)
    fraction, text = compute.describe_umap(
        compute.EmbeddingView(proj, "running", elapsed=30, estimate=600, fraction=0.5)
    )
    assert fraction == 0.5 and "50% of the rows placed" in text and "left" in text
    # before the transform reports, the bar moves with elapsed / estimate as before
    fraction, text = compute.describe_umap(compute.EmbeddingView(proj, "running", elapsed=30, estimate=600))
    assert fraction == pytest.approx(0.05) and "rows placed" not in text
    # the estimate of a fit on a sample grows with the rows transform places
    assert compute.umap_estimate(20_000, True, n_total=550_000) > compute.umap_estimate(20_000, True)
