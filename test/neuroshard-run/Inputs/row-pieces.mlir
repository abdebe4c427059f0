// Tables for row pieces and replicas: sum and mean pooling, i32 and i64
// indices, a table of few lookups (many bags empty in every row block) and
// 65 bags over 3 devices, so the batch does not split evenly.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 3, memory_gb = 1.0>} {
  neuroshard.table @rows : rows 500, dim 16, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 0.5, 0.3, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @grid : rows 400, dim 16, f32 {pooling_factor = 3.0 : f64,
    access_hist = array<f64: 0.6, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @sparse : rows 300, dim 16, f32 {pooling_factor = 1.0 : f64,
    access_hist = array<f64: 0.8, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @small : rows 50, dim 8, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 0.3, 0.3, 0.3, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @whole : rows 100, dim 8, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @embed(%ri: tensor<?xi32>, %ro: tensor<66xi32>,
                   %gi: tensor<?xi64>, %go: tensor<66xi64>,
                   %si: tensor<?xi32>, %so: tensor<66xi32>,
                   %mi: tensor<?xi64>, %mo: tensor<66xi64>,
                   %wi: tensor<?xi32>, %wo: tensor<66xi32>)
      -> (tensor<65x16xf32>, tensor<65x16xf32>, tensor<65x16xf32>,
          tensor<65x8xf32>, tensor<65x8xf32>) {
    %r = neuroshard.embedding_bag @rows(%ri, %ro) sum
        : (tensor<?xi32>, tensor<66xi32>) -> tensor<65x16xf32>
    %g = neuroshard.embedding_bag @grid(%gi, %go) mean
        : (tensor<?xi64>, tensor<66xi64>) -> tensor<65x16xf32>
    %s = neuroshard.embedding_bag @sparse(%si, %so) mean
        : (tensor<?xi32>, tensor<66xi32>) -> tensor<65x16xf32>
    %m = neuroshard.embedding_bag @small(%mi, %mo) mean
        : (tensor<?xi64>, tensor<66xi64>) -> tensor<65x8xf32>
    %w = neuroshard.embedding_bag @whole(%wi, %wo) sum
        : (tensor<?xi32>, tensor<66xi32>) -> tensor<65x8xf32>
    return %r, %g, %s, %m, %w : tensor<65x16xf32>, tensor<65x16xf32>,
        tensor<65x16xf32>, tensor<65x8xf32>, tensor<65x8xf32>
  }
}
