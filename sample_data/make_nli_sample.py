"""Build the bundled SNLI sample in ``sample_data/snli`` from the shared SNLI dev sample (seeded, about a second).

Usage: ``python sample_data/make_nli_sample.py [--source ../shared/data] [--out sample_data/snli] [--check]``

Reads ``snli_sample.jsonl`` and ``snli_sample.hyp_minilm.npy`` (SNLI 1.0 dev pairs with their all-MiniLM-L6-v2
hypothesis embeddings; see that folder's README) and keeps about :data:`TARGET_ROWS` pairs:

* whole premise groups only (every hypothesis written for a kept premise is kept, so a premise never ends up on
  both sides of a split);
* stratified by label: the premise groups are put in strata by the labels of their hypotheses (most groups hold
  one entailment, one neutral and one contradiction), and the same share of every stratum is drawn with
  ``numpy.random.default_rng(SEED)``, so the label mix of the sample is the source's;
* in the source's order (ids increase down the file).

Writes ``pairs.jsonl`` (``id, premise, hypothesis, label``: verbatim), ``hyp_minilm.npy`` (float32, row i = line i,
copied from the source rows, not re-encoded) and ``manifest.json`` (sha256 of both, the recipe, the counts).
``--check`` rebuilds in memory and compares with the shipped files instead of writing.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
#: rows aimed at (whole premise groups make it approximate)
TARGET_ROWS = 1500
#: the one seed of the draw
SEED = 20_201_129
COLUMNS = ["id", "premise", "hypothesis", "label"]
FILES = ("pairs.jsonl", "hyp_minilm.npy")


def choose_rows(frame: pd.DataFrame, target: int = TARGET_ROWS, seed: int = SEED) -> np.ndarray:
    """Positions (sorted) of the rows kept: whole premise groups, the same share of every label stratum."""
    groups = frame.groupby("premise", sort=False)["label"].apply(lambda s: "|".join(sorted(s)))
    share = target / len(frame)
    rng = np.random.default_rng(seed)
    chosen: list[str] = []
    for _, members in sorted(groups.groupby(groups).groups.items()):  # strata in a fixed order
        premises = np.asarray(sorted(members))
        n_take = round(share * len(premises))
        chosen.extend(rng.choice(premises, size=n_take, replace=False).tolist())
    keep = frame["premise"].isin(set(chosen)).to_numpy()
    return np.flatnonzero(keep)


def build(source: Path) -> tuple[bytes, np.ndarray, dict]:
    """The sample's ``pairs.jsonl`` bytes, its embeddings and its manifest (without the checksums)."""
    frame = pd.read_json(source / "snli_sample.jsonl", lines=True, dtype=False)
    emb = np.load(source / "snli_sample.hyp_minilm.npy", allow_pickle=False)
    if emb.shape[0] != len(frame):
        raise ValueError(f"The source embeddings have {emb.shape[0]} rows but the source table has {len(frame)}.")
    rows = choose_rows(frame)
    part = frame.iloc[rows][COLUMNS]
    text = "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in part.to_dict(orient="records"))
    X = np.ascontiguousarray(emb[rows], dtype=np.float32)
    manifest = {
        "source": "snli_sample.jsonl + snli_sample.hyp_minilm.npy (SNLI 1.0 dev, MiniLM hypothesis embeddings)",
        "recipe": f"make_nli_sample.py: whole premise groups, stratified by label, seed {SEED}, ~{TARGET_ROWS} rows",
        "rows": len(part),
        "premises": int(part["premise"].nunique()),
        "labels": {k: int(v) for k, v in part["label"].value_counts().sort_index().items()},
        "embedding_shape": list(X.shape),
        "licence": "CC BY-SA 4.0 (SNLI, Bowman et al. 2015)",
    }
    return text.encode("utf-8"), X, manifest


def _npy_bytes(X: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, X, allow_pickle=False)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, verify) the bundled SNLI sample; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=str(HERE.parent.parent / "shared" / "data"), help="the shared data folder")
    parser.add_argument("--out", default=str(HERE / "snli"), help="target folder (default: sample_data/snli)")
    parser.add_argument("--check", action="store_true", help="compare a rebuild with the shipped files")
    args = parser.parse_args(argv)
    text, X, manifest = build(Path(args.source))
    blobs = {"pairs.jsonl": text, "hyp_minilm.npy": _npy_bytes(X)}
    manifest["sha256"] = {name: hashlib.sha256(blob).hexdigest() for name, blob in blobs.items()}
    out = Path(args.out)
    if args.check:
        shipped = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        same = shipped["sha256"] == manifest["sha256"]
        print("the shipped sample matches a rebuild" if same else "the shipped sample differs from a rebuild")
        return 0 if same else 1
    out.mkdir(parents=True, exist_ok=True)
    for name, blob in blobs.items():
        (out / name).write_bytes(blob)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    sizes = ", ".join(f"{name} {len(blob) / 1e6:.2f} MB" for name, blob in blobs.items())
    rows, premises = manifest["rows"], manifest["premises"]
    print(f"wrote {rows:,} rows ({premises:,} premises; {manifest['labels']}) to {out}: {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
