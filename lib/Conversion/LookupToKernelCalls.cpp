//===- LookupToKernelCalls.cpp - Lookups to generic kernel calls ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Runtime/ExchangeABI.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::neuroshard;
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

MemRefType dynamic1D(Type element) {
  return MemRefType::get({ShapedType::kDynamic}, element);
}

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value i64Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
}

/// The tensor as a read-only buffer with a dynamic size.
Value toDynamicBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
  Value buffer = bufferization::ToBufferOp::create(b, loc, bufferType, tensor,
                                                   /*read_only=*/true);
  if (!bufferType.isDynamicDim(0))
    buffer = memref::CastOp::create(b, loc, dynamic1D(type.getElementType()),
                                    buffer);
  return buffer;
}

/// Copies `source` into `dest` at `base`, sign-extending when the element
/// types differ and adding `shift` to every value.
void copyInto(OpBuilder &b, Location loc, Value source, Value dest, Value base,
              int64_t shift = 0) {
  Value size = memref::DimOp::create(b, loc, source, 0);
  Type destElement = cast<MemRefType>(dest.getType()).getElementType();
  auto loop = scf::ForOp::create(b, loc, indexConstant(b, loc, 0), size,
                                 indexConstant(b, loc, 1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value i = loop.getInductionVar();
  Value v = memref::LoadOp::create(b, loc, source, ValueRange{i});
  if (v.getType() != destElement)
    v = arith::ExtSIOp::create(b, loc, destElement, v);
  if (shift != 0)
    v = arith::AddIOp::create(
        b, loc, v, arith::ConstantIntOp::create(b, loc, destElement, shift));
  Value at = arith::AddIOp::create(b, loc, base, i);
  memref::StoreOp::create(b, loc, v, dest, ValueRange{at});
}

/// The trailing argument of `func` that carries `attrName`, if any.
Value findMarkedArgument(func::FuncOp func, StringRef attrName) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, attrName))
      return func.getArgument(i);
  return {};
}

/// Declares the runtime function `name`, taking `inputs` and returning
/// nothing, with a C interface, once.
func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    TypeRange inputs,
                                    ConversionPatternRewriter &rewriter) {
  if (auto callee = module.lookupSymbol<func::FuncOp>(name))
    return callee;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto callee = func::FuncOp::create(rewriter, module.getLoc(), name,
                                     rewriter.getFunctionType(inputs, {}));
  callee.setPrivate();
  callee->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
  return callee;
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

/// The memref of a `rows x cols` pooled tensor with dynamic sizes.
Value toDynamic2D(OpBuilder &b, Location loc, Value buffer) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  return memref::CastOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, element),
      buffer);
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

/// The shards of a fused lookup or update, addressed in the arena.
template <typename FusedOp>
FailureOr<SmallVector<Entry>>
fusedEntries(FusedOp op, ValueRange indices, ValueRange offsets,
             const KernelTableLayout &layout,
             ConversionPatternRewriter &rewriter) {
  SmallVector<Entry> entries;
  for (unsigned i = 0, e = op.getNumEntries(); i < e; ++i) {
    int64_t rowBegin = getEntryRowBegin(op, i);
    int64_t rowEnd =
        isRowPieceEntry(op, i) ? (*op.getRowEnds())[i] : ::neuroshard::kAllRows;
    const KernelTableLayout::Piece *piece = layout.find(
        StringAttr::get(op.getContext(), op.getEntryTable(i)), rowBegin, rowEnd,
        op.getColBegins()[i], op.getEntryWidth(i));
    if (!piece)
      return op.emitOpError()
             << "entry " << i << " reads columns [" << op.getColBegins()[i]
             << ", " << op.getColEnds()[i] << ") of table '"
             << op.getEntryTable(i)
             << "', which no piece of the weight arena holds";
    entries.push_back(
        {shardOf(*piece, op.getColBegins()[i], op.getEntryWidth(i),
                 cast<PoolingModeAttr>(op.getModes()[i]).getValue()),
         indices[i], offsets[i], rowBegin - piece->rowBegin});
  }
  return entries;
}

/// A pattern that turns `OpT` into a kernel invocation on the weight arena
/// `layout` describes, emitted with `emit`.
template <typename OpT>
struct ArenaKernelPattern : public OpConversionPattern<OpT> {
  ArenaKernelPattern(MLIRContext *context, const KernelTableLayout &layout,
                     KernelEmitter emit)
      : OpConversionPattern<OpT>(context), layout(layout),
        emit(std::move(emit)) {}

