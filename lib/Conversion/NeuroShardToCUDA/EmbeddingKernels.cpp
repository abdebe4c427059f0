//===- EmbeddingKernels.cpp - The generic CUDA embedding kernels ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Shape of the kernels (both directions). The grid's y dimension walks the
// shards and its warps walk the bags. A shard whose width fills a warp gets
// one warp per bag; a narrower shard splits the warp into sub-warps of S
// lanes (a power of two), each owning one bag, so that narrow tables do not
// leave most lanes idle. The lanes of a sub-warp cover the shard's columns,
// four at a time with 16-byte loads and stores when every address of the
// shard is 16-byte aligned (checked at run time from the metadata and the
// buffers), one at a time otherwise; wider shards loop over column tiles.
//
// A bag's indices are read once per sub-warp: lane k loads index k of a
// chunk of S indices (one coalesced load), and every lane receives each row
// index in turn with `gpu.shuffle idx`. Shuffles involve the whole warp, so
// every loop around them has warp-uniform bounds (the chunk loop runs to the
// longest bag of the warp; lanes past their own bag are masked off).
//
// Forward sums the rows in index order (mean divides by the bag length;
// empty bags write zeros). Backward scales the output gradient once per bag
// and adds it into the bag's rows with float atomics, which applies
// repeated indices exactly like an index_add; on the 16-byte path of sm_90
// and later chips, one vector reduction adds four columns at once. Since
// every index of a bag adds the same update, a bag holds a few rows back in
// registers with their counts and adds n times the update once for a row it
// names n times: hot rows take one atomic per bag instead of one per index.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"

#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/RowCache.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

using namespace mlir;
using namespace mlir::neuroshard;

namespace abi = ::neuroshard::kernel_abi;

namespace {

enum class KernelKind { Forward, BackwardSGD };

/// The kernel arguments, in KernelABI.h order. `out` is the output of the
/// forward kernel and the output gradient of the backward one.
struct KernelArgs {
  Value meta, layout, weights, indices, offsets, out, lr;
};

/// One shard's metadata row (index values) and its pooling mode.
struct ShardRow {
  Value rowStride, colBegin, width, outColumn, indicesBase, offsetsBase;
  Value tableBase;
  Value isMean;
};

/// Constants, arithmetic, structured control flow, integer loads and warp
/// shuffles: what every kernel body is written with.
class KernelIRBuilder {
public:
  explicit KernelIRBuilder(ImplicitLocOpBuilder &b)
      : b(b), i32(b.getI32Type()), f32(b.getF32Type()) {}

protected:
  Value cIndex(int64_t value) {
    return arith::ConstantIndexOp::create(b, value);
  }
  Value cI32(int64_t value) {
    return arith::ConstantIntOp::create(b, i32, value);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value div(Value x, Value y) { return arith::DivUIOp::create(b, x, y); }
  Value rem(Value x, Value y) { return arith::RemUIOp::create(b, x, y); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivUIOp::create(b, x, y);
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, y);
  }
  Value ne(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, x, y);
  }
  Value ule(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ule, x, y);
  }
  /// The negation of an i1 `flag`.
  Value negate(Value flag) {
    return arith::XOrIOp::create(
        b, flag, arith::ConstantIntOp::create(b, b.getI1Type(), 1));
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, c, x, y);
  }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  }
  Value toI32(Value v) { return arith::IndexCastOp::create(b, i32, v); }
  Value isMultipleOf(Value v, int64_t n) {
    return eq(rem(v, cIndex(n)), cIndex(0));
  }

  /// scf.for from `lower` to `upper` by `step`; `body` returns the values
  /// the iteration yields.
  scf::ForOp
  loop(Value lower, Value upper, Value step, ValueRange inits,
       function_ref<SmallVector<Value>(Value iv, ValueRange iters)> body);
  /// scf.if with results: `thenValues` and `elseValues` build the yields.
  SmallVector<Value> ifValues(Value cond, TypeRange types,
                              function_ref<SmallVector<Value>()> thenValues,
                              function_ref<SmallVector<Value>()> elseValues);
  /// scf.if without results.
  void ifThen(Value cond, function_ref<void()> body);

  /// memref.load of one integer element, aligned to its size: the GPU
  /// module's default data layout gives i64 an alignment of 4, which makes
  /// the backend split each i64 load in two.
  Value loadInteger(Value memref, ValueRange position) {
    unsigned bytes =
        cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
    return memref::LoadOp::create(b, memref, position, /*nontemporal=*/false,
                                  llvm::MaybeAlign(bytes));
  }

  /// `gpu.shuffle mode` of an i32 or i64 `value` over the whole warp; a
  /// shuffle moves 32 bits, so an i64 travels as its two halves.
  Value shuffleInteger(Value value, Value offset, gpu::ShuffleMode mode);
  /// `combine` of the lanes' `value`s (i32 or i64), on every lane: a
  /// butterfly of xor shuffles.
  Value warpReduce(Value value, function_ref<Value(Value, Value)> combine);

  ImplicitLocOpBuilder &b;
  IntegerType i32;
  FloatType f32;
};

/// Emits the body of one embedding-bag kernel.
class KernelBodyBuilder : public KernelIRBuilder {
public:
  KernelBodyBuilder(ImplicitLocOpBuilder &b, KernelKind kind,
                    IntegerType indexType, const KernelArgs &args,
                    bool vectorAtomics, int mergedRowsWanted)
      : KernelIRBuilder(b), kind(kind), indexType(indexType), args(args),
        vectorAtomics(vectorAtomics), mergedRowsWanted(mergedRowsWanted) {}

  void build();

private:
  ShardRow loadShard(Value shard);
  void emitShard(const ShardRow &shard, int64_t vectorWidth);

  Value zeroValue(int64_t vectorWidth);
  Value loadValue(Value memref, ValueRange position, int64_t vectorWidth);
  void storeValue(Value value, Value memref, ValueRange position,
                  int64_t vectorWidth);
  /// Adds `value` (a float or a vector of floats) into `memref` at
  /// `position` atomically.
  void atomicAdd(Value value, Value memref, Value position,
                 int64_t vectorWidth);

  /// Backward: a bag's indices all add the same update, so n indices of one
  /// row can add n times it with one atomic. The bag's rows whose updates
  /// are held back, and how many of its indices named each (mergedRows() of
  /// each, flattened: rows, then counts; a count of 0 marks a free entry).
  SmallVector<Value> noMergedRows();
  /// Backward: takes `row` (an index as the indices buffer holds it) into
  /// `merged` when `rowValid`, counting it if it is there and otherwise
  /// writing out an entry to make room.
  void mergeRow(SmallVector<Value> &merged, Value row, Value rowValid,
                function_ref<void(Value row, Value count)> write);
  /// How many rows a bag holds back: by default as many as ptxas keeps in
  /// registers within the launch bounds without spilling
  /// (ptxas-resources.test), three 32-bit indices or two 64-bit ones.
  int64_t mergedRows() const {
    if (mergedRowsWanted >= 0)
      return mergedRowsWanted;
    return indexType.getWidth() == 32 ? 3 : 2;
  }

