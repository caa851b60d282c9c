"""scikit-learn's bundled handwritten digits with representations built the paper's way.

The warm-up recipe follows Le Bras et al. (ICML 2020, §2 "Implementation"): "to obtain Φ(X), we train a first
'warm-up' model on a small fraction of the data ... and do not reuse this data for the rest of our
experiments"; Φ is the model's last hidden layer. The arrays ship in ``sample_data/digits/`` with a manifest.
"""

from __future__ import annotations

import hashlib
import json
import platform
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .. import _validation as v
from .datasets import SAMPLE_DATA_DIR, Dataset

__all__ = ["DIGITS_REPRESENTATIONS", "build_digits_arrays", "load_digits_dataset", "write_digits_arrays"]


#: representations of :func:`load_digits_dataset`, strongest warm-up adversary first
DIGITS_REPRESENTATIONS = {
    "mlp": "warm-up MLP hidden layer (64-d, tanh; trained on the 20 % warm-up rows)",
    "mlp_small": "small warm-up MLP hidden layer (8-d, tanh): a weaker adversary",
    "pca": "PCA of the pixels fitted on the warm-up rows (16-d)",
    "pixels": "raw pixels / 16 (64-d)",
}


_DIGITS_DIR = "digits"


_DIGITS_FILES = ("ids.npy", "warmup_indices.npy", "mlp.npy", "mlp_small.npy", "pca.npy")


_DIGITS_FORMAT = 1


_MLP_SIZES = {"mlp": 64, "mlp_small": 8}


_PCA_COMPONENTS = 16


def _digits_raw() -> tuple[NDArray[np.float64], NDArray[np.int64], str]:
    """Pixels, targets and their sha256, exactly as ``sklearn.datasets.load_digits()`` returns them.

    Reads the CSV that scikit-learn ships (the file ``load_digits`` reads) without importing scikit-learn,
    whose first import takes seconds on a busy machine; falls back to ``load_digits`` when the file is not
    where it used to be. The sha256 compared with the manifest guards against any difference.
    """
    import gzip
    import importlib.util

    spec = importlib.util.find_spec("sklearn")  # locates the package without importing it
    path = None
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "digits.csv.gz"
    if path is not None and path.is_file():
        with gzip.open(path, "rt", encoding="ascii") as fh:
            table = np.loadtxt(fh, delimiter=",")
        data, target = table[:, :-1], table[:, -1].astype(np.int64)
    else:  # pragma: no cover - depends on scikit-learn's layout
        from sklearn.datasets import load_digits

        bunch = load_digits()
        data, target = bunch.data, bunch.target
    data = np.ascontiguousarray(data, dtype=np.float64)
    target = np.ascontiguousarray(target, dtype=np.int64)
    h = hashlib.sha256(data.tobytes())
    h.update(target.tobytes())
    return data, target, h.hexdigest()


def _digits_recipe(warmup_fraction: float, seed: int) -> dict[str, Any]:
    return {
        "source": "sklearn.datasets.load_digits()",
        "random_state": seed,
        "warmup_fraction": warmup_fraction,
        "scaling": "pixels / 16",
        "split": "sklearn.model_selection.train_test_split(idx, train_size=warmup_fraction, stratify=y, "
        "random_state=<seed 0 drawn from random_state>)",
        "mlp": {
            "estimator": "sklearn.neural_network.MLPClassifier",
            "hidden_layer_sizes": [_MLP_SIZES["mlp"]],
            "activation": "tanh",
            "solver": "lbfgs",
            "alpha": 1e-3,
            "max_iter": 1000,
            "random_state": "<seed 2 drawn from random_state>",
            "features": "tanh(X @ W1 + b1)",
        },
        "mlp_small": {
            "estimator": "sklearn.neural_network.MLPClassifier",
            "hidden_layer_sizes": [_MLP_SIZES["mlp_small"]],
            "activation": "tanh",
            "solver": "lbfgs",
            "alpha": 1e-3,
            "max_iter": 1000,
            "random_state": "<seed 1 drawn from random_state>",
            "features": "tanh(X @ W1 + b1)",
        },
        "pca": {
            "estimator": "sklearn.decomposition.PCA",
            "n_components": _PCA_COMPONENTS,
            "svd_solver": "full",
            "fitted_on": "warm-up rows",
        },
        "threads": 1,
    }


