# Sourced by the GPU scripts: builds neuroshard-cuda-runner from its sources
# alone (CMake and the CUDA toolkit, no LLVM) on the GPU machine.
#
#   runner=$(standalone_runner FALLBACK LOG)
#
# prints the path of the runner built under ${TMPDIR:-/tmp}, or FALLBACK (a
# runner copied from the build) when CMake or nvcc is missing or the build
# fails; the build's output goes to LOG.

standalone_runner() {
  local fallback=$1 log=$2 root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  local build=${TMPDIR:-/tmp}/neuroshard-runner-build
  if command -v cmake > /dev/null && command -v nvcc > /dev/null; then
    if cmake -S "$root/tools/neuroshard-cuda-runner" -B "$build" > "$log" 2>&1 &&
       cmake --build "$build" -j >> "$log" 2>&1; then
      echo "$build/neuroshard-cuda-runner"
      return
    fi
    echo "the runner did not build from source (see $log); using $fallback" >&2
  fi
  echo "$fallback"
}
