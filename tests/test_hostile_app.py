"""Every page fed what a hostile user controls: no server path, no traceback, no user text rendered as Markdown.

Issue 24's AppTest sweep. The hostile inputs: run folders below a temporary run root with names made of Markdown,
HTML, emoji shortcodes, LaTeX, bare links, unicode and ``..`` (and labels like them); damaged runs (truncated or
edited ``result.json``, a file whose checksum differs, a manifest naming ``../`` files, a record pointing out of the
root); URL query parameters (path-like and HTML dataset names, unknown upload tokens, huge numbers); uploads of
tables whose file name, columns and labels are Markdown or HTML, of binary junk and of an empty file.

After every step, every element of the rendered page is checked (:func:`check_page`): no string in it holds the
run root's or the temporary folder's absolute path or ``Traceback``, and every string Streamlit draws as Markdown
(bodies, labels, help, radio options, tab and expander labels) holds the hostile texts only escaped by
:func:`aflite_app.markup.md` - the raw ``**bold**``, ``<b>``, ``[x](…)``, ``:smile:``, ``$x$``… never. Hostile
strings may stand raw only where Streamlit shows text as text: ``st.text``, ``st.code``, dataframe cells,
selectbox and multiselect options. Plotly figures must hold them HTML-escaped.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from aflite_app.markup import md

pytestmark = pytest.mark.slow

#: the hostile pieces: raw, none of them may reach a Markdown-rendered string (their escaped form may)
RAW = ["**B0LD**", "<b>", "<i>", "[x](", "](http", ":smile:", "$x$", "~~s~~"]
RAW += ["http://e.example", "a@e.example", "www.e.example"]  # linked by Streamlit unless broken up
#: a backslash-escaped character (literal in Markdown)
ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")
#: a heading only counts at the start of a line
HEADING = re.compile(r"(^|\n) {0,3}#+ h1")
#: a folder name (no '/' in a name) and a label made of them
RUN_NAME = "**B0LD** <i>x [x](javascript:alert(1)) www.e.example :smile: $x$ ~~s~~ a@e.example ü😀 ..\u202e"
LABELS = ["**B0LD** cat", "<b>dog</b> # h1", ":smile: $x$ [x](http://e.example)"]

PAGES = [
    "pages/home.py",
    "pages/data.py",
    "pages/filter.py",
    "pages/predictability.py",
    "pages/embedding.py",
    "pages/inspect.py",
    "pages/compare.py",
    "pages/baselines.py",
    "pages/evaluation_sets.py",
    "pages/dynamics.py",
    "pages/synthetic.py",
    "pages/demo.py",
]


def test_the_sweep_covers_every_page():
    assert sorted(PAGES) == sorted(f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py"))


# -- the escape helper --------------------------------------------------------------------------------------------
def test_the_markup_examples_hold():
    import doctest

    from aflite_app import markup

    assert doctest.testmod(markup).failed == 0  # aflite_app is outside the doctest paths


@pytest.mark.parametrize(
    "text",
    [RUN_NAME, *LABELS, "`c` ``d``", "a\\b", "line\nbreak\r\x00", "1. x", "- y", "> q", "=== ---", "x | y & &amp;"],
)
def test_md_leaves_nothing_for_markdown_to_read(text):
    from aflite_app.markup import message, plotly_text

    shown = md(text)
    bare = ESCAPED.sub("\x00", shown)
    assert not set("*[]<>`$~|&\\\n\r") & set(bare), shown
    assert not re.search(r"(^|\s)_|_(\s|$)", bare) and not HEADING.search(bare), shown
    assert not re.search(r":\w", bare) and "://" not in bare and "www." not in bare and "@e" not in bare, shown
    assert not re.match(r"\s*([#>+=-]|\d+[.)](\s|$))", bare), shown
    unescaped = ESCAPED.sub(lambda m: m.group(0)[1], shown).replace("\u2060", "")
    assert unescaped.split() == text.replace("\x00", " ").split()  # nothing but escapes and word joiners added
    assert "<" not in plotly_text(text) and plotly_text(plotly_text(text)) == plotly_text(text)
    assert message(text) == shown or "\n" in text or "`" in text


def test_message_keeps_its_code_spans_and_escapes_the_rest():
    from aflite_app.markup import message

    shown = message("Run `python -m aflite_core filter --out my_run` on '**B0LD** <b>'.\n# second line")
    assert shown == ("Run `python -m aflite_core filter --out my_run` on '\\*\\*B0LD\\*\\* \\<b\\>'.\n\\# second line")


def test_core_refusals_name_runs_relative_to_the_root(tmp_path, monkeypatch):
    from aflite_app.compute.rundirs import without_server_paths

    root = tmp_path / "runs"
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    text = f"'{root}/a/b' holds a damaged run: '{root}/a/b/rows.parquet' differs; see '{root}'."
    assert without_server_paths(text, root) == "'a/b' holds a damaged run: 'a/b/rows.parquet' differs; see '.'."


# -- the check of a rendered page --------------------------------------------------------------------------------
#: element types whose strings Streamlit shows as text, not Markdown
TEXT_TYPES = {"text", "code", "json", "arrow_data_frame", "dataframe", "table", "plotly_chart", "exception"}
#: proto fields drawn as Markdown (the last field name of the path), per element unless TEXT_TYPES
MARKDOWN_FIELDS = {"body", "label", "help"}


def _strings(message, path=()):
    for field, value in message.ListFields():
        values = value if field.is_repeated else [value]
        for v in values:
            if field.type == field.TYPE_MESSAGE:
                yield from _strings(v, (*path, field.name))
            elif field.type == field.TYPE_STRING:
                yield (*path, field.name), v


def _nodes(node):
    yield node
    for child in (getattr(node, "children", None) or {}).values():
        yield from _nodes(child)


def rendered(at) -> list[tuple[str, tuple, str, bool]]:
    """Every string of the page: ``(element type, field path, text, drawn as Markdown)``."""
    out = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        kind = getattr(node, "type", type(node).__name__)
        if proto is None:
            continue
        for path, text in _strings(proto):
            markdown = kind not in TEXT_TYPES and (
                path[-1] in MARKDOWN_FIELDS or (kind == "radio" and path[-1] == "options")
            )
            if kind == "metric" and path[-1] == "body":
                markdown = False  # the metric's value is plain text
            out.append((kind, path, text, markdown))
        if kind in ("arrow_data_frame", "dataframe"):
            try:
                out.append((kind, ("cells",), node.value.to_csv(), False))
            except Exception:  # a frame AppTest cannot decode has no text to check
                pass
    return out


def problems(at, forbidden_paths, where="") -> list[tuple]:
    """What the page shows that it must not: a path, a traceback, raw hostile Markdown (empty when all is well)."""
    found = [(where, "exception", e.value) for e in at.exception]
    for kind, path, text, markdown in rendered(at):
        found += [(where, kind, path, "a server path", text) for secret in forbidden_paths if secret in text]
        if "Traceback" in text:
            found.append((where, kind, path, "a traceback", text))
        bare = ESCAPED.sub("\x00", text)  # what Markdown reads unescaped
        if markdown and (any(raw in bare for raw in RAW) or HEADING.search(bare)):
            found.append((where, kind, path, "raw Markdown", text))
        figure = None
        if kind == "plotly_chart" and path[-1] == "spec":  # Plotly draws <b>, <i>, <a> in the texts it shows
            figure = json.loads(text)
        elif kind == "bidi_component" and path[-1] == "json":  # aflite_app.plotly_once: the figure in its data
            figure = json.loads(json.loads(text).get("spec") or "{}")
        if figure is not None:
            for tag in ("<b>dog", "<i>x"):
                places = _html_at(figure, tag)
                if places:
                    found.append((where, kind, path, "raw HTML in a figure", tag, places[:4]))
    return found


#: figure keys Plotly never shows (ids and grouping keys)
HIDDEN_KEYS = {"legendgroup", "uid", "ids", "meta", "customdata_ids"}


def _html_at(spec, tag, path=""):
    """Where in a figure spec ``tag`` stands raw, in a text Plotly may show."""
    found = []
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k not in HIDDEN_KEYS:
                found += _html_at(v, tag, f"{path}.{k}")
    elif isinstance(spec, list):
        for i, v in enumerate(spec):
            found += _html_at(v, tag, f"{path}[{i}]")
    elif isinstance(spec, str) and tag in spec:
        found.append(path)
    return found


def check_page(at, forbidden_paths, where="") -> list[str]:
    """Assert :func:`problems` finds nothing; returns the page's Markdown strings."""
    found = problems(at, forbidden_paths, where)
    assert not found, "\n".join(map(repr, found))
    return [text for _, _, text, markdown in rendered(at) if markdown]


