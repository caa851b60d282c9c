"""Exact and near-duplicate rows, found before a run, as groups for ``aflite(..., groups=)``.

A row with a copy in the data can look "predictable" to AFLite only because its copy sat in a model's training
part. :func:`find_duplicates` finds

* **exact duplicates** by a hash of each row's feature bytes (every hash collision is then checked byte for
  byte), and - when texts are given - of each row's text: rows with equal features *or* equal text;
* **near duplicates**, pairs with cosine similarity ≥ ``threshold`` (default 0.98), by random-projection
  hashing (SimHash): every row gets a 256-bit signature (signs of 256 random projections of the row); the rows
  are sorted by 16 different 64-bit slices of their signatures, each row is compared with its ``window`` next
  rows in each order by the Hamming distance of the full signatures, and the pairs close enough in Hamming
  distance (≤ 32 of 256 bits: a pair at cosine 0.98 differs in 16 bits on average, sd 4) get their exact cosine.
  Every reported pair truly has cosine ≥ ``threshold`` (no false positives); a pair can be missed. **Recall**
  (measured against brute force in ``tests/test_duplicates.py``): ≥ 0.99 of the pairs at cosine ≥ 0.98 on
  planted near duplicates of anisotropic data, all of them on the SNLI sample's pair embeddings
  (:data:`STATED_RECALL`); a group (connected component) is found when any chain of its pairs is.

The groups are the connected components of the exact and near duplicate pairs (one group per row without a
duplicate). Cost at 550,000 × 384 float32: ``benchmarks/bench_duplicates.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

__all__ = ["STATED_RECALL", "DuplicateReport", "find_duplicates"]

#: the recall of near-duplicate pairs at cosine ≥ 0.98 the defaults are tested to reach (tests/test_duplicates.py)
STATED_RECALL = 0.99
#: signature bits (random projections) per row
SIGNATURE_BITS = 256
#: sorted orders of the rows (each by another 64-bit slice of the signatures)
N_ORDERS = 16
#: a pair is a candidate when its signatures differ in at most this many bits (cosine 0.98: 16 ± 4)
MAX_HAMMING = 32
#: rows projected at once (bounds the float32 projection block: rows × 256 × 4 bytes)
CHUNK_ROWS = 65_536


@dataclass
class DuplicateReport:
    """What :func:`find_duplicates` found.

    Attributes
    ----------
    groups : ndarray of int32, shape (n_rows,)
        Group code of every row: rows connected by exact or near duplicate pairs share one; pass it as
        ``aflite(..., groups=report.groups)``.
    exact : ndarray of bool, shape (n_rows,)
        Rows with an exact duplicate (equal features, or equal text when texts were given).
    near : ndarray of bool, shape (n_rows,)
        Rows with a near duplicate (cosine ≥ threshold with another row that is not an exact copy).
    near_pairs : ndarray of int64, shape (n_pairs, 2)
        The near-duplicate pairs found (i < j), exact copies left out.
    threshold : float
        The cosine threshold.
    seconds : float
        Wall time of the search.
    cpu_seconds : float
        CPU time of this process during the search (all threads).
    """

    groups: NDArray[np.int32]
    exact: NDArray[np.bool_]
    near: NDArray[np.bool_]
    near_pairs: NDArray[np.int64]
    threshold: float
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    stats: dict = field(default_factory=dict)

    @property
    def n_with_duplicate(self) -> int:
        """Rows with an exact or near duplicate."""
        return int((self.exact | self.near).sum())

    @property
    def n_groups(self) -> int:
        """Groups (rows without a duplicate count one each)."""
        return int(self.groups.max()) + 1 if len(self.groups) else 0

    def message(self) -> str:
        """The one-line warning: how many rows have an exact or near duplicate."""
        n = self.n_with_duplicate
        if n == 0:
            return f"No row has an exact or near duplicate (cosine ≥ {self.threshold:g})."
        return (
            f"{n:,} rows have an exact or near duplicate ({int(self.exact.sum()):,} exact, "
            f"{int((self.near & ~self.exact).sum()):,} near at cosine ≥ {self.threshold:g}) in "
            f"{int((np.bincount(self.groups) > 1).sum()):,} groups."
        )


def _row_hashes(X: NDArray) -> NDArray[np.uint64]:
    """A 64-bit hash of each row's bytes (column hashes combined; collisions are checked by the caller)."""
    n, d = X.shape
    raw = np.ascontiguousarray(X)
    width = raw.dtype.itemsize * d
    words = raw.view(np.uint64).reshape(n, -1) if width % 8 == 0 else raw.view(np.uint8).reshape(n, width)
    h = np.zeros(n, dtype=np.uint64)
    prime = np.uint64(0x100000001B3)
    with np.errstate(over="ignore"):
        for c in range(words.shape[1]):
            h = h * prime + pd.util.hash_array(np.ascontiguousarray(words[:, c]), categorize=False)
    return h