  const KernelTableLayout &layout;
  KernelEmitter emit;
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
    FailureOr<SmallVector<Entry>> entries = fusedEntries(
        op, adaptor.getIndices(), adaptor.getOffsets(), layout, rewriter);
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
    FailureOr<SmallVector<Entry>> entries = fusedEntries(
        op, adaptor.getIndices(), adaptor.getOffsets(), layout, rewriter);
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

struct AllToAllToSlices : public OpConversionPattern<AllToAllOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllToAllOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t rowStart = 0;
    SmallVector<Value> replacements;
    for (Value result : op.getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      int64_t rows = type.getDimSize(0);
      SmallVector<Value> pieces;
      // A device that owns no rows of the batch (a batch smaller than the
      // device count) receives nothing; a slice at the batch's end would
      // not verify.
      for (Value input : rows == 0 ? ValueRange() : adaptor.getInputs()) {
        auto inputType = cast<RankedTensorType>(input.getType());
        if (inputType.getDimSize(1) == 0)
          continue;
        SmallVector<OpFoldResult> offsets = {rewriter.getIndexAttr(rowStart),
                                             rewriter.getIndexAttr(0)};
        SmallVector<OpFoldResult> sizes = {
            rewriter.getIndexAttr(rows),
            rewriter.getIndexAttr(inputType.getDimSize(1))};
        SmallVector<OpFoldResult> strides = {rewriter.getIndexAttr(1),
                                             rewriter.getIndexAttr(1)};
        pieces.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc, input, offsets, sizes, strides));
      }
      if (pieces.empty())
        replacements.push_back(tensor::EmptyOp::create(
            rewriter, loc, type.getShape(), type.getElementType()));
      else if (pieces.size() == 1)
        replacements.push_back(pieces.front());
      else
        replacements.push_back(
            tensor::ConcatOp::create(rewriter, loc, /*dim=*/1, pieces));
      rowStart += rows;
    }
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

/// The sharding pass's form of an exchange whose results are only stacked
/// back into the whole batch: `tensor.concat dim(0)` of every device's rows
/// in device order. In one address space that is every device's buffer side
/// by side, so it lowers to one column concatenation of the inputs; slicing
/// each device's rows first would build N x N pieces for N devices.
struct AllToAllIntoWholeBatch : public OpConversionPattern<AllToAllOp> {
  AllToAllIntoWholeBatch(MLIRContext *context)
      : OpConversionPattern(context, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(AllToAllOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    tensor::ConcatOp stack;
    SmallVector<Value> owned;
    for (Value result : op.getResults()) {
      if (cast<RankedTensorType>(result.getType()).getDimSize(0) == 0) {
        if (!result.use_empty())
          return rewriter.notifyMatchFailure(op, "an empty slice is used");
        continue;
      }
      if (!result.hasOneUse())
        return rewriter.notifyMatchFailure(op, "a slice has other uses");
      auto user = dyn_cast<tensor::ConcatOp>(*result.getUsers().begin());
      if (!user || user.getDim() != 0 || (stack && user != stack))
        return rewriter.notifyMatchFailure(op, "not stacked by one concat");
      stack = user;
      owned.push_back(result);
    }
    if (!stack || !llvm::equal(stack.getInputs(), owned))
      return rewriter.notifyMatchFailure(op, "not stacked in device order");

    SmallVector<Value> columns;
    for (Value input : adaptor.getInputs())
      if (cast<RankedTensorType>(input.getType()).getDimSize(1) != 0)
        columns.push_back(input);
    if (columns.empty())
      return rewriter.notifyMatchFailure(op, "no device has columns");
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(stack);
    Value whole = columns.size() == 1
                      ? columns.front()
                      : tensor::ConcatOp::create(rewriter, stack.getLoc(),
                                                 /*dim=*/1, columns)
                            .getResult();
    rewriter.replaceOp(stack, whole);
    rewriter.eraseOp(op);
    return success();
  }
};

/// The buffer of a `B x W` tensor, whatever its layout (a slice of a fused
/// lookup's result is strided).
Value toStridedBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto layout = StridedLayoutAttr::get(
      b.getContext(), ShapedType::kDynamic,
      SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic));
  return bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType(), layout),
      tensor, /*read_only=*/true);
}

