r"""Spurious-correlation measures for text pairs, and their comparison across classes and difficulty levels.

The measures follow Cosma et al. (2024), Table 2 (after Naik et al., 2018), for a pair of texts ``a``
(premise) and ``b`` (hypothesis):

==================  ======================================================================================
column              value (``len(b)`` = number of tokens of ``b``)
==================  ======================================================================================
word_overlap        ``|set(a) ∩ set(b)| / len(b)``: distinct shared words per hypothesis token, in [0, 1]
antonyms            number of tokens of ``b`` that are a WordNet antonym of some token of ``a``, ``/ len(b)``
length_mismatch     ``(len(a) - len(b)) / len(b)``: positive when the premise is longer
misspelled_words    misspelled tokens of ``a`` and ``b`` together ``/ (len(a) + len(b))``, in [0, 1]
contains_negation   whether ``a`` or ``b`` contains a negation word (:data:`NEGATION_WORDS`)
==================  ======================================================================================

Normalisation ("normalized by sentence length" in the paper) is by the hypothesis length for the three pair
measures and by the length of both texts for misspellings, as in the authors' released code
(``heuristics.py`` of cosmaadrian/nli-stress-test); a pair whose hypothesis has no token scores 0. Where the
released code differs from the paper's wording we follow the wording: misspellings are counted per token
occurrence ("total number of misspelled words"), not per distinct word; antonyms are looked up through lexical
antonym pointers of the word itself and of its base forms (see :mod:`aflite_core.data.wordnet`), not through the
antonyms of every synonym of the word; the negation list is wider and includes contractions (``n't``).

Tokenisation: the text is lowercased, typographic apostrophes become ``'``, and tokens are maximal runs of
letters and digits, optionally joined by apostrophes (``[^\W_]+('[^\W_]+)*``): ``"Doesn't the T-shirt fit?"``
→ ``doesn't, the, t, shirt, fit``. Tokens that contain a digit, and the contraction pieces of pre-tokenised
text (``n't``, ``ll``, ``ve``), are never counted as misspelled.

Misspellings use ``pyspellchecker`` (its English word-frequency list ships with the package; an optional
dependency: ``pip install pyspellchecker``).

References
----------
A. Cosma, S. Ruseti, M. Dascalu and C. Caragea. How Hard is this Test Set? NLI Characterization by Exploiting
Training Dynamics. EMNLP 2024.

A. Naik, A. Ravichander, N. Sadeh, C. Rose and G. Neubig. Stress Test Evaluation for Natural Language
Inference. COLING 2018.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Collection, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from ..data.wordnet import WordNet, load_wordnet

__all__ = [
    "LEVEL_ORDER",
    "NEGATION_WORDS",
    "SPURIOUS_MEASURES",
    "compare_classes",
    "contains_negation",
    "length_mismatch",
    "misspelled_words",
    "number_of_antonyms",
    "paper_table",
    "significance_stars",
    "spurious_measures",
    "tokenize",
    "word_overlap",
]

#: negation words (whole tokens); any token ending in ``n't`` (``don't``, ``isn't``, ``n't``) also counts
NEGATION_WORDS: frozenset[str] = frozenset(
    {"no", "not", "never", "nobody", "nothing", "none", "neither", "nor", "nowhere", "cannot", "n't"}
)
#: the columns of :func:`spurious_measures`, in the paper's order
SPURIOUS_MEASURES: tuple[str, ...] = (
    "word_overlap",
    "antonyms",
    "length_mismatch",
    "misspelled_words",
    "contains_negation",
)
#: how difficulty levels are ordered in the comparison tables
LEVEL_ORDER: tuple[str, ...] = ("easy", "ambiguous", "hard")

_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase word tokens (see the module notes).

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        The tokens, in order.

    Examples
    --------
    >>> tokenize("Doesn't the T-shirt fit? 2 dogs.")
    ["doesn't", 'the', 't', 'shirt', 'fit', '2', 'dogs']
    """
    if not isinstance(text, str):
        raise TypeError(f"The 'text' parameter of tokenize must be a str. Got {text!r} instead.")
    return _TOKEN.findall(text.lower().translate(_APOSTROPHES))


def _is_negation(token: str, words: Collection[str]) -> bool:
    return token in words or token.endswith("n't")


