"""A large embedding job: sentence embeddings of a table's texts to one ``.npy``, chunked and resumable.

:func:`embed_table` (the ``embed`` command) embeds 100,000 - 1,000,000 texts, hours on a CPU, so it survives
a kill: the rows are embedded in chunks of ``chunk_rows``, and each finished chunk is written durably
(:mod:`aflite_core._durable`) into a work folder beside the output, ``OUT.parts/``::

    X.npy.parts/state.json        what the job is: the table's SHA-256 and size, columns, model, chunk size, ...
    X.npy.parts/part-000000.npy   rows 0 .. chunk_rows - 1 (float32, one row per text)
    X.npy.parts/part-000001.npy   ...

A rerun with the same arguments on the same table reads ``state.json``, keeps the complete parts and continues
with the first missing chunk; every chunk is embedded exactly as an uninterrupted run embeds it (same texts, same
batch size, device and threads), so the final array is the same bit for bit. A rerun with other arguments or a
changed table refuses in one sentence unless ``force`` (then the parts are discarded). At the end ``OUT`` is
written crash-consistently from the parts (:func:`aflite_core._durable.write_stream`, one part in memory at a
time) and the parts are removed. One job per output at a time (the lock file ``.OUT.parts.lock`` beside it).

The texts are those the app embeds: the text column, or with a pair column ``text + " [SEP] " + pair`` (the
premise + hypothesis view of :func:`aflite_core.data.embeddings.embed_views`), each prepared by
:func:`~aflite_core.data.embed_status.model_texts` (blank runs collapsed, cut at 100 x the model's
``max_seq_length`` characters). The job is capped at :data:`CLI_MAX_EMBED_CHARS` characters, higher than the
server's :data:`~aflite_core.data.embed_status.MAX_EMBED_CHARS` (this runs on the user's own machine).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _durable
from .. import _validation as v
from .._folder_lock import folder_lock
from .._format import fmt_duration
from .embed_status import embed_chars_refusal, max_text_chars, model_texts
from .features import _texts_of

__all__ = [
    "CLI_MAX_EMBED_CHARS",
    "DEFAULT_CHUNK_ROWS",
    "PAIR_JOIN",
    "EmbedJobProgress",
    "embed_table",
    "parts_folder",
    "resolve_device",
]

#: the most characters (after collapsing blanks and cutting each text) one ``embed`` job gives the model: about
#: 2 GB of text, a million texts of 2,000 characters (the server's cap is 100 million)
CLI_MAX_EMBED_CHARS = 2_000_000_000
#: rows per durable chunk: about 30-100 s of work on a busy 2-core CPU, 15 MB of 384-d float32
DEFAULT_CHUNK_ROWS = 10_000
#: the separator of a text and its pair: the app's premise + hypothesis view (`embed_views`, "[CLS] p [SEP] h [SEP]")
PAIR_JOIN = " [SEP] "
_STATE = "state.json"
_FORMAT = "aflite-embed-parts"
#: the fields of state.json a rerun must match, and how a refusal names each
_FIELDS = {
    "table_sha256": "the table's content",
    "table_rows": "the table's rows",
    "text_column": "--text-column",
    "pair_column": "--pair-column",
    "join": "the pair separator",
    "model": "--model",
    "device": "--device",
    "batch_size": "--batch-size",
    "n_threads": "--threads",
    "chunk_rows": "--chunk-rows",
}


@dataclass(frozen=True)
class EmbedJobProgress:
    """What the ``progress`` callback of :func:`embed_table` receives after each chunk is on disk.

    Attributes
    ----------
    done, total : int
        Rows embedded and on disk (resumed ones included), and rows in all.
    resumed : int
        Rows taken from an earlier run's parts.
    seconds : float
        Embedding time in this run (model load excluded).
    rows_per_second : float or None
        Rows embedded per second in this run; None before its first chunk.
    seconds_left : float or None
        (total - done) / rows_per_second; 0 when done.
    """

    done: int
    total: int
    resumed: int
    seconds: float
    rows_per_second: float | None
    seconds_left: float | None

    @property
    def message(self) -> str:
        """One progress line: rows, percent, rows/s and time left."""
        pct = 100.0 * self.done / max(self.total, 1)
        rate = "-- rows/s" if self.rows_per_second is None else f"{self.rows_per_second:,.0f} rows/s"
        left = "--" if self.seconds_left is None else fmt_duration(self.seconds_left)
        resumed = f" | resumed at {self.resumed:,}" if self.resumed else ""
        return f"embed: {self.done:,}/{self.total:,} rows ({pct:.1f}%) | {rate} | left {left}{resumed}"


def parts_folder(out: str | Path) -> Path:
    """The work folder of the job writing ``out``: ``OUT.parts`` beside it."""
    out = Path(out)
    return out.with_name(out.name + ".parts")


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; anything else as given."""
    if device != "auto":
        return device
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _read_state(parts: Path) -> dict | None:
    try:
        state = json.loads((parts / _STATE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return state if isinstance(state, dict) and state.get("format") == _FORMAT else None


def _part(parts: Path, index: int) -> Path:
    return parts / f"part-{index:06d}.npy"


def _part_shape(path: Path) -> tuple[int, ...] | None:
    """The shape of a part when it is a complete C-ordered float32 .npy file (size checked), else None."""
    fmt = np.lib.format
    try:
        with open(path, "rb") as fh:
            version = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read(fh)
            offset = fh.tell()
    except (OSError, ValueError):
        return None
    if fortran or dtype != np.dtype("<f4") or len(shape) != 2:
        return None
    return shape if path.stat().st_size == offset + shape[0] * shape[1] * 4 else None


def _complete_parts(parts: Path, n_rows: int, chunk_rows: int) -> tuple[int, int | None]:
    """(number of leading complete parts, their width); a part of the wrong shape ends the run of good ones."""
    n_chunks = -(-n_rows // chunk_rows)
    dim = None
    for index in range(n_chunks):
        shape = _part_shape(_part(parts, index))
        rows = min(chunk_rows, n_rows - index * chunk_rows)
        if shape is None or shape[0] != rows or (dim is not None and shape[1] != dim):
            return index, dim
        dim = shape[1]
    return n_chunks, dim


def _refusal(parts: Path, state: dict, wanted: dict) -> str | None:
    for key, what in _FIELDS.items():
        if state.get(key) != wanted[key]:
            return (
                f"'{parts}' holds a partial embedding job whose {what} differs from this one "
                f"({v.shown(state.get(key))} then, {v.shown(wanted[key])} now): rerun with the same arguments "
                "on the same table to continue it, or pass --force (force=True) to start over."
            )
    return None


def _remove_stale_temporaries(out: Path) -> None:
    """Hidden ``.OUT.*.tmp`` files a killed final write left (up to the whole matrix's size)."""
    if out.parent.is_dir():
        for stale in out.parent.glob(f".{out.name}.*.tmp"):
            stale.unlink(missing_ok=True)


def embed_table(
    table: str | Path,
    text_column: str,
    out: str | Path,
    *,
    pair_column: str | None = None,
    model: Any = None,
    model_id: str | None = None,
    batch_size: int | None = None,
    device: str = "auto",
    n_threads: int | None = 1,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    max_chars: int = CLI_MAX_EMBED_CHARS,
    force: bool = False,
    progress: Callable[[EmbedJobProgress], Any] | None = None,
    on_load: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Embed a table's text column (or text + pair) into ``out`` (.npy, float32), chunked and resumable.

    See the module docstring for the work folder, resuming and refusals.

    Parameters
    ----------
    table : str or Path
        The table file (CSV, TSV, Parquet or JSON Lines; :func:`aflite_core.data.readers.read_table`).
    text_column : str
        The text column (the premise with ``pair_column``).
    out : str or Path
        The ``.npy`` file to write; its work folder is ``OUT.parts`` beside it.
    pair_column : str, optional
        A second text column: each row's text is ``text + " [SEP] " + pair`` (the app's premise + hypothesis).
    model : SentenceTransformer, str or None
        None: the packaged all-MiniLM-L6-v2 (offline); a local model folder; or a loaded model (or any object
        with the ``encode`` method of one), which then needs ``model_id``.
    model_id : str, optional
        The identity of a loaded ``model`` in ``state.json`` (default
        :func:`~aflite_core.data.embeddings.model_identity` of ``model``).
    batch_size : int, optional
        Texts per forward pass (default 64 on the CPU, 256 on a GPU). Part of the job's identity.
    device : str, default="auto"
        ``auto`` (a GPU when torch sees one, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``.
    n_threads : int or None, default=1
        Torch threads (one is fastest on a busy 2-core machine).
    chunk_rows : int, default=DEFAULT_CHUNK_ROWS
        Rows per durable part.
    max_chars : int, default=CLI_MAX_EMBED_CHARS
        The most characters the prepared texts may hold.
    force : bool, default=False
        Replace an existing ``out`` and discard parts of another job.
    progress : callable, optional
        Called with an :class:`EmbedJobProgress` after each part is on disk (an exception raised there stops
        the job between two parts, as a kill would).
    on_load : callable, optional
        Called before the model is loaded (the slow start, about 9 s on a CPU).

    Returns
    -------
    dict
        ``rows``, ``dim``, ``out``, ``resumed_rows``, ``seconds``, ``device``, ``batch_size``, ``model``.

    Raises
    ------
    ValueError
        One sentence: a missing table or column, ``out`` exists (without ``force``), parts of another job
        (without ``force``), or too many characters.
    ImportError
        With the install command when the sentence model's packages are missing.
    """
    from .embeddings import model_identity
    from .readers import read_table

    func = "embed_table"
    v.check_int(chunk_rows, "chunk_rows", func, low=1)
    v.check_int(max_chars, "max_chars", func, low=1)
    if batch_size is not None:
        v.check_int(batch_size, "batch_size", func, low=1)
    if n_threads is not None:
        v.check_int(n_threads, "n_threads", func, low=1)
    out, table = Path(out), Path(table)
    if out.suffix != ".npy":
        raise ValueError(f"The output '{out}' must be a .npy file (name it {out.name}.npy).")
    if out.is_dir():
        raise ValueError(f"The output '{out}' is a folder; give a .npy file name.")
    loaded = model if model is not None and not isinstance(model, str | os.PathLike) else None
    if loaded is not None and not callable(getattr(loaded, "encode", None)):
        raise v.param_error("model", func, "None, a model folder or a loaded sentence model", model, TypeError)
    if loaded is not None and not model_id:
        raise ValueError(f"The 'model_id' parameter of {func} must name a loaded model (it goes into the job's state).")
    ident = model_id or model_identity(model)
    device = resolve_device(device)
    if batch_size is None:
        batch_size = 64 if device == "cpu" else 256

    frame = read_table(table)
    columns = [text_column] + ([pair_column] if pair_column is not None else [])
    for col in columns:
        if col not in frame.columns:
            raise ValueError(
                f"The table '{table.name}' has no column {v.shown(col)}; its columns are {v.shown_list(frame.columns)}."
            )
    parts_cols, _ = _texts_of(frame, columns, func)
    del frame
    texts = [PAIR_JOIN.join(p) for p in zip(*parts_cols)] if pair_column is not None else parts_cols[0]
    del parts_cols
    n = len(texts)
    # a folder's model says its max_seq_length once loaded: until then the cut assumes the longest (512)
    cut = max_text_chars(loaded if loaded is not None else (None if model is None else object()))
    n_chars = sum(sum(map(len, model_texts(texts[i : i + 10_000], max_chars=cut))) for i in range(0, n, 10_000))
    refusal = embed_chars_refusal(
        n_chars, max_chars=max_chars, cut=cut, remedy="embed fewer rows, or raise --max-chars (max_chars)"
    )
    if refusal is not None:
        raise ValueError(refusal)
    wanted = {
        "format": _FORMAT,
        "version": 1,
        "table_sha256": _file_sha256(table),
        "table_bytes": table.stat().st_size,
        "table_rows": n,
        "text_column": text_column,
        "pair_column": pair_column,
        "join": PAIR_JOIN,
        "model": ident,
        "device": device,
        "batch_size": batch_size,
        "n_threads": n_threads,
        "chunk_rows": chunk_rows,
    }
    parts = parts_folder(out)
    with folder_lock(parts):
        return _run(texts, out, parts, wanted, model, loaded, force, progress, on_load, max_chars)


def _first_estimate(texts: list[str], device: str) -> float | None:
    """Seconds to embed ``texts`` before any chunk is timed (None on a GPU).

    The CPU model of :func:`~aflite_core.data.embed_status.estimate_embedding_seconds` on a sample of 2,000 texts,
    scaled; it does not describe a GPU.
    """
    from .embed_status import estimate_embedding_seconds

    if device != "cpu" or not texts:
        return None
    step = max(1, len(texts) // 2000)
    sample = texts[::step]
    return estimate_embedding_seconds(sample, model_loaded=True) * len(texts) / len(sample)


def _run(texts, out, parts, wanted, model, loaded, force, progress, on_load, max_chars) -> dict[str, Any]:
    from .embeddings import embed_texts, load_sentence_model

    n, chunk_rows = len(texts), wanted["chunk_rows"]
    _remove_stale_temporaries(out)
    _durable.clear_leftovers(parts)  # a removal of the parts killed half-way
    state = _read_state(parts) if parts.is_dir() else None
    if parts.exists() and not parts.is_dir():
        raise ValueError(f"'{parts}' exists and is not a folder; remove it or choose another output name.")
    if state is not None and not force:
        refusal = _refusal(parts, state, wanted)
        if refusal is not None:
            raise ValueError(refusal)
    elif parts.is_dir() and any(not f.name.endswith(".tmp") for f in parts.iterdir()) and not force:
        raise ValueError(
            f"'{parts}' holds files that are not an embedding job's parts; remove it or pass --force (force=True)."
        )
    if out.exists() and state is None and not force:
        raise ValueError(f"'{out}' exists; pass --force (force=True) to replace it, or choose another output name.")
    if force and parts.exists() and (state is None or _refusal(parts, state, wanted) is not None):
        _durable.discard_dir(parts)
        state = None
    if state is None:
        _durable.make_dirs(parts)
        _durable.write_file(parts / _STATE, json.dumps(wanted, indent=2).encode("utf-8"))
    n_chunks = -(-n // chunk_rows)
    start, dim = _complete_parts(parts, n, chunk_rows)
    resumed = min(start * chunk_rows, n)
    t0 = time.perf_counter()
    if start < n_chunks:
        if loaded is None:
            if on_load is not None:
                on_load()
            loaded = load_sentence_model(None if model is None else str(model), device=wanted["device"])
        if progress is not None:
            progress(
                EmbedJobProgress(resumed, n, resumed, 0.0, None, _first_estimate(texts[resumed:], wanted["device"]))
            )
        t0 = time.perf_counter()
        for index in range(start, n_chunks):
            lo, hi = index * chunk_rows, min((index + 1) * chunk_rows, n)
            E = embed_texts(
                texts[lo:hi],
                model=loaded,
                batch_size=wanted["batch_size"],
                device=wanted["device"],
                n_threads=wanted["n_threads"],
                max_chars=max_chars,
            )
            dim = E.shape[1]
            _durable.write_file(_part(parts, index), _npy_bytes(E))
            if progress is not None:
                elapsed = time.perf_counter() - t0
                rate = (hi - resumed) / max(elapsed, 1e-9)
                progress(EmbedJobProgress(hi, n, resumed, elapsed, rate, (n - hi) / rate))
    elif progress is not None:
        progress(EmbedJobProgress(n, n, resumed, 0.0, None, 0.0))
    _durable.write_stream(out, _assembled(parts, n, n_chunks, dim))
    _durable.discard_dir(parts)
    return {
        "rows": n,
        "dim": dim,
        "out": str(out),
        "resumed_rows": resumed,
        "seconds": round(time.perf_counter() - t0, 3),
        "device": wanted["device"],
        "batch_size": wanted["batch_size"],
        "model": wanted["model"],
    }


def _npy_bytes(E: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(E, dtype=np.float32), allow_pickle=False)
    return buf.getvalue()


def _assembled(parts: Path, n: int, n_chunks: int, dim: int | None):
    """The bytes of ``OUT``: an .npy header for (n, dim) float32, then each part's rows in order."""
    import io

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")), "fortran_order": False, "shape": (n, dim)}
    )
    yield header.getvalue()
    for index in range(n_chunks):
        part = np.load(_part(parts, index), mmap_mode="r", allow_pickle=False)
        yield np.ascontiguousarray(part, dtype="<f4").tobytes()
