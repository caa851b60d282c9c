"""aflite_app.settings: one place for the AFLITE_* variables and the server's limits (issue 23, item 1)."""

from __future__ import annotations

import ast
import dataclasses
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aflite_app import settings
from aflite_app.settings import ENV_VARS, Settings, load

ROOT = Path(__file__).resolve().parents[1]
APP_FILES = sorted([ROOT / "app.py", *(ROOT / "aflite_app").rglob("*.py"), *(ROOT / "pages").rglob("*.py")])
SETTINGS_FILE = ROOT / "aflite_app" / "settings.py"
ENV_NAME = re.compile(r"AFLITE_[A-Z0-9_]*[A-Z0-9]")


@pytest.fixture
def clean_env(monkeypatch):
    """No AFLITE_* variable set (conftest sets AFLITE_WARM_UP=0 for the whole suite)."""
    for name in ENV_VARS.values():
        monkeypatch.delenv(name, raising=False)
    settings._warned.clear()
    return monkeypatch


# -- defaults ---------------------------------------------------------------------------------------------------


def test_defaults_without_any_variable(clean_env):
    s = load()
    assert s == Settings() == load({})
    assert s.run_root == Path("runs") and s.nli_data_dir is None
    assert s.warm_up is True and s.umap is True
    assert s.sync_wait_s == 1.5 and s.upload_vault_mb == 1024 and s.upload_ttl_hours == 24
    assert s.max_interactive_rows == 60_000 and s.max_upload_columns == 10_000 and s.max_upload_mb == 200
    assert s.max_session_uploads == 5 and s.run_root_max_depth == 4 and s.run_root_max_folders == 20_000
    assert s.result_store_size == 48 and s.circles_store_size == 48 and s.circles_after_memo_size == 4096
    assert s.archive_max_bytes == 200 * 2**20 and s.archive_max_entries == 64
    assert s.run_hash_check_bytes == 512 * 2**20 and s.dynamics_max_upload_bytes == 100 * 2**20


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        load().max_interactive_rows = 1  # type: ignore[misc]


def test_every_field_is_documented_with_its_default():
    doc = Settings.__doc__
    for f in dataclasses.fields(Settings):
        assert re.search(rf"^    {f.name} : ", doc, re.M), f"Settings.{f.name} is not in the Attributes section"
    for name in ENV_VARS.values():
        assert name in settings.__doc__ and name in doc


