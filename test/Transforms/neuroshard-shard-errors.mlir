// Without host memory, so that tables too large for the devices are
// refused rather than kept there (neuroshard-host-memory.mlir).
// RUN: neuroshard-opt %s -split-input-file -verify-diagnostics --neuroshard-shard="cost-model=analytical host-memory-gb=0"

// expected-error-re @+1 {{table 'a' needs 0.71{{[0-9]*}} GB but the largest device has 0.50{{0*}} GB and it may not be split}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 0.5>} {
  neuroshard.table @a : rows 3000000, dim 64, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>, no_split}
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x64xf32> {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x64xf32>
    return %0 : tensor<8x64xf32>
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  // expected-error @+1 {{table 'a' has no access_hist; the cost model needs pooling_factor and the 17-bin access_hist of every table}}
  neuroshard.table @a : rows 30, dim 64, f32 {pooling_factor = 1.0 : f64}
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x64xf32> {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x64xf32>
    return %0 : tensor<8x64xf32>
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  // expected-error @+1 {{table 'a' has no pooling_factor; the cost model needs}}
  neuroshard.table @a : rows 30, dim 64, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x64xf32> {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x64xf32>
    return %0 : tensor<8x64xf32>
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 30, dim 8, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>, %o2: tensor<5xi32>) -> (tensor<8x8xf32>, tensor<4x8xf32>) {
    // expected-note @+1 {{batch of 8 here}}
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
    // expected-error @+1 {{looks up table 'a' for a batch of 4 but other lookups use a batch of 8; every device runs one batch}}
    %1 = neuroshard.embedding_bag @a(%i, %o2) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %0, %1 : tensor<8x8xf32>, tensor<4x8xf32>
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 30, dim 8, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<?xi32>) -> tensor<?x8xf32> {
    // expected-error @+1 {{has a dynamic batch size; the sharding pass plans for a static batch}}
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
    return %0 : tensor<?x8xf32>
  }
}

// -----

// expected-error @+1 {{no device count: give the module a 'neuroshard.topology' attribute or pass devices=N}}
module {
  neuroshard.table @a : rows 30, dim 8, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf32> {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  // expected-error @+1 {{table 'a' already has shards; --neuroshard-plan plans modules whose tables have none}}
  neuroshard.table @a : rows 30, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 0>] {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 30, dim 8, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<16x8xf32> {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
    // expected-error @-1 {{has a use before the last lookup of its block; the sharding pass fuses all lookups of a block and needs their uses to follow them}}
    %1 = tensor.concat dim(0) %0, %0 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
    %2 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
    return %1 : tensor<16x8xf32>
  }
}

// -----

// expected-error @+1 {{has tables but no neuroshard.embedding_bag lookups to shard}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 30, dim 8, f32 {pooling_factor = 1.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
}