/// A buffer of `type`'s shape, sized like `like` along a dynamic dimension.
Value allocLike(OpBuilder &b, Location loc, RankedTensorType type,
                Value dynamicSize) {
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  return memref::AllocOp::create(
      b, loc, memrefType,
      type.hasStaticShape() ? ValueRange() : ValueRange{dynamicSize});
}

/// The buffers of a bucketized lookup's indices and offsets, and their
/// index type.
struct BucketizeInputs {
  Value indices, offsets;
  IntegerType element;

  BucketizeInputs(OpBuilder &b, Location loc, BucketizeOp::Adaptor adaptor)
      : indices(toDynamicBuffer(b, loc, adaptor.getIndices())),
        offsets(toDynamicBuffer(b, loc, adaptor.getOffsets())),
        element(cast<IntegerType>(
            cast<MemRefType>(indices.getType()).getElementType())) {}
};

/// Collects each block's indices and offsets buffers and replaces the
/// bucketize op by them as tensors.
struct BucketizeResults {
  SmallVector<Value> indices, offsets;

  void add(OpBuilder &b, Location loc, BucketizeOp op, Value blockIndices,
           Value blockOffsets) {
    size_t k = indices.size();
    indices.push_back(bufferization::ToTensorOp::create(
        b, loc, op.getBlockIndices()[k].getType(), blockIndices,
        /*restrict=*/true, /*writable=*/true));
    offsets.push_back(bufferization::ToTensorOp::create(
        b, loc, op.getBlockOffsets()[k].getType(), blockOffsets,
        /*restrict=*/true, /*writable=*/true));
  }
  void replace(ConversionPatternRewriter &rewriter, BucketizeOp op) {
    rewriter.replaceOp(op,
                       llvm::to_vector(llvm::concat<Value>(indices, offsets)));
  }
};

/// `neuroshard.bucketize` as two passes over the indices per block: one that
/// counts the block's indices, one that writes them, local, bag by bag.
struct BucketizeToLoops : public OpConversionPattern<BucketizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(BucketizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    BucketizeInputs inputs(b, loc, adaptor);
    Value indices = inputs.indices, offsets = inputs.offsets;
    IntegerType element = inputs.element;
    Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
    Value numIndices = memref::DimOp::create(b, loc, indices, 0);
    Value numOffsets = memref::DimOp::create(b, loc, offsets, 0);
    Value numBags = arith::SubIOp::create(b, loc, numOffsets, one);
    auto asIndex = [&](OpBuilder &nested, Value v) -> Value {
      return arith::IndexCastOp::create(nested, loc, nested.getIndexType(), v);
    };
    auto asElement = [&](OpBuilder &nested, Value v) -> Value {
      return arith::IndexCastOp::create(nested, loc, element, v);
    };

    BucketizeResults blocks;
    ArrayRef<int64_t> rows = op.getRows();
    for (size_t j = 0; j + 1 < rows.size(); ++j) {
      Value first = arith::ConstantIntOp::create(b, loc, element, rows[j]);
      Value end = arith::ConstantIntOp::create(b, loc, element, rows[j + 1]);
      // Whether `v` lies in the block.
      auto inBlock = [&](OpBuilder &nested, Value v) -> Value {
        Value above = arith::CmpIOp::create(
            nested, loc, arith::CmpIPredicate::sge, v, first);
        Value below = arith::CmpIOp::create(nested, loc,
                                            arith::CmpIPredicate::slt, v, end);
        return arith::AndIOp::create(nested, loc, above, below);
      };

      auto count = scf::ForOp::create(
          b, loc, zero, numIndices, one, ValueRange{zero},
          [&](OpBuilder &nested, Location, Value i, ValueRange counted) {
            Value v = memref::LoadOp::create(nested, loc, indices, i);
            Value next = arith::AddIOp::create(nested, loc, counted[0], one);
            Value kept = arith::SelectOp::create(
                nested, loc, inBlock(nested, v), next, counted[0]);
            scf::YieldOp::create(nested, loc, kept);
          });
      auto indicesType =
          cast<RankedTensorType>(op.getBlockIndices()[j].getType());
      auto offsetsType =
          cast<RankedTensorType>(op.getBlockOffsets()[j].getType());
      Value local = allocLike(b, loc, indicesType, count.getResult(0));
      Value localOffsets = allocLike(b, loc, offsetsType, numOffsets);

      auto bags = scf::ForOp::create(
          b, loc, zero, numBags, one, ValueRange{zero},
          [&](OpBuilder &nested, Location, Value bag, ValueRange written) {
            memref::StoreOp::create(nested, loc, asElement(nested, written[0]),
                                    localOffsets, bag);
            Value begin = asIndex(
                nested, memref::LoadOp::create(nested, loc, offsets, bag));
            Value after = arith::AddIOp::create(nested, loc, bag, one);
            Value stop = asIndex(
                nested, memref::LoadOp::create(nested, loc, offsets, after));
            auto pool = scf::ForOp::create(
                nested, loc, begin, stop, one, written,
                [&](OpBuilder &inner, Location, Value i, ValueRange at) {
                  Value v = memref::LoadOp::create(inner, loc, indices, i);
                  auto keep = scf::IfOp::create(
                      inner, loc, inBlock(inner, v),
                      [&](OpBuilder &then, Location) {
                        Value row = arith::SubIOp::create(then, loc, v, first);
                        memref::StoreOp::create(then, loc, row, local, at[0]);
                        scf::YieldOp::create(then, loc,
                                             ValueRange{arith::AddIOp::create(
                                                 then, loc, at[0], one)});
                      },
                      [&](OpBuilder &otherwise, Location) {
                        scf::YieldOp::create(otherwise, loc, at[0]);
                      });
                  scf::YieldOp::create(inner, loc, keep.getResults());
                });
            scf::YieldOp::create(nested, loc, pool.getResults());
          });
      memref::StoreOp::create(b, loc, asElement(b, bags.getResult(0)),
                              localOffsets, numBags);
      blocks.add(b, loc, op, local, localOffsets);
    }
    blocks.replace(rewriter, op);
    return success();
  }
};

