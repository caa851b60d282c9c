"""Scale-out benchmark: the SNLI-shaped run in-process and on a 2-worker Dask LocalCluster.

Usage::

    python benchmarks/bench_scale.py --workdir /tmp/aflite-bench      # writes a 2 GB feature file once
    python benchmarks/bench_scale.py --tiny                           # toy sizes: checks that it runs, in seconds
    python benchmarks/bench_scale.py --scaling --tiny                 # the scaling tables' code on toy sizes

Setting (the paper's SNLI shape): N=500,000 × d=1,024 float32, 3 classes, m=64, t=40,000, k=10,000, τ=0.75,
target 92,000; features memory-mapped from a .npy (the workers read the same file). Prints wall time, rounds,
peak memory (the process, plus the workers for Dask: RSS and unique memory, sampled), bytes shipped per round
(arrays sent to / received from the workers), and a projection of an ImageNet-shaped run (1.28M × 2,560) on N
workers from the measured throughput. Nothing here asserts; the figures go into benchmarks/README.md by hand.
The scaling settings, that projection, the emulated client and the report are in benchmarks/scale_model.py.
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

from scale_model import (  # noqa: E402  (beside this script: its settings, the projection and the report)
    LOGISTIC,
    SCALE,
    TINY_LOGISTIC,
    TINY_SCALE,
    emulate,
    logistic_unit_cost,
    per_worker,
    report,
)

SNLI = dict(n=500_000, d=1_024, classes=3, m=64, t=40_000, k=10_000, tau=0.75, target=92_000)
#: ``--tiny``: the same runs on toy sizes (every code path in seconds, for tests/test_benchmarks.py; with
#: ``--scaling``, 1 and 2 workers only); the figures mean nothing
TINY_SNLI = dict(n=4_000, d=32, classes=3, m=8, t=800, k=400, tau=0.75, target=1_600)

CHILD = r"""
import json, os, sys, threading, time
import numpy as np, psutil
sys.path.insert(0, {root!r})
from aflite_core import aflite
X = np.load({path!r}, mmap_mode="r")
y = np.load({labels!r})
backend, close, workers = None, lambda: None, lambda: []
if {dask!r}:
    from aflite_core.engine.distributed import DaskBackend, local_cluster
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


