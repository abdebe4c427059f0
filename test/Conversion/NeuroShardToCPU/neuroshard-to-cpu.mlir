// RUN: neuroshard-opt %s --neuroshard-to-cpu | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-to-cpu | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// The whole pipeline ends in the LLVM dialect: the entry function writes its
// result through a trailing out-parameter that the kernel fills directly.

// CHECK-NOT:   tensor.
// CHECK-NOT:   memref.
// CHECK-NOT:   neuroshard.table
// CHECK:       llvm.func @model(
// CHECK:         llvm.call @neuroshard_bag_forward_i32(
// CHECK-NOT:     llvm.call @malloc
// CHECK:         llvm.return
// CHECK:       llvm.func @_mlir_ciface_neuroshard_bag_forward_i32(
// CHECK:       llvm.func @_mlir_ciface_neuroshard_bag_backward_sgd_i64(

// LLVMIR:      define void @model(
// LLVMIR:      load <8 x float>
// LLVMIR:      store <8 x float>
module {
  neuroshard.table @a : rows 100, dim 16, f32
  func.func @model(%idx: tensor<?xi32>, %off: tensor<9xi32>) -> tensor<8x16xf32> {
    %0 = neuroshard.embedding_bag @a(%idx, %off) mean
        : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}
