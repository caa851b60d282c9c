"""How much of the machine the engine uses: all CPU cores (``--cpu``) and a GPU (``--gpu``).

Usage::

    python benchmarks/bench_hardware.py --cpu --json-out hw.jsonl          # mid shape and (c) at 1, 2, all threads
    python benchmarks/bench_hardware.py --gpu --budget-s 400 --json-out hw.jsonl   # one prepared GPU slot
    python benchmarks/bench_hardware.py --cpu --tiny                       # every code path in seconds (tests)
    python benchmarks/bench_hardware.py --gpu --tiny --device torch:cpu    # the GPU mode's paths on a CPU

Prints one block per measurement and a JSON line each (``--json-out FILE`` appends them as they come, so a
run cut short still leaves its figures). Nothing here asserts a time; figures go into benchmarks/README.md by
hand.

Shapes (m partitions, t training rows, k slice, τ 0.75, n target; data from ``bench_core.write_snli_shaped``,
the generator of ``benchmarks/bench_core.py``, so setting (c) is the same data there and here):

* mid: 120,000 × 512 float32, 3 classes, m 64, t 20,000, k 2,400, target 22,000
* (c): 500,000 × 1,024 float32, 3 classes, m 64, t 40,000, k 10,000, target 92,000
* reduced ImageNet (``--gpu``, two rounds): 200,000 × 2,560 float32, 1,000 classes, m 64, t 40,000, k 10,000,
  target 100,000 (planted-bias data generated on the device: Gaussian classes plus 25 % of rows shifted along
  a class-specific direction)

``--cpu`` runs every engine run in a child process (peak RSS per run) and prints, per run, the wall time, the
**flop bound** - per round 2·m·|S|·d·C (every row predicted by every model) + 2·m·t·d·C (one pass over each
training part), summed over the rounds; a lower bound on the arithmetic, not the engine's real operation count -
and the share of the machine's float32 GEMM rate at that thread count (measured here with one large matmul)
it corresponds to, peak RSS over the features' bytes, the 1-minute load average, and the agreement with the
one-thread run (removed-set Jaccard, planted rows removed).

``--gpu`` is one script for a short GPU slot (default budget 420 s including data generation): the torch
backend at (c) three times in float32 and once in TF32 (timed with the transfer of X; card name, peak GPU
memory), the reduced ImageNet shape for two rounds in TF32 (and float32 when time is left) with per-round time
and L-BFGS iterations, the full ImageNet **projection** (1,281,167 × 2,560, 12 rounds: measured per-round
time × rows / 200,000 × 12 × max(iterations, 20) / iterations), and the CPU engine on all cores at (c) once
(``--cpu-repeat N``: N times, for the spread between runs).
Sections that would not fit the remaining budget are skipped with a printed line; each runs in try/except.
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
import traceback
from pathlib import Path

import numpy as np

# deterministic cuBLAS (the torch backend's float32 default) reads this when its first handle is made
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_core import SETTINGS, write_snli_shaped  # noqa: E402  (setting (c) and its generator: identical data)

SHAPES = {
    "mid": dict(n=120_000, d=512, classes=3, m=64, t=20_000, k=2_400, tau=0.75, target=22_000),
    "c": SETTINGS["c"],
    "imagenet": dict(n=200_000, d=2_560, classes=1_000, m=64, t=40_000, k=10_000, tau=0.75, target=100_000),
}
TINY = {
    "mid": dict(n=6_000, d=32, classes=3, m=16, t=1_500, k=300, tau=0.75, target=1_600),
    "c": dict(n=10_000, d=48, classes=3, m=16, t=2_500, k=500, tau=0.75, target=2_600),
    "imagenet": dict(n=4_000, d=48, classes=20, m=16, t=1_000, k=200, tau=0.75, target=2_000),
}
#: the full ImageNet run the projection is for (the paper's §5): rows and rounds
IMAGENET_ROWS, IMAGENET_ROUNDS, MIN_ITERATIONS = 1_281_167, 12, 20
#: shift of the planted rows along their class direction in the many-class data (noise has unit variance)
PLANT_SHIFT = 24.0  # 6 (as bench_core) leaves the 1,000-class run with too few rows at tau to go on


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def emit(record: dict, json_out: str | None) -> None:
    line = json.dumps(record, default=float)
    print(line, flush=True)
    if json_out:
        with open(json_out, "a") as fh:
            fh.write(line + "\n")


def flop_bound(history_sizes: list[int], s: dict) -> float:
    """Lower bound on a run's arithmetic: per round 2·m·|S|·d·C + 2·m·t·d·C, summed over the rounds."""
    m, d, C, t = s["m"], s["d"], s["classes"], s["t"]
    return float(sum(2.0 * m * size * d * C + 2.0 * m * t * d * C for size in history_sizes))


