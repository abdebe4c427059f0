// Row pieces on a GPU: `neuroshard.bucketize` becomes one call of the
// bucketization (KernelABI.h: the row boundaries, the lookup's indices and
// offsets, every block's offsets and all blocks' indices), and each block's
// pair is copied out of the two outputs, block 1's indices after block 0's
// count. --neuroshard-cuda-launch turns the call into the count, scan and
// scatter kernels on one stream, with both outputs copied back.
// RUN: neuroshard-opt %s --neuroshard-to-cuda | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-to-cuda --neuroshard-cuda-launch | FileCheck %s --check-prefix=LAUNCH
//
// The whole pipeline compiles a sharded model of row pieces (sum and mean,
// i32 and i64, a grid of row and column pieces) down to PTX and LLVM host
// code, with the bucketization kernels launched where the CPU runs loops.
// RUN: neuroshard-opt %S/../../neuroshard-run/Inputs/row-pieces.mlir \
// RUN:   --neuroshard-import-plan=file=%S/../../Transforms/Inputs/row-pieces.plan.json \
// RUN:   --neuroshard-materialize --neuroshard-cuda-pipeline="format=isa" \
// RUN:   | FileCheck %s --check-prefix=PIPELINE

// CHECK: func.func private @neuroshard_bucketize_i32(memref<?xi64>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
// CHECK-LABEL: func.func @f(
// CHECK:     %[[ROWS:.*]] = memref.alloca() : memref<3xi64>
// CHECK:     memref.store %{{.*}}, %[[ROWS]][%{{.*}}] : memref<3xi64>
// CHECK:     %[[BOUNDS:.*]] = memref.cast %[[ROWS]] : memref<3xi64> to memref<?xi64>
// CHECK:     memref.dim %{{.*}}, %{{.*}} : memref<?xi32>
// CHECK:     %[[NOFF:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?xi32>
// CHECK:     %[[ALLOFF:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK:     %[[ALLIDX:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK:     call @neuroshard_bucketize_i32(%[[BOUNDS]], %{{.*}}, %{{.*}}, %[[ALLOFF]], %[[ALLIDX]])
// Block 0: its count is the last of its offsets; indices from 0.
// CHECK:     %[[C0:.*]] = memref.load %[[ALLOFF]][%{{.*}}] : memref<?xi32>
// CHECK:     %[[N0:.*]] = arith.index_cast %[[C0]] : i32 to index
// CHECK:     %[[IDX0:.*]] = memref.alloc(%[[N0]]) : memref<?xi32>
// CHECK:     memref.subview %[[ALLIDX]][%{{.*}}] [%[[N0]]] [1]
// CHECK:     memref.subview %[[ALLOFF]][%{{.*}}] [%[[NOFF]]] [1]
// CHECK:     %[[START1:.*]] = arith.addi %{{.*}}, %[[N0]] : index
// Block 1: its indices start after block 0's.
// CHECK:     %[[N1:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK:     memref.subview %[[ALLIDX]][%[[START1]]] [%[[N1]]] [1]
// CHECK:     call @neuroshard_bag_forward_i32(
// CHECK-NOT: neuroshard.
// CHECK: gpu.func @neuroshard_bucketize_count_i32(%{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>) kernel
// CHECK: gpu.func @neuroshard_bucketize_scan_i64(%{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>) kernel

// LAUNCH-LABEL: func.func @f(
// LAUNCH:     gpu.launch_func async [%{{.*}}] @neuroshard_kernels::@neuroshard_bucketize_count_i32 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[R:.*]] : memref<?xi64>, %[[I:.*]] : memref<?xi32>, %[[O:.*]] : memref<?xi32>, %[[BO:.*]] : memref<?xi32>, %[[BI:.*]] : memref<?xi32>)
// LAUNCH-NEXT: arith.constant 32 : index
// LAUNCH:     gpu.launch_func async [%{{.*}}] @neuroshard_kernels::@neuroshard_bucketize_scan_i32 {{.*}} args(%[[R]] : memref<?xi64>, %[[I]] : memref<?xi32>, %[[O]] : memref<?xi32>, %[[BO]] : memref<?xi32>, %[[BI]] : memref<?xi32>)
// LAUNCH:     %[[DONE:.*]] = gpu.launch_func async [%{{.*}}] @neuroshard_kernels::@neuroshard_bucketize_scatter_i32 {{.*}} args(%[[R]] : memref<?xi64>, %[[I]] : memref<?xi32>, %[[O]] : memref<?xi32>, %[[BO]] : memref<?xi32>, %[[BI]] : memref<?xi32>)
// LAUNCH-NEXT: %[[T1:.*]] = gpu.memcpy async [%[[DONE]]] %{{.*}}, %[[BO]]
// LAUNCH-NEXT: gpu.memcpy async [%[[T1]]] %{{.*}}, %[[BI]]
// LAUNCH:     gpu.wait [%{{.*}}]
// LAUNCH:     gpu.launch_func async [%{{.*}}] @neuroshard_kernels::@neuroshard_bag_forward_i32
// LAUNCH-NOT: call @neuroshard_bucketize

// PIPELINE-NOT: call @neuroshard_bucketize_i{{32|64}}
// PIPELINE-COUNT-4: gpu.launch_func {{.*}}@neuroshard_kernels::@neuroshard_bucketize_count_i{{32|64}}
// PIPELINE: gpu.binary @neuroshard_kernels

module {
  neuroshard.table @t : rows 100, dim 4, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<3xi32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %bi:2, %bo:2 = neuroshard.bucketize %i, %o rows [0, 40, 100]
        : tensor<?xi32>, tensor<3xi32> -> (tensor<?xi32>, tensor<?xi32>), (tensor<3xi32>, tensor<3xi32>)
    %f = neuroshard.fused_embedding_bag device 0 [
        @t rows 0 to 40 cols 0 to 4 sum(%bi#0, %bo#0 : tensor<?xi32>, tensor<3xi32>),
        @t rows 40 to 100 cols 0 to 4 sum(%bi#1, %bo#1 : tensor<?xi32>, tensor<3xi32>)
      ] : tensor<2x8xf32>
    %a = tensor.extract_slice %f[0, 0] [2, 4] [1, 1] : tensor<2x8xf32> to tensor<2x4xf32>
    %b = tensor.extract_slice %f[0, 4] [2, 4] [1, 1] : tensor<2x8xf32> to tensor<2x4xf32>
    return %a, %b : tensor<2x4xf32>, tensor<2x4xf32>
  }
}