  KernelKind kind;
  IntegerType indexType;
  KernelArgs args;
  bool vectorAtomics;
  int mergedRowsWanted;
};

} // namespace

scf::ForOp KernelIRBuilder::loop(
    Value lower, Value upper, Value step, ValueRange inits,
    function_ref<SmallVector<Value>(Value iv, ValueRange iters)> body) {
  return scf::ForOp::create(
      b, lower, upper, step, inits,
      [&](OpBuilder &nested, Location, Value iv, ValueRange iters) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        SmallVector<Value> results = body(iv, iters);
        scf::YieldOp::create(b, results);
      });
}

SmallVector<Value>
KernelIRBuilder::ifValues(Value cond, TypeRange types,
                          function_ref<SmallVector<Value>()> thenValues,
                          function_ref<SmallVector<Value>()> elseValues) {
  auto ifOp = scf::IfOp::create(b, types, cond, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, thenValues());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, elseValues());
  }
  return SmallVector<Value>(ifOp.getResults());
}

void KernelIRBuilder::ifThen(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

Value KernelBodyBuilder::zeroValue(int64_t vectorWidth) {
  if (vectorWidth == 1)
    return arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
  auto type = VectorType::get({vectorWidth}, f32);
  return arith::ConstantOp::create(
      b, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
}

Value KernelBodyBuilder::loadValue(Value memref, ValueRange position,
                                   int64_t vectorWidth) {
  if (vectorWidth == 1)
    return memref::LoadOp::create(b, memref, position);
  // The caller checked 16-byte alignment; saying so lets the backend emit
  // one ld.global.v4.f32 instead of four scalar loads.
  return vector::LoadOp::create(b, VectorType::get({vectorWidth}, f32), memref,
                                position, /*nontemporal=*/false,
                                llvm::MaybeAlign(4 * vectorWidth));
}

void KernelBodyBuilder::storeValue(Value value, Value memref,
                                   ValueRange position, int64_t vectorWidth) {
  if (vectorWidth == 1) {
    memref::StoreOp::create(b, value, memref, position);
    return;
  }
  vector::StoreOp::create(b, value, memref, position, /*nontemporal=*/false,
                          llvm::MaybeAlign(4 * vectorWidth));
}

void KernelBodyBuilder::atomicAdd(Value value, Value memref, Value position,
                                  int64_t vectorWidth) {
  if (vectorWidth == 4 && vectorAtomics) {
    SmallVector<Value> operands = {arith::IndexCastOp::create(
        b, b.getI64Type(),
        floatElementAddress(b, b.getLoc(), memref, position))};
    for (int64_t e = 0; e < 4; ++e)
      operands.push_back(vector::ExtractOp::create(b, value, e));
    LLVM::InlineAsmOp::create(
        b, /*resultTypes=*/TypeRange{}, operands, kVectorAtomicAddAsm,
        kVectorAtomicAddConstraints, /*has_side_effects=*/true,
        /*is_align_stack=*/false, LLVM::TailCallKind::None,
        /*asm_dialect=*/LLVM::AsmDialectAttr(),
        /*operand_attrs=*/ArrayAttr());
    return;
  }
  for (int64_t e = 0; e < vectorWidth; ++e) {
    Value element = vectorWidth == 1
                        ? value
                        : Value(vector::ExtractOp::create(b, value, e));
    memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, element, memref,
                                ValueRange{add(position, cIndex(e))});
  }
}

SmallVector<Value> KernelBodyBuilder::noMergedRows() {
  SmallVector<Value> merged(mergedRows(),
                            arith::ConstantIntOp::create(b, indexType, 0));
  merged.append(mergedRows(), cI32(0));
  return merged;
}

void KernelBodyBuilder::mergeRow(
    SmallVector<Value> &merged, Value row, Value rowValid,
    function_ref<void(Value row, Value count)> write) {
  Value zero = cI32(0), one = cI32(1);
  if (mergedRows() == 0) {
    ifThen(rowValid, [&]() { write(row, one); });
    return;
  }
  auto rows = MutableArrayRef<Value>(merged).take_front(mergedRows());
  auto counts = MutableArrayRef<Value>(merged).drop_front(mergedRows());
  Value anyHit = arith::ConstantIntOp::create(b, b.getI1Type(), 0);
  for (int64_t j = 0; j < mergedRows(); ++j) {
    Value held = ne(counts[j], zero);
    Value hit = both(both(rowValid, held), eq(rows[j], row));
    counts[j] = select(hit, add(counts[j], one), counts[j]);
    anyHit = arith::OrIOp::create(b, anyHit, hit);
  }
  // On a miss the entry with the fewest indices makes room, the oldest of
  // them on a tie (held entries stay in the order they came in, after the
  // free ones), so that a row the bag names again soon is still there.
  Value victim = cI32(0), fewest = counts[0], victimRow = rows[0];
  for (int64_t j = 1; j < mergedRows(); ++j) {
    Value fewer = ult(counts[j], fewest);
    victim = select(fewer, cI32(j), victim);
    fewest = select(fewer, counts[j], fewest);
    victimRow = select(fewer, rows[j], victimRow);
  }
  Value miss = both(rowValid, negate(anyHit));
  ifThen(both(miss, ne(fewest, zero)), [&]() { write(victimRow, fewest); });
  // The entries after the victim move up one; the new row comes last.
  for (int64_t j = 0; j < mergedRows(); ++j) {
    Value moves = both(miss, ule(victim, cI32(j)));
    Value nextRow = j + 1 < mergedRows() ? rows[j + 1] : row;
    Value nextCount = j + 1 < mergedRows() ? counts[j + 1] : one;
    rows[j] = select(moves, nextRow, rows[j]);
    counts[j] = select(moves, nextCount, counts[j]);
  }
}

ShardRow KernelBodyBuilder::loadShard(Value shard) {
  Value rowStart = mul(shard, cIndex(abi::kShardFields));
  auto field = [&](int64_t which) -> Value {
    return loadInteger(args.meta, ValueRange{add(rowStart, cIndex(which))});
  };
  ShardRow row;
  Value table = toIndex(field(abi::kTable));
  row.rowStride = toIndex(field(abi::kRowStride));
  row.colBegin = toIndex(field(abi::kColBegin));
  row.width = toIndex(field(abi::kWidth));
  row.outColumn = toIndex(field(abi::kOutColumn));
  row.indicesBase = toIndex(field(abi::kIndicesBase));
  row.offsetsBase = toIndex(field(abi::kOffsetsBase));
  row.isMean = eq(field(abi::kMode),
                  arith::ConstantIntOp::create(b, b.getI64Type(), abi::kMean));
  row.tableBase = toIndex(loadInteger(args.layout, ValueRange{table}));
  return row;
}

Value KernelIRBuilder::warpReduce(Value value,
                                  function_ref<Value(Value, Value)> combine) {
  for (int32_t distance = abi::kWarpSize / 2; distance >= 1; distance /= 2)
    value = combine(
        value, shuffleInteger(value, cI32(distance), gpu::ShuffleMode::XOR));
  return value;
}

Value KernelIRBuilder::shuffleInteger(Value value, Value offset,
                                      gpu::ShuffleMode mode) {
  Value width = cI32(abi::kWarpSize);
  auto shuffle = [&](Value v) -> Value {
    return gpu::ShuffleOp::create(b, v, offset, width, mode).getShuffleResult();
  };
  if (cast<IntegerType>(value.getType()).getWidth() == 32)
    return shuffle(value);
  IntegerType i64 = b.getI64Type();
  Value low = arith::TruncIOp::create(b, i32, value);
  Value high = arith::TruncIOp::create(
      b, i32,
      arith::ShRUIOp::create(b, value,
                             arith::ConstantIntOp::create(b, i64, 32)));
  Value lowBack = arith::ExtUIOp::create(b, i64, shuffle(low));
  Value highBack =
      arith::ShLIOp::create(b, arith::ExtUIOp::create(b, i64, shuffle(high)),
                            arith::ConstantIntOp::create(b, i64, 32));
  return arith::OrIOp::create(b, lowBack, highBack);
}

void KernelBodyBuilder::emitShard(const ShardRow &shard, int64_t vectorWidth) {
  constexpr int64_t kUnroll = 4;
  Value warpSize = cIndex(abi::kWarpSize);

  // Lanes per bag: the smallest power of two that covers the shard's width
  // in one pass, at most a warp.
  Value lanesWanted = vectorWidth == 1
                          ? shard.width
                          : ceilDiv(shard.width, cIndex(vectorWidth));
  Value lanesPerBag = warpSize;
  for (int64_t lanes = abi::kWarpSize / 2; lanes >= 1; lanes /= 2)
    lanesPerBag =
        select(ule(lanesWanted, cIndex(lanes)), cIndex(lanes), lanesPerBag);
  Value bagsPerWarp = div(warpSize, lanesPerBag);

  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value lane = rem(thread, warpSize);
  Value warpsPerBlock =
      div(gpu::BlockDimOp::create(b, gpu::Dimension::x), warpSize);
  Value firstWarp =
      add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), warpsPerBlock),
          div(thread, warpSize));
  Value totalWarps =
      mul(gpu::GridDimOp::create(b, gpu::Dimension::x), warpsPerBlock);
  Value group = div(lane, lanesPerBag);
  Value laneInBag = rem(lane, lanesPerBag);
  Value groupFirstLane = toI32(mul(group, lanesPerBag));
  Value laneMask = toI32(sub(lanesPerBag, cIndex(1)));

  Value batch = memref::DimOp::create(b, args.out, 0);
  Value numTasks = ceilDiv(batch, bagsPerWarp);
  Value tileColumns = mul(lanesPerBag, cIndex(vectorWidth));
  Value numTiles = ceilDiv(shard.width, tileColumns);
  Value zero = cIndex(0), one = cIndex(1);

  loop(firstWarp, numTasks, totalWarps, {}, [&](Value task, ValueRange) {
    Value bag = add(mul(task, bagsPerWarp), group);
    Value bagValid = ult(bag, batch);
    SmallVector<Value> extent = ifValues(
        bagValid, {b.getIndexType(), b.getIndexType()},
        [&]() -> SmallVector<Value> {
          Value at = add(shard.offsetsBase, bag);
          Value begin = toIndex(loadInteger(args.offsets, ValueRange{at}));
          Value end =
              toIndex(loadInteger(args.offsets, ValueRange{add(at, one)}));
          return {begin, sub(end, begin)};
        },
        [&]() -> SmallVector<Value> {
          return {zero, zero};
        });
    Value bagBegin = extent[0], bagLength = extent[1];
    Value longest =
        toIndex(warpReduce(toI32(bagLength), [&](Value x, Value y) -> Value {
          return arith::MaxSIOp::create(b, x, y);
        }));
    Value numChunks = ceilDiv(longest, lanesPerBag);

    // 1 / length for mean pooling (empty bags produce zeros either way).
    Value lengthF = arith::UIToFPOp::create(
        b, f32, toI32(arith::MaxUIOp::create(b, bagLength, one)));
    Value oneF = arith::ConstantOp::create(b, b.getF32FloatAttr(1.0f));
    Value scale =
        select(shard.isMean, arith::DivFOp::create(b, oneF, lengthF), oneF);

    loop(zero, numTiles, one, {}, [&](Value tile, ValueRange) {
      Value column =
          add(mul(tile, tileColumns), mul(laneInBag, cIndex(vectorWidth)));
      Value columnValid = ult(column, shard.width);
      Value outColumn = add(shard.outColumn, column);
      Value rowColumn = add(shard.tableBase, add(shard.colBegin, column));

      // Backward: this lane's slice of -lr * scale * grad, read once.
      Value update;
      Type valueType = zeroValue(vectorWidth).getType();
      if (kind == KernelKind::BackwardSGD) {
        update = ifValues(
            both(columnValid, bagValid), valueType,
            [&]() -> SmallVector<Value> {
              Value grad =
                  loadValue(args.out, ValueRange{bag, outColumn}, vectorWidth);
              Value factor = arith::NegFOp::create(
                  b, arith::MulFOp::create(b, args.lr, scale));
              if (vectorWidth != 1)
                factor = vector::BroadcastOp::create(b, valueType, factor);
              return {arith::MulFOp::create(b, grad, factor)};
            },
            [&]() -> SmallVector<Value> {
              return {zeroValue(vectorWidth)};
            })[0];
      }

      // Forward carries the sum through the bag's chunks, backward the rows
      // it holds back.
      SmallVector<Value> inits;
      if (kind == KernelKind::Forward)
        inits.push_back(zeroValue(vectorWidth));
      else
        inits = noMergedRows();
      // Backward: adds `count` times this lane's update into `row` (an index
      // as the indices buffer holds it).
      auto writeRow = [&](Value row, Value count) {
        ifThen(columnValid, [&]() {
          Value times = arith::UIToFPOp::create(b, f32, count);
          if (vectorWidth != 1)
            times = vector::BroadcastOp::create(b, valueType, times);
          atomicAdd(arith::MulFOp::create(b, update, times), args.weights,
                    add(mul(toIndex(row), shard.rowStride), rowColumn),
                    vectorWidth);
        });
      };
      scf::ForOp chunks =
          loop(zero, numChunks, one, inits,
               [&](Value chunk, ValueRange chunkIters) -> SmallVector<Value> {
                 Value chunkBegin = mul(chunk, lanesPerBag);
                 Value mine = add(chunkBegin, laneInBag);
                 Value myIndex = ifValues(
                     ult(mine, bagLength), indexType,
                     [&]() -> SmallVector<Value> {
                       Value at = add(shard.indicesBase, add(bagBegin, mine));
                       return {loadInteger(args.indices, ValueRange{at})};
                     },
                     [&]() -> SmallVector<Value> {
                       return {arith::ConstantIntOp::create(b, indexType, 0)};
                     })[0];

                 // The slots of this chunk that some bag of the warp fills: the
                 // loop ends with the warp's longest bag (warp-uniform, as its
                 // shuffles need), not after every lane's slot, so that a short
                 // bag does not cost a full chunk of shuffles.
                 Value slots = arith::MinUIOp::create(b, lanesPerBag,
                                                      sub(longest, chunkBegin));
                 scf::ForOp steps = loop(
                     zero, slots, cIndex(kUnroll), chunkIters,
                     [&](Value step, ValueRange iters) -> SmallVector<Value> {
                       SmallVector<Value> acc(iters);
                       for (int64_t u = 0; u < kUnroll; ++u) {
                         Value slot = add(step, cIndex(u));
                         Value source = arith::AddIOp::create(
                             b, groupFirstLane,
                             arith::AndIOp::create(b, toI32(slot), laneMask));
                         Value rowValue = shuffleInteger(myIndex, source,
                                                         gpu::ShuffleMode::IDX);
                         Value rowValid =
                             both(ult(slot, lanesPerBag),
                                  ult(add(chunkBegin, slot), bagLength));
                         if (kind == KernelKind::BackwardSGD) {
                           mergeRow(acc, rowValue, rowValid, writeRow);
                           continue;
                         }
                         Value row = toIndex(rowValue);
                         Value valid = both(rowValid, columnValid);
                         Value at = add(mul(row, shard.rowStride), rowColumn);
                         Value value = ifValues(
                             valid, valueType,
                             [&]() -> SmallVector<Value> {
                               return {loadValue(args.weights, ValueRange{at},
                                                 vectorWidth)};
                             },
                             [&]() -> SmallVector<Value> {
                               return {zeroValue(vectorWidth)};
                             })[0];
                         acc[0] = arith::AddFOp::create(b, acc[0], value);
                       }
                       return acc;
                     });
                 return SmallVector<Value>(steps.getResults());
               });

      if (kind == KernelKind::BackwardSGD) {
        // The rows still held back at the end of the bag.
        for (int64_t j = 0; j < mergedRows(); ++j) {
          Value count = chunks.getResult(mergedRows() + j);
          ifThen(ne(count, cI32(0)),
                 [&]() { writeRow(chunks.getResult(j), count); });
        }
      } else {
        ifThen(both(columnValid, bagValid), [&]() {
          Value sum = chunks.getResult(0);
          Value factor = scale;
          if (vectorWidth != 1)
            factor = vector::BroadcastOp::create(b, sum.getType(), scale);
          storeValue(arith::MulFOp::create(b, sum, factor), args.out,
                     ValueRange{bag, outColumn}, vectorWidth);
        });
      }
      return SmallVector<Value>();
    });
    return SmallVector<Value>();
  });
}

