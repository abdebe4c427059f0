// RUN: neuroshard-opt %s --neuroshard-to-cuda | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-to-cuda="chip=sm_90a features=+ptx80" | FileCheck %s --check-prefix=OLDPTX
// RUN: neuroshard-opt %s --neuroshard-to-cuda="chip=sm_100 features=+ptx86,+foo" | FileCheck %s --check-prefix=NEWPTX
// RUN: neuroshard-opt %s --neuroshard-to-cuda="chip=sm_80" | FileCheck %s --check-prefix=SM80
// RUN: neuroshard-opt %s --neuroshard-cuda-pipeline="format=isa host=false" | FileCheck %s --check-prefix=PTX

// On sm_90 and later the backward kernel adds the 16-byte path's four
// updates with one red.global.add.v4.f32 (inline PTX on the address of the
// element, descriptor offset included) and needs PTX ISA 8.1, which the pass
// asks for when the features name no PTX version. The scalar path and the
// forward kernels have no inline assembly.

// CHECK: gpu.module @neuroshard_kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">]
// CHECK-LABEL: gpu.func @neuroshard_bag_forward_i32(
// CHECK-NOT: llvm.inline_asm
// CHECK-LABEL: gpu.func @neuroshard_bag_backward_sgd_i32(
// CHECK-SAME: %[[W:[^:]*]]: memref<?xf32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x?xf32>, %{{.*}}: f32) kernel
// CHECK: %[[BASE:.*]], %[[OFFSET:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[W]]
// CHECK: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: arith.addi %[[OFFSET]]
// CHECK: %[[ADDRESS:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[E0:.*]] = vector.extract %{{.*}}[0] : f32 from vector<4xf32>
// CHECK: %[[E3:.*]] = vector.extract %{{.*}}[3] : f32 from vector<4xf32>
// CHECK: llvm.inline_asm has_side_effects "{ .reg .b64 g; cvta.to.global.u64 g, $0; red.global.add.v4.f32 [g], {$1, $2, $3, $4}; }", "l,f,f,f,f,~{memory}" %[[ADDRESS]], %[[E0]], %{{.*}}, %{{.*}}, %[[E3]] : (i64, f32, f32, f32, f32) -> ()
// CHECK-NOT: memref.atomic_rmw addf %{{.*}} : (f32, memref<?xf32>) -> f32
// CHECK: } else {
// CHECK: memref.atomic_rmw addf
// CHECK-LABEL: gpu.func @neuroshard_bag_backward_sgd_i64(
// CHECK: llvm.inline_asm has_side_effects

// An explicit PTX version below 8.1 keeps scalar atomics; a later one keeps
// the features as given.
// OLDPTX: #nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// OLDPTX-NOT: llvm.inline_asm
// NEWPTX: #nvvm.target<O = 3, chip = "sm_100", features = "+ptx86,+foo">
// NEWPTX: llvm.inline_asm

// Chips before sm_90 have no vector reduction.
// SM80: #nvvm.target<O = 3, chip = "sm_80">
// SM80-NOT: llvm.inline_asm

// PTX: .version 8.1
// The metadata's i64 fields load whole.
// PTX-LABEL: .entry neuroshard_bag_forward_i32(
// PTX: ld.global.b64
// PTX-LABEL: .entry neuroshard_bag_backward_sgd_i32(
// PTX: cvta.to.global.u64 g, %rd{{[0-9]+}}; red.global.add.v4.f32 [g], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// PTX: {{atom|red}}.global.add.f32
module {
}
