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
#include "neuroshard/Execution/SetTiming.h"
#include "neuroshard/Support/Version.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

int main(int argc, char **argv) {
  neuroshard::addVersionPrinter();
  neuroshard::addDocumentationHelp("passes.md");
  mlir::registerAllPasses();
  neuroshard::registerAvailableCostModels();
  neuroshard::execution::registerKernelSetTimer();
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

  // An error names its op's location; printing the op as well would dump
  // the whole module for an error on the module. Asked for, it still can be.
  std::vector<char *> args(argv, argv + argc);
  std::string quiet = "--mlir-print-op-on-diagnostic=false";
  if (llvm::none_of(args, [](const char *arg) {
        return llvm::StringRef(arg).contains("print-op-on-diagnostic");
      }))
    args.insert(args.begin() + 1, quiet.data());
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(int(args.size()), args.data(),
                        "NeuroShard optimizer driver\n", registry));
}