def word_overlap(premise: str, hypothesis: str) -> float:
    """Distinct words shared by the two texts per hypothesis token, in [0, 1] (0 for an empty hypothesis).

    Examples
    --------
    >>> word_overlap("A man is sleeping.", "The man is awake.")
    0.5
    """
    a, b = (
        tokenize(_text(premise, "premise", "word_overlap")),
        tokenize(_text(hypothesis, "hypothesis", "word_overlap")),
    )
    return len(set(a) & set(b)) / len(b) if b else 0.0


def length_mismatch(premise: str, hypothesis: str) -> float:
    """``(len(premise) - len(hypothesis)) / len(hypothesis)`` in tokens; positive when the premise is longer.

    Examples
    --------
    >>> length_mismatch("A man in a hat sleeps.", "A man sleeps.")
    1.0
    """
    a = tokenize(_text(premise, "premise", "length_mismatch"))
    b = tokenize(_text(hypothesis, "hypothesis", "length_mismatch"))
    return (len(a) - len(b)) / len(b) if b else 0.0


def contains_negation(premise: str, hypothesis: str, *, negation_words: Collection[str] | None = None) -> bool:
    """Whether either text contains a negation word (:data:`NEGATION_WORDS` or a token ending in ``n't``).

    Examples
    --------
    >>> contains_negation("A dog runs.", "The dog isn't running.")
    True
    >>> contains_negation("A dog runs.", "Nothing moves.")
    True
    >>> contains_negation("A dog runs.", "A dog moves.")
    False
    """
    words = NEGATION_WORDS if negation_words is None else frozenset(w.lower() for w in negation_words)
    tokens = tokenize(_text(premise, "premise", "contains_negation")) + tokenize(
        _text(hypothesis, "hypothesis", "contains_negation")
    )
    return any(_is_negation(t, words) for t in tokens)


def number_of_antonyms(premise: str, hypothesis: str, *, wordnet_dir: str | os.PathLike | None = None) -> float:
    """Hypothesis tokens that are WordNet antonyms of a premise token, per hypothesis token.

    Parameters
    ----------
    premise, hypothesis : str
        The two texts.
    wordnet_dir : str or path-like, optional
        WordNet database directory (default: ``AFLITE_WORDNET_DIR``, else ``/usr/share/wordnet``).

    Returns
    -------
    float
        In [0, 1]; 0 for an empty hypothesis.

    Examples
    --------
    >>> number_of_antonyms("The man is happy.", "The man is unhappy.")
    0.25
    """
    a = tokenize(_text(premise, "premise", "number_of_antonyms"))
    b = tokenize(_text(hypothesis, "hypothesis", "number_of_antonyms"))
    return _antonym_share(a, b, load_wordnet(wordnet_dir))


def misspelled_words(premise: str, hypothesis: str) -> float:
    """Misspelled tokens of both texts per token of both texts, in [0, 1] (``pyspellchecker``'s English list).

    Examples
    --------
    >>> misspelled_words("A man is sleping.", "A man sleeps.")
    0.142857...
    """
    a = tokenize(_text(premise, "premise", "misspelled_words"))
    b = tokenize(_text(hypothesis, "hypothesis", "misspelled_words"))
    return _misspelled_share(a + b, _spellchecker("en"))


def _text(value: Any, name: str, func: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"The '{name}' parameter of {func} must be a str. Got {value!r} instead.")
    return value


def _antonym_share(a: Sequence[str], b: Sequence[str], wn: WordNet) -> float:
    if not b:
        return 0.0
    targets: set[str] = set()
    for token in set(a):
        targets.update(wn.antonyms(token))
    if not targets:
        return 0.0
    hits = sum(1 for token in b if any(f in targets for f in (wn.base_forms(token) or (token,))))
    return hits / len(b)


@lru_cache(maxsize=2)
def _spellchecker(language: str) -> Any:
    try:
        from spellchecker import SpellChecker
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "The misspelled-words measure needs pyspellchecker: pip install pyspellchecker "
            "(or pip install 'aflite-studio[text]')."
        ) from None
    return SpellChecker(language=language)


#: pieces of contractions in pre-tokenised text ("does n't", "we 'll", "they 've"), never misspelled
_CONTRACTION_PIECES = frozenset({"n't", "ll", "ve"})


def _misspelled_share(tokens: Sequence[str], checker: Any) -> float:
    if not tokens:
        return 0.0
    words = checker.word_frequency.dictionary
    bad = sum(1 for t in tokens if t not in words and t not in _CONTRACTION_PIECES and not any(c.isdigit() for c in t))
    return bad / len(tokens)


