//===- LookupToKernelCalls.cpp - Lookups to generic kernel calls ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "LoweringBuilders.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Runtime/ExchangeABI.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/RowCache.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::neuroshard;
using namespace mlir::neuroshard::lowering;
namespace abi = ::neuroshard::kernel_abi;
namespace ex_abi = ::neuroshard::exchange_abi;

namespace {

/// One shard of a lookup: its static metadata and the tensors of its input
/// pair.
struct Entry {
  abi::ShardDescriptor shard;
  Value indices;
  Value offsets;
  /// Added to every index: where a row piece's entry starts in the arena
  /// piece that holds it (its first row when the arena holds its table
  /// whole; the indices are the entry's local rows).
  int64_t rowShift = 0;
};

/// The trailing argument of `func` that carries `attrName`, if any.
Value findMarkedArgument(func::FuncOp func, StringRef attrName) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, attrName))
      return func.getArgument(i);
  return {};
}

constexpr StringLiteral kWeightsArgAttr = "neuroshard.weights";
constexpr StringLiteral kLayoutArgAttr = "neuroshard.layout";

/// Builds the inputs of the kernel invocation of one lookup or update (all
/// but `out` and `lr`): `entries` describes the op's shards, with its
/// (converted) indices and offsets, and `batch` is its bag count.
FailureOr<KernelInvocation>
buildInvocation(Operation *op, ArrayRef<Entry> entries, int64_t batch,
                ConversionPatternRewriter &rewriter) {
  auto func = op->getParentOfType<func::FuncOp>();
  Value weights = func ? findMarkedArgument(func, kWeightsArgAttr) : Value();
  Value layout = func ? findMarkedArgument(func, kLayoutArgAttr) : Value();
  if (!weights || !layout)
    return rewriter.notifyMatchFailure(
        op, "the enclosing function has no weight arena and layout "
            "arguments; run prepareLookupConversion first");

  OpBuilder &b = rewriter;
  Location loc = op->getLoc();

  // Distinct (indices, offsets) pairs, numbered in order of first use as the
  // ABI concatenates them: the shards of a split table share theirs. The
  // metadata is static except for the indices bases, which depend on the
  // sizes of the index tensors; every pair has batch + 1 offsets.
  // Row pieces read their local rows shifted by their first row, so a pair
  // with a shift is a pair of its own.
  llvm::MapVector<std::tuple<Value, Value, int64_t>, size_t> pairs;
  std::vector<abi::ShardDescriptor> shards;
  for (const Entry &entry : entries) {
    shards.push_back(entry.shard);
    shards.back().input =
        pairs
            .insert(
                {{entry.indices, entry.offsets, entry.rowShift}, pairs.size()})
            .first->second;
  }
  abi::ShardSetLayout set =
      abi::layoutShardSet(shards, std::vector<int64_t>(pairs.size(), 0),
                          std::vector<int64_t>(pairs.size(), batch + 1));
  IntegerType indexType;
  for (auto &[pair, number] : pairs) {
    auto element = cast<IntegerType>(
        cast<RankedTensorType>(std::get<0>(pair).getType()).getElementType());
    indexType = !indexType || indexType == element ? element : b.getI64Type();
  }

  // Concatenated indices and offsets (the buffers themselves for one pair).
  SmallVector<Value> indicesBase;
  Value indices, offsets;
  if (pairs.size() == 1 && std::get<2>(pairs.begin()->first) == 0) {
    auto [pair, number] = *pairs.begin();
    indices = toDynamicBuffer(b, loc, std::get<0>(pair));
    offsets = toDynamicBuffer(b, loc, std::get<1>(pair));
    indicesBase.push_back(indexConstant(b, loc, 0));
  } else {
    SmallVector<Value> indexBuffers, offsetBuffers;
    Value total = indexConstant(b, loc, 0);
    for (auto &[pair, number] : pairs) {
      indexBuffers.push_back(toDynamicBuffer(b, loc, std::get<0>(pair)));
      offsetBuffers.push_back(toDynamicBuffer(b, loc, std::get<1>(pair)));
      indicesBase.push_back(total);
      total = arith::AddIOp::create(
          b, loc, total, memref::DimOp::create(b, loc, indexBuffers.back(), 0));
    }
    indices = memref::AllocOp::create(b, loc, dynamic1D(indexType),
                                      ValueRange{total});
    offsets = memref::AllocOp::create(
        b, loc, dynamic1D(indexType),
        ValueRange{indexConstant(b, loc, (batch + 1) * pairs.size())});
    for (auto [k, pair] : llvm::enumerate(llvm::make_first_range(pairs))) {
      copyInto(b, loc, indexBuffers[k], indices, indicesBase[k],
               std::get<2>(pair));
      copyInto(b, loc, offsetBuffers[k], offsets,
               indexConstant(b, loc, set.bases[k].offsets));
    }
  }

  // Metadata: the layout's rows, with the indices bases as computed above.
  Value meta = memref::AllocaOp::create(
      b, loc, MemRefType::get({int64_t(set.meta.size())}, b.getI64Type()));
  for (int64_t s = 0; s < set.numShards(); ++s) {
    Value fields[abi::kShardFields];
    for (int64_t f = 0; f < abi::kShardFields; ++f)
      fields[f] =
          f == abi::kIndicesBase
              ? arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                           indicesBase[shards[s].input])
                    .getResult()
              : i64Constant(b, loc, set.meta[s * abi::kShardFields + f]);
    for (int64_t f = 0; f < abi::kShardFields; ++f)
      memref::StoreOp::create(
          b, loc, fields[f], meta,
          ValueRange{indexConstant(b, loc, s * abi::kShardFields + f)});
  }
  meta = memref::CastOp::create(b, loc, dynamic1D(b.getI64Type()), meta);

  KernelInvocation invocation;
  bool i32 = indexType.getWidth() == 32;
  invocation.kernel = i32 ? abi::kForwardI32 : abi::kForwardI64;
  invocation.meta = meta;
  invocation.layout = layout;
  invocation.weights = weights;
  invocation.indices = indices;
  invocation.offsets = offsets;
  return invocation;
}

