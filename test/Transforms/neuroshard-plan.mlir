// --neuroshard-plan decides and records; the lookups stay as they are.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical" | FileCheck %s
// Recorded plans print and parse back.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical" | neuroshard-opt | FileCheck %s
//
// Planning, then materializing, is --neuroshard-shard.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical" --neuroshard-materialize \
// RUN:   | grep -v time_ms > %t.two-steps.mlir
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical" | grep -v time_ms > %t.pipeline.mlir
// RUN: diff %t.two-steps.mlir %t.pipeline.mlir
//
// The module's plan is the plan neuroshard-plan makes of the same tables.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical" \
// RUN:   --neuroshard-export-plan="output=%t.module.json" -o /dev/null
// Both plan with every sharding type for GPUs unless told otherwise.
// RUN: neuroshard-plan %S/../neuroshard-plan/Inputs/mixed.json --devices 2 --memory-gb 1 \
// RUN:   --cost-model analytical -o %t.task.json
// RUN: grep -v time_ms %t.module.json > %t.module.plan
// RUN: grep -v time_ms %t.task.json > %t.task.plan
// RUN: diff %t.module.plan %t.task.plan

// CHECK: module attributes {neuroshard.plan = {algorithm = "neuroshard", cost_model = "analytical", {{.*}}, neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>}
// CHECK: neuroshard.table @split : rows 500, dim 64, f32 shards [
// CHECK: neuroshard.table @pinned : rows 300, dim 32, f32 shards [#neuroshard.shard<cols = 0 to 32, device = 1>]
// CHECK: neuroshard.table @long : rows 400, dim 16, f32 shards [
// CHECK-LABEL: func.func @embed
// CHECK-NEXT: neuroshard.embedding_bag @split
// CHECK-NEXT: neuroshard.embedding_bag @pinned
// CHECK-NEXT: neuroshard.embedding_bag @long
// CHECK-NOT: neuroshard.fused_embedding_bag
// CHECK-NOT: neuroshard.all_to_all
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @split : rows 500, dim 64, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 0.5, 0.3, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @pinned : rows 300, dim 32, f32 {pinned_device = 1 : i64, pooling_factor = 2.5 : f64,
    access_hist = array<f64: 0.7, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @long : rows 400, dim 16, f32 {pooling_factor = 3.0 : f64,
    access_hist = array<f64: 0.6, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @embed(%si: tensor<?xi32>, %so: tensor<66xi32>,
                   %pi: tensor<?xi32>, %po: tensor<66xi32>,
                   %li: tensor<?xi64>, %lo: tensor<66xi64>)
      -> (tensor<65x64xf32>, tensor<65x32xf32>, tensor<65x16xf32>) {
    %s = neuroshard.embedding_bag @split(%si, %so) sum
        : (tensor<?xi32>, tensor<66xi32>) -> tensor<65x64xf32>
    %p = neuroshard.embedding_bag @pinned(%pi, %po) mean
        : (tensor<?xi32>, tensor<66xi32>) -> tensor<65x32xf32>
    %l = neuroshard.embedding_bag @long(%li, %lo) mean
        : (tensor<?xi64>, tensor<66xi64>) -> tensor<65x16xf32>
    return %s, %p, %l : tensor<65x64xf32>, tensor<65x32xf32>, tensor<65x16xf32>
  }
}
