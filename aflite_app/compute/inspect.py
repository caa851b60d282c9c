"""The Inspect page: the run it shows, the rows table, class counts, links, archives and downloads of one run.

The run is the Filter page's current run or one opened from a zip, named by an :class:`InspectRef`; the page
resolves it once (:func:`inspect_result`, handing over the opened run it keeps in session state) and passes it
on. Tables are memoised by the ref in the byte-bounded stores (held by reference, never pickled). The page's
other jobs have their own modules: the tabs computed as background jobs
(:mod:`aflite_app.compute.inspect_artifacts`), stability across seeds
(:mod:`aflite_app.compute.inspect_stability`) and the explanation of one row
(:mod:`aflite_app.compute.inspect_explanation`). The pure table and download helpers are
:mod:`aflite_app.inspect_tables` and :mod:`aflite_app.run_archive`; the page's are re-exported here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult
from aflite_core._utils import hash_array
from aflite_core.data.datasets import Dataset
from aflite_core.measures.stability import class_impact

from .. import images, inspect_tables, run_archive
from ..inspect_tables import (
    artifact_texts,
    feature_sources,
    filter_rows,
    pixel_grid,
    text_display_columns,
    with_round_lists,
    with_stability,
)
from ..specs import NO_SESSION, DatasetSpec, FilterSpec, SessionData
from . import _stores
from .datasets import (
    artifact_statistics,
    artifact_summary,
    artifact_table,
    artifact_text_choices,
    class_names,
    dataset,
    dataset_choices,
)
from .runs import run_filter

__all__ = [
    "InspectRef",
    "artifact_statistics",
    "artifact_summary",
    "artifact_table",
    "artifact_text_choices",
    "artifact_texts",
    "class_names",
    "describe_link",
    "download_bytes",
    "feature_sources",
    "filter_rows",
    "inspect_class_impact",
    "inspect_representation",
    "inspect_result",
    "inspect_table",
    "link_origin",
    "link_rows",
    "open_run_archive",
    "pixel_grid",
    "provenance_zip_bytes",
    "run_zip_bytes",
    "running_jobs_text",
    "text_display_columns",
    "with_round_lists",
    "with_stability",
]


@dataclass(frozen=True)
class InspectRef:
    """Which run the Inspect page shows: the Filter page's run (``spec``) or an opened archive (``digest``)."""

    dataset: DatasetSpec
    spec: FilterSpec | None = None
    digest: str | None = None


def inspect_result(ref: InspectRef, loaded: dict | None = None, *, session: SessionData = NO_SESSION) -> AFLiteResult:
    """The run behind ``ref``: the Filter page's run, or ``loaded``, the opened run's record.

    The Filter page's run comes from :func:`aflite_app.compute.runs.result`, the one source of the current run
    (stored, or read off a stored run at a lower τ, as the Filter page showed it); only if that store has lost
    it is it run again here. ``loaded`` is what :func:`open_run_archive` returned and the page keeps in session
    state (the ``"loaded"`` entry of :data:`aflite_app.state.INSPECT_PAGE`).
    """
    if ref.spec is not None:
        return run_filter(ref.spec, session=session)  # runs.result(spec), else a run
    if not loaded or loaded.get("digest") != ref.digest:
        raise ValueError("The opened run is no longer in this session; open its zip again.")
    return loaded["result"]


@_stores.memo("inspect_thumbnails", 8)
def _inspect_thumbnails(key: str, _data: Dataset) -> list[str] | None:
    return None if _data.images is None else images.image_thumbnails(_data.images)


@_stores.memo("inspect_table", 8, spinner="Building the table of rows…")
def _inspect_table(ref: InspectRef, _result: AFLiteResult, _data: Dataset) -> pd.DataFrame:
    thumbnails = _inspect_thumbnails(ref.dataset.key, _data)
    # the per-round lists only for the rows shown (with_round_lists): one list per row is slow at 550,000 rows
    return inspect_tables.rows_table(_result, _data, thumbnails=thumbnails, round_lists=False)


def inspect_table(ref: InspectRef, result: AFLiteResult, *, session: SessionData = NO_SESSION) -> pd.DataFrame:
    """One row per example of the run (see :func:`aflite_app.inspect_tables.rows_table`), without ``p_rounds``.

    The page adds the per-round scores to the rows it shows (:func:`with_round_lists`).
    """
    return _inspect_table(ref, result, dataset(ref.dataset, session=session))


@_stores.memo("inspect_class_impact", 16)
def _inspect_class_impact(ref: InspectRef, threshold: float, _result: AFLiteResult, _data: Dataset) -> pd.DataFrame:
    frame = class_impact(inspect_tables.class_names(_data, _result), _result.kept, threshold=threshold)
    order = {str(c): i for i, c in enumerate(_data.classes)}
    return frame.sort_values("label", key=lambda s: s.map(order)).reset_index(drop=True)


def inspect_class_impact(
    ref: InspectRef, result: AFLiteResult, threshold: float = 0.5, *, session: SessionData = NO_SESSION
) -> pd.DataFrame:
    """Per-class counts before/after with a warning flag, class names in the dataset's order."""
    return _inspect_class_impact(ref, threshold, result, dataset(ref.dataset, session=session))


def running_jobs_text(page: dict) -> str | None:
    """What this page still computes in the background (from its state dict), in words; None when nothing."""
    names = {
        "words": "'Label-revealing words'",
        "artifacts": "'What the removed rows share'",
        "stability_run": "'Stability across seeds'",
    }
    busy = [
        name
        for entry, name in names.items()
        if (run := page.get(entry)) is not None and not getattr(run, "done", True) and not run.stop_requested
    ]
    if not busy:
        return None
    return "Still computing in the background: " + " and ".join(busy) + " (its tab shows the progress and Stop)."


