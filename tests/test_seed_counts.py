"""Figure 2 and AFOptimum narratives over seeds (issue 27): counts and ranges instead of seed 0's story."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from aflite_core.cli import main
from aflite_core.experiments.seed_counts import (
    chance_band,
    optimum_narrative,
    optimum_summary,
    synthetic_narrative,
    synthetic_summary,
)


def _long():
    """Two sets × three seeds: τ stops 5 of 6 runs; the linear model below chance on seed 0 only."""
    rows = []
    for seed in range(3):
        for name, lin in (("sep 1", 0.40 if seed == 0 else 0.62), ("sep 0.2", 0.52)):
            rows.append(
                {
                    "dataset": name,
                    "seed": seed,
                    "n_after": 450,
                    "linear_after": lin,
                    "rbf_after": 0.8 + 0.01 * seed,
                    "biased_share_after": 0.1 + 0.01 * seed,
                    "flipped_removed_share": 0.9 if name == "sep 1" else np.nan,
                    "stop_reason": "target_size_reached" if (seed, name) == (2, "sep 1") else "fewer_than_k_qualified",
                }
            )
    return pd.DataFrame(rows)


def test_synthetic_counts_say_on_how_many_cells_each_statement_holds():
    s = synthetic_summary(_long()).set_index("dataset")
    assert s.loc["sep 1", "tau_stops"] == 2 and s.loc["sep 0.2", "tau_stops"] == 3
    assert (s.loc["sep 1", ["linear_below", "linear_at", "linear_above"]].tolist()) == [1, 0, 2]
    assert s.loc["sep 0.2", "linear_at"] == 3  # 0.52 is within 2 SE of 0.5 on 450 rows
    text = synthetic_narrative(_long())
    assert text[0].startswith("τ's early stop ends the run on 5 of 6 set × seed cells")
    assert "below chance (beyond two binomial standard errors of 0.5) on 1 of 6 cells" in text[1]
    assert text[2] == "Seeds with at least one set below chance: 1 of 3 (0)."
    assert "Flipped rows removed: 90%-90%" in text[-1]
    assert chance_band(400) == 0.05


def test_optimum_counts_compare_a_and_b_on_every_instance():
    t = pd.DataFrame(
        {
            "case": ["c"] * 6,
            "strategy": ["greedy", "slice", "sample"] * 2,
            "instance": [0, 0, 0, 1, 1, 1],
            "gap": [0.5, 0.25, 0.3, 0.0, 0.0, 0.1],
            "bias_aflite": [0.875, 0.625, 0.7, 0.375, 0.375, 0.45],
        }
    )
    s = optimum_summary(t).set_index("strategy")
    assert s.loc["slice", "optimum_reached"] == 1 and s.loc["greedy", "gap_max"] == 0.5
    line = optimum_narrative(t)[0]
    assert "ends above slicing (B) on 1 of 2 instances, equal on 1, below on 0" in line
    assert "sampling (C, mean over its seeds) gap 0.100-0.300" in line


def test_cli_synthetic_and_optimum_print_the_counts_over_seeds(capsys):
    args = ["synthetic", "--n-samples", "300", "--separations", "0.6", "--partitions", "8", "--splits", "2"]
    assert main([*args, "--seeds", "0,1"]) == 0
    out = capsys.readouterr().out
    assert "seed 0 (one run: the notes below describe it" in out
    assert "Across 2 seeds [0, 1]" in out and "τ's early stop ends the run on" in out
    assert main([*args, "--seeds", "0,1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["across_seeds"]["seeds"] == [0, 1] and len(payload["across_seeds"]["summary"]) == 1
    assert main(["optimum", "--instances", "2", "--sample-seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "Across 2 generated instances" in out and "one row at a time (A) ends above slicing (B)" in out
