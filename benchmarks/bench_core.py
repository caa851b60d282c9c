"""Benchmark the AFLite engine against the straightforward reference loop (and at the SNLI scale).

Usage::

    python benchmarks/bench_core.py                 # (a) and (b) on both data variants, then (c)
    python benchmarks/bench_core.py --settings b --data anisotropic
    python benchmarks/bench_core.py --settings c    # the SNLI-shaped run (needs ~6 GB RAM, ~3 GB disk)
    python benchmarks/bench_core.py --tiny          # every code path on toy sizes in seconds (tests/test_benchmarks.py)
    python benchmarks/bench_core.py --settings b --data isotropic --reference-seeds 1 --reference-max-iter 100 \
        --repeats 3                                 # min / median / max over 3 runs, with the load of each

Prints one block per setting and a JSON line per measurement (``--json-out FILE`` appends them). Figures go
into benchmarks/README.md by hand; nothing here asserts a time. ``--repeats N`` runs every setting N times and
ends with a summary: min / median / max of the engine's and the reference's seconds and of the speed-up, with
the 1-minute load average at the start and the end of each run (issue 27: no speed figure without its spread).

Settings (Le Bras et al. 2020 symbols: m partitions, t training rows, k slice, τ threshold, n target):

* (a) N=5,000, d=64, 2 classes, m=64, t=1,500, k=250, τ=0.75, n=2,000
* (b) N=50,000, d=256, 3 classes, m=64, t=20,000, k=2,500, τ=0.75, n=30,000
* (c) N=500,000, d=1,024 float32, 3 classes, m=64, t=40,000, k=10,000, τ=0.75, n=92,000 (engine only)

Data: :func:`aflite_core.data.planted_bias.make_planted_bias` - Gaussian classes a linear model separates only
moderately plus 25 % of rows shifted along a class-specific direction (almost perfectly predictable).
Two variants: ``isotropic`` noise (logistic regression converges in ~8 L-BFGS iterations: the reference's
best case) and ``anisotropic`` (randomly rotated, spectrum decaying as i^-0.5, offset 1, like real
embeddings: L-BFGS runs to its default 100 iterations).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

SETTINGS = {
    "a": dict(n=5_000, d=64, classes=2, m=64, t=1_500, k=250, tau=0.75, target=2_000),
    "b": dict(n=50_000, d=256, classes=3, m=64, t=20_000, k=2_500, tau=0.75, target=30_000),
    "c": dict(n=500_000, d=1_024, classes=3, m=64, t=40_000, k=10_000, tau=0.75, target=92_000),
}
#: ``--tiny``: the same settings on toy sizes, so every code path runs in seconds (tests/test_benchmarks.py runs
#: each benchmark this way so that none rots unseen); the figures mean nothing
TINY_SETTINGS = {
    "a": dict(n=800, d=16, classes=2, m=8, t=240, k=50, tau=0.75, target=400),
    "b": dict(n=1_200, d=24, classes=3, m=8, t=480, k=60, tau=0.75, target=700),
    "c": dict(n=4_000, d=32, classes=3, m=8, t=800, k=400, tau=0.75, target=1_600),
}
DATA = {"isotropic": 0.0, "anisotropic": 0.5}


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def emit(record: dict, json_out: str | None) -> None:
    line = json.dumps(record)
    print(line, flush=True)
    if json_out:
        with open(json_out, "a") as fh:
            fh.write(line + "\n")


def bench_vs_reference(
    name: str,
    data: str,
    ref_seeds: int,
    json_out: str | None,
    threads: int,
    max_iter: int = 1000,
    settings: dict | None = None,
) -> None:
    from reference import reference_aflite
    from threadpoolctl import threadpool_limits

    from aflite_core import aflite
    from aflite_core.data.planted_bias import make_planted_bias
    from aflite_core.engine.logistic import _MEMO

    s = (settings or SETTINGS)[name]
    X, y, biased = make_planted_bias(s["n"], s["d"], n_classes=s["classes"], spectrum_decay=DATA[data], random_state=0)
    kw = dict(target_size=s["target"], n_partitions=s["m"], train_size=s["t"], slice_size=s["k"], tau=s["tau"])
    load_start = round(os.getloadavg()[0], 2)
    print(f"   load average {os.getloadavg()}", flush=True)
    print(
        f"\n== ({name}) {data}: N={s['n']:,} d={s['d']} C={s['classes']} m={s['m']} t={s['t']:,} "
        f"k={s['k']:,} tau={s['tau']} target={s['target']:,}",
        flush=True,
    )
    engine, engine_cpu, ref_cpu = {}, {}, {}  # CPU seconds of this process: what load does not inflate much
    w = min(2000, s["n"])  # warm-up rows (2,000 at the real settings)
    for seed in (0, 1):
        aflite(X[:w], y[:w], target_size=w // 2, train_size=w * 3 // 20, slice_size=w // 20, random_state=seed)
        _MEMO.clear()  # no fit memoised by an earlier run in this process (--repeats): every run fits from scratch
        t0, c0 = time.perf_counter(), time.process_time()
        res = aflite(X, y, **kw, random_state=seed, n_threads=threads)
        engine[seed] = (res, time.perf_counter() - t0)
        engine_cpu[seed] = time.process_time() - c0
    ref = {}
    with threadpool_limits(threads):
        for seed in range(ref_seeds):
            c0 = time.process_time()
            kept, rounds, secs, removed_round, qualified, qsets = reference_aflite(
                X, y, **kw, random_state=seed, max_iter=max_iter
            )
            ref_cpu[seed] = time.process_time() - c0
            ref[seed] = (kept, rounds, secs, removed_round, qualified, qsets)
            print(f"   reference seed {seed}: {secs:8.1f} s, {rounds} rounds, kept {kept.sum():,}", flush=True)
    fast, fast_s = engine[0]
    ref_kept, ref_rounds, ref_s, ref_removed_round, ref_qualified, ref_qsets = ref[0]
    n_rows = len(y)
    common = min(ref_rounds, fast.n_rounds)  # rounds both ran: compare what was removed through them
    through = lambda rr: (rr > 0) & (rr <= common)  # noqa: E731
    rec = {
        "setting": name,
        "data": data,
        "threads": threads,
        "reference_max_iter": max_iter,
        "engine_seconds": round(fast_s, 3),
        "engine_rounds": fast.n_rounds,
        "engine_kept": fast.n_kept,
        "engine_stop": fast.stop_reason,
        "reference_seconds": round(ref_s, 2),
        "reference_rounds": ref_rounds,
        "reference_kept": int(ref_kept.sum()),
        "speedup": round(ref_s / fast_s, 1),
        "engine_cpu_seconds": round(engine_cpu[0], 3),
        "reference_cpu_seconds": round(ref_cpu[0], 2),
        "speedup_cpu": round(ref_cpu[0] / max(engine_cpu[0], 1e-9), 1),
        "jaccard_removed_engine_vs_ref": round(jaccard(~fast.kept, ~ref_kept), 3),
        "jaccard_kept_engine_vs_ref": round(jaccard(fast.kept, ref_kept), 3),
        "jaccard_removed_engine_seed0_vs_seed1": round(jaccard(~fast.kept, ~engine[1][0].kept), 3),
        "common_rounds": common,
        "jaccard_removed_through_common_rounds": round(
            jaccard(through(fast.removed_round), through(ref_removed_round)), 3
        ),
        "qualified_per_round_engine": fast.history["n_qualified"].tolist(),
        "qualified_per_round_reference": ref_qualified,
        # the agreement that survives ties: with many rows tied at p = 1 and a random tie-break, the slices
        # removed can be nearly disjoint between two correct implementations while the qualified sets agree
        "jaccard_qualified_per_round_engine_vs_ref": _per_round_jaccard(
            _engine_qualified_sets(fast, s["tau"]), ref_qsets, n_rows
        ),
        "jaccard_removed_per_round_engine_vs_ref": _per_round_jaccard(
            _removed_sets(fast.removed_round, fast.n_rounds), _removed_sets(ref_removed_round, ref_rounds), n_rows
        ),
        "planted_removed_engine": round(float((~fast.kept[biased]).mean()), 3),
        "planted_removed_reference": round(float((~ref_kept[biased]).mean()), 3),
        "partition_mode": fast.params["partition_mode"],
        "rows_per_block": fast.params["rows_per_block"],
        "engine_family": fast.params["model"]["class"],
        "engine_solver": _solver(fast),
        "load_average_at_start": load_start,
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
    }
    if ref_seeds > 1:
        other = ref[1][0]
        rec["jaccard_removed_ref_seed0_vs_seed1 (floor)"] = round(jaccard(~ref_kept, ~other), 3)
        rec["jaccard_kept_ref_seed0_vs_seed1"] = round(jaccard(ref_kept, other), 3)
        rec["jaccard_removed_engine_vs_ref_seed1"] = round(jaccard(~fast.kept, ~other), 3)
        rec["jaccard_qualified_per_round_ref_seed0_vs_seed1 (floor)"] = _per_round_jaccard(ref_qsets, ref[1][5], n_rows)
        rec["jaccard_qualified_per_round_engine_seed0_vs_seed1"] = _per_round_jaccard(
            _engine_qualified_sets(fast, s["tau"]), _engine_qualified_sets(engine[1][0], s["tau"]), n_rows
        )
    print(
        f"   qualified-set Jaccard per round, engine vs reference: "
        f"{rec['jaccard_qualified_per_round_engine_vs_ref']}; removed slices: "
        f"{rec['jaccard_removed_per_round_engine_vs_ref']}",
        flush=True,
    )
    print(
        f"   engine: {fast_s:.2f} s ({fast.n_rounds} rounds) -> {ref_s / fast_s:.0f}x faster; removed-set "
        f"Jaccard vs reference {rec['jaccard_removed_engine_vs_ref']:.3f}"
        + (
            f" (reference vs reference, other seed: {rec['jaccard_removed_ref_seed0_vs_seed1 (floor)']:.3f})"
            if ref_seeds > 1
            else ""
        ),
        flush=True,
    )
    emit(rec, json_out)
    return rec


def _solver(res) -> str:
    """What the default family fitted in a run ("logistic" or its "ridge" fallback), from the recorded spec."""
    from aflite_core.engine.registry import family_from_spec

    fam, p = family_from_spec(res.params["model"]), res.params
    solver = getattr(fam, "solver", None)
    return "ridge" if solver is None else solver(p["n_partitions"], p["train_size"], p["n_features"], p["n_classes"])


def _engine_qualified_sets(res, tau: float) -> list[np.ndarray]:
    """Rows with p >= τ in each round of an engine result (``scores`` is NaN where a row was not scored)."""
    return [np.flatnonzero(np.nan_to_num(row, nan=-1.0) >= tau) for row in res.scores]


def _removed_sets(removed_round: np.ndarray, rounds: int) -> list[np.ndarray]:
    return [np.flatnonzero(removed_round == r) for r in range(1, rounds + 1)]


def _per_round_jaccard(a: list, b: list, n_rows: int) -> list[float]:
    """Jaccard of two lists of row sets, round by round, through the rounds both made."""
    out = []
    for rows_a, rows_b in zip(a, b):
        ma, mb = np.zeros(n_rows, bool), np.zeros(n_rows, bool)
        ma[rows_a], mb[rows_b] = True, True
        out.append(round(jaccard(ma, mb), 3))
    return out


#: class-centre distance of the (c) data: linear models start at ~85 % accuracy, so predictable rows keep
#: reaching τ and the run goes the distance (~40 rounds down to the target) instead of stopping early
CLASS_SEP = 2.0


def write_snli_shaped(path: Path, s: dict, seed: int = 0, class_sep: float = CLASS_SEP) -> np.ndarray:
    """Write the (c) features chunk by chunk to a .npy (never 2 copies in memory); return labels."""
    rng = np.random.default_rng(seed)
    n, d, C = s["n"], s["d"], s["classes"]
    y = rng.permutation(np.arange(n) % C)
    centres = rng.normal(size=(C, d))
    centres *= class_sep / np.linalg.norm(centres, axis=1, keepdims=True)
    directions = rng.normal(size=(C, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    biased = np.zeros(n, dtype=bool)
    biased[rng.permutation(n)[: n // 4]] = True
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    mix = (q * np.arange(1, d + 1) ** -0.5).astype(np.float32)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    for start in range(0, n, 50_000):
        sl = slice(start, min(start + 50_000, n))
        Z = rng.normal(size=(sl.stop - start, d)).astype(np.float32) + centres[y[sl]].astype(np.float32)
        Z[biased[sl]] += 6.0 * directions[y[sl][biased[sl]]].astype(np.float32)
        out[sl] = Z @ mix + 1.0
    out.flush()
    del out
    np.save(path.with_suffix(".labels.npy"), y)
    np.save(path.with_suffix(".biased.npy"), biased)
    return y


CHILD = r"""
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {root!r})
from aflite_core import aflite
X = np.load({path!r})            # the feature matrix in RAM, as a user would have it
y = np.load({labels!r})
biased = np.load({biased!r})
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0, c0 = time.perf_counter(), time.process_time()
res = aflite(X, y, target_size={target}, n_partitions={m}, train_size={t}, slice_size={k}, tau={tau},
             random_state=0, n_threads={threads},
             callback=lambda p: print(f"   round {{p.round}}: size {{p.size:,}} ({{p.seconds:.0f}} s)", file=sys.stderr,
                                      flush=True))
