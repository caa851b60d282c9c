"""What recording the models' votes costs (``aflite(record_votes=...)``), and what explaining one row costs.

Usage::

    python benchmarks/bench_votes.py                 # digits and 100,000 × 64 (a few minutes on 2 cores)
    python benchmarks/bench_votes.py --rows 550000 --features 384
    python benchmarks/bench_votes.py --tiny          # toy shapes, every code path in seconds (tests)

For each shape the same run (same seed and parameters) goes with ``record_votes=False`` and ``True``, alternately
``--repeats`` times; it prints the median wall time of each, the relative overhead, the votes' bytes in memory
(rounds × N × classes × 2) and on disk (``votes.npy``), the time spent counting the votes inside one run on one
thread (and its share of that run: the overhead without the noise of a shared machine), and the time
``explain_row`` takes for one removed row (neighbours over every row). One JSON record per shape on stdout;
nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from aflite_core import aflite  # noqa: E402
from aflite_core.data.planted_bias import make_planted_bias  # noqa: E402
from aflite_core.measures.explain import explain_row  # noqa: E402


def _digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    kw = dict(target_size=600, train_size=400, slice_size=100, n_partitions=64, tau=0.6, random_state=0)
    return "digits 1,797 × 64", X.astype(np.float32), y, kw


def _planted(n: int, d: int):
    X, y, _ = make_planted_bias(n, d, n_classes=3, random_state=0)
    kw = dict(target_size=n // 2, train_size=n // 5, slice_size=n // 20, n_partitions=64, tau=0.75, random_state=0)
    return f"planted {n:,} × {d}", X.astype(np.float32), y, kw


def measure(name: str, X, y, kw: dict, repeats: int) -> dict:
    times: dict[bool, list[float]] = {False: [], True: []}
    aflite(X, y, record_votes=True, **kw)  # warm-up: compiled kernels and caches, timed in neither column
    result = None
    for _ in range(repeats):
        for record in (False, True):
            t0 = time.perf_counter()
            res = aflite(X, y, record_votes=record, **kw)
            times[record].append(time.perf_counter() - t0)
            if record:
                result = res
    off, on = statistics.median(times[False]), statistics.median(times[True])
    # the counting itself, timed inside one run (wall-time medians on a shared machine are noisy)
    from aflite_core.engine import partitions

    real, spent = partitions.count_votes, [0.0]

    def timed(*a, **k):
        t = time.perf_counter()
        out = real(*a, **k)
        spent[0] += time.perf_counter() - t
        return out

    partitions.count_votes = timed
    try:
        t0 = time.perf_counter()
        aflite(X, y, record_votes=True, n_threads=1, **kw)
        one_thread = time.perf_counter() - t0
    finally:
        partitions.count_votes = real
    with tempfile.TemporaryDirectory() as tmp:
        result.save(Path(tmp) / "run")
        disk = (Path(tmp) / "run" / "votes.npy").stat().st_size
    gone = np.flatnonzero(~result.kept)
    t0 = time.perf_counter()
    explain_row(result, int(gone[0]) if len(gone) else 0, features=X)
    explain_s = time.perf_counter() - t0
    return {
        "shape": name,
        "rounds": result.n_rounds,
        "seconds_without_votes": round(off, 3),
        "seconds_with_votes": round(on, 3),
        "overhead": round(on / off - 1, 4),
        "counting_seconds_1_thread": round(spent[0], 3),
        "counting_share_1_thread": round(spent[0] / one_thread, 4),
        "votes_mb": round(result.votes.nbytes / 1e6, 2),
        "votes_npy_mb": round(disk / 1e6, 2),
        "explain_row_seconds": round(explain_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="toy shapes (seconds)")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if args.tiny:
        cases = [_planted(2_000, 8)]
        repeats = 1
    else:
        cases = [_digits(), _planted(args.rows, args.features)]
        repeats = args.repeats
    for name, X, y, kw in cases:
        print(json.dumps(measure(name, X, y, kw, repeats)), flush=True)
    at = 550_000 * 41 * 3 * 2
    print(f"votes at 550,000 rows × 41 rounds × 3 classes: {at / 1e6:,.0f} MB (int16)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
