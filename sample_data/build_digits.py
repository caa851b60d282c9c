"""Rebuild the digits representations shipped in ``sample_data/digits`` (deterministic, about a second).

Usage: ``python sample_data/build_digits.py [--check]``

Writes ``ids.npy`` (positions in ``sklearn.datasets.load_digits()`` of the 1,438 rows to filter),
``warmup_indices.npy`` (the 359 warm-up rows, never filtered), ``mlp.npy`` (64-d), ``mlp_small.npy`` (8-d),
``pca.npy`` (16-d), all float32 except the int64 indices, and ``manifest.json`` (sha256 of every file, the
recipe and the library versions). ``--check`` recomputes and compares with the shipped files instead of writing.
The recipe lives in :func:`aflite_core.data.digits.build_digits_arrays`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from aflite_core.data.digits import _DIGITS_FILES, build_digits_arrays, write_digits_arrays  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Rebuild (or with --check, verify) the shipped digits arrays; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE / "digits"), help="target folder (default: sample_data/digits)")
    parser.add_argument("--check", action="store_true", help="compare a recompute with the shipped files")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.check:
        fresh = build_digits_arrays()
        worst = 0.0
        for fname in _DIGITS_FILES:
            shipped = np.load(out / fname, allow_pickle=False)
            new = fresh[fname[: -len(".npy")]]
            if shipped.shape != new.shape:
                print(f"{fname}: shape {shipped.shape} != {new.shape}")
                return 1
            diff = float(np.max(np.abs(shipped.astype(np.float64) - new.astype(np.float64)), initial=0.0))
            worst = max(worst, diff)
            print(f"{fname}: max abs difference {diff:.3g}")
        return 0 if worst < 1e-3 else 1
    manifest = write_digits_arrays(out)
    print(f"wrote {manifest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
