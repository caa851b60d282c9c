"""The synthetic experiment in composable steps (issue 23, item 3): plan once, run once, read every τ off the run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from aflite_core.data.planted_bias import paper_circles
from aflite_core.experiments import figure2 as core
from aflite_core.experiments.figure2 import plan_experiment, synthetic_experiment

KW = dict(n_partitions=12, n_splits=3, slice_size=25, random_state=4)


def test_the_steps_compose_to_the_experiment_at_every_tau():
    data = paper_circles(500)
    plan = plan_experiment(data, **KW)
    runs = plan.run(0.5)
    before = plan.before()
    for tau in (0.5, 0.62, 0.75, 0.9, 1.0):
        results = plan.at_tau(runs, tau)
        after = {name: plan.after(name, res) for name, res in results.items()}
        composed = plan.experiment(results, before, after)
        direct = synthetic_experiment(data, tau=tau, **KW)
        pd.testing.assert_frame_equal(composed.table, direct.table)
        assert composed.params == direct.params
        for name, res in direct.results.items():
            assert composed.results[name].equals(replace(res, provenance=dict(res.provenance, narrowed_from_tau=0.5)))


def test_without_accuracies_the_table_has_nan_accuracies_and_the_same_runs():
    data = paper_circles(300)
    plan = plan_experiment(data, **KW)
    exp = plan.experiment(plan.run(0.7))
    assert exp.table[["linear_before", "linear_after", "rbf_before", "rbf_after"]].isna().all().all()
    direct = synthetic_experiment(data, tau=0.7, accuracies=False, **KW)
    pd.testing.assert_frame_equal(exp.table, direct.table)


def test_tau_is_checked_once_per_step(monkeypatch):
    plan = plan_experiment(paper_circles(300), **KW)
    runs = plan.run(0.5)
    seen = []
    real = core.v.check_probability
    monkeypatch.setattr(core.v, "check_probability", lambda *a, **k: seen.append(a[1]) or real(*a, **k))
    plan.at_tau(runs, 0.8)
    assert seen == ["tau"]  # one check for every dataset (narrow_to_tau then only checks the range)
    with pytest.raises(ValueError, match=r"'tau' parameter of ExperimentPlan\.at_tau"):
        plan.at_tau(runs, 1.5)


def test_runs_that_cannot_stand_for_the_plan_are_refused():
    data = paper_circles(300)
    plan = plan_experiment(data, **KW)
    runs = plan.run(0.6)
    with pytest.raises(ValueError, match="cannot stand for this experiment's run"):
        plan.at_tau(runs, 0.5)  # below the runs' τ
    other = plan_experiment(data, **{**KW, "slice_size": 30})
    with pytest.raises(ValueError, match="cannot stand for this experiment's run"):
        other.at_tau(runs, 0.8)
    with pytest.raises(ValueError, match="lack the datasets"):
        plan.at_tau({}, 0.8)


def test_the_plan_checks_every_parameter_but_tau_at_once():
    with pytest.raises(ValueError, match="'slice_size' parameter of plan_experiment"):
        plan_experiment(paper_circles(100), slice_size=0)
    with pytest.raises(TypeError, match="'datasets' parameter of plan_experiment"):
        plan_experiment([np.zeros((3, 3))])
    plan = plan_experiment(paper_circles(100))
    assert len(plan.seeds) == len(plan.datasets) == len(plan.counts) == 4
