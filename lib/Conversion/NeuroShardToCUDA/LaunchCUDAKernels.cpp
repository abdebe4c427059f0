//===- LaunchCUDAKernels.cpp - The --neuroshard-cuda-launch pass ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Turns host calls of the kernel symbols into GPU launches (emitKernelLaunch,
// emitRowCacheFetchLaunch) and bucketization calls into the launches of its
// kernels (emitBucketizeLaunch) with a conversion pattern. Every call is
// checked before the first one is rewritten.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"

#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_LAUNCHCUDAKERNELS
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace abi = ::neuroshard::kernel_abi;

static std::string typeList(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "(";
  llvm::interleaveComma(types, os);
  os << ")";
  return text;
}

namespace {

/// The KernelABI.h operand types of a call of `callee` if it names a generic
/// kernel or a bucketization, else nothing.
std::optional<SmallVector<Type>> kernelCallOperandTypes(MLIRContext *context,
                                                        StringRef callee) {
  bool isBackward = false;
  if (isEmbeddingKernelName(callee, isBackward))
    return embeddingKernelOperandTypes(context, callee, isBackward);
  if (isBucketizeCallName(callee))
    return bucketizeOperandTypes(context, callee);
  if (isRowCacheFetchKernelName(callee))
    return rowCacheFetchOperandTypes(context, callee);
  return std::nullopt;
}

/// A host call of a generic kernel, already checked against KernelABI.h's
/// signature, as a launch of the kernels module's kernel; a bucketization
/// call as the launches of its three kernels.
struct KernelCallToLaunch : public OpConversionPattern<func::CallOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(func::CallOp call, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool isBackward = false;
    StringRef callee = call.getCallee();
    if (isEmbeddingKernelName(callee, isBackward))
      emitKernelLaunch(rewriter, call.getLoc(), callee, adaptor.getOperands());
    else if (isBucketizeCallName(callee))
      emitBucketizeLaunch(rewriter, call.getLoc(), callee,
                          adaptor.getOperands());
    else if (isRowCacheFetchKernelName(callee))
      emitRowCacheFetchLaunch(rewriter, call.getLoc(), callee,
                              adaptor.getOperands());
    else
      return rewriter.notifyMatchFailure(call, "not a kernel call");
    rewriter.eraseOp(call);
    return success();
  }
};

struct LaunchCUDAKernelsPass
    : public mlir::neuroshard::impl::LaunchCUDAKernelsBase<
          LaunchCUDAKernelsPass> {
  using LaunchCUDAKernelsBase::LaunchCUDAKernelsBase;

  void runOnOperation() override;
};

} // namespace

void mlir::neuroshard::populateKernelCallToLaunchPatterns(
    RewritePatternSet &patterns) {
  patterns.add<KernelCallToLaunch>(patterns.getContext());
}

void mlir::neuroshard::configureKernelLaunchTarget(ConversionTarget &target) {
  target.addDynamicallyLegalOp<func::CallOp>([](func::CallOp call) {
    return !kernelCallOperandTypes(call.getContext(), call.getCallee());
  });
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
}

void LaunchCUDAKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  // Every call is checked before any is rewritten, so that a failure leaves
  // the module unchanged and names the call.
  int64_t numCalls = 0;
  WalkResult walk =
      module.walk([&](func::CallOp call) {
        StringRef callee = call.getCallee();
        std::optional<SmallVector<Type>> expected =
            kernelCallOperandTypes(context, callee);
        if (!expected)
          return WalkResult::advance();
        if (TypeRange(call.getOperandTypes()) != TypeRange(*expected) ||
            call.getNumResults() != 0) {
          call.emitOpError()
              << "calls '" << callee << "' with "
              << typeList(call.getOperandTypes()) << " -> "
              << typeList(call.getResultTypes()) << " but the kernel takes "
              << typeList(*expected) << " -> ()";
          return WalkResult::interrupt();
        }
        if (numCalls++ == 0 &&
            !isa_and_nonnull<gpu::GPUModuleOp, gpu::BinaryOp>(
                SymbolTable::lookupSymbolIn(module, abi::kKernelModuleName))) {
          call.emitOpError()
              << "calls a generic kernel but the module has no gpu.module or "
                 "gpu.binary @"
              << abi::kKernelModuleName << "; run --neuroshard-to-cuda first";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
  if (walk.wasInterrupted())
    return signalPassFailure();

  RewritePatternSet patterns(context);
  populateKernelCallToLaunchPatterns(patterns);
  ConversionTarget target(*context);
  configureKernelLaunchTarget(target);
  if (failed(applyPartialConversion(module, target, std::move(patterns))))
    return signalPassFailure();
  numLaunches += numCalls;
  for (func::FuncOp func :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (func.isDeclaration() &&
        kernelCallOperandTypes(context, func.getSymName()) &&
        SymbolTable::symbolKnownUseEmpty(func, module))
      func.erase();
  }
}
