//===- neuroshard-opt.cpp - NeuroShard optimizer driver -------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The opt-style driver: every NeuroShard dialect and pass, the upstream
// dialects the sharding and lowering pipelines produce, and the upstream
// passes.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"
#include "neuroshard/Conversion/Passes.h"
#include "neuroshard/CostModel/InitCostModels.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Support/Version.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  neuroshard::addVersionPrinter();
  mlir::registerAllPasses();
  neuroshard::registerAvailableCostModels();
  mlir::neuroshard::registerNeuroShardPasses();
  mlir::neuroshard::registerNeuroShardConversionPasses();
  mlir::neuroshard::registerNeuroShardToCPUPipeline();
  mlir::neuroshard::registerNeuroShardCUDAPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::neuroshard::NeuroShardDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR: the GPU and NVVM
  // dialects need their translation interfaces.
  mlir::registerAllGPUToLLVMIRTranslations(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "NeuroShard optimizer driver\n", registry));
}
