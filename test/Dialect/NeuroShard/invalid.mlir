// RUN: neuroshard-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{table 't': 'rows' must be positive, got 0}}
neuroshard.table @t : rows 0, dim 4, f32

// -----

// expected-error @+1 {{table 't': 'dim' must be a positive multiple of 4, got -8}}
neuroshard.table @t : rows 4, dim -8, f32

// -----

// expected-error @+1 {{attribute 'element_type' failed to satisfy constraint: type attribute of 32-bit float or 16-bit float or bfloat16 type}}
neuroshard.table @t : rows 4, dim 8, i32

// -----

// expected-error @+1 {{table 't': 'dim' must be a positive multiple of 4, got 6}}
neuroshard.table @t : rows 4, dim 6, f32

// -----

// rows * dim * 4 bytes wraps 64 bits to 0; the size rule still sees it.
// expected-error @+1 {{table 't': needs 1.98e+28 GB, more than the 65536 GB a table may have}}
neuroshard.table @t : rows 4611686018427387904, dim 1152921504606846976, f32

// -----

// expected-error @+1 {{table 't': 'pooling_factor' must be a finite number >= 0, got -2}}
neuroshard.table @t : rows 4, dim 8, f32 {pooling_factor = -2.0 : f64}

// -----

// expected-error @+1 {{table 't': 'access_hist' must have 17 bins, got 3}}
neuroshard.table @t : rows 4, dim 8, f32 {access_hist = array<f64: 0.5, 0.25, 0.25>}

// -----

// expected-error @+1 {{table 't': 'access_hist' bin 1 must be a finite number >= 0, got -0.25}}
neuroshard.table @t : rows 4, dim 8, f32 {
  access_hist = array<f64: 1.0, -0.25, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                           0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}

// -----

// expected-error @+1 {{table 't': 'access_hist' must sum to 1 (or be all zero for a table never hit), got 0.8}}
neuroshard.table @t : rows 4, dim 8, f32 {
  access_hist = array<f64: 0.5, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                           0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 8.0>} {
  // expected-error @+1 {{table 't': 'pinned_device' is 2 but there are only 2 devices}}
  neuroshard.table @t : rows 4, dim 8, f32 {pinned_device = 2 : i64}
}

// -----

// expected-error @+1 {{table 't' has an empty shard list}}
neuroshard.table @t : rows 4, dim 8, f32 shards []

// -----

// expected-error @+1 {{table 't' is marked no_split but has 2 shards}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
            #neuroshard.shard<cols = 4 to 8, device = 1>] {no_split}

// -----

// expected-error @+1 {{table 't' has a shard with columns [4, 12) outside its 8 columns}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
            #neuroshard.shard<cols = 4 to 12, device = 1>]

// -----

// expected-error @+1 {{table 't' is split at column 6, which is not a multiple of 4}}
neuroshard.table @t : rows 4, dim 12, f32
    shards [#neuroshard.shard<cols = 0 to 6, device = 0>,
            #neuroshard.shard<cols = 6 to 12, device = 1>]

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 8.0>} {
  // expected-error @+1 {{table 't' has a shard on device 3 but the topology has 2 devices}}
  neuroshard.table @t : rows 4, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 8, device = 3>]
}

// -----

// expected-error @+1 {{table 't' is pinned to device 1 but has a shard on device 0}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 8, device = 0>] {pinned_device = 1 : i64}

// -----

// expected-error @+1 {{table 't': columns [4, 8) are on no device}}
neuroshard.table @t : rows 4, dim 12, f32
    shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
            #neuroshard.shard<cols = 8 to 12, device = 1>]

// -----

// expected-error @+1 {{table 't': columns [8, 12) are on no device}}
neuroshard.table @t : rows 4, dim 12, f32
    shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
            #neuroshard.shard<cols = 4 to 8, device = 1>]

// -----

