//===- LoweringBuilders.h - IR building blocks of the lowerings -*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the conversion library: the small builders that the lookup,
// row-piece and exchange lowerings share (constants, buffers of tensors,
// copy loops, runtime function declarations).
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_LIB_CONVERSION_LOWERINGBUILDERS_H
#define NEUROSHARD_LIB_CONVERSION_LOWERINGBUILDERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::neuroshard::lowering {

/// A 1-D memref of `element` with a dynamic size.
MemRefType dynamic1D(Type element);

Value indexConstant(OpBuilder &b, Location loc, int64_t v);

Value i64Constant(OpBuilder &b, Location loc, int64_t v);

/// The tensor as a read-only buffer with a dynamic size.
Value toDynamicBuffer(OpBuilder &b, Location loc, Value tensor);

/// Copies `source` into `dest` at `base`, sign-extending when the element
/// types differ and adding `shift` to every value.
void copyInto(OpBuilder &b, Location loc, Value source, Value dest, Value base,
              int64_t shift = 0);

/// Declares the runtime function `name`, taking `inputs` and returning
/// `results`, with a C interface, once.
func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    TypeRange inputs, OpBuilder &rewriter,
                                    TypeRange results = {});

/// The memref of a `rows x cols` pooled tensor with dynamic sizes.
Value toDynamic2D(OpBuilder &b, Location loc, Value buffer);

} // namespace mlir::neuroshard::lowering

#endif // NEUROSHARD_LIB_CONVERSION_LOWERINGBUILDERS_H
