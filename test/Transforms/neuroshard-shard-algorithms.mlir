// Every algorithm name is accepted and recorded in the plan.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=neuroshard seed=7" | FileCheck %s --check-prefix=NEUROSHARD
// NEUROSHARD: neuroshard.plan = {algorithm = "neuroshard", cost_model = "analytical"
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=table-greedy-grid seed=7" | FileCheck %s --check-prefix=TABLE_GREEDY_GRID
// TABLE_GREEDY_GRID: neuroshard.plan = {algorithm = "table-greedy-grid", cost_model = "analytical"
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=random seed=7" | FileCheck %s --check-prefix=RANDOM
// RANDOM: neuroshard.plan = {algorithm = "random", cost_model = "analytical"
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=size-greedy seed=7" | FileCheck %s --check-prefix=SIZE_GREEDY
// SIZE_GREEDY: neuroshard.plan = {algorithm = "size-greedy", cost_model = "analytical"
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=dim-greedy seed=7" | FileCheck %s --check-prefix=DIM_GREEDY
// DIM_GREEDY: neuroshard.plan = {algorithm = "dim-greedy", cost_model = "analytical"
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=lookup-greedy seed=7" | FileCheck %s --check-prefix=LOOKUP_GREEDY
// LOOKUP_GREEDY: neuroshard.plan = {algorithm = "lookup-greedy", cost_model = "analytical"
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=size-lookup-greedy seed=7" | FileCheck %s --check-prefix=SIZE_LOOKUP_GREEDY
// SIZE_LOOKUP_GREEDY: neuroshard.plan = {algorithm = "size-lookup-greedy", cost_model = "analytical"
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=uniform-split-greedy seed=7" | FileCheck %s --check-prefix=UNIFORM_SPLIT_GREEDY
// UNIFORM_SPLIT_GREEDY: neuroshard.plan = {algorithm = "uniform-split-greedy", cost_model = "analytical"

// The plan JSON has the neuroshard-plan schema.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical plan-out=%t.json plan-table=%t.txt" -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=TABLE < %t.txt
// JSON: "algorithm": "neuroshard"
// JSON: "cost_model": "analytical"
// JSON: "devices": 2
// JSON: "cost_ms":
// JSON: "per_device": [
// JSON: "bw_comm_ms":
// JSON: "shards": [
// JSON: "search": {
// JSON: "cost_queries":
// TABLE: NeuroShard plan: neuroshard on 2 devices
// TABLE: device

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 2.0>} {
  neuroshard.table @t0 : rows 1000, dim 16, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @t1 : rows 4000, dim 32, f32 {pooling_factor = 4.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @t2 : rows 9000, dim 64, f32 {pooling_factor = 7.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @t3 : rows 16000, dim 16, f32 {pooling_factor = 10.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @t4 : rows 25000, dim 32, f32 {pooling_factor = 13.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @t5 : rows 36000, dim 64, f32 {pooling_factor = 16.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<33xi32>)
      -> (tensor<32x16xf32>, tensor<32x32xf32>, tensor<32x64xf32>, tensor<32x16xf32>, tensor<32x32xf32>, tensor<32x64xf32>) {
    %r0 = neuroshard.embedding_bag @t0(%i, %o) sum : (tensor<?xi32>, tensor<33xi32>) -> tensor<32x16xf32>
    %r1 = neuroshard.embedding_bag @t1(%i, %o) sum : (tensor<?xi32>, tensor<33xi32>) -> tensor<32x32xf32>
    %r2 = neuroshard.embedding_bag @t2(%i, %o) sum : (tensor<?xi32>, tensor<33xi32>) -> tensor<32x64xf32>
    %r3 = neuroshard.embedding_bag @t3(%i, %o) sum : (tensor<?xi32>, tensor<33xi32>) -> tensor<32x16xf32>
    %r4 = neuroshard.embedding_bag @t4(%i, %o) sum : (tensor<?xi32>, tensor<33xi32>) -> tensor<32x32xf32>
    %r5 = neuroshard.embedding_bag @t5(%i, %o) sum : (tensor<?xi32>, tensor<33xi32>) -> tensor<32x64xf32>
    return %r0, %r1, %r2, %r3, %r4, %r5 : tensor<32x16xf32>, tensor<32x32xf32>, tensor<32x64xf32>, tensor<32x16xf32>, tensor<32x32xf32>, tensor<32x64xf32>
  }
}
