// batch-size=B prices the plan at a batch other than the lookups' (the
// global batch of training, say): the module's statistics describe one
// batch of its lookups and are carried to B, as neuroshard-plan
// --batch-size carries a task's. The plan equals neuroshard-plan's on the
// same tables, and the IR keeps its shapes.

// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical batch-size=4096" \
// RUN:   --neuroshard-export-plan="format=json output=%t.pass.json" | FileCheck %s --check-prefix=IR
// IR: tensor<16x64xf32>
// RUN: neuroshard-plan %S/Inputs/batch-size-task.json --cost-model analytical --batch-size 4096 \
// RUN:   -o %t.tool.json
// RUN: %python -c "import json,sys; a, b = (json.load(open(f)) for f in sys.argv[1:]); assert a['cost_ms'] == b['cost_ms'] and a['shards'] == b['shards'], (a['cost_ms'], b['cost_ms'])" %t.pass.json %t.tool.json
// At the lookups' batch it is the plan without the option.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical batch-size=16" --neuroshard-export-plan="format=table" -o /dev/null | FileCheck %s --check-prefix=SAME
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical" --neuroshard-export-plan="format=table" -o /dev/null | FileCheck %s --check-prefix=SAME
// SAME: cost model: analytical bandwidth model ({{.*}}batch 16,
// The one-flag form takes it too.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical batch-size=4096 plan-table=-" -o /dev/null | FileCheck %s --check-prefix=SHARD
// SHARD: cost model: analytical bandwidth model ({{.*}}batch 4096,
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical batch-size=-2" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: batch-size: the batch size must be positive (or 0 for the lookups' batch of 16), got -2
// REQUIRES: python

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 1000, dim 64, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 5000, dim 32, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @two(%i: tensor<?xi32>, %o: tensor<17xi32>) -> (tensor<16x64xf32>, tensor<16x32xf32>) {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x64xf32>
    %1 = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    return %0, %1 : tensor<16x64xf32>, tensor<16x32xf32>
  }
}
