"""Every script under benchmarks/ runs in its tiny mode and prints its figures (issue 23, item 1: none rots unseen).

Each runs in a subprocess, as a user would start it, with ``--tiny`` (toy sizes: a few seconds; the two that start
an app server and Chromium about half a minute). The checks read what the script printed - its JSON records, its
table rows, its summary lines - not only its exit status; no figure's value is asserted (toy sizes, shared
machines). ``benchmarks/reference.py`` is a module the others import: ``bench_core`` and ``bench_adversary`` run it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from browser_fixtures import _require_browser  # one check of Chromium and playwright for every browser test

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"

pytestmark = [pytest.mark.slow]


def run_tiny(script: str, *args: str, timeout: float = 120) -> str:
    """stdout of ``python benchmarks/<script> --tiny <args>``; fails with its output when it exits non-zero."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--tiny", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, (
        f"{script} --tiny exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_every_script_has_a_tiny_mode_and_a_test():
    """A new benchmark without ``--tiny`` or without a test here fails this."""
    tested = {
        "bench_adversary.py",
        "bench_app.py",
        "bench_app_scale.py",
        "bench_core.py",
        "bench_duplicates.py",
        "bench_embedding_map.py",
        "bench_inspect_scale.py",
        "bench_job_starts.py",
        "bench_estimates.py",
        "bench_gpu_extras.py",
        "bench_null.py",
        "bench_plotly_once.py",
        "bench_app_tau.py",
        "bench_run_table.py",
        "bench_scale.py",
        "bench_threads.py",
        "bench_tie_break.py",
        "bench_votes.py",
        "bench_words_progress.py",
        "evalsets_digits.py",
        "snli_annotator_agreement.py",
        "snli_groups.py",
        "soak_app.py",
    }
    modules = {
        "browser_steps.py",
        "reference.py",
        "scale_model.py",
        "served_app.py",
    }  # imported by bench_core / bench_adversary, bench_scale and bench_app_scale, run through them
    others = {"bench_hardware.py"}  # another change adds it with a test of its own (tests/test_bench_hardware.py)
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts - modules - others <= tested, (
        f"add a tiny-mode test for {sorted(scripts - modules - others - tested)}"
    )
    for name in tested:
        assert "--tiny" in (BENCH / name).read_text(encoding="utf-8"), f"{name} has no --tiny"
    assert "def main" not in (BENCH / "reference.py").read_text(encoding="utf-8")


def test_bench_embedding_map():
    """The map's layer pieces, the lasso over every row and the AppTest page timings (--browser is opt-in)."""
    out = run_tiny("bench_embedding_map.py")
    assert "Embedding map at 30,000 × 16" in out
    labels = ["PCA of every row (s)", "density grid (s)", "figure JSON (MB)", "lasso over every row (s)"]
    labels += ["Embedding page, first full run (s)", "lasso: callback + rerun listing it (s)", "peak resident size"]
    for label in labels:
        assert label in out, label
    lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in out.splitlines() if "   " in line.strip())
    assert lines["rows in the lasso"] == lines["rows selected (page)"]  # the page selects what the geometry holds


def test_bench_words_progress():
    """The words tab's progress: equal results with and without the callback, its calls and longest gap."""
    out = run_tiny("bench_words_progress.py")
    assert "20,000 texts" in out and "results equal with and without progress" in out
    for label in ("artifact_statistics:", "artifact_shares:", "app word_statistics:"):
        assert label in out and "longest gap" in out.split(label, 1)[1].splitlines()[0], label


def test_bench_threads():
    """Old and new engine back to back (here this checkout twice) at 1 and 2 threads: the same removed rows."""
    out = run_tiny("bench_threads.py")
    records = json_lines(out)
    assert [(r["engine"], r["threads"]) for r in records] == [("old", 1), ("new", 1), ("old", 2), ("new", 2)]
    for rec in records:
        assert rec["wall"] > 0 and rec["cpu"] > 0 and rec["rounds"] >= 1 and rec["peak_over_x"] > 0
        assert rec["jaccard_vs_first"] == 1.0  # the same engine at any thread count removes the same rows
    assert "new / old at 1 thread(s): CPU" in out and "new, 2 threads against 1:" in out  # the summary lines


