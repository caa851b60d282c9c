"""The app opens run directories made by the CLI — only below its run root — and shows them on every page."""

from __future__ import annotations

import numpy as np
import pytest

from aflite_core import AFLiteResult
from aflite_core.cli import main
from aflite_core.data.planted_bias import make_planted_bias

pytestmark = pytest.mark.slow

PAGES = [
    "pages/filter.py",
    "pages/predictability.py",
    "pages/inspect.py",
    "pages/embedding.py",
    "pages/baselines.py",
    "pages/dynamics.py",
]


def _cli_run(data_dir, out, *extra):
    X, y, _ = make_planted_bias(900, 12, random_state=0)
    data_dir.mkdir(parents=True, exist_ok=True)
    np.save(data_dir / "X.npy", X)
    (data_dir / "y.txt").write_text("\n".join(np.array(["cat", "dog"])[y]) + "\n")
    assert (
        main(
            [
                "filter",
                "--features",
                str(data_dir / "X.npy"),
                "--labels",
                str(data_dir / "y.txt"),
                "--target-size",
                "400",
                "--train-size",
                "200",
                "--slice-size",
                "60",
                "--seed",
                "2",
                "--quiet",
                "--out",
                str(out),
                *extra,
            ]
        )
        == 0
    )
    return out


@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    return root


def _open(at, relative: str):
    at.selectbox(key="run-dir").set_value(relative)
    next(b for b in at.button if b.label == "Open run").click().run()
    return at


def test_open_a_cli_run_below_the_root_and_see_it_on_every_page(app_test, root, monkeypatch):
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    run_dir = _cli_run(root / "data", root / "digits" / "run1")
    at = app_test(page="pages/data.py")
    assert at.selectbox(key="run-dir").options == ["digits/run1"]  # found by walking the root
    at = _open(at, "digits/run1")
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    result = AFLiteResult.load(run_dir)
    assert at.session_state["dataset_key"].startswith("run-")
    at.switch_page("pages/filter.py").run()
    assert not at.exception
    shown = {m.label: m.value for m in at.metric}
    assert shown["Rows kept"] == f"{result.n_kept:,}"  # the opened run, not a re-run with other parameters
    assert any(result.stop_message in s.value for s in at.success)
    from aflite_app.state import INSPECT_TAB_LABELS

    for page in PAGES[1:]:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, [e.value for e in at.error])
        if page == "pages/inspect.py":  # its tabs are drawn only when opened: open each one
            for label in INSPECT_TAB_LABELS[1:]:
                at.session_state["inspect-tab"] = label
                at.run()
                assert not at.exception, (label, at.exception)
                assert not at.error, (label, [e.value for e in at.error])


def test_an_empty_root_says_where_runs_go(app_test, root):
    at = app_test(page="pages/data.py")
    assert not at.exception
    assert any("No run directories below the run root" in i.value for i in at.info)
    assert not at.get("selectbox") or all(s.key != "run-dir" for s in at.selectbox)


def test_files_outside_the_root_are_not_opened_but_can_be_uploaded(app_test, root, tmp_path):
    outside = tmp_path / "elsewhere"  # the features and labels lie outside the run root
    _cli_run(outside, root / "run")
    at = _open(app_test(page="pages/data.py"), "run")
    assert not at.exception
    assert any("not below the app's run root" in e.value and "Upload" in e.value for e in at.error)
    assert all(str(outside) not in e.value for e in at.error)
    at.file_uploader(key="run-features-file").set_value(
        ("X.npy", (outside / "X.npy").read_bytes(), "application/octet-stream")
    )
    at.file_uploader(key="run-labels-file").set_value(("y.txt", (outside / "y.txt").read_bytes(), "text/plain"))
    at = _open(at.run(), "run")
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["dataset_key"].startswith("run-")


def test_copy_inputs_makes_the_run_self_contained(app_test, root, tmp_path):
    _cli_run(tmp_path / "elsewhere", root / "run", "--copy-inputs")
    at = _open(app_test(page="pages/data.py"), "run")
    assert not at.exception
    assert not at.error, [e.value for e in at.error]


def test_wrong_uploaded_labels_are_refused_without_quoting_them(app_test, root, tmp_path):
    _cli_run(tmp_path / "elsewhere", root / "run")
    secret = "tok_" + "9f3c2b7a41d8e6f0" * 4
    at = app_test(page="pages/data.py")
    at.file_uploader(key="run-labels-file").set_value(("y.txt", (secret + "\n").encode(), "text/plain"))
    at.file_uploader(key="run-features-file").set_value(
        ("X.npy", (tmp_path / "elsewhere" / "X.npy").read_bytes(), "application/octet-stream")
    )
    at = _open(at.run(), "run")
    assert not at.exception
    assert any("are not the ones the run" in e.value for e in at.error)
    page_text = " ".join(
        str(el.value)
        for kind in ("error", "markdown", "caption", "info")
        for el in at.get(kind)
        if hasattr(el, "value")
    )
    assert secret[:20] not in page_text


def test_moved_features_are_refused_when_they_do_not_match(app_test, root):
    _cli_run(root / "data", root / "run")
    at = app_test(page="pages/data.py")
    at.file_uploader(key="run-features-file").set_value(
        ("other.npy", _npy(np.zeros((900, 12), dtype=np.float32)), "application/octet-stream")
    )
    at = _open(at.run(), "run")
    assert not at.exception
    assert any("not the ones the run" in e.value for e in at.error)


def _npy(a) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()
