"""Row groups for group-aware partitions (``aflite(..., groups=)``): where they come from in a table.

An NLI pair table (a ``premise`` and a ``hypothesis`` column) is grouped by its premise by default - in the CLI
(``filter --table``) and in the app alike - because SNLI / MultiNLI write several hypotheses per premise: with
premise + hypothesis features a row is otherwise "predictable" partly because its sibling rows were in the
training part. Any other column can be named (``--groups-column``), and duplicate clusters
(:mod:`aflite_core.data.duplicates`) can be merged into the groups (:func:`merge_groups`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["PAIR_COLUMNS", "default_group_column", "groups_from_table", "merge_groups"]

#: the columns that make a table an NLI pair table (grouped by the first by default)
PAIR_COLUMNS = ("premise", "hypothesis")


def default_group_column(columns: Iterable[str]) -> str | None:
    """``"premise"`` for an NLI pair table (both :data:`PAIR_COLUMNS` present), else None.

    Examples
    --------
    >>> default_group_column(["id", "premise", "hypothesis", "label"]), default_group_column(["text", "label"])
    ('premise', None)
    """
    cols = set(columns)
    return PAIR_COLUMNS[0] if all(c in cols for c in PAIR_COLUMNS) else None


def groups_from_table(frame: pd.DataFrame, column: str, name: str = "the table") -> NDArray[np.int32]:
    """The ``column`` of ``frame`` as group codes (0 .. G-1, first appearance order), one per row.

    Raises
    ------
    ValueError
        When the column is missing or has an empty cell (one sentence).
    """
    if column not in frame.columns:
        shown_cols = ", ".join(map(str, list(frame.columns)[:12]))
        raise ValueError(
            f"The groups column {column!r} is not a column of {name} (its columns: {shown_cols}); name one of them."
        )
    values = frame[column]
    missing = values.isna().to_numpy()
    if missing.any():
        raise ValueError(
            f"The groups column {column!r} of {name} is empty in {int(missing.sum()):,} rows (first: row "
            f"{int(np.flatnonzero(missing)[0])}); fill them or choose another column."
        )
    codes, _ = pd.factorize(values.astype(str) if values.dtype == object else values, sort=False)
    return codes.astype(np.int32)


def merge_groups(*labelings: Any) -> NDArray[np.int32]:
    """Groups that keep together every pair of rows any of the labelings keeps together (connected components).

    Each labeling is one label per row (None entries of the argument list are skipped); two rows end in one
    group when they share a label in any labeling, directly or through a chain of rows.

    Examples
    --------
    >>> merge_groups([0, 0, 1, 2, 3], [5, 6, 6, 7, 8]).tolist()
    [0, 0, 0, 1, 2]
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    given = [np.asarray(pd.factorize(pd.Series(lab))[0]) for lab in labelings if lab is not None]
    if not given:
        raise ValueError("merge_groups needs at least one labeling; got none.")
    n = len(given[0])
    rows, cols = [], []
    for codes in given:
        if len(codes) != n:
            raise ValueError(
                f"The labelings given to merge_groups must have one label per row ({n}); one has {len(codes)}."
            )
        _, first = np.unique(codes, return_index=True)  # codes are 0 .. K-1: first row of each label
        rows.append(np.arange(n))
        cols.append(first[codes])
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    return pd.factorize(comp)[0].astype(np.int32)
