// Errors in the pass options name the option and the value.
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=best" 2>&1 | FileCheck %s --check-prefix=ALGO
// ALGO: error: algorithm: unknown algorithm 'best' (expected one of: neuroshard, table-greedy-grid, random, size-greedy, dim-greedy, lookup-greedy, size-lookup-greedy, uniform-split-greedy)
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical memory-gb=8,x" 2>&1 | FileCheck %s --check-prefix=MEM
// MEM: error: memory-gb: 'x' is not a number of GB
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical devices=3 memory-gb=8,8" 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: error: memory-gb lists 2 values but there are 3 devices
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical devices=65537" 2>&1 | FileCheck %s --check-prefix=MANY
// MANY: error: devices: the device count must be between 1 and 65536, got 65537
// A value the option's parser refuses names the pass, the option and the
// value; an unknown option, the nearest known one and the list. The pipeline
// syntax goes through the same parser.
// RUN: not neuroshard-opt %s --neuroshard-shard="devices=four" 2>&1 | FileCheck %s --check-prefix=VALUE
// VALUE: error: --neuroshard-shard option 'devices': 'four' is not a value it takes
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical cost-risk=abc" 2>&1 | FileCheck %s --check-prefix=REAL
// REAL: error: --neuroshard-plan option 'cost-risk': 'abc' is not a value it takes
// RUN: not neuroshard-opt %s --neuroshard-shard="devics=4" 2>&1 | FileCheck %s --check-prefix=NEAR
// NEAR: error: --neuroshard-shard has no option 'devics'; did you mean 'devices'? Its options: algorithm, batch-size, beam-width, {{.*}}, devices, devices-per-node, {{.*}}, torchrec-out, verify-export, verify-min-gain, verify-seconds, verify-spread-factor, verify-timings, verify-top{{$}}
// RUN: not neuroshard-opt %s --pass-pipeline="builtin.module(neuroshard-shard{cost-model=analytical frobnicate=1})" 2>&1 | FileCheck %s --check-prefix=FAR
// FAR: error: --neuroshard-shard has no option 'frobnicate'. Its options: algorithm,
// The table is pinned to device 1 of the module's 2; one device has none.
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical devices=1" 2>&1 | FileCheck %s --check-prefix=PINNED
// PINNED: :[[@LINE+20]]:3: error: 'neuroshard.table' op table 'a': 'pinned_device' is 1 but there is only 1 device
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=%t.does-not-exist" 2>&1 | FileCheck %s --check-prefix=MODEL
// MODEL: error: cost model '{{.*}}does-not-exist'
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical beam-width=0" 2>&1 | FileCheck %s --check-prefix=BEAM
// BEAM: error: {{.*}}beam
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical plan-out=%t.missing-dir/plan.json" 2>&1 | FileCheck %s --check-prefix=OUT
// OUT: error: --neuroshard-export-plan: cannot write '{{.*}}plan.json': {{.+}}
// A write that fails only when flushed (a full disk) is the same error, not
// an abort.
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical plan-table=/dev/full" 2>&1 | FileCheck %s --check-prefix=FULL
// FULL: error: --neuroshard-export-plan: cannot write '/dev/full': No space left on device
// The grid search's thresholds are options of the pass too.
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical threshold-min=0" 2>&1 | FileCheck %s --check-prefix=TMIN
// TMIN: error: threshold-min must be a positive number up to 1000, got 0
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical threshold-min=1.2 threshold-max=1.1" 2>&1 | FileCheck %s --check-prefix=TMAX
// TMAX: error: threshold-max must be at least threshold-min (1.2) and at most 1000, got 1.1
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical algorithm=table-greedy-grid grid-steps=3 threshold-min=1.0 threshold-max=1.0" | FileCheck %s --check-prefix=GRID
// GRID: greedy_runs = 4 : i64

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 30, dim 8, f32 {pinned_device = 1 : i64, pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf32> {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
