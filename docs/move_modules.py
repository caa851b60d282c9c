"""Move core modules (``git mv``, so history follows) and rewrite every import and dotted reference to them.

Issue 23 groups the core by job. The moves happen in two steps, each a table below:

* ``layout`` (done on the ``layout`` branch): ``data/``, ``measures/``, ``experiments/``;
* ``engine`` (to run once the engine branches have merged): the loop, partitions, model families, the Dask
  backend, checkpoints and run records into ``aflite_core/engine/``.

Usage (from the repository root)::

    python docs/move_modules.py engine --dry-run   # list the moves and the files whose text would change
    python docs/move_modules.py engine             # git mv + rewrite, then: ruff check --fix . && ruff format .
    python docs/move_modules.py layout --rewrite-only FILE...   # only rewrite FILEs' imports (a branch's new module)

What is rewritten, in every ``.py`` file of ``aflite_core``, ``aflite_app``, ``pages``, ``tests``, ``benchmarks``,
``docs``, ``sample_data`` and ``app.py``:

* import statements, read with ``ast`` and written again: a relative import stays relative (recomputed from the
  module's new place), an absolute one stays absolute; ``from pkg import module`` of a renamed module keeps the
  old name as its alias (``from aflite_core.data import user_tables as tables``), so no other line changes;
* every other mention of a moved module's dotted path (docstrings, comments, ``monkeypatch`` targets,
  ``aflite_core.baselines.one_shot_filter`` after ``import aflite_core.baselines``), and its file path
  (``aflite_core/tables.py``) in ``.py`` and ``.md`` files;
* never the class paths a saved run records (:data:`PERSISTED`): old run directories must still load.

Run it once per table: the rewrite of text is not idempotent (``aflite_core.engine`` is a prefix of its own new
path). Afterwards ``ruff check --fix .`` sorts the rewritten imports and ``ruff format .`` wraps them.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCAN = ("aflite_core", "aflite_app", "pages", "tests", "benchmarks", "docs", "sample_data")
TOP = ("app.py",)
TEXT_FILES = (
    "README.md",
    "benchmarks/README.md",
    "requirements-dev.txt",
    "requirements.txt",
    "sample_data/digits/README.md",
)
#: never rewritten: this script (its tables name the old paths), the documents of the moves, the shims' test, and
#: every shim (a module with ``__getattr__ = moved(...)``): they name the old paths on purpose
SKIP = (
    "docs/move_modules.py",
    "docs/MODULE_MOVES.md",
    "docs/ARCHITECTURE.md",
    "tests/test_module_shims.py",
    "aflite_core/_deprecated.py",
)

#: the moves of issue 23 item 2 that do not touch the engine (old dotted module → new)
LAYOUT_MOVES: dict[str, str] = {
    # data: datasets and how they are read
    "aflite_core.datasets": "aflite_core.data.datasets",
    "aflite_core.tables": "aflite_core.data.user_tables",
    "aflite_core.digits": "aflite_core.data.digits",
    "aflite_core.nli": "aflite_core.data.nli",
    "aflite_core.features": "aflite_core.data.features",
    "aflite_core.embeddings": "aflite_core.data.embeddings",
    "aflite_core.io": "aflite_core.data.readers",
    "aflite_core.preflight": "aflite_core.data.preflight",
    "aflite_core.synthetic": "aflite_core.data.planted_bias",
    "aflite_core.wordnet": "aflite_core.data.wordnet",
    # measures: what a run removed and how predictable, stable, spurious a dataset is
    "aflite_core.artifacts": "aflite_core.measures.removed_artifacts",
    "aflite_core.artifact_stats": "aflite_core.measures.artifact_statistics",
    "aflite_core.baselines": "aflite_core.measures.baselines",
    "aflite_core.geometry": "aflite_core.measures.geometry",
    "aflite_core.stability": "aflite_core.measures.stability",
    "aflite_core.spurious": "aflite_core.measures.spurious",
    "aflite_core.projection": "aflite_core.measures.projection",
    "aflite_core.adversary_strength": "aflite_core.measures.adversary_strength",
    "aflite_core._measure_args": "aflite_core.measures._args",
    # experiments: the paper's Figure 2, out of distribution, AFOptimum
    "aflite_core.synthetic_experiment": "aflite_core.experiments.figure2",
    "aflite_core.synthetic_notes": "aflite_core.experiments.accuracy_notes",
    "aflite_core.ood": "aflite_core.experiments.ood",
    "aflite_core.optimum": "aflite_core.experiments.optimum",
}

#: the engine's move, after the engine branches merge (``engine.py`` becomes ``engine/loop.py``: the package takes
#: its name). New modules of those branches (torch_backend, torch_logistic, shards, _parallel) belong here too:
#: add them to this table before running it.
ENGINE_MOVES: dict[str, str] = {
    "aflite_core.engine": "aflite_core.engine.loop",
    "aflite_core.partitions": "aflite_core.engine.partitions",
    "aflite_core.models": "aflite_core.engine.models",
    "aflite_core.logistic": "aflite_core.engine.logistic",
    "aflite_core.distributed": "aflite_core.engine.distributed",
    "aflite_core.checkpoint": "aflite_core.engine.checkpoint",
    "aflite_core.run_record": "aflite_core.engine.run_record",
    "aflite_core.run_constants": "aflite_core.engine.run_constants",
    "aflite_core.result": "aflite_core.engine.result",
    "aflite_core.filtering": "aflite_core.engine.filtering",
    "aflite_core.registry": "aflite_core.engine.registry",
    "aflite_core.tau_path": "aflite_core.engine.tau_path",
    "aflite_core.torch_backend": "aflite_core.engine.torch_backend",
    "aflite_core.torch_logistic": "aflite_core.engine.torch_logistic",
    "aflite_core.shards": "aflite_core.engine.shards",
    "aflite_core._parallel": "aflite_core.engine._parallel",
}

TABLES = {"layout": LAYOUT_MOVES, "engine": ENGINE_MOVES}

#: old paths the README documents: each keeps a shim for one release (warns on import, re-exports the new module)
SHIMS = {
    "layout": {
        "aflite_core.tables": "the user's own table as a dataset",
        "aflite_core.artifact_stats": "the competency-problems test",
    },
    "engine": {
        "aflite_core.logistic": "the batched logistic-regression family",
        "aflite_core.tau_path": "a higher τ read off a finished run",
    },
}

SHIM = '''"""Deprecated: :mod:`{new}` ({what}); kept for one release.