def build_digits_arrays(
    *, warmup_fraction: float = 0.2, random_state: int | np.random.Generator | None = 0
) -> dict[str, Any]:
    """Compute the digits representations the paper's way (warm-up model on held-out rows).

    A stratified, seeded ``warmup_fraction`` of scikit-learn's 1,797 digits trains two MLPs (64 and 8 tanh
    hidden units, L-BFGS) and a 16-component PCA; Φ of every *other* row is the MLPs' hidden activations or the
    PCA projection. The warm-up rows are left out of the dataset. Runs single-threaded, so the result is the
    same on every run on one machine (and equal up to float rounding across machines).

    Parameters
    ----------
    warmup_fraction : float, default=0.2
        Share of rows used to train the warm-up models, in (0, 1).
    random_state : int, numpy Generator or None, default=0
        The one seed; the split, both MLPs and the PCA each get an integer seed drawn from it.

    Returns
    -------
    dict
        ``ids`` (int64 positions in ``load_digits()`` of the kept rows, increasing), ``warmup_indices``,
        float32 ``mlp``, ``mlp_small``, ``pca``, plus ``recipe``, ``digits_sha256`` and ``warmup_accuracy``
        (each warm-up model's accuracy on the kept rows).
    """
    func = "build_digits_arrays"
    if not isinstance(warmup_fraction, float) or not 0.0 < warmup_fraction < 1.0:
        raise v.param_error("warmup_fraction", func, "a float in (0, 1)", warmup_fraction)
    seed = v.check_random_state(random_state, func)
    seeds = [int(s) for s in np.random.default_rng(seed).integers(0, 2**31 - 1, size=4)]

    from sklearn.decomposition import PCA
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    data, target, digest = _digits_raw()
    X = data / 16.0
    idx = np.arange(len(target))
    warm, rest = train_test_split(idx, train_size=warmup_fraction, stratify=target, random_state=seeds[0])
    warm, rest = np.sort(warm), np.sort(rest)
    out: dict[str, Any] = {"ids": rest.astype(np.int64), "warmup_indices": warm.astype(np.int64)}
    accuracy = {}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for key, seed_i in (("mlp_small", seeds[1]), ("mlp", seeds[2])):
            mlp = MLPClassifier(
                hidden_layer_sizes=(_MLP_SIZES[key],),
                activation="tanh",
                solver="lbfgs",
                alpha=1e-3,
                max_iter=1000,
                random_state=seed_i,
            )
            mlp.fit(X[warm], target[warm])
            out[key] = np.tanh(X[rest] @ mlp.coefs_[0] + mlp.intercepts_[0]).astype(np.float32)
            accuracy[key] = round(float(mlp.score(X[rest], target[rest])), 4)
        pca = PCA(n_components=_PCA_COMPONENTS, svd_solver="full", random_state=seeds[3]).fit(X[warm])
        out["pca"] = pca.transform(X[rest]).astype(np.float32)
    out["recipe"] = _digits_recipe(warmup_fraction, seed)
    out["digits_sha256"] = digest
    out["warmup_accuracy"] = accuracy
    return out


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _versions() -> dict[str, str]:
    import sklearn

    return {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__}