def _as_text_list(values: Any, name: str, func: str, n: int | None = None) -> list[str]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"The '{name}' parameter of {func} must be a sequence of str. Got a single string instead.")
    if isinstance(values, pd.DataFrame):
        raise TypeError(f"The '{name}' parameter of {func} must be a sequence of str. Got a DataFrame instead.")
    try:
        items = list(values)
    except TypeError:
        raise TypeError(
            f"The '{name}' parameter of {func} must be a sequence of str. Got {values!r} instead."
        ) from None
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(
                f"The '{name}' parameter of {func} must be a sequence of str. Got {item!r} (row {i}) instead."
            )
    if n is not None and len(items) != n:
        raise ValueError(
            f"The '{name}' parameter of {func} must have one text per premise ({n}). Got {len(items)} instead."
        )
    return items


def spurious_measures(
    premises: Sequence[str],
    hypotheses: Sequence[str],
    *,
    negation_words: Collection[str] | None = None,
    wordnet_dir: str | os.PathLike | None = None,
    language: str = "en",
) -> pd.DataFrame:
    """Compute the five spurious-correlation measures for every text pair.

    Parameters
    ----------
    premises, hypotheses : sequence of str
        The two texts of each pair (any two text columns: the first plays the premise).
    negation_words : collection of str, optional
        Words that mark a negation (default :data:`NEGATION_WORDS`; tokens ending in ``n't`` always count).
    wordnet_dir : str or path-like, optional
        WordNet database directory (default: ``AFLITE_WORDNET_DIR``, else ``/usr/share/wordnet``).
    language : str, default="en"
        Dictionary of ``pyspellchecker`` used for misspellings.

    Returns
    -------
    pandas.DataFrame
        One row per pair (index as in ``premises`` when it is a Series, else 0..n-1) and the columns of
        :data:`SPURIOUS_MEASURES`; ``contains_negation`` is bool, the others float (see the module notes).

    Raises
    ------
    ValueError
        When the lengths differ or WordNet is missing (the message says ``apt-get install wordnet-base``).

    Examples
    --------
    >>> spurious_measures(["The man is happy."], ["The man is not unhappy."]).round(3)
       word_overlap  antonyms  length_mismatch  misspelled_words  contains_negation
    0           0.6       0.2             -0.2               0.0               True
    """
    func = "spurious_measures"
    a_texts = _as_text_list(premises, "premises", func)
    b_texts = _as_text_list(hypotheses, "hypotheses", func, n=len(a_texts))
    if negation_words is None:
        neg = NEGATION_WORDS
    else:
        if isinstance(negation_words, str) or not all(isinstance(w, str) for w in negation_words):
            raise TypeError(
                f"The 'negation_words' parameter of {func} must be a collection of str. Got {negation_words!r} instead."
            )
        neg = frozenset(w.lower() for w in negation_words)
    if not isinstance(language, str):
        raise TypeError(f"The 'language' parameter of {func} must be a str. Got {language!r} instead.")
    wn = load_wordnet(wordnet_dir)
    checker = _spellchecker(language)
    n = len(a_texts)
    out = {name: np.zeros(n, dtype=np.float64) for name in SPURIOUS_MEASURES[:4]}
    negation = np.zeros(n, dtype=bool)
    for i, (pa, pb) in enumerate(zip(a_texts, b_texts)):
        a, b = tokenize(pa), tokenize(pb)
        if b:
            out["word_overlap"][i] = len(set(a) & set(b)) / len(b)
            out["length_mismatch"][i] = (len(a) - len(b)) / len(b)
            out["antonyms"][i] = _antonym_share(a, b, wn)
        out["misspelled_words"][i] = _misspelled_share(a + b, checker)
        negation[i] = any(_is_negation(t, neg) for t in itertools.chain(a, b))
    index = premises.index if isinstance(premises, pd.Series) else pd.RangeIndex(n)
    frame = pd.DataFrame(out, index=index)
    frame["contains_negation"] = negation
    return frame[list(SPURIOUS_MEASURES)]


def significance_stars(p: float) -> str:
    """The paper's significance marks: ``***`` p ≤ .001, ``**`` p ≤ .01, ``*`` p ≤ .05, else ``ns``.

    A missing p-value (NaN, no test possible) gives ``""``.

    Examples
    --------
    >>> [significance_stars(p) for p in (0.0005, 0.001, 0.03, 0.05, 0.2)]
    ['***', '***', '*', '*', 'ns']
    """
    if p is None or not np.isfinite(p):
        return ""
    if p <= 0.001:
        return "***"
    if p <= 0.01:
        return "**"
    if p <= 0.05:
        return "*"
    return "ns"


