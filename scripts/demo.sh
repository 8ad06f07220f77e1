#!/usr/bin/env bash
# The main job on the bundled sample: set up .venv, then validate and describe the sample.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
echo "== brightpro data validate --dataset sample"
.venv/bin/brightpro data validate --dataset sample | tail -n 1
echo "== brightpro data stats --dataset sample"
.venv/bin/brightpro data stats --dataset sample
