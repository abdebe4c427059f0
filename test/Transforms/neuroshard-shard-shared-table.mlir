// A table two features look up, each lookup with its own statistics: the
// table needs none of its own, and the pass prices both features' work.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical devices=2 algorithm=table-greedy-grid plan-out=%t.json" \
// RUN:   | FileCheck %s
// RUN: FileCheck %s --check-prefix=PLAN < %t.json
// RUN: not neuroshard-opt %S/Inputs/shared-table-mixed.mlir --neuroshard-shard="cost-model=analytical devices=2" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MIXED
// MIXED: error: 'neuroshard.embedding_bag' op looks up table 'shared' without statistics of its own, but 1 of its 2 lookups have them; give every lookup of a shared table its pooling_factor and access_hist, or none

// The shared table's two lookups cost as much as the two tables on the
// other device (same statistics), so the plan balances them 1:2.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @shared : rows 1000, dim 16, f32
  neuroshard.table @clicks : rows 1000, dim 16, f32 {pooling_factor = 8.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @views : rows 1000, dim 16, f32 {pooling_factor = 1.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i0: tensor<?xi32>, %o0: tensor<9xi32>, %i1: tensor<?xi32>, %o1: tensor<9xi32>)
      -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
    %a = neuroshard.embedding_bag @shared(%i0, %o0) sum {pooling_factor = 8.0 : f64,
      access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
      : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x16xf32>
    %b = neuroshard.embedding_bag @shared(%i1, %o1) mean {pooling_factor = 1.0 : f64,
      access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
      : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x16xf32>
    %c = neuroshard.embedding_bag @clicks(%i0, %o0) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x16xf32>
    %d = neuroshard.embedding_bag @views(%i1, %o1) mean : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x16xf32>
    return %a, %b, %c, %d : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  }
}
// CHECK: neuroshard.table @shared : rows 1000, dim 16, f32 shards [#neuroshard.shard<cols = 0 to 16, device = [[S:[01]]]>]
// CHECK: neuroshard.table @clicks : rows 1000, dim 16, f32 shards [#neuroshard.shard<cols = 0 to 16, device = [[O:[01]]]>]
// CHECK: neuroshard.table @views : rows 1000, dim 16, f32 shards [#neuroshard.shard<cols = 0 to 16, device = [[O]]>]
// The fused lookup reads the shared table once per feature and keeps each
// feature's statistics for the tools that generate its inputs.
// CHECK: neuroshard.fused_embedding_bag device [[S]] [
// CHECK-NEXT: @shared cols 0 to 16 sum
// CHECK-NEXT: @shared cols 0 to 16 mean
// CHECK-NEXT: ] {access_hists = array<f64: 5.000000e-01, 5.000000e-01, {{.*}}, 1.000000e+00, {{.*}}>, pooling_factors = array<f64: 8.000000e+00, 1.000000e+00>} : tensor<8x32xf32>
// The other device's tables carry their statistics themselves.
// CHECK: neuroshard.fused_embedding_bag device [[O]] [
// CHECK: ] : tensor<8x32xf32>

// PLAN: "compute_ms": [[C:[0-9.e-]+]],
// PLAN: "compute_ms": [[C]],
