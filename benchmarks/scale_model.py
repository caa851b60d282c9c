"""bench_scale.py's model (imported by it): the scaling settings, the ImageNet-shaped projection, the report.

From the per-unit costs that ``bench_scale.py --scaling`` measures on LocalClusters of 1, 2 and 4 workers
(:func:`per_worker`, :func:`measured_rates`, the logistic family's :func:`logistic_unit_cost`), :func:`projection`
estimates an ImageNet-shaped run (1.28M × 2,560) on N workers; :func:`emulate` runs the same tasks without the
cluster (W emulated workers in one process, one after another, :class:`EmulatedClient`) to check the per-task
costs; :func:`report` prints the scaling tables.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

# -- issue #16: weak and strong scaling of the sharded backend on LocalClusters of 1, 2 and 4 workers --------
SCALE = dict(n=200_000, d=512, classes=3, m=64, t=16_000, k=4_000, tau=0.75, rounds=6)
TINY_SCALE = dict(n=8_000, d=32, classes=3, m=8, t=1_600, k=400, tau=0.75, rounds=2)
#: the logistic family's unit cost is measured on this problem (``--tiny``: TINY_LOGISTIC)
LOGISTIC = dict(n_models=6, T=6_000, d=255, K=50)
TINY_LOGISTIC = dict(n_models=1, T=600, d=31, K=5)


def per_worker(rec: dict) -> dict:
    """Per worker: CPU seconds by kind (rounds 2.. and all), bytes in/out per round (rounds 2..), peak RSS."""
    stats = rec["stats"]
    out = {}
    for w, fin in rec["final"].items():
        first = stats[0]["workers"].get(w, {"transfer_in": 0, "transfer_out": 0, "cpu": {}})
        last = stats[-1]["workers"][w]
        later = max(len(stats) - 1, 1)
        cpu = fin["cpu"]
        out[w] = {
            "gram": cpu.get("gram", 0.0) + cpu.get("reduce", 0.0),
            "solve": cpu.get("solve", 0.0) + cpu.get("fit", 0.0),
            "score": cpu.get("score", 0.0),
            "gram_round1": first["cpu"].get("gram", 0.0),
            "in_per_round": (last["transfer_in"] - first["transfer_in"]) / later,
            "out_per_round": (last["transfer_out"] - first["transfer_out"]) / later,
            "max_rss": fin["max_rss"],
            "proc_cpu": rec["proc_cpu"][w],
        }
    return out


# -- the ImageNet-shaped projection from measured per-unit costs ----------------------------------------------
IMAGENET = dict(n=1_281_167, d=2_560, classes=1_000, m=64, t=256_000, k=64_000, target=512_000)


NET = dict(bandwidth=10e9 / 8, latency=0.5e-3, schedule=0.5)  # 10 Gbit/s links, 0.5 ms, 0.5 s per round


def logistic_unit_cost(n_models: int = 6, T: int = 6_000, d: int = 255, K: int = 50) -> dict:
    """Seconds per L-BFGS iteration per (class · training row · (d+1)) of one model, and the iterations taken.

    One model per batch, as the default family fits at the ImageNet shape (a batch's training rows would
    exceed its gather budget otherwise), on Gaussian classes with a planted bias (``make_planted_bias``).
    """
    from threadpoolctl import threadpool_limits

    from aflite_core.data.planted_bias import make_planted_bias
    from aflite_core.engine.logistic import fit_logistic

    X, y, _ = make_planted_bias(T * 4, d, n_classes=K, class_sep=1.0, spectrum_decay=0.5, random_state=0)
    X = X - X.mean(axis=0)
    rng = np.random.default_rng(0)
    Z1 = np.hstack([X, np.ones((len(X), 1), np.float32)])
    H = Z1.T @ Z1 * (T / len(X)) / K
    H[np.arange(d), np.arange(d)] += 1.0
    H_inv = np.linalg.inv(H).astype(np.float32)
    secs, iters = [], []
    with threadpool_limits(1):
        for _ in range(n_models):
            rows = np.sort(rng.permutation(len(X))[:T])
            Xg = Z1[rows][None]
            t0 = time.process_time()
            _, _, n_iter = fit_logistic(Xg, y[rows][None], np.ones((1, T), np.float32), K, H_inv, tol=1e-3)
            secs.append(time.process_time() - t0)
            iters.append(int(n_iter[0]))
    unit = sum(secs) / (sum(iters) * K * T * (d + 1))
    return {"sec_per_unit_iter": unit, "iterations": iters, "gflops": 4 / unit / 1e9, "shape": [T, d, K]}


def measured_rates(records: dict) -> dict:
    """Effective rates of the sharded ridge run on one worker: Gram work, scoring and solves per unit."""
    s = SCALE
    rec = records["strong1"]
    v = next(iter(per_worker(rec).values()))
    D = s["d"] + 1 + s["classes"]
    blocks = 32 * s["n"] / s["t"]
    sizes = rec["history"]["size_before"]
    R = len(sizes)
    gram_flops = 2 * s["n"] * D * D + R * 2 * s["m"] * blocks * D * D + (R - 1) * 2 * s["k"] * D * D
    score_flops = sum(2 * size * s["d"] * s["m"] * (1 - s["t"] / size) * (s["classes"] - 1) for size in sizes)
    solve_units = R * s["m"] * s["d"] ** 2 * s["classes"] + R * s["d"] ** 3  # PCG products, preconditioner
    return {
        "gram_rate": gram_flops / v["gram"],
        "score_rate": score_flops / v["score"],
        "solve_sec_per_unit": v["solve"] / solve_units,
        "overhead_per_round": max(v["proc_cpu"] - v["gram"] - v["score"] - v["solve"], 0.0) / R,
    }


def _makespan(costs: list[float], n_workers: int) -> float:
    """Finish time of tasks handed, in submission order, to whichever worker is free first (as Dask does)."""
    loads = [0.0] * n_workers
    for c in costs:
        i = loads.index(min(loads))
        loads[i] += c
    return max(loads)


def projection(
    rates: dict, logistic: dict, workers=(1, 8, 32, 128), iterations: float = 20.0, spread=None
) -> list[dict]:
    """Per-round model of an ImageNet-shaped run on W workers from the measured rates; see benchmarks/README.md.

    Both families, each with ``shards = W`` (at least 16) and the ridge one with 1,250-row blocks (1,025
    blocks, so every one of 128 shards holds at least 8). Phases of a round run one after the other:
    Gram work (shard builds amortised, downdates, partial sums; split W ways), the reduction of partial sums
    over the network, the fits (ridge: one solve task per partition group; logistic: 64 one-model L-BFGS
    tasks, longest first), the scoring (split W ways), and the model broadcast, plus the scheduling overhead.
    """
    g = IMAGENET
    n, d, C, m, t, k = g["n"], g["d"], g["classes"], g["m"], g["t"], g["k"]
    D = d + 1 + C
    rounds = (n - g["target"]) // k
    sizes = [n - r * k for r in range(rounds)]
    if spread is None:  # measured relative spread of L-BFGS iterations between partitions
        its = np.asarray(logistic["iterations"], dtype=float)
        spread = its / its.mean()
    rows = []
    for family in ("logistic", "ridge"):
        for W in workers:
            total = 0.0
            parts = dict(gram=0.0, reduce=0.0, fit=0.0, score=0.0, net=0.0, sched=0.0)
            blocks = n / 1250 if family == "ridge" else 0
            for r, size in enumerate(sizes):
                gram = (2 * n * D * D) / rounds + (2 * k * D * D if r else 0)  # build amortised, downdates
                if family == "ridge":
                    gram += 2 * m * blocks * D * D
                parts["gram"] += gram / rates["gram_rate"] / W
                score = 2 * size * d * m * (1 - t / size) * (C - 1) / rates["score_rate"] / W
                parts["score"] += score
                weights = m * d * (C - 1) * 4  # every worker fetches all models once
                net = 0.0
                if W > 1:
                    net += weights / NET["bandwidth"] + NET["latency"] * 4 * max(int(np.log2(W)), 1)
                if family == "ridge":
                    groups = int(np.ceil(m / max(1, min(m, 16, 512 * 2**20 // (4 * D * D)))))
                    per_group = rates["solve_sec_per_unit"] * (m / groups) * (d * d * C) + (
                        rates["solve_sec_per_unit"] * d**3
                    )
                    fit = _makespan([per_group] * groups, W)
                    if W > 1:  # each worker sends its subtree sums of every group it does not solve
                        net += m * D * D * 4 / NET["bandwidth"]
                    precond = 0.0
                else:
                    unit = logistic["sec_per_unit_iter"] * C * t * (d + 1) * iterations
                    costs = [unit * spread[j % len(spread)] for j in range(m)]
                    fit = _makespan(costs, W)
                    precond = rates["solve_sec_per_unit"] * (d + 1) ** 3
                    if W > 1:  # subtree totals, the preconditioner, and each fit's training rows from the file
                        net += D * D * 8 * 2 / NET["bandwidth"] + (d + 1) ** 2 * 4 / NET["bandwidth"]
                        net += int(np.ceil(m / W)) * t * d * 4 / NET["bandwidth"]
                parts["fit"] += fit + precond
                parts["net"] += net
                parts["sched"] += NET["schedule"] if W > 1 else 0.0
            total = sum(parts.values())
            hours = {k_: v / 3600 for k_, v in parts.items()}
            rows.append({"family": family, "workers": W, "hours": total / 3600, **hours})
    for row in rows:
        one = next(r for r in rows if r["family"] == row["family"] and r["workers"] == 1)
        row["efficiency"] = one["hours"] / (row["workers"] * row["hours"])
    return rows


# -- the same tasks without the cluster: W emulated workers in one process, one after another ----------------
class _Value:
    """An emulated future: a task's value and the emulated worker that holds it."""

    def __init__(self, value, worker):
        self.value, self.worker = value, worker