def test_the_upload_size_matches_the_shipped_streamlit_config():
    config = (ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8")  # (tomllib is Python 3.11+)
    shipped = re.search(r"^\[server\][^\[]*?^maxUploadSize\s*=\s*(\d+)", config, re.M | re.S)
    assert shipped and int(shipped.group(1)) == Settings().max_upload_mb


def test_the_app_modules_take_their_limits_from_settings(clean_env):
    from aflite_app import exports, links, run_root, state
    from aflite_app.compute import (
        _stores,
        baselines,
        datasets,
        dynamics,
        embedding,
        evalsets,
        inspect_stability,
        rundirs,
        runs,
        synthetic,
    )

    s = Settings()
    pairs = [
        (_stores.MAX_INTERACTIVE_ROWS, s.max_interactive_rows),
        (_stores.MAX_UPLOAD_COLUMNS, s.max_upload_columns),
        (state.MAX_SESSION_UPLOADS, s.max_session_uploads),
        (run_root.MAX_DEPTH, s.run_root_max_depth),
        (run_root.MAX_FOLDERS_SCANNED, s.run_root_max_folders),
        (run_root.DEFAULT_RUN_ROOT, "runs"),
        (rundirs.HASH_CHECK_BYTES, s.run_hash_check_bytes),
        (exports.MAX_ARCHIVE_BYTES, s.archive_max_bytes),
        (exports.MAX_MEMBER_BYTES, s.archive_max_member_bytes),
        (exports.MAX_TOTAL_BYTES, s.archive_max_total_bytes),
        (exports.MAX_ENTRIES, s.archive_max_entries),
        (dynamics.DYN_MAX_EPOCHS, s.dynamics_max_epochs),
        (dynamics.DYN_MAX_UPLOAD_FILES, s.dynamics_max_upload_files),
        (dynamics.DYN_MAX_UPLOAD_BYTES, s.dynamics_max_upload_bytes),
        (dynamics.DYN_AUTO_SECONDS, s.dynamics_auto_seconds),
        (dynamics.DYN_STORE_SIZE, s.dynamics_store_size),
        (baselines.BASELINE_AUTO_SECONDS, s.baseline_auto_seconds),
        (datasets.ARTIFACT_AUTO_ROWS, s.artifact_auto_rows),
        (baselines.BASELINE_STORE_SIZE, s.baseline_store_size),
        (embedding.EMBED_MAX_ROWS, s.embed_max_rows),
        (evalsets.EVALSET_MAX_SEEDS, s.evalset_max_seeds),
        (evalsets.EVALSET_STORE_SIZE, s.evalset_store_size),
        (evalsets.EVALSET_SETUP_STORE_SIZE, s.evalset_setup_store_size),
        (evalsets.EVALSET_UPLOAD_STORE_SIZE, s.evalset_upload_store_size),
        (inspect_stability.MAX_STABILITY_SEEDS, s.stability_max_seeds),
        (runs.RESULT_STORE_SIZE, s.result_store_size),
        (synthetic.CIRCLES_MAX_LEVELS, s.circles_max_levels),
        (synthetic.CIRCLES_STORE_SIZE, s.circles_store_size),
        (synthetic.CIRCLES_AFTER_MEMO_SIZE, s.circles_after_memo_size),
    ]
    for got, want in pairs:
        assert got == want
    vault = links.UploadVault.from_env()
    assert vault.max_bytes == 1024 * 2**20 and vault.ttl == 24 * 3600
    from aflite_core.data import budget

    old = budget.limits()
    try:
        _stores.apply_parse_budgets()
        assert (budget.limits().parse_bytes, budget.limits().parses_bytes) == settings.parse_budget_bytes(s)
        assert "AFLITE_PARSE_BUDGET_MB" in budget.limits().advice
    finally:
        budget.set_budgets(**old.as_dict())


# -- the environment --------------------------------------------------------------------------------------------


def test_environment_overrides_are_read_when_asked(clean_env, tmp_path):
    from aflite_app import links, ui
    from aflite_app.compute import datasets, embedding
    from aflite_app.run_root import run_root

    clean_env.setenv("AFLITE_RUN_ROOT", str(tmp_path / "r"))
    clean_env.setenv("AFLITE_NLI_DATA_DIR", str(tmp_path / "nli"))
    clean_env.setenv("AFLITE_WARM_UP", "0")
    clean_env.setenv("AFLITE_APP_UMAP", "off")
    clean_env.setenv("AFLITE_APP_SYNC_WAIT", "0.25")
    clean_env.setenv("AFLITE_UPLOAD_VAULT_MB", "2")
    clean_env.setenv("AFLITE_UPLOAD_TTL_HOURS", "0")
    s = load()
    assert s.run_root == tmp_path / "r" and s.nli_data_dir == tmp_path / "nli"
    assert (s.warm_up, s.umap, s.sync_wait_s, s.upload_vault_mb, s.upload_ttl_hours) == (False, False, 0.25, 2, 0)
    # the app's readers follow the variable at call time, as they did when they read os.environ themselves
    assert run_root() == (tmp_path / "r").resolve()
    assert datasets.nli_local_folder() == tmp_path / "nli"
    assert ui.sync_wait() == 0.25
    assert embedding._umap_enabled() is False
    vault = links.UploadVault.from_env()
    assert vault.max_bytes == 2 * 2**20 and vault.ttl == 0
    clean_env.delenv("AFLITE_APP_SYNC_WAIT")
    assert ui.sync_wait() == 1.5


def test_a_mapping_can_stand_in_for_the_environment(clean_env):
    clean_env.setenv("AFLITE_APP_SYNC_WAIT", "9")
    assert load({"AFLITE_APP_SYNC_WAIT": "2"}).sync_wait_s == 2.0  # the mapping, not os.environ
    assert load({}, max_interactive_rows=10).max_interactive_rows == 10


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("0", False), ("false", False), ("NO", False), ("Off", False), ("1", True), ("yes", True), ("ON", True)],
)
def test_switches(raw, expected):
    assert load({"AFLITE_WARM_UP": raw}).warm_up is expected
    assert load({"AFLITE_APP_UMAP": raw}).umap is expected


def test_empty_means_unset():
    env = {name: "" for name in ENV_VARS.values()}
    assert load(env) == Settings()
    assert load({"AFLITE_RUN_ROOT": "  "}).run_root == Path("runs")


@pytest.mark.parametrize(
    ("name", "raw", "field"),
    [
        ("AFLITE_APP_SYNC_WAIT", "soon", "sync_wait_s"),
        ("AFLITE_APP_SYNC_WAIT", "-1", "sync_wait_s"),
        ("AFLITE_UPLOAD_VAULT_MB", "nan", "upload_vault_mb"),
        ("AFLITE_UPLOAD_VAULT_MB", "inf", "upload_vault_mb"),
        ("AFLITE_UPLOAD_TTL_HOURS", "1e999", "upload_ttl_hours"),
        ("AFLITE_WARM_UP", "maybe", "warm_up"),
        ("AFLITE_APP_UMAP", "2", "umap"),
    ],
)
def test_invalid_values_are_ignored_with_a_warning(clean_env, caplog, name, raw, field):
    with caplog.at_level(logging.WARNING, logger="aflite_app.settings"):
        s = load({name: raw})
    assert getattr(s, field) == getattr(Settings(), field)  # the default
    assert name in caplog.text and "ignored" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="aflite_app.settings"):
        load({name: raw})
    assert caplog.text == ""  # once per value, not on every read


