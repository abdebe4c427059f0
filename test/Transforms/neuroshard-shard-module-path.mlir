// Tables carry their model names in module_path; plans and reports use them.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical devices=2 plan-table=%t.table plan-out=%t.json torchrec-out=%t.torchrec.json" \
// RUN:   | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=TABLE < %t.table
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=TORCHREC < %t.torchrec.json
// Two tables with one module path are refused by name.
// RUN: sed 's/"sparse.item_id"/"sparse.user_id"/' %s \
// RUN:   | not neuroshard-opt --neuroshard-shard="cost-model=analytical devices=2" 2>&1 | FileCheck %s --check-prefix=DUP

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @sparse_user_id : rows 1000, dim 16, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>,
    module_path = "sparse.user_id"}
  neuroshard.table @sparse_item_id : rows 500, dim 8, f32 {pooling_factor = 1.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>,
    module_path = "sparse.item_id"}
  func.func @embed(%i0: tensor<?xi32>, %o0: tensor<9xi32>, %i1: tensor<?xi32>, %o1: tensor<9xi32>)
      -> (tensor<8x16xf32>, tensor<8x8xf32>) {
    %a = neuroshard.embedding_bag @sparse_user_id(%i0, %o0) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x16xf32>
    %b = neuroshard.embedding_bag @sparse_item_id(%i1, %o1) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
    return %a, %b : tensor<8x16xf32>, tensor<8x8xf32>
  }
}

// The symbols stay; the attribute survives sharding.
// IR: neuroshard.table @sparse_user_id : rows 1000, dim 16, f32 shards
// IR-SAME: module_path = "sparse.user_id"
// IR: @sparse_user_id cols

// TABLE: sparse.user_id
// TABLE-NOT: sparse_user_id
// JSON: "sparse.user_id"
// JSON-NOT: "sparse_user_id"
// TORCHREC-DAG: "sparse.item_id": {
// TORCHREC-DAG: "sparse.user_id": {
// TORCHREC-NOT: sparse_

// DUP: ('sparse.user_id'): the name is already used by tables[0]