def _exact_pairs(X: NDArray, texts: Any) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(rows, their representative) for every row equal to an earlier one, by features and by text."""
    out_r, out_c = [], []
    codes = pd.factorize(_row_hashes(X))[0]
    _, first = np.unique(codes, return_index=True)
    rep = first[codes]
    cand = np.flatnonzero(rep != np.arange(len(rep)))
    if len(cand):
        step = max(1, (64 * 2**20) // max(1, X.shape[1] * X.dtype.itemsize))
        same = np.concatenate(
            [
                np.all(np.asarray(X[cand[s : s + step]]) == np.asarray(X[rep[cand[s : s + step]]]), axis=1)
                for s in range(0, len(cand), step)
            ]
        )
        out_r.append(cand[same])
        out_c.append(rep[cand[same]])
    if texts is not None:
        tcodes = pd.factorize(texts)[0]
        _, tfirst = np.unique(tcodes, return_index=True)
        trep = tfirst[tcodes]
        tc = np.flatnonzero(trep != np.arange(len(trep)))
        out_r.append(tc)
        out_c.append(trep[tc])
    if not out_r:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(out_r).astype(np.int64), np.concatenate(out_c).astype(np.int64)


def _text_keys(texts: Any, n: int) -> NDArray | None:
    """One string per row: a 1-D sequence as is, the columns of a DataFrame joined."""
    if texts is None:
        return None
    if isinstance(texts, pd.DataFrame):
        keys = texts.astype(str).agg("\x1f".join, axis=1).to_numpy()
    else:
        keys = pd.Series(list(texts) if not isinstance(texts, pd.Series) else texts).astype(str).to_numpy()
    if len(keys) != n:
        raise ValueError(f"The 'texts' parameter of find_duplicates must have one text per row ({n}); got {len(keys)}.")
    return keys


def _signatures(X: NDArray, rng: np.random.Generator, progress) -> NDArray[np.uint64]:
    """256-bit SimHash signatures (4 uint64 words per row): the signs of 256 random projections."""
    n, d = X.shape
    R = rng.standard_normal((d, SIGNATURE_BITS)).astype(np.float32)
    sig = np.empty((n, SIGNATURE_BITS // 64), dtype=np.uint64)
    for s in range(0, n, CHUNK_ROWS):
        block = np.asarray(X[s : s + CHUNK_ROWS], dtype=np.float32) @ R
        sig[s : s + CHUNK_ROWS] = np.packbits(block > 0, axis=1).view(np.uint64)
        if progress is not None:
            progress(min(s + CHUNK_ROWS, n), n)
    return sig


def _candidates(sig: NDArray[np.uint64], window: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Pairs (i < j) whose signatures differ in ≤ MAX_HAMMING bits, among rows near each other in N_ORDERS orders."""
    n = len(sig)
    as_bytes = sig.view(np.uint8).reshape(n, -1)
    found = []
    for _ in range(N_ORDERS):
        cols = rng.choice(as_bytes.shape[1], 8, replace=False)
        key = np.ascontiguousarray(as_bytes[:, cols]).view(">u8").ravel()
        order = np.argsort(key, kind="stable")
        s = sig[order]
        for o in range(1, min(window, n - 1) + 1):
            ham = np.bitwise_count(s[:-o] ^ s[o:]).sum(axis=1, dtype=np.int32)
            hit = np.flatnonzero(ham <= MAX_HAMMING)
            if len(hit):
                a, b = order[hit], order[hit + o]
                found.append(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1))
    if not found:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.concatenate(found).astype(np.int64)
    return np.unique(pairs, axis=0)