@_stores.memo("inspect_representation", 16)
def _inspect_representation(ref: InspectRef, x_sha256: str | None, _data: Dataset) -> str | None:
    # the engine's fingerprint of X (provenance["x_sha256"]), the one opening a run directory checks too
    for name, X in _data.representations.items():
        if x_sha256 is not None and hash_array(X) == x_sha256:
            return name
    return None


def inspect_representation(ref: InspectRef, result: AFLiteResult, *, session: SessionData = NO_SESSION) -> str | None:
    """The representation the run was made on, None when unknown.

    For the Filter run, the spec's; for an opened run, the one whose fingerprint (``provenance["x_sha256"]``)
    matches.
    """
    if ref.spec is not None:
        return ref.spec.dataset.representation
    return _inspect_representation(ref, result.provenance.get("x_sha256"), dataset(ref.dataset, session=session))


def open_run_archive(payload: bytes, name: str, dspec: DatasetSpec, *, session: SessionData = NO_SESSION) -> dict:
    """Load a run archive safely and check it belongs to the dataset of ``dspec`` (ValueError otherwise).

    Returns the record the page keeps in session state (:func:`aflite_app.state.keep_inspect_run`). Nothing is
    cached: the run lives in this session only.
    """
    data = dataset(dspec, session=session)
    result = run_archive.load_run_zip(payload, name=f"'{name}'", expected_rows=data.n_rows)
    run_archive.check_run_matches(
        result, data, data_label=f"the dataset '{dataset_choices(session=session).get(dspec.key, dspec.key)}'"
    )
    digest = hashlib.sha256(payload).hexdigest()[:16]
    return {"result": result, "name": name, "digest": digest, "dataset": dspec.key}


# -- the rows a chart bar links to (the Filter and Predictability pages set state.INSPECT_FILTER) ----------------
def _link_parts(link: dict | None) -> tuple[int | None, str | None, bool]:
    if not isinstance(link, dict):
        return None, None, False
    rnd, cls = link.get("round"), link.get("class")
    return (
        (int(rnd) if rnd is not None else None),
        (str(cls) if cls is not None else None),
        link.get("status") == "stayed",
    )


def link_rows(table: pd.DataFrame, link: dict | None) -> pd.DataFrame:
    """The rows of :func:`aflite_app.inspect_tables.rows_table` a chart bar links to.

    ``link`` is ``{"round": int or None, "class": str or None, "status": "removed" or "stayed"}``
    (:data:`aflite_app.state.INSPECT_FILTER`): a round keeps the rows removed in that round, or with status
    "stayed" the rows scored in that round and not removed in it (kept, or removed later); a class keeps the rows
    of that class; None (or a missing key) keeps everything. ``{"rows": [positions], "what": str}`` (rows picked
    on the Compare runs page) keeps those rows.
    """
    rnd, cls, stayed = _link_parts(link)
    mask = np.ones(len(table), dtype=bool)
    if isinstance(link, dict) and link.get("rows") is not None:  # rows picked on Compare runs, by position
        mask &= table["row"].isin([int(r) for r in link["rows"]]).to_numpy()
    if rnd is not None:
        removed_in = pd.to_numeric(table["round"], errors="coerce")
        hit = (removed_in.isna() | (removed_in > rnd)) if stayed else (removed_in == rnd)
        mask &= hit.fillna(False).to_numpy(dtype=bool)
    if cls is not None:
        mask &= (table["class"].astype(str) == cls).to_numpy()
    return table.loc[mask]


def link_origin(link: dict | None) -> str:
    """Where the link filter came from, for Inspect's notice."""
    if isinstance(link, dict) and link.get("rows") is not None:
        return "the rows you picked on the Compare runs page"
    return "the bar you clicked on the Filter or Predictability page"


def describe_link(link: dict | None) -> str | None:
    """The link filter in words ("rows removed in round 3 of class 'cat'"), None when there is none."""
    if isinstance(link, dict) and link.get("rows") is not None:
        return str(link.get("what") or f"{len(link['rows']):,} rows picked on Compare runs")
    rnd, cls, stayed = _link_parts(link)
    if rnd is None and cls is None:
        return None
    if rnd is None:
        what = "rows"
    else:
        what = f"rows that stayed in round {rnd}" if stayed else f"rows removed in round {rnd}"
    return what + (f" of class '{cls}'" if cls is not None else "")


# -- downloads -------------------------------------------------------------------------------------------------
def download_bytes(result: AFLiteResult, data: Dataset, which: str = "kept", fmt: str = "csv") -> bytes:
    """The run's ``which`` rows ("kept", "removed" or "all") with every original column plus AFLite's, as a file.

    ``fmt`` is "csv" or "parquet" (see :func:`aflite_app.inspect_tables.export_frame`).
    """
    frame = inspect_tables.export_frame(result, data, which)
    if fmt == "csv":
        return inspect_tables.csv_bytes(frame)
    if fmt == "parquet":
        return inspect_tables.parquet_bytes(frame)
    raise ValueError(f"The 'fmt' parameter must be 'csv' or 'parquet'. Got {fmt!r} instead.")


def provenance_zip_bytes(result: AFLiteResult, data: Dataset, representation: str | None) -> bytes:
    """The kept rows with their dataset card and manifest, zipped (:func:`aflite_app.exports.provenance_zip_bytes`)."""
    from .. import exports

    return exports.provenance_zip_bytes(result, data, representation)


def run_zip_bytes(result: AFLiteResult) -> bytes:
    """The whole run record as a zip the page (or :meth:`AFLiteResult.load`, unzipped) opens again."""
    return run_archive.run_zip_bytes(result)
