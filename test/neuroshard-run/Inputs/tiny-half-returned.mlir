// A table of 8 columns split over two devices, with only device 0's columns
// returned: the other columns are looked up but reach no result.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>] {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%idx: tensor<?xi32>, %off: tensor<4xi32>) -> tensor<3x4xf32> {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%idx, %off : tensor<?xi32>, tensor<4xi32>)] : tensor<3x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%idx, %off : tensor<?xi32>, tensor<4xi32>)] : tensor<3x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<3x4xf32>, tensor<3x4xf32>
        -> tensor<2x8xf32>, tensor<1x8xf32>
    %all = tensor.concat dim(0) %x#0, %x#1 : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<3x8xf32>
    %r = tensor.extract_slice %all[0, 0] [3, 4] [1, 1] : tensor<3x8xf32> to tensor<3x4xf32>
    return %r : tensor<3x4xf32>
  }
}
