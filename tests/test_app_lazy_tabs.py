"""Issue 25 at test size: a 100,000-row run written by the CLI, opened from the run root, on Inspect (its tabs
compute only when opened) and Predictability (histograms binned on the server: counts, not scores, go to the
browser)."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from conftest import plotly_figures
from plotly_figures import plotly_elements  # tests/ is on sys.path when pytest collects this file

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
    from aflite_app.compute import inspect_artifacts as compute

    calls, real = [], compute._compute_artifacts

    def spy(request, *args, **kwargs):
        calls.append(request)
        return real(request, *args, **kwargs)

    monkeypatch.setattr(compute, "_compute_artifacts", spy)
    return calls


def test_the_removed_rows_tab_computes_nothing_until_it_is_opened(opened, monkeypatch):
    from aflite_app.compute import inspect_artifacts as compute

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
    from aflite_app.compute import inspect_artifacts as compute

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
    specs = [el.proto.spec for el in plotly_elements(at)]
    assert len(specs) == 2
    # O(bins) numbers, not O(rows): 100,000 float32 scores alone would be ~530 kB of base64
    assert all(len(spec) < 60_000 for spec in specs), [len(s) for s in specs]

    def check(rnd: int) -> None:
        hist = json.loads(plotly_elements(at)[0].proto.spec)
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


# -- "Label-revealing words": a small run recorded with its text table (``filter --table``) ------------------------
TEXT_ROWS = 3000
TEXT_RUN = "texts/run"


@pytest.fixture(scope="module")
def text_root(tmp_path_factory):
    """A run root holding one CLI run of 3,000 seeded rows recorded with a table whose text plants "nobody"."""
    import pandas as pd

    root = tmp_path_factory.mktemp("textruns")
    inputs = root / "inputs"
    inputs.mkdir()
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, TEXT_ROWS)
    X = rng.normal(size=(TEXT_ROWS, 8)).astype(np.float32)
    X[:, 0] += 1.5 * y
    np.save(inputs / "X.npy", X)
    (inputs / "y.txt").write_text("\n".join(np.array(["neg", "neu", "pos"])[y]) + "\n", encoding="utf-8")
    ids = np.array([f"doc-{i:05d}" for i in range(TEXT_ROWS)])
    pd.DataFrame({"id": ids}).to_csv(inputs / "ids.csv", index=False)
    words = np.array(["red", "green", "blue", "cat", "dog", "runs", "sleeps"])
    text = [" ".join(rng.choice(words, 3)) + (" nobody" if lab == 0 and i % 2 else "") for i, lab in enumerate(y)]
    pd.DataFrame({"doc": ids, "text": text}).to_csv(inputs / "t.csv", index=False)
    args = ["filter", "--features", str(inputs / "X.npy"), "--labels", str(inputs / "y.txt")]
    args += ["--ids", str(inputs / "ids.csv"), "--table", str(inputs / "t.csv"), "--id-column", "doc"]
    args += ["--target-size", "2000", "--train-size", "600", "--slice-size", "200", "--seed", "1", "--quiet"]
    assert main([*args, "--copy-inputs", "--out", str(root / TEXT_RUN)]) == 0
    return root


@pytest.fixture
def text_opened(app_test, text_root, monkeypatch):
    """An AppTest session with the text run opened on the Data page, then on Inspect."""
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(text_root))
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    at = app_test(page="pages/data.py")
    at.selectbox(key="run-dir").set_value(TEXT_RUN)
    next(b for b in at.button if b.label == "Open run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    at.switch_page("pages/inspect.py").run()
    assert not at.exception, at.exception
    return at


def _words_shown(at) -> bool:
    """The tab's result is drawn: the summary sentence and the shares of the planted token."""
    said = any("(token, label) pairs are significant" in c.value for c in at.caption)
    shares = [d.value for d in at.dataframe if "share_removed" in d.value.columns]
    return said and bool(shares) and "nobody" in set(shares[0]["token"])


def test_the_words_tab_computes_nothing_until_it_is_opened(text_opened, monkeypatch):
    from aflite_app.compute import inspect_artifacts as compute

    calls, real = [], compute._compute_words

    def spy(request, *args, **kwargs):
        calls.append(request)
        return real(request, *args, **kwargs)

    monkeypatch.setattr(compute, "_compute_words", spy)
    at = text_opened
    assert len(at.dataframe[0].value) == TEXT_ROWS  # the rows table, with the table's text
    _open_tab(at, "Classes")
    _open_tab(at, "What the removed rows share")
    _open_tab(at, "Rows")
    assert calls == [], "the words tab computed before it was opened"
    assert _words_shown(_open_tab(at, "Label-revealing words"))
    assert len(calls) == 1 and calls[0].source == "text" and calls[0].min_count == 10
    # kept: leaving the tab and coming back computes nothing again; another α is another request
    _open_tab(at, "Rows")
    assert _words_shown(_open_tab(at, "Label-revealing words")) and len(calls) == 1
    at.selectbox(key="inspect-words-alpha").set_value(0.05).run()
    assert not at.exception, at.exception
    assert len(calls) == 2 and calls[1].alpha == 0.05 and _words_shown(at)


