//===- NeuroShardToCPU.cpp - The CPU lowering pass and pipeline -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/LookupToKernelCalls.h"
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
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_LOWERLOOKUPSTOCPU
#define GEN_PASS_DEF_EXPANDSTRIDEDCOPIES
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

/// A `memref.copy` that the LLVM lowering cannot turn into a memcpy
/// (non-identity layouts, as slices of the exchange produce) as loops, so
/// that lowered modules never call MLIR's C runner library.
struct ExpandStridedCopy : public OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto source = cast<MemRefType>(op.getSource().getType());
    auto target = cast<MemRefType>(op.getTarget().getType());
    if (source.getLayout().isIdentity() && target.getLayout().isIdentity())
      return rewriter.notifyMatchFailure(op, "a memcpy serves it");
    Location loc = op.getLoc();
    SmallVector<Value> lower, upper, steps;
    for (int64_t d = 0; d < source.getRank(); ++d) {
      lower.push_back(arith::ConstantIndexOp::create(rewriter, loc, 0));
      upper.push_back(memref::DimOp::create(rewriter, loc, op.getSource(), d));
      steps.push_back(arith::ConstantIndexOp::create(rewriter, loc, 1));
    }
    scf::buildLoopNest(
        rewriter, loc, lower, upper, steps,
        [&](OpBuilder &b, Location nested, ValueRange ivs) {
          Value v = memref::LoadOp::create(b, nested, op.getSource(), ivs);
          memref::StoreOp::create(b, nested, v, op.getTarget(), ivs);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

struct ExpandStridedCopiesPass
    : public mlir::neuroshard::impl::ExpandStridedCopiesBase<
          ExpandStridedCopiesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateExpandStridedCopyPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void mlir::neuroshard::populateExpandStridedCopyPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ExpandStridedCopy>(patterns.getContext());
}

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
  pm.addPass(createExpandStridedCopies());
}

void mlir::neuroshard::addLowerToLLVMPasses(OpPassManager &pm) {
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::neuroshard::buildNeuroShardToCPUPipeline(OpPassManager &pm) {
  pm.addPass(createLowerLookupsToCPU());
  addHostBufferizationPasses(pm);
  addLowerToLLVMPasses(pm);
}

void mlir::neuroshard::registerNeuroShardToCPUPipeline() {
  PassPipelineRegistration<>(
      "neuroshard-to-cpu",
      "Lower NeuroShard lookups to generic CPU kernels and the whole module "
      "to the LLVM dialect",
      buildNeuroShardToCPUPipeline);
}
