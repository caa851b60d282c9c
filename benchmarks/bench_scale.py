"""Scale-out benchmark: the SNLI-shaped run in-process and on a 2-worker Dask LocalCluster.

Usage::

    python benchmarks/bench_scale.py --workdir /tmp/aflite-bench      # writes a 2 GB feature file once

Setting (the paper's SNLI shape): N=500,000 × d=1,024 float32, 3 classes, m=64, t=40,000, k=10,000, τ=0.75,
target 92,000; features memory-mapped from a .npy (the workers read the same file). Prints wall time, rounds,
peak memory (the process, plus the workers for Dask: RSS and unique memory, sampled), bytes shipped per round
(arrays sent to / received from the workers), and a projection of an ImageNet-shaped run (1.28M × 2,560) on N
workers from the measured throughput. Nothing here asserts; the figures go into benchmarks/README.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

SNLI = dict(n=500_000, d=1_024, classes=3, m=64, t=40_000, k=10_000, tau=0.75, target=92_000)

CHILD = r"""
import json, os, sys, threading, time
import numpy as np, psutil
sys.path.insert(0, {root!r})
from aflite_core import aflite
X = np.load({path!r}, mmap_mode="r")
y = np.load({labels!r})
backend, close, workers = None, lambda: None, lambda: []
if {dask!r}:
    from aflite_core.distributed import DaskBackend, local_cluster
    cluster, client = local_cluster({n_workers})
    backend = DaskBackend(client)
    def close():
        client.close(); cluster.close()
    def workers():
        return [psutil.Process(w.process.pid) for w in cluster.workers.values() if w.process and w.process.pid]
peak = {{"rss": 0, "uss": 0, "self_rss": 0, "workers_rss": 0, "workers_uss": 0}}
stop = threading.Event()
def sample():
    me = psutil.Process()
    while not stop.is_set():
        try:
            procs = [me] + workers()
            rss = [p.memory_info().rss for p in procs]
            uss = [p.memory_full_info().uss for p in procs]
            peak["rss"] = max(peak["rss"], sum(rss)); peak["uss"] = max(peak["uss"], sum(uss))
            peak["self_rss"] = max(peak["self_rss"], rss[0])
            peak["workers_rss"] = max(peak["workers_rss"], sum(rss[1:]))
            peak["workers_uss"] = max(peak["workers_uss"], sum(uss[1:]))
        except Exception:
            pass
        stop.wait(1.0)
th = threading.Thread(target=sample, daemon=True); th.start()
t0 = time.perf_counter()
try:
    res = aflite(X, y, target_size={target}, n_partitions={m}, train_size={t}, slice_size={k}, tau={tau},
                 random_state=0, n_threads=1, backend=backend,
                 callback=lambda p: print(f"   round {{p.round}}: size {{p.size:,}} ({{p.seconds:.0f}} s)",
                                          file=sys.stderr, flush=True))
finally:
    secs = time.perf_counter() - t0
    stop.set(); th.join()
stats = getattr(backend, "stats", [])
close()
print(json.dumps(dict(seconds=secs, rounds=res.n_rounds, kept=res.n_kept, stop=res.stop_reason, peak=peak,
                      x_bytes=int(X.nbytes), stats=stats,
                      setup_bytes=getattr(backend, "setup_bytes", 0),
                      round_seconds=res.history["seconds"].tolist(),
                      sizes=res.history["size_before"].tolist(),
                      kept_mask_sum=int(res.kept.sum()))))
