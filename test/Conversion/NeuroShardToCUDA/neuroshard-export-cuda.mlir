// RUN: rm -rf %t && mkdir -p %t
// RUN: neuroshard-opt %s --neuroshard-shard --neuroshard-cuda-pipeline="chip=sm_90 format=isa host=false" --neuroshard-export-cuda="manifest=%t/model.txt binary=%t/kernels.ptx seed=7 lr=0.5" -o %t/out.mlir
// RUN: FileCheck %s --input-file=%t/kernels.ptx --check-prefix=PTX
// RUN: FileCheck %s --input-file=%t/model.txt --check-prefix=MANIFEST
// RUN: FileCheck %s --input-file=%t/out.mlir --check-prefix=MLIR

// The sharded model (a table split over two devices and a small mean-pooled
// one) gets the generic kernels as PTX, written out with its manifest.

// PTX: .target sm_90
// PTX-LABEL: .entry neuroshard_bag_forward_i32(
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: shfl.sync.idx.b32
// PTX-DAG: ld.global{{(.nc)?}}.v4.{{f32|b32}}
// PTX-DAG: st.global.v4.{{f32|b32}}
// PTX-NOT: atom.global
// PTX-LABEL: .entry neuroshard_bag_forward_i64(
// PTX-DAG: shfl.sync.idx.b32
// PTX-DAG: ld.global{{(.nc)?}}.v4.{{f32|b32}}
// PTX-NOT: atom.global
// PTX-LABEL: .entry neuroshard_bag_backward_sgd_i32(
// PTX-DAG: shfl.sync.idx.b32
// PTX-DAG: ld.global{{(.nc)?}}.v4.{{f32|b32}}
// PTX-DAG: {{atom|red}}.global.add.f32
// PTX-NOT: st.global
// PTX-LABEL: .entry neuroshard_bag_backward_sgd_i64(
// PTX: {{atom|red}}.global.add.f32

// MANIFEST: neuroshard-cuda-manifest 5
// MANIFEST-NEXT: module kernels.ptx ptx sm_90
// MANIFEST-NEXT: kernels neuroshard_bag_forward_i32 neuroshard_bag_forward_i64 neuroshard_bag_backward_sgd_i32 neuroshard_bag_backward_sgd_i64
// MANIFEST-NEXT: run 256 8 7 0.5
// MANIFEST-NEXT: table big 5000000 64 4 0.5 0.5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
// MANIFEST-NEXT: table small 100 12 2 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
// MANIFEST-NEXT: lookup 0 0
// MANIFEST-NEXT: lookup 1 0
// MANIFEST-NEXT: device {{[01]}} i64 0 8
// Every shard of a table placed whole or by columns holds all its rows.
// MANIFEST-NEXT: shard 0 {{[0-9]+}} {{[0-9]+}} 0 5000000 0 0 sum
// MANIFEST: device {{[01]}} i64 0 8
// MANIFEST-NOT: device

// The module keeps its lookups (no host hookup requested) and holds the
// kernels as a gpu.binary.
// MLIR: neuroshard.fused_embedding_bag
// MLIR: gpu.binary @neuroshard_kernels
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @big : rows 5000000, dim 64, f32 {pooling_factor = 4.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @small : rows 100, dim 12, f32 {pooling_factor = 2.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @model(%i: tensor<?xi64>, %o: tensor<9xi64>, %j: tensor<?xi32>, %p: tensor<9xi32>) -> (tensor<8x64xf32>, tensor<8x12xf32>) {
    %0 = neuroshard.embedding_bag @big(%i, %o) sum : (tensor<?xi64>, tensor<9xi64>) -> tensor<8x64xf32>
    %1 = neuroshard.embedding_bag @small(%j, %p) mean : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x12xf32>
    return %0, %1 : tensor<8x64xf32>, tensor<8x12xf32>
  }
}
