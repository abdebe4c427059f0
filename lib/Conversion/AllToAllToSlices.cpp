//===- AllToAllToSlices.cpp - All-to-all as slices of one program ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Lowers `neuroshard.all_to_all` within one program (every device's part in
// one address space): each destination's slice of the batch is cut out of
// the sources and concatenated, or the whole batch is assembled at once.
//
//===----------------------------------------------------------------------===//

#include "LoweringBuilders.h"
#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::neuroshard;
using namespace mlir::neuroshard::lowering;

namespace {

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

} // namespace

void mlir::neuroshard::populateAllToAllToSlicesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AllToAllIntoWholeBatch, AllToAllToSlices>(patterns.getContext());
}
