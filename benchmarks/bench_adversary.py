"""Is the default model family as strong an adversary as scikit-learn's LogisticRegression()? (issue #13)

Usage::

    python benchmarks/bench_adversary.py                       # every row, t = 10 % and 30 %
    python benchmarks/bench_adversary.py --rows digits_mlp_small,mnli_hyp --fractions 0.1
    python benchmarks/bench_adversary.py --json-out adversary.jsonl
    python benchmarks/bench_adversary.py --tiny                # m = 8, toy rows: checks that it runs, in seconds

For each data set and t, one AFLite round (m = 64, τ = 0.75, nothing removed) of

* **the loop**: ``benchmarks/reference.py`` - exact random t-row subsets, one scikit-learn
  ``LogisticRegression()`` (lbfgs, C = 1, its default ``max_iter=100``) per partition - with seeds 0, 1, 2: its
  own seed-to-seed agreement is the floor any implementation can be held to;
* **the engine**: ``aflite_core.predictability`` with the default family, seeds 0, 1, 2;
* for reference, the ridge family that was the default before (seed 0 only).

Reported per row: mean p (the adversary's mean held-out accuracy), rows at p ≥ τ, Jaccard of the sets at p ≥ τ
(engine seed i against loop seed j, mean of the 9 pairs; the floor is the mean of the loop's 3 pairs), the
per-row correlation of p, and wall time per round. Targets: mean p ≥ the loop's − 0.01, rows at p ≥ τ ≥ 95 %
of the loop's (both means over seeds), Jaccard ≥ the loop's floor − 0.02. Where the loop's fits mostly stop at
``max_iter`` without converging, the loop is also run with ``max_iter=1000`` (seed 0) and the engine's Jaccard
against that converged loop is shown next to it: the engine solves the same objective to convergence.

Data: the real SNLI and MNLI samples of ``../shared/data`` (hypothesis-only and premise+hypothesis MiniLM
embeddings; skipped with a note when the folder is absent), the bundled digits in their four representations,
and the synthetic settings (a) and (b) of ``bench_core.py`` (isotropic and anisotropic). Figures go into
``benchmarks/README.md`` by hand; nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

SHARED = Path(os.environ.get("AFLITE_SHARED_DATA", ROOT.parent / "shared" / "data"))
M, TAU, SEEDS = 64, 0.75, (0, 1, 2)
#: ``--tiny``: m and the rows (digits PCA, the toy setting (a) of bench_core.TINY_SETTINGS; every code path,
#: the converged loop included, in a few seconds - tests/test_benchmarks.py); the figures mean nothing
TINY_M, TINY_ROWS = 8, "digits_pca,a_isotropic"
NLI_LABELS = ("entailment", "neutral", "contradiction")
ROWS = (
    "snli_hyp",
    "snli_pair",
    "mnli_hyp",
    "mnli_pair",
    "digits_pixels",
    "digits_pca",
    "digits_mlp",
    "digits_mlp_small",
    "a_isotropic",
    "a_anisotropic",
    "b_isotropic",
    "b_anisotropic",
)


def load(name: str, tiny: bool = False):
    """(X, y) of a row, or None when its data is not available (``tiny``: the synthetic rows at toy sizes)."""
    if name.startswith(("snli", "mnli")):
        stem, view = name.split("_")
        path = SHARED / f"{stem}_sample.{view}_minilm.npy"
        if not path.is_file():
            return None
        lines = (SHARED / f"{stem}_sample.jsonl").read_text(encoding="utf-8").splitlines()
        y = np.array([NLI_LABELS.index(json.loads(line)["label"]) for line in lines])
        return np.load(path), y
    if name.startswith("digits"):
        from aflite_core import load_digits_dataset

        data = load_digits_dataset()
        return data.representation(name[len("digits_") :]), np.asarray(data.y)
    from bench_core import DATA, SETTINGS, TINY_SETTINGS

    from aflite_core.data.planted_bias import make_planted_bias

    setting, variant = name.split("_")
    s = (TINY_SETTINGS if tiny else SETTINGS)[setting]
    X, y, _ = make_planted_bias(s["n"], s["d"], n_classes=s["classes"], spectrum_decay=DATA[variant], random_state=0)
    return X, y


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def corr(a: np.ndarray, b: np.ndarray) -> float:
    ok = ~np.isnan(a) & ~np.isnan(b)
    return float(np.corrcoef(a[ok], b[ok])[0, 1])


def loop_round(X, y, t, seed, max_iter=100):
    from reference import reference_predictability

    stats: dict = {}
    t0 = time.perf_counter()
    p = reference_predictability(X, y, n_partitions=M, train_size=t, random_state=seed, max_iter=max_iter, stats=stats)
    return p, time.perf_counter() - t0, float(np.mean(np.array(stats["n_iter"]) >= max_iter))


def engine_round(X, y, t, seed, model="linear"):
    from aflite_core import predictability

    t0 = time.perf_counter()
    p = predictability(X, y, n_partitions=M, train_size=t, model=model, random_state=seed).astype(np.float64)
    return p, time.perf_counter() - t0


def measure(name: str, X, y, frac: float, converged: str) -> dict:
    from threadpoolctl import threadpool_limits

    from aflite_core import LinearFamily
    from aflite_core.engine.logistic import LogisticFamily

    t = round(frac * len(y))
    n_classes = len(np.unique(y))
    load_before = os.getloadavg()
    with threadpool_limits(1):
        loops = [loop_round(X, y, t, s) for s in SEEDS]
        engines = [engine_round(X, y, t, s) for s in SEEDS]
        ridge, ridge_s = engine_round(X, y, t, 0, model=LinearFamily())
    lp = [p for p, _, _ in loops]
    ep = [p for p, _ in engines]
    q = lambda p: np.nan_to_num(p, nan=-1.0) >= TAU  # noqa: E731
    pairs = [(0, 1), (0, 2), (1, 2)]
    floor = [jaccard(q(lp[i]), q(lp[j])) for i, j in pairs]
    rec = {
        "row": name,
        "fraction": frac,
        "t": t,
        "n_rows": len(y),
        "d": X.shape[1],
        "classes": n_classes,
        "engine_solver": LogisticFamily().solver(M, t, X.shape[1], n_classes),
        "loop_mean_p": float(np.mean([np.nanmean(p) for p in lp])),
        "loop_qualified": float(np.mean([q(p).sum() for p in lp])),
        "loop_qualified_range": [int(min(q(p).sum() for p in lp)), int(max(q(p).sum() for p in lp))],
        "loop_floor_jaccard": float(np.mean(floor)),
        "loop_floor_jaccard_range": [min(floor), max(floor)],
        "loop_floor_corr": float(np.mean([corr(lp[i], lp[j]) for i, j in pairs])),
        "loop_fits_at_max_iter": float(np.mean([c for _, _, c in loops])),
        "loop_seconds": float(np.mean([s for _, s, _ in loops])),
        "engine_mean_p": float(np.mean([np.nanmean(p) for p in ep])),
        "engine_qualified": float(np.mean([q(p).sum() for p in ep])),
        "engine_jaccard": float(np.mean([jaccard(q(a), q(b)) for a in ep for b in lp])),
        "engine_corr": float(np.mean([corr(a, b) for a in ep for b in lp])),
        "engine_seconds": float(np.mean([s for _, s in engines])),
        "ridge_mean_p": float(np.nanmean(ridge)),
        "ridge_qualified": int(q(ridge).sum()),
        "ridge_jaccard": float(np.mean([jaccard(q(ridge), q(b)) for b in lp])),
        "ridge_seconds": ridge_s,
    }
    rec["pass_mean_p"] = rec["engine_mean_p"] >= rec["loop_mean_p"] - 0.01
    rec["pass_qualified"] = rec["engine_qualified"] >= 0.95 * rec["loop_qualified"]
    rec["pass_jaccard"] = rec["engine_jaccard"] >= rec["loop_floor_jaccard"] - 0.02
    if converged == "always" or (converged == "auto" and rec["loop_fits_at_max_iter"] > 0.5):
        with threadpool_limits(1):
            conv, conv_s, conv_cap = loop_round(X, y, t, 0, max_iter=1000)
        rec["converged_loop_seconds"] = conv_s
        rec["converged_loop_fits_at_max_iter"] = conv_cap
        rec["converged_loop_mean_p"] = float(np.nanmean(conv))
        rec["converged_loop_qualified"] = int(q(conv).sum())
        rec["engine_jaccard_vs_converged_loop"] = float(np.mean([jaccard(q(a), q(conv)) for a in ep]))
        rec["loop_jaccard_vs_converged_loop"] = float(np.mean([jaccard(q(b), q(conv)) for b in lp]))
    rec["load_average_before"] = [round(v, 2) for v in load_before]
    rec["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
    return rec


def table_row(r: dict) -> str:
    ok = lambda flag: "✓" if flag else "✗"  # noqa: E731
    conv = ""
    if "engine_jaccard_vs_converged_loop" in r:
        conv = f"{r['engine_jaccard_vs_converged_loop']:.3f} (loop: {r['loop_jaccard_vs_converged_loop']:.3f})"
    return (
        f"| {r['row']} | {r['t']:,} ({r['fraction']:.0%}) | {r['engine_solver']} "
        f"| {r['loop_mean_p']:.3f} / {r['engine_mean_p']:.3f} {ok(r['pass_mean_p'])} "
        f"| {r['loop_qualified']:,.0f} / {r['engine_qualified']:,.0f} {ok(r['pass_qualified'])} "
        f"| {r['loop_floor_jaccard']:.3f} / {r['engine_jaccard']:.3f} {ok(r['pass_jaccard'])} "
        f"| {r['loop_floor_corr']:.3f} / {r['engine_corr']:.3f} "
        f"| {r['loop_seconds']:.1f} / {r['engine_seconds']:.2f} "
        f"| {r['ridge_mean_p']:.3f} / {r['ridge_qualified']:,} / {r['ridge_jaccard']:.3f} "
        f"| {r['loop_fits_at_max_iter']:.0%} | {conv} |"
    )


HEADER = (
    "| data | t | engine fits | mean p: loop / engine | rows at p ≥ τ: loop / engine | qualified-set "
    "Jaccard: loop floor / engine vs loop | per-row corr: loop floor / engine | s per round: loop / engine "
    "| old ridge default: mean p / rows / Jaccard | loop fits at max_iter | engine (loop) Jaccard vs "
    "converged loop |\n" + "| --- " * 11 + "|"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma list among {', '.join(ROWS)}")
    ap.add_argument("--fractions", default="0.1,0.3", help="t as fractions of the rows")
    ap.add_argument(
        "--converged",
        default="auto",
        choices=["auto", "always", "never"],
        help="also run the loop with max_iter=1000 (auto: where most fits stop at max_iter)",
    )
    ap.add_argument("--json-out", default=None)
    ap.add_argument(
        "--tiny",
        action="store_true",
        help=f"m = {TINY_M}, rows {TINY_ROWS} (toy sizes), t = 30 %%, converged loop always: checks that it runs",
    )
    args = ap.parse_args()
    if args.tiny:
        global M
        M = TINY_M
        if args.rows == ",".join(ROWS):
            args.rows = TINY_ROWS
        args.fractions, args.converged = "0.3", "always"
    warnings.simplefilter("ignore")
    print(f"machine: {os.cpu_count()} cores; numpy {np.__version__}; load average {os.getloadavg()}", flush=True)
    records = []
    for name in args.rows.split(","):
        data = load(name, args.tiny)
        if data is None:
            print(f"note: skipping {name}: the shared data folder {SHARED} is absent", flush=True)
            continue
        X, y = data
        for frac in (float(f) for f in args.fractions.split(",")):
            rec = measure(name, X, y, frac, args.converged)
            records.append(rec)
            line = json.dumps(rec)
            print(line, flush=True)
            if args.json_out:
                with open(args.json_out, "a") as fh:
                    fh.write(line + "\n")
    print("\n" + HEADER)
    for rec in records:
        print(table_row(rec))
    print(f"\nload average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
