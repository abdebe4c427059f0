//===- NeuroShardToCUDA.cpp - The --neuroshard-to-cuda pass ---------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Adds the generic kernels module and turns host calls to the kernel symbols
// into GPU launches. Every check runs before the module changes, so a failing
// run leaves it as it was.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"

#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"
#include "neuroshard/Runtime/Cuda/CudaKernelABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_CONVERTNEUROSHARDTOCUDA
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace cuda_abi = ::neuroshard::cuda_abi;

std::string mlir::neuroshard::checkCUDATarget(StringRef chip,
                                              StringRef features,
                                              unsigned optLevel) {
  if (!llvm::Regex("^sm_[0-9]{2,3}[af]?$").match(chip))
    return ("invalid chip '" + chip +
            "': expected sm_<N> with an optional 'a' or 'f' suffix, such as "
            "sm_90 or sm_90a")
        .str();
  SmallVector<StringRef> items;
  llvm::SplitString(features, items, ",");
  for (StringRef item : items)
    if (!llvm::Regex("^[+-][a-z][a-z0-9]*$").match(item))
      return ("invalid feature '" + item +
              "' in features: expected a comma list such as +ptx80")
          .str();
  if (optLevel > 3)
    return "invalid opt-level " + std::to_string(optLevel) +
           ": expected 0, 1, 2 or 3";
  return "";
}

/// The operand types a call to `kernelName` must have (KernelABI.h).
static SmallVector<Type> expectedOperandTypes(MLIRContext *context,
                                              StringRef kernelName,
                                              bool isBackward) {
  Type i64 = IntegerType::get(context, 64);
  Type f32 = Float32Type::get(context);
  Type index =
      IntegerType::get(context, kernelName.ends_with("_i32") ? 32 : 64);
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<Type> types = {
      MemRefType::get({dyn}, i64),   MemRefType::get({dyn}, i64),
      MemRefType::get({dyn}, f32),   MemRefType::get({dyn}, index),
      MemRefType::get({dyn}, index), MemRefType::get({dyn, dyn}, f32)};
  if (isBackward)
    types.push_back(f32);
  return types;
}

static std::string typeList(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "(";
  llvm::interleaveComma(types, os);
  os << ")";
  return text;
}

namespace {

struct ConvertNeuroShardToCUDAPass
    : public mlir::neuroshard::impl::ConvertNeuroShardToCUDABase<
          ConvertNeuroShardToCUDAPass> {
  using ConvertNeuroShardToCUDABase::ConvertNeuroShardToCUDABase;

  void runOnOperation() override;
};

} // namespace

void ConvertNeuroShardToCUDAPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  std::string error = checkCUDATarget(chip, features, optLevel);
  if (!error.empty()) {
    emitError(module.getLoc()) << error;
    return signalPassFailure();
  }
  if (Operation *existing =
          SymbolTable::lookupSymbolIn(module, cuda_abi::kKernelModuleName)) {
    existing->emitOpError()
        << "already defines '" << cuda_abi::kKernelModuleName
        << "', the symbol of the kernels module; --neuroshard-to-cuda runs "
           "once per module";
    return signalPassFailure();
  }

  SmallVector<func::CallOp> calls;
  WalkResult walk = module.walk([&](func::CallOp call) {
    bool isBackward = false;
    StringRef callee = call.getCallee();
    if (!isEmbeddingKernelName(callee, isBackward))
      return WalkResult::advance();
    SmallVector<Type> expected =
        expectedOperandTypes(context, callee, isBackward);
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

  OpBuilder builder(context);
  builder.setInsertionPointToEnd(module.getBody());
  auto target = NVVM::NVVMTargetAttr::get(
      context, optLevel, "nvptx64-nvidia-cuda", chip, features);
  buildEmbeddingKernelModule(builder, module.getLoc(), target);
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  builder.getUnitAttr());
  if (!host)
    return;

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
