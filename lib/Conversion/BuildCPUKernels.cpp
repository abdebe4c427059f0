//===- BuildCPUKernels.cpp - The generic fused embedding kernels as IR ----===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Builds the four kernels of KernelABI.h as `func.func`s over `scf` loops:
// shards, then bags, then the shard's columns in 128-, 64-, 32-, 16-, 8-, 4-
// and 1-wide vector chunks (a 128-wide chunk is 8 AVX-512 or 16 AVX2
// registers). The forward kernel keeps a chunk's running sum in registers
// over the bag's indices and stores it once; the backward kernel walks a
// bag's indices in order and applies `row -= lr * scale * grad` chunk by
// chunk, so repeated indices each apply, in order. Both prefetch the rows a
// few indices ahead.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

using namespace mlir;
using namespace mlir::neuroshard;
namespace abi = ::neuroshard::kernel_abi;

namespace {

/// Vector widths of the column loops, widest first; the last must be 1.
constexpr int64_t kChunkWidths[] = {128, 64, 32, 16, 8, 4, 1};
/// How far ahead each kernel prefetches rows, as a budget of floats: a
/// shard looks budget / width indices ahead, clamped to
/// [kMinPrefetchDistance, kMaxPrefetchDistance], so that narrow shards keep
/// about as many bytes in flight as wide ones. The backward kernel, which
/// also writes the rows back, gains from the longer look-ahead
/// (neuroshard-kernel-bench).
struct PrefetchPolicy {
  int64_t budget;
  bool forWrite;
};
constexpr PrefetchPolicy kForwardPrefetch = {1536, /*forWrite=*/false};
constexpr PrefetchPolicy kBackwardPrefetch = {2048, /*forWrite=*/true};
/// Floats between two prefetched addresses of a chunk: one per 64-byte line.
constexpr int64_t kPrefetchStride = 16;
constexpr int64_t kMinPrefetchDistance = 16;
constexpr int64_t kMaxPrefetchDistance = 64;

/// One shard's metadata row, loaded as `index` values.
struct ShardFields {
  Value weightBase; // layout[table] + colBegin
  Value rowStride, width, outColumn, indicesBase, offsetsBase;
  Value isMean; // i1
};

/// Small helpers over an ImplicitLocOpBuilder.
class KernelBuilder {
public:
  explicit KernelBuilder(ImplicitLocOpBuilder &b) : b(b) {}

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }

  /// Loads element `pos` of an integer memref as an `index`.
  Value loadIndex(Value memref, Value pos) {
    Value v = memref::LoadOp::create(b, memref, ValueRange{pos});
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  }

  ShardFields loadShard(Value meta, Value layout, Value shard) {
    Value row =
        arith::MulIOp::create(b, shard, index(abi::kShardFields)).getResult();
    auto field = [&](int64_t f) {
      return loadIndex(meta, arith::AddIOp::create(b, row, index(f)));
    };
    ShardFields s;
    Value table = field(abi::kTable);
    s.rowStride = field(abi::kRowStride);
    s.weightBase = arith::AddIOp::create(b, loadIndex(layout, table),
                                         field(abi::kColBegin));
    s.width = field(abi::kWidth);
    s.outColumn = field(abi::kOutColumn);
    s.indicesBase = field(abi::kIndicesBase);
    s.offsetsBase = field(abi::kOffsetsBase);
    s.isMean = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                     field(abi::kMode), index(abi::kMean));
    return s;
  }

  /// Bag bounds [start, end) in the indices buffer and the divisor of the
  /// bag's pooled value (its length for mean pooling, else 1) as f32.
  void bagBounds(const ShardFields &s, Value offsets, Value bag, Value &start,
                 Value &end, Value &divisor) {
    Value pos = arith::AddIOp::create(b, s.offsetsBase, bag);
    Value first = loadIndex(offsets, pos);
    Value last =
        loadIndex(offsets, arith::AddIOp::create(b, pos, index(1)).getResult());
    start = arith::AddIOp::create(b, s.indicesBase, first);
    end = arith::AddIOp::create(b, s.indicesBase, last);
    Value length = arith::SubIOp::create(b, last, first);
    Value nonEmpty =
        arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, length, index(0));
    Value useLength = arith::AndIOp::create(b, s.isMean, nonEmpty);
    Value lengthF = arith::UIToFPOp::create(
        b, b.getF32Type(),
        arith::IndexCastOp::create(b, b.getI64Type(), length).getResult());
    Value one = arith::ConstantOp::create(b, b.getF32FloatAttr(1.0f));
    divisor = arith::SelectOp::create(b, useLength, lengthF, one);
  }

  /// Emits loops over the columns [0, width) in chunks of kChunkWidths,
  /// calling `body(column, chunkType)` for each chunk.
  void forEachChunk(Value width,
                    llvm::function_ref<void(Value, VectorType)> body) {
    Value begin = index(0);
    for (int64_t chunk : kChunkWidths) {
      Value end = width;
      if (chunk > 1) {
        Value rem = arith::RemUIOp::create(b, width, index(chunk));
        end = arith::SubIOp::create(b, width, rem);
      }
      auto type = VectorType::get({chunk}, b.getF32Type());
      auto loop = scf::ForOp::create(b, begin, end, index(chunk));
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        body(loop.getInductionVar(), type);
      }
      begin = end;
    }
  }

  /// The number of indices a shard of `width` columns looks ahead.
  Value prefetchDistance(Value width, const PrefetchPolicy &policy) {
    Value nonZero = arith::MaxUIOp::create(b, width, index(1));
    Value d = arith::DivUIOp::create(b, index(policy.budget), nonZero);
    d = arith::MaxUIOp::create(b, d, index(kMinPrefetchDistance));
    return arith::MinUIOp::create(b, d, index(kMaxPrefetchDistance));
  }

  /// Prefetches the chunk at `column` of the row `distance` indices ahead of
  /// `position`, one prefetch per cache line. The look-ahead runs on into
  /// the following bags of the shard (clamped to the shard's last index
  /// before `end`), so that a bag's first rows are already on their way
  /// while the previous bag finishes.
  void prefetchAhead(Value indices, Value position, Value distance, Value end,
                     Value rowStride, Value weightBase, Value column,
                     VectorType chunkType, Value weights,
                     const PrefetchPolicy &policy) {
    Value ahead = arith::AddIOp::create(b, position, distance);
    Value last = arith::SubIOp::create(b, end, index(1));
    Value clamped = arith::MinSIOp::create(b, ahead, last);
    Value row = loadIndex(indices, clamped);
    Value base = arith::AddIOp::create(
        b, arith::MulIOp::create(b, row, rowStride), weightBase);
    base = arith::AddIOp::create(b, base, column);
    for (int64_t offset = 0; offset < chunkType.getNumElements();
         offset += kPrefetchStride) {
      Value addr =
          offset ? arith::AddIOp::create(b, base, index(offset)).getResult()
                 : base;
      memref::PrefetchOp::create(b, weights, ValueRange{addr}, policy.forWrite,
                                 /*localityHint=*/3, /*isDataCache=*/true);
    }
  }

  ImplicitLocOpBuilder &b;
};

