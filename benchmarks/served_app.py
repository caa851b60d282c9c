"""A served copy of the app for the browser benchmarks, and meters of its process tree (resident size, CPU).

:func:`served` runs ``streamlit run app.py`` on a free port with ``AFLITE_RUN_ROOT`` set and always stops it;
:func:`rss_bytes` / :func:`cpu_seconds` read ``/proc`` for a process and its children, :class:`PeakRSS` samples the
resident size at 20 Hz, :func:`mapped_file_gap` says how much of a memory-mapped file is not resident yet. Used by
``bench_app_scale.py`` (and through it ``bench_job_starts.py``).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------------------------------- meters
def _children(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children", encoding="ascii") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def rss_bytes(pid: int) -> int:
    """VmRSS of ``pid`` and its children."""
    total = 0
    for p in _children(pid):
        try:
            with open(f"/proc/{p}/status", encoding="ascii") as f:
                total += next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")), 0)
        except OSError:
            pass
    return total


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` and its children (``/proc/PID/stat``), in seconds."""
    ticks = 0
    for p in _children(pid):
        try:
            with open(f"/proc/{p}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except (OSError, IndexError, ValueError):
            pass
    return ticks / CLOCK_TICKS


class PeakRSS:
    """Samples a process tree's resident size at 20 Hz in a thread; ``peak`` is the highest since ``reset``."""

    def __init__(self, pid: int | None) -> None:
        self.pid, self.peak = pid, 0
        self._stop = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            if self.pid is not None:
                self.peak = max(self.peak, rss_bytes(self.pid))

    def reset(self) -> None:
        self.peak = rss_bytes(self.pid) if self.pid is not None else 0

    def stop(self) -> None:
        self._stop.set()


def mapped_file_gap(pid: int, path: Path) -> int:
    """Bytes of ``path`` not yet resident in ``pid``'s mappings of it (all of it when it is not mapped)."""
    size, resident, name = path.stat().st_size, 0, str(path.resolve())
    with contextlib.suppress(OSError):
        inside = False
        with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as f:
            for line in f:
                head = line.split()
                if head and re.match(r"^[0-9a-f]+-[0-9a-f]+$", head[0]):
                    inside = line.rstrip().endswith(name)
                elif inside and head and head[0] == "Rss:":
                    resident += int(head[1]) * 1024
    return max(size - resident, 0)


# --------------------------------------------------------------------------------------------------- the server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(run_root: Path, log: Path) -> Iterator[tuple[str, int]]:
    """``streamlit run app.py`` with ``AFLITE_RUN_ROOT=run_root``; yields (URL, server pid), always stops it."""
    port = _free_port()
    env = dict(os.environ, AFLITE_RUN_ROOT=str(run_root), PYTHONUNBUFFERED="1")
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats",
           "false"]  # fmt: skip
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"streamlit did not start (see {log})")
                try:
                    if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                        break
                except OSError:
                    time.sleep(0.2)
            yield url, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
