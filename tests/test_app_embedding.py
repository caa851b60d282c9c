"""AppTest of the Embedding map page: PCA first, UMAP swapped in, colour control, Figure 1 and Table 3."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from conftest import plotly_figures
from plotly_figures import plotly_elements  # tests/ is on sys.path when pytest collects this file

from aflite_app.compute import datasets
from aflite_app.compute import embedding as compute

pytestmark = pytest.mark.slow


@pytest.fixture
def umap_gate(monkeypatch):
    """Replace the (slow, numba-compiling) UMAP fit by a fake that waits until the test opens the gate."""
    gate = threading.Event()

    def fake_umap(X, random_state=0):
        gate.wait(60)
        return np.asarray(X[:, :2], dtype=np.float32) * 10

    monkeypatch.setattr(compute, "umap_2d", fake_umap)
    monkeypatch.delenv("AFLITE_APP_UMAP", raising=False)
    yield gate
    gate.set()


def _map(at) -> dict:
    return plotly_figures(at)[0]


def _n_points(fig: dict) -> int:
    total = 0
    for trace in fig["data"]:
        x = trace["x"]
        if isinstance(x, dict):  # Plotly 7: {"dtype", "bdata"} (base64 of the raw array)
            total += len(np.frombuffer(__import__("base64").b64decode(x["bdata"]), dtype=np.dtype(x["dtype"])))
        else:
            total += len(x)
    return total


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_without_a_run_the_page_points_to_filter(app_test):
    at = app_test(page="pages/embedding.py")
    assert not at.exception
    assert any("Filter page first" in i.value for i in at.info)
    assert not plotly_elements(at)


def test_map_after_a_filter_run(app_test, umap_gate):
    at = app_test(page="pages/filter.py")
    assert not at.exception, at.exception
    at.switch_page("pages/embedding.py").run()
    assert not at.exception, at.exception
    n_rows = datasets.dataset("digits").n_rows

    # PCA is shown at once while UMAP computes in the background
    fig = _map(at)
    assert fig["layout"]["title"]["text"].startswith("PCA")
    assert fig["layout"]["dragmode"] == "lasso"
    assert _n_points(fig) == n_rows
    assert [t["name"].split(" (")[0] for t in fig["data"]] == ["kept", "removed"]
    assert "PCA (UMAP not ready yet)" in _captions(at) and "Computing UMAP" in _captions(at)
    bars = at.get("progress")  # the fit cannot report, so the bar moves with elapsed / estimate
    assert len(bars) == 1 and "Computing UMAP in the background" in bars[0].proto.text
    # issue 25: the first report has a Stop button and a time left (from the estimate, before any row is placed)
    assert "left" in bars[0].proto.text
    assert any(b.label == "Stop" for b in at.button)
    assert any("Nothing selected" in i.value for i in at.info)

    # the colour control changes the figure; moving it never re-runs AFLite
    at.selectbox(key="emb-colour").set_value("class").run()
    assert not at.exception
    fig = _map(at)
    assert len(fig["data"]) == 10 and _n_points(fig) == n_rows
    at.selectbox(key="emb-colour").set_value("round").run()
    fig = _map(at)
    assert "colorbar" in fig["data"][1]["marker"] and _n_points(fig) == n_rows

    # Figure 1: the class picker changes the heatmap; Table 3 is listed with the random control
    heat = plotly_figures(at)[1]
    assert heat["data"][0]["type"] == "heatmap" and heat["layout"]["title"]["text"].startswith("Class 0")
    at.selectbox(key="emb-sim-class-emb-map-digits-mlp").set_value(7).run()
    assert not at.exception
    heat = plotly_figures(at)[1]
    assert heat["layout"]["title"]["text"].startswith("Class 7")
    assert "over all" in _captions(at) and "Class 7" in _captions(at)
    table = at.dataframe[-1].value
    assert len(table) == 20 and any(c.startswith("random") for c in table.columns)
    assert "7 vs others" in list(table.index)
    assert {m.label for m in at.metric} >= {"After vs before", "After vs random subset of the same size"}

    # UMAP finishes: the next run shows it
    umap_gate.set()
    for _ in range(50):
        time.sleep(0.2)
        at.run()
        if _map(at)["layout"]["title"]["text"].startswith("UMAP"):
            break
    assert not at.exception
    fig = _map(at)
    assert fig["layout"]["title"]["text"].startswith("UMAP") and _n_points(fig) == n_rows
    assert "Shown: UMAP" in _captions(at)
    at.radio(key="emb-method").set_value("PCA").run()
    assert _map(at)["layout"]["title"]["text"].startswith("PCA")


def test_umap_stop_ends_the_job_and_it_can_be_started_again(app_test, monkeypatch):
    """Issue 25: Stop on the map's UMAP job ends it (PCA stays), and "Compute UMAP" starts it again."""
    fits = []

    def fake_umap_all(X, max_fit_rows, random_state=0, progress=None, stop=None, **kw):
        from aflite_core._child_process import ChildStopped

        fits.append(1)
        for _ in range(600):  # a fit that runs until it is stopped (at most 60 s)
            if stop is not None and stop():
                raise ChildStopped("the UMAP fit was stopped.")
            time.sleep(0.1)
        return np.asarray(X[:, :2], dtype=np.float32), np.arange(max_fit_rows)

    monkeypatch.setattr(compute, "umap_2d_all", fake_umap_all)
    monkeypatch.setattr(compute, "EMBED_MAX_ROWS", 500)  # digits' 1,438 rows: fitted on a sample, with a stop
    monkeypatch.setattr(compute, "_umap_attempts", {})
    monkeypatch.delenv("AFLITE_APP_UMAP", raising=False)
    at = app_test(page="pages/filter.py")
    at.switch_page("pages/embedding.py").run()
    assert not at.exception, at.exception
    bars = at.get("progress")
    assert len(bars) == 1 and "left" in bars[0].proto.text
    next(b for b in at.button if b.label == "Stop").click().run()
    assert not at.exception, at.exception
    for _ in range(50):
        if any("UMAP was stopped" in i.value for i in at.info):
            break
        time.sleep(0.2)
        at.run()
    assert any("UMAP was stopped" in i.value for i in at.info)
    assert _map(at)["layout"]["title"]["text"].startswith("PCA")
    assert fits == [1]
    next(b for b in at.button if b.label == "Compute UMAP").click().run()
    assert not at.exception, at.exception
    assert fits == [1, 1] and any(b.label == "Stop" for b in at.button)  # a new job, running
    next(b for b in at.button if b.label == "Stop").click().run()


