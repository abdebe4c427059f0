//===- RowPieceDistribution.cpp - Bucketize and reduce-scatter lowerings --===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Lowers what row pieces add to a lookup: `neuroshard.bucketize` (each
// index sent to the row block that holds it, as loops or as a kernel call)
// and `neuroshard.reduce_scatter` (the blocks' partial sums added, each
// device keeping its slice of the batch).
//
//===----------------------------------------------------------------------===//

#include "LoweringBuilders.h"
#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::neuroshard;
using namespace mlir::neuroshard::lowering;
namespace abi = ::neuroshard::kernel_abi;

namespace {

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

} // namespace

void mlir::neuroshard::populateRowPieceDistributionPatterns(
    RewritePatternSet &patterns, BucketizeEmitter bucketize) {
  MLIRContext *context = patterns.getContext();
  if (bucketize)
    patterns.add<BucketizeToKernelCall>(context, std::move(bucketize));
  else
    patterns.add<BucketizeToLoops>(context);
  patterns.add<ReduceScatterToLoops>(context);
}
