// Plans made elsewhere materialize and compute what the unsharded module
// does: neuroshard-plan's JSON and its TorchRec export of the same tables.
// RUN: neuroshard-plan %S/../neuroshard-plan/Inputs/mixed.json --devices 2 --memory-gb 1 \
// RUN:   --cost-model analytical -o %t.plan.json
// RUN: neuroshard-plan %S/../neuroshard-plan/Inputs/mixed.json --devices 2 --memory-gb 1 \
// RUN:   --cost-model analytical --format torchrec -o %t.torchrec.json
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t.plan.json" | FileCheck %s --check-prefix=IMPORTED
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t.plan.json" --neuroshard-materialize -o %t.json.mlir
// RUN: neuroshard-run %s --compare %t.json.mlir --backward | FileCheck %s --check-prefix=MATCH
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t.torchrec.json" --neuroshard-materialize -o %t.torchrec.mlir
// RUN: neuroshard-run %s --compare %t.torchrec.mlir --backward | FileCheck %s --check-prefix=MATCH
// Both give the tables the shards --neuroshard-shard gives them.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical" | grep neuroshard.table > %t.shard.tables
// RUN: grep neuroshard.table %t.json.mlir > %t.json.tables
// RUN: grep neuroshard.table %t.torchrec.mlir > %t.torchrec.tables
// RUN: diff %t.shard.tables %t.json.tables
// RUN: diff %t.shard.tables %t.torchrec.tables
//
// A hand-written plan needs only the devices and the shards.
// RUN: echo '{"devices": 2, "shards": [{"table": "split", "col_begin": 0, "col_end": 32, "device": 0}, {"table": "split", "col_begin": 32, "col_end": 64, "device": 1}, {"table": "pinned", "col_begin": 0, "col_end": 32, "device": 1}, {"table": "long", "col_begin": 0, "col_end": 16, "device": 0}]}' > %t.hand.json
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t.hand.json" --neuroshard-materialize -o %t.hand.mlir
// RUN: FileCheck %s --check-prefix=HAND < %t.hand.mlir
// RUN: neuroshard-run %s --compare %t.hand.mlir --backward | FileCheck %s --check-prefix=MATCH
//
// The exported TorchRec plan of an imported module is the file it came from.
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t.torchrec.json" \
// RUN:   --neuroshard-export-plan="format=torchrec output=%t.again.json" -o /dev/null
// RUN: diff %t.torchrec.json %t.again.json

// IMPORTED-NOT: neuroshard.plan
// IMPORTED: neuroshard.table @pinned : rows 300, dim 32, f32 shards [#neuroshard.shard<cols = 0 to 32, device = 1>]
// IMPORTED: neuroshard.embedding_bag @split

// MATCH: max relative difference 0.00E+00 (outputs), 0.00E+00 (updated weights), tolerance 1.0E-05: match

// HAND: neuroshard.fused_embedding_bag device 0 [
// HAND-NEXT: @split cols 0 to 32 sum
// HAND-NEXT: @long cols 0 to 16 mean
// HAND: neuroshard.fused_embedding_bag device 1 [
// HAND-NEXT: @split cols 32 to 64 sum
// HAND-NEXT: @pinned cols 0 to 32 mean

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
