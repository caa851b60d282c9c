"""The app's one cache mechanism (issue 23, item 4): named stores under one server-wide budget in bytes."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aflite_app import settings
from aflite_app.compute import _stores

ROOT = Path(__file__).resolve().parents[1]


def test_held_bytes_counts_every_distinct_array_once():
    a = np.zeros(1000, dtype=np.float64)
    assert _stores.held_bytes(a) == 8000
    assert _stores.held_bytes({"x": a, "y": [a, a]}) == 8000  # the same array, held twice, counts once
    frame = pd.DataFrame({"v": np.arange(100, dtype=np.int64)})
    assert _stores.held_bytes(frame) >= 800
    assert _stores.held_bytes("abcd") == 4 and _stores.held_bytes(None) == 0


def test_held_bytes_of_a_result_counts_its_arrays():
    from aflite_core import aflite
    from aflite_core.data.planted_bias import make_planted_bias

    X, y, _ = make_planted_bias(400, 6, random_state=0)
    res = aflite(X, y, target_size=250, train_size=100, slice_size=40, n_partitions=8, tau=0.6)
    held = _stores.held_bytes(res)
    assert held >= res.scores.nbytes + res.kept.nbytes + res.removed_round.nbytes + res.y.nbytes


def test_a_figure_counts_its_traces_data_and_a_store_of_figures_evicts_under_the_budget():
    go = pytest.importorskip("plotly.graph_objects")

    def figure(n: int):
        return go.Figure(go.Scatter(x=np.arange(n, dtype=np.float64), y=list(range(n)), text=["row"] * n))

    fig = figure(5_000)
    held = _stores.held_bytes(fig)
    assert 5_000 * (8 + 8 + 3) <= held < 5_000 * (8 + 8 + 3) + 50_000  # the array, the list's numbers, the text
    pool = _stores.Budget(limit_bytes=int(1.5 * held))
    figures = _stores.Store("figures", 10, pool)
    figures.keep("a", fig)
    figures.keep("b", figure(5_000))  # two figures do not fit: the older one goes
    assert figures.recall("a") is None and figures.recall("b") is not None
    assert 0 < pool.held <= pool.limit_bytes


def test_a_fitted_model_counts_what_it_learned_and_a_store_of_models_evicts_under_the_budget():
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1_000, 20))
    y = (X[:, 0] > 0).astype(int)
    linear = LogisticRegression().fit(X, y)
    assert _stores.held_bytes(linear) >= linear.coef_.nbytes + linear.intercept_.nbytes
    knn = KNeighborsClassifier().fit(X, y)  # a kNN keeps its training rows
    assert _stores.held_bytes(knn) >= X.nbytes
    pool = _stores.Budget(limit_bytes=int(1.5 * X.nbytes))
    models = _stores.Store("models", 10, pool)
    models.keep("a", knn)
    models.keep("b", KNeighborsClassifier().fit(X + 1.0, y))
    assert models.recall("a") is None and models.recall("b") is not None
    assert 0 < pool.held <= pool.limit_bytes


def test_torch_tensors_and_modules_count_their_elements():
    torch = pytest.importorskip("torch")
    assert _stores.held_bytes(torch.zeros(1_000, dtype=torch.float32)) == 4_000
    layer = torch.nn.Linear(100, 10)
    assert _stores.held_bytes(layer) == 4 * (100 * 10 + 10)
    assert _stores.held_bytes({"model": layer, "again": layer}) == 4 * (100 * 10 + 10)


def test_the_budget_drops_the_least_recently_used_entry_of_any_store():
    pool = _stores.Budget(limit_bytes=10_000)
    runs, tables = _stores.Store("runs", 10, pool), _stores.Store("tables", 10, pool)
    runs.keep("a", np.zeros(500))  # 4,000 bytes
    tables.keep("t", np.zeros(500))
    assert runs.recall("a") is not None  # "a" now used more recently than "t"
    runs.keep("b", np.zeros(500))  # 12,000 > 10,000: the least recently used ("t", another store) goes
    assert tables.recall("t") is None and runs.recall("a") is not None and runs.recall("b") is not None
    assert pool.held == 8000 == runs.nbytes


def test_each_store_keeps_its_entry_limit_and_a_value_above_the_budget_is_not_kept():
    pool = _stores.Budget(limit_bytes=10_000)
    small = _stores.Store("small", 2, pool)
    for key in "abc":
        small.keep(key, np.zeros(10))
    assert small.keys() == ["b", "c"]
    small.keep("huge", np.zeros(2_000))  # 16,000 bytes: more than the whole budget
    assert small.recall("huge") is None and pool.held == 160
    small.pop("b")
    assert small.keys() == ["c"] and pool.held == 80


def test_memo_keys_by_the_arguments_without_underscore_and_holds_values_by_reference(monkeypatch):
    pool = _stores.Budget(limit_bytes=1 << 20)
    monkeypatch.setattr(_stores, "budget", lambda: pool)
    calls = []

    @_stores.memo("square", 8)
    def square(n: int, _payload: object = None) -> np.ndarray:
        calls.append(n)
        return np.full(10, n * n)

    first = square(3, _payload=object())
    assert square(3, _payload="anything else") is first  # the same array, not a copy
    square(4)
    assert calls == [3, 4]

    @_stores.memo("frame", 8)
    def frame(n: int) -> pd.DataFrame:
        return pd.DataFrame({"v": np.arange(n)})

    got = frame(5)
    got["v"] = -1  # a caller's change does not reach the stored frame (copy-on-write)
    again = frame(5)
    assert again["v"].tolist() == [0, 1, 2, 3, 4]


def test_the_budget_comes_from_the_settings(monkeypatch):
    monkeypatch.setenv(settings.STORE_BUDGET_MB_ENV, "64")
    assert settings.load().store_budget_mb == 64
    assert settings.store_budget_bytes() == 64 * 2**20
    monkeypatch.delenv(settings.STORE_BUDGET_MB_ENV)
    assert settings.store_budget_bytes() == 2048 * 2**20


def _decorators(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                out.append((node.name, ast.unparse(dec)))
    return out


@pytest.mark.parametrize("path", sorted((ROOT / "aflite_app").rglob("*.py")), ids=lambda p: p.name)
def test_no_cache_data_and_cache_resource_only_for_process_singletons(path):
    """At most two mechanisms: the budget's stores (memo) and st.cache_resource for one-per-process objects."""
    for name, dec in _decorators(path):
        assert "cache_data" not in dec, f"{path.name}:{name} uses st.cache_data (a pickled copy on every hit)"
        if "cache_resource" in dec:
            assert "max_entries=1" in dec, f"{path.name}:{name} caches by key in st.cache_resource; use a store"
