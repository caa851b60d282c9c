"""AppTest of the Training dynamics page, and the upload path of its compute section."""

from __future__ import annotations

import json

import pytest
from conftest import plotly_figures
from plotly_figures import plotly_elements  # tests/ is on sys.path when pytest collects this file

pytestmark = pytest.mark.slow

PAGE = "pages/dynamics.py"


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _level_trace_sizes(at) -> list[int]:
    """Points per level in the data map (the first chart)."""
    import base64

    import numpy as np

    def n(values) -> int:
        if isinstance(values, dict):  # Plotly 7: {"dtype", "bdata"}
            return len(np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"])))
        return len(values)

    fig = plotly_figures(at)[0]
    return [n(t["x"]) for t in fig["data"] if t.get("meta") == "level points"]


def test_renders_on_digits_with_defaults(app_test):
    at = app_test(page=PAGE)
    assert not at.exception, at.exception
    assert not at.error
    assert at.title[0].value == "Training dynamics"
    metrics = _metrics(at)
    counts = [int(metrics[f"{lv} rows"].replace(",", "")) for lv in ("easy", "ambiguous", "hard")]
    assert sum(counts) == 1438 and all(c > 0 for c in counts)
    assert metrics["Features clustered"] == "8"  # full + partial (mlp_small) input
    assert at.selectbox(key="dyn-partial-digits-mlp").value == "mlp_small"
    assert len(plotly_figures(at)) == 6  # data map, one feature figure per measure (4), classes
    assert _level_trace_sizes(at) == counts
    captions = " ".join(c.value for c in at.caption)
    assert "no natural partial input" in captions
    infos = " ".join(i.value for i in at.info)
    assert "Filter page" in infos  # no run yet: the cross-tab points to the Filter page
    assert "has no text pair" in infos  # digits: no spurious measures, and why


def test_level_method_changes_the_levels(app_test):
    at = app_test(page=PAGE)
    gmm = _metrics(at)
    gmm_sizes = _level_trace_sizes(at)

    at.radio(key="dyn-method").set_value("data_maps").run()
    assert not at.exception, at.exception
    maps = _metrics(at)
    assert maps != gmm
    assert _level_trace_sizes(at) != gmm_sizes
    ambiguous = int(maps["ambiguous rows"].replace(",", ""))
    assert abs(ambiguous - 0.33 * 1438) < 30  # the top third by variability
    at.slider(key="dyn-ambiguous").set_value(0.5).run()
    assert int(_metrics(at)["ambiguous rows"].replace(",", "")) > ambiguous

    at.radio(key="dyn-method").set_value("aum").run()
    assert not at.exception, at.exception
    assert _metrics(at)["Features used"] == "AUM"
    at.slider(key="dyn-aum").set_value((0.1, 0.9)).run()
    assert int(_metrics(at)["ambiguous rows"].replace(",", "")) > 0.75 * 1438

    at.selectbox(key="dyn-partial-digits-mlp").set_value("none").run()
    assert not at.exception
    at.radio(key="dyn-method").set_value("gmm").run()
    assert _metrics(at)["Features clustered"] == "4"


def test_crosstab_after_a_filter_run(app_test):
    at = app_test(page="pages/filter.py")
    assert not at.exception
    kept = int(_metrics(at)["Rows kept"].replace(",", ""))
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert not at.error
    sentence = next(m.value for m in at.markdown if "AFLite removed" in m.value)
    assert "of the easy rows" in sentence and "of the hard rows" in sentence
    figs = plotly_figures(at)
    cross = next(f for f in figs if [t.get("name") for t in f["data"]] == ["kept", "removed"])
    assert cross["data"][0]["marker"]["color"] == "#0072B2" and cross["data"][1]["marker"]["color"] == "#D55E00"
    tables = [df.value for df in at.dataframe]
    counts = next(t for t in tables if "% removed" in t.columns)
    assert counts["kept"].sum() == kept and counts["rows"].sum() == 1438
    examples = next(t for t in tables if "AFLite" in t.columns)
    assert "image" in examples.columns and examples["image"].str.startswith("data:image/png").all()
    assert (examples["AFLite"].str.startswith("removed")).all()  # the first cell: easy · removed
    assert {"class", "confidence", "partial_confidence"} <= set(examples.columns)

    at.selectbox(key="dyn-cell").set_value("hard · kept").run()
    assert not at.exception
    examples = next(df.value for df in at.dataframe if "AFLite" in df.value.columns)
    assert (examples["AFLite"] == "kept").all() and (examples["level"] == "hard").all()


def test_fifty_rows_two_classes_nothing_removed(app_test):
    import numpy as np
    import pandas as pd

    from aflite_core import dataset_from_table

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"label": np.repeat(["yes", "no"], 25), "text": [f"row {i}" for i in range(50)]})
    tiny = dataset_from_table(frame, label_column="label", features=rng.normal(size=(50, 3)), name="tiny noise")
    at = app_test(page="pages/filter.py", uploads={"upload-tiny": tiny}, dataset_key="upload-tiny")
    at.slider(key="tau").set_value(1.0).run()
    assert _metrics(at)["Rows removed"] == "0"
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert not at.error
    assert "single representation" in " ".join(c.value for c in at.caption)
    assert sum(_level_trace_sizes(at)) == 50
    assert any("AFLite removed no rows" in m.value for m in at.markdown)
    for method in ("data_maps", "aum"):
        at.radio(key="dyn-method").set_value(method).run()
        assert not at.exception and not at.error
    at.radio(key="dyn-class-scale").set_value("share of the level").run()
    assert not at.exception


