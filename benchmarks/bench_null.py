"""How many of the rows at p ≥ τ would chance put there? The null for predictability, calibrated over seeds.

Usage::

    python benchmarks/bench_null.py                  # the README's figures (about a minute on 2 cores)
    python benchmarks/bench_null.py --seeds 10 --permutations 10
    python benchmarks/bench_null.py --no-sklearn     # skip the scikit-learn loop (the slow column)
    python benchmarks/bench_null.py --tiny           # toy shapes, every code path in seconds (tests)

Two experiments, each over seeds (every seed redraws the data, the partitions and the permutations):

* **random labels** (labels independent of X; 600 rows, d = 500, t = 300, m = 64, τ = 0.75 by default): the
  observed round-1 count at p ≥ τ (``predictability``) beside the null's mean ± sd over the permutations
  (``null_predictability``), the chance share, and - not the same family, printed only for comparison - the count
  of the plain scikit-learn loop (one ``LogisticRegression()`` per partition, ``benchmarks/reference.py``);
* **planted rows** (labels independent of X except on a known 25 %, whose feature 0 reveals the label; 800 rows,
  d = 50, t = 100, m = 32): observed − null beside the planted count, and the chance share on the planted rows
  and on the rest.

Last, one ``aflite(..., null_permutations=K)`` run on random labels prints its one-line null summary, and one on
the planted data its round-1 ``chance_table`` and ``suggest_tau(res, 0.1)``. Nothing here asserts a figure;
``tests/test_null_predictability.py`` checks the calibration on smaller shapes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from aflite_core import (  # noqa: E402
    aflite,
    chance_share,
    chance_table,
    null_predictability,
    predictability,
    suggest_tau,
)

SHAPES = {
    "full": {
        "random": dict(n=600, d=500, t=300, m=64, tau=0.75),
        "planted": dict(n=800, d=50, t=100, m=32, tau=0.75),
    },
    "tiny": {
        "random": dict(n=200, d=60, t=80, m=8, tau=0.75),
        "planted": dict(n=240, d=10, t=60, m=8, tau=0.75),
    },
}


def random_labels(seed: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian features and balanced binary labels drawn independently of them."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype(np.float32), rng.integers(0, 2, n)


def planted_rows(seed: int, n: int, d: int, share: float = 0.25) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random labels, except on a known ``share`` of the rows whose feature 0 is ±4 by label (0 elsewhere)."""
    X, y = random_labels(seed, n, d)
    rows = np.zeros(n, dtype=bool)
    rows[np.random.default_rng(seed + 10_000).choice(n, int(share * n), replace=False)] = True
    X[:, 0] = 0.0
    X[rows, 0] = 4.0 * (2 * y[rows] - 1)
    return X, y, rows


def pm(values) -> str:
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.1f} ± {values.std(ddof=1) if len(values) > 1 else 0.0:.1f}"


