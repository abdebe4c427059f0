// Three tables with what a distributed run must get right: a table the
// planner may split, a table pinned to device 1, mean pooling and i64
// indices; 65 bags, so the batch does not split evenly.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @split : rows 500, dim 64, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 0.5, 0.3, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @pinned : rows 300, dim 32, f32 {pinned_device = 1 : i64, pooling_factor = 2.5 : f64,
    access_hist = array<f64: 0.7, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @long : rows 400, dim 16, f32 {pooling_factor = 3.0 : f64,
    access_hist = array<f64: 0.6, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @embed(%si: tensor<?xi32>, %so: tensor<66xi32>,
                   %pi: tensor<?xi32>, %po: tensor<66xi32>,
                   %li: tensor<?xi64>, %lo: tensor<66xi64>)
      -> (tensor<65x64xf32>, tensor<65x32xf32>, tensor<65x16xf32>) {
    %s = neuroshard.embedding_bag @split(%si, %so) sum
        : (tensor<?xi32>, tensor<66xi32>) -> tensor<65x64xf32>
    %p = neuroshard.embedding_bag @pinned(%pi, %po) mean
        : (tensor<?xi32>, tensor<66xi32>) -> tensor<65x32xf32>
    %l = neuroshard.embedding_bag @long(%li, %lo) mean
        : (tensor<?xi64>, tensor<66xi64>) -> tensor<65x16xf32>
    return %s, %p, %l : tensor<65x64xf32>, tensor<65x32xf32>, tensor<65x16xf32>
  }
}