def _nli_dataset():
    """90 premise/hypothesis pairs with planted cues: entailment copies words, contradiction negates."""
    import pandas as pd

    from aflite_core.data.features import text_representations
    from aflite_core.data.user_tables import dataset_from_table

    people = [
        "A man",
        "A woman",
        "Two kids",
        "An old man",
        "A girl",
        "A boy",
        "Three friends",
        "A dog",
        "A chef",
        "A teacher",
    ]
    acts = [
        "is playing a guitar in the park",
        "is riding a red bike down the street",
        "is cooking dinner at home",
        "is reading a long book on the bus",
        "is swimming in a cold lake",
    ]
    rows = []
    for i in range(30):
        who, act = people[i % len(people)], acts[i % len(acts)]
        premise = f"{who} {act}."
        rows.append(
            {"premise": premise, "hypothesis": f"{who} {act.split(' ')[0]} {act.split(' ')[1]}.", "label": "entailment"}
        )
        rows.append(
            {
                "premise": premise,
                "hypothesis": f"Nobody is {act.split(' ', 1)[1]}, they are not outside.",
                "label": "contradiction",
            }
        )
        rows.append(
            {"premise": premise, "hypothesis": f"{who} is happy because a friend visits tomorrow.", "label": "neutral"}
        )
    frame = pd.DataFrame(rows)
    pair = ("premise", "hypothesis")
    features = text_representations(frame, list(pair), pair=pair, n_components=16, random_state=0)
    return dataset_from_table(frame, label_column="label", pair=pair, features=features, name="tiny nli")


def test_text_pair_upload_shows_spurious_table_with_stars(app_test):
    at = app_test(page=PAGE, uploads={"upload-nli": _nli_dataset()}, dataset_key="upload-nli")
    assert not at.exception, at.exception
    assert not at.error
    assert at.selectbox(key="dyn-partial-upload-nli-tfidf").value == "tfidf_hypothesis"
    captions = " ".join(c.value for c in at.caption)
    assert "is a natural one" in captions
    table = next(df.value for df in at.dataframe if "measure" in df.value.columns)
    assert "word overlap" in set(table["measure"]) and "contains negation" in set(table["measure"])
    pairs = [c for c in table.columns if " vs " in c]
    assert pairs == ["contradiction vs entailment", "contradiction vs neutral", "entailment vs neutral"]
    stars = set(table[pairs].to_numpy().ravel()) - {""}
    assert stars <= {"***", "**", "*", "ns"} and stars & {"***", "**", "*"}
    assert sum(_level_trace_sizes(at)) == 90


