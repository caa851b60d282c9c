"""Group-aware partitions (issue 28): ``groups=`` keeps every group on one side of every partition.

Partitions are observed through the ``backend=`` hook: a
:class:`~aflite_core.engine.local_backend.LocalBackend` subclass that records each round's rows and plan. Copies of a
row (every row present three times, one group per original row) are the sharpest check that groups work: with
groups their scores are those of the single copy, without them a model that trained on a copy predicts the row
from it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.neighbors import KNeighborsClassifier

from aflite_core import aflite, null_predictability, predictability
from aflite_core.engine.local_backend import LocalBackend
from aflite_core.engine.models import LinearFamily
from aflite_core.engine.partitions import group_blocks, grouped_exact_plan


class RecordingBackend(LocalBackend):
    """The local backend, keeping every round's current rows and partition plan."""

    def __init__(self) -> None:
        self.plans: list = []

    def draw_plan(self, rows, rng):
        plan = super().draw_plan(rows, rng)
        self.plans.append((np.array(rows), plan))
        return plan


def _split_groups(groups: np.ndarray, plans: list) -> list[tuple[int, int]]:
    """(round, partition) pairs whose training part shares a group with its held-out part."""
    bad = []
    for r, (rows, plan) in enumerate(plans):
        g = groups[rows]
        for j in range(plan.n_partitions):
            train = plan.train_mask(j)
            if np.intersect1d(g[train], g[~train]).size:
                bad.append((r, j))
    return bad


@st.composite
def grouped_problems(draw):
    n_groups = draw(st.integers(8, 40))
    sizes = draw(st.lists(st.integers(1, 7), min_size=n_groups, max_size=n_groups))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat(np.arange(n_groups), sizes))  # groups interleaved, any order
    n = len(labels)
    y = np.arange(n) % 2
    rng.shuffle(y)
    X = (rng.normal(size=(n, 3)) + 1.5 * y[:, None]).astype(np.float32)
    names = np.array([f"g{v}" for v in labels], dtype=object)  # hashable labels, not codes
    mode = draw(st.sampled_from(["exact", "blocks", "knn"]))
    target = n // 2 + 2
    t = draw(st.integers(3, target - 1))
    return X, y, names, mode, target, t, draw(st.integers(0, 1000))


@given(grouped_problems())
def test_no_recorded_partition_ever_splits_a_group(problem):
    """Whatever the group layout and partition mode, every training part is a union of whole groups."""
    X, y, names, mode, target, t, seed = problem
    n = len(y)
    model = {"exact": "ridge", "blocks": LinearFamily(block_rows=2), "knn": KNeighborsClassifier(1)}[mode]
    backend = RecordingBackend()
    aflite(
        X,
        y,
        target_size=target,
        train_size=t,
        slice_size=max(1, n // 8),
        n_partitions=6,
        tau=0.5,
        model=model,
        groups=names,
        random_state=seed,
        backend=backend,
    )
    assert backend.plans
    codes = np.unique(names, return_inverse=True)[1]
    assert _split_groups(codes, backend.plans) == []
    if mode == "blocks":
        assert backend.mode == "blocks"


def test_without_groups_partitions_do_split_groups():
    """The check above has teeth: the same layout without groups splits groups."""
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(60), 3)
    X, y = rng.normal(size=(180, 3)).astype(np.float32), np.arange(180) % 2
    backend = RecordingBackend()
    aflite(X, y, target_size=90, train_size=60, slice_size=20, n_partitions=6, model="ridge", backend=backend)
    assert _split_groups(labels, backend.plans)


def test_grouped_exact_plan_meets_t_within_half_the_boundary_group():
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 6, 200)
    group_of = np.repeat(np.arange(200), sizes)
    plan = grouped_exact_plan(group_of, 32, 150, rng)
    assert np.all(np.abs(plan.train_sizes() - 150) <= sizes.max() / 2)
    assert np.array_equal(plan.block_of, np.arange(len(group_of)))


def test_group_blocks_are_whole_groups_and_even():
    rng = np.random.default_rng(2)
    codes = rng.permutation(np.repeat(np.arange(1000), 3))
    block = group_blocks(codes, 40, rng)
    for g in range(0, 1000, 97):
        assert len(np.unique(block[codes == g])) == 1
    sizes = np.bincount(block)
    assert sizes.min() > 0 and sizes.max() - sizes.min() <= 6


def _tripled(n: int = 240, d: int = 6):
    rng = np.random.default_rng(0)
    y = np.arange(n) % 3
    rng.shuffle(y)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, :3] += 0.8 * np.eye(3, dtype=np.float32)[y]
    return X, y, np.tile(X, (3, 1)), np.tile(y, 3), np.tile(np.arange(n), 3)


@pytest.mark.parametrize("model", ["knn", "ridge-blocks"])
def test_copies_in_one_group_score_like_the_single_copy(model):
    """Every row three times, one group per original row: scores match the single copy's; without groups the
    copies in the training parts inflate them (a 1-NN finds the copy; ridge on 100 features fits it)."""
    X, y, X3, y3, g3 = _tripled(d=6 if model == "knn" else 100)
    fam = KNeighborsClassifier(1) if model == "knn" else LinearFamily(block_rows=4, alpha=1e-6)
    kw = dict(n_partitions=32, model=fam, random_state=0)
    singles = [predictability(X, y, train_size=120, n_partitions=32, model=fam, random_state=s) for s in (1, 2, 3)]
    single = float(np.nanmean(singles))
    grouped = predictability(X3, y3, train_size=360, groups=g3, **kw)
    free = predictability(X3, y3, train_size=360, **kw)
    assert abs(float(np.nanmean(grouped)) - single) < 0.05
    assert float(np.nanmean(free)) > single + 0.15
    # the three copies of a row get the same score with groups (they are always held out together)
    assert np.array_equal(grouped[:240], grouped[240:480], equal_nan=True)


