//===- LaunchCUDAKernels.cpp - The --neuroshard-cuda-launch pass ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Turns host calls of the kernel symbols into GPU launches (emitKernelLaunch).
// Every call is checked before the first one is rewritten.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"

#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

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

struct LaunchCUDAKernelsPass
    : public mlir::neuroshard::impl::LaunchCUDAKernelsBase<
          LaunchCUDAKernelsPass> {
  using LaunchCUDAKernelsBase::LaunchCUDAKernelsBase;

  void runOnOperation() override;
};

} // namespace

void LaunchCUDAKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  SmallVector<func::CallOp> calls;
  WalkResult walk = module.walk([&](func::CallOp call) {
    bool isBackward = false;
    StringRef callee = call.getCallee();
    if (!isEmbeddingKernelName(callee, isBackward))
      return WalkResult::advance();
    SmallVector<Type> expected =
        embeddingKernelOperandTypes(context, callee, isBackward);
    if (TypeRange(call.getOperandTypes()) != TypeRange(expected) ||
        call.getNumResults() != 0) {
      call.emitOpError() << "calls '" << callee << "' with "
                         << typeList(call.getOperandTypes()) << " -> "
                         << typeList(call.getResultTypes())
                         << " but the kernel takes " << typeList(expected)
                         << " -> ()";
      return WalkResult::interrupt();
    }
    calls.push_back(call);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
  Operation *kernels =
      SymbolTable::lookupSymbolIn(module, abi::kKernelModuleName);
  if (!calls.empty() &&
      !isa_and_nonnull<gpu::GPUModuleOp, gpu::BinaryOp>(kernels)) {
    calls.front().emitOpError()
        << "calls a generic kernel but the module has no gpu.module or "
           "gpu.binary @"
        << abi::kKernelModuleName << "; run --neuroshard-to-cuda first";
    return signalPassFailure();
  }

  OpBuilder builder(context);
  for (func::CallOp call : calls) {
    builder.setInsertionPoint(call);
    emitKernelLaunch(builder, call.getLoc(), call.getCallee(),
                     call.getOperands());
    call.erase();
    ++numLaunches;
  }
  for (func::FuncOp func :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    bool isBackward = false;
    if (func.isDeclaration() &&
        isEmbeddingKernelName(func.getSymName(), isBackward) &&
        SymbolTable::symbolKnownUseEmpty(func, module))
      func.erase();
  }
}