def write_digits_arrays(directory: str | Path | None = None, **kwargs: Any) -> Path:
    """Compute :func:`build_digits_arrays` and write the ``.npy`` files and ``manifest.json`` to ``directory``.

    Used by ``sample_data/build_digits.py``; writing the same arrays twice gives byte-identical files.

    Parameters
    ----------
    directory : path, optional
        Target folder (default: ``sample_data/digits``).
    **kwargs
        Passed to :func:`build_digits_arrays`.

    Returns
    -------
    Path
        The manifest's path.
    """
    folder = Path(directory) if directory is not None else SAMPLE_DATA_DIR / _DIGITS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    arrays = build_digits_arrays(**kwargs)
    files = {}
    for fname in _DIGITS_FILES:
        key = fname[: -len(".npy")]
        arr = np.ascontiguousarray(arrays[key])
        path = folder / fname
        np.save(path, arr, allow_pickle=False)
        files[fname] = {"sha256": _sha256_file(path), "shape": list(arr.shape), "dtype": arr.dtype.str}
    manifest = {
        "name": "digits",
        "format": _DIGITS_FORMAT,
        "description": "Representations of scikit-learn's bundled handwritten digits for AFLite Studio. Rebuild "
        "with `python sample_data/build_digits.py`.",
        "recipe": arrays["recipe"],
        "digits_sha256": arrays["digits_sha256"],
        "warmup_accuracy": arrays["warmup_accuracy"],
        "representations": DIGITS_REPRESENTATIONS,
        "files": files,
        "versions": _versions(),
    }
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def _read_shipped_digits(folder: Path, warmup_fraction: float, seed: int, digest: str) -> tuple[dict | None, str]:
    """The shipped arrays if they exist, match the recipe asked for and pass their hashes; else a reason."""
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        return None, f"no manifest at {manifest_path}"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        recipe = manifest["recipe"]
        if manifest.get("format") != _DIGITS_FORMAT:
            return None, "manifest format differs"
        if recipe["random_state"] != seed or recipe["warmup_fraction"] != warmup_fraction:
            return None, "recipe differs from the one asked for"
        if recipe != _digits_recipe(warmup_fraction, seed):
            return None, "recipe differs from this version's"
        if manifest["digits_sha256"] != digest:
            return None, "scikit-learn's digits differ from the ones the arrays were built from"
        out: dict[str, Any] = {}
        for fname in _DIGITS_FILES:
            path = folder / fname
            info = manifest["files"][fname]
            if not path.is_file():
                return None, f"{fname} is missing"
            if _sha256_file(path) != info["sha256"]:
                return None, f"{fname} does not match its sha256"
            arr = np.load(path, allow_pickle=False)
            if list(arr.shape) != info["shape"] or arr.dtype.str != info["dtype"]:
                return None, f"{fname} has an unexpected shape or dtype"
            out[fname[: -len(".npy")]] = arr
        out["warmup_accuracy"] = manifest.get("warmup_accuracy", {})
        out["versions"] = manifest.get("versions", {})
        return out, ""
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"unreadable ({type(exc).__name__}: {exc})"