/// `neuroshard.bucketize` as one call of KernelABI.h's bucketization, which
/// `emit` emits: the row boundaries as a constant buffer, outputs for every
/// block's offsets and for all blocks' indices together, then each block's
/// pair copied out of them (its indices start after the earlier blocks').
struct BucketizeToKernelCall : public OpConversionPattern<BucketizeOp> {
  BucketizeToKernelCall(MLIRContext *context, BucketizeEmitter emit)
      : OpConversionPattern(context), emit(std::move(emit)) {}

  LogicalResult
  matchAndRewrite(BucketizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    BucketizeInputs inputs(b, loc, adaptor);
    Value indices = inputs.indices, offsets = inputs.offsets;
    IntegerType element = inputs.element;
    ArrayRef<int64_t> rows = op.getRows();
    int64_t numBlocks = static_cast<int64_t>(rows.size()) - 1;

    Value boundaries = memref::AllocaOp::create(
        b, loc, MemRefType::get({int64_t(rows.size())}, b.getI64Type()));
    for (auto [k, row] : llvm::enumerate(rows))
      memref::StoreOp::create(b, loc, i64Constant(b, loc, row), boundaries,
                              ValueRange{indexConstant(b, loc, k)});
    boundaries =
        memref::CastOp::create(b, loc, dynamic1D(b.getI64Type()), boundaries);
    Value numIndices = memref::DimOp::create(b, loc, indices, 0);
    Value numOffsets = memref::DimOp::create(b, loc, offsets, 0);
    Value allOffsets = memref::AllocOp::create(
        b, loc, dynamic1D(element),
        ValueRange{arith::MulIOp::create(b, loc, numOffsets,
                                         indexConstant(b, loc, numBlocks))});
    Value allIndices = memref::AllocOp::create(b, loc, dynamic1D(element),
                                               ValueRange{numIndices});
    Value operands[abi::kBucketizeNumOperands];
    operands[abi::kRowsOperand] = boundaries;
    operands[abi::kBucketIndicesOperand] = indices;
    operands[abi::kBucketOffsetsOperand] = offsets;
    operands[abi::kBlockOffsetsOperand] = allOffsets;
    operands[abi::kBlockIndicesOperand] = allIndices;
    emit(b, loc,
         element.getWidth() == 32 ? abi::kBucketizeI32 : abi::kBucketizeI64,
         operands);

    BucketizeResults blocks;
    Value start = indexConstant(b, loc, 0);
    Value numBags =
        arith::SubIOp::create(b, loc, numOffsets, indexConstant(b, loc, 1));
    auto slice = [&](Value buffer, Value at, Value size) -> Value {
      return memref::SubViewOp::create(b, loc, buffer, OpFoldResult(at),
                                       OpFoldResult(size),
                                       OpFoldResult(b.getIndexAttr(1)));
    };
    for (int64_t k = 0; k < numBlocks; ++k) {
      Value first =
          arith::MulIOp::create(b, loc, numOffsets, indexConstant(b, loc, k));
      Value count = arith::IndexCastOp::create(
          b, loc, b.getIndexType(),
          memref::LoadOp::create(
              b, loc, allOffsets,
              ValueRange{arith::AddIOp::create(b, loc, first, numBags)}));
      auto indicesType =
          cast<RankedTensorType>(op.getBlockIndices()[k].getType());
      auto offsetsType =
          cast<RankedTensorType>(op.getBlockOffsets()[k].getType());
      Value local = allocLike(b, loc, indicesType, count);
      Value localOffsets = allocLike(b, loc, offsetsType, numOffsets);
      copyInto(b, loc, slice(allIndices, start, count), local,
               indexConstant(b, loc, 0));
      copyInto(b, loc, slice(allOffsets, first, numOffsets), localOffsets,
               indexConstant(b, loc, 0));
      start = arith::AddIOp::create(b, loc, start, count);
      blocks.add(b, loc, op, local, localOffsets);
    }
    blocks.replace(rewriter, op);
    return success();
  }

private:
  BucketizeEmitter emit;
};

