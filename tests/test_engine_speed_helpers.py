"""Helpers that replaced slower code in the engine's hot paths give exactly what the code they replaced gave."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aflite_core.engine import models
from aflite_core.engine.models import gather_rows
from aflite_core.engine.ridge_solve import ridge_system


def _ridge_system_before(P, d, alpha):
    """ridge_system as it was (float64 outer product, then ``astype``-style rounding, then subtraction)."""
    s = P[:, :d, d].astype(np.float64)
    n = np.maximum(P[:, d, d].astype(np.float64), 1.0)
    ysum = P[:, d, d + 1 :].astype(np.float64)
    rhs = P[:, :d, d + 1 :].astype(np.float64) - s[:, :, None] * (ysum / n[:, None])[:, None, :]
    A = P[:, :d, :d]
    s_over_n = s / n[:, None]
    idx = np.arange(d)
    for i in range(len(A)):
        A[i] -= np.multiply.outer(s[i], s_over_n[i]).astype(P.dtype)
        trace = float(np.trace(A[i], dtype=np.float64)) / d
        A[i, idx, idx] += alpha * (trace if trace > 0 else 1.0)
    return A, rhs, s, n, ysum


@given(
    d=st.integers(1, 24),
    g=st.integers(1, 3),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_ridge_system_has_the_bits_of_the_two_pass_centring(d, g, scale, dtype, seed):
    """One pass that rounds the float64 products to P's type = products rounded by ``astype``, bit for bit."""
    rng = np.random.default_rng(seed)
    Z = (rng.standard_normal((5 * d + 10, d + 3)) * scale).astype(dtype)
    Z[:, d] = 1.0
    P = np.stack([Z[i::g].T @ Z[i::g] for i in range(g)]).astype(dtype)
    got = ridge_system(P.copy(), d, 1e-3)
    want = _ridge_system_before(P.copy(), d, 1e-3)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@given(n_rows=st.integers(0, 300), seed=st.integers(0, 2**16))