def _secrets(tmp_path: Path, root: Path | None = None) -> list[str]:
    out = {str(tmp_path), str(tmp_path.resolve())}
    if root is not None:
        out |= {str(root), str(root.resolve())}
    return sorted(out)


# -- hostile run folders ---------------------------------------------------------------------------------------------
def _with_manifest(run: Path, edit) -> None:
    """Rewrite ``result.json`` through ``edit(meta)`` with a valid checksum (only the manifest check can refuse it)."""
    from aflite_core.engine import run_record

    meta = json.loads((run / "result.json").read_text(encoding="utf-8"))
    edit(meta)
    body = {k: v for k, v in meta.items() if k != "checksum"}
    meta["checksum"] = hashlib.sha256(run_record._canonical(body)).hexdigest()
    (run / "result.json").write_text(json.dumps(meta), encoding="utf-8")


#: damaged copies of the run: a name below the root -> what is done to the copy
def _truncate(run):
    data = (run / "result.json").read_bytes()
    (run / "result.json").write_bytes(data[: len(data) // 2])


def _flip_rows(run):
    data = bytearray((run / "rows.parquet").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (run / "rows.parquet").write_bytes(bytes(data))


def _parent_in_manifest(run):
    _with_manifest(run, lambda meta: meta["files"].update({"../../secret.parquet": "0" * 64}))


def _junk(run):
    (run / "result.json").write_bytes(bytes(range(256)) * 4)


def _missing_rows(run):
    (run / "rows.parquet").unlink()


def _features_outside(run):
    args = json.loads((run / "cli_args.json").read_text(encoding="utf-8"))
    args["features"] = "../../../../../../../../etc/passwd"
    (run / "cli_args.json").write_text(json.dumps(args), encoding="utf-8")


def _newer_format(run):
    _with_manifest(run, lambda meta: meta.update({"format_version": 99}))


def _wrong_format(run):
    (run / "result.json").write_text(json.dumps({"format": "**B0LD** <b>"}), encoding="utf-8")


DAMAGED = {
    "damaged/**B0LD** truncated": _truncate,
    "damaged/<b>checksum": _flip_rows,
    "damaged/[x](javascript:x) manifest": _parent_in_manifest,
    "damaged/junk :smile:": _junk,
    "damaged/missing $x$": _missing_rows,
    "damaged/outside ~~s~~": _features_outside,
    "damaged/newer # h1": _newer_format,
    "damaged/a..b wrong format": _wrong_format,
}


@pytest.fixture
def hostile_root(tmp_path, monkeypatch):
    """A run root holding one real run under a hostile name (with hostile labels) and damaged copies of it."""
    from conftest import SMALL_RUN_ARGS

    from aflite_core.cli import main
    from aflite_core.data.planted_bias import make_planted_bias

    root = tmp_path / "runs"
    data = root / "data"
    data.mkdir(parents=True)
    X, y, _ = make_planted_bias(300, 6, random_state=0)
    np.save(data / "X.npy", X)
    (data / "y.txt").write_text("\n".join(np.array(LABELS[:2])[y]) + "\n", encoding="utf-8")
    run = root / "hostile" / RUN_NAME
    args = ["filter", "--features", str(data / "X.npy"), "--labels", str(data / "y.txt"), *SMALL_RUN_ARGS]
    assert main([*args, "--out", str(run)]) == 0
    for name, damage in DAMAGED.items():
        shutil.copytree(run, root / name)
        damage(root / name)
    monkeypatch.setenv("AFLITE_RUN_ROOT", str(root))
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    return root


def _every_page(at, secrets, cls: str) -> list[tuple]:
    """Visit every page (and run the Evaluation sets study, and open Inspect as a click on the Filter page's bar
    of class ``cls`` does) with the session's hostile dataset: the problems found."""
    found = []
    from aflite_app.state import INSPECT_TAB_LABELS

    for page in PAGES:
        at.switch_page(page).run()
        found += problems(at, secrets, where=page)
        if page == "pages/inspect.py":  # its tabs are drawn only when opened: open each one
            for label in INSPECT_TAB_LABELS[1:]:
                at.session_state["inspect-tab"] = label
                at.run()
                found += problems(at, secrets, where=f"{page} (tab '{label}')")
            at.session_state["inspect-tab"] = INSPECT_TAB_LABELS[0]
        if page == "pages/evaluation_sets.py":
            next(b for b in at.button if b.label == "Run study").click().run()
            found += problems(at, secrets, where=f"{page} (study)")
    at.session_state["inspect-filter"] = {"round": 1, "class": cls, "status": "removed"}
    at.switch_page("pages/inspect.py").run()
    found += problems(at, secrets, where="inspect (a bar's rows)")
    assert any("Showing only the" in i.value for i in at.info), "the link filter is shown"
    return found


def _open(at, relative: str):
    at.selectbox(key="run-dir").set_value(relative)
    next(b for b in at.button if b.label == "Open run").click().run()
    return at


def test_damaged_runs_are_refused_naming_the_run_relative_to_the_root(app_test, hostile_root, tmp_path):
    secrets = _secrets(tmp_path, hostile_root)
    at = app_test(page="pages/data.py")
    listed = at.selectbox(key="run-dir").options
    assert f"hostile/{RUN_NAME}" in listed
    for name in DAMAGED:
        at = _open(at, name)
        shown = check_page(at, secrets, where=name)
        errors = [e.value for e in at.error]
        assert len(errors) == 1, (name, errors)
        assert md(name) in errors[0] or "not below the app's run root" in errors[0], (name, errors)
        assert "damaged" not in at.session_state["dataset_key"], name
        assert shown


def test_a_hostile_run_folder_and_labels_on_every_page(app_test, hostile_root, tmp_path, monkeypatch):
    from aflite_app.compute import inspect as inspect_compute
    from aflite_app.compute import runs

    for module, name in ((runs, "_class_impact"), (inspect_compute, "class_impact")):  # every class warned
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, **k: _real(*a, **{**k, "min_rows": 10**6}))
    secrets = _secrets(tmp_path, hostile_root)
    at = _open(app_test(page="pages/data.py"), f"hostile/{RUN_NAME}")
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["dataset_key"].startswith("run-")
    found = problems(at, secrets, where="data (opened)")
    shown = " ".join(text for *_, text, markdown in rendered(at) if markdown)
    found += _every_page(at, secrets, LABELS[0])
    assert not found, "\n".join(map(repr, found))
    assert md(RUN_NAME) in shown  # the name is there, escaped
    at.switch_page("pages/filter.py").run()
    assert any(md(LABELS[0]) in w.value for w in at.warning), [w.value for w in at.warning]  # the class warning


def test_a_run_with_a_hostile_table_on_every_page(app_test, hostile_root, tmp_path):
    """A run recorded with its table (``filter --table``): hostile column names and texts, shown literally."""
    from conftest import SMALL_RUN_ARGS

    from aflite_core.cli import main

    data = hostile_root / "data"
    n = len((data / "y.txt").read_text(encoding="utf-8").splitlines())
    text_col, meta_col = "**B0LD** <i>x text", ":smile: $x$ [x](http://e.example) topic"
    table = pd.DataFrame(
        {
            "doc": np.arange(n)[::-1],
            text_col: [f"{LABELS[i % 3]} # h1 row {i} ~~s~~ www.e.example" for i in range(n)][::-1],
            meta_col: [RUN_NAME if i % 2 else "<b>plain</b>" for i in range(n)][::-1],
        }
    )
    table.to_csv(data / "t.csv", index=False)
    args = ["filter", "--features", str(data / "X.npy"), "--labels", str(data / "y.txt"), *SMALL_RUN_ARGS]
    run = hostile_root / "with table"
    assert main([*args, "--table", str(data / "t.csv"), "--id-column", "doc", "--out", str(run)]) == 0
    secrets = _secrets(tmp_path, hostile_root)
    at = _open(app_test(page="pages/data.py"), "with table")
    assert not at.error, [e.value for e in at.error]
    found = problems(at, secrets, where="data (opened with its table)")
    shown = " ".join(text for *_, text, markdown in rendered(at) if markdown)
    assert md(f"with its table (3 columns: doc, {text_col}, {meta_col})") in shown
    found += _every_page(at, secrets, LABELS[0])
    assert not found, "\n".join(map(repr, found))
    rows = at.dataframe[0].value  # Inspect, as _every_page left it: the table's texts, raw in the cells
    assert len(rows) and text_col in rows.columns and rows[text_col].str.contains("# h1 row", regex=False).all()


#: more folder names, each a copy of the good run: very long, a line break, block Markdown at the start, dots
NAMES = [
    "L" * 200 + " **B0LD**",
    "line\nbreak <i>x",
    "# h1 at the start",
    "1. a list <b>",
    "x..dots.. a..b",
    "deep/x..y :smile:",
    "unicode ünï 😀 \u202e $x$ \u2060",
]


def test_more_hostile_folder_names_open_cleanly(app_test, hostile_root, tmp_path):
    secrets = _secrets(tmp_path, hostile_root)
    for name in NAMES:
        shutil.copytree(hostile_root / "hostile" / RUN_NAME, hostile_root / "more" / name)
    at = app_test(page="pages/data.py")
    found = []
    for name in NAMES:
        at = _open(at, f"more/{name}")
        assert not at.error, (name, [e.value for e in at.error])
        found += problems(at, secrets, where=name)
    assert not found, "\n".join(map(repr, found))
    assert len(at.session_state["run_dirs"]) == len(NAMES)


# -- hostile links --------------------------------------------------------------------------------------------------
LINKS = [
    {"dataset": "../../../../etc/passwd"},
    {"dataset": "<b>x</b> **B0LD**"},
    {"dataset": "upload:" + "A" * 22},
    {"dataset": "upload:../../x <b>"},
    {"dataset": "digits", "rep": "<b>x</b>", "strategy": "**B0LD**", "model": "[x](http://e.example)"},
    {"dataset": "digits", "tau": "nan", "n": "-5", "k": "abc", "m": "1e3"},
    {"dataset": "digits", "n": "inf"},  # overflowing numbers: ignored with one notice (bounded_int)
    {"dataset": "digits", "k": "-1e400"},  # overflowing numbers: ignored with one notice (bounded_int)
    {"dataset": "digits", "seed": "1e309"},  # overflowing numbers: ignored with one notice (bounded_int)
    {"dataset": "digits", "n": "9" * 5000},  # overflowing numbers: ignored with one notice (bounded_int)
]


@pytest.mark.parametrize("params", LINKS)
def test_hostile_links(app_test, params, tmp_path):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    check_page(at, _secrets(tmp_path), where=str(params)[:80])
    if params["dataset"].startswith("upload:"):
        assert any("no longer kept" in w.value for w in at.warning), [w.value for w in at.warning]


# -- hostile uploads ------------------------------------------------------------------------------------------------
def _hostile_table(n: int = 240) -> bytes:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(n, 3)).round(3), columns=["**B0LD** f", "<b>x</b> g", ":smile: h"])
    frame["label"] = np.array(LABELS)[np.arange(n) % 3]
    frame["[x](http://e.example) text"] = [f"<i>x {i} **B0LD** $x$" for i in range(n)]
    return frame.to_csv(index=False).encode()


