"""AppTest of Inspect's explanation of one row (issue 28) on the real SNLI sample, and the rows table's search.

A removed SNLI row typed by its id (what a click in the rows table fills in) is explained: its hypothesis with
its significant words highlighted and their z, p per round against τ, the held-out models' votes in its removal
round (the run's recorded votes; tests/test_explain.py checks those against a replay of the round) and its
nearest kept and removed rows. The SNLI tests are skipped without ../shared/data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import plotly_figures

pytestmark = pytest.mark.slow

PAGE = "pages/inspect.py"


def _snli_dataset(shared_data, n=1200):
    from aflite_core import dataset_from_table

    rows = pd.read_json(shared_data / "snli_sample.jsonl", lines=True).head(n)
    X = np.load(shared_data / "snli_sample.hyp_minilm.npy")[:n]
    return dataset_from_table(
        rows[["id", "premise", "hypothesis", "label"]],
        label_column="label",
        id_column="id",
        pair=("premise", "hypothesis"),
        features={"minilm_hyp": (X, "MiniLM sentence embeddings of the hypothesis")},
        name="snli sample",
    )


@pytest.mark.shared_data
def test_the_explanation_of_a_removed_snli_row(app_test, shared_data):
    from aflite_app.compute import runs
    from aflite_core.measures.artifact_statistics import artifact_statistics

    data = _snli_dataset(shared_data)
    at = app_test(page="pages/filter.py", uploads={"upload-snli": data}, dataset_key="upload-snli")
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    # the rows table: texts first, then the id
    order = list(at.dataframe[0].proto.column_order)
    assert order[:4] == ["premise", "hypothesis", "id", "class"]
    result = runs.stored_result(at.session_state["last_result_spec"])
    table = at.dataframe[0].value
    stats = artifact_statistics(data.frame["hypothesis"].tolist(), np.asarray(data.labels))
    significant = set(stats.loc[stats["significant"], "token"])
    removed = table[table["status"] == "removed"]
    pick = next(r for _, r in removed.iterrows() if significant & set(str(r["hypothesis"]).lower().split()))
    at.text_input(key="inspect-explain-id").set_value(pick["id"]).run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert f"Row {pick['id']} (class {pick['class']}) was removed in round {int(pick['round'])}" in text
    # its significant words: highlighted in the hypothesis, with their z (the test on all rows)
    words = next(d.value for d in at.dataframe if "its label" in d.value.columns)
    assert set(words["token"]) <= significant and len(words)
    top = words.iloc[0]
    z = stats.loc[(stats["token"] == top["token"]) & (stats["label"].astype(str) == top["label"]), "z"].iloc[0]
    assert top["z"] == pytest.approx(z)
    assert "-background[**" in text and f"z {z:.1f}" in text
    # p per round against τ, and the votes of its removal round
    figs = plotly_figures(at)
    rounds = next(f for f in figs if f["layout"].get("yaxis", {}).get("title", {}).get("text") == "predictability p")
    assert len(rounds["data"][0]["x"]) == int(pick["round"])
    votes = next(f for f in figs if "held-out models' votes" in f["layout"]["xaxis"]["title"]["text"])
    shown_votes = dict(zip(votes["data"][0]["y"], votes["data"][0]["x"]))
    # the votes are the run's recorded ones for that row in its removal round
    pos = int(pick["row"])
    recorded = result.votes[int(pick["round"]) - 1, pos]
    assert shown_votes == {str(c): int(v) for c, v in zip(result.classes, recorded)}
    assert sum(shown_votes.values()) == result.n_predictions[int(pick["round"]) - 1, pos]
    # its neighbours: kept and removed rows, with their text
    neighbours = next(d.value for d in at.dataframe if "similarity" in d.value.columns)
    assert {"kept", "removed"} == set(neighbours["status"]) and len(neighbours) == 10
    assert (neighbours["similarity"].diff().dropna() <= 1e-12).all()
    assert neighbours["hypothesis"].notna().all()
    # a kept row: its last round's votes, and it says it was kept
    kept = table[table["status"] == "kept"].iloc[0]
    at.text_input(key="inspect-explain-id").set_value(kept["id"]).run()
    assert not at.exception, at.exception
    assert any(f"Row {kept['id']} (class {kept['class']}) was kept" in m.value for m in at.markdown)
    # an unknown id is said, not raised
    at.text_input(key="inspect-explain-id").set_value("no-such-row").run()
    assert not at.exception
    assert any("No row has the id" in w.value for w in at.warning)


@pytest.mark.shared_data
def test_the_search_covers_the_columns_it_names_and_highlights_its_hits(app_test, shared_data):
    data = _snli_dataset(shared_data)
    at = app_test(page="pages/filter.py", uploads={"upload-snli": data}, dataset_key="upload-snli")
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    premise, hypothesis = data.frame["premise"].str.lower(), data.frame["hypothesis"].str.lower()
    word = "man"
    assert (premise.str.contains(word) & ~hypothesis.str.contains(word)).any()  # premise-only matches exist
    at.text_input(key="inspect-query").set_value(word).run()
    assert not at.exception, at.exception
    both = at.dataframe[0].value
    assert len(both) == int((premise.str.contains(word) | hypothesis.str.contains(word)).sum())
    assert any("Searching 'premise', 'hypothesis' for 'man'" in c.value for c in at.caption)
    at.multiselect(key="inspect-query-columns").set_value(["hypothesis"]).run()
    assert not at.exception, at.exception
    only = at.dataframe[0].value
    assert len(only) == int(hypothesis.str.contains(word).sum()) < len(both)
    assert only["hypothesis"].str.lower().str.contains(word).all()
    assert any("Searching 'hypothesis' for 'man'" in c.value for c in at.caption)
    styles = str(at.dataframe[0].proto.arrow_data.styler)
    assert "#FFE08A" in styles  # the cells holding the term are highlighted


def test_a_greedy_run_explains_its_rows_without_votes(app_test):
    """Strategy 'greedy' keeps no per-round record: the panel shows round 1 and says the votes were not recorded."""
    from test_app_inspect import _tiny_text_dataset

    at = app_test(page="pages/filter.py", uploads={"upload-tiny": _tiny_text_dataset()}, dataset_key="upload-tiny")
    at.selectbox(key="strategy-upload-tiny").set_value("greedy")
    at.button[0].click().run()  # the form's Run button
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    removed = at.dataframe[0].value.query("status == 'removed'")
    at.text_input(key="inspect-explain-id").set_value(str(removed["id"].iloc[0])).run()
    assert not at.exception, at.exception
    assert any("was removed in round" in m.value for m in at.markdown)
    assert any(c.value.startswith("Votes not recorded") and "greedy" in c.value for c in at.caption)