def load_digits_dataset(
    *,
    warmup_fraction: float = 0.2,
    random_state: int | np.random.Generator | None = 0,
    data_dir: str | Path | None = None,
    recompute: bool = False,
) -> Dataset:
    """Scikit-learn's handwritten digits (offline) with warm-up representations, ready to filter.

    scikit-learn ships the 1,797 8×8 digit images (the UCI "Optical Recognition of Handwritten Digits" test
    set, CC BY 4.0). Following the paper, a seeded, stratified 20 % warm-up split trains the models that
    define Φ; those rows are **not** in the returned dataset (their positions are in
    ``meta["warmup_indices"]``), so 1,438 rows remain with default settings.

    Representations (see :data:`DIGITS_REPRESENTATIONS`), default first: ``"mlp"`` (64-d hidden layer of a
    warm-up MLP), ``"mlp_small"`` (8-d, a weaker adversary), ``"pca"`` (16 components fitted on the warm-up
    rows) and ``"pixels"`` (64 raw pixels / 16).

    The arrays are read from ``sample_data/digits`` when present and their sha256 and recipe match (fast);
    otherwise they are recomputed (about a second). ``meta["source"]`` says which happened.

    Parameters
    ----------
    warmup_fraction : float, default=0.2
        Share of rows used for the warm-up models.
    random_state : int, numpy Generator or None, default=0
        The one seed of the split and the models (the shipped arrays use 0).
    data_dir : path, optional
        Folder with the shipped arrays (default: ``sample_data/digits``).
    recompute : bool, default=False
        Ignore the shipped arrays.

    Returns
    -------
    Dataset
        ``frame`` has columns ``id`` (position in ``load_digits()``), ``label`` (0-9) and the 64 pixel columns
        ``pixel_0_0`` ... ``pixel_7_7`` (0-16); ``ids`` are the same positions; ``images`` is (n, 8, 8).

    Examples
    --------
    >>> from aflite_core.data.digits import load_digits_dataset
    >>> ds = load_digits_dataset()
    >>> ds.n_rows, ds.representation("mlp").shape, len(ds.meta["warmup_indices"])
    (1438, (1438, 64), 359)
    """
    func = "load_digits_dataset"
    if not isinstance(warmup_fraction, float) or not 0.0 < warmup_fraction < 1.0:
        raise v.param_error("warmup_fraction", func, "a float in (0, 1)", warmup_fraction)
    seed = v.check_random_state(random_state, func)
    data, target, digest = _digits_raw()
    folder = Path(data_dir) if data_dir is not None else SAMPLE_DATA_DIR / _DIGITS_DIR
    arrays, reason = (
        (None, "recompute=True") if recompute else _read_shipped_digits(folder, warmup_fraction, seed, digest)
    )
    if arrays is None:
        arrays = build_digits_arrays(warmup_fraction=warmup_fraction, random_state=seed)
        arrays["versions"] = _versions()
        source = "recomputed"
    else:
        source = "shipped"
    ids = np.asarray(arrays["ids"], dtype=np.int64)
    warm = np.asarray(arrays["warmup_indices"], dtype=np.int64)
    pixels = data[ids]
    frame = pd.DataFrame(pixels.astype(np.int64), columns=[f"pixel_{r}_{c}" for r in range(8) for c in range(8)])
    frame.insert(0, "label", target[ids])
    frame.insert(0, "id", ids)
    reps = {
        "mlp": arrays["mlp"],
        "mlp_small": arrays["mlp_small"],
        "pca": arrays["pca"],
        "pixels": (pixels / 16.0).astype(np.float32),
    }
    meta = {
        "source": source,
        "recompute_reason": reason if source == "recomputed" else None,
        "data_dir": str(folder),
        "warmup_indices": warm.tolist(),
        "n_warmup": len(warm),
        "warmup_fraction": warmup_fraction,
        "random_state": seed,
        "warmup_accuracy": dict(arrays.get("warmup_accuracy", {})),
        "ids": "position of the row in sklearn.datasets.load_digits()",
        "digits_sha256": digest,
        "versions": dict(arrays.get("versions", {})),
        "licence": "CC BY 4.0 (UCI Optical Recognition of Handwritten Digits, E. Alpaydin and C. Kaynak)",
    }
    return Dataset(
        name="digits",
        frame=frame,
        label_column="label",
        classes=tuple(range(10)),
        y=target[ids].astype(np.int32),
        ids=ids,
        representations=reps,
        representation_descriptions=dict(DIGITS_REPRESENTATIONS),
        description=(
            f"Handwritten digits 0-9 (8×8 pixels) shipped with scikit-learn: {len(ids):,} rows to filter; "
            f"{len(warm):,} others ({warmup_fraction:.0%}) trained the warm-up models and are left out."
        ),
        id_column="id",
        text_columns=(),
        images=data[ids].reshape(-1, 8, 8).astype(np.uint8),
        meta=meta,
    )
