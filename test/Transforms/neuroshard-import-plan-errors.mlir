// A plan is checked by the planner's reader and validator before it is
// recorded; every refusal names the file, the table and the numbers.
// RUN: not neuroshard-opt %s --neuroshard-import-plan 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: error: --neuroshard-import-plan needs file=PLAN (plan JSON or a TorchRec plan)
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t.missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: cannot read plan '{{.*}}missing.json': No such file or directory
// RUN: echo '{"devices": 2, "shards": [' > %t.broken.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t.broken.json" 2>&1 | FileCheck %s --check-prefix=BROKEN
// BROKEN: error: plan '{{.*}}broken.json': invalid JSON:
// RUN: echo '{"devices": 3, "shards": [{"table": "a", "col_begin": 0, "col_end": 8, "device": 0}]}' > %t.three.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t.three.json" 2>&1 | FileCheck %s --check-prefix=DEVICES
// DEVICES: error: {{.*}}three.json: the plan is for 3 devices but the topology has 2
// RUN: echo '{"devices": 2, "shards": [{"table": "z", "col_begin": 0, "col_end": 8, "device": 0}]}' > %t.unknown.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t.unknown.json" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: {{.*}}unknown.json: plan: shards[0]: names table 'z', which the task does not have
// RUN: echo '{"devices": 2, "shards": [{"table": "a", "col_begin": 0, "col_end": 4, "device": 0}, {"table": "b", "col_begin": 0, "col_end": 8, "device": 1}]}' > %t.gap.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t.gap.json" 2>&1 | FileCheck %s --check-prefix=GAP
// GAP: error: {{.*}}gap.json: table 'a': columns [4, 8) are on no device
// RUN: echo '{"devices": 2, "shards": [{"table": "a", "col_begin": 0, "col_end": 8, "device": 1}, {"table": "b", "col_begin": 0, "col_end": 8, "device": 1}]}' > %t.full.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t.full.json" 2>&1 | FileCheck %s --check-prefix=FULL
// FULL: error: {{.*}}full.json: device 1 holds 0.00358 GB but has 0.00200 GB
// RUN: echo '{"devices": 2, "shards": [{"table": "a", "col_begin": 0, "col_end": 8, "device": 0}, {"table": "b", "col_begin": 0, "col_end": 8, "device": 0}]}' > %t.pinned.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t.pinned.json" 2>&1 | FileCheck %s --check-prefix=PINNED
// PINNED: error: {{.*}}pinned.json: table 'b' is pinned to device 1 but shard [0, 8) is on device 0
// A plan of row pieces goes into the IR as it is.
// RUN: echo '{"devices": 2, "shards": [{"table": "a", "col_begin": 0, "col_end": 8, "row_begin": 0, "row_end": 55000, "device": 0}, {"table": "a", "col_begin": 0, "col_end": 8, "row_begin": 55000, "row_end": 60000, "device": 1}, {"table": "b", "col_begin": 0, "col_end": 8, "device": 1}]}' > %t.rows.json
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t.rows.json" | FileCheck %s --check-prefix=ROWS
// ROWS: neuroshard.table @a : rows 60000, dim 8, f32 shards [#neuroshard.shard<rows = 0 to 55000, cols = 0 to 8, device = 0>, #neuroshard.shard<rows = 55000 to 60000, cols = 0 to 8, device = 1>]
// The plan exports as TorchRec's row_wise.
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t.rows.json" | neuroshard-opt --neuroshard-export-plan="format=torchrec" -o /dev/null | FileCheck %s --check-prefix=ROWS-TORCHREC
// ROWS-TORCHREC: "a": {
// ROWS-TORCHREC-NEXT: "sharding_type": "row_wise",
// Unless the table's own sharding_types forbid row pieces.
// RUN: sed 's/@a : rows 60000, dim 8, f32/& {sharding_types = ["table_wise", "column_wise"]}/' %s \
// RUN:   | not neuroshard-opt --neuroshard-import-plan="file=%t.rows.json" 2>&1 | FileCheck %s --check-prefix=KINDS
// KINDS: error: {{.*}}rows.json: table 'a' is row_wise but its constraints allow only table_wise, column_wise
//
// The module must have a topology, and tables without shards.
// RUN: echo '{"devices": 2, "shards": [{"table": "a", "col_begin": 0, "col_end": 8, "device": 0}, {"table": "b", "col_begin": 0, "col_end": 8, "device": 1}]}' > %t.good.json
// RUN: sed 's/attributes {neuroshard.topology = .*} {/{/' %s | not neuroshard-opt --neuroshard-import-plan="file=%t.good.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOPOLOGY
// TOPOLOGY: error: has no 'neuroshard.topology' attribute; importing a plan needs the devices and their memory
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t.good.json" | not neuroshard-opt --neuroshard-import-plan="file=%t.good.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TWICE
// TWICE: error: 'neuroshard.table' op table 'a' already has shards; import a plan into a module whose tables have none

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 0.002>} {
  neuroshard.table @a : rows 60000, dim 8, f32
  neuroshard.table @b : rows 60000, dim 8, f32 {pinned_device = 1 : i64}
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    %b = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
