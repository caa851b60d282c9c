"""What grouping by premise changes on the shared SNLI sample (README: "Keeping each premise's hypotheses together").

SNLI writes three hypotheses per premise. With premise + hypothesis features (``snli_sample.pair_minilm.npy``)
a row may look predictable partly because its sibling rows - same premise, nearly the same embedding - trained
the model that predicts it. This script runs AFLite on the 6,891 rows with and without ``groups=premise`` and
prints, per seed and as mean ± sd over the seeds:

* the round-1 rows at p ≥ τ (how many, and the Jaccard of the two sets),
* the removed rows (how many, and the Jaccard of the two removed sets),
* for scale, the Jaccard of the removed sets of two seeds without groups (the run-to-run noise).

    python benchmarks/snli_groups.py [--shared ../shared/data] [--seeds 0,1,2]
    python benchmarks/snli_groups.py --tiny     # the first 1,500 rows, one seed (tests/test_benchmarks.py)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aflite_core import aflite
from aflite_core.data.groups import groups_from_table

#: the runs' parameters (fractions of the rows): the paper's τ and m, a quarter of the rows per model
PARAMS = dict(target_size=0.5, train_size=0.25, slice_size=0.05, n_partitions=64, tau=0.75)
TINY_ROWS = 1_500


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|A ∩ B| / |A ∪ B| of two boolean masks (1.0 when both are empty)."""
    union = int((a | b).sum())
    return 1.0 if union == 0 else int((a & b).sum()) / union


def compare(X: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int, params: dict) -> dict:
    """One seed: AFLite with and without groups; round-1 sets at p ≥ τ and removed sets, their sizes and Jaccard."""
    n = len(y)
    kw = dict(params)
    kw["slice_size"] = max(1, round(kw["slice_size"] * n))
    free = aflite(X, y, **kw, random_state=seed)
    grouped = aflite(X, y, **kw, random_state=seed, groups=groups)
    tau = kw["tau"]
    hi_f, hi_g = free.first_score >= tau, grouped.first_score >= tau
    return {
        "seed": seed,
        "round1_free": int(hi_f.sum()),
        "round1_grouped": int(hi_g.sum()),
        "round1_jaccard": jaccard(hi_f, hi_g),
        "mean_p1_free": float(np.nanmean(free.first_score)),
        "mean_p1_grouped": float(np.nanmean(grouped.first_score)),
        "removed_free": int((~free.kept).sum()),
        "removed_grouped": int((~grouped.kept).sum()),
        "removed_jaccard": jaccard(~free.kept, ~grouped.kept),
        "rounds_free": free.n_rounds,
        "rounds_grouped": grouped.n_rounds,
        "removed_free_mask": ~free.kept,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--tiny", action="store_true", help=f"the first {TINY_ROWS:,} rows, seed 0 (checks that it runs)")
    args = ap.parse_args()
    shared = Path(args.shared)
    if not shared.is_dir():
        raise SystemExit(f"shared data not found at {shared}")
    frame = pd.read_json(shared / "snli_sample.jsonl", lines=True)
    X = np.load(shared / "snli_sample.pair_minilm.npy")
    seeds = [0] if args.tiny else [int(s) for s in args.seeds.split(",")]
    params = dict(PARAMS)
    if args.tiny:
        frame, X = frame.iloc[:TINY_ROWS], X[:TINY_ROWS]
        params["n_partitions"] = 16
    y = frame["label"].to_numpy()
    groups = groups_from_table(frame, "premise", "snli_sample.jsonl")
    sizes = np.bincount(groups)
    print(
        f"SNLI sample: {len(y):,} rows, {len(sizes):,} premises ({(sizes >= 2).sum():,} with 2+ hypotheses), "
        f"premise + hypothesis MiniLM features; {params}"
    )
    t0 = time.perf_counter()
    rows = [compare(X, y, groups, s, params) for s in seeds]
    table = pd.DataFrame([{k: v for k, v in r.items() if k != "removed_free_mask"} for r in rows]).set_index("seed")
    print(table.round(3).to_string())
    summary = table.agg(["mean", "std"]).T
    print("\nmean ± sd over seeds:")
    for key in (
        "round1_free",
        "round1_grouped",
        "round1_jaccard",
        "removed_free",
        "removed_grouped",
        "removed_jaccard",
    ):
        mean, sd = summary.loc[key, "mean"], summary.loc[key, "std"]
        print(f"  {key:16s} {mean:9.3f} ± {0.0 if np.isnan(sd) else sd:.3f}")
    if len(rows) >= 2:
        noise = [jaccard(rows[i]["removed_free_mask"], rows[i + 1]["removed_free_mask"]) for i in range(len(rows) - 1)]
        print(f"  removed-set Jaccard of consecutive seeds without groups (noise): {np.mean(noise):.3f}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