/// Replaces a lookup by the forward kernel's invocation and its output.
/// Shared by both lookup ops.
LogicalResult rewriteLookup(Operation *op, ArrayRef<Entry> entries,
                            const KernelEmitter &emit,
                            ConversionPatternRewriter &rewriter) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  FailureOr<KernelInvocation> invocation =
      buildInvocation(op, entries, resultType.getDimSize(0), rewriter);
  if (failed(invocation))
    return failure();
  OpBuilder &b = rewriter;
  Location loc = op->getLoc();
  Value out = memref::AllocOp::create(
      b, loc,
      MemRefType::get(resultType.getShape(), resultType.getElementType()));
  invocation->out = toDynamic2D(b, loc, out);
  emit(b, loc, *invocation);
  Value result = bufferization::ToTensorOp::create(
      b, loc, resultType, out, /*restrict=*/true, /*writable=*/true);
  rewriter.replaceOp(op, result);
  return success();
}

/// The shard of one table read by a lookup entry, addressed within the
/// arena piece that holds it.
abi::ShardDescriptor shardOf(const KernelTableLayout::Piece &piece,
                             int64_t colBegin, int64_t width,
                             PoolingMode mode) {
  abi::ShardDescriptor shard;
  shard.table = piece.ordinal;
  shard.rowStride = piece.rowStride;
  shard.colBegin = colBegin - piece.colBegin;
  shard.width = width;
  shard.mode = abi::poolingMode(mode == PoolingMode::Mean);
  return shard;
}

/// The runtime's host fetch (Runtime/RowCache.h): the CPU target's.
void callHostFetch(OpBuilder &b, Location loc, const CacheFetch &fetch) {
  ModuleOp module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  SmallVector<Value> operands = {i64Constant(b, loc, fetch.cachePiece),
                                 i64Constant(b, loc, fetch.flags), fetch.rows,
                                 fetch.locations};
  Type element = cast<MemRefType>(fetch.rows.getType()).getElementType();
  func::FuncOp callee = declareRuntimeFunction(
      module,
      element.isInteger(32) ? ::neuroshard::runtime::kRowCacheFetchI32
                            : ::neuroshard::runtime::kRowCacheFetchI64,
      ValueRange(operands).getTypes(), b);
  func::CallOp::create(b, loc, callee, operands);
}

