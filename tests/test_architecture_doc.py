"""docs/ARCHITECTURE.md stays true: its import diagram is the one docs/import_diagram.py generates, and the pages
import only the compute modules its table allows (issue 23, item 5)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def _diagram_module():
    spec = importlib.util.spec_from_file_location("import_diagram", ROOT / "docs" / "import_diagram.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ig = _diagram_module()
FILES = ig.module_files()
GRAPH = ig.edges(FILES)


def _table() -> dict[str, str]:
    """compute module -> its page file, or "shared" (the table of docs/ARCHITECTURE.md)."""
    out = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and (m := re.fullmatch(r"`compute/(\w+)\.py`", cells[0])):
            page = re.fullmatch(r"`pages/(\w+)\.py`", cells[1])
            out[m.group(1)] = page.group(1) if page else cells[1].lower()
    return out


def test_the_committed_diagram_is_the_generated_one():
    committed = ig.committed(DOC)
    assert committed is not None, "docs/ARCHITECTURE.md lost the import diagram's markers"
    assert committed == ig.block(), "the import diagram is stale: run `python docs/import_diagram.py --write`"


def test_the_diagram_stays_small():
    boxes = {ig.box(m, FILES, ig.shared_compute()) for m in FILES}
    assert len(boxes) <= 30, sorted(boxes)


def test_the_reader_resolves_relative_function_level_and_package_imports(tmp_path):
    pkg = tmp_path / "aflite_app"
    (pkg / "compute").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import thing\n")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from .compute import c\nimport aflite_app.compute.c\n")
    (pkg / "compute" / "__init__.py").write_text("")
    (pkg / "compute" / "c.py").write_text("from ..a import thing\nfrom .. import b\n")
    files = ig.module_files(tmp_path)
    g = ig.edges(files)
    assert g["aflite_app.a"] == {"aflite_app.b"}
    assert g["aflite_app.b"] == {"aflite_app.compute.c"}
    assert g["aflite_app.compute.c"] == {"aflite_app.a", "aflite_app.b"}
    assert g["aflite_app"] == set()  # a package's re-exports are not edges


def test_the_table_names_every_compute_module():
    table = _table()
    modules = {n.rsplit(".", 1)[1] for n in FILES if n.startswith("aflite_app.compute.")}
    assert set(table) == modules, "docs/ARCHITECTURE.md's compute table and aflite_app/compute/ differ"
    pages = {n.split(".", 1)[1] for n in FILES if n.startswith("pages.")}
    assert {p for p in table.values() if p != "shared"} <= pages
    lines = DOC.read_text(encoding="utf-8").splitlines()
    shared_line = next(line for line in lines if line.startswith("Shared compute"))
    # the line the import-graph test reads: the shared modules, and the Data page's two own modules after them
    named = set(re.findall(r"`(\w+)`", shared_line))
    assert {m for m, p in table.items() if p == "shared"} <= named <= set(table)


@pytest.mark.parametrize("page", sorted(n for n in FILES if n.startswith("pages.")))
def test_a_page_imports_only_its_own_or_shared_compute_modules(page):
    table = _table()
    name = page.split(".", 1)[1]
    used = {t.rsplit(".", 1)[1] for t in GRAPH[page] if t.startswith("aflite_app.compute.")}
    allowed = {m for m, p in table.items() if p in ("shared", name)}
    assert used <= allowed, f"{page} imports {sorted(used - allowed)}: neither its own nor shared in the doc"


def test_compute_imports_neither_the_session_module_nor_a_chart():
    bad = {
        n: sorted(t for t in GRAPH[n] if t == "aflite_app.state" or t.startswith("aflite_app.charts"))
        for n in GRAPH
        if n.startswith("aflite_app.compute")
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_specs_and_settings_import_no_streamlit():
    for name in ("specs", "settings"):
        source = (ROOT / "aflite_app" / f"{name}.py").read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+streamlit", source, re.M), name


def test_the_core_section_is_there_for_the_layout_branch():
    assert re.search(r"^## The core$", DOC.read_text(encoding="utf-8"), re.M)
