"""Shareable, reload-proof views (issue #17): the view in the URL, uploads behind an unguessable token."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aflite_app import links, page_views, selection
from aflite_app.compute import uploads
from aflite_app.compute.datasets import bundled_dataset
from aflite_app.state import DATASET, REPRESENTATION, TAU, UPLOADS, filter_key

#: every parameter name a page's view uses, and the pages with a view of their own
_ALL_NAMES = {name for view in page_views.PAGE_VIEWS.values() for part in view.params for name in part.names}
_PAGES = sorted(name for name, view in page_views.PAGE_VIEWS.items() if view.params)


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


# -- issue 28: each page's own view in its link (page_views.PAGE_VIEWS) --------------------------------------------
def _filter_session() -> dict:
    return {
        DATASET: "circles",
        REPRESENTATION: "features",
        TAU: 0.6,
        filter_key("k", "circles"): 40,
        filter_key("target", "circles"): 300,
    }


def test_each_page_link_carries_only_its_own_state():
    """The Synthetic page's link has its τ and k and no dataset or Filter parameter; Inspect's has its filters and
    search plus the dataset and run; the Filter page's has none of Inspect's or the Synthetic page's state."""
    data = bundled_dataset("circles")
    session = {
        **_filter_session(),
        "syn-tau": 0.82,
        "syn-n": 1000,
        "syn-k-1000": 30,
        "inspect-status": "removed",
        "inspect-classes": ["1"],
        "inspect-rounds-6": (2, 4),
        "inspect-query": "sleeping",
    }
    syn = links.view_params(session, None, "synthetic", data)
    assert syn == {"tau": "0.82", "n": "1000", "k": "30"}  # no dataset, no Filter digits settings
    inspect = links.view_params(session, None, "inspect", data)
    assert inspect["dataset"] == "circles" and inspect["tau"] == "0.6" and inspect["k"] == "40"
    assert {k: inspect[k] for k in ("status", "cls", "rounds", "q")} == {
        "status": "removed",
        "cls": "1",
        "rounds": "2_4_6",
        "q": "sleeping",
    }
    filt = links.view_params(session, None, "filter", data)
    assert filt == links.view_params(session) and filt["n"] == "300"
    assert not {"status", "cls", "rounds", "q"} & set(filt)


def test_page_views_round_trip_through_a_fresh_session():
    data = bundled_dataset("circles")
    session = {
        **_filter_session(),
        "inspect-status": "kept",
        "inspect-classes": ["0", "1"],
        "inspect-query": "ring gap",
        "inspect-rounds-9": (3, 7),
    }
    params = links.view_params(session, None, "inspect", data)
    fresh: dict = {}
    assert links.apply_url(fresh, params, None, bundled_dataset, "inspect") is None
    for key in ("inspect-status", "inspect-classes", "inspect-query", "inspect-rounds-9", TAU):
        assert fresh[key] == session[key], key
    assert links.view_params(fresh, None, "inspect", data) == params

    syn = {"syn-tau": 0.9, "syn-n": 600, "syn-k-600": 25, "syn-seed": 3, "syn-bias": 0.5, "syn-seps": "1.0, 0.5"}
    params = links.view_params(syn, None, "synthetic")
    fresh = {}
    assert links.apply_url(fresh, params, None, bundled_dataset, "synthetic") is None
    assert {k: fresh[k] for k in syn} == syn and DATASET not in fresh  # the Synthetic page sets no dataset


def test_the_registry_agrees_with_the_pages_constants():
    from aflite_app.charts.embedding import COLOUR_MODES
    from aflite_app.compute.synthetic import CIRCLES_LIVE_FOLDS, CIRCLES_TAU_FLOOR

    assert page_views.SYN_TAU_FLOOR == CIRCLES_TAU_FLOOR and page_views.SYN_FOLDS == CIRCLES_LIVE_FOLDS
    assert page_views.EMB_COLOURS == tuple(COLOUR_MODES)
    from conftest import ROOT

    inspect_src = (ROOT / "pages" / "inspect.py").read_text()
    for key in (
        page_views.INSPECT_STATUS,
        page_views.INSPECT_CLASSES,
        page_views.INSPECT_QUERY,
        page_views.INSPECT_ROUNDS,
    ):
        assert f'"{key}' in inspect_src, key  # the widget keys the link sets are the page's
    synthetic_src = (ROOT / "pages" / "synthetic.py").read_text()
    assert all(f'"{k}"' in synthetic_src for k in ("syn-tau", "syn-n", "syn-m", "syn-seed", "syn-seps"))
    assert 'f"syn-k-{n}"' in synthetic_src


