// RUN: neuroshard-opt %s | FileCheck %s
// RUN: neuroshard-opt %s | neuroshard-opt | FileCheck %s
// RUN: neuroshard-opt %s -mlir-print-op-generic | neuroshard-opt | FileCheck %s
// RUN: neuroshard-opt %s -emit-bytecode | neuroshard-opt | FileCheck %s

// CHECK: module attributes {neuroshard.topology = #neuroshard.topology<devices = 3, memory_gb = [16.0, 16.0, 8.5]>}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 3, memory_gb = [16.0, 16.0, 8.5]>} {

  // CHECK: neuroshard.table @user : rows 4000000, dim 128, f32 {access_hist = array<f64: 4.700000e-01, {{.*}}>, pooling_factor = 1.250000e+01 : f64}
  neuroshard.table @user : rows 4000000, dim 128, f32 {
    pooling_factor = 12.5 : f64,
    access_hist = array<f64: 0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01, 0.02,
                             0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}

  // CHECK: neuroshard.table @item : rows 100000, dim 64, f16 shards [#neuroshard.shard<cols = 0 to 32, device = 0>, #neuroshard.shard<cols = 32 to 64, device = 2>]
  neuroshard.table @item : rows 100000, dim 64, f16
      shards [#neuroshard.shard<cols = 0 to 32, device = 0>,
              #neuroshard.shard<cols = 32 to 64, device = 2>]

  // CHECK: neuroshard.table @narrow : rows 10, dim 4, bf16 shards [#neuroshard.shard<cols = 0 to 4, device = 1>]
  neuroshard.table @narrow : rows 10, dim 4, bf16
      shards [#neuroshard.shard<cols = 0 to 4, device = 1>]

  // Row pieces, one of them two column pieces; a range of every row is
  // every row.
  // CHECK: neuroshard.table @rowwise : rows 1000, dim 16, f32 shards [#neuroshard.shard<rows = 0 to 300, cols = 0 to 16, device = 0>, #neuroshard.shard<rows = 300 to 1000, cols = 0 to 8, device = 1>, #neuroshard.shard<rows = 300 to 1000, cols = 8 to 16, device = 2>]
  neuroshard.table @rowwise : rows 1000, dim 16, f32
      shards [#neuroshard.shard<rows = 0 to 300, cols = 0 to 16, device = 0>,
              #neuroshard.shard<rows = 300 to 1000, cols = 0 to 8, device = 1>,
              #neuroshard.shard<rows = 300 to 1000, cols = 8 to 16, device = 2>]

  // CHECK: neuroshard.table @replicated : rows 50, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>, #neuroshard.shard<cols = 0 to 4, device = 1, replica>, #neuroshard.shard<cols = 0 to 4, device = 2, replica>]
  neuroshard.table @replicated : rows 50, dim 4, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>,
              #neuroshard.shard<cols = 0 to 4, device = 1, replica>,
              #neuroshard.shard<cols = 0 to 4, device = 2, replica>]

  // Tables in host memory: every shard has a device cache of some rows.
  // CHECK: neuroshard.table @hosted : rows 1000, dim 16, f32 shards [#neuroshard.shard<rows = 0 to 600, cols = 0 to 16, device = 0, cache_rows = 120>, #neuroshard.shard<rows = 600 to 1000, cols = 0 to 16, device = 1, cache_rows = 80>]
  neuroshard.table @hosted : rows 1000, dim 16, f32
      shards [#neuroshard.shard<rows = 0 to 600, cols = 0 to 16, device = 0, cache_rows = 120>,
              #neuroshard.shard<rows = 600 to 1000, cols = 0 to 16, device = 1, cache_rows = 80>]
  // CHECK: neuroshard.table @hosted_whole : rows 64, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 2, cache_rows = 64>]
  neuroshard.table @hosted_whole : rows 64, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 8, device = 2, cache_rows = 64>]

  // CHECK: neuroshard.table @pinned : rows 64, dim 8, f32 {no_split, pinned_device = 1 : i64}
  neuroshard.table @pinned : rows 64, dim 8, f32 {pinned_device = 1 : i64, no_split}

  // A table that is never hit has an all-zero histogram.
  // CHECK: neuroshard.table @cold : rows 5, dim 4, f32 {access_hist = array<f64: 0.000000e+00,
  neuroshard.table @cold : rows 5, dim 4, f32 {
    pooling_factor = 0.0 : f64,
    access_hist = array<f64: 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                             0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}

  // CHECK-LABEL: func.func @lookups
  func.func @lookups(%idx: tensor<?xi32>, %off: tensor<1025xi32>,
                     %idx64: tensor<?xi64>, %off64: tensor<1025xi64>)
      -> (tensor<1024x128xf32>, tensor<1024x64xf16>) {
    // CHECK: neuroshard.embedding_bag @user(%{{.*}}, %{{.*}}) sum : (tensor<?xi32>, tensor<1025xi32>) -> tensor<1024x128xf32>
    %0 = neuroshard.embedding_bag @user(%idx, %off) sum
        : (tensor<?xi32>, tensor<1025xi32>) -> tensor<1024x128xf32>
    // CHECK: neuroshard.embedding_bag @item(%{{.*}}, %{{.*}}) mean : (tensor<?xi64>, tensor<1025xi64>) -> tensor<1024x64xf16>
    %1 = neuroshard.embedding_bag @item(%idx64, %off64) mean
        : (tensor<?xi64>, tensor<1025xi64>) -> tensor<1024x64xf16>
    return %0, %1 : tensor<1024x128xf32>, tensor<1024x64xf16>
  }

  // CHECK-LABEL: func.func @fused
  func.func @fused(%idx: tensor<?xi32>, %off: tensor<9xi32>,
                   %idx64: tensor<?xi64>, %off64: tensor<9xi64>)
      -> tensor<8x24xf16> {
    // CHECK:      neuroshard.fused_embedding_bag device 2 [
    // CHECK-NEXT:   @item cols 32 to 64 sum(%{{.*}}, %{{.*}} : tensor<?xi64>, tensor<9xi64>),
    // CHECK-NEXT:   @item cols 32 to 64 mean(%{{.*}}, %{{.*}} : tensor<?xi32>, tensor<9xi32>)
    // CHECK-NEXT: ] : tensor<8x64xf16>
    %0 = neuroshard.fused_embedding_bag device 2 [
        @item cols 32 to 64 sum(%idx64, %off64 : tensor<?xi64>, tensor<9xi64>),
        @item cols 32 to 64 mean(%idx, %off : tensor<?xi32>, tensor<9xi32>)
      ] : tensor<8x64xf16>
    %1 = tensor.extract_slice %0[0, 0] [8, 24] [1, 1]
        : tensor<8x64xf16> to tensor<8x24xf16>
    return %1 : tensor<8x24xf16>
  }

  // CHECK-LABEL: func.func @exchange
  func.func @exchange(%a: tensor<10x96xf32>, %b: tensor<10x0xf32>,
                      %c: tensor<10x32xf32>)
      -> (tensor<4x128xf32>, tensor<3x128xf32>, tensor<3x128xf32>) {
    // CHECK: neuroshard.all_to_all %{{.*}}, %{{.*}}, %{{.*}} : tensor<10x96xf32>, tensor<10x0xf32>, tensor<10x32xf32> -> tensor<4x128xf32>, tensor<3x128xf32>, tensor<3x128xf32>
    %r:3 = neuroshard.all_to_all %a, %b, %c
        : tensor<10x96xf32>, tensor<10x0xf32>, tensor<10x32xf32>
        -> tensor<4x128xf32>, tensor<3x128xf32>, tensor<3x128xf32>
    return %r#0, %r#1, %r#2 : tensor<4x128xf32>, tensor<3x128xf32>, tensor<3x128xf32>
  }
}

// One rank's side of the exchange (the SPMD form).
// CHECK-LABEL: func.func @exchange
func.func @exchange(%a: tensor<10x96xf32>) -> tensor<3x128xf32> {
  // CHECK: neuroshard.exchange %{{.*}} rank 2 widths [96, 0, 32] batches [4, 3, 3] : tensor<10x32xf32> -> tensor<3x128xf32>
  %c = tensor.extract_slice %a[0, 0] [10, 32] [1, 1] : tensor<10x96xf32> to tensor<10x32xf32>
  %r = neuroshard.exchange %c rank 2 widths [96, 0, 32] batches [4, 3, 3] : tensor<10x32xf32> -> tensor<3x128xf32>
  return %r : tensor<3x128xf32>
}

// The backward direction of one rank's side, and the SGD update of a
// device's shards; the update has no result but must survive as a write.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @u : rows 100, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  // CHECK-LABEL: func.func @step_backward
  // CHECK-SAME: attributes {neuroshard.backward_of = @step}
  func.func @step_backward(%i: tensor<?xi64>, %o: tensor<9xi64>,
                           %g: tensor<4x8xf32>, %lr: f32) attributes {neuroshard.backward_of = @step} {
    // CHECK: %[[D:.+]] = neuroshard.exchange_gradient %{{.*}} rank 1 widths [4, 4] batches [4, 4] : tensor<4x8xf32> -> tensor<8x4xf32>
    %d = neuroshard.exchange_gradient %g rank 1 widths [4, 4] batches [4, 4]
        : tensor<4x8xf32> -> tensor<8x4xf32>
    // CHECK: neuroshard.fused_embedding_bag_sgd device 1 [
    // CHECK-NEXT: @u cols 4 to 8 mean(%{{.*}}, %{{.*}} : tensor<?xi64>, tensor<9xi64>)
    // CHECK-NEXT: ] gradient %[[D]] lr %{{.*}} : tensor<8x4xf32>
    neuroshard.fused_embedding_bag_sgd device 1 [
        @u cols 4 to 8 mean(%i, %o : tensor<?xi64>, tensor<9xi64>)
      ] gradient %d lr %lr : tensor<8x4xf32>
    return
  }
  func.func @step() { return }
}

// One rank's side of the reduce-scatter of row pieces, its backward
// all-gather, and the update of replicas that sums every rank's gradient.
module attributes {neuroshard.rank = 1 : i64, neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @s : rows 20, dim 4, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>,
              #neuroshard.shard<cols = 0 to 4, device = 1, replica>]
  // CHECK-LABEL: func.func @rank_side
  func.func @rank_side(%p: tensor<9x4xf32>, %o: tensor<10xi64>, %i: tensor<?xi64>,
                       %lr: f32) -> tensor<9x4xf32> {
    // CHECK: %[[S:.+]] = neuroshard.rank_reduce_scatter %{{.*}} mean(%{{.*}} : tensor<10xi64>) rank 1 batches [5, 4] : tensor<9x4xf32> -> tensor<4x4xf32>
    %s = neuroshard.rank_reduce_scatter %p mean(%o : tensor<10xi64>) rank 1
        batches [5, 4] : tensor<9x4xf32> -> tensor<4x4xf32>
    // CHECK: neuroshard.rank_reduce_scatter_gradient %[[S]] rank 1 batches [5, 4] : tensor<4x4xf32> -> tensor<9x4xf32>
    %g = neuroshard.rank_reduce_scatter_gradient %s rank 1 batches [5, 4]
        : tensor<4x4xf32> -> tensor<9x4xf32>
    %slice = tensor.extract_slice %o[5] [5] [1] : tensor<10xi64> to tensor<5xi64>
    // CHECK: ] gradient %{{.*}} lr %{{.*}} all_reduce : tensor<4x4xf32>
    neuroshard.fused_embedding_bag_sgd device 1 [
        @s cols 0 to 4 sum(%i, %slice : tensor<?xi64>, tensor<5xi64>)
      ] gradient %s lr %lr all_reduce : tensor<4x4xf32>
    return %g : tensor<9x4xf32>
  }
}

// The input and output distribution of a row-wise table: bucketized
// indices, row-piece entries that read local rows, and the reduce-scatter
// of their partial sums, with mean pooling divided after the sum.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @r : rows 100, dim 8, f32
      shards [#neuroshard.shard<rows = 0 to 40, cols = 0 to 8, device = 0>,
              #neuroshard.shard<rows = 40 to 100, cols = 0 to 8, device = 1>]
  // CHECK-LABEL: func.func @row_wise
  func.func @row_wise(%i: tensor<?xi32>, %o: tensor<5xi32>)
      -> (tensor<2x8xf32>, tensor<2x8xf32>) {
    // CHECK: %[[B:.+]]:2, %[[BO:.+]]:2 = neuroshard.bucketize %{{.*}}, %{{.*}} rows [0, 40, 100] : tensor<?xi32>, tensor<5xi32> -> (tensor<?xi32>, tensor<?xi32>), (tensor<5xi32>, tensor<5xi32>)
    %b:2, %bo:2 = neuroshard.bucketize %i, %o rows [0, 40, 100]
        : tensor<?xi32>, tensor<5xi32>
        -> (tensor<?xi32>, tensor<?xi32>), (tensor<5xi32>, tensor<5xi32>)
    // CHECK: neuroshard.fused_embedding_bag device 1 [
    // CHECK-NEXT: @r rows 40 to 100 cols 0 to 8 sum(%[[B]]#1, %[[BO]]#1 : tensor<?xi32>, tensor<5xi32>)
    // CHECK-NEXT: ] : tensor<4x8xf32>
    %p0 = neuroshard.fused_embedding_bag device 0 [
        @r rows 0 to 40 cols 0 to 8 sum(%b#0, %bo#0 : tensor<?xi32>, tensor<5xi32>)
      ] : tensor<4x8xf32>
    %p1 = neuroshard.fused_embedding_bag device 1 [
        @r rows 40 to 100 cols 0 to 8 sum(%b#1, %bo#1 : tensor<?xi32>, tensor<5xi32>)
      ] : tensor<4x8xf32>
    // CHECK: neuroshard.reduce_scatter %{{.*}}, %{{.*}} mean(%{{.*}} : tensor<5xi32>) : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<2x8xf32>, tensor<2x8xf32>
    %r:2 = neuroshard.reduce_scatter %p0, %p1 mean(%o : tensor<5xi32>)
        : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<2x8xf32>, tensor<2x8xf32>
    return %r#0, %r#1 : tensor<2x8xf32>, tensor<2x8xf32>
  }
}