/// `neuroshard.reduce_scatter` as a loop nest per device: each element of a
/// device's rows is the sum of the inputs', divided for `mean` by its bag's
/// length.
struct ReduceScatterToLoops : public OpConversionPattern<ReduceScatterOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReduceScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    SmallVector<Value> inputs;
    for (Value input : adaptor.getInputs())
      inputs.push_back(toStridedBuffer(b, loc, input));
    Value offsets = adaptor.getMeanOffsets()
                        ? toDynamicBuffer(b, loc, adaptor.getMeanOffsets())
                        : Value();
    Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
    int64_t rowStart = 0;
    SmallVector<Value> results;
    for (Value result : op.getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      Type element = type.getElementType();
      Value out = memref::AllocOp::create(
          b, loc, MemRefType::get(type.getShape(), element));
      Value start = indexConstant(b, loc, rowStart);
      scf::buildLoopNest(
          b, loc, {zero, zero},
          {indexConstant(b, loc, type.getDimSize(0)),
           indexConstant(b, loc, type.getDimSize(1))},
          {one, one}, [&](OpBuilder &nested, Location, ValueRange ivs) {
            Value bag = arith::AddIOp::create(nested, loc, start, ivs[0]);
            Value sum = arith::ConstantOp::create(
                nested, loc, nested.getFloatAttr(element, 0.0));
            for (Value input : inputs)
              sum = arith::AddFOp::create(
                  nested, loc, sum,
                  memref::LoadOp::create(nested, loc, input,
                                         ValueRange{bag, ivs[1]}));
            if (offsets) {
              Value next = arith::AddIOp::create(nested, loc, bag, one);
              Value length = arith::SubIOp::create(
                  nested, loc,
                  memref::LoadOp::create(nested, loc, offsets, next),
                  memref::LoadOp::create(nested, loc, offsets, bag));
              Value nonEmpty = arith::CmpIOp::create(
                  nested, loc, arith::CmpIPredicate::sgt, length,
                  arith::ConstantIntOp::create(nested, loc, length.getType(),
                                               0));
              Value mean = arith::DivFOp::create(
                  nested, loc, sum,
                  arith::SIToFPOp::create(nested, loc, element, length));
              sum = arith::SelectOp::create(nested, loc, nonEmpty, mean, sum);
            }
            memref::StoreOp::create(nested, loc, sum, out, ivs);
          });
      results.push_back(bufferization::ToTensorOp::create(
          b, loc, type, out, /*restrict=*/true, /*writable=*/true));
      rowStart += type.getDimSize(0);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Constant 1-D i64 buffer of `values`, with a dynamic size.
Value i64Buffer(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  Value buffer = memref::AllocaOp::create(
      b, loc, MemRefType::get({int64_t(values.size())}, b.getI64Type()));
  for (auto [i, v] : llvm::enumerate(values))
    memref::StoreOp::create(b, loc, i64Constant(b, loc, v), buffer,
                            ValueRange{indexConstant(b, loc, int64_t(i))});
  return memref::CastOp::create(b, loc, dynamic1D(b.getI64Type()), buffer);
}

/// Replaces `op`, one rank's side of a collective in either direction, by a
/// call of the runtime function `function`: the collective needs every
/// rank, so it cannot be expressed as computation of this program alone.
/// `sent` is the op's f32 operand; `arrays` builds the call's two i64
/// arrays.
LogicalResult replaceByCollectiveCall(
    Operation *op, Value sent, StringRef function, int64_t rank,
    function_ref<std::pair<Value, Value>(OpBuilder &)> arrays,
    ConversionPatternRewriter &rewriter) {
  auto sentType = cast<RankedTensorType>(op->getOperand(0).getType());
  auto receivedType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!sentType.getElementType().isF32())
    return rewriter.notifyMatchFailure(op, "only f32 is exchanged");
  OpBuilder &b = rewriter;
  Location loc = op->getLoc();
  Type f32 = b.getF32Type();
  Value send = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(sentType.getShape(), f32), sent,
      /*read_only=*/true);
  Value recv = memref::AllocOp::create(
      b, loc, MemRefType::get(receivedType.getShape(), f32));
  auto [first, second] = arrays(b);
  SmallVector<Value> operands = {toDynamic2D(b, loc, send),
                                 toDynamic2D(b, loc, recv), first, second,
                                 i64Constant(b, loc, rank)};
  // Both sides of the exchange and of the reduce-scatter share
  // ExchangeABI.h's C interface: two f32 buffers, two i64 arrays, the rank.
  func::FuncOp callee =
      declareRuntimeFunction(op->getParentOfType<ModuleOp>(), function,
                             ValueRange(operands).getTypes(), rewriter);
  func::CallOp::create(b, loc, callee, operands);
  rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                             b, loc, receivedType, recv, /*restrict=*/true,
                             /*writable=*/true));
  return success();
}