void KernelBodyBuilder::build() {
  Value numShards =
      div(memref::DimOp::create(b, args.meta, 0), cIndex(abi::kShardFields));
  loop(gpu::BlockIdOp::create(b, gpu::Dimension::y), numShards,
       gpu::GridDimOp::create(b, gpu::Dimension::y), {},
       [&](Value shardIndex, ValueRange) {
         ShardRow shard = loadShard(shardIndex);
         // 16-byte vectors need every row start, the output columns and both
         // buffers (their first element, after the descriptor's offset)
         // 16-byte aligned.
         auto aligned = [&](Value memref) {
           return isMultipleOf(
               floatElementAddress(b, b.getLoc(), memref, cIndex(0)), 16);
         };
         Value vectorizable = isMultipleOf(shard.width, 4);
         for (Value v :
              {shard.rowStride, shard.colBegin, shard.tableBase,
               shard.outColumn, Value(memref::DimOp::create(b, args.out, 1))})
           vectorizable = both(vectorizable, isMultipleOf(v, 4));
         vectorizable = both(vectorizable, aligned(args.weights));
         vectorizable = both(vectorizable, aligned(args.out));
         auto ifOp =
             scf::IfOp::create(b, vectorizable, /*withElseRegion=*/true);
         {
           OpBuilder::InsertionGuard guard(b);
           b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
           emitShard(shard, 4);
           b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
           emitShard(shard, 1);
         }
         return SmallVector<Value>();
       });
}