UPLOAD_NAME = "**B0LD** <b>x [x](http://e.example) :smile:.csv"
FEATURES_NAME = "<i>x **B0LD** $x$ :smile:.npy"


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


BAD_UPLOADS = [
    ("junk **B0LD**.csv", bytes(range(256)) * 8),
    ("empty <b>x.csv", b""),
    ("junk [x](http://e.example).parquet", b"PAR1" + bytes(range(200)) + b"PAR1"),
    ("junk :smile:.jsonl", b'{"a": 1}\n{"a": [[[[[[\n'),
    ("nolabel $x$.csv", b"**B0LD**,<b>x</b>\n1,2\n3,4\n"),
]


@pytest.mark.parametrize("name,payload", BAD_UPLOADS, ids=[b[0].split()[0] + str(i) for i, b in enumerate(BAD_UPLOADS)])
def test_malformed_uploads_say_so_without_markdown(app_test, name, payload, tmp_path):
    at = app_test(page="pages/data.py")
    at.file_uploader(key="upload-table").set_value((name, payload, "text/csv")).run()
    check_page(at, _secrets(tmp_path), where=name)
    assert at.error or at.warning, name


def test_a_hostile_upload_on_every_page(app_test, tmp_path, monkeypatch):
    monkeypatch.setenv("AFLITE_APP_UMAP", "0")
    # the server's own folders below the temporary one: no page may show where they are
    monkeypatch.setenv("AFLITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AFLITE_NLI_DATA_DIR", str(tmp_path / "nli"))
    secrets = _secrets(tmp_path)
    at = app_test(page="pages/data.py")
    at.file_uploader(key="upload-table").set_value((UPLOAD_NAME, _hostile_table(), "text/csv"))
    features = np.random.default_rng(1).normal(size=(240, 4)).astype(np.float32)
    at.file_uploader(key="upload-features").set_value((FEATURES_NAME, _npy(features), "application/octet-stream"))
    at.run()
    found = problems(at, secrets, where="data (uploaded)")
    shown = " ".join(text for *_, text, markdown in rendered(at) if markdown)
    assert not at.error, [e.value for e in at.error]
    next(b for b in at.button if b.key == "use-upload").click().run()
    assert at.session_state["dataset_key"].startswith("upload-")
    found += _every_page(at, secrets, LABELS[0])
    key = at.session_state["dataset_key"]  # an evaluation table for it: named like Markdown, holding junk
    at.switch_page("pages/evaluation_sets.py").run()
    at.radio(key=f"es-source-{key}").set_value("upload").run()
    found += problems(at, secrets, where="evaluation sets (upload)")
    at.file_uploader(key=f"es-up-{key}").set_value((UPLOAD_NAME, b"\x00\xff junk", "text/csv")).run()
    next(b for b in at.button if b.key == f"es-use-{key}").click().run()
    found += problems(at, secrets, where="evaluation sets (junk table)")
    assert at.error, "the junk evaluation table is refused"
    assert not found, "\n".join(map(repr, found))
    assert md(UPLOAD_NAME) in shown  # the name is there, escaped


