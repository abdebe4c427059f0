// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: neuroshard-opt %s --neuroshard-cuda-pipeline="chip=sm_90 toolkit=%cuda_toolkit" -o %t/host.mlir
// RUN: FileCheck %s --input-file=%t/host.mlir
// RUN: neuroshard-opt %s --neuroshard-cuda-pipeline="host=false" --neuroshard-export-cuda="manifest=%t/m.txt binary=%t/kernels.cubin" -o /dev/null
// RUN: FileCheck %s --input-file=%t/m.txt --check-prefix=MANIFEST
// RUN: %python -c "import sys; d = open(sys.argv[1], 'rb').read(); print(d[:4] == b'\x7fELF', [k for k in (b'neuroshard_bag_forward_i32', b'neuroshard_bag_forward_i64', b'neuroshard_bag_backward_sgd_i32', b'neuroshard_bag_backward_sgd_i64') if k in d])" %t/kernels.cubin | FileCheck %s --check-prefix=ELF

// With ptxas in the toolkit, format=auto builds a cubin (an ELF object with
// the four kernels) through ptxas and embeds it in the host module.
// CHECK: llvm.func @lookup(
// CHECK: gpu.binary @neuroshard_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">, properties = {{{.*}}ISAToBinaryTimeInMs{{.*}}}, bin = "\7FELF

// MANIFEST: module kernels.cubin cubin sm_90

// ELF: True [b'neuroshard_bag_forward_i32', b'neuroshard_bag_forward_i64', b'neuroshard_bag_backward_sgd_i32', b'neuroshard_bag_backward_sgd_i64']
module {
  neuroshard.table @t : rows 64, dim 16, f32 {pooling_factor = 3.0 : f64, access_hist = array<f64: 0.25, 0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func private @neuroshard_bag_forward_i32(memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>)
  func.func @lookup(%meta: memref<?xi64>, %layout: memref<?xi64>, %w: memref<?xf32>, %i: memref<?xi32>, %o: memref<?xi32>, %out: memref<?x?xf32>) {
    func.call @neuroshard_bag_forward_i32(%meta, %layout, %w, %i, %o, %out) : (memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<?xi32>, memref<?xi32>, memref<?x?xf32>) -> ()
    return
  }
  func.func @model(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x16xf32> {
    %0 = neuroshard.embedding_bag @t(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}
