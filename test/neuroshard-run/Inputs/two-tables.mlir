// Two tables, one looked up twice (sum and mean), i64 and i32 inputs.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @user : rows 5000, dim 64, f32 {pooling_factor = 8.0 : f64,
    access_hist = array<f64: 0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01, 0.02, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @item : rows 800, dim 36, f32 {pooling_factor = 3.5 : f64,
    access_hist = array<f64: 0.2, 0.3, 0.3, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @embeddings(%i0: tensor<?xi64>, %o0: tensor<129xi64>,
                        %i1: tensor<?xi32>, %o1: tensor<129xi32>,
                        %i2: tensor<?xi64>, %o2: tensor<129xi64>)
      -> (tensor<128x64xf32>, tensor<128x36xf32>, tensor<128x64xf32>) {
    %0 = neuroshard.embedding_bag @user(%i0, %o0) sum
        : (tensor<?xi64>, tensor<129xi64>) -> tensor<128x64xf32>
    %1 = neuroshard.embedding_bag @item(%i1, %o1) mean
        : (tensor<?xi32>, tensor<129xi32>) -> tensor<128x36xf32>
    %2 = neuroshard.embedding_bag @user(%i2, %o2) mean
        : (tensor<?xi64>, tensor<129xi64>) -> tensor<128x64xf32>
    return %0, %1, %2 : tensor<128x64xf32>, tensor<128x36xf32>, tensor<128x64xf32>
  }
}
