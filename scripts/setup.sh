#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment .venv and install the project into it with every version fixed by
# requirements/lock.txt (pyproject.toml holds ranges; the lock keeps the demo and the tests reproducible).
# Usage: scripts/setup.sh [extra]   default 'all' (every command); 'dev' adds the test and docs tools; 'core' the core only
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-all}"
spec="."; [ "$extra" != core ] && spec=".[$extra]"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($python --version)" >&2
  "$python" -m venv .venv
fi
# Reinstall only when the requirements or the lock changed (or a different extra is asked for).
stamp=".venv/.brightpro-installed-$extra"
want="$(cat pyproject.toml requirements/lock.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x .venv/bin/brightpro ]; then
  echo "setup: installing brightpro $spec with the versions of requirements/lock.txt into .venv (first time: a few minutes)" >&2
  log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade "pip==25.3" \
         && .venv/bin/python -m pip install --disable-pip-version-check -c requirements/lock.txt -e "$spec"; } > "$log" 2>&1; then
    grep -v "^WARNING: Location" "$log" | tail -n 40 >&2
    echo "setup: installation failed; the full log is $log" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
