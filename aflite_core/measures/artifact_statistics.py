"""Which single tokens give the label away: the competency-problems test (Gardner et al., 2021).

For a task with |Y| labels, no single token should carry information about the label on its own ("a
competency problem"). Gardner et al. test every token x against that null: with n texts containing x, of which
``k`` have label y, ``p̂(y|x) = k / n`` should be close to ``p0 = 1 / |Y|``. The one-sided z-statistic

    z = (p̂(y|x) − p0) / sqrt(p0 (1 − p0) / n)

measures how far above the null a token pushes a label; with a Bonferroni correction over every test made
(tokens × labels), a pair is significant when ``z`` exceeds ``z* = Φ⁻¹(1 − α / n_tests)``, i.e. when
``p̂(y|x) > p0 + z* sqrt(p0 (1 − p0) / n)`` (:func:`significance_curve`, the curve of their Figure 1).

* :func:`artifact_statistics` - one row per (token, label) with n, p̂, z, the p-value, significance and the PMI
  of the Max-PPMI baseline of Le Bras et al. (2020);
* :func:`artifact_shares` - after an AFLite run: how often each (significant) token occurs among the kept and
  the removed rows, and its p̂ and z in the kept rows alone ("did filtering remove the artifact?");
* :func:`significance_curve` - the p̂ a token seen in n texts needs to be significant;
* :func:`tokenize` - the default tokenizer (lower case, punctuation removed, split on white space).

References
----------
M. Gardner, W. Merrill, J. Dodge, M. E. Peters, A. Ross, S. Singh and N. A. Smith. Competency Problems: On
Finding and Removing Artifacts in Language Data. EMNLP 2021.

R. Le Bras, S. Swayamdipta, C. Bhagavatula, R. Zellers, M. E. Peters, A. Sabharwal and Y. Choi. Adversarial
Filters of Dataset Biases. ICML 2020 (Table 3, the Max-PPMI baseline).

S. Gururangan, S. Swayamdipta, O. Levy, R. Schwartz, S. R. Bowman and N. A. Smith. Annotation Artifacts in
Natural Language Inference Data. NAACL 2018 (PMI between words and labels).
"""

from __future__ import annotations

import functools
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validation as v
from ..engine.result import AFLiteResult
from ._args import _kept_mask
from .removed_artifacts import _check_texts

__all__ = ["SHARE_COLUMNS", "STAT_COLUMNS", "artifact_shares", "artifact_statistics", "significance_curve", "tokenize"]


#: columns of :func:`artifact_statistics`, in order
STAT_COLUMNS = ("token", "label", "count", "label_count", "p_hat", "z", "p_value", "significant", "pmi")

_STAT_DTYPES = {"token": object, "label": object, "count": np.int64, "label_count": np.int64, "significant": bool}

#: columns of :func:`artifact_shares`, in order
SHARE_COLUMNS = (
    "token",
    "label",
    "count",
    "count_kept",
    "count_removed",
    "share_kept",
    "share_removed",
    "removed_fraction",
    "p_hat",
    "p_hat_kept",
    "z",
    "z_kept",
)


@functools.cache
def _punctuation() -> dict[int, None]:
    """Every Unicode punctuation character (categories Pc, Pd, Pe, Pf, Pi, Po, Ps), for str.translate."""
    return dict.fromkeys(i for i in range(sys.maxunicode + 1) if unicodedata.category(chr(i)).startswith("P"))


def tokenize(text: str) -> list[str]:
    """The default tokenizer: lower case, punctuation removed, split on white space.

    Punctuation is every Unicode character of a punctuation category (``P*``: ``. , ! ? ' " - ( ) …``); it is
    deleted, not replaced by a space, so ``"isn't"`` becomes ``"isnt"`` and ``"t-shirt"`` ``"tshirt"``.
    Digits and symbols such as ``$`` stay.

    Parameters
    ----------
    text : str
        One text.

    Returns
    -------
    list of str
        The tokens in order (repeats kept).

    Examples
    --------
    >>> tokenize("Nobody isn't sleeping, the T-shirt is $5.")
    ['nobody', 'isnt', 'sleeping', 'the', 'tshirt', 'is', '$5']
    """
    return text.lower().translate(_punctuation()).split()


