"""The names the Inspect page's helpers had here before they were split by job (issue 23 item 6): re-exported.

Inspect's tables and download bytes live in :mod:`aflite_app.inspect_tables`, a run as a zip and its safe
loader in :mod:`aflite_app.run_archive`, the PNG thumbnails in :mod:`aflite_app.images`. The app imports
those; this module keeps ``from aflite_app import exports`` working (the tests use it).
"""

from __future__ import annotations

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
    "rows_table",
    "run_zip_bytes",
    "stability_counts",
    "stability_frame",
    "text_display_columns",
    "with_stability",
]
