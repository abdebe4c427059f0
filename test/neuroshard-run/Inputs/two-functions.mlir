// Two public functions: neuroshard-run needs --entry.
module {
  neuroshard.table @t : rows 10, dim 4, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @a(%idx: tensor<?xi64>, %off: tensor<3xi64>) -> tensor<2x4xf32> {
    %0 = neuroshard.embedding_bag @t(%idx, %off) sum
        : (tensor<?xi64>, tensor<3xi64>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
  func.func @b(%idx: tensor<?xi64>, %off: tensor<3xi64>) -> tensor<2x4xf32> {
    %0 = neuroshard.embedding_bag @t(%idx, %off) mean
        : (tensor<?xi64>, tensor<3xi64>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}