/// The locations in the virtual table of cache `cachePiece` (RowCache.h)
/// of the rows `indices` (a tensor) reads, fetched with `fetch`.
Value fetchLocations(Operation *op, int64_t cachePiece, int64_t flags,
                     Value indices, const CacheFetchEmitter &fetch,
                     ConversionPatternRewriter &rewriter) {
  OpBuilder &b = rewriter;
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(indices.getType());
  Type element = type.getElementType();
  Value rows = toDynamicBuffer(b, loc, indices);
  Value count = memref::DimOp::create(b, loc, rows, 0);
  Value locations =
      memref::AllocOp::create(b, loc, dynamic1D(element), ValueRange{count});
  auto func = op->getParentOfType<func::FuncOp>();
  CacheFetch call{cachePiece, flags, findMarkedArgument(func, kWeightsArgAttr),
                  rows, locations};
  if (fetch)
    fetch(b, loc, call);
  else
    callHostFetch(b, loc, call);
  return bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get({ShapedType::kDynamic}, element), locations,
      /*restrict=*/true, /*writable=*/true);
}

/// The shards of a fused lookup or update, addressed in the arena. An entry
/// of a shard in host memory reads its cache's virtual table at the
/// locations a fetch gives (`write`: the update's).
template <typename FusedOp>
FailureOr<SmallVector<Entry>>
fusedEntries(FusedOp op, ValueRange indices, ValueRange offsets,
             const KernelTableLayout &layout, bool write,
             const CacheFetchEmitter &fetch,
             ConversionPatternRewriter &rewriter) {
  SmallVector<Entry> entries;
  llvm::SmallDenseSet<int64_t> fetched;
  for (unsigned i = 0, e = op.getNumEntries(); i < e; ++i) {
    int64_t rowBegin = getEntryRowBegin(op, i);
    int64_t rowEnd =
        isRowPieceEntry(op, i) ? (*op.getRowEnds())[i] : ::neuroshard::kAllRows;
    StringAttr table = StringAttr::get(op.getContext(), op.getEntryTable(i));
    const KernelTableLayout::Piece *piece = layout.find(
        table, rowBegin, rowEnd, op.getColBegins()[i], op.getEntryWidth(i));
    if (!piece)
      return op.emitOpError()
             << "entry " << i << " reads columns [" << op.getColBegins()[i]
             << ", " << op.getColEnds()[i] << ") of table '"
             << op.getEntryTable(i)
             << "', which no piece of the weight arena holds";
    PoolingMode mode = cast<PoolingModeAttr>(op.getModes()[i]).getValue();
    const KernelTableLayout::Piece *cache =
        layout.findCache(table, rowBegin, std::min(rowEnd, piece->tableRows),
                         op.getColBegins()[i], op.getColEnds()[i]);
    if (!cache) {
      entries.push_back(
          {shardOf(*piece, op.getColBegins()[i], op.getEntryWidth(i), mode),
           indices[i], offsets[i], rowBegin - piece->rowBegin});
      continue;
    }
    // The first fetch of a cache in this kernel begins its step: the rows
    // of every entry of the kernel then stay where the fetches put them.
    int64_t flags = write ? ::neuroshard::runtime::kRowCacheWrites : 0;
    if (fetched.insert(cache->ordinal).second)
      flags |= ::neuroshard::runtime::kRowCacheBeginsStep;
    Value locations =
        fetchLocations(op, cache->ordinal, flags, indices[i], fetch, rewriter);
    // The cache's rows keep the columns where the holding piece's rows
    // have them: one row stride and column serve both (RowCache.h).
    abi::ShardDescriptor shard =
        shardOf(*piece, op.getColBegins()[i], op.getEntryWidth(i), mode);
    shard.table = cache->ordinal;
    entries.push_back({shard, locations, offsets[i], /*rowShift=*/0});
  }
  return entries;
}

/// A pattern that turns `OpT` into a kernel invocation on the weight arena
/// `layout` describes, emitted with `emit`; fetches through caches are
/// emitted with `fetch`.
template <typename OpT>
struct ArenaKernelPattern : public OpConversionPattern<OpT> {
  ArenaKernelPattern(MLIRContext *context, const KernelTableLayout &layout,
                     KernelEmitter emit, CacheFetchEmitter fetch)
      : OpConversionPattern<OpT>(context), layout(layout),
        emit(std::move(emit)), fetch(std::move(fetch)) {}

  const KernelTableLayout &layout;
  KernelEmitter emit;
  CacheFetchEmitter fetch;
};

struct EmbeddingBagToKernelCall : public ArenaKernelPattern<EmbeddingBagOp> {
  using ArenaKernelPattern::ArenaKernelPattern;

