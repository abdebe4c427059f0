// RUN: neuroshard-opt %s --split-input-file --verify-diagnostics --neuroshard-spmd=rank=0

// expected-error @below {{has no neuroshard.all_to_all, neuroshard.reduce_scatter or lookups of replicas; shard it with --neuroshard-shard first}}
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

// -----

// Partial sums that no fused lookup computes: no rank can be told to give
// them.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 4, f32
      shards [#neuroshard.shard<rows = 0 to 5, cols = 0 to 4, device = 0>,
              #neuroshard.shard<rows = 5 to 10, cols = 0 to 4, device = 1>]
  func.func @f(%p: tensor<4x4xf32>) -> tensor<4x4xf32> {
    // expected-error @below {{sums input 0, which is not columns of a fused lookup; the SPMD form cannot tell which rank computes it}}
    %r:2 = neuroshard.reduce_scatter %p : tensor<4x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
    %all = tensor.concat dim(0) %r#0, %r#1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    return %all : tensor<4x4xf32>
  }
}

// -----

// Two partial sums of one device.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 4, f32
      shards [#neuroshard.shard<rows = 0 to 5, cols = 0 to 4, device = 0>,
              #neuroshard.shard<rows = 5 to 10, cols = 0 to 4, device = 0>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x4xf32> {
    %b:2, %bo:2 = neuroshard.bucketize %i, %o rows [0, 5, 10] : tensor<?xi32>, tensor<5xi32> -> (tensor<?xi32>, tensor<?xi32>), (tensor<5xi32>, tensor<5xi32>)
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t rows 0 to 5 cols 0 to 4 sum(%b#0, %bo#0 : tensor<?xi32>, tensor<5xi32>),
        @t rows 5 to 10 cols 0 to 4 sum(%b#1, %bo#1 : tensor<?xi32>, tensor<5xi32>)] : tensor<4x8xf32>
    %p0 = tensor.extract_slice %d0[0, 0] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
    %p1 = tensor.extract_slice %d0[0, 4] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
    // expected-error @below {{sums two partial lookups of device 0; the SPMD form needs one per device}}
    %r:2 = neuroshard.reduce_scatter %p0, %p1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
    %all = tensor.concat dim(0) %r#0, %r#1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    return %all : tensor<4x4xf32>
  }
}

// -----

// Replicas' slices of the batch stacked out of device order.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 4, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>,
              #neuroshard.shard<cols = 0 to 4, device = 1, replica>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x4xf32> {
    %o0 = tensor.extract_slice %o[0] [3] [1] : tensor<5xi32> to tensor<3xi32>
    %o1 = tensor.extract_slice %o[2] [3] [1] : tensor<5xi32> to tensor<3xi32>
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o0 : tensor<?xi32>, tensor<3xi32>)] : tensor<2x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 0 to 4 sum(%i, %o1 : tensor<?xi32>, tensor<3xi32>)] : tensor<2x4xf32>
    // expected-error @below {{stacks the lookups of a replicated table otherwise than in device order; the SPMD form cannot tell which rows rank 0 owns}}
    %all = tensor.concat dim(0) %d1, %d0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    return %all : tensor<4x4xf32>
  }
}