# -- the upload path (compute section, outside a page) ---------------------------------------------------------
@pytest.fixture
def digits_dynamics(tmp_path):
    """Dynamics of the digits (mlp) written in allenai/cartography's format, rows shuffled, and the dataset."""
    import numpy as np
    import streamlit as st

    from aflite_app.compute import datasets
    from aflite_app.state import DatasetSpec
    from aflite_core.dynamics import TrainingDynamics, train_dynamics

    st.cache_resource.clear()  # the store of uploaded dynamics
    st.cache_data.clear()
    dspec = DatasetSpec("digits", "mlp")
    data = datasets.dataset(dspec)
    td = train_dynamics(data.representation("mlp"), data.y, epochs=3, ids=data.ids, random_state=0)
    order = np.random.default_rng(0).permutation(data.n_rows)
    shuffled = TrainingDynamics(td.logits[order], td.gold[order], td.classes, td.ids[order])
    files = shuffled.save_cartography(tmp_path)
    return dspec, data, td, [(f.name, f.read_bytes()) for f in files]


def test_upload_aligns_to_the_dataset_ids(digits_dynamics):
    import numpy as np

    from aflite_app.compute import dynamics as compute

    dspec, data, td, files = digits_dynamics
    spec = compute.dynamics_upload(dspec, files[::-1])  # any upload order
    assert spec.upload and compute.dynamics_upload(dspec, files) == spec
    record = compute.dynamics_record(spec)
    assert record.partial is None and record.full.n_epochs == 3
    assert np.array_equal(np.asarray(record.full.ids), data.ids)
    assert np.allclose(record.full.logits, td.logits)
    assert (record.full.gold == data.y).all()


def test_upload_errors_are_clear(digits_dynamics):
    import json

    from aflite_app.compute import dynamics as compute

    dspec, _, _, files = digits_dynamics
    name, payload = files[0]
    lines = payload.decode().splitlines()
    with pytest.raises(ValueError, match=r"do not match the rows of.*have no dynamics"):
        compute.dynamics_upload(dspec, [(name, "\n".join(lines[:-1]).encode())])
    with pytest.raises(ValueError, match="missing from epoch 1"):
        short = [(files[1][0], "\n".join(files[1][1].decode().splitlines()[:-1]).encode())]
        compute.dynamics_upload(dspec, [files[0], *short])
    with pytest.raises(ValueError, match=r"not named dynamics_epoch_<e>\.jsonl"):
        compute.dynamics_upload(dspec, [("epoch0.jsonl", payload)])
    with pytest.raises(ValueError, match="missing epoch"):
        compute.dynamics_upload(dspec, [files[0], files[2]])
    bad = json.loads(lines[0])
    bad["guid"] = "not-an-id"
    with pytest.raises(ValueError, match="'not-an-id'"):
        compute.dynamics_upload(dspec, [(name, "\n".join([json.dumps(bad), *lines[1:]]).encode())])
    with pytest.raises(ValueError, match="disagree with the dataset's labels"):
        compute.dynamics_upload(dspec, files, class_order="1, 0, 2, 3, 4, 5, 6, 7, 8, 9")
    with pytest.raises(ValueError, match="line 1 is not valid JSON") as info:
        compute.dynamics_upload(dspec, [(name, b"{oops\n")])
    assert str(info.value).startswith("Full-input dynamics: 'dynamics_epoch_0.jsonl' line 1")  # no temporary path


def test_upload_size_limit(digits_dynamics, monkeypatch):
    from aflite_app.compute import dynamics as compute

    dspec, _, _, files = digits_dynamics
    monkeypatch.setattr(compute, "DYN_MAX_UPLOAD_BYTES", 1000)
    with pytest.raises(ValueError, match="more than the app reads"):
        compute.dynamics_upload(dspec, files)


def test_count_metrics_have_no_arrows_and_methods_are_attributed(app_test):
    from streamlit.proto.Metric_pb2 import Metric

    at = app_test(page=PAGE)
    for m in at.metric:  # counts and shares go neither up nor down
        assert m.proto.direction == Metric.NONE, m.label
    assert any(c.value.startswith("Levels by: Cosma et al.") for c in at.caption)
    at.radio(key="dyn-method").set_value("data_maps").run()
    captions = " ".join(c.value for c in at.caption)
    assert "this project's choice" in captions and "Swayamdipta et al. (2020)" in captions
    assert "They define no three-level split" in captions


