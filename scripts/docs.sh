#!/usr/bin/env bash
# Build the documentation site into _site/ (open _site/index.html): every notebook as a page (nbdev's directives
# honoured), the protocol, the tutorials, the course, an API reference with every parameter documented, and the sample
# report as a gallery. MkDocs with the Material theme (the dev extra; Quarto users can still run nbdev-docs with
# nbs/_quarto.yml). The gallery shows reports/sample from scripts/demo.sh when it is there, and otherwise a small
# report built here (biology, the two BM25 retrievers, prf rounds: about half a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${BRIGHTPRO_SKIP_SETUP:-0}" = 1 ] || scripts/setup.sh dev
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" BRIGHTPRO_PROGRESS=0 MPLBACKEND=Agg PYDEVD_DISABLE_FILE_VALIDATION=1
py="${BRIGHTPRO_PYTHON:-.venv/bin/python}"
report=reports/sample
if [ ! -f "$report/index.html" ]; then
  report=_build/report
  echo "== docs: a small sample report for the gallery -> $report"
  "$py" -m brightpro.cli report --dataset sample --domain biology --retrievers bm25-bright,bm25 --agent prf \
    --out "$report" --cache-dir _build/cache | tail -n 1
fi
echo "== docs: notebooks, API reference and gallery -> _site/"
"$py" tools/build_docs.py --report "$report" "$@"
