// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical" | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical devices=3 memory-gb=0.5,0.5,4" | FileCheck %s --check-prefix=HETERO

// Pinned tables stay on their device and no_split tables stay whole even
// when the search would gain from splitting them.
// CHECK: neuroshard.table @hot : rows 100000, dim 256, f32 shards [#neuroshard.shard<cols = 0 to 256, device = 1>]
// CHECK: neuroshard.table @whole : rows 100000, dim 256, f32 shards [#neuroshard.shard<cols = 0 to 256, device = {{[0-9]}}>]
// CHECK: neuroshard.table @pinned : rows 10, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0>]

// Heterogeneous memory: only device 2 can hold a 1.5 GB table.
// HETERO: #neuroshard.topology<devices = 3, memory_gb = [0.5, 0.5, 4.0]>
// HETERO: neuroshard.table @huge : rows 3000000, dim 128, f32 shards [#neuroshard.shard<cols = 0 to 128, device = 2>]
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 16.0>} {
  neuroshard.table @hot : rows 100000, dim 256, f32 {pooling_factor = 100.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, pinned_device = 1 : i64}
  neuroshard.table @whole : rows 100000, dim 256, f32 {pooling_factor = 100.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, no_split}
  neuroshard.table @pinned : rows 10, dim 4, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.0, 0.0, 0.2, 0.6, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, pinned_device = 0 : i64}
  neuroshard.table @huge : rows 3000000, dim 128, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, no_split}
  func.func @f(%i: tensor<?xi32>, %o: tensor<65xi32>)
      -> (tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x4xf32>, tensor<64x128xf32>) {
    %0 = neuroshard.embedding_bag @hot(%i, %o) sum : (tensor<?xi32>, tensor<65xi32>) -> tensor<64x256xf32>
    %1 = neuroshard.embedding_bag @whole(%i, %o) sum : (tensor<?xi32>, tensor<65xi32>) -> tensor<64x256xf32>
    %2 = neuroshard.embedding_bag @pinned(%i, %o) sum : (tensor<?xi32>, tensor<65xi32>) -> tensor<64x4xf32>
    %3 = neuroshard.embedding_bag @huge(%i, %o) sum : (tensor<?xi32>, tensor<65xi32>) -> tensor<64x128xf32>
    return %0, %1, %2, %3 : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x4xf32>, tensor<64x128xf32>
  }
}