namespace {

/// Emits the body of one of the three bucketization kernels (KernelABI.h).
class BucketizeBodyBuilder : public KernelIRBuilder {
public:
  BucketizeBodyBuilder(ImplicitLocOpBuilder &b, abi::BucketizeStep step,
                       IntegerType indexType, ValueRange args)
      : KernelIRBuilder(b), step(step), indexType(indexType),
        rows(args[abi::kRowsOperand]),
        indices(args[abi::kBucketIndicesOperand]),
        offsets(args[abi::kBucketOffsetsOperand]),
        blockOffsets(args[abi::kBlockOffsetsOperand]),
        blockIndices(args[abi::kBlockIndicesOperand]) {}

  void build();

private:
  /// Calls `body` for each bag of this thread (a grid-stride loop over the
  /// bags) with the bag's first and end positions in the indices.
  void forEachBag(function_ref<void(Value bag, Value begin, Value end)> body);
  /// Calls `body` for each row block with its first and end rows (i64).
  void
  forEachBlock(ValueRange inits,
               function_ref<SmallVector<Value>(Value block, Value first,
                                               Value limit, ValueRange iters)>
                   body);
  /// Index `i` of the lookup as an i64, and whether it lies in
  /// [first, limit).
  std::pair<Value, Value> readIndex(Value i, Value first, Value limit);
  Value blockOffset(Value block, Value position) {
    return add(mul(block, offsetsPerBlock), position);
  }

  void buildCount();
  void buildScan();
  void buildScatter();

  abi::BucketizeStep step;
  IntegerType indexType;
  Value rows, indices, offsets, blockOffsets, blockIndices;
  Value numBlocks, numBags, offsetsPerBlock, thread, numThreads;
};

} // namespace

void BucketizeBodyBuilder::forEachBag(
    function_ref<void(Value bag, Value begin, Value end)> body) {
  loop(thread, numBags, numThreads, {}, [&](Value bag, ValueRange) {
    Value begin = toIndex(loadInteger(offsets, ValueRange{bag}));
    Value end = toIndex(loadInteger(offsets, ValueRange{add(bag, cIndex(1))}));
    body(bag, begin, end);
    return SmallVector<Value>();
  });
}

void BucketizeBodyBuilder::forEachBlock(
    ValueRange inits,
    function_ref<SmallVector<Value>(Value block, Value first, Value limit,
                                    ValueRange iters)>
        body) {
  loop(cIndex(0), numBlocks, cIndex(1), inits,
       [&](Value block, ValueRange iters) {
         Value first = loadInteger(rows, ValueRange{block});
         Value limit = loadInteger(rows, ValueRange{add(block, cIndex(1))});
         return body(block, first, limit, iters);
       });
}

std::pair<Value, Value> BucketizeBodyBuilder::readIndex(Value i, Value first,
                                                        Value limit) {
  Value v = loadInteger(indices, ValueRange{i});
  if (indexType.getWidth() != 64)
    v = arith::ExtSIOp::create(b, b.getI64Type(), v);
  Value above = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, v, first);
  Value below = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, v, limit);
  return {v, both(above, below)};
}

