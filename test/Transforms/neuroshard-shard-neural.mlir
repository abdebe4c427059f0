// The pass with a neural cost-model bundle. The bundle is exported here (an
// untrained one: random weights, comm models for 4 devices), so the checks
// are about loading and device counts, not about the plan's costs.
// REQUIRES: torch, python
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -m neuroshard.cost_model export-untrained --out %t/nb --seed 1 --devices 4

// Comm models are tied to their device count: 8 devices is an error.
// RUN: not neuroshard-opt %s --neuroshard-shard="devices=8 cost-model=%t/nb" 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: error: cost model 'nb' was trained for 4 devices but the task has 8

// With 4 devices the bundle plans, and the plan names it.
// RUN: neuroshard-opt %s --neuroshard-shard="devices=4 cost-model=%t/nb" | FileCheck %s
// CHECK: module attributes {neuroshard.plan = {algorithm = "neuroshard", cost_model = "nb", {{.*}}device = 3 : i64{{.*}}}, neuroshard.topology = #neuroshard.topology<devices = 4, memory_gb = 1.0>}
// CHECK: neuroshard.table @a : rows 1000, dim 64, f32 shards [#neuroshard.shard<
// CHECK: neuroshard.table @b : rows 5000, dim 32, f32 shards [#neuroshard.shard<
// CHECK: neuroshard.fused_embedding_bag device

// The pass reports the model's warnings as diagnostics on the module, once
// each, naming the file, and not again in the plan table: the bundle was
// measured at batch 65536 only, the module's batch is 16.
// model-warnings=false silences them.
// RUN: neuroshard-opt %s --neuroshard-shard="devices=4 cost-model=%t/nb plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WARN
// WARN: neuroshard-shard-neural.mlir:{{[0-9]+}}:{{[0-9]+}}: warning: cost model 'nb' was measured at batch size 65536 only and has no batch-scaling curve; its compute costs are scaled in proportion to batch size 16
// WARN-NOT: batch-scaling curve
// WARN: NeuroShard plan:
// WARN-NOT: batch-scaling curve
// RUN: neuroshard-opt %s --neuroshard-shard="devices=4 cost-model=%t/nb plan-table=- model-warnings=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SILENT
// SILENT-NOT: warning
// SILENT: NeuroShard plan:

// The same bundle through the module's topology (2 devices) is refused too.
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=%t/nb" 2>&1 | FileCheck %s --check-prefix=TOPOLOGY
// TOPOLOGY: error: cost model 'nb' was trained for 4 devices but the task has 2

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 1000, dim 64, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 5000, dim 32, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @two(%i: tensor<?xi32>, %o: tensor<17xi32>) -> (tensor<16x64xf32>, tensor<16x32xf32>) {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x64xf32>
    %1 = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    return %0, %1 : tensor<16x64xf32>, tensor<16x32xf32>
  }
}