// expected-error @+1 {{table 't': columns [0, 4) are on no device}}
neuroshard.table @t : rows 4, dim 12, f32
    shards [#neuroshard.shard<cols = 4 to 12, device = 1>]

// -----

// expected-error @+1 {{table 't': columns [4, 8) are on more than one device}}
neuroshard.table @t : rows 4, dim 12, f32
    shards [#neuroshard.shard<cols = 0 to 8, device = 0>,
            #neuroshard.shard<cols = 4 to 12, device = 1>]

// -----

// Row pieces tile rows x columns: every cell of the grid their boundaries
// draw is on exactly one device.
// expected-error @+1 {{table 't': rows [3, 4) of columns [0, 8) are on no device}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<rows = 0 to 3, cols = 0 to 8, device = 0>]

// -----

// expected-error @+1 {{table 't': rows [2, 3) of columns [4, 8) are on more than one device}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<rows = 0 to 3, cols = 0 to 8, device = 0>,
            #neuroshard.shard<rows = 2 to 4, cols = 4 to 8, device = 1>,
            #neuroshard.shard<rows = 3 to 4, cols = 0 to 4, device = 1>]

// -----

// expected-error @+1 {{table 't' has a shard with rows [2, 6) outside its 4 rows}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<rows = 0 to 2, cols = 0 to 8, device = 0>,
            #neuroshard.shard<rows = 2 to 6, cols = 0 to 8, device = 1>]

// -----

// expected-error @+2 {{shard row range [3, 3) is empty or negative}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<rows = 3 to 3, cols = 0 to 8, device = 0>]

// -----

// expected-error @+2 {{the replica on device 0 names rows [0, 2); a replica holds every row}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<rows = 0 to 2, cols = 0 to 8, device = 0, replica>]

// -----

// A data-parallel table is whole on every device of the topology.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 3, memory_gb = 8.0>} {
  // expected-error @+1 {{table 't' is replicated but device 1 holds no replica (a data-parallel table is on every device)}}
  neuroshard.table @t : rows 4, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 8, device = 0, replica>,
              #neuroshard.shard<cols = 0 to 8, device = 2, replica>]
}

// -----

// expected-error @+1 {{table 't': the replica on device 1 holds rows [0, 4) of columns [0, 4), not the whole table (4 rows, 8 columns)}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 8, device = 0, replica>,
            #neuroshard.shard<cols = 0 to 4, device = 1, replica>,
            #neuroshard.shard<cols = 4 to 8, device = 1, replica>]

// -----

// expected-error @+1 {{table 't' has two replicas on device 0}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 8, device = 0, replica>,
            #neuroshard.shard<cols = 0 to 8, device = 0, replica>]

// -----

// expected-error @+1 {{table 't' is replicated but also has the piece rows [0, 4) of columns [0, 8) on device 1}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 8, device = 0, replica>,
            #neuroshard.shard<cols = 0 to 8, device = 1>]

// -----

// expected-error @+2 {{shard column range [8, 4) is empty or negative}}
neuroshard.table @t : rows 4, dim 12, f32
    shards [#neuroshard.shard<cols = 8 to 4, device = 0>]

// -----

// expected-error @+2 {{shard device -1 is negative}}
neuroshard.table @t : rows 4, dim 12, f32
    shards [#neuroshard.shard<cols = 0 to 12, device = -1>]

// -----

// A shard's cache: at least one row, at most the shard's rows, none on a
// replica, and a table in host memory has every shard behind a cache.

// expected-error @+2 {{the shard on device 0 caches -3 rows; a cache holds at least 1}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 8, device = 0, cache_rows = -3>]

// -----

// expected-error @+3 {{the shard on device 1 caches 5 rows but holds only 3 (rows [1, 4))}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<rows = 0 to 1, cols = 0 to 8, device = 0, cache_rows = 1>,
            #neuroshard.shard<rows = 1 to 4, cols = 0 to 8, device = 1, cache_rows = 5>]

// -----

// expected-error @+1 {{table 't' has a shard on device 0 that caches 5 rows but holds only 4}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 8, device = 0, cache_rows = 5>]

// -----

// expected-error @+1 {{table 't' caches its shard on device 1 but not the one on device 0; a table lives in host memory whole, every shard behind a cache, or not at all}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
            #neuroshard.shard<cols = 4 to 8, device = 1, cache_rows = 2>]

// -----

// expected-error @+2 {{expected 'replica' or 'cache_rows'}}
neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 8, device = 0, cached>]

// -----

// expected-error @+1 {{topology: host_gbps must be between 0.001 and 1e+09 GB/s, got 0}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 8.0, host_gbps = 0.0>} {}

// -----

// expected-error @+1 {{topology: host_memory_gb}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 8.0, host_memory_gb = -1.0>} {}

// -----

// expected-error @+1 {{topology: the device count must be between 1 and 65536, got 0}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 0, memory_gb = 8.0>} {}

// -----

// expected-error @+1 {{topology has 3 devices but 2 memory capacities}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 3, memory_gb = [8.0, 8.0]>} {}

// -----

// expected-error @+1 {{topology: device 1: memory capacity must be a positive number of GB up to 1048576, got -8}}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = [8.0, -8.0]>} {}

// -----

// expected-error @+1 {{'neuroshard.topology' must be a #neuroshard.topology attribute, got 4 : i64}}
module attributes {neuroshard.topology = 4} {}

// -----

// expected-error @+1 {{'neuroshard.plan' must be a dictionary attribute, got "cheap"}}
module attributes {neuroshard.plan = "cheap"} {}

// -----

func.func @f() attributes {neuroshard.topology = #neuroshard.topology<devices = 1, memory_gb = 1.0>} {
// expected-error @-1 {{'neuroshard.topology' may only be attached to a builtin.module}}
  return
}

// -----

// Measured selection's record (#neuroshard.verification) is checked field
// by field.

// expected-error @+1 {{'neuroshard.plan' has a 'verification' that is not a #neuroshard.verification attribute: {chosen = 0 : i64}}}
module attributes {neuroshard.plan = {verification = {chosen = 0 : i64}}} {}

// -----

// expected-error @+1 {{'chosen' names candidate 1 of 1}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, chosen = 1, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

// expected-error @+1 {{'incumbent' names candidate 2 of 1}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, chosen = 0, incumbent = 2, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

// expected-error @+1 {{'draws' (4) exceeds 'rounds' (3): each round times one draw}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 4, seconds = 0.5, min_gain = 0.02, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

// expected-error @+1 {{'min_gain' must be below 1, got 1.5}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 1.5, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

// expected-error @+1 {{'seconds' must be a finite number >= 0, got -1}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = -1.0, min_gain = 0.02, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

// expected-error @+1 {{'selection_noise' and 'noise_gain' need the 'selection_noise_comparisons' they rest on}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, selection_noise = 0.4, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

// expected-error @+1 {{'candidates' must list the candidates timed}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, chosen = 0, incumbent = 0, experience = "", candidates = []>}} {}

// -----

// expected-error @+1 {{candidate 0 must be a #neuroshard.measured_candidate, got 1 : i64}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, chosen = 0, incumbent = 0, experience = "", candidates = [1]>}} {}

// -----

// expected-error @+1 {{'racing' counts 1 candidates besides the incumbent, of 1}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, racing = 1, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

// expected-error @+2 {{'rounds_faster' (4) exceeds the candidate's 'rounds' (3)}}
// expected-error @+1 {{failed to parse NeuroShard_VerificationAttr parameter 'candidates'}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 4, required_gain = 0.02>]>}} {}

// -----

// expected-error @+2 {{'measured_compute_ms' must give one time per device}}
// expected-error @+1 {{failed to parse NeuroShard_VerificationAttr parameter 'candidates'}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [], paired_ratio = 1.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

// expected-error @+2 {{'paired_ratio' must be a finite number >= 0, got -2}}
// expected-error @+1 {{failed to parse NeuroShard_VerificationAttr parameter 'candidates'}}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<host = "h", device = "cpu", sets = 2, rounds = 3, draws = 3, seconds = 0.5, min_gain = 0.02, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.0, measured_ms = 1.0, measured_compute_ms = [1.0], paired_ratio = -2.0, mean_ratio = 1.0, rounds = 3, rounds_faster = 1, required_gain = 0.02>]>}} {}

// -----

func.func @f() attributes {neuroshard.plan = {}} {
// expected-error @-1 {{'neuroshard.plan' may only be attached to a builtin.module}}
  return
}

// -----

// expected-error @+1 {{unknown NeuroShard attribute 'neuroshard.devices'}}
module attributes {neuroshard.devices = 4} {}

//===----------------------------------------------------------------------===//
// embedding_bag
//===----------------------------------------------------------------------===//

// -----

func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{refers to unknown table @missing}}
  %0 = neuroshard.embedding_bag @missing(%i, %o) sum
      : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{refers to @f, which is a 'func.func', not a 'neuroshard.table'}}
  %0 = neuroshard.embedding_bag @f(%i, %o) sum
      : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{result has 4 columns but table 't' has dim 8}}
  %0 = neuroshard.embedding_bag @t(%i, %o) sum
      : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf16> {
  // expected-error @+1 {{result element type 'f16' differs from table 't' element type 'f32'}}
  %0 = neuroshard.embedding_bag @t(%i, %o) sum
      : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf16>
  return %0 : tensor<8x8xf16>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<8xi32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{lookup has 8 offsets but the result has 8 bags; expected 9 offsets (one per bag plus the end)}}
  %0 = neuroshard.embedding_bag @t(%i, %o) sum
      : (tensor<?xi32>, tensor<8xi32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi64>) -> tensor<8x8xf32> {
  // expected-error @+1 {{failed to verify that all of {indices, offsets} have same element type}}
  %0 = neuroshard.embedding_bag @t(%i, %o) sum
      : (tensor<?xi32>, tensor<9xi64>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xf32>, %o: tensor<9xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{operand #0 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?xf32>'}}
  %0 = neuroshard.embedding_bag @t(%i, %o) sum
      : (tensor<?xf32>, tensor<9xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<3x3xi32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{operand #1 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3x3xi32>'}}
  %0 = neuroshard.embedding_bag @t(%i, %o) sum
      : (tensor<?xi32>, tensor<3x3xi32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{unknown pooling mode 'max'; expected 'sum' or 'mean'}}
  %0 = neuroshard.embedding_bag @t(%i, %o) max
      : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

//===----------------------------------------------------------------------===//
// fused_embedding_bag
//===----------------------------------------------------------------------===//

// -----

func.func @f() -> tensor<8x0xf32> {
  // expected-error @+1 {{has no entries}}
  %0 = neuroshard.fused_embedding_bag device 0 [] : tensor<8x0xf32>
  return %0 : tensor<8x0xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{has 1 tables but 2 column begins, 1 column ends, 1 modes and 1 index operands}}
  %0 = "neuroshard.fused_embedding_bag"(%i, %o) <{device = 0 : i64, tables = [@t], col_begins = array<i64: 0, 0>, col_ends = array<i64: 8>, modes = [#neuroshard.pool<sum>]}> : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 8.0>} {
  neuroshard.table @t : rows 4, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf32> {
    // expected-error @+1 {{runs on device 5 but the topology has 2 devices}}
    %0 = neuroshard.fused_embedding_bag device 5 [
        @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<9xi32>)] : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{entry 0 has an empty or negative column range [8, 8)}}
  %0 = neuroshard.fused_embedding_bag device 0 [
      @t cols 8 to 8 sum(%i, %o : tensor<?xi32>, tensor<9xi32>)] : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi64>) -> tensor<8x8xf32> {
  // expected-error @+1 {{entry 0 has indices of type 'tensor<?xi32>' but offsets of type 'tensor<9xi64>'; their element types must match}}
  %0 = neuroshard.fused_embedding_bag device 0 [
      @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<9xi64>)] : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>, %o2: tensor<5xi32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{entry 1 has 5 offsets but the result has 8 bags; expected 9 offsets (one per bag plus the end)}}
  %0 = neuroshard.fused_embedding_bag device 0 [
      @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<9xi32>),
      @t cols 0 to 8 sum(%i, %o2 : tensor<?xi32>, tensor<5xi32>)] : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x12xf32> {
  // expected-error @+1 {{result has 12 columns but the entries' column ranges add up to 8}}
  %0 = neuroshard.fused_embedding_bag device 0 [
      @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<9xi32>),
      @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<9xi32>)] : tensor<8x12xf32>
  return %0 : tensor<8x12xf32>
}

// -----

func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{refers to unknown table @nope}}
  %0 = neuroshard.fused_embedding_bag device 0 [
      @nope cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<9xi32>)] : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x12xf32> {
  // expected-error @+1 {{entry 0 reads columns [4, 16) of table 't', which has 8 columns}}
  %0 = neuroshard.fused_embedding_bag device 0 [
      @t cols 4 to 16 sum(%i, %o : tensor<?xi32>, tensor<9xi32>)] : tensor<8x12xf32>
  return %0 : tensor<8x12xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f16
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{entry 0 reads table 't' of element type 'f16' into a result of element type 'f32'}}
  %0 = neuroshard.fused_embedding_bag device 0 [
      @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<9xi32>)] : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

