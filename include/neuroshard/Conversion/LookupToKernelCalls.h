//===- LookupToKernelCalls.h - Lookups to generic kernel calls --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The host-side half of every NeuroShard lowering, shared by the CPU and CUDA
// targets, as conversion patterns: each lookup becomes one invocation of a
// generic kernel of KernelABI.h, with its shard metadata, concatenated
// indices and offsets and a fresh output buffer; the target decides how the
// invocation is emitted (a call on the CPU, a launch on a GPU). The exchange
// becomes tensor slices and tables are erased, so that after the conversion
// no `neuroshard` operation is left (the conversion target says so).
//
// A lookup reads the weight arena and the table layout from arguments of its
// function that only a signature change can add; prepareLookupConversion
// adds them (and checks everything the patterns rely on) before the
// patterns run.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CONVERSION_LOOKUPTOKERNELCALLS_H
#define NEUROSHARD_CONVERSION_LOOKUPTOKERNELCALLS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace mlir::neuroshard {

/// One kernel invocation, operands in KernelABI.h's order. All are memrefs
/// with dynamic sizes and identity layouts: meta, layout, weights
/// (`memref<?xi64>`, `memref<?xi64>`, `memref<?xf32>`), indices and offsets
/// (`memref<?xiN>`, N the kernel's index width) and out (`memref<?x?xf32>`:
/// the forward output, or the backward kernel's output gradient), then for
/// the backward kernel the learning rate (`f32`).
struct KernelInvocation {
  StringRef kernel;
  Value meta, layout, weights, indices, offsets, out;
  /// Set for the backward kernel only.
  Value lr;

  /// The operands at their positions in KernelABI.h's operand list.
  SmallVector<Value> operands() const;
};

/// Emits `invocation` at the builder's insertion point.
using KernelEmitter =
    std::function<void(OpBuilder &, Location, const KernelInvocation &)>;

/// A fetch of a lookup entry's rows through the cache of a shard in host
/// memory (Runtime/RowCache.h): the cache's arena piece, the fetch flags
/// (kRowCacheBeginsStep, kRowCacheWrites), the weight arena, and two
/// `memref<?xiN>` of one size: the shard's local rows and the locations
/// the fetch writes, which the entry's kernel then reads instead.
struct CacheFetch {
  int64_t cachePiece = 0;
  int64_t flags = 0;
  Value weights, rows, locations;
};

/// Emits `fetch` at the builder's insertion point.
using CacheFetchEmitter =
    std::function<void(OpBuilder &, Location, const CacheFetch &)>;

/// Where each table lives in the weight arena a lowered function receives.
/// The arena holds pieces of tables, each a column range stored row-major
/// with its own row stride: whole tables, one piece each, or in the program
/// of one rank (`neuroshard.rank`), the shards placed on that rank's device.
/// A piece's ordinal is its position in the module's
/// `neuroshard.weight_tables` (the layout argument's index).
struct KernelTableLayout {
  /// Rows [rowBegin, rowEnd) and columns [colBegin, colEnd) of a table,
  /// its local row 0 being the table's row `rowBegin`.
  struct Piece {
    int64_t ordinal = 0;
    int64_t rowStride = 0;
    int64_t colBegin = 0;
    int64_t colEnd = 0;
    int64_t rowBegin = 0;
    int64_t rowEnd = 0;
    /// Rows of the whole table.
    int64_t tableRows = 0;
    /// A device cache of a shard in host memory (`cache_rows` on its
    /// #neuroshard.shard): the ordinal of the piece that holds the shard's
    /// rows, whose row stride and columns the cache shares, and the rows
    /// [rowBegin, rowEnd) of the shard; -1 for a piece of weights.
    int64_t cacheOf = -1;
    /// The rows the cache holds.
    int64_t cacheRows = 0;
    bool isCache() const { return cacheOf >= 0; }
  };
  llvm::DenseMap<StringAttr, llvm::SmallVector<Piece, 1>> tables;
  /// Every piece with its table, in arena (ordinal) order.
  llvm::SmallVector<std::pair<StringAttr, Piece>> arena;

  /// The piece of `table` that holds columns [colBegin, colBegin + width)
  /// of rows [rowBegin, rowEnd), or null.
  const Piece *find(StringAttr table, int64_t rowBegin, int64_t rowEnd,
                    int64_t colBegin, int64_t width) const;
  /// The cache of the shard of `table` with exactly rows [rowBegin, rowEnd)
  /// and columns [colBegin, colEnd), or null.
  const Piece *findCache(StringAttr table, int64_t rowBegin, int64_t rowEnd,
                         int64_t colBegin, int64_t colEnd) const;
};

