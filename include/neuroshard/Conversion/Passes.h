//===- Passes.h - NeuroShard conversion passes ------------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CONVERSION_PASSES_H
#define NEUROSHARD_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::neuroshard {

#define GEN_PASS_DECL
#include "neuroshard/Conversion/Passes.h.inc"

/// `memref.copy` with a non-identity layout on either side to loops of
/// loads and stores (`--neuroshard-expand-strided-copies`).
void populateExpandStridedCopyPatterns(RewritePatternSet &patterns);

/// Appends what every target does to host code once its lookups are kernel
/// invocations: one-shot bufferization across function boundaries, results
/// as trailing out-parameters (static allocations hoisted to callers),
/// ownership-based deallocation, and strided copies expanded to loops.
void addHostBufferizationPasses(OpPassManager &pm);

/// Appends the conversion of bufferized host code to the LLVM dialect:
/// structured control flow, affine maps, strided metadata, memrefs, vectors,
/// arithmetic, index, control flow, functions and `ub`, then unrealized
/// casts reconciled. The CPU pipeline ends with it, and the warp emulation
/// lowers its host copies of the CUDA kernels with it.
void addLowerToLLVMPasses(OpPassManager &pm);

/// Appends `--neuroshard-to-cpu` to `pm`: lookups to generic kernel calls,
/// bufferization (results become trailing out-parameters), deallocation, and
/// conversion of everything to the LLVM dialect (addLowerToLLVMPasses).
void buildNeuroShardToCPUPipeline(OpPassManager &pm);

/// Registers the `neuroshard-to-cpu` pipeline (the passes themselves are
/// registered by registerNeuroShardConversionPasses, generated below).
void registerNeuroShardToCPUPipeline();

#define GEN_PASS_REGISTRATION
#include "neuroshard/Conversion/Passes.h.inc"

} // namespace mlir::neuroshard

#endif // NEUROSHARD_CONVERSION_PASSES_H