def test_bench_core(tmp_path):
    """(a), (b) against the reference loop and the (c) child; the recorded family's solver (registry) included."""
    out = run_tiny("bench_core.py", "--json-out", str(tmp_path / "core.jsonl"))
    records = json_lines(out)
    pairs = {(r["setting"], r.get("data")) for r in records}
    assert pairs == {("a", "anisotropic"), ("a", "isotropic"), ("b", "anisotropic"), ("b", "isotropic"), ("c", None)}
    for rec in records[:4]:
        assert rec["engine_solver"] in ("logistic", "ridge")  # the family_from_spec path that once failed
        assert rec["speedup"] > 0 and rec["reference_rounds"] >= 1 and rec["engine_rounds"] >= 1
        assert 0 <= rec["jaccard_removed_engine_vs_ref"] <= 1
        assert "jaccard_removed_ref_seed0_vs_seed1 (floor)" in rec  # two reference seeds
    assert records[4]["rounds"] >= 1 and records[4]["peak_over_x"] > 0
    assert out.count("x faster; removed-set Jaccard vs reference") == 4
    assert "peak RSS" in out
    assert [json.loads(line) for line in (tmp_path / "core.jsonl").read_text().splitlines()] == records


def test_bench_core_repeats():
    """--repeats N (issue 27): every setting N times from scratch, then min / median / max with the load of each."""
    out = run_tiny(
        "bench_core.py", "--settings", "a", "--data", "isotropic", "--reference-seeds", "1", "--repeats", "2"
    )
    records = json_lines(out)
    assert [(r["setting"], r["data"]) for r in records] == [("a", "isotropic")] * 2
    assert all(r["engine_cpu_seconds"] > 0 and r["reference_cpu_seconds"] > 0 for r in records)
    assert "spread over 2 runs of each setting" in out
    row = next(line for line in out.splitlines() if line.startswith("| (a) | isotropic | 2 |"))
    assert row.count(" / ") >= 10 and "→" in row  # min / median / max of five figures, the load of each run


def test_bench_adversary():
    """Both tiny rows, the loop against the engine, the converged loop; the markdown table."""
    out = run_tiny("bench_adversary.py")
    records = json_lines(out)
    assert [r["row"] for r in records] == ["digits_pca", "a_isotropic"]
    for rec in records:
        assert 0 < rec["loop_mean_p"] <= 1 and 0 < rec["engine_mean_p"] <= 1
        assert "engine_jaccard_vs_converged_loop" in rec
    table = [line for line in out.splitlines() if line.startswith("| digits_pca") or line.startswith("| a_isotropic")]
    assert len(table) == 2 and all(line.count("|") == 12 for line in table)


def test_bench_votes():
    """Recording the votes on and off (same run), their bytes in memory and on disk, and one row's explanation."""
    records = json_lines(run_tiny("bench_votes.py"))
    assert len(records) == 1 and records[0]["votes_mb"] > 0 and records[0]["explain_row_seconds"] >= 0
    assert {"seconds_without_votes", "seconds_with_votes", "overhead", "votes_npy_mb"} <= set(records[0])


def test_bench_gpu_extras():
    """The GPU slot's script on torch's CPU device: votes change no removal, the null neither, groups run, embed."""
    out = run_tiny("bench_gpu_extras.py", "--device", "torch:cpu", timeout=240)
    rec = {r["section"]: r for r in json_lines(out) if "section" in r}  # (embed prints its own JSON line)
    assert set(rec) == {"machine", "votes", "null", "groups", "embed"}, out
    assert rec["votes"]["same_removals"] and rec["votes"]["votes_MiB"] is not None
    assert rec["null"]["same_removals"] and rec["null"]["null_recorded"]
    assert rec["groups"]["removed_groups"] > 0 and 0 < rec["groups"]["jaccard"] <= 1
    assert rec["embed"]["pairs"] == 40 and rec["embed"]["min_cosine_vs_cpu"] > 0.999


