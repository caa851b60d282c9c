"""Each page's own view in its link, through one registry (no drawing, no compute): :data:`PAGE_VIEWS`.

A page's ``url_path`` → its :class:`PageView`: whether its link carries the dataset and its run, and its own
:class:`ViewParams` - Inspect's status, class and round filters and its search; the Embedding map's colouring,
typed word, projection and selection (its box / lasso geometry and the projection it was drawn on, re-evaluated
over every row on the server: :mod:`aflite_app.selection`); the Synthetic page's τ, k and advanced settings; the
guided demo's step. A value left at its default is left out of the URL; a hand-edited one is clamped to what the
widget allows (numbers through :func:`~aflite_core._validation.bounded_int` /
:func:`~aflite_core._validation.bounded_float`) or ignored, never breaking the page. :mod:`aflite_app.links` reads
and applies them with the dataset and its run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from aflite_core._validation import bounded_float, bounded_int

from . import selection
from .state import (
    DATASET,
    DEMO_PAGE,
    LINK,
    REPRESENTATION,
    embedding_map_key,
    embedding_selection_key,
    link_state,
    page_state,
)

__all__ = [
    "DEMO_STEPS",
    "PAGE_VIEWS",
    "PageView",
    "ViewParams",
    "drop_pending_selection",
    "pending_selection",
]


# -- each page's own view: the registry ------------------------------------------------------------------------
@dataclass(frozen=True)
class ViewParams:
    """One part of a page's view in the URL: its parameter ``names``, how to read and how to apply them.

    ``read(session, data)`` gives the URL texts (values at their defaults left out); ``write(session, texts, data)``
    applies the texts present (``data``: the link's dataset, or None) and returns the names of numbers it ignored
    (named in the page's notice); anything else unusable is ignored silently or clamped, never raised to the page.
    ``numbers`` are the names that are numbers (an exception while applying them names them in the notice).
    """

    names: tuple[str, ...]
    read: Callable[[Mapping, Any], dict[str, str]]
    write: Callable[[MutableMapping, Mapping[str, str], Any], list[str]]
    numbers: tuple[str, ...] = ()


@dataclass(frozen=True)
class PageView:
    """What a page's link carries: the dataset and its run (``run``) and the page's own :class:`ViewParams`."""

    run: bool = True
    params: tuple[ViewParams, ...] = field(default_factory=tuple)


def _clamped_float(text: str, low: float, high: float, what: str, digits: int = 2) -> float:
    """A finite number from a link, moved into ``[low, high]`` and rounded (ValueError: not a finite number)."""
    value = bounded_float(text, -1e300, 1e300, what=what)
    return round(min(max(value, low), high), digits)


def _number_param(
    name: str, key: str, low: float, high: float, default: float, *, integer: bool = False, digits: int = 2
) -> ViewParams:
    """A number widget of a page (slider, number input) as one URL parameter, clamped to its range."""

    def read(session: Mapping, data: Any = None) -> dict[str, str]:
        value = session.get(key)
        if value is None or value == default:
            return {}
        return {name: str(int(value)) if integer else f"{float(value):g}"}

    def write(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
        try:
            if integer:
                session[key] = bounded_int(texts[name], int(low), int(high), what=f"The link's {name}", clamp=True)
            else:
                session[key] = _clamped_float(texts[name], low, high, f"The link's {name}", digits)
        except ValueError:
            return [name]
        return []

    return ViewParams((name,), read, write, numbers=(name,))


def _choice_param(name: str, key: str, choices: tuple[str, ...], default: str) -> ViewParams:
    """A radio or select box of a page as one URL parameter (an unknown value is ignored)."""

    def read(session: Mapping, data: Any = None) -> dict[str, str]:
        value = session.get(key)
        return {name: str(value)} if value in choices and value != default else {}

    def write(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
        if texts[name] in choices:
            session[key] = texts[name]
        return []

    return ViewParams((name,), read, write)


def _text_param(name: str, key: str, max_chars: int, default: str = "") -> ViewParams:
    """A text input as one URL parameter (cut to ``max_chars`` characters, control characters dropped)."""

    def read(session: Mapping, data: Any = None) -> dict[str, str]:
        value = session.get(key)
        return {name: str(value)[:max_chars]} if isinstance(value, str) and value and value != default else {}

    def write(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
        session[key] = "".join(ch for ch in texts[name][:max_chars] if ch.isprintable())
        return []

    return ViewParams((name,), read, write)


# -- Inspect: its status, class and round filters and its search ---------------------------------------------------
#: the Inspect page's widget keys the link sets (pages/inspect.py); the round slider's key ends in the run's rounds
INSPECT_STATUS, INSPECT_CLASSES, INSPECT_QUERY, INSPECT_ROUNDS = (
    "inspect-status",
    "inspect-classes",
    "inspect-query",
    "inspect-rounds-",
)


#: characters of a search a link carries at most
MAX_QUERY_CHARS = 200


def _class_names(data: Any) -> list[str]:
    return [str(c) for c in getattr(data, "class_names", None) or getattr(data, "classes", ())]


def _read_inspect_classes(session: Mapping, data: Any) -> dict[str, str]:
    chosen = session.get(INSPECT_CLASSES) or []
    codes = {name: i for i, name in enumerate(_class_names(data))}
    out = [codes[c] for c in chosen if c in codes]
    return {"cls": "_".join(str(i) for i in sorted(out))} if out and len(out) == len(chosen) else {}


def _write_inspect_classes(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
    names = _class_names(data)
    if not names:
        return []
    chosen = []
    for part in texts["cls"].split("_")[: len(names)]:
        try:
            chosen.append(bounded_int(part, 0, len(names) - 1, what="A class of the link"))
        except ValueError:
            continue
    session[INSPECT_CLASSES] = [names[i] for i in sorted(set(chosen))]
    return []


def _rounds_keys(session: Mapping) -> list[tuple[int, str]]:
    out = []
    for key in list(session.keys()):
        if isinstance(key, str) and key.startswith(INSPECT_ROUNDS) and key[len(INSPECT_ROUNDS) :].isdigit():
            out.append((int(key[len(INSPECT_ROUNDS) :]), key))
    return sorted(out)


def _read_inspect_rounds(session: Mapping, data: Any = None) -> dict[str, str]:
    for n, key in reversed(_rounds_keys(session)):
        value = session.get(key)
        if isinstance(value, (tuple, list)) and len(value) == 2 and tuple(value) != (1, n):
            return {"rounds": f"{int(value[0])}_{int(value[1])}_{n}"}
    return {}


def _write_inspect_rounds(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
    parts = texts["rounds"].split("_")
    if len(parts) != 3:
        return ["rounds"]
    try:
        n = bounded_int(parts[2], 2, 100_000, what="The link's rounds")
        lo, hi = (bounded_int(p, 1, n, what="The link's rounds", clamp=True) for p in parts[:2])
    except ValueError:
        return ["rounds"]
    session[f"{INSPECT_ROUNDS}{n}"] = (min(lo, hi), max(lo, hi))
    return []


INSPECT_VIEW = PageView(
    params=(
        _choice_param("status", INSPECT_STATUS, ("all", "removed", "kept"), "all"),
        ViewParams(("cls",), _read_inspect_classes, _write_inspect_classes),
        ViewParams(("rounds",), _read_inspect_rounds, _write_inspect_rounds, numbers=("rounds",)),
        _text_param("q", INSPECT_QUERY, MAX_QUERY_CHARS),
    )
)


# -- Embedding map: colouring, word, projection and the selection -------------------------------------------------
#: the Embedding map's widget keys (pages/embedding.py)
EMB_COLOUR, EMB_METHOD, EMB_WORD = "emb-colour", "emb-method", "emb-word"


#: the map's colourings a link can name (aflite_app.charts.embedding.COLOUR_MODES; checked by a test)
EMB_COLOURS = ("status", "round", "class", "p_last", "p_removal", "word", "difficulty", "stability")


#: characters of a typed word a link carries at most
MAX_WORD_CHARS = 50


def _map_selection(session: Mapping) -> Any:
    key = embedding_selection_key(embedding_map_key(session.get(DATASET, "digits"), session.get(REPRESENTATION)))
    return session.get(key)


def pending_selection(session: Mapping) -> dict | None:
    """The map selection a link carried that the Embedding map has not evaluated yet, or None.

    A dict: ``shapes`` (:data:`aflite_app.selection.Shape` tuples), ``on`` (the projection they were drawn on) and
    ``points`` (rows clicked one by one).
    """
    return (session.get(LINK) or {}).get("map")


def drop_pending_selection(session: MutableMapping) -> None:
    """The Embedding map evaluated the link's selection (or it no longer applies)."""
    link_state(session).pop("map", None)


def _read_selection(session: Mapping, data: Any = None) -> dict[str, str]:
    pending = pending_selection(session)
    if pending is not None:
        shapes, on, points = pending["shapes"], pending["on"], pending["points"]
    else:
        sel = _map_selection(session)
        if sel is None or not getattr(sel, "rows", ()):
            return {}
        shapes, on, points = sel.shapes, sel.drawn_on, sel.clicked
        if not shapes and len(points) != len(sel.rows):
            return {}  # rows the link cannot describe
    out = {}
    if shapes:
        out["sel"] = selection.encode_shapes(shapes)
        if on in ("PCA", "UMAP"):
            out["sel_on"] = on
    if points and len(points) <= selection.MAX_LINKED_POINTS:
        out["pts"] = "_".join(str(int(r)) for r in points)
    return out


def _write_selection(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
    shapes: tuple = ()
    if "sel" in texts:
        try:
            shapes = selection.decode_shapes(texts["sel"])
        except ValueError:
            shapes = ()
    n_rows = int(getattr(data, "n_rows", 0) or 0)
    points = []
    for part in texts.get("pts", "").split("_")[: selection.MAX_LINKED_POINTS]:
        try:
            points.append(bounded_int(part, 0, max(n_rows - 1, 0), what="A row of the link"))
        except ValueError:
            continue
    if not shapes and not points:
        return []
    on = texts.get("sel_on")
    link_state(session)["map"] = {
        "shapes": shapes,
        "on": on if on in ("PCA", "UMAP") else session.get(EMB_METHOD, "UMAP"),
        "points": tuple(sorted(set(points))),
    }
    return []


EMBEDDING_VIEW = PageView(
    params=(
        _choice_param("colour", EMB_COLOUR, EMB_COLOURS, "status"),
        _text_param("word", EMB_WORD, MAX_WORD_CHARS),
        _choice_param("proj", EMB_METHOD, ("UMAP", "PCA"), "UMAP"),
        ViewParams(("sel", "sel_on", "pts"), _read_selection, _write_selection),
    )
)


# -- Synthetic circles: τ, k and the advanced settings --------------------------------------------------------------
#: the lowest τ of the Synthetic page's slider (aflite_app.compute.synthetic.CIRCLES_TAU_FLOOR; checked by a test)
SYN_TAU_FLOOR = 0.5


#: accuracy folds the Synthetic page starts with (compute.synthetic.CIRCLES_LIVE_FOLDS; checked by a test)
SYN_FOLDS = 3


#: the Synthetic page's default ring gaps (its text input's default)
SYN_SEPARATIONS = "1.0, 0.6, 0.4, 0.2"


_SYN_N = "syn-n"


def _syn_k_range(n: int) -> tuple[int, int, int]:
    """The Synthetic page's k slider for ``n`` points: (low, high, default), as pages/synthetic.py draws it."""
    return max(1, n // 50), max(2, n // 4), max(1, n // 20)


def _syn_n(session: Mapping) -> int:
    try:
        return int(session.get(_SYN_N, 2000))
    except (TypeError, ValueError):
        return 2000


def _read_syn_k(session: Mapping, data: Any = None) -> dict[str, str]:
    n = _syn_n(session)
    value = session.get(f"syn-k-{n}")
    return {"k": str(int(value))} if value is not None and int(value) != _syn_k_range(n)[2] else {}


def _write_syn_k(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
    n = _syn_n(session)  # the link's n was applied first (the advanced settings come before k)
    low, high, _ = _syn_k_range(n)
    try:
        session[f"syn-k-{n}"] = bounded_int(texts["k"], low, high, what="The link's k", clamp=True)
    except ValueError:
        return ["k"]
    return []


_SEPS = re.compile(r"^[0-9., ]{1,60}$")


def _write_syn_seps(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
    text = texts["gaps"]
    if _SEPS.match(text):  # only digits, dots, commas and spaces; the page checks the values themselves
        session["syn-seps"] = text
    return []


SYNTHETIC_VIEW = PageView(
    run=False,
    params=(
        _number_param("n", _SYN_N, 200, 6000, 2000, integer=True),
        _number_param("bias", "syn-bias", 0.0, 1.0, 0.75),
        _number_param("flip", "syn-flip", 0.0, 0.5, 0.1),
        ViewParams(("gaps",), _text_param("gaps", "syn-seps", 60, SYN_SEPARATIONS).read, _write_syn_seps),
        _number_param("m", "syn-m", 4, 256, 64, integer=True),
        _number_param("t", "syn-t", 0.01, 0.9, 0.05),
        _number_param("target", "syn-target", 0.02, 0.95, 0.1),
        _number_param("folds", "syn-folds", 2, 10, SYN_FOLDS, integer=True),
        _number_param("seed", "syn-seed", 0, 2**31 - 1, 0, integer=True),
        _number_param("tau", "syn-tau", SYN_TAU_FLOOR, 1.0, 0.75),
        ViewParams(("k",), _read_syn_k, _write_syn_k, numbers=("k",)),
    ),
)


# -- the guided demo: its step ------------------------------------------------------------------------------------
#: the guided demo's steps (pages/demo.py; its step lives in the DEMO_PAGE dict, not in a widget)
DEMO_STEPS = 3


def _read_demo_step(session: Mapping, data: Any = None) -> dict[str, str]:
    step = (session.get(DEMO_PAGE) or {}).get("step")
    return {"step": str(int(step))} if step and int(step) != 1 else {}


def _write_demo_step(session: MutableMapping, texts: Mapping[str, str], data: Any) -> list[str]:
    try:
        page_state(session, DEMO_PAGE)["step"] = bounded_int(
            texts["step"], 1, DEMO_STEPS, what="The link's step", clamp=True
        )
    except ValueError:
        return ["step"]
    return []


DEMO_VIEW = PageView(run=False, params=(ViewParams(("step",), _read_demo_step, _write_demo_step, numbers=("step",)),))

_RUN_ONLY = PageView()
#: page url_path -> what its link carries ("" is Home); a page not named here carries the dataset and its run
PAGE_VIEWS: dict[str, PageView] = {
    "": _RUN_ONLY,
    "synthetic": SYNTHETIC_VIEW,
    "inspect": INSPECT_VIEW,
    "embedding": EMBEDDING_VIEW,
    "demo": DEMO_VIEW,
}
