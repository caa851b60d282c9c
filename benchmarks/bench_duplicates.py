"""Exact and near-duplicate search (``aflite_core.data.duplicates``) at SNLI-training scale, and its recall.

Usage::

    python benchmarks/bench_duplicates.py             # 550,000 × 384 float32 (the issue's size; ~1 GB of RAM)
    python benchmarks/bench_duplicates.py --rows 100000
    python benchmarks/bench_duplicates.py --tiny      # 6,000 × 64, every code path in seconds (tests)

The data imitate sentence embeddings: unit rows around a common direction (mean cosine ~0.3 between random
rows, as MiniLM's) in 200 clusters, with 1 % of the rows exact copies of others and 2 % near copies at a cosine
drawn uniformly in [0.98, 1.0). Printed: wall time, this process's CPU seconds and the machine's load average
(the machine may be shared), the rows found, and the recall of the planted near pairs (each checked against its
cosine; brute force on a 6,000-row sample checks that nothing unplanted at cosine ≥ 0.98 was missed there).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from aflite_core.data.duplicates import STATED_RECALL, find_duplicates  # noqa: E402


def make_data(n: int, d: int, seed: int = 0):
    """Embedding-like unit rows with planted exact and near copies; returns X and the planted (i, j, cos)."""
    rng = np.random.default_rng(seed)
    common = rng.normal(size=d).astype(np.float32)
    centres = rng.normal(size=(200, d)).astype(np.float32)
    X = np.empty((n, d), dtype=np.float32)
    step = 65_536
    for s in range(0, n, step):
        m = min(step, n - s)
        block = rng.normal(size=(m, d)).astype(np.float32)
        block += 1.2 * centres[rng.integers(0, 200, m)] + 0.9 * common
        X[s : s + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    n_exact, n_near = n // 100, n // 50
    picks = rng.choice(n, n_exact + 2 * n_near, replace=False)
    ex_dst, ex_src = picks[:n_exact], rng.choice(picks[n_exact + n_near :], n_exact)
    X[ex_dst] = X[ex_src]
    nr_dst, nr_src = picks[n_exact : n_exact + n_near], picks[n_exact + n_near :]
    cos = rng.uniform(0.98, 1.0, n_near).astype(np.float32)
    base = X[nr_src]
    u = rng.normal(size=base.shape).astype(np.float32)
    u -= (u * base).sum(axis=1, keepdims=True) * base
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    X[nr_dst] = cos[:, None] * base + np.sqrt(1 - cos**2)[:, None] * u
    real = np.einsum("ij,ij->i", X[nr_dst], X[nr_src])  # float32 rounding: keep the pairs truly ≥ 0.98
    keep = real >= np.float32(0.98)
    return X, np.stack([np.minimum(nr_dst, nr_src), np.maximum(nr_dst, nr_src)], axis=1)[keep], ex_dst


def brute_pairs(X: np.ndarray, rows: np.ndarray, threshold: float) -> set:
    """All pairs among ``rows`` at cosine ≥ threshold that are not exact copies, by brute force."""
    S = X[rows]
    G = S @ S.T
    i, j = np.nonzero(np.triu(G >= np.float32(threshold), 1))
    out = set()
    for a, b in zip(rows[i].tolist(), rows[j].tolist()):
        if not np.array_equal(X[a], X[b]):
            out.add((min(a, b), max(a, b)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=550_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--tiny", action="store_true", help="6,000 × 64 (a few seconds)")
    args = ap.parse_args()
    n, d = (6_000, 64) if args.tiny else (args.rows, args.dim)
    t0 = time.perf_counter()
    X, planted, exact_rows = make_data(n, d)
    print(f"data: {n:,} × {d} float32 ({X.nbytes / 2**20:,.0f} MiB), made in {time.perf_counter() - t0:.1f} s")
    load_before = os.getloadavg()
    rep = find_duplicates(X)
    load_after = os.getloadavg()
    print(
        f"find_duplicates: {rep.seconds:.1f} s wall, {rep.cpu_seconds:.1f} s CPU (this process, all threads); "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after on {os.cpu_count()} cores"
    )
    print(
        f"  stages: {', '.join(f'{k} {v:.1f}' if isinstance(v, float) else f'{k} {v:,}' for k, v in rep.stats.items())}"
    )
    print(f"  {rep.message()}")
    found = set(map(tuple, rep.near_pairs.tolist()))
    same_group = rep.groups[planted[:, 0]] == rep.groups[planted[:, 1]]
    hit = np.array([tuple(p) in found for p in planted.tolist()])
    print(
        f"planted near pairs (cosine in [0.98, 1.0)): {len(planted):,}; found as pairs {hit.mean():.4f}, "
        f"in one group {same_group.mean():.4f} (stated recall ≥ {STATED_RECALL})"
    )
    print(f"planted exact copies: {len(exact_rows):,}; flagged exact {rep.exact[exact_rows].mean():.4f}")
    rng = np.random.default_rng(1)
    sample = np.union1d(rng.choice(n, min(n, 4_000), replace=False), planted[: min(len(planted), 1_000)].ravel())
    truth = brute_pairs(X, sample, rep.threshold)
    inside = set(sample.tolist())
    false = {p for p in found if p[0] in inside and p[1] in inside} - truth
    print(
        f"brute force on a {len(sample):,}-row sample: {len(truth):,} pairs at cosine ≥ {rep.threshold}, "
        f"recall {len(truth & found) / max(1, len(truth)):.4f}, false pairs {len(false)}"
    )


if __name__ == "__main__":
    main()
