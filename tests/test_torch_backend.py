"""The torch backend (device="torch:cpu" here; the same code runs on a GPU) against the numpy engine."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from aflite_core import aflite, predictability  # noqa: E402
from aflite_core.data.planted_bias import make_planted_bias  # noqa: E402
from aflite_core.engine.logistic import LogisticFamily  # noqa: E402
from aflite_core.engine.models import LinearFamily  # noqa: E402

#: torch devices to test: torch's CPU device always, the GPU where there is one
DEVICES = ["torch:cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU"))]


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return 1.0 if union == 0 else float(np.logical_and(a, b).sum() / union)


def _same_p(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean((a == b) | (np.isnan(a) & np.isnan(b))))


# (rows, features, classes, model, t, k, target): logistic and ridge paths, 2 and 3+ classes, blocks and exact
CASES = {
    "logistic-2": (3000, 16, 2, "linear", 600, 150, 800),
    "logistic-4": (3000, 12, 4, "linear", 600, 150, 800),
    "logistic-exact": (1500, 8, 3, LogisticFamily(block_rows=1), 300, 100, 500),
    "ridge-3": (20000, 32, 3, "ridge", 5000, 1000, 5001),
    "ridge-2": (6000, 16, 2, LogisticFamily(max_work=1.0), 1400, 300, 1500),  # the default family's ridge path
    "ridge-exact": (1500, 8, 3, LinearFamily(block_rows=1), 300, 100, 500),
}


def _data(n, d, C, seed=0):
    X, y, biased = make_planted_bias(n, d, n_classes=C, random_state=seed)
    return X, y, biased


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_torch_agrees_with_numpy(case, device):
    n, d, C, model, t, k, target = CASES[case]
    X, y, biased = _data(n, d, C)
    kw = dict(target_size=target, train_size=t, slice_size=k, model=model, random_state=0)
    ref = aflite(X, y, **kw)
    got = aflite(X, y, device=device, **kw)
    assert got.params["partition_mode"] == ref.params["partition_mode"]
    assert got.params["rows_per_block"] == ref.params["rows_per_block"]
    assert got.params["device"] == ("cuda:0" if device == "cuda" else device) and got.params["precision"] == "float32"
    assert "device" not in ref.params  # the numpy engine's parameters are unchanged
    # round 1: same rows, same partitions
    p_ref, p_got = ref.scores[0], got.scores[0]
    assert _same_p(p_ref, p_got) >= 0.999
    np.testing.assert_array_equal(ref.n_predictions[0], got.n_predictions[0])
    assert _jaccard(p_ref >= 0.75, p_got >= 0.75) >= 0.99
    # the whole run
    assert _jaccard(~ref.kept, ~got.kept) >= 0.95
    assert abs((~ref.kept)[biased].mean() - (~got.kept)[biased].mean()) <= 0.01


def test_eval_rows_and_predictability():
    X, y, _ = _data(4000, 16, 3)
    EX, Ey, _ = _data(800, 16, 3, seed=1)
    kw = dict(target_size=1200, train_size=800, slice_size=200, random_state=3, eval_X=EX, eval_y=Ey)
    ref = aflite(X, y, **kw)
    got = aflite(X, y, device="torch:cpu", **kw)
    assert _same_p(ref.eval_scores[0], got.eval_scores[0]) >= 0.999
    assert _jaccard(~ref.eval_kept, ~got.eval_kept) >= 0.95
    assert _jaccard(~ref.kept, ~got.kept) >= 0.95
    p_ref = predictability(X, y, train_size=800, random_state=3)
    p_got = predictability(X, y, train_size=800, random_state=3, device="torch:cpu")
    assert _same_p(p_ref, p_got) >= 0.999


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model", ["linear", "ridge"])
def test_streaming_equals_resident_and_runs_repeat(model, device, tmp_path):
    X, y, _ = _data(6000, 16, 3)
    EX, Ey, _ = _data(500, 16, 3, seed=1)
    kw = dict(target_size=1500, train_size=1400, slice_size=300, model=model, random_state=1, eval_X=EX, eval_y=Ey)
    resident = aflite(X, y, device=device, **kw)
    again = aflite(X, y, device=device, **kw)
    assert resident.equals(again)
    np.save(tmp_path / "X.npy", X)
    Xm = np.load(tmp_path / "X.npy", mmap_mode="r")
    streamed = aflite(Xm, y, device=device, max_device_bytes=4096, **kw)
    assert streamed.equals(resident)
    if device == "cuda":  # TF32 products: a run of its own, close to the float32 one
        tf32 = aflite(X, y, device=device, precision="tf32", **kw)
        assert _jaccard(~tf32.kept, ~resident.kept) >= 0.95


def test_device_errors():
    X, y, _ = _data(600, 4, 2)
    kw = dict(target_size=300, train_size=150, slice_size=50, random_state=0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="finds no CUDA GPU") as err:
            aflite(X, y, device="cuda", **kw)
        assert str(err.value).count(". ") == 0  # one sentence
    with pytest.raises(ValueError, match="'device' parameter of aflite must be"):
        aflite(X, y, device="gpu", **kw)
    with pytest.raises(ValueError, match="'precision' parameter of predictability"):
        predictability(X, y, train_size=150, device="torch:cpu", precision="fp16")
    with pytest.raises(ValueError, match="only the default linear family"):
        aflite(X, y, device="torch:cpu", model="knn", **kw)
    with pytest.raises(ValueError, match="Dask backend"):
        aflite(X, y, device="torch:cpu", backend="dask", **kw)


def test_resume_on_another_device_is_refused(tmp_path):
    X, y, _ = _data(3000, 8, 2)
    kw = dict(target_size=800, train_size=600, slice_size=150, random_state=0, checkpoint=tmp_path / "cp")
    first = aflite(X, y, device="torch:cpu", callback=lambda p: p.round < 2, **kw)
    assert first.stop_reason == "stopped_by_callback"
    with pytest.raises(ValueError, match="cannot be resumed with device='cpu'"):
        aflite(X, y, resume=True, **kw)
    resumed = aflite(X, y, device="torch:cpu", resume=True, **kw)
    whole = aflite(X, y, device="torch:cpu", **{**kw, "checkpoint": tmp_path / "cp2"})
    assert resumed.equals(whole)


def test_stop_inside_a_round():
    X, y, _ = _data(3000, 8, 3)
    steps = []

    def on_step(s):
        steps.append(s)
        return not (s.round == 2 and s.phase == "predict")

    res = aflite(
        X, y, target_size=800, train_size=600, slice_size=150, random_state=0, device="torch:cpu", on_step=on_step
    )
    assert res.stop_reason == "stopped_by_callback"
    assert len(res.history) == 1
    assert {s.phase for s in steps} == {"fit", "predict"}


def test_cli_device_option(tmp_path, capsys):
    from aflite_core import AFLiteResult
    from aflite_core.cli import main

    X, y, _ = _data(1500, 8, 2)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    args = ["--features", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--train-size", "300"]
    args += ["--seed", "0", "--device", "torch:cpu"]
    run = ["filter", *args, "--target-size", "500", "--slice-size", "100", "--out", str(tmp_path / "run"), "--quiet"]
    assert main(run) == 0
    res = AFLiteResult.load(tmp_path / "run")
    assert res.params["device"] == "torch:cpu"
    assert main(["predictability", *args, "--out", str(tmp_path / "p.csv")]) == 0
    bad = ["filter", *args[:-2], "--device", "cuda:x", "--target-size", "500", "--slice-size", "100"]
    assert main([*bad, "--out", str(tmp_path / "r2")]) != 0
    assert "cuda:N" in capsys.readouterr().err


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n_classes", [4, 40])  # one comparison per class; one bincount above 32 classes
def test_torch_records_the_votes_it_counts(device, n_classes):
    """The device path counts the votes itself (per class, held-out models only): they add up to its prediction
    counts, their gold share is its p, and round 1 (same partitions) matches the numpy engine's votes."""
    X, y, _ = _data(3000, 12, n_classes)
    kw = dict(target_size=800, train_size=600, slice_size=150, random_state=0)
    ref, got = aflite(X, y, **kw), aflite(X, y, device=device, **kw)
    assert got.votes is not None and got.votes.dtype == np.int16
    assert got.votes.shape == (got.n_rounds, 3000, n_classes)
    np.testing.assert_array_equal(got.votes.sum(axis=2), got.n_predictions.astype(np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (got.votes[:, np.arange(3000), y] / got.n_predictions.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(p, got.scores)
    assert np.mean(np.all(ref.votes[0] == got.votes[0], axis=1)) >= 0.999
    assert aflite(X, y, device=device, record_votes=False, **kw).votes is None


@pytest.mark.parametrize("K", [1, 4])
def test_zero_padded_rows_fit_as_unpadded(K):
    """Zero columns after the bias column (the backend aligns the rows to 8 floats) leave the fit unchanged."""
    from aflite_core.engine.torch_logistic import fit_logistic_torch

    gen = torch.Generator().manual_seed(0)
    g, T, d = 3, 200, 13
    X = torch.randn((g, T, d), generator=gen)
    codes = torch.randint(0, 2 if K == 1 else K, (g, T), generator=gen)
    codes[:, :2] = torch.arange(2)  # every class present
    mask = torch.ones((g, T))
    mask[1, 150:] = 0.0  # one model with fewer rows: padding rows as the backend makes them
    X = X * mask[:, :, None]
    plain = torch.cat([X, mask[:, :, None]], dim=2)
    H_inv = torch.linalg.inv(torch.eye(d + 1) * 2.0 + 0.1)
    padded = torch.zeros((g, T, 24))
    padded[:, :, : d + 1] = plain
    H_pad = torch.zeros((24, 24))
    H_pad[: d + 1, : d + 1] = H_inv
    W0, b0, n0 = fit_logistic_torch(plain, codes, mask, K, H_inv, tol=1e-4, max_iter=50)
    W1, b1, n1 = fit_logistic_torch(padded, codes, mask, K, H_pad, tol=1e-4, max_iter=50, n_features=d)
    assert W1.shape == W0.shape == (g, d, K) and b1.shape == b0.shape == (g, K)
    assert torch.equal(n0, n1) and int(n0.max()) > 1
    torch.testing.assert_close(W1, W0, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(b1, b0, rtol=1e-4, atol=1e-5)