def test_umap_turned_off_on_the_server_leaves_the_projection_on_pca(app_test, monkeypatch):
    """AFLITE_APP_UMAP=0: the radio shows PCA, disabled, with the reason - not UMAP while the map shows PCA."""
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    at = app_test(page="pages/filter.py")
    at.switch_page("pages/embedding.py").run()
    assert not at.exception, at.exception
    radio = at.radio(key="emb-method")
    assert radio.value == "PCA" and radio.disabled
    assert "UMAP is turned off on this server (AFLITE_APP_UMAP=0). The map uses PCA." in _captions(at)
    assert _map(at)["layout"]["title"]["text"].startswith("PCA")
    assert not at.get("progress") and not at.warning  # no UMAP job, no "Showing PCA instead" for a choice not made
    at.session_state["emb-method"] = "UMAP"  # e.g. a link that asked for UMAP
    at.run()
    assert not at.exception, at.exception
    assert at.radio(key="emb-method").value == "PCA"


def _tiny_dataset(shift: float):
    import pandas as pd

    from aflite_core import dataset_from_table

    rng = np.random.default_rng(0)
    y = np.repeat(["yes", "no"], 25)
    features = rng.normal(size=(50, 3)) + (y == "yes")[:, None] * shift
    frame = pd.DataFrame({"label": y, "text": [f"row {i}" for i in range(50)]})
    return dataset_from_table(frame, label_column="label", features=features, name="tiny")


def test_fifty_rows_with_strategy_greedy(app_test, monkeypatch):
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    at = app_test(page="pages/filter.py", uploads={"upload-tiny": _tiny_dataset(1.5)}, dataset_key="upload-tiny")
    at.selectbox(key="strategy-upload-tiny").set_value("greedy")
    at.button[0].click().run()  # the form's Run button
    assert not at.exception, at.exception
    at.switch_page("pages/embedding.py").run()
    assert not at.exception, at.exception
    assert _n_points(_map(at)) == 50
    # the reason is said under the radio, which shows PCA (not a warning about a UMAP choice the page made itself)
    assert "UMAP is turned off" in _captions(at) and at.radio(key="emb-method").value == "PCA"
    at.selectbox(key="emb-colour").set_value("round").run()
    assert not at.exception
    assert at.session_state["last_result_spec"].strategy == "greedy"
    assert sorted(at.dataframe[-1].value.index) == ["no", "no vs others", "yes", "yes vs others"]


def test_fifty_rows_with_nothing_removed(app_test, monkeypatch):
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    at = app_test(page="pages/filter.py", uploads={"upload-tiny": _tiny_dataset(0.0)}, dataset_key="upload-tiny")
    at.slider(key="tau").set_value(1.0).run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Rows removed"] == "0"
    at.switch_page("pages/embedding.py").run()
    assert not at.exception, at.exception
    assert _n_points(_map(at)) == 50
    assert [t["name"].split(" (")[0] for t in _map(at)["data"]] == ["kept", "removed"]
    assert any("no rows of class" in i.value for i in at.info)
    at.selectbox(key="emb-colour").set_value("round").run()
    assert not at.exception


def test_sample_rows_are_seeded_sorted_and_bounded():
    rows = compute.embedding_rows(50_000)
    assert len(rows) == compute.EMBED_MAX_ROWS and (np.diff(rows) > 0).all() and rows[-1] < 50_000
    np.testing.assert_array_equal(rows, compute.embedding_rows(50_000))
    np.testing.assert_array_equal(compute.embedding_rows(30), np.arange(30))


def test_large_data_maps_every_row_as_a_density_and_samples_only_the_knn_table(app_test, monkeypatch):
    """Above the points limit the map bins every row (issue 25; it used to draw a 500-row sample); Table 3 samples."""
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    monkeypatch.setattr(compute, "EMBED_MAX_ROWS", 500)  # digits (1,438 rows) counts as large here
    at = app_test(page="pages/filter.py")
    at.switch_page("pages/embedding.py").run()
    assert not at.exception, at.exception
    fig = _map(at)
    assert [t["type"] for t in fig["data"]] == ["heatmap"]
    z = fig["data"][0]["customdata"]
    counts = (
        np.frombuffer(__import__("base64").b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        if isinstance(z, dict)
        else np.asarray(z, dtype=float).ravel()
    )
    assert int(np.nansum(counts[0::2])) == 1_438  # every row of the run is in the image (rows, removed per cell)
    assert "1,438 rows are more than the 500" in _captions(at)
    assert "seeded random sample of 500 of the 1,438 rows" in _captions(at)  # Table 3 says how it samples
