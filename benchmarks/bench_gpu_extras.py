"""What this session's features cost on a GPU: votes, the null, premise groups, and sentence embeddings.

Usage::

    python benchmarks/bench_gpu_extras.py --device cuda --json-out gpu.jsonl      # one prepared GPU slot
    python benchmarks/bench_gpu_extras.py --tiny --device torch:cpu               # every path in seconds (tests)

Shape: issue 25's run B (550,000 × 384 float32, 3 classes, 25 % of rows shifted along a class direction - the
generator of ``bench_hardware.make_many_class_data``; m 64, t 10 %, k 2 %, τ 0.75, target N/3). Sections, each
in try/except so one failure loses nothing else, each printing one block and one JSON line:

* ``votes``: the run with ``record_votes=True`` (the default) and ``False``, twice each (the first of each pair
  also warms the device), wall seconds with the transfer of X; the removed sets must be identical.
* ``null``: the same run with ``null_permutations=2`` against K = 0 - the removals must be identical (the null
  has its own random stream) and the time about K + 1 times the fits.
* ``groups``: the run with premise-like groups of three rows each (``groups=``) against no groups: time, and
  how many rows each removes.
* ``embed``: ``python -m aflite_core embed --device <device>`` on ``--texts`` hypothesis/premise pairs made from
  the bundled SNLI sample (tiled, each copy numbered so no two texts are equal), rows per second; then the
  sample's own 1,496 hypotheses embedded on the device and compared with ``sample_data/snli/hyp_minilm.npy``
  (computed on a CPU): the smallest cosine. ``--model DIR`` names a local model folder (the device machine
  cannot install the packaged model; the session carries its weights).

Nothing here asserts a time; figures go into benchmarks/README.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

SHAPE_B = {"n": 550_000, "d": 384, "classes": 3, "m": 64, "t": 55_000, "k": 11_000, "target": 183_333, "tau": 0.75}
SHAPE_TINY = {"n": 3_000, "d": 16, "classes": 3, "m": 8, "t": 300, "k": 60, "target": 1_000, "tau": 0.75}


def emit(record: dict, json_out: str | None) -> None:
    """Print one measurement as a JSON line (and append it to ``json_out``)."""
    line = json.dumps(record)
    print(line, flush=True)
    if json_out:
        with open(json_out, "a") as fh:
            fh.write(line + "\n")


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def timed_run(X, y, s: dict, device: str, **extra):
    """One AFLite run on ``device``: (result, wall seconds including the transfer of X)."""
    from aflite_core import aflite

    _sync(device)
    t0 = time.perf_counter()
    res = aflite(
        X,
        y,
        target_size=s["target"],
        n_partitions=s["m"],
        train_size=s["t"],
        slice_size=s["k"],
        tau=s["tau"],
        random_state=0,
        device=device,
        **extra,
    )
    _sync(device)
    return res, time.perf_counter() - t0


def section_votes(X, y, s, device, json_out):
    times: dict[str, list[float]] = {"on": [], "off": []}
    kept = {}
    for _ in range(2):
        for flag in ("on", "off"):
            res, sec = timed_run(X, y, s, device, record_votes=flag == "on")
            times[flag].append(round(sec, 2))
            kept[flag] = res.kept
            if flag == "on":
                votes_mb = None if res.votes is None else round(res.votes.nbytes / 2**20, 1)
    emit(
        {
            "section": "votes",
            "device": device,
            "seconds_votes_on": times["on"],
            "seconds_votes_off": times["off"],
            "same_removals": bool(np.array_equal(kept["on"], kept["off"])),
            "votes_MiB": votes_mb,
            "rounds": int(res.n_rounds),
        },
        json_out,
    )


def section_null(X, y, s, device, json_out):
    base, t0 = timed_run(X, y, s, device)
    null, t2 = timed_run(X, y, s, device, null_permutations=2)
    counts = getattr(null, "null_counts", None)
    emit(
        {
            "section": "null",
            "device": device,
            "seconds_K0": round(t0, 2),
            "seconds_K2": round(t2, 2),
            "same_removals": bool(np.array_equal(base.kept, null.kept)),
            "null_recorded": counts is not None,
        },
        json_out,
    )


def section_groups(X, y, s, device, json_out):
    groups = np.arange(len(y)) // 3  # premise-like: three consecutive rows (shuffled data) per group
    free, t_free = timed_run(X, y, s, device)
    grouped, t_grp = timed_run(X, y, s, device, groups=groups)
    a, b = ~free.kept, ~grouped.kept
    emit(
        {
            "section": "groups",
            "device": device,
            "seconds_free": round(t_free, 2),
            "seconds_groups": round(t_grp, 2),
            "removed_free": int(a.sum()),
            "removed_groups": int(b.sum()),
            "jaccard": round(float((a & b).sum() / max((a | b).sum(), 1)), 4),
        },
        json_out,
    )


def _sample_pairs() -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in (ROOT / "sample_data" / "snli" / "pairs.jsonl").read_text().splitlines()]
    return [r["premise"] for r in rows], [r["hypothesis"] for r in rows]


def _embed(table: Path, out: Path, device: str, model: str | None, *pair: str) -> float:
    cmd = [sys.executable, "-m", "aflite_core", "embed", "--table", str(table), "--out", str(out), "--quiet"]
    cmd += ["--device", "cuda" if device.startswith("cuda") else "cpu", *pair]
    if model:
        cmd += ["--model", model]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    return time.perf_counter() - t0


def section_embed(n_texts: int, device: str, model: str | None, json_out, check_rows: int | None = None):
    """``embed`` on ``n_texts`` pairs, timed; then the sample's hypotheses (the first ``check_rows``: all for None)
    embedded again and compared with the packaged CPU embeddings."""
    import pandas as pd

    premises, hypotheses = _sample_pairs()
    reps = -(-n_texts // len(hypotheses))
    frame = pd.DataFrame(
        {
            "premise": [f"{p} ({i})" for i in range(reps) for p in premises][:n_texts],
            "hypothesis": [f"{h} ({i})" for i in range(reps) for h in hypotheses][:n_texts],
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "pairs.parquet"
        frame.to_parquet(big)
        pair_args = ("--text-column", "premise", "--pair-column", "hypothesis")
        sec = _embed(big, Path(tmp) / "pairs.npy", device, model, *pair_args)
        small = Path(tmp) / "hyp.parquet"
        pd.DataFrame({"hypothesis": hypotheses[:check_rows]}).to_parquet(small)
        _embed(small, Path(tmp) / "hyp.npy", device, model, "--text-column", "hypothesis")
        got = np.load(Path(tmp) / "hyp.npy").astype(np.float64)
    ref = np.load(ROOT / "sample_data" / "snli" / "hyp_minilm.npy").astype(np.float64)[: len(got)]
    cos = (got * ref).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
    emit(
        {
            "section": "embed",
            "device": device,
            "pairs": n_texts,
            "seconds": round(sec, 1),
            "pairs_per_second": round(n_texts / sec, 1),
            "min_cosine_vs_cpu": round(float(cos.min()), 6),
            "model": "carried" if model else "packaged",
        },
        json_out,
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or torch:cpu")
    ap.add_argument("--tiny", action="store_true", help="toy shapes, every section in seconds (the tests)")
    ap.add_argument("--sections", default="votes,null,groups,embed", help="comma list (default all)")
    ap.add_argument("--texts", type=int, default=100_000, help="pairs embedded in the embed section")
    ap.add_argument("--model", default=None, help="a local sentence-transformers model folder (embed)")
    ap.add_argument("--json-out", default=None, help="append each JSON line to this file")
    args = ap.parse_args(argv)
    from bench_hardware import gpu_info, make_many_class_data

    s = SHAPE_TINY if args.tiny else SHAPE_B
    emit({"section": "machine", **gpu_info(args.device), "cpus": os.cpu_count(), "shape": s}, args.json_out)
    wanted = args.sections.split(",")
    X = y = None
    if {"votes", "null", "groups"} & set(wanted):
        X, y, _ = make_many_class_data(s, "cpu" if args.device == "torch:cpu" else args.device)
        X = np.ascontiguousarray(X, dtype=np.float32)
    for name in wanted:
        try:
            t0 = time.perf_counter()
            if name == "embed":
                # --tiny compares the first 100 hypotheses (the same code path; all 1,496 took 3.4 s of the test)
                section_embed(
                    40 if args.tiny else args.texts, args.device, args.model, args.json_out, 100 if args.tiny else None
                )
            else:
                {"votes": section_votes, "null": section_null, "groups": section_groups}[name](
                    X, y, s, args.device, args.json_out
                )
            print(f"# {name}: {time.perf_counter() - t0:.1f} s", flush=True)
        except Exception as exc:  # one failed section must not lose the others
            traceback.print_exc()
            emit({"section": name, "error": f"{type(exc).__name__}: {exc}"}, args.json_out)


if __name__ == "__main__":
    main()
