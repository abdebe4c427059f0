//===- ExchangeToRuntimeCalls.cpp - Collectives to runtime calls ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Lowers one rank's side of the exchanges of an SPMD program (the pooled
// all-to-all and its gradient, the reduce-scatter of row pieces and its
// gradient) to calls of the exchange runtime (Runtime/ExchangeABI.h): a
// collective needs every rank, so it is a call, not computation.
//
//===----------------------------------------------------------------------===//

#include "LoweringBuilders.h"
#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Runtime/ExchangeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::neuroshard;
using namespace mlir::neuroshard::lowering;
namespace ex_abi = ::neuroshard::exchange_abi;

namespace {

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
