"""explain_row / ``aflite explain``: one row's words, p per round, null, votes and neighbours, from the record.

On the real SNLI sample (skipped when ../shared/data is absent): a removed row's explanation names the significant
words its hypothesis contains (the z of the word test on all rows), its votes equal a replay of its removal round
(each partition refitted in an explicit loop, tests/test_votes.py) and its neighbours are the most similar kept and
removed rows by a brute-force cosine over every row.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_votes import _recording_rounds

from aflite_core import AFLiteResult, aflite
from aflite_core.cli import main
from aflite_core.engine.models import LinearFamily
from aflite_core.measures.artifact_statistics import artifact_statistics
from aflite_core.measures.explain import explain_row, nearest_neighbours, row_position


def _snli(shared_data, n=1500):
    rows = pd.read_json(shared_data / "snli_sample.jsonl", lines=True).head(n)
    X = np.load(shared_data / "snli_sample.hyp_minilm.npy")[:n]
    return rows[["id", "premise", "hypothesis", "label"]], X


def _replay(X):
    def replay(backend, rows, plan):
        votes = np.zeros((len(rows), 3), dtype=np.int64)
        for j in range(plan.n_partitions):  # one model per partition, refitted; its held-out rows only
            fitted = backend.session.fit(rows, plan, [j], np.random.default_rng(0))
            held = ~plan.train_mask(j)
            preds = backend.session.predict(fitted, X[rows[held]])[:, 0]
            np.add.at(votes, (np.flatnonzero(held), preds.astype(np.intp)), 1)
        return votes

    return replay


def _brute_neighbours(X, pos, mask, k):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    Xn = X / np.where(norms > 0, norms, 1)
    sims = Xn @ Xn[pos]
    sims[pos] = -np.inf
    sims[~mask] = -np.inf
    return list(np.argsort(-sims, kind="stable")[:k])


@pytest.mark.shared_data
def test_a_removed_snli_row_is_explained_by_its_words_votes_and_neighbours(shared_data, monkeypatch):
    table, X = _snli(shared_data)
    rounds = _recording_rounds(monkeypatch, _replay(X))
    result = aflite(
        X,
        table["label"].to_numpy(),
        ids=table["id"].to_numpy(),
        target_size=700,
        train_size=500,
        slice_size=150,
        n_partitions=16,
        tau=0.75,
        random_state=0,
        model=LinearFamily(block_rows=1),
        null_permutations=2,
    )
    stats = artifact_statistics(table["hypothesis"].tolist(), table["label"].to_numpy())
    significant = set(stats.loc[stats["significant"], "token"])
    gone = np.flatnonzero(~result.kept)
    with_word = [i for i in gone if significant & set(table["hypothesis"].iloc[i].lower().split())]
    assert with_word, "some removed row contains a significant word"
    pos = int(with_word[0])
    ex = explain_row(result, table["id"].iloc[pos], table=table, features=X, artifact_stats=stats)
    assert ex.position == pos and ex.status == "removed" and ex.id == table["id"].iloc[pos]
    assert ex.text["hypothesis"] == table["hypothesis"].iloc[pos] and "id" not in ex.text and "label" not in ex.text
    # its significant words, with the z of the test on all rows
    assert len(ex.words) and set(ex.words["token"]) <= significant
    for w in ex.words.itertuples():
        z = stats.loc[(stats["token"] == w.token) & (stats["label"].astype(str) == w.label), "z"].iloc[0]
        assert w.z == pytest.approx(z)
    # p per round against τ, and the null of its class
    r = ex.removed_round
    assert ex.rounds["round"].iloc[-1] == r and ex.rounds["reaches_tau"].iloc[-1]
    assert ex.rounds["p"].iloc[-1] == pytest.approx(float(result.removal_score[pos]))
    assert {"null_at_tau", "null_share_at_tau", "class_rows"} <= set(ex.rounds.columns)
    # the votes of its removal round: those of a replay of that round
    rows_r, replayed = rounds[r - 1]
    at = int(np.flatnonzero(rows_r == pos)[0])
    assert ex.votes_round == r
    np.testing.assert_array_equal(ex.votes["votes"].to_numpy(), replayed[at])
    assert ex.votes["votes"].sum() == result.n_predictions[r - 1, pos]
    label_votes = int(ex.votes.loc[ex.votes["is_label"], "votes"].iloc[0])
    assert np.float32(label_votes / ex.votes["votes"].sum()) == result.removal_score[pos]
    # its neighbours: the most similar kept and removed rows over every row
    nb = ex.neighbours
    assert list(nb.loc[nb["status"] == "kept", "row"]) == _brute_neighbours(X, pos, result.kept, 5)
    assert list(nb.loc[nb["status"] == "removed", "row"]) == _brute_neighbours(X, pos, ~result.kept, 5)
    assert (nb["hypothesis"] == table["hypothesis"].iloc[nb["row"]].to_numpy()).all()
    text = ex.to_text()
    assert ex.words["token"].iloc[0] in text and f"round {r}" in text and "Nearest rows" in text


def test_neighbours_in_chunks_equal_a_brute_force_search():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 7)).astype(np.float32)
    X[3] = 0  # a row of zero norm is never a neighbour
    mask = rng.random(500) < 0.4
    for chunk in (1, 13, 64, 1000):
        found = nearest_neighbours(X, 10, k=6, groups=np.vstack([mask, ~mask]), chunk_rows=chunk)
        assert list(found[0][0]) == _brute_neighbours(X, 10, mask & (np.arange(500) != 3), 6)
        assert list(found[1][0]) == _brute_neighbours(X, 10, ~mask & (np.arange(500) != 3), 6)
        assert 3 not in found[0][0] and 3 not in found[1][0]


def test_rows_are_named_by_id_or_position_and_a_missing_part_is_said():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    X = rng.normal(size=(300, 4))
    X[:80, 0] += 4 * (2 * y[:80] - 1)
    kw = dict(target_size=150, train_size=80, slice_size=40, n_partitions=8, random_state=0)
    plain = aflite(X, y, record_votes=False, **kw)
    assert row_position(plain, "12") == 12
    with pytest.raises(ValueError, match=r"no row 300: it has no ids, so name a row by its position 0 … 299\.$"):
        row_position(plain, 300)
    ex = explain_row(plain, 0)
    assert ex.votes is None and ex.neighbours is None and ex.text == {} and not len(ex.words)
    assert any(n.startswith("Votes not recorded") for n in ex.notes)
    assert any("No features" in n for n in ex.notes) and any("No null" in n for n in ex.notes)
    named = aflite(X, y, ids=[f"r{i}" for i in range(300)], **kw)
    assert row_position(named, "r7") == 7
    with pytest.raises(ValueError, match="no row with id 'r300'"):
        explain_row(named, "r300")
    with pytest.raises(ValueError, match="'features' parameter of explain_row has 10 rows; the run has 300"):
        explain_row(named, "r7", features=X[:10])


@pytest.mark.shared_data
def test_cli_explain_prints_the_report_of_a_saved_run(shared_data, tmp_path, capsys):
    table, X = _snli(shared_data, 900)
    np.save(tmp_path / "X.npy", X)
    table[["id"]].to_csv(tmp_path / "ids.csv", index=False)
    (tmp_path / "y.txt").write_text("\n".join(table["label"]) + "\n")
    table.to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    out = tmp_path / "run"
    argv = ["filter", "--features", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.txt")]
    argv += ["--ids", str(tmp_path / "ids.csv"), "--table", str(tmp_path / "t.jsonl"), "--id-column", "id"]
    argv += ["--target-size", "450", "--train-size", "300", "--slice-size", "100", "--partitions", "16"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    result = AFLiteResult.load(out)
    gone = str(result.ids[np.flatnonzero(~result.kept)[0]])
    assert main(["explain", str(out), "--row", gone]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"Row {gone} (class ") and "was removed in round" in text
    assert "Votes of the held-out models in round" in text and "Nearest rows in Φ" in text
    assert table.set_index("id").loc[gone, "hypothesis"] in text
    assert main(["explain", str(out), "--row", gone, "--json", "--neighbours", "2"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["id"] == gone and payload["status"] == "removed" and len(payload["neighbours"]) == 4
    assert (
        sum(v["votes"] for v in payload["votes"])
        == result.n_predictions[payload["removed_round"] - 1, payload["position"]]
    )
    assert main(["explain", str(out), "--row", "no-such-row"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: The run has no row with id 'no-such-row'") and err.count("\n") == 1
    assert main(["explain", str(tmp_path), "--row", gone]) == 2
    assert "is not a run directory" in capsys.readouterr().err
