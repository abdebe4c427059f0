//===- CUDAPipeline.cpp - The neuroshard-cuda-pipeline pass pipeline ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// neuroshard ops -> gpu kernels -> NVVM -> cubin (ptxas) or PTX, embedded as
// gpu.binary; lookups -> kernel calls (the lookup lowering shared with the
// CPU) -> bufferized host code -> GPU launches -> LLVM dialect with
// gpu-to-llvm, whose launches call the mgpu* entry points of NeuroShard's
// CUDA runtime.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"
#include "neuroshard/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::neuroshard;

/// The toolkit CMake found, so that `toolkit=` can be left out.
static std::string defaultToolkit() {
#ifdef NEUROSHARD_CUDA_TOOLKIT_DIR
  return NEUROSHARD_CUDA_TOOLKIT_DIR;
#else
  return "/usr/local/cuda";
#endif
}

std::string
mlir::neuroshard::buildCUDAPipeline(OpPassManager &pm,
                                    const CUDAPipelineOptions &options) {
  std::string error =
      checkCUDATarget(options.chip, options.features, options.optLevel);
  if (error.empty())
    error = checkMergedRows(options.mergedRows);
  if (!error.empty())
    return error;
  std::string toolkit =
      options.toolkit.empty() ? defaultToolkit() : std::string(options.toolkit);
  SmallString<256> ptxas(toolkit);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  bool hasPtxas = llvm::sys::fs::can_execute(ptxas);
  std::string format = options.format;
  if (format == "auto")
    format = hasPtxas ? "bin" : "isa";
  if (format != "bin" && format != "isa" && format != "fatbin")
    return "unknown format '" + format +
           "': expected auto, bin (cubin), isa (PTX) or fatbin";
  if (format != "isa" && !hasPtxas)
    return "format=" + format + " needs ptxas, but '" + ptxas.str().str() +
           "' is not an executable; pass toolkit=DIR or format=isa";

  ConvertNeuroShardToCUDAOptions toCUDA;
  toCUDA.chip = options.chip;
  toCUDA.features = options.features;
  toCUDA.optLevel = options.optLevel;
  toCUDA.host = options.host;
  toCUDA.mergedRows = options.mergedRows;
  pm.addPass(createConvertNeuroShardToCUDA(toCUDA));

  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createSCFToControlFlowPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());

  // The kernels become a gpu.binary before the host code is bufferized, so
  // that host passes never walk into device functions.
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = toolkit;
  binary.compilationTarget = format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (!options.host)
    return "";

  // The host code is bufferized as on the CPU (results become caller
  // buffers, temporaries are freed); only then do kernel calls become
  // launches, whose gpu.dealloc the deallocation pipeline must not see.
  addHostBufferizationPasses(pm);
  pm.addPass(createLaunchCUDAKernels());

  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return "";
}

void mlir::neuroshard::registerNeuroShardCUDAPasses() {
  registerNeuroShardToCUDAPasses();
  registerPassPipeline(
      "neuroshard-cuda-pipeline",
      "Lower to CUDA: the generic kernels as a cubin (or PTX) in a "
      "gpu.binary, and the host code to the LLVM dialect",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CUDAPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string error = buildCUDAPipeline(pm, options);
        if (!error.empty())
          return errorHandler("neuroshard-cuda-pipeline: " + error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optionHandler) {
        optionHandler(CUDAPipelineOptions());
      });
}
