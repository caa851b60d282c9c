"""Whole-run agreement of the torch path with the numpy engine, per tie-break mode (issue 26).

Usage::

    python benchmarks/bench_tie_break.py --json-out tie.jsonl                # small shape and setting (b)
    python benchmarks/bench_tie_break.py --shapes b --modes row              # one shape, one mode
    python benchmarks/bench_tie_break.py --shapes mid                        # the issue's mid shape (41 rounds)
    python benchmarks/bench_tie_break.py --tiny                              # every code path in seconds (tests)
    python benchmarks/bench_tie_break.py --device cuda --threads 16          # the GPU against the numpy engine

For each shape and each ``tie_break`` mode (``"position"``, the default, and ``"row"``) it runs the same
``aflite()`` twice with the same seed - ``device="cpu"`` (the numpy engine) and ``--device`` (default
``"torch:cpu"``, the torch backend's code on the CPU; ``cuda`` on a GPU) - and prints the removed sets' Jaccard over
the whole run, the planted rows removed by each and their difference in percentage points, the rounds, and each
run's CPU seconds (``time.process_time``; the machine is shared, so CPU seconds are the steadier figure) with the
1-minute load average. It also prints the Jaccard between the two modes' numpy runs (how much the tie-break alone
moves the removed set).

Shapes (small and (b): the anisotropic planted-bias data of ``bench_core.py``,
``make_planted_bias(..., spectrum_decay=0.5)``; mid: ``bench_core.write_snli_shaped``, as ``bench_hardware.py``):

* (b): 50,000 × 256, 3 classes, m 64, t 20,000, k 2,500, τ 0.75, target 30,000 (``bench_core.SETTINGS["b"]``;
  about 21,000 rows tie at p = 1 in its first round)
* small: 10,000 × 64, 3 classes, m 64, t 4,000, k 500, τ 0.75, target 6,000
* mid (only when named): 120,000 × 512, 3 classes, m 64, t 20,000, k 2,400, τ 0.75, target 22,000 (41 rounds)

Nothing here asserts a figure; the issue's target (removed sets' Jaccard ≥ 0.95, planted rows removed within 1
percentage point) is read off the output and goes into benchmarks/README.md by hand.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_core import DATA, SETTINGS, emit, jaccard, write_snli_shaped  # noqa: E402  (bench_core's data and helpers)

SHAPES = {
    "small": dict(n=10_000, d=64, classes=3, m=64, t=4_000, k=500, tau=0.75, target=6_000),
    "b": SETTINGS["b"],
    "mid": dict(n=120_000, d=512, classes=3, m=64, t=20_000, k=2_400, tau=0.75, target=22_000, data="snli"),
}
TINY = {
    "small": dict(n=1_200, d=16, classes=3, m=8, t=480, k=60, tau=0.75, target=700),
    "b": dict(n=2_000, d=24, classes=3, m=8, t=800, k=100, tau=0.75, target=1_200),
    "mid": dict(n=3_000, d=24, classes=3, m=8, t=600, k=150, tau=0.75, target=900, data="snli"),
}
MODES = ("position", "row")


def one_run(X, y, s: dict, device: str, tie_break: str, threads: int) -> tuple[object, float, float]:
    """(result, CPU seconds, wall seconds) of one whole run."""
    from aflite_core import aflite
    from aflite_core.engine.logistic import _MEMO

    _MEMO.clear()  # no fit memoised by an earlier run in this process: every run fits from scratch
    kw = dict(target_size=s["target"], n_partitions=s["m"], train_size=s["t"], slice_size=s["k"], tau=s["tau"])
    c0, t0 = time.process_time(), time.perf_counter()
    res = aflite(X, y, **kw, random_state=0, n_threads=threads, device=device, tie_break=tie_break)
    return res, time.process_time() - c0, time.perf_counter() - t0


def make_data(s: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, planted mask): anisotropic planted-bias data, or the SNLI-shaped data of ``bench_core``."""
    if s.get("data") == "snli":
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "mid.npy"
            write_snli_shaped(path, s)
            return np.load(path), np.load(path.with_suffix(".labels.npy")), np.load(path.with_suffix(".biased.npy"))
    from aflite_core.data.planted_bias import make_planted_bias

    return make_planted_bias(s["n"], s["d"], n_classes=s["classes"], spectrum_decay=DATA["anisotropic"], random_state=0)


