#!/usr/bin/env bash
# A cost-model bundle of a GPU in three steps, so that the GPU machine needs
# neither LLVM, MLIR nor the Python package (docs/cost-model.md, "A cost
# model of a GPU"):
#
#   scripts/gpu/calibrate.sh prepare DIR      # here: kernels, runner, pool,
#                                             # one manifest per set group
#   scripts/gpu/calibrate.sh run DIR          # on the GPU: time every set
#   scripts/gpu/calibrate.sh finish DIR OUT   # here: train, scale, report
#
# `prepare` needs a NeuroShard build (BUILD, default build/) made with the
# CUDA toolkit; it compiles the generic kernels for CHIP (default sm_90),
# copies the runner and writes the manifests with
# `python3 -m neuroshard.gpu_calibrate prepare` (PREPARE_ARGS adds to its
# options: --samples, --batch-size, ...). `run` builds the runner from source
# where CMake and nvcc are found (else uses the copied one) and runs
#
#   neuroshard-cuda-runner --manifest M --collect DIR/samples/NAME.jsonl
#
# for every manifest of DIR/runs.txt; each run appends one line per set and
# skips the sets already there, so a run that was cut resumes. RUNNER_ARGS
# adds to the runner's options (e.g. --emulate, which times the CPU
# reference loops instead of a GPU: it tests the steps, not the GPU). With
# NEUROSHARD_CUDA_DRIVER naming the emulated driver, the copied runner runs
# the kernels through it (scripts/gpu/judge.py's test does). `run` serves
# plans.py's and judge.py's directories too.
# `finish` trains the bundle, computes its batch-scaling curve from the
# timed curve sets, reports the held-out MAPE and Kendall's tau, and writes
# the bundle to OUT (FINISH_ARGS: --epochs, --force).
set -uo pipefail

mode=${1:-}
dir=${2:-}
if [[ -z "$mode" || -z "$dir" || ! "$mode" =~ ^(prepare|run|finish)$ ||
      ( "$mode" == finish && -z "${3:-}" ) ]]; then
  echo "usage: $0 prepare DIR | run DIR | finish DIR OUT" >&2
  exit 1
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=standalone-runner.sh
source "$root/scripts/gpu/standalone-runner.sh"
build=${BUILD:-$root/build}
# PYTHON_HOST may be a command with its environment (env VAR=... python3).
python=${PYTHON_HOST:-/usr/bin/python3}
package_path() {
  echo "$root/python:$build/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
}

prepare() {
  local opt=$build/bin/neuroshard-opt chip=${CHIP:-sm_90}
  for f in "$opt" "$build/bin/neuroshard-cuda-runner"; do
    [[ -e "$f" ]] || { echo "error: $f is missing; build with the CUDA toolkit first" >&2; exit 1; }
  done
  mkdir -p "$dir/bin" || exit 1
  set -e
  cp "$build/bin/neuroshard-cuda-runner" "$dir/bin/"
  # The generic kernels do not depend on the model: any module's export
  # gives them, and its manifest is the template of the collection's.
  "$opt" "$root/examples/dlrm.mlir" --neuroshard-shard="devices=2 memory-gb=8 model-warnings=false" \
    --neuroshard-cuda-pipeline="chip=$chip host=false" \
    --neuroshard-export-cuda="manifest=$dir/template.txt binary=$dir/kernels.cubin" -o /dev/null
  # ${PREPARE_ARGS} is split into options on purpose.
  # shellcheck disable=SC2086
  PYTHONPATH=$(package_path) $python -m neuroshard.gpu_calibrate prepare \
    --work "$dir" --template "$dir/template.txt" ${PREPARE_ARGS:-}
  for m in "$dir"/manifests/*.txt; do
    "$dir/bin/neuroshard-cuda-runner" --validate "$m" > /dev/null
  done
  set +e
  echo "prepared $dir: $(wc -l < "$dir/runs.txt") manifests; next: scripts/gpu/calibrate.sh run $dir on the GPU machine"
}

run() {
  local runner=$dir/bin/neuroshard-cuda-runner
  for f in "$dir/runs.txt" "$runner"; do
    [[ -e "$f" ]] || { echo "error: $f is missing; run scripts/gpu/calibrate.sh prepare $dir first" >&2; exit 1; }
  done
  mkdir -p "$dir/samples" || exit 1
  # The copied runner serves --emulate and the emulated driver
  # (NEUROSHARD_CUDA_DRIVER), which the build's runner is made for.
  if [[ " ${RUNNER_ARGS:-} " != *" --emulate "* && -z "${NEUROSHARD_CUDA_DRIVER:-}" ]]; then
    runner=$(standalone_runner "$runner" "$dir/runner-build.txt")
  fi
  echo "runner: $runner"
  local name warmup iters status=0
  while read -r name warmup iters; do
    echo "== $name ($(date -u +%T))"
    # shellcheck disable=SC2086
    "$runner" --manifest "$dir/manifests/$name.txt" --collect "$dir/samples/$name.jsonl" \
      --warmup "$warmup" --iters "$iters" ${RUNNER_ARGS:-} || { status=1; break; }
  done < "$dir/runs.txt"
  return $status
}

finish() {
  # shellcheck disable=SC2086
  PYTHONPATH=$(package_path) $python -m neuroshard.gpu_calibrate finish \
    --work "$dir" --out "$1" ${FINISH_ARGS:-}
}

case "$mode" in
  prepare) prepare ;;
  run) run ;;
  finish) finish "$3" ;;
esac