def _labels(labels: Any, func: str) -> v.EncodedLabels:
    """Labels as codes (classes sorted when comparable); one class is allowed."""
    arr = v._as_label_array(labels, "labels", func)
    try:
        return v.check_labels(arr, "labels", func, n_rows=len(arr), min_per_class=1)
    except ValueError as exc:
        if "at least 2 classes" not in str(exc) or len(arr) == 0:
            raise
    value = arr[0].item() if isinstance(arr[0], np.generic) else arr[0]
    return v.EncodedLabels(codes=np.zeros(len(arr), dtype=np.int32), classes=(value,))


def _check_tokenizer(tokenizer: Any, func: str) -> Callable[[str], Iterable[str]]:
    if tokenizer is None:
        return tokenize
    if not callable(tokenizer):
        raise v.param_error("tokenizer", func, "a callable str -> list of str, or None", tokenizer, TypeError)
    return tokenizer


#: texts tokenised between two calls of a ``progress`` callback
_PROGRESS_TEXTS = 10_000


def _check_progress(progress: Any, func: str) -> Callable[[int, int], Any] | None:
    if progress is not None and not callable(progress):
        raise v.param_error("progress", func, "a callable progress(done, total) or None", progress, TypeError)
    return progress


def _tokens_of(
    docs: Sequence[str],
    tokenizer: Callable[[str], Iterable[str]],
    once: bool,
    func: str,
    progress: Callable[[int, int], Any] | None = None,
) -> tuple[dict[str, int], NDArray[np.int64], NDArray[np.int64]]:
    """Vocabulary, and (row, token id) of every counted occurrence.

    ``progress(done, total)`` is called with 0 texts first, after every :data:`_PROGRESS_TEXTS` texts and after
    the last one (the texts are tokenised in order either way, so the result does not depend on it).
    """
    vocab: dict[str, int] = {}
    rows: list[int] = []
    ids: list[int] = []
    total = len(docs)
    if progress is not None:
        progress(0, total)
    for i, doc in enumerate(docs):
        if progress is not None and i and i % _PROGRESS_TEXTS == 0:
            progress(i, total)
        toks = tokenizer(doc)
        if isinstance(toks, str) or not isinstance(toks, Iterable):
            raise ValueError(
                f"The 'tokenizer' parameter of {func} must return a list of str tokens. Got "
                f"{v.shown(toks)} for row {i} instead."
            )
        toks = list(toks)
        for t in toks:
            if not isinstance(t, str):
                raise ValueError(
                    f"The 'tokenizer' parameter of {func} must return str tokens. Got {v.shown(t)} for row {i} instead."
                )
        if once:
            toks = list(dict.fromkeys(toks))
        for t in toks:
            ids.append(vocab.setdefault(t, len(vocab)))
        rows.extend([i] * len(toks))
    if progress is not None and total:
        progress(total, total)
    return vocab, np.asarray(rows, dtype=np.int64), np.asarray(ids, dtype=np.int64)


def _z(p_hat: NDArray, n: NDArray, p0: float) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (p_hat - p0) / np.sqrt(p0 * (1.0 - p0) / n)


def _check_alpha(alpha: Any, func: str) -> float:
    if not v._is_real(alpha) or not 0.0 < float(alpha) < 1.0:
        raise v.param_error("alpha", func, "a float in (0, 1)", alpha)
    return float(alpha)


def _critical_z(alpha: float, n_tests: int) -> float:
    from scipy.special import ndtri  # scipy.special imports in a fraction of scipy.stats' time

    return float(-ndtri(alpha / max(n_tests, 1)))


