// A module annotated by hand (the tables' shards, no neuroshard.plan)
// materializes into one fused lookup per device, and computes what the
// unsharded module computes, forward and backward.
// RUN: neuroshard-opt %s --neuroshard-materialize | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-materialize -o %t.mlir
// RUN: neuroshard-run %S/../neuroshard-run/Inputs/mixed.mlir --compare %t.mlir --backward \
// RUN:   | FileCheck %s --check-prefix=MATCH
// RUN: %if mpi %{ %mpiexec -n 2 neuroshard-run %t.mlir --distributed \
// RUN:   --compare %S/../neuroshard-run/Inputs/mixed.mlir --backward | FileCheck %s --check-prefix=MATCH %}
// MATCH-NOT: MISMATCH
// MATCH: max relative difference 0.00E+00 (outputs), 0.00E+00 (updated weights), tolerance 1.0E-05: match
//
// A materialized module has no lookups left: a second run changes nothing.
// RUN: neuroshard-opt %s --neuroshard-materialize --neuroshard-materialize | FileCheck %s
// So has a module without tables.
// RUN: echo 'module {}' | neuroshard-opt --neuroshard-materialize | FileCheck %s --check-prefix=EMPTY
// EMPTY: module {
// EMPTY-NEXT: }

// The tables keep their shards; no plan record appears.
// CHECK-NOT: neuroshard.plan
// CHECK: neuroshard.table @split : rows 500, dim 64, f32 shards [#neuroshard.shard<cols = 0 to 16, device = 0>, #neuroshard.shard<cols = 16 to 48, device = 1>, #neuroshard.shard<cols = 48 to 64, device = 0>]
// CHECK-LABEL: func.func @embed
// CHECK-NOT: neuroshard.embedding_bag
// Device 0 holds two pieces of @split and @long, device 1 the middle of
// @split and @pinned; entries follow the tables' order, then their columns.
// CHECK: %[[D0:.*]] = neuroshard.fused_embedding_bag device 0 [
// CHECK-NEXT: @split cols 0 to 16 sum(%arg0, %arg1 : tensor<?xi32>, tensor<66xi32>),
// CHECK-NEXT: @split cols 48 to 64 sum(%arg0, %arg1 : tensor<?xi32>, tensor<66xi32>),
// CHECK-NEXT: @long cols 0 to 16 mean(%arg4, %arg5 : tensor<?xi64>, tensor<66xi64>)
// CHECK-NEXT: ] : tensor<65x48xf32>
// CHECK: %[[D1:.*]] = neuroshard.fused_embedding_bag device 1 [
// CHECK-NEXT: @split cols 16 to 48 sum(%arg0, %arg1 : tensor<?xi32>, tensor<66xi32>),
// CHECK-NEXT: @pinned cols 0 to 32 mean(%arg2, %arg3 : tensor<?xi32>, tensor<66xi32>)
// CHECK-NEXT: ] : tensor<65x64xf32>
// The 65 bags split 33 + 32.
// CHECK: %[[X:.*]]:2 = neuroshard.all_to_all %[[D0]], %[[D1]] : tensor<65x48xf32>, tensor<65x64xf32> -> tensor<33x112xf32>, tensor<32x112xf32>
// CHECK: %[[ALL:.*]] = tensor.concat dim(0) %[[X]]#0, %[[X]]#1
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[ALL]][0, 0] [65, 16] [1, 1]
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[ALL]][0, 48] [65, 32] [1, 1]
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[ALL]][0, 16] [65, 16] [1, 1]
// CHECK: %[[S:.*]] = tensor.concat dim(1) %[[S0]], %[[S1]], %[[S2]]
// CHECK: %[[P:.*]] = tensor.extract_slice %[[ALL]][0, 80] [65, 32] [1, 1]
// CHECK: %[[L:.*]] = tensor.extract_slice %[[ALL]][0, 32] [65, 16] [1, 1]
// CHECK: return %[[S]], %[[P]], %[[L]]
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @split : rows 500, dim 64, f32
      shards [#neuroshard.shard<cols = 0 to 16, device = 0>,
              #neuroshard.shard<cols = 16 to 48, device = 1>,
              #neuroshard.shard<cols = 48 to 64, device = 0>] {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 0.5, 0.3, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @pinned : rows 300, dim 32, f32
      shards [#neuroshard.shard<cols = 0 to 32, device = 1>] {pinned_device = 1 : i64, pooling_factor = 2.5 : f64,
    access_hist = array<f64: 0.7, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @long : rows 400, dim 16, f32
      shards [#neuroshard.shard<cols = 0 to 16, device = 0>] {pooling_factor = 3.0 : f64,
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