def test_bench_tie_break():
    """torch:cpu against numpy per tie-break mode: every shape and mode prints its agreement and CPU seconds."""
    pytest.importorskip("torch")
    out = run_tiny("bench_tie_break.py", timeout=240)
    records = json_lines(out)
    runs = [(r["shape"], r["tie_break"]) for r in records if "tie_break" in r]
    assert runs == [("small", "position"), ("small", "row"), ("b", "position"), ("b", "row")], out
    for rec in records:
        if "tie_break" in rec:
            assert 0 <= rec["jaccard_removed"] <= 1 and rec["cpu_s_numpy"] >= 0 and len(rec["load_at_start"]) == 3
        else:
            assert 0 <= rec["jaccard_removed_numpy_position_vs_row"] <= 1


def test_bench_null():
    """Random labels (engine, null and scikit-learn loop per seed), planted rows, and a run's one-line null."""
    out = run_tiny("bench_null.py")
    assert "## Random labels" in out and "## Planted rows" in out
    assert "mean null / mean observed" in out and "scikit-learn loop" in out
    assert "(observed − null) / planted" in out
    assert "under shuffled labels (3 permutations)" in out
    assert "## chance_table of aflite" in out and "suggest_tau(res, 0.1) = " in out


def test_bench_duplicates():
    """Exact and near duplicates: wall and CPU seconds with the load, the planted pairs' recall, brute force."""
    out = run_tiny("bench_duplicates.py")
    assert "find_duplicates:" in out and "s CPU" in out and "load average" in out
    assert "rows have an exact or near duplicate" in out
    assert "planted near pairs" in out and "brute force on a" in out


def test_bench_estimates():
    """Estimate / actual of an AFLite run and of the Baselines computation at three toy sizes, with the load."""
    out = run_tiny("bench_estimates.py")
    records = json_lines(out)
    assert records[0]["calibration_s"] > 0 and records[0]["aflite"] > 0
    jobs = [(r["job"], r["rows"]) for r in records[1:]]
    families = ["aflite ridge", "aflite logistic", "aflite knn"]  # each family priced by its own shape model
    assert [j for j, _ in jobs] == ["aflite"] * 3 + ["baselines"] * 3 + families
    assert all(r["estimate_s"] > 0 and r["actual_s"] > 0 and r["ratio"] > 0 for r in records[1:])
    assert all(r["speed"] > 0 and r["load1"] >= 0 for r in records[1:])  # the calibration each estimate used
    assert "| job | rows × d | estimate (s) | actual (s) | estimate / actual |" in out
    assert "load average" in out and "within 2×:" in out


def test_bench_app_tau():
    """An opened CLI run: τ steps read off it (no AFLite run), a τ below run as the page runs it."""
    out = run_tiny("bench_app_tau.py")
    records = {r["what"]: r for r in json_lines(out) if "what" in r}  # (the CLI prints its own line)
    assert {"CLI run", "open", "τ step to 0.80", "τ below: check and plan", "τ below: whole run"} <= set(records)
    assert "| τ step to 0.90 |" in out and "peak resident size of this process" in out


def test_bench_inspect_scale():
    """A CLI run opened from a temporary run root; Inspect, its lazy tab and Predictability timed by AppTest."""
    rec = json_lines(run_tiny("bench_inspect_scale.py", timeout=240))[-1]  # after the CLI run's own line
    assert rec["rows"] == 20_000 and rec["inspect_rows_shown"] == 5_000
    for key in ("inspect_first_render_s", "inspect_removed_share_tab_s", "predictability_round_change_s"):
        assert rec[key] > 0 and rec[key.removesuffix("_s") + "_peak_gib"] is not None
    assert rec["inspect_removed_share_tab_done"] and rec["predictability_figures"] == 2
    assert rec["predictability_figure_bytes"] < 200_000  # bins, not one score per row


