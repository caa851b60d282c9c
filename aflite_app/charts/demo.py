"""Charts of the guided demo page (pure; no Streamlit): one row's predictability per round, step 1's circles.

The demo's other figures come from the pages they introduce (:mod:`aflite_app.charts.synthetic`,
:func:`aflite_app.charts.inspect.artifact_shares_chart`); :func:`circles_panel` is the Synthetic page's
:func:`~aflite_app.charts.synthetic.circles_column` laid out for a phone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .inspect import artifact_shares_chart
from .synthetic import circles_column
from .theme import KEPT, REMOVED, TAU_LINE, style

__all__ = ["circles_panel", "row_rounds_chart", "word_shares_panel"]


def circles_panel(data: Any, kept: Any, row: Any, *, part: str, **kwargs: Any) -> go.Figure:
    """Step 1's scatter: :func:`~aflite_app.charts.synthetic.circles_column` with its square plot at the top.

    The arguments are ``circles_column``'s. On a phone the width sets the square's size and the height has room to
    spare: centred (Plotly's default), the points started ~60 px below the panel's title, past the first screen at
    390 × 844; at the top they start right under it. On a wide screen the height sets the size and nothing moves.
    """
    fig = circles_column(data, kept, row, part=part, **kwargs)
    fig.update_yaxes(constraintoward="top")
    return fig


def word_shares_panel(shares: Any, *, z_critical: float) -> go.Figure:
    """Step 2's chart: :func:`~aflite_app.charts.inspect.artifact_shares_chart` with its x-axis title on two lines.

    The title is centred under the plot, which the (word → label) names push right: on one line it ran past the
    figure's right edge at 390 px ("share of rows whose text contains the t").
    """
    fig = artifact_shares_chart(shares, z_critical=z_critical)
    fig.update_xaxes(title_text="share of rows whose text<br>contains the token")
    fig.update_layout(margin=dict(b=fig.layout.margin.b + 18))
    return fig


def row_rounds_chart(
    rounds: Sequence[int], scores: Sequence[float], tau: float, removed_round: int, *, height: int = 320
) -> go.Figure:
    """One row's predictability p(i) in every round it was scored, against τ; the round that removed it marked.

    ``rounds`` (1, 2, …) and ``scores`` (the share of that round's models, not trained on the row, that predicted its
    label) come from :func:`aflite_app.compute.demo.explain_row`. Points at or above τ are vermillion (the row
    qualified for removal), below it blue; the removal round is a larger diamond labelled "removed". A row can
    qualify and still stay a round: AFLite removes only the k most predictable rows of a round.
    """
    x = np.asarray(list(rounds), dtype=int)
    p = np.asarray(list(scores), dtype=float)
    above = p >= tau
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=x,
            y=p,
            mode="lines+markers+text",
            name="predictability p(i)",
            line=dict(color="#555555", width=2),
            marker=dict(color=np.where(above, REMOVED, KEPT).tolist(), size=11, line=dict(width=1, color="#333")),
            text=[f"{v:.2f}" for v in p],
            textposition="top center",
            cliponaxis=False,
            hovertemplate="round %{x}: p = %{y:.2f}<extra></extra>",
        )
    )
    if removed_round > 0 and removed_round in set(x.tolist()):
        i = int(np.flatnonzero(x == removed_round)[0])
        fig.add_trace(
            go.Scatter(
                x=[removed_round],
                y=[p[i]],
                mode="markers",
                name=f"removed in round {removed_round}",
                marker=dict(color=REMOVED, size=20, symbol="diamond-open", line=dict(width=3, color=REMOVED)),
                hoverinfo="skip",
            )
        )
        fig.add_annotation(  # on a white ground: the τ line often runs right under the diamond
            x=removed_round,
            y=p[i],
            yshift=-24,
            text="removed",
            showarrow=False,
            font=dict(color=REMOVED, size=13),
            bgcolor="rgba(255,255,255,0.9)",
        )
    fig.add_hline(
        y=tau,
        line=dict(color=TAU_LINE, dash="dash", width=1.5),
        annotation_text=f"τ = {tau:g}",
        annotation_position="top left",
    )
    top = max(int(x.max()) if len(x) else 1, 1)
    fig.update_xaxes(title_text="AFLite round", tickmode="array", tickvals=x.tolist(), range=[0.5, top + 0.5])
    fig.update_yaxes(title_text="predictability p(i) (0-1)", range=[0, 1.12])
    style(fig, height=height)
    fig.update_layout(
        meta={"removed_round": int(removed_round), "tau": float(tau)},
    )
    return fig
