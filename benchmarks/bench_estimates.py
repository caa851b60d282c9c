"""Honest estimates (issue 25): each job's estimate before it starts against its actual time, at three sizes.

The estimate is :func:`aflite_core.engine.estimates.estimate_seconds` - the job's shape model times the rates
:func:`~aflite_core.engine.estimates.calibrate` measured on this machine (about a second, once) - taken before the
job runs; the actual is the job's wall time in this process (one thread, as the app runs them). The target is a
ratio within 2× (0.5-2).

* ``aflite``: a whole AFLite run of the default family (m 64, t 10 %, k 2 %, τ 0, so it goes to the target N/3:
  an estimate made before the run cannot know where τ stops it; the Filter page caps its rounds by τ as rounds
  finish);
* ``baselines``: what the Baselines page computes for a run (logistic + kNN, 5 folds, training folds capped at
  2,000 rows, the one-shot filter, the representation bias with 64 models), by the same core calls, with a
  random third of the rows as the kept subset;
* ``embedding`` (only when the offline MiniLM extra is installed, and not in ``--tiny``): sentence embeddings of
  synthetic texts;
* ``families``: whole AFLite runs of the other adversary families the Filter page and the CLI offer (``ridge``,
  scikit-learn's ``logistic``, ``knn``; m 16, t 10 %, k 2 %, τ 0), each priced by its own shape model
  (:func:`aflite_core.engine.work_units.family_solver`).

Data: seeded synthetic features (3 classes, a planted signal), nothing read from disk. Prints one JSON line per job
and a Markdown table, with the machine's load average.

    python benchmarks/bench_estimates.py          # AFLite 20k×32, 100k×64, 200k×256 (ridge); Baselines 10k-200k
    python benchmarks/bench_estimates.py --tiny   # toy sizes: a few seconds
    python benchmarks/bench_estimates.py --jobs embedding   # only the embedding rows
    python benchmarks/bench_estimates.py --recalibrate      # calibrate again just before each job (a loaded machine)
    python benchmarks/bench_estimates.py --jobs families    # ridge (to 200k), scikit-learn logistic, kNN (6k-24k)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aflite_core import aflite, predictability  # noqa: E402
from aflite_core.engine import estimates  # noqa: E402
from aflite_core.measures import baselines as core_baselines  # noqa: E402

SIZES = {
    "aflite": [(20_000, 32), (100_000, 64), (200_000, 256)],
    "baselines": [(10_000, 32), (50_000, 64), (200_000, 256)],
    "families": [(6_000, 16), (12_000, 32), (24_000, 32)],
    # ridge runs in about a second at those sizes (per-round costs its model was not fitted on): the sizes where
    # a run takes long enough for its estimate to matter too
    "families ridge": [(6_000, 16), (12_000, 32), (24_000, 32), (100_000, 64), (200_000, 128)],
}
TINY = {
    "aflite": [(3_000, 8), (6_000, 8), (12_000, 8)],
    "baselines": [(1_500, 8), (3_000, 8), (6_000, 8)],
    "families": [(1_200, 8)],
}
#: the other adversary families (besides the default "linear") and their partitions m in the ``families`` job
FAMILIES = ("ridge", "logistic", "knn")
FAMILY_PARTITIONS = 16


#: ``--recalibrate``: :func:`_estimate` measures the rates again before each job
_RECALIBRATE = False


def _estimate(kind: str, **shape) -> float:
    """The estimate before the job starts (after a fresh calibration with ``--recalibrate``)."""
    if _RECALIBRATE:
        estimates.calibrate(force=True)
    return estimates.estimate_seconds(kind, **shape)


def _data(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[:, :3] += np.eye(3, dtype=np.float32)[y]
    return X, y


def _record(rows: list, job: str, n: int, d: int, estimate: float, actual: float) -> None:
    rec = {
        "job": job,
        "rows": n,
        "dim": d,
        "estimate_s": round(estimate, 3),
        "actual_s": round(actual, 3),
        "ratio": round(estimate / max(actual, 1e-9), 2),
        "speed": round(float(estimates.calibrate()["speed"]), 3),  # the calibration the estimate used
        "load1": round(os.getloadavg()[0], 2),
    }
    rows.append(rec)
    print(json.dumps(rec), flush=True)


def bench_aflite(rows: list, n: int, d: int, m: int) -> None:
    X, y = _data(n, d, seed=n)
    shape = {"target_size": n // 3, "train_size": n // 10, "slice_size": max(n // 50, 1), "n_partitions": m}
    estimate = _estimate("aflite", n_rows=n, n_features=d, **shape)
    start = time.perf_counter()
    aflite(X, y, tau=0.0, random_state=0, n_threads=1, **shape)
    _record(rows, "aflite", n, d, estimate, time.perf_counter() - start)


def bench_family(rows: list, family: str, n: int, d: int, m: int) -> None:
    """A whole run of another adversary family, estimated with its own shape model (``model=family``)."""
    X, y = _data(n, d, seed=n + 2)
    shape = {"target_size": n // 3, "train_size": n // 10, "slice_size": max(n // 50, 1), "n_partitions": m}
    estimate = _estimate("aflite", n_rows=n, n_features=d, model=family, **shape)
    start = time.perf_counter()
    aflite(X, y, tau=0.0, random_state=0, n_threads=1, model=family, **shape)
    _record(rows, f"aflite {family}", n, d, estimate, time.perf_counter() - start)


def bench_baselines(rows: list, n: int, d: int, m: int) -> None:
    """The Baselines page's calls (aflite_app/compute/baselines.py) on a random third as the kept rows."""
    X, y = _data(n, d, seed=n + 1)
    n_kept, t, models = n // 3, n // 10, ("logistic", "knn")
    estimate = _estimate(
        "baselines", n_rows=n, n_kept=n_kept, train_size=t, n_features=d, models=models, n_partitions=m
    )
    start = time.perf_counter()
    masks = {
        "full": np.ones(n, dtype=bool),
        "aflite": core_baselines.random_subset(n, n_kept, y=y, random_state=1),
        "random": core_baselines.random_subset(n, n_kept, y=y, random_state=2),
    }
    masks["one-shot"] = core_baselines.one_shot_filter(
        X, y, size=n_kept, train_size=t, model="logistic", random_state=0, n_threads=1
    ).kept
    for mask in masks.values():
        for model in models:
            core_baselines.model_accuracies(
                X, y, mask=mask, models=[model], n_splits=5, max_train_rows=2000, random_state=0, n_threads=1
            )
    for mask in masks.values():
        rows_in = np.flatnonzero(mask)
        predictability(X[rows_in], y[rows_in], n_partitions=m, train_size=t, random_state=0, n_threads=1)
    _record(rows, "baselines", n, d, estimate, time.perf_counter() - start)


