#!/usr/bin/env bash
# Builds the libFuzzer targets in ./build-fuzz (clang-22, ASan + UBSan) and
# runs each for SECONDS (default 60) over a scratch copy of its seed corpus.
# Exits non-zero if any fuzzer finds a crash, leak, timeout or out-of-memory;
# the input that caused it is kept under build-fuzz/findings/.
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_FUZZER=${1:-60}
BUILD_DIR=build-fuzz

cmake -G Ninja -S . -B "$BUILD_DIR" \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DNEUROSHARD_ENABLE_FUZZERS=ON \
  -DNEUROSHARD_ENABLE_TORCH=OFF -DNEUROSHARD_ENABLE_CUDA=OFF \
  -DNEUROSHARD_ENABLE_MPI=OFF -DNEUROSHARD_BUILD_TESTS=OFF
cmake --build "$BUILD_DIR" --target TaskJSONFuzzer ModuleFuzzer BundleMetaFuzzer

# Seeds: the files the tests already use, plus hand-written edge cases.
task_seeds=(test/neuroshard-plan/Inputs/*.json fuzz/corpus/task/*.json)
module_seeds=(test/Transforms/*.mlir test/Dialect/NeuroShard/*.mlir
              examples/*.mlir)
bundle_meta_seeds=(models/*/meta.json fuzz/corpus/bundle-meta/*.json)

# libMLIR.so is not instrumented and never unpoisons the BumpPtrAllocator
# slabs our instrumented headers poison (see NEUROSHARD_ENABLE_SANITIZERS).
export ASAN_OPTIONS=allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
findings="$BUILD_DIR/findings"
logs="$BUILD_DIR/fuzz-logs"
mkdir -p "$findings" "$logs"

status=0
run_fuzzer() {
  local name=$1
  shift
  local corpus="$scratch/$name"
  mkdir -p "$corpus"
  # Named after their paths: several seeds are called meta.json.
  local seed
  for seed in "$@"; do
    cp "$seed" "$corpus/${seed//\//_}"
  done
  local log="$logs/$name.log"
  echo "== $name: ${SECONDS_PER_FUZZER}s over $# seeds (log: $log)"
  local rc=0
  "$BUILD_DIR/fuzz/$name" "$corpus" \
    -seed="${FUZZ_SEED:-1}" \
    -max_total_time="$SECONDS_PER_FUZZER" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$findings/$name-" \
    >"$log" 2>&1 || rc=$?
  local units
  units=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" |
    grep -o '[0-9]*$' || echo "?")
  echo "$name: executed $units inputs"
  if [[ $rc -ne 0 ]]; then
    status=1
    echo "$name: FAILED (exit $rc); last lines of $log:"
    tail -n 40 "$log"
    grep -ao "Test unit written to .*" "$log" | sed "s/^/$name: /" || true
  fi
}

run_fuzzer TaskJSONFuzzer "${task_seeds[@]}"
run_fuzzer ModuleFuzzer "${module_seeds[@]}"
run_fuzzer BundleMetaFuzzer "${bundle_meta_seeds[@]}"
exit $status