secs, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(dict(seconds=secs, cpu_seconds=cpu, rounds=res.n_rounds, kept=res.n_kept, stop=res.stop_reason,
                      peak_rss=peak, rss_after_load=base, x_bytes=X.nbytes,
                      planted_removed=float((~res.kept[biased]).mean()),
                      mode=res.params["partition_mode"], rows_per_block=res.params["rows_per_block"],
                      family=res.params["model"]["class"])))
"""


def bench_snli_shaped(json_out: str | None, threads: int, workdir: str | None, tiny: bool = False) -> dict:
    if tiny and workdir is None:  # nothing worth keeping: written and removed within the run
        with tempfile.TemporaryDirectory(prefix="aflite-bench-tiny-") as tmp:
            return bench_snli_shaped(json_out, threads, tmp, tiny)
    s = (TINY_SETTINGS if tiny else SETTINGS)["c"]
    print(
        f"\n== (c) SNLI-shaped: N={s['n']:,} d={s['d']} float32 C=3 m={s['m']} t={s['t']:,} k={s['k']:,} "
        f"target={s['target']:,}",
        flush=True,
    )
    tmp = Path(workdir or tempfile.mkdtemp(prefix="aflite-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    # the tiny file has its own name: a workdir shared with the real run keeps its 2 GB file
    path = tmp / f"snli_shaped_sep{CLASS_SEP:g}{'_tiny' if tiny else ''}.npy"
    if not path.exists():
        t0 = time.perf_counter()
        write_snli_shaped(path, s, class_sep=CLASS_SEP)
        print(f"   wrote {path} in {time.perf_counter() - t0:.0f} s", flush=True)
    code = CHILD.format(
        root=str(HERE.parent),
        path=str(path),
        labels=str(path.with_suffix(".labels.npy")),
        biased=str(path.with_suffix(".biased.npy")),
        target=s["target"],
        m=s["m"],
        t=s["t"],
        k=s["k"],
        tau=s["tau"],
        threads=threads,
    )
    load_start = round(os.getloadavg()[0], 2)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"(c) failed: the benchmark child exited with status {proc.returncode}")
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    rec.update(
        setting="c",
        threads=threads,
        peak_over_x=round(rec["peak_rss"] / rec["x_bytes"], 2),
        load_average_at_start=load_start,
        load_average_at_end=[round(v, 2) for v in os.getloadavg()],
    )
    print(
        f"   engine: {rec['seconds'] / 60:.1f} min ({rec['cpu_seconds']:.0f} CPU-s), {rec['rounds']} rounds, "
        f"kept {rec['kept']:,} ({rec['stop']}); peak RSS {rec['peak_rss'] / 2**30:.2f} GiB = {rec['peak_over_x']}x the "
        f"{rec['x_bytes'] / 2**30:.2f} GiB feature matrix",
        flush=True,
    )
    emit(rec, json_out)
    return rec


def spread(records: list[dict]) -> list[str]:
    """Markdown rows: min / median / max over the repeats of each setting, with the load of every run."""
    groups: dict[tuple, list[dict]] = {}
    for rec in records:
        groups.setdefault((rec["setting"], rec.get("data", "")), []).append(rec)

    def mmm(values: list[float], fmt: str) -> str:
        return " / ".join(format(v, fmt) for v in (min(values), float(np.median(values)), max(values)))

    lines = [
        "| setting | data | runs | engine s (min / median / max) | reference s | speed-up (wall) | engine CPU-s | "
        "reference CPU-s | speed-up (CPU) | load at start → end |",
        "| --- | --- | ---: | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (name, data), recs in groups.items():
        loads = ", ".join(f"{r['load_average_at_start']:.1f} → {r['load_average_at_end'][0]:.1f}" for r in recs)
        if name == "c":
            engine, ref, speed = mmm([r["seconds"] for r in recs], ".1f"), "-", "-"
            cpu = "- | - | -"
        else:
            engine = mmm([r["engine_seconds"] for r in recs], ".2f")
            ref = mmm([r["reference_seconds"] for r in recs], ".1f")
            speed = mmm([r["speedup"] for r in recs], ".1f") + " ×"
            cpu = " | ".join(
                (
                    mmm([r["engine_cpu_seconds"] for r in recs], ".2f"),
                    mmm([r["reference_cpu_seconds"] for r in recs], ".1f"),
                    mmm([r["speedup_cpu"] for r in recs], ".1f") + " ×",
                )
            )
        lines.append(f"| ({name}) | {data or '-'} | {len(recs)} | {engine} | {ref} | {speed} | {cpu} | {loads} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", default="a,b,c", help="comma list among a,b,c")
    ap.add_argument("--data", default="anisotropic,isotropic", help="comma list among anisotropic,isotropic")
    ap.add_argument("--reference-seeds", type=int, default=2, help="reference runs (2 gives the noise floor)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads for engine and reference")
    ap.add_argument(
        "--reference-max-iter",
        type=int,
        default=None,
        help="L-BFGS cap of the reference's LogisticRegression (default 1000: converge; --tiny: sklearn's 100)",
    )
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--repeats", type=int, default=1, help="run every setting N times; print min / median / max")
    ap.add_argument("--workdir", default=None, help="where (c) writes its 2 GB feature file (reused if present)")
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="toy sizes (TINY_SETTINGS), reference at max_iter 100: checks that the script runs, in seconds",
    )
    args = ap.parse_args()
    settings = TINY_SETTINGS if args.tiny else SETTINGS
    if args.reference_max_iter is None:
        args.reference_max_iter = 100 if args.tiny else 1000
    print(
        f"machine: {os.cpu_count()} cores; numpy {np.__version__}; "
        f"maxrss unit check {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}",
        flush=True,
    )
    records = []
    for repeat in range(max(args.repeats, 1)):
        if args.repeats > 1:
            print(f"\n#### run {repeat + 1} of {args.repeats}", flush=True)
        for name in args.settings.split(","):
            if name in ("a", "b"):
                for data in args.data.split(","):
                    records.append(
                        bench_vs_reference(
                            name,
                            data,
                            args.reference_seeds,
                            args.json_out,
                            args.threads,
                            args.reference_max_iter,
                            settings,
                        )
                    )
            elif name == "c":
                records.append(bench_snli_shaped(args.json_out, args.threads, args.workdir, args.tiny))
    if args.repeats > 1:
        print(f"\nspread over {args.repeats} runs of each setting; {os.cpu_count()} cores, numpy {np.__version__}")
        print("\n".join(spread(records)))


if __name__ == "__main__":
    main()
