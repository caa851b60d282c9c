"""The explanation of one row for the Inspect page's rows tab: why it was removed or kept.

The core's ``explain_row`` on the run, memoised per run and row, with the words of the tab
"Label-revealing words" when they are computed (:mod:`aflite_app.compute.inspect_artifacts`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from aflite_core import AFLiteResult
from aflite_core.measures.explain import RowExplanation, explain_row

from ..inspect_tables import text_display_columns
from ..specs import NO_SESSION, SessionData
from . import _stores
from .datasets import dataset
from .inspect import InspectRef
from .inspect_artifacts import WordsRequest, stored_words, words_now

__all__ = [
    "explanation_row",
    "inspect_explanation",
]


def explanation_row(table: pd.DataFrame, typed: str) -> int | None:
    """The position of the row whose id (as text) is ``typed`` in Inspect's rows table; None when none is."""
    typed = str(typed).strip()
    if not typed:
        return None
    hits = np.flatnonzero(table["id"].astype(str).to_numpy() == typed)
    return int(table["row"].iloc[hits[0]]) if len(hits) else None


@_stores.memo("inspect_explanation", 32, spinner="Explaining the row…")
def _inspect_explanation(
    ref: InspectRef, position: int, representation: str | None, words: WordsRequest | None, _result, _data, _stats
) -> RowExplanation:
    text_cols = [c for c in text_display_columns(_data) if c in _data.frame.columns]
    features = _data.representations.get(representation) if representation else None
    key = _result.ids[position] if _result.ids is not None else position
    return explain_row(
        _result,
        key,
        table=_data.frame[text_cols] if text_cols else None,
        features=features,
        artifact_stats=_stats,
        text_columns=text_cols,
        words_column=words.source if words is not None and words.source in text_cols else None,
    )


def inspect_explanation(
    ref: InspectRef,
    result: AFLiteResult,
    position: int,
    representation: str | None,
    words: WordsRequest | None = None,
    *,
    session: SessionData = NO_SESSION,
) -> RowExplanation:
    """Why row ``position`` was removed or kept (the core's ``explain_row``), memoised per run and row.

    Its words are those of ``words`` (the tab "Label-revealing words"'s request): its stored statistics, or
    computed now up to the interactive size (above it, the tab's background job computes them and the
    explanation shows them once it is done). The neighbours are searched in the run's ``representation``
    (none when it is unknown, e.g. a run opened from a file made on other features).
    """
    data = dataset(ref.dataset, session=session)
    stats = None
    if words is not None:
        done = stored_words(words)
        if done is None and data.n_rows <= _stores.MAX_INTERACTIVE_ROWS:
            done = words_now(words, result, session=session)
        stats = None if done is None else done[0]
    shown = words if stats is not None else None  # the key says whether the words were there
    return _inspect_explanation(ref, int(position), representation, shown, result, data, stats)