void BucketizeBodyBuilder::buildCount() {
  Value zero = arith::ConstantIntOp::create(b, indexType, 0);
  loop(thread, numBlocks, numThreads, {}, [&](Value block, ValueRange) {
    memref::StoreOp::create(b, zero, blockOffsets,
                            ValueRange{blockOffset(block, cIndex(0))});
    return SmallVector<Value>();
  });
  forEachBag([&](Value bag, Value begin, Value end) {
    forEachBlock({}, [&](Value block, Value first, Value limit, ValueRange) {
      scf::ForOp counted =
          loop(begin, end, cIndex(1), {cIndex(0)},
               [&](Value i, ValueRange count) -> SmallVector<Value> {
                 Value in = readIndex(i, first, limit).second;
                 return {select(in, add(count[0], cIndex(1)), count[0])};
               });
      memref::StoreOp::create(
          b, arith::IndexCastOp::create(b, indexType, counted.getResult(0)),
          blockOffsets, ValueRange{blockOffset(block, add(bag, cIndex(1)))});
      return SmallVector<Value>();
    });
  });
}

void BucketizeBodyBuilder::buildScan() {
  Value warpSize = cIndex(abi::kWarpSize);
  Value lane = rem(gpu::ThreadIdOp::create(b, gpu::Dimension::x), warpSize);
  Value zero = arith::ConstantIntOp::create(b, indexType, 0);
  Value numChunks = ceilDiv(numBags, warpSize);
  // One warp per block: warp-uniform loops around the shuffles.
  loop(div(thread, warpSize), numBlocks, div(numThreads, warpSize), {},
       [&](Value block, ValueRange) {
         loop(cIndex(0), numChunks, cIndex(1), {zero},
              [&](Value chunk, ValueRange carry) -> SmallVector<Value> {
                Value bag = add(mul(chunk, warpSize), lane);
                Value inRange = ult(bag, numBags);
                Value at = blockOffset(block, add(bag, cIndex(1)));
                Value value = ifValues(
                    inRange, indexType,
                    [&]() -> SmallVector<Value> {
                      return {loadInteger(blockOffsets, ValueRange{at})};
                    },
                    [&]() -> SmallVector<Value> { return {zero}; })[0];
                // Inclusive prefix sum over the warp's lanes.
                for (int64_t distance = 1; distance < abi::kWarpSize;
                     distance *= 2) {
                  Value lower = shuffleInteger(value, cI32(distance),
                                               gpu::ShuffleMode::UP);
                  Value reaches = arith::CmpIOp::create(
                      b, arith::CmpIPredicate::uge, lane, cIndex(distance));
                  value = select(reaches, add(value, lower), value);
                }
                value = add(value, carry[0]);
                ifThen(inRange, [&]() {
                  memref::StoreOp::create(b, value, blockOffsets,
                                          ValueRange{at});
                });
                return {shuffleInteger(value, cI32(abi::kWarpSize - 1),
                                       gpu::ShuffleMode::IDX)};
              });
         return SmallVector<Value>();
       });
}

void BucketizeBodyBuilder::buildScatter() {
  // Offsets that disagree with the indices (only a broken count or scan
  // makes them) must not send a store past the output.
  Value capacity = memref::DimOp::create(b, blockIndices, 0);
  forEachBag([&](Value bag, Value begin, Value end) {
    forEachBlock(
        {cIndex(0)},
        [&](Value block, Value first, Value limit,
            ValueRange start) -> SmallVector<Value> {
          Value bagStart = toIndex(
              loadInteger(blockOffsets, ValueRange{blockOffset(block, bag)}));
          loop(begin, end, cIndex(1), {add(start[0], bagStart)},
               [&](Value i, ValueRange position) -> SmallVector<Value> {
                 std::pair<Value, Value> index = readIndex(i, first, limit);
                 Value in = index.second;
                 ifThen(both(in, ult(position[0], capacity)), [&]() {
                   Value local = sub(index.first, first);
                   if (indexType.getWidth() != 64)
                     local = arith::TruncIOp::create(b, indexType, local);
                   memref::StoreOp::create(b, local, blockIndices,
                                           ValueRange{position[0]});
                 });
                 return {select(in, add(position[0], cIndex(1)), position[0])};
               });
          Value count = toIndex(loadInteger(
              blockOffsets, ValueRange{blockOffset(block, numBags)}));
          return {add(start[0], count)};
        });
  });
}

void BucketizeBodyBuilder::build() {
  numBlocks = sub(memref::DimOp::create(b, rows, 0), cIndex(1));
  offsetsPerBlock = memref::DimOp::create(b, offsets, 0);
  numBags = sub(offsetsPerBlock, cIndex(1));
  Value blockDim = gpu::BlockDimOp::create(b, gpu::Dimension::x);
  thread = add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), blockDim),
               gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  numThreads = mul(gpu::GridDimOp::create(b, gpu::Dimension::x), blockDim);
  switch (step) {
  case abi::BucketizeStep::Count:
    return buildCount();
  case abi::BucketizeStep::Scan:
    return buildScan();
  case abi::BucketizeStep::Scatter:
    return buildScatter();
  }
}

namespace {

/// Emits the body of the row cache fetch kernel (KernelABI.h): the host's
/// RowCache::fetch, with a warp per set and a lane per way.
class RowCacheFetchBuilder : public KernelIRBuilder {
public:
  RowCacheFetchBuilder(ImplicitLocOpBuilder &b, IntegerType indexType,
                       ValueRange args)
      : KernelIRBuilder(b), indexType(indexType), i64(b.getI64Type()),
        state(args[abi::kRowCacheStateOperand]),
        weights(args[abi::kRowCacheWeightsOperand]),
        rows(args[abi::kRowCacheRowsOperand]),
        locations(args[abi::kRowCacheLocationsOperand]),
        flags(args[abi::kRowCacheFlagsOperand]) {}

  void build();

private:
  /// The counts a warp keeps while it fetches, in RowCacheWord order from
  /// kRowCacheLookups.
  enum Count { kLookups, kHits, kFills, kEvictions, kWriteBacks, kReads, kN };

  Value c64(int64_t value) {
    return arith::ConstantIntOp::create(b, i64, value);
  }
  Value word(int64_t which) {
    return loadInteger(state, ValueRange{cIndex(which)});
  }
  Value slt(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::slt, x, y);
  }
  Value sge(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::sge, x, y);
  }
  Value toI64(Value v) { return arith::IndexCastOp::create(b, i64, v); }
  Value extend(Value flag) { return arith::ExtUIOp::create(b, i64, flag); }
  /// The smallest of the lanes' `value`s (i32 or i64), on every lane.
  Value warpMin(Value value);
  /// Stores `location` (i64) at `position` of the locations.
  void storeLocation(Value location, Value position);
  /// Copies the shard's columns of virtual-table row `from` to row `to`,
  /// a column per lane.
  void copyRow(Value from, Value to);
  /// Serves `row` of set `set`, the index at `position`; returns the counts.
  SmallVector<Value> serve(Value row, Value set, Value position,
                           ValueRange counts);
  /// RowCache::setOf in IR.
  Value setOf(Value row);

  IntegerType indexType, i64;
  Value state, weights, rows, locations, flags;
  Value lane, laneI64, lane32, numRows, slots, ways, sets, hostRowZero,
      arenaOffset, stride, colBegin, width, step, writes;
};

} // namespace

