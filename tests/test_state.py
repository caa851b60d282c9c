"""aflite_app.state without a running app: defaults, keys, specs, the writers and the compute layer's one reader."""

from __future__ import annotations

import dataclasses

import pytest
import streamlit as st

from aflite_app import state
from aflite_app.state import (
    DATASET,
    INSPECT_PAGE,
    INSPECT_WHICH,
    LAST,
    MAX_SESSION_UPLOADS,
    REPRESENTATION,
    RUN,
    RUN_DIRS,
    TAU,
    UPLOADS,
    DatasetSpec,
    FilterSpec,
)
from aflite_core import STRATEGIES


def _spec(**changes) -> FilterSpec:
    base = FilterSpec(
        dataset=DatasetSpec("run-abc", "features"),
        target_size=150,
        train_size=60,
        slice_size=40,
        tau=0.6,
        n_partitions=16,
        strategy="sample",
        model="knn",
        seed=3,
    )
    return base.with_(**changes)


# -- defaults and keys -------------------------------------------------------------------------------------------
def test_init_session_sets_every_default_once():
    session: dict = {}
    state.init_session(session)
    assert session == {DATASET: "digits", REPRESENTATION: None, UPLOADS: {}, RUN_DIRS: {}, RUN: None, LAST: None}
    session[DATASET] = "planted"
    session[UPLOADS]["x"] = "data"
    state.init_session(session)
    assert session[DATASET] == "planted" and session[UPLOADS] == {"x": "data"}


def test_every_session_key_is_distinct():
    keys = {name: value for name, value in vars(state).items() if name.isupper() and isinstance(value, str)}
    assert {"DATASET", "LAST", "TAU", "INSPECT_PAGE", "EVALSETS_RUN", "SYN_ROUND", "DATA_PAGE"} <= set(keys)
    assert len(set(keys.values())) == len(keys), keys


def test_the_session_keys_are_few_and_each_page_keeps_its_own_entries_in_one_dict():
    """Issue 23 item 4: 27 keys (38 before), 28 with the Predictability page's own dict (issue 27's null), 29 with
    the Compare runs page's (issue 28), 30 with the Filter page's (issue 29: its partial current run and the
    confirmed long run), 31 with the guided demo's (issue 29), 32 with the Baselines page's (issue 25: its comparison
    runs in the background with Stop); what one page alone keeps between reruns lives in its
    page dict, declared here with the others."""
    keys = {value for name, value in vars(state).items() if name.isupper() and isinstance(value, str)}
    assert len(keys) <= 32, sorted(keys)
    session: dict = {}
    page = state.page_state(session, state.DYN_PAGE)
    page["record_request"] = "spec"
    assert state.page_state(session, state.DYN_PAGE) is page and session == {state.DYN_PAGE: {"record_request": "spec"}}


