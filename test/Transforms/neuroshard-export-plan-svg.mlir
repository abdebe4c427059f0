// --neuroshard-export-plan="format=svg" draws the recorded plan, as
// `neuroshard-plan --plot` does; --neuroshard-shard's `plot` runs it between
// planning and materializing. check-plot.py compares the picture with the
// plan JSON exported from the same module (see
// test/neuroshard-plan/plot.test).
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical" \
// RUN:   --neuroshard-export-plan="format=json output=%t.json" \
// RUN:   --neuroshard-export-plan="format=svg output=%t.svg" -o %t.planned.mlir
// RUN: %python %S/../neuroshard-plan/Inputs/check-plot.py %t.svg %t.json | FileCheck %s --check-prefix=PLOT
// PLOT: svg: 2 devices; time and memory bars as the plan JSON says; 3 of 3 tables named in the legend; memory within capacity
// RUN: FileCheck %s --check-prefix=TITLE < %t.svg
// TITLE: NeuroShard plan: neuroshard on 2 devices, cost model analytical, cost {{[0-9.]+}} ms</text>
//
// The same picture after materializing, and from the one-flag pipeline.
// RUN: neuroshard-opt %t.planned.mlir --neuroshard-materialize \
// RUN:   --neuroshard-export-plan="format=svg output=%t.after.svg" -o /dev/null
// RUN: diff %t.svg %t.after.svg
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical plot=%t.shard.svg" -o %t.sharded.mlir
// RUN: diff %t.svg %t.shard.svg
// RUN: FileCheck %s --check-prefix=SHARDED < %t.sharded.mlir
// SHARDED: neuroshard.fused_embedding_bag
//
// A module annotated by hand records no costs to draw; a picture that
// cannot be written is the export pass's error.
// RUN: not neuroshard-opt %S/neuroshard-materialize.mlir --neuroshard-export-plan=format=svg -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOCOST
// NOCOST: error: has no 'neuroshard.plan': only a module planned by --neuroshard-plan records the plan's costs
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical plot=%t.missing-dir/plan.svg" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=OUT
// OUT: error: --neuroshard-export-plan: cannot write '{{.*}}missing-dir/plan.svg': {{.+}}

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 1000, dim 64, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 1000, dim 32, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @"c&<d>" : rows 500, dim 16, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @three(%i: tensor<?xi32>, %o: tensor<17xi32>) -> (tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x16xf32>) {
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x64xf32>
    %b = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    %c = neuroshard.embedding_bag @"c&<d>"(%i, %o) mean : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x16xf32>
    return %a, %b, %c : tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x16xf32>
  }
}
