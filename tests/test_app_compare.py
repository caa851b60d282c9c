"""AppTest of the Compare runs page (issue 28): two runs below the run root, their counts, charts, words and rows;
runs over other rows refused in one sentence; rows opened in Inspect; the provenance download on Inspect."""

from __future__ import annotations

import base64
import io
import zipfile

import numpy as np
import pandas as pd
import pytest
from conftest import plotly_figures
from test_run_diff import record

pytestmark = pytest.mark.slow

PAGE = "pages/compare.py"


def _values(v) -> list:
    """A trace's values as a list (Plotly sends arrays as {"dtype", "bdata"})."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A run root with two runs of the same 80 rows (one recorded with its texts) and one run of other rows."""
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    y = [0, 1] * 40
    texts = [("nobody sleeps" if i % 2 == 0 else "a man runs") for i in range(80)]
    record([1 if i % 2 == 0 else -1 for i in range(80)], y).save(
        root / "seed0", table=pd.DataFrame({"hypothesis": texts})
    )
    record([1 if i % 4 == 1 else -1 for i in range(80)], y).save(root / "seed1")
    record([-1] * 10, y[:10]).save(root / "small")
    record([-1] * 80, y).save(root / "damaged")
    meta = (root / "damaged" / "result.json").read_bytes()
    (root / "damaged" / "result.json").write_bytes(meta[: len(meta) // 2])
    return root


def _choose(at, which: str, path: str):
    """Choose the run directory ``path`` below the run root as run A or B."""
    from aflite_app.compute.compare import RunChoice

    box = at.selectbox(key=f"compare-{which}")
    assert f"Run root: '{path}'" in box.options
    box.set_value(RunChoice("root", key=path).ident).run()
    assert not at.exception, at.exception
    return at


def test_two_runs_below_the_run_root_are_compared(app_test, root):
    at = app_test(page=PAGE)
    assert not at.exception, at.exception
    at = _choose(at, "a", "seed1")
    at = _choose(at, "b", "seed0")
    assert not at.error, [e.value for e in at.error]
    shown = {m.label: m.value for m in at.metric}
    assert shown["Removed by A"] == "20" and shown["Removed by B"] == "40"
    assert shown["Removed by both"] == "0" and shown["By one run only"] == "60"
    assert shown["Jaccard of the removed sets"] == "0.00"
    figs = plotly_figures(at)
    assert len(figs) == 3  # by class, by round, the words
    class_fig = next(f for f in figs if any("removed by both" == t.get("name") for t in f["data"]))
    only_a = next(t for t in class_fig["data"] if t.get("name") == "removed by A only")
    assert sum(_values(only_a["y"])) == 20
    words = at.dataframe[0].value  # the significant words (the rows table is keyed)
    assert set(words.loc[words["z"] < 0, "token"]) == {"nobody", "sleeps"}  # B (seed0) removed them
    assert set(words.loc[words["z"] > 0, "token"]) == {"a", "man", "runs"}
    rows = at.dataframe(key="compare-rows").value
    assert len(rows) == 60 and set(rows["group"]) == {"removed by A only", "removed by B only"}
    assert set(rows["text"]) == {"nobody sleeps", "a man runs"}  # the recorded table's text, beside each row
    # not the Filter page's run: Inspect cannot show these rows, and the page says how it could
    assert not [b for b in at.button if b.key == "compare-inspect"]
    assert any("Inspect shows the Filter page's run" in c.value for c in at.caption)
    at.selectbox(key="compare-group").set_value("both").run()
    assert len(at.dataframe(key="compare-rows").value) == 0


def test_runs_over_other_rows_are_refused_in_one_sentence(app_test, root):
    at = _choose(_choose(app_test(page=PAGE), "a", "seed0"), "b", "small")
    assert len(at.error) == 1
    text = at.error[0].value.replace("\\", "")
    assert text.startswith("Run A has 80 rows and run B 10: runs are compared row by row")
    assert text.count(". ") == 0 and not at.exception and not at.metric


def test_the_filter_run_against_a_saved_copy_links_rows_into_inspect(app_test, root):
    from aflite_app.compute import runs
    from aflite_app.state import LAST

    at = app_test(page="pages/filter.py")
    assert not at.exception, at.exception
    spec = at.session_state[LAST]
    run = runs.result(spec)
    run.save(root / "copy")
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    at = _choose(at, "b", "copy")
    assert at.session_state["compare-a"].startswith("filter:")
    assert any("removed the same rows in the same rounds" in s.value for s in at.success)
    at.selectbox(key="compare-group").set_value("a_only").run()  # nothing: the button is not offered
    assert not [b for b in at.button if b.key == "compare-inspect"]
    at.selectbox(key="compare-group").set_value("both").run()
    wanted = at.dataframe(key="compare-rows").value["id"].head(3).tolist()
    at.session_state["compare-rows"] = {"selection": {"rows": [0, 1, 2], "columns": []}}
    at.run()
    button = next(b for b in at.button if b.key == "compare-inspect")
    assert button.label == "Show the selected 3 rows in Inspect"
    button.click().run()
    assert not at.exception, at.exception
    assert any("rows you picked on the Compare runs page" in i.value for i in at.info)
    table = at.dataframe[0].value
    assert sorted(table["id"].tolist()) == sorted(wanted)


def test_inspect_offers_the_dataset_with_its_manifest(app_test, root):
    from aflite_app.compute import inspect as inspect_compute
    from aflite_app.compute import runs
    from aflite_app.compute.datasets import dataset
    from aflite_app.state import LAST

    at = app_test(page="pages/filter.py")
    spec = at.session_state[LAST]
    at.switch_page("pages/inspect.py").run()
    at.session_state["inspect-tab"] = "Download / open a run"
    at.run()
    assert not at.exception, at.exception
    assert any(b.key == "inspect-dl-provenance" for b in at.get("download_button"))
    run = runs.result(spec)
    blob = inspect_compute.provenance_zip_bytes(run, dataset(spec.dataset), spec.dataset.representation)
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        names = set(zf.namelist())
        assert {"aflite-export/README.md", "aflite-export/manifest.json", "aflite-export/run/result.json"} <= names
        data = pd.read_parquet(io.BytesIO(zf.read("aflite-export/data/train-00000-of-00001.parquet")))
    assert len(data) == run.n_kept and (data["aflite_status"] == "kept").all()
    assert np.array_equal(data["aflite_id"].to_numpy(), np.asarray(run.ids)[run.kept])


def test_a_damaged_run_is_refused_naming_it_below_the_run_root(app_test, root, tmp_path):
    at = _choose(_choose(app_test(page=PAGE), "a", "seed0"), "b", "damaged")
    assert len(at.error) == 1 and not at.exception
    text = at.error[0].value.replace("\\", "")
    assert text.startswith("'damaged' holds an incomplete or damaged AFLite run") and str(tmp_path) not in text
