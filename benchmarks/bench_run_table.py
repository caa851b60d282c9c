"""Opening a large CLI run with its recorded table (issue 25, "Runs with their data"): time and server memory.

Builds, with a seeded generator (nothing large in the repository), features (``--rows`` × ``--dim`` float32,
written chunk by chunk to a ``.npy``), labels (3 classes), string ids and a table of the rows (a ~100-character
text, a topic and a number, shuffled: matched by its id column); runs ``python -m aflite_core filter --table T
--id-column doc`` on them with few, large rounds (the run itself is not what is timed); then, in this process, as
the app does it:

* ``open``: :func:`aflite_app.compute.rundirs.open_run_directory` (the Data page's "Open run": the run record, the
  features memory-mapped from a data root, ``AFLITE_DATA_ROOTS``, the labels checked, the table read under the
  memory budget and joined);
* ``table``: the table alone (:func:`aflite_core.load_run_table`);
* ``rows_table``: Inspect's rows table with the table's text columns (:func:`aflite_app.inspect_tables.rows_table`);
* ``export_csv``: the kept rows with every column as CSV (Inspect's download);
* ``data_page`` / ``inspect_page`` (unless ``--no-pages``): the Data page's AppTest run after "Open run" is clicked,
  and the Inspect page's first run (server time only: no browser).

Each line gives the wall seconds and the peak resident size of this process over the step, minus its size before
it (sampled at 20 Hz). ``--tiny``: 3,000 rows × 8, a few seconds.

    python benchmarks/bench_run_table.py                 # 550,000 × 384 (845 MB of features on disk)
    python benchmarks/bench_run_table.py --dim 16        # the same rows, small features
    python benchmarks/bench_run_table.py --tiny
    python benchmarks/bench_run_table.py --keep DIR [--without-table]   # DIR reused: the same inputs, both runs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

WORDS = np.array(
    "the a cat dog runs sleeps red green blue never always good bad fine awful market team wins loses rain sun "
    "city river music film book plays reads eats quickly slowly very not".split()
)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def measured(name: str, out: list[dict], **extra):
    """Wall time and peak RSS over the block (sampled at 20 Hz), minus RSS before it; appended to ``out``."""
    before = rss_bytes()
    peak = [before]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.05):
            peak[0] = max(peak[0], rss_bytes())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        wall = time.perf_counter() - t0
        stop.set()
        thread.join()
        peak[0] = max(peak[0], rss_bytes())
        rec = {"step": name, "seconds": round(wall, 3), "peak_over_before_mb": round((peak[0] - before) / 2**20, 1)}
        rec.update(extra)
        out.append(rec)
        print(json.dumps(rec), flush=True)


def build_inputs(folder: Path, n: int, d: int, seed: int = 0) -> None:
    """Features, labels, ids and the table of ``n`` rows, seeded; features written in chunks (never all in RAM)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = np.lib.format.open_memmap(folder / "X.npy", mode="w+", dtype=np.float32, shape=(n, d))
    chunk = 50_000
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        block = rng.standard_normal((stop - start, d), dtype=np.float32)
        block[:, 0] += 1.5 * y[start:stop]
        shortcut = rng.random(stop - start) < 0.25  # a quarter of the rows carry a planted shortcut
        block[shortcut, 1] += 3.0 * (y[start:stop][shortcut] - 1)
        X[start:stop] = block
    X.flush()
    del X
    np.save(folder / "y.npy", y.astype(np.int64))
    ids = np.char.add("doc-", np.char.zfill(np.arange(n).astype(str), 7))
    pd.DataFrame({"id": ids}).to_csv(folder / "ids.csv", index=False)
    words = WORDS[rng.integers(0, len(WORDS), size=(n, 16))]
    texts = [" ".join(row) for row in words.tolist()]
    order = rng.permutation(n)
    table = pd.DataFrame(
        {
            "doc": ids[order],
            "text": np.asarray(texts, dtype=object)[order],
            "topic": np.array(["sport", "news", "arts", "science"])[order % 4],
            "score": rng.random(n),
        }
    )
    table.to_parquet(folder / "t.parquet", index=False)