Value RowCacheFetchBuilder::warpMin(Value value) {
  return warpReduce(value, [&](Value x, Value y) -> Value {
    return arith::MinSIOp::create(b, x, y);
  });
}

void RowCacheFetchBuilder::storeLocation(Value location, Value position) {
  ifThen(eq(lane, cIndex(0)), [&]() {
    Value value = indexType.getWidth() == 64
                      ? location
                      : Value(arith::TruncIOp::create(b, indexType, location));
    memref::StoreOp::create(b, value, locations, ValueRange{position});
  });
}

void RowCacheFetchBuilder::copyRow(Value from, Value to) {
  auto rowStart = [&](Value row) {
    return toIndex(arith::AddIOp::create(
        b,
        arith::AddIOp::create(b, arenaOffset,
                              arith::MulIOp::create(b, row, stride)),
        colBegin));
  };
  Value fromStart = rowStart(from), toStart = rowStart(to);
  loop(lane, toIndex(width), cIndex(abi::kWarpSize), {},
       [&](Value column, ValueRange) {
         Value v = memref::LoadOp::create(b, weights,
                                          ValueRange{add(fromStart, column)});
         memref::StoreOp::create(b, v, weights,
                                 ValueRange{add(toStart, column)});
         return SmallVector<Value>();
       });
}

Value RowCacheFetchBuilder::setOf(Value row) {
  auto shiftXor = [&](Value z, int64_t shift) -> Value {
    return arith::XOrIOp::create(b, z,
                                 arith::ShRUIOp::create(b, z, c64(shift)));
  };
  Value z = arith::AddIOp::create(b, row, c64(int64_t(0x9E3779B97F4A7C15ull)));
  z = arith::MulIOp::create(b, shiftXor(z, 30),
                            c64(int64_t(0xBF58476D1CE4E5B9ull)));
  z = arith::MulIOp::create(b, shiftXor(z, 27),
                            c64(int64_t(0x94D049BB133111EBull)));
  return arith::RemUIOp::create(b, shiftXor(z, 31), sets);
}

SmallVector<Value> RowCacheFetchBuilder::serve(Value row, Value set,
                                               Value position,
                                               ValueRange counts) {
  using ::neuroshard::runtime::kRowCacheHeaderWords;
  SmallVector<Type> countTypes(kN, i64);
  auto bump = [&](SmallVector<Value> values, Count which, Value by) {
    values[which] = arith::AddIOp::create(b, values[which], by);
    return values;
  };
  Value one = c64(1);
  Value first = arith::MulIOp::create(b, set, ways);
  Value inSet = slt(
      laneI64,
      arith::MinSIOp::create(b, ways, arith::SubIOp::create(b, slots, first)));
  Value slot = arith::AddIOp::create(b, first, laneI64);
  // Lane k's way: its slot's row, last step and dirty word.
  Value tagAt = add(cIndex(kRowCacheHeaderWords), toIndex(slot));
  Value lastAt = add(tagAt, toIndex(slots));
  Value dirtyAt = add(lastAt, toIndex(slots));
  SmallVector<Value> way = ifValues(
      inSet, {i64, i64, i64},
      [&]() -> SmallVector<Value> {
        return {loadInteger(state, ValueRange{tagAt}),
                loadInteger(state, ValueRange{lastAt}),
                loadInteger(state, ValueRange{dirtyAt})};
      },
      [&]() -> SmallVector<Value> {
        return {c64(-2), c64(0), c64(0)};
      });
  Value tag = way[0], last = way[1], dirty = way[2];
  Value none = cI32(abi::kWarpSize);
  Value hitLane = warpMin(select(both(inSet, eq(tag, row)), lane32, none));
  SmallVector<Value> base(counts.begin(), counts.end());
  base = bump(base, kLookups, one);
  return ifValues(
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, hitLane, none),
      countTypes,
      [&]() -> SmallVector<Value> {
        ifThen(eq(lane32, hitLane), [&]() {
          memref::StoreOp::create(b, step, state, ValueRange{lastAt});
          memref::StoreOp::create(b, arith::OrIOp::create(b, dirty, writes),
                                  state, ValueRange{dirtyAt});
        });
        storeLocation(arith::AddIOp::create(
                          b, first, arith::ExtUIOp::create(b, i64, hitLane)),
                      position);
        return bump(base, kHits, one);
      },
      [&]() -> SmallVector<Value> {
        // A miss: the first free way, else the least recently used way
        // that this step has not read (the lowest lane among equals).
        Value freeLane =
            warpMin(select(both(inSet, slt(tag, c64(0))), lane32, none));
        Value evictable = both(both(inSet, sge(tag, c64(0))), slt(last, step));
        Value maxKey = c64(std::numeric_limits<int64_t>::max());
        Value oldest = warpMin(
            select(evictable,
                   arith::AddIOp::create(
                       b, arith::MulIOp::create(b, last, c64(abi::kWarpSize)),
                       laneI64),
                   maxKey));
        Value oldestLane =
            select(eq(oldest, maxKey), none,
                   arith::TruncIOp::create(
                       b, i32,
                       arith::RemUIOp::create(b, oldest, c64(abi::kWarpSize))));
        Value victim = select(
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, freeLane, none),
            freeLane, oldestLane);
        return ifValues(
            eq(victim, none), countTypes,
            [&]() -> SmallVector<Value> {
              // Every way holds a row this step reads: read it in host
              // memory.
              storeLocation(arith::AddIOp::create(b, hostRowZero, row),
                            position);
              return bump(base, kReads, one);
            },
            [&]() -> SmallVector<Value> {
              Value victimTag =
                  shuffleInteger(tag, victim, gpu::ShuffleMode::IDX);
              Value victimDirty =
                  shuffleInteger(dirty, victim, gpu::ShuffleMode::IDX);
              Value victimSlot = arith::AddIOp::create(
                  b, first, arith::ExtUIOp::create(b, i64, victim));
              Value evicted = sge(victimTag, c64(0));
              Value writeBack = both(evicted, ne(victimDirty, c64(0)));
              ifThen(writeBack, [&]() {
                copyRow(victimSlot,
                        arith::AddIOp::create(b, hostRowZero, victimTag));
              });
              copyRow(arith::AddIOp::create(b, hostRowZero, row), victimSlot);
              ifThen(eq(lane32, victim), [&]() {
                memref::StoreOp::create(b, row, state, ValueRange{tagAt});
                memref::StoreOp::create(b, step, state, ValueRange{lastAt});
                memref::StoreOp::create(b, writes, state, ValueRange{dirtyAt});
              });
              storeLocation(victimSlot, position);
              SmallVector<Value> next = bump(base, kFills, one);
              next = bump(next, kEvictions, extend(evicted));
              return bump(next, kWriteBacks, extend(writeBack));
            });
      });
}

