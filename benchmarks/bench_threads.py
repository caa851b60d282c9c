"""Time the engine of another checkout against this one, back to back, at the *mid shape* (or setting c).

Usage::

    git archive 4293819 aflite_core | tar -x -C /tmp/base      # the engine to compare with
    python benchmarks/bench_threads.py --base /tmp/base --threads 1,2 [--shape mid|c] [--repeat 1]
    python benchmarks/bench_threads.py --tiny      # a toy shape, this checkout against itself (tests)

Each run is a fresh subprocess (old and new alternate, so both see the same load); each prints its wall time,
its CPU seconds (all threads), peak RSS, the 1-minute load average before and after, and the removed-set
Jaccard against the first old run. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_hardware import SHAPES as _HARDWARE  # noqa: E402  (the mid shape and setting (c), defined once)

SHAPES = {
    "mid": _HARDWARE["mid"],
    "c": _HARDWARE["c"],
    # --tiny: every code path in seconds (the figures mean nothing)
    "tiny": dict(n=3_000, d=16, classes=3, m=8, t=600, k=150, tau=0.75, target=1_500),
}

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from aflite_core import aflite
X = np.load({x!r}); y = np.load({y!r})
load0 = os.getloadavg()[0]
t0, c0 = time.perf_counter(), time.process_time()
res = aflite(X, y, target_size={target}, n_partitions={m}, train_size={t}, slice_size={k}, tau={tau},
             random_state=0, n_threads={threads})
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
np.save({out!r}, res.removed_round)
print(json.dumps(dict(wall=wall, cpu=cpu, rounds=res.n_rounds, kept=res.n_kept, load_before=load0,
                      load_after=os.getloadavg()[0], peak_over_x=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                      * 1024 / X.nbytes)))
"""


def data(shape: str, workdir: Path) -> tuple[Path, Path]:
    """The shape's features and labels as .npy files (written once)."""
    x, y = workdir / f"{shape}_X.npy", workdir / f"{shape}_y.npy"
    if not x.exists():
        # bench_core's (c) generator at either shape: linear models start at ~85 % accuracy, so the run goes
        # the distance (41 rounds down to the target); make_planted_bias data stop after ~18 rounds
        sys.path.insert(0, str(HERE))
        from bench_core import write_snli_shaped

        write_snli_shaped(x, SHAPES[shape])
        os.replace(x.with_suffix(".labels.npy"), y)
    return x, y


def run(root: str, shape: str, threads: int, x: Path, y: Path, out: Path) -> dict:
    s = SHAPES[shape]
    code = CHILD.format(root=root, x=str(x), y=str(y), out=str(out), threads=threads, **{k: s[k] for k in s})
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=None, help="folder holding the old aflite_core (default: this checkout)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--shape", default="mid", choices=sorted(SHAPES))
    ap.add_argument("--tiny", action="store_true", help="the toy shape, old = new = this checkout unless --base")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default="old,new")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "aflite-bench-threads"))
    args = ap.parse_args()
    if args.tiny:
        args.shape = "tiny"
        args.workdir = tempfile.mkdtemp(prefix="aflite-bench-threads-tiny-")
        atexit.register(shutil.rmtree, args.workdir, ignore_errors=True)
    elif args.base is None:
        ap.error("--base is required (the folder holding the engine to compare with), except with --tiny")
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    x, y = data(args.shape, work)
    roots = {"old": args.base or str(HERE.parent), "new": str(HERE.parent)}
    ref = None
    records: list[dict] = []
    for rep in range(args.repeat):
        for threads in map(int, args.threads.split(",")):
            for name in args.only.split(","):
                out = work / f"removed_{name}_{threads}.npy"
                rec = run(roots[name], args.shape, threads, x, y, out)
                removed = np.load(out) >= 0  # removed_round: the round a row left in (from 0), -1 if kept
                ref = removed if ref is None else ref
                union = (removed | ref).sum()
                rec.update(
                    engine=name,
                    threads=threads,
                    rep=rep,
                    shape=args.shape,
                    jaccard_vs_first=round(float((removed & ref).sum() / max(union, 1)), 4),
                )
                records.append(rec)
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in rec.items()}), flush=True)
    for line in summary(records):
        print(line)


def summary(records: list[dict]) -> list[str]:
    """Per engine and thread count: min and median CPU and wall seconds, the load seen, and new / old ratios."""
    lines, stats = [], {}
    for name, threads in sorted({(r["engine"], r["threads"]) for r in records}):
        runs = [r for r in records if r["engine"] == name and r["threads"] == threads]
        st = {
            key: (float(np.min([r[key] for r in runs])), float(np.median([r[key] for r in runs])))
            for key in ("cpu", "wall")
        }
        loads = [x for r in runs for x in (r["load_before"], r["load_after"])]
        stats[name, threads] = st
        lines.append(
            f"{name}, {threads} thread(s), {len(runs)} run(s): CPU s min {st['cpu'][0]:.1f} median {st['cpu'][1]:.1f}; "
            f"wall s min {st['wall'][0]:.1f} median {st['wall'][1]:.1f}; 1-min load {min(loads):.1f}-{max(loads):.1f}"
        )
    for (name, threads), st in stats.items():
        old = stats.get(("old", threads))
        if name == "new" and old is not None:
            lines.append(
                f"new / old at {threads} thread(s): CPU {st['cpu'][0] / old['cpu'][0]:.2f} (min) "
                f"{st['cpu'][1] / old['cpu'][1]:.2f} (median); wall {st['wall'][0] / old['wall'][0]:.2f} (min) "
                f"{st['wall'][1] / old['wall'][1]:.2f} (median)"
            )
    one = stats.get(("new", 1))
    for (name, threads), st in stats.items():
        if name == "new" and threads > 1 and one is not None:
            lines.append(
                f"new, {threads} threads against 1: {one['wall'][1] / st['wall'][1]:.2f}x faster (median wall)"
            )
    return lines


if __name__ == "__main__":
    main()
