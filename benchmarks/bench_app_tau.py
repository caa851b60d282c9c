"""τ and k on a large opened run (issue 25): what a τ step costs the Filter page, and a rerun through the queue.

Builds a planted-bias dataset with a seeded generator (nothing large in the repository), writes an AFLite run
with the CLI (``python -m aflite_core filter --out``) below a temporary run root, opens it as the Data page does
(:func:`aflite_app.compute.rundirs.open_run_directory`, features memory-mapped) and times, in this process:

* ``open``: opening the run directory;
* ``τ step``: the Filter page's computation for a higher τ (``runs.result``: read off the stored run with
  ``narrow_to_tau``, no AFLite run), its first time and a second τ, plus the page's chart and class table;
* ``τ below``: ``runs.prepare_run`` (the memory check and the plan, in the page's thread) and the run itself as
  the page runs it - a heavy job through the queue in a ``BackgroundRun`` - with the time to its first progress
  report and to its end, and the time left the Filter page's progress text gave after its first round.

Prints one JSON line per measurement and a Markdown table; the process's peak resident size at the end.

    python benchmarks/bench_app_tau.py                # 550,000 × 384, 3 classes (the issue's run B)
    python benchmarks/bench_app_tau.py --rows 550000 --dim 32
    python benchmarks/bench_app_tau.py --tiny         # 10,000 × 8, 16 partitions: a few seconds
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _record(what: str, seconds: float, **extra) -> dict:
    rec = {"what": what, "seconds": round(seconds, 4), **extra}
    print(json.dumps(rec), flush=True)
    return rec


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring); 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=550_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--tiny", action="store_true", help="10,000 × 8, 16 partitions: a few seconds")
    args = parser.parse_args(argv)
    n, d = (10_000, 8) if args.tiny else (args.rows, args.dim)
    m = 16 if args.tiny else 64

    from aflite_core.cli import main as cli
    from aflite_core.data.planted_bias import make_planted_bias

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["AFLITE_RUN_ROOT"] = str(root)
        (root / "data").mkdir()
        t = time.perf_counter()
        X, y, _ = make_planted_bias(n, d, n_classes=3, random_state=0)
        np.save(root / "data" / "X.npy", X)
        np.savetxt(root / "data" / "y.txt", y, fmt="%d")
        del X
        _record("generate", time.perf_counter() - t, rows=n, dim=d)
        # the parameters: m 64, t 10 %, k 2 %, τ 0.75, target N/3
        run_args = ["--target-size", str(n // 3), "--train-size", str(n // 10), "--slice-size", str(n // 50)]
        run_args += ["--partitions", str(m), "--tau", "0.75", "--seed", "0", "--quiet", "--out", str(root / "run")]
        t = time.perf_counter()
        features = ["--features", str(root / "data" / "X.npy"), "--labels", str(root / "data" / "y.txt")]
        assert cli(["filter", *features, *run_args]) == 0
        _record("CLI run", time.perf_counter() - t)

        from aflite_app import admission, jobs
        from aflite_app.charts import runs as charts
        from aflite_app.compute import rundirs, runs
        from aflite_app.specs import SessionData
        from aflite_app.ui import describe_filter_run

        t = time.perf_counter()
        key, data, spec, opened = rundirs.open_run_directory("run")
        _record("open", time.perf_counter() - t, rounds=opened.n_rounds)
        session = SessionData(uploads={key: data}, run_dirs={key: {"spec": spec, "result": opened}})
        rows = []
        for tau in (0.76, 0.80, 0.90):
            t = time.perf_counter()
            shown = runs.result(spec.with_(tau=tau), session=session)
            read_off = time.perf_counter() - t
            t = time.perf_counter()
            charts.removal_chart(shown)
            runs.class_impact(shown)
            page = time.perf_counter() - t
            rows.append(_record(f"τ step to {tau:.2f}", read_off, page_chart_and_table=round(page, 4)))
            assert runs.narrowed_from(shown) == 0.75
        below = spec.with_(tau=0.70)
        t = time.perf_counter()
        target = runs.prepare_run(below, session=session)
        rows.append(
            _record("τ below: check and plan", time.perf_counter() - t, heavy=isinstance(target, admission.HeavyJob))
        )
        describe = describe_filter_run(below, n)
        t = time.perf_counter()
        run = jobs.BackgroundRun(below, target).start()
        while run.progress is None and run.step is None and not run.done:
            time.sleep(0.01)
        first = time.perf_counter() - t
        left = ""  # the Filter page's progress text, the last one that gave a time left
        while not run.done:
            if run.progress is not None:
                text = describe(run.progress, run.elapsed, run.step)[1]
                left = text if "left" in text or not left else left
            time.sleep(0.05)
        assert run.error is None, run.error
        rows.append(_record("τ below: first progress", first))
        rows.append(_record("τ below: whole run", time.perf_counter() - t, progress_text=left))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\n## {n:,} × {d} (3 classes), m = {m}, CLI run at τ 0.75: {opened.n_rounds} rounds\n")
        print("| what | seconds | note |\n| --- | ---: | --- |")
        for rec in rows:
            note = {k: v for k, v in rec.items() if k not in ("what", "seconds")}
            print(f"| {rec['what']} | {rec['seconds']:.3f} | {json.dumps(note, ensure_ascii=False) if note else ''} |")
        print(f"\npeak resident size of this process: {peak:,.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