_FAMILIES = ("table", "level", "measure")


def compare_classes(
    measures: pd.DataFrame,
    labels: Any,
    levels: Any = None,
    *,
    columns: Sequence[str] | None = None,
    family: str = "table",
) -> pd.DataFrame:
    """Two-sided Mann-Whitney U tests between every pair of classes, per level and measure, Bonferroni-corrected.

    Parameters
    ----------
    measures : pandas.DataFrame
        One row per example, e.g. from :func:`spurious_measures` (bool columns are tested as 0/1).
    labels : array-like
        The class of every row.
    levels : array-like or DifficultyLevels, optional
        The difficulty level of every row (``"easy"``, ``"ambiguous"``, ``"hard"`` or any names); a
        :class:`~aflite_core.dynamics.DifficultyLevels` is accepted as is. ``None`` tests all rows as one
        level named ``"all"``.
    columns : sequence of str, optional
        Measures to test (default: every numeric or bool column).
    family : {"table", "level", "measure"}, default="table"
        Over which tests the Bonferroni correction is taken: every test of the returned table (the default),
        the tests of each level, or the tests of each (level, measure).

    Returns
    -------
    pandas.DataFrame
        One row per test with columns ``level, measure, class_a, class_b, n_a, n_b, mean_a, mean_b, U, p,
        p_bonferroni, stars``; ``U`` is scipy's statistic for ``class_a``; ``p_bonferroni = min(1, p · m)``
        with ``m`` the number of tests in the family; ``stars`` by :func:`significance_stars` of
        ``p_bonferroni``. A pair where a class has no rows in a level is kept with NaN statistics (and not
        counted in ``m``).

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame({"x": [0.1, 0.2, 0.3, 0.9, 1.0, 1.1]})
    >>> compare_classes(m, ["a", "a", "a", "b", "b", "b"])[["measure", "class_a", "class_b", "U", "p"]]
      measure class_a class_b    U    p
    0       x       a       b  0.0  0.1
    """
    from scipy.stats import mannwhitneyu

    func = "compare_classes"
    if not isinstance(measures, pd.DataFrame):
        raise TypeError(
            f"The 'measures' parameter of {func} must be a pandas DataFrame. Got {type(measures).__name__} instead."
        )
    n = len(measures)
    label_arr = _one_per_row(labels, "labels", func, n)
    if levels is None:
        level_arr = np.full(n, "all", dtype=object)
    else:
        level_values = getattr(levels, "levels", levels)  # DifficultyLevels → its Series
        level_arr = _one_per_row(level_values, "levels", func, n)
    if columns is None:
        columns = [
            c
            for c in measures.columns
            if pd.api.types.is_bool_dtype(measures[c]) or pd.api.types.is_numeric_dtype(measures[c])
        ]
        if not columns:
            raise ValueError(f"The 'measures' parameter of {func} must have a numeric column. Got none instead.")
    else:
        if isinstance(columns, str):
            columns = [columns]
        unknown = [c for c in columns if c not in measures.columns]
        if unknown:
            raise ValueError(
                f"The 'columns' parameter of {func} must name columns of measures "
                f"{list(measures.columns)}. Got {unknown!r} instead."
            )
    if family not in _FAMILIES:
        raise ValueError(f"The 'family' parameter of {func} must be one of {list(_FAMILIES)}. Got {family!r} instead.")
    classes = _ordered_unique(label_arr)
    if len(classes) < 2:
        raise ValueError(f"The 'labels' parameter of {func} must contain at least 2 classes. Got {classes!r} instead.")
    level_names = _ordered_unique(level_arr, preferred=LEVEL_ORDER)
    rows = []
    for level in level_names:
        in_level = level_arr == level
        for col in columns:
            values = measures[col].to_numpy(dtype=np.float64, na_value=np.nan)
            for class_a, class_b in itertools.combinations(classes, 2):
                a = values[in_level & (label_arr == class_a)]
                b = values[in_level & (label_arr == class_b)]
                a, b = a[np.isfinite(a)], b[np.isfinite(b)]
                if len(a) and len(b):
                    res = mannwhitneyu(a, b, alternative="two-sided")
                    u, p = float(res.statistic), float(res.pvalue)
                else:
                    u = p = np.nan
                rows.append(
                    {
                        "level": level,
                        "measure": col,
                        "class_a": class_a,
                        "class_b": class_b,
                        "n_a": len(a),
                        "n_b": len(b),
                        "mean_a": float(a.mean()) if len(a) else np.nan,
                        "mean_b": float(b.mean()) if len(b) else np.nan,
                        "U": u,
                        "p": p,
                    }
                )
    table = pd.DataFrame(
        rows, columns=["level", "measure", "class_a", "class_b", "n_a", "n_b", "mean_a", "mean_b", "U", "p"]
    )
    keys = {"table": [], "level": ["level"], "measure": ["level", "measure"]}[family]
    tested = table["p"].notna()
    if keys:
        m = tested.groupby([table[k] for k in keys]).transform("sum")
    else:
        m = pd.Series(int(tested.sum()), index=table.index)
    table["p_bonferroni"] = np.minimum(1.0, table["p"] * m)
    table["stars"] = [significance_stars(p) for p in table["p_bonferroni"]]
    return table