def gemm_rate(threads: int | None, n: int) -> float:
    """float32 GFLOP/s of numpy's matmul at ``threads`` BLAS threads (best of 3 on n × n)."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    with threadpool_limits(limits=threads):
        A @ B
        best = min(_timed(lambda: A @ B) for _ in range(3))
    return 2.0 * n**3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def write_data(name: str, s: dict, workdir: Path) -> Path:
    """The shape's features as a .npy (labels and planted mask beside it), reused when present."""
    path = workdir / f"{name}_{s['n']}x{s['d']}.npy"
    if not path.exists():
        t0 = time.perf_counter()
        write_snli_shaped(path, s)
        print(f"   wrote {path.name} in {time.perf_counter() - t0:.1f} s", flush=True)
    return path


CHILD = r"""
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {root!r})
from aflite_core import aflite
X = np.load({path!r})
y = np.load({labels!r})
biased = np.load({biased!r})
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
prof = None
if {phases}:
    import cProfile
    prof = cProfile.Profile()  # the driving thread only: the pool's threads are not profiled
t0 = time.perf_counter()
cpu0 = time.process_time()
if prof is not None:
    prof.enable()
res = aflite(X, y, target_size={target}, n_partitions={m}, train_size={t}, slice_size={k}, tau={tau},
             random_state=0, n_threads={threads})
secs = time.perf_counter() - t0
cpu_secs = time.process_time() - cpu0  # every thread of the process, user and system
phases = None
if prof is not None:
    prof.disable()
    import pstats
    stats = pstats.Stats(prof).stats
    def cum(fname, func):
        return round(sum(v[3] for (f, _, fn), v in stats.items() if f.endswith(fname) and fn == func), 2)
    def own(pred):
        return round(sum(v[2] for (f, _, fn), v in stats.items() if pred(f, fn)), 2)
    waited = cum("concurrent/futures/_base.py", "result")  # the pool's results awaited (any Python version)
    phases = dict(
        fit=max(cum("engine/models.py", "fit"), cum("engine/logistic.py", "fit")),
        fit_gram_sums=cum("engine/shards.py", "node_grams"),
        scoring=cum("engine/partitions.py", "score_round"), scoring_pieces=cum("engine/partitions.py", "run_pieces"),
        removal=cum("engine/shards.py", "remove_from_shards"), select_rows=cum("engine/loop.py", "select_rows"),
        merge_pieces=cum("engine/partitions.py", "merge_pieces"),
        plan_pieces=cum("engine/partitions.py", "scoring_pieces"),
        prepare=cum("engine/shards.py", "prepare"), driving_thread_waiting=waited,
        driving_thread_busy=round(secs - waited, 2))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
np.save({removed_out!r}, ~res.kept)
print(json.dumps(dict(seconds=secs, cpu_seconds=cpu_secs, rounds=res.n_rounds, kept=res.n_kept, stop=res.stop_reason,
                      peak_rss=peak, rss_after_load=base, x_bytes=X.nbytes,
                      sizes=[int(v) for v in res.history["size_before"]],
                      planted_removed=float((~res.kept[biased]).mean()), phases=phases)))
"""


def cpu_engine(
    name: str, s: dict, path: Path, threads: int, timeout: float | None = None, phases: bool = False
) -> dict:
    """One engine run in a child process; its record plus the removed mask (key ``removed``).

    ``phases``: profile the thread that drives the run (cProfile; the pool's threads run unprofiled) and
    record the wall seconds of each phase of the rounds as that thread sees them, and how long it waited
    for the pool - a phase that does not shrink with more threads is where the cores go idle.
    """
    removed_out = str(path.with_suffix(f".removed_t{threads}.npy"))
    code = CHILD.format(
        root=str(ROOT),
        path=str(path),
        labels=str(path.with_suffix(".labels.npy")),
        biased=str(path.with_suffix(".biased.npy")),
        removed_out=removed_out,
        threads=threads,
        phases=bool(phases),
        **{key: s[key] for key in ("target", "m", "t", "k", "tau")},
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy(), timeout=timeout
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "child failed")
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    rec["removed"] = np.load(removed_out)
    rec["load_1min"] = round(os.getloadavg()[0], 2)
    return rec