  LogicalResult
  matchAndRewrite(EmbeddingBagOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto table = op->getParentOfType<ModuleOp>().lookupSymbol<TableOp>(
        op.getTableAttr());
    const KernelTableLayout::Piece *piece =
        table ? layout.find(table.getSymNameAttr(), 0, ::neuroshard::kAllRows,
                            0, table.getNumCols())
              : nullptr;
    if (!piece)
      return rewriter.notifyMatchFailure(op, "the arena does not hold the "
                                             "table");
    Entry entry{shardOf(*piece, 0, table.getNumCols(), op.getMode()),
                adaptor.getIndices(), adaptor.getOffsets()};
    return rewriteLookup(op, entry, emit, rewriter);
  }
};

struct FusedEmbeddingBagToKernelCall
    : public ArenaKernelPattern<FusedEmbeddingBagOp> {
  using ArenaKernelPattern::ArenaKernelPattern;

  LogicalResult
  matchAndRewrite(FusedEmbeddingBagOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Entry>> entries =
        fusedEntries(op, adaptor.getIndices(), adaptor.getOffsets(), layout,
                     /*write=*/false, fetch, rewriter);
    if (failed(entries))
      return failure();
    return rewriteLookup(op, *entries, emit, rewriter);
  }
};

/// The SGD update becomes the backward kernel's invocation with the
/// gradient as its output-gradient operand.
struct FusedEmbeddingBagSGDToKernelCall
    : public ArenaKernelPattern<FusedEmbeddingBagSGDOp> {
  using ArenaKernelPattern::ArenaKernelPattern;

  LogicalResult
  matchAndRewrite(FusedEmbeddingBagSGDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Entry>> entries =
        fusedEntries(op, adaptor.getIndices(), adaptor.getOffsets(), layout,
                     /*write=*/true, fetch, rewriter);
    if (failed(entries))
      return failure();
    auto gradientType = cast<RankedTensorType>(op.getGradient().getType());
    FailureOr<KernelInvocation> invocation =
        buildInvocation(op, *entries, gradientType.getDimSize(0), rewriter);
    if (failed(invocation))
      return failure();
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    bool i32 = invocation->kernel == abi::kForwardI32;
    invocation->kernel = i32 ? abi::kBackwardI32 : abi::kBackwardI64;
    Value gradient = bufferization::ToBufferOp::create(
        b, loc,
        MemRefType::get(gradientType.getShape(), gradientType.getElementType()),
        adaptor.getGradient(), /*read_only=*/true);
    invocation->out = toDynamic2D(b, loc, gradient);
    invocation->lr = adaptor.getLr();
    if (op.getAllReduce())
      callReplicaUpdate(op->getParentOfType<ModuleOp>(), *invocation, i32,
                        rewriter);
    else
      emit(b, loc, *invocation);
    rewriter.eraseOp(op);
    return success();
  }

  /// The update of replicas sums every rank's gradient first: a collective,
  /// so a call of the runtime with the backward kernel's operands.
  static void callReplicaUpdate(ModuleOp module,
                                const KernelInvocation &invocation, bool i32,
                                ConversionPatternRewriter &rewriter) {
    StringRef name = i32 ? ex_abi::kReplicaSGDI32 : ex_abi::kReplicaSGDI64;
    SmallVector<Value> operands = invocation.operands();
    func::FuncOp callee = declareRuntimeFunction(
        module, name, ValueRange(operands).getTypes(), rewriter);
    func::CallOp::create(rewriter, invocation.meta.getLoc(), callee, operands);
  }
};

/// Tables live in the weight arena after the conversion.
struct EraseTable : public OpConversionPattern<TableOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TableOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

/// The first piece of `table` in `layout` that `matches`, or null.
template <typename Matches>
static const KernelTableLayout::Piece *
firstPiece(const KernelTableLayout &layout, StringAttr table, Matches matches) {
  auto it = layout.tables.find(table);
  if (it == layout.tables.end())
    return nullptr;
  auto piece = llvm::find_if(it->second, matches);
  return piece == it->second.end() ? nullptr : &*piece;
}

const KernelTableLayout::Piece *
KernelTableLayout::find(StringAttr table, int64_t rowBegin, int64_t rowEnd,
                        int64_t colBegin, int64_t width) const {
  return firstPiece(*this, table, [&](const Piece &piece) {
    return !piece.isCache() && piece.colBegin <= colBegin &&
           colBegin + width <= piece.colEnd && piece.rowBegin <= rowBegin &&
           std::min(rowEnd, piece.tableRows) <= piece.rowEnd;
  });
}