class EmulatedClient:
    """Runs :class:`DaskBackend`'s tasks at once, in this process, as if on ``n_workers`` workers.

    Each emulated worker has its own sessions (``aflite_core.engine.dask_tasks._SESSIONS`` is swapped per task), so
    whatever each worker repeats is repeated here too; tasks run one at a time, so their CPU times are free of
    the contention of several worker processes on two cores. Bytes that would cross between workers are
    counted where a task on one worker reads a value held by another (``dask.sizeof``).
    """

    def __init__(self, n_workers: int) -> None:
        self.names = [f"emu://{w}" for w in range(n_workers)]
        self.sessions = {w: {} for w in self.names}
        self.cpu = {w: defaultdict(float) for w in [*self.names, "driver"]}
        self.moved_in = defaultdict(int)
        self.moved_out = defaultdict(int)
        self.rr = itertools.count()

    def nthreads(self):
        return dict.fromkeys(self.names, 1)

    def _resolve(self, obj, worker):
        from dask.sizeof import sizeof

        if isinstance(obj, _Value):
            if obj.worker is not None and worker is not None and obj.worker != worker:
                nb = sizeof(obj.value)
                self.moved_in[worker] += nb
                self.moved_out[obj.worker] += nb
            return obj.value
        if isinstance(obj, list):
            return [self._resolve(o, worker) for o in obj]
        if isinstance(obj, tuple):
            return tuple(self._resolve(o, worker) for o in obj)
        if isinstance(obj, dict):
            return {k: self._resolve(v, worker) for k, v in obj.items()}
        return obj

    def submit(self, fn, *args, key="", workers=None, **kwargs):
        import aflite_core.engine.dask_tasks as dist

        worker = workers[0] if workers else self.names[next(self.rr) % len(self.names)]
        args = self._resolve(list(args), worker)
        dist._SESSIONS = self.sessions[worker]
        kind = key.split("-")[1]
        t0 = time.thread_time()
        value = fn(*args)
        self.cpu[worker][kind] += time.thread_time() - t0
        return _Value(value, worker)

    def gather(self, futures):
        return [self._resolve(f, None) for f in futures]

    def scatter(self, data, broadcast=False, hash=True):
        if isinstance(data, list):
            return [_Value(d, None) for d in data]
        return _Value(data, None)

    def run(self, fn, *args, **kwargs):
        return {}


