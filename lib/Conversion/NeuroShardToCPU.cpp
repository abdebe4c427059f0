//===- NeuroShardToCPU.cpp - The CPU lowering pass and pipeline -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/LookupLowering.h"
#include "neuroshard/Conversion/Passes.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_LOWERLOOKUPSTOCPU
#include "neuroshard/Conversion/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

struct LowerLookupsToCPUPass
    : public mlir::neuroshard::impl::LowerLookupsToCPUBase<
          LowerLookupsToCPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto emitCall = [](OpBuilder &b, Location loc, const KernelInvocation &k) {
      func::CallOp::create(b, loc, k.kernel, TypeRange{}, k.operands());
    };
    if (failed(lowerLookups(module, emitCall)))
      return signalPassFailure();
    buildCPUKernels(module);
  }
};

/// Rewrites every `memref.copy` that the LLVM lowering could not turn into
/// a memcpy (non-identity layouts, as slices of the exchange produce) into
/// loops, so that lowered modules never call MLIR's C runner library.
struct ExpandStridedCopiesPass
    : public PassWrapper<ExpandStridedCopiesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandStridedCopiesPass)
  StringRef getArgument() const override {
    return "neuroshard-expand-strided-copies";
  }
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp op) {
      auto source = cast<MemRefType>(op.getSource().getType());
      auto target = cast<MemRefType>(op.getTarget().getType());
      if (!source.getLayout().isIdentity() || !target.getLayout().isIdentity())
        copies.push_back(op);
    });
    for (memref::CopyOp op : copies) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto type = cast<MemRefType>(op.getSource().getType());
      SmallVector<Value> lower, upper, steps;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        lower.push_back(arith::ConstantIndexOp::create(b, loc, 0));
        upper.push_back(memref::DimOp::create(b, loc, op.getSource(), d));
        steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
      }
      scf::buildLoopNest(
          b, loc, lower, upper, steps,
          [&](OpBuilder &nb, Location nl, ValueRange ivs) {
            Value v = memref::LoadOp::create(nb, nl, op.getSource(), ivs);
            memref::StoreOp::create(nb, nl, v, op.getTarget(), ivs);
          });
      op.erase();
    }
  }
};

} // namespace

void mlir::neuroshard::addHostBufferizationPasses(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Results become caller-provided buffers; statically shaped result
  // allocations are hoisted to the caller, so a kernel writes into them.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(std::make_unique<ExpandStridedCopiesPass>());
}

void mlir::neuroshard::buildNeuroShardToCPUPipeline(OpPassManager &pm) {
  pm.addPass(std::make_unique<LowerLookupsToCPUPass>());
  addHostBufferizationPasses(pm);
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::neuroshard::registerNeuroShardToCPUPipeline() {
  PassPipelineRegistration<>(
      "neuroshard-to-cpu",
      "Lower NeuroShard lookups to generic CPU kernels and the whole module "
      "to the LLVM dialect",
      buildNeuroShardToCPUPipeline);
}