/// One rank's side of the exchange: the widths and the batches.
template <typename ExchangeSideOp>
struct ExchangeToRuntimeCall : public OpConversionPattern<ExchangeSideOp> {
  ExchangeToRuntimeCall(MLIRContext *context, StringRef function)
      : OpConversionPattern<ExchangeSideOp>(context), function(function) {}

  LogicalResult
  matchAndRewrite(ExchangeSideOp op, typename ExchangeSideOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return replaceByCollectiveCall(
        op, adaptor.getOperands()[0], function,
        static_cast<int64_t>(op.getRank()),
        [&](OpBuilder &b) {
          return std::make_pair(i64Buffer(b, op.getLoc(), op.getWidths()),
                                i64Buffer(b, op.getLoc(), op.getBatches()));
        },
        rewriter);
  }

  std::string function;
};

/// One rank's side of the reduce-scatter: the batches and the mean's
/// offsets as i64 (none for a sum).
template <typename SideOp>
struct ReduceScatterToRuntimeCall : public OpConversionPattern<SideOp> {
  ReduceScatterToRuntimeCall(MLIRContext *context, StringRef function)
      : OpConversionPattern<SideOp>(context), function(function) {}

  LogicalResult
  matchAndRewrite(SideOp op, typename SideOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto arrays = [&](OpBuilder &b) {
      Value offsets;
      if (Value mean = adaptor.getMeanOffsets()) {
        Value source = toDynamicBuffer(b, loc, mean);
        Value size = memref::DimOp::create(b, loc, source, 0);
        offsets = memref::AllocOp::create(b, loc, dynamic1D(b.getI64Type()),
                                          ValueRange{size});
        copyInto(b, loc, source, offsets, indexConstant(b, loc, 0));
      } else {
        offsets = memref::CastOp::create(
            b, loc, dynamic1D(b.getI64Type()),
            memref::AllocaOp::create(b, loc,
                                     MemRefType::get({0}, b.getI64Type())));
      }
      return std::make_pair(i64Buffer(b, loc, op.getBatches()), offsets);
    };
    return replaceByCollectiveCall(op, adaptor.getOperands()[0], function,
                                   static_cast<int64_t>(op.getRank()), arrays,
                                   rewriter);
  }

