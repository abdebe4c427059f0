#!/usr/bin/env bash
# One command from a fresh Debian machine to NeuroShard's main job: install
# the dependencies, build, shard the example DLRM embedding layer and print
# the per-device plan, then check on generated inputs that the sharded module
# computes what the original does. The sharded IR is written to
# build/dlrm.sharded.mlir.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo
echo "== neuroshard-opt examples/dlrm.mlir: plan, export, materialize"
build/bin/neuroshard-opt examples/dlrm.mlir --neuroshard-plan \
  --neuroshard-export-plan="format=table" \
  --neuroshard-export-plan="format=json output=build/dlrm.plan.json" \
  --neuroshard-materialize -o build/dlrm.sharded.mlir
echo "sharded IR: build/dlrm.sharded.mlir, plan JSON: build/dlrm.plan.json"
echo
echo "== neuroshard-run: the sharded module against the original"
build/bin/neuroshard-run examples/dlrm.mlir --compare build/dlrm.sharded.mlir \
  --backward --max-rows 2000 | tail -n 1