void RowCacheFetchBuilder::build() {
  namespace rt = ::neuroshard::runtime;
  Value warpSize = cIndex(abi::kWarpSize);
  Value blockDim = gpu::BlockDimOp::create(b, gpu::Dimension::x);
  Value threadInBlock = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value thread =
      add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), blockDim),
          threadInBlock);
  Value numThreads =
      mul(gpu::GridDimOp::create(b, gpu::Dimension::x), blockDim);
  lane = rem(threadInBlock, warpSize);
  laneI64 = toI64(lane);
  lane32 = toI32(lane);
  Value warp = toI64(div(thread, warpSize));
  Value numWarps = toI64(div(numThreads, warpSize));
  Value count = memref::DimOp::create(b, rows, 0);

  Value refused = ne(word(rt::kRowCacheRefused), c64(0));
  auto ifRefused = scf::IfOp::create(b, refused, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifRefused.thenBlock()->getTerminator());
    Value zero = arith::ConstantIntOp::create(b, indexType, 0);
    loop(thread, count, numThreads, {}, [&](Value i, ValueRange) {
      memref::StoreOp::create(b, zero, locations, ValueRange{i});
      return SmallVector<Value>();
    });
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifRefused.elseBlock()->getTerminator());

  numRows = word(rt::kRowCacheRows);
  slots = word(rt::kRowCacheSlots);
  ways = word(rt::kRowCacheSetWays);
  sets = word(rt::kRowCacheSets);
  hostRowZero = word(rt::kRowCacheHostRowZero);
  arenaOffset = word(rt::kRowCacheArenaOffset);
  stride = word(rt::kRowCacheStride);
  colBegin = word(rt::kRowCacheColBegin);
  width = word(rt::kRowCacheWidth);
  step = word(rt::kRowCacheStep);
  writes = extend(
      ne(arith::AndIOp::create(b, flags, c64(rt::kRowCacheWrites)), c64(0)));

  SmallVector<Value> zeros(kN, c64(0));
  scf::ForOp chunks = loop(
      cIndex(0), ceilDiv(count, warpSize), cIndex(1), zeros,
      [&](Value chunk, ValueRange counts) -> SmallVector<Value> {
        Value chunkStart = mul(chunk, warpSize);
        Value i = add(chunkStart, lane);
        Value inRange = ult(i, count);
        Value row = ifValues(
            inRange, i64,
            [&]() -> SmallVector<Value> {
              Value v = loadInteger(rows, ValueRange{i});
              if (indexType.getWidth() != 64)
                v = arith::ExtSIOp::create(b, i64, v);
              return {v};
            },
            [&]() -> SmallVector<Value> { return {c64(-1)}; })[0];
        Value outside =
            arith::OrIOp::create(b, slt(row, c64(0)), sge(row, numRows));
        Value bad = both(inRange, outside);
        // Warp 0 answers the indices outside the shard.
        ifThen(both(bad, eq(warp, c64(0))), [&]() {
          memref::StoreOp::create(b,
                                  arith::ConstantIntOp::create(b, indexType, 0),
                                  locations, ValueRange{i});
          memref::AtomicRMWOp::create(
              b, arith::AtomicRMWKind::mins, toI64(i), state,
              ValueRange{cIndex(rt::kRowCacheBadPosition)});
        });
        Value set = select(outside, c64(-1), setOf(row));
        Value inShard = negate(outside);
        Value mine = both(both(inRange, inShard),
                          eq(arith::RemUIOp::create(b, set, numWarps), warp));
        Value mine32 = arith::ExtUIOp::create(b, i32, mine);
        // Most chunks hold none of the warp's sets once there are many
        // warps: one reduction tells, and the warp passes such a chunk by.
        Value anyMine = warpReduce(mine32, [&](Value x, Value y) -> Value {
          return arith::MaxUIOp::create(b, x, y);
        });
        return ifValues(
            eq(anyMine, cI32(1)), SmallVector<Type>(kN, i64),
            [&]() -> SmallVector<Value> {
              // Lane k's index, in turn on every lane; the warp serves it if
              // its set is the warp's.
              scf::ForOp served = loop(
                  cIndex(0), warpSize, cIndex(1), counts,
                  [&](Value k, ValueRange inner) -> SmallVector<Value> {
                    Value source = toI32(k);
                    Value theirs =
                        shuffleInteger(mine32, source, gpu::ShuffleMode::IDX);
                    Value theirRow =
                        shuffleInteger(row, source, gpu::ShuffleMode::IDX);
                    Value theirSet =
                        shuffleInteger(set, source, gpu::ShuffleMode::IDX);
                    return ifValues(
                        eq(theirs, cI32(1)), SmallVector<Type>(kN, i64),
                        [&]() {
                          return serve(theirRow, theirSet, add(chunkStart, k),
                                       inner);
                        },
                        [&]() -> SmallVector<Value> {
                          return SmallVector<Value>(inner.begin(), inner.end());
                        });
                  });
              return SmallVector<Value>(served.getResults());
            },
            [&]() -> SmallVector<Value> {
              return SmallVector<Value>(counts.begin(), counts.end());
            });
      });
  ifThen(eq(lane, cIndex(0)), [&]() {
    for (int64_t c = 0; c < kN; ++c)
      memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addi,
                                  chunks.getResult(c), state,
                                  ValueRange{cIndex(rt::kRowCacheLookups + c)});
  });
}

/// A `gpu.func` kernel of `inputs` with the launch bounds of KernelABI.h:
/// ptxas fits the registers to kMinBlocksPerMultiprocessor blocks of
/// kThreadsPerBlock threads, and CUDA refuses larger blocks.
static gpu::GPUFuncOp createKernelFunc(OpBuilder &builder, Location loc,
                                       StringRef name, TypeRange inputs) {
  auto func = gpu::GPUFuncOp::create(builder, loc, name,
                                     builder.getFunctionType(inputs, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                builder.getUnitAttr());
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                builder.getDenseI32ArrayAttr(
                    {static_cast<int32_t>(abi::kMaxThreadsPerBlock), 1, 1}));
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                builder.getI32IntegerAttr(
                    static_cast<int32_t>(abi::kMinBlocksPerMultiprocessor)));
  return func;
}

/// The operand types of a kernel of `operands` with `indexType` indices.
static SmallVector<Type> operandTypes(ArrayRef<abi::KernelOperand> operands,
                                      Type indexType) {
  MLIRContext *context = indexType.getContext();
  Type i64 = IntegerType::get(context, 64);
  Type f32 = Float32Type::get(context);
  SmallVector<Type> types;
  for (const abi::KernelOperand &operand : operands) {
    Type element = operand.element == abi::ElementKind::I64   ? i64
                   : operand.element == abi::ElementKind::F32 ? f32
                                                              : indexType;
    if (operand.rank == 0)
      types.push_back(element);
    else
      types.push_back(MemRefType::get(
          SmallVector<int64_t>(operand.rank, ShapedType::kDynamic), element));
  }
  return types;
}

