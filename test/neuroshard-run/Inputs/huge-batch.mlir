// One small table looked up by a batch of 2^28 bags: its inputs and outputs
// need gigabytes.
module {
  neuroshard.table @t : rows 10, dim 4, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0>}
  func.func @f(%idx: tensor<?xi64>, %off: tensor<268435457xi64>) -> tensor<268435456x4xf32> {
    %0 = neuroshard.embedding_bag @t(%idx, %off) sum
        : (tensor<?xi64>, tensor<268435457xi64>) -> tensor<268435456x4xf32>
    return %0 : tensor<268435456x4xf32>
  }
}