def artifact_statistics(
    texts: Sequence[str],
    labels: ArrayLike,
    *,
    min_count: int = 10,
    alpha: float = 0.01,
    tokenizer: Callable[[str], Iterable[str]] | None = None,
    once_per_text: bool = True,
    pmi_smoothing: float = 1.0,
    progress: Callable[[int, int], Any] | None = None,
) -> pd.DataFrame:
    r"""Gardner et al.'s z-statistic of every (token, label) pair, with Bonferroni-corrected significance.

    For a token x in ``n`` texts (``count``), ``k`` of which have label y (``label_count``):
    ``p̂(y|x) = k / n``, ``z = (p̂ − p0) / sqrt(p0 (1 − p0) / n)`` with ``p0 = 1 / |Y|`` (the null of a
    competency problem: the token says nothing about the label; ``|Y|`` is the number of distinct labels, not
    their observed shares), ``p_value`` the one-sided normal tail ``P(Z ≥ z)`` (not corrected), and
    ``significant = z > z*`` with ``z* = Φ⁻¹(1 − α / n_tests)``: a Bonferroni correction over every test
    made, ``n_tests = (tokens with count ≥ min_count) × |Y|``. Only those tokens are tested (and returned);
    a token seen in fewer than ``p0 / (1 − p0) · z*²`` texts cannot reach significance at all
    (:func:`significance_curve`).

    The ``pmi`` column is the word-label pointwise mutual information of the Max-PPMI baseline (Le Bras et
    al., 2020, after Gururangan et al., 2018), over texts: ``pmi = log(p̃(y|x) / p(y))`` with
    ``p̃(y|x) = (k + s) / (n + s|Y|)`` (additive smoothing ``s = pmi_smoothing``, so a pair never seen is
    finite) and ``p(y)`` the share of texts with label y. Its positive part ``max(pmi, 0)`` is the PPMI; the
    Max-PPMI baseline predicts, for a text, the label of its largest PPMI over its tokens (the papers give no
    formula beyond "PMI between words and the label"; this is our reading). Unlike ``z``, PMI does not grow
    with ``n``: a token seen twice in one label has a large PMI but no significance.

    Tokenisation (default :func:`tokenize`): lower case, punctuation deleted, split on white space; each token
    is counted once per text (document frequency) unless ``once_per_text=False``, when every occurrence
    counts (then ``count`` is occurrences and p̂ the share of occurrences in texts of label y).

    Parameters
    ----------
    texts : sequence of str, length n_texts
        The text of every row (for NLI, usually the hypothesis).
    labels : array-like of shape (n_texts,)
        Labels (any hashable values; at least two distinct ones: with one label ``p0 = 1`` and no token can
        give it away, so one label is refused, by this function and by ``aflite artifacts`` alike).
    min_count : int, default=10
        Test only tokens in at least this many texts.
    alpha : float, default=0.01
        Family-wise significance level, in (0, 1).
    tokenizer : callable, optional
        ``tokenizer(text) -> list of str``; default :func:`tokenize`.
    once_per_text : bool, default=True
        Count a token once per text (Gardner et al.'s n is the number of texts containing it).
    pmi_smoothing : float, default=1.0
        Added to every (token, label) count for ``pmi`` (≥ 0; 0 gives ``-inf`` for pairs never seen).
        Gururangan et al. used 100 on the 550k SNLI training pairs.
    progress : callable, optional
        ``progress(done, total)``: texts tokenised of ``total``, called with 0 first, every 10,000 texts and at
        the end (an exception raised in it stops the computation). The result is the same with or without it.

    Returns
    -------
    pandas.DataFrame
        One row per tested (token, label) pair, columns :data:`STAT_COLUMNS` (``count`` = n), sorted by z
        (largest first), then token and label; no rows (same columns and dtypes) when no token is in
        ``min_count`` texts. ``attrs`` holds ``alpha``, ``n_tests``, ``z_critical``, ``p0``, ``n_texts``,
        ``labels`` (in column order), ``label_texts`` (texts per label), ``min_count``, ``once_per_text`` and
        ``n_tokens`` (distinct tokens seen, tested or not), enough to draw :func:`significance_curve`.

    Raises
    ------
    ValueError
        For a text that is not a str, a label count that differs from the text count, a missing label, fewer
        than two distinct labels, or a tokenizer that does not return a list of str.

    Examples
    --------
    >>> texts = ["nobody sleeps"] * 8 + ["a man sleeps"] * 8 + ["a woman eats"] * 8
    >>> labels = ["contradiction"] * 8 + ["entailment"] * 8 + ["neutral"] * 8
    >>> s = artifact_statistics(texts, labels, min_count=8)
    >>> s[s.significant][["token", "label", "count", "p_hat", "z"]]
        token          label  count  p_hat    z
    0    eats        neutral      8    1.0  4.0
    1     man     entailment      8    1.0  4.0
    2  nobody  contradiction      8    1.0  4.0
    3   woman        neutral      8    1.0  4.0
    >>> s.attrs["n_tests"], round(s.attrs["z_critical"], 3)     # 6 tokens in >= 8 texts, 3 labels
    (18, 3.261)
    """
    func = "artifact_statistics"
    enc = _labels(labels, func)
    n_texts = len(enc.codes)
    docs = _check_texts(texts, n_texts, func)
    mc = v.check_int(min_count, "min_count", func, low=1)
    a = _check_alpha(alpha, func)
    tok = _check_tokenizer(tokenizer, func)
    if not isinstance(once_per_text, bool | np.bool_):
        raise v.param_error("once_per_text", func, "a bool", once_per_text, TypeError)
    if not v._is_real(pmi_smoothing) or not float(pmi_smoothing) >= 0 or not np.isfinite(pmi_smoothing):
        raise v.param_error("pmi_smoothing", func, "a float in [0, inf)", pmi_smoothing)
    s = float(pmi_smoothing)
    report = _check_progress(progress, func)
    if len(enc.classes) < 2:
        raise ValueError(
            f"The 'labels' parameter of {func} must hold at least 2 distinct labels (with one, p0 = 1 and no "
            f"token can give the label away). Got only {v.shown(enc.classes[0])} instead."
        )

    K = len(enc.classes)
    p0 = 1.0 / K
    vocab, rows, ids = _tokens_of(docs, tok, bool(once_per_text), func, report)
    V = len(vocab)
    table = np.bincount(ids * K + enc.codes[rows], minlength=V * K).reshape(V, K).astype(np.int64)
    n = table.sum(axis=1)
    tested = np.flatnonzero(n >= mc)
    n_tests = len(tested) * K
    z_crit = _critical_z(a, n_tests)
    label_texts = np.bincount(enc.codes, minlength=K)
    words = np.array(list(vocab), dtype=object)
    attrs = {
        "alpha": a,
        "n_tests": int(n_tests),
        "z_critical": z_crit,
        "p0": p0,
        "n_texts": n_texts,
        "labels": list(enc.classes),
        "label_texts": [int(c) for c in label_texts],
        "min_count": mc,
        "once_per_text": bool(once_per_text),
        "n_tokens": int(V),
    }
    if not len(tested):  # the columns and dtypes of a full result, so stats[stats["significant"]] works too
        out = pd.DataFrame({c: pd.Series(dtype=_STAT_DTYPES.get(c, float)) for c in STAT_COLUMNS})
        out.attrs.update(attrs)
        return out
    from scipy.special import ndtr

    k = table[tested]  # (T, K)
    nn = n[tested][:, None].astype(np.float64)
    p_hat = k / nn
    z = _z(p_hat, nn, p0)
    with np.errstate(divide="ignore"):
        pmi = np.log((k + s) / (nn + s * K)) - np.log(label_texts / n_texts)[None, :]
    label_names = np.empty(K, dtype=object)
    label_names[:] = list(enc.classes)
    out = pd.DataFrame(
        {
            "token": np.repeat(words[tested], K),
            "label": np.tile(label_names, len(tested)),
            "count": np.repeat(n[tested], K).astype(np.int64),
            "label_count": k.ravel().astype(np.int64),
            "p_hat": p_hat.ravel(),
            "z": z.ravel(),
            "p_value": ndtr(-z.ravel()),
            "significant": z.ravel() > z_crit,
            "pmi": pmi.ravel(),
        }
    )
    codes = np.tile(np.arange(K), len(tested))
    order = np.lexsort((codes, out["token"].to_numpy(dtype=str), -out["z"].to_numpy()))
    out = out.iloc[order].reset_index(drop=True)
    out.attrs.update(attrs)
    return out


