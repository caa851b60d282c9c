"""The Embedding map's colourings by a per-row field (no widget, no session): which the run offers, and their values.

Beyond kept / removed, round removed and class (drawn from the run itself), the map is coloured by a
:class:`MapField`: predictability in the last round or at removal, a typed word's presence in the text columns
(:func:`word_rows`), the Training dynamics page's difficulty level, or stability across seeds (Inspect's report);
:func:`colour_modes` lists the colourings a run can offer now and :func:`map_field` gives every row's value.
:mod:`aflite_app.compute.embedding` draws the map with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import inspect_tables
from ..specs import NO_SESSION, DatasetSpec, FilterSpec, SessionData
from . import _stores
from .datasets import dataset
from .dynamics import DynamicsSpec, LevelSpec, dynamics_levels, stored_dynamics
from .inspect_stability import inspect_stability, missing_stability_runs
from .runs import run_filter

__all__ = [
    "FIELD_MODES",
    "MAX_WORD_CHARS",
    "MapField",
    "colour_modes",
    "map_field",
    "word_columns",
    "word_rows",
]


#: the map's colourings by a per-row field (beyond kept / removed, round removed and class): key -> label
FIELD_MODES = {
    "p_last": "predictability (last round)",
    "p_removal": "predictability at removal",
    "word": "a word's presence",
    "difficulty": "difficulty level (Training dynamics)",
    "stability": "stability across seeds",
}


#: characters of a typed word at most
MAX_WORD_CHARS = 50


#: the difficulty levels, in order
DIFFICULTY_LEVELS = ("easy", "ambiguous", "hard")


@dataclass(frozen=True, eq=False)
class MapField:
    """A per-row field the map is coloured by (one of :data:`FIELD_MODES`).

    ``values`` has one number per row: a float (NaN: the row has none) for ``kind`` "number" (a cell shows the
    mean) and "share" (0/1: a cell shows the share of its rows with a 1), or a category code for ``kind``
    "category" (``categories`` names them; a cell shows the most common one). ``title`` heads the colour bar or
    legend; ``meaning`` says in words what a point's and a cell's colour mean; ``key`` identifies the field (memo key).
    """

    values: np.ndarray
    kind: str
    title: str
    meaning: str
    key: tuple
    categories: tuple[str, ...] = ()
    value_name: str = ""


def word_columns(data) -> list[str]:
    """The text columns a typed word is looked for in (premise / hypothesis first; [] without text)."""
    frame = getattr(data, "frame", None)
    if frame is None:
        return []
    return [c for c in inspect_tables.text_display_columns(data) if c in frame.columns]


def word_rows(data, word: str) -> np.ndarray:
    """Which rows contain ``word`` in any of :func:`word_columns`: whole words, case-insensitive (bool per row).

    ``word`` may be a phrase ("is sleeping"); it matches where it is not part of a longer word ("sleep" does not
    match "sleeping"). ValueError (one sentence) without text columns or for an empty or too long word.
    """
    columns = word_columns(data)
    if not columns:
        raise ValueError("This dataset has no text column, so the map cannot be coloured by a word.")
    word = " ".join(str(word).split())
    if not word:
        raise ValueError("Type a word to colour the map by the rows that contain it.")
    if len(word) > MAX_WORD_CHARS:
        raise ValueError(
            f"The word to colour by has {len(word):,} characters, more than the {MAX_WORD_CHARS} allowed; type a "
            "shorter one."
        )
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(part) for part in word.split(" ")) + r"(?!\w)"
    hit = np.zeros(data.n_rows, dtype=bool)
    for col in columns:
        text = data.frame[col].astype("string").fillna("")
        hit |= text.str.contains(pattern, case=False, regex=True).to_numpy(dtype=bool)
    return hit


def _dynamics_ready(dspec: DatasetSpec, dynamics: DynamicsSpec | None) -> bool:
    return dynamics is not None and dynamics.dataset.key == dspec.key and stored_dynamics(dynamics) is not None


def _stability_ready(spec: FilterSpec, n_seeds: int | None, *, session: SessionData = NO_SESSION) -> bool:
    return bool(n_seeds) and n_seeds >= 2 and not missing_stability_runs(spec, int(n_seeds), session=session)


def colour_modes(
    spec: FilterSpec,
    *,
    dynamics: DynamicsSpec | None = None,
    stability_seeds: int | None = None,
    session: SessionData = NO_SESSION,
) -> list[str]:
    """The colourings the map offers for ``spec``'s run (keys; labels: ``aflite_app.charts.embedding.COLOUR_MODES``).

    Always kept / removed, round removed, class and predictability (last round, at removal); a word's presence
    when the dataset has text; the difficulty level when ``dynamics`` (the Training dynamics page's request) was
    recorded on the same dataset; stability across seeds when Inspect computed ``stability_seeds`` seeds of this run.
    """
    data = dataset(spec.dataset, session=session)
    out = ["status", "round", "class", "p_last", "p_removal"]
    if word_columns(data):
        out.append("word")
    if _dynamics_ready(spec.dataset, dynamics):
        out.append("difficulty")
    if _stability_ready(spec, stability_seeds, session=session):
        out.append("stability")
    return out


@_stores.memo("map_word_rows", 16)
def _word_rows(dspec: DatasetSpec, word: str, *, _session: SessionData = NO_SESSION) -> np.ndarray:
    return word_rows(dataset(dspec, session=_session), word)


def map_field(
    spec: FilterSpec,
    colour: str,
    *,
    word: str = "",
    dynamics: DynamicsSpec | None = None,
    stability_seeds: int | None = None,
    session: SessionData = NO_SESSION,
) -> MapField | None:
    """The per-row field behind the colouring ``colour`` (None for kept / removed, round removed and class).

    Raises ValueError (one sentence) when the field is not available: no text for a word, no Training dynamics
    of these rows, stability not computed.
    """
    if colour not in FIELD_MODES:
        return None
    data, result = dataset(spec.dataset, session=session), run_filter(spec, session=session)
    if colour == "p_last":
        values = np.asarray(result.last_score, dtype=np.float64)
        return MapField(
            values,
            "number",
            "p, last<br>round scored",
            "predictability in the last round the row was scored (the share of out-of-sample models that predicted "
            "its label; dark = low, yellow = high)",
            ("p_last",),
            value_name="p (last round scored)",
        )
    if colour == "p_removal":
        values = np.asarray(result.removal_score, dtype=np.float64)
        return MapField(
            values,
            "number",
            "p at<br>removal",
            "predictability in the round the row was removed (dark = low, yellow = high; kept rows have none and "
            "are grey)",
            ("p_removal",),
            value_name="p at removal",
        )
    if colour == "word":
        word = " ".join(str(word).split())
        if not word:
            raise ValueError("Type a word to colour the map by the rows that contain it.")
        hit = _word_rows(spec.dataset, word.lower(), _session=session)
        cols = ", ".join(word_columns(data))
        return MapField(
            hit.astype(np.float64),
            "share",
            f"share of rows<br>with '{word}'",
            f"whether a row contains the word '{word}' (whole word, any case, in {cols}): {int(hit.sum()):,} of "
            f"{data.n_rows:,} rows do",
            ("word", word.lower()),
            categories=(f"without '{word}'", f"with '{word}'"),
            value_name=f"contains '{word}'",
        )
    if colour == "difficulty":
        if not _dynamics_ready(spec.dataset, dynamics):
            raise ValueError(
                "No Training dynamics of these rows in this session: record them on the Training dynamics page first."
            )
        levels = dynamics_levels(dynamics, LevelSpec(), session=session).levels
        if len(levels) == data.n_rows:
            named = levels.astype(str).to_numpy()
        else:
            named = levels.astype(str).reindex(np.asarray(data.ids)).fillna("").to_numpy()
        codes = np.full(data.n_rows, -1, dtype=np.int64)
        for i, name in enumerate(DIFFICULTY_LEVELS):
            codes[named == name] = i
        return MapField(
            codes.astype(np.float64),
            "category",
            "difficulty<br>level",
            "the row's difficulty level from its training dynamics (Gaussian mixture, as on the Training dynamics "
            "page's default)",
            ("difficulty", dynamics),
            categories=DIFFICULTY_LEVELS,
            value_name="difficulty level",
        )
    if not _stability_ready(spec, stability_seeds, session=session):
        raise ValueError(
            "Stability across seeds is not computed for this run: compute it in Inspect's 'Stability across seeds' "
            "tab first."
        )
    frame, _, _ = inspect_stability(spec, int(stability_seeds), session=session)
    values = np.asarray(frame["removal_frequency"], dtype=np.float64)
    return MapField(
        values,
        "number",
        "removed in<br>share of seeds",
        f"the share of {int(stability_seeds)} AFLite seeds that removed the row (dark = never, yellow = always)",
        ("stability", int(stability_seeds)),
        value_name="share of seeds removing it",
    )
