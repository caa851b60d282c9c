"""How often Inspect's "Label-revealing words" job reports progress, and what it costs (issue 25).

Times the core's :func:`~aflite_core.measures.artifact_statistics.artifact_statistics` and
:func:`~aflite_core.measures.artifact_statistics.artifact_shares` on seeded synthetic texts (10 words each, a
planted token in a quarter of one class), with and without a ``progress`` callback: the total seconds, the
longest gap between two progress calls (how soon a Stop is seen) and whether the results are equal; then the
app's ``word_statistics`` (the test and the example texts, the job's first two passes; the shares are the third).

    python benchmarks/bench_words_progress.py            # 550,000 texts
    python benchmarks/bench_words_progress.py --tiny     # 20,000 texts (a smoke test)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's packages

from aflite_core.measures.artifact_statistics import artifact_shares, artifact_statistics


def texts_of(n: int, seed: int = 0) -> tuple[list[str], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(5000)])
    y = rng.integers(0, 3, n)
    words = vocab[rng.zipf(1.3, size=(n, 10)) % len(vocab)]
    texts = [
        " ".join(row) + (" nobody" if lab == 0 and i % 4 == 0 else "") for i, (row, lab) in enumerate(zip(words, y))
    ]
    return texts, y, rng.random(n) < 0.7


def timed(func, *args, **kwargs) -> tuple:
    stamps: list[float] = []
    t0 = time.perf_counter()
    out = func(*args, progress=lambda d, t: stamps.append(time.perf_counter()), **kwargs)
    total = time.perf_counter() - t0
    gaps = np.diff([t0, *stamps]) if stamps else np.array([total])
    return out, total, float(gaps.max()), len(stamps)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="20,000 texts")
    args = parser.parse_args(argv)
    n = 20_000 if args.tiny else 550_000
    texts, y, kept = texts_of(n)
    t0 = time.perf_counter()
    plain = artifact_statistics(texts, y)
    t_plain = time.perf_counter() - t0
    stats, t_stats, gap_stats, calls_stats = timed(artifact_statistics, texts, y)
    pd.testing.assert_frame_equal(stats, plain)
    shares, t_shares, gap_shares, calls_shares = timed(artifact_shares, texts, y, kept, stats)
    pd.testing.assert_frame_equal(shares, artifact_shares(texts, y, kept, stats))
    print(f"{n:,} texts, {int(stats['significant'].sum())} significant pairs; results equal with and without progress")
    print(
        f"artifact_statistics: {t_plain:.1f} s without progress, {t_stats:.1f} s with ({calls_stats} calls, "
        f"longest gap {gap_stats:.2f} s)"
    )
    print(f"artifact_shares:     {t_shares:.1f} s with progress ({calls_shares} calls, longest gap {gap_shares:.2f} s)")
    # the app's first two passes (the test, then each pair's example texts), as the words tab's job runs them
    from aflite_app.compute.datasets import word_statistics
    from aflite_core import dataset_from_table

    table = pd.DataFrame({"text": texts, "label": y})
    data = dataset_from_table(table, label_column="label", text_columns=["text"], features=np.zeros((n, 2)))
    _, t_app, gap_app, calls_app = timed(lambda progress: word_statistics(data, "text", 10, 0.01, progress))
    print(f"app word_statistics: {t_app:.1f} s with progress ({calls_app} calls, longest gap {gap_app:.2f} s)")


if __name__ == "__main__":
    main()
