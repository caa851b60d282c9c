"""Issue 25 at test size: a 100,000-row run written by the CLI, opened from the run root, on Inspect (its tabs
compute only when opened) and Predictability (histograms binned on the server: counts, not scores, go to the
browser)."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from conftest import plotly_figures

from aflite_core import AFLiteResult
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias

pytestmark = pytest.mark.slow

N_ROWS, DIM = 100_000, 8
RELATIVE = "planted/run"


@pytest.fixture(scope="module")
def big_root(tmp_path_factory):
    """A run root holding one CLI run of 100,000 × 8 seeded planted-bias rows (3 classes), built once."""
    root = tmp_path_factory.mktemp("runs")
    data = root / "planted" / "data"
    data.mkdir(parents=True)
    X, y, _ = make_planted_bias(N_ROWS, DIM, n_classes=3, random_state=0)
    np.save(data / "X.npy", X)
    (data / "y.txt").write_text("\n".join(np.array(["ant", "bee", "cat"])[y]) + "\n", encoding="utf-8")
    args = ["filter", "--features", str(data / "X.npy"), "--labels", str(data / "y.txt"), "--mmap"]
    args += ["--partitions", "16", "--train-size", "5000", "--slice-size", "10000", "--target-size", "70000"]
    assert main([*args, "--seed", "0", "--quiet", "--out", str(root / RELATIVE)]) == 0
    return root


@pytest.fixture
def opened(app_test, big_root, monkeypatch):
    """An AppTest session with the big run opened on the Data page (as "Open a run directory" does)."""
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(big_root))
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    at = app_test(page="pages/data.py")
    at.selectbox(key="run-dir").set_value(RELATIVE)
    next(b for b in at.button if b.label == "Open run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _open_tab(at, label: str):
    """Open one of Inspect's tabs as a click does: the tabs' key holds the open tab's label, and a change reruns."""
    from aflite_app.state import INSPECT_TAB_LABELS

    assert label in INSPECT_TAB_LABELS
    at.session_state["inspect-tab"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def _spy(monkeypatch):
    """Record every computation of "What the removed rows share" (the job's one compute function)."""
    from aflite_app.compute import inspect as compute

    calls, real = [], compute._compute_artifacts

    def spy(request, *args, **kwargs):
        calls.append(request)
        return real(request, *args, **kwargs)

    monkeypatch.setattr(compute, "_compute_artifacts", spy)
    return calls


def test_the_removed_rows_tab_computes_nothing_until_it_is_opened(opened, monkeypatch):
    from aflite_app.compute import inspect as compute

    calls = _spy(monkeypatch)
    at = opened
    at.switch_page("pages/inspect.py").run()
    assert not at.exception, at.exception
    assert len(at.dataframe[0].value) == 5_000  # the rows table first
    assert any(c.value.startswith(f"{N_ROWS:,} of {N_ROWS:,} rows match") for c in at.caption)
    assert calls == []
    at.selectbox(key="inspect-status").set_value("removed").run()  # the rows table's filters rerun the page
    _open_tab(at, "Classes")
    _open_tab(at, "Download / open a run")
    assert calls == [], "a tab that was never opened computed"
    assert not plotly_figures(_open_tab(at, "Rows"))  # only the open tab is drawn
    assert at.selectbox(key="inspect-status").value == "removed"  # the filters stay set while other tabs are open
    assert set(at.dataframe[0].value["status"]) == {"removed"}

    _open_tab(at, "What the removed rows share")
    assert len(calls) == 1
    request = calls[0]
    assert request.kind == "feature" and request.max_rows == compute.ARTIFACT_SAMPLE_ROWS
    assert any("AUC" in c.value for c in at.caption)
    sampled = next(c.value for c in at.caption if "seeded random sample" in c.value)
    assert f"of the {N_ROWS:,} rows" in sampled and f"at most {compute.ARTIFACT_SAMPLE_ROWS:,} removed" in sampled
    art = next(d.value for d in at.dataframe if "auc" in d.value.columns)
    assert set(art["label"]) == {"ant", "bee", "cat"}
    # once computed, it is kept: leaving the tab and coming back, or another class, computes nothing again
    _open_tab(at, "Rows")
    _open_tab(at, "What the removed rows share")
    at.selectbox(key=next(s.key for s in at.selectbox if s.key.startswith("inspect-art-class-"))).set_value("bee").run()
    assert not at.exception, at.exception
    assert len(calls) == 1


def test_the_removed_rows_tab_shows_progress_and_stops(opened, monkeypatch):
    """A slow comparison: the tab shows a progress bar and Stop, the page says what is still running, Stop ends it."""
    from aflite_app.compute import inspect as compute

    release, started = threading.Event(), threading.Event()
    real = compute._compute_artifacts

    def slow(request, result, data, report):
        started.set()
        release.wait(30)
        return real(request, result, data, report)  # its first progress report finds the Stop

    monkeypatch.setattr(compute, "_compute_artifacts", slow)
    at = opened
    at.switch_page("pages/inspect.py").run()
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.2")  # the page waits this long, then shows the progress
    try:
        _open_tab(at, "What the removed rows share")
        assert started.wait(10)
        assert at.button(key="inspect-art-stop")
        assert any("still computing" in c.value.lower() for c in _open_tab(at, "Rows").caption)
        assert at.dataframe and len(at.dataframe[0].value) == 5_000  # the rows table meanwhile
        _open_tab(at, "What the removed rows share")
        at.button(key="inspect-art-stop").click().run()
    finally:
        release.set()
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "120")
    at.run()
    assert not at.exception, at.exception
    assert any("Stopped before the comparison was done" in i.value for i in at.info)
    assert not any("still computing" in c.value.lower() for c in at.caption)
    monkeypatch.setattr(compute, "_compute_artifacts", real)
    at.button(key="inspect-art-again").click().run()  # start over: computed in full this time
    assert not at.exception, at.exception
    assert any("AUC" in c.value for c in at.caption)


def _values(v) -> np.ndarray:
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
    return np.asarray(v)


def test_predictability_sends_counts_not_scores(opened, big_root):
    from aflite_app.charts import runs as charts

    at = opened
    at.switch_page("pages/predictability.py").run()
    assert not at.exception, at.exception
    run = AFLiteResult.load(big_root / RELATIVE)
    edges = charts.histogram_edges(run)
    specs = [el.proto.spec for el in at.get("plotly_chart")]
    assert len(specs) == 2
    # O(bins) numbers, not O(rows): 100,000 float32 scores alone would be ~530 kB of base64
    assert all(len(spec) < 60_000 for spec in specs), [len(s) for s in specs]

    def check(rnd: int) -> None:
        hist = json.loads(at.get("plotly_chart")[0].proto.spec)
        assert hist["layout"]["title"]["text"].startswith(f"Round {rnd}:")
        p = run.scores[rnd - 1]
        scored, gone = ~np.isnan(p), run.removed_round == rnd
        for i in range(len(run.classes)):
            for side in (0, 1):
                trace = hist["data"][2 * i + side]
                rows = scored & (run.y == i) & (gone if side else ~gone)
                assert trace["type"] == "bar"
                assert _values(trace["y"]).tolist() == np.histogram(p[rows], bins=edges)[0].tolist()

    check(1)
    at.slider(key="pred-round").set_value(2).run()  # a round change: the new round's counts
    assert not at.exception, at.exception
    check(2)