def paper_table(tests: pd.DataFrame) -> pd.DataFrame:
    """The wide view of :func:`compare_classes`: per level and measure, each class's mean and each pair's stars.

    Parameters
    ----------
    tests : pandas.DataFrame
        The output of :func:`compare_classes`.

    Returns
    -------
    pandas.DataFrame
        Index ``(level, measure)``; one column per class with its mean, then one column ``"a vs b"`` per pair
        of classes with the significance stars of the corrected p-value.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame({"x": [0.1, 0.2, 0.3, 0.9, 1.0, 1.1]})
    >>> paper_table(compare_classes(m, ["a", "a", "a", "b", "b", "b"]))
                   a    b a vs b
    level measure
    all   x      0.2  1.0     ns
    """
    needed = {"level", "measure", "class_a", "class_b", "mean_a", "mean_b", "stars"}
    if not isinstance(tests, pd.DataFrame) or not needed <= set(tests.columns):
        lacking = sorted(needed - set(getattr(tests, "columns", [])))
        raise ValueError(
            "The 'tests' parameter of paper_table must be the DataFrame returned by compare_classes. "
            f"Got {type(tests).__name__} without columns {lacking} instead."
        )
    classes = _ordered_unique(np.concatenate([tests["class_a"].to_numpy(object), tests["class_b"].to_numpy(object)]))
    means = pd.concat(
        [
            tests[["level", "measure", "class_a", "mean_a"]].set_axis(["level", "measure", "class", "mean"], axis=1),
            tests[["level", "measure", "class_b", "mean_b"]].set_axis(["level", "measure", "class", "mean"], axis=1),
        ]
    ).drop_duplicates(["level", "measure", "class"])
    wide = means.pivot(index=["level", "measure"], columns="class", values="mean")
    wide = wide[[c for c in classes if c in wide.columns]]
    wide.columns = [str(c) for c in wide.columns]
    pair = tests.assign(pair=tests["class_a"].astype(str) + " vs " + tests["class_b"].astype(str))
    stars = pair.pivot(index=["level", "measure"], columns="pair", values="stars")
    pair_order = list(dict.fromkeys(pair["pair"]))
    wide = wide.join(stars[pair_order])
    level_order = _ordered_unique(tests["level"].to_numpy(object), preferred=LEVEL_ORDER)
    measure_order = list(dict.fromkeys(tests["measure"]))
    wide = wide.reindex(pd.MultiIndex.from_product([level_order, measure_order], names=["level", "measure"]))
    wide.columns.name = None
    return wide.dropna(how="all")


def _one_per_row(values: Any, name: str, func: str, n: int) -> np.ndarray:
    if isinstance(values, pd.Series):
        values = values.to_numpy()
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(
            f"The '{name}' parameter of {func} must have one value per row of measures ({n}). "
            f"Got shape {arr.shape} instead."
        )
    missing = pd.isna(arr)
    if missing.any():
        raise ValueError(
            f"The '{name}' parameter of {func} must not contain missing values. "
            f"Row {int(np.flatnonzero(missing)[0])} has none."
        )
    return np.array([v.item() if isinstance(v, np.generic) else v for v in arr], dtype=object)


def _ordered_unique(values: np.ndarray, preferred: Sequence[str] = ()) -> list:
    seen = list(dict.fromkeys(values.tolist()))
    first = [p for p in preferred if p in seen]
    rest = [v for v in seen if v not in first]
    try:
        rest = sorted(rest)
    except TypeError:
        pass
    return first + rest