def test_other_uploaders_refuse_junk_without_markdown(app_test, tmp_path):
    """A run record zip on Inspect and epoch files on Training dynamics, named like Markdown and holding junk."""
    secrets = _secrets(tmp_path)
    at = app_test(page="pages/inspect.py")
    zip_file = ("**B0LD** <b>x [x](http://e.example).zip", b"PK\x03\x04junk", "application/zip")
    at.file_uploader(key="inspect-upload").set_value(zip_file).run()
    check_page(at, secrets, where="inspect zip")
    assert any("B0LD" in e.value for e in at.error), [e.value for e in at.error]
    at.switch_page("pages/dynamics.py").run()
    at.radio(key="dyn-source").set_value("upload").run()
    uploader = next(u for u in at.file_uploader if u.key.startswith("dyn-up-full-"))
    junk = b'{"guid": "<b>x", "logits_epoch_0": [1, "**B0LD**"]}\n'
    uploader.set_value([("dynamics_epoch_0 **B0LD** <b>x.jsonl", junk, "application/json")]).run()
    check_page(at, secrets, where="dynamics upload")
    assert at.error, "the junk epoch file is refused"


def test_a_missing_local_nli_folder_is_named_by_its_variable(tmp_path, monkeypatch):
    from aflite_app.compute import datasets

    monkeypatch.setenv("AFLITE_NLI_DATA_DIR", str(tmp_path / "nli"))
    with pytest.raises(ValueError) as refusal:
        datasets._fetch_nli(datasets.NliSpec("snli", "validation", 100, 0), lambda progress: None)
    assert str(tmp_path) not in str(refusal.value)
    assert "AFLITE_NLI_DATA_DIR" in str(refusal.value) and "'snli' sub-folder" in str(refusal.value)


