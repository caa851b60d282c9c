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

Each page's own view travels too, through one registry (:data:`aflite_app.page_views.PAGE_VIEWS`): Inspect's
filters and search, the Embedding map's colouring, word, projection and selection, the Synthetic page's τ, k and
advanced settings. A page's link carries only its own state, plus the dataset and its run for the pages that show
one (the Synthetic page shows neither, so its link has no dataset and no Filter parameters). A value left at its
default is left out of the URL; a hand-edited one is clamped to what the widget allows or ignored, never breaking
the page.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from aflite_core._validation import MAX_NUMBER_CHARS, bounded_float, bounded_int

from . import settings
from .page_views import _RUN_ONLY, PAGE_VIEWS
from .state import (
    BUNDLED,
    DATASET,
    FILTER_WIDGETS,
    LINK,
    MODEL_FAMILIES,
    REPRESENTATION,
    STRATEGY_LABELS,
    TAU,
    UPLOADS,
    filter_key,
    link_state,
    register_upload,
    select_dataset,
)

__all__ = [
    "UPLOAD_PREFIX",
    "UploadVault",
    "apply_url",
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
