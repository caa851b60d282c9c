"""Issue 26 in the app: a present GPU runs the Filter page's default family, the page says which device ran, the
stores keep runs by device, and in-app runs use the available cores ÷ the jobs running (there is no GPU here: the
detection is patched)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import pytest

from aflite_app import jobs, settings
from aflite_app.compute import run_devices, runs


@pytest.fixture
def no_device_env(monkeypatch):
    monkeypatch.delenv(settings.DEVICE_ENV, raising=False)
    detect = run_devices.cuda_available  # the cached detector (tests below replace it)
    detect.cache_clear()
    yield monkeypatch
    detect.cache_clear()


def test_the_device_setting_is_read_and_checked(no_device_env):
    assert settings.load().device == "auto"
    assert settings.load({settings.DEVICE_ENV: "CUDA"}).device == "cuda"
    assert settings.load({settings.DEVICE_ENV: "tpu"}).device == "auto"  # ignored with a warning
    with pytest.raises(ValueError, match="device"):
        settings.Settings(device="tpu")


def test_auto_uses_a_present_gpu_for_the_default_family_only(no_device_env):
    no_device_env.setattr(run_devices, "cuda_available", lambda: True)
    assert run_devices.app_device("linear") == "cuda"
    assert run_devices.app_device("ridge") == "cuda"
    assert run_devices.app_device("knn") == "cpu"  # no torch session for it: always the CPU
    no_device_env.setenv(settings.DEVICE_ENV, "cpu")
    assert run_devices.app_device("linear") == "cpu"
    no_device_env.setattr(run_devices, "cuda_available", lambda: False)
    no_device_env.setenv(settings.DEVICE_ENV, "auto")
    assert run_devices.app_device("linear") == "cpu"


def test_without_torch_the_app_runs_on_the_cpu(no_device_env):
    real = importlib.util.find_spec
    no_device_env.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    run_devices.cuda_available.cache_clear()
    assert run_devices.cuda_available() is False
    assert run_devices.app_device("linear") == "cpu"


def test_threads_are_the_cores_divided_by_the_running_jobs(monkeypatch):
    monkeypatch.setattr(jobs, "available_cores", lambda: 16)
    monkeypatch.setattr(jobs, "running_jobs", lambda: 0)
    assert jobs.app_threads() == 16  # the run about to start is the only one
    monkeypatch.setattr(jobs, "running_jobs", lambda: 3)
    assert jobs.app_threads() == 4
    monkeypatch.setattr(jobs, "available_cores", lambda: 2)
    assert jobs.app_threads() == 1  # at least one


def test_device_caption_names_the_gpu_or_the_cpu_threads(monkeypatch):
    from aflite_core import aflite
    from aflite_core.data.planted_bias import make_planted_bias

    X, y, _ = make_planted_bias(300, 6, random_state=0)
    res = aflite(X, y, target_size=200, train_size=80, slice_size=30, n_partitions=8, tau=0.7, n_threads=2)
    assert run_devices.device_caption(res) == "on the CPU, 2 threads"
    monkeypatch.setattr(run_devices, "gpu_name", lambda device: "NVIDIA H200")
    on_gpu = replace(res, params={**res.params, "device": "cuda:0"})
    assert run_devices.device_caption(on_gpu) == "on NVIDIA H200 (cuda)"


def _pretend_gpu(monkeypatch):
    """A machine with a GPU, as the app sees it: detection says yes, the run goes to torch's CPU device and is
    recorded as run on ``cuda:0`` (the path a GPU takes, without one)."""
    real_plan, real_execute = runs.plan_run, runs.execute_run
    seen = []

    def plan(*args, device="cpu", **kwargs):
        seen.append(device)
        return real_plan(*args, device="torch:cpu" if device == "cuda" else device, **kwargs)

    def execute(run):
        res = real_execute(run)
        return replace(res, params={**res.params, "device": "cuda:0"}) if seen[-1] == "cuda" else res

    monkeypatch.setattr(run_devices, "cuda_available", lambda: True)
    monkeypatch.setattr(run_devices, "gpu_name", lambda device: "NVIDIA H200")
    monkeypatch.setattr(runs, "plan_run", plan)
    monkeypatch.setattr(runs, "execute_run", execute)
    return seen


def test_the_filter_page_runs_on_a_present_gpu_and_says_so(app_test, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.delenv(settings.DEVICE_ENV, raising=False)
    seen = _pretend_gpu(monkeypatch)
    at = app_test(page="pages/filter.py")
    assert not at.exception, at.exception
    from aflite_app.state import LAST

    spec = at.session_state[LAST]
    assert spec.device == "cuda" and seen == ["cuda"]
    assert spec in runs._result_store().keys()  # the store keys the run by its device
    assert replace(spec, device="cpu") not in runs._result_store().keys()
    captions = " ".join(c.value for c in at.caption)
    assert "Computed on NVIDIA H200 (cuda)." in captions
    # the same parameters on the CPU are another run (another store entry), not the GPU's answer
    assert runs.stored_result(replace(spec, device="cpu")) is None


def test_the_filter_page_on_the_cpu_names_its_threads(app_test, monkeypatch):
    monkeypatch.setattr(run_devices, "cuda_available", lambda: False)
    at = app_test(page="pages/filter.py")
    assert not at.exception, at.exception
    from aflite_app.state import LAST

    spec = at.session_state[LAST]
    assert spec.device == "cpu"
    result = runs.result(spec)
    threads = result.params["n_threads"]
    assert 1 <= threads <= jobs.available_cores()
    captions = " ".join(c.value for c in at.caption)
    assert f"Computed on the CPU, {threads} thread" in captions
