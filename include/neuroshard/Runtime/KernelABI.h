//===- KernelABI.h - The run-time interface of the fused kernels -*- C++
//-*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Every lowering (CPU and CUDA) emits the same two generic kernels per index
// type: a forward fused embedding bag and a backward pass with a fused SGD
// update. Neither kernel is specialised to a set of tables: which shards a
// call covers is run-time data, a table of `kShardFields` 64-bit integers per
// shard, as FBGEMM's table-batched embedding keeps its per-table offsets. One
// compiled kernel therefore serves any shard set, which is what cost-data
// collection needs (it times thousands of sets).
//
// This header is plain C++ with no dependency, so that a CUDA-only runner can
// include it on a machine without LLVM.
//
// Addressing. Weights live in one arena of `float`. Table `t` starts at
// element `layout[t]` of the arena; its row `r`, column `c` is at
// `layout[t] + r * rowStride + c`. A shard reads columns
// `colBegin .. colBegin + width` of its table and writes them to columns
// `outColumn .. outColumn + width` of the kernel's `B x W` output (row-major,
// row stride W). Its bags are `indices[indicesBase + offsets[offsetsBase + b]
// .. indicesBase + offsets[offsetsBase + b + 1])` for b in 0..B: every
// lookup's offsets are its own (they start at 0, as in PyTorch), and the
// shards of all lookups are concatenated into one indices and one offsets
// buffer.
//
// Forward: out[b, outColumn + c] = reduce over the bag of row[colBegin + c];
// `sum`, or `mean` (the sum divided by the bag length; empty bags give 0).
// Every element of the output is written, so it needs no initialisation.
//
// Backward with SGD: for every shard, bag b and index r of the bag,
// row[r][colBegin + c] -= lr * scale * grad[b, outColumn + c] where scale is
// 1 for sum and 1 / bag length for mean. Repeated indices (within a bag or
// across bags) all apply, exactly as `index_add` of the per-index gradients
// would.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_KERNELABI_H
#define NEUROSHARD_RUNTIME_KERNELABI_H

#include <cstdint>

namespace neuroshard {
namespace kernel_abi {

/// Fields of one shard's row in the metadata table, in order.
enum ShardField : int64_t {
  kTable = 0,       ///< Table ordinal: index into the layout array.
  kRowStride = 1,   ///< Elements between consecutive rows of the table.
  kColBegin = 2,    ///< First column of the shard within the table row.
  kWidth = 3,       ///< Number of columns of the shard.
  kOutColumn = 4,   ///< First column of the shard in the kernel output.
  kIndicesBase = 5, ///< Offset of the shard's indices in the indices buffer.
  kOffsetsBase = 6, ///< Offset of the shard's B + 1 offsets.
  kMode = 7,        ///< PoolingMode.
  kShardFields = 8
};

enum PoolingMode : int64_t { kSum = 0, kMean = 1 };

/// Symbol names of the generic kernels. The suffix is the index type.
/// CPU (func.func, C interface `_mlir_ciface_<name>`):
///   forward(meta: memref<?xi64>, layout: memref<?xi64>,
///           weights: memref<?xf32>, indices: memref<?xiN>,
///           offsets: memref<?xiN>, out: memref<?x?xf32>)
///   backward(meta, layout, weights, indices, offsets,
///            grad: memref<?x?xf32>, lr: f32)
/// The number of shards is meta's size / kShardFields; the batch size and
/// output width are the out (grad) memref's sizes.
constexpr const char *kForwardI32 = "neuroshard_bag_forward_i32";
constexpr const char *kForwardI64 = "neuroshard_bag_forward_i64";
constexpr const char *kBackwardI32 = "neuroshard_bag_backward_sgd_i32";
constexpr const char *kBackwardI64 = "neuroshard_bag_backward_sgd_i64";

} // namespace kernel_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_KERNELABI_H
