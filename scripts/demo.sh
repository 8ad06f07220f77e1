#!/usr/bin/env bash
# The main job on the bundled sample: set up .venv, validate the data, run every kind of retriever over the seven
# domains, and evaluate them with the published metrics and significance tests against the harness's BM25.
# Runs go to runs/sample/ (reused when up to date; pass --force to redo them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
bp=.venv/bin/brightpro
echo "== brightpro data validate --dataset sample"
$bp data validate --dataset sample | tail -n 1
echo "== brightpro data stats --dataset sample"
$bp data stats --dataset sample
for retriever in bm25-bright bm25 dense fusion:bm25-bright+dense; do
  echo "== brightpro retrieve --dataset sample --domain all --retriever $retriever"
  $bp retrieve --dataset sample --domain all --retriever "$retriever" --out runs/sample "$@"
done
echo "== brightpro evaluate --dataset sample --domain all (baseline: bm25-bright, the harness's BM25)"
$bp evaluate --dataset sample --domain all --k 10,25 \
  --run runs/sample/bm25-bright --run runs/sample/bm25 --run runs/sample/dense --run "runs/sample/fusion-bm25-bright+dense"
