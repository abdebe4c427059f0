// RUN: neuroshard-opt %s --neuroshard-to-cuda --neuroshard-cuda-launch | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-to-cuda | FileCheck %s --check-prefix=CALLS
// RUN: neuroshard-opt %s --neuroshard-cuda-pipeline="format=isa" | FileCheck %s --check-prefix=LLVM
// RUN: neuroshard-opt %s --neuroshard-cuda-pipeline="format=isa" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=IR

// Host calls to the kernel symbols (the memref form the lookup lowering
// emits) become launches on the GPU: upload, launch with the geometry of
// KernelABI.h, download of the result, free, wait.

// CHECK-NOT: func.func private @neuroshard_bag
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[META:[^:]*]]: memref<?xi64>, %[[LAYOUT:[^:]*]]: memref<?xi64>, %[[W:[^:]*]]: memref<?xf32>, %[[I32:[^:]*]]: memref<?xi32>, %[[O32:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?x?xf32>, %[[I64:[^:]*]]: memref<?xi64>, %[[O64:[^:]*]]: memref<?xi64>, %[[LR:[^:]*]]: f32)
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[DMETA:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] (%{{.*}}) : memref<?xi64>
// CHECK: gpu.memcpy async [%[[T1]]] %[[DMETA]], %[[META]]
// CHECK: %[[DW:.*]], %{{.*}} = gpu.alloc async {{.*}} : memref<?xf32>
// CHECK: gpu.memcpy async [%{{.*}}] %[[DW]], %[[W]]
// The forward output is written in full by the kernel: no upload.
// CHECK: %[[DOUT:.*]], %[[TOUT:.*]] = gpu.alloc async [%{{.*}}] (%{{.*}}, %{{.*}}) : memref<?x?xf32>
// CHECK-NOT: gpu.memcpy
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[TL:.*]] = gpu.launch_func async [%[[TOUT]]] @neuroshard_kernels::@neuroshard_bag_forward_i32 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%[[C256]], %{{.*}}, %{{.*}}) args(%[[DMETA]] : memref<?xi64>, %{{.*}} : memref<?xi64>, %[[DW]] : memref<?xf32>, %{{.*}} : memref<?xi32>, %{{.*}} : memref<?xi32>, %[[DOUT]] : memref<?x?xf32>)
// CHECK: %[[TD:.*]] = gpu.memcpy async [%[[TL]]] %[[OUT]], %[[DOUT]]
// CHECK-COUNT-6: gpu.dealloc async
// CHECK: gpu.wait [
// The backward kernel updates the weights: they come back to the host.
// CHECK: gpu.launch_func async [%{{.*}}] @neuroshard_kernels::@neuroshard_bag_backward_sgd_i64 {{.*}} args({{.*}}, %[[LR]] : f32)
// CHECK-NEXT: gpu.memcpy async [%{{.*}}] %[[W]], %{{.*}} : memref<?xf32>, memref<?xf32>
// CHECK: gpu.module @neuroshard_kernels

// Until --neuroshard-cuda-launch, the calls stay calls.
// CALLS: func.func private @neuroshard_bag_forward_i32
// CALLS: call @neuroshard_bag_forward_i32(
// CALLS-NOT: gpu.launch_func
// CALLS: gpu.module @neuroshard_kernels

// LLVM: llvm.func @step(
// LLVM: llvm.call @mgpuStreamCreate()
// LLVM: llvm.call @mgpuMemAlloc(
// LLVM: gpu.launch_func <%{{.*}} : !llvm.ptr> @neuroshard_kernels::@neuroshard_bag_forward_i32
// LLVM: llvm.call @mgpuStreamSynchronize(
// LLVM: gpu.binary @neuroshard_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">, properties = {{.*}}, assembly = "

// The launch passes 5 parameters per 1-D memref and 7 for the 2-D one
// (32 forward, 33 backward with lr), as KernelABI.h says.
// IR-DAG: declare ptr @mgpuModuleLoadJIT(ptr, i32)
// IR-DAG: declare ptr @mgpuModuleGetFunction(ptr, ptr)
// IR-DAG: declare void @mgpuLaunchKernel(ptr, i64, i64, i64, i64, i64, i64, i32, ptr, ptr, ptr, i64)
// IR-DAG: call void @mgpuLaunchKernel(ptr %{{.*}}, i64 %{{.*}}, i64 %{{.*}}, i64 1, i64 256, i64 1, i64 1, i32 0, ptr %{{.*}}, ptr %{{.*}}, ptr null, i64 32)
// IR-DAG: call void @mgpuLaunchKernel(ptr %{{.*}}, i64 %{{.*}}, i64 %{{.*}}, i64 1, i64 256, i64 1, i64 1, i32 0, ptr %{{.*}}, ptr %{{.*}}, ptr null, i64 33)
// IR-DAG: declare ptr @mgpuMemAlloc(i64, ptr, i8)
// IR-DAG: declare void @mgpuMemcpy(ptr, ptr, i64, ptr)
// IR-DAG: declare void @mgpuMemFree(ptr, ptr)

module {
  func.func private @neuroshard_bag_forward_i32(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>)
  func.func private @neuroshard_bag_backward_sgd_i64(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>, f32)
  func.func @step(%meta: memref<?xi64>, %layout: memref<?xi64>, %w: memref<?xf32>, %i32: memref<?xi32>, %o32: memref<?xi32>, %out: memref<?x?xf32>, %i64: memref<?xi64>, %o64: memref<?xi64>, %lr: f32) {
    func.call @neuroshard_bag_forward_i32(%meta, %layout, %w, %i32, %o32, %out) : (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>) -> ()
    func.call @neuroshard_bag_backward_sgd_i64(%meta, %layout, %w, %i64, %o64, %out, %lr) : (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>, f32) -> ()
    return
  }
}
