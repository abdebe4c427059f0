// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd="rank=0" --neuroshard-spmd-backward | FileCheck %s --check-prefix=RANK0
// RUN: neuroshard-opt %s --split-input-file --neuroshard-spmd="rank=1" --neuroshard-spmd-backward | FileCheck %s
// `backward=true` of --neuroshard-spmd is an alias of the second pass.
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd="rank=0 backward=true" | FileCheck %s --check-prefix=RANK0
// The backward functions round-trip and lower: the reverse exchange calls
// the runtime and the update calls the backward kernel.
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd="rank=0" --neuroshard-spmd-backward \
// RUN:   | neuroshard-opt | neuroshard-opt --neuroshard-lower-lookups-cpu | FileCheck %s --check-prefix=LOWER
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd="rank=1" --neuroshard-spmd-backward \
// RUN:   | neuroshard-opt --neuroshard-to-cpu -o /dev/null
// The update has no result but writes the tables: cleanups keep it.
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd="rank=0" --neuroshard-spmd-backward \
// RUN:   | neuroshard-opt --canonicalize --cse | FileCheck %s --check-prefix=KEEP
// Without the pass there is no backward function.
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd=rank=0 | FileCheck %s --check-prefix=NONE
// The pass needs a rank's program.
// RUN: not neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd-backward 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOTRANK
// NOTRANK: error: is not one rank's program; build it with --neuroshard-spmd="rank=R" first

// Rank 0's results are made of exchanged columns [0,16) [48,80) [16,32),
// [80,112) and [32,48): the gradients go back to their columns, last result
// first, and cover all 112, so the gradient starts from an empty tensor.
// RANK0:      func.func @embed_backward(%[[I0:.+]]: tensor<?xi32>, %[[O0:.+]]: tensor<66xi32>, %{{.+}}: tensor<?xi32>, %{{.+}}: tensor<66xi32>, %[[I2:.+]]: tensor<?xi64>, %[[O2:.+]]: tensor<66xi64>,
// RANK0-SAME:   %[[G0:.+]]: tensor<33x64xf32>, %[[G1:.+]]: tensor<33x32xf32>, %[[G2:.+]]: tensor<33x16xf32>, %[[LR:.+]]: f32)
// RANK0-SAME:   attributes {neuroshard.backward_of = @embed}
// RANK0-NEXT:   %[[E:.+]] = tensor.empty() : tensor<33x112xf32>
// RANK0-NEXT:   %[[X0:.+]] = tensor.insert_slice %[[G2]] into %[[E]][0, 32] [33, 16] [1, 1]
// RANK0-NEXT:   %[[X1:.+]] = tensor.insert_slice %[[G1]] into %[[X0]][0, 80] [33, 32] [1, 1]
// RANK0-NEXT:   %[[A:.+]] = tensor.extract_slice %[[G0]][0, 0] [33, 16] [1, 1]
// RANK0-NEXT:   %[[C:.+]] = tensor.extract_slice %[[G0]][0, 16] [33, 32] [1, 1]
// RANK0-NEXT:   %[[B:.+]] = tensor.extract_slice %[[G0]][0, 48] [33, 16] [1, 1]
// RANK0-NEXT:   %[[X2:.+]] = tensor.insert_slice %[[B]] into %[[X1]][0, 16] [33, 16] [1, 1]
// RANK0-NEXT:   %[[X3:.+]] = tensor.insert_slice %[[C]] into %[[X2]][0, 48] [33, 32] [1, 1]
// RANK0-NEXT:   %[[X4:.+]] = tensor.insert_slice %[[A]] into %[[X3]][0, 0] [33, 16] [1, 1]
// RANK0-NEXT:   %[[D:.+]] = neuroshard.exchange_gradient %[[X4]] rank 0 widths [48, 64] batches [33, 32] : tensor<33x112xf32> -> tensor<65x48xf32>
// RANK0-NEXT:   neuroshard.fused_embedding_bag_sgd device 0 [
// RANK0-NEXT:     @split cols 0 to 16 sum(%[[I0]], %[[O0]] : tensor<?xi32>, tensor<66xi32>),
// RANK0-NEXT:     @split cols 48 to 64 sum(%[[I0]], %[[O0]] : tensor<?xi32>, tensor<66xi32>),
// RANK0-NEXT:     @long cols 0 to 16 mean(%[[I2]], %[[O2]] : tensor<?xi64>, tensor<66xi64>)
// RANK0-NEXT:   ] gradient %[[D]] lr %[[LR]] : tensor<65x48xf32>
// RANK0-NEXT:   return

// LOWER: func.func private @neuroshard_exchange_gradient_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?xi64>, memref<?xi64>, i64) attributes {llvm.emit_c_interface}
// LOWER: func.func @embed_backward(
// LOWER-SAME: f32, %{{.+}}: memref<?xf32> {neuroshard.weights}, %{{.+}}: memref<?xi64> {neuroshard.layout})
// LOWER: call @neuroshard_exchange_gradient_f32(
// LOWER: call @neuroshard_bag_backward_sgd_i64(

// KEEP: neuroshard.exchange_gradient
// KEEP: neuroshard.fused_embedding_bag_sgd device 0

// NONE-NOT: _backward
// NONE-NOT: exchange_gradient

// A rank whose result is its exchanged slice itself, and a rank whose
// results leave columns out: those get a zero gradient.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<2x8xf32> {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    return %x#1 : tensor<2x8xf32>
  }
}
// CHECK:      func.func @f_backward(%[[I:.+]]: tensor<?xi32>, %[[O:.+]]: tensor<5xi32>, %[[G:.+]]: tensor<2x8xf32>, %[[LR:.+]]: f32) attributes {neuroshard.backward_of = @f} {
// CHECK-NEXT:   %[[D:.+]] = neuroshard.exchange_gradient %[[G]] rank 1 widths [4, 4] batches [2, 2] : tensor<2x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:   neuroshard.fused_embedding_bag_sgd device 1 [
// CHECK-NEXT:     @t cols 4 to 8 sum(%[[I]], %[[O]] : tensor<?xi32>, tensor<5xi32>)
// CHECK-NEXT:   ] gradient %[[D]] lr %[[LR]] : tensor<4x4xf32>

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  func.func @g(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<2x2xf32> {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    %s = tensor.extract_slice %x#1[0, 5] [2, 2] [1, 1] : tensor<2x8xf32> to tensor<2x2xf32>
    return %s : tensor<2x2xf32>
  }
}
// CHECK:      func.func @g_backward(%{{.+}}: tensor<?xi32>, %{{.+}}: tensor<5xi32>, %[[G:.+]]: tensor<2x2xf32>, %{{.+}}: f32)
// CHECK-NEXT:   %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<2x8xf32>
// CHECK-NEXT:   %[[X:.+]] = tensor.insert_slice %[[G]] into %[[Z]][0, 5] [2, 2] [1, 1]
// CHECK-NEXT:   neuroshard.exchange_gradient %[[X]] rank 1
