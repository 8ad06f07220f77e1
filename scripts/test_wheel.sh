#!/usr/bin/env bash
# The package as a user installs it: build the wheel, install it with the core only (no extra) into a fresh virtual
# environment, with the core's dependencies at the versions of requirements/lock.txt (pip's cache makes this quick
# after the first time), then retrieve with the harness's BM25 and evaluate the run on the bundled sample, and check
# that a command needing an absent extra says which one to install. Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${BRIGHTPRO_PYTHON:-.venv/bin/python}"
work=_build/wheel; rm -rf "$work"; mkdir -p "$work"
"$py" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$work/dist" . > "$work/build.log" 2>&1 \
  || { tail -n 20 "$work/build.log"; exit 1; }
wheel="$(ls "$work"/dist/brightpro-*.whl)"
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check -c requirements/lock.txt "$wheel" > "$work/install.log" 2>&1 \
  || { grep -v "^WARNING: Location" "$work/install.log" | tail -n 20; exit 1; }
echo "core install: $("$work/venv/bin/python" -m pip list --format=freeze 2>/dev/null | wc -l) packages, $(du -sm "$work/venv" | cut -f1) MB"
for heavy in torch sentence_transformers openai papermill matplotlib wordfreq datasets; do
  if "$work/venv/bin/python" -c "import $heavy" 2>/dev/null; then echo "FAIL: the core install has $heavy" >&2; exit 1; fi
done
cd "$work"   # away from the source tree: the installed wheel, not the checkout, is imported
export HF_HUB_OFFLINE=1 BRIGHTPRO_PROGRESS=0 BRIGHTPRO_CACHE="$PWD/cache"
venv/bin/brightpro retrieve --dataset sample --domain biology --retriever bm25-bright --out runs | tail -n 1
venv/bin/brightpro evaluate --dataset sample --domain biology --run runs/bm25-bright
msg="$(venv/bin/brightpro data synth --domain biology --scale 0.001 --out synth 2>&1 || true)"
echo "data synth without its extra: $msg"
case "$msg" in *"pip install 'brightpro[synth]'"*) ;; *) echo "FAIL: data synth did not name the synth extra" >&2; exit 1;; esac
echo "wheel: the core install evaluates a run"