def test_a_map_selection_round_trips_as_its_geometry():
    from aflite_app.selection import MapSelection, after_event

    rng = np.random.default_rng(0)
    xy = rng.normal(size=(5_000, 2)) * 3
    theta = np.linspace(0, 2 * np.pi, 400, endpoint=False)  # a lasso as the browser sends it: hundreds of points
    lasso = {"x": (1 + 2 * np.cos(theta)).tolist(), "y": (2 * np.sin(theta)).tolist()}
    event = {"selection": {"points": [], "box": [{"x": [-4.123456, -2.0], "y": [-1, 1.5]}], "lasso": [lasso]}}
    sel = after_event(MapSelection(), event, n_rows=len(xy), xy=xy, drawn_on="PCA")
    assert len(sel.shapes) == 2 and len(sel.shapes[1][1]) <= selection.MAX_LASSO_VERTICES
    key = "emb-map-circles-features-selection"
    session = {**_filter_session(), key: sel}
    params = links.view_params(session, None, "embedding")
    assert params["sel_on"] == "PCA" and len(params["sel"]) < 4_000  # at most 192 vertices of 6 digits here
    coarse = {"selection": {"lasso": [{"x": [0.0123456, 2.5, 1.0], "y": [0.0, 0.1, 2.0]}]}}  # few rows on the edge
    short = after_event(MapSelection(), coarse, n_rows=len(xy), xy=xy, drawn_on="PCA")
    assert short.shapes == (("lasso", (0.01235, 2.5, 1.0), (0.0, 0.1, 2.0)),)  # 4 digits: the same rows
    fresh: dict = {}
    links.apply_url(fresh, params, None, bundled_dataset, "embedding")
    pending = page_views.pending_selection(fresh)
    again = selection.restored(None, pending["shapes"], pending["points"], xy=xy, drawn_on=pending["on"])
    assert again.rows == sel.rows and len(sel.rows) > 100  # exactly the same rows, evaluated over every row
    assert links.view_params(fresh, None, "embedding") == params  # still in the URL until the map evaluates it


_texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    ["", "nan", "inf", "-1e309", "1" * 5_000, "9" * 30, "-5", "0.5", "b1_2_3_4", "l0_0_1", "2_1_3", "x"]
)


@settings(deadline=None)
@given(params=st.dictionaries(st.sampled_from(sorted(_ALL_NAMES)), _texts, max_size=8), page=st.sampled_from(_PAGES))
def test_hand_edited_page_values_are_clamped_or_ignored_never_raised(params, page):
    """Any text in any parameter of any page: applying it never raises, every value set is one its widget allows,
    and the URL written back from that session is one the app reads again the same way."""
    session: dict = {}
    message = links.apply_url(session, {"dataset": "circles", **params}, None, bundled_dataset, page)
    assert message is None or message.count(". ") == 0
    if "syn-tau" in session:
        assert page_views.SYN_TAU_FLOOR <= session["syn-tau"] <= 1
    n = session.get("syn-n", 2000)
    assert 200 <= n <= 6000
    if f"syn-k-{n}" in session:
        assert max(1, n // 50) <= session[f"syn-k-{n}"] <= max(2, n // 4)
    for key in ("syn-bias", "syn-flip", "syn-t", "syn-target", "syn-m", "syn-folds", "syn-seed"):
        if key in session:
            assert isinstance(session[key], (int, float)) and np.isfinite(session[key])
    assert session.get("inspect-status", "all") in ("all", "removed", "kept")
    assert set(session.get("inspect-classes", [])) <= {"0", "1"}
    for key, value in session.items():
        if key.startswith("inspect-rounds-"):
            n_rounds = int(key.rsplit("-", 1)[1])
            assert 1 <= value[0] <= value[1] <= n_rounds
    assert len(session.get("inspect-query", "")) <= page_views.MAX_QUERY_CHARS
    assert session.get("emb-colour", "status") in page_views.EMB_COLOURS
    pending = page_views.pending_selection(session)
    if pending is not None:
        for _kind, xs, ys in pending["shapes"]:
            assert np.isfinite(xs).all() and np.isfinite(ys).all() and len(xs) <= selection.MAX_LASSO_VERTICES
        assert all(0 <= r < 1000 for r in pending["points"])
    written = links.view_params(session, None, page, bundled_dataset("circles"))
    again: dict = {}
    links.apply_url(again, written, None, bundled_dataset, page)
    assert links.view_params(again, None, page, bundled_dataset("circles")) == written


def test_the_synthetic_page_link_carries_tau_and_k_and_not_the_filter_parameters(app_test):
    """AppTest: after a visit to the Filter page (digits), the Synthetic page's link holds its own τ and k only;
    opening that link in a new session sets the sliders."""
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = app_test(page="pages/filter.py")
    assert "n" in dict(at.query_params)  # the Filter page's link has its digits settings
    at.switch_page("pages/synthetic.py").run()
    at.slider(key="syn-tau").set_value(0.85).run()
    k_key = next(s.key for s in at.slider if str(s.key).startswith("syn-k-"))
    at.slider(key=k_key).set_value(60).run()
    assert not at.exception
    link = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert link == {"tau": "0.85", "k": "60"}, link
    other = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    other.query_params.update({**link, "n": "99999999", "m": "nan"})  # and two hand-edited values
    other.switch_page("pages/synthetic.py").run()
    assert not other.exception
    assert other.slider(key="syn-tau").value == 0.85
    assert other.number_input(key="syn-n").value == 6000  # clamped
    assert other.slider(key="syn-k-6000").value == 120  # k clamped to the slider of 6,000 points: [120, 1500]
    assert any("m" in w.value for w in other.warning)  # the page says which value it ignored
