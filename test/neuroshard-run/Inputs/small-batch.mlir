// Three bags for eight devices: five devices own no rows of the batch.
module {
  neuroshard.table @a : rows 30, dim 8, f32 {pooling_factor = 2.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 20, dim 16, f32 {pooling_factor = 3.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<4xi32>, %j: tensor<?xi64>, %p: tensor<4xi64>) -> (tensor<3x8xf32>, tensor<3x16xf32>) {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<4xi32>) -> tensor<3x8xf32>
    %1 = neuroshard.embedding_bag @b(%j, %p) mean : (tensor<?xi64>, tensor<4xi64>) -> tensor<3x16xf32>
    return %0, %1 : tensor<3x8xf32>, tensor<3x16xf32>
  }
}
