//===- NeuroShardToCUDA.cpp - The --neuroshard-to-cuda pass ---------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Adds the generic kernels module and lowers the lookups into calls of the
// kernel symbols with the lookup lowering the CPU target shares. Every check
// runs before the module changes, so a failing run leaves it as it was.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"

#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/RowCache.h"

#include "../LoweringBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_CONVERTNEUROSHARDTOCUDA
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace abi = ::neuroshard::kernel_abi;

std::string mlir::neuroshard::checkMergedRows(int mergedRows) {
  if (mergedRows >= -1 && mergedRows <= kMaxMergedRows)
    return "";
  return "merged-rows=" + std::to_string(mergedRows) +
         " is not a row count the backward kernel can hold back: expected 0 "
         "to " +
         std::to_string(kMaxMergedRows) +
         ", or -1 for the most that fit in registers";
}

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

/// Declares `kernel` privately with its KernelABI.h signature `operands`,
/// once.
static void declareKernel(ModuleOp module, StringRef kernel,
                          ArrayRef<Type> operands) {
  if (SymbolTable::lookupSymbolIn(module, kernel))
    return;
  OpBuilder builder(module.getContext());
  builder.setInsertionPointToStart(module.getBody());
  auto type = builder.getFunctionType(operands, {});
  func::FuncOp::create(builder, module.getLoc(), kernel, type).setPrivate();
}

/// The host side of a fetch on the device (RowCache.h, KernelABI.h): a
/// copy of the cache's state from the runtime, the launch of the fetch
/// kernel on it, and the state back to the runtime.
static void emitDeviceFetch(ModuleOp module, OpBuilder &builder, Location loc,
                            const CacheFetch &fetch) {
  namespace rt = ::neuroshard::runtime;
  using lowering::declareRuntimeFunction;
  MLIRContext *context = module.getContext();
  Type i64 = builder.getI64Type();
  auto stateType = MemRefType::get({ShapedType::kDynamic}, i64);
  declareRuntimeFunction(module, rt::kRowCacheStateWords, {i64, i64, i64},
                         builder, i64);
  declareRuntimeFunction(module, rt::kRowCacheCopyState, {i64, i64, stateType},
                         builder);
  auto constant = [&](int64_t value) {
    return lowering::i64Constant(builder, loc, value);
  };
  Type element = cast<MemRefType>(fetch.rows.getType()).getElementType();
  Value piece = constant(fetch.cachePiece);
  Value words = func::CallOp::create(
                    builder, loc, rt::kRowCacheStateWords, i64,
                    ValueRange{piece, constant(fetch.flags),
                               constant(element.getIntOrFloatBitWidth())})
                    .getResult(0);
  Value state = memref::AllocOp::create(
      builder, loc, stateType,
      ValueRange{arith::IndexCastOp::create(builder, loc,
                                            builder.getIndexType(), words)});
  func::CallOp::create(builder, loc, rt::kRowCacheCopyState, TypeRange{},
                       ValueRange{piece, constant(1), state});
  StringRef kernel = element.isInteger(32) ? abi::kRowCacheFetchKernelI32
                                           : abi::kRowCacheFetchKernelI64;
  declareKernel(module, kernel, rowCacheFetchOperandTypes(context, kernel));
  func::CallOp::create(builder, loc, kernel, TypeRange{},
                       ValueRange{state, fetch.weights, fetch.rows,
                                  fetch.locations, constant(fetch.flags)});
  func::CallOp::create(builder, loc, rt::kRowCacheCopyState, TypeRange{},
                       ValueRange{piece, constant(0), state});
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
  if (error.empty())
    error = checkMergedRows(mergedRows);
  if (!error.empty()) {
    emitError(module.getLoc()) << error;
    return signalPassFailure();
  }
  if (Operation *existing =
          SymbolTable::lookupSymbolIn(module, abi::kKernelModuleName)) {
    existing->emitOpError()
        << "already defines '" << abi::kKernelModuleName
        << "', the symbol of the kernels module; --neuroshard-to-cuda runs "
           "once per module";
    return signalPassFailure();
  }

  // The lookup lowering checks everything before it changes the module.
  if (host) {
    auto emitCall = [&](OpBuilder &builder, Location loc,
                        const KernelInvocation &kernel) {
      bool isBackward = false;
      (void)isEmbeddingKernelName(kernel.kernel, isBackward);
      declareKernel(
          module, kernel.kernel,
          embeddingKernelOperandTypes(context, kernel.kernel, isBackward));
      func::CallOp::create(builder, loc, kernel.kernel, TypeRange{},
                           kernel.operands());
    };
    // Bucketization runs on the device too: a call that
    // --neuroshard-cuda-launch turns into its three kernels.
    auto emitBucketize = [&](OpBuilder &builder, Location loc,
                             StringRef callName, ValueRange operands) {
      declareKernel(module, callName, bucketizeOperandTypes(context, callName));
      func::CallOp::create(builder, loc, callName, TypeRange{}, operands);
    };
    // A shard in host memory is read through its cache: the host code
    // launches the fetch kernel on a copy of the cache's state.
    auto emitFetch = [&](OpBuilder &builder, Location loc,
                         const CacheFetch &fetch) {
      emitDeviceFetch(module, builder, loc, fetch);
    };
    if (failed(lowerLookups(module, emitCall, emitBucketize, emitFetch)))
      return signalPassFailure();
  }

  OpBuilder builder(context);
  builder.setInsertionPointToEnd(module.getBody());
  auto target =
      NVVM::NVVMTargetAttr::get(context, optLevel, "nvptx64-nvidia-cuda", chip,
                                kernelTargetFeatures(chip, features));
  buildEmbeddingKernelModule(builder, module.getLoc(), target, mergedRows);
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  builder.getUnitAttr());
}
