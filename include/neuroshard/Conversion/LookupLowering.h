//===- LookupLowering.h - Lookups to generic kernel launches ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The host-side half of every NeuroShard lowering, shared by the CPU and CUDA
// targets: each lookup becomes one invocation of a generic kernel of
// KernelABI.h, with its shard metadata, concatenated indices and offsets and
// a fresh output buffer; the target decides how the invocation is emitted (a
// call on the CPU, a launch on a GPU).
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CONVERSION_LOOKUPLOWERING_H
#define NEUROSHARD_CONVERSION_LOOKUPLOWERING_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::neuroshard {

/// One kernel invocation, operands in KernelABI.h's order. All are memrefs
/// with dynamic sizes and identity layouts: meta, layout, weights
/// (`memref<?xi64>`, `memref<?xi64>`, `memref<?xf32>`), indices and offsets
/// (`memref<?xiN>`, N the kernel's index width) and out (`memref<?x?xf32>`).
struct KernelInvocation {
  StringRef kernel;
  Value meta, layout, weights, indices, offsets, out;

  /// The operands at their positions in KernelABI.h's operand list.
  SmallVector<Value> operands() const;
};

/// Emits `invocation` at the builder's insertion point.
using KernelEmitter =
    llvm::function_ref<void(OpBuilder &, Location, const KernelInvocation &)>;

/// Rewrites every lookup, exchange and table of `module` as described in the
/// `neuroshard-lower-lookups-cpu` pass documentation, emitting each kernel
/// invocation with `emit`. Checks everything before changing the module; on
/// failure the module is unchanged and diagnostics name the offending op.
LogicalResult lowerLookups(ModuleOp module, KernelEmitter emit);

/// Adds the generic forward and backward-SGD CPU kernels (KernelABI.h) to
/// `module` as public `func.func`s with C interfaces, unless present.
void buildCPUKernels(ModuleOp module);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_CONVERSION_LOOKUPLOWERING_H