def cli_run(inputs: Path, out: Path, n: int, table: bool = True) -> float:
    from aflite_core.cli import main

    slice_size = max(20, n // 11)
    argv = ["filter", "--features", str(inputs / "X.npy"), "--labels", str(inputs / "y.npy")]
    argv += ["--ids", str(inputs / "ids.csv")]
    argv += ["--table", str(inputs / "t.parquet"), "--id-column", "doc"] if table else []
    argv += ["--target-size", str(n // 2), "--train-size", str(max(50, n // 10)), "--slice-size", str(slice_size)]
    argv += ["--partitions", "8", "--seed", "0", "--quiet", "--out", str(out)]
    t0 = time.perf_counter()
    assert main(argv) == 0
    return time.perf_counter() - t0


def page_timings(out: list[dict], run: str, with_table: bool) -> None:
    """The Data page's run after "Open run", then Inspect's first run (AppTest: server time, no browser)."""
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    class NavigationPagesManager(PagesManager):  # as tests/conftest.py's app_test: pages through app.py
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    app_test_module.PagesManager = NavigationPagesManager
    os.environ["AFLITE_APP_SYNC_WAIT"] = "600"
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    at.run()
    at.switch_page("pages/data.py").run()
    at.selectbox(key="run-dir").set_value(run)
    with measured("data_page_open_run", out):
        next(b for b in at.button if b.label == "Open run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    with measured("inspect_page_first_run", out):
        at.switch_page("pages/inspect.py").run()
    assert not at.exception, at.exception
    rows = at.dataframe[0].value
    assert ("text" in rows.columns) == with_table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="3,000 rows × 8 features: a few seconds")
    ap.add_argument("--rows", type=int, default=550_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--without-table", action="store_true", help="the same run without --table (what the table adds)")
    ap.add_argument("--no-pages", action="store_true", help="skip the AppTest runs of the Data and Inspect pages")
    ap.add_argument("--keep", type=Path, default=None, help="build in this folder and keep it (default: a temp dir)")
    args = ap.parse_args(argv)
    n, d = (3000, 8) if args.tiny else (args.rows, args.dim)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-run-table-"))
    inputs, root = work / "inputs", work / "runs"
    inputs.mkdir(parents=True, exist_ok=True)
    root.mkdir(exist_ok=True)
    os.environ["AFLITE_RUN_ROOT"] = str(root)
    os.environ["AFLITE_DATA_ROOTS"] = str(inputs)  # the features stay where they were made (no --copy-inputs)
    os.environ.setdefault("AFLITE_APP_UMAP", "0")
    os.environ.setdefault("AFLITE_WARM_UP", "0")
    t0 = time.perf_counter()
    if not (inputs / "t.parquet").is_file():
        build_inputs(inputs, n, d)
    built = time.perf_counter() - t0
    run = "big" if not args.without_table else "big-without-table"
    done = (root / run / "result.json").is_file()
    cli_s = 0.0 if done else cli_run(inputs, root / run, n, not args.without_table)
    print(json.dumps({"rows": n, "dim": d, "build_s": round(built, 1), "cli_filter_s": round(cli_s, 1)}), flush=True)

    from aflite_app import inspect_tables
    from aflite_app.compute import rundirs
    from aflite_app.compute.runs import app_device
    from aflite_core import AFLiteResult, load_run_table

    app_device("linear")  # its one-time import of torch (to look for a GPU) is not the opening's cost
    out: list[dict] = []
    result = AFLiteResult.load(root / run)
    with measured("table", out):
        table = load_run_table(root / run, result=result)
    del table
    with measured("open", out):
        _, data, _, result = rundirs.open_run_directory(run)
    summary, refused = rundirs.table_summary(data)
    print(json.dumps({"data_page_says": summary, "refused": refused, "text_columns": list(data.text_columns)}))
    with measured("rows_table", out):
        rows = inspect_tables.rows_table(result, data)
    assert ("text" in rows.columns) == (not args.without_table)
    del rows
    with measured("export_csv", out):
        payload = inspect_tables.csv_bytes(inspect_tables.export_frame(result, data, "kept"))
    out[-1]["mb"] = round(len(payload) / 2**20, 1)
    del payload, data
    if not args.no_pages:
        page_timings(out, run, not args.without_table)
    print(f"| step | seconds | peak RSS over before (MB) |  ({n:,} rows × {d})")
    for rec in out:
        print(f"| {rec['step']} | {rec['seconds']:.2f} | {rec['peak_over_before_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