def run_cpu(args, shapes: dict, workdir: Path) -> None:
    cores = os.cpu_count() or 1
    thread_counts = sorted({1, 2, cores}) if cores > 1 else [1]
    gemm_n = 512 if args.tiny else 4096
    rates = {}
    for th in thread_counts:
        rates[th] = gemm_rate(th, gemm_n)
        print(f"   float32 GEMM ({gemm_n}³) on {th} thread(s): {rates[th]:.0f} GFLOP/s", flush=True)
    emit({"mode": "cpu", "section": "gemm_rate", "cores": cores, "gflops": rates, "n": gemm_n}, args.json_out)
    for name in ("mid", "c"):
        s = shapes[name]
        print(f"\n== {name}: N={s['n']:,} d={s['d']} C={s['classes']} m={s['m']} t={s['t']:,} k={s['k']:,}", flush=True)
        path = write_data(name, s, workdir)
        planted = np.load(path.with_suffix(".biased.npy"))
        ref = None
        for th in thread_counts:
            try:
                rec = cpu_engine(name, s, path, th, phases=args.phases)
            except Exception as exc:  # a benchmark reports and goes on
                print(f"   {th} thread(s): failed ({exc})", flush=True)
                continue
            removed = rec.pop("removed")
            ref = removed if th == 1 else ref
            flops = flop_bound(rec.pop("sizes"), s)
            out = dict(
                mode="cpu",
                shape=name,
                threads=th,
                seconds=round(rec["seconds"], 2),
                cpu_seconds=round(rec["cpu_seconds"], 1),
                cores_busy=round(rec["cpu_seconds"] / rec["seconds"], 2),
                rounds=rec["rounds"],
                kept=rec["kept"],
                flop_bound=flops,
                flop_bound_note="2*m*|S|*d*C + 2*m*t*d*C per round, summed (a lower bound)",
                share_of_gemm_rate=round(flops / rec["seconds"] / (rates[th] * 1e9), 4),
                peak_rss_gib=round(rec["peak_rss"] / 2**30, 2),
                peak_over_features=round(rec["peak_rss"] / rec["x_bytes"], 2),
                load_1min=rec["load_1min"],
                planted_removed=round(rec["planted_removed"], 4),
                planted_rows=int(planted.sum()),
                jaccard_vs_1_thread=None if ref is None else round(jaccard(ref, removed), 4),
                phases=rec.get("phases"),
            )
            print(
                f"   {th} thread(s): {out['seconds']:.1f} s ({out['cores_busy']} cores busy on average), "
                f"{out['rounds']} rounds, flop bound "
                f"{flops / 1e12:.2f} TFLOP = {100 * out['share_of_gemm_rate']:.1f} % of the GEMM rate, peak "
                f"{out['peak_over_features']}x features, load {out['load_1min']}, planted removed "
                f"{100 * out['planted_removed']:.1f} %, Jaccard vs 1 thread {out['jaccard_vs_1_thread']}",
                flush=True,
            )
            if out["phases"]:
                print(f"   phases as the driving thread sees them (wall s): {out['phases']}", flush=True)
            emit(out, args.json_out)


# -- the GPU slot ------------------------------------------------------------------------------------------------
class Budget:
    """Seconds left of the slot; sections that would not fit are skipped with a printed line."""

    def __init__(self, seconds: float) -> None:
        self.end = time.perf_counter() + seconds

    def left(self) -> float:
        return self.end - time.perf_counter()

    def fits(self, section: str, needed: float, json_out: str | None) -> bool:
        if self.left() >= needed:
            return True
        print(f"-- skipped {section}: needs ~{needed:.0f} s, {self.left():.0f} s left", flush=True)
        emit({"mode": "gpu", "section": section, "skipped": True, "needed_s": needed, "left_s": self.left()}, json_out)
        return False


