"""Class names, never codes, on the Filter and Predictability pages for an uploaded dataset (issue #17).

The classes have different sizes, so a name attached to the wrong code would show another class's count.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import plotly_figures

from aflite_app.compute import uploads
from aflite_app.state import DATASET

pytestmark = pytest.mark.slow

SIZES = {"zebra": 70, "apple": 40, "mango": 110}  # sorted names (apple, mango, zebra) differ from file order


def _upload() -> tuple[str, object]:
    rng = np.random.default_rng(0)
    labels = np.repeat(list(SIZES), list(SIZES.values()))
    rng.shuffle(labels)
    code = pd.Series(labels).map({name: i for i, name in enumerate(SIZES)}).to_numpy()
    X = rng.normal(size=(len(labels), 5)) + 1.5 * np.eye(5)[code]  # learnable, so rounds remove rows
    frame = pd.DataFrame(X.round(4), columns=[f"f{i}" for i in range(5)])
    frame["label"] = labels
    opts = uploads.UploadOptions(label_column="label", feature_columns=tuple(frame.columns[:5]))
    out = uploads.load_upload(frame.to_csv(index=False).encode(), "fruit.csv", opts)
    assert out.ok, out.error
    return out.key, out.dataset


def _values(v):
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
    return np.asarray(v)


def test_filter_and_predictability_show_each_class_by_name_with_its_own_rows(app_test):
    key, data = _upload()
    at = app_test(uploads={key: data}, **{DATASET: key})
    at.switch_page("pages/filter.py").run()
    assert not at.exception
    removal = plotly_figures(at)[0]
    # the bars' customdata: the rows of the class removed in each round (their heights count the rows removed so far)
    bars = {t["name"]: _values(t["customdata"]).sum() for t in removal["data"] if t.get("type") == "bar"}
    assert set(bars) == set(SIZES)  # names, not 0/1/2
    assert all(total <= SIZES[name] for name, total in bars.items())
    for warning in at.warning:  # class-impact warnings name the class too
        assert not any(f"Class {i} " in warning.value for i in range(3))

    at.switch_page("pages/predictability.py").run()
    assert not at.exception
    hist = plotly_figures(at)[0]
    titles = [a["text"] for a in hist["layout"]["annotations"] if a.get("text") in SIZES]
    assert titles == sorted(SIZES)
    # round 1 scores every row: each panel holds exactly its own class's rows (bars of counts, binned on the server)
    per_panel = {}
    for trace in hist["data"]:
        panel = trace.get("xaxis", "x")
        per_panel[panel] = per_panel.get(panel, 0) + int(_values(trace["y"]).sum())
    panels = sorted(per_panel, key=lambda a: int(a[1:] or 1))
    assert [per_panel[p] for p in panels] == [SIZES[name] for name in sorted(SIZES)]
