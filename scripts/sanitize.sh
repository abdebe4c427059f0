#!/usr/bin/env bash
# Builds NeuroShard with AddressSanitizer + UBSan in ./build-asan
# (NEUROSHARD_ENABLE_SANITIZERS=ON, g++, Release) and runs the test suite
# there with ctest; exits non-zero on any failing test or sanitizer report.
# docs/limits.md ("Sanitizers") says what runs and what is left out.
# Usage: scripts/sanitize.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-asan

BUILD_DIR=$BUILD_DIR bash scripts/build.sh -DNEUROSHARD_ENABLE_SANITIZERS=ON

# The build's tests already run with ASAN_OPTIONS=allow_user_poisoning=0
# (see NEUROSHARD_ENABLE_SANITIZERS in CMakeLists.txt); UBSan stops at the
# first report (-fno-sanitize-recover) and prints where.
export UBSAN_OPTIONS=print_stacktrace=1
# Every test but neuroshard-python-pytest and neuroshard-bench-pytest: their
# tests exercise Python code (table pools, training, reports, the
# evaluation harness), which no sanitizer instruments, and would spend most
# of the time training models; the Python tests that run the built tools on
# random modules (neuroshard-differential) do run.
ctest --test-dir "$BUILD_DIR" -j"$(nproc)" --output-on-failure \
  -E '^neuroshard-(python|bench)-pytest$' "$@"
