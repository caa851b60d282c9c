"""Safe readers for features, labels and ids (no pickle, clear messages, optional size limits).

Every reader raises ``ValueError`` with one sentence naming the file and what is wrong, so the CLI and the
app can show it as is.
"""

from __future__ import annotations

import io as _io
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["LABEL_COLUMN_NAMES", "read_features", "read_labels"]

#: header cells recognised as naming the label column of a one-column file
LABEL_COLUMN_NAMES = ("label", "labels", "y", "target", "class", "gold_label")


def _name(source: Any) -> str:
    return str(getattr(source, "name", source))


def _check_size(source: Any, max_bytes: int | None) -> None:
    if max_bytes is None:
        return
    size = None
    if isinstance(source, (str, Path)):
        size = Path(source).stat().st_size
    elif hasattr(source, "getbuffer"):
        size = source.getbuffer().nbytes
    elif hasattr(source, "size"):
        size = source.size
    if size is not None and size > max_bytes:
        raise ValueError(
            f"'{_name(source)}' is {size / 2**20:.1f} MB, more than the {max_bytes / 2**20:.0f} MB allowed here; "
            "use the command line (python -m aflite_core filter ...) for large files."
        )


def read_features(source: str | Path | BinaryIO, *, mmap: bool = False, max_bytes: int | None = None) -> NDArray:
    """Read a 2-D numeric feature matrix from a ``.npy`` file (never unpickles).

    Parameters
    ----------
    source : path or binary file-like
        The ``.npy`` file.
    mmap : bool, default=False
        Memory-map the file read-only instead of reading it (paths only); nothing is copied.
    max_bytes : int, optional
        Refuse larger files.

    Returns
    -------
    ndarray
        2-D numeric array (float32 when memory-mapped from a float32 file).

    Raises
    ------
    ValueError
        When the file is missing, not a ``.npy`` file, holds Python objects, or is not 2-D numeric.
    """
    name = _name(source)
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"Feature file '{name}' does not exist.")
        if path.suffix.lower() != ".npy":
            raise ValueError(f"Feature file '{name}' must be a .npy file (numpy.save); got '{path.suffix}'.")
    _check_size(source, max_bytes)
    try:
        if mmap and isinstance(source, (str, Path)):
            arr = np.load(source, mmap_mode="r", allow_pickle=False)
        else:
            arr = np.load(source, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object" in str(exc).lower():
            raise ValueError(
                f"Feature file '{name}' holds Python objects (object dtype); save a numeric array instead."
            ) from None
        raise ValueError(f"Feature file '{name}' is not a readable .npy file: {exc}") from None
    except (OSError, EOFError) as exc:
        raise ValueError(f"Feature file '{name}' is not a readable .npy file: {exc}") from None
    if isinstance(arr, np.lib.npyio.NpzFile):  # pragma: no cover - .npz passed as file object
        raise ValueError(f"Feature file '{name}' is an .npz archive; save one array with numpy.save.")
    if arr.dtype.kind not in "fiub":
        raise ValueError(f"Feature file '{name}' must hold numbers; it holds dtype {arr.dtype}.")
    if arr.ndim != 2:
        raise ValueError(f"Feature file '{name}' must hold a 2-D array (rows × features); its shape is {arr.shape}.")
    return arr


def _read_text(source: Any, max_bytes: int | None) -> str:
    _check_size(source, max_bytes)
    raw = Path(source).read_bytes() if isinstance(source, (str, Path)) else source.read()
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"'{_name(source)}' is not UTF-8 text (byte {exc.start} cannot be decoded); save it as UTF-8."
        ) from None


def _maybe_numeric(values: list[str]) -> NDArray:
    try:
        return np.array([int(v) for v in values], dtype=np.int64)
    except ValueError:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out


def read_labels(
    source: str | Path | BinaryIO, *, column: str | None = None, max_bytes: int | None = None
) -> NDArray:
    """Read one label per row from ``.npy``, ``.txt`` (one per line) or ``.csv`` / ``.tsv``.

    Text labels that are all integers become ints, so ``labels.txt`` and ``labels.npy`` name classes alike.
    A one-column CSV may have a header (one of :data:`LABEL_COLUMN_NAMES`) or none; a CSV with several
    columns needs ``column`` (default: a column named ``label``).

    Parameters
    ----------
    source : path or file-like
        The labels file.
    column : str, optional
        Column holding the labels in a CSV/TSV with several columns.
    max_bytes : int, optional
        Refuse larger files.

    Returns
    -------
    ndarray
        1-D array of labels.
    """
    name = _name(source)
    if isinstance(source, (str, Path)) and not Path(source).is_file():
        raise ValueError(f"Label file '{name}' does not exist.")
    suffix = Path(name).suffix.lower()
    if suffix == ".npy":
        _check_size(source, max_bytes)
        try:
            arr = np.load(source, allow_pickle=False)
        except ValueError as exc:
            if "pickle" in str(exc).lower() or "object" in str(exc).lower():
                raise ValueError(
                    f"Label file '{name}' holds Python objects (object dtype); save numbers or fixed-width "
                    "strings (e.g. numpy.array(labels, dtype=str))."
                ) from None
            raise ValueError(f"Label file '{name}' is not a readable .npy file: {exc}") from None
        except (OSError, EOFError) as exc:
            raise ValueError(f"Label file '{name}' is not a readable .npy file: {exc}") from None
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1:
            raise ValueError(f"Label file '{name}' must hold a 1-D array; its shape is {arr.shape}.")
        return arr
    text = _read_text(source, max_bytes)
    if not text.strip():
        raise ValueError(f"Label file '{name}' is empty.")
    if suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        try:
            table = pd.read_csv(_io.StringIO(text), sep=sep, header=None, dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, ValueError) as exc:
            raise ValueError(f"Label file '{name}' is not a readable {suffix[1:].upper()} file: {exc}") from None
        if table.shape[1] == 1 and column is None:
            values = table.iloc[:, 0].tolist()
            if values and values[0].strip().lower() in LABEL_COLUMN_NAMES:
                values = values[1:]
        else:
            header = [h.strip() for h in table.iloc[0].tolist()]
            want = column or "label"
            if want not in header:
                raise ValueError(
                    f"Label file '{name}' has no column '{want}'; its columns are {header}. "
                    "Name the label column (--label-column)."
                )
            values = table.iloc[1:, header.index(want)].tolist()
    elif suffix in (".txt", ""):
        values = text.splitlines()
        while values and not values[-1].strip():
            values.pop()
    else:
        raise ValueError(f"Label file '{name}' must be .npy, .txt, .csv or .tsv; got '{suffix}'.")
    values = [v.strip() for v in values]
    if not values:
        raise ValueError(f"Label file '{name}' has no labels.")
    if any(v == "" for v in values):
        first = values.index("")
        raise ValueError(f"Label file '{name}' has an empty label (row {first}).")
    return _maybe_numeric(values)