def test_bench_scale_local_and_dask():
    out = run_tiny("bench_scale.py", timeout=180)
    assert "== SNLI-shaped, local backend" in out and "== SNLI-shaped, dask x2 backend" in out
    assert out.count("peak memory: process") == 2 and "shipped per round: sent" in out
    assert "same decisions on both backends (rounds and kept count): True" in out


def test_bench_scale_scaling_tables_and_their_replay(tmp_path):
    saved = tmp_path / "scale.json"
    out = run_tiny("bench_scale.py", "--scaling", "--json-out", str(saved), timeout=240)
    for row in ("| emulated1 |", "| emulated2 |", "| strong1 |", "| strong2 |", "| strong2_tree |", "| weak1 |"):
        assert row in out
    assert "same result as local: True" in out and "rates (1 worker): Gram" in out
    ridge = [line for line in out.splitlines() if line.startswith("| ridge |")]
    assert len(ridge) == 4 and sum(line.startswith("| logistic |") for line in out.splitlines()) == 4
    replay = run_tiny("bench_scale.py", "--scaling", "--from-json", str(saved), timeout=60)
    assert [line for line in replay.splitlines() if line.startswith("| ridge |")] == ridge  # the same projection


def test_bench_run_table():
    """A run recorded with its table, opened as the Data page does (features from a data root), and its pages."""
    out = run_tiny("bench_run_table.py", timeout=180)
    steps = [r["step"] for r in json_lines(out) if "step" in r]
    assert steps == ["table", "open", "rows_table", "export_csv", "data_page_open_run", "inspect_page_first_run"]
    assert '"data_page_says": "with its table (4 columns: doc, text, topic, score)"' in out
    assert "| open |" in out and "(3,000 rows × 8)" in out


def test_evalsets_digits():
    out = run_tiny("evalsets_digits.py")
    for heading in ("1. Strength", "2. The MLP backbones refitted with 2 other seeds", "3. Accuracy", "4. The models"):
        assert heading in out
    assert "5. Figure 4" in out and out.count("Kendall's coefficient") >= 5
    assert "   mlp: mean " in out and "   mlp_small: mean " in out
    assert "6. Controls: 100 random evaluation subsets" in out and "equal depth" in out  # issue 27: the null
    assert "p vs random" in out and "scipy's p vs a coefficient of 0" in out


@pytest.mark.shared_data
def test_snli_groups(shared_data):
    """With and without premise groups on the SNLI sample: round-1 rows at p >= tau and removed sets, Jaccard."""
    out = run_tiny("snli_groups.py", "--shared", str(shared_data))
    assert "premises" in out and "round1_jaccard" in out and "removed_jaccard" in out
    assert "mean ± sd over seeds:" in out