neuroshard.table @t : rows 4, dim 8, f32
    shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
            #neuroshard.shard<cols = 4 to 8, device = 1>]
func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{entry 0 reads columns [4, 8) of table 't' on device 0, but the table places no such shard there}}
  %0 = neuroshard.fused_embedding_bag device 0 [
      @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<9xi32>)] : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

//===----------------------------------------------------------------------===//
// all_to_all
//===----------------------------------------------------------------------===//

// -----

func.func @f() {
  // expected-error @+1 {{needs at least one device}}
  "neuroshard.all_to_all"() : () -> ()
  return
}

// -----

func.func @f(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{has 2 inputs but 1 results; expected one of each per device}}
  %r = neuroshard.all_to_all %a, %b : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 8.0>} {
  func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
    // expected-error @+1 {{exchanges between 1 devices but the topology has 2}}
    %r = neuroshard.all_to_all %a : tensor<8x4xf32> -> tensor<8x4xf32>
    return %r : tensor<8x4xf32>
  }
}

// -----

func.func @f(%a: tensor<8x4xf32>, %b: tensor<8x4xf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-error @+1 {{mixes element types 'f32' and 'f16'}}
  %r:2 = neuroshard.all_to_all %a, %b : tensor<8x4xf32>, tensor<8x4xf16> -> tensor<4x8xf32>, tensor<4x8xf32>
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<8x4xf32>, %b: tensor<6x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-error @+1 {{input 1 has 6 rows but input 0 has 8; every device computes the whole batch}}
  %r:2 = neuroshard.all_to_all %a, %b : tensor<8x4xf32>, tensor<6x4xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>) {
  // expected-error @+1 {{result 1 has 4 columns; expected 8, the sum of the input widths}}
  %r:2 = neuroshard.all_to_all %a, %b : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32>, tensor<4x4xf32>
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x4xf32>
}

