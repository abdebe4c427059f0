// Tables beyond the devices' memory live in their nodes' host memory behind
// a device cache (docs/planner.md, "Tables in host memory"). @big (4000 x 32
// f32, 0.000477 GB) and the other two tables need 0.000626 GB; the two
// devices have 0.0004 GB. The pass keeps @big in host memory: each of its
// shards names the rows its device caches.
// RUN: rm -rf %t && mkdir -p %t
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical" -o %t/planned.mlir
// RUN: FileCheck %s --check-prefix=PLAN < %t/planned.mlir
// PLAN: neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 0.0002>
// PLAN: neuroshard.table @big : rows 4000, dim 32, f32 shards [#neuroshard.shard<{{.*}}cache_rows = [[CACHE:[0-9]+]]>{{.*}}]
// PLAN-NOT: cache_rows
// PLAN: neuroshard.table @small

// The plan JSON says so per table and per shard, and reads back into the
// same shards.
// RUN: neuroshard-opt %t/planned.mlir --neuroshard-export-plan="output=%t/plan.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t/plan.json
// JSON: "cache_rows":
// JSON: "table": "big"
// JSON: "storage": "host"
// JSON-NEXT: "cache_load_factor":
// JSON: "host_memory": {
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t/plan.json" | FileCheck %s --check-prefix=PLAN

// Host memory and its bandwidth come from the options or the module, and
// are recorded with the topology.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical host-memory-gb=1 host-gbps=50" \
// RUN:   | FileCheck %s --check-prefix=HOST
// HOST: #neuroshard.topology<devices = 2, memory_gb = 0.0002, host_memory_gb = 1.0, host_gbps = 50.0>
// HOST: @big {{.*}}cache_rows

// A TorchRec plan keeps a table in host memory with "fused_uvm_caching",
// caching 20% of each shard's rows unless it says otherwise
// ("cache_load_factor"); the imported module materializes and runs as the
// original does.
// RUN: neuroshard-opt %t/planned.mlir --neuroshard-export-plan="output=%t/torchrec.json format=torchrec" -o /dev/null
// RUN: FileCheck %s --check-prefix=TORCHREC < %t/torchrec.json
// TORCHREC: "big": {
// TORCHREC: "compute_kernel": "fused_uvm_caching",
// TORCHREC-NEXT: "cache_load_factor":
// RUN: grep -v cache_load_factor %t/torchrec.json > %t/default-cache.json
// RUN: neuroshard-opt %s --neuroshard-import-plan="file=%t/default-cache.json" -o %t/imported.mlir
// RUN: FileCheck %s --check-prefix=IMPORTED < %t/imported.mlir
// IMPORTED: @big : rows 4000, dim 32, f32 shards [#neuroshard.shard<{{[^>]*}}cache_rows = {{[0-9]+}}>
// RUN: neuroshard-opt %t/imported.mlir --neuroshard-materialize -o %t/materialized.mlir
// RUN: neuroshard-run %s --compare %t/materialized.mlir --backward --lr 0.5 | FileCheck %s --check-prefix=MATCH
// MATCH: tolerance 1.0E-05: match

// A cache the device cannot hold is refused, the caches counted in its
// memory.
// RUN: sed 's/"cache_load_factor": [0-9.]*/"cache_load_factor": 0.9/' %t/torchrec.json > %t/large-cache.json
// RUN: not neuroshard-opt %s --neuroshard-import-plan="file=%t/large-cache.json" 2>&1 | FileCheck %s --check-prefix=LARGE
// LARGE: error: {{.*}}large-cache.json: device {{[01]}} holds {{.*}} GB (caches of host-memory tables included) but has 0.000200 GB

// Without host memory the devices are too small; with too little, both
// totals are named. Bad host options are refused by name.
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical host-memory-gb=0" 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: the tables need 0.000626 GB in total but the 2 devices have 0.000400 GB
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical host-memory-gb=0.0001" 2>&1 | FileCheck %s --check-prefix=SMALL
// SMALL: error: the tables need 0.000626 GB in total but the 2 devices have 0.000400 GB; with the tables the node's host memory (0.000100 GB) can hold kept there behind caches, the devices would still need 0.000596 GB
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical host-gbps=0" 2>&1 | FileCheck %s --check-prefix=GBPS
// GBPS: error: host-gbps: must be between 0.001 and 1e+09 GB/s, got 0
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical host-memory-gb=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: host-memory-gb: host memory must be a number of GB from 0 up to 1048576, got -1

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 0.0002>} {
  neuroshard.table @big : rows 4000, dim 32, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 0.5, 0.2, 0.12, 0.08, 0.05, 0.03, 0.02, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @mid : rows 1000, dim 32, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 0.6, 0.3, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @small : rows 500, dim 16, f32 {pooling_factor = 3.0 : f64,
    access_hist = array<f64: 0.7, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @embed(%bi: tensor<?xi32>, %bo: tensor<65xi32>,
                   %mi: tensor<?xi32>, %mo: tensor<65xi32>,
                   %si: tensor<?xi64>, %so: tensor<65xi64>)
      -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x16xf32>) {
    %b = neuroshard.embedding_bag @big(%bi, %bo) sum
        : (tensor<?xi32>, tensor<65xi32>) -> tensor<64x32xf32>
    %m = neuroshard.embedding_bag @mid(%mi, %mo) mean
        : (tensor<?xi32>, tensor<65xi32>) -> tensor<64x32xf32>
    %s = neuroshard.embedding_bag @small(%si, %so) sum
        : (tensor<?xi64>, tensor<65xi64>) -> tensor<64x16xf32>
    return %b, %m, %s : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x16xf32>
  }
}
