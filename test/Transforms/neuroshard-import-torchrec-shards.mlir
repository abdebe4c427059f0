// TorchRec's planner gives a rank without rows an empty shard when it splits
// a table of fewer rows than ranks by rows (here 10 rows in blocks of 2 over
// 8 ranks: rows [10, 10) on ranks 5 to 7). Such shards hold nothing: the
// plan is read without them, with a note, and priced and materialized like
// any other. TorchRec's table_column_wise reads as column pieces;
// grid_shard, which cuts blocks of rows and columns at once, is refused by
// name.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/torchrec_plan.py rows > %t/rows.json
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t/rows.json" 2>&1 | FileCheck %s --check-prefix=IMPORTED
// IMPORTED: remark: TorchRec plan: table 'tiny': dropped 3 empty shards, which hold no rows or no columns: shards[5] (rows [10, 10), columns [0, 16)), shards[6] (rows [10, 10), columns [0, 16)), shards[7] (rows [10, 10), columns [0, 16))
// IMPORTED: neuroshard.table @tiny : rows 10, dim 16, f32 shards [#neuroshard.shard<rows = 0 to 2, cols = 0 to 16, device = 0>, #neuroshard.shard<rows = 2 to 4, cols = 0 to 16, device = 1>, #neuroshard.shard<rows = 4 to 6, cols = 0 to 16, device = 2>, #neuroshard.shard<rows = 6 to 8, cols = 0 to 16, device = 3>, #neuroshard.shard<rows = 8 to 10, cols = 0 to 16, device = 4>]
// IMPORTED: neuroshard.table @wide : rows 400, dim 64, f32 shards [#neuroshard.shard<cols = 0 to 32, device = 6>, #neuroshard.shard<cols = 32 to 64, device = 7>]

// The materialized module computes what the unsharded one does (row blocks
// sum their bags in another order, within the tolerance).
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t/rows.json" --neuroshard-materialize -o %t/rows.mlir 2>/dev/null
// RUN: neuroshard-run %s --compare %t/rows.mlir --backward | FileCheck %s --check-prefix=MATCH
// MATCH: max relative difference {{[0-9.]+E[-+][0-9]+}} (outputs), {{[0-9.]+E[-+][0-9]+}} (updated weights), tolerance 1.0E-05: match

// neuroshard-plan prices the same plan, with the note among its warnings.
// RUN: neuroshard-plan %S/Inputs/torchrec-tiny-task.json --devices 8 --memory-gb 1 \
// RUN:   --cost-model analytical --price %t/rows.json -o %t/priced.json 2>&1 | FileCheck %s --check-prefix=PRICED
// PRICED: neuroshard-plan: warning: TorchRec plan: table 'tiny': dropped 3 empty shards
// RUN: FileCheck %s --check-prefix=PRICED-JSON < %t/priced.json
// PRICED-JSON: "warnings": [
// PRICED-JSON-NEXT: "TorchRec plan: table 'tiny': dropped 3 empty shards
// PRICED-JSON: "cost_ms":

// A table whose every shard is empty is on no device, which is refused.
// RUN: %python %S/Inputs/torchrec_plan.py all-empty > %t/all-empty.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t/all-empty.json" 2>&1 | FileCheck %s --check-prefix=ALL-EMPTY
// ALL-EMPTY: error: {{.*}}all-empty.json: table 'tiny': {{.*}}on no device

// RUN: %python %S/Inputs/torchrec_plan.py grid > %t/grid.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t/grid.json" 2>&1 | FileCheck %s --check-prefix=GRID
// GRID: error: {{.*}}grid.json: TorchRec plan: table 'wide': 'sharding_type' is "grid_shard", which cuts the table into blocks of rows and columns at once; NeuroShard's plans split a table by columns or by rows, not both, so this plan cannot be priced or materialized: plan the table with another sharding type

module attributes {neuroshard.topology = #neuroshard.topology<devices = 8, memory_gb = 1.0>} {
  neuroshard.table @tiny : rows 10, dim 16, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @wide : rows 400, dim 64, f32 {pooling_factor = 3.0 : f64,
    access_hist = array<f64: 0.6, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @embed(%ti: tensor<?xi32>, %to: tensor<33xi32>,
                   %wi: tensor<?xi64>, %wo: tensor<33xi64>)
      -> (tensor<32x16xf32>, tensor<32x64xf32>) {
    %t = neuroshard.embedding_bag @tiny(%ti, %to) sum
        : (tensor<?xi32>, tensor<33xi32>) -> tensor<32x16xf32>
    %w = neuroshard.embedding_bag @wide(%wi, %wo) mean
        : (tensor<?xi64>, tensor<33xi64>) -> tensor<32x64xf32>
    return %t, %w : tensor<32x16xf32>, tensor<32x64xf32>
  }
}