// -----

func.func @f(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<3x8xf32>) {
  // expected-error @+1 {{results hold 7 rows in all but the batch has 8}}
  %r:2 = neuroshard.all_to_all %a, %b : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32>, tensor<3x8xf32>
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<3x8xf32>
}

// -----

func.func @f(%a: tensor<8x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{lists 2 widths but 1 batches; expected one of each per rank}}
  %r = neuroshard.exchange %a rank 0 widths [4, 4] batches [8] : tensor<8x4xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<8x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{runs on rank 2 but exchanges between 2 ranks}}
  %r = neuroshard.exchange %a rank 2 widths [4, 4] batches [4, 4] : tensor<8x4xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<6x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{input is 6 x 4 but rank 1 computes 8 x 4 (the whole batch, its own columns)}}
  %r = neuroshard.exchange %a rank 1 widths [4, 4] batches [4, 4] : tensor<6x4xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @f(%a: tensor<8x4xf32>) -> tensor<5x8xf32> {
  // expected-error @+1 {{result is 5 x 8 but rank 1 receives 3 x 8 (its rows, every rank's columns)}}
  %r = neuroshard.exchange %a rank 1 widths [4, 4] batches [5, 3] : tensor<8x4xf32> -> tensor<5x8xf32>
  return %r : tensor<5x8xf32>
}

