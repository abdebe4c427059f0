// The planning pass plans row pieces and replicas when its sharding-types
// option allows them. @huge (300,000 x 4, 0.00447 GB) fits none of the 4
// devices of 0.003 GB whole, and its 4 columns cannot be split: whole tables
// and column pieces cannot place it.
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical sharding-types=table_wise,column_wise" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=COLUMNS
// COLUMNS: error: table 'huge' needs 0.00447 GB but the largest device has 0.00300 GB and its narrowest shards (4 of 4 columns) still need 0.00447 GB; row pieces (row_wise) are not among the sharding types allowed
//
// With every type, the default for GPUs as in neuroshard-plan, it is cut
// into row blocks, and the sharded module computes what the original does,
// forward and backward with SGD.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical sharding-types=all" \
// RUN:   | FileCheck %s
// A CPU topology's default is whole tables and column pieces.
// RUN: sed 's/memory_gb = 0.003>/memory_gb = 0.003, device_kind = "cpu">/' %s > %t.cpu.mlir
// RUN: not neuroshard-opt %t.cpu.mlir --neuroshard-shard="cost-model=analytical" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=COLUMNS
// CHECK: neuroshard.table @huge : rows 300000, dim 4, f32 shards [#neuroshard.shard<rows = 0 to {{[0-9]+}}, cols = 0 to 4, device = {{[0-9]}}>,
// CHECK: neuroshard.bucketize %arg0, %arg1 rows [0,
// CHECK: neuroshard.reduce_scatter {{.*}} mean(%arg1 : tensor<65xi64>)
// RUN: neuroshard-run %s --compare %t.mlir --backward | FileCheck %s --check-prefix=MATCH
// MATCH: (outputs), {{.*}} (updated weights), tolerance 1.0E-05: match
//
// A list of types works too; a table's own sharding_types narrow it (the
// runs below write them in place of the discardable `table_constraints`).
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical sharding-types=table_wise,row_wise" \
// RUN:   | FileCheck %s --check-prefix=LIST
// LIST: neuroshard.table @huge : rows 300000, dim 4, f32 shards [#neuroshard.shard<rows = 0 to
// LIST: neuroshard.table @small : rows 1000, dim 16, f32 shards [#neuroshard.shard<cols = 0 to 16, device = {{[0-9]}}>]
//
// A table whose constraints keep its rows together fits no device in its
// narrowest shards: without host memory the planner says why; with it, the
// table goes there behind caches.
// RUN: sed 's/table_constraints/sharding_types = ["table_wise", "column_wise"]/' %s > %t.constrained.mlir
// RUN: not neuroshard-opt %t.constrained.mlir --neuroshard-plan="cost-model=analytical sharding-types=all host-memory-gb=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CONSTRAINED
// RUN: neuroshard-opt %t.constrained.mlir --neuroshard-plan="cost-model=analytical sharding-types=all" \
// RUN:   | FileCheck %s --check-prefix=CONSTRAINED-HOST
// CONSTRAINED-HOST: neuroshard.table @huge : rows 300000, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = {{[0-9]}}, cache_rows = {{[0-9]+}}>]
// CONSTRAINED: error: table 'huge' needs 0.00447 GB but the largest device has 0.00300 GB and its narrowest shards (4 of 4 columns) still need 0.00447 GB; row pieces (row_wise) are not among the sharding types allowed
//
// RUN: sed 's/table_constraints/sharding_types = ["data_parallel"]/' %s > %t.replicated.mlir
// RUN: not neuroshard-opt %t.replicated.mlir --neuroshard-plan="cost-model=analytical sharding-types=all host-memory-gb=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=REPLICATED
// REPLICATED: error: table 'huge' may only be data_parallel and its replicas need 0.00447 GB on every device, but the smallest device has 0.00300 GB
//
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical sharding-types=rows" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=OPTION
// OPTION: error: sharding-types: unknown sharding type 'rows' (expected one of: table_wise, column_wise, row_wise, table_row_wise, data_parallel), 'all' or 'default'
module attributes {neuroshard.topology = #neuroshard.topology<devices = 4, memory_gb = 0.003>} {
  neuroshard.table @huge : rows 300000, dim 4, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.9, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>,
    table_constraints}
  neuroshard.table @small : rows 1000, dim 16, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 0.3, 0.3, 0.3, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%hi: tensor<?xi64>, %ho: tensor<65xi64>, %si: tensor<?xi32>, %so: tensor<65xi32>)
      -> (tensor<64x4xf32>, tensor<64x16xf32>) {
    %h = neuroshard.embedding_bag @huge(%hi, %ho) mean : (tensor<?xi64>, tensor<65xi64>) -> tensor<64x4xf32>
    %s = neuroshard.embedding_bag @small(%si, %so) sum : (tensor<?xi32>, tensor<65xi32>) -> tensor<64x16xf32>
    return %h, %s : tensor<64x4xf32>, tensor<64x16xf32>
  }
}
