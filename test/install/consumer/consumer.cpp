//===- consumer.cpp - A program built against an installed NeuroShard -----===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Registers the dialect, parses the module given on the command line, runs
// --neuroshard-plan and --neuroshard-materialize with the default cost model
// and prints the plan's cost model and cost.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/InitCostModels.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: consumer MODULE.mlir\n";
    return 2;
  }
  neuroshard::registerAvailableCostModels();
  mlir::DialectRegistry registry;
  registry.insert<mlir::neuroshard::NeuroShardDialect, mlir::func::FuncDialect,
                  mlir::tensor::TensorDialect>();
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  pm.addPass(mlir::neuroshard::createPlan());
  pm.addPass(mlir::neuroshard::createMaterialize());
  if (mlir::failed(pm.run(*module)))
    return 1;
  auto plan = (*module)->getAttrOfType<mlir::DictionaryAttr>(
      mlir::neuroshard::NeuroShardDialect::getPlanAttrName());
  llvm::outs() << "cost model: "
               << plan.getAs<mlir::StringAttr>("cost_model").getValue()
               << "\ncost_ms: "
               << plan.getAs<mlir::FloatAttr>("cost_ms").getValueAsDouble()
               << "\n";
  return 0;
}