# -- an upload the server's upload store cannot keep --------------------------------------------------------------
def _use_upload(at):
    at.file_uploader(key="upload-table").set_value((UPLOAD_NAME, _hostile_table(), "text/csv")).run()
    next(b for b in at.button if b.key == "use-upload").click().run()
    assert at.session_state["dataset_key"].startswith("upload-")
    return at


@pytest.mark.parametrize("env", [{"AFLITE_UPLOAD_VAULT_MB": "0.001"}, {"AFLITE_UPLOAD_TTL_HOURS": "0"}])
def test_an_upload_the_store_cannot_keep_says_a_reload_loses_it(app_test, monkeypatch, tmp_path, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = _use_upload(app_test(page="pages/data.py"))
    assert "dataset" not in at.query_params  # the URL cannot name it
    (warning,) = [w.value for w in at.warning if "kept for this session only" in w.value]
    if "AFLITE_UPLOAD_VAULT_MB" in env:
        assert "larger than the server's upload store of 0 MB (AFLITE_UPLOAD_VAULT_MB)" in warning
    else:
        assert "AFLITE_UPLOAD_TTL_HOURS is 0" in warning
    assert "a reload or a link will not bring it back" in warning
    at.switch_page("pages/filter.py").run()  # on every page while it is in use
    assert any("kept for this session only" in w.value for w in at.warning)
    check_page(at, _secrets(tmp_path), where="unkept upload")


def test_an_upload_the_store_keeps_has_no_such_notice_and_a_bad_token_says_so(app_test, monkeypatch):
    at = _use_upload(app_test(page="pages/data.py"))
    assert "upload:" in str(at.query_params["dataset"])  # kept: the URL holds its token
    assert not any("kept for this session only" in w.value for w in at.warning)
    monkeypatch.setenv("AFLITE_UPLOAD_TTL_HOURS", "0")
    from aflite_app import links

    vault = links.UploadVault.from_env()
    assert links.apply_url({}, {"dataset": "upload:" + "A" * 22}, vault, lambda key: None).startswith(
        "The uploaded dataset of this link is not kept: this server keeps no uploads for links"
    )


PROGRESS = """
import threading
import streamlit as st
from aflite_app import ui

release = threading.Event()


def prepare(spec):
    def job(callback):
        release.wait(5)
        return 1

    return job


ui.run_in_background(
    "hostile-job",
    "spec",
    prepare,
    lambda progress, elapsed, step=None: (0.5, "Embedding '**B0LD** <b>x [x](http://e.example)'"),
    stop_key="hostile-stop",
    stop_help="Stop.",
    stopping="Stopping…",
)
release.set()
"""


def test_a_progress_text_naming_a_column_shows_it_literally(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AFLITE_APP_SYNC_WAIT", "0")
    at = AppTest.from_string(PROGRESS, default_timeout=60)
    at.run()
    texts = [p.proto.text for p in at.get("progress")]
    assert texts == [md("Embedding '**B0LD** <b>x [x](http://e.example)'")]


def test_an_archive_that_cannot_be_unpacked_names_no_server_path(monkeypatch):
    import zipfile

    from aflite_app import run_archive

    def full_disk(zf, info, dest, budget):
        raise OSError(28, "No space left on device", str(dest))

    monkeypatch.setattr(run_archive, "_extract", full_disk)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("run/result.json", "{}")
    with pytest.raises(run_archive.RunArchiveError) as refusal:
        run_archive.load_run_zip(buf.getvalue(), name="'**B0LD**.zip'")
    assert str(refusal.value) == "'**B0LD**.zip' could not be unpacked: OSError"  # the page shows it via ui.message