MemRefType dynamic1D(Type element) {
  return MemRefType::get({ShapedType::kDynamic}, element);
}

/// What the body of a kernel sees for one (shard, bag): the kernel's
/// arguments, the shard's fields and the bag's bounds.
struct BagContext {
  ValueRange args;
  ShardFields shard;
  /// One past the shard's last position in the indices buffer.
  Value shardEnd;
  /// How many indices ahead the kernel prefetches rows for this shard.
  Value distance;
  const PrefetchPolicy *prefetch;
  Value bag, start, end, divisor;
};

/// Builds the frame both kernels share: the function (meta, layout, weights,
/// indices, offsets, a B x W buffer, then `extra` arguments), with loops
/// over the shards of `meta` and over the bags of the buffer, and `body` in
/// the bag loop.
void buildKernel(OpBuilder &builder, Location loc, StringRef name,
                 IntegerType indexType, const PrefetchPolicy &prefetch,
                 ArrayRef<Type> extra,
                 function_ref<void(ImplicitLocOpBuilder &, KernelBuilder &,
                                   const BagContext &)>
                     body) {
  Type f32 = builder.getF32Type(), i64 = builder.getI64Type();
  auto matrix =
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, f32);
  SmallVector<Type> inputs = {dynamic1D(i64),       dynamic1D(i64),
                              dynamic1D(f32),       dynamic1D(indexType),
                              dynamic1D(indexType), matrix};
  inputs.append(extra.begin(), extra.end());
  auto func = func::FuncOp::create(builder, loc, name,
                                   builder.getFunctionType(inputs, {}));
  func->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  func.addEntryBlock();

  ImplicitLocOpBuilder b(loc, builder);
  b.setInsertionPointToStart(&func.getBody().front());
  KernelBuilder kb(b);
  Value meta = func.getArgument(0), layout = func.getArgument(1),
        offsets = func.getArgument(4), matrixArg = func.getArgument(5);
  Value numShards = arith::DivUIOp::create(b, memref::DimOp::create(b, meta, 0),
                                           kb.index(abi::kShardFields));
  Value batch = memref::DimOp::create(b, matrixArg, 0);
  auto shardLoop = scf::ForOp::create(b, kb.index(0), numShards, kb.index(1));
  b.setInsertionPointToStart(shardLoop.getBody());
  BagContext ctx;
  ctx.args = func.getArguments();
  ctx.shard = kb.loadShard(meta, layout, shardLoop.getInductionVar());
  ctx.shardEnd = arith::AddIOp::create(
      b, ctx.shard.indicesBase,
      kb.loadIndex(offsets,
                   arith::AddIOp::create(b, ctx.shard.offsetsBase, batch)));
  ctx.prefetch = &prefetch;
  ctx.distance = kb.prefetchDistance(ctx.shard.width, prefetch);
  auto bagLoop = scf::ForOp::create(b, kb.index(0), batch, kb.index(1));
  b.setInsertionPointToStart(bagLoop.getBody());
  ctx.bag = bagLoop.getInductionVar();
  kb.bagBounds(ctx.shard, offsets, ctx.bag, ctx.start, ctx.end, ctx.divisor);
  body(b, kb, ctx);
  b.setInsertionPointAfter(shardLoop);
  func::ReturnOp::create(b);
}