"""


def run(path: Path, dask: bool, n_workers: int) -> dict:
    code = CHILD.format(
        root=str(HERE.parent),
        path=str(path),
        labels=str(path.with_suffix(".labels.npy")),
        dask=dask,
        n_workers=n_workers,
        target=SNLI["target"],
        m=SNLI["m"],
        t=SNLI["t"],
        k=SNLI["k"],
        tau=SNLI["tau"],
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"),
    )
    tail = "\n".join(line for line in proc.stderr.splitlines() if line.strip().startswith("round"))
    print(tail, flush=True)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], flush=True)
        raise SystemExit("benchmark child failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def projection(dask_rec: dict) -> str:
    """Project an ImageNet-shaped run (1.28M × 2,560, 1,000 classes) from the measured per-round throughput.

    Work per round that the workers share: predicting every held-out row with the models that held it out
    (2·|S|·d·m·(C-1) flops) plus combining block Grams per partition (2·m·B·D², D = d+1+C). Work every worker
    repeats whatever N is (it keeps its own block-Gram stack): building the stack (2·n·D²) and subtracting
    each round's removed rows (2·k·D²). The measured SNLI-shaped run gives the engine's effective flop rate per
    worker; the projection divides the shared work by N workers, adds the repeated work at the same rate, and
    the measured per-round scheduling overhead. Memory per worker: the stack, B·D² float32.
    """
    s = SNLI
    sizes = dask_rec["sizes"]
    flops = 0.0
    D = s["d"] + 1 + s["classes"]
    blocks = 32 * s["n"] / s["t"]
    for size in sizes:
        held = max(size - s["t"], 0)
        flops += 2 * held * s["d"] * s["m"] * (s["classes"] - 1)  # scoring (only held-out pairs)
        flops += 2 * s["m"] * blocks * D * D  # combining block Grams
    workers = 2
    repeated = 2 * s["n"] * D * D + len(sizes) * 2 * s["k"] * D * D  # per worker: stack build + downdates
    secs = dask_rec["seconds"]
    rate = (flops / workers + repeated) / secs  # effective flop/s per worker on this machine
    overhead = 0.5  # seconds per round for scheduling and gathers (upper bound seen here)
    img = dict(n=1_281_167, d=2_560, classes=1_000, m=64, t=256_000, k=64_000, target=512_000)
    rounds = (img["n"] - img["target"]) // img["k"]
    D = img["d"] + 1 + img["classes"]
    blocks = 32 * img["n"] / img["t"]
    work = 0.0
    size = img["n"]
    for _ in range(rounds):
        work += 2 * max(size - img["t"], 0) * img["d"] * img["m"] * (img["classes"] - 1)
        work += 2 * img["m"] * blocks * D * D
        size -= img["k"]
    fixed = 2 * img["n"] * D * D + rounds * 2 * img["k"] * D * D
    lines = [
        f"effective rate per worker (measured): {rate / 1e9:.1f} GFLOP/s",
        f"ImageNet-shaped run: {rounds} rounds, {work / 1e15:.1f} PFLOP shared by the workers, plus "
        f"{fixed / 1e12:.0f} TFLOP every worker repeats (~{fixed / rate / 3600:.1f} h at that rate); "
        f"block-Gram stack {blocks * D * D * 4 / 2**30:.1f} GiB per worker",
    ]
    for n_workers in (2, 8, 32, 128):
        t = work / (rate * n_workers) + fixed / rate + rounds * overhead
        lines.append(f"  on {n_workers:>3} workers: ~{t / 3600:.1f} h")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=None, help="where the 2 GB feature file lives (reused if present)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    from bench_core import CLASS_SEP, SETTINGS, write_snli_shaped

    work = Path(args.workdir or tempfile.mkdtemp(prefix="aflite-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"snli_shaped_sep{CLASS_SEP:g}.npy"
    if not path.exists():
        t0 = time.perf_counter()
        write_snli_shaped(path, SETTINGS["c"], class_sep=CLASS_SEP)
        print(f"wrote {path} in {time.perf_counter() - t0:.0f} s", flush=True)
    records = {}
    for label, dask in (("local", False), (f"dask x{args.workers}", True)):
        if label == "local" and args.skip_local:
            continue
        print(f"\n== SNLI-shaped, {label} backend (features memory-mapped)", flush=True)
        rec = run(path, dask, args.workers)
        records[label] = rec
        peak = rec["peak"]
        print(f"   {rec['seconds'] / 60:.1f} min, {rec['rounds']} rounds, kept {rec['kept']:,} ({rec['stop']})")
        print(
            f"   peak memory: process {peak['self_rss'] / 2**30:.2f} GiB RSS"
            + (
                f"; workers {peak['workers_rss'] / 2**30:.2f} GiB RSS / {peak['workers_uss'] / 2**30:.2f} GiB "
                f"unique; all {peak['uss'] / 2**30:.2f} GiB unique"
                if dask
                else ""
            )
            + f" (feature matrix {rec['x_bytes'] / 2**30:.2f} GiB, memory-mapped)"
        )
        if rec["stats"]:
            sent = [s["bytes_sent"] for s in rec["stats"]]
            recv = [s["bytes_received"] for s in rec["stats"]]
            print(
                f"   shipped per round: sent {np.mean(sent) / 2**20:.1f} MiB (max {max(sent) / 2**20:.1f}), "
                f"received {np.mean(recv) / 2**20:.1f} MiB; once per run: {rec['setup_bytes'] / 2**20:.1f} MiB "
                f"(labels; features are read from the file by each worker)"
            )
        if args.json_out:
            with open(args.json_out, "a") as fh:
                fh.write(json.dumps({"label": label, **rec}) + "\n")
    if "local" in records and len(records) == 2:
        a, b = records["local"], records[f"dask x{args.workers}"]
        same = a["kept_mask_sum"] == b["kept_mask_sum"] and a["rounds"] == b["rounds"]
        print(f"\nsame decisions on both backends (rounds and kept count): {same}")
    dask_rec = records.get(f"dask x{args.workers}")
    if dask_rec:
        print("\n" + projection(dask_rec))


if __name__ == "__main__":
    main()
