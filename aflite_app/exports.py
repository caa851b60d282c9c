"""The names the Inspect page's helpers had here before they were split by job (issue 23 item 6): re-exported.

Inspect's tables and download bytes live in :mod:`aflite_app.inspect_tables`, a run as a zip and its safe
loader in :mod:`aflite_app.run_archive`, the PNG thumbnails in :mod:`aflite_app.images`. The app imports
those; this module keeps ``from aflite_app import exports`` working (the tests use it).

It also holds the provenance export as a download (issue 28): :func:`provenance_zip_bytes`, the folder
:func:`aflite_core.engine.provenance.export_dataset` writes (Parquet, dataset card, manifest), zipped.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from aflite_core.engine.provenance import export_files

from .images import image_thumbnails, png_bytes, png_data_uri
from .inspect_tables import (
    ROW_COLUMNS,
    artifact_texts,
    class_names,
    csv_bytes,
    export_frame,
    feature_matrix,
    feature_sources,
    filter_rows,
    parquet_bytes,
    pixel_grid,
    rows_table,
    stability_counts,
    stability_frame,
    text_display_columns,
    with_stability,
)
from .run_archive import (
    MAX_ARCHIVE_BYTES,
    MAX_ENTRIES,
    MAX_MEMBER_BYTES,
    MAX_TOTAL_BYTES,
    RUN_FILES,
    RunArchiveError,
    check_run_matches,
    human_bytes,
    load_run_zip,
    run_zip_bytes,
)

__all__ = [
    "EXPORT_FOLDER",
    "MAX_ARCHIVE_BYTES",
    "MAX_ENTRIES",
    "MAX_MEMBER_BYTES",
    "MAX_TOTAL_BYTES",
    "ROW_COLUMNS",
    "RUN_FILES",
    "RunArchiveError",
    "artifact_texts",
    "check_run_matches",
    "class_names",
    "csv_bytes",
    "export_frame",
    "feature_matrix",
    "feature_sources",
    "filter_rows",
    "human_bytes",
    "image_thumbnails",
    "load_run_zip",
    "parquet_bytes",
    "pixel_grid",
    "png_bytes",
    "png_data_uri",
    "provenance_zip_bytes",
    "rows_table",
    "run_zip_bytes",
    "stability_counts",
    "stability_frame",
    "text_display_columns",
    "with_stability",
]

#: the folder a provenance zip unpacks into
EXPORT_FOLDER = "aflite-export"


def provenance_zip_bytes(result: Any, data: Any, representation: str | None, *, include_removed: bool = False) -> bytes:
    """The run's filtered rows with their dataset card and manifest, as a zip of one folder (:data:`EXPORT_FOLDER`).

    Unzipped, ``datasets.load_dataset("aflite-export")`` loads the rows (see
    :mod:`aflite_core.engine.provenance`). ``data`` is the run's dataset (its table becomes the rows' columns,
    one row per run row); ``representation`` the name of the features the run was made on.

    Raises
    ------
    ValueError
        One sentence when the dataset does not have the run's rows.
    """
    if data.n_rows != result.n_rows:
        raise ValueError(f"The run has {result.n_rows:,} rows but the dataset has {data.n_rows:,}.")
    rep = {
        "name": representation,
        "description": data.representation_descriptions.get(representation) if representation else None,
        "dataset": data.name,
        "source": "AFLite Studio (the app)",
    }
    files = export_files(result, table=data.frame, include_removed=include_removed, representation=rep)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in sorted(files.items()):
            zf.writestr(f"{EXPORT_FOLDER}/{name}", blob)
    return buf.getvalue()