/// forward(meta, layout, weights, indices, offsets, out)
void buildForward(ImplicitLocOpBuilder &b, KernelBuilder &kb,
                  const BagContext &ctx) {
  const ShardFields &s = ctx.shard;
  Value weights = ctx.args[2], indices = ctx.args[3], out = ctx.args[5];
  // Mean pooling multiplies by the reciprocal of the bag length, as
  // PyTorch's CPU kernels do; sum pooling multiplies by 1.
  Value one = arith::ConstantOp::create(b, b.getF32FloatAttr(1.0f));
  Value reciprocal = arith::DivFOp::create(b, one, ctx.divisor);

  kb.forEachChunk(s.width, [&](Value column, VectorType chunkType) {
    Value zero = arith::ConstantOp::create(
        b, DenseElementsAttr::get(chunkType, b.getF32FloatAttr(0.0f)));
    Value colInRow = arith::AddIOp::create(b, s.weightBase, column);
    auto reduce = scf::ForOp::create(b, ctx.start, ctx.end, kb.index(1),
                                     ValueRange{zero});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(reduce.getBody());
      Value position = reduce.getInductionVar();
      kb.prefetchAhead(indices, position, ctx.distance, ctx.shardEnd,
                       s.rowStride, s.weightBase, column, chunkType, weights,
                       *ctx.prefetch);
      Value row = kb.loadIndex(indices, position);
      Value addr = arith::AddIOp::create(
          b, arith::MulIOp::create(b, row, s.rowStride), colInRow);
      Value v = vector::LoadOp::create(b, chunkType, weights, ValueRange{addr});
      Value sum = arith::AddFOp::create(b, reduce.getRegionIterArg(0), v);
      scf::YieldOp::create(b, sum);
    }
    Value scale = vector::BroadcastOp::create(b, chunkType, reciprocal);
    Value pooled = arith::MulFOp::create(b, reduce.getResult(0), scale);
    Value outCol = arith::AddIOp::create(b, s.outColumn, column);
    vector::StoreOp::create(b, pooled, out, ValueRange{ctx.bag, outCol});
  });
}

/// backward(meta, layout, weights, indices, offsets, grad, lr)
void buildBackward(ImplicitLocOpBuilder &b, KernelBuilder &kb,
                   const BagContext &ctx) {
  const ShardFields &s = ctx.shard;
  Value weights = ctx.args[2], indices = ctx.args[3], grad = ctx.args[5],
        lr = ctx.args[6];
  // -lr / divisor: every index of the bag moves its row by this times grad.
  Value negLr = arith::NegFOp::create(b, lr);
  Value coefficient = arith::DivFOp::create(b, negLr, ctx.divisor);
  auto indexLoop = scf::ForOp::create(b, ctx.start, ctx.end, kb.index(1));
  b.setInsertionPointToStart(indexLoop.getBody());
  Value position = indexLoop.getInductionVar();
  Value row = kb.loadIndex(indices, position);
  Value rowBase = arith::AddIOp::create(
      b, arith::MulIOp::create(b, row, s.rowStride), s.weightBase);
  kb.forEachChunk(s.width, [&](Value column, VectorType chunkType) {
    kb.prefetchAhead(indices, position, ctx.distance, ctx.shardEnd, s.rowStride,
                     s.weightBase, column, chunkType, weights, *ctx.prefetch);
    Value outCol = arith::AddIOp::create(b, s.outColumn, column);
    Value g =
        vector::LoadOp::create(b, chunkType, grad, ValueRange{ctx.bag, outCol});
    Value addr = arith::AddIOp::create(b, rowBase, column);
    Value w = vector::LoadOp::create(b, chunkType, weights, ValueRange{addr});
    Value c = vector::BroadcastOp::create(b, chunkType, coefficient);
    Value updated = vector::FMAOp::create(b, c, g, w);
    vector::StoreOp::create(b, updated, weights, ValueRange{addr});
  });
}

} // namespace

void mlir::neuroshard::buildCPUKernels(ModuleOp module) {
  OpBuilder builder(module.getContext());
  builder.setInsertionPointToEnd(module.getBody());
  Location loc = builder.getUnknownLoc();
  auto i32 = builder.getI32Type(), i64 = builder.getI64Type();
  struct Kernel {
    const char *name;
    IntegerType indexType;
    bool backward;
  } kernels[] = {{abi::kForwardI32, i32, false},
                 {abi::kForwardI64, i64, false},
                 {abi::kBackwardI32, i32, true},
                 {abi::kBackwardI64, i64, true}};
  for (const Kernel &k : kernels) {
    if (module.lookupSymbol(k.name))
      continue;
    if (k.backward)
      buildKernel(builder, loc, k.name, k.indexType, kBackwardPrefetch,
                  {builder.getF32Type()}, buildBackward);
    else
      buildKernel(builder, loc, k.name, k.indexType, kForwardPrefetch, {},
                  buildForward);
  }
}
