"""The sharded Dask backend (issue #16): every worker owns fixed shards of the blocks and works only on them.

The same seed must give the local result bit for bit whatever the number of workers (1, 2, 3) and the
reduction strategy, survive a worker lost in the middle of a round, and each worker's traffic per round, as
Dask's own transfer counters count it, must stay within a budget set by the model sizes - never feature rows.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from aflite_core import aflite
from aflite_core.data.planted_bias import make_planted_bias
from aflite_core.engine.models import LinearFamily, tree_cover, tree_sum

distributed = pytest.importorskip("distributed") if not os.environ.get("CI") else __import__("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster3():
    from aflite_core.engine.distributed import local_cluster

    cluster, client = local_cluster(3)
    try:
        yield client, sorted(client.nthreads())
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def data():
    # 6,000 rows, t = 1,500: 126 blocks of 48 rows in 16 shards; blocks are scored by the workers owning them
    X, y, _ = make_planted_bias(6000, 16, random_state=0)
    return X, y


KW = dict(target_size=2500, train_size=1500, slice_size=400, tau=0.5, random_state=3, n_partitions=24)


def _backend(client, workers, **kw):
    from aflite_core.engine.distributed import DaskBackend

    return DaskBackend(client, workers=workers, **kw)


def test_tree_sum_and_cover_agree_with_the_whole_tree():
    rng = np.random.default_rng(0)
    values = {s: rng.standard_normal(50).astype(np.float32) for s in range(11)}
    whole = tree_sum(values, 0, 11)
    for lo, hi in [(0, 4), (4, 7), (7, 11), (0, 11), (3, 9)]:
        cover = tree_cover(lo, hi, (0, 11))
        assert cover and cover[0][0] == lo and cover[-1][1] == hi  # the covers tile the range, in shard order
        assert all(b == c for (_, b), (c, _) in itertools.pairwise(cover))
    for n_workers in (1, 2, 3, 5):
        nodes = {}
        for w in range(n_workers):
            lo, hi = (w * 11) // n_workers, ((w + 1) * 11) // n_workers
            for node in tree_cover(lo, hi, (0, 11)):
                nodes[node] = tree_sum(values, *node)
        assert np.array_equal(tree_sum(nodes, 0, 11), whole)


@pytest.mark.parametrize("model", ["ridge", None], ids=["ridge", "default"])
def test_sharded_dask_is_the_local_result_on_1_2_and_3_workers(cluster3, data, model):
    client, addrs = cluster3
    X, y = data
    kw = dict(KW) if model is None else dict(KW, model=model)
    local = aflite(X, y, **kw)
    assert local.params["partition_mode"] == "blocks" and local.n_rounds >= 3
    for n in (1, 2, 3):
        backend = _backend(client, addrs[:n])
        remote = aflite(X, y, **kw, backend=backend)
        assert remote.equals(local), f"{n} workers"
        assert backend.stats and all(s["tasks"] > 0 for s in backend.stats)


def test_both_reductions_and_another_shard_count(cluster3, data):
    client, addrs = cluster3
    X, y = data
    model = LinearFamily(shards=5)
    local = aflite(X, y, **KW, model=model)
    assert local.params["model"]["params"]["shards"] == 5
    assert aflite(X, y, **KW, model=model, backend=_backend(client, addrs, reduce="tree")).equals(local)
    assert aflite(X, y, **KW, model=model, backend=_backend(client, addrs[:2], reduce="owner")).equals(local)


def test_sharded_dask_with_an_evaluation_set(cluster3, data):
    client, addrs = cluster3
    X, y = data
    kw = dict(KW, model="ridge")
    a = aflite(X[:5000], y[:5000], eval_X=X[5000:], eval_y=y[5000:], **kw)
    b = aflite(X[:5000], y[:5000], eval_X=X[5000:], eval_y=y[5000:], **kw, backend=_backend(client, addrs[:2]))
    assert b.equals(a)


def test_per_worker_bytes_per_round_are_model_sized_never_feature_rows(cluster3):
    """Dask's transfer counters, per worker and round: within O(m·D² + m·d·C + rows owned), below its features."""
    client, addrs = cluster3
    X, y, _ = make_planted_bias(20000, 32, random_state=1)
    m, d, C = 8, X.shape[1], 2
    D = d + 1 + C
    kw = dict(target_size=10000, train_size=5000, slice_size=1500, tau=0.5, random_state=0, n_partitions=m)
    backend = _backend(client, addrs, transfer_stats=True)
    res = aflite(X, y, **kw, model="ridge", backend=backend)
    assert res.params["partition_mode"] == "blocks" and res.n_rounds >= 3
    assert res.equals(aflite(X, y, **kw, model="ridge"))
    records = [s["workers"] for s in backend.stats]
    n_owned = len(X) / len(addrs)
    budget = (
        8 * m * D * D * 4  # partial Gram sums (float32), a few subtree sums per worker
        + 8 * D * D * 8  # the shards' total Gram matrices (float64, for the preconditioner)
        + 4 * m * d * C * 4  # the fitted models, fetched by every worker that scores
        + 16 * n_owned  # counts and indices of the rows the worker owns
        + 64 * 2**10  # removed-row indices, task results' framing
    )
    features_owned = n_owned * d * 4
    assert budget < features_owned  # so a budget kept is proof that no worker's rows travelled
    for before, after in itertools.pairwise(records):  # rounds 2.. (round 1 also counts the set-up)
        for addr in addrs:
            moved = (after[addr]["transfer_in"] - before[addr]["transfer_in"]) + (
                after[addr]["transfer_out"] - before[addr]["transfer_out"]
            )
            assert 0 < moved <= budget, (addr, moved, budget)
    # every worker did Gram work and scoring: none of it is left to one machine
    cpu = records[-1]
    assert all(cpu[a]["cpu"].get("gram", 0) > 0 and cpu[a]["cpu"].get("score", 0) > 0 for a in addrs)


class _KillAt(distributed.WorkerPlugin):
    """Kill the worker that starts the first task whose key contains ``mark`` (once: a flag file is consumed)."""

    def __init__(self, flag: str, mark: str) -> None:
        self.flag, self.mark = flag, mark

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and self.mark in str(key):
            try:
                os.remove(self.flag)
            except FileNotFoundError:
                return
            os._exit(1)


@pytest.mark.parametrize("mark", ["aflite-solve-r2-", "aflite-score-r3-"])
def test_a_worker_lost_mid_round_changes_nothing(data, tmp_path, mark):
    """Killed after the shards' partial sums exist (solve) or while scoring: they are rebuilt elsewhere."""
    from aflite_core.engine.distributed import local_cluster

    X, y = data
    kw = dict(KW, model="ridge")
    cluster, client = local_cluster(2)
    flag = tmp_path / "kill-once"
    flag.touch()
    try:
        client.register_plugin(_KillAt(str(flag), mark), name="kill-at")
        survived = aflite(X, y, **kw, backend=_backend(client, None))
    finally:
        client.close()
        cluster.close()
    assert not flag.exists(), f"the plugin killed a worker at {mark}"
    assert survived.equals(aflite(X, y, **kw))
