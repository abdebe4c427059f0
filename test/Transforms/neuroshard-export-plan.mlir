// --neuroshard-export-plan writes the recorded plan and changes nothing.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical algorithm=table-greedy-grid" -o %t.planned.mlir
// RUN: neuroshard-opt %t.planned.mlir --neuroshard-export-plan="format=json output=%t.json" -o %t.same.mlir
// RUN: diff %t.planned.mlir %t.same.mlir
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: neuroshard-opt %t.planned.mlir --neuroshard-export-plan="format=table" -o /dev/null | FileCheck %s --check-prefix=TABLE
// RUN: neuroshard-opt %t.planned.mlir --neuroshard-export-plan=format=torchrec -o /dev/null | FileCheck %s --check-prefix=TORCHREC
//
// The plan is still there after materializing.
// RUN: neuroshard-opt %t.planned.mlir --neuroshard-materialize --neuroshard-export-plan="output=%t.after.json" -o /dev/null
// RUN: diff %t.json %t.after.json
//
// A module annotated by hand (no costs) exports its TorchRec plan, but has
// no costs for JSON or the table.
// RUN: neuroshard-opt %S/neuroshard-materialize.mlir --neuroshard-export-plan=format=torchrec -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=HAND
// RUN: not neuroshard-opt %S/neuroshard-materialize.mlir --neuroshard-export-plan -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOCOST
// RUN: not neuroshard-opt %s --neuroshard-export-plan=format=torchrec -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOSHARDS
// RUN: not neuroshard-opt %t.planned.mlir --neuroshard-export-plan=format=yaml -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FORMAT
// RUN: sed 's/cost_ms = /cost_mz = /' %t.planned.mlir | not neuroshard-opt --neuroshard-export-plan -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MALFORMED
// RUN: sed 's/algorithm = "table-greedy-grid"/algorithm = "magic"/' %t.planned.mlir \
// RUN:   | not neuroshard-opt --neuroshard-export-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALGORITHM
//
// The lower bound travels in the record to the report and the JSON, and
// names one of the module's tables; a record written before the search
// counted its moves reads them as 0.
// RUN: sed 's/hardest_table = [0-9] : i64/hardest_table = 7 : i64/' %t.planned.mlir \
// RUN:   | not neuroshard-opt --neuroshard-export-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOUND-BAD
// RUN: sed 's/moves_taken = 0 : i64, moves_tried = 0 : i64, //' %t.planned.mlir \
// RUN:   | neuroshard-opt --neuroshard-export-plan -o /dev/null | FileCheck %s --check-prefix=NO-MOVES
//
// The tables a model names outside its training ranges travel in the record
// to the JSON, and must be strings.
// RUN: sed "s/warnings = \[\]/tables_outside_ranges = [\"'a' (dim 256)\"], warnings = []/" %t.planned.mlir \
// RUN:   | neuroshard-opt --neuroshard-export-plan -o /dev/null | FileCheck %s --check-prefix=OUTSIDE
// RUN: sed 's/warnings = \[\]/tables_outside_ranges = [1], warnings = []/' %t.planned.mlir \
// RUN:   | not neuroshard-opt --neuroshard-export-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=OUTSIDE-BAD

// JSON: "algorithm": "table-greedy-grid",
// JSON-NEXT: "cost_model": "analytical",
// JSON: "devices": 2,
// JSON: "lower_bound": {
// JSON-NEXT: "ms": {{[0-9.e+-]+}},
// JSON: "hardest_table": "{{a|b}}"
// JSON: "table": "a",
// JSON: "table": "b",
// JSON: "states_explored": 1

// TABLE: NeuroShard plan: table-greedy-grid on 2 devices, cost {{[0-9.]+}} ms
// TABLE-NEXT: cost model: analytical bandwidth model (HBM 897 GB/s, intra-node 600 GB/s, batch 16, backward = 2 x forward)
// TABLE: lower bound: {{[0-9.]+}} ms under this model; the plan is within {{[0-9.]+}}% of it
// TABLE: *         the slowest device: its total is the plan's cost
// TABLE: search: {{.*}}, 1 states explored, 12 greedy runs

// TORCHREC: "format": "neuroshard-torchrec-1",
// TORCHREC: "a": {
// TORCHREC-NEXT: "sharding_type": "table_wise",

// HAND: "world_size": 2,
// HAND: "split": {
// HAND-NEXT: "sharding_type": "column_wise",
// HAND: "ranks": [
// HAND-NEXT: 0,
// HAND-NEXT: 1,
// HAND-NEXT: 0

// NOCOST: error: has no 'neuroshard.plan': only a module planned by --neuroshard-plan records the plan's costs (neuroshard-plan TASK --price PLAN prices a plan made elsewhere)
// NOSHARDS: error: 'neuroshard.table' op table 'a' has no shards; export a module whose tables a plan has placed (--neuroshard-plan or --neuroshard-import-plan)
// FORMAT: error: --neuroshard-export-plan: unknown format 'yaml'; expected json, table, torchrec or svg
// MALFORMED: error: has a malformed 'neuroshard.plan': the plan needs 'cost_ms' (a float)
// ALGORITHM: error: has a malformed 'neuroshard.plan': the plan names the unknown algorithm 'magic'
// BOUND-BAD: error: has a malformed 'neuroshard.plan': the plan has a 'lower_bound' whose hardest_table 7 is not one of its 2 tables
// NO-MOVES: "moves_tried": 0,
// NO-MOVES-NEXT: "moves_taken": 0
// OUTSIDE:      "tables_outside_ranges": [
// OUTSIDE-NEXT:   "'a' (dim 256)"
// OUTSIDE-NEXT: ],
// OUTSIDE-BAD: error: has a malformed 'neuroshard.plan': the plan has a table outside the ranges that is not a string

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 1000, dim 64, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 1000, dim 32, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @two(%i: tensor<?xi32>, %o: tensor<17xi32>) -> (tensor<16x64xf32>, tensor<16x32xf32>) {
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x64xf32>
    %b = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    return %a, %b : tensor<16x64xf32>, tensor<16x32xf32>
  }
}
