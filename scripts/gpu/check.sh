#!/usr/bin/env bash
# The GPU checks and measurements of NeuroShard's CUDA kernels, in two steps
# so that a GPU machine needs neither LLVM nor MLIR:
#
#   scripts/gpu/check.sh prepare DIR   # here: kernels, manifests, programs
#   scripts/gpu/check.sh run DIR       # on the GPU machine: run and measure
#   scripts/gpu/check.sh all DIR       # both, on a GPU machine with a build
#
# `prepare` needs a NeuroShard build (BUILD, default build/) made with the
# CUDA toolkit. It writes to DIR the generic kernels as a cubin, the launch
# manifests of the example model sharded over 2 and 4 devices, of the
# export test model, of the row-piece model with and without replicas and
# of a shape sweep (scripts/gpu/sweep.py), the runner,
# and the host-launch test program compiled ahead of time against
# NeuroShard's CUDA runtime (so that the compiler's own gpu.launch_func
# path runs without mlir-runner), and neuroshard-nccl-check with its library
# where the build has NCCL.
#
# `run` checks every launch against the CPU reference, runs the host path,
# times the example plans and the bandwidth target against a device-to-device
# copy and torch.nn.functional.embedding_bag, runs compute-sanitizer and
# Nsight Compute where they are installed, and writes DIR/results/ (log.txt,
# JSON files). Kernel files put in DIR/variants/ (*.cubin) are timed beside
# each other on the bandwidth shapes and the example's plans, interleaved,
# to compare kernel designs in one run (VARIANT_DIMS: the bandwidth dims,
# default 128 64 32 16 4; VARIANT_PLANS: the plans they run, default the
# example's at batch 1024 and 65536; PLANS: the plans section's manifests).
# `prepare` puts two there: the shipped kernels (merged-rows.cubin) and the
# same with the backward kernel's one atomic per index
# (one-atomic-per-index.cubin, merged-rows=0). The nccl
# section runs `mpirun -np 1 neuroshard-nccl-check` (the exchange on NCCL,
# one GPU sending to itself) where the machine has the MPI and NCCL
# libraries the tool needs. The hostcache section times one table in pinned
# host memory mapped into the GPU, read through device caches of several
# sizes (HOST_CACHE_ROWS, HOST_CACHE_SIZES, HOST_CACHE_ARGS), against the
# table in device memory. The hosttier section times every device of
# HugeCTR's 7-table configuration planned on 8 GPUs of 80 GB, three tables
# in host memory behind device caches (scripts/gpu/hosttier.py, each table
# cut to its first rows: HOSTTIER_ARGS, default --max-rows 20000000).
# SECTIONS (default: all of host export rows sweep plans bandwidth hostcache
# hosttier torch sanitizer ncu variants nccl) picks the sections to run. It
# exits non-zero if any check fails.
#
# Without a GPU, NEUROSHARD_CUDA_DRIVER naming the emulated driver
# (build/lib/libneuroshard_emulated_cuda_driver.so) runs the correctness
# sections through it: SECTIONS="host export rows" in a few minutes.
set -uo pipefail

mode=${1:-}
dir=${2:-}
if [[ -z "$mode" || -z "$dir" || ! "$mode" =~ ^(prepare|run|all)$ ]]; then
  echo "usage: $0 prepare|run|all DIR" >&2
  exit 1
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
python=${PYTHON:-python3}

