// Two row pieces of a mean table on 2 devices, each reading the bucket of
// its rows. errors.test swaps what the entries read.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 4, f32 shards [
      #neuroshard.shard<rows = 0 to 5, cols = 0 to 4, device = 0>,
      #neuroshard.shard<rows = 5 to 10, cols = 0 to 4, device = 1>]
      {pooling_factor = 3.0 : f64,
       access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi64>, %o: tensor<5xi64>) -> tensor<4x4xf32> {
    %bi:2, %bo:2 = neuroshard.bucketize %i, %o rows [0, 5, 10]
        : tensor<?xi64>, tensor<5xi64> -> (tensor<?xi64>, tensor<?xi64>), (tensor<5xi64>, tensor<5xi64>)
    %p0 = neuroshard.fused_embedding_bag device 0 [
      @t rows 0 to 5 cols 0 to 4 sum(%bi#0, %bo#0 : tensor<?xi64>, tensor<5xi64>)
    ] : tensor<4x4xf32>
    %p1 = neuroshard.fused_embedding_bag device 1 [
      @t rows 5 to 10 cols 0 to 4 sum(%bi#1, %bo#1 : tensor<?xi64>, tensor<5xi64>)
    ] : tensor<4x4xf32>
    %s0 = tensor.extract_slice %p0[0, 0] [4, 4] [1, 1] : tensor<4x4xf32> to tensor<4x4xf32>
    %s1 = tensor.extract_slice %p1[0, 0] [4, 4] [1, 1] : tensor<4x4xf32> to tensor<4x4xf32>
    %r:2 = neuroshard.reduce_scatter %s0, %s1 mean(%o : tensor<5xi64>)
        : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
    %all = tensor.concat dim(0) %r#0, %r#1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    return %all : tensor<4x4xf32>
  }
}
