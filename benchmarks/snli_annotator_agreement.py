"""The README's annotator-agreement figures (Phang et al. §5.3, Figure 5) on the shared SNLI sample.

Evaluation rows split off by premise; hypothesis-only and premise+hypothesis MiniLM embeddings as adversaries;
only the uniformly sampled ``random_subset`` rows count (ChaosNLI rows are the low-agreement ones by
construction). Prints the mean agreement with the gold label per history category, over the seeds; with
``--per-seed`` each seed is run alone too and the spread over seeds (mean ± sd of the per-seed figures, min-max)
is printed beside the pooled table.

    python benchmarks/snli_annotator_agreement.py [--shared ../shared/data] [--seeds 0,1,2] [--per-seed]
    python benchmarks/snli_annotator_agreement.py --tiny   # seed 0 only: checks that it runs (tests/test_benchmarks.py)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aflite_core.data.nli import nli_dataset_from_records
from aflite_core.evalsets import text_adversary_setup

#: ``--tiny``: rows of the sample kept (its first ones), with seed 0 only - every step in a few seconds
TINY_ROWS = 2_500


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--tiny", action="store_true", help=f"seed 0, the first {TINY_ROWS:,} rows: checks that it runs")
    ap.add_argument("--per-seed", action="store_true", help="also run each seed alone and print the spread over seeds")
    args = ap.parse_args()
    if args.tiny:
        args.seeds = "0"
    shared = Path(args.shared)
    if not shared.is_dir():
        raise SystemExit(f"shared data not found at {shared}")
    frame = pd.read_json(shared / "snli_sample.jsonl", lines=True)
    feats = {
        "hypothesis": np.load(shared / "snli_sample.hyp_minilm.npy"),
        "pair": np.load(shared / "snli_sample.pair_minilm.npy"),
    }
    if args.tiny:
        frame = frame.iloc[:TINY_ROWS]
        feats = {view: X[:TINY_ROWS] for view, X in feats.items()}
    ds = nli_dataset_from_records(frame, name="snli", features=feats, text_features=False)
    setup = text_adversary_setup(
        ds,
        tfidf=False,
        embeddings=False,
        annotator_column="annotator_labels",
        annotator_source_column="annotator_labels_src",
        evaluated=[("logistic", "hypothesis"), ("logistic", "pair")],
        random_state=0,
    )
    seeds = tuple(int(s) for s in args.seeds.split(","))
    t0 = time.perf_counter()
    study = setup.run(seeds=seeds)
    print(
        f"seeds {seeds}, {study.agreement.info['n_used']} evaluation rows with random_subset labels "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    print(study.agreement.table().round(3).to_string())
    if args.per_seed:
        tables = []
        for seed in seeds:
            one = setup.run(seeds=(seed,)).agreement.table()
            print(f"\nseed {seed}:\n{one.round(3).to_string()}")
            tables.append(one)
        numeric = [t.select_dtypes("number") for t in tables]
        stacked = np.stack([t.to_numpy(dtype=float) for t in numeric])
        cols = numeric[0].columns
        spread = pd.DataFrame(index=numeric[0].index)
        for j, col in enumerate(cols):
            spread[f"{col} mean"] = stacked[:, :, j].mean(0)
            spread[f"{col} sd"] = stacked[:, :, j].std(0, ddof=1) if len(tables) > 1 else np.nan
            spread[f"{col} min-max"] = [
                f"{lo:.3f}-{hi:.3f}" for lo, hi in zip(stacked[:, :, j].min(0), stacked[:, :, j].max(0))
            ]
        print(f"\nover {len(tables)} seeds run alone (mean, sd, min-max of the per-seed figures):")
        print(spread.round(3).to_string())


if __name__ == "__main__":
    main()
