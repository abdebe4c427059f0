// mixed.mlir sharded by hand: @split has columns 0..16 and 48..64 on
// device 0 and 16..48 on device 1, so device 0 holds two pieces of it; the
// devices own 33 and 32 of the 65 bags.
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
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @split cols 0 to 16 sum(%si, %so : tensor<?xi32>, tensor<66xi32>),
        @split cols 48 to 64 sum(%si, %so : tensor<?xi32>, tensor<66xi32>),
        @long cols 0 to 16 mean(%li, %lo : tensor<?xi64>, tensor<66xi64>)
      ] : tensor<65x48xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @split cols 16 to 48 sum(%si, %so : tensor<?xi32>, tensor<66xi32>),
        @pinned cols 0 to 32 mean(%pi, %po : tensor<?xi32>, tensor<66xi32>)
      ] : tensor<65x64xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<65x48xf32>, tensor<65x64xf32>
        -> tensor<33x112xf32>, tensor<32x112xf32>
    %all = tensor.concat dim(0) %x#0, %x#1
        : (tensor<33x112xf32>, tensor<32x112xf32>) -> tensor<65x112xf32>
    %s0 = tensor.extract_slice %all[0, 0] [65, 16] [1, 1] : tensor<65x112xf32> to tensor<65x16xf32>
    %s1 = tensor.extract_slice %all[0, 48] [65, 32] [1, 1] : tensor<65x112xf32> to tensor<65x32xf32>
    %s2 = tensor.extract_slice %all[0, 16] [65, 16] [1, 1] : tensor<65x112xf32> to tensor<65x16xf32>
    %s = tensor.concat dim(1) %s0, %s1, %s2
        : (tensor<65x16xf32>, tensor<65x32xf32>, tensor<65x16xf32>) -> tensor<65x64xf32>
    %p = tensor.extract_slice %all[0, 80] [65, 32] [1, 1] : tensor<65x112xf32> to tensor<65x32xf32>
    %l = tensor.extract_slice %all[0, 32] [65, 16] [1, 1] : tensor<65x112xf32> to tensor<65x16xf32>
    return %s, %p, %l : tensor<65x64xf32>, tensor<65x32xf32>, tensor<65x16xf32>
  }
}