def emulate(path: Path, n: int, t: int, n_workers: int, rounds: int) -> dict:
    """One run on ``n_workers`` emulated workers: per worker CPU by kind of work and bytes in/out."""
    from aflite_core import aflite
    from aflite_core.engine.distributed import DaskBackend

    s = SCALE
    X = np.load(path, mmap_mode="r")[:n]
    y = np.load(path.with_suffix(".labels.npy"))[:n]
    client = EmulatedClient(n_workers)
    backend = DaskBackend.__new__(DaskBackend)
    backend.client, backend.pieces_per_task, backend.reduce = client, 8, "owner"
    backend.transfer_stats, backend.workers, backend.stats = False, None, []
    backend.key, backend.removals, backend.removal_arrays = f"emu{n_workers}", [], []
    backend._counter = itertools.count()
    res = aflite(
        X,
        y,
        target_size=max(n // 10, t + 1),
        n_partitions=s["m"],
        train_size=t,
        slice_size=s["k"] * n // s["n"],
        tau=s["tau"],
        random_state=0,
        n_threads=1,
        backend=backend,
        callback=lambda p: p.round < rounds,
    )
    kinds = {"fit": "gram", "pick": "gram", "reduce": "gram", "precond": "solve", "solve": "solve", "score": "score"}
    out = {}
    for w in client.names:
        cpu = defaultdict(float)
        for kind, secs in client.cpu[w].items():
            cpu[kinds.get(kind, kind)] += secs
        out[w] = {
            **cpu,
            "in_per_round": client.moved_in[w] / res.n_rounds,
            "out_per_round": client.moved_out[w] / res.n_rounds,
        }
    return {
        "workers": out,
        "rounds": res.n_rounds,
        "kept": hashlib.sha256(np.packbits(res.kept).tobytes()).hexdigest()[:16],
        "load": os.getloadavg(),
    }


def _task_cpu(v: dict) -> float:
    return v["gram"] + v["solve"] + v["score"]


def _emu_work(v: dict) -> float:
    return v.get("gram", 0.0) + v.get("solve", 0.0) + v.get("score", 0.0)


def report(records: dict) -> None:
    """Print the scaling tables and the projection as markdown (the figures of benchmarks/README.md)."""
    print("\nEmulated workers (the backend's own tasks, one at a time in one process: no contention between them)")
    print("\n| run | worker | Gram CPU s | solve CPU s | scoring CPU s | MiB in / out per round | 1-min load at end |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    base = None
    for name in ("emulated1", "emulated2", "emulated4", "weak_emulated1", "weak_emulated2"):
        rec = records.get(name)
        if rec is None:
            continue
        ws = list(rec["workers"].values())
        for i, v in enumerate(ws):
            print(
                f"| {name} | {i + 1} | {v.get('gram', 0):.2f} | {v.get('solve', 0):.2f} | {v.get('score', 0):.2f} | "
                f"{v['in_per_round'] / 2**20:.1f} / {v['out_per_round'] / 2**20:.1f} | "
                f"{rec['load'][0]:.1f} |"
            )
        work = sum(_emu_work(v) for v in ws)
        if name == "emulated1":
            base = work
        if name.startswith("emulated") and base:
            print(
                f"| {name} | all | {work:.2f} s of work: {(work - base) / work:+.1%} against 1 worker; the busiest "
                f"worker does {max(_emu_work(v) for v in ws) / base:.3f} of the 1-worker work (ideal "
                f"{1 / len(ws):.3f}); same result as local: {rec['kept'] == records['local']['kept']} | | | | | |"
            )
    base = sum(_task_cpu(v) for v in per_worker(records["strong1"]).values())
    base_proc = sum(v["proc_cpu"] for v in per_worker(records["strong1"]).values())
    print("\nLocalCluster workers (processes sharing the 2 cores; Dask's transfer counters)")
    print(
        "\n| run | worker | Gram CPU s | solve CPU s | scoring CPU s | worker process CPU s | MiB in / out per round "
        "| peak RSS MiB | load (1-min, start → end) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in ("strong1", "strong2", "strong4", "strong2_tree", "strong4_tree", "weak1", "weak2"):
        rec = records.get(name)
        if rec is None:
            continue
        pw = per_worker(rec)
        load = f"{rec['load'][0][0]:.1f} → {rec['load'][1][0]:.1f}"
        for i, v in enumerate(pw.values()):
            print(
                f"| {name} | {i + 1} | {v['gram']:.2f} | {v['solve']:.2f} | {v['score']:.2f} | {v['proc_cpu']:.1f} | "
                f"{v['in_per_round'] / 2**20:.1f} / {v['out_per_round'] / 2**20:.1f} | {v['max_rss'] / 2**20:.0f} | "
                f"{load if i == 0 else ''} |"
            )
        tasks = sum(_task_cpu(v) for v in pw.values())
        proc = sum(v["proc_cpu"] for v in pw.values())
        if name.startswith("strong"):
            print(
                f"| {name} | all | tasks {tasks:.2f} s ({(tasks - base) / tasks:+.1%} against 1 worker); busiest "
                f"{max(_task_cpu(v) for v in pw.values()) / base:.2f} of the 1-worker work; processes {proc:.1f} s "
                f"({(proc - base_proc) / proc:+.1%}); wall {rec['wall']:.1f} s; same result as local: "
                f"{rec['kept'] == records['local']['kept']} | | | | | | | |"
            )
    local = records["local"]
    print(f"\nlocal in-process: {local['wall']:.1f} s wall, {local['driver_cpu']:.1f} s CPU, load {local['load']}")
    rates = measured_rates(records)
    logistic = records.get("logistic") or logistic_unit_cost(**LOGISTIC)
    records["logistic"] = logistic
    print(
        f"\nrates (1 worker): Gram {rates['gram_rate'] / 1e9:.1f} GFLOP/s, scoring {rates['score_rate'] / 1e9:.1f} "
        f"GFLOP/s, solve {rates['solve_sec_per_unit'] * 1e9:.2f} ns per m·d²·C unit; logistic L-BFGS "
        f"{logistic['gflops']:.1f} GFLOP/s (4·K·T·(d+1) per iteration), iterations {logistic['iterations']} at "
        f"T, d, K = {logistic['shape']}"
    )
    print(
        "\n| family | workers | projected hours | Gram | reduction + network | fits | scoring | scheduling "
        "| efficiency |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = projection(rates, logistic)
    uneven = np.random.default_rng(0).uniform(0.5, 1.5, IMAGENET["m"])  # iterations 10-30 in partition order
    rows += [
        dict(r, family="logistic, iterations 10-30")
        for r in projection(rates, logistic, spread=uneven)
        if r["family"] == "logistic"
    ]
    for row in rows:
        if row["family"] == "ridge" or row["family"].startswith("logistic"):
            print(
                f"| {row['family']} | {row['workers']} | {row['hours']:.2f} | {row['gram']:.2f} | {row['net']:.3f} "
                f"| {row['fit']:.2f} | {row['score']:.2f} | {row['sched']:.3f} | {row['efficiency']:.2f} |"
            )
