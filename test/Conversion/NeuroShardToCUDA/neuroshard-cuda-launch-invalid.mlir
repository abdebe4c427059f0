// RUN: neuroshard-opt %s -split-input-file -verify-diagnostics --neuroshard-to-cuda --neuroshard-cuda-launch
// RUN: not neuroshard-opt %S/neuroshard-cuda-launch.mlir --neuroshard-cuda-launch 2>&1 | FileCheck %s --check-prefix=NOKERNELS

// A call to a kernel symbol must have the memref signature of KernelABI.h.
module {
  func.func private @neuroshard_bag_forward_i32(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>)
  func.func @wrong_index_type(%m: memref<?xi64>, %w: memref<?xf32>, %o: memref<?x?xf32>) {
    // expected-error @+1 {{'func.call' op calls 'neuroshard_bag_forward_i32' with (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>) -> () but the kernel takes (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>) -> ()}}
    func.call @neuroshard_bag_forward_i32(%m, %m, %w, %m, %m, %o) : (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>) -> ()
    return
  }
}

// -----

module {
  func.func private @neuroshard_bag_backward_sgd_i64(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>)
  func.func @missing_lr(%m: memref<?xi64>, %w: memref<?xf32>, %o: memref<?x?xf32>) {
    // expected-error @+1 {{calls 'neuroshard_bag_backward_sgd_i64' with (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>) -> () but the kernel takes (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>, f32) -> ()}}
    func.call @neuroshard_bag_backward_sgd_i64(%m, %m, %w, %m, %m, %o) : (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>) -> ()
    return
  }
}

// -----

module {
  func.func private @neuroshard_bag_forward_i64(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<4x8xf32>)
  func.func @static_output(%m: memref<?xi64>, %w: memref<?xf32>, %o: memref<4x8xf32>) {
    // expected-error @+1 {{but the kernel takes (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?x?xf32>) -> ()}}
    func.call @neuroshard_bag_forward_i64(%m, %m, %w, %m, %m, %o) : (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<4x8xf32>) -> ()
    return
  }
}

// -----

// The pass runs once: a second run would find its own kernels module.
module attributes {gpu.container_module} {
  // expected-error @+1 {{'gpu.module' op already defines 'neuroshard_kernels', the symbol of the kernels module; --neuroshard-to-cuda runs once per module}}
  gpu.module @neuroshard_kernels {
  }
}

// NOKERNELS: error: 'func.call' op calls a generic kernel but the module has no gpu.module or gpu.binary @neuroshard_kernels; run --neuroshard-to-cuda first
