"""The app's group-aware runs (issue 28): the Data page's line and checkbox for NLI pairs, and its duplicates job."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
import pytest

from aflite_app.compute import datasets, runs
from aflite_app.specs import DatasetSpec
from aflite_app.state import DATA_PAGE, DATASET, LAST, UPLOADS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("data_text", ROOT / "test_app_data_text.py")
data_text = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(data_text)

PAGE = "pages/data.py"


def _nli_upload(app_test):
    at = app_test(page=PAGE)
    data_text._upload(at, "pairs.csv", data_text._csv(data_text.nli_frame(150)))
    at.button(key="use-upload").click().run()
    assert not at.exception, at.exception
    return at


def test_data_page_says_premises_stay_together_and_the_checkbox_changes_the_spec(app_test):
    at = _nli_upload(app_test)
    data = at.session_state[UPLOADS][at.session_state[DATASET]]
    assert data.pair is not None
    assert any("keep each premise's hypotheses together" in c.value for c in at.caption)
    assert at.checkbox(key="data-keep-premise").value is True
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    spec = at.session_state[LAST]
    assert spec.groups == "premise"
    run = runs.stored_result(spec)
    assert run is not None and run.params["groups"]["source"] == "premise"
    at.switch_page(PAGE).run()
    at.checkbox(key="data-keep-premise").uncheck().run()
    assert not any("keep each premise's hypotheses together" in c.value for c in at.caption)
    assert at.session_state[DATA_PAGE]["keep_premise"] is False
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    assert at.session_state[LAST].groups == ""
    assert "groups" not in runs.stored_result(at.session_state[LAST]).params


def test_bundled_data_has_no_premise_line(app_test):
    at = app_test(page=PAGE)
    assert not at.exception, at.exception
    assert not any("premise" in c.value for c in at.caption if "hypotheses together" in c.value)
    assert not [c for c in at.checkbox if c.key == "data-keep-premise"]


def test_the_duplicates_job_warns_in_one_line_and_groups_them_in_the_run(app_test):
    """The NLI upload repeats its pairs: the job's warning names how many rows, the checkbox groups them."""
    at = _nli_upload(app_test)
    key = at.session_state[DATASET]
    warnings = [w.value for w in at.warning if "have an exact or near duplicate" in w.value]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    at.checkbox(key=f"data-group-dups-{key}").check().run()
    assert key in at.session_state[DATA_PAGE]["group_duplicates"]
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    spec = at.session_state[LAST]
    assert spec.groups == "premise+duplicates"
    assert "duplicates" in runs.stored_result(spec).params["groups"]["source"]


def test_a_click_made_while_the_duplicate_search_runs_is_kept_and_no_rerun_follows(app_test, monkeypatch):
    """Up to the interactive size the search is awaited before the panel's widgets draw: the run that searched shows
    the finding, with no progress fragment whose end would rerun the page (that rerun could swallow a click)."""
    from aflite_core.data import duplicates as core_duplicates

    real, searches = core_duplicates.find_duplicates, []

    def slow_search(*args, **kwargs):
        searches.append(1)
        time.sleep(1.0)  # longer than the page's wait before a job shows its progress (below)
        return real(*args, **kwargs)

    monkeypatch.setattr(core_duplicates, "find_duplicates", slow_search)
    at = _nli_upload(app_test)
    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0.1")  # the server's default 1.5 s, shorter: the search is slow here
    key = at.session_state[DATASET]
    store = datasets._duplicates_store()
    for spec in [s for s in store.keys() if s.key == key]:
        store.pop(spec)  # searched afresh in the next run: the click below comes while the search runs
    at.session_state[DATA_PAGE].pop("dup_run", None)  # (where a background search kept its result)
    n = len(searches)
    at.checkbox(key="data-keep-premise").uncheck().run()  # the click, sent while the search runs
    assert not at.exception, at.exception
    assert at.checkbox(key="data-keep-premise").value is False  # the click kept
    assert at.session_state[DATA_PAGE]["keep_premise"] is False
    assert any("have an exact or near duplicate" in w.value for w in at.warning)  # the finding, in the same run
    assert not at.get("progress") and not [b for b in at.button if b.key == "dup-stop"]  # nothing left to rerun
    assert len(searches) == n + 1  # the search ran in this run, once


def test_above_the_interactive_size_the_duplicate_search_waits_to_be_asked(app_test, monkeypatch):
    """Opening a large dataset queues nothing: the search is a heavy job, started by its button (issue 25's queue)."""
    monkeypatch.setattr(datasets, "duplicates_on_request", lambda data: data.n_rows > 100)  # 150 rows: large here
    at = _nli_upload(app_test)
    assert at.session_state[DATA_PAGE].get("dup_run") is None  # nothing started by opening the page
    assert not [w for w in at.warning if "have an exact or near duplicate" in w.value]
    at.button(key="data-dup-start").click().run()
    assert not at.exception, at.exception
    assert at.session_state[DATASET] in at.session_state[DATA_PAGE]["dup_asked"]
    at.run()  # the job ran (its result waited for or stored)
    for _ in range(40):
        if any("have an exact or near duplicate" in w.value for w in at.warning):
            break
        at.run()
    assert any("have an exact or near duplicate" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "data-dup-start"]


def test_groups_choice_and_run_groups():
    data = datasets.bundled_dataset("digits")
    assert runs.groups_choice(data) == "" and datasets.groups_sentence(data) is None
    spec = runs.FilterSpec(DatasetSpec("digits"), 700, 400, 70, 0.75, groups="duplicates")
    with pytest.raises(ValueError, match="has not finished"):
        runs.run_groups(spec, data)
    with pytest.raises(ValueError, match="no premise"):
        runs.run_groups(spec.with_(groups="premise"), data)
    assert runs.run_groups(spec.with_(groups=""), data) == (None, None)
    assert np.asarray(runs.groups_choice(data, group_duplicates=True) == "duplicates")
