"""The repository's import graph, read with ``ast`` (no module is imported): module → module edges as Python
resolves them.

* ``import a.b`` and ``from a import b`` (``b`` a submodule) are edges to ``a.b``; ``from . import x`` is an edge
  to the sibling module ``x``; ``from .x import name`` is an edge to ``x`` (or to ``x.name`` when that is a
  submodule).
* A name imported from a package (``from aflite_core import aflite``) is followed through the package's
  ``__init__`` to the module that defines it when the ``__init__`` imports it from one (eagerly, or through a
  lazy ``_LAZY`` table of ``name: "module"`` strings); otherwise the edge goes to the package itself.
* Imports inside functions, methods, ``try`` blocks and ``if TYPE_CHECKING:`` blocks are all edges (an
  annotation-only import still ties the two modules together for a reader and a type checker).
* A package ``__init__``'s own imports (its re-exports) are not edges.

Used by ``tests/test_import_graph.py``; ``python tests/import_graph.py`` prints the cycles and the edge count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("aflite_core", "aflite_app", "pages")
TOP_FILES = ("app.py",)


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the repository's packages (and ``app.py``) by dotted name."""
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    for name in TOP_FILES:
        if (root / name).exists():
            out[name[:-3]] = root / name
    return out


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth (functions, ``try`` and ``if TYPE_CHECKING:`` blocks included)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
            continue
        stack.extend(ast.iter_child_nodes(node))


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _base(name: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    pkg = _package_of(name, path).split(".")
    pkg = pkg[: len(pkg) - (node.level - 1)]
    return ".".join(pkg + ([node.module] if node.module else []))


def _init_exports(files: dict[str, Path]) -> dict[str, dict[str, str]]:
    """For each package: the names its ``__init__`` re-exports → the module they come from."""
    out: dict[str, dict[str, str]] = {}
    for name, path in files.items():
        if path.name != "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: dict[str, str] = {}
        for node in _imports(tree):
            if isinstance(node, ast.ImportFrom):
                base = _base(name, path, node)
                for alias in node.names:
                    names[alias.asname or alias.name] = base
        for node in ast.walk(tree):  # a lazy table: _LAZY = {"name": "module", ...} (relative to the package)
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
                and isinstance(node.value, ast.Dict)
            ):
                for k, v in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant):
                        target = v.value
                        names[k.value] = f"{name}{target}" if target.startswith(".") else target
        out[name] = names
    return out


def edges(files: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """module → the repository modules it imports (only modules of :data:`PACKAGES` and ``app``)."""
    files = module_files() if files is None else files
    exports = _init_exports(files)
    graph: dict[str, set[str]] = {name: set() for name in files}

    def known(target: str) -> str | None:
        while target and target not in files:
            target = target.rpartition(".")[0]
        return target or None

    for name, path in files.items():
        if path.name == "__init__.py":
            continue  # a package's re-exports are not edges
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _base(name, path, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in files:
                        targets.append(sub)
                    elif alias.name in exports.get(base, {}):
                        targets.append(exports[base][alias.name])
                    else:
                        targets.append(base)
            for target in targets:
                hit = known(target)
                if hit is not None and hit != name:
                    graph[name].add(hit)
    return graph


def external_imports(name: str, path: Path) -> set[str]:
    """The top-level names of every package a module imports (``streamlit``, ``numpy`` …)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in _imports(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out


def cycles(graph: dict[str, set[str]], prefix: str = "") -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), among modules under ``prefix``."""
    nodes = [n for n in graph if n.startswith(prefix)]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # iterative enough for ~100 modules
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if not w.startswith(prefix):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out)


if __name__ == "__main__":
    g = edges()
    print(sum(len(v) for k, v in g.items() if k.startswith("aflite_core")), "edges in aflite_core")
    for comp in cycles(g):
        print("cycle:", " ↔ ".join(comp))