def test_predictability_with_groups_is_round_one_of_aflite():
    _, _, X3, y3, g3 = _tripled(120)
    kw = dict(train_size=120, n_partitions=8, random_state=4, groups=g3)
    p = predictability(X3, y3, **kw)
    res = aflite(X3, y3, target_size=200, slice_size=20, **kw)
    assert np.array_equal(p, res.scores[0], equal_nan=True)
    assert res.params["groups"]["n_groups"] == 120 and res.params["groups"]["largest"] == 3


@pytest.mark.parametrize("model", ["ridge", "knn"])
def test_null_with_groups_uses_the_grouped_partitions(monkeypatch, model):
    """The null scores its permutations on the partitions predictability draws with the same groups and seed."""
    from aflite_core.engine import null

    seen = []
    real = null.permuted_scores

    def spy(session, X, codes, rows, plan, *a, **k):
        seen.append((rows, plan))
        return real(session, X, codes, rows, plan, *a, **k)

    monkeypatch.setattr(null, "permuted_scores", spy)
    _, _, X3, y3, g3 = _tripled(120)
    fam = KNeighborsClassifier(1) if model == "knn" else "ridge"
    kw = dict(train_size=120, n_partitions=8, random_state=4, model=fam)
    grouped = null_predictability(X3, y3, n_permutations=2, groups=g3, **kw)
    assert grouped.shape == (2, 360)
    assert _split_groups(g3, seen) == []


def test_groups_are_recorded_and_survive_save_and_load(tmp_path):
    from aflite_core import AFLiteResult

    _, _, X3, y3, g3 = _tripled(90)
    res = aflite(X3, y3, target_size=150, train_size=80, slice_size=30, n_partitions=8, groups=g3, random_state=0)
    res.save(tmp_path / "run")
    back = AFLiteResult.load(tmp_path / "run")
    assert back.params["groups"] == res.params["groups"]
    assert back.params["groups"]["n_groups"] == 90 and "groups_sha256" in back.provenance


def test_groups_and_seed_reproduce_and_resume(tmp_path):
    _, _, X3, y3, g3 = _tripled(120)
    kw = dict(target_size=150, train_size=100, slice_size=30, n_partitions=8, groups=g3, random_state=5, tau=0.4)
    a, b = aflite(X3, y3, **kw), aflite(X3, y3, **kw)
    assert a.equals(b) and a.n_rounds >= 2
    cp = tmp_path / "cp"
    aflite(X3, y3, **kw, checkpoint=cp, callback=lambda p: p.round < 1)
    resumed = aflite(X3, y3, **kw, checkpoint=cp, resume=True)
    assert resumed.equals(a)
    # the checkpoint of a grouped run is not resumed without its groups
    with pytest.raises(ValueError):
        aflite(X3, y3, **{**kw, "groups": None}, checkpoint=cp, resume=True)


@pytest.mark.parametrize(
    "bad, words",
    [(np.zeros(5), "one group label per row"), (np.zeros(360), "at least 2 groups"), ([None] * 360, "missing")],
)
def test_bad_groups_are_one_sentence(bad, words):
    _, _, X3, y3, _ = _tripled(120)
    with pytest.raises(ValueError, match=words) as info:
        predictability(X3, y3, train_size=100, groups=bad)
    assert "\n" not in str(info.value)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_dask_layout_carries_groups():
    """Blocks of whole groups travel in the layout: the Dask run equals the local one."""
    if not os.environ.get("CI"):
        pytest.importorskip("distributed")
    from aflite_core.engine.distributed import local_cluster

    _, _, X3, y3, g3 = _tripled(600)
    kw = dict(target_size=1000, train_size=500, slice_size=200, tau=0.4, random_state=3, groups=g3, model="ridge")
    cluster, client = local_cluster(2)
    try:
        assert aflite(X3, y3, **kw, backend=client).equals(aflite(X3, y3, **kw))
    finally:
        client.close()
        cluster.close()


@pytest.mark.slow
def test_the_torch_backend_keeps_groups_together():
    """device='torch:cpu' draws the numpy session's grouped blocks and plans: the same p as the numpy engine."""
    pytest.importorskip("torch")
    _, _, X3, y3, g3 = _tripled(240, d=100)
    kw = dict(train_size=360, n_partitions=16, random_state=0, model="ridge", groups=g3)
    ref = predictability(X3, y3, **kw)
    got = predictability(X3, y3, **kw, device="torch:cpu")
    assert np.mean(np.isclose(ref, got, equal_nan=True)) >= 0.99
    free = predictability(X3, y3, **{**kw, "groups": None}, device="torch:cpu")
    assert np.nanmean(free) > np.nanmean(got) + 0.15
    res = aflite(X3, y3, target_size=400, slice_size=60, **kw, device="torch:cpu")
    assert res.params["groups"]["n_groups"] == 240
