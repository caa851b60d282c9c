"""Which tokens or feature directions a run removed (smoothed log-odds, Monroe et al. 2008)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validation as v
from ..engine.result import AFLiteResult
from ._args import _encode_labels, _kept_mask, _rng

__all__ = ["NEGATION_TOKENS", "TOKEN_PATTERN", "feature_artifacts", "token_artifacts"]


#: negation words of the NLI artifact literature (Gururangan et al., 2018), lower case, whole tokens of
#: :func:`token_artifacts` (contractions such as "isn't" are single tokens there and are not listed). Not the
#: same list as :data:`aflite_core.measures.spurious.NEGATION_WORDS`, which also counts "cannot" and any "n't" token.
NEGATION_TOKENS = ("no", "not", "nobody", "never", "nothing", "none", "nowhere", "neither", "nor")

#: how the tokenizer of :func:`token_artifacts` splits text by default: words with an optional
#: apostrophe part ("isn't", "man's"), numbers; lower-cased first
TOKEN_PATTERN = r"(?u)\b\w+(?:'\w+)?\b"

#: values of X (rows × columns) :func:`feature_artifacts` holds in float64 at once, per block of work
_BLOCK_VALUES = 1 << 21
#: rows × columns of a group :func:`feature_artifacts` copies out of X at most (float32) to rank its columns
_GROUP_VALUES = 1 << 27


# -- artifact discovery --------------------------------------------------------------------------------------
def _check_texts(texts: Any, n: int | None, func: str) -> list[str]:
    if isinstance(texts, pd.Series):
        texts = texts.tolist()
    if isinstance(texts, str) or not isinstance(texts, Sequence | np.ndarray):
        raise v.param_error("texts", func, "a sequence of str", texts, TypeError)
    values = list(texts)
    for i, t in enumerate(values):
        if not isinstance(t, str):
            raise ValueError(f"The 'texts' parameter of {func} must be a sequence of str. Row {i} is {t!r}.")
    if n is not None and len(values) != n:
        raise ValueError(f"The 'texts' parameter of {func} must have one text per label ({n}). Got {len(values)}.")
    return values


def token_artifacts(
    texts: Sequence[str],
    y: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    min_count: int = 5,
    top_k: int = 15,
    alpha: float = 0.5,
    token_pattern: str = TOKEN_PATTERN,
) -> pd.DataFrame:
    """Tokens whose share among removed rows differs most from their share among retained rows, per label.

    Within each label, for every token w: ``a`` removed rows and ``b`` retained rows contain it, out of
    ``n_rem`` and ``n_ret``. The smoothed log-odds ratio is
    ``log((a+α)/(n_rem−a+α)) − log((b+α)/(n_ret−b+α))`` with variance
    ``1/(a+α) + 1/(n_rem−a+α) + 1/(b+α) + 1/(n_ret−b+α)``; tokens are ranked by ``z`` = log-odds / sd
    (positive: over-represented among removed rows, the artifacts a model exploited, e.g. "nobody" among
    removed contradictions of NLI data). Tokens are counted once per row (document frequency), after
    lower-casing, with a simple regular expression.

    Parameters
    ----------
    texts : sequence of str, length n_samples
        The text of every row (for NLI, the hypothesis).
    y : array-like of shape (n_samples,)
        Labels.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    min_count : int, default=5
        Only tokens in at least this many rows of the label (removed and retained together).
    top_k : int, default=15
        Tokens per label and direction.
    alpha : float, default=0.5
        Smoothing added to every cell (> 0).
    token_pattern : str
        Regular expression of a token (default: words with an optional apostrophe part, e.g. "isn't").

    Returns
    -------
    pandas.DataFrame
        Per label, the ``top_k`` tokens most over-represented among removed rows (``direction="removed"``)
        and among retained rows (``direction="retained"``): ``label, direction, rank, token, n_removed,
        n_retained`` (rows containing it), ``share_removed, share_retained, log_odds, z``.

    Examples
    --------
    >>> texts = ["nobody sleeps"] * 6 + ["a man sleeps"] * 6
    >>> kept = [False] * 6 + [True] * 6
    >>> t = token_artifacts(texts, ["c"] * 12, kept, min_count=3, top_k=1)
    >>> t[["direction", "token"]].values.tolist()
    [['removed', 'nobody'], ['retained', 'a']]
    """
    func = "token_artifacts"
    labels = _encode_labels(y, func)
    n = len(labels.codes)
    docs = _check_texts(texts, n, func)
    mask = _kept_mask(kept, n, func)
    mc = v.check_int(min_count, "min_count", func, low=1)
    k = v.check_int(top_k, "top_k", func, low=1)
    if not v._is_real(alpha) or not float(alpha) > 0:
        raise v.param_error("alpha", func, "a float in (0, inf)", alpha)
    from sklearn.feature_extraction.text import CountVectorizer

    vec = CountVectorizer(lowercase=True, token_pattern=token_pattern, binary=True)
    try:
        M = vec.fit_transform(docs).tocsc()
    except ValueError:  # empty vocabulary
        M = None
    cols = [
        "label",
        "direction",
        "rank",
        "token",
        "n_removed",
        "n_retained",
        "share_removed",
        "share_retained",
        "log_odds",
        "z",
    ]
    if M is None:
        return pd.DataFrame(columns=cols)
    vocab = vec.get_feature_names_out()
    C = labels.n_classes
    group = labels.codes * 2 + mask.astype(np.int64)  # 2c = removed, 2c+1 = retained
    import scipy.sparse as sp

    G = sp.csr_matrix((np.ones(n), (group, np.arange(n))), shape=(2 * C, n))
    counts = np.asarray((G @ M).todense(), dtype=np.float64)  # (2C, V): rows containing each token
    sizes = np.bincount(group, minlength=2 * C).astype(np.float64)
    a_ = float(alpha)
    frames = []
    for c in range(C):
        a, b = counts[2 * c], counts[2 * c + 1]
        n_rem, n_ret = sizes[2 * c], sizes[2 * c + 1]
        if n_rem == 0 or n_ret == 0:
            continue
        ok = (a + b) >= mc
        if not ok.any():
            continue
        lo = np.log((a + a_) / (n_rem - a + a_)) - np.log((b + a_) / (n_ret - b + a_))
        var = 1 / (a + a_) + 1 / (n_rem - a + a_) + 1 / (b + a_) + 1 / (n_ret - b + a_)
        z = lo / np.sqrt(var)
        idx = np.flatnonzero(ok)
        for direction, sign in (("removed", -1.0), ("retained", 1.0)):
            order = idx[np.lexsort((vocab[idx], sign * z[idx]))][:k]
            order = order[(z[order] > 0) if direction == "removed" else (z[order] < 0)]
            frames.append(
                pd.DataFrame(
                    {
                        "label": [labels.classes[c]] * len(order),
                        "direction": direction,
                        "rank": np.arange(1, len(order) + 1),
                        "token": vocab[order],
                        "n_removed": a[order].astype(int),
                        "n_retained": b[order].astype(int),
                        "share_removed": a[order] / n_rem,
                        "share_retained": b[order] / n_ret,
                        "log_odds": lo[order],
                        "z": z[order],
                    }
                )
            )
    if not frames:
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)[cols]


def _first_rank_sums(B: np.ndarray, n1: int) -> np.ndarray:
    """Per row of ``B`` (c, n): the sum of the ranks (1-based, ties averaged) of its first ``n1`` values.

    As ``scipy.stats.rankdata(B, axis=1)[:, :n1].sum(axis=1)``, from one sort per row of a contiguous copy.
    """
    B = np.ascontiguousarray(B)
    c, n = B.shape
    order = np.argsort(B, axis=1)  # ties are averaged below, so their order does not matter
    ordered = np.take_along_axis(B, order, axis=1)
    new = np.ones((c, n), dtype=bool)
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=new[:, 1:])  # a run of equal values starts here
    first = order < n1
    if new.all():  # no ties: the rank is the position
        return np.where(first, np.arange(1, n + 1, dtype=np.float64), 0.0).sum(axis=1)
    starts = np.flatnonzero(new.ravel())  # every row starts a run (new[:, 0] is True)
    ends = np.r_[starts[1:], c * n] - 1
    average = (starts + ends) / 2 - (starts // n) * n + 1  # the run's mean position in its row, 1-based
    ranks = average[np.cumsum(new.ravel()) - 1].reshape(c, n)
    return np.where(first, ranks, 0.0).sum(axis=1)


def feature_artifacts(
    X: ArrayLike,
    kept: AFLiteResult | ArrayLike,
    *,
    y: ArrayLike | None = None,
    top_k: int = 10,
    max_rows: int | None = None,
    random_state: int | np.random.Generator | None = 0,
    progress: Callable[[int, int], Any] | None = None,
) -> pd.DataFrame:
    """The feature dimensions that best separate removed from retained rows (dense features).

    Per dimension: the standardised mean difference ``smd = (mean_removed − mean_retained) / pooled sd``
    and the AUC = P(a removed row's value > a retained row's value) (ties count half; 0.5 = no separation),
    from ranks. Dimensions are ranked by ``|AUC − 0.5|``. With ``y`` the comparison is made within each
    label (removed vs retained rows of the same class), so a dimension that only tells classes apart does not
    show up merely because AFLite removed more of one class.

    Each group is copied out of ``X`` once (float32; a memory-mapped ``X`` is never copied whole) and worked
    on in blocks of columns. With ``max_rows`` every statistic is computed on a random sample of at most
    ``max_rows`` removed and at most ``max_rows`` retained rows of each group: the AUC and the smd do not
    depend on the two sides' sizes, so each side is sampled on its own (the AUC's standard error is then at
    most about ``sqrt((1/n1 + 1/n0) / 12)``: 0.004 for 10,000 rows a side).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    kept : AFLiteResult or boolean array of shape (n_samples,)
        Retained rows.
    y : array-like of shape (n_samples,), optional
        Labels; compare within each label.
    top_k : int, default=10
        Dimensions per group.
    max_rows : int, optional
        Rows per group and side the statistics are computed on at most (a seeded sample); None: every row.
    random_state : int, Generator or None, default=0
        Seed of that sample.
    progress : callable, optional
        ``progress(done, total)`` after every block of work (an exception raised in it stops the computation).

    Returns
    -------
    pandas.DataFrame
        ``label`` ("all" without y), ``rank, dimension, mean_removed, mean_retained, smd, auc``; groups with
        no removed or no retained row are left out. ``attrs["rows"]`` maps each label to its ``(removed,
        retained)`` row counts and ``attrs["rows_used"]`` to the counts the statistics were computed on.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); kept = np.ones(200, bool); kept[:50] = False; X[:50, 3] += 2
    >>> feature_artifacts(X, kept, top_k=1)["dimension"].tolist()
    [3]
    >>> feature_artifacts(X, kept, top_k=1, max_rows=40).attrs["rows_used"]
    {'all': (40, 40)}
    """
    func = "feature_artifacts"
    Xv = v.check_features(X, "X", func)
    n, d = Xv.shape
    mask = _kept_mask(kept, n, func)
    k = v.check_int(top_k, "top_k", func, low=1)
    cap = None if max_rows is None else v.check_int(max_rows, "max_rows", func, low=1)
    rng = _rng(random_state, func)
    if y is None:
        names: list = ["all"]
        codes = np.zeros(n, dtype=np.intp)
    else:
        labels = _encode_labels(y, func, n)
        names, codes = list(labels.classes), labels.codes.astype(np.intp)
    side = codes * 2 + mask  # 2g: removed rows of group g, 2g + 1: its retained rows
    sizes = np.bincount(side, minlength=2 * len(names))
    groups = [g for g in range(len(names)) if sizes[2 * g] and sizes[2 * g + 1]]
    drawn = {g: sum(min(int(sizes[s]), cap or int(sizes[s])) for s in (2 * g, 2 * g + 1)) for g in groups}
    col_blocks = {g: max(1, min(d, _BLOCK_VALUES // drawn[g])) for g in groups}
    total, done = sum(-(-d // col_blocks[g]) for g in groups), 0
    frames, used = [], {}
    for g in groups:
        rem_rows = np.flatnonzero(side == 2 * g)
        ret_rows = np.flatnonzero(side == 2 * g + 1)
        if cap is not None:
            if len(rem_rows) > cap:
                rem_rows = np.sort(rng.choice(rem_rows, cap, replace=False))
            if len(ret_rows) > cap:
                ret_rows = np.sort(rng.choice(ret_rows, cap, replace=False))
        n1, n0 = len(rem_rows), len(ret_rows)
        used[names[g]] = (n1, n0)
        rows = np.concatenate([rem_rows, ret_rows])
        # the group's rows once (float32), unless they are too many: then each block of columns on its own
        source, at = (Xv[rows], slice(None)) if len(rows) * d <= _GROUP_VALUES else (Xv, rows)
        m1, m0, smd, auc = (np.empty(d) for _ in range(4))
        step = col_blocks[g]
        for j in range(0, d, step):
            cols = slice(j, j + step)
            A = source[at, cols].astype(np.float64)
            rem, ret = A[:n1], A[n1:]
            m1[cols], m0[cols] = rem.mean(axis=0), ret.mean(axis=0)
            v1 = rem.var(axis=0, ddof=1) if n1 > 1 else np.zeros(A.shape[1])
            v0 = ret.var(axis=0, ddof=1) if n0 > 1 else np.zeros(A.shape[1])
            pooled = np.sqrt(((n1 - 1) * v1 + (n0 - 1) * v0) / max(n1 + n0 - 2, 1))
            with np.errstate(invalid="ignore", divide="ignore"):
                smd[cols] = np.where(pooled > 0, (m1[cols] - m0[cols]) / pooled, 0.0)
            auc[cols] = (_first_rank_sums(source[at, cols].T, n1) - n1 * (n1 + 1) / 2) / (n1 * n0)
            done += 1
            if progress is not None:
                progress(done, total)
        order = np.lexsort((np.arange(d), -np.abs(auc - 0.5)))[:k]
        frames.append(
            pd.DataFrame(
                {
                    "label": [names[g]] * len(order),
                    "rank": np.arange(1, len(order) + 1),
                    "dimension": order,
                    "mean_removed": m1[order],
                    "mean_retained": m0[order],
                    "smd": smd[order],
                    "auc": auc[order],
                }
            )
        )
    cols = ["label", "rank", "dimension", "mean_removed", "mean_retained", "smd", "auc"]
    frame = pd.DataFrame(columns=cols) if not frames else pd.concat(frames, ignore_index=True)[cols]
    frame.attrs["rows"] = {names[g]: (int(sizes[2 * g]), int(sizes[2 * g + 1])) for g in groups}
    frame.attrs["rows_used"] = used
    return frame
