// RUN: neuroshard-opt %s --neuroshard-to-cuda="chip=sm_80" | FileCheck %s

// The kernels module holds four generic kernels; nothing in it depends on
// the tables of the module, so an empty module gets the same kernels.

// CHECK: module attributes {gpu.container_module
// CHECK: gpu.module @neuroshard_kernels [#nvvm.target<O = 3, chip = "sm_80">]

// Forward, i32 indices: the shard row comes from the metadata buffer (i64
// loads aligned to 8 bytes, so that they stay whole), the grid's y dimension
// walks the shards, a warp-wide max of the bag lengths (xor shuffles) bounds
// the chunk loop and, within a chunk, the slots loop, each chunk's indices
// are loaded once and broadcast with idx shuffles, rows are read as aligned
// vector<4xf32>
// (or as scalars when the shard is not 16-byte aligned) and the pooled row
// is stored once.
// CHECK-LABEL: gpu.func @neuroshard_bag_forward_i32(
// CHECK-SAME: %[[META:.*]]: memref<?xi64>, %{{.*}}: memref<?xi64>, %[[W:.*]]: memref<?xf32>, %[[IDX:.*]]: memref<?xi32>, %{{.*}}: memref<?xi32>, %[[OUT:.*]]: memref<?x?xf32>) kernel
// CHECK: gpu.block_id y
// CHECK: scf.for
// CHECK: memref.load %[[META]][%{{.*}}] {alignment = 8 : i64} : memref<?xi64>
// CHECK: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: scf.if
// CHECK: gpu.shuffle xor
// CHECK: memref.load %[[IDX]][%{{.*}}] {alignment = 4 : i64} : memref<?xi32>
// CHECK: %[[SLOTS:.*]] = arith.minui %{{.*}}, %{{.*}} : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[SLOTS]] step %{{.*}} iter_args
// CHECK: gpu.shuffle idx %{{.*}} : i32
// CHECK: vector.load %[[W]][%{{.*}}] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK: arith.addf {{.*}} : vector<4xf32>
// CHECK: vector.store %{{.*}}, %[[OUT]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: gpu.shuffle idx %{{.*}} : i32
// CHECK: memref.load %[[W]][%{{.*}}] : memref<?xf32>
// CHECK: arith.addf {{.*}} : f32
// CHECK: memref.store %{{.*}}, %[[OUT]][%{{.*}}, %{{.*}}] : memref<?x?xf32>
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.return

// Forward, i64 indices: each index crosses the warp as two 32-bit halves.
// CHECK-LABEL: gpu.func @neuroshard_bag_forward_i64(
// CHECK-SAME: memref<?xi64>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?x?xf32>) kernel
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: gpu.shuffle idx %{{.*}} : i32
// CHECK: gpu.shuffle idx %{{.*}} : i32
// CHECK: arith.ori %{{.*}} : i64
// CHECK: vector.load {{.*}} vector<4xf32>
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.return

// Backward with SGD: the gradient slice is read once per bag as a vector,
// scaled by -lr (and 1/length for mean), then added into every row of the
// bag with atomics, element by element.
// CHECK-LABEL: gpu.func @neuroshard_bag_backward_sgd_i32(
// CHECK-SAME: %[[W2:[^:]*]]: memref<?xf32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %[[GRAD:.*]]: memref<?x?xf32>, %[[LR:.*]]: f32) kernel
// CHECK: vector.load %[[GRAD]]{{.*}} {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: arith.mulf %[[LR]]
// CHECK: arith.negf
// CHECK: gpu.shuffle idx
// CHECK: vector.extract
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[W2]][%{{.*}}] : (f32, memref<?xf32>) -> f32
// CHECK: } else {
// CHECK: memref.atomic_rmw addf
// CHECK-NOT: vector.store
// CHECK: gpu.return

// CHECK-LABEL: gpu.func @neuroshard_bag_backward_sgd_i64(
// CHECK-SAME: f32) kernel
// CHECK: memref.atomic_rmw addf
module {
}