def random_label_table(shape: dict, seeds: list[int], K: int, sklearn: bool) -> None:
    n, d, t, m, tau = (shape[k] for k in ("n", "d", "t", "m", "tau"))
    print(f"## Random labels: {n} rows, d = {d}, t = {t}, m = {m}, τ = {tau}, {K} permutations per seed\n")
    print("| seed | observed p ≥ τ | null mean ± sd | null range | chance share | scikit-learn loop | seconds |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    observed, null_means, loops = [], [], []
    for seed in seeds:
        X, y = random_labels(seed, n, d)
        kw = dict(train_size=t, n_partitions=m, random_state=seed)
        t0 = time.perf_counter()
        p = predictability(X, y, **kw)
        null = null_predictability(X, y, n_permutations=K, **kw)
        seconds = time.perf_counter() - t0
        counts = (null >= np.float32(tau)).sum(axis=1)
        obs = int((p >= np.float32(tau)).sum())
        loop = "–"
        if sklearn:
            from reference import reference_predictability

            q = reference_predictability(X, y, n_partitions=m, train_size=t, random_state=seed)
            loops.append(int((q >= tau).sum()))
            loop = str(loops[-1])
        observed.append(obs)
        null_means.append(counts.mean())
        print(
            f"| {seed} | {obs} | {pm(counts)} | {counts.min()}-{counts.max()} | "
            f"{chance_share(null, p, tau):.2f} | {loop} | {seconds:.1f} |"
        )
    ratio = np.mean(null_means) / np.mean(observed)
    loop_text = f"; scikit-learn loop {pm(loops)} (not the same family)" if loops else ""
    print(
        f"\nover {len(seeds)} seeds: observed {pm(observed)} rows of {n} at p ≥ {tau}, null {pm(null_means)} "
        f"(mean null / mean observed = {ratio:.2f}){loop_text}\n"
    )


def planted_table(shape: dict, seeds: list[int], K: int) -> None:
    n, d, t, m, tau = (shape[k] for k in ("n", "d", "t", "m", "tau"))
    print(f"## Planted rows: {n} rows (25 % planted), d = {d}, t = {t}, m = {m}, τ = {tau}, {K} permutations\n")
    print("| seed | planted | observed p ≥ τ | null mean | observed − null | chance share planted | rest |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    estimates, pooled = [], np.zeros(4)  # expected and observed counts on the planted rows, then on the rest
    for seed in seeds:
        X, y, rows = planted_rows(seed, n, d)
        kw = dict(train_size=t, n_partitions=m, random_state=seed)
        p = predictability(X, y, **kw)
        null = null_predictability(X, y, n_permutations=K, **kw)
        obs = int((p >= np.float32(tau)).sum())
        expected = float((null >= np.float32(tau)).sum(axis=1).mean())
        estimates.append((obs - expected) / rows.sum())
        for i, part in enumerate((rows, ~rows)):
            pooled[2 * i] += float((null[:, part] >= np.float32(tau)).sum(axis=1).mean())
            pooled[2 * i + 1] += int((p[part] >= np.float32(tau)).sum())
        print(
            f"| {seed} | {int(rows.sum())} | {obs} | {expected:.1f} | {obs - expected:.1f} | "
            f"{chance_share(null, p, tau, rows):.2f} | {chance_share(null, p, tau, ~rows):.2f} |"
        )
    print(f"\n(observed − null) / planted over {len(seeds)} seeds: {pm(100 * np.asarray(estimates))} %")
    print(
        f"chance share pooled over the seeds: planted rows {pooled[0] / pooled[1]:.2f}, "
        f"the rest {pooled[2] / pooled[3]:.2f}\n"
    )


def run_summary(shape: dict, K: int) -> None:
    n, d, t, m, tau = (shape[k] for k in ("n", "d", "t", "m", "tau"))
    X, y = random_labels(0, n, d)
    t0 = time.perf_counter()
    res = aflite(
        X, y, target_size=t + n // 10, train_size=t, slice_size=n // 20, n_partitions=m, tau=tau, random_state=0,
        null_permutations=K,
    )  # fmt: skip
    print(f"## aflite(..., null_permutations={K}) on random labels seed 0 ({time.perf_counter() - t0:.1f} s)\n")
    print(f"{res.n_removed} rows removed in {res.n_rounds} rounds; {res.null_message}\n")


def planted_run_table(shape: dict, K: int) -> None:
    """One run at τ = 0.5 on the planted data, seed 0: its round-1 chance table and the suggested τ."""
    n, d, t, m = (shape[k] for k in ("n", "d", "t", "m"))
    X, y, _ = planted_rows(0, n, d)
    res = aflite(
        X, y, target_size=n // 2, train_size=t, slice_size=n // 8, n_partitions=m, tau=0.5, random_state=0,
        null_permutations=K,
    )  # fmt: skip
    table = chance_table(res, round=1)
    print(f"## chance_table of aflite(..., tau=0.5, null_permutations={K}) on the planted rows, seed 0, round 1\n")
    print("| τ | observed p ≥ τ | null | chance share |")
    print("| ---: | ---: | ---: | ---: |")
    for i in range(50, 101, 5):
        row = table.iloc[i]
        print(f"| {row['tau']:.2f} | {int(row['observed'])} | {row['null']:.1f} | {row['chance_share']:.2f} |")
    print(f"\nsuggest_tau(res, 0.1) = {suggest_tau(res, 0.1)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="toy shapes: every code path in seconds (the tests)")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per experiment (default 5)")
    ap.add_argument("--permutations", type=int, default=5, help="label permutations per seed (default 5)")
    ap.add_argument("--no-sklearn", action="store_true", help="skip the scikit-learn loop column")
    args = ap.parse_args()
    shapes = SHAPES["tiny" if args.tiny else "full"]
    seeds = list(range(2 if args.tiny else args.seeds))
    K = 3 if args.tiny else args.permutations
    random_label_table(shapes["random"], seeds, K, sklearn=not args.no_sklearn)
    planted_table(shapes["planted"], seeds, K)
    run_summary(shapes["random"], K)
    planted_run_table(shapes["planted"], K)


if __name__ == "__main__":
    main()
