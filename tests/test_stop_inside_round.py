"""A run asked to stop ends within one step of a round (a group of fits or a block of predictions), not at the
end of the round, and keeps exactly the rounds completed so far; a checkpointed run resumes from there."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from aflite_core import aflite
from aflite_core.data.planted_bias import make_planted_bias

KW = dict(target_size=300, train_size=150, slice_size=40, n_partitions=16, tau=0.5, random_state=5)


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_planted_bias(800, 8, random_state=3)
    return X, y


@pytest.mark.parametrize("model", ["linear", "ridge", LogisticRegression(max_iter=200)], ids=str)
def test_stop_inside_a_round_keeps_the_completed_rounds(data, model):
    X, y = data
    full = aflite(X, y, model=model, **KW)
    assert full.n_rounds >= 3
    calls_after_stop = []
    stopped = [False]

    def on_step(sp):
        if stopped[0]:
            calls_after_stop.append(sp)
        if sp.round == 3 and (sp.phase == "predict" or sp.done >= 1):
            stopped[0] = True
            return False
        return True

    part = aflite(X, y, model=model, on_step=on_step, **KW)
    assert part.stopped and part.n_rounds == 2
    assert not calls_after_stop  # the run ended at the step that said stop
    # the two completed rounds are exactly the uninterrupted run's first two
    assert part.history[["round", "n_removed", "size_after"]].equals(
        full.history[["round", "n_removed", "size_after"]].iloc[:2]
    )
    assert np.array_equal(part.removed_round, np.where(full.removed_round > 2, -1, full.removed_round))


def test_a_run_stopped_inside_a_round_resumes_to_the_uninterrupted_result(data, tmp_path):
    X, y = data
    full = aflite(X, y, **KW)
    part = aflite(X, y, checkpoint=tmp_path / "cp", on_step=lambda sp: sp.round < 3, **KW)
    assert part.stopped and part.n_rounds == 2
    resumed = aflite(X, y, checkpoint=tmp_path / "cp", resume=True, **KW)
    assert resumed.equals(full)


def test_steps_report_progress_within_a_round(data):
    X, y = data
    seen = []
    aflite(X, y, model=LogisticRegression(max_iter=200), on_step=seen.append, **{**KW, "n_partitions": 8})
    fit_steps = [s for s in seen if s.round == 1 and s.phase == "fit"]
    assert [s.done for s in fit_steps][:9] == [0, 0, 1, 2, 3, 4, 5, 6, 7]  # one step per scikit-learn fit
    fractions = [s.fraction_of_round for s in seen if s.round == 1]
    assert fractions == sorted(fractions) and 0 <= fractions[0] and fractions[-1] <= 1


def test_on_step_must_be_callable(data):
    X, y = data
    with pytest.raises(TypeError, match="'on_step' parameter of aflite must be a callable"):
        aflite(X, y, on_step=3, **KW)
