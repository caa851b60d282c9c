"""Every setting of the app server in one place: its ``AFLITE_*`` environment variables and its limits.

Plain Python (no Streamlit), so the CLI, the tests and the benchmarks can read it too. :func:`load` reads the
environment each time it is called and returns a frozen :class:`Settings`; the app reads a variable that may
change under a running server (a test's ``monkeypatch.setenv``) at the moment it needs it, and its limits once,
when the module that applies them is imported (those modules keep their module-level names, e.g.
``_stores.MAX_INTERACTIVE_ROWS``, so a test can still lower one with ``monkeypatch.setattr``).

Environment variables read here (the only place under ``aflite_app/``, ``pages/`` and ``app.py`` that reads one;
``tests/test_settings.py`` checks it):

===========================  =================================  =============================================
variable                     field                              default
===========================  =================================  =============================================
``AFLITE_RUN_ROOT``          :attr:`Settings.run_root`          ``runs`` (below the folder the app starts in)
``AFLITE_DATA_ROOTS``        :attr:`Settings.data_roots`        unset: a run's inputs must lie below the run root
``AFLITE_NLI_DATA_DIR``      :attr:`Settings.nli_data_dir`      unset: SNLI / MultiNLI come from the Hub
``AFLITE_WARM_UP``           :attr:`Settings.warm_up`           on
``AFLITE_APP_UMAP``          :attr:`Settings.umap`              on
``AFLITE_APP_SYNC_WAIT``     :attr:`Settings.sync_wait_s`       1.5 (seconds)
``AFLITE_UPLOAD_VAULT_MB``   :attr:`Settings.upload_vault_mb`   1024 (MB)
``AFLITE_UPLOAD_TTL_HOURS``  :attr:`Settings.upload_ttl_hours`  24 (hours)
``AFLITE_STORE_BUDGET_MB``   :attr:`Settings.store_budget_mb`   2048 (MB)
``AFLITE_PARSE_BUDGET_MB``   :attr:`Settings.parse_budget_mb`   2048 (MB)
``AFLITE_PARSES_BUDGET_MB``  :attr:`Settings.parses_budget_mb`  4096 (MB)
``AFLITE_DEVICE``            :attr:`Settings.device`            ``auto`` (``cpu`` or ``cuda``)
``AFLITE_HEAVY_JOBS``        :attr:`Settings.heavy_jobs`        1 (heavy jobs running at once, server-wide)
``AFLITE_CHILD_PROCESSES``   :attr:`Settings.child_processes`   on (a long fit runs in a child process Stop ends)
===========================  =================================  =============================================

How a value is read (one rule for all): unset or empty means the default. A switch is off for ``0``, ``false``,
``no`` or ``off`` and on for ``1``, ``true``, ``yes`` or ``on`` (any case). A number must be finite and not
negative (0 is allowed: ``AFLITE_UPLOAD_TTL_HOURS=0`` keeps no upload, ``AFLITE_APP_SYNC_WAIT=0`` never waits);
a count (``AFLITE_HEAVY_JOBS``) is a whole number from 1.
A value that breaks the rule is **ignored**: the default is used and a warning is logged once, naming the
variable - a server never refuses to start over a typo. A :class:`Settings` built directly with an invalid value
(e.g. ``Settings(max_interactive_rows=0)``) raises ValueError.

Read elsewhere, on purpose (the core library must not import the app, and these are not server settings):

* ``AFLITE_CACHE_DIR`` - the sentence-embedding cache folder (:func:`aflite_core.data.embeddings.default_cache_dir`;
  default: ``aflite-studio`` in the user's cache folder);
* ``AFLITE_WORDNET_DIR`` - the WordNet database folder (:mod:`aflite_core.data.wordnet`; default
  ``/usr/share/wordnet``);
* ``AFLITE_SHARED_DATA`` - the folder of the real SNLI / MultiNLI samples (:mod:`aflite_core.experiments.ood`, the
  ``ood`` command, the tests and the benchmarks; default ``../shared/data``);
* ``AFLITE_CHROMIUM`` and ``AFLITE_SHOTS_DIR`` - the browser and the screenshot folder of the browser tests,
  ``docs/screenshots.py`` and ``benchmarks/`` (default ``/usr/bin/chromium``).

The upload size is Streamlit's own option ``server.maxUploadSize`` (``.streamlit/config.toml``, or
``--server.maxUploadSize``): Streamlit refuses larger files before the app sees them, and the app reads the live
value through Streamlit (``aflite_app.compute._stores.upload_limit_bytes``). :attr:`Settings.max_upload_mb`
records the shipped default (a test keeps the two equal).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

__all__ = [
    "CHILD_PROCESSES_ENV",
    "DATA_ROOTS_ENV",
    "DEVICES",
    "DEVICE_ENV",
    "ENV_VARS",
    "HEAVY_JOBS_ENV",
    "NLI_DATA_DIR_ENV",
    "PARSES_BUDGET_MB_ENV",
    "PARSE_BUDGET_MB_ENV",
    "RUN_ROOT_ENV",
    "STORE_BUDGET_MB_ENV",
    "SYNC_WAIT_ENV",
    "UMAP_ENV",
    "UPLOAD_TTL_HOURS_ENV",
    "UPLOAD_VAULT_MB_ENV",
    "WARM_UP_ENV",
    "Settings",
    "load",
    "parse_budget_bytes",
    "serving_table",
]

_LOG = logging.getLogger(__name__)
MiB = 2**20

#: the environment variable naming the run root (Streamlit's config file has no place for custom options)
RUN_ROOT_ENV = "AFLITE_RUN_ROOT"
#: folders (separated by ``os.pathsep``) an opened run's recorded features and labels may also lie below
DATA_ROOTS_ENV = "AFLITE_DATA_ROOTS"
#: a local folder read instead of the Hugging Face Hub (tests, offline machines): one sub-folder per dataset
NLI_DATA_DIR_ENV = "AFLITE_NLI_DATA_DIR"
#: ``0``: no warm-up of the Synthetic page when the server starts
WARM_UP_ENV = "AFLITE_WARM_UP"
#: ``0``: the Embedding page maps with PCA only (no UMAP thread)
UMAP_ENV = "AFLITE_APP_UMAP"
#: seconds a page waits for a run before it shows the progress bar
SYNC_WAIT_ENV = "AFLITE_APP_SYNC_WAIT"
#: megabytes of uploads the server keeps for shared links
UPLOAD_VAULT_MB_ENV = "AFLITE_UPLOAD_VAULT_MB"
#: hours an upload stays reachable through a shared link
UPLOAD_TTL_HOURS_ENV = "AFLITE_UPLOAD_TTL_HOURS"

#: megabytes all of the app's stores may hold together (the held arrays' nbytes), server-wide
STORE_BUDGET_MB_ENV = "AFLITE_STORE_BUDGET_MB"
#: megabytes one read of a file (an upload, a run record, features) may materialise before it is refused
PARSE_BUDGET_MB_ENV = "AFLITE_PARSE_BUDGET_MB"
#: megabytes every read in flight on the server may materialise together (over it a read waits, then is refused)
PARSES_BUDGET_MB_ENV = "AFLITE_PARSES_BUDGET_MB"
#: where the Filter page's runs go: ``auto`` (a GPU when torch sees one), ``cpu`` or ``cuda``
DEVICE_ENV = "AFLITE_DEVICE"
#: the values :data:`DEVICE_ENV` accepts
DEVICES = ("auto", "cpu", "cuda")
#: heavy jobs (a large AFLite run, UMAP, stability, embeddings) the server runs at once; the others queue
HEAVY_JOBS_ENV = "AFLITE_HEAVY_JOBS"
#: whether a long fit or clustering of a background job may run in a child process that Stop ends (off: in the
#: server's process, where it cannot be interrupted; for hosts that forbid starting processes)
CHILD_PROCESSES_ENV = "AFLITE_CHILD_PROCESSES"

#: field of :class:`Settings` -> the environment variable that sets it
ENV_VARS = {
    "run_root": RUN_ROOT_ENV,
    "data_roots": DATA_ROOTS_ENV,
    "nli_data_dir": NLI_DATA_DIR_ENV,
    "warm_up": WARM_UP_ENV,
    "umap": UMAP_ENV,
    "sync_wait_s": SYNC_WAIT_ENV,
    "upload_vault_mb": UPLOAD_VAULT_MB_ENV,
    "upload_ttl_hours": UPLOAD_TTL_HOURS_ENV,
    "store_budget_mb": STORE_BUDGET_MB_ENV,
    "parse_budget_mb": PARSE_BUDGET_MB_ENV,
    "parses_budget_mb": PARSES_BUDGET_MB_ENV,
    "device": DEVICE_ENV,
    "heavy_jobs": HEAVY_JOBS_ENV,
    "child_processes": CHILD_PROCESSES_ENV,
}

_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    """The app server's settings: environment variables first, then limits (no variable sets those today).

    Attributes
    ----------
    run_root : Path
        ``AFLITE_RUN_ROOT``: the one folder the Data page opens run directories from (:mod:`aflite_app.run_root`
        resolves it against the folder the app is started in). Default ``runs``.
    data_roots : tuple of Path
        ``AFLITE_DATA_ROOTS``: folders, separated by ``:`` (``os.pathsep``), where the features and labels an
        opened run recorded in its ``cli_args.json`` may also lie; checked as the run root is (real paths, symbolic
        links resolved), and never a path a visitor types. Default none.
    nli_data_dir : Path or None
        ``AFLITE_NLI_DATA_DIR``: a local copy of SNLI / MultiNLI in the Hub's layout, read instead of the Hugging
        Face Hub. Default None (the Hub).
    warm_up : bool
        ``AFLITE_WARM_UP``: compute the Synthetic page's default view in a background thread once per server
        process. Default True.
    umap : bool
        ``AFLITE_APP_UMAP``: fit UMAP for the Embedding page in the background (off: PCA only). Default True.
    sync_wait_s : float
        ``AFLITE_APP_SYNC_WAIT``: seconds a page waits for a background run before it shows the progress bar
        (fast runs then appear at once; the tests set it high). Default 1.5.
    upload_vault_mb : float
        ``AFLITE_UPLOAD_VAULT_MB``: megabytes of uploaded datasets kept server-wide for shared links
        (:class:`aflite_app.links.UploadVault`; the oldest go first). Default 1024.
    upload_ttl_hours : float
        ``AFLITE_UPLOAD_TTL_HOURS``: hours an upload stays reachable through a link (0: links carry no upload).
        Default 24.
    store_budget_mb : float
        ``AFLITE_STORE_BUDGET_MB``: megabytes every store of the app holds together, server-wide: the sum of the
        held arrays' ``nbytes`` (results, tables, datasets; :mod:`aflite_app.compute._stores`). The least recently
        used entries of any store go first. Default 2048.
    parse_budget_mb : float
        ``AFLITE_PARSE_BUDGET_MB``: megabytes one read of a file may materialise - the values decompressed and
        parsed plus the pandas / numpy copy - counted before they are allocated (:mod:`aflite_core.data.budget`);
        a larger read is refused in one sentence. Default 2048.
    parses_budget_mb : float
        ``AFLITE_PARSES_BUDGET_MB``: megabytes every read in flight on the server may materialise together; over
        it a read waits a few seconds for others, then is refused in one sentence. Default 4096.
    device : str
        ``AFLITE_DEVICE``: where the Filter page's runs of the default family go: ``auto`` (the GPU when torch is
        installed and sees one, else the CPU), ``cpu`` or ``cuda``. Default ``auto``.
    heavy_jobs : int
        ``AFLITE_HEAVY_JOBS``: heavy jobs (an AFLite run above the interactive size, UMAP, a stability report,
        Baselines, sentence embeddings) the server runs at once; the others wait in one server-wide queue, shown
        their place in it (:class:`aflite_app.admission.HeavyQueue`). A positive whole number. Default 1.
    child_processes : bool
        ``AFLITE_CHILD_PROCESSES``: a background job's long library call that cannot be interrupted (one MLP or
        logistic fit, a Gaussian mixture of the training-dynamics validation, a chunk of 512 texts of sentence
        embeddings, whose model a child process then loads once and keeps; each piece of a Baselines
        comparison, in one child per comparison that receives the features once) runs in a child process that
        Stop ends within a second (:mod:`aflite_core._child_process`); off, it runs in the server's process and
        Stop waits for it to end. Turn it off where the host forbids starting processes. Default True.
    max_interactive_rows : int
        Rows an upload may have (above it the app refuses and names the command-line equivalent), and the size
        above which an AFLite run is a heavy job that waits its turn in the queue (``_stores.MAX_INTERACTIVE_ROWS``;
        an opened run directory of any size is filtered). Default 60,000.
    max_upload_columns : int
        Columns an uploaded table may have, counted before it is parsed. Default 10,000.
    max_upload_mb : int
        Streamlit's ``server.maxUploadSize`` as shipped in ``.streamlit/config.toml`` (the live value is
        Streamlit's option). Default 200.
    max_session_uploads : int
        Uploads and opened runs one session keeps (the oldest not shown go first). Default 5.
    run_root_max_depth : int
        How deep below the run root run directories are looked for. Default 4.
    run_root_max_folders : int
        Folders looked at, at most, when listing the run root. Default 20,000.
    run_hash_check_bytes : int
        Opened runs whose features are larger than this skip re-hashing them (shape and labels are still
        checked). Default 512 MiB.
    archive_max_bytes : int
        Size of an uploaded run archive (zip). Default 200 MiB.
    archive_max_member_bytes : int
        Size of any one file in a run archive, uncompressed. Default 256 MiB.
    archive_max_total_bytes : int
        Size of all files of a run archive together, uncompressed. Default 512 MiB.
    archive_max_entries : int
        Entries a run archive may list at all (a run has at most six files). Default 64.
    dynamics_max_epochs : int
        Epochs the Training dynamics page offers to record. Default 20.
    dynamics_max_upload_files : int
        Epoch files of uploaded training dynamics. Default 50.
    dynamics_max_upload_bytes : int
        Bytes per input of uploaded training dynamics. Default 100 MiB.
    embed_max_rows : int
        Rows the Embedding page maps; above it, a seeded sample. Default 20,000.
    evalset_max_seeds : int
        Seeds of an evaluation-set study. Default 5.
    stability_max_seeds : int
        Seeds of Inspect's removal-stability report. Default 10.
    artifact_sample_rows : int
        Inspect's "What the removed rows share" on features: removed and kept rows per class it compares at most
        (a seeded sample of each side above it). Default 10,000.
    circles_max_levels : int
        Separation levels the Synthetic page accepts. Default 6.
    artifact_auto_rows : int
        Rows above which the Data page's token statistics (Gardner et al.'s test) wait for their button. Default
        60,000.
    baseline_auto_seconds : float
        Baselines reports estimated longer than this wait for the page's Compute button. Default 3.0.
    dynamics_auto_seconds : float
        Recordings of training dynamics estimated longer than this wait for the Record button. Default 3.0.
    result_store_size : int
        Finished AFLite runs kept server-wide (Filter page, and the pages that show its run). Default 48.
    circles_store_size : int
        Finished computations of the Synthetic page kept. Default 48.
    circles_after_memo_size : int
        The Synthetic page's "after" accuracies kept by kept set (a few floats each). Default 4,096.
    baseline_store_size : int
        Baselines reports kept. Default 32.
    dynamics_store_size : int
        Training-dynamics recordings and validations kept. Default 16.
    evalset_store_size : int
        Evaluation-set studies kept. Default 16.
    evalset_setup_store_size : int
        Evaluation-set splits kept. Default 8.
    evalset_upload_store_size : int
        Uploaded evaluation tables kept. Default 4.
    nli_store_size : int
        SNLI / MultiNLI datasets fetched by name kept. Default 4.
    embedding_store_size : int
        Sentence embeddings of uploaded text kept (the disk cache outlives them). Default 4.
    """

    # -- environment variables ---------------------------------------------------------------------------------
    run_root: Path = Path("runs")
    data_roots: tuple[Path, ...] = ()
    nli_data_dir: Path | None = None
    warm_up: bool = True
    umap: bool = True
    sync_wait_s: float = 1.5
    upload_vault_mb: float = 1024.0
    upload_ttl_hours: float = 24.0
    store_budget_mb: float = 2048.0
    parse_budget_mb: float = 2048.0
    parses_budget_mb: float = 4096.0
    device: str = "auto"
    heavy_jobs: int = 1
    child_processes: bool = True
    # -- limits of interactive work ----------------------------------------------------------------------------
    max_interactive_rows: int = 60_000
    max_upload_columns: int = 10_000
    max_upload_mb: int = 200
    max_session_uploads: int = 5
    run_root_max_depth: int = 4
    run_root_max_folders: int = 20_000
    run_hash_check_bytes: int = 512 * MiB
    archive_max_bytes: int = 200 * MiB
    archive_max_member_bytes: int = 256 * MiB
    archive_max_total_bytes: int = 512 * MiB
    archive_max_entries: int = 64
    dynamics_max_epochs: int = 20
    dynamics_max_upload_files: int = 50
    dynamics_max_upload_bytes: int = 100 * MiB
    embed_max_rows: int = 20_000
    evalset_max_seeds: int = 5
    stability_max_seeds: int = 10
    artifact_sample_rows: int = 10_000
    circles_max_levels: int = 6
    artifact_auto_rows: int = 60_000
    baseline_auto_seconds: float = 3.0
    dynamics_auto_seconds: float = 3.0
    # -- bounded stores (entries; all stores together are bounded in bytes by store_budget_mb) ------------------
    result_store_size: int = 48
    circles_store_size: int = 48
    circles_after_memo_size: int = 4096
    baseline_store_size: int = 32
    dynamics_store_size: int = 16
    evalset_store_size: int = 16
    evalset_setup_store_size: int = 8
    evalset_upload_store_size: int = 4
    nli_store_size: int = 4
    embedding_store_size: int = 4

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("run_root", "nli_data_dir"):
                continue
            if f.name == "data_roots":
                if not isinstance(value, tuple) or not all(isinstance(p, Path) for p in value):
                    raise ValueError(f"Settings.data_roots must be a tuple of paths. Got {value!r}.")
                continue
            if f.name == "device":
                if value not in DEVICES:
                    raise ValueError(f"Settings.device must be one of {', '.join(DEVICES)}. Got {value!r}.")
                continue
            if f.type == "bool":
                if not isinstance(value, bool):
                    raise ValueError(f"Settings.{f.name} must be True or False. Got {value!r}.")
            elif f.type == "float":
                if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                    raise ValueError(f"Settings.{f.name} must be a finite number. Got {value!r}.")
                if value < 0:
                    raise ValueError(f"Settings.{f.name} must not be negative. Got {value!r}.")
            elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Settings.{f.name} must be a positive whole number. Got {value!r}.")


_warned: set[tuple[str, str]] = set()


def _ignore(name: str, raw: str, rule: str) -> None:
    if (name, raw) not in _warned:
        _warned.add((name, raw))
        _LOG.warning("%s=%r ignored (%s); the default is used", name, raw, rule)


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if raw.lower() in _OFF:
        return False
    if raw.lower() in _ON:
        return True
    _ignore(name, raw, f"a switch is one of {', '.join(_OFF + _ON)}")
    return default


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        _ignore(name, raw, "a finite number, 0 or more, is expected")
        return default
    return value


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if raw.isdigit() and 0 < int(raw) < 10_000:
        return int(raw)
    _ignore(name, raw, "a whole number from 1 is expected")
    return default


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if raw.lower() in choices:
        return raw.lower()
    _ignore(name, raw, f"one of {', '.join(choices)} is expected")
    return default


def _path(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name, "")
    return Path(raw).expanduser() if raw.strip() else None


def _paths(env: Mapping[str, str], name: str) -> tuple[Path, ...]:
    """Folders separated by ``os.pathsep`` (empty entries skipped), in order, each once."""
    raw = env.get(name, "")
    parts = [p.strip() for p in raw.split(os.pathsep)]
    return tuple(dict.fromkeys(Path(p).expanduser() for p in parts if p))


def load(environ: Mapping[str, str] | None = None, **overrides) -> Settings:
    """The settings from the environment (``os.environ`` when ``environ`` is None), read now.

    Parameters
    ----------
    environ : mapping, optional
        Where the ``AFLITE_*`` variables are read (default: this process's environment).
    **overrides
        Fields to set directly (tests), after the environment; invalid values raise ValueError.

    Returns
    -------
    Settings
        Frozen; cheap to build (a few dictionary look-ups), so callers read it when they need a value.
    """
    env = os.environ if environ is None else environ
    d = Settings()
    out = replace(
        d,
        run_root=_path(env, RUN_ROOT_ENV) or d.run_root,
        data_roots=_paths(env, DATA_ROOTS_ENV),
        nli_data_dir=_path(env, NLI_DATA_DIR_ENV),
        warm_up=_switch(env, WARM_UP_ENV, d.warm_up),
        umap=_switch(env, UMAP_ENV, d.umap),
        sync_wait_s=_number(env, SYNC_WAIT_ENV, d.sync_wait_s),
        upload_vault_mb=_number(env, UPLOAD_VAULT_MB_ENV, d.upload_vault_mb),
        upload_ttl_hours=_number(env, UPLOAD_TTL_HOURS_ENV, d.upload_ttl_hours),
        store_budget_mb=_number(env, STORE_BUDGET_MB_ENV, d.store_budget_mb),
        parse_budget_mb=_number(env, PARSE_BUDGET_MB_ENV, d.parse_budget_mb),
        parses_budget_mb=_number(env, PARSES_BUDGET_MB_ENV, d.parses_budget_mb),
        device=_choice(env, DEVICE_ENV, d.device, DEVICES),
        heavy_jobs=_count(env, HEAVY_JOBS_ENV, d.heavy_jobs),
        child_processes=_switch(env, CHILD_PROCESSES_ENV, d.child_processes),
    )
    return replace(out, **overrides) if overrides else out


def store_budget_bytes(current: Settings | None = None) -> int:
    """The server-wide byte budget of the app's stores (:attr:`Settings.store_budget_mb` in bytes)."""
    return int((current or load()).store_budget_mb * MiB)


def parse_budget_bytes(current: Settings | None = None) -> tuple[int, int]:
    """The memory budgets of reads: ``(one read, all reads in flight)`` in bytes (at least 1 byte each)."""
    s = current or load()
    return max(1, int(s.parse_budget_mb * MiB)), max(1, int(s.parses_budget_mb * MiB))


# -- the README's table of the server's settings ----------------------------------------------------------------
def _shown_default(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None or value == ():
        return "unset"
    if isinstance(value, Path):
        return f"`{value}`"
    if isinstance(value, str):
        return f"`{value}`"
    if name.endswith("_mb"):
        return f"{value:,g} MB"
    if name.endswith("_bytes"):
        return f"{value / MiB:,g} MB" if value % MiB == 0 else f"{value:,} bytes"
    if name.endswith(("_seconds", "_s")):
        return f"{value:,g} s"
    if name.endswith("_hours"):
        return f"{value:,g} h"
    return f"{value:,}" if isinstance(value, int) else f"{value:,g}"


def _field_docs() -> dict[str, str]:
    """Each field's description in :class:`Settings`' docstring (its first sentence, the variable's name dropped)."""
    import re

    doc = Settings.__doc__ or ""
    found = re.findall(r"^    (\w+) : [^\n]*\n((?:        [^\n]*\n?)+)", doc, re.M)
    out = {}
    for name, body in found:
        text = " ".join(body.split())
        text = re.sub(r"^``AFLITE_\w+``: ", "", text)
        text = re.sub(r"\s*Default [^.]*(\.[^.]*)?\.$", "", text).rstrip(".")
        text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text).replace("``", "`")
        out[name] = (text[:1].upper() + text[1:]).replace("|", "\\|")
    return out


def serving_table() -> str:
    """The README's table of every server setting: variable, default and what it bounds, from :class:`Settings`.

    ``docs/serving_table.py --write`` puts it into the README ("Serving the app to others");
    ``tests/test_settings.py`` fails when the README's copy differs.
    """
    docs = _field_docs()
    lines = ["| setting | environment variable | default | what it sets |", "| --- | --- | --- | --- |"]
    defaults = Settings()
    for f in fields(Settings):
        env = ENV_VARS.get(f.name)
        lines.append(
            f"| `{f.name}` | {f'`{env}`' if env else '–'} | {_shown_default(f.name, getattr(defaults, f.name))} "
            f"| {docs.get(f.name, '')} |"
        )
    return "\n".join(lines) + "\n"
