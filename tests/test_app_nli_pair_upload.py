"""An uploaded premise/hypothesis pair with sentence embeddings is treated as a pair (issue 29 item 2).

The .npy files of an SNLI sample sort the hypothesis first (``snli.hyp_minilm.npy`` < ``snli.pair_minilm.npy``):
the upload made the hypothesis alone its default representation, so Training dynamics took it as the full input
and the pair as the partial one ("has no natural partial input (it is not a premise/hypothesis pair)"), and
Baselines said "This dataset has no partial input". The embeddings here are seeded vectors (the sentence model
is not needed to show it).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from aflite_app.compute import datasets
from aflite_app.state import DATASET, REPRESENTATION, UPLOADS

pytestmark = pytest.mark.slow

NLI = ("entailment", "neutral", "contradiction")


def _pairs(n: int = 150, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Pairs whose hypothesis carries the label (as SNLI's do), with 16-d 'embeddings' of the pair and hypothesis."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = NLI[i % 3]
        cue = {"entailment": "someone is outside", "neutral": "a man plays for fun", "contradiction": "nobody sleeps"}
        rows.append(
            {"premise": f"A man walks in the park, scene {i}.", "hypothesis": f"{cue[label]} now.", "label": label}
        )
    codes = np.arange(n) % 3
    hyp = rng.normal(size=(n, 16)).astype(np.float32)
    hyp[np.arange(n), codes] += 1.5
    pair = np.hstack([hyp[:, :8], rng.normal(size=(n, 8))]).astype(np.float32)
    return pd.DataFrame(rows), hyp, pair


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _upload_pair(app_test):
    frame, hyp, pair = _pairs()
    at = app_test(page="pages/data.py")
    at.file_uploader(key="upload-table").set_value(("snli.csv", frame.to_csv(index=False).encode(), "text/csv"))
    files = [
        (name, _npy(x), "application/octet-stream")
        for name, x in (("snli.hyp_minilm.npy", hyp), ("snli.pair_minilm.npy", pair))
    ]
    at.file_uploader(key="upload-features").set_value(files)
    at.run()
    assert not at.exception, at.exception
    at.button(key="use-upload").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_uploaded_pair_with_embeddings_is_a_pair_on_dynamics_and_baselines(app_test):
    at = _upload_pair(app_test)
    data = at.session_state[UPLOADS][at.session_state[DATASET]]
    assert data.pair == ("premise", "hypothesis")
    # the pair's own view is the default (the sidebar's) representation, the hypothesis alone a partial input
    assert data.default_representation == "pair_minilm"
    assert datasets.default_partial_input(data, "pair_minilm") == "hyp_minilm"

    at.switch_page("pages/dynamics.py").run()
    assert not at.exception, at.exception
    partial = next(s for s in at.selectbox if s.label.startswith("Partial input"))
    assert partial.value == "hyp_minilm"
    text = _captions(at)
    assert "no natural partial input" not in text and "not a premise/hypothesis pair" not in text
    assert "Full input: the sidebar's representation 'pair_minilm'" in text and "is a natural one" in text

    # AFLite on the hypothesis alone (the artifact demo): the full input stays the pair, the hypothesis partial
    at.session_state[REPRESENTATION] = "hyp_minilm"
    at.switch_page("pages/filter.py").run()
    assert not at.exception, at.exception
    at.switch_page("pages/dynamics.py").run()
    assert not at.exception, at.exception
    partial = next(s for s in at.selectbox if s.label.startswith("Partial input"))
    assert partial.value == "hyp_minilm"
    text = _captions(at)
    assert "Full input: 'pair_minilm'" in text and "the whole premise/hypothesis pair" in text
    assert "no natural partial input" not in text

    at.switch_page("pages/baselines.py").run()
    assert not at.exception, at.exception
    partial = next(s for s in at.selectbox if s.label.startswith("Partial input"))
    assert partial.value == "hyp_minilm"
    text = _captions(at)
    assert "has no partial input" not in text
    assert "AFLite ran on 'hyp_minilm', one side of the pair only" in text