prepare() {
  local opt=$build/bin/neuroshard-opt
  for f in "$opt" "$build/bin/neuroshard-cuda-runner" \
    "$build/lib/libneuroshard_cuda_runtime.so"; do
    [[ -e "$f" ]] || { echo "error: $f is missing; build with the CUDA toolkit first" >&2; exit 1; }
  done
  local llvm=${LLVM_BIN:-/usr/lib/llvm-22/bin}
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/sweep" || exit 1
  set -e
  cp "$build/bin/neuroshard-cuda-runner" "$build/lib/libneuroshard_cuda_runtime.so" "$dir/bin/"
  # The example sharded over 2 devices (8 GB each) and over 4 (its own
  # topology); the export test model (a split table, a mean-pooled one).
  "$opt" "$root/examples/dlrm.mlir" --neuroshard-shard="devices=2 memory-gb=8" \
    --neuroshard-cuda-pipeline="chip=sm_90 host=false" \
    --neuroshard-export-cuda="manifest=$dir/dlrm2.txt binary=$dir/kernels.cubin" -o /dev/null
  "$opt" "$root/examples/dlrm.mlir" --neuroshard-shard \
    --neuroshard-cuda-pipeline="chip=sm_90 host=false" \
    --neuroshard-export-cuda="manifest=$dir/dlrm4.txt binary=$dir/kernels.cubin" -o /dev/null
  "$opt" "$root/test/Conversion/NeuroShardToCUDA/neuroshard-export-cuda.mlir" --neuroshard-shard \
    --neuroshard-cuda-pipeline="chip=sm_90 host=false" \
    --neuroshard-export-cuda="manifest=$dir/export.txt binary=$dir/kernels.cubin" -o /dev/null
  # The backward kernel as shipped and with one atomic per index
  # (merged-rows=0), timed side by side by the variants section.
  mkdir -p "$dir/variants"
  cp "$dir/kernels.cubin" "$dir/variants/merged-rows.cubin"
  "$opt" "$root/examples/dlrm.mlir" --neuroshard-shard \
    --neuroshard-cuda-pipeline="chip=sm_90 host=false merged-rows=0" \
    --neuroshard-export-cuda="manifest=$dir/variants/unmerged.txt binary=$dir/variants/one-atomic-per-index.cubin" -o /dev/null
  rm -f "$dir/variants/unmerged.txt"
  # Row pieces and replicas: the row-piece model with a table cut into row
  # blocks, a grid of row and column pieces, and table 'small' whole
  # (rows.txt) or replicated on every device (replicas.txt).
  local rows_model=$root/test/neuroshard-run/Inputs/row-pieces.mlir
  "$opt" "$rows_model" \
    --neuroshard-import-plan=file="$root/test/Conversion/NeuroShardToCUDA/Inputs/row-pieces-whole-small.plan.json" \
    --neuroshard-materialize --neuroshard-cuda-pipeline="chip=sm_90 host=false" \
    --neuroshard-export-cuda="manifest=$dir/rows.txt binary=$dir/kernels.cubin" -o /dev/null
  "$opt" "$rows_model" \
    --neuroshard-import-plan=file="$root/test/Transforms/Inputs/row-pieces.plan.json" \
    --neuroshard-materialize --neuroshard-cuda-pipeline="chip=sm_90 host=false" \
    --neuroshard-export-cuda="manifest=$dir/replicas.txt binary=$dir/kernels.cubin" -o /dev/null
  # The plans again at a training-size batch: the run record's batch, and
  # each device record's bags (the whole batch, or a replica's share of it,
  # as the runtime keeps a share: floor(bag x new / old)).
  for m in dlrm2 dlrm4 rows replicas; do
    awk -v b=65536 '$1 == "run" { old = $3; $3 = b }
      $1 == "device" && NF == 5 { $4 = int($4 * b / old); $5 = int($5 * b / old) }
      { print }' "$dir/$m.txt" > "$dir/$m-b65536.txt"
  done
  "${PYTHON_HOST:-/usr/bin/python3}" "$root/scripts/gpu/sweep.py" --out "$dir/sweep" \
    --module ../kernels.cubin --count "${SWEEP_COUNT:-64}" --seed 1
  # HugeCTR's 7-table configuration on 8 GPUs of 80 GB, three of its
  # tables in host memory behind device caches.
  "${PYTHON_HOST:-/usr/bin/python3}" "$root/scripts/gpu/hosttier.py" prepare "$dir/hosttier" \
    --build "$build" > /dev/null
  for f in "$dir"/*.txt "$dir"/sweep/*.txt "$dir"/hosttier/manifest.txt; do
    "$build/bin/neuroshard-cuda-runner" --validate "$f" > /dev/null
  done
  # The host path: host-launch.mlir compiled to a native program.
  "$opt" "$root/test/Integration/CUDA/host-launch.mlir" --neuroshard-cuda-pipeline="chip=sm_90" -o "$dir/host.mlir"
  "$llvm/mlir-translate" --mlir-to-llvmir "$dir/host.mlir" -o "$dir/host.ll"
  "$llvm/llc" -O2 -filetype=obj -relocation-model=pic "$dir/host.ll" -o "$dir/host.o"
  cc -O2 -c "$root/scripts/gpu/print_memref.c" -o "$dir/print_memref.o"
  c++ "$dir/host.o" "$dir/print_memref.o" -o "$dir/bin/host-launch" \
    "$dir/bin/libneuroshard_cuda_runtime.so" -Wl,-rpath,'$ORIGIN'
  rm -f "$dir/host.ll" "$dir/host.o" "$dir/print_memref.o"
  # The exchange on NCCL, where this build has it.
  if [[ -x "$build/bin/neuroshard-nccl-check" ]]; then
    cp "$build/bin/neuroshard-nccl-check" "$build/lib/libneuroshard_nccl_exchange.so" "$dir/bin/"
  fi
  # What host-launch.mlir's CHECK lines expect, flattened.
  grep -o 'CHECK[-A-Z]*: \[.*\]' "$root/test/Integration/CUDA/host-launch.mlir" |
    sed 's/^[^[]*//' > "$dir/host-expected.txt"
  set +e
  echo "prepared $dir: $(ls "$dir"/sweep | wc -l) sweep manifests"
}

