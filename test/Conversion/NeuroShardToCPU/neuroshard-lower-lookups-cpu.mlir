// RUN: neuroshard-opt %s --neuroshard-lower-lookups-cpu --split-input-file | FileCheck %s

// An unsharded lookup: one kernel call over the lookup's own buffers.

// CHECK-LABEL: module attributes {neuroshard.weight_tables = ["a", "b"]}
// CHECK-NOT:   neuroshard.table
// CHECK-LABEL: func.func @one(
// CHECK-SAME:    %[[IDX:.*]]: tensor<?xi64>, %[[OFF:.*]]: tensor<5xi64>,
// CHECK-SAME:    %[[W:.*]]: memref<?xf32> {neuroshard.weights},
// CHECK-SAME:    %[[L:.*]]: memref<?xi64> {neuroshard.layout})
// CHECK:         %[[I:.*]] = bufferization.to_buffer %[[IDX]] read_only
// CHECK:         %[[O:.*]] = bufferization.to_buffer %[[OFF]] read_only
// CHECK:         %[[META:.*]] = memref.alloca() : memref<8xi64>
// CHECK:         %[[OUT:.*]] = memref.alloc() : memref<4x12xf32>
// CHECK:         call @neuroshard_bag_forward_i64(%{{.*}}, %[[L]], %[[W]], %[[I]], %{{.*}}, %{{.*}})
// CHECK:         %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK:         return %[[R]]
// CHECK:       func.func @neuroshard_bag_forward_i32({{.*}}) attributes {llvm.emit_c_interface}
// CHECK:       func.func @neuroshard_bag_forward_i64({{.*}}) attributes {llvm.emit_c_interface}
// CHECK:       func.func @neuroshard_bag_backward_sgd_i32({{.*}}, %{{.*}}: f32) attributes {llvm.emit_c_interface}
// CHECK:       func.func @neuroshard_bag_backward_sgd_i64({{.*}}, %{{.*}}: f32) attributes {llvm.emit_c_interface}
module {
  neuroshard.table @a : rows 100, dim 12, f32
  neuroshard.table @b : rows 50, dim 8, f32
  func.func @one(%idx: tensor<?xi64>, %off: tensor<5xi64>) -> tensor<4x12xf32> {
    %0 = neuroshard.embedding_bag @a(%idx, %off) sum
        : (tensor<?xi64>, tensor<5xi64>) -> tensor<4x12xf32>
    return %0 : tensor<4x12xf32>
  }
}

// -----

// A fused lookup over shards of two lookups with different index types:
// indices and offsets are concatenated into i64 buffers (sign-extended), the
// metadata has one row per shard, and the exchange becomes slices and
// concatenations.

// CHECK-LABEL: func.func @fused(
// CHECK:         %[[CAT:.*]] = memref.alloc(%{{.*}}) : memref<?xi64>
// CHECK:         %[[OFFS:.*]] = memref.alloc(%{{.*}}) : memref<?xi64>
// CHECK:         scf.for
// CHECK:           arith.extsi %{{.*}} : i32 to i64
// CHECK:         memref.alloca() : memref<16xi64>
// CHECK:         call @neuroshard_bag_forward_i64(%{{.*}}, %{{.*}}, %{{.*}}, %[[CAT]], %[[OFFS]], %{{.*}})
// CHECK:         call @neuroshard_bag_forward_i64(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:         tensor.extract_slice %{{.*}}[0, 0] [2, 12] [1, 1]
// CHECK:         tensor.extract_slice %{{.*}}[0, 0] [2, 4] [1, 1]
// CHECK:         tensor.concat dim(1)
// CHECK:         tensor.extract_slice %{{.*}}[2, 0] [2, 12] [1, 1]
// CHECK:         tensor.extract_slice %{{.*}}[2, 0] [2, 4] [1, 1]
// CHECK:         tensor.concat dim(1)
// CHECK-NOT:     neuroshard.
module {
  neuroshard.table @a : rows 100, dim 8, f32
  neuroshard.table @b : rows 50, dim 8, f32
  func.func @fused(%i0: tensor<?xi64>, %o0: tensor<5xi64>,
                   %i1: tensor<?xi32>, %o1: tensor<5xi32>)
      -> (tensor<2x16xf32>, tensor<2x16xf32>) {
    %f0 = neuroshard.fused_embedding_bag device 0 [
        @a cols 0 to 4 sum(%i0, %o0 : tensor<?xi64>, tensor<5xi64>),
        @b cols 0 to 8 mean(%i1, %o1 : tensor<?xi32>, tensor<5xi32>)
      ] : tensor<4x12xf32>
    %f1 = neuroshard.fused_embedding_bag device 1 [
        @a cols 4 to 8 sum(%i0, %o0 : tensor<?xi64>, tensor<5xi64>)
      ] : tensor<4x4xf32>
    %r:2 = neuroshard.all_to_all %f0, %f1
        : tensor<4x12xf32>, tensor<4x4xf32> -> tensor<2x16xf32>, tensor<2x16xf32>
    return %r#0, %r#1 : tensor<2x16xf32>, tensor<2x16xf32>
  }
}

// -----

// The sharding pass's form: every device's rows stacked back into the whole
// batch (devices past a small batch own none). In one address space that is
// the devices' buffers side by side: one column concatenation, no slices.

// CHECK-LABEL: module attributes {neuroshard.weight_tables = ["a", "b"]}
// CHECK-LABEL: func.func @stacked(
// CHECK:         %[[D0:.*]] = bufferization.to_tensor %{{.*}} : memref<3x12xf32>
// CHECK:         %[[D1:.*]] = bufferization.to_tensor %{{.*}} : memref<3x4xf32>
// CHECK-NOT:     tensor.extract_slice
// CHECK:         %[[ALL:.*]] = tensor.concat dim(1) %[[D0]], %[[D1]] : (tensor<3x12xf32>, tensor<3x4xf32>) -> tensor<3x16xf32>
// CHECK-NOT:     tensor.extract_slice
// CHECK:         return %[[ALL]]
module {
  neuroshard.table @a : rows 100, dim 8, f32
  neuroshard.table @b : rows 50, dim 8, f32
  func.func @stacked(%i0: tensor<?xi64>, %o0: tensor<4xi64>,
                     %i1: tensor<?xi64>, %o1: tensor<4xi64>) -> tensor<3x16xf32> {
    %f0 = neuroshard.fused_embedding_bag device 0 [
        @a cols 0 to 4 sum(%i0, %o0 : tensor<?xi64>, tensor<4xi64>),
        @b cols 0 to 8 mean(%i1, %o1 : tensor<?xi64>, tensor<4xi64>)
      ] : tensor<3x12xf32>
    %f1 = neuroshard.fused_embedding_bag device 1 [
        @a cols 4 to 8 sum(%i0, %o0 : tensor<?xi64>, tensor<4xi64>)
      ] : tensor<3x4xf32>
    %empty = tensor.empty() : tensor<3x0xf32>
    %r:4 = neuroshard.all_to_all %f0, %f1, %empty, %empty
        : tensor<3x12xf32>, tensor<3x4xf32>, tensor<3x0xf32>, tensor<3x0xf32>
        -> tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>, tensor<0x16xf32>
    %all = tensor.concat dim(0) %r#0, %r#1, %r#2
        : (tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<3x16xf32>
    return %all : tensor<3x16xf32>
  }
}