def significance_curve(counts: ArrayLike, *, n_labels: int, n_tests: int, alpha: float = 0.01) -> NDArray[np.float64]:
    """The p̂(y|x) a token seen in ``n`` texts needs to be significant: ``p0 + z* sqrt(p0 (1 − p0) / n)``.

    ``p0 = 1 / n_labels`` and ``z* = Φ⁻¹(1 − α / n_tests)`` as in :func:`artifact_statistics` (take
    ``n_labels = len(stats.attrs["labels"])`` and ``n_tests = stats.attrs["n_tests"]`` from its result to draw
    the curve of Gardner et al.'s Figure 1 over its points). A (token, label) pair above the curve is
    significant. Values above 1 mean no token seen that often can be significant.

    Parameters
    ----------
    counts : array-like of int or float
        Values of n (> 0), e.g. ``numpy.geomspace(1, stats["count"].max(), 200)``.
    n_labels : int
        Number of labels |Y| (≥ 2).
    n_tests : int
        Number of tests of the Bonferroni correction (≥ 1).
    alpha : float, default=0.01
        Family-wise significance level, in (0, 1).

    Returns
    -------
    ndarray of float64
        The threshold for every value of ``counts`` (same shape); decreasing in n towards ``p0``.

    Examples
    --------
    >>> significance_curve([10, 100, 1000], n_labels=3, n_tests=3000).round(3)   # 10 texts: out of reach
    array([1.005, 0.546, 0.4  ])
    """
    func = "significance_curve"
    K = v.check_int(n_labels, "n_labels", func, low=2)
    m = v.check_int(n_tests, "n_tests", func, low=1)
    a = _check_alpha(alpha, func)
    try:
        n = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError):
        raise v.param_error("counts", func, "an array of positive numbers", counts, TypeError) from None
    if n.size and (not np.isfinite(n).all() or (n <= 0).any()):
        raise v.param_error("counts", func, "an array of positive numbers", counts)
    p0 = 1.0 / K
    return p0 + _critical_z(a, m) * np.sqrt(p0 * (1.0 - p0) / n)