static void buildBucketizeKernel(OpBuilder &builder, Location loc,
                                 abi::BucketizeStep step,
                                 IntegerType indexType) {
  std::string name =
      abi::bucketizeKernelName(step, static_cast<int>(indexType.getWidth()));
  auto func = createKernelFunc(
      builder, loc, name, operandTypes(abi::kBucketizeOperands, indexType));
  Block &entry = func.getBody().front();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&entry);
  ImplicitLocOpBuilder b(loc, builder);
  BucketizeBodyBuilder(b, step, indexType, entry.getArguments()).build();
  gpu::ReturnOp::create(b);
}

static void buildRowCacheFetchKernel(OpBuilder &builder, Location loc,
                                     IntegerType indexType) {
  auto func = createKernelFunc(
      builder, loc,
      indexType.getWidth() == 32 ? abi::kRowCacheFetchKernelI32
                                 : abi::kRowCacheFetchKernelI64,
      operandTypes(abi::kRowCacheFetchOperands, indexType));
  Block &entry = func.getBody().front();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&entry);
  ImplicitLocOpBuilder b(loc, builder);
  RowCacheFetchBuilder(b, indexType, entry.getArguments()).build();
  gpu::ReturnOp::create(b);
}

static void buildKernel(OpBuilder &builder, Location loc, StringRef name,
                        KernelKind kind, IntegerType indexType,
                        bool vectorAtomics, int mergedRows) {
  ArrayRef<abi::KernelOperand> operands(
      abi::kKernelOperands, abi::numOperands(kind == KernelKind::BackwardSGD));
  auto func =
      createKernelFunc(builder, loc, name, operandTypes(operands, indexType));
  Block &entry = func.getBody().front();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&entry);
  ImplicitLocOpBuilder b(loc, builder);
  KernelArgs args{entry.getArgument(0),
                  entry.getArgument(1),
                  entry.getArgument(2),
                  entry.getArgument(3),
                  entry.getArgument(4),
                  entry.getArgument(5),
                  kind == KernelKind::BackwardSGD ? entry.getArgument(6)
                                                  : Value()};
  KernelBodyBuilder(b, kind, indexType, args, vectorAtomics, mergedRows)
      .build();
  gpu::ReturnOp::create(b);
}

gpu::GPUModuleOp
mlir::neuroshard::buildEmbeddingKernelModule(OpBuilder &builder, Location loc,
                                             Attribute target, int mergedRows) {
  auto module = gpu::GPUModuleOp::create(builder, loc, abi::kKernelModuleName,
                                         ArrayRef<Attribute>{target});
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  auto nvvm = dyn_cast_or_null<NVVM::NVVMTargetAttr>(target);
  bool vectorAtomics =
      nvvm && targetHasVectorAtomicAdd(nvvm.getChip(), nvvm.getFeatures());
  IntegerType i32 = builder.getI32Type(), i64 = builder.getI64Type();
  buildKernel(builder, loc, abi::kForwardI32, KernelKind::Forward, i32,
              vectorAtomics, mergedRows);
  buildKernel(builder, loc, abi::kForwardI64, KernelKind::Forward, i64,
              vectorAtomics, mergedRows);
  buildKernel(builder, loc, abi::kBackwardI32, KernelKind::BackwardSGD, i32,
              vectorAtomics, mergedRows);
  buildKernel(builder, loc, abi::kBackwardI64, KernelKind::BackwardSGD, i64,
              vectorAtomics, mergedRows);
  for (IntegerType indexType : {i32, i64})
    for (abi::BucketizeStep step : abi::kBucketizeSteps)
      buildBucketizeKernel(builder, loc, step, indexType);
  for (IntegerType indexType : {i32, i64})
    buildRowCacheFetchKernel(builder, loc, indexType);
  return module;
}

Value mlir::neuroshard::floatElementAddress(OpBuilder &b, Location loc,
                                            Value memref, Value position) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value element = arith::AddIOp::create(
      b, loc, metadata.getOffset(),
      arith::MulIOp::create(b, loc, position, metadata.getStrides()[0]));
  return arith::AddIOp::create(
      b, loc, base,
      arith::MulIOp::create(b, loc, element,
                            arith::ConstantIndexOp::create(b, loc, 4)));
}

/// The chip's version (90 for sm_90a), or 0 if `chip` is not sm_<N>.
static unsigned chipVersion(StringRef chip) {
  unsigned version = 0;
  if (!chip.consume_front("sm_"))
    return 0;
  if (!chip.consume_back("a"))
    chip.consume_back("f");
  return chip.getAsInteger(10, version) ? 0 : version;
}

/// The PTX version a +ptxN item of `features` asks for (the last one), or 0.
static unsigned ptxVersion(StringRef features) {
  unsigned version = 0;
  SmallVector<StringRef> items;
  features.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    unsigned value = 0;
    if (item.consume_front("+ptx") && !item.getAsInteger(10, value))
      version = value;
  }
  return version;
}

bool mlir::neuroshard::targetHasVectorAtomicAdd(StringRef chip,
                                                StringRef features) {
  return chipVersion(chip) >= 90 &&
         ptxVersion(features) >= kVectorAtomicAddPtxVersion;
}

std::string mlir::neuroshard::kernelTargetFeatures(StringRef chip,
                                                   StringRef features) {
  if (chipVersion(chip) < 90 || ptxVersion(features) != 0)
    return features.str();
  std::string withPtx = features.str();
  if (!withPtx.empty())
    withPtx += ",";
  return withPtx + "+ptx" + std::to_string(kVectorAtomicAddPtxVersion);
}

SmallVector<Type> mlir::neuroshard::embeddingKernelOperandTypes(
    MLIRContext *context, StringRef kernelName, bool isBackward) {
  Type index =
      IntegerType::get(context, kernelName.ends_with("_i32") ? 32 : 64);
  return operandTypes(
      ArrayRef(abi::kKernelOperands, abi::numOperands(isBackward)), index);
}

bool mlir::neuroshard::isBucketizeCallName(StringRef name) {
  return name == abi::kBucketizeI32 || name == abi::kBucketizeI64;
}

SmallVector<Type> mlir::neuroshard::bucketizeOperandTypes(MLIRContext *context,
                                                          StringRef callName) {
  Type index = IntegerType::get(context, callName.ends_with("_i32") ? 32 : 64);
  return operandTypes(abi::kBucketizeOperands, index);
}

bool mlir::neuroshard::isRowCacheFetchKernelName(StringRef name) {
  return name == abi::kRowCacheFetchKernelI32 ||
         name == abi::kRowCacheFetchKernelI64;
}

SmallVector<Type>
mlir::neuroshard::rowCacheFetchOperandTypes(MLIRContext *context,
                                            StringRef kernelName) {
  Type index =
      IntegerType::get(context, kernelName.ends_with("_i32") ? 32 : 64);
  return operandTypes(abi::kRowCacheFetchOperands, index);
}

bool mlir::neuroshard::isEmbeddingKernelName(StringRef name, bool &isBackward) {
  isBackward = name == abi::kBackwardI32 || name == abi::kBackwardI64;
  return isBackward || name == abi::kForwardI32 || name == abi::kForwardI64;
}
