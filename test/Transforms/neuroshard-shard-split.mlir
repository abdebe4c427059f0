// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical sharding-types=table_wise,column_wise" | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical" | FileCheck %s --check-prefix=ROWS
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=table-greedy-grid" 2>&1 | FileCheck %s --check-prefix=WHOLE

// A table larger than any device (1.19 GB on 1 GB devices) is split in
// halves; a table-wise algorithm cannot place it. With whole tables and
// column pieces alone, the halves are column halves, which the lowering
// joins back with a concat; with every type, they are row blocks.
// CHECK: neuroshard.table @big : rows 5000000, dim 64, f32 shards [#neuroshard.shard<cols = 0 to 32, device = {{[01]}}>, #neuroshard.shard<cols = 32 to 64, device = {{[01]}}>]
// CHECK-LABEL: func.func @split
// CHECK: %[[X:.*]]:2 = neuroshard.all_to_all
// CHECK: %[[ALL:.*]] = tensor.concat dim(0) %[[X]]#0, %[[X]]#1
// CHECK-DAG: %[[LO:.*]] = tensor.extract_slice %[[ALL]][0, {{[0-9]+}}] [8, 32] [1, 1]
// CHECK-DAG: %[[HI:.*]] = tensor.extract_slice %[[ALL]][0, {{[0-9]+}}] [8, 32] [1, 1]
// CHECK: %[[R:.*]] = tensor.concat dim(1) %[[LO]], %[[HI]] : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
// CHECK: return %[[R]] : tensor<8x64xf32>

// ROWS: neuroshard.table @big : rows 5000000, dim 64, f32 shards [#neuroshard.shard<rows = 0 to 2500000, cols = 0 to 64, device = {{[01]}}>, #neuroshard.shard<rows = 2500000 to 5000000, cols = 0 to 64, device = {{[01]}}>]

// WHOLE: error: table 'big' needs 1.19 GB but the largest device has 1.00 GB
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @big : rows 5000000, dim 64, f32 {pooling_factor = 4.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @split(%i: tensor<?xi64>, %o: tensor<9xi64>) -> tensor<8x64xf32> {
    %0 = neuroshard.embedding_bag @big(%i, %o) sum : (tensor<?xi64>, tensor<9xi64>) -> tensor<8x64xf32>
    return %0 : tensor<8x64xf32>
  }
}