def _cosines(X: NDArray, norms: NDArray, pairs: NDArray[np.int64]) -> NDArray[np.float32]:
    out = np.empty(len(pairs), dtype=np.float32)
    step = 65_536
    for s in range(0, len(pairs), step):
        p = pairs[s : s + step]
        dots = np.einsum("ij,ij->i", np.asarray(X[p[:, 0]], np.float32), np.asarray(X[p[:, 1]], np.float32))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[s : s + step] = dots / (norms[p[:, 0]] * norms[p[:, 1]])
    return out


def find_duplicates(
    X: ArrayLike,
    *,
    texts: Any = None,
    threshold: float = 0.98,
    near: bool = True,
    window: int = 24,
    random_state: int = 0,
    progress: Callable[[int, int], Any] | None = None,
) -> DuplicateReport:
    """Exact and near-duplicate rows of ``X`` (and ``texts``), and the groups they form.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        The features (float32 is used for the near search; a memory-mapped array is read in chunks).
    texts : sequence of str or DataFrame, optional
        One text per row (or text columns, joined): rows with equal text are exact duplicates too.
    threshold : float, default=0.98
        Cosine similarity at or above which two rows are near duplicates.
    near : bool, default=True
        False: exact duplicates only.
    window : int, default=24
        Rows each row is compared with in each sorted order (more: higher recall, slower).
    random_state : int, default=0
        Seed of the random projections and orders (the result is reproducible from it).
    progress : callable, optional
        ``progress(done, total)`` while the signatures are computed.

    Returns
    -------
    DuplicateReport

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 16)).astype(np.float32)
    >>> X[10] = X[3]                                          # an exact copy
    >>> X[20] = X[7] + 0.01 * rng.normal(size=16)             # a near copy
    >>> rep = find_duplicates(X)
    >>> rep.n_with_duplicate, rep.groups[10] == rep.groups[3], rep.groups[20] == rep.groups[7]
    (4, np.True_, np.True_)
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    started, cpu0 = time.perf_counter(), time.process_time()
    arr = X if isinstance(X, np.ndarray) else np.asarray(X)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError(f"The 'X' parameter of find_duplicates must be a non-empty 2-D array; got shape {arr.shape}.")
    if not (0.0 < float(threshold) <= 1.0):
        raise ValueError(f"The 'threshold' parameter of find_duplicates must be a cosine in (0, 1]; got {threshold!r}.")
    n = arr.shape[0]
    keys = _text_keys(texts, n)
    rng = np.random.default_rng(random_state)
    er, ec = _exact_pairs(arr, keys)
    exact = np.zeros(n, dtype=bool)
    exact[er] = exact[ec] = True
    stats: dict[str, Any] = {"exact_seconds": time.perf_counter() - started}
    near_pairs = np.empty((0, 2), dtype=np.int64)
    if near and n > 1:
        sig = _signatures(arr, rng, progress)
        stats["signature_seconds"] = time.perf_counter() - started - stats["exact_seconds"]
        cand = _candidates(sig, int(window), rng)
        del sig
        norms = np.empty(n, dtype=np.float32)
        for s in range(0, n, CHUNK_ROWS):
            norms[s : s + CHUNK_ROWS] = np.linalg.norm(np.asarray(arr[s : s + CHUNK_ROWS], np.float32), axis=1)
        cos = _cosines(arr, norms, cand)
        near_pairs = cand[cos >= np.float32(threshold)]
        stats["candidates"] = len(cand)
    # exact copies (equal features) are not "near"
    if len(near_pairs):
        same = np.all(np.asarray(arr[near_pairs[:, 0]]) == np.asarray(arr[near_pairs[:, 1]]), axis=1)
        near_pairs = near_pairs[~same]
    near_rows = np.zeros(n, dtype=bool)
    near_rows[near_pairs.ravel()] = True
    r = np.concatenate([er, near_pairs[:, 0]])
    c = np.concatenate([ec, near_pairs[:, 1]])
    graph = coo_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    groups = pd.factorize(comp)[0].astype(np.int32)
    return DuplicateReport(
        groups=groups,
        exact=exact,
        near=near_rows,
        near_pairs=near_pairs,
        threshold=float(threshold),
        seconds=time.perf_counter() - started,
        cpu_seconds=time.process_time() - cpu0,
        stats=stats,
    )
