#!/usr/bin/env bash
# One command from a fresh Debian machine to NeuroShard's main job: install
# the dependencies, build, and process the example DLRM embedding layer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo
echo "== neuroshard-opt examples/dlrm.mlir"
build/bin/neuroshard-opt examples/dlrm.mlir
