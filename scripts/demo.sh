#!/usr/bin/env bash
# The main job on the bundled sample: set up .venv, validate the data, then `brightpro report`: retrieve with every
# kind of retriever (bm25-bright, the harness's BM25; bm25; dense; their fusion) over the seven domains, evaluate them
# with the published metrics and significance tests, run the prf agent rounds, and write one analysis page per
# domain, a summary and reports/sample/index.html. Outputs that are up to date are reused; pass --force to redo them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
bp=.venv/bin/brightpro
echo "== brightpro data validate --dataset sample"
$bp data validate --dataset sample | tail -n 1
echo "== brightpro report --dataset sample --domain all --jobs 2 --out reports/sample"
$bp report --dataset sample --domain all --jobs 2 --out reports/sample "$@"
echo "== open reports/sample/index.html in a browser"
