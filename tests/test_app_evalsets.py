"""AppTest of the Evaluation sets page: the default study on the digits, a changed adversary list, a text pair with
annotator labels, and the evaluation-file upload path."""

from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd
import pytest
from conftest import plotly_figures
from plotly_figures import plotly_elements  # tests/ is on sys.path when pytest collects this file

pytestmark = pytest.mark.slow

PAGE = "pages/evaluation_sets.py"


@pytest.fixture(autouse=True)
def _navigation_runs_app_py(monkeypatch):
    """Make AppTest run app.py on every run, as the server does (see tests/test_app_baselines.py)."""
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager

    class NavigationPagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    monkeypatch.setattr(app_test_module, "PagesManager", NavigationPagesManager)


def _run_study(at):
    next(b for b in at.button if b.label == "Run study").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _figure_with(at, text: str) -> dict | None:
    for fig in plotly_figures(at):
        if text in str(fig.get("layout", {})):
            return fig
    return None


def _by_key(at, key: str) -> dict | None:
    import json

    return next((json.loads(el.proto.spec) for el in plotly_elements(at) if str(el.proto.id).endswith(key)), None)


def _rank_lists(at) -> list[dict]:
    import json

    return [json.loads(el.proto.spec) for el in plotly_elements(at) if "es-rank-list-" in str(el.proto.id)]


def _kendall_titles(fig: dict) -> list[str]:
    return [a["text"] for a in fig["layout"].get("annotations", []) if "Kendall" in a.get("text", "")]


def _reading(at) -> str:
    return next((m.value for m in at.markdown if m.value.startswith("**Reading**")), "")


def nli_frame(n_premises: int = 90, seed: int = 0) -> pd.DataFrame:
    """A small NLI-like table: three hypotheses per premise, label cues in the hypothesis, annotator labels."""
    rng = np.random.default_rng(seed)
    who = ["a man", "a woman", "two kids", "a dog", "the old chef", "a young girl", "three friends", "a boy"]
    act = [
        "rides a bike",
        "plays the guitar",
        "cooks dinner",
        "runs along the beach",
        "reads a book",
        "paints a fence",
        "climbs a tree",
        "sings a song",
    ]
    where = ["in the park", "at home", "near the river", "in a small town", "on a sunny day", "at night"]
    cue = {
        "entailment": "{w} {a}.",
        "neutral": "{w} {a} with a friend because it is fun.",
        "contradiction": "nobody is outside and {w} is sleeping.",
    }
    labels = list(cue)
    rows = []
    for p in range(n_premises):
        w, a, x = who[rng.integers(len(who))], act[rng.integers(len(act))], where[rng.integers(len(where))]
        premise = f"{w.capitalize()} {a} {x} (scene {p})."
        for lab in labels:
            shown = lab if rng.random() < 0.75 else labels[rng.integers(3)]  # some rows without the cue
            agree = rng.uniform(0.5, 1.0)
            ann = [lab if rng.random() < agree else labels[rng.integers(3)] for _ in range(5)]
            rows.append(
                {
                    "id": f"ex-{len(rows)}",
                    "premise": premise,
                    "hypothesis": cue[shown].format(w=w, a=a),
                    "label": lab,
                    "annotator_labels": ann,
                    "annotator_labels_src": "random_subset" if rng.random() < 0.8 else "chaosnli",
                }
            )
    return pd.DataFrame(rows)


def nli_dataset(frame: pd.DataFrame | None = None):
    from aflite_core.data.user_tables import dataset_from_table

    return dataset_from_table(
        nli_frame() if frame is None else frame,
        label_column="label",
        id_column="id",
        pair=("premise", "hypothesis"),
        text_features=True,
        name="toy-nli",
    )