const KernelTableLayout::Piece *
KernelTableLayout::findCache(StringAttr table, int64_t rowBegin, int64_t rowEnd,
                             int64_t colBegin, int64_t colEnd) const {
  return firstPiece(*this, table, [&](const Piece &piece) {
    return piece.isCache() && piece.rowBegin == rowBegin &&
           piece.rowEnd == rowEnd && piece.colBegin == colBegin &&
           piece.colEnd == colEnd;
  });
}

KernelTableLayout mlir::neuroshard::layoutWeightArena(ModuleOp module) {
  KernelTableLayout layout;
  auto append = [&](TableOp table, KernelTableLayout::Piece piece) {
    piece.ordinal = int64_t(layout.arena.size());
    piece.tableRows = table.getNumRows();
    layout.tables[table.getSymNameAttr()].push_back(piece);
    layout.arena.push_back({table.getSymNameAttr(), piece});
  };
  auto addPiece = [&](TableOp table, int64_t colBegin, int64_t colEnd,
                      int64_t rowBegin, int64_t rowEnd) {
    KernelTableLayout::Piece piece;
    piece.rowStride = colEnd - colBegin;
    piece.colBegin = colBegin;
    piece.colEnd = colEnd;
    piece.rowBegin = rowBegin;
    piece.rowEnd = rowEnd;
    append(table, piece);
  };
  // One rank's program holds its device's shards; any other program holds
  // every table whole.
  std::optional<int64_t> rank = getProgramRank(module);
  if (rank) {
    for (const DeviceShard &shard : getDeviceShards(module, *rank))
      addPiece(shard.table, shard.colBegin, shard.colEnd, shard.rowBegin,
               shard.rowEnd);
  } else {
    for (TableOp table : module.getOps<TableOp>())
      addPiece(table, 0, table.getNumCols(), 0, table.getNumRows());
  }
  // Then the device caches of the shards in host memory (of the rank's
  // device, in a rank's program): each reads its shard's rows in the piece
  // that holds them.
  for (TableOp table : module.getOps<TableOp>()) {
    ArrayAttr shards = table.getShardsAttr();
    if (!shards)
      continue;
    for (ShardAttr shard : shards.getAsRange<ShardAttr>()) {
      if (!shard.isCached() || (rank && shard.getDevice() != *rank))
        continue;
      int64_t rowEnd = shard.getRowEndIn(table.getNumRows());
      const KernelTableLayout::Piece *holder =
          layout.find(table.getSymNameAttr(), shard.getRowBegin(), rowEnd,
                      shard.getColBegin(), shard.getWidth());
      if (!holder)
        continue;
      KernelTableLayout::Piece cache;
      cache.rowStride = holder->rowStride;
      cache.colBegin = shard.getColBegin();
      cache.colEnd = shard.getColEnd();
      cache.rowBegin = shard.getRowBegin();
      cache.rowEnd = rowEnd;
      cache.cacheOf = holder->ordinal;
      cache.cacheRows = shard.getCacheRows();
      append(table, cache);
    }
  }
  return layout;
}

