"""A Plotly chart drawn once per change: a thin ``st.components.v2`` component around plotly.js.

Streamlit 1.67's ``st.plotly_chart`` draws every figure twice when it mounts (an effect re-applies its theme to
a fresh copy of the figure and react-plotly replots it; ``theme=None`` keeps the copy). :func:`plotly_chart`
takes the subset of ``st.plotly_chart``'s signature this app uses and draws the figure with one
``Plotly.react``. plotly.js comes from the installed ``plotly`` package (``plotly/package_data/plotly.min.js``),
served by this Streamlit server under ``/component/...`` (a v1 component path, cached by the browser), never a
CDN. Selections come back in ``st.plotly_chart``'s ``on_select`` shape: ``{"selection": {"points": [...],
"point_indices": [...], "box": [...], "lasso": [...]}}`` with each point's ``curve_number``, ``point_number``,
``point_index``, ``x``, ``y`` and ``customdata``.

Measured (benchmarks/README.md section 5, ``benchmarks/bench_plotly_once.py``): one ``plotly_afterplot`` per
figure instead of two, about a fifth less renderer CPU per k change on the Synthetic page. No Streamlit theme is
applied (the figures carry the app's template, ``charts.theme``) and there is no fullscreen button.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import plotly
import plotly.graph_objects as go
import streamlit as st

__all__ = ["PLOTLY_JS", "plotly_chart"]

#: plotly.js of the installed plotly package (the version plotly.py's figures are written for)
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
_JS = Path(__file__).resolve().parent / "plotly_once_static" / "plotly_once.js"
_NAME = "aflite_plotly_once"
_ASSET = "plotly_js"


@cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component(_NAME, js=_JS.read_text(encoding="utf-8"), isolate_styles=False)


def _asset_url() -> str:
    """The URL of plotly.min.js on this server (a v1 component serving the plotly package's folder)."""
    from streamlit.components.v1 import declare_component

    served = declare_component(_ASSET, path=str(PLOTLY_JS.parent))
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return "/" + (base + "/" if base else "") + f"component/{served.name}/{PLOTLY_JS.name}"


def _modes(selection_mode: str | Iterable[str]) -> list[str]:
    modes = [selection_mode] if isinstance(selection_mode, str) else list(selection_mode)
    unknown = sorted(set(modes) - {"points", "box", "lasso"})
    if unknown:
        raise ValueError(f"selection_mode takes points, box and lasso; got {', '.join(unknown)}.")
    return modes


def _as_event(value: Any) -> dict[str, Any]:
    empty = {"points": [], "point_indices": [], "box": [], "lasso": []}
    sel = value if isinstance(value, Mapping) else {}
    return {"selection": {k: list(sel.get(k) or []) for k in empty}}


class _Selection(dict):
    """``{"selection": {...}}`` with attribute access (``.selection.points``), as ``st.plotly_chart`` returns."""

    def __getattr__(self, name: str) -> Any:
        try:
            value = self[name]
        except KeyError as err:
            raise AttributeError(name) from err
        return _Selection(value) if isinstance(value, dict) else value


def plotly_chart(
    figure: go.Figure,
    *,
    key: str,
    on_select: str | Callable[[], None] = "ignore",
    selection_mode: str | Iterable[str] = ("points", "box", "lasso"),
    width: str = "stretch",
    use_container_width: bool | None = None,
    config: Mapping[str, Any] | None = None,
    container: Any = None,
) -> _Selection | None:
    """Draw ``figure`` once (one ``Plotly.react`` per change) and return its selection like ``st.plotly_chart``.

    Parameters
    ----------
    figure : plotly.graph_objects.Figure
        The figure, styled server-side (``aflite_app.charts.theme``); no Streamlit theme is applied.
    key : str
        The element's key: the chart keeps its plot (and is updated in place) while the key stays.
    on_select : {"ignore", "rerun"} or callable
        "ignore": no selection events, returns None. "rerun" or a callback: a selection reruns the script (the
        callback first) and the call returns ``{"selection": {...}}`` with attribute access; the same value sits
        in ``st.session_state[key]`` for callbacks.
    selection_mode : str or iterable of str
        Any of "points", "box", "lasso".
    width : str
        "stretch" (the container's width) or "content".
    use_container_width : bool, optional
        Accepted for ``st.plotly_chart`` compatibility: True means ``width="stretch"``.
    config : mapping, optional
        plotly.js config (``displayModeBar`` ...).
    container : streamlit container, optional
        Where to draw (a column, ``st.sidebar`` ...): ``plotly_chart(fig, key=..., container=col)`` stands for
        ``col.plotly_chart(fig, key=...)``. Default: the current one.

    Returns
    -------
    dict or None
        The selection (``.selection.points``, ``.point_indices``, ``.box``, ``.lasso``), or None when
        ``on_select="ignore"``.
    """
    if on_select not in ("ignore", "rerun") and not callable(on_select):
        raise ValueError("on_select takes 'ignore', 'rerun' or a callable.")
    selecting = on_select != "ignore"
    modes = _modes(selection_mode) if selecting else []
    if use_container_width is not None:
        width = "stretch" if use_container_width else "content"
    state_key, drawn_key, owner_key = f"{key}::raw", f"{key}::drawn", f"{key}::selected-on"
    spec = figure.to_json(validate=False, engine="json")
    digest = hashlib.blake2b(spec.encode("utf-8"), digest_size=16).hexdigest()

    def _changed() -> None:
        # the user selected on the figure the previous run drew
        st.session_state[owner_key] = st.session_state.get(drawn_key)
        st.session_state[key] = _Selection(_as_event(_selection_of(st.session_state.get(state_key))))
        if callable(on_select):
            on_select()

    data = {
        "spec": spec,
        "config": json.dumps(dict(config or {})),
        "modes": modes,
        "src": _asset_url(),
    }
    kwargs: dict[str, Any] = {"on_selection_change": _changed} if selecting else {}
    mount = _component()
    if container is None:
        result = mount(key=state_key, data=data, width=width, height="content", **kwargs)
    else:
        with container:
            result = mount(key=state_key, data=data, width=width, height="content", **kwargs)
    if not selecting:
        return None
    st.session_state[drawn_key] = digest
    # st.plotly_chart mounts a changed figure afresh, with no selection: a selection made on an earlier figure
    # is not this figure's (the browser drops its marks too, since the new layout has no selections)
    own = st.session_state.get(owner_key) == digest
    event = _Selection(_as_event(_selection_of(result) if own else None))
    st.session_state[key] = event
    return event


def _selection_of(result: Any) -> Any:
    if result is None:
        return None
    try:
        return result["selection"]
    except (KeyError, TypeError):
        return getattr(result, "selection", None)
