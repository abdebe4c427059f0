// RUN: rm -rf %t && mkdir -p %t
// RUN: neuroshard-opt %s -split-input-file -verify-diagnostics --neuroshard-cuda-pipeline="format=isa host=false" --neuroshard-export-cuda="manifest=%t/m.txt binary=%t/k.ptx"
// RUN: not neuroshard-opt %s -split-input-file --neuroshard-export-cuda 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not neuroshard-opt %s -split-input-file --neuroshard-export-cuda="manifest=%t/m.txt binary=%t/k.ptx" 2>&1 | FileCheck %s --check-prefix=NOBINARY
// RUN: not neuroshard-opt %S/neuroshard-to-cuda-kernels.mlir --neuroshard-cuda-pipeline="format=isa host=false" --neuroshard-export-cuda="manifest=%t/m.txt binary=%t/k.ptx" 2>&1 | FileCheck %s --check-prefix=NOLOOKUP
// RUN: not neuroshard-opt %S/neuroshard-export-cuda.mlir --neuroshard-cuda-pipeline="format=isa host=false" --neuroshard-export-cuda="manifest=%t/missing/dir/m.txt binary=%t/k.ptx" 2>&1 | FileCheck %s --check-prefix=WRITE -DDIR=%t

// OPTIONS: error: --neuroshard-export-cuda needs manifest=FILE and binary=FILE
// NOBINARY: error: the module has no gpu.binary @neuroshard_kernels; run --neuroshard-cuda-pipeline (or --neuroshard-to-cuda and gpu-module-to-binary) first
// NOLOOKUP: error: the module has no neuroshard.embedding_bag or neuroshard.fused_embedding_bag lookups to export
// WRITE: error: cannot write the manifest '[[DIR]]/missing/dir/m.txt':

module {
  // expected-error @+1 {{table 't' has no pooling_factor and access_hist; the runner generates its inputs from them}}
  neuroshard.table @t : rows 10, dim 4, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<3xi32>) -> tensor<2x4xf32> {
    %0 = neuroshard.embedding_bag @t(%i, %o) sum : (tensor<?xi32>, tensor<3xi32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{table 'h' has element type 'f16'; the CUDA kernels handle f32 tables only}}
  neuroshard.table @h : rows 10, dim 4, f16 {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<3xi32>) -> tensor<2x4xf16> {
    %0 = neuroshard.embedding_bag @h(%i, %o) sum : (tensor<?xi32>, tensor<3xi32>) -> tensor<2x4xf16>
    return %0 : tensor<2x4xf16>
  }
}

// -----

module {
  neuroshard.table @a : rows 10, dim 4, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<3xi32>, %p: tensor<5xi32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) {
    // expected-note @+1 {{batch of 2 here}}
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<3xi32>) -> tensor<2x4xf32>
    // expected-error @+1 {{'neuroshard.embedding_bag' op has a batch of 4 but other lookups use 2; the manifest holds one batch size}}
    %1 = neuroshard.embedding_bag @a(%i, %p) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x4xf32>
    return %0, %1 : tensor<2x4xf32>, tensor<4x4xf32>
  }
}

// -----

module {
  neuroshard.table @a : rows 10, dim 4, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<?xi32>) -> tensor<?x4xf32> {
    // expected-error @+1 {{has a dynamic batch size; the manifest needs a static batch}}
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<?xi32>) -> tensor<?x4xf32>
    return %0 : tensor<?x4xf32>
  }
}

// -----

module {
  neuroshard.table @r : rows 100, dim 4, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<3xi32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{'neuroshard.fused_embedding_bag' op entry 0 reads rows [0, 40) of the 100 rows of table 'r' on device 0 but its indices are not a block of a neuroshard.bucketize; the manifest draws a row piece's indices from its whole lookup}}
    %f = neuroshard.fused_embedding_bag device 0 [
        @r rows 0 to 40 cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<3xi32>)
      ] : tensor<2x4xf32>
    return %f : tensor<2x4xf32>
  }
}

// -----

