"""The import graph's rules (issue 23), read with ``ast`` from the source: nothing here imports the modules.

Edges as :mod:`tests.import_graph` resolves them: ``from . import x`` is an edge to ``x``; imports inside
functions and under ``if TYPE_CHECKING:`` are edges; a package ``__init__``'s re-exports are not.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import import_graph as ig

ROOT = ig.ROOT
FILES = ig.module_files()
GRAPH = ig.edges(FILES)

#: a page → its own compute module, where the names differ (otherwise ``pages/X.py`` owns ``compute/X.py``)
OWN_COMPUTE = {"evaluation_sets": "evalsets", "filter": "runs"}
#: the shared compute modules, until docs/ARCHITECTURE.md lists them (README's layout table names these)
README_SHARED = ("datasets", "uploads", "rundirs", "runs", "_stores")


def _shared_compute() -> tuple[str, ...]:
    """The compute modules docs/ARCHITECTURE.md lists as shared (a line ``Shared compute modules: `a`, `b` …``)."""
    doc = ROOT / "docs" / "ARCHITECTURE.md"
    if doc.exists():
        for line in doc.read_text(encoding="utf-8").splitlines():
            if line.lower().lstrip("*# ").startswith("shared compute modules"):
                return tuple(re.findall(r"`(?:aflite_app\.compute\.|compute\.)?([A-Za-z_]+)`", line))
    return README_SHARED


def test_the_graph_is_read():
    """A guard against a reader that finds nothing: the core's known edges are there."""
    assert "aflite_core.engine.run_constants" in GRAPH["aflite_core.engine.checkpoint"]
    assert "aflite_core.engine.loop" in GRAPH["aflite_core.engine.filtering"]
    assert "aflite_core.engine.result" in GRAPH["aflite_core.engine.loop"]
    assert sum(len(v) for v in GRAPH.values()) > 150


def test_the_reader_resolves_relative_and_function_level_imports(tmp_path):
    pkg = tmp_path / "aflite_core"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import thing\n")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from aflite_core import thing\nfrom .. import a\n")
    files = {n: p for n, p in ig.module_files(tmp_path).items() if n.startswith("aflite_core")}
    g = ig.edges(files)
    assert g["aflite_core.a"] == {"aflite_core.b"}
    assert g["aflite_core.b"] == {"aflite_core.sub.c"}
    assert g["aflite_core.sub.c"] == {"aflite_core.a"}  # `thing` followed through the __init__ to a
    assert g["aflite_core"] == set()  # an __init__'s re-exports are not edges
    assert ig.cycles(g) == [["aflite_core.a", "aflite_core.b", "aflite_core.sub.c"]]


def test_no_import_cycle_in_the_core():
    assert ig.cycles(GRAPH, "aflite_core") == []


def test_no_import_cycle_anywhere():
    assert ig.cycles(GRAPH) == []


def test_the_core_never_imports_streamlit_or_plotly():
    bad = {
        name: sorted(ig.external_imports(name, path) & {"streamlit", "plotly"})
        for name, path in FILES.items()
        if name.startswith("aflite_core")
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_core_never_imports_the_app():
    bad = {
        n: sorted(t for t in GRAPH[n] if not t.startswith("aflite_core")) for n in GRAPH if n.startswith("aflite_core")
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_no_core_module_stem_is_a_prefix_of_another_in_its_package():
    by_package: dict[Path, list[str]] = {}
    for path in (ROOT / "aflite_core").rglob("*.py"):
        if path.name != "__init__.py":
            by_package.setdefault(path.parent, []).append(path.stem.lstrip("_"))
    clashes = [
        f"{pkg.relative_to(ROOT)}: {a} / {b}"
        for pkg, stems in by_package.items()
        for a in stems
        for b in stems
        if a != b and b.startswith(a)
    ]
    assert clashes == []


def _compute_modules() -> list[str]:
    return [n for n in GRAPH if n.startswith("aflite_app.compute.")]


def test_compute_never_imports_a_chart():
    bad = {n: sorted(t for t in GRAPH[n] if t.startswith("aflite_app.charts")) for n in _compute_modules()}
    assert {k: v for k, v in bad.items() if v} == {}


def test_charts_never_import_streamlit_or_compute():
    bad = {}
    for name, path in FILES.items():
        if name.startswith("aflite_app.charts"):
            found = sorted(ig.external_imports(name, path) & {"streamlit"}) + sorted(
                t for t in GRAPH[name] if t.startswith(("aflite_app.compute", "aflite_app.state", "aflite_app.ui"))
            )
            if found:
                bad[name] = found
    assert bad == {}


_COMPUTE_READING_STATE = sorted(n for n in _compute_modules() if "aflite_app.state" in GRAPH[n])


@pytest.mark.xfail(
    bool(_COMPUTE_READING_STATE),
    strict=True,
    reason="issue 23 item 4 (specs in a Streamlit-free module, uploads and runs passed in): these compute "
    f"modules import the session module aflite_app.state today: {', '.join(_COMPUTE_READING_STATE)}",
)
def test_compute_never_imports_the_session_module():
    assert _COMPUTE_READING_STATE == []


def test_pages_import_only_their_own_or_shared_compute_modules():
    shared = set(_shared_compute())
    bad = {}
    for name in GRAPH:
        if not name.startswith("pages."):
            continue
        page = name.split(".", 1)[1]
        own = OWN_COMPUTE.get(page, page)
        used = {t.rsplit(".", 1)[1] for t in GRAPH[name] if t.startswith("aflite_app.compute.")}
        if used - shared - {own}:
            bad[name] = sorted(used - shared - {own})
    assert bad == {}


def _reachable(start: str) -> set[str]:
    seen, stack = set(), [start]
    while stack:
        for target in GRAPH.get(stack.pop(), ()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def test_compute_reaches_neither_the_session_module_nor_ui_even_through_another_module():
    """Compute gets the session's data as arguments: no import path leads from it to the modules that own it."""
    bad = {
        n: sorted(_reachable(n) & {"aflite_app.state", "aflite_app.ui", "aflite_app.links"}) for n in _compute_modules()
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_no_session_reader_is_installed_in_compute():
    """No hook through which the page layer hands compute a way to read the session (the data is an argument)."""
    found = []
    for name, path in FILES.items():
        if not name.startswith(("aflite_app", "pages", "app")):
            continue
        text = path.read_text(encoding="utf-8")
        for word in ("session_reader", "install_session"):
            if word in text:
                found.append((name, word))
        hook = re.search(r"^\s*global\s", text, re.M)
        if name.startswith("aflite_app.compute") and ("session_state" in text or hook):
            found.append((name, "session_state or a module-level hook (global)"))
    assert found == []