def test_validation_on_held_out_rows(app_test):
    at = app_test(page=PAGE)
    assert not any("dyn-val-levels" in str(el.proto.id) for el in plotly_elements(at))  # on request only
    at.button(key="dyn-validate").click().run()
    assert not at.exception, at.exception
    figs = {str(el.proto.id): el for el in plotly_elements(at)}
    assert any("dyn-val-levels" in k for k in figs) and any("dyn-val-fractions" in k for k in figs)
    text = " ".join(m.value for m in at.markdown)
    assert "independently trained model" in text and "fractions" in text
    table = next(d.value for d in at.dataframe if "selection (who defined it)" in d.value.columns)
    assert any("Swayamdipta" in s for s in table["selection (who defined it)"])
    assert any("Cosma" in s for s in table["selection (who defined it)"])
    # issue 27: the levels beside one-shot confidence (in-sample, out-of-fold) and random levels, mean ± sd
    assert any("dyn-val-controls" in k for k in figs)
    controls = next(json.loads(el.proto.spec) for k, el in figs.items() if "dyn-val-controls" in k)
    assert [t["name"] for t in controls["data"][:4]] == [
        "training-dynamics levels (GMM)",
        "control: one-shot confidence, in-sample",
        "control: one-shot confidence, out-of-fold",
        "control: random levels",
    ]
    added = next(m.value for m in at.markdown if m.value.startswith("**What the dynamics add over one-shot"))
    assert "one-shot out-of-fold confidence levels" in added and "Random levels of the same sizes" in added
    gaps = next(d.value for d in at.dataframe if "control: random levels" in d.value.columns)
    assert gaps["control: random levels"].str.contains(" ± ").all()
    assert table["20%"].str.contains(" ± ").any()  # 5 seeds: every cell with its spread


def test_a_stopped_recording_says_so_stores_nothing_and_record_again_starts_over(app_test, monkeypatch):
    from aflite_app.compute import dynamics as compute
    from aflite_core.dynamics import TrainingInterrupted

    real, calls = compute.record_dynamics, []

    def stopped_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise TrainingInterrupted  # what a Stop during a mini-batch gives
        return real(*args, **kwargs)

    monkeypatch.setattr(compute, "record_dynamics", stopped_once)
    at = app_test(page=PAGE)
    assert not at.exception, at.exception
    assert any("recording was stopped before it finished" in w.value for w in at.warning)
    assert not at.metric and not plotly_elements(at)  # no levels from a partial recording
    at.button(key="dyn-record-again").click().run()
    assert not at.exception, at.exception
    assert not at.warning and len(calls) == 2
    counts = [int(_metrics(at)[f"{lv} rows"].replace(",", "")) for lv in ("easy", "ambiguous", "hard")]
    assert sum(counts) == 1438


def test_a_stopped_validation_says_so_and_the_page_goes_on(app_test, monkeypatch):
    from aflite_app.compute import level_checks as compute
    from aflite_core.dynamics import TrainingInterrupted

    real, calls = compute.validate_levels, []

    def stopped_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise TrainingInterrupted
        return real(*args, **kwargs)

    monkeypatch.setattr(compute, "validate_levels", stopped_once)
    at = app_test(page=PAGE)
    at.button(key="dyn-validate").click().run()
    assert not at.exception, at.exception
    assert any("validation was stopped" in w.value for w in at.warning)
    assert "Levels vs AFLite" in [h.value for h in at.subheader]  # the rest of the page is drawn
    assert not any("dyn-val-levels" in str(el.proto.id) for el in plotly_elements(at))
    at.button(key="dyn-validate").click().run()  # asking again starts over
    assert not at.exception, at.exception
    assert not at.warning and len(calls) == 2
    assert any("dyn-val-levels" in str(el.proto.id) for el in plotly_elements(at))
