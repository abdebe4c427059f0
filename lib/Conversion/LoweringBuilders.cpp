//===- LoweringBuilders.cpp - IR building blocks of the lowerings ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "LoweringBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace mlir::neuroshard::lowering {

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
              int64_t shift) {
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

/// Declares the runtime function `name`, taking `inputs` and returning
/// nothing, with a C interface, once.
func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    TypeRange inputs, OpBuilder &rewriter,
                                    TypeRange results) {
  if (auto callee = module.lookupSymbol<func::FuncOp>(name))
    return callee;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto callee = func::FuncOp::create(rewriter, module.getLoc(), name,
                                     rewriter.getFunctionType(inputs, results));
  callee.setPrivate();
  callee->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
  return callee;
}

/// The memref of a `rows x cols` pooled tensor with dynamic sizes.
Value toDynamic2D(OpBuilder &b, Location loc, Value buffer) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  return memref::CastOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, element),
      buffer);
}

} // namespace mlir::neuroshard::lowering
