// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=table-greedy-grid" | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical" | neuroshard-opt | FileCheck %s --check-prefix=VALID
// The pass reports the search's steps on stderr when asked.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical max-steps=2 progress=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROGRESS
// PROGRESS: search: level 0 of 2, 1 states priced, best {{[0-9.]+}} ms, {{[0-9.]+}} s
// PROGRESS: search: level {{[12]}} of 2,

// VALID: module attributes {neuroshard.plan = {algorithm = "neuroshard"

// Three whole tables on two devices: each table gets one shard, each device
// one fused lookup, and every result comes back through the exchange.
// CHECK-LABEL: module attributes {neuroshard.plan = {algorithm = "table-greedy-grid", cost_model = "analytical", cost_model_description = "analytical bandwidth model ({{.*}}batch 16{{.*}})", cost_ms = {{.*}}, lower_bound = {hardest_table = {{[0-9]}} : i64, ms = {{.*}}, piece_ms = {{.*}}, work_ms = {{.*}}}, optimizer = "sgd", per_device = [{bw_comm_ms = {{.*}}, device = 0 : i64, {{.*}}}, {{{.*}}device = 1 : i64{{.*}}}], reserved_fraction = 0.000000e+00 : f64, search = {cache_hits = {{[0-9]+}} : i64, cost_queries = {{[0-9]+}} : i64, greedy_runs = 12 : i64, model_calls = {{[0-9]+}} : i64, moves_taken = 0 : i64, moves_tried = 0 : i64, states_explored = 1 : i64, time_ms = {{.*}}}, table_compute_ms = array<f64: {{.*}}>, warnings = []}
// CHECK: neuroshard.table @a : rows 1000, dim 64, f32 shards [#neuroshard.shard<cols = 0 to 64, device = [[DA:[01]]]>]
// CHECK: neuroshard.table @b : rows 1000, dim 32, f32 shards [#neuroshard.shard<cols = 0 to 32, device = [[DB:[01]]]>]
// CHECK: neuroshard.table @c : rows 1000, dim 32, f32 shards [#neuroshard.shard<cols = 0 to 32, device = [[DC:[01]]]>]
// CHECK-LABEL: func.func @three
// CHECK-NOT: neuroshard.embedding_bag
// CHECK: %[[F0:.*]] = neuroshard.fused_embedding_bag device 0 [
// CHECK: ] : tensor<16x64xf32>
// CHECK: %[[F1:.*]] = neuroshard.fused_embedding_bag device 1 [
// CHECK: ] : tensor<16x64xf32>
// CHECK: %[[X:.*]]:2 = neuroshard.all_to_all %[[F0]], %[[F1]] : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<8x128xf32>, tensor<8x128xf32>
// CHECK: %[[ALL:.*]] = tensor.concat dim(0) %[[X]]#0, %[[X]]#1 : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<16x128xf32>
// CHECK-DAG: %[[A:.*]] = tensor.extract_slice %[[ALL]][0, {{[0-9]+}}] [16, 64] [1, 1]
// CHECK-DAG: %[[B:.*]] = tensor.extract_slice %[[ALL]][0, {{[0-9]+}}] [16, 32] [1, 1]
// CHECK-DAG: %[[C:.*]] = tensor.extract_slice %[[ALL]][0, {{[0-9]+}}] [16, 32] [1, 1]
// CHECK: return %[[A]], %[[B]], %[[C]]
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 1000, dim 64, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 1000, dim 32, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @c : rows 1000, dim 32, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @three(%i: tensor<?xi32>, %o: tensor<17xi32>)
      -> (tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x64xf32>
    %b = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    %c = neuroshard.embedding_bag @c(%i, %o) mean : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    return %a, %b, %c : tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>
  }
}