def test_session_keys_live_in_state_and_the_compute_layer_never_touches_the_session():
    """Every session key a page shares is declared in aflite_app/state.py; compute modules neither define one
    nor read or write ``st.session_state`` (they get this session's data through ``state.session_data``)."""
    import re
    from pathlib import Path

    state_keys = {value for name, value in vars(state).items() if name.isupper() and isinstance(value, str)}
    # the pages' own entries (requests, background waits, errors) live in one dict per page, declared in state
    assert {"syn-page", "dyn-page", "data-page", "inspect-page", "evalsets_page"} <= state_keys
    compute_dir = Path(state.__file__).parent / "compute"
    for path in sorted(compute_dir.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "session_state" not in text, path.name
        for value in re.findall(r'^[A-Z_]+ = "([a-z_-]+)"', text, flags=re.M):
            assert value not in state_keys, (path.name, value)


def test_offered_labels_match_what_the_core_accepts():
    assert set(state.STRATEGY_LABELS) == set(STRATEGIES)
    assert next(iter(state.BUNDLED)) == "digits"  # the default dataset comes first
    assert set(state.MODEL_FAMILIES) == {"linear", "ridge", "logistic", "knn"}


def test_widget_keys_are_per_dataset():
    assert state.filter_key("target", "digits") != state.filter_key("target", "planted")
    assert state.filter_key("k", "digits") == "k-digits"
    map_key = state.embedding_map_key("digits", "mlp")
    assert map_key == "emb-map-digits-mlp" and state.embedding_selection_key(map_key).startswith(map_key)


# -- specs ---------------------------------------------------------------------------------------------------------
def test_specs_are_frozen_hashable_cache_keys():
    a, b = _spec(), _spec()
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.tau = 0.9  # type: ignore[misc]
    assert DatasetSpec("digits") == DatasetSpec("digits", None)


def test_filter_spec_with_and_as_kwargs():
    spec = _spec()
    other = spec.with_(seed=4)
    assert other.seed == 4 and spec.seed == 3 and other.dataset is spec.dataset
    assert spec.as_kwargs() == {
        "target_size": 150,
        "train_size": 60,
        "tau": 0.6,
        "n_partitions": 16,
        "strategy": "sample",
        "slice_size": 40,
    }
    assert spec.with_(strategy="greedy").as_kwargs()["slice_size"] is None  # greedy removes one row per round


# -- writers -------------------------------------------------------------------------------------------------------
def test_select_dataset_resets_the_representation():
    session = {DATASET: "digits", REPRESENTATION: "mlp"}
    state.select_dataset(session, "planted")
    assert session == {DATASET: "planted", REPRESENTATION: None}


def test_register_upload_selects_it_and_keeps_a_bounded_number():
    session: dict = {DATASET: "digits", REPRESENTATION: "pixels"}
    for i in range(MAX_SESSION_UPLOADS + 2):
        state.register_upload(session, f"upload-{i}", f"data {i}")
    uploads = session[UPLOADS]
    assert len(uploads) == MAX_SESSION_UPLOADS
    assert list(uploads) == [f"upload-{i}" for i in range(2, MAX_SESSION_UPLOADS + 2)]  # the oldest went first
    assert session[DATASET] == f"upload-{MAX_SESSION_UPLOADS + 1}" and session[REPRESENTATION] is None
    state.register_upload(session, "upload-2", "again")  # registering again makes it the newest
    assert list(uploads)[-1] == "upload-2" and uploads["upload-2"] == "again"


def test_register_run_directory_makes_the_run_current_and_presets_the_filter_page():
    session: dict = {TAU: 0.75}
    spec = _spec()
    state.register_run_directory(session, "run-abc", "the data", spec, "the result")
    assert session[UPLOADS] == {"run-abc": "the data"}
    assert session[RUN_DIRS] == {"run-abc": {"spec": spec, "result": "the result"}}
    assert session[DATASET] == "run-abc" and session[REPRESENTATION] is None and session[LAST] == spec
    widgets = {name: session[state.filter_key(name, "run-abc")] for name in state.FILTER_WIDGETS}
    assert widgets == {"target": 150, "train": 60, "m": 16, "seed": 3, "k": 40, "strategy": "sample", "model": "knn"}
    assert session[TAU] == 0.6
    # the Filter page's defaults then leave the run's parameters alone
    state.init_filter_widgets(
        session, "run-abc", {"target_size": 1, "train_size": 1, "n_partitions": 1, "slice_size": 1}
    )
    assert session[state.filter_key("target", "run-abc")] == 150 and session[TAU] == 0.6


def test_init_filter_widgets_starts_a_new_dataset_at_the_defaults():
    session: dict = {}
    state.init_filter_widgets(
        session, "digits", {"target_size": 719, "train_size": 360, "n_partitions": 64, "slice_size": 72}
    )
    assert session == {
        "target-digits": 719,
        "train-digits": 360,
        "m-digits": 64,
        "seed-digits": 0,
        "k-digits": 72,
        "strategy-digits": "slice",
        "model-digits": "linear",
        TAU: 0.75,
    }


def test_set_last_run():
    session: dict = {}
    state.set_last_run(session, _spec())
    assert session[LAST] == _spec()
    state.set_last_run(session, None)  # a stopped run is shown by no other page
    assert session[LAST] is None


def test_a_stopped_run_is_the_current_run_until_another_one_is(monkeypatch):
    """Issue 29 item 1: after Stop the sidebar said "No run yet" beside a page showing the partial run. The partial
    run is now the session's current run: kept in the Filter page's dict and handed to the compute layer, whose
    one look-up (runs.result) answers it, until another run is current."""
    from aflite_app.compute import runs

    session: dict = {}
    spec, partial = _spec(), object()
    state.set_last_run(session, spec, partial)
    assert session[LAST] == spec and session[state.FILTER_PAGE]["partial"] == (spec, partial)
    monkeypatch.setattr(st, "session_state", session)
    mine = state.session_data()
    assert dict(mine.partial) == {spec: partial}
    assert runs.result(spec, session=mine) is partial  # the page, the sidebar and Inspect read this
    assert runs.result(spec) is None  # another session never sees it
    state.set_last_run(session, spec)  # the same run shown again (a rerun): still partial
    assert session[state.FILTER_PAGE]["partial"] == (spec, partial)
    other = spec.with_(tau=0.9)
    state.set_last_run(session, other)  # another run is current: the stopped one is gone
    assert "partial" not in session[state.FILTER_PAGE] and not state.session_data().partial


def test_inspect_run_kept_and_forgotten():
    session: dict = {}
    record = {"result": "r", "name": "run.zip", "digest": "d", "dataset": "digits"}
    state.keep_inspect_run(session, record, "file-1")
    assert session == {INSPECT_PAGE: {"loaded": record, "seen": ("file-1", None)}, INSPECT_WHICH: "loaded"}
    state.forget_inspect_run(session)
    assert "loaded" not in session[INSPECT_PAGE] and session[INSPECT_WHICH] == "filter"
    state.forget_inspect_run(session)  # closing twice is harmless


# -- the compute layer's one reader -------------------------------------------------------------------------------
def test_session_data_is_a_read_only_view(monkeypatch):
    session = {UPLOADS: {"upload-1": "data"}, RUN_DIRS: {"run-1": {"spec": None, "result": None}}}
    monkeypatch.setattr(st, "session_state", session)
    view = state.session_data()
    assert dict(view.uploads) == {"upload-1": "data"} and list(view.run_dirs) == ["run-1"]
    with pytest.raises(TypeError):
        view.uploads["other"] = "data"  # type: ignore[index]
    session[UPLOADS]["upload-2"] = "more"  # a view, not a copy
    assert "upload-2" in view.uploads


def test_session_data_without_a_session_is_empty(monkeypatch):
    monkeypatch.setattr(st, "session_state", {})
    view = state.session_data()
    assert dict(view.uploads) == {} and dict(view.run_dirs) == {}