// -----

func.func @f(%a: tensor<8x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{rank 0 has a negative width -4}}
  %r = neuroshard.exchange %a rank 1 widths [-4, 4] batches [4, 4] : tensor<8x4xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 3, memory_gb = 1.0>} {
  func.func @f(%a: tensor<8x4xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{exchanges between 2 ranks but the topology has 3 devices}}
    %r = neuroshard.exchange %a rank 0 widths [4, 4] batches [4, 4] : tensor<8x4xf32> -> tensor<4x8xf32>
    return %r : tensor<4x8xf32>
  }
}

// -----

// expected-error @+1 {{'neuroshard.rank' is 2 but the topology has 2 devices}}
module attributes {neuroshard.rank = 2 : i64, neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
}

// -----

// expected-error @+1 {{'neuroshard.rank' needs a #neuroshard.topology on the module}}
module attributes {neuroshard.rank = 0 : i64} {
}

// -----

func.func @f(%g: tensor<4x8xf32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{result is 6 x 4 but rank 1 computes 8 x 4 (the whole batch, its own columns)}}
  %r = neuroshard.exchange_gradient %g rank 1 widths [4, 4] batches [4, 4] : tensor<4x8xf32> -> tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

// -----

func.func @f(%g: tensor<5x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{gradient is 5 x 8 but rank 1 receives 4 x 8 (its rows, every rank's columns)}}
  %r = neuroshard.exchange_gradient %g rank 1 widths [4, 4] batches [4, 4] : tensor<5x8xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>, %g: tensor<4x6xf32>, %lr: f32) {
    // expected-error @+1 {{gradient has 6 columns but the entries' column ranges add up to 8}}
    neuroshard.fused_embedding_bag_sgd device 0 [
        @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
      ] gradient %g lr %lr : tensor<4x6xf32>
    return
  }
}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>, %g: tensor<3x8xf32>, %lr: f32) {
    // expected-error @+1 {{entry 0 has 5 offsets but the result has 3 bags; expected 4 offsets (one per bag plus the end)}}
    neuroshard.fused_embedding_bag_sgd device 0 [
        @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
      ] gradient %g lr %lr : tensor<3x8xf32>
    return
  }
}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f16
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>, %g: tensor<4x8xf32>, %lr: f32) {
    // expected-error @+1 {{entry 0 reads table 't' of element type 'f16' with a gradient of element type 'f32'}}
    neuroshard.fused_embedding_bag_sgd device 0 [
        @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
      ] gradient %g lr %lr : tensor<4x8xf32>
    return
  }
}