def test_default_study_on_digits_then_fewer_adversaries(app_test):
    at = app_test(page=PAGE)
    assert not at.exception, at.exception
    assert any("Run study" in i.value for i in at.info)
    assert not plotly_elements(at)
    adv = at.multiselect(key=next(m.key for m in at.multiselect if m.label.startswith("Adversaries")))
    # weakest first by a strength measured without AFLite (issue #14): each backbone's accuracy on the 432
    # evaluation rows, mlp_small 0.935 < pca 0.965 < pixels 0.970 < mlp 0.977 (the last three within each other's
    # 95 % intervals)
    assert adv.value == ["mlp_small", "pca", "pixels", "mlp"]
    models = next(m for m in at.multiselect if m.label.startswith("Evaluated"))
    assert len(models.value) == 4 and not any(v.startswith(("mlp:", "forest:")) for v in models.value)

    start = time.perf_counter()
    _run_study(at)
    seconds = time.perf_counter() - start
    assert seconds < 60
    cats = _figure_with(at, "share of the evaluation rows")
    assert cats is not None and [t["name"] for t in cats["data"]] == ["removed in round 1", "removed later", "selected"]
    assert cats["data"][0]["x"] == ["mlp_small", "pca", "pixels", "mlp"]
    lists = _rank_lists(at)  # Figure 3: one sorted list per evaluation set, in columns
    assert len(lists) == 5 and all(len(f["data"]) == 7 for f in lists)
    title = lists[1]["layout"]["title"]["text"]
    assert "Kendall's coefficient" in title and "(ours)" in title
    ranking = _by_key(at, "es-ranking")
    assert len(_kendall_titles(ranking)) == 4 and all(
        "(ours)" in t and "swap order" in t for t in _kendall_titles(ranking)
    )
    assert ranking["layout"]["xaxis"]["ticktext"] == ["none (unfiltered)", "mlp_small", "pca", "pixels", "mlp"]
    heat = next(f for f in plotly_figures(at) if f["data"][0]["type"] == "heatmap")  # sets across, models down
    assert heat["data"][0]["x"][0] == "none (unfiltered)" and len(heat["data"][0]["x"]) == 5
    assert "backbone:mlp" in heat["data"][0]["y"]  # the chosen adversaries' backbones are always evaluated
    strength = _figure_with(at, "strength: backbone accuracy")
    assert strength is not None and sorted(strength["data"][0]["text"]) == ["mlp", "mlp_small", "pca", "pixels"]
    reading = _reading(at)
    # 4 chosen models + the backbones of mlp_small, pca and mlp (pixels' backbone is logistic:pixels, chosen)
    assert "Mean accuracy of the 7 evaluated models" in reading and "**mlp** — " in reading
    assert "**pixels** — pixels removes" not in reading and "Removes " in reading  # no repeated name
    assert any("no annotator labels" in c.value for c in at.caption)
    # issue 27: the controls beside the result - Kendall's coefficient and the drops against random subsets
    null = _by_key(at, "es-null-kendall")
    assert null is not None and len(null["layout"]["yaxis"]["ticktext"]) == 8  # 4 adversaries × 2 depths
    assert [t["name"] for t in null["data"][1:]] == ["filtered rows (as run)", "filtered rows (equal depth)"]
    drops = _by_key(at, "es-null-drops")
    assert drops is not None and len(drops["layout"]["yaxis"]["ticktext"]) == 2 * 7  # 7 evaluated models × 2 depths
    chance = next(m.value for m in at.markdown if m.value.startswith("**What chance alone does**"))
    assert "random subsets of the same size" in chance and "1,000 random evaluation subsets" in chance

    # a different adversary list: a new study, and the charts follow
    adv = at.multiselect(key=adv.key)
    adv.set_value(["pixels", "mlp"])
    _run_study(at)
    cats = _figure_with(at, "share of the evaluation rows")
    assert cats["data"][0]["x"] == ["pixels", "mlp"]
    assert _by_key(at, "es-ranking")["layout"]["xaxis"]["ticktext"] == ["none (unfiltered)", "pixels", "mlp"]
    assert len(_rank_lists(at)) == 3
    heat = next(f for f in plotly_figures(at) if f["data"][0]["type"] == "heatmap")
    assert heat["data"][0]["x"] == ["none (unfiltered)", "pixels", "mlp"]
    assert "**pca**" not in _reading(at)

    # the shown study is cached: a rerun (or coming back) does not recompute
    start = time.perf_counter()
    at.run()
    assert not at.exception
    assert _figure_with(at, "share of the evaluation rows")["data"][0]["x"] == ["pixels", "mlp"]
    assert time.perf_counter() - start < 10


