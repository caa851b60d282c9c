"""The Inspect page's table columns: Streamlit column configs and orders (no drawing, no compute, no session).

Only ``pages/inspect.py`` and :mod:`aflite_app.inspect_tabs` use it: the rows table (:func:`rows_columns`),
the table of significant words (:func:`shares_columns`, :data:`SHARES_ORDER`) and the table of classes
(:func:`class_columns`). Each call builds fresh configs, as the page did inline.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import streamlit as st

from aflite_core.data.datasets import Dataset

__all__ = ["SHARES_ORDER", "class_columns", "rows_columns", "shares_columns"]

#: columns of the table of significant (token, label) pairs, in the order shown
SHARES_ORDER = (
    "token",
    "label",
    "p_hat",
    "p_hat_kept",
    "z",
    "z_kept",
    "still_significant",
    "count",
    "count_kept",
    "count_removed",
    "share_kept",
    "share_removed",
    "removed_fraction",
)


def rows_columns(
    data: Dataset, text_cols: Sequence[str], shown_columns: Collection[str], n_seeds: int
) -> tuple[dict[str, Any], list[str]]:
    """The rows table's column config and the columns shown first (the rest follow in table order)."""
    config = {
        "row": st.column_config.NumberColumn(
            "row", help="Position of the row in the dataset (0-based).", format="%d", width="small"
        ),
        "id": st.column_config.Column(
            "id", help=f"The row's id: {data.meta.get('ids', 'stable')}.", width=130 if text_cols else "small"
        ),
        "image": st.column_config.ImageColumn("image", width="small"),
        "class": st.column_config.TextColumn("class", help="The row's label.", width="medium"),
        "status": st.column_config.TextColumn(
            "status", help="Kept in the filtered set, or removed by AFLite.", width="small"
        ),
        "round": st.column_config.NumberColumn(
            "round removed", format="%d", help="The round in which AFLite removed the row (– : kept)."
        ),
        "p_first": st.column_config.NumberColumn(
            "p round 1",
            format="%.2f",
            help="Predictability in round 1: the share of out-of-sample models that predicted the row's label.",
        ),
        "p_removal": st.column_config.NumberColumn(
            "p at removal", format="%.2f", help="Predictability in the round the row was removed."
        ),
        "p_last": st.column_config.NumberColumn(
            "p last", format="%.2f", help="Predictability in the last round the row was scored."
        ),
        "p_rounds": st.column_config.LineChartColumn(
            "p per round",
            y_min=0,
            y_max=1,
            help="Predictability in every round the row was scored (0 to 1), until it was removed.",
        ),
        "seed_frequency": st.column_config.ProgressColumn(
            f"removed by seeds (of {n_seeds})",
            min_value=0.0,
            max_value=1.0,
            format="percent",
            width="small",
            help="Share of the seeds' runs that removed this row (tab 'Stability across seeds').",
        ),
    }
    for col in data.meta.get("planted_truth", []) or []:
        if col in shown_columns:
            config[col] = st.column_config.CheckboxColumn(col, help="Planted truth of the synthetic data.")
    for col in text_cols:  # first and wrapped: a pair's two texts side by side, the columns after them in view
        narrow = data.pair is not None
        config[col] = st.column_config.TextColumn(col, width="medium" if narrow else "large")

    # the texts first (wrapped, issue 28) and the id, then what the run did (class, status, round, p), then
    # where the row is
    first = [
        c
        for c in (
            "image",
            *text_cols,
            "id",
            "class",
            "status",
            "round",
            "p_first",
            "p_removal",
            "p_last",
            "seed_frequency",
            "p_rounds",
            "row",
        )
        if c in shown_columns
    ]
    return config, first


def shares_columns(removed_share: float) -> dict[str, Any]:
    """The column config of the table of significant pairs (``removed_share``: the share of all rows removed)."""
    return {
        "token": st.column_config.TextColumn("token", width="small"),
        "label": st.column_config.TextColumn("label", width="medium"),
        "p_hat": st.column_config.NumberColumn("p̂ all rows", format="%.2f"),
        "p_hat_kept": st.column_config.NumberColumn("p̂ kept rows", format="%.2f"),
        "z": st.column_config.NumberColumn("z all rows", format="%.2f"),
        "z_kept": st.column_config.NumberColumn("z kept rows", format="%.2f"),
        "still_significant": st.column_config.CheckboxColumn(
            "still significant", help="z among the kept rows above z*."
        ),
        "count": st.column_config.NumberColumn("texts with it", format="%d"),
        "count_kept": st.column_config.NumberColumn("kept", format="%d"),
        "count_removed": st.column_config.NumberColumn("removed", format="%d"),
        "share_kept": st.column_config.NumberColumn("share of kept rows", format="percent"),
        "share_removed": st.column_config.NumberColumn("share of removed rows", format="percent"),
        "removed_fraction": st.column_config.NumberColumn(
            "of its texts removed",
            format="percent",
            help=f"Compare with the share of all rows removed ({removed_share:.0%}).",
        ),
    }


def class_columns() -> dict[str, Any]:
    """The column config of the table of classes."""
    return {
        "label": "class",
        "n_before": "rows before",
        "n_after": "rows kept",
        "n_removed": "rows removed",
        "warning": "flagged",
        "share_lost": st.column_config.NumberColumn("share lost", format="percent"),
        "share_before": st.column_config.NumberColumn("share before", format="percent"),
        "share_after": st.column_config.NumberColumn("share after", format="percent"),
        "relative_loss": st.column_config.NumberColumn(
            "relative loss", format="%.2f", help="Share lost / overall share lost"
        ),
    }
