//===- Passes.h - NeuroShard CUDA lowering passes ---------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_PASSES_H
#define NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::neuroshard {

#define GEN_PASS_DECL
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h.inc"

/// Options of the `neuroshard-cuda-pipeline` pass pipeline.
struct CUDAPipelineOptions : public PassPipelineOptions<CUDAPipelineOptions> {
  PassOptions::Option<std::string> chip{*this, "chip",
                                        llvm::cl::desc("CUDA architecture"),
                                        llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX features (e.g. +ptx80)"),
      llvm::cl::init("")};
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level", llvm::cl::desc("Device optimisation level, 0 to 3"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel object: 'bin' (cubin, needs ptxas), 'isa' "
                     "(PTX), 'fatbin', or 'auto' (bin when the toolkit has "
                     "ptxas, else isa)"),
      llvm::cl::init("auto")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit directory whose bin/ptxas builds cubins "
                     "(empty: the toolkit found when NeuroShard was built)"),
      llvm::cl::init("")};
  PassOptions::Option<bool> host{
      *this, "host",
      llvm::cl::desc("Lower the lookups to kernel launches and the host "
                     "code to the LLVM dialect"),
      llvm::cl::init(true)};
  PassOptions::Option<int> mergedRows{
      *this, "merged-rows",
      llvm::cl::desc("Rows of a bag the backward kernel holds back to merge "
                     "repeated indices (-1: 3 with i32 indices, 2 with i64)"),
      llvm::cl::init(-1)};
};

/// Why `chip`, `features` or `optLevel` cannot describe an NVVM target, or
/// an empty string if they can.
std::string checkCUDATarget(StringRef chip, StringRef features,
                            unsigned optLevel);

/// Why `mergedRows` is not a row count the backward kernel can hold back
/// (-1, or 0 to kMaxMergedRows), or an empty string.
std::string checkMergedRows(int mergedRows);

/// Builds the pipeline: neuroshard-to-cuda, the kernels to NVVM and to a
/// gpu.binary, and (with `host`) the host code bufferized, its kernel calls
/// turned into launches and lowered to the LLVM dialect. Returns
/// why it cannot (a bad option, a cubin without ptxas), or an empty string.
std::string buildCUDAPipeline(OpPassManager &pm,
                              const CUDAPipelineOptions &options);

/// Registers the passes and the `neuroshard-cuda-pipeline` pipeline.
void registerNeuroShardCUDAPasses();

/// Host calls of the generic kernels (checked against KernelABI.h's
/// signature beforehand) to launches of `@neuroshard_kernels`
/// (`--neuroshard-cuda-launch`).
void populateKernelCallToLaunchPatterns(RewritePatternSet &patterns);

/// Marks calls of the generic kernels illegal and leaves all others legal.
void configureKernelLaunchTarget(ConversionTarget &target);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_PASSES_H