/// The weight arena of `module`'s lowered functions: every table whole, in
/// module order, or in the program of one rank the shards of its device
/// (getDeviceShards); then a cache piece for every shard in host memory
/// (of the rank's device, in a rank's program), in the same order. Reads
/// the module only; the runtime lays out its arena with the same function.
KernelTableLayout layoutWeightArena(ModuleOp module);

/// Checks that `module` can be lowered (f32 tables, static pooled shapes,
/// lookups inside entry functions) and, only if it can, gives every function
/// with lookups its trailing weight-arena and layout arguments (argument
/// attributes `neuroshard.weights` and `neuroshard.layout`) and records the
/// pieces' order in `neuroshard.weight_tables` (a table's name,
/// `name[begin:end]` for a column range of it, or `name[r0:r1, begin:end]`
/// for a row piece). On failure the module is
/// unchanged and diagnostics name the offending op.
FailureOr<KernelTableLayout> prepareLookupConversion(ModuleOp module);

/// `neuroshard.embedding_bag` and `neuroshard.fused_embedding_bag` to one
/// forward kernel invocation each, `neuroshard.fused_embedding_bag_sgd` to
/// one backward kernel invocation, emitted with `emit`; `neuroshard.table`
/// erased. An entry of a shard in host memory reads its cache
/// (Runtime/RowCache.h) where the arena has one: a fetch, emitted with
/// `fetch` or by default as a call of the runtime's host fetch
/// (kRowCacheFetchI32/I64), gives the locations its kernel reads instead of
/// the indices. `layout` must outlive the patterns.
void populateLookupToKernelCallPatterns(RewritePatternSet &patterns,
                                        const KernelTableLayout &layout,
                                        KernelEmitter emit,
                                        CacheFetchEmitter fetch = {});

/// `neuroshard.all_to_all` to `tensor.extract_slice`s of every device's rows
/// and a `tensor.concat` per device: the exchange when all devices share one
/// address space. When the results are only stacked back into the whole
/// batch (the sharding pass's form), the exchange and the stacking become
/// one column concatenation of the inputs instead, linear in the devices.
void populateAllToAllToSlicesPatterns(RewritePatternSet &patterns);

/// Emits one bucketization call `callName` (KernelABI.h's kBucketizeI32 or
/// kBucketizeI64) on `operands`, in kBucketizeOperands' order, at the
/// builder's insertion point.
using BucketizeEmitter = std::function<void(
    OpBuilder &, Location, StringRef callName, ValueRange operands)>;

/// `neuroshard.bucketize` and `neuroshard.reduce_scatter` as loops over
/// buffers: the input and output distribution of row pieces when all
/// devices share one address space. With `bucketize`, each
/// `neuroshard.bucketize` becomes one bucketization call that it emits
/// instead (a GPU target launches kernels for it), and each block's indices
/// and offsets are copied out of the call's outputs.
void populateRowPieceDistributionPatterns(RewritePatternSet &patterns,
                                          BucketizeEmitter bucketize = {});

/// `neuroshard.exchange` and `neuroshard.exchange_gradient` to calls of the
/// exchange runtime functions (ExchangeABI.h): the buffer sent, a fresh
/// buffer received, and the widths and batches as constants.
void populateExchangeToRuntimeCallPatterns(RewritePatternSet &patterns);

/// Marks every `neuroshard` operation illegal and leaves all others legal.
void configureLookupConversionTarget(ConversionTarget &target);

/// prepareLookupConversion, then a partial conversion with the pattern sets
/// and the target above; `bucketize` as for
/// populateRowPieceDistributionPatterns, `fetch` as for
/// populateLookupToKernelCallPatterns.
LogicalResult lowerLookups(ModuleOp module, KernelEmitter emit,
                           BucketizeEmitter bucketize = {},
                           CacheFetchEmitter fetch = {});

/// Adds the generic forward and backward-SGD CPU kernels (KernelABI.h) to
/// `module` as public `func.func`s with C interfaces, unless present.
void buildCPUKernels(ModuleOp module);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_CONVERSION_LOOKUPTOKERNELCALLS_H
