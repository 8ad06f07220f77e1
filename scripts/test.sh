#!/usr/bin/env bash
# Every check CI runs: set up .venv with the dev extra, notebooks clean and library in sync, lint, the docs site built,
# notebooks re-executed against their saved outputs, notebook tests, the wheel installed
# with the core only, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 BRIGHTPRO_PROGRESS=0 MPLBACKEND=Agg PYDEVD_DISABLE_FILE_VALIDATION=1
snapshot() { { git diff --no-ext-diff; git ls-files --others --exclude-standard; } | sha256sum; }
before="$(snapshot)"
echo "== nbdev-clean and nbdev-export must change nothing"
.venv/bin/nbdev-clean
.venv/bin/nbdev-export
if [ "$(snapshot)" != "$before" ]; then
  echo "FAIL: nbdev-clean or nbdev-export changed files; run them and commit the result:" >&2
  git status --short >&2
  exit 1
fi
echo "== ruff: unused imports and names (F rules) in the library, tests, benchmarks and tools"
.venv/bin/ruff check --quiet --select F brightpro tests benchmarks tools
echo "== the bundled sample matches its sources"
.venv/bin/python tools/build_sample.py --check
echo "== docs: the site builds (scripts/docs.sh -> _site/; the browser test below opens every page)"
BRIGHTPRO_SKIP_SETUP=1 bash scripts/docs.sh
echo "== notebooks: re-executed, every saved output must come out the same (nbval)"
shopt -s nullglob
.venv/bin/python -m pytest -q -p no:cacheprovider --nbval --nbval-current-env nbs/*.ipynb nbs/tutorials/*.ipynb nbs/analysis/*.ipynb \
  nbs/course/*.ipynb nbs/course/solutions/*.ipynb
echo "== nbdev-test"
.venv/bin/nbdev-test --n-workers 2
echo "== the wheel, installed with the core only into a fresh venv, evaluates a run"
bash scripts/test_wheel.sh
echo "== pytest"
.venv/bin/python -m pytest -q "$@"
