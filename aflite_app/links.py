"""Shareable, reload-proof views: what the user chose lives in the URL, uploads behind an unguessable token.

A reload starts a new Streamlit session, and a link sent to a colleague too. So after every interaction the
address bar holds the view: the dataset (``?dataset=digits``), its representation (``rep``) and the Filter
parameters of that dataset (``n``, ``t``, ``k``, ``m``, ``tau``, ``strategy``, ``model``, ``seed``); the page
is already the URL's path. Opening such a URL applies them once, at the start of the session, checked and
clamped to what the widgets allow (a hand-edited value never breaks the page).

An uploaded dataset is not in any URL: it is kept for a while in a server-wide :class:`UploadVault` under a
random token (``?dataset=upload:<token>``, 128 random bits), so a reload or a shared link reopens it. Without the
token nothing of another session's upload is reachable. The vault holds at most ``AFLITE_UPLOAD_VAULT_MB``
megabytes (default 1024; the oldest go first) for ``AFLITE_UPLOAD_TTL_HOURS`` hours (default 24); an expired or
unknown token gets one sentence. An upload the vault cannot keep (larger than it, or ``AFLITE_UPLOAD_TTL_HOURS=0``)
is in no URL: :func:`unlinked_upload` gives the sentence every page shows while it is in use. Opened run
directories are not kept: reopen them from the run root.

Each page's own view travels too, through one registry (:data:`PAGE_VIEWS`: page ``url_path`` → its
:class:`PageView`): Inspect's status, class and round filters and its search; the Embedding map's colouring, typed
word, projection and selection (its box / lasso geometry and the projection it was drawn on, re-evaluated over
every row on the server: :mod:`aflite_app.selection`); the Synthetic page's τ, k and advanced settings. A page's
link carries only its own state, plus the dataset and its run for the pages that show one (the Synthetic page
shows neither, so its link has no dataset and no Filter parameters). A value left at its default is left out of
the URL; a hand-edited one is clamped to what the widget allows (numbers through
:func:`~aflite_core._validation.bounded_int` / :func:`~aflite_core._validation.bounded_float`) or ignored, never
breaking the page.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from aflite_core._validation import MAX_NUMBER_CHARS, bounded_float, bounded_int

from . import selection, settings
from .state import (
    BUNDLED,
    DATASET,
    DEMO_PAGE,
    FILTER_WIDGETS,
    LINK,
    MODEL_FAMILIES,
    REPRESENTATION,
    STRATEGY_LABELS,
    TAU,
    UPLOADS,
    embedding_map_key,
    embedding_selection_key,
    filter_key,
    link_state,
    page_state,
    register_upload,
    select_dataset,
)

__all__ = [
    "DEMO_STEPS",
    "PAGE_VIEWS",
    "UPLOAD_PREFIX",
    "PageView",
    "UploadVault",
    "ViewParams",
    "apply_url",
    "drop_pending_selection",
    "pending_selection",
    "unlinked_upload",
    "view_params",
]

#: the dataset parameter of an upload: ``upload:<token>``
UPLOAD_PREFIX = "upload:"
#: URL name -> the Filter widget it sets (see :data:`aflite_app.state.FILTER_WIDGETS`)
FILTER_PARAMS = {
    "n": "target",
    "t": "train",
    "k": "k",
    "m": "m",
    "seed": "seed",
    "strategy": "strategy",
    "model": "model",
}


@dataclass
class _Entry:
    data: Any
    size: int
    stored: float


class UploadVault:
    """Uploaded datasets kept server-wide for a while, each behind a random token (thread-safe).

    Parameters
    ----------
    max_bytes : int
        Total size kept; the oldest entries are dropped beyond it.
    ttl_seconds : float
        How long an entry stays reachable.
    clock : callable, optional
        ``time.time`` (tests pass another).
    """

    def __init__(self, max_bytes: int, ttl_seconds: float, clock: Callable[[], float] = time.time) -> None:
        self.max_bytes, self.ttl, self.clock = int(max_bytes), float(ttl_seconds), clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls) -> UploadVault:
        """The limits from ``AFLITE_UPLOAD_VAULT_MB`` and ``AFLITE_UPLOAD_TTL_HOURS``."""
        s = settings.load()
        return cls(int(s.upload_vault_mb * 2**20), s.upload_ttl_hours * 3600)

    def _expire(self) -> None:
        now = self.clock()
        for token in [t for t, e in self._entries.items() if now - e.stored > self.ttl]:
            del self._entries[token]

    def put(self, data: Any) -> str | None:
        """Keep ``data``; returns its token (None when it alone is larger than the vault, or the TTL is 0)."""
        size = dataset_bytes(data)
        if size > self.max_bytes or self.ttl <= 0:  # too large, or keeping uploads is switched off
            return None
        token = secrets.token_urlsafe(16)
        with self._lock:
            self._expire()
            self._entries[token] = _Entry(data, size, self.clock())
            while sum(e.size for e in self._entries.values()) > self.max_bytes:
                self._entries.popitem(last=False)
        return token

    def get(self, token: str) -> Any:
        """The dataset behind ``token``; ``KeyError`` with the sentence to show when it is gone or unknown."""
        with self._lock:
            self._expire()
            entry = self._entries.get(token)
        if entry is None and self.ttl <= 0:
            raise KeyError(
                "The uploaded dataset of this link is not kept: this server keeps no uploads for links "
                f"({settings.UPLOAD_TTL_HOURS_ENV} is 0); upload the file again on the Data page."
            )
        if entry is None:
            hours = self.ttl / 3600
            raise KeyError(
                f"The uploaded dataset of this link is no longer kept (uploads are kept for {hours:g} hours, or "
                "until the server needs the space, or the server restarted): upload the file again on the Data page."
            )
        return entry.data


def dataset_bytes(data: Any) -> int:
    """Memory a dataset holds: its representations and its table."""
    reps = getattr(data, "representations", {}) or {}
    size = sum(int(getattr(X, "nbytes", 0)) for X in reps.values())
    frame = getattr(data, "frame", None)
    if frame is not None:
        size += int(frame.memory_usage(deep=True).sum())
    return size


def _run_params(session: Mapping, vault: UploadVault | None) -> dict[str, str]:
    """The dataset, its representation and its Filter parameters ({} for a dataset no URL can name)."""
    key = session.get(DATASET, "digits")
    if key in BUNDLED:
        out = {"dataset": key}
    elif key.startswith("upload-") and vault is not None and key in (session.get(UPLOADS) or {}):
        tokens = (session.get(LINK) or {}).get("tokens") or {}
        token = tokens.get(key)
        if token is None:
            token = vault.put(session[UPLOADS][key])
            if token is None:
                return {}
            tokens = {**tokens, key: token}
            if isinstance(session, MutableMapping):
                link_state(session)["tokens"] = tokens
        out = {"dataset": UPLOAD_PREFIX + token}
    else:
        return {}
    if session.get(REPRESENTATION):
        out["rep"] = str(session[REPRESENTATION])
    for param, widget in FILTER_PARAMS.items():
        value = session.get(filter_key(widget, key))
        if value is not None:
            out[param] = str(value)
    if session.get(TAU) is not None:
        out["tau"] = f"{float(session[TAU]):g}"
    return out


def view_params(
    session: Mapping, vault: UploadVault | None = None, page: str | None = None, data: Any = None
) -> dict[str, str]:
    """The URL of the current view of ``page`` (its ``url_path``; None: the dataset and run only), as strings.

    A page that shows a dataset (:attr:`PageView.run`) carries the dataset, its representation and its Filter
    parameters; every page carries its own view (:data:`PAGE_VIEWS`), values at their defaults left out. An
    upload is put in ``vault`` the first time (its token is remembered in the session); opened run directories are
    not shared (they have no parameter, and neither has the page's own view then). ``data`` is the session's
    dataset (Inspect's link names classes by their position in it).
    """
    view = PAGE_VIEWS.get(page or "", _RUN_ONLY) if page is not None else _RUN_ONLY
    out: dict[str, str] = {}
    if view.run:
        out = _run_params(session, vault)
        if not out:
            return {}
    for part in view.params:
        try:
            out.update(part.read(session, data))
        except (KeyError, TypeError, ValueError, AttributeError):  # a half-set widget state: left out, never fatal
            continue
    return out


def _ignored_notice(names: list[str]) -> str:
    """One sentence naming the link's values that were ignored (names only: never the hand-edited text)."""
    tau = ", τ from 0 to 1" if "tau" in names else ""
    if len(names) == 1:
        return (
            f"This link's {names[0]} is not a number this page can use (a finite number of at most "
            f"{MAX_NUMBER_CHARS} characters{tau}), so the page uses its default {names[0]} instead."
        )
    listed = ", ".join(names[:-1]) + " and " + names[-1]
    return (
        f"This link's {listed} are not numbers this page can use (finite numbers of at most {MAX_NUMBER_CHARS} "
        f"characters{tau}), so the page uses its defaults for them instead."
    )


def unlinked_upload(session: Mapping, vault: UploadVault | None) -> str | None:
    """The sentence to show while the session's upload in use is in no URL (a reload would lose it), else None.

    :func:`view_params` leaves an upload out of the URL when the vault cannot keep it: larger than the whole
    vault (``AFLITE_UPLOAD_VAULT_MB``), or keeping uploads switched off (``AFLITE_UPLOAD_TTL_HOURS=0``).
    """
    key = session.get(DATASET, "digits")
    uploads = session.get(UPLOADS) or {}
    if vault is None or not str(key).startswith("upload-") or key not in uploads:
        return None
    if ((session.get(LINK) or {}).get("tokens") or {}).get(key):
        return None  # in the vault: the URL holds its token
    if vault.ttl <= 0:
        return (
            "This uploaded dataset is kept for this session only: the server keeps no uploads for links "
            f"({settings.UPLOAD_TTL_HOURS_ENV} is 0), so a reload or a link will not bring it back."
        )
    size = dataset_bytes(uploads[key])
    return (
        f"This uploaded dataset ({size / 2**20:,.1f} MB in memory) is kept for this session only because it is "
        f"larger than the server's upload store of {vault.max_bytes / 2**20:,.0f} MB "
        f"({settings.UPLOAD_VAULT_MB_ENV}); a reload or a link will not bring it back."
    )


def apply_url(
    session: MutableMapping,
    params: Mapping[str, str],
    vault: UploadVault | None,
    dataset_of: Callable[[str], Any],
    page: str | None = None,
) -> str | None:
    """Apply a URL's view to a new session (once); returns a sentence to show, or None.

    ``dataset_of(key)`` gives a bundled dataset (to know its rows and classes for clamping). Unknown datasets,
    representations and values are ignored; finite numbers are clamped to the Filter form's ranges
    (:func:`aflite_core._validation.bounded_int`), and a number that is not finite, not a number, longer than
    :data:`~aflite_core._validation.MAX_NUMBER_CHARS` characters (or a τ outside [0, 1]) is ignored with one
    sentence naming it. ``page`` (the page's ``url_path``) applies that page's own view (:data:`PAGE_VIEWS`); a
    page without a dataset (the Synthetic page) takes no dataset or Filter parameter from the URL.
    """
    link = link_state(session)
    if link["applied"]:
        return None
    link["applied"] = True
    view = PAGE_VIEWS.get(page or "", _RUN_ONLY) if page is not None else _RUN_ONLY
    notice, ignored, data = None, [], None
    if view.run:
        notice, data = _apply_run(session, params, vault, dataset_of, ignored)
    if view.params:
        if data is None:
            key = session.get(DATASET, "digits")
            data = (session.get(UPLOADS) or {}).get(key)
            if data is None and key in BUNDLED:
                data = dataset_of(key)
        for part in view.params:
            texts = {name: str(params[name]) for name in part.names if params.get(name) is not None}
            if texts:
                try:
                    ignored += part.write(session, texts, data)
                except (TypeError, ValueError, KeyError, AttributeError, IndexError):  # never fatal: ignored
                    ignored += [n for n in part.names if n in texts and n in part.numbers]
    if notice:
        return notice
    return _ignored_notice(ignored) if ignored else None


def _apply_run(
    session: MutableMapping,
    params: Mapping[str, str],
    vault: UploadVault | None,
    dataset_of: Callable[[str], Any],
    ignored: list[str],
) -> tuple[str | None, Any]:
    """Apply the URL's dataset, representation and Filter parameters; (sentence or None, the dataset or None)."""
    link = link_state(session)
    name = str(params.get("dataset") or "")
    if not name:
        return None, None
    if name in BUNDLED:
        key, data = name, dataset_of(name)
        select_dataset(session, key)
    elif name.startswith(UPLOAD_PREFIX) and vault is not None:
        token = name[len(UPLOAD_PREFIX) :]
        try:
            data = vault.get(token)
        except KeyError as exc:
            return str(exc.args[0]), None
        key = "upload-" + token[:12]
        register_upload(session, key, data)
        link["tokens"] = {**link["tokens"], key: token}
    else:
        return "This link names a dataset this app does not have; it shows the bundled digits instead.", None
    rep = params.get("rep")
    if rep in getattr(data, "representations", {}):
        session[REPRESENTATION] = rep
    n_rows, n_classes = int(data.n_rows), int(data.n_classes)
    limits = {
        "target": (n_classes + 2, n_rows - 1),
        "train": (n_classes + 1, n_rows - 2),
        "m": (1, 256),
        "seed": (0, 2**31 - 1),
        "k": (1, max(2, n_rows // 4)),
    }
    for param, widget in FILTER_PARAMS.items():
        text = params.get(param)
        if text is None:
            continue
        if widget in limits:
            try:
                value = bounded_int(text, *limits[widget], what=f"The link's {param}", clamp=True)
            except ValueError:
                ignored.append(param)
                continue
        elif widget == "strategy":
            value = text if text in STRATEGY_LABELS else None
        else:
            value = text if text in MODEL_FAMILIES else None
        if value is not None and widget in FILTER_WIDGETS:
            session[filter_key(widget, key)] = value
            link["run"] = key
    if params.get("tau") is not None:
        try:
            session[TAU] = round(bounded_float(params["tau"], 0.0, 1.0, what="The link's tau"), 2)
        except ValueError:
            ignored.append("tau")
    return None, data


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
