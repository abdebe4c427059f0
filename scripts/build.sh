#!/usr/bin/env bash
# Configures and builds NeuroShard in ./build (Release, Ninja).
# Extra arguments are passed to CMake, e.g. -DNEUROSHARD_ENABLE_SANITIZERS=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -G Ninja -S . -B "$BUILD_DIR" \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  "$@"
cmake --build "$BUILD_DIR"