@pytest.mark.parametrize(
    "override",
    [
        {"max_interactive_rows": 0},
        {"result_store_size": -1},
        {"max_upload_columns": 1.5},
        {"max_session_uploads": True},
        {"sync_wait_s": -0.1},
        {"upload_vault_mb": float("nan")},
        {"warm_up": "no"},
    ],
)
def test_settings_built_with_invalid_values_are_refused(override):
    with pytest.raises(ValueError, match=next(iter(override))):
        Settings(**override)
    with pytest.raises(ValueError, match=next(iter(override))):
        load({}, **override)


# -- one place ---------------------------------------------------------------------------------------------------


def env_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) of every environment access whose key is not a literal non-AFLITE_ name, and every bare
    ``AFLITE_*`` string literal (a name kept in a constant and read later)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ENV_NAME.fullmatch(node.value):
            found.append((node.lineno, f"the literal {node.value!r}"))
        is_environ = isinstance(node, ast.Attribute | ast.Name) and getattr(node, "attr", getattr(node, "id", None))
        if is_environ not in ("environ", "getenv", "environb", "putenv"):
            continue
        parent = parents.get(node)
        key = None
        if isinstance(parent, ast.Subscript):  # os.environ["X"]
            key = parent.slice
        elif isinstance(parent, ast.Call) and parent.func is node:  # os.getenv("X")
            key = parent.args[0] if parent.args else None
        elif isinstance(parent, ast.Attribute) and isinstance(parents.get(parent), ast.Call):  # os.environ.get("X")
            call = parents[parent]
            key = call.args[0] if call.args else None
        literal = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
        if literal is None or ENV_NAME.match(literal):
            found.append((node.lineno, f"environment read of {literal or ast.unparse(key) if key else 'everything'}"))
    return found


def test_the_detector_finds_every_way_of_reading_a_variable():
    assert env_reads('import os\nos.environ.get("AFLITE_X")')
    assert env_reads('import os\nos.environ["AFLITE_X"]')
    assert env_reads('import os\nos.getenv("AFLITE_X", "1")')
    assert env_reads("from os import environ\nenviron.get(NAME)")
    assert env_reads('NAME = "AFLITE_RUN_ROOT"')
    assert env_reads("import os\nenv = dict(os.environ)")
    assert not env_reads('import os\nos.environ.setdefault("NUMBA_CACHE_DIR", "x")')
    assert not env_reads('"""Set ``AFLITE_RUN_ROOT=/x`` to move the root."""')


def test_no_app_module_reads_an_aflite_variable_except_through_settings():
    offenders = []
    for path in APP_FILES:
        if path == SETTINGS_FILE:
            continue
        for line, what in env_reads(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert not offenders, "read these through aflite_app.settings:\n" + "\n".join(offenders)


def test_every_variable_named_in_the_app_is_a_setting():
    known = set(ENV_VARS.values())
    named = {
        m for path in APP_FILES if path != SETTINGS_FILE for m in ENV_NAME.findall(path.read_text(encoding="utf-8"))
    }
    assert named <= known, f"named in the app but not read by settings: {sorted(named - known)}"


def test_the_core_library_variables_are_listed_in_the_settings_docstring():
    core = {m for path in (ROOT / "aflite_core").rglob("*.py") for m in ENV_NAME.findall(path.read_text("utf-8"))}
    assert core, "the core names its own variables (AFLITE_CACHE_DIR, ...)"
    assert not core - set(re.findall(ENV_NAME, settings.__doc__)), "list the core's variables in settings' docstring"


def test_settings_imports_no_streamlit():
    tree = ast.parse(SETTINGS_FILE.read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in ("streamlit", "plotly", "aflite_core")}
    code = "import sys; import aflite_app.settings; print(sorted(m for m in sys.modules if m.startswith('streamlit')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the README's serving table ---------------------------------------------------------------------------------


def test_the_readme_serving_table_is_generated_from_the_settings():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import serving_table
    finally:
        sys.path.remove(str(ROOT / "docs"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = serving_table.readme_table(readme)
    assert table, "README.md lacks the serving-table markers"
    assert table == settings.serving_table(), "run: python docs/serving_table.py --write"
    for f in dataclasses.fields(Settings):  # one row per setting, with its variable and default
        assert f"| `{f.name}` |" in table
    for name in ENV_VARS.values():
        assert f"`{name}`" in table
    assert "| `parse_budget_mb` | `AFLITE_PARSE_BUDGET_MB` | 2,048 MB |" in table
    assert "| `parses_budget_mb` | `AFLITE_PARSES_BUDGET_MB` | 4,096 MB |" in table


def test_the_parse_budgets_are_settings(clean_env):
    assert (Settings().parse_budget_mb, Settings().parses_budget_mb) == (2048, 4096)
    clean_env.setenv("AFLITE_PARSE_BUDGET_MB", "512")
    clean_env.setenv("AFLITE_PARSES_BUDGET_MB", "oops")
    s = load()
    assert (s.parse_budget_mb, s.parses_budget_mb) == (512, 4096)
    assert settings.parse_budget_bytes(s) == (512 * 2**20, 4096 * 2**20)
    assert settings.parse_budget_bytes(Settings(parse_budget_mb=0)) == (1, 4096 * 2**20)