FailureOr<KernelTableLayout>
mlir::neuroshard::prepareLookupConversion(ModuleOp module) {
  for (TableOp table : module.getOps<TableOp>())
    if (!table.getElementType().isF32())
      return table.emitOpError()
             << "has element type " << table.getElementType()
             << "; the lowering executes f32 tables only";
  KernelTableLayout layout = layoutWeightArena(module);
  SmallVector<Attribute> names;
  for (auto &[table, piece] : layout.arena) {
    std::string name = table.str();
    auto op = module.lookupSymbol<TableOp>(table);
    std::string columns =
        std::to_string(piece.colBegin) + ":" + std::to_string(piece.colEnd);
    if (piece.isCache())
      name += " cache[" + std::to_string(piece.rowBegin) + ":" +
              std::to_string(piece.rowEnd) + ", " + columns + "]";
    else if (piece.rowBegin != 0 || piece.rowEnd != op.getNumRows())
      name += "[" + std::to_string(piece.rowBegin) + ":" +
              std::to_string(piece.rowEnd) + ", " + columns + "]";
    else if (piece.colBegin != 0 || piece.colEnd != op.getNumCols())
      name += "[" + columns + "]";
    names.push_back(StringAttr::get(module.getContext(), name));
  }

  bool failed = false;
  llvm::SetVector<func::FuncOp> funcs;
  module.walk([&](Operation *op) {
    if (!isa<EmbeddingBagOp, FusedEmbeddingBagOp, FusedEmbeddingBagSGDOp,
             AllToAllOp, ReduceScatterOp, ExchangeOp, ExchangeGradientOp,
             RankReduceScatterOp, RankReduceScatterGradientOp>(op))
      return;
    for (Type type :
         llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes())) {
      auto shaped = dyn_cast<RankedTensorType>(type);
      if (shaped && shaped.getRank() == 2 && !shaped.hasStaticShape()) {
        op->emitOpError() << "has the dynamically shaped pooled tensor " << type
                          << "; the lowering needs static shapes";
        failed = true;
        return;
      }
    }
    if (isa<AllToAllOp, ReduceScatterOp, ExchangeOp, ExchangeGradientOp,
            RankReduceScatterOp, RankReduceScatterGradientOp>(op))
      return;
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func) {
      op->emitOpError() << "must be inside a func.func to be lowered";
      failed = true;
      return;
    }
    funcs.insert(func);
  });
  if (failed)
    return failure();

  for (func::FuncOp func : funcs) {
    // A backward function names its forward function; that is no call.
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(func, module);
    bool called = !uses || llvm::any_of(*uses, [](SymbolTable::SymbolUse use) {
      return !use.getUser()->hasAttr(
          NeuroShardDialect::getBackwardOfAttrName());
    });
    if (called)
      return func.emitOpError()
             << "holds embedding lookups and is called by other functions; "
                "the lowering adds weight arguments to it, so it must be an "
                "entry point";
    if (func.isExternal())
      return func.emitOpError() << "is external but holds lookups";
  }

  // Everything is checked: change the module.
  Builder b(module.getContext());
  auto marker = [&](StringRef name) {
    return b.getDictionaryAttr(b.getNamedAttr(name, b.getUnitAttr()));
  };
  for (func::FuncOp func : funcs) {
    if (findMarkedArgument(func, kWeightsArgAttr))
      continue;
    unsigned first = func.getNumArguments();
    Location loc = func.getLoc();
    (void)func.insertArguments(
        {first, first}, {dynamic1D(b.getF32Type()), dynamic1D(b.getI64Type())},
        {marker(kWeightsArgAttr), marker(kLayoutArgAttr)}, {loc, loc});
  }
  module->setAttr(NeuroShardDialect::getWeightTablesAttrName(),
                  b.getArrayAttr(names));
  return layout;
}

void mlir::neuroshard::populateLookupToKernelCallPatterns(
    RewritePatternSet &patterns, const KernelTableLayout &layout,
    KernelEmitter emit, CacheFetchEmitter fetch) {
  MLIRContext *context = patterns.getContext();
  patterns.add<EmbeddingBagToKernelCall, FusedEmbeddingBagToKernelCall,
               FusedEmbeddingBagSGDToKernelCall>(context, layout, emit, fetch);
  patterns.add<EraseTable>(context);
}

void mlir::neuroshard::configureLookupConversionTarget(
    ConversionTarget &target) {
  target.addIllegalDialect<NeuroShardDialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
}

SmallVector<Value> KernelInvocation::operands() const {
  SmallVector<Value> operands(abi::numOperands(/*isBackward=*/bool(lr)));
  operands[abi::kMetaOperand] = meta;
  operands[abi::kLayoutOperand] = layout;
  operands[abi::kWeightsOperand] = weights;
  operands[abi::kIndicesOperand] = indices;
  operands[abi::kOffsetsOperand] = offsets;
  operands[abi::kOutOperand] = out;
  if (lr)
    operands[abi::kLearningRateOperand] = lr;
  return operands;
}

LogicalResult mlir::neuroshard::lowerLookups(ModuleOp module,
                                             KernelEmitter emit,
                                             BucketizeEmitter bucketize,
                                             CacheFetchEmitter fetch) {
  FailureOr<KernelTableLayout> layout = prepareLookupConversion(module);
  if (failed(layout))
    return failure();
  MLIRContext *context = module.getContext();
  RewritePatternSet patterns(context);
  populateLookupToKernelCallPatterns(patterns, *layout, std::move(emit),
                                     std::move(fetch));
  populateAllToAllToSlicesPatterns(patterns);
  populateRowPieceDistributionPatterns(patterns, std::move(bucketize));
  populateExchangeToRuntimeCallPatterns(patterns);
  ConversionTarget target(*context);
  configureLookupConversionTarget(target);
  return applyPartialConversion(module, target, std::move(patterns));
}