def bench_embedding(rows: list) -> None:
    from aflite_core.data.embed_status import embeddings_status

    if not embeddings_status().available:
        print("embedding: the sentence-embeddings extra is not installed; skipped", flush=True)
        return
    from aflite_core.data.embeddings import embed_texts

    words = "a man is sleeping on the couch while two dogs play outside in the rain".split()
    rng = np.random.default_rng(0)
    for n in (500, 1000, 2000):
        texts = [" ".join(rng.choice(words, size=int(rng.integers(5, 25)))) for _ in range(n)]
        estimate = _estimate("embedding", texts=texts, model_loaded=n > 500)
        start = time.perf_counter()
        embed_texts(texts)
        _record(rows, "embedding", n, 384, estimate, time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes (a few seconds)")
    parser.add_argument("--jobs", default="aflite,baselines,embedding,families", help="comma list of the jobs to time")
    parser.add_argument("--families", default=",".join(FAMILIES), help="the families job's families (comma list)")
    parser.add_argument(
        "--recalibrate",
        action="store_true",
        help="calibrate again just before each job (on a machine whose load swings, the speed of the moment)",
    )
    args = parser.parse_args(argv)
    if args.recalibrate:
        global _RECALIBRATE
        _RECALIBRATE = True
    jobs = set(args.jobs.split(","))
    sizes = TINY if args.tiny else SIZES
    m = 8 if args.tiny else 64
    start = time.perf_counter()
    rates = estimates.calibrate()
    print(
        json.dumps({"calibration_s": round(time.perf_counter() - start, 3), **{k: float(v) for k, v in rates.items()}}),
        flush=True,
    )
    rows: list[dict] = []
    for n, d in sizes["aflite"] if "aflite" in jobs else []:
        bench_aflite(rows, n, d, m)
    for n, d in sizes["baselines"] if "baselines" in jobs else []:
        bench_baselines(rows, n, d, m)
    for family in [f for f in args.families.split(",") if f] if "families" in jobs else ():
        for n, d in sizes.get(f"families {family}", sizes["families"]):
            bench_family(rows, family, n, d, min(m, FAMILY_PARTITIONS))
    if not args.tiny and "embedding" in jobs:
        try:
            bench_embedding(rows)
        except Exception as exc:  # an optional extra that fails to load: say so, keep the table
            print(f"embedding: skipped ({type(exc).__name__})", flush=True)
    load = os.getloadavg()
    print(f"\nload average (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs\n")
    print("| job | rows × d | estimate (s) | actual (s) | estimate / actual | calibrated speed | load |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        size = f"{r['rows']:,} × {r['dim']}"
        print(
            f"| {r['job']} | {size} | {r['estimate_s']:.2f} | {r['actual_s']:.2f} | {r['ratio']:.2f} | "
            f"{r['speed']:.2f} | {r['load1']:.1f} |"
        )
    inside = sum(0.5 <= r["ratio"] <= 2.0 for r in rows)
    print(f"\nwithin 2×: {inside} of {len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
