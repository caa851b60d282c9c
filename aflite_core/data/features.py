"""Feature representations Φ(X) of text tables: TF-IDF + SVD and partial-input views (embeddings: see below).

AFLite filters with a *pre-computed* representation Φ(X), one row per example (Le Bras et al., ICML 2020,
§2). This module computes such representations from the text columns of a table:

* :func:`tfidf_features` - TF-IDF of each chosen column (a separate vocabulary per column, so "not" in a
  hypothesis and "not" in a premise are different features), then a seeded truncated SVD to a dense float32
  matrix. Choosing fewer columns gives a **partial-input** view, e.g. the hypothesis alone of an NLI pair
  (the paper's -HypOnly baseline, §4);
* :func:`text_representations` - the standard named views of a table (``"tfidf"``, and for a premise /
  hypothesis pair also ``"tfidf_hypothesis"``), each with a short description;
* sentence-transformer embeddings (:func:`~aflite_core.data.embeddings.embed_texts`,
  :func:`~aflite_core.data.embeddings.embedding_features`) live in :mod:`aflite_core.data.embeddings`, with the model's
  loading and the disk cache.

Everything returns C-ordered float32 arrays aligned with the rows given.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _validation as v

__all__ = [
    "text_representations",
    "tfidf_features",
]


def _texts_of(data: Any, columns: Sequence[str] | None, func: str) -> tuple[list[list[str]], list[str]]:
    """The text of each chosen column (missing cells become ""), and the column names."""
    if isinstance(data, pd.DataFrame):
        if columns is None or isinstance(columns, str):
            if isinstance(columns, str):
                columns = [columns]
            else:
                raise ValueError(
                    f"The 'columns' parameter of {func} must name the text columns to use. Got None instead; "
                    f"the columns are {list(data.columns)}."
                )
        columns = list(columns)
        if not columns:
            raise ValueError(f"The 'columns' parameter of {func} must name at least one text column. Got [] instead.")
        for col in columns:
            if col not in data.columns:
                raise ValueError(
                    f"The 'columns' parameter of {func} must name columns of the table. Got {col!r}, which is not "
                    f"one of {list(data.columns)}, instead."
                )
        if len(data) == 0:
            raise ValueError(f"The 'data' parameter of {func} must have at least one row. Got 0 rows instead.")
        out = []
        for col in columns:
            series = data[col]
            out.append(["" if _missing(x) else str(x) for x in series.tolist()])
        return out, columns
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence | np.ndarray | pd.Series):
        raise v.param_error("data", func, "a DataFrame with text columns or a sequence of str", data, TypeError)
    if columns is not None:
        raise ValueError(
            f"The 'columns' parameter of {func} applies to a DataFrame only. Got {columns!r} with a sequence of texts."
        )
    values = list(data)
    if not values:
        raise ValueError(f"The 'data' parameter of {func} must hold at least one text. Got 0 texts instead.")
    return [["" if _missing(x) else str(x) for x in values]], ["text"]


@contextmanager
def _null() -> Iterator[None]:
    yield


def _missing(x: Any) -> bool:
    if x is None:
        return True
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):  # lists and other containers are not missing
        return False


def tfidf_features(
    data: pd.DataFrame | Sequence[str],
    *,
    columns: Sequence[str] | str | None = None,
    n_components: int = 128,
    ngram_range: tuple[int, int] = (1, 2),
    min_df: int = 1,
    max_features: int | None = 50_000,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> NDArray[np.float32]:
    """TF-IDF of chosen text columns reduced by a seeded truncated SVD to dense float32 features.

    Each column gets its own TF-IDF vocabulary (lower-cased words, one-letter words included, and word pairs;
    sublinear term frequency);
    the columns' matrices are placed side by side, reduced with :class:`~sklearn.decomposition.TruncatedSVD`
    (randomized, seeded) and every row is scaled to unit length (rows with no known word stay zero).
    Choosing a subset of the columns gives a partial-input view, e.g. ``columns=["hypothesis"]``.

    Parameters
    ----------
    data : DataFrame or sequence of str
        A table (then ``columns`` names the text columns) or one text per row. Missing cells count as "".
    columns : str or sequence of str, optional
        Text columns of ``data`` to use (required for a DataFrame).
    n_components : int, default=128
        Dimensions kept. Capped by the data: when the vocabulary has at most ``n_components`` terms the dense
        TF-IDF itself is returned (one column per term); with fewer rows than that, ``n_rows - 1``
        dimensions.
    ngram_range : tuple of int, default=(1, 2)
        Word n-grams counted.
    min_df : int, default=1
        Ignore terms in fewer rows.
    max_features : int or None, default=50000
        Largest vocabulary per column (most frequent terms).
    random_state : int, numpy Generator or None, default=0
        Seed of the randomized SVD.
    n_threads : int or None, default=1
        BLAS threads for the SVD (``None`` leaves the library default). One thread is several times faster than
        two on a busy 2-core machine (about 1.5 s for 7k sentence pairs) and gives the same result everywhere.

    Returns
    -------
    ndarray of float32, shape (n_rows, d)
        ``d = min(n_components, ...)`` as described above; row i is row i of ``data``.

    Raises
    ------
    ValueError
        When a column is missing, or the texts hold no word at all.

    Examples
    --------
    >>> import pandas as pd
    >>> from aflite_core.data.features import tfidf_features
    >>> df = pd.DataFrame({"premise": ["A man sleeps.", "A dog runs.", "Two kids play.", "A cat eats."],
    ...                    "hypothesis": ["Nobody sleeps.", "An animal runs.", "Kids play.", "No cat eats."]})
    >>> tfidf_features(df, columns=["premise", "hypothesis"], n_components=3).shape
    (4, 3)
    >>> tfidf_features(df, columns="hypothesis", n_components=3).dtype   # the hypothesis-only view
    dtype('float32')
    """
    func = "tfidf_features"
    n_comp = v.check_int(n_components, "n_components", func, low=1)
    v.check_int(min_df, "min_df", func, low=1)
    if max_features is not None:
        v.check_int(max_features, "max_features", func, low=1)
    if (
        not isinstance(ngram_range, tuple | list)
        or len(ngram_range) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in ngram_range)
        or not 1 <= ngram_range[0] <= ngram_range[1]
    ):
        raise v.param_error("ngram_range", func, "a pair of ints (low, high) with 1 <= low <= high", ngram_range)
    if n_threads is not None:
        v.check_int(n_threads, "n_threads", func, low=1)
    seed = v.check_random_state(random_state, func)
    texts, names = _texts_of(data, columns, func)

    import scipy.sparse as sp
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    blocks = []
    for col_texts in texts:
        vec = TfidfVectorizer(
            lowercase=True,
            token_pattern=r"(?u)\b\w+\b",
            ngram_range=tuple(ngram_range),
            min_df=min_df,
            max_features=max_features,
            sublinear_tf=True,
            dtype=np.float32,
        )
        try:
            blocks.append(vec.fit_transform(col_texts))
        except ValueError:  # empty vocabulary: this column holds no word
            continue
    if not blocks:
        raise ValueError(
            f"The text column(s) {names} hold no words to build TF-IDF features from "
            f"(with min_df={min_df}); choose other text columns."
        )
    M = sp.hstack(blocks, format="csr", dtype=np.float32)
    n_rows, n_terms = M.shape
    if n_terms <= n_comp or n_rows < 3:
        X = M.toarray()[:, :n_comp]  # nothing to reduce (tiny vocabulary or table)
    else:
        from threadpoolctl import threadpool_limits

        svd = TruncatedSVD(
            n_components=min(n_comp, n_rows - 1), algorithm="randomized", n_iter=5, random_state=seed % 2**32
        )
        with threadpool_limits(limits=n_threads) if n_threads else _null():
            X = svd.fit_transform(M)
    X = normalize(np.asarray(X, dtype=np.float32), norm="l2")
    return np.ascontiguousarray(X, dtype=np.float32)


def text_representations(
    frame: pd.DataFrame,
    text_columns: Sequence[str],
    *,
    pair: tuple[str, str] | None = None,
    n_components: int = 128,
    random_state: int | np.random.Generator | None = 0,
    n_threads: int | None = 1,
) -> dict[str, tuple[NDArray[np.float32], str]]:
    """The standard TF-IDF views of a table's text, by name, each with a short description.

    Parameters
    ----------
    frame : DataFrame
        The table.
    text_columns : sequence of str
        Text columns used together for ``"tfidf"``.
    pair : (str, str), optional
        Premise and hypothesis columns of a sentence pair; adds ``"tfidf_hypothesis"``, the partial-input
        view of the second column alone (the paper's -HypOnly baseline). Both columns are used in ``"tfidf"``
        even when missing from ``text_columns``.
    n_components : int, default=128
        Dimensions per view (see :func:`tfidf_features`).
    random_state : int, numpy Generator or None, default=0
        One seed; each view's SVD gets its own integer seed drawn from it.
    n_threads : int or None, default=1
        BLAS threads (see :func:`tfidf_features`).

    Returns
    -------
    dict of str to (ndarray of float32, str)
        ``{"tfidf": (X, description), ...}`` in display order.
    """
    func = "text_representations"
    cols = list(text_columns)
    if pair is not None:
        cols += [c for c in pair if c not in cols]
    if not cols:
        raise ValueError(f"The 'text_columns' parameter of {func} must name at least one text column. Got [] instead.")
    seed = v.check_random_state(random_state, func)
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 2**31 - 1, size=2)
    out: dict[str, tuple[NDArray[np.float32], str]] = {}
    X = tfidf_features(frame, columns=cols, n_components=n_components, random_state=int(seeds[0]), n_threads=n_threads)
    out["tfidf"] = (X, f"TF-IDF + SVD of {_join(cols)} ({X.shape[1]}-d)")
    if pair is not None:
        H = tfidf_features(
            frame, columns=[pair[1]], n_components=n_components, random_state=int(seeds[1]), n_threads=n_threads
        )
        out["tfidf_hypothesis"] = (H, f"partial input: TF-IDF + SVD of '{pair[1]}' alone ({H.shape[1]}-d)")
    return out


def _join(cols: Sequence[str]) -> str:
    return " + ".join(f"'{c}'" for c in cols)
