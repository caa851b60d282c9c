"""AppTest of the Inspect page: the rows table and its filters, artifacts, classes, stability, downloads, and
opening a saved run (real uploads through AppTest's file uploader)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import plotly_figures

from aflite_app import exports
from aflite_app.compute import runs

pytestmark = pytest.mark.slow

PAGE = "pages/inspect.py"


def _inspect_after_filter(app_test, **state):
    at = app_test(page="pages/filter.py", **state)
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _open_tab(at, label: str):
    """Open one of Inspect's tabs as a click does (the tabs rerun the page; only the open tab is drawn)."""
    from aflite_app.state import INSPECT_TAB_LABELS

    assert label in INSPECT_TAB_LABELS
    at.session_state["inspect-tab"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def _rows(at):
    """The rows table (the first dataframe of the page)."""
    return at.dataframe[0].value


def _shown(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Showing"))


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _tiny_text_dataset(signal: float = 1.5):
    import pandas as pd

    from aflite_core import dataset_from_table

    rng = np.random.default_rng(0)
    y = np.repeat(["yes", "no"], 25)
    words = np.array(["red", "green", "blue", "cat", "dog", "runs", "sleeps"])
    text = [" ".join(rng.choice(words, 3)) + (" never" if lab == "no" and i % 2 else "") for i, lab in enumerate(y)]
    X = rng.normal(size=(50, 3))
    X[:, 0] += np.where(y == "yes", signal, -signal)
    return dataset_from_table(
        pd.DataFrame({"label": y, "text": text}),
        label_column="label",
        text_columns=["text"],
        features=X,
        name="tiny text",
    )


def test_no_run_shows_the_info_and_the_uploader(app_test):
    at = app_test(page=PAGE)
    assert not at.exception
    assert any("Filter page first" in i.value for i in at.info)
    assert at.get("page_link")
    assert at.file_uploader(key="inspect-upload")
    assert not at.dataframe


def test_renders_after_a_filter_run_and_the_filters_change_the_rows(app_test):
    at = _inspect_after_filter(app_test)
    metrics = _metrics(at)
    n_removed = int(metrics["Rows removed"].replace(",", ""))
    assert "Filter page's current run" in _shown(at)
    rows = _rows(at)
    assert len(rows) == 1438
    assert rows["image"].str.startswith("data:image/png;base64,").all()  # digit thumbnails
    assert {"class", "status", "round", "p_first", "p_removal", "p_last", "p_rounds"} <= set(rows.columns)

    at.selectbox(key="inspect-status").set_value("removed").run()
    assert not at.exception
    removed = _rows(at)
    assert len(removed) == n_removed and set(removed["status"]) == {"removed"}

    at.multiselect(key="inspect-classes").set_value(["3"]).run()
    assert set(_rows(at)["class"]) == {"3"} and len(_rows(at)) < n_removed

    rounds = next(s for s in at.slider if s.key.startswith("inspect-rounds-"))
    rounds.set_value((1, 1)).run()
    assert not at.exception
    assert set(_rows(at)["round"]) <= {1}

    # downloads, artifacts (digits: pixel maps), classes: each in its tab, drawn once the tab is open
    labels = [d.label for d in _open_tab(at, "Download / open a run").download_button]
    assert labels == [
        "Kept rows · CSV",
        "Kept rows · Parquet",
        "Removed rows · CSV",
        "Run record · zip",
        "Dataset + manifest · zip",  # issue 28: the provenance export
    ]
    figs = plotly_figures(_open_tab(at, "What the removed rows share"))
    assert sum(t.get("type") == "heatmap" for f in figs for t in f["data"]) == 3
    assert any("log-odds" in c.value or "AUC" in c.value for c in at.caption)
    figs = plotly_figures(_open_tab(at, "Classes"))
    assert any(t.get("name") == "kept" for f in figs for t in f["data"])  # the class chart


def test_opening_a_saved_run_and_refusing_bad_files(app_test):
    at = _inspect_after_filter(app_test, dataset_key="circles")
    spec = at.session_state["last_result_spec"]
    payload = exports.run_zip_bytes(runs.stored_result(spec))

    _open_tab(at, "Download / open a run").file_uploader(key="inspect-upload").upload(
        "my-run.zip", payload, "application/zip"
    )
    at.run()
    assert not at.exception and not at.error
    assert "opened from 'my-run.zip'" in _shown(at)
    assert at.radio(key="inspect-which").value == "loaded"
    assert len(_rows(_open_tab(at, "Rows"))) == 1000
    _open_tab(at, "Download / open a run")

    at.file_uploader(key="inspect-upload").set_value(("broken.zip", b"not a zip at all", "application/zip"))
    at.run()
    assert not at.exception
    assert any("not a zip archive" in e.value for e in at.error)
    assert "opened from 'my-run.zip'" in _shown(at)  # nothing the user had is lost

    from aflite_core import aflite

    rng = np.random.default_rng(0)
    other = aflite(
        rng.normal(size=(300, 4)),
        rng.integers(0, 2, 300),
        target_size=200,
        train_size=60,
        slice_size=20,
        random_state=0,
    )
    at.file_uploader(key="inspect-upload").set_value(("other.zip", exports.run_zip_bytes(other), "application/zip"))
    at.run()
    assert not at.exception
    assert any("300 rows" in e.value and "1,000 rows" in e.value for e in at.error)
    assert "opened from 'my-run.zip'" in _shown(at)

    at.radio(key="inspect-which").set_value("filter").run()
    assert "Filter page's current run" in _shown(at)
    at.button(key="inspect-forget").click().run()
    assert not at.exception
    assert not at.radio and "Filter page's current run" in _shown(at)


def test_stability_across_seeds_adds_a_column_and_a_summary(app_test):
    at = _inspect_after_filter(app_test, dataset_key="circles")
    assert "seed_frequency" not in _rows(at).columns
    _open_tab(at, "Stability across seeds")
    at.number_input(key="inspect-n-seeds").set_value(2)
    at.checkbox(key="inspect-stability-on").check().run()
    assert not at.exception, at.exception
    metrics = _metrics(at)
    assert "Robust removals" in metrics and "Mean Jaccard of removed sets" in metrics
    assert any(t.get("name") == "removed in this run" for f in plotly_figures(at) for t in f["data"])
    rows = _rows(_open_tab(at, "Rows"))  # the seeds chosen in their tab stay chosen
    assert "seed_frequency" in rows.columns
    removed = rows["status"] == "removed"
    assert (rows.loc[removed, "seed_frequency"] >= 0.5).all()  # this run is one of the seeds


def test_nothing_removed(app_test):
    at = app_test(
        page="pages/filter.py", uploads={"upload-noise": _tiny_text_dataset(signal=0.0)}, dataset_key="upload-noise"
    )
    at.slider(key="tau").set_value(1.0).run()
    assert not at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert _metrics(at)["Rows removed"] == "0"
    assert any("Nothing to compare" in i.value for i in _open_tab(at, "What the removed rows share").info)
    _open_tab(at, "Rows")
    at.selectbox(key="inspect-status").set_value("removed").run()
    assert not at.exception and len(_rows(at)) == 0


def test_greedy_on_a_small_text_dataset(app_test):
    at = app_test(page="pages/filter.py", uploads={"upload-tiny": _tiny_text_dataset()}, dataset_key="upload-tiny")
    at.selectbox(key="strategy-upload-tiny").set_value("greedy")
    at.button[0].click().run()  # the form's Run button
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    rows = _rows(at)
    assert len(rows) == 50 and "text" in rows.columns and "p_rounds" not in rows.columns  # greedy: no per-round
    at.text_input(key="inspect-query").set_value("never").run()
    assert not at.exception
    found = _rows(at)
    assert 0 < len(found) < 50 and found["text"].str.contains("never").all()
    _open_tab(at, "What the removed rows share")
    assert any(t.get("type") == "bar" for f in plotly_figures(at) for t in f["data"])


def _nli_text_dataset():
    from test_app_data_text import nli_frame

    from aflite_core import dataset_from_table

    return dataset_from_table(
        nli_frame(240).assign(pair_id=[f"pair-{i}" for i in range(240)]),
        label_column="label",
        id_column="pair_id",
        pair=("premise", "hypothesis"),
        text_features=True,
        name="planted nli",
    )


def test_label_revealing_words_and_which_ones_the_run_removed(app_test):
    at = app_test(
        page="pages/filter.py",
        uploads={"upload-nli": _nli_text_dataset()},
        dataset_key="upload-nli",
        representation="tfidf_hypothesis",
    )
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    # the rows table: the user's ids, and what they came for first
    rows = _rows(at)
    assert rows["id"].str.startswith("pair-").all()
    order = list(at.dataframe[0].proto.column_order)  # the texts first (wrapped), then the id (issue 28)
    assert order[:7] == ["premise", "hypothesis", "id", "class", "status", "round", "p_first"]
    assert order[-1] == "row" and at.dataframe[0].proto.row_height > 64  # Streamlit wraps text above 64 px
    metrics = _metrics(_open_tab(at, "Label-revealing words"))
    n_pairs = int(metrics["Significant pairs (all rows)"])
    assert n_pairs >= 3 and 0 <= int(metrics["No longer significant among kept rows"]) <= n_pairs
    figures = plotly_figures(at)
    gardner = next(f for f in figures if "n_significant" in f["layout"].get("meta", {}))
    assert gardner["layout"]["meta"]["n_significant"] == n_pairs
    shares_chart = next(f for f in figures if "n_pairs" in f["layout"].get("meta", {}))
    assert shares_chart["layout"]["meta"]["n_pairs"] == min(n_pairs, 20)
    shares = next(d.value for d in at.dataframe if "share_removed" in d.value.columns)
    assert {"nobody", "outside"} <= set(shares["token"])
    assert (shares["count_kept"] + shares["count_removed"] == shares["count"]).all()
    # the two tests are named, so they cannot be read as contradicting each other (each in its tab)
    text = " ".join(m.value for m in at.markdown)
    assert "Gardner et al., 2021" in text
    text = " ".join(m.value for m in _open_tab(at, "What the removed rows share").markdown)
    assert "(log-odds test)" in text


def test_a_chart_bar_link_filters_the_rows_until_removed(app_test):
    from aflite_app.state import INSPECT_FILTER

    at = _inspect_after_filter(app_test)
    every = _rows(at)
    at.session_state[INSPECT_FILTER] = {"round": 1, "class": "3"}
    at.run()
    assert not at.exception, at.exception
    linked = _rows(at)
    expected = every[(every["round"] == 1).fillna(False) & (every["class"] == "3")]
    assert len(linked) == len(expected) > 0
    assert set(linked["class"]) == {"3"} and set(linked["round"]) == {1}
    assert any("rows removed in round 1 of class '3'" in i.value for i in at.info)
    # a blue "stayed" bar of the Predictability histogram: the rows of round 1 that were not removed in it
    at.session_state[INSPECT_FILTER] = {"round": 1, "class": "3", "status": "stayed"}
    at.run()
    stayed = _rows(at)
    expected = every[~(every["round"] == 1).fillna(False) & (every["class"] == "3")]
    assert len(stayed) == len(expected) > 0 and not (stayed["round"] == 1).fillna(False).any()
    assert any("rows that stayed in round 1 of class '3'" in i.value for i in at.info)
    at.session_state[INSPECT_FILTER] = {"round": None, "class": "5"}  # a class bar: every row of the class
    at.run()
    assert set(_rows(at)["class"]) == {"5"} and (_rows(at)["status"] == "kept").any()
    at.button(key="inspect-clear-link").click().run()
    assert not at.exception
    assert INSPECT_FILTER not in at.session_state and len(_rows(at)) == len(every)
    assert not any("bar you clicked" in i.value for i in at.info)


def test_a_stopped_stability_report_shows_the_finished_seeds_and_continues(app_test, monkeypatch):
    """A report stopped in its last seed shows the seeds finished, and Continue runs only the missing one."""
    from types import SimpleNamespace

    from aflite_app.compute import inspect_stability as compute

    real = compute.prepare_run
    ran = []

    def stop_in_seed_plus_2(spec, **kwargs):  # kwargs: the session's data the page passes on
        base = at.session_state["last_result_spec"].seed
        if spec.seed == base + 2:
            return lambda callback: SimpleNamespace(stopped=True)  # as if Stop came during this seed
        ran.append(spec.seed)
        return real(spec, **kwargs)

    at = _inspect_after_filter(app_test, dataset_key="circles")
    monkeypatch.setattr(compute, "prepare_run", stop_in_seed_plus_2)
    _open_tab(at, "Stability across seeds")
    at.number_input(key="inspect-n-seeds").set_value(3)
    at.checkbox(key="inspect-stability-on").check().run()
    assert not at.exception, at.exception
    assert any("Stopped: 2 of 3 seeds finished" in w.value for w in at.warning)
    assert any("Stability over the 2 seeds finished" in m.value for m in at.markdown)
    assert "Robust removals" in _metrics(at)
    assert "Download / open a run" in [t.label for t in at.tabs]  # the other tabs are there as usual
    assert "seed_frequency" not in _rows(_open_tab(at, "Rows")).columns  # the rows table waits for the full report
    _open_tab(at, "Stability across seeds")

    monkeypatch.setattr(compute, "prepare_run", real)
    at.button(key="inspect-stab-continue").click().run()
    assert not at.exception, at.exception
    assert not at.warning
    assert not any("seeds finished" in m.value for m in at.markdown)
    assert "seed_frequency" in _rows(_open_tab(at, "Rows")).columns
    assert len(ran) == 1  # before the stop: seed + 1 only; Continue ran the missing seed with the real runner
