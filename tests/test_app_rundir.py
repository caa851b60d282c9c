"""The app opens a run directory made by the CLI and shows it on every page (AppTest)."""

from __future__ import annotations

import numpy as np
import pytest

from aflite_core import AFLiteResult
from aflite_core.cli import main
from aflite_core.synthetic import make_planted_bias

pytestmark = pytest.mark.slow

PAGES = ["pages/filter.py", "pages/predictability.py", "pages/inspect.py", "pages/embedding.py",
         "pages/baselines.py", "pages/dynamics.py"]


@pytest.fixture
def run_dir(tmp_path):
    X, y, _ = make_planted_bias(900, 12, random_state=0)
    np.save(tmp_path / "X.npy", X)
    (tmp_path / "y.txt").write_text("\n".join(np.array(["cat", "dog"])[y]) + "\n")
    out = tmp_path / "run"
    assert main(["filter", "--features", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.txt"),
                 "--target-size", "400", "--train-size", "200", "--slice-size", "60", "--seed", "2", "--quiet",
                 "--out", str(out)]) == 0
    return out


def _open(at, path: str):
    at.text_input(key="run-dir").set_value(path)
    next(b for b in at.button if b.label == "Open run").click().run()
    return at


def test_open_a_cli_run_and_see_it_on_every_page(app_test, run_dir, monkeypatch):
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    at = _open(app_test(page="pages/data.py"), str(run_dir))
    assert not at.exception, at.exception
    assert not at.error
    result = AFLiteResult.load(run_dir)
    assert at.session_state["dataset_key"].startswith("run-")
    at.switch_page("pages/filter.py").run()
    assert not at.exception
    shown = {m.label: m.value for m in at.metric}
    assert shown["Rows kept"] == f"{result.n_kept:,}"  # the opened run, not a re-run with other parameters
    assert any(result.stop_message in s.value for s in at.success)
    for page in PAGES[1:]:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, [e.value for e in at.error])


def test_a_folder_that_is_not_a_run_gets_one_clear_message(app_test, tmp_path):
    at = _open(app_test(page="pages/data.py"), str(tmp_path))
    assert not at.exception
    assert any("no result.json" in e.value for e in at.error)
    at = _open(at, str(tmp_path / "missing"))
    assert any("is not a folder" in e.value for e in at.error)


def test_moved_features_are_refused_when_they_do_not_match(app_test, run_dir, tmp_path):
    np.save(tmp_path / "other.npy", np.zeros((900, 12), dtype=np.float32))
    at = app_test(page="pages/data.py")
    at.text_input(key="run-features").set_value(str(tmp_path / "other.npy"))
    at = _open(at, str(run_dir))
    assert not at.exception
    assert any("not the ones the run" in e.value for e in at.error)
