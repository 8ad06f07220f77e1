#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment .venv and install the pinned project into it.
# Usage: scripts/setup.sh [extra]   e.g. scripts/setup.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
spec="."; [ -n "$extra" ] && spec=".[$extra]"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($python --version)" >&2
  "$python" -m venv .venv
fi
# Reinstall only when the pinned requirements changed (or a different extra is asked for).
stamp=".venv/.brightpro-installed${extra:+-$extra}"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x .venv/bin/brightpro ]; then
  echo "setup: installing brightpro $spec and its pinned dependencies into .venv (first time: a few minutes)" >&2
  log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade "pip==25.3" \
         && .venv/bin/python -m pip install --disable-pip-version-check -e "$spec"; } > "$log" 2>&1; then
    grep -v "^WARNING: Location" "$log" | tail -n 40 >&2
    echo "setup: installation failed; the full log is $log" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