Import from the new path, or the README's names from :mod:`aflite_core` itself.
"""

from ._deprecated import moved
from {rel} import *  # noqa: F403  (the public names, for ``from ... import *`` and dir())

__getattr__ = moved(__name__, "{new}")
'''

#: recorded in saved runs and checkpoints (``result.params["model"]["class"]``): never rewritten
PERSISTED = ("aflite_core.models.LinearFamily", "aflite_core.logistic.LogisticFamily")


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the scanned folders by dotted name (``tests.conftest``, ``aflite_core.data``)."""
    out: dict[str, Path] = {}
    for folder in SCAN:
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    for name in TOP:
        if (root / name).exists():
            out[name[:-3]] = root / name
    return out


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _relative(target: str, package: str) -> str:
    """``target`` written relative to ``package`` (``..data.digits`` from ``aflite_core.measures``)."""
    t, p = target.split("."), package.split(".")
    common = 0
    while common < min(len(t), len(p)) and t[common] == p[common]:
        common += 1
    return "." * (len(p) - common + 1) + ".".join(t[common:])


def _map(name: str, moves: dict[str, str]) -> str:
    """The new dotted name of ``name`` (a module or something inside one)."""
    for old in sorted(moves, key=len, reverse=True):
        if name == old or name.startswith(old + "."):
            return moves[old] + name[len(old) :]
    return name


def _alias(alias: ast.alias) -> str:
    return alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"


