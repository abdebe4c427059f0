// RUN: neuroshard-opt %s --neuroshard-lower-lookups-cpu --split-input-file --verify-diagnostics

// expected-error @below {{has element type 'f16'; the lowering executes f32 tables only}}
neuroshard.table @half : rows 10, dim 8, f16

// -----

neuroshard.table @a : rows 10, dim 8, f32
// expected-error @below {{holds embedding lookups and is called by other functions}}
func.func @inner(%i: tensor<?xi64>, %o: tensor<3xi64>) -> tensor<2x8xf32> {
  %0 = neuroshard.embedding_bag @a(%i, %o) sum
      : (tensor<?xi64>, tensor<3xi64>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
func.func @outer(%i: tensor<?xi64>, %o: tensor<3xi64>) -> tensor<2x8xf32> {
  %0 = call @inner(%i, %o) : (tensor<?xi64>, tensor<3xi64>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

neuroshard.table @a : rows 10, dim 8, f32
func.func @dynamic(%i: tensor<?xi64>, %o: tensor<?xi64>) -> tensor<?x8xf32> {
  // expected-error @below {{has the dynamically shaped pooled tensor 'tensor<?x8xf32>'; the lowering needs static shapes}}
  %0 = neuroshard.embedding_bag @a(%i, %o) sum
      : (tensor<?xi64>, tensor<?xi64>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