def bench_shape(
    name: str, s: dict, modes: tuple[str, ...], threads: int, json_out: str | None, device: str = "torch:cpu"
) -> list[dict]:
    X, y, biased = make_data(s)
    print(
        f"\n== {name}: {s.get('data', 'anisotropic')} N={s['n']:,} d={s['d']} C={s['classes']} m={s['m']} "
        f"t={s['t']:,} k={s['k']:,} tau={s['tau']} target={s['target']:,}; {threads} thread(s)",
        flush=True,
    )
    records, numpy_removed = [], {}
    for mode in modes:
        load = [round(v, 2) for v in os.getloadavg()]
        ref, ref_cpu, ref_wall = one_run(X, y, s, "cpu", mode, threads)
        got, got_cpu, got_wall = one_run(X, y, s, device, mode, threads)
        a, b = ~ref.kept, ~got.kept
        numpy_removed[mode] = a
        planted = (float(a[biased].mean()), float(b[biased].mean()))
        rec = {
            "shape": name,
            "tie_break": mode,
            "device": device,
            "rounds_numpy": ref.n_rounds,
            "rounds_torch": got.n_rounds,
            "removed_numpy": int(a.sum()),
            "removed_torch": int(b.sum()),
            "jaccard_removed": round(jaccard(a, b), 4),
            "rows_differ": int((a ^ b).sum()),
            "planted_removed_numpy": round(100 * planted[0], 2),
            "planted_removed_torch": round(100 * planted[1], 2),
            "planted_diff_points": round(100 * (planted[1] - planted[0]), 2),
            "cpu_s_numpy": round(ref_cpu, 1),
            "cpu_s_torch": round(got_cpu, 1),
            "wall_s_numpy": round(ref_wall, 1),
            "wall_s_torch": round(got_wall, 1),
            "load_at_start": load,
            "load_at_end": [round(v, 2) for v in os.getloadavg()],
        }
        print(
            f"   {mode:8s}: {device} vs numpy removed-set Jaccard {rec['jaccard_removed']:.4f} "
            f"({rec['rows_differ']:,} rows differ), planted removed {rec['planted_removed_numpy']:.2f} / "
            f"{rec['planted_removed_torch']:.2f} % ({rec['planted_diff_points']:+.2f} points); rounds "
            f"{ref.n_rounds} / {got.n_rounds}; CPU s {ref_cpu:.1f} / {got_cpu:.1f}; load {load}",
            flush=True,
        )
        emit(rec, json_out)
        records.append(rec)
    if len(numpy_removed) == 2:
        between = round(jaccard(numpy_removed["position"], numpy_removed["row"]), 4)
        print(f"   numpy, position vs row: removed-set Jaccard {between:.4f}", flush=True)
        emit({"shape": name, "jaccard_removed_numpy_position_vs_row": between}, json_out)
    return records


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="small,b", help="comma list among small,b")
    ap.add_argument("--modes", default="position,row", help="comma list among position,row")
    ap.add_argument("--threads", type=int, default=1, help="engine threads for every run (default 1)")
    ap.add_argument("--device", default="torch:cpu", help="the torch path's device: torch:cpu (default) or cuda")
    ap.add_argument("--json-out", default=None, help="append the JSON records to this file")
    ap.add_argument("--tiny", action="store_true", help="toy sizes: every code path in seconds (figures mean nothing)")
    args = ap.parse_args(argv)
    shapes = TINY if args.tiny else SHAPES
    modes = tuple(m for m in args.modes.split(",") if m)
    for mode in modes:
        if mode not in MODES:
            ap.error(f"--modes: {mode!r} is not among {list(MODES)}")
    import torch

    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "no GPU used"
    print(f"numpy {np.__version__}, torch {torch.__version__}, {os.cpu_count()} cores, {gpu}", flush=True)
    for name in args.shapes.split(","):
        if name not in shapes:
            ap.error(f"--shapes: {name!r} is not among {sorted(shapes)}")
        bench_shape(name, shapes[name], modes, args.threads, args.json_out, args.device)


if __name__ == "__main__":
    main()