def _pairs(tokens: Any, func: str) -> tuple[list[str], list[Any] | None]:
    """Tokens (and labels, when given) from a statistics frame or a sequence of tokens."""
    if isinstance(tokens, pd.DataFrame):
        if "token" not in tokens.columns:
            raise ValueError(
                f"The 'tokens' parameter of {func} must be a table with a 'token' column (and "
                f"usually 'label'). Got columns {v.shown_list(tokens.columns)} instead."
            )
        frame = tokens
        if "significant" in frame.columns:
            frame = frame[frame["significant"].astype(bool)]
        toks = [str(t) for t in frame["token"].tolist()]
        labs = frame["label"].tolist() if "label" in frame.columns else None
        return toks, labs
    if isinstance(tokens, str) or not isinstance(tokens, Iterable):
        raise v.param_error("tokens", func, "a statistics table or a sequence of str tokens", tokens, TypeError)
    toks = list(tokens)
    for t in toks:
        if not isinstance(t, str):
            raise v.param_error("tokens", func, "a statistics table or a sequence of str tokens", t, TypeError)
    return toks, None


def artifact_shares(
    texts: Sequence[str],
    labels: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    tokens: pd.DataFrame | Sequence[str],
    *,
    tokenizer: Callable[[str], Iterable[str]] | None = None,
    once_per_text: bool = True,
    progress: Callable[[int, int], Any] | None = None,
) -> pd.DataFrame:
    """Did filtering remove the artifact? Each token's share among kept vs removed rows, and its z after.

    For every token (for a statistics table: every *significant* (token, label) row of it):
    ``count_kept`` / ``count_removed`` texts containing it among the kept / removed rows, ``share_kept =
    count_kept / kept rows`` and ``share_removed = count_removed / removed rows`` (a token AFLite went after is
    much more common among removed rows), ``removed_fraction = count_removed / count`` (compare with the
    share of all rows removed), and for the pair's label ``p_hat`` / ``z`` on all rows and ``p_hat_kept`` /
    ``z_kept`` on the kept rows alone (same ``p0 = 1 / |Y|`` over the labels of all rows). The artifact is
    gone when ``z_kept`` falls below the significance threshold (``stats.attrs["z_critical"]``; it is
    compared with the same threshold, not re-corrected for the kept rows' vocabulary) and ``p_hat_kept``
    approaches ``p0``. Tokenise as the statistics were (same ``tokenizer`` and ``once_per_text``).

    Parameters
    ----------
    texts : sequence of str, length n_texts
        The texts the statistics were computed on.
    labels : array-like of shape (n_texts,)
        Their labels.
    kept : AFLiteResult or boolean array of shape (n_texts,)
        Retained rows.
    tokens : DataFrame or sequence of str
        The result of :func:`artifact_statistics` (its rows with ``significant`` true are used; pass a
        filtered table to choose others), any table with ``token`` and ``label`` columns, or plain tokens
        (then ``label``, the p̂ and z columns are missing values).
    tokenizer : callable, optional
        As in :func:`artifact_statistics`.
    once_per_text : bool, default=True
        As in :func:`artifact_statistics`.
    progress : callable, optional
        As in :func:`artifact_statistics`: ``progress(done, total)`` as the texts are tokenised.

    Returns
    -------
    pandas.DataFrame
        One row per token (or token, label) in the order given, columns ``token, label, count, count_kept,
        count_removed, share_kept, share_removed, removed_fraction, p_hat, p_hat_kept, z, z_kept``. A share
        is NaN when there are no kept (or no removed) rows.

    Examples
    --------
    >>> texts = ["nobody sleeps"] * 8 + ["a man sleeps"] * 8 + ["a woman eats"] * 8
    >>> labels = ["contradiction"] * 8 + ["entailment"] * 8 + ["neutral"] * 8
    >>> kept = [False] * 6 + [True] * 18                  # six of the eight "nobody" rows removed
    >>> artifact_shares(texts, labels, kept, ["nobody"])[["count_kept", "count_removed", "removed_fraction"]]
       count_kept  count_removed  removed_fraction
    0           2              6              0.75
    """
    func = "artifact_shares"
    enc = _labels(labels, func)
    n_texts = len(enc.codes)
    docs = _check_texts(texts, n_texts, func)
    mask = _kept_mask(kept, n_texts, func)
    tok = _check_tokenizer(tokenizer, func)
    if not isinstance(once_per_text, bool | np.bool_):
        raise v.param_error("once_per_text", func, "a bool", once_per_text, TypeError)
    report = _check_progress(progress, func)
    toks, labs = _pairs(tokens, func)
    if labs is not None:
        known = set(enc.classes)
        for lab in labs:
            if lab not in known:
                raise ValueError(
                    f"The 'tokens' parameter of {func} names the label {v.shown(lab)}, which is not "
                    f"one of the labels {v.shown_list(enc.classes)}."
                )
    K = len(enc.classes)
    p0 = 1.0 / K
    vocab, rows, ids = _tokens_of(docs, tok, bool(once_per_text), func, report)
    n_kept, n_removed = int(mask.sum()), int((~mask).sum())
    wanted = {t: i for i, t in enumerate(dict.fromkeys(toks))}
    # counts[w, label, kept]
    counts = np.zeros((len(wanted), K, 2), dtype=np.int64)
    lookup = np.full(len(vocab), -1, dtype=np.int64)
    for t, j in wanted.items():
        if t in vocab:
            lookup[vocab[t]] = j
    hit = lookup[ids] >= 0 if len(ids) else np.zeros(0, dtype=bool)
    np.add.at(counts, (lookup[ids[hit]], enc.codes[rows[hit]], mask[rows[hit]].astype(np.int64)), 1)
    out_rows = []
    for i, t in enumerate(toks):
        c = counts[wanted[t]]  # (K, 2): [:, 0] removed, [:, 1] kept
        total, in_kept, in_removed = int(c.sum()), int(c[:, 1].sum()), int(c[:, 0].sum())
        row: dict[str, Any] = {
            "token": t,
            "label": None if labs is None else labs[i],
            "count": total,
            "count_kept": in_kept,
            "count_removed": in_removed,
            "share_kept": in_kept / n_kept if n_kept else np.nan,
            "share_removed": in_removed / n_removed if n_removed else np.nan,
            "removed_fraction": in_removed / total if total else np.nan,
            "p_hat": np.nan,
            "p_hat_kept": np.nan,
            "z": np.nan,
            "z_kept": np.nan,
        }
        if labs is not None:
            y = enc.classes.index(labs[i])
            if total:
                row["p_hat"] = c[y].sum() / total
                row["z"] = float(_z(np.float64(row["p_hat"]), np.float64(total), p0))
            if in_kept:
                row["p_hat_kept"] = c[y, 1] / in_kept
                row["z_kept"] = float(_z(np.float64(row["p_hat_kept"]), np.float64(in_kept), p0))
        out_rows.append(row)
    out = pd.DataFrame(out_rows, columns=list(SHARE_COLUMNS))
    for col in ("count", "count_kept", "count_removed"):
        out[col] = out[col].astype(np.int64)
    return out