def test_gather_rows_is_fancy_indexing(n_rows, seed):
    """The kept buffer holds X[rows]; a later, larger call grows it and still gives X[rows]."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((400, 7)).astype(np.float32)
    for rows in (np.sort(rng.choice(400, n_rows, replace=False)), rng.integers(0, 400, n_rows * 2)):
        assert np.array_equal(gather_rows(X, rows), X[rows])


def test_gather_rows_above_the_budget_gets_a_fresh_array(monkeypatch):
    """Past GATHER_BUFFER_BYTES the rows come in their own array (the buffer stays small)."""
    X = np.arange(60, dtype=np.float32).reshape(20, 3)
    monkeypatch.setattr(models, "GATHER_BUFFER_BYTES", 4 * 3 * 4)
    small = gather_rows(X, np.array([1, 2]))
    big = gather_rows(X, np.arange(10))
    assert not np.shares_memory(small, big) and np.array_equal(big, X[:10])


def test_gather_rows_buffers_are_per_thread():
    """Two threads never share a buffer (scoring pieces run on the engine's pool)."""
    X = np.arange(300, dtype=np.float32).reshape(100, 3)
    out = {}

    def work(name, rows):
        out[name] = gather_rows(X, rows)

    threads = [threading.Thread(target=work, args=(i, np.arange(i, i + 10))) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not np.shares_memory(out[0], out[1])
    assert all(np.array_equal(out[i], X[i : i + 10]) for i in range(2))


def test_versions_name_scikit_learn_without_importing_it():
    """A run's provenance names scikit-learn's version; reading it no longer imports the package (1-2 CPU s)."""
    import subprocess
    import sys

    code = (
        "import sys; from aflite_core._utils import versions; v = versions()['scikit-learn']; "
        "print('sklearn' in sys.modules); import sklearn; print(v == sklearn.__version__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


@given(d=st.integers(1, 9), k=st.integers(1, 4), p=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_weights_select_is_the_indexed_reshape(d, k, p, seed):
    """select() by column take = the last-axis indexing and reshape it replaced (values and order)."""
    rng = np.random.default_rng(seed)
    weights = models._LinearWeights(
        rng.standard_normal((d, k, p)).astype(np.float32), rng.standard_normal((k, p)).astype(np.float32), k + 1
    )
    chosen = np.sort(rng.choice(p, int(rng.integers(1, p + 1)), replace=False))
    W, b = weights.select(chosen)
    assert np.array_equal(W, weights.W[:, :, chosen].reshape(d, -1))
    assert np.array_equal(b, weights.b[:, chosen].reshape(-1))


def test_fitted_weights_are_kept_in_c_order():
    """Weights built from transposed pieces (as the fits concatenate them) are stored C-ordered, same values."""
    rng = np.random.default_rng(0)
    pieces = [rng.standard_normal((5, 4, 2)).transpose(1, 2, 0) for _ in range(2)]  # (g, d, C-1) -> (d, C-1, g)
    W = np.concatenate(pieces, axis=2).astype(np.float32)  # numpy keeps the pieces' layout: not C-ordered
    b = rng.standard_normal((10, 2)).astype(np.float32).T
    weights = models._LinearWeights(W, b, 3)
    assert weights.W.flags.c_contiguous and weights.b.flags.c_contiguous
    assert np.array_equal(weights.W, W) and np.array_equal(weights.b, b)
    flat, bias = weights.select(np.arange(10))
    assert np.array_equal(flat, W.reshape(4, -1)) and np.array_equal(bias, b.reshape(-1))


@given(
    rows=st.integers(0, 300),
    n=st.integers(1, 40),
    alpha=st.sampled_from([-1.0, 0.5, 1.0]),
    upper=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_gil_free_ssyrk_has_the_bits_of_scipys(rows, n, alpha, upper, seed):
    """The ctypes call of SciPy's ssyrk (no GIL held) updates the same triangle to the same bits as f2py's."""
    from scipy.linalg.blas import ssyrk

    from aflite_core.engine._blas import ssyrk_into

    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((rows, n)).astype(np.float32)
    C0 = rng.standard_normal((n, n)).astype(np.float32)
    want, got = C0.copy(), C0.copy()
    if rows:
        ssyrk(alpha, Z.T, beta=1.0, c=want.T, trans=0, lower=int(upper), overwrite_c=1)
    ssyrk_into(alpha, Z, got, upper_of_c=upper)
    np.testing.assert_array_equal(got, want)


@given(rows=st.integers(0, 300), m=st.integers(1, 30), n=st.integers(1, 30), seed=st.integers(0, 2**16))
def test_gil_free_sgemm_has_the_bits_of_scipys(rows, m, n, seed):
    from scipy.linalg.blas import sgemm

    from aflite_core.engine._blas import sgemm_nt_into

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((rows, m)).astype(np.float32)
    B = rng.standard_normal((rows, n)).astype(np.float32)
    C0 = rng.standard_normal((n, m)).astype(np.float32)
    want, got = C0.copy(), C0.copy()
    if rows:
        sgemm(-1.0, A.T, B.T, beta=1.0, c=want.T, trans_b=1, overwrite_c=1)
    sgemm_nt_into(-1.0, A, B, got)
    np.testing.assert_array_equal(got, want)


def test_gil_free_blas_refuses_arrays_it_cannot_pass_as_they_lie():
    import pytest

    from aflite_core.engine._blas import ssyrk_into

    Z = np.ones((4, 6), dtype=np.float32)
    with pytest.raises(ValueError, match="C-contiguous float32"):
        ssyrk_into(1.0, Z, np.zeros((6, 6), dtype=np.float64), upper_of_c=True)
    with pytest.raises(ValueError, match="C-contiguous float32"):
        ssyrk_into(1.0, Z, np.zeros((6, 12), dtype=np.float32)[:, ::2], upper_of_c=True)


@given(d=st.integers(1, 80), seed=st.integers(0, 2**16))
def test_gil_free_lower_inverse_has_the_bits_of_solve_triangular(d, seed):
    """The preconditioner's L⁻¹ through ctypes equals SciPy's solve_triangular(L, I) bit for bit."""
    from scipy.linalg import solve_triangular

    from aflite_core.engine._blas import lower_inverse

    rng = np.random.default_rng(seed)
    M = rng.standard_normal((d + 2, d))
    L = np.linalg.cholesky(M.T @ M + 0.01 * np.eye(d))
    want = solve_triangular(L, np.eye(d), lower=True, check_finite=False)
    got = lower_inverse(L)
    np.testing.assert_array_equal(got, want)
    assert got.flags.f_contiguous


def test_gil_free_lower_inverse_refuses_a_singular_or_misshapen_matrix():
    import pytest

    from aflite_core.engine._blas import lower_inverse

    L = np.tril(np.ones((5, 5)))
    L[2, 2] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="diagonal 2"):
        lower_inverse(L)
    with pytest.raises(ValueError, match="C-contiguous float64"):
        lower_inverse(np.asfortranarray(np.tril(np.ones((5, 5)))))
    with pytest.raises(ValueError, match="square"):
        lower_inverse(np.ones((3, 4)))


def _ticks_during_one_call(call) -> tuple[int, float]:
    """Python loop iterations another thread makes in the middle 80 % of one ``call()`` (and its seconds)."""
    import time

    from aflite_core._utils import blas_threads

    span: dict[str, float] = {}
    done = threading.Event()

    def work() -> None:
        span["start"] = time.perf_counter()
        call()
        span["end"] = time.perf_counter()
        done.set()

    ticks = []
    with blas_threads(1):
        worker = threading.Thread(target=work)
        worker.start()
        while not done.is_set():
            ticks.append(time.perf_counter())
        worker.join()
    lo, hi = span["start"], span["end"]
    return sum(lo + 0.1 * (hi - lo) < t < hi - 0.1 * (hi - lo) for t in ticks), hi - lo


def test_the_removal_downdates_let_other_threads_run():
    """While one thread is inside a long downdate, Python code in another thread keeps running (the GIL is
    free). f2py's ssyrk holds the GIL for the whole call (no tick inside one 0.1 s call, measured), so the
    engine's threads removed rows one at a time."""
    from aflite_core.engine.shards import _fused_downdate

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((1024, 3000)).astype(np.float32)
    C = np.zeros((3000, 3000), dtype=np.float32)
    inside, seconds = _ticks_during_one_call(lambda: _fused_downdate(Z, C, 1.0))
    assert inside > 100, (inside, seconds)


def test_the_preconditioners_inverse_lets_other_threads_run():
    """The round's preconditioner leaves the GIL free, so the Gram sums' tiles run beside it. (SciPy 1.18.1's
    solve_triangular held the GIL in 12 % of py-spy's GIL samples of a 16-thread run at the SNLI shape; 1.17's
    releases it.)"""
    from aflite_core.engine._blas import lower_inverse

    rng = np.random.default_rng(0)
    M = rng.standard_normal((1600, 1500))
    L = np.linalg.cholesky(M.T @ M)
    inside, seconds = _ticks_during_one_call(lambda: lower_inverse(L))
    assert inside > 100, (inside, seconds)


def _hash_before(a) -> str:
    """hash_array as it was (every chunk copied by ``tobytes``)."""
    import hashlib

    h = hashlib.sha256()
    h.update(f"{a.dtype.str}{a.shape}".encode())
    if a.ndim == 2:
        step = max(1, (64 * 2**20) // max(1, a.shape[1] * a.itemsize))
        for start in range(0, a.shape[0], step):
            h.update(np.ascontiguousarray(a[start : start + step]).tobytes())
    else:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


@given(
    shape=st.sampled_from([(0,), (7,), (0, 3), (5, 0), (40, 6), (3, 1)]),
    dtype=st.sampled_from(["<f4", "<f8", ">i4", "<i8", "?", "<u2"]),
    order=st.sampled_from(["C", "F", "strided"]),
    seed=st.integers(0, 2**16),
)
def test_hash_array_hashes_what_tobytes_gave(shape, dtype, order, seed):
    """Hashing the chunks where they lie gives the sha256 of the copies it used to make (every layout)."""
    from aflite_core._utils import hash_array

    rng = np.random.default_rng(seed)
    base = (rng.standard_normal((shape[0], 2 * shape[1])) if len(shape) == 2 else rng.standard_normal(shape)) * 9
    a = base.astype(np.dtype(dtype))
    a = a[:, ::2] if len(shape) == 2 and order == "strided" else a[:, : shape[1]] if len(shape) == 2 else a
    if order == "F":
        a = np.asfortranarray(a)
    assert hash_array(a) == _hash_before(a)


def test_hash_array_of_a_memory_mapped_file(tmp_path):
    from aflite_core._utils import hash_array

    X = np.random.default_rng(0).standard_normal((3000, 17)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    assert hash_array(np.load(tmp_path / "x.npy", mmap_mode="r")) == _hash_before(X) == hash_array(X)


def test_deferred_gives_the_value_or_raises_the_error():
    import pytest

    from aflite_core.engine._parallel import Deferred

    assert Deferred(lambda: {"a": 1}).result() == {"a": 1}

    def boom():
        raise OSError("disk went away")

    failing = Deferred(boom)
    with pytest.raises(OSError, match="disk went away"):
        failing.result()


def test_a_run_hashes_its_data_beside_its_rounds(monkeypatch):
    """plan_run returns while the data hashes are still being computed (in a thread of their own); the result
    carries the same hashes as before."""
    from aflite_core._utils import hash_array
    from aflite_core.engine import loop
    from aflite_core.engine.filtering import execute_run, plan_run

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 900)
    X = (rng.standard_normal((900, 6)) + np.eye(6)[y]).astype(np.float32)
    gate, real = threading.Event(), loop.data_hashes

    def gated(*args, **kwargs):
        assert gate.wait(60), "the run never went on without its hashes"
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "data_hashes", gated)
    run = plan_run(X, y, target_size=600, train_size=300, slice_size=100, random_state=0)
    assert run._hashing._thread.is_alive()  # set up without waiting for the hashes
    gate.set()
    res = execute_run(run)
    assert res.provenance["x_sha256"] == hash_array(X) == _hash_before(X)


def test_solve_ridge_takes_the_preconditioner_or_a_function_that_gives_it_once_the_systems_are_built():
    """The pieces of a fit build their systems before waiting for the round's preconditioner: same answer."""
    from aflite_core.engine.ridge_solve import solve_ridge

    rng = np.random.default_rng(3)
    d, C, g = 12, 3, 4
    Z = rng.standard_normal((g, 200, d + 1 + C)).astype(np.float32)
    Z[:, :, d] = 1.0
    Z[:, :, d + 1 :] = np.eye(C, dtype=np.float32)[rng.integers(0, C, (g, 200))]
    P = np.einsum("gti,gtj->gij", Z, Z).astype(np.float32)
    M_inv = np.linalg.inv(P[:, :d, :d].mean(axis=0).astype(np.float64) + np.eye(d)).astype(np.float32)
    calls = []

    def later():
        calls.append(1)
        return M_inv

    w0, b0 = solve_ridge(P.copy(), d, C, 1e-3, M_inv)
    w1, b1 = solve_ridge(P.copy(), d, C, 1e-3, later)
    assert calls == [1]
    np.testing.assert_array_equal(w1, w0)
    np.testing.assert_array_equal(b1, b0)
    w2, b2 = solve_ridge(P.copy(), d, C, 1e-3, lambda: None)  # no preconditioner: direct solves, as with None
    w3, b3 = solve_ridge(P.copy(), d, C, 1e-3, None)
    np.testing.assert_array_equal(w2, w3)
    np.testing.assert_array_equal(b2, b3)


@given(n_rows=st.integers(1, 200), d=st.integers(1, 70), seed=st.integers(0, 2**16))
def test_compiled_gather_copies_the_rows(n_rows, d, seed):
    """The prefetching compiled gather (numba ships with the app) is the one used, and it copies X[rows] exactly."""
    assert models._compiled_gather() is not None
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((300, d)).astype(np.float32)
    rows = rng.integers(0, 300, n_rows)  # repeats, any order
    out = np.full((n_rows, d), np.nan, dtype=np.float32)
    models._compiled_gather()(X, rows, out)
    assert np.array_equal(out, X[rows])


def test_gather_rows_out_of_range_or_memory_mapped(tmp_path):
    """Indices the kernel must not read (negative: numpy wraps them) go to np.take; a memory-mapped X is copied too."""
    X = np.arange(40, dtype=np.float32).reshape(10, 4)
    assert np.array_equal(gather_rows(X, np.array([-1, 0])), X[[-1, 0]])
    with pytest.raises(IndexError):
        gather_rows(X, np.array([3, 10]))
    np.save(tmp_path / "x.npy", X)
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    assert np.array_equal(gather_rows(mapped, np.array([9, 2, 2])), X[[9, 2, 2]])


def test_ridge_system_centres_float32_grams_with_the_compiled_pass():
    """numba ships with the app: float32 systems take the one-pass centring (whose bits the test above checks)."""
    from aflite_core.engine import ridge_solve

    assert ridge_solve._compiled_centring() is not None


def _segments_of(rows: int, cuts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    bounds = np.unique(np.r_[0, np.clip(cuts, 0, rows), rows]).astype(np.int64)
    return bounds[:-1], bounds[1:]


@given(
    rows=st.integers(1, 120),
    D=st.integers(1, 40),
    cuts=st.lists(st.integers(0, 120), max_size=8),
    seed=st.integers(0, 2**16),
)
def test_compiled_downdate_loops_have_the_bits_of_the_calls_one_by_one(rows, D, cuts, seed):
    """The two GIL-free loops of a shard's removal make the fused calls of the Python loops: the same bits, for
    any cut of the rows into segments (an empty segment changes nothing)."""
    from aflite_core.engine import _blas
    from aflite_core.engine.shards import _fused_downdate, _fused_folded_downdate, folded_shape

    if not _blas.compiled_downdates():
        pytest.skip("numba is not importable")  # it ships with umap-learn, which the tests install
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((rows, D)).astype(np.float32)
    lo, hi = _segments_of(rows, cuts)
    lo, hi = np.r_[lo, lo[:1]], np.r_[hi, lo[:1]]  # and one empty segment
    C0 = rng.standard_normal((D, D)).astype(np.float32)
    one_by_one, looped = C0.copy(), C0.copy()
    for a, b in zip(lo, hi):
        if b > a:
            _fused_downdate(Z[a:b], one_by_one, 1.0)
    _blas.total_downdates(Z, lo, hi, looped)
    assert np.array_equal(one_by_one.view(np.int32), looped.view(np.int32))

    n_rows_f, k = folded_shape(D)
    Z1 = np.ascontiguousarray(Z[:, :k])
    Z2 = np.zeros((rows, k), dtype=np.float32)
    Z2[:, : D - k] = Z[:, k:]
    stack0 = rng.standard_normal((5, n_rows_f, k)).astype(np.float32)
    block = rng.integers(0, 5, len(lo))
    one_by_one, looped = stack0.copy(), stack0.copy()
    for a, b, j in zip(lo, hi, block):
        if b > a:
            _fused_folded_downdate(Z1[a:b], Z2[a:b], one_by_one[j])
    _blas.folded_downdates(Z1, Z2, lo, hi, block, looped)
    assert np.array_equal(one_by_one.view(np.int32), looped.view(np.int32))


def test_compiled_downdate_loops_refuse_what_they_cannot_do_safely():
    """Segments outside Z, a block outside the stack or misshapen arrays are refused before any BLAS call."""
    from aflite_core.engine import _blas

    if not _blas.compiled_downdates():
        pytest.skip("numba is not importable")
    Z = np.ones((4, 3), dtype=np.float32)
    C = np.zeros((3, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="segments"):
        _blas.total_downdates(Z, np.array([0]), np.array([5]), C)
    with pytest.raises(ValueError, match="segments"):
        _blas.total_downdates(Z, np.array([3]), np.array([2]), C)
    with pytest.raises(ValueError, match="C must be"):
        _blas.total_downdates(Z, np.array([0]), np.array([4]), np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="C-contiguous float32"):
        _blas.total_downdates(Z.astype(np.float64), np.array([0]), np.array([4]), C)
    Z1 = np.ones((4, 2), dtype=np.float32)
    stack = np.zeros((2, 5, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="block of the stack"):
        _blas.folded_downdates(Z1, Z1, np.array([0]), np.array([4]), np.array([2]), stack)
    with pytest.raises(ValueError, match="shapes do not agree"):
        _blas.folded_downdates(Z1, Z1, np.array([0]), np.array([4]), np.array([0]), np.zeros((2, 4, 2), np.float32))
    assert not stack.any()


def test_a_shards_removal_makes_two_gil_free_calls(monkeypatch):
    """With numba, removing rows from a shard is two compiled loops (the totals', then the blocks'), not a Python
    call per segment: the GIL is taken again twice, not ~100 times (the engine's 16-thread removals waited on it)."""
    from aflite_core import aflite
    from aflite_core.engine import _blas, shard_removal

    if not _blas.compiled_downdates():
        pytest.skip("numba is not importable")
    calls = {"loops": 0, "one_by_one": 0}
    real_total, real_folded, real_one = (
        shard_removal.total_downdates,
        shard_removal.folded_downdates,
        shard_removal._fused_downdate,
    )

    def count(key, fn):
        def wrapped(*a, **k):
            calls[key] += 1
            return fn(*a, **k)

        return wrapped

    monkeypatch.setattr(shard_removal, "total_downdates", count("loops", real_total))
    monkeypatch.setattr(shard_removal, "folded_downdates", count("loops", real_folded))
    monkeypatch.setattr(shard_removal, "_fused_downdate", count("one_by_one", real_one))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 12)).astype(np.float32)
    y = rng.integers(0, 3, 3000)
    res = aflite(
        X, y, target_size=2000, train_size=600, slice_size=200, n_partitions=8, model="ridge", tau=0.05, random_state=0
    )
    assert res.n_rounds >= 2
    assert calls["loops"] > 0 and calls["one_by_one"] == 0
