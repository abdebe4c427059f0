// One lookup of a shared table with statistics of its own, one without.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @shared : rows 1000, dim 16, f32 {pooling_factor = 8.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i0: tensor<?xi32>, %o0: tensor<9xi32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %a = neuroshard.embedding_bag @shared(%i0, %o0) sum {pooling_factor = 8.0 : f64,
      access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
      : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x16xf32>
    %b = neuroshard.embedding_bag @shared(%i0, %o0) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x16xf32>
    return %a, %b : tensor<8x16xf32>, tensor<8x16xf32>
  }
}
