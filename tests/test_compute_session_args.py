"""Compute gets this session's own data (uploads, opened runs) as an argument, every time (issue 23 item 4).

Read with ``ast`` (nothing is imported): every function of ``aflite_app/compute`` that reads the session's data
has a ``session`` (or, memoised, ``_session``) parameter, and every call of one of them - from a page, ``ui``,
``app.py`` or another compute function - passes it by keyword; none is handed over uncalled (as a background
job's ``prepare``) without it bound.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import import_graph as ig

FILES = ig.module_files()
COMPUTE = {n: p for n, p in FILES.items() if n.startswith("aflite_app.compute.")}
CALLERS = {n: p for n, p in FILES.items() if n.startswith(("aflite_app", "pages", "app"))}
SESSION_PARAMS = ("session", "_session")


def _session_functions() -> dict[str, set[str]]:
    """Function name -> the compute modules defining it with a session parameter."""
    out: dict[str, set[str]] = {}
    for name, path in COMPUTE.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                params = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
                if any(p in SESSION_PARAMS for p in params):
                    out.setdefault(node.name, set()).add(name)
    return out


TAKING = _session_functions()


def _compute_names(name: str, tree: ast.AST) -> tuple[dict[str, str], set[str]]:
    """Names bound to compute modules (``runs``, ``compute``) and the compute functions imported by name."""
    modules: dict[str, str] = {}
    functions: set[str] = set()
    pkg = name if FILES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                up = parts[: len(parts) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in COMPUTE or target == "aflite_app.compute":
                    modules[alias.asname or alias.name] = target
                elif base in COMPUTE and alias.name in TAKING:
                    functions.add(alias.asname or alias.name)
    if name in COMPUTE:
        functions |= {f for f, where in TAKING.items() if name in where}
    return modules, functions


def _rel(path: Path) -> str:
    return str(path.relative_to(ig.ROOT)) if path.is_relative_to(ig.ROOT) else path.name


def _calls_without_session() -> list[str]:
    bad = []
    for name, path in CALLERS.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules, functions = _compute_names(name, tree)
        called: set[int] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            target = None
            if isinstance(f, ast.Name) and f.id in functions:
                target = f.id
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
                if f.attr in TAKING:
                    target = f.attr
            if target is None:
                continue
            called.add(id(f))
            if not any(k.arg in SESSION_PARAMS for k in node.keywords):
                bad.append(f"{_rel(path)}:{node.lineno} {target}(...) without session=")
        for node, local in _loads(tree):  # handed over uncalled (e.g. a background job's prepare)
            ref = None
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
                ref = node.attr if node.attr in TAKING else None
            elif isinstance(node, ast.Name) and node.id in functions and node.id not in local:
                ref = node.id
            if ref is not None and id(node) not in called:
                bad.append(f"{_rel(path)}:{node.lineno} {ref} passed on without its session")
    return bad


def _bound(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names a function binds itself (parameters, assignments, loop targets): they shadow module names."""
    args = func.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _loads(tree: ast.AST, local: frozenset[str] = frozenset()):
    """Every loaded name or attribute with the names bound by its enclosing functions."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _loads(child, local | _bound(child))
            continue
        if isinstance(child, ast.Attribute | ast.Name) and isinstance(child.ctx, ast.Load):
            yield child, local
        yield from _loads(child, local)


def test_the_session_taking_functions_are_found():
    """A guard against a reader that finds nothing: the shared look-ups take the session."""
    assert {"dataset", "dataset_choices", "result", "stored_result", "run_filter", "prepare_run"} <= set(TAKING)


def test_every_call_into_compute_passes_the_session():
    assert _calls_without_session() == []


def test_the_reader_flags_a_call_without_the_session(tmp_path, monkeypatch):
    """The check itself: the Data page's tabs calling ``datasets.dataset(key)`` without ``session=`` are caught."""
    page = ig.ROOT / "aflite_app" / "data_tabs.py"  # the Data page's drawing code (moved out of pages/data.py)
    text = page.read_text(encoding="utf-8")
    assert "datasets.dataset(" in text
    fake = tmp_path / "data_tabs.py"
    fake.write_text(text + "\n\ndatasets.dataset('digits')\nlook_up = datasets.dataset_choices\n", encoding="utf-8")
    monkeypatch.setitem(CALLERS, "aflite_app.data_tabs", fake)
    monkeypatch.setitem(FILES, "aflite_app.data_tabs", fake)
    bad = [b for b in _calls_without_session() if "data_tabs" in b]
    assert any("dataset(...) without session=" in b for b in bad)
    assert any("dataset_choices passed on without its session" in b for b in bad)