def test_snli_annotator_agreement(shared_data):
    out = run_tiny("snli_annotator_agreement.py", "--shared", str(shared_data), "--per-seed")
    assert "seeds (0,)," in out and "evaluation rows with random_subset labels" in out
    assert "over 1 seeds run alone (mean, sd, min-max of the per-seed figures):" in out
    lines = out.splitlines()
    assert any("removed in round 1" in line and "selected" in line for line in lines)
    assert {line.split()[0] for line in lines if line.split()} >= {"none", "pair", "hypothesis"}


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_bench_app(tmp_path):
    _require_browser()
    report = tmp_path / "app.json"
    out = run_tiny("bench_app.py", "--json", str(report), timeout=240)
    assert "cold app" in out and "Filter page, τ change -> chart shows the new τ (1 changes" in out
    assert "Synthetic page, tau change -> every panel redrawn (1 changes" in out and "compute only" in out
    figures = json.loads(report.read_text())
    assert figures["home"]["cold_s"] > 0 and figures["filter_tau"]["n"] == 1 and figures["synthetic_tau"]["n"] == 1
    assert figures["compute_digits_s"]["median"] > 0
    assert figures["webgl"] and all("pixels_painted_by_webgl" in w for w in figures["webgl"])


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_bench_plotly_once(tmp_path):
    """The three ways of drawing the same figures, one change each; st.plotly_chart draws each twice, ours once."""
    _require_browser()
    report = tmp_path / "once.json"
    out = run_tiny("bench_plotly_once.py", "--json", str(report), timeout=240)
    runs = {r["mode"]: r for r in json.loads(report.read_text())["runs"]}
    assert set(runs) == {"streamlit", "none", "once"} and "per change" in out
    assert runs["once"]["first"]["afterplots_per_figure"] == [1] * 6 and runs["once"]["changes"][0]["afterplots"] == 6
    assert all(r["changes"][0]["cdp_TaskDuration"] > 0 for r in runs.values())


def test_bench_job_starts():
    """Issue 25's job starts at 3,000 × 16: every job step and its Stop recorded (jobs end at once at this size)."""
    _require_browser()
    out = run_tiny("bench_job_starts.py", timeout=300)
    steps = {(r.get("page"), r.get("kind")) for r in json_lines(out)}
    assert {("Filter", "job start"), ("Inspect", "job start"), ("Baselines", "job start")} <= steps
    assert ("Embedding map", "job start") in steps and ("Baselines", "job stop") in steps


def test_bench_app_scale(tmp_path):
    """Issue 25's app benchmark at 3,000 × 16: a CLI run with its table opened in Chromium, Filter and Inspect timed."""
    _require_browser()
    report = tmp_path / "scale.json"
    shots = tmp_path / "shots"
    out = run_tiny("bench_app_scale.py", "--json", str(report), "--screenshots", str(shots), timeout=240)
    records = json.loads(report.read_text())
    steps = [(r["page"], r["what"]) for r in records]
    assert steps[:4] == [
        ("Data", "page"),
        ("Data", "open the run"),
        ("Filter", "page"),
        ("Filter", "τ step up (0.75 → 0.76)"),
    ]
    assert ("Inspect", "page (rows table)") in steps and ("Inspect", "search 'nobody'") in steps
    for rec in records:
        assert rec["wall_s"] == rec["wall_s"] and rec["wall_s"] > 0, rec  # every step reached (NaN: not reached)
        assert rec["server_cpu_s"] >= 0 and rec["load1"] >= 0
    search = next(r for r in records if r["what"] == "search 'nobody'")
    assert re.match(r"^[\d,]+ of 3,000 rows match", search["note"])  # the recorded table's text was searched
    assert "| run | page | step | wall s | server CPU-s |" in out and "| tiny | Inspect | " in out
    assert sorted(p.name for p in shots.glob("*.png"))[:2] == ["tiny-data-1500.png", "tiny-data-390.png"]


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_soak_app(tmp_path):
    _require_browser()
    out = run_tiny("soak_app.py", "--json-out", str(tmp_path / "soak.jsonl"), timeout=240)
    records = json_lines(out)
    assert len(records[0]["stop_latency_s"]) == 1
    kinds = [r["run"]["kind"] for r in records if "run" in r]
    assert kinds[:2] == ["outside", "page load"] and "tau change" in kinds
    assert "stop" in kinds or "no stop button" in kinds  # (a run that finished before Stop showed is recorded)
    summary = records[-1]["summary"]
    assert summary["full_runs"] == 1 and summary["profile"] is None
    assert summary["threads_start_end"] and summary["rss_mb_start_end"]
    assert (tmp_path / "soak.jsonl").read_text().splitlines()[-1] == json.dumps({"summary": summary})