# -- issue #16: weak and strong scaling of the sharded backend on LocalClusters of 1, 2 and 4 workers --------
# (the settings SCALE / LOGISTIC, the projection and the report: scale_model.py)
SCALE_CHILD = r"""
import hashlib, json, os, resource, sys, time
import numpy as np, psutil
sys.path.insert(0, {root!r})
from aflite_core import aflite

def main():
    X = np.load({path!r}, mmap_mode="r")[: {n}]
    y = np.load({labels!r})[: {n}]
    load0 = os.getloadavg()
    rounds = {rounds}
    backend, close, pids = None, lambda: None, []
    if {n_workers}:
        from aflite_core.engine.distributed import DaskBackend, local_cluster
        cluster, client = local_cluster({n_workers})
        backend = DaskBackend(client, reduce={reduce!r}, transfer_stats=True)
        def close():
            client.close(); cluster.close()
    t0, c0 = time.perf_counter(), time.process_time()
    res = aflite(X, y, target_size=max({n} // 10, {t} + 1), n_partitions={m}, train_size={t}, slice_size={k}, tau={tau},
                 random_state=0, n_threads=1, backend=backend, callback=lambda p: p.round < rounds)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = dict(wall=wall, driver_cpu=cpu, rounds=res.n_rounds, load=[load0, os.getloadavg()],
               driver_max_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
               kept=hashlib.sha256(np.packbits(res.kept).tobytes()).hexdigest()[:16],
               history=res.history[["round", "size_before", "n_removed", "seconds"]].to_dict("list"))
    if backend is not None:
        out["stats"] = backend.stats
        final = backend.final_counters
        out["final"] = final
        out["proc_cpu"] = {{w: sum(psutil.Process(v["pid"]).cpu_times()[:2]) for w, v in final.items()}}
        out["mode"] = res.params["partition_mode"]
        close()
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


def run_scale(path: Path, n: int, t: int, n_workers: int, reduce: str = "owner") -> dict:
    s = SCALE
    code = SCALE_CHILD.format(
        root=str(HERE.parent),
        path=str(path),
        labels=str(path.with_suffix(".labels.npy")),
        n=n,
        rounds=s["rounds"],
        n_workers=n_workers,
        reduce=reduce,
        m=s["m"],
        t=t,
        k=s["k"] * n // s["n"],
        tau=s["tau"],
    )
    script = path.parent / "scale_child.py"
    script.write_text(code)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], flush=True)
        raise SystemExit("scaling child failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


class _Records(dict):
    """Records saved to ``path`` as each one arrives (a long benchmark interrupted keeps what it measured)."""

    def __init__(self, path: Path | None) -> None:
        super().__init__(json.loads(path.read_text()) if path is not None and path.exists() else {})
        self.path = path

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        if self.path is not None:
            self.path.write_text(json.dumps(dict(self)))


def scaling(work: Path, save: Path | None = None, workers: tuple[int, ...] = (1, 2, 4)) -> dict:
    """Strong scaling (200k rows on 1, 2, 4 workers) and weak scaling (50k rows per worker, the same t)."""
    from bench_core import CLASS_SEP, write_snli_shaped

    s = SCALE
    path = work / f"scale_{s['n']}x{s['d']}.npy"
    if not path.exists():
        write_snli_shaped(path, dict(n=s["n"], d=s["d"], classes=s["classes"]), class_sep=CLASS_SEP)
    records = _Records(save)
    print(f"== strong scaling: {s['n']:,} x {s['d']}, m={s['m']}, t={s['t']:,}, k={s['k']:,}, {s['rounds']} rounds")
    records["local"] = run_scale(path, s["n"], s["t"], 0)
    print(f"   local: {records['local']['wall']:.1f} s wall, {records['local']['driver_cpu']:.1f} s CPU", flush=True)
    for n_workers in workers:
        rec = emulate(path, s["n"], s["t"], n_workers, s["rounds"])
        records[f"emulated{n_workers}"] = rec
        print(f"   emulated, {n_workers} workers: {rec}", flush=True)
    for n_workers in workers:
        rec = run_scale(path, s["n"], s["t"], n_workers)
        records[f"strong{n_workers}"] = rec
        summarize(f"strong, {n_workers} workers (owner)", rec, records["local"])
    for n_workers in (w for w in workers if w > 1):
        rec = run_scale(path, s["n"], s["t"], n_workers, reduce="tree")
        records[f"strong{n_workers}_tree"] = rec
        summarize(f"strong, {n_workers} workers (tree)", rec, records["local"])
    print(f"== weak scaling: {s['n'] // 4:,} rows per worker, the same t (blocks grow with the rows)")
    for n_workers in (w for w in workers if w < max(workers)):  # 4 workers: the strong run above (200k rows)
        n = s["n"] * n_workers // 4
        records[f"weak{n_workers}"] = rec = run_scale(path, n, s["t"], n_workers)
        summarize(f"weak, {n_workers} workers, {n:,} rows", rec, None)
        records[f"weak_emulated{n_workers}"] = emulate(path, n, s["t"], n_workers, s["rounds"])
    records["logistic"] = logistic_unit_cost(**LOGISTIC)
    return records


def summarize(label: str, rec: dict, local: dict | None) -> None:
    pw = per_worker(rec)
    same = "" if local is None else f", same result as local: {rec['kept'] == local['kept']}"
    print(f"   {label}: {rec['wall']:.1f} s wall, {rec['rounds']} rounds, load {rec['load']}{same}")
    for w, v in pw.items():
        print(
            f"     {w[-5:]}: gram {v['gram']:.2f} s (round 1 {v['gram_round1']:.2f}), solve/fit {v['solve']:.2f} s, "
            f"score {v['score']:.2f} s, process CPU {v['proc_cpu']:.1f} s; per round in "
            f"{v['in_per_round'] / 2**20:.2f} MiB, out {v['out_per_round'] / 2**20:.2f} MiB; "
            f"peak RSS {v['max_rss'] / 2**20:.0f} MiB",
            flush=True,
        )
    tot = {k: sum(v[k] for v in pw.values()) for k in ("gram", "solve", "score", "proc_cpu")}
    print(
        f"     total: gram {tot['gram']:.2f} s, solve {tot['solve']:.2f} s, score {tot['score']:.2f} s, "
        f"processes {tot['proc_cpu']:.1f} s",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=None, help="where the 2 GB feature file lives (reused if present)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--scaling", action="store_true", help="the issue #16 scaling tables (1, 2, 4 workers)")
    ap.add_argument("--from-json", default=None, help="with --scaling: report from saved records, no new runs")
    ap.add_argument("--tiny", action="store_true", help="toy sizes (TINY_SNLI, TINY_SCALE): checks that it runs")
    args = ap.parse_args()
    if args.tiny:
        global SNLI, SCALE, LOGISTIC
        SNLI, SCALE, LOGISTIC = TINY_SNLI, TINY_SCALE, TINY_LOGISTIC
        if args.workdir is None:  # nothing worth keeping: written and removed within the run
            with tempfile.TemporaryDirectory(prefix="aflite-bench-tiny-") as tmp:
                args.workdir = tmp
                return run_benchmark(args)
    return run_benchmark(args)


def run_benchmark(args: argparse.Namespace) -> None:
    """The runs ``main`` parsed the command line for."""
    if args.scaling:
        work = Path(args.workdir or tempfile.mkdtemp(prefix="aflite-bench-"))
        work.mkdir(parents=True, exist_ok=True)
        save = Path(args.json_out) if args.json_out else None
        workers = (1, 2) if args.tiny else (1, 2, 4)
        records = scaling(work, save, workers) if not args.from_json else json.loads(Path(args.from_json).read_text())
        report(records)
        return
    from bench_core import CLASS_SEP, write_snli_shaped

    work = Path(args.workdir or tempfile.mkdtemp(prefix="aflite-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    # the tiny file has its own name: a workdir shared with the real run keeps its 2 GB file
    path = work / f"snli_shaped_sep{CLASS_SEP:g}{'_tiny' if args.tiny else ''}.npy"
    if not path.exists():
        t0 = time.perf_counter()
        write_snli_shaped(path, SNLI, class_sep=CLASS_SEP)
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


if __name__ == "__main__":
    main()
