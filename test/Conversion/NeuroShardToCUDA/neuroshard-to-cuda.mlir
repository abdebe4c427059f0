// RUN: neuroshard-opt %s --neuroshard-to-cuda | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-cuda-pipeline="format=isa" | FileCheck %s --check-prefix=LLVM

// The host hookup: the lookup lowering shared with the CPU turns a sharded
// model's fused lookups into kernel calls (metadata, concatenated indices
// and offsets, weight arena and layout as new arguments); the pipeline then
// bufferizes, launches the kernels on the GPU and lowers to the LLVM dialect.

// CHECK-DAG: func.func private @neuroshard_bag_forward_i64(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>)
// CHECK-LABEL: func.func @model(
// CHECK-SAME: memref<?xf32> {neuroshard.weights}, %{{.*}}: memref<?xi64> {neuroshard.layout})
// CHECK-COUNT-2: call @neuroshard_bag_forward_i64(
// CHECK-NOT: neuroshard.fused_embedding_bag
// CHECK: gpu.module @neuroshard_kernels

// LLVM-LABEL: llvm.func @model(
// LLVM: llvm.call @mgpuMemAlloc(
// LLVM: gpu.launch_func <%{{.*}} : !llvm.ptr> @neuroshard_kernels::@neuroshard_bag_forward_i64
// LLVM: gpu.launch_func <%{{.*}} : !llvm.ptr> @neuroshard_kernels::@neuroshard_bag_forward_i64
// LLVM-NOT: func.call
// LLVM-NOT: neuroshard.
// LLVM: gpu.binary @neuroshard_kernels
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 100, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0>, #neuroshard.shard<cols = 4 to 8, device = 1>] {pooling_factor = 2.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @model(%i: tensor<?xi64>, %o: tensor<5xi64>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
    %0 = neuroshard.fused_embedding_bag device 0 [@a cols 0 to 4 sum(%i, %o : tensor<?xi64>, tensor<5xi64>)] : tensor<4x4xf32>
    %1 = neuroshard.fused_embedding_bag device 1 [@a cols 4 to 8 mean(%i, %o : tensor<?xi64>, tensor<5xi64>)] : tensor<4x4xf32>
    return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}
