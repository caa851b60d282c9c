"""Spurious-correlation measures, the WordNet reader and the Mann-Whitney / Bonferroni comparison.

WordNet tests are never skipped: without the database (apt-get install wordnet-base) they fail with the
reader's error, which says how to install it.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from aflite_core.data import wordnet
from aflite_core.dynamics import LEVELS, DifficultyLevels
from aflite_core.measures.spurious import (
    NEGATION_WORDS,
    SPURIOUS_MEASURES,
    compare_classes,
    contains_negation,
    length_mismatch,
    misspelled_words,
    number_of_antonyms,
    paper_table,
    significance_stars,
    spurious_measures,
    tokenize,
    word_overlap,
)


# ------------------------------------------------------------------------------------------- tokens
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("A man, in a RED shirt!", ["a", "man", "in", "a", "red", "shirt"]),
        ("He doesn\u2019t know.", ["he", "doesn't", "know"]),
        ("does n't", ["does", "n't"]),
        ("T-shirt_x 3 dogs", ["t", "shirt", "x", "3", "dogs"]),
        ("Café crème", ["café", "crème"]),
        ("", []),
    ],
)
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens


# ------------------------------------------------------------------------------------------- each measure
def test_word_overlap_counts_distinct_shared_words_per_hypothesis_token():
    assert word_overlap("A man is sleeping.", "The man is awake.") == pytest.approx(2 / 4)
    assert word_overlap("A dog.", "A dog, a dog.") == pytest.approx(2 / 4)  # set(a) & set(b) = {a, dog}
    assert word_overlap("Dogs bark.", "Cats meow.") == 0.0
    assert word_overlap("Anything.", "") == 0.0


def test_length_mismatch_is_signed_and_relative_to_the_hypothesis():
    assert length_mismatch("A man in a hat sleeps.", "A man sleeps.") == pytest.approx((6 - 3) / 3)
    assert length_mismatch("A man.", "A man sleeps on the couch.") == pytest.approx((2 - 6) / 6)
    assert length_mismatch("Same length", "Two words") == 0.0


@pytest.mark.parametrize(
    ("premise", "hypothesis", "expected"),
    [
        ("The man is happy.", "The man is unhappy.", 1 / 4),  # happy ! unhappy (adjective)
        ("The soup is hot.", "The soup is cold.", 1 / 4),  # hot ! cold
        ("A tall woman.", "A short woman.", 1 / 3),  # tall ! short
        ("The boy is taller.", "The boy is short.", 1 / 4),  # base form via adj.exc / -er rule
        ("Kids sitting outside.", "Kids are standing inside.", 2 / 4),  # sit ! stand (verb, -ing), outside ! inside
        ("A man sleeps at night.", "It is day and night.", 1 / 5),  # 'day' counts once; 'night' is no antonym
        ("The man is happy.", "The man is glad.", 0.0),
    ],
)
def test_number_of_antonyms_uses_wordnet(premise, hypothesis, expected):
    assert number_of_antonyms(premise, hypothesis) == pytest.approx(expected)


def test_wordnet_reader_finds_lexical_antonyms_and_base_forms():
    wn = wordnet.load_wordnet()
    assert wn is wordnet.load_wordnet()  # cached
    assert wordnet.antonyms("happy") == {"unhappy"}
    assert wordnet.antonyms("HOT") == {"cold"}
    assert "short" in wordnet.antonyms("tall") and "tall" in wordnet.antonyms("short")
    assert wn.are_antonyms("sitting", "stands")
    assert not wn.are_antonyms("happy", "glad")
    assert wordnet.base_forms("went") == ("go",)
    assert "run" in wordnet.base_forms("running")
    assert wordnet.base_forms("dogs") == ("dog",)
    assert wordnet.base_forms("xqzt") == ()


def test_wordnet_reader_parses_a_tiny_database(tmp_path):
    """Lexical pointers name words by position: word 2 of synset A is the antonym of word 1 of synset B."""
    header = "  1 This is a licence line.\n"

    def line(offset, words, pointers):
        ptrs = " ".join(f"{sym} {target:08d} a {st}" for sym, target, st in pointers)
        body = " ".join(f"{w} 0" for w in words)
        return f"{offset:08d} 00 a {len(words):02x} {body} {len(pointers):03d} {ptrs} | gloss\n"

    off_a = len(header)
    first = line(off_a, ["glad", "content(p)"], [("!", 0, "0201")])
    off_b = off_a + len(first)
    first = line(off_a, ["glad", "content(p)"], [("!", off_b, "0201")])
    second = line(off_b, ["discontent", "malcontent"], [("!", off_a, "0102"), ("&", off_a, "0000")])
    (tmp_path / "data.adj").write_text(header + first + second)
    for part in ("noun", "verb", "adv"):
        (tmp_path / f"data.{part}").write_text(header)
    wn = wordnet.load_wordnet(tmp_path)
    assert wn.antonym_table == {"content": frozenset({"discontent"}), "discontent": frozenset({"content"})}
    assert wn.lemmas["adj"] == {"glad", "content", "discontent", "malcontent"}  # no index.adj: from data.adj
    assert wordnet.antonyms("contents", wordnet_dir=tmp_path) == frozenset()  # no noun rules for an adjective


def test_missing_wordnet_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="apt-get install wordnet-base"):
        wordnet.find_wordnet_dir(tmp_path / "absent")
    (tmp_path / "data.noun").write_text("")
    with pytest.raises(ValueError, match=r"has no data.verb, data.adj, data.adv"):
        wordnet.find_wordnet_dir(tmp_path)
    monkeypatch.setenv(wordnet.WORDNET_DIR_ENV, str(tmp_path / "absent"))
    with pytest.raises(ValueError, match="AFLITE_WORDNET_DIR"):
        spurious_measures(["a"], ["b"])


def test_misspelled_words_per_token_of_both_texts():
    assert misspelled_words("A man is sleping.", "A man sleeps.") == pytest.approx(1 / 7)
    assert misspelled_words("Teh dog.", "Teh cat.") == pytest.approx(2 / 4)  # every occurrence counts
    assert misspelled_words("2 dogs run.", "They run 100 meters.") == 0.0  # numbers are not misspelled
    assert misspelled_words("He does n't know .", "We 'll see .") == 0.0  # pieces of pre-tokenised contractions
    assert misspelled_words("", "") == 0.0


@pytest.mark.parametrize(
    ("premise", "hypothesis", "expected"),
    [
        ("A dog runs.", "Nobody is running.", True),
        ("A dog runs.", "The dog isn't running.", True),
        ("A dog runs.", "The dog does n't run.", True),
        ("There is no dog.", "A cat.", True),  # the premise counts too
        ("A dog never sleeps.", "A cat.", True),
        ("A dog runs.", "A knot is tied at noon.", False),  # whole tokens only
        ("A dog runs.", "Nothing at all.", True),
        ("A dog runs.", "Not a cat.", True),
    ],
)
def test_contains_negation(premise, hypothesis, expected):
    assert contains_negation(premise, hypothesis) is expected


def test_contains_negation_with_a_custom_list():
    assert contains_negation("A dog.", "Without a cat.", negation_words=["without"])
    assert not contains_negation("A dog.", "No cat.", negation_words=["without"])
    assert {"no", "not", "never", "nobody", "nothing", "none", "n't"} <= NEGATION_WORDS


def test_spurious_measures_frame():
    premises = pd.Series(["The man is happy.", "Two dogs run in teh park.", "A woman reads."], index=[10, 11, 12])
    hypotheses = ["The man is unhappy.", "No animals are outside.", "A woman is reading a book."]
    frame = spurious_measures(premises, hypotheses)
    assert list(frame.columns) == list(SPURIOUS_MEASURES)
    assert list(frame.index) == [10, 11, 12]
    assert frame["contains_negation"].dtype == bool
    assert frame["contains_negation"].tolist() == [False, True, False]
    for i, (p, h) in enumerate(zip(premises, hypotheses)):
        row = frame.iloc[i]
        assert row["word_overlap"] == pytest.approx(word_overlap(p, h))
        assert row["antonyms"] == pytest.approx(number_of_antonyms(p, h))
        assert row["length_mismatch"] == pytest.approx(length_mismatch(p, h))
        assert row["misspelled_words"] == pytest.approx(misspelled_words(p, h))
    assert frame.loc[10, "antonyms"] == pytest.approx(0.25)
    assert frame.loc[11, "misspelled_words"] == pytest.approx(1 / 10)


@pytest.mark.parametrize(
    ("premises", "hypotheses", "kwargs", "exc", "match"),
    [
        (["a", "b"], ["c"], {}, ValueError, r"'hypotheses' parameter of spurious_measures must have one text per"),
        ("a b", ["c"], {}, TypeError, "'premises' parameter of spurious_measures must be a sequence of str"),
        (["a", None], ["c", "d"], {}, TypeError, r"Got None \(row 1\)"),
        (["a"], ["c"], {"negation_words": "no"}, TypeError, "'negation_words' parameter"),
        (["a"], ["c"], {"language": 3}, TypeError, "'language' parameter"),
    ],
)
def test_spurious_measures_rejects_bad_input(premises, hypotheses, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        spurious_measures(premises, hypotheses, **kwargs)


# ------------------------------------------------------------------------------------------- statistics
@pytest.mark.parametrize(
    ("p", "stars"),
    [
        (0.0, "***"),
        (0.001, "***"),
        (0.0011, "**"),
        (0.01, "**"),
        (0.02, "*"),
        (0.05, "*"),
        (0.051, "ns"),
        (1.0, "ns"),
        (float("nan"), ""),
    ],
)
def test_significance_stars_use_the_papers_thresholds(p, stars):
    assert significance_stars(p) == stars


@pytest.fixture
def small_table(rng):
    n = 180
    labels = np.tile(["entailment", "neutral", "contradiction"], n // 3)
    levels = np.repeat(["hard", "easy", "ambiguous"], n // 3)
    measures = pd.DataFrame(
        {
            "word_overlap": rng.random(n) + (labels == "entailment") * (levels == "easy") * 1.0,
            "contains_negation": (labels == "contradiction") & (levels != "hard") | (rng.random(n) < 0.1),
        }
    )
    return measures, labels, levels


def test_compare_classes_matches_scipy_with_bonferroni_over_the_table(small_table):
    measures, labels, levels = small_table
    tests = compare_classes(measures, labels, levels)
    assert list(tests.columns) == [
        "level",
        "measure",
        "class_a",
        "class_b",
        "n_a",
        "n_b",
        "mean_a",
        "mean_b",
        "U",
        "p",
        "p_bonferroni",
        "stars",
    ]
    assert len(tests) == 3 * 2 * 3
    assert tests["level"].unique().tolist() == ["easy", "ambiguous", "hard"]
    assert tests[["class_a", "class_b"]].drop_duplicates().values.tolist() == [
        ["contradiction", "entailment"],
        ["contradiction", "neutral"],
        ["entailment", "neutral"],
    ]
    for row in tests.itertuples():
        a = measures.loc[(levels == row.level) & (labels == row.class_a), row.measure].astype(float).to_numpy()
        b = measures.loc[(levels == row.level) & (labels == row.class_b), row.measure].astype(float).to_numpy()
        expected = mannwhitneyu(a, b, alternative="two-sided")
        assert row.U == pytest.approx(expected.statistic)
        assert row.p == pytest.approx(expected.pvalue)
        assert row.p_bonferroni == pytest.approx(min(1.0, expected.pvalue * 18))
        assert row.stars == significance_stars(min(1.0, expected.pvalue * 18))
        assert row.mean_a == pytest.approx(a.mean()) and row.n_a == len(a)
    easy = tests.set_index(["level", "measure", "class_a", "class_b"])
    assert easy.loc[("easy", "word_overlap", "entailment", "neutral"), "stars"] == "***"
    assert easy.loc[("easy", "contains_negation", "contradiction", "neutral"), "stars"] == "***"


@pytest.mark.parametrize(("family", "m"), [("level", 6), ("measure", 3)])
def test_compare_classes_bonferroni_families(small_table, family, m):
    measures, labels, levels = small_table
    tests = compare_classes(measures, labels, levels, family=family)
    np.testing.assert_allclose(tests["p_bonferroni"], np.minimum(1.0, tests["p"] * m))


def test_compare_classes_accepts_difficulty_levels_and_no_levels(small_table):
    measures, labels, levels = small_table
    series = pd.Series(pd.Categorical(levels, categories=list(LEVELS), ordered=True), index=measures.index)
    result = DifficultyLevels(series, measures.astype(float), "gmm")
    via_result = compare_classes(measures, labels, result, columns=["word_overlap"])
    via_array = compare_classes(measures, labels, levels, columns="word_overlap")
    pd.testing.assert_frame_equal(via_result, via_array)
    overall = compare_classes(measures, labels)
    assert overall["level"].unique().tolist() == ["all"] and len(overall) == 2 * 3


def test_compare_classes_keeps_untestable_pairs_as_nan():
    measures = pd.DataFrame({"x": [0.1, 0.2, 0.3, 0.4, 0.5]})
    tests = compare_classes(measures, ["a", "a", "b", "b", "a"], ["easy", "easy", "easy", "easy", "hard"])
    hard = tests[tests["level"] == "hard"].iloc[0]
    assert hard["n_b"] == 0 and np.isnan(hard["p"]) and hard["stars"] == ""
    easy = tests[tests["level"] == "easy"].iloc[0]
    assert easy["p_bonferroni"] == pytest.approx(easy["p"])  # only one test counted


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"family": "all"}, ValueError, "'family' parameter of compare_classes must be one of"),
        ({"columns": ["nope"]}, ValueError, "'columns' parameter of compare_classes"),
        ({"labels": ["a"] * 4}, ValueError, r"'labels' parameter of compare_classes must have one value per row"),
        ({"labels": ["a"] * 5}, ValueError, "at least 2 classes"),
        ({"levels": ["easy", None, "easy", "easy", "easy"]}, ValueError, "must not contain missing values. Row 1"),
        ({"measures": [1, 2, 3]}, TypeError, "'measures' parameter of compare_classes must be a pandas DataFrame"),
    ],
)
def test_compare_classes_rejects_bad_input(kwargs, exc, match):
    args = {"measures": pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0]}), "labels": ["a", "b", "a", "b", "a"], **kwargs}
    with pytest.raises(exc, match=match):
        compare_classes(**args)


def test_paper_table_is_the_wide_view(small_table):
    measures, labels, levels = small_table
    tests = compare_classes(measures, labels, levels)
    wide = paper_table(tests)
    assert list(wide.index.names) == ["level", "measure"]
    assert wide.index.get_level_values("level").unique().tolist() == ["easy", "ambiguous", "hard"]
    pairs = [f"{a} vs {b}" for a, b in itertools.combinations(["contradiction", "entailment", "neutral"], 2)]
    assert list(wide.columns) == ["contradiction", "entailment", "neutral", *pairs]
    cell = wide.loc[("easy", "word_overlap")]
    mask = (levels == "easy") & (labels == "entailment")
    assert cell["entailment"] == pytest.approx(measures.loc[mask, "word_overlap"].mean())
    row = tests[
        (tests["level"] == "easy") & (tests["measure"] == "word_overlap") & (tests["class_a"] == "entailment")
    ].iloc[0]
    assert cell["entailment vs neutral"] == row["stars"]
    with pytest.raises(ValueError, match="'tests' parameter of paper_table"):
        paper_table(pd.DataFrame({"x": [1]}))


def test_sample_texts_measures():
    sample = Path(__file__).resolve().parents[1] / "sample_data" / "cartography_example" / "texts.jsonl"
    table = pd.read_json(sample, lines=True)
    frame = spurious_measures(table["premise"], table["hypothesis"])
    assert frame["contains_negation"].tolist() == [False, True, False, False, False, False]
    assert frame["antonyms"].iloc[5] > 0 and (frame["antonyms"].iloc[:5] == 0).all()
