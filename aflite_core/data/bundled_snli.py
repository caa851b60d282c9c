"""The bundled SNLI sample: 1,496 real sentence pairs with their MiniLM hypothesis embeddings, offline.

``sample_data/snli`` ships whole premise groups of SNLI 1.0 dev pairs (CC BY-SA 4.0) drawn by
``sample_data/make_nli_sample.py`` (seeded, stratified by label) with their all-MiniLM-L6-v2 hypothesis
embeddings, so a fresh install with no network shows real text artifacts. :func:`load_nli_sample` reads it,
checked against its manifest's sha256.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd

from .datasets import SAMPLE_DATA_DIR, Dataset
from .nli import nli_dataset_from_records

__all__ = ["NLI_SAMPLE_DIR", "NLI_SAMPLE_FILES", "load_nli_sample"]

#: the folder of the bundled SNLI sample
NLI_SAMPLE_DIR = SAMPLE_DATA_DIR / "snli"
#: its files: the pairs (JSON Lines) and the hypothesis embeddings (float32, row i = line i)
NLI_SAMPLE_FILES = ("pairs.jsonl", "hyp_minilm.npy")


def _checked_bytes(folder: Path) -> dict[str, bytes]:
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        raise ValueError(
            "The bundled SNLI sample is missing from this install (sample_data/snli); reinstall from a source "
            "checkout, or rebuild it with `python sample_data/make_nli_sample.py`."
        )
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    out = {}
    for name in NLI_SAMPLE_FILES:
        blob = (folder / name).read_bytes() if (folder / name).is_file() else b""
        if hashlib.sha256(blob).hexdigest() != manifest["sha256"].get(name):
            raise ValueError(
                f"The bundled SNLI sample's {name} does not match its manifest (sample_data/snli); rebuild it with "
                "`python sample_data/make_nli_sample.py`."
            )
        out[name] = blob
    return out


def load_nli_sample(*, data_dir: str | Path | None = None, text_features: bool = True) -> Dataset:
    """The bundled SNLI sample as a :class:`Dataset` (no network, about a second with its TF-IDF views).

    Parameters
    ----------
    data_dir : path, optional
        Folder with the sample (default: ``sample_data/snli``).
    text_features : bool, default=True
        Add the TF-IDF views of the pair (``"tfidf"``) and of the hypothesis alone (``"tfidf_hypothesis"``).

    Returns
    -------
    Dataset
        ``frame`` columns ``id, premise, hypothesis, label``; ``pair = ("premise", "hypothesis")``; classes
        entailment, neutral, contradiction; representations ``"hyp_minilm"`` first (384-d, the default) and, with
        ``text_features``, the TF-IDF views.

    Examples
    --------
    >>> from aflite_core.data.bundled_snli import load_nli_sample
    >>> ds = load_nli_sample(text_features=False)
    >>> ds.n_rows, ds.representation("hyp_minilm").shape, ds.classes
    (1496, (1496, 384), ('entailment', 'neutral', 'contradiction'))
    """
    folder = Path(data_dir) if data_dir is not None else NLI_SAMPLE_DIR
    blobs = _checked_bytes(folder)
    frame = pd.read_json(io.BytesIO(blobs["pairs.jsonl"]), lines=True, dtype=False)
    X = np.load(io.BytesIO(blobs["hyp_minilm.npy"]), allow_pickle=False)
    desc = "partial input: MiniLM sentence embedding of the hypothesis alone (all-MiniLM-L6-v2, 384-d)"
    ds = nli_dataset_from_records(
        frame,
        name="SNLI sample",
        source="the bundled SNLI sample",
        features={"hyp_minilm": (X, desc)},
        text_features=text_features,
    )
    return dataclasses.replace(
        ds,
        description=(
            f"{ds.n_rows:,} real SNLI pairs ({frame['premise'].nunique():,} premises, each with all its hypotheses) "
            "with MiniLM embeddings of the hypothesis alone: a hypothesis-only model should not be able to "
            "predict the label, yet words like these give it away. SNLI 1.0 dev (Bowman et al., 2015), "
            "CC BY-SA 4.0; see sample_data/README.md."
        ),
        meta=dict(ds.meta, source="bundled", licence="CC BY-SA 4.0"),
    )
