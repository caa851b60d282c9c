"""The Plotly figures of an AppTest page, whichever element draws them.

A page draws a figure with ``st.plotly_chart`` (element type ``plotly_chart``) or with
``aflite_app.plotly_once.plotly_chart`` (a ``st.components.v2`` component: element type ``bidi_component``, the
figure JSON in its data). :func:`plotly_elements` gives both in one shape, ``el.proto.id`` (ending with the key
the page gave) and ``el.proto.spec`` (the figure JSON), so a test reads a page's figures the same way whichever
element a page uses.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

ONCE = "aflite_plotly_once"
_RAW = "::raw"


def _nodes(node):
    yield node
    for child in (getattr(node, "children", None) or {}).values():
        yield from _nodes(child)


def plotly_elements(at) -> list[SimpleNamespace]:
    """Every figure on the page, in page order: ``el.proto.id``, ``el.proto.spec`` and ``el.key``."""
    out = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        kind = getattr(node, "type", None)
        if proto is None:
            continue
        if kind == "plotly_chart":
            out.append(SimpleNamespace(proto=SimpleNamespace(id=proto.id, spec=proto.spec), key=node.key))
        elif kind == "bidi_component" and proto.component_name == ONCE:
            spec = json.loads(proto.json)["spec"]
            el_id = proto.id.removesuffix(_RAW)
            key = m.group(1) if (m := re.match(r"^\$\$ID-[0-9a-f]+-(.*)$", el_id)) else None
            out.append(SimpleNamespace(proto=SimpleNamespace(id=el_id, spec=spec), key=key))
    return out