// -----

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 8, device = 0>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>, %g: tensor<4x8xf32>, %lr: f32) {
    // expected-error @+1 {{entry 0 reads columns [0, 8) of table 't' on device 1, but the table places no such shard there}}
    neuroshard.fused_embedding_bag_sgd device 1 [
        @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
      ] gradient %g lr %lr : tensor<4x8xf32>
    return
  }
}

// -----

// expected-error @+1 {{'neuroshard.backward_of' names @missing, which is not a function of the module}}
func.func @f() attributes {neuroshard.backward_of = @missing} {
  return
}

// -----

// expected-error @+1 {{'neuroshard.backward_of' must be a symbol reference on a function}}
module attributes {neuroshard.backward_of = "f"} {
}

// -----

// expected-error @+1 {{table 't': 'module_path' is empty; leave it out to name the table by its symbol}}
neuroshard.table @t : rows 10, dim 8, f32 {module_path = ""}

// -----

// expected-error @+1 {{table 't': 'sharding_types' has 'rows', not one of: table_wise, column_wise, row_wise, table_row_wise, data_parallel}}
neuroshard.table @t : rows 10, dim 8, f32 {sharding_types = ["table_wise", "rows"]}

// -----

// expected-error @+1 {{table 't': 'sharding_types' is empty; leave it out to allow every kind}}
neuroshard.table @t : rows 10, dim 8, f32 {sharding_types = []}

// -----

// expected-error @+1 {{table 't': 'module_path': 'name' must be valid UTF-8 without control characters, got byte 0x0a at offset 1}}
neuroshard.table @t : rows 10, dim 8, f32 {module_path = "a\0Ab"}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{has 'pooling_factor' but not 'access_hist'; a lookup's statistics come in pairs}}
    %r = neuroshard.embedding_bag @t(%i, %o) sum {pooling_factor = 2.0 : f64} : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %r : tensor<4x8xf32>
  }
}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{lookup statistics: 'pooling_factor' must be}}
    %r = neuroshard.embedding_bag @t(%i, %o) sum {pooling_factor = -2.0 : f64,
      access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
      : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %r : tensor<4x8xf32>
  }
}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{lookup statistics of table 't': 'access_hist' bin 16 (rows hit more than 32768 times) is 1, but a batch of 4 bags with pooling factor 2 makes only 8 lookups}}
    %r = neuroshard.embedding_bag @t(%i, %o) sum {pooling_factor = 2.0 : f64,
      access_hist = array<f64: 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0>}
      : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x8xf32>
    return %r : tensor<4x8xf32>
  }
}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{has 1 entries but 2 pooling factors and 17 histogram bins; expected 1 and 17}}
    %r = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
      ] {pooling_factors = array<f64: 1.0, 2.0>,
         access_hists = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>} : tensor<4x8xf32>
    return %r : tensor<4x8xf32>
  }
}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{has 'pooling_factors' but not 'access_hists'; the entries' statistics come in pairs}}
    %r = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
      ] {pooling_factors = array<f64: 1.0>} : tensor<4x8xf32>
    return %r : tensor<4x8xf32>
  }
}

// -----

