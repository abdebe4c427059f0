// RUN: neuroshard-opt %s --split-input-file --verify-diagnostics --neuroshard-spmd=rank=0

// expected-error @below {{has no neuroshard.all_to_all; shard it with --neuroshard-shard first}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  func.func @f() { return }
}

// -----

// expected-error @below {{has no #neuroshard.topology; shard it with --neuroshard-shard first}}
module {
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32 {pooling_factor = 1.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    // expected-error @below {{is a lookup of an unsharded table; shard the module with --neuroshard-shard first}}
    %r = neuroshard.embedding_bag @t(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %r : tensor<4x8xf32>
  }
}

// -----

// Rank 0 may not use device 1's rows.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<2x8xf32> {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    // expected-error @below {{result 1 (device 1's rows) is used, but rank 0 owns only its own rows}}
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    return %x#1 : tensor<2x8xf32>
  }
}

// -----

// Slices of part of the batch cannot be restricted to a rank's rows.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<1x8xf32> {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    %all = tensor.concat dim(0) %x#0, %x#1 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
    // expected-error @below {{takes part of the batch's rows of the exchanged columns; the SPMD form needs slices of whole rows}}
    %s = tensor.extract_slice %all[1, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    return %s : tensor<1x8xf32>
  }
}

// -----

// Anything but slices, column concatenations and returns after the exchange.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    %all = tensor.concat dim(0) %x#0, %x#1 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
    // expected-error @below {{uses the exchanged columns; after the exchange the SPMD form supports tensor.extract_slice, tensor.concat and func.return only}}
    %n = arith.negf %all : tensor<4x8xf32>
    return %n : tensor<4x8xf32>
  }
}
