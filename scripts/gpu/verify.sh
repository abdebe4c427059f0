#!/usr/bin/env bash
# Measured selection of a GPU plan in three steps, so that the GPU machine
# needs neither LLVM, MLIR nor LibTorch (docs/planner.md, "Measured
# selection on a GPU"):
#
#   scripts/gpu/verify.sh prepare DIR TASK [OPTION...]  # here: plan, write the
#                                                       # candidates' sets
#   scripts/gpu/verify.sh run DIR...                    # on the GPU: time them
#   scripts/gpu/verify.sh finish DIR [OPTION...]        # here: the verified plan
#
# `prepare` needs a NeuroShard build (BUILD, default build/) made with the
# CUDA toolkit. It plans TASK (a task file of neuroshard-plan) with the
# OPTIONs (neuroshard-plan's: --devices, --device-kind h200, --verify-top K,
# ...) and --verify-export DIR, which writes the distinct device sets of the
# K best candidates to DIR (sets.json, and sets.txt, the runner's manifest),
# compiles the generic kernels for CHIP (default sm_90) to DIR/kernels.cubin,
# copies the task, the options and the runner to DIR and checks the manifest.
# `run` times every set of each DIR with the runner's collection mode (CUDA
# events, L2 flushed, the median of ITERS runs after WARMUP, default 12 and
# 3), building the runner from source where CMake and nvcc are found;
# RUNNER_ARGS adds to its options (--emulate times the CPU reference loops:
# it tests the steps, not the GPU). A run that was cut resumes. `finish`
# plans again with the same task and options and --verify-timings DIR, which
# keeps the same candidates and returns the one whose slowest device
# measured fastest (the table-wise plan unless another measured at least 2%
# faster); OPTIONs after DIR add output options (--format json, -o FILE).
set -uo pipefail

mode=${1:-}
dir=${2:-}
if [[ -z "$mode" || -z "$dir" || ! "$mode" =~ ^(prepare|run|finish)$ ||
      ( "$mode" == prepare && -z "${3:-}" ) ]]; then
  echo "usage: $0 prepare DIR TASK [OPTION...] | run DIR... | finish DIR [OPTION...]" >&2
  exit 1
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
# shellcheck source=standalone-runner.sh
source "$root/scripts/gpu/standalone-runner.sh"

prepare() {
  local task=$1 chip=${CHIP:-sm_90}
  shift
  local plan=$build/bin/neuroshard-plan opt=$build/bin/neuroshard-opt
  local runner=$build/bin/neuroshard-cuda-runner
  for f in "$plan" "$opt" "$runner"; do
    [[ -e "$f" ]] || { echo "error: $f is missing; build with the CUDA toolkit first" >&2; exit 1; }
  done
  [[ -r "$task" ]] || { echo "error: cannot read the task '$task'" >&2; exit 1; }
  mkdir -p "$dir/bin" || exit 1
  set -e
  cp "$task" "$dir/task.json"
  printf '%s\n' "$@" > "$dir/plan-options.txt"
  "$plan" "$dir/task.json" "$@" --verify-export "$dir" --format table
  # The generic kernels do not depend on the model: any module's export
  # gives them (its manifest is not needed).
  "$opt" "$root/examples/dlrm.mlir" --neuroshard-shard="devices=2 memory-gb=8 model-warnings=false" \
    --neuroshard-cuda-pipeline="chip=$chip host=false" \
    --neuroshard-export-cuda="manifest=$dir/kernels-template.txt binary=$dir/kernels.cubin" -o /dev/null
  rm -f "$dir/kernels-template.txt"
  if [[ "$chip" != sm_90 ]]; then
    sed -i "s/^module kernels.cubin cubin sm_90\$/module kernels.cubin cubin $chip/" "$dir/sets.txt"
  fi
  cp "$runner" "$dir/bin/"
  "$runner" --validate "$dir/sets.txt" > /dev/null
  set +e
  echo "prepared $dir: $(grep -c '^device ' "$dir/sets.txt") launches to time (each device set on each draw of its inputs); next: scripts/gpu/verify.sh run $dir on the GPU machine"
}

run() {
  local status=0 runner=""
  for d in "$@"; do
    for f in "$d/sets.txt" "$d/bin/neuroshard-cuda-runner"; do
      [[ -e "$f" ]] || { echo "error: $f is missing; run scripts/gpu/verify.sh prepare $d first" >&2; return 1; }
    done
    if [[ -z "$runner" ]]; then
      runner=$d/bin/neuroshard-cuda-runner
      if [[ " ${RUNNER_ARGS:-} " != *" --emulate "* ]]; then
        runner=$(standalone_runner "$runner" "$d/runner-build.txt")
      fi
      echo "runner: $runner"
    fi
    echo "== $d ($(date -u +%T))"
    # shellcheck disable=SC2086
    "$runner" --manifest "$d/sets.txt" --collect "$d/samples.jsonl" \
      --warmup "${WARMUP:-3}" --iters "${ITERS:-12}" ${RUNNER_ARGS:-} || { status=1; break; }
  done
  return $status
}

finish() {
  local options=()
  [[ -r "$dir/plan-options.txt" && -r "$dir/task.json" ]] ||
    { echo "error: $dir holds no prepared planning; run scripts/gpu/verify.sh prepare first" >&2; exit 1; }
  mapfile -t options < "$dir/plan-options.txt"
  "$build/bin/neuroshard-plan" "$dir/task.json" "${options[@]}" --verify-timings "$dir" "$@"
}

case "$mode" in
  prepare) shift 2; prepare "$@" ;;
  run) shift; run "$@" ;;
  finish) shift 2; finish "$@" ;;
esac
