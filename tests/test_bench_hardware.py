"""benchmarks/bench_hardware.py runs end to end in its --tiny mode (no timing assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_hardware.py"


def _run(tmp_path: Path, *args: str) -> list[dict]:
    out = tmp_path / "hw.jsonl"
    cmd = [sys.executable, str(SCRIPT), *args, "--tiny", "--json-out", str(out), "--workdir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_cpu_mode(tmp_path):
    records = _run(tmp_path, "--cpu")
    runs = [r for r in records if r.get("shape") in ("mid", "c")]
    assert {r["shape"] for r in runs} == {"mid", "c"} and {r["threads"] for r in runs} >= {1}
    for r in runs:
        assert r["seconds"] > 0 and r["flop_bound"] > 0 and 0 < r["share_of_gemm_rate"]
        assert r["jaccard_vs_1_thread"] is not None and 0 <= r["planted_removed"] <= 1


def test_gpu_mode_on_torch_cpu(tmp_path):
    pytest.importorskip("torch")
    records = _run(tmp_path, "--gpu", "--device", "torch:cpu", "--profile", "--phases", "--cpu-repeat", "2")
    sections = {r["section"]: r for r in records}
    assert not [r for r in records if "error" in r], records
    assert {"c_fp32_1", "c_fp32_2", "c_fp32_3", "c_tf32_1", "imagenet_tf32", "c_cpu_all_cores"} <= set(sections)
    assert {"c_profile", "imagenet_profile"} <= set(sections)
    assert sections["c_agree_fp32_1_fp32_2"]["removed_equal"]  # two float32 runs on one device are equal
    imagenet = sections["imagenet_tf32"]
    assert imagenet["projection_full_imagenet_s"] > 0 and len(imagenet["per_round_s"]) == 2
    # every fit is forced to the projection's 20 iterations, and the objective evaluations are counted
    assert imagenet["lbfgs_iterations"] == [20, 20] and min(imagenet["objective_evaluations"]) >= 21
    assert [r["run"] for r in records if r["section"] == "c_cpu_all_cores"] == [1, 2]
    phases = sections["c_cpu_all_cores"]["phases"]
    assert phases["scoring"] > 0 and phases["driving_thread_busy"] > 0


def test_budget_skips_sections(tmp_path):
    pytest.importorskip("torch")
    records = _run(tmp_path, "--gpu", "--device", "torch:cpu", "--budget-s", "1")
    assert any(r.get("skipped") for r in records)