sections=${SECTIONS:-host export rows sweep plans bandwidth hostcache hosttier torch sanitizer ncu variants nccl}
bandwidth_dims="128 64 32 16 4"
# The hostcache section: a table of 10M rows of 128 floats (5 GB) behind
# caches of 1%, 5%, 20% and 50% of it, at batch 65536 and pooling 32.
host_cache_rows=${HOST_CACHE_ROWS:-10000000}
host_cache_sizes=${HOST_CACHE_SIZES:-100000,500000,2000000,5000000}
host_cache_args=${HOST_CACHE_ARGS:---dim 128 --pooling 32 --warmup 5 --iters 20}
# The hosttier section: each table cut to its first 20M rows, so that a
# device's tables fit one GPU machine's host memory.
hosttier_args=${HOSTTIER_ARGS:---max-rows 20000000}
want() { [[ " $sections " == *" $1 "* ]]; }

failures=0
note_failure() { failures=$((failures + 1)); echo "FAILED: $*"; }
section() { echo "== $* ($(date -u +%T))"; }

# Runs the runner on kernels file $1 with the arguments after $2, and prints
# one row labelled $2: the forward and forward+backward+SGD medians (of the
# slowest launch for a manifest).
variant_row() {
  local v=$1 label=$2 text status=ok
  shift 2
  text=$("$runner" --module "$v" --module-format cubin "$@" 2>&1) ||
    { status=FAIL; note_failure "variant $(basename "$v") $label"; }
  printf '%-28s %-12s %10s %10s %8s\n' "$(basename "$v" .cubin)" "$label" \
    "$(awk '/^forward  / {b = $2} $1 ~ /^[0-9]+$/ && NF >= 12 {m = $8 > m ? $8 : m}
            END {print b != "" ? b : m}' <<< "$text")" \
    "$(awk '/^forward\+backward/ {b = $2} $1 ~ /^[0-9]+$/ && NF >= 12 {m = $11 > m ? $11 : m}
            END {print b != "" ? b : m}' <<< "$text")" "$status"
}