module {
  neuroshard.table @r : rows 100, dim 4, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<3xi32>) -> tensor<2x4xf32> {
    %bi:2, %bo:2 = neuroshard.bucketize %i, %o rows [0, 40, 100]
        : tensor<?xi32>, tensor<3xi32> -> (tensor<?xi32>, tensor<?xi32>), (tensor<3xi32>, tensor<3xi32>)
    // expected-error @+1 {{'neuroshard.fused_embedding_bag' op entry 0 reads rows [0, 40) of the 100 rows of table 'r' on device 0 but its indices are the block of rows [40, 100) of a neuroshard.bucketize}}
    %f = neuroshard.fused_embedding_bag device 0 [
        @r rows 0 to 40 cols 0 to 4 sum(%bi#1, %bo#1 : tensor<?xi32>, tensor<3xi32>)
      ] : tensor<2x4xf32>
    return %f : tensor<2x4xf32>
  }
}

// -----

module {
  neuroshard.table @d : rows 10, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>, #neuroshard.shard<cols = 0 to 4, device = 1, replica>] {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<3xi32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{'neuroshard.fused_embedding_bag' op entry 0 reads the replica of table 'd' on device 1 but its offsets are not a static slice of its lookup's offsets; the manifest gives a replica its range of the lookup's bags}}
    %f = neuroshard.fused_embedding_bag device 1 [
        @d cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<3xi32>)
      ] : tensor<2x4xf32>
    return %f : tensor<2x4xf32>
  }
}

// -----

// A replica's offsets are a contiguous slice of its lookup's: one per bag
// and one past the last.
module {
  neuroshard.table @d : rows 10, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>, #neuroshard.shard<cols = 0 to 4, device = 1, replica>] {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<7xi32>) -> tensor<2x4xf32> {
    %a = tensor.extract_slice %o[0] [3] [2] : tensor<7xi32> to tensor<3xi32>
    // expected-error @+1 {{'neuroshard.fused_embedding_bag' op entry 0 reads the replica of table 'd' on device 1 but its offsets are not a static slice of its lookup's offsets}}
    %f = neuroshard.fused_embedding_bag device 1 [
        @d cols 0 to 4 sum(%i, %a : tensor<?xi32>, tensor<3xi32>)
      ] : tensor<2x4xf32>
    return %f : tensor<2x4xf32>
  }
}

// -----

// The replicas of one launch look up one range of bags.
module {
  neuroshard.table @d : rows 10, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>, #neuroshard.shard<cols = 0 to 4, device = 1, replica>] {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @e : rows 10, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>, #neuroshard.shard<cols = 0 to 4, device = 1, replica>] {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<2x8xf32> {
    %a = tensor.extract_slice %o[0] [3] [1] : tensor<5xi32> to tensor<3xi32>
    %b = tensor.extract_slice %o[2] [3] [1] : tensor<5xi32> to tensor<3xi32>
    // expected-error @+1 {{'neuroshard.fused_embedding_bag' op entry 1 reads the replica of table 'e' on device 1 at bags 2 to 4, but entry 0 at bags 0 to 2; a launch looks up one range of bags}}
    %f = neuroshard.fused_embedding_bag device 1 [
        @d cols 0 to 4 sum(%i, %a : tensor<?xi32>, tensor<3xi32>),
        @e cols 0 to 4 sum(%i, %b : tensor<?xi32>, tensor<3xi32>)
      ] : tensor<2x8xf32>
    return %f : tensor<2x8xf32>
  }
}

// -----

// A launch of replicas holds replicas only.
module {
  neuroshard.table @d : rows 10, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0, replica>, #neuroshard.shard<cols = 0 to 4, device = 1, replica>] {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @w : rows 10, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 1>] {pooling_factor = 1.0 : f64, access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<2x8xf32> {
    %a = tensor.extract_slice %o[2] [3] [1] : tensor<5xi32> to tensor<3xi32>
    // expected-error @+1 {{'neuroshard.fused_embedding_bag' op entry 1 reads the replica of table 'w' on device 1 beside entries of other tables' replicas; a launch looks up one range of bags}}
    %f = neuroshard.fused_embedding_bag device 1 [
        @d cols 0 to 4 sum(%i, %a : tensor<?xi32>, tensor<3xi32>),
        @w cols 0 to 4 sum(%i, %a : tensor<?xi32>, tensor<3xi32>)
      ] : tensor<2x8xf32>
    return %f : tensor<2x8xf32>
  }
}
