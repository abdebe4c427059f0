// A table without statistics: its inputs cannot be generated.
module {
  neuroshard.table @t : rows 10, dim 4, f32
  func.func @f(%idx: tensor<?xi64>, %off: tensor<3xi64>) -> tensor<2x4xf32> {
    %0 = neuroshard.embedding_bag @t(%idx, %off) sum
        : (tensor<?xi64>, tensor<3xi64>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}
