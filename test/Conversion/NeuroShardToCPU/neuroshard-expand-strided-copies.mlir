// RUN: neuroshard-opt %s --neuroshard-expand-strided-copies | FileCheck %s

// A copy out of a strided slice becomes a loop nest of loads and stores.
// CHECK-LABEL: func.func @strided(
// CHECK-SAME:    %[[SRC:.*]]: memref<4x2xf32, strided<[8, 1], offset: 2>>, %[[DST:.*]]: memref<4x2xf32>)
// CHECK-NOT:     memref.copy
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             %[[V:.*]] = memref.load %[[SRC]][%[[I]], %[[J]]]
// CHECK:             memref.store %[[V]], %[[DST]][%[[I]], %[[J]]]
func.func @strided(%src: memref<4x2xf32, strided<[8, 1], offset: 2>>,
                   %dst: memref<4x2xf32>) {
  memref.copy %src, %dst : memref<4x2xf32, strided<[8, 1], offset: 2>> to memref<4x2xf32>
  return
}

// A copy between identity layouts stays: the LLVM lowering makes it a memcpy.
// CHECK-LABEL: func.func @contiguous(
// CHECK:         memref.copy
// CHECK-NOT:     scf.for
func.func @contiguous(%src: memref<4x2xf32>, %dst: memref<4x2xf32>) {
  memref.copy %src, %dst : memref<4x2xf32> to memref<4x2xf32>
  return
}
