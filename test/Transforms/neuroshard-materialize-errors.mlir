// RUN: neuroshard-opt %s -split-input-file -verify-diagnostics --neuroshard-materialize

// A plan places every table: a table without shards beside tables with them
// is an incomplete annotation.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 100, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 0>]
  // expected-error @+1 {{table 'b' has no shards but 1 of the module's 2 tables do; a plan places every table}}
  neuroshard.table @b : rows 100, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    %b = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// expected-error @+1 {{has lookups but no table has shards; record a plan with --neuroshard-plan or --neuroshard-import-plan first}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 100, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %a : tensor<4x8xf32>
  }
}

// -----

// expected-error @+1 {{has no 'neuroshard.topology' attribute; materializing a plan needs the devices and their memory}}
module {
  neuroshard.table @a : rows 100, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 0>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %a : tensor<4x8xf32>
  }
}

// -----

// Shards that leave columns out are refused by the table's verifier, before
// the pass runs.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  // expected-error @+1 {{table 'a': columns [4, 8) are on no device}}
  neuroshard.table @a : rows 100, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 0>]
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 100, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<?xi32>) -> tensor<?x8xf32> {
    // expected-error @+1 {{has a dynamic batch size; materializing a plan needs a static batch}}
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
    return %a : tensor<?x8xf32>
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 100, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>, %o2: tensor<9xi32>) -> (tensor<4x8xf32>, tensor<8x8xf32>) {
    // expected-note @+1 {{batch of 4 here}}
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    // expected-error @+1 {{looks up a batch of 8 but other lookups of its block use a batch of 4; every device runs one batch}}
    %b = neuroshard.embedding_bag @a(%i, %o2) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
    return %a, %b : tensor<4x8xf32>, tensor<8x8xf32>
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 100, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 1>]
  neuroshard.table @h : rows 100, dim 8, f16 shards [#neuroshard.shard<cols = 0 to 8, device = 0>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> (tensor<4x8xf32>, tensor<4x8xf16>) {
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    // expected-error @+1 {{produces 'f16' but other lookups of the block produce 'f32'; one exchange buffer holds one element type}}
    %h = neuroshard.embedding_bag @h(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf16>
    return %a, %h : tensor<4x8xf32>, tensor<4x8xf16>
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 100, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{has a use before the last lookup of its block; the sharding pass fuses all lookups of a block and needs their uses to follow them}}
    %a = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    %e = tensor.empty() : tensor<4x8xf32>
    %s = arith.addf %a, %e : tensor<4x8xf32>
    %b = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    %t = arith.addf %s, %b : tensor<4x8xf32>
    return %t : tensor<4x8xf32>
  }
}
