// Three tables, two lookups of @big: the inputs of host-memory-cache.test.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 0.0002>} {
  neuroshard.table @big : rows 4000, dim 32, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 0.5, 0.2, 0.12, 0.08, 0.05, 0.03, 0.02, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @rows : rows 3000, dim 16, f32 {pooling_factor = 6.0 : f64,
    access_hist = array<f64: 0.6, 0.3, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @small : rows 500, dim 16, f32 {pooling_factor = 3.0 : f64,
    access_hist = array<f64: 0.7, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @embed(%ai: tensor<?xi32>, %ao: tensor<65xi32>,
                   %bi: tensor<?xi64>, %bo: tensor<65xi64>,
                   %ri: tensor<?xi64>, %ro: tensor<65xi64>,
                   %si: tensor<?xi64>, %so: tensor<65xi64>)
      -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x16xf32>, tensor<64x16xf32>) {
    %a = neuroshard.embedding_bag @big(%ai, %ao) sum
        : (tensor<?xi32>, tensor<65xi32>) -> tensor<64x32xf32>
    %b = neuroshard.embedding_bag @big(%bi, %bo) mean
        : (tensor<?xi64>, tensor<65xi64>) -> tensor<64x32xf32>
    %r = neuroshard.embedding_bag @rows(%ri, %ro) mean
        : (tensor<?xi64>, tensor<65xi64>) -> tensor<64x16xf32>
    %s = neuroshard.embedding_bag @small(%si, %so) sum
        : (tensor<?xi64>, tensor<65xi64>) -> tensor<64x16xf32>
    return %a, %b, %r, %s : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x16xf32>, tensor<64x16xf32>
  }
}