def _slow_words(monkeypatch):
    """A words job that reports its first block, then waits for ``release`` before computing in full."""
    from aflite_app.compute import inspect_artifacts as compute

    release, started = threading.Event(), threading.Event()
    real = compute._compute_words

    def slow(request, result, data, report):
        report(compute.ArtifactProgress(1, 4, "Testing the tokens of 3,000 texts"))
        started.set()
        release.wait(30)
        return real(request, result, data, report)  # its first progress report finds a Stop

    monkeypatch.setattr(compute, "_compute_words", slow)
    return release, started, real


def test_the_words_tab_shows_progress_then_its_table(text_opened, monkeypatch):
    release, started, _ = _slow_words(monkeypatch)
    at = text_opened
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.2")  # the page waits this long, then shows the progress
    try:
        _open_tab(at, "Label-revealing words")
        assert started.wait(10)
        at.run()
        assert any("Testing the tokens of 3,000 texts" in p.proto.text for p in at.get("progress"))
        assert at.button(key="inspect-words-stop")
        assert not _words_shown(at)
        rows = _open_tab(at, "Rows")
        assert any("still computing" in c.value.lower() and "Label-revealing words" in c.value for c in rows.caption)
        assert len(at.dataframe[0].value) == TEXT_ROWS  # the rows table meanwhile
    finally:
        release.set()
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "120")
    _open_tab(at, "Label-revealing words")  # the page's first line may be drawn while the job ends
    assert _words_shown(at)
    at.run()
    assert _words_shown(at)
    assert not any("still computing" in c.value.lower() for c in at.caption)


def test_the_words_tab_stops(text_opened, monkeypatch):
    from aflite_app.compute import inspect_artifacts as compute

    release, started, real = _slow_words(monkeypatch)
    at = text_opened
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.2")
    try:
        _open_tab(at, "Label-revealing words")
        assert started.wait(10)
        at.button(key="inspect-words-stop").click().run()
    finally:
        release.set()
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "120")
    at.run()
    assert not at.exception, at.exception
    assert any("Stopped before the tokens were tested" in i.value for i in at.info)
    assert not any("still computing" in c.value.lower() for c in at.caption)
    assert not _words_shown(at)
    monkeypatch.setattr(compute, "_compute_words", real)
    at.button(key="inspect-words-again").click().run()  # start over: computed in full this time
    assert not at.exception, at.exception
    assert _words_shown(at)


def test_the_words_tab_above_the_interactive_size_waits_its_turn_in_the_queue(text_opened, monkeypatch):
    """A heavy job only above the interactive size (as compute.runs decides): here that size is lowered below 3,000."""
    from aflite_app.compute import _stores
    from aflite_app.compute import inspect_artifacts as compute

    queued, real = [], compute.heavy

    def spy(target, what):
        queued.append(what)
        return real(target, what)

    monkeypatch.setattr(compute, "heavy", spy)
    at = text_opened
    assert _words_shown(_open_tab(at, "Label-revealing words"))
    assert queued == []  # 3,000 rows: interactive
    monkeypatch.setattr(_stores, "MAX_INTERACTIVE_ROWS", 2_000)
    at.selectbox(key="inspect-words-alpha").set_value(0.05).run()
    assert not at.exception, at.exception
    assert queued == [f"token statistics of {TEXT_ROWS:,} texts"] and _words_shown(at)


def test_the_words_job_reports_every_pass_and_computes_what_the_data_page_does():
    """The words job's statistics (test, then examples) report progress monotonically and equal the cached ones."""
    import pandas as pd

    from aflite_app.compute import datasets
    from aflite_core import dataset_from_table

    rng = np.random.default_rng(1)
    n = 25_000
    y = rng.integers(0, 3, n)
    words = np.array(["red", "green", "blue", "cat", "dog"])
    text = [" ".join(rng.choice(words, 3)) + (" nobody" if lab == 0 and i % 2 else "") for i, lab in enumerate(y)]
    table = pd.DataFrame({"text": text, "label": np.array(["neg", "neu", "pos"])[y]})
    data = dataset_from_table(table, label_column="label", text_columns=["text"], features=np.zeros((n, 2)))
    calls = []
    stats = datasets.word_statistics(data, "text", 10, 0.01, lambda done, total: calls.append((done, total)))
    assert {t for _, t in calls} == {2 * n}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] == 0 and max(done) > n  # the examples' pass reported too
    plain = datasets.word_statistics(data, "text", 10, 0.01)
    pd.testing.assert_frame_equal(stats, plain)
    assert "nobody" in set(stats.loc[stats["significant"], "token"])
