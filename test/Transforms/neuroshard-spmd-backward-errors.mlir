// RUN: neuroshard-opt %s --split-input-file --verify-diagnostics --neuroshard-spmd="rank=1" --neuroshard-spmd-backward

// A column returned twice would need its two gradients summed.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> (tensor<2x8xf32>, tensor<2x2xf32>) {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    // expected-error @below {{reads a value whose whole gradient another use gives; the backward form places gradients rather than summing them}}
    %s = tensor.extract_slice %x#1[0, 3] [2, 2] [1, 1] : tensor<2x8xf32> to tensor<2x2xf32>
    return %x#1, %s : tensor<2x8xf32>, tensor<2x2xf32>
  }
}

// -----

// A result computed from the exchanged columns by an operation the backward
// form does not differentiate.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> (tensor<2x8xf32>, tensor<8x2xf32>) {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    %t = tensor.empty() : tensor<8x2xf32>
    // expected-error @below {{computes a value the results depend on; the backward form differentiates lookups, collectives, tensor.extract_slice and tensor.concat only}}
    %e = linalg.transpose ins(%x#1 : tensor<2x8xf32>) outs(%t : tensor<8x2xf32>) permutation = [1, 0]
    return %x#1, %e : tensor<2x8xf32>, tensor<8x2xf32>
  }
}

// -----

// The backward function's name is taken.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  // expected-error @below {{needs the name 'f_backward' for its backward function, but the module already has that symbol}}
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<2x8xf32> {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    return %x#1 : tensor<2x8xf32>
  }
  func.func private @f_backward()
}