def rewrite_imports(source: str, name: str, path: Path, new_name: str, modules: set[str], moves: dict[str, str]):
    """``source`` with its import statements rewritten for ``moves`` (the module itself now named ``new_name``)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    new_package = _package(new_name, path)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if not any(_map(a.name, moves) != a.name for a in node.names):
                continue
            names = ", ".join(
                _map(a.name, moves) if a.asname is None else f"{_map(a.name, moves)} as {a.asname}" for a in node.names
            )
            text = f"import {names}"
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = _package(name, path).split(".")
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not base.startswith(("aflite_core", "aflite_app", "pages", "tests")) and not node.level:
                continue
            groups: dict[str, list[str]] = {}
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in modules:  # a module imported by name: it may have moved on its own
                    new_sub = _map(sub, moves)
                    parent, _, stem = new_sub.rpartition(".")
                    alias = a.asname or (a.name if stem != a.name else None)
                    groups.setdefault(parent, []).append(stem if alias is None else f"{stem} as {alias}")
                else:
                    groups.setdefault(_map(base, moves), []).append(_alias(a))
            new_own = _package(new_name, path)
            unchanged = list(groups) == [base] and new_own == _package(name, path)
            if unchanged:
                continue
            stmts = []
            for target, names in groups.items():
                where = _relative(target, new_package) if node.level else target
                stmts.append(f"from {where} import {', '.join(names)}")
            text = "\n".join(stmts)
        else:
            continue
        start, end = node.lineno - 1, node.end_lineno - 1
        indent = " " * node.col_offset
        tail = lines[end][node.end_col_offset :].rstrip("\n")
        body = "\n".join(indent + t if i else t for i, t in enumerate(text.split("\n")))
        edits.append((start, end, lines[start][: node.col_offset] + body + tail + "\n"))
    for start, end, text in sorted(edits, reverse=True):
        lines[start : end + 1] = [text]
    return "".join(lines)


def rewrite_text(text: str, moves: dict[str, str]) -> str:
    """Every dotted path (``aflite_core.tables.ID_COLUMN_NAMES``) and file path (``aflite_core/tables.py``)."""
    keep = {p: f"\0{i}\0" for i, p in enumerate(PERSISTED)}
    for p, mark in keep.items():
        text = text.replace(p, mark)
    olds = sorted(moves, key=len, reverse=True)
    dotted = re.compile(r"(?<![\w.])(" + "|".join(re.escape(o) for o in olds) + r")((?:\.\w+)?)(?![\w])")
    new_paths = set(moves.values())

    def dotted_sub(m: re.Match) -> str:
        old, rest = m.group(1), m.group(2)
        if rest and any(n == old + rest or n.startswith(old + rest + ".") for n in new_paths):
            return m.group(0)  # already a new path (``aflite_core.engine.result`` after ``aflite_core.engine``'s move)
        return moves[old] + rest

    text = dotted.sub(dotted_sub, text)
    files = {o.replace(".", "/") + ".py": moves[o].replace(".", "/") + ".py" for o in olds}
    slashed = re.compile(r"(?<![\w/])(" + "|".join(re.escape(f) for f in sorted(files, key=len, reverse=True)) + ")")
    text = slashed.sub(lambda m: files[m.group(1)], text)
    for p, mark in keep.items():
        text = text.replace(mark, p)
    return text


def plan(moves: dict[str, str], only: list[Path] | None = None) -> tuple[dict[Path, str], list[tuple[Path, Path]]]:
    """The new text of every file that changes, and the ``git mv`` pairs (sources before targets)."""
    files = module_files()
    modules = set(files)
    out: dict[Path, str] = {}
    targets = files.items() if only is None else [(n, p) for n, p in files.items() if p.resolve() in only]
    for name, path in targets:
        source = path.read_text(encoding="utf-8")
        if str(path.relative_to(ROOT)) in SKIP or "__getattr__ = moved(" in source:
            continue
        new_name = name if only is not None else _map(name, moves)
        text = rewrite_text(rewrite_imports(source, name, path, new_name, modules, moves), moves)
        if text != source:
            out[path] = text
    if only is None:
        for rel in TEXT_FILES:
            path = ROOT / rel
            if path.exists():
                source = path.read_text(encoding="utf-8")
                text = rewrite_text(source, moves)
                if text != source:
                    out[path] = text
    mvs = []
    if only is None:
        for old, new in moves.items():
            src = files.get(old)
            if src is None or src.name == "__init__.py":
                continue
            mvs.append((src, ROOT / (new.replace(".", "/") + ".py")))
    return out, mvs


def main(argv: list[str] | None = None) -> int:
    """Print the moves and the rewritten files; do them unless ``--dry-run``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", choices=sorted(TABLES))
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--rewrite-only", nargs="+", type=Path, metavar="FILE")
    args = ap.parse_args(argv)
    moves = TABLES[args.table]
    only = None if args.rewrite_only is None else [p.resolve() for p in args.rewrite_only]
    texts, mvs = plan(moves, only)
    for src, dst in mvs:
        print(f"git mv {src.relative_to(ROOT)} {dst.relative_to(ROOT)}")
    for path in sorted(texts):
        print(f"rewrite {path.relative_to(ROOT)}")
    if args.dry_run:
        return 0
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    for src, dst in mvs:
        dst.parent.mkdir(parents=True, exist_ok=True)
        init = dst.parent / "__init__.py"
        if not init.exists():
            init.write_text(f'"""{dst.parent.name}: see docs/MODULE_MOVES.md."""\n', encoding="utf-8")
            subprocess.run(["git", "add", str(init)], cwd=ROOT, check=True)
        subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
    if only is None:
        for old, what in SHIMS[args.table].items():
            path = ROOT / (old.replace(".", "/") + ".py")
            if path.exists():
                continue
            new = moves[old]
            path.write_text(SHIM.format(new=new, what=what, rel=_relative(new, "aflite_core")), encoding="utf-8")
            subprocess.run(["git", "add", str(path)], cwd=ROOT, check=True)
            print(f"shim {path.relative_to(ROOT)} -> {new} (add it to tests/test_module_shims.py's SHIMS)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
