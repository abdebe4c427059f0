// tiny.mlir with a table never hit (pooling factor 0, histogram all zero):
// every generated bag is empty.
module {
  neuroshard.table @t : rows 10, dim 4, f32 {pooling_factor = 0.0 : f64,
    access_hist = array<f64: 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%idx: tensor<?xi32>, %off: tensor<4xi32>) -> tensor<3x4xf32> {
    %0 = neuroshard.embedding_bag @t(%idx, %off) sum
        : (tensor<?xi32>, tensor<4xi32>) -> tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
}