def _section(name: str, json_out: str | None):
    """Decorator-free try/except wrapper: run fn, print and record a failure, never raise."""

    def run(fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except Exception as exc:  # one failed section must not lose the others
            traceback.print_exc()
            emit({"mode": "gpu", "section": name, "error": f"{type(exc).__name__}: {exc}"}, json_out)
            return None

    return run


def make_many_class_data(s: dict, device: str, seed: int = 0):
    """Planted-bias data with many classes, generated with torch on ``device`` (fast at 1,000 classes)."""
    import torch

    dev = torch.device("cpu" if device == "torch:cpu" else device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    n, d, C = s["n"], s["d"], s["classes"]
    y = torch.randperm(n, generator=gen, device=dev) % C
    centres = torch.randn((C, d), generator=gen, device=dev)
    centres *= 2.0 / centres.norm(dim=1, keepdim=True)
    directions = torch.randn((C, d), generator=gen, device=dev)
    directions /= directions.norm(dim=1, keepdim=True)
    biased = torch.zeros(n, dtype=torch.bool, device=dev)
    biased[torch.randperm(n, generator=gen, device=dev)[: n // 4]] = True
    X = torch.randn((n, d), generator=gen, device=dev)
    X += centres[y]
    X += PLANT_SHIFT * directions[y] * biased[:, None]
    return X.cpu().numpy(), y.cpu().numpy(), biased.cpu().numpy()


def gpu_info(device: str) -> dict:
    import torch

    if device == "torch:cpu":
        return {"device": "torch:cpu", "name": "CPU (torch)", "torch": torch.__version__}
    idx = torch.device(device).index or 0
    return {"device": device, "name": torch.cuda.get_device_name(idx), "torch": torch.__version__}


def _reset_peak(device: str) -> None:
    import torch

    if device != "torch:cpu":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_gib(device: str) -> float | None:
    import torch

    if device == "torch:cpu":
        return None
    torch.cuda.synchronize()
    return round(torch.cuda.max_memory_allocated() / 2**30, 2)


def torch_run(X, y, s: dict, device: str, precision: str, max_rounds: int | None = None, model="linear"):
    """An AFLite run on a torch device; (result, per-round L-BFGS iterations, seconds)."""
    from aflite_core.engine.filtering import execute_run, plan_run

    iterations: list[int] = []
    evaluations: list[int] = []
    fit_seconds: list[float] = []
    holder = {}

    def callback(p) -> bool:
        session = getattr(holder["run"].backend, "session", None)
        iterations.append(max(getattr(session, "n_iter", []) or [0]))
        evaluations.append(max(getattr(session, "n_evaluations", []) or [0]))
        fit_seconds.append(float(getattr(session, "fit_seconds", 0.0)))
        return max_rounds is None or p.round < max_rounds

    run = plan_run(
        X,
        y,
        target_size=s["target"],
        n_partitions=s["m"],
        train_size=s["t"],
        slice_size=s["k"],
        tau=s["tau"],
        random_state=0,
        callback=callback,
        device=device,
        precision=precision,
        model=model,
    )
    holder["run"] = run
    t0 = time.perf_counter()
    res = execute_run(run)
    torch_run.fit_seconds = fit_seconds
    torch_run.evaluations = evaluations
    return res, iterations, time.perf_counter() - t0


def profile_round(data: dict, si: dict, device: str, family, json_out: str | None) -> None:
    """One TF32 round of the reduced ImageNet shape under torch's profiler: where the round's time goes."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device != "torch:cpu" else [])
    with profile(activities=activities) as prof:
        _, iters, secs = torch_run(data["X"], data["y"], si, device, "tf32", max_rounds=1, model=family)
        if device != "torch:cpu":
            torch.cuda.synchronize()
    key = "cuda_time_total" if device != "torch:cpu" else "cpu_time_total"
    table = prof.key_averages().table(sort_by=key, row_limit=22, max_name_column_width=60)
    cpu_table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=60)
    print(f"   profiled round (profiler on): {secs:.2f} s, L-BFGS iterations {iters}\n{table}\n{cpu_table}", flush=True)
    emit({"mode": "gpu", "section": "imagenet_profile", "seconds": round(secs, 2), "iterations": iters}, json_out)


def run_gpu(args, shapes: dict, workdir: Path) -> None:
    import torch

    device = args.device
    json_out = args.json_out
    budget = Budget(args.budget_s)
    info = _section("info", json_out)(gpu_info, device) or {"device": device}
    info.update(mode="gpu", section="info", cores=os.cpu_count(), numpy=np.__version__)
    emit(info, json_out)

    def device_gemm() -> None:
        if device == "torch:cpu":
            return
        n = 8192
        A = torch.randn((n, n), device=device)
        B = torch.randn((n, n), device=device)
        for precision, setting in (("float32", "highest"), ("tf32", "high")):
            old = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision(setting)
            A @ B
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(5):
                A @ B
            torch.cuda.synchronize()
            rate = 5 * 2.0 * n**3 / (time.perf_counter() - t0) / 1e12
            torch.set_float32_matmul_precision(old)
            print(f"   device GEMM {precision}: {rate:.1f} TFLOP/s", flush=True)
            emit({"mode": "gpu", "section": "gemm_rate", "precision": precision, "tflops": rate}, json_out)

    _section("gemm_rate", json_out)(device_gemm)

    # -- (c): data, then the torch backend three times in float32 and in TF32 ---------------------------------
    wanted = set(args.sections.split(","))
    s = shapes["c"]
    path = None
    if wanted & {"c", "cpu"}:
        shape = f"N={s['n']:,} d={s['d']} C=3 m={s['m']} t={s['t']:,} k={s['k']:,} target={s['target']:,}"
        print(f"\n== (c) {shape}", flush=True)
        t0 = time.perf_counter()
        path = _section("c_data", json_out)(write_data, "c", s, workdir)
    if path is not None:
        X = np.load(path)
        y = np.load(path.with_suffix(".labels.npy"))
        planted = np.load(path.with_suffix(".biased.npy"))
        emit({"mode": "gpu", "section": "c_data", "seconds": round(time.perf_counter() - t0, 1)}, json_out)
    removed: dict[str, np.ndarray] = {}
    per_run = 60.0  # first guess of one (c) run, replaced by the measured time
    gpu_runs = (("fp32_1", "float32"), ("fp32_2", "float32"), ("fp32_3", "float32"), ("tf32_1", "tf32"))
    for label, precision in gpu_runs if "c" in wanted and path is not None else ():
        if not budget.fits(f"c_{label}", per_run, json_out):
            continue

        def one(label=label, precision=precision):
            _reset_peak(device)
            res, _, secs = torch_run(X, y, s, device, precision)
            rec = dict(
                mode="gpu",
                section=f"c_{label}",
                precision=precision,
                seconds=round(secs, 2),
                seconds_note="aflite() wall time, including the transfer of X to the device",
                rounds=res.n_rounds,
                kept=res.n_kept,
                planted_removed=round(float((~res.kept[planted]).mean()), 4),
                peak_gpu_gib=_peak_gib(device),
            )
            removed[label] = ~res.kept
            print(
                f"   {label}: {secs:.2f} s, {res.n_rounds} rounds, kept {res.n_kept:,}, planted removed "
                f"{100 * rec['planted_removed']:.1f} %, peak GPU {rec['peak_gpu_gib']} GiB",
                flush=True,
            )
            emit(rec, json_out)
            return secs

        secs = _section(f"c_{label}", json_out)(one)
        if secs is not None:
            per_run = max(secs * 1.3, 5.0)
    if args.profile and path is not None and "c" in wanted and budget.fits("c_profile", per_run * 3, json_out):

        def profile_c() -> None:
            from torch.profiler import ProfilerActivity, profile

            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device != "torch:cpu" else [])
            with profile(activities=acts) as prof:
                _, _, secs = torch_run(X, y, s, device, "float32")
            key = "cuda_time_total" if device != "torch:cpu" else "cpu_time_total"
            table = prof.key_averages().table(sort_by=key, row_limit=18, max_name_column_width=50)
            cpu_table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=50)
            print(f"   (c) float32 under the profiler: {secs:.2f} s\n{table}\n{cpu_table}", flush=True)
            emit({"mode": "gpu", "section": "c_profile", "seconds": round(secs, 2)}, json_out)

        _section("c_profile", json_out)(profile_c)
    if "fp32_1" in removed:
        for other in ("fp32_2", "fp32_3", "tf32_1"):
            if other in removed:
                same = bool(np.array_equal(removed["fp32_1"], removed[other]))
                rec = {"mode": "gpu", "section": f"c_agree_fp32_1_{other}", "removed_equal": same}
                rec["jaccard"] = round(jaccard(removed["fp32_1"], removed[other]), 4)
                emit(rec, json_out)

    # -- reduced ImageNet: two rounds (TF32, then float32 if time is left after the CPU run) --------------------
    si = shapes["imagenet"]
    data = {}
    from aflite_core.engine.logistic import LogisticFamily

    if args.imagenet_iterations:
        # every fit runs exactly this many L-BFGS iterations (a tolerance no model reaches): the round is then
        # *measured* with the projection's iteration floor instead of extrapolated from converged fits
        family = LogisticFamily(tol=1e-12, max_iter=args.imagenet_iterations)
        family_note = f"default family, every fit forced to {args.imagenet_iterations} L-BFGS iterations (tol 1e-12)"
    else:
        family, family_note = "linear", "default family (tol 1e-3, max_iter 100)"

    def imagenet(precision: str) -> None:
        if "X" not in data:
            t1 = time.perf_counter()
            data["X"], data["y"], data["planted"] = make_many_class_data(si, device)
            emit({"mode": "gpu", "section": "imagenet_data", "seconds": round(time.perf_counter() - t1, 1)}, json_out)
        _reset_peak(device)
        res, iters, secs = torch_run(data["X"], data["y"], si, device, precision, max_rounds=2, model=family)
        per_round = [float(v) for v in res.history["seconds"]]
        measured = max(1, round(float(np.mean(iters))) if iters else 1)
        round_s = float(np.mean(per_round))
        scale = (IMAGENET_ROWS / si["n"]) * IMAGENET_ROUNDS
        projection = round_s * scale * max(measured, MIN_ITERATIONS) / measured
        fit_s = float(np.mean(torch_run.fit_seconds)) if torch_run.fit_seconds else round_s
        split = (fit_s * max(measured, MIN_ITERATIONS) / measured + (round_s - fit_s)) * scale
        rec = dict(
            mode="gpu",
            section=f"imagenet_{precision}",
            precision=precision,
            seconds=round(secs, 2),
            per_round_s=[round(v, 2) for v in per_round],
            lbfgs_iterations=iters,
            objective_evaluations=torch_run.evaluations,
            objective_evaluations_note="per round, the most of any batch of fits (one per trial step and backtrack)",
            fit_s=[round(v, 2) for v in torch_run.fit_seconds],
            stop=res.stop_reason,
            qualified=[int(v) for v in res.history["n_qualified"]],
            peak_gpu_gib=_peak_gib(device),
            projection_full_imagenet_s=round(projection, 1),
            projection_fit_only_scaled_s=round(split, 1),
            family=family_note,
            projection_note=(
                "projection, not a measurement: mean per-round time x 1,281,167/200,000 rows x 12 rounds x "
                "max(iterations, 20)/iterations; the _fit_only_scaled variant scales only the fits by the "
                "iterations (scoring does not iterate)"
            ),
        )
        print(
            f"   ImageNet-reduced {precision}: rounds {rec['per_round_s']} s, L-BFGS iterations {iters} "
            f"({torch_run.evaluations} objective evaluations), peak GPU "
            f"{rec['peak_gpu_gib']} GiB, fits {rec['fit_s']} s, qualified {rec['qualified']}; full ImageNet "
            f"projection {projection / 60:.1f} min ({split / 60:.1f} min scaling only the fits) ({precision})",
            flush=True,
        )
        emit(rec, json_out)

    print(
        f"\n== reduced ImageNet N={si['n']:,} d={si['d']} C={si['classes']} m={si['m']} t={si['t']:,} (two rounds)",
        flush=True,
    )
    if "imagenet" in wanted and budget.fits("imagenet_tf32", 30 if args.tiny else 100, json_out):
        _section("imagenet_tf32", json_out)(imagenet, "tf32")
    if args.profile and "X" in data and budget.fits("imagenet_profile", 10 if args.tiny else 60, json_out):
        _section("imagenet_profile", json_out)(profile_round, data, si, device, family, json_out)

    # -- the CPU engine on all cores at (c), once (or --cpu-repeat times) -------------------------------------------
    cores = os.cpu_count() or 1

    def cpu_c(rep: int) -> None:
        print(f"\n== (c) CPU engine, {cores} threads, run {rep + 1} of {args.cpu_repeat}", flush=True)
        rec = cpu_engine("c", s, path, cores, timeout=max(10.0, budget.left() - 5), phases=args.phases)
        cpu_removed = rec.pop("removed")
        rec.pop("sizes")
        out = dict(
            mode="gpu",
            section="c_cpu_all_cores",
            run=rep + 1,
            threads=cores,
            seconds=round(rec["seconds"], 2),
            cpu_seconds=round(rec["cpu_seconds"], 1),
            cores_busy=round(rec["cpu_seconds"] / rec["seconds"], 2),
            rounds=rec["rounds"],
            kept=rec["kept"],
            planted_removed=round(rec["planted_removed"], 4),
            peak_over_features=round(rec["peak_rss"] / rec["x_bytes"], 2),
            load_1min=rec["load_1min"],
            phases=rec.get("phases"),
        )
        for label, mask in removed.items():
            out[f"jaccard_vs_{label}"] = round(jaccard(cpu_removed, mask), 4)
        print(
            f"   CPU {cores} threads: {out['seconds']:.1f} s ({out['cores_busy']} cores busy on average), "
            f"{out['rounds']} rounds, planted removed "
            f"{100 * out['planted_removed']:.1f} %, Jaccard vs GPU runs "
            f"{ {k: v for k, v in out.items() if k.startswith('jaccard')} }",
            flush=True,
        )
        if out["phases"]:
            print(f"   phases as the driving thread sees them (wall s): {out['phases']}", flush=True)
        emit(out, json_out)

    per_cpu_run = 30.0 if not args.tiny else 5.0  # first guess, then the last run's time
    for rep in range(args.cpu_repeat) if "cpu" in wanted and path is not None else ():
        if not budget.fits("c_cpu_all_cores", per_cpu_run, json_out):
            break
        started = time.perf_counter()
        _section("c_cpu_all_cores", json_out)(cpu_c, rep)
        per_cpu_run = max(per_cpu_run, 1.2 * (time.perf_counter() - started))
    if "imagenet" in wanted and budget.fits("imagenet_float32", 30 if args.tiny else 150, json_out):
        _section("imagenet_float32", json_out)(imagenet, "float32")
    print(f"\n-- done, {budget.left():.0f} s of the budget left", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--cpu", action="store_true", help="the CPU engine at 1, 2 and all threads")
    mode.add_argument("--gpu", action="store_true", help="the GPU slot (one prepared script)")
    ap.add_argument("--tiny", action="store_true", help="small shapes: every code path in seconds")
    ap.add_argument("--device", default="cuda", help="--gpu: cuda, cuda:N or torch:cpu (default cuda)")
    ap.add_argument("--budget-s", type=float, default=420.0, help="--gpu: seconds for the whole script")
    ap.add_argument(
        "--sections", default="c,imagenet,cpu", help="--gpu: comma list among c, imagenet, cpu (default all)"
    )
    ap.add_argument(
        "--imagenet-iterations",
        type=int,
        default=MIN_ITERATIONS,
        help="--gpu: force every reduced-ImageNet fit to this many L-BFGS iterations (0: the family's own stop)",
    )
    ap.add_argument("--profile", action="store_true", help="--gpu: one reduced-ImageNet round under torch's profiler")
    ap.add_argument(
        "--cpu-repeat", type=int, default=1, help="--gpu: runs of the CPU engine on all cores at (c) (default 1)"
    )
    ap.add_argument("--phases", action="store_true", help="CPU runs: each phase's wall time on the driving thread")
    ap.add_argument("--json-out", default=None, help="append one JSON line per measurement")
    ap.add_argument("--workdir", default=None, help="where the feature files are written (reused if present)")
    args = ap.parse_args(argv)
    shapes = TINY if args.tiny else SHAPES
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="aflite-hw-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} cores; numpy {np.__version__}; load {os.getloadavg()[0]:.2f}; "
        f"maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}",
        flush=True,
    )
    if args.cpu:
        run_cpu(args, shapes, workdir)
    else:
        run_gpu(args, shapes, workdir)


if __name__ == "__main__":
    main()