  std::string function;
};

} // namespace

const KernelTableLayout::Piece *
KernelTableLayout::find(StringAttr table, int64_t rowBegin, int64_t rowEnd,
                        int64_t colBegin, int64_t width) const {
  auto it = tables.find(table);
  if (it == tables.end())
    return nullptr;
  for (const Piece &piece : it->second)
    if (piece.colBegin <= colBegin && colBegin + width <= piece.colEnd &&
        piece.rowBegin <= rowBegin &&
        std::min(rowEnd, piece.tableRows) <= piece.rowEnd)
      return &piece;
  return nullptr;
}

KernelTableLayout mlir::neuroshard::layoutWeightArena(ModuleOp module) {
  KernelTableLayout layout;
  auto addPiece = [&](TableOp table, int64_t colBegin, int64_t colEnd,
                      int64_t rowBegin, int64_t rowEnd) {
    KernelTableLayout::Piece piece{int64_t(layout.arena.size()),
                                   colEnd - colBegin,
                                   colBegin,
                                   colEnd,
                                   rowBegin,
                                   rowEnd,
                                   table.getNumRows()};
    layout.tables[table.getSymNameAttr()].push_back(piece);
    layout.arena.push_back({table.getSymNameAttr(), piece});
  };
  // One rank's program holds its device's shards; any other program holds
  // every table whole.
  if (std::optional<int64_t> rank = getProgramRank(module)) {
    for (const DeviceShard &shard : getDeviceShards(module, *rank))
      addPiece(shard.table, shard.colBegin, shard.colEnd, shard.rowBegin,
               shard.rowEnd);
  } else {
    for (TableOp table : module.getOps<TableOp>())
      addPiece(table, 0, table.getNumCols(), 0, table.getNumRows());
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
    if (piece.rowBegin != 0 || piece.rowEnd != op.getNumRows())
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
    KernelEmitter emit) {
  MLIRContext *context = patterns.getContext();
  patterns.add<EmbeddingBagToKernelCall, FusedEmbeddingBagToKernelCall,
               FusedEmbeddingBagSGDToKernelCall>(context, layout, emit);
  patterns.add<EraseTable>(context);
}

void mlir::neuroshard::populateAllToAllToSlicesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AllToAllIntoWholeBatch, AllToAllToSlices>(patterns.getContext());
}

void mlir::neuroshard::populateRowPieceDistributionPatterns(
    RewritePatternSet &patterns, BucketizeEmitter bucketize) {
  MLIRContext *context = patterns.getContext();
  if (bucketize)
    patterns.add<BucketizeToKernelCall>(context, std::move(bucketize));
  else
    patterns.add<BucketizeToLoops>(context);
  patterns.add<ReduceScatterToLoops>(context);
}

void mlir::neuroshard::populateExchangeToRuntimeCallPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<ExchangeToRuntimeCall<ExchangeOp>>(context,
                                                  ex_abi::kExchangeF32);
  patterns.add<ExchangeToRuntimeCall<ExchangeGradientOp>>(
      context, ex_abi::kExchangeGradientF32);
  patterns.add<ReduceScatterToRuntimeCall<RankReduceScatterOp>>(
      context, ex_abi::kReduceScatterF32);
  patterns.add<ReduceScatterToRuntimeCall<RankReduceScatterGradientOp>>(
      context, ex_abi::kReduceScatterGradientF32);
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
                                             BucketizeEmitter bucketize) {
  FailureOr<KernelTableLayout> layout = prepareLookupConversion(module);
  if (failed(layout))
    return failure();
  MLIRContext *context = module.getContext();
  RewritePatternSet patterns(context);
  populateLookupToKernelCallPatterns(patterns, *layout, std::move(emit));
  populateAllToAllToSlicesPatterns(patterns);
  populateRowPieceDistributionPatterns(patterns, std::move(bucketize));
  populateExchangeToRuntimeCallPatterns(patterns);
  ConversionTarget target(*context);
  configureLookupConversionTarget(target);
  return applyPartialConversion(module, target, std::move(patterns));
}
