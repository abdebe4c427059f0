// REQUIRES: cuda
// RUN: neuroshard-opt %s --neuroshard-cuda-pipeline="format=isa" | mlir-runner --entry-point-result=void --shared-libs=%shlibdir/libneuroshard_cuda_runtime.so,%mlir_libdir/libmlir_runner_utils.so,%mlir_libdir/libmlir_c_runner_utils.so | FileCheck %s

// The host path end to end: kernel calls in the memref form of KernelABI.h
// become launches through the mgpu* entry points of NeuroShard's runtime.
// One table (row r = [10r, 10r+1, 10r+2, 10r+3]) and three shards over two
// bags: columns 0..4 summed (16-byte path), columns 1..3 averaged and
// columns 2..4 summed (scalar path, width 2), with an empty bag and a
// repeated index.

// CHECK: [40, 42, 44, 46, 21, 22, 2, 3]
// CHECK-NEXT: [0, 0, 0, 0, 1, 2, 32, 33]
// Backward with lr = 1 and an all-ones gradient, repeated rows included.
// CHECK: [0, 0, 0, 2, 9, 10, 11, 12, 20, 20, 21, 23, 29, 30, 30, 31]
module {
  memref.global "private" constant @meta : memref<24xi64> = dense<[
      0, 4, 0, 4, 0, 0, 0, 0,
      0, 4, 1, 2, 4, 2, 3, 1,
      0, 4, 2, 2, 6, 5, 6, 0]>
  memref.global "private" constant @layout : memref<1xi64> = dense<[0]>
  memref.global "private" @weights : memref<16xf32> = dense<[
      0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0,
      20.0, 21.0, 22.0, 23.0, 30.0, 31.0, 32.0, 33.0]>
  memref.global "private" constant @indices : memref<7xi32> = dense<[1, 3, 2, 0, 0, 0, 3]>
  memref.global "private" constant @offsets : memref<9xi32> = dense<[0, 2, 2, 0, 1, 3, 0, 1, 2]>
  memref.global "private" @out : memref<2x8xf32> = dense<-7.0>
  memref.global "private" constant @grad : memref<2x8xf32> = dense<1.0>

  func.func private @neuroshard_bag_forward_i32(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>)
  func.func private @neuroshard_bag_backward_sgd_i32(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>, f32)
  func.func private @printMemrefF32(memref<*xf32>)

  func.func @main() {
    %meta = memref.get_global @meta : memref<24xi64>
    %layout = memref.get_global @layout : memref<1xi64>
    %weights = memref.get_global @weights : memref<16xf32>
    %indices = memref.get_global @indices : memref<7xi32>
    %offsets = memref.get_global @offsets : memref<9xi32>
    %out = memref.get_global @out : memref<2x8xf32>
    %grad = memref.get_global @grad : memref<2x8xf32>
    %m = memref.cast %meta : memref<24xi64> to memref<?xi64>
    %l = memref.cast %layout : memref<1xi64> to memref<?xi64>
    %w = memref.cast %weights : memref<16xf32> to memref<?xf32>
    %i = memref.cast %indices : memref<7xi32> to memref<?xi32>
    %o = memref.cast %offsets : memref<9xi32> to memref<?xi32>
    %y = memref.cast %out : memref<2x8xf32> to memref<?x?xf32>
    %g = memref.cast %grad : memref<2x8xf32> to memref<?x?xf32>
    %lr = arith.constant 1.0 : f32
    func.call @neuroshard_bag_forward_i32(%m, %l, %w, %i, %o, %y) : (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>) -> ()
    %py = memref.cast %out : memref<2x8xf32> to memref<*xf32>
    func.call @printMemrefF32(%py) : (memref<*xf32>) -> ()
    func.call @neuroshard_bag_backward_sgd_i32(%m, %l, %w, %i, %o, %g, %lr) : (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>, f32) -> ()
    %pw = memref.cast %weights : memref<16xf32> to memref<*xf32>
    func.call @printMemrefF32(%pw) : (memref<*xf32>) -> ()
    return
  }
}
