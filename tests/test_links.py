"""Shareable, reload-proof views (issue #17): the view in the URL, uploads behind an unguessable token."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aflite_app import links
from aflite_app.compute import uploads
from aflite_app.compute.datasets import bundled_dataset
from aflite_app.state import DATASET, REPRESENTATION, TAU, UPLOADS, filter_key


def _upload():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(60, 3)).round(3), columns=["a", "b", "c"])
    frame["label"] = np.where(frame["a"] > 0, "yes", "no")
    out = uploads.load_upload(
        frame.to_csv(index=False).encode(),
        "t.csv",
        uploads.UploadOptions(label_column="label", feature_columns=("a", "b", "c")),
    )
    assert out.ok
    return out.key, out.dataset


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_view_round_trips_through_the_url():
    session = {
        DATASET: "planted",
        REPRESENTATION: "features",
        TAU: 0.6,
        filter_key("k", "planted"): 80,
        filter_key("model", "planted"): "ridge",
    }
    params = links.view_params(session)
    assert params == {"dataset": "planted", "rep": "features", "k": "80", "model": "ridge", "tau": "0.6"}
    fresh: dict = {}
    assert links.apply_url(fresh, params, None, bundled_dataset) is None
    assert fresh[DATASET] == "planted" and fresh[REPRESENTATION] == "features" and fresh[TAU] == 0.6
    assert fresh[filter_key("k", "planted")] == 80 and fresh[filter_key("model", "planted")] == "ridge"
    assert links.apply_url(fresh, {"dataset": "digits"}, None, bundled_dataset) is None  # only once a session
    assert fresh[DATASET] == "planted"


def test_hand_edited_values_are_clamped_or_ignored():
    fresh: dict = {}
    links.apply_url(
        fresh,
        {"dataset": "digits", "n": "999999", "t": "-5", "model": "svm", "tau": "7", "rep": "x"},
        None,
        bundled_dataset,
    )
    n_rows = bundled_dataset("digits").n_rows
    assert fresh[filter_key("target", "digits")] == n_rows - 1
    assert fresh[filter_key("train", "digits")] == bundled_dataset("digits").n_classes + 1
    assert filter_key("model", "digits") not in fresh and TAU not in fresh and fresh.get(REPRESENTATION) is None
    msg = links.apply_url({}, {"dataset": "secret-dataset"}, None, bundled_dataset)
    assert "does not have" in msg


def test_an_upload_is_reachable_only_through_its_token_and_expires():
    clock = Clock()
    vault = links.UploadVault(max_bytes=10 * 2**20, ttl_seconds=3600, clock=clock)
    key, data = _upload()
    session = {DATASET: key, UPLOADS: {key: data}}
    params = links.view_params(session, vault)
    token = params["dataset"].removeprefix(links.UPLOAD_PREFIX)
    assert len(token) >= 22  # 128 random bits, not derived from the content
    assert key[7:] not in token
    reloaded: dict = {}
    assert links.apply_url(reloaded, params, vault, bundled_dataset) is None
    (new_key,) = reloaded[UPLOADS]
    assert reloaded[DATASET] == new_key and reloaded[UPLOADS][new_key] is data
    other: dict = {}
    assert "no longer kept" in links.apply_url(
        other, {"dataset": links.UPLOAD_PREFIX + "guess"}, vault, bundled_dataset
    )
    clock.now += 3601
    expired: dict = {}
    message = links.apply_url(expired, params, vault, bundled_dataset)
    assert message.startswith("The uploaded dataset of this link is no longer kept") and message.count(".") <= 2
    assert UPLOADS not in expired


def test_the_vault_keeps_at_most_its_size_oldest_first():
    _, data = _upload()
    size = links.dataset_bytes(data)
    vault = links.UploadVault(max_bytes=int(2.5 * size), ttl_seconds=3600)
    tokens = [vault.put(data) for _ in range(3)]
    with pytest.raises(KeyError):
        vault.get(tokens[0])
    assert vault.get(tokens[2]) is data
    assert links.UploadVault(max_bytes=size - 1, ttl_seconds=60).put(data) is None
    assert links.UploadVault(max_bytes=10 * size, ttl_seconds=0).put(data) is None  # AFLITE_UPLOAD_TTL_HOURS=0


def test_the_app_reads_and_writes_the_url(app_test):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update({"dataset": "planted", "tau": "0.6"})
    at.run()
    assert not at.exception
    assert at.session_state[DATASET] == "planted" and at.session_state[TAU] == 0.6
    assert at.query_params["dataset"] == ["planted"] or at.query_params["dataset"] == "planted"


def test_a_reload_keeps_the_upload(app_test):
    key, data = _upload()
    at = app_test(**{UPLOADS: {key: data}, DATASET: key})
    assert not at.exception
    link = dict(at.query_params)
    value = link["dataset"][0] if isinstance(link["dataset"], list) else link["dataset"]
    assert value.startswith(links.UPLOAD_PREFIX)
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)  # a reload: a new session, same server
    again.query_params.update({"dataset": value})
    again.run()
    assert not again.exception and not again.warning
    assert again.session_state[DATASET].startswith("upload-")
    assert again.session_state[UPLOADS][again.session_state[DATASET]].n_rows == data.n_rows


def test_a_link_to_the_predictability_page_shows_the_linked_run(app_test):
    from conftest import ROOT, plotly_figures
    from streamlit.testing.v1 import AppTest

    first = app_test(page="pages/filter.py")  # a user runs the Filter page and copies the link
    link = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(first.query_params).items()}
    assert {"dataset", "n", "t", "k", "m", "tau", "model", "strategy", "seed"} <= set(link)
    kept = next(m.value for m in first.metric if m.label == "Rows kept")
    other = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)  # a colleague opens the link
    other.query_params.update(link)
    other.run()
    other.switch_page("pages/predictability.py").run()
    assert not other.exception and not other.info
    assert len(plotly_figures(other)) == 2
    spec = other.session_state["last_result_spec"]
    assert spec.target_size == int(link["n"]) and spec.tau == float(link["tau"])
    other.switch_page("pages/filter.py").run()
    assert next(m.value for m in other.metric if m.label == "Rows kept") == kept


def test_a_link_to_inspect_or_dynamics_shows_the_linked_run_not_a_dead_end(app_test):
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    first = app_test(page="pages/filter.py", **{DATASET: "circles", TAU: 0.6})  # a user copies a Filter link
    link = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(first.query_params).items()}
    assert link["dataset"] == "circles" and link["tau"] == "0.6"
    shown = {  # what each page shows of the run
        "pages/inspect.py": "**Showing the Filter page's current run**",
        "pages/dynamics.py": "**AFLite removed ",
    }
    for page, marker in shown.items():
        other = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)  # a colleague opens it on that page
        other.query_params.update(link)
        other.run()
        other.switch_page(page).run()
        assert not other.exception, other.exception
        assert not any("Run AFLite on the Filter page" in i.value for i in other.info), page
        spec = other.session_state["last_result_spec"]
        assert spec.dataset.key == "circles" and spec.tau == 0.6 and spec.target_size == int(link["n"])
        assert any(m.value.startswith(marker) for m in other.markdown), page


def test_a_bar_link_is_dropped_when_another_run_is_shown():
    from aflite_app.state import INSPECT_FILTER, LAST, DatasetSpec, FilterSpec, open_in_inspect, set_last_run

    run = FilterSpec(DatasetSpec("circles", "features"), 500, 250, 50, 0.6)
    session: dict = {LAST: run}
    open_in_inspect(session, 4, "0")
    set_last_run(session, run)  # the Filter page shows the same run again (a rerun, a reload of the page)
    assert session[INSPECT_FILTER] == {"round": 4, "class": "0", "status": "removed"}
    set_last_run(session, run.with_(tau=0.7))  # the user moved τ: round 4 of class '0' is another set of rows
    assert INSPECT_FILTER not in session
    open_in_inspect(session, 2, "1", "stayed")
    set_last_run(session, None)  # a stopped run
    assert INSPECT_FILTER not in session


def test_inspect_forgets_a_bar_of_an_earlier_run(app_test):
    from aflite_app.state import INSPECT_FILTER

    at = app_test(page="pages/filter.py", **{DATASET: "circles", TAU: 0.6})
    at.session_state[INSPECT_FILTER] = {"round": 4, "class": "0", "status": "removed"}  # a bar was clicked
    at.switch_page("pages/inspect.py").run()
    assert any("bar you clicked" in i.value for i in at.info)
    at.switch_page("pages/filter.py").run()
    at.slider(key=TAU).set_value(0.7).run()  # another run: its round 4 holds other rows
    at.switch_page("pages/inspect.py").run()
    assert not at.exception and not any("bar you clicked" in i.value for i in at.info)