run() {
  local out=$dir/results
  mkdir -p "$out"
  exec > >(tee "$out/log.txt") 2>&1
  local runner=$dir/bin/neuroshard-cuda-runner
  section "machine"
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  grep -m1 'model name' /proc/cpuinfo
  nproc

  section "the runner built from source alone (CMake and the CUDA toolkit only)"
  if command -v cmake > /dev/null && command -v nvcc > /dev/null; then
    local standalone=/tmp/neuroshard-runner-build
    if cmake -S "$root/tools/neuroshard-cuda-runner" -B "$standalone" > "$out/standalone-build.txt" 2>&1 &&
      cmake --build "$standalone" -j >> "$out/standalone-build.txt" 2>&1; then
      echo "built $standalone/neuroshard-cuda-runner"
      runner=$standalone/neuroshard-cuda-runner
    else
      note_failure "standalone runner build (see standalone-build.txt)"
      tail -20 "$out/standalone-build.txt"
    fi
  else
    echo "skipped: cmake or nvcc not found; using $runner"
  fi

  if want host; then
  section "host path: host-launch.mlir compiled ahead of time"
  # Its @main returns void, so the exit status means nothing; the printed
  # values are the check.
  "$dir/bin/host-launch" > "$out/host-launch.txt" || true
  cat "$out/host-launch.txt"
  local expected actual
  expected=$(tr -d ' []' < "$dir/host-expected.txt" | paste -sd,)
  actual=$(tr -d ' []' < "$out/host-launch.txt" | paste -sd,)
  if [[ "$expected" == "$actual" ]]; then
    echo "host path: matches host-launch.mlir"
  else
    note_failure "host path output differs from host-launch.mlir"
  fi
  fi

  if want export; then
  section "correctness: the export test model, both weight layouts"
  "$runner" --manifest "$dir/export.txt" --warmup 1 --iters 3 || note_failure "export.txt"
  "$runner" --manifest "$dir/export.txt" --layout tables --warmup 1 --iters 3 || note_failure "export.txt --layout tables"
  fi

  if want rows; then
  section "correctness: row pieces and replicas"
  # Each row piece reads its block of its lookup; each replica its device's
  # bags of the batch; every launch is checked forward and backward. The
  # plans section runs them at batch 65536 too.
  for m in rows replicas; do
    echo "-- $m"
    "$runner" --manifest "$dir/$m.txt" --warmup 1 --iters 3 || note_failure "$m"
  done
  fi

  if want sweep; then
  section "correctness: shape sweep"
  local passed=0 failed=0
  for f in "$dir"/sweep/*.txt; do
    if "$runner" --manifest "$f" --warmup 0 --iters 1 --no-flush > "$out/sweep-last.txt" 2>&1; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      note_failure "sweep $(basename "$f")"
      cat "$out/sweep-last.txt"
    fi
  done
  rm -f "$out/sweep-last.txt"
  echo "sweep: $passed passed, $failed failed"
  fi

  if want plans; then
  section "the example's plans (2 and 4 devices; batch 1024 and 65536), and the row pieces' at 65536"
  for m in ${PLANS:-dlrm2 dlrm4 dlrm2-b65536 dlrm4-b65536 rows-b65536 replicas-b65536}; do
    echo "-- $m"
    "$runner" --manifest "$dir/$m.txt" --warmup 10 --iters 50 --json "$out/$m.json" || note_failure "$m"
  done
  fi

  # The bandwidth shapes: timed here, and by PyTorch below.
  local shapes=() t d
  if want bandwidth; then
    section "bandwidth target (B=65536, pooling 32, 1e6 rows)"
  fi
  for t in i32 i64; do
    for d in $bandwidth_dims; do
      shapes+=("65536x${d}x32x1000000:$t")
      want bandwidth || continue
      echo "-- dim $d $t"
      "$runner" --bandwidth --module "$dir/kernels.cubin" --module-format cubin --dim $d \
        --index-type $t --warmup 10 --iters 50 --json "$out/bandwidth-$d-$t.json" || note_failure "bandwidth dim $d $t"
    done
  done

  if want hostcache; then
  section "a table in host memory behind a device cache: step time against hit rate"
  # One table in pinned host memory mapped into the GPU, looked up through
  # the generated fetch kernel and a device cache of each size, against the
  # same forward on the table in device memory; then the host link those
  # steps show, for the planner's --host-gbps.
  # shellcheck disable=SC2086
  if "$runner" --host-cache "$host_cache_sizes" --rows "$host_cache_rows" \
    --module "$dir/kernels.cubin" --module-format cubin $host_cache_args \
    --json "$out/host-cache.json"; then
    "$python" "$root/scripts/gpu/hosttier.py" fit "$out/host-cache.json" ||
      echo "no host link fitted"
  else
    note_failure "host cache"
  fi
  fi

  if want hosttier; then
  section "the 7-table plan on 8 GPUs, tables in host memory behind caches: every device timed"
  # shellcheck disable=SC2086
  if "$python" "$root/scripts/gpu/hosttier.py" run "$dir/hosttier" --runner "$runner" $hosttier_args; then
    "$python" "$root/scripts/gpu/hosttier.py" report "$dir/hosttier" --json "$out/hosttier.json" ||
      note_failure "host tier report"
  else
    note_failure "host tier"
  fi
  cp "$dir/hosttier/results/run.log" "$out/hosttier-run.log" 2> /dev/null
  fi

  if want torch; then
  section "torch.nn.functional.embedding_bag on the same shapes"
  if "$python" -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
    "$python" "$root/scripts/gpu/torch_baseline.py" --shapes "${shapes[@]}" --json "$out/torch.json" ||
      note_failure "torch baseline"
  else
    echo "skipped: no PyTorch with CUDA"
  fi
  fi

  if want sanitizer; then
  section "compute-sanitizer (memcheck, racecheck, synccheck) on small launches"
  if command -v compute-sanitizer > /dev/null; then
    for tool in memcheck racecheck synccheck; do
      for f in "$dir/export.txt" "$dir"/sweep/sweep-1-00[0-5].txt; do
        compute-sanitizer --tool $tool --error-exitcode 3 "$runner" --manifest "$f" \
          --warmup 0 --iters 1 --no-flush > "$out/sanitizer-last.txt" 2>&1 ||
          { note_failure "compute-sanitizer $tool $(basename "$f")"; tail -30 "$out/sanitizer-last.txt"; }
      done
      echo "compute-sanitizer $tool: done"
    done
    rm -f "$out/sanitizer-last.txt"
  else
    echo "skipped: compute-sanitizer not found"
  fi
  fi

  if want ncu; then
  section "Nsight Compute: the bandwidth kernels (dim 128, i32)"
  if command -v ncu > /dev/null; then
    ncu --kernel-name regex:neuroshard_bag --launch-count 2 --csv \
      --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__block_size,launch__grid_size,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct \
      "$runner" --bandwidth --module "$dir/kernels.cubin" --module-format cubin \
      --warmup 0 --iters 1 --no-flush > "$out/ncu.csv" 2>&1 || note_failure "ncu"
    grep -v '^==PROF==' "$out/ncu.csv" | tail -30
  else
    echo "skipped: ncu not found"
  fi
  fi

  if want variants && compgen -G "$dir/variants/*.cubin" > /dev/null; then
    section "kernel variants, interleaved (median ms of forward and of forward+backward+SGD)"
    printf '%-28s %-12s %10s %10s %8s\n' variant shape forward fwd+bwd check
    local round v m
    for round in 1 2; do
      for d in ${VARIANT_DIMS:-$bandwidth_dims}; do
        for v in "$dir"/variants/*.cubin; do
          variant_row "$v" "d$d/i32" --bandwidth --dim "$d" --warmup 10 --iters 50
        done
      done
    done
    # The example's plans at the module's batch and at 65536: the slowest
    # device.
    for round in 1 2; do
      for m in ${VARIANT_PLANS:-dlrm2 dlrm4 dlrm2-b65536 dlrm4-b65536}; do
        for v in "$dir"/variants/*.cubin; do
          variant_row "$v" "$m" --manifest "$dir/$m.txt" --warmup 10 --iters 50
        done
      done
    done
  fi

  if want nccl; then
  section "the exchange on NCCL: one rank, sending to and receiving from itself"
  local nccl_check=$dir/bin/neuroshard-nccl-check missing
  local libraries="$dir/bin:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [[ ! -x "$nccl_check" ]]; then
    echo "skipped: neuroshard-nccl-check was not built (no NCCL where prepare ran)"
  elif missing=$(LD_LIBRARY_PATH=$libraries ldd "$nccl_check" | awk '/not found/ {print $1}' | paste -sd' ') &&
    [[ -n "$missing" ]]; then
    echo "skipped: this machine lacks $missing (Open MPI and NCCL)"
  else
    # Without mpirun, Open MPI starts the tool as a job of one rank.
    local launcher=()
    if command -v mpirun > /dev/null; then
      launcher=(mpirun -np 1)
      [[ $(id -u) -ne 0 ]] || launcher+=(--allow-run-as-root)
    fi
    LD_LIBRARY_PATH=$libraries ${launcher[@]+"${launcher[@]}"} "$nccl_check" 2>&1 | tee "$out/nccl.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || note_failure "neuroshard-nccl-check"
  fi
  fi

  echo "== $failures check(s) failed"
  [[ $failures -eq 0 ]]
}

case $mode in
  prepare) prepare ;;
  run) run ;;
  all) prepare && run ;;
esac
