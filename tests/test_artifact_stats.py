"""Gardner et al.'s competency-problems statistics: hand-computed values, the formula, real SNLI, the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm

from aflite_core.cli import main
from aflite_core.measures.artifact_statistics import (
    SHARE_COLUMNS,
    STAT_COLUMNS,
    artifact_shares,
    artifact_statistics,
    significance_curve,
    tokenize,
)


# ---------------------------------------------------------------------------------------------------------------
# hand-computed
# ---------------------------------------------------------------------------------------------------------------
def _small():
    """10 texts, labels A/B. 'cat' is in 5 texts (4 A, 1 B); 'dog' in 4 (1 A, 3 B); 'the' in all 10."""
    texts = [
        "the cat.",
        "The cat!",
        "the cat, the cat",
        "the CAT",
        "the cat dog",
        "the dog",
        "the dog",
        "the dog",
        "the",
        "the",
    ]
    labels = ["A", "A", "A", "A", "B", "A", "B", "B", "B", "B"]
    return texts, labels


def test_hand_computed_z_p_hat_and_counts():
    texts, labels = _small()
    s = artifact_statistics(texts, labels, min_count=4, alpha=0.05).set_index(["token", "label"])
    # p0 = 1/2; cat: n = 5, p(A|cat) = 4/5 -> z = (0.8 - 0.5) / sqrt(0.25 / 5) = 0.3 / 0.2236068 = 1.3416408
    assert s.loc[("cat", "A"), "count"] == 5 and s.loc[("cat", "A"), "label_count"] == 4
    assert s.loc[("cat", "A"), "p_hat"] == pytest.approx(0.8)
    assert s.loc[("cat", "A"), "z"] == pytest.approx(1.3416408, abs=1e-7)
    assert s.loc[("cat", "B"), "z"] == pytest.approx(-1.3416408, abs=1e-7)
    # dog: n = 4, p(B|dog) = 3/4 -> z = 0.25 / 0.25 = 1.0
    assert s.loc[("dog", "B"), "z"] == pytest.approx(1.0)
    # the: in every text once (repeats in one text count once), 5 A and 5 B -> z = 0
    assert s.loc[("the", "A"), "count"] == 10 and s.loc[("the", "A"), "z"] == pytest.approx(0.0)
    # 3 tokens x 2 labels = 6 tests; z* = Phi^-1(1 - 0.05 / 6) = 2.3939797
    assert s.attrs["n_tests"] == 6 and s.attrs["z_critical"] == pytest.approx(2.3939797, abs=1e-6)
    assert not s["significant"].any()
    # one-sided p-value
    assert s.loc[("cat", "A"), "p_value"] == pytest.approx(1 - norm.cdf(1.3416408), rel=1e-6)
    # PMI with add-1 smoothing: log((4 + 1) / (5 + 2)) - log(5 / 10)
    assert s.loc[("cat", "A"), "pmi"] == pytest.approx(math.log(5 / 7) - math.log(0.5))


def test_a_perfect_token_is_significant_once_seen_often_enough():
    texts = ["nobody here"] * 30 + ["someone here"] * 30 + ["a person here"] * 30
    labels = ["c"] * 30 + ["e"] * 30 + ["n"] * 30
    s = artifact_statistics(texts, labels, min_count=5).set_index(["token", "label"])
    # p(c|nobody) = 1, n = 30, p0 = 1/3: z = (2/3) / sqrt((2/9) / 30) = 7.7459667
    assert s.loc[("nobody", "c"), "z"] == pytest.approx(7.7459667, abs=1e-6)
    assert s.loc[("nobody", "c"), "significant"] and not s.loc[("nobody", "e"), "significant"]
    assert not s.loc[("here", "c"), "significant"]  # in every text: z = 0
    # min_count above 30 leaves only 'here' (90 texts)
    s2 = artifact_statistics(texts, labels, min_count=31)
    assert set(s2["token"]) == {"here"} and s2.attrs["n_tests"] == 3


def test_columns_order_and_sorting():
    texts, labels = _small()
    s = artifact_statistics(texts, labels, min_count=1)
    assert tuple(s.columns) == STAT_COLUMNS
    assert s["z"].is_monotonic_decreasing
    assert s["count"].dtype == np.int64 and s["significant"].dtype == bool
    assert s.attrs["labels"] == ["A", "B"] and s.attrs["label_texts"] == [5, 5] and s.attrs["p0"] == 0.5


def test_tokenisation_lowercase_punctuation_whitespace():
    assert tokenize("A man's T-shirt, isn't it?  “Yes!”") == ["a", "mans", "tshirt", "isnt", "it", "yes"]
    texts = ["cat cat cat", "cat", "dog", "dog"]
    once = artifact_statistics(texts, ["x", "y", "x", "y"], min_count=1).set_index(["token", "label"])
    every = artifact_statistics(texts, ["x", "y", "x", "y"], min_count=1, once_per_text=False)
    every = every.set_index(["token", "label"])
    assert once.loc[("cat", "x"), "count"] == 2 and once.loc[("cat", "x"), "p_hat"] == 0.5
    assert every.loc[("cat", "x"), "count"] == 4 and every.loc[("cat", "x"), "p_hat"] == 0.75


def test_custom_tokenizer():
    texts = ["ab", "ab", "ba"]
    s = artifact_statistics(texts, [0, 0, 1], min_count=1, tokenizer=list)  # characters as tokens
    assert set(s["token"]) == {"a", "b"} and (s["count"] == 3).all()


def test_no_token_reaches_min_count():
    s = artifact_statistics(["a b", "c d"], ["x", "y"], min_count=5)
    assert len(s) == 0 and tuple(s.columns) == STAT_COLUMNS and s.attrs["n_tests"] == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"min_count": 0}, r"The 'min_count' parameter of artifact_statistics must be an int in \[1, inf\)"),
        ({"alpha": 0.0}, r"The 'alpha' parameter of artifact_statistics must be a float in \(0, 1\)"),
        ({"alpha": 1.5}, r"The 'alpha' parameter of artifact_statistics must be a float in \(0, 1\)"),
        (
            {"pmi_smoothing": -1.0},
            r"The 'pmi_smoothing' parameter of artifact_statistics must be a float in \[0, inf\)",
        ),
        ({"tokenizer": str.split, "texts": ["a", 3]}, r"must be a sequence of str. Row 1 is 3"),
        (
            {"tokenizer": str.lower},
            r"The 'tokenizer' parameter of artifact_statistics must return a list of str "
            r"tokens. Got 'a b' for row 0 instead",
        ),
        ({"tokenizer": lambda t: [1, 2]}, r"must return str tokens. Got 1 for row 0"),
        ({"texts": ["a b"]}, r"must have one text per label \(2\). Got 1"),
        ({"labels": ["x", None]}, r"The 'labels' parameter of artifact_statistics must not contain missing labels"),
    ],
)
def test_invalid_parameters(kwargs, match):
    args = {"texts": ["a b", "c d"], "labels": ["x", "y"]}
    args.update(kwargs)
    texts, labels = args.pop("texts"), args.pop("labels")
    with pytest.raises(ValueError, match=match):
        artifact_statistics(texts, labels, **args)


def test_tokenizer_must_be_callable():
    with pytest.raises(TypeError, match=r"The 'tokenizer' parameter of artifact_statistics must be a callable"):
        artifact_statistics(["a"], ["x"], tokenizer="split")


# ---------------------------------------------------------------------------------------------------------------
# the formula, on random count tables
# ---------------------------------------------------------------------------------------------------------------
@given(
    table=st.lists(st.lists(st.integers(0, 12), min_size=3, max_size=3), min_size=1, max_size=8),
    min_count=st.integers(1, 10),
    alpha=st.sampled_from([0.001, 0.01, 0.05]),
)
def test_matches_the_formula_on_random_counts(table, min_count, alpha):
    counts = np.array(table, dtype=np.int64)  # tokens x labels: texts holding token i with label j
    texts, labels = [], []
    for i, row in enumerate(counts):
        for j, c in enumerate(row):
            texts += [f"w{i} pad"] * int(c)
            labels += [f"L{j}"] * int(c)
    # every label present at least once ("pad" only), so |Y| = 3
    texts += ["pad"] * 3
    labels += ["L0", "L1", "L2"]
    s = artifact_statistics(texts, labels, min_count=min_count, alpha=alpha).set_index(["token", "label"])
    n_tokens = sum(1 for row in counts if row.sum() >= min_count) + (len(texts) >= min_count)  # + "pad"
    assert s.attrs["n_tests"] == 3 * n_tokens
    z_crit = norm.isf(alpha / max(3 * n_tokens, 1))
    assert s.attrs["z_critical"] == pytest.approx(z_crit, rel=1e-9)
    label_texts = np.bincount([int(lab[1]) for lab in labels], minlength=3)
    for i, row in enumerate(counts):
        n = int(row.sum())
        for j in range(3):
            key = (f"w{i}", f"L{j}")
            if n < min_count:
                assert key not in s.index
                continue
            p = row[j] / n
            z = (p - 1 / 3) / math.sqrt((1 / 3) * (2 / 3) / n)
            got = s.loc[key]
            assert got["count"] == n and got["label_count"] == row[j]
            assert got["p_hat"] == pytest.approx(p) and got["z"] == pytest.approx(z, abs=1e-9)
            assert bool(got["significant"]) == (z > z_crit)
            pmi = math.log((row[j] + 1) / (n + 3)) - math.log(label_texts[j] / len(texts))
            assert got["pmi"] == pytest.approx(pmi)
            # the significance curve is the same test read as a p-hat threshold
            curve = significance_curve([n], n_labels=3, n_tests=s.attrs["n_tests"], alpha=alpha)[0]
            if abs(p - curve) > 1e-9:
                assert bool(got["significant"]) == (p > curve)


def test_significance_curve_values_and_errors():
    c = significance_curve(np.array([1.0, 4.0]), n_labels=2, n_tests=1, alpha=0.05)
    # p0 = 0.5, z* = 1.6448536: 0.5 + 1.6448536 * 0.5 / sqrt(n)
    np.testing.assert_allclose(c, [0.5 + 1.6448536 * 0.5, 0.5 + 1.6448536 * 0.25], atol=1e-7)
    with pytest.raises(
        ValueError,
        match=r"The 'counts' parameter of significance_curve must be an array of "
        r"positive numbers",
    ):
        significance_curve([0, 5], n_labels=3, n_tests=10)
    with pytest.raises(
        ValueError,
        match=r"The 'n_labels' parameter of significance_curve must be an int in "
        r"\[2, inf\)",
    ):
        significance_curve([5], n_labels=1, n_tests=10)


# ---------------------------------------------------------------------------------------------------------------
# after a run: shares among kept and removed rows
# ---------------------------------------------------------------------------------------------------------------
def test_shares_among_kept_and_removed_rows():
    texts = ["nobody sleeps"] * 10 + ["a man sleeps"] * 10 + ["a woman eats"] * 10
    labels = ["c"] * 10 + ["e"] * 10 + ["n"] * 10
    kept = np.ones(30, bool)
    kept[:8] = False  # 8 of the 10 'nobody' rows removed
    kept[[10, 20]] = False  # and one 'man', one 'woman' row
    stats = artifact_statistics(texts, labels, min_count=5)
    out = artifact_shares(texts, labels, kept, stats)
    assert tuple(out.columns) == SHARE_COLUMNS
    assert list(zip(out["token"], out["label"])) == list(
        zip(stats.loc[stats.significant, "token"], stats.loc[stats.significant, "label"])
    )
    row = out.set_index("token").loc["nobody"]
    assert (row["count"], row["count_kept"], row["count_removed"]) == (10, 2, 8)
    assert row["share_kept"] == pytest.approx(2 / 20) and row["share_removed"] == pytest.approx(8 / 10)
    assert row["removed_fraction"] == pytest.approx(0.8)
    # p(c | nobody) stays 1 among the 2 kept rows, but with n = 2: z = (2/3) / sqrt((2/9) / 2) = 2.0
    assert row["p_hat_kept"] == 1.0 and row["z_kept"] == pytest.approx(2.0)
    assert row["z"] == pytest.approx((2 / 3) / math.sqrt((2 / 9) / 10))
    plain = artifact_shares(texts, labels, kept, ["sleeps", "unseen"])
    assert plain["label"].isna().all() and plain["z"].isna().all()
    assert plain["count"].tolist() == [20, 0] and plain["count_removed"].tolist() == [9, 0]
    assert np.isnan(plain.loc[1, "removed_fraction"])


def test_shares_reject_unknown_labels_and_bad_masks():
    texts, labels = ["a b", "c d"], ["x", "y"]
    with pytest.raises(ValueError, match=r"names the label 'z', which is not one of the labels"):
        artifact_shares(texts, labels, [True, False], pd.DataFrame({"token": ["a"], "label": ["z"]}))
    with pytest.raises(
        ValueError,
        match=r"The 'kept' parameter of artifact_shares must be an AFLiteResult or a "
        r"boolean array with one entry per row \(2\)",
    ):
        artifact_shares(texts, labels, [True], ["a"])
    with pytest.raises(ValueError, match=r"must be a table with a 'token' column"):
        artifact_shares(texts, labels, [True, False], pd.DataFrame({"word": ["a"]}))


# ---------------------------------------------------------------------------------------------------------------
# real SNLI hypotheses
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.shared_data
def test_snli_sample_known_artifacts_are_significant(shared_data):
    frame = pd.read_json(shared_data / "snli_sample.jsonl", lines=True)
    s = artifact_statistics(frame["hypothesis"].tolist(), frame["label"].tolist())
    assert s.attrs["n_texts"] == 6891 and s.attrs["labels"] == ["contradiction", "entailment", "neutral"]
    sig = s[s["significant"]].set_index(["token", "label"])
    for token in ("nobody", "sleeping", "cat", "no"):
        assert (token, "contradiction") in sig.index, token
    for token in ("outdoors", "outside", "people", "person"):
        assert (token, "entailment") in sig.index, token
    # measured on this sample (see the PR report): nobody 37/37 contradiction, z = 8.60
    assert sig.loc[("nobody", "contradiction"), "count"] == 37
    assert sig.loc[("nobody", "contradiction"), "z"] == pytest.approx(8.602, abs=1e-3)
    assert sig.loc[("outside", "entailment"), "count"] == 246
    # significance is one-sided: a significant pair always has p_hat above p0
    assert (sig["p_hat"] > s.attrs["p0"]).all()


# ---------------------------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------------------------
def _table(tmp_path):
    rows = (
        [{"hypothesis": "Nobody is here.", "label": "contradiction"}] * 30
        + [{"hypothesis": "A person is outside.", "label": "entailment"}] * 30
        + [{"hypothesis": "A tall person is here.", "label": "neutral"}] * 30
    )
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_prints_the_significant_rows(tmp_path, capsys):
    path = _table(tmp_path)
    assert main(["artifacts", "--table", str(path), "--text-column", "hypothesis", "--label-column", "label"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "90 texts, 3 labels" in lines[0] and "significant when z >" in lines[0]
    body = "\n".join(lines[1:])
    assert "nobody" in body and "outside" in body and "tall" in body
    assert "here " not in body  # 'here' (60 texts, 30 per label) is not significant


def test_cli_json_records(tmp_path, capsys):
    path = _table(tmp_path)
    assert main(["artifacts", "--table", str(path), "--json", "--min-count", "20", "--alpha", "0.001"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert {(r["token"], r["label"]) for r in records} == {
        ("nobody", "contradiction"),
        ("outside", "entailment"),
        ("tall", "neutral"),
    }
    assert all(r["significant"] is True and r["count"] == 30 for r in records)


@pytest.mark.parametrize(
    "args, match",
    [
        (["--text-column", "premise"], r"has no column 'premise' \(--text-column\)"),
        (["--alpha", "1.5"], r"The --alpha option must be a float in \(0, 1\)"),
        (["--min-count", "0"], r"The --min-count option must be an int in \[1, inf\)"),
        (["--max-rows", "10"], r"more than --max-rows 10; pass a larger --max-rows"),
    ],
)
def test_cli_bad_input_is_one_line_and_status_2(tmp_path, capsys, args, match):
    path = _table(tmp_path)
    assert main(["artifacts", "--table", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    import re

    assert re.search(match, err), err
    assert "command line" not in err  # the CLI never tells its user to use the command line


def test_cli_table_above_its_byte_limit_names_the_limit_not_the_command_line(tmp_path, capsys, monkeypatch):
    import aflite_core.cli.artifacts as cli_artifacts

    path = _table(tmp_path)
    monkeypatch.setattr(cli_artifacts, "_MAX_BYTES", 1024)  # the real limit is 4 GB: too big to write in a test
    assert main(["artifacts", "--table", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "`aflite artifacts` reads" in err
    assert "command line" not in err


def test_a_progress_callback_reports_every_10000_texts_and_changes_nothing():
    """Issue 25: the app's words tab reports progress from the core; the results equal those without a callback."""
    from aflite_core.measures.artifact_statistics import artifact_shares, artifact_statistics

    rng = np.random.default_rng(3)
    n = 25_000
    labels = rng.integers(0, 3, n)
    words = np.array(["red", "green", "blue", "cat", "dog", "runs", "sleeps", "nobody", "outside"])
    texts = [" ".join(rng.choice(words, 3)) + (" nobody" if lab == 0 and i % 3 else "") for i, lab in enumerate(labels)]
    kept = rng.random(n) < 0.7
    calls = []
    stats = artifact_statistics(texts, labels, min_count=20, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, n), (10_000, n), (20_000, n), (n, n)]
    plain = artifact_statistics(texts, labels, min_count=20)
    pd.testing.assert_frame_equal(stats, plain)
    assert stats.attrs == plain.attrs and stats["significant"].any()
    calls.clear()
    shares = artifact_shares(texts, labels, kept, stats, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, n), (10_000, n), (20_000, n), (n, n)]
    pd.testing.assert_frame_equal(shares, artifact_shares(texts, labels, kept, stats))


def test_an_exception_in_the_progress_callback_stops_the_statistics():
    from aflite_core.measures.artifact_statistics import artifact_statistics

    class Halt(Exception):
        pass

    def halt(done, total):
        if done:
            raise Halt

    texts = ["a b c"] * 10_001 + ["d"] * 100
    with pytest.raises(Halt):
        artifact_statistics(texts, [0, 1] * 5050 + [0], progress=halt)
    with pytest.raises(TypeError, match="'progress' parameter of artifact_statistics"):
        artifact_statistics(texts, [0, 1] * 5050 + [0], progress=3)