func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) {
  // expected-error @+1 {{has block 1 of rows [10, 10), which is empty; boundaries must increase}}
  %b:2, %bo:2 = neuroshard.bucketize %i, %o rows [0, 10, 10] : tensor<?xi32>, tensor<5xi32> -> (tensor<?xi32>, tensor<?xi32>), (tensor<5xi32>, tensor<5xi32>)
  return
}

// -----

func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) {
  // expected-error @+1 {{has 2 row blocks but 1 pairs of results; expected one per block}}
  %b, %bo = neuroshard.bucketize %i, %o rows [0, 10, 20] : tensor<?xi32>, tensor<5xi32> -> (tensor<?xi32>), (tensor<5xi32>)
  return
}

// -----

func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) {
  // expected-error @+1 {{block 0 has offsets of type 'tensor<4xi32>' but the lookup's are 'tensor<5xi32>'; every block keeps every bag}}
  %b, %bo = neuroshard.bucketize %i, %o rows [0, 10] : tensor<?xi32>, tensor<5xi32> -> (tensor<?xi32>), (tensor<4xi32>)
  return
}

// -----

func.func @f(%p: tensor<4x8xf32>, %q: tensor<4x8xf32>) {
  // expected-error @+1 {{results hold 3 rows in all but the batch has 4}}
  %r:2 = neuroshard.reduce_scatter %p, %q : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<2x8xf32>, tensor<1x8xf32>
  return
}

// -----

func.func @f(%p: tensor<4x8xf32>, %q: tensor<4x4xf32>) {
  // expected-error @+1 {{input 1 is 'tensor<4x4xf32>' but input 0 is 'tensor<4x8xf32>'; the partial sums of one lookup's columns have one type}}
  %r:2 = neuroshard.reduce_scatter %p, %q : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @f(%p: tensor<4x8xf32>, %o: tensor<4xi32>) {
  // expected-error @+1 {{the mean's offsets has 4 offsets but the result has 4 bags; expected 5 offsets (one per bag plus the end)}}
  %r:2 = neuroshard.reduce_scatter %p mean(%o : tensor<4xi32>) : tensor<4x8xf32> -> tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

module {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<rows = 0 to 5, cols = 0 to 8, device = 0>,
              #neuroshard.shard<rows = 5 to 10, cols = 0 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{entry 0 reads rows [0, 6) of columns [0, 8) of table 't' on device 0, but the table places no such shard there}}
    %0 = neuroshard.fused_embedding_bag device 0 [
        @t rows 0 to 6 cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
      ] : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

func.func @f(%p: tensor<9x4xf32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{result is 5 x 4 but rank 1 owns 4 x 4 (its rows, the same columns)}}
  %r = neuroshard.rank_reduce_scatter %p rank 1 batches [5, 4] : tensor<9x4xf32> -> tensor<5x4xf32>
  return %r : tensor<5x4xf32>
}

// -----

func.func @f(%p: tensor<8x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{input has 8 rows but the batches sum to 9}}
  %r = neuroshard.rank_reduce_scatter %p rank 1 batches [5, 4] : tensor<8x4xf32> -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @f(%g: tensor<4x4xf32>, %o: tensor<9xi32>) -> tensor<9x4xf32> {
  // expected-error @+1 {{the mean's offsets has 9 offsets but the result has 9 bags; expected 10 offsets (one per bag plus the end)}}
  %r = neuroshard.rank_reduce_scatter_gradient %g mean(%o : tensor<9xi32>) rank 1 batches [5, 4] : tensor<4x4xf32> -> tensor<9x4xf32>
  return %r : tensor<9x4xf32>
}

// -----

func.func @f(%g: tensor<4x4xf32>) -> tensor<9x4xf32> {
  // expected-error @+1 {{runs on rank 2 but scatters between 2 ranks}}
  %r = neuroshard.rank_reduce_scatter_gradient %g rank 2 batches [5, 4] : tensor<4x4xf32> -> tensor<9x4xf32>
  return %r : tensor<9x4xf32>
}

// -----

module {
  neuroshard.table @t : rows 10, dim 4, f32
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>, %g: tensor<4x4xf32>, %lr: f32) {
    // expected-error @+1 {{sums the replicas' gradients across ranks ('all_reduce'), which only the program of one rank can do}}
    neuroshard.fused_embedding_bag_sgd device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
      ] gradient %g lr %lr all_reduce : tensor<4x4xf32>
    return
  }
}