def test_ensemble_needs_two_adversaries(app_test):
    at = app_test(page=PAGE)
    adv = next(m for m in at.multiselect if m.label.startswith("Adversaries"))
    adv.set_value(["pca"])
    next(c for c in at.checkbox if c.label.startswith("Also filter with the ensemble")).check()
    next(b for b in at.button if b.label == "Run study").click().run()
    assert not at.exception
    assert any("at least two adversaries" in e.value for e in at.error)


def test_text_pair_upload_with_annotator_labels_shows_agreement(app_test):
    data = nli_dataset()
    at = app_test(page=PAGE, uploads={"toy": data}, dataset_key="toy")
    assert not at.exception, at.exception
    ann = next(s for s in at.selectbox if s.label.startswith("Annotator labels"))
    src = next(s for s in at.selectbox if s.label.startswith("Source of the annotator labels"))
    assert ann.value == "annotator_labels" and src.value == "annotator_labels_src"
    adv = next(m for m in at.multiselect if m.label.startswith("Adversaries"))
    assert set(adv.value) == {"tfidf", "tfidf_hypothesis"}
    sources = next(m for m in at.multiselect if m.label.startswith("Annotator-label sources"))
    assert sources.value == ["random_subset"]
    # issue 29 item 8: the pre-run hint is about this data, not "a few seconds on the digits"
    hint = next(i.value for i in at.info if "Run study" in i.value)
    assert "digits" not in hint and "2 adversaries × 1 seed on" in hint and "training rows" in hint
    _run_study(at)
    agreement = _figure_with(at, "annotator agreement with the gold label")
    assert agreement is not None
    assert agreement["data"][0]["x"] == ["none (unfiltered)"]
    assert [t["name"] for t in agreement["data"][1:]] == ["removed in round 1", "removed later", "selected"]
    caption = next(c.value for c in at.caption if c.value.startswith("Figure 5"))
    assert "excluded by their source" in caption and "used" in caption
    assert "Annotator agreement is" in _reading(at)
    # issue 29: the heatmap names each model in two short lines, read whole at 390 px ("logistic:tfidf_hypoth…"
    # was cut before); nothing needed cutting, so the caption lists no names
    heat = _by_key(at, "es-heatmap")
    models = heat["data"][0]["y"]
    assert "logistic:tfidf_hypothesis" in models
    labels = dict(zip(heat["layout"]["yaxis"]["tickvals"], heat["layout"]["yaxis"]["ticktext"]))
    assert labels["logistic:tfidf_hypothesis"] == "logistic:<br>tfidf_hypothesis"
    assert not any("Names cut short" in c.value for c in at.caption)


def test_evaluation_table_upload_rebuilds_tfidf(app_test):
    frame = nli_frame(120, seed=3)
    train, evaluation = frame.iloc[:270].reset_index(drop=True), frame.iloc[270:].reset_index(drop=True)
    data = nli_dataset(train)
    at = app_test(page=PAGE, uploads={"toy": data}, dataset_key="toy")
    assert not at.exception, at.exception
    at.radio(key="es-source-toy").set_value("upload").run()
    assert any("Upload an evaluation table" in i.value for i in at.info)

    from aflite_app.compute import evalsets as compute
    from aflite_app.specs import SessionData

    buf = io.BytesIO()
    evaluation.to_json(buf, orient="records", lines=True)
    mine = SessionData(uploads={"toy": data})  # the session's data, as the page passes it
    spec = compute.evalsets_upload("toy", buf.getvalue(), "eval.jsonl", session=mine)
    setup = compute.evalsets_setup(spec, session=mine)
    assert len(setup.train_y) == 270 and len(setup.eval_y) == 90
    assert set(setup.adversaries) == {"tfidf", "tfidf_hypothesis"}
    assert setup.train_X["tfidf"].shape[1] == setup.eval_X["tfidf"].shape[1]
    bad = evaluation.drop(columns=["hypothesis"]).to_csv(index=False).encode()
    with pytest.raises(ValueError, match="hypothesis"):
        compute.evalsets_upload("toy", bad, "eval.csv", session=mine)
